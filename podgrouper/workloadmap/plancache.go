package workloadmap

import (
	"sync"

	"k8s.io/utils/lru"
)

// planCacheElements bounds the size of all cached plans together, in plan elements (PodGroups,
// their sub-groups and the plan's roles; see planElements), besides planCacheSize's bound on
// their number. One plan may hold up to gang.MaxPlanElements (50,000) of them, about 9 MB of the
// grouper's heap with its per-PodGroup metadata (measured: four 10,000-group LeaderWorkerSets
// took 36 MB), so a bound on the number alone let a user of one namespace fill the heap with a
// few dozen such workloads and one pod each. 500,000 elements is about 90 MB; ordinary clusters
// stay far below it (4,096 workloads of a few dozen elements each), and past it the least
// recently used plans are dropped and rebuilt when their pods are next decided.
const planCacheElements = 500000

// planCache is the LRU of plans by workload, bounded by count (planCacheSize) and by their total
// elements (planCacheElements). Safe for concurrent use.
type planCache struct {
	once     sync.Once
	mu       sync.Mutex
	lru      *lru.Cache
	elements int64
	// maxElements is planCacheElements (tests lower it).
	maxElements int64
}

func (c *planCache) init() {
	c.once.Do(func() {
		if c.maxElements == 0 {
			c.maxElements = planCacheElements
		}
		// The eviction function runs inside lru calls, which are all made under c.mu.
		c.lru = lru.NewWithEvictionFunc(planCacheSize, func(_ lru.Key, v any) { c.elements -= v.(*cachedPlan).elements })
	})
}

// get returns the cached plan of key.
func (c *planCache) get(key planKey) (*cachedPlan, bool) {
	c.init()
	v, ok := c.lru.Get(key)
	if !ok {
		return nil, false
	}
	return v.(*cachedPlan), true
}

// add caches p under key, then drops the least recently used plans while the total is above
// maxElements (never p itself).
func (c *planCache) add(key planKey, p *cachedPlan) {
	c.init()
	p.elements = planElements(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.lru.Get(key); ok {
		c.elements -= old.(*cachedPlan).elements // lru.Add replaces a value without evicting it
	}
	c.lru.Add(key, p)
	c.elements += p.elements
	for c.elements > c.maxElements && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
}

// remove drops the plan of key.
func (c *planCache) remove(key planKey) {
	c.init()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(key)
}

// planElements is what a cached plan holds in proportion to its size: one per PodGroup, per
// sub-group and per role (at least 1, for a failed plan).
func planElements(p *cachedPlan) int64 {
	if p.plan == nil {
		return 1
	}
	n := int64(1 + len(p.plan.Roles))
	for _, pg := range p.plan.PodGroups {
		n += int64(1 + len(pg.SubGroups))
	}
	return n
}
