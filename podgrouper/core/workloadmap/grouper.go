// Package workloadmap is gangmap's grouper: it groups the pods of a workload kind by the kind's
// Workload Map definition and the gang plan of the live workload.
package workloadmap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/defaultgrouper"
	"github.com/gangmap/gangmap/podgrouper/core/grouper"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/kairelease"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// Name is the grouper's name.
const Name = "workloadmap"

// ErrNoDefinition says no definition is active for the top owner's kind any more.
var ErrNoDefinition = errors.New("no active Workload Map definition for the kind")

// ErrDefinitionUnusable says the top owner's kind has definitions but none is usable (each
// invalid, refused, or in conflict: definitions.Registry.Unusable); the error's text names the
// definition and its problem. The kind stays gangmap's (hub.Grouped), so its pods are held.
var ErrDefinitionUnusable = errors.New("no usable Workload Map definition for the kind")

// Grouper groups pods by Workload Map definitions. Plans are cached per workload (namespace and
// UID, the name checked on every hit) and recomputed only when the workload's resourceVersion or
// the winning definition changes, so the per-pod work is placing the pod (its selectors) and
// looking it up in the plan. A plan is built once per workload version however many pods ask at
// once (single flight), and a failed plan is cached like a successful one (see sharedPlan).
type Grouper struct {
	Registry *definitions.Registry
	Defaults *defaultgrouper.Grouper
	// Recorder, when set, gets a Warning Event (ReasonPathMiss) on a cluster Karta whose paths
	// resolve to nothing on a live workload; the metric PathMissesTotal counts every definition's.
	Recorder record.EventRecorder
	// Release is the KAI release installed beside gangmap; its PodGroup CRD decides what is
	// written (podgroup.FitRelease; before v0.15 the plan is flat, gang.Plan.Flatten). nil is the
	// latest release.
	Release *kairelease.Release
	// NoRolePlacement makes plans write no segments and no per-role topology
	// (--topology-segments=off; see gang.WithoutRolePlacement).
	NoRolePlacement bool

	// KAIPlugin says gangmap runs inside KAI's pod-grouper as its plugin for the kinds it groups
	// (podgrouper/core/kaiplugin, the gangmap-kai-podgrouper binary): KAI's pod-grouper then groups
	// none of their pods by itself, as if every workload carried KAI's skip mark, so a pod the
	// definition places in no gang gets KAI's default PodGroup from gangmap (see ungrouped)
	// instead of nil, which KAI's pod controller would leave without any PodGroup.
	KAIPlugin bool

	// PlanTimeout bounds one plan build (zero: DefaultPlanTimeout). Builds are shared by all
	// callers and detached from them (see sharedPlan).
	PlanTimeout time.Duration
	// PlanCacheSize is the most plans cached, one per workload (zero: DefaultPlanCacheSize),
	// read at the first use. Past it the least recently used plan is dropped and built again
	// when its workload is next read (PlanCacheLookupsTotal counts hits and misses).
	PlanCacheSize int
	// PlanMemory bounds, in bytes, the memory the plan builds running at once may hold (each
	// its expression budget and three times its object's size; zero: DefaultPlanMemory), and
	// PlanWait how long a build waits for its share before it is refused (zero:
	// DefaultPlanWait); see plangate.go.
	PlanMemory int64
	PlanWait   time.Duration

	plans     planCache
	plansGate planGate
	flight    singleflight.Group
	builds    atomic.Int64 // plan builds (for tests: one per workload version)
	drift     driftReporter
}

var (
	_ grouper.PlanGrouper = (*Grouper)(nil)
	_ grouper.Planner     = (*Grouper)(nil)
)

// DefaultPlanCacheSize is the plan cache's default bound, in plans (one per workload): the
// grouper's --plan-cache-size default. A plan is read by every admission and reconcile of its
// workload's pods, which come in bursts: in the 20,000-pod scale run (2,000 CustomJobs, 8
// created at a time) a cache of 256 plans missed only the 2,000 new workloads (104,650 hits,
// 4,919 rebuilds of changed workloads), so 1,024 leaves a margin. A plan is about 2.5 KB (one
// PodGroup, a few roles), so 1,024 hold about 2.5 MB where 4,096 (the earlier bound) held 10
// MB at 10,000 workloads; past the bound a plan is built again when read (about 0.3 ms
// of CPU and 67 KB of garbage for a 10-pod JobSet, BenchmarkPlan).
const DefaultPlanCacheSize = 1024

