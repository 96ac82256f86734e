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
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if o.SchedulerName == "" {
		add("--scheduler-name: must not be empty (KAI's scheduler name, e.g. kai-scheduler)")
	}
	errs = append(errs, o.validateNativeKinds()...)
	if err := o.validateMemoryLimit(); err != nil {
		errs = append(errs, err)
	}
	for _, p := range o.DefinitionPaths {
		if err := checkDefinitionPath(p); err != nil {
			add("--definitions: %w", err)
		}
	}
	for _, d := range []struct {
		flag, example string
		v             time.Duration
	}{{"--definitions-poll", "10s", o.DefinitionsPoll}, {"--findings-more-than-planned-grace", "2m", o.Findings.MoreThanPlannedGrace},
		{"--findings-gang-unsatisfiable-grace", "2m", o.Findings.GangUnsatisfiableGrace}, {"--findings-event-interval", "2m", o.Findings.ResendInterval},
		{"--plan-build-wait", "2s", o.PlanBuildWait}} {
		if d.v <= 0 {
			add("%s: must be a positive duration such as %s, got %v", d.flag, d.example, d.v)
		}
	}
	for _, f := range []flagValue{{"--queue-label-key", o.QueueLabelKey}, {"--nodepool-label-key", o.NodePoolLabelKey}} {
		if msgs := validation.IsQualifiedName(f.value); len(msgs) > 0 {
			add("%s: %q is not a label key: %s", f.flag, f.value, strings.Join(msgs, "; "))
		}
	}
	if o.StrayPodGroupGrace < 0 {
		add("--stray-podgroup-grace: must be 0 (never delete) or a positive duration such as 30s, got %v", o.StrayPodGroupGrace)
	}
	for _, n := range []struct {
		flag string
		v    int
	}{{"--max-concurrent-reconciles", o.MaxConcurrentReconciles}, {"--owner-cache-size", o.OwnerCacheSize}, {"--plan-cache-size", o.PlanCacheSize}} {
		if n.v < 1 {
			add("%s: must be at least 1, got %d", n.flag, n.v)
		}
	}
	if q, err := resource.ParseQuantity(o.PlanBuildMemory); err != nil || q.Value() < 64<<20 {
		add("--plan-build-memory: must be a quantity of at least 64Mi (two builds of the 32 MiB expression budget), got %q", o.PlanBuildMemory)
	}
	if o.MaxWorkloadMetrics < 0 {
		add("--max-workload-metrics: must be 0 (off) or more, got %d", o.MaxWorkloadMetrics)
	}
	if q := float64(o.QPS); math.IsNaN(q) || math.IsInf(q, 0) {
		add("--qps: must be a finite number, got %v", o.QPS)
	} else if q == 0 {
		add("--qps: must not be 0 (client-go would silently use 5): a positive rate, or a negative value to turn client-side rate limiting off")
	}
	if o.QPS > 0 && o.Burst < 1 {
		add("--burst: must be at least 1 while --qps is positive, got %d", o.Burst)
	} else if o.Burst < 0 {
		add("--burst: must not be negative, got %d", o.Burst)
	}
	for _, f := range []flagValue{{"--metrics-bind-address", o.MetricsAddr}, {"--health-probe-bind-address", o.ProbeAddr}} {
		if err := checkBindAddress(f.value); err != nil {
			add("%s: %w", f.flag, err)
		}
	}
	if _, err := tlsVersion(o.TLSMinVersion); err != nil {
		add("--tls-min-version: %w", err)
	}
	if o.LeaderElect && o.LeaderElectionID == "" {
		add("--leader-election-id: must not be empty with --leader-elect")
	}
	errs = append(errs, o.validateTopologySegments()...)
	errs = append(errs, o.validateWebhook()...)
	return errors.Join(errs...)
}

