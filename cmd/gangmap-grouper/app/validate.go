package app

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/podgrouper/core/native"
)

// maxWebhookTimeout is the longest timeoutSeconds a MutatingWebhookConfiguration accepts: a
// decision that may take longer would never be waited for.
const maxWebhookTimeout = 30 * time.Second

// Validate checks every option and returns all problems at once (errors.Join), each naming its
// flag and what was expected. Besides the values themselves it checks the files the grouper
// needs at start: each --definitions path exists and is readable, and, with the webhook on and
// not --webhook-self-signed, --webhook-cert-dir holds a loadable tls.crt and tls.key (the webhook
// server would otherwise fail only after every controller has started).
func (o *Options) Validate() error {
	var p problems
	p.add(o.SchedulerName == "", "--scheduler-name: must not be empty (KAI's scheduler name, e.g. kai-scheduler)")
	o.nativeTable(&p)
	memLimit, err := resource.ParseQuantity(o.MemoryLimit)
	p.add(o.MemoryLimit != "" && (err != nil || memLimit.Sign() < 0), "--memory-limit: want a quantity of bytes such as 176Mi or 0, got %q", o.MemoryLimit)
	for _, path := range o.DefinitionPaths {
		err := checkDefinitionPath(path)
		p.add(err != nil, "--definitions: %w", err)
	}
	for _, d := range []struct {
		flag, example string
		v             time.Duration
	}{{"--definitions-poll", "10s", o.DefinitionsPoll}, {"--findings-more-than-planned-grace", "2m", o.Findings.MoreThanPlannedGrace},
		{"--findings-gang-unsatisfiable-grace", "2m", o.Findings.GangUnsatisfiableGrace}, {"--findings-event-interval", "2m", o.Findings.ResendInterval},
		{"--plan-build-wait", "2s", o.PlanBuildWait}} {
		p.add(d.v <= 0, "%s: must be a positive duration such as %s, got %v", d.flag, d.example, d.v)
	}
	for _, f := range []flagValue{{"--queue-label-key", o.QueueLabelKey}, {"--nodepool-label-key", o.NodePoolLabelKey}} {
		msgs := validation.IsQualifiedName(f.value)
		p.add(len(msgs) > 0, "%s: %q is not a label key: %s", f.flag, f.value, strings.Join(msgs, "; "))
	}
	p.add(o.StrayPodGroupGrace < 0, "--stray-podgroup-grace: must be 0 (never delete) or a positive duration such as 30s, got %v", o.StrayPodGroupGrace)
	for _, n := range []struct {
		flag string
		v    int
	}{{"--max-concurrent-reconciles", o.MaxConcurrentReconciles}, {"--owner-cache-size", o.OwnerCacheSize}, {"--plan-cache-size", o.PlanCacheSize}} {
		p.add(n.v < 1, "%s: must be at least 1, got %d", n.flag, n.v)
	}
	p.add(o.planBuildMemory() < 64<<20, "--plan-build-memory: must be a quantity of at least 64Mi (two builds of the 32 MiB expression budget), got %q", o.PlanBuildMemory)
	p.add(o.MaxWorkloadMetrics < 0, "--max-workload-metrics: must be 0 (off) or more, got %d", o.MaxWorkloadMetrics)
	qps := float64(o.QPS)
	p.add(math.IsNaN(qps) || math.IsInf(qps, 0), "--qps: must be a finite number, got %v", o.QPS)
	p.add(qps == 0, "--qps: must not be 0 (client-go would silently use 5): a positive rate, or a negative value to turn client-side rate limiting off")
	p.add(qps > 0 && o.Burst < 1, "--burst: must be at least 1 while --qps is positive, got %d", o.Burst)
	p.add(!(qps > 0) && o.Burst < 0, "--burst: must not be negative, got %d", o.Burst)
	for _, f := range []flagValue{{"--metrics-bind-address", o.MetricsAddr}, {"--health-probe-bind-address", o.ProbeAddr}} {
		_, _, err := net.SplitHostPort(f.value)
		p.add(f.value != "0" && err != nil, "%s: want host:port (e.g. :8080) or 0 to disable, got %q", f.flag, f.value)
	}
	_, ok := tlsVersions[o.TLSMinVersion]
	p.add(!ok, "--tls-min-version: want 1.2 or 1.3, got %q", o.TLSMinVersion)
	p.add(o.LeaderElect && o.LeaderElectionID == "", "--leader-election-id: must not be empty with --leader-elect")
	o.validateTopologySegments(&p)
	o.validateWebhook(&p)
	return errors.Join(p...)
}

// problems are the errors Validate found, in the order of its checks.
type problems []error

// add adds the error fmt.Errorf(format, args...) when a check failed (bad).
func (p *problems) add(bad bool, format string, args ...any) {
	if bad {
		*p = append(*p, fmt.Errorf(format, args...))
	}
}