// planKey keys the plan cache: the workload's namespace ("" when cluster scoped) and UID.
type planKey struct {
	namespace string
	uid       types.UID
}

type cachedPlan struct {
	name            string
	resourceVersion string
	compiled        *definitions.Compiled
	plan            *gang.Plan
	// meta holds, per planned PodGroup (in plan.PodGroups' order), the parts of KAI's metadata
	// that are the same for all of its pods, computed once per plan; metaIndex finds a PodGroup's
	// when the plan has more than smallIndex (nil otherwise: a scan finds it).
	meta      []podGroupMeta
	metaIndex map[*gang.PodGroup]int
	// err is the error of a plan that failed (then plan and meta are nil).
	err error
	// elements is its size in the plan cache (planElements).
	elements int64
}

// podGroupMeta is the pod-independent metadata of one planned PodGroup. It is shared by every
// pod of the PodGroup and never modified after the plan is built.
type podGroupMeta struct {
	subGroups []*podgroup.SubGroupMetadata
	// index finds a sub-group's place in subGroups (and in the PodGroup's SubGroups) when it has
	// more than smallIndex (nil otherwise: a scan finds it).
	index      map[*gang.SubGroup]int
	definition string
	status     string
	gpus       string
	roleGPUs   string
	// startHeld is the StartHeld annotation's value, "" when the definition has no start rule.
	startHeld string
}

func newPodGroupMeta(plan *gang.Plan, pg *gang.PodGroup) podGroupMeta {
	m := podGroupMeta{
		definition: fmt.Sprintf("%s (%s)", plan.Definition.Name, plan.Definition.Source),
		status:     plan.StatusText(),
		gpus:       pg.GPUs.String(),
		roleGPUs:   roleGPUs(pg),
	}
	if plan.HasStartRule {
		m.startHeld = startHeld(pg)
	}
	deferred := deferredRoles(pg)
	// One array holds every sub-group's metadata (no object each), the slice points into it.
	all := make([]podgroup.SubGroupMetadata, len(pg.SubGroups))
	if len(all) > 0 {
		m.subGroups = make([]*podgroup.SubGroupMetadata, 0, len(all))
	}
	for i, sg := range pg.SubGroups {
		smd := &all[i]
		*smd = podgroup.SubGroupMetadata{Name: sg.Name, Parent: sg.Parent, MinSubGroup: sg.MinSubGroup}
		if sg.Deferred {
			smd.Deferred = deferred[sg.Name]
			if sg.Parent != nil && smd.Deferred == "" {
				smd.Deferred = deferred[*sg.Parent]
			}
		}
		if sg.MinMember != nil {
			smd.MinAvailable = *sg.MinMember
		}
		if t := sg.Topology; t != nil {
			smd.TopologyConstraints = &podgroup.TopologyConstraintMetadata{Topology: t.TopologyName, RequiredTopologyLevel: t.RequiredTopologyLevel, PreferredTopologyLevel: t.PreferredTopologyLevel}
		}
		m.subGroups = append(m.subGroups, smd)
	}
	m.index = indexOf(pg.SubGroups)
	return m
}

// smallIndex is the number of PodGroups of a plan, or of sub-groups of a PodGroup, up to which a
// scan finds one instead of a map (a Go map costs at least about 250 bytes; most plans have one
// PodGroup of a few sub-groups, a plan of per-replica gangs or of many roles may have thousands).
const smallIndex = 8

// indexOf maps each element of list to its place when list has more than smallIndex elements,
// else it is nil (position scans).
func indexOf[T comparable](list []T) map[T]int {
	if len(list) <= smallIndex {
		return nil
	}
	m := make(map[T]int, len(list))
	for i, x := range list {
		m[x] = i
	}
	return m
}

// position returns the place of x in list, through index when it is set (indexOf).
func position[T comparable](index map[T]int, list []T, x T) (int, bool) {
	if index != nil {
		i, ok := index[x]
		return i, ok
	}
	i := slices.Index(list, x)
	return i, i >= 0
}

// current says c is the plan of topOwner's version (name and resourceVersion) and of compiled.
func (c *cachedPlan) current(topOwner *unstructured.Unstructured, compiled *definitions.Compiled) bool {
	return c.name == topOwner.GetName() && c.resourceVersion == topOwner.GetResourceVersion() && c.compiled == compiled
}

