package workloadmap

import (
	"cmp"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// planCacheElements bounds the size of all cached plans together, in plan elements (PodGroups,
// their sub-groups and the plan's roles; see planElements), besides the bound on
// their number (Grouper.PlanCacheSize). One plan may hold up to gang.MaxPlanElements (50,000) of
// them, with its per-PodGroup metadata about 430 bytes each of the grouper's heap (measured: 16
// cached 10,000-group LeaderWorkerSets, about 30,000 elements each, held 206 MB after GC; an
// earlier measure of four gave 36 MB), so a bound on the number alone let a user of one namespace
// fill the heap with a few dozen such workloads and one pod each. 250,000 elements is about
// 110 MB, a fifth of the chart's 512 MiB limit (500,000, about 215 MB, left too little beside a
// large pod cache); ordinary clusters stay far below it (thousands of workloads of a few dozen
// elements each), and past it the least recently used plans are dropped and rebuilt when their
// pods are next decided.
const planCacheElements = 250000

// planCache is the LRU of plans by workload, bounded by count (Grouper.PlanCacheSize; see cache)
// and by their total elements (planCacheElements). Safe for concurrent use.
type planCache struct {
	once     sync.Once
	mu       sync.Mutex
	lru      *lru.Cache
	elements int64
	// maxElements is planCacheElements (tests lower it).
	maxElements int64
}

// get returns the cached plan of key.
func (c *planCache) get(key planKey) (*cachedPlan, bool) {
	v, ok := c.lru.Get(key)
	p, _ := v.(*cachedPlan)
	return p, ok
}

// add caches p under key, then drops the least recently used plans while the total is above
// maxElements (never p itself).
func (c *planCache) add(key planKey, p *cachedPlan) {
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

// cache returns the grouper's plan cache, made at the first call with PlanCacheSize plans
// (DefaultPlanCacheSize when <= 0). Every method of planCache needs it made first.
func (g *Grouper) cache() *planCache {
	c := &g.plans
	c.once.Do(func() {
		if c.maxElements == 0 {
			c.maxElements = planCacheElements
		}
		// The eviction function runs inside lru calls, which are all made under c.mu.
		c.lru = lru.NewWithEvictionFunc(cmp.Or(max(g.PlanCacheSize, 0), DefaultPlanCacheSize), func(_ lru.Key, v any) { c.elements -= v.(*cachedPlan).elements })
	})
	return c
}

// PlanCacheLookupsTotal counts the plan cache's lookups, one per plan read (each pod decided by
// the webhook or the pod controller, each workload metrics and status refresh), by result: hit
// (the plan of the workload's current version and definition), miss (no plan cached: a new
// workload, or its plan evicted) and stale (a plan of an older version of the workload or of the
// definition). A miss or stale lookup builds the plan, once for all callers that ask at the
// same time.
var PlanCacheLookupsTotal = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
	Name: "gangmap_plan_cache_lookups_total",
	Help: "Plan cache lookups by result: hit, miss (not cached: a new workload or an evicted plan; --plan-cache-size bounds the cache) or stale (the workload or its definition changed); a miss or stale lookup builds the plan.",
}, []string{"result"})

// The lookup results' counters, made once.
var (
	lookupHit   = PlanCacheLookupsTotal.WithLabelValues("hit")
	lookupMiss  = PlanCacheLookupsTotal.WithLabelValues("miss")
	lookupStale = PlanCacheLookupsTotal.WithLabelValues("stale")
)