// nativeTable is the native-kind table the options select: --kai-version's, plus
// --native-kinds-add, less --native-kinds-remove (nil when --kai-version is unknown). Each bad
// value is a problem, and so is a removal that matches nothing in the table: it would change
// nothing, and the kind the user meant (a typo, another version) would stay KAI's without a word.
func (o *Options) nativeTable(p *problems) *native.Table {
	t, err := native.ForRelease(o.KAIVersion)
	if err != nil {
		p.add(true, "--kai-version: %w", err)
		return nil
	}
	for _, k := range o.NativeKindsAdd {
		err := t.Add(k)
		p.add(err != nil, "--native-kinds-add: %w", err)
	}
	entries := t.Entries()
	for _, k := range o.NativeKindsRemove {
		gvk, err := native.ParseGVK(k)
		if err != nil {
			p.add(true, "--native-kinds-remove: %w", err)
			continue
		}
		matched, wildcard := false, ""
		for _, e := range entries {
			eg, _ := native.ParseGVK(e) // Entries are in ParseGVK form
			if eg.Group != gvk.Group || eg.Kind != gvk.Kind {
				continue
			}
			if eg.Version == gvk.Version || gvk.Version == native.AnyVersion {
				matched = true
			} else if eg.Version == native.AnyVersion {
				wildcard = e
			}
		}
		p.add(!matched && wildcard != "", "--native-kinds-remove: %s is not in the native table, which has %s (every version): remove %s instead", k, wildcard, wildcard)
		p.add(!matched && wildcard == "", "--native-kinds-remove: %s is not in the native table of KAI %s (plus --native-kinds-add), so removing it would change nothing; the table has: %s",
			k, o.KAIVersion, strings.Join(entries, ", "))
		_ = t.Remove(k) // parsed above
	}
	return t
}

// validateWebhook checks the webhook flags; with the webhook off (--webhook-port=0) only the port
// and that nothing needs the webhook.
func (o *Options) validateWebhook(p *problems) {
	switch {
	case o.WebhookPort < 0 || o.WebhookPort > 65535:
		p.add(true, "--webhook-port: must be a TCP port (1-65535), or 0 to disable the webhook, got %d", o.WebhookPort)
		return
	case o.WebhookPort == 0:
		p.add(o.OnboardingPolicy != "", "--onboarding-policy: needs the webhook (--webhook-port above 0): pods are onboarded at creation")
		return
	}
	p.add(o.WebhookTimeout <= 0 || o.WebhookTimeout > maxWebhookTimeout,
		"--webhook-timeout: must be above 0 and at most %v (the longest timeoutSeconds of a webhook configuration), got %v", maxWebhookTimeout, o.WebhookTimeout)
	_, _, err := o.webhookSelectors()
	p.add(err != nil, "%w", err)
	switch {
	case o.WebhookCertDir == "":
		p.add(true, "--webhook-cert-dir: must not be empty while the webhook is on (--webhook-port=%d)", o.WebhookPort)
	case o.WebhookSelfSigned:
		for _, f := range []flagValue{{"--webhook-secret", o.WebhookSecret}, {"--webhook-namespace", o.WebhookNamespace},
			{"--webhook-service", o.WebhookService}, {"--webhook-configuration-name", o.WebhookConfigName}} {
			p.add(f.value == "", "%s: must not be empty with --webhook-self-signed", f.flag)
		}
	default:
		err := checkServingCert(o.WebhookCertDir)
		p.add(err != nil, "--webhook-cert-dir: %w; the webhook (--webhook-port=%d) needs its serving certificate there at start: mount one (cert-manager or a Secret) or point --webhook-cert-dir at it, "+
			"or pass --webhook-self-signed to have the grouper issue its own, or --webhook-port=0 to disable the webhook", err, o.WebhookPort)
	}
}

// checkServingCert reports what keeps dir's tls.crt and tls.key from serving: a missing file, or
// a pair that does not load (as controller-runtime's certificate watcher loads it).
func checkServingCert(dir string) error {
	var missing []string
	for _, f := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Stat(filepath.Join(dir, f)); errors.Is(err, os.ErrNotExist) {
			missing = append(missing, f)
		} else if err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s has no %s", dir, strings.Join(missing, " and no "))
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")); err != nil {
		return fmt.Errorf("%s: tls.crt and tls.key do not load: %w", dir, err)
	}
	return nil
}

// checkDefinitionPath reports a --definitions path the grouper could not read: missing, not
// listable, or holding a definition file it cannot read. What the files say is not checked here:
// a definition that does not decode is reported and left out, as on every later poll.
func checkDefinitionPath(p string) error {
	if p == "" {
		return errors.New("empty path")
	}
	files, err := definitions.DefinitionFiles(p)
	if err != nil {
		return pathError(p, err)
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return pathError(f, err)
		}
		_ = fh.Close()
	}
	return nil
}

// pathError says what is wrong with path p in words, naming it once.
func pathError(p string, err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s does not exist (or is a broken symbolic link)", p)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("%s is not readable: permission denied", p)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", p, pe.Err)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// flagValue is a flag's name and its string value, for checks that go over several flags in a
// fixed order.
type flagValue struct{ flag, value string }

// planBuildMemory is --plan-build-memory in bytes: 0 when it does not parse (Validate refuses
// that; past Validate, 0 would give the grouper's default).
func (o *Options) planBuildMemory() int64 {
	q, err := resource.ParseQuantity(o.PlanBuildMemory)
	if err != nil {
		return 0
	}
	return q.Value()
}

// validateTopologySegments checks --topology-segments: auto, on or off; on needs a KAI release
// whose PodGroup CRD has minSubGroup and sub-group topology (kairelease HasSegments, v0.15+).
func (o *Options) validateTopologySegments(p *problems) {
	switch o.TopologySegments {
	case "auto", "off":
	case "on":
		// An unknown --kai-version is nativeTable's to report.
		if rel, err := o.KAIRelease(); err == nil && !rel.HasSegments() {
			p.add(true, "--topology-segments=on: %s; set --kai-version to the KAI release installed (v0.15 or later writes segments), or --topology-segments=auto to write the gang without them", rel.SegmentsNote())
		}
	default:
		p.add(true, "--topology-segments: expected auto, on or off, got %q", o.TopologySegments)
	}
}