// setMeta computes the metadata of every planned PodGroup of the cached plan.
func (c *cachedPlan) setMeta() {
	pgs := c.plan.PodGroups
	c.meta = make([]podGroupMeta, len(pgs))
	for i, pg := range pgs {
		c.meta[i] = newPodGroupMeta(c.plan, pg)
	}
	c.metaIndex = indexOf(pgs)
}

// metaOf returns the metadata of a planned PodGroup (nil when pg is not the plan's).
func (c *cachedPlan) metaOf(pg *gang.PodGroup) *podGroupMeta {
	if i, ok := position(c.metaIndex, c.plan.PodGroups, pg); ok {
		return &c.meta[i]
	}
	return nil
}

// Name implements grouper.Grouper.
func (g *Grouper) Name() string { return Name }

// Plan returns the plan of the top owner, from the cache when neither the workload nor its
// definition changed. A freshly built plan's path misses are reported (see PathMissesTotal). Errors: ErrNoDefinition, ErrDefinitionUnusable, or the plan's error (it names the definition field).
func (g *Grouper) Plan(ctx context.Context, topOwner *unstructured.Unstructured) (*gang.Plan, *definitions.Compiled, error) {
	c, compiled, err := g.planFor(ctx, topOwner)
	if err != nil {
		return nil, compiled, err
	}
	return c.plan, compiled, nil
}

// planFor returns the cached plan of the top owner, building it (and its per-PodGroup metadata)
// when the workload or its definition changed. A failed plan is returned with its error (the
// callers use the plan only without one).
func (g *Grouper) planFor(ctx context.Context, topOwner *unstructured.Unstructured) (*cachedPlan, *definitions.Compiled, error) {
	compiled := g.Registry.Lookup(topOwner.GroupVersionKind())
	if compiled == nil {
		if why := g.Registry.Unusable(topOwner.GroupVersionKind()); why != "" {
			return nil, nil, fmt.Errorf("%s: %w: %s; fix the definition", definitions.KindString(topOwner.GroupVersionKind()), ErrDefinitionUnusable, why)
		}
		return nil, nil, fmt.Errorf("%s: %w", topOwner.GroupVersionKind(), ErrNoDefinition)
	}
	c, ok := g.cache().get(planKey{namespace: topOwner.GetNamespace(), uid: topOwner.GetUID()})
	switch {
	case !ok:
		lookupMiss.Inc()
	case !c.current(topOwner, compiled):
		lookupStale.Inc()
	default:
		lookupHit.Inc()
		return c, compiled, c.err
	}
	c, err := g.sharedPlan(ctx, topOwner, compiled)
	if err != nil {
		return nil, compiled, err
	}
	return c, compiled, c.err
}

// Role returns the plan of the top owner (cached, as Plan) and the name of the pod's role in it.
// Errors: those of Plan, or the pod's placement; a pod in no gang of the definition has a role
// (the plan's) all the same.
func (g *Grouper) Role(ctx context.Context, topOwner *unstructured.Unstructured, pod *corev1.Pod) (*gang.Plan, string, error) {
	cp, compiled, err := g.planFor(ctx, topOwner)
	if err != nil {
		return nil, "", err
	}
	podMap, err := compiled.PodInput(pod)
	if err != nil {
		return cp.plan, "", err
	}
	placement, err := compiled.PlacePod(ctx, podMap)
	if err != nil {
		return cp.plan, "", err
	}
	a, err := cp.plan.Assign(placement)
	if err != nil && !errors.Is(err, gang.ErrNotGrouped) {
		return cp.plan, "", err
	}
	if a != nil {
		return cp.plan, a.Role.Name, nil
	}
	for _, r := range cp.plan.Roles {
		if r.Component == placement.Component.Name && r.Instance == placement.InstanceID {
			return cp.plan, r.Name, nil
		}
	}
	return cp.plan, "", nil
}

// ReasonOverrideRefused is the Warning Event reason on a workload whose min-member annotation
// gangmap refused (not a whole number, below 1, or a pod count above a PodGroup's pods).
const ReasonOverrideRefused = "MinMemberOverrideRefused"

