package podgroup

import (
	"hash/maphash"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// CacheView is the transform of the grouper's PodGroup informer (controller-runtime
// cache.ByObject.Transform): it stores a PodGroup that holds what the grouper's readers of cached
// PodGroups read, with equal strings, label and annotation maps and sub-group lists of different
// PodGroups stored once. 10,000 PodGroups decoded from JSON each hold their own copy of every
// key and value (label and annotation keys, the queue, the priority class, the owner's kind,
// sub-group names); most of a PodGroup's 2 KB is those copies and their maps.
//
// What each reader of a cached PodGroup reads, so what is kept:
//   - Applier.Apply (the existing PodGroup, read without a deep copy): metadata.name, namespace,
//     labels, annotations, ownerReferences and the whole spec (KAI's podGroupsEqual and
//     ignoreFields); on an Update it sends the whole object back (a deep copy, merged), so every
//     field a PUT of the main resource writes is kept: all of metadata but managedFields (absent
//     in a PUT, the API server keeps them), and all of spec;
//   - the status keeper and the findings reporter (controller/workloadstatus.go,
//     findings.Reporter.setAnnotation): annotations, then an Update of the whole object, as above;
//   - ActualNames: metadata.name; the stray collector (strays.Collector, through
//     strays.OwnerIndex: the only owner reference's uid, name, namespace): name, namespace,
//     uid, resourceVersion (delete preconditions), deletionTimestamp, ownerReferences,
//     annotations; Applier.CacheEvents: name, namespace;
//   - the pod controller's watch (controller.gangChanged, podsOfPodGroup): annotations,
//     ownerReferences, spec.minMember, minSubGroup and subGroups;
//   - workload metrics (workloadmetrics.Tracker.podGroupConditions): status.conditions' type and
//     status, status.schedulingConditions' type.
//
// Dropped: metadata.managedFields (as every other cached object) and, of the status, everything
// but the conditions' type and status: condition messages, reasons, times and transition ids,
// the scheduling conditions' unschedulable explanations (with their queue quota details) and
// resourcesStatus (allocated and requested resource lists), which KAI's scheduler writes and
// no reader of the cache reads. The status is a subresource of the PodGroup CRD (KAI's and
// deploy/crds), so the API server ignores the status of an Update of the main resource: the
// trimmed status is never written back (TestCacheViewUpdateKeepsEverything).
//
// Sharing is sound because nothing writes to a cached PodGroup: the cached client deep-copies
// (Get, List), and the readers that read without a copy (Apply, ActualNames, the stray
// collector, workload metrics, the watch's handlers) only read; Apply copies before it merges.
// The transform never writes to the object it is given nor to anything it shares (client-go's
// watch-list path can hand it the same object twice): it returns a new PodGroup.
//
// Within one PodGroup, an owner reference's name and UID are substrings of the PodGroup's own
// name or top-owner-metadata annotation when these hold them (as gangmap's and KAI's PodGroups
// do), and a minMember or minSubGroup below 256 is a shared pointer (canonicalInt32).
//
// A string, map or sub-group list is stored in CacheView's tables the second time it is seen
// (the first time only its 64-bit hash is kept), so values that only one PodGroup holds never
// take room in them; the annotations that name one workload (top-owner-metadata,
// last-applied-configuration) and the annotation maps holding them are not even hashed. Each
// table is bounded (cacheViewTableSize) and starts over when full, so the tables keep at most
// that many values alive after their PodGroups are gone. Safe for concurrent use.
type CacheView struct {
	mu        sync.Mutex
	seed      maphash.Seed
	seen      map[uint64]struct{}
	strs      map[string]string
	maps      map[uint64]map[string]string
	subGroups map[uint64][]v2alpha2.SubGroup
}

// cacheViewTableSize bounds each of CacheView's tables.
const cacheViewTableSize = 8192

// NewCacheView returns an empty CacheView.
func NewCacheView() *CacheView {
	return &CacheView{seed: maphash.MakeSeed(), seen: map[uint64]struct{}{}, strs: map[string]string{},
		maps: map[uint64]map[string]string{}, subGroups: map[uint64][]v2alpha2.SubGroup{}}
}

// secondSight reports whether hash h was seen before, and remembers it.
func (c *CacheView) secondSight(h uint64) bool {
	if _, ok := c.seen[h]; ok {
		return true
	}
	if len(c.seen) >= 4*cacheViewTableSize {
		clear(c.seen)
	}
	c.seen[h] = struct{}{}
	return false
}

// Transform returns the cached view of a *v2alpha2.PodGroup (see CacheView); any other object
// comes back as it is. It never fails.
func (c *CacheView) Transform(obj any) (any, error) {
	pg, ok := obj.(*v2alpha2.PodGroup)
	if !ok || pg == nil {
		return obj, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &v2alpha2.PodGroup{TypeMeta: pg.TypeMeta, ObjectMeta: pg.ObjectMeta, Spec: pg.Spec}
	out.TypeMeta.APIVersion, out.TypeMeta.Kind = c.str(pg.APIVersion), c.str(pg.Kind)
	out.ManagedFields = nil
	out.Namespace = c.str(pg.Namespace)
	out.Labels, out.Annotations = c.stringMap(pg.Labels), c.stringMap(pg.Annotations)
	out.OwnerReferences = c.ownerReferences(pg.OwnerReferences, out.Name, out.Annotations[kaikeys.TopOwnerMetadata])
	out.Finalizers = c.strList(pg.Finalizers)
	out.Spec.Queue, out.Spec.PriorityClassName = c.str(pg.Spec.Queue), c.str(pg.Spec.PriorityClassName)
	out.Spec.Preemptibility = v2alpha2.Preemptibility(c.str(string(pg.Spec.Preemptibility)))
	out.Spec.TopologyConstraint = c.topology(pg.Spec.TopologyConstraint)
	out.Spec.SubGroups = c.subGroupList(pg.Spec.SubGroups)
	out.Spec.MinMember, out.Spec.MinSubGroup = canonicalInt32(pg.Spec.MinMember), canonicalInt32(pg.Spec.MinSubGroup)
	for _, cond := range pg.Status.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, v2alpha2.PodGroupCondition{
			Type: v2alpha2.PodGroupConditionType(c.str(string(cond.Type))), Status: c.conditionStatus(string(cond.Status))})
	}
	for _, cond := range pg.Status.SchedulingConditions {
		out.Status.SchedulingConditions = append(out.Status.SchedulingConditions, v2alpha2.SchedulingCondition{
			Type: v2alpha2.SchedulingConditionType(c.str(string(cond.Type))), Status: c.conditionStatus(string(cond.Status))})
	}
	return out, nil
}

