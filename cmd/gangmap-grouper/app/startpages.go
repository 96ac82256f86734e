package app

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// startupPages releases, startupPagesDelay after the manager's caches have synced, the pages of
// the grouper's own binary that its start mapped (releaseBinaryPages): what the package
// initialisers and the start touched, most of which never runs again. It runs on every replica
// (not only the leader) and ends after the release.
//
// Why: the kernel maps a binary's pages 64 KiB at a time around each first touch (fault-around),
// and the initialisers of the binary's ~1,100 packages are spread over its whole text, so at start
// 80% of the text and of the read-only data (26 and 29 MiB, .gopclntab included) is resident:
// 42-44 MiB of file-backed resident set, which the Go memory limit does not count. Measured on
// the real control plane (2,000 pods of 200 CustomJobs through the webhook, then three metrics
// scrapes; bench/README.md, session 7): file-backed resident set under load 42.6 MiB without the
// release, 30.6 MiB released at the caches' sync, 25.4 MiB released 45 s later (the leader
// election, the webhook's certificate and the definitions' compilation are then done too); the
// rest is what the work runs (text 9 MiB) and reads (read-only data and pclntab 16 MiB: type
// descriptors, and the pc-value tables every stack scan reads).
type startupPages struct {
	Cache cache.Cache
	Log   logr.Logger
}

var _ manager.LeaderElectionRunnable = startupPages{}

// startupPagesDelay is how long after the caches' sync the start's pages are released: by then
// the start's one-off work is done (see startupPages).
const startupPagesDelay = 45 * time.Second

// Start waits for the caches to sync and startupPagesDelay, releases the binary's pages and returns; nil also when
// ctx ends first.
func (s startupPages) Start(ctx context.Context) error {
	if !s.Cache.WaitForCacheSync(ctx) {
		return nil
	}
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(startupPagesDelay):
	}
	released, err := releaseBinaryPages()
	if err != nil {
		s.Log.Info("Could not release the binary's startup pages", "error", err.Error())
		return nil
	}
	if released > 0 {
		s.Log.Info("Released the binary's startup pages", "residentBytes", released)
	}
	return nil
}

// NeedLeaderElection is false: every replica holds its own binary's pages.
func (startupPages) NeedLeaderElection() bool { return false }