// reportOverrides emits a Warning Event on the workload for each refused min-member override,
// so its owner learns why the annotation had no effect: once per workload version, remembered
// with the path misses (driftReporter), so a plan built again after its eviction from the plan
// cache (PlanCacheSize) does not repeat it.
func (g *Grouper) reportOverrides(topOwner *unstructured.Unstructured, plan *gang.Plan) {
	if g.Recorder == nil {
		return
	}
	for _, o := range plan.Overrides {
		if o.Applied {
			continue
		}
		key := fmt.Sprintf("override|%s|%s|%s|%s", topOwner.GetUID(), topOwner.GetResourceVersion(), o.Annotation, o.Value)
		if g.drift.seen(key) {
			continue
		}
		g.Recorder.Eventf(topOwner, corev1.EventTypeWarning, ReasonOverrideRefused, "annotation %s=%q not applied: %s", o.Annotation, o.Value, o.Reason)
	}
}

// PlannedPodGroups implements grouper.Planner: the names of the PodGroups of the top owner's
// plan (cached as for GetPodGroupMetadata).
func (g *Grouper) PlannedPodGroups(ctx context.Context, topOwner *unstructured.Unstructured) ([]string, error) {
	cp, _, err := g.planFor(ctx, topOwner)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cp.plan.PodGroups))
	for _, pg := range cp.plan.PodGroups {
		out = append(out, pg.Name)
	}
	return out, nil
}

// Forget drops the cached plan of a deleted workload (its namespace, "" when cluster scoped, and
// UID).
func (g *Grouper) Forget(namespace string, uid types.UID) {
	g.cache().remove(planKey{namespace: namespace, uid: uid})
}

// GetPodGroupMetadata implements grouper.Grouper: KAI's default metadata for the top owner, with
// the gang of the pod's PodGroup from the plan: name, minMember or minSubGroup, sub-groups (the
// pod listed in its own), topology, and gangmap's definition and GPU annotations. It returns nil
// metadata and no error when the definition places the pod in no gang or outside the plan
// (gang.ErrNotInPlan), unless KAI's pod-grouper skips the workload (ungrouped: KAI's default
// PodGroup, minMember 1).
func (g *Grouper) GetPodGroupMetadata(ctx context.Context, topOwner *unstructured.Unstructured, pod *corev1.Pod, otherOwners ...*metav1.PartialObjectMetadata) (*podgroup.Metadata, error) {
	md, _, err := g.GroupPod(ctx, topOwner, pod, otherOwners...)
	return md, err
}

// GroupPod implements grouper.PlanGrouper: GetPodGroupMetadata, and what was seen of the pod for
// the findings (the plan, the pod's role, or that no component claims it), at no extra cost.
func (g *Grouper) GroupPod(ctx context.Context, topOwner *unstructured.Unstructured, pod *corev1.Pod, otherOwners ...*metav1.PartialObjectMetadata) (*podgroup.Metadata, grouper.Seen, error) {
	cp, compiled, err := g.planFor(ctx, topOwner)
	if err != nil {
		return nil, grouper.Seen{}, err
	}
	plan := cp.plan
	seen := grouper.Seen{Plan: plan, Definition: compiled}
	podMap, err := compiled.PodInput(pod)
	if err != nil {
		return nil, seen, err
	}
	placement, err := compiled.PlacePod(ctx, podMap)
	if errors.Is(err, definitions.ErrNoComponent) {
		seen.Unclaimed = true
		// The definition does not describe this pod (a selector that misses a role): it joins
		// the workload's gang without a sub-group, never a PodGroup of its own (intoGang).
		key, _ := compiled.ReplicaKeyOfPod(ctx, podMap)
		md, err := g.intoGang(ctx, cp, topOwner, pod, otherOwners, key)
		return md, seen, err
	}
	if err != nil {
		return nil, seen, fmt.Errorf("definition %q: %w", compiled.Name(), err)
	}
	a, err := plan.Assign(placement)
	if errors.Is(err, gang.ErrNotInPlan) {
		// The pod's instance or replica is outside the plan (a path that reads nothing, a role
		// counted 0 pods, a plan older than the workload): the caller may refresh a stale
		// workload and ask again; meanwhile the pod joins the gang without a sub-group.
		seen.NotInPlan = err
		key := ""
		if compiled.PerReplicaOf != nil {
			key = placement.ReplicaKeys[compiled.PerReplicaOf.Name]
		}
		md, err := g.intoGang(ctx, cp, topOwner, pod, otherOwners, key)
		return md, seen, err
	}
	if errors.Is(err, gang.ErrNotGrouped) {
		// The definition puts the pod's role in no gang (the alpha form's choice): left to KAI.
		md, err := g.ungrouped(ctx, plan, topOwner, pod, otherOwners)
		return md, seen, err
	}
	if err != nil {
		return nil, seen, fmt.Errorf("definition %q: %w", compiled.Name(), err)
	}
	seen.Role = a.Role.Name
	md, err := g.metadata(ctx, topOwner, pod, otherOwners, func(md *podgroup.Metadata) {
		fillGang(md, cp.metaOf(a.PodGroup), a, pod.Name)
		releaseDeferred(md, a, pod)
	})
	return md, seen, err
}