func (c *CacheView) conditionStatus(s string) corev1.ConditionStatus {
	return corev1.ConditionStatus(c.str(s))
}

// str returns the table's string equal to s, adding s when there is none.
func (c *CacheView) str(s string) string {
	if s == "" {
		return ""
	}
	if t, ok := c.strs[s]; ok {
		return t
	}
	if !c.secondSight(maphash.String(c.seed, s)) {
		return s
	}
	if len(c.strs) >= cacheViewTableSize {
		clear(c.strs)
	}
	c.strs[s] = s
	return s
}

func (c *CacheView) strList(l []string) []string {
	if l == nil {
		return nil
	}
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = c.str(s)
	}
	return out
}

// stringMap returns the table's map equal to m (same keys and values), else a new map of m's
// entries with the table's strings (added to the table when seen before). nil stays nil; an
// empty map stays empty. A map with a per-workload annotation (perWorkload) is one workload's,
// so it is a new map whose per-workload values are kept as they are: neither takes an entry in
// the tables (which would hold one per workload: 59 B per cached scale PodGroup at 10,000).
func (c *CacheView) stringMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	if hasPerWorkload(m) {
		out := make(map[string]string, len(m))
		for k, v := range m {
			if perWorkload[k] {
				out[c.str(k)] = v
			} else {
				out[c.str(k)] = c.str(v)
			}
		}
		return out
	}
	// The hash of a map: the sum of its entries' hashes (no order).
	h := uint64(len(m))
	for k, v := range m {
		var e maphash.Hash
		e.SetSeed(c.seed)
		e.WriteString(k)
		e.WriteByte(0)
		e.WriteString(v)
		h += e.Sum64()
	}
	if t, ok := c.maps[h]; ok && maps.Equal(t, m) {
		return t
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[c.str(k)] = c.str(v)
	}
	if c.secondSight(h) {
		if len(c.maps) >= cacheViewTableSize {
			clear(c.maps)
		}
		c.maps[h] = out
	}
	return out
}

// perWorkload are the annotations whose value names one workload: KAI's top-owner-metadata (its
// UID) and kubectl's last-applied-configuration (its name), which KAI's default metadata copies
// from the workload.
var perWorkload = map[string]bool{kaikeys.TopOwnerMetadata: true, corev1.LastAppliedConfigAnnotation: true}

