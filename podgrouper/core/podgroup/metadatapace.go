package podgroup

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// DefaultMetadataUpdateInterval is Applier.MetadataUpdateInterval in gangmap's grouper.
const DefaultMetadataUpdateInterval = 5 * time.Second

// metadataPace remembers, per PodGroup, when Apply last updated it, so that an update of its
// labels and annotations alone waits for Applier.MetadataUpdateInterval (Deferred). KAI's
// default metadata copies the top owner's labels and annotations to the PodGroup, so whoever
// writes the workload's annotations in a loop would otherwise have each reconcile of its pods
// rewrite the PodGroup: 40 namespaces doing so every 200 ms took the grouper's whole client rate
// limit. Memory: one time per PodGroup updated within the interval (older ones are swept as new
// ones come).
type metadataPace struct {
	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
	// retry is, per PodGroup with a deferred update, when the one caller that took the retry
	// (RetryDeferred) applies again.
	retry   map[types.NamespacedName]time.Time
	sweepAt int
	// now is time.Now; tests set it.
	now func() time.Time
}

// metadataOnly says that existing and desired differ, if at all, in labels or annotations alone:
// their Spec and OwnerReferences are equal (podGroupsEqual's first half).
func metadataOnly(existing, desired *v2alpha2.PodGroup) bool {
	return equality.Semantic.DeepEqual(existing.Spec, desired.Spec) &&
		equality.Semantic.DeepEqual(existing.OwnerReferences, desired.OwnerReferences)
}

// wait is how long a labels-and-annotations update of key must still wait (0: it may be written
// now).
func (m *metadataPace) wait(key types.NamespacedName, interval time.Duration) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if last, ok := m.last[key]; ok {
		return max(0, last.Add(interval).Sub(clockOf(m.now)))
	}
	return 0
}

// takeRetry gives the retry of key's deferred update to one caller: the first since key's last
// update, or since the retry taken before was due. It returns how long that caller waits.
func (m *metadataPace) takeRetry(key types.NamespacedName, interval time.Duration) (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := clockOf(m.now)
	if at, ok := m.retry[key]; ok && !now.After(at) {
		return 0, false
	}
	at := now
	if last, ok := m.last[key]; ok {
		at = last.Add(interval)
	}
	if m.retry == nil {
		m.retry = map[types.NamespacedName]time.Time{}
	}
	m.retry[key] = at
	return max(at.Sub(now), time.Millisecond), true
}

// updated records an update of key now, and sweeps the times an interval old once the map has
// doubled since the last sweep.
func (m *metadataPace) updated(key types.NamespacedName, interval time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := clockOf(m.now)
	if m.last == nil {
		m.last = map[types.NamespacedName]time.Time{}
	}
	if _, ok := m.last[key]; !ok && len(m.last) >= m.sweepAt {
		for k, t := range m.last {
			if now.Sub(t) >= interval {
				delete(m.last, k)
			}
		}
		for k, t := range m.retry {
			if now.After(t) {
				delete(m.retry, k)
			}
		}
		m.sweepAt = max(1024, 2*len(m.last))
	}
	m.last[key] = now
	delete(m.retry, key)
}

// clockOf is now(), or time.Now() when now is nil (tests set the now of metadataPace and
// createFlights).
func clockOf(now func() time.Time) time.Time {
	if now != nil {
		return now()
	}
	return time.Now()
}