// metadata is KAI's default metadata for the pod (without gangmap's own skip mark:
// ownerskip.StripMark, nor any other of the top owner's kaikeys.Prefix annotations), with fill's
// changes, fitted to the KAI release (podgroup.FitRelease). KAI's default metadata copies every
// top-owner annotation; the gangmap.io/ keys of a PodGroup gangmap writes are gangmap's (its
// definition, GPUs, status, start-held, health), so a workload author cannot put their own
// values there, and gangmap's findings and status keeper are not overwritten at each write.
func (g *Grouper) metadata(ctx context.Context, topOwner *unstructured.Unstructured, pod *corev1.Pod, otherOwners []*metav1.PartialObjectMetadata, fill func(*podgroup.Metadata)) (*podgroup.Metadata, error) {
	md, err := g.Defaults.Metadata(ctx, topOwner, pod, otherOwners)
	if err != nil {
		return nil, err
	}
	ownerskip.StripMark(md.Annotations)
	maps.DeleteFunc(md.Annotations, func(k, _ string) bool { return strings.HasPrefix(k, kaikeys.Prefix) })
	fill(md)
	podgroup.FitRelease(md, g.Release)
	return md, nil
}

// fillGang writes the planned PodGroup of assignment a into md: the shared sub-group metadata,
// with a copy of the pod's own sub-group listing the pod.
func fillGang(md *podgroup.Metadata, pm *podGroupMeta, a *gang.Assignment, podName string) {
	pg := a.PodGroup
	md.Name = a.Name
	md.MinSubGroup = nil
	md.MinAvailable = 0
	if pg.MinSubGroup != nil {
		md.MinSubGroup = ptr.To(*pg.MinSubGroup)
	} else {
		md.MinAvailable = *pg.MinMember
	}
	md.SubGroups = slices.Clone(pm.subGroups)
	if i, ok := position(pm.index, pg.SubGroups, a.SubGroup); ok && a.SubGroup != nil {
		own := *pm.subGroups[i]
		own.PodsReferences = []string{podName}
		md.SubGroups[i] = &own
	}
	if t := pg.Topology; t != nil {
		// The definition's topology wins over the top owner's annotations, as in KAI's v2 path.
		md.Topology, md.RequiredTopologyLevel, md.PreferredTopologyLevel = t.TopologyName, t.RequiredTopologyLevel, t.PreferredTopologyLevel
	}
	md.Annotations[kaikeys.Definition] = pm.definition
	md.Annotations[kaikeys.GPUs] = pm.gpus
	if pm.status != "" {
		md.Annotations[kaikeys.Status] = pm.status
	}
	md.Annotations[kaikeys.RoleGPUs] = pm.roleGPUs
	if pm.startHeld != "" {
		md.Annotations[kaikeys.StartHeld] = pm.startHeld
	}
}

// startHeld renders the PodGroup's roles the start rule holds, with the reason, as JSON.
func startHeld(pg *gang.PodGroup) string {
	held := map[string]string{}
	for _, m := range pg.Members() {
		if m.Role.StartupHold != "" {
			held[m.Role.Name] = m.Role.StartupHold
		}
	}
	b, _ := json.Marshal(held)
	return string(b)
}

type roleGPU struct {
	Role       string    `json:"role"`
	Pods       int64     `json:"pods"`
	GPUsPerPod gang.GPUs `json:"gpusPerPod"`
	GPUs       gang.GPUs `json:"gpus"`
}

// roleGPUs renders the PodGroup's per-role GPUs as JSON, in sub-group order.
func roleGPUs(pg *gang.PodGroup) string {
	var out []roleGPU
	for _, m := range pg.Members() {
		out = append(out, roleGPU{Role: m.Role.Name, Pods: m.Pods, GPUsPerPod: m.Role.GPUsPerPod, GPUs: m.Role.GPUsPerPod.Times(m.Pods)})
	}
	b, _ := json.Marshal(out)
	return string(b)
}