func hasPerWorkload(m map[string]string) bool {
	for k := range perWorkload {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// ownerReferences returns a copy of refs with the table's strings, and each owner's name and UID
// a substring of one of hosts when one holds it: the PodGroup's own name (gangmap's
// pg-<owner UID>-<suffix>, KAI's pg-<owner name>-<owner UID>) or KAI's top-owner-metadata
// annotation (the owner's name and UID in YAML), strings the PodGroup keeps anyway. A Go string
// is immutable, so a substring shares its host's bytes: 48 B of UID and 8-16 B of name less
// per cached PodGroup.
func (c *CacheView) ownerReferences(refs []metav1.OwnerReference, hosts ...string) []metav1.OwnerReference {
	if refs == nil {
		return nil
	}
	out := make([]metav1.OwnerReference, len(refs))
	for i, r := range refs {
		out[i] = r
		out[i].APIVersion, out[i].Kind = c.str(r.APIVersion), c.str(r.Kind)
		if i < maxHostedOwners {
			out[i].Name, out[i].UID = within(r.Name, hosts), types.UID(within(string(r.UID), hosts))
		}
		out[i].Controller, out[i].BlockOwnerDeletion = CanonicalBool(r.Controller), CanonicalBool(r.BlockOwnerDeletion)
	}
	return out
}

// The bounds of the owner references' search in their hosts (ownerReferences), so that a
// PodGroup with thousands of owner references and a large annotation (an object of 1.5 MiB:
// anyone who may create PodGroups can write one) costs the informer's one transform goroutine
// tens of microseconds per event, not seconds (len(refs) × len(host) bytes compared): the
// first two owner references (gangmap's and KAI's PodGroups have one), in hosts of at most
// 64 KiB (a PodGroup name is at most 253 bytes, a top-owner-metadata annotation a few hundred,
// a few KiB when it copies the owner's last-applied-configuration).
const (
	maxHostedOwners = 2
	maxHostBytes    = 64 << 10
)

// smallInt32s are the values canonicalInt32 shares; never written.
var smallInt32s = func() (a [256]int32) {
	for i := range a {
		a[i] = int32(i)
	}
	return a
}()

// canonicalInt32 returns a shared pointer to *p's value when it is in [0, 256) (nil stays nil),
// else p: a PodGroup's minMember or minSubGroup is otherwise a small allocation of its own.
// Never to be written through (see CacheView: nothing writes to a cached PodGroup).
func canonicalInt32(p *int32) *int32 {
	if p != nil && *p >= 0 && int(*p) < len(smallInt32s) {
		return &smallInt32s[*p]
	}
	return p
}

// within returns the first substring of hosts (of at most maxHostBytes each) equal to s, else s.
func within(s string, hosts []string) string {
	if s == "" {
		return s
	}
	for _, h := range hosts {
		if len(h) > maxHostBytes {
			continue
		}
		if i := strings.Index(h, s); i >= 0 {
			return h[i : i+len(s)]
		}
	}
	return s
}

func (c *CacheView) topology(t v2alpha2.TopologyConstraint) v2alpha2.TopologyConstraint {
	return v2alpha2.TopologyConstraint{PreferredTopologyLevel: c.str(t.PreferredTopologyLevel),
		RequiredTopologyLevel: c.str(t.RequiredTopologyLevel), Topology: c.str(t.Topology)}
}

// subGroupList returns the table's list equal to l, else a copy of l with the table's strings,
// added to the table. nil stays nil, empty stays empty.
func (c *CacheView) subGroupList(l []v2alpha2.SubGroup) []v2alpha2.SubGroup {
	if l == nil {
		return nil
	}
	var b maphash.Hash
	b.SetSeed(c.seed)
	optInt := func(p *int32) {
		if p == nil {
			b.WriteString("-")
		} else {
			b.WriteString(strconv.FormatInt(int64(*p), 10))
		}
		b.WriteByte(0)
	}
	optStr := func(p *string) {
		if p == nil {
			b.WriteString("-\x00")
		} else {
			b.WriteString("+" + *p + "\x00")
		}
	}
	for _, sg := range l {
		b.WriteString(sg.Name)
		b.WriteByte(0)
		optInt(sg.MinMember)
		optInt(sg.MinSubGroup)
		optStr(sg.Parent)
		if t := sg.TopologyConstraint; t != nil {
			b.WriteString("+" + t.PreferredTopologyLevel + "\x00" + t.RequiredTopologyLevel + "\x00" + t.Topology + "\x00")
		} else {
			b.WriteString("-\x00")
		}
		b.WriteByte(1)
	}
	h := b.Sum64()
	if t, ok := c.subGroups[h]; ok && reflect.DeepEqual(t, l) {
		return t
	}
	out := make([]v2alpha2.SubGroup, len(l))
	for i, sg := range l {
		out[i] = sg
		out[i].Name = c.str(sg.Name)
		if sg.Parent != nil {
			p := c.str(*sg.Parent)
			out[i].Parent = &p
		}
		if sg.TopologyConstraint != nil {
			t := c.topology(*sg.TopologyConstraint)
			out[i].TopologyConstraint = &t
		}
	}
	if c.secondSight(h) {
		if len(c.subGroups) >= cacheViewTableSize {
			clear(c.subGroups)
		}
		c.subGroups[h] = out
	}
	return out
}

// CanonicalBool returns a shared pointer to *b's value (nil stays nil), never to be written
// through: an owner reference's controller and blockOwnerDeletion flags are otherwise two small
// allocations per cached object (PodGroups in CacheView here, pods in podview).
func CanonicalBool(b *bool) *bool {
	switch {
	case b == nil:
		return nil
	case *b:
		return &canonicalTrue
	default:
		return &canonicalFalse
	}
}

// canonicalTrue and canonicalFalse are shared by every cached owner reference (CanonicalBool);
// never written.
var canonicalTrue, canonicalFalse = true, false
