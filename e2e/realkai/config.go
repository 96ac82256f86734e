// Package realkai runs the real KAI Scheduler (its scheduler and binder, and optionally its
// pod-grouper, built from KAI's public source outside this repository) as processes on gangmap's
// e2e control plane: a real kube-apiserver and etcd (framework.StartWith, envtest) with kwok
// managing fake GPU nodes. No Docker, no KAI operator, no KAI webhooks. Tests judge admission by
// a pod's spec.nodeName (KAI's binder sets it through pods/binding), never by its phase.
//
// Environment (Config.FromEnv):
//   - KAI_BIN: directory holding KAI's scheduler, binder and podgrouper binaries
//     (`go build -o $KAI_BIN ./cmd/scheduler ./cmd/binder ./cmd/podgrouper` in a KAI checkout);
//   - KAI_SRC: a KAI source checkout; its deployments/kai-scheduler/crds/*.yaml are installed
//     (PodGroup, Queue, BindRequest, Topology, Config, SchedulingShard), in place of gangmap's own
//     copy of the PodGroup CRD;
//   - KUBEBUILDER_ASSETS: the control plane of hack/control-plane.sh (etcd, kube-apiserver, kwok).
//
// Without any of them, FromEnv fails at once naming what is missing: a real-KAI test never skips.
// Tests using it carry the build tag e2e_kai (`make e2e-kai`), so `make test` never runs them.
package realkai

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Environment variables read by FromEnv.
const (
	EnvBin = "KAI_BIN"
	EnvSrc = "KAI_SRC"
	// EnvSchedulerVerbosity is the scheduler's -v (default 3: one line per PodGroup per cycle that
	// cannot be allocated, with KAI's reason).
	EnvSchedulerVerbosity = "KAI_SCHEDULER_V"
	// EnvKeepLogs set to 1 keeps the log directory even when every test passed.
	EnvKeepLogs = "KAI_KEEP_LOGS"
)

// Names KAI is run with, as its Helm chart and operator default them.
const (
	SchedulerName           = "kai-scheduler"
	SchedulerNamespace      = "kai-scheduler"
	ReservationNamespace    = "kai-resource-reservation"
	ReservationAccount      = "kai-resource-reservation"
	ReservationAppLabel     = "kai-resource-reservation"
	ScaleAdjustNamespace    = "kai-scale-adjust"
	QueueLabelKey           = "kai.scheduler/queue"
	NodePoolLabelKey        = "kai.scheduler/node-pool"
	kaiCRDDirInSource       = "deployments/kai-scheduler/crds"
	defaultSchedulePeriod   = time.Second
	defaultSchedulerVerbose = 3
)

// Binaries of KAI_BIN.
var kaiBinaries = []string{"scheduler", "binder", "podgrouper"}

// ErrNoKAI says the real KAI binaries or source are not given.
var ErrNoKAI = errors.New("the real-KAI e2e needs KAI's binaries and source: " +
	"make e2e-kai KAI_BIN=<dir with scheduler, binder, podgrouper> KAI_SRC=<KAI source checkout> " +
	"(build them in a KAI checkout: CGO_ENABLED=0 go build -o <dir>/ ./cmd/scheduler ./cmd/binder ./cmd/podgrouper)")

// Config says where KAI and the control plane are and how to run KAI.
type Config struct {
	// Bin is the directory of KAI's scheduler, binder and podgrouper binaries (KAI_BIN).
	Bin string
	// Src is the KAI source checkout (KAI_SRC); CRDDir defaults to its
	// deployments/kai-scheduler/crds.
	Src    string
	CRDDir string
	// Assets is the control plane's directory (KUBEBUILDER_ASSETS): etcd, kube-apiserver, kwok.
	Assets string
	// WorkloadCRDs are CRD files of the workload kinds the tests create (JobSet, ...).
	WorkloadCRDs []string
	// SchedulePeriod is the scheduler's --schedule-period (default 1s).
	SchedulePeriod time.Duration
	// SchedulerVerbosity is the scheduler's -v (default 3, KAI_SCHEDULER_V).
	SchedulerVerbosity int
	// LogDir receives every process's log and the generated config files (default: a new
	// temporary directory).
	LogDir string
}

// FromEnv is the Config of KAI_BIN, KAI_SRC and KUBEBUILDER_ASSETS, with workloadCRDs. It
// fails, naming each missing piece, when a variable is unset or a binary or the CRD directory is
// not there.
func FromEnv(workloadCRDs ...string) (Config, error) {
	c := Config{
		Bin: os.Getenv(EnvBin), Src: os.Getenv(EnvSrc), Assets: os.Getenv("KUBEBUILDER_ASSETS"),
		WorkloadCRDs: workloadCRDs, SchedulePeriod: defaultSchedulePeriod, SchedulerVerbosity: defaultSchedulerVerbose,
	}
	if v := os.Getenv(EnvSchedulerVerbosity); v != "" {
		if _, err := fmt.Sscan(v, &c.SchedulerVerbosity); err != nil {
			return c, fmt.Errorf("%s=%q: want a number: %w", EnvSchedulerVerbosity, v, err)
		}
	}
	if c.Src != "" {
		c.CRDDir = filepath.Join(c.Src, kaiCRDDirInSource)
	}
	return c, c.Check()
}

// Check reports every missing binary or directory of c at once.
func (c Config) Check() error {
	var missing []string
	if c.Bin == "" {
		missing = append(missing, EnvBin+" is not set")
	}
	if c.Src == "" && c.CRDDir == "" {
		missing = append(missing, EnvSrc+" is not set")
	}
	if c.Assets == "" {
		missing = append(missing, "KUBEBUILDER_ASSETS is not set (export KUBEBUILDER_ASSETS=$(bash hack/control-plane.sh))")
	}
	if c.Bin != "" {
		for _, b := range kaiBinaries {
			if !executable(filepath.Join(c.Bin, b)) {
				missing = append(missing, fmt.Sprintf("%s/%s is not an executable file", c.Bin, b))
			}
		}
	}
	if c.CRDDir != "" {
		if m, _ := filepath.Glob(filepath.Join(c.CRDDir, "*.yaml")); len(m) == 0 {
			missing = append(missing, fmt.Sprintf("%s holds no KAI CRD (*.yaml)", c.CRDDir))
		}
	}
	if c.Assets != "" {
		for _, b := range []string{"etcd", "kube-apiserver", "kwok"} {
			if !executable(filepath.Join(c.Assets, b)) {
				missing = append(missing, fmt.Sprintf("%s/%s is missing (bash hack/control-plane.sh builds it)", c.Assets, b))
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrNoKAI, strings.Join(missing, "; "))
	}
	return nil
}

func executable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// KAICRDs are the CRD files of CRDDir.
func (c Config) KAICRDs() ([]string, error) {
	files, err := filepath.Glob(filepath.Join(c.CRDDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no KAI CRD", c.CRDDir)
	}
	return files, nil
}

// SourceVersion describes the KAI checkout: `git describe --tags --always` and the commit, e.g.
// "v0.17.0 f218c69b". "unknown" when Src is not a git checkout.
func (c Config) SourceVersion() string {
	if c.Src == "" {
		return "unknown"
	}
	out, err := exec.Command("git", "-C", c.Src, "log", "-1", "--format=%h %cs").Output()
	if err != nil {
		return "unknown"
	}
	desc, _ := exec.Command("git", "-C", c.Src, "describe", "--tags", "--always").Output()
	return strings.TrimSpace(string(desc)) + " (" + strings.TrimSpace(string(out)) + ")"
}
