package onboarding

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	policyValid = promauto.With(metrics.Registry).NewGauge(prometheus.GaugeOpts{
		Name: "gangmap_onboarding_policy_valid",
		Help: "1 when the onboarding policy file in force loaded without error, 0 when the last read was refused (the previous valid policy, or none, stays in force).",
	})
	policyRules = promauto.With(metrics.Registry).NewGauge(prometheus.GaugeOpts{
		Name: "gangmap_onboarding_policy_rules",
		Help: "Rules of the onboarding policy in force.",
	})
)

// Source polls the onboarding policy file and keeps the last valid policy in force: a file that
// does not parse or validate is refused (logged with every problem and its field path, metric
// gangmap_onboarding_policy_valid 0) and never blocks pod creation. A refused file is read again
// at every poll, so a policy naming a kind whose definition arrives later takes effect then.
type Source struct {
	// Path is the policy file (the ConfigMap's key, mounted). A missing file is an empty policy.
	Path string
	// Interval is the poll period (default 10s).
	Interval time.Duration
	// Known says whether a kind has a gangmap definition (the registry's view).
	Known func(schema.GroupKind) bool

	current atomic.Pointer[Compiled]
	last    [32]byte
	ok      bool

	changesOnce sync.Once
	changes     chan struct{}
}

var (
	_ manager.Runnable               = (*Source)(nil)
	_ manager.LeaderElectionRunnable = (*Source)(nil)
)

// Changes receives after a policy is put in force (coalesced: one pending signal at most).
func (s *Source) Changes() <-chan struct{} {
	s.changesOnce.Do(func() { s.changes = make(chan struct{}, 1) })
	return s.changes
}

// Current returns the policy in force (nil: none).
func (s *Source) Current() *Compiled { return s.current.Load() }

// Start implements manager.Runnable: it loads once, then polls until ctx ends.
func (s *Source) Start(ctx context.Context) error {
	interval := cmp.Or(max(s.Interval, 0), 10*time.Second) // unset or not positive: 10s
	wait.UntilWithContext(ctx, func(ctx context.Context) { _ = s.Sync(ctx) }, interval)
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica serves the webhook.
func (s *Source) NeedLeaderElection() bool { return false }

// Sync reads the file once; when its content changed, or the last read was refused, it parses
// it and puts it in force if valid. It returns the refusal, if any.
func (s *Source) Sync(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("onboarding-policy")
	data, err := os.ReadFile(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = nil, nil
	}
	if err != nil {
		log.Error(err, "Reading the onboarding policy; the previous one stays in force", "file", s.Path)
		policyValid.Set(0)
		return err
	}
	sum := sha256.Sum256(data)
	if sum == s.last && s.ok {
		return nil
	}
	s.last = sum
	c, err := Parse(data, s.Path, s.Known)
	if err != nil {
		if s.ok || s.current.Load() == nil {
			log.Error(err, "Onboarding policy refused; the previous one stays in force", "file", s.Path)
		}
		s.ok = false
		policyValid.Set(0)
		return err
	}
	s.ok = true
	s.current.Store(c)
	s.Changes() // makes the channel
	select {
	case s.changes <- struct{}{}:
	default:
	}
	policyValid.Set(1)
	policyRules.Set(float64(len(c.rules)))
	log.Info("Onboarding policy loaded", "file", s.Path, "rules", len(c.rules))
	return nil
}
