package workloadmetrics

// smallStates is the number of (role, phase) counts a workload keeps in a plain list; past it,
// a map (a workload's roles are data: an author may write thousands).
const smallStates = 8

// podState is a pod's role and phase.
type podState struct{ role, phase string }

type podCount struct {
	podState
	n int
}

// podCounts counts a workload's pods per role and phase: a list while it has at most
// smallStates states (a few states cost 40 bytes each, against about 380 for the smallest Go
// map), a map beyond. A state whose count reaches 0 is dropped.
type podCounts struct {
	list []podCount
	big  map[podState]int
}

// add adds n pods of the state.
func (c *podCounts) add(s podState, n int) {
	if c.big != nil {
		if c.big[s] += n; c.big[s] <= 0 {
			delete(c.big, s)
		}
		return
	}
	for i := range c.list {
		if c.list[i].podState != s {
			continue
		}
		if c.list[i].n += n; c.list[i].n <= 0 {
			last := len(c.list) - 1
			c.list[i] = c.list[last]
			c.list[last] = podCount{}
			c.list = c.list[:last]
		}
		return
	}
	if n <= 0 {
		return
	}
	if len(c.list) < smallStates {
		c.list = append(c.list, podCount{podState: s, n: n})
		return
	}
	c.big = make(map[podState]int, len(c.list)+1)
	for _, pc := range c.list {
		c.big[pc.podState] = pc.n
	}
	c.big[s], c.list = n, nil
}

// len returns the number of states counted.
func (c *podCounts) len() int { return len(c.list) + len(c.big) }

// each calls f with every state's count.
func (c *podCounts) each(f func(podState, int)) {
	for _, pc := range c.list {
		f(pc.podState, pc.n)
	}
	for s, n := range c.big {
		f(s, n)
	}
}
