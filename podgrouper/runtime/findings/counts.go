package findings

import "k8s.io/apimachinery/pkg/types"

// Counts is a workload's observed pods, for tests and the CLI.
type Counts struct {
	// Live and Created are per role.
	Live, Created map[string]int64
	Unclaimed     int64
}

// Counts returns the workload's counters (zero Counts for an unknown workload).
func (t *Tracker) Counts(uid types.UID) Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := Counts{Live: map[string]int64{}, Created: map[string]int64{}}
	w := t.workloads[uid]
	if w == nil {
		return c
	}
	c.Unclaimed = w.rare.unclaimed
	for _, rs := range w.roles.list {
		c.Live[rs.name], c.Created[rs.name] = int64(rs.live), int64(rs.created)
	}
	return c
}