// validateNativeKinds checks --kai-version, --native-kinds-add and --native-kinds-remove. A
// removal that matches nothing in the table is refused: it would change nothing, and the kind
// the user meant (a typo, another version) would stay KAI's without a word.
func (o *Options) validateNativeKinds() []error {
	var errs []error
	t, err := native.ForRelease(o.KAIVersion)
	if err != nil {
		return []error{fmt.Errorf("--kai-version: %w", err)}
	}
	for _, k := range o.NativeKindsAdd {
		if err := t.Add(k); err != nil {
			errs = append(errs, fmt.Errorf("--native-kinds-add: %w", err))
		}
	}
	entries := t.Entries()
	for _, k := range o.NativeKindsRemove {
		gvk, err := native.ParseGVK(k)
		if err != nil {
			errs = append(errs, fmt.Errorf("--native-kinds-remove: %w", err))
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
		switch {
		case matched:
		case wildcard != "":
			errs = append(errs, fmt.Errorf("--native-kinds-remove: %s is not in the native table, which has %s (every version): remove %s instead", k, wildcard, wildcard))
		default:
			errs = append(errs, fmt.Errorf("--native-kinds-remove: %s is not in the native table of KAI %s (plus --native-kinds-add), so removing it would change nothing; the table has: %s",
				k, o.KAIVersion, strings.Join(entries, ", ")))
		}
	}
	return errs
}

// validateWebhook checks the webhook flags; with the webhook off (--webhook-port=0) only the port.
func (o *Options) validateWebhook() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.WebhookPort < 0 || o.WebhookPort > 65535 {
		add("--webhook-port: must be a TCP port (1-65535), or 0 to disable the webhook, got %d", o.WebhookPort)
		return errs
	}
	if o.WebhookPort == 0 {
		if o.OnboardingPolicy != "" {
			add("--onboarding-policy: needs the webhook (--webhook-port above 0): pods are onboarded at creation")
		}
		return errs
	}
	if o.WebhookTimeout <= 0 || o.WebhookTimeout > maxWebhookTimeout {
		add("--webhook-timeout: must be above 0 and at most %v (the longest timeoutSeconds of a webhook configuration), got %v", maxWebhookTimeout, o.WebhookTimeout)
	}
	if _, _, err := o.webhookSelectors(); err != nil {
		errs = append(errs, err)
	}
	if o.WebhookCertDir == "" {
		add("--webhook-cert-dir: must not be empty while the webhook is on (--webhook-port=%d)", o.WebhookPort)
		return errs
	}
	if o.WebhookSelfSigned {
		for _, f := range []flagValue{{"--webhook-secret", o.WebhookSecret}, {"--webhook-namespace", o.WebhookNamespace},
			{"--webhook-service", o.WebhookService}, {"--webhook-configuration-name", o.WebhookConfigName}} {
			if f.value == "" {
				add("%s: must not be empty with --webhook-self-signed", f.flag)
			}
		}
		return errs
	}
	if err := checkServingCert(o.WebhookCertDir); err != nil {
		add("--webhook-cert-dir: %w; the webhook (--webhook-port=%d) needs its serving certificate there at start: mount one (cert-manager or a Secret) or point --webhook-cert-dir at it, "+
			"or pass --webhook-self-signed to have the grouper issue its own, or --webhook-port=0 to disable the webhook", err, o.WebhookPort)
	}
	return errs
}

// checkServingCert reports what keeps dir's tls.crt and tls.key from serving: a missing file, or
// a pair that does not load (as controller-runtime's certificate watcher loads it).
func checkServingCert(dir string) error {
	var missing []string
	for _, f := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				return err
			}
			missing = append(missing, f)
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

// checkBindAddress accepts "0" (disabled) or host:port.
func checkBindAddress(addr string) error {
	if addr == "0" {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("want host:port (e.g. :8080) or 0 to disable, got %q", addr)
	}
	return nil
}

// planBuildMemory is --plan-build-memory in bytes (validated: 0 only when it does not parse,
// and then the grouper's default applies).
func (o *Options) planBuildMemory() int64 {
	q, err := resource.ParseQuantity(o.PlanBuildMemory)
	if err != nil {
		return 0
	}
	return q.Value()
}

// validateTopologySegments checks --topology-segments: auto, on or off; on needs a KAI release
// whose PodGroup CRD has minSubGroup and sub-group topology (kairelease HasSegments, v0.15+).
func (o *Options) validateTopologySegments() []error {
	switch o.TopologySegments {
	case "auto", "off":
		return nil
	case "on":
		rel, err := o.KAIRelease()
		if err != nil {
			return nil // --kai-version reports it
		}
		if !rel.HasSegments() {
			return []error{fmt.Errorf("--topology-segments=on: %s; set --kai-version to the KAI release installed (v0.15 or later writes segments), or --topology-segments=auto to write the gang without them", rel.SegmentsNote())}
		}
		return nil
	}
	return []error{fmt.Errorf("--topology-segments: expected auto, on or off, got %q", o.TopologySegments)}
}
