package app

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/findings"
	"github.com/gangmap/gangmap/podgrouper/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/owners"
)

// workloadView is one workload as describe, get and test see it: the definition's tree with the
// live pods placed in it, the matched status, the plan's roles and GPUs, and the PodGroups
// gangmap would write next to those that exist.
type workloadView struct {
	Workload gang.WorkloadRef `json:"workload"`
	UID      string           `json:"uid,omitempty"`
	// Definition is the definition used; nil when the kind has none.
	Definition *gang.DefinitionRef `json:"definition,omitempty"`
	// Status is every status of the definition's vocabulary whose matchers hold.
	Status []definitions.Status `json:"status"`
	// Tree is the root component with its instances and children.
	Tree *componentNode `json:"tree,omitempty"`
	// Roles and TotalGPUs are the plan's (pods and GPUs from the spec, not from live pods).
	Roles     []*gang.Role `json:"roles"`
	TotalGPUs gang.GPUs    `json:"totalGPUs"`
	// Pods counts the workload's live pods; PodGPUs sums what they request.
	Pods    podCounts `json:"pods"`
	PodGPUs gang.GPUs `json:"podGPUs"`
	// DRAClaimPods counts the live pods that get devices through DRA resource claims (not in
	// PodGPUs: a claim's devices are not nvidia.com/gpu requests).
	DRAClaimPods int `json:"draClaimPods,omitempty"`
	// PodGroups lists the planned PodGroups and the existing ones owned by the workload.
	PodGroups []*podGroupView `json:"podGroups"`
	// Unclaimed lists the workload's pods that no component of the definition claims.
	Unclaimed []*podView `json:"unclaimedPods"`
	// Findings are the grouper's observed-vs-planned findings, from the gangmap.io/health
	// annotation of the workload's PodGroups (podgrouper/findings).
	Findings []findings.Finding `json:"findings,omitempty"`
	// Notes are the plan's notes (paths that resolved to nothing, ...) and describe's own.
	Notes []string `json:"notes,omitempty"`
	// Error says why the workload could not be planned.
	Error string `json:"error,omitempty"`
	// NativeInKAI says KAI groups the workload's kind with a plugin of its own (KAI's default
	// native table, podgrouper/native): in a cluster gangmap creates no PodGroup for it and
	// labels none of its pods, whatever definitions say.
	NativeInKAI bool `json:"nativeInKAI,omitempty"`

	plan     *gang.Plan
	compiled *definitions.Compiled
	misses   []definitions.PathMiss
}

// podCounts counts pods.
type podCounts struct {
	Total int `json:"total"`
	Ready int `json:"ready"`
}

// componentNode is one component of the definition's tree.
type componentNode struct {
	Name      string           `json:"name"`
	Kind      string           `json:"kind,omitempty"`
	Instances []*instanceNode  `json:"instances"`
	Children  []*componentNode `json:"children,omitempty"`
}

// instanceNode is one instance of a component, with its role (when the component has pods) and
// the live pods placed in it.
type instanceNode struct {
	ID string `json:"id,omitempty"`
	// Role is the plan's role of this instance ("" when the component carries no pods).
	Role       string     `json:"role,omitempty"`
	Replicas   int64      `json:"replicas"`
	PlanPods   int64      `json:"plannedPods"`
	GPUsPerPod gang.GPUs  `json:"gpusPerPod"`
	GPUs       gang.GPUs  `json:"gpus"`
	Pods       []*podView `json:"pods"`
	Ready      int        `json:"ready"`
}

// podView is one live pod.
type podView struct {
	Name  string    `json:"name"`
	Phase string    `json:"phase"`
	Node  string    `json:"node,omitempty"`
	Ready bool      `json:"ready"`
	GPUs  gang.GPUs `json:"gpus"`
	// GPUDetail is what the pod asks of GPUs beyond GPUs (DRA claims, MIG, gpu-memory, other
	// vendors' accelerators), so a GPU from a ResourceClaim never reads as 0.
	GPUDetail gang.PodGPUs `json:"gpuDetail,omitzero"`
	// PodGroup and SubGroup are where gangmap's plan puts the pod.
	PodGroup string `json:"podGroup,omitempty"`
	SubGroup string `json:"subGroup,omitempty"`
	// Annotated is the pod's pod-group-name annotation: the PodGroup it was actually given.
	Annotated string `json:"podGroupAnnotation,omitempty"`
	// Reason says why the pod is unclaimed or in no PodGroup.
	Reason string `json:"reason,omitempty"`

	component, instance string
}

// podGroupView is one PodGroup: planned by gangmap, existing in the cluster (or the manifest),
// or both.
type podGroupView struct {
	Name     string         `json:"name"`
	Planned  *podGroupShape `json:"planned,omitempty"`
	Existing *podGroupShape `json:"existing,omitempty"`
	// Verdict: match, differs, missing (planned, not there), foreign (there, not gangmap's:
	// e.g. written by KAI's default grouper), planned (offline: nothing to compare with).
	Verdict string `json:"verdict"`
	// Differences between the existing PodGroup and gangmap's plan, one line each.
	Differences []string `json:"differences,omitempty"`
	// Writer guesses who wrote a foreign PodGroup.
	Writer string `json:"writer,omitempty"`
}

// podGroupShape is the gang of a PodGroup.
type podGroupShape struct {
	MinMember   *int32          `json:"minMember,omitempty"`
	MinSubGroup *int32          `json:"minSubGroup,omitempty"`
	SubGroups   []subGroupShape `json:"subGroups,omitempty"`
	Queue       string          `json:"queue,omitempty"`
	// Pods and GPUs are the plan's (planned only).
	Pods int64     `json:"pods,omitempty"`
	GPUs gang.GPUs `json:"gpus,omitempty"`
}

// subGroupShape is one sub-group of a PodGroup.
type subGroupShape struct {
	Name        string `json:"name"`
	Parent      string `json:"parent,omitempty"`
	MinMember   *int32 `json:"minMember,omitempty"`
	MinSubGroup *int32 `json:"minSubGroup,omitempty"`
}

// Verdicts of a podGroupView.
const (
	verdictMatch   = "match"
	verdictDiffers = "differs"
	verdictMissing = "missing"
	verdictForeign = "foreign"
	verdictPlanned = "planned"
	// verdictNative: planned from a definition, but KAI groups the kind natively, so gangmap
	// creates none.
	verdictNative = "native"
)

// maxOwnerDepth bounds the owner walk from a pod to its workload (LWS workers are 4 levels
// below their LeaderWorkerSet).
const maxOwnerDepth = 10

// ownerGraph reads an owner: its own owner references, or false when it cannot be read.
type ownerGraph interface {
	owner(ctx context.Context, ns string, ref metav1.OwnerReference) ([]metav1.OwnerReference, bool)
}

// workloadKey identifies a workload an owner reference can point at.
type workloadKey struct {
	uid string
	// offline, without a UID: group, kind, namespace and name.
	group, kind, ns, name string
}

// rootsIndex finds the workload an owner reference points at.
type rootsIndex struct {
	byUID  map[string]int
	byName map[workloadKey]int
	uids   []string
}

func newRootsIndex(objs []*unstructured.Unstructured) *rootsIndex {
	ix := &rootsIndex{byUID: map[string]int{}, byName: map[workloadKey]int{}, uids: make([]string, len(objs))}
	for i, o := range objs {
		ix.uids[i] = string(o.GetUID())
		if uid := string(o.GetUID()); uid != "" {
			ix.byUID[uid] = i
		}
		gvk := o.GroupVersionKind()
		ix.byName[workloadKey{group: gvk.Group, kind: gvk.Kind, ns: o.GetNamespace(), name: o.GetName()}] = i
	}
	return ix
}

// match returns the workload ref points at: by UID when the reference has one and some workload
// has it, else (manifests without UIDs) by group, kind, namespace and name.
func (ix *rootsIndex) match(ns string, ref metav1.OwnerReference) (int, bool) {
	if ref.UID != "" {
		if i, ok := ix.byUID[string(ref.UID)]; ok {
			return i, true
		}
	}
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	i, ok := ix.byName[workloadKey{group: gv.Group, kind: ref.Kind, ns: ns, name: ref.Name}]
	if ok && ref.UID != "" && ix.uids[i] != "" {
		return 0, false // the reference names a workload with another UID: an older one
	}
	return i, ok
}

// attribute walks the owner references of each pod (controller reference first, bounded depth,
// owners read through g) to a workload of ix. It returns the pods of each workload by index; a
// pod whose chain reaches no workload is left out.
func attribute(ctx context.Context, pods []*corev1.Pod, ix *rootsIndex, g ownerGraph) map[int][]*corev1.Pod {
	out := map[int][]*corev1.Pod{}
	for _, p := range pods {
		if i, ok := rootOf(ctx, p.Namespace, p.OwnerReferences, ix, g); ok {
			out[i] = append(out[i], p)
		}
	}
	return out
}

func rootOf(ctx context.Context, ns string, refs []metav1.OwnerReference, ix *rootsIndex, g ownerGraph) (int, bool) {
	seen := map[metav1.OwnerReference]bool{}
	for depth := 0; depth < maxOwnerDepth && len(refs) > 0; depth++ {
		ref := owners.Pick(refs)
		if i, ok := ix.match(ns, ref); ok {
			return i, true
		}
		if seen[ref] {
			return 0, false
		}
		seen[ref] = true
		next, ok := g.owner(ctx, ns, ref)
		if !ok {
			return 0, false
		}
		refs = next
	}
	return 0, false
}

// buildView describes one workload: plan, status, tree with pods placed, PodGroups compared.
// existing are the PodGroups of the workload's namespace (nil offline when the manifest has
// none); live says whether they come from a cluster (else a missing PodGroup is not reported).
func buildView(ctx context.Context, reg *definitions.Registry, obj *unstructured.Unstructured, pods []*corev1.Pod, existing []*v2alpha2.PodGroup, live bool) *workloadView {
	v := &workloadView{
		Workload:  gang.WorkloadRef{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()},
		UID:       string(obj.GetUID()),
		Status:    []definitions.Status{},
		Roles:     []*gang.Role{},
		PodGroups: []*podGroupView{},
		Unclaimed: []*podView{},
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	views := make([]*podView, len(pods))
	for i, p := range pods {
		views[i] = newPodView(p)
		v.Pods.Total++
		if views[i].Ready {
			v.Pods.Ready++
		}
		v.PodGPUs += views[i].GPUs
		if len(views[i].GPUDetail.DRAClaims) > 0 {
			v.DRAClaimPods++
		}
	}
	defer func() { v.PodGroups = comparePodGroups(v, obj, existing, live) }()

	gvk := obj.GroupVersionKind()
	v.NativeInKAI = nativeInKAI(gvk)
	c := reg.Lookup(gvk)
	if c == nil && v.NativeInKAI {
		v.Notes = append(v.Notes, nativeNote(gvk))
		v.Unclaimed = append(v.Unclaimed, reasons(views, "KAI's "+gvk.Kind+" plugin groups it")...)
		return v
	}
	if v.NativeInKAI {
		v.Notes = append(v.Notes, nativeNote(gvk))
	}
	if c == nil {
		v.Error = fmt.Sprintf("no usable Workload Map definition for kind %s%s", definitions.KindString(obj.GroupVersionKind()),
			missingDefinitionHint(reg, definitions.GroupVersionKind{Group: obj.GroupVersionKind().Group, Version: obj.GroupVersionKind().Version, Kind: obj.GetKind()}))
		v.Unclaimed = append(v.Unclaimed, reasons(views, "no definition for the workload's kind")...)
		return v
	}
	v.compiled = c
	v.Definition = &gang.DefinitionRef{Name: c.Name(), Source: string(c.Loaded.Source)}
	content := expr.Normalize(obj.UnstructuredContent()).(map[string]any)
	w, err := c.Resolve(ctx, content)
	if err == nil {
		v.misses = w.Misses
		if v.plan, err = gang.Build(ctx, c, obj); err == nil {
			fitToRelease(v.plan)
			// The plan's status: the same evaluation the grouper's metrics and the
			// gangmap.io/status annotation show.
			if v.plan.StatusError != "" {
				v.Notes = append(v.Notes, "status: "+v.plan.StatusError)
			} else {
				v.Status = v.plan.Status
			}
		}
	}
	if err != nil {
		v.Error = fmt.Sprintf("definition %q (%s): %v", c.Name(), c.Loaded.Origin, err)
		v.Unclaimed = append(v.Unclaimed, reasons(views, "the workload has no plan")...)
		return v
	}
	v.Roles, v.TotalGPUs = v.plan.Roles, v.plan.TotalGPUs
	v.Notes = append(v.plan.Notes, v.Notes...)
	for _, o := range v.plan.Overrides {
		if o.Applied {
			v.Notes = append(v.Notes, fmt.Sprintf("override %s=%q applied", o.Annotation, o.Value))
		} else {
			v.Notes = append(v.Notes, fmt.Sprintf("override %s=%q refused: %s", o.Annotation, o.Value, o.Reason))
		}
	}
	v.Tree = buildTree(c, w, v.plan)
	instances := map[[2]string]*instanceNode{}
	indexInstances(v.Tree, instances)
	for i, p := range pods {
		pv := views[i]
		placePodView(ctx, c, v.plan, p, pv)
		if pv.Reason == "" || pv.component != "" {
			if in := instances[[2]string{pv.component, pv.instance}]; in != nil {
				in.Pods = append(in.Pods, pv)
				if pv.Ready {
					in.Ready++
				}
				continue
			}
			if pv.Reason == "" {
				pv.Reason = fmt.Sprintf("component %s has no instance %q in the plan", pv.component, pv.instance)
			}
		}
		v.Unclaimed = append(v.Unclaimed, pv)
	}
	return v
}

func reasons(pods []*podView, reason string) []*podView {
	for _, p := range pods {
		p.Reason = reason
	}
	return pods
}

func newPodView(p *corev1.Pod) *podView {
	pv := &podView{Name: p.Name, Phase: string(p.Status.Phase), Node: p.Spec.NodeName, Annotated: p.Annotations[kaikeys.PodGroupName]}
	if pv.Phase == "" {
		pv.Phase = string(corev1.PodPending)
	}
	for _, c := range p.Status.Conditions {
		switch {
		case c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue:
			pv.Ready = true
		case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "":
			pv.Phase += " (" + c.Reason + ")"
		}
	}
	if p.DeletionTimestamp != nil {
		pv.Phase = "Terminating"
	}
	if g, err := gang.PodGPUsOf(p); err == nil {
		pv.GPUs, pv.GPUDetail = g.Devices, g
	}
	return pv
}

// placePodView places the pod in the definition's tree (its component and instance) and the
// plan (its PodGroup and sub-group). A pod no component claims gets a Reason and no component.
func placePodView(ctx context.Context, c *definitions.Compiled, plan *gang.Plan, p *corev1.Pod, pv *podView) {
	podMap, err := expr.FromObject(p)
	if err != nil {
		pv.Reason = err.Error()
		return
	}
	pl, err := c.PlacePod(ctx, podMap)
	if err != nil {
		pv.Reason = err.Error()
		return
	}
	pv.component, pv.instance = pl.Component.Name, pl.InstanceID
	a, err := plan.Assign(pl)
	switch {
	case errors.Is(err, gang.ErrNotGrouped):
		pv.Reason = "in no gang of the definition (left to KAI)"
	case err != nil:
		pv.Reason = err.Error()
	default:
		pv.PodGroup = a.Name
		if a.SubGroup != nil {
			pv.SubGroup = a.SubGroup.Name
		}
	}
}

// buildTree nests the resolved components under their parents, with each instance's role.
func buildTree(c *definitions.Compiled, w *definitions.Workload, plan *gang.Plan) *componentNode {
	roles := map[[2]string]*gang.Role{}
	for _, r := range plan.Roles {
		roles[[2]string{r.Component, r.Instance}] = r
	}
	nodes := map[*definitions.Component]*componentNode{}
	var root *componentNode
	for _, rc := range w.Components {
		comp := rc.Component
		n := &componentNode{Name: comp.Name, Instances: []*instanceNode{}}
		if k := comp.Def.Kind; k != nil {
			n.Kind = k.Kind
		}
		for _, inst := range rc.Instances {
			in := &instanceNode{ID: inst.ID, Pods: []*podView{}}
			if inst.Replicas != nil {
				in.Replicas = *inst.Replicas
			} else if comp.Replicas == nil {
				in.Replicas = 1
			}
			if r := roles[[2]string{comp.Name, inst.ID}]; r != nil {
				in.Role, in.Replicas, in.PlanPods, in.GPUsPerPod, in.GPUs = r.Name, r.Replicas, r.Pods, r.GPUsPerPod, r.GPUs
			}
			n.Instances = append(n.Instances, in)
		}
		nodes[comp] = n
		if comp.Parent == nil {
			root = n
		} else if p := nodes[comp.Parent]; p != nil {
			p.Children = append(p.Children, n)
		}
	}
	return root
}

func indexInstances(n *componentNode, out map[[2]string]*instanceNode) {
	if n == nil {
		return
	}
	for _, in := range n.Instances {
		out[[2]string{n.Name, in.ID}] = in
	}
	for _, ch := range n.Children {
		indexInstances(ch, out)
	}
}

// ownedBy reports whether pg has an owner reference to the workload (by UID; offline, without
// UIDs, by kind and name).
func ownedBy(pg *v2alpha2.PodGroup, obj *unstructured.Unstructured) bool {
	for _, ref := range pg.OwnerReferences {
		if obj.GetUID() != "" {
			if ref.UID == obj.GetUID() {
				return true
			}
			continue
		}
		if ref.Kind == obj.GetKind() && ref.Name == obj.GetName() && pg.Namespace == obj.GetNamespace() {
			return true
		}
	}
	return false
}

// comparePodGroups lists the planned PodGroups next to the existing ones owned by the workload.
func comparePodGroups(v *workloadView, obj *unstructured.Unstructured, existing []*v2alpha2.PodGroup, live bool) []*podGroupView {
	out := []*podGroupView{}
	owned := map[string]*v2alpha2.PodGroup{}
	var ownedNames []string
	for _, pg := range existing {
		if ownedBy(pg, obj) {
			owned[pg.Name] = pg
			ownedNames = append(ownedNames, pg.Name)
		}
	}
	sort.Strings(ownedNames)
	var planned []*gang.PodGroup
	if v.plan != nil {
		planned = v.plan.PodGroups
	}
	for _, pg := range planned {
		pv := &podGroupView{Name: pg.Name, Planned: plannedShape(pg)}
		switch ex := owned[pg.Name]; {
		case ex != nil:
			pv.Existing = existingShape(ex)
			pv.Differences = differences(pv.Planned, pv.Existing)
			pv.Verdict = verdictMatch
			if len(pv.Differences) > 0 {
				pv.Verdict = verdictDiffers
			}
			delete(owned, pg.Name)
		case v.NativeInKAI:
			pv.Verdict = verdictNative
		case live || len(existing) > 0:
			pv.Verdict = verdictMissing
		default:
			pv.Verdict = verdictPlanned
		}
		out = append(out, pv)
	}
	for _, name := range ownedNames {
		ex := owned[name]
		if ex == nil {
			continue
		}
		pv := &podGroupView{Name: name, Existing: existingShape(ex), Verdict: verdictForeign}
		if name == fmt.Sprintf("pg-%s-%s", obj.GetName(), obj.GetUID()) {
			pv.Writer = "KAI's default grouper (pg-<name>-<uid>)"
			if v.NativeInKAI {
				pv.Writer = "KAI's " + obj.GetKind() + " plugin (pg-<name>-<uid>)"
			}
		} else if ex.Annotations[kaikeys.Definition] != "" {
			pv.Writer = "gangmap (" + ex.Annotations[kaikeys.Definition] + "), for an older plan"
		}
		if len(planned) == 1 {
			for _, d := range differences(plannedShape(planned[0]), pv.Existing) {
				pv.Differences = append(pv.Differences, d+" (vs gangmap's "+planned[0].Name+")")
			}
		} else if len(planned) == 0 {
			pv.Differences = []string{"gangmap plans no PodGroup for this workload"}
		}
		out = append(out, pv)
	}
	return out
}

func plannedShape(pg *gang.PodGroup) *podGroupShape {
	s := &podGroupShape{MinMember: pg.MinMember, MinSubGroup: pg.MinSubGroup, Pods: pg.Pods, GPUs: pg.GPUs}
	for _, sg := range pg.SubGroups {
		ss := subGroupShape{Name: sg.Name, MinMember: sg.MinMember, MinSubGroup: sg.MinSubGroup}
		if sg.Parent != nil {
			ss.Parent = *sg.Parent
		}
		s.SubGroups = append(s.SubGroups, ss)
	}
	return s
}

func existingShape(pg *v2alpha2.PodGroup) *podGroupShape {
	s := &podGroupShape{MinMember: pg.Spec.MinMember, MinSubGroup: pg.Spec.MinSubGroup, Queue: pg.Spec.Queue}
	for _, sg := range pg.Spec.SubGroups {
		ss := subGroupShape{Name: sg.Name, MinMember: sg.MinMember, MinSubGroup: sg.MinSubGroup}
		if sg.Parent != nil {
			ss.Parent = *sg.Parent
		}
		s.SubGroups = append(s.SubGroups, ss)
	}
	return s
}

// differences lists, one line each, where the existing gang differs from the planned one.
func differences(planned, existing *podGroupShape) []string {
	var out []string
	if !eqInt(planned.MinMember, existing.MinMember) {
		out = append(out, fmt.Sprintf("minMember: planned %s, existing %s", optInt(planned.MinMember), optInt(existing.MinMember)))
	}
	if !eqInt(planned.MinSubGroup, existing.MinSubGroup) {
		out = append(out, fmt.Sprintf("minSubGroup: planned %s, existing %s", optInt(planned.MinSubGroup), optInt(existing.MinSubGroup)))
	}
	want := map[string]subGroupShape{}
	for _, sg := range planned.SubGroups {
		want[sg.Name] = sg
	}
	have := map[string]bool{}
	for _, sg := range existing.SubGroups {
		have[sg.Name] = true
		w, ok := want[sg.Name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("sub-group %s: not planned", sg.Name))
		case !eqInt(w.MinMember, sg.MinMember) || !eqInt(w.MinSubGroup, sg.MinSubGroup) || w.Parent != sg.Parent:
			out = append(out, fmt.Sprintf("sub-group %s: planned %s, existing %s", sg.Name, subGroupText(w), subGroupText(sg)))
		}
	}
	for _, sg := range planned.SubGroups {
		if !have[sg.Name] {
			out = append(out, fmt.Sprintf("sub-group %s: planned %s, missing", sg.Name, subGroupText(sg)))
		}
	}
	return out
}

func subGroupText(sg subGroupShape) string {
	s := "minMember " + optInt(sg.MinMember)
	if sg.MinSubGroup != nil {
		s = "minSubGroup " + optInt(sg.MinSubGroup)
	}
	if sg.Parent != "" {
		s += ", parent " + sg.Parent
	}
	return s
}

func eqInt(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// podGroupNames lists the names of the PodGroups that exist for the workload, else the planned
// ones marked "(planned)".
func (v *workloadView) podGroupNames() string {
	var have, planned []string
	for _, pg := range v.PodGroups {
		if pg.Existing != nil {
			have = append(have, pg.Name)
		} else {
			planned = append(planned, pg.Name)
		}
	}
	switch {
	case len(have) > 0:
		return strings.Join(have, ",")
	case len(planned) > 0 && v.NativeInKAI:
		return "- (KAI native)"
	case len(planned) > 0:
		return strings.Join(planned, ",") + " (planned)"
	}
	return "-"
}

// statusText is the matched statuses, comma separated.
func (v *workloadView) statusText() string {
	if len(v.Status) == 0 {
		return "-"
	}
	parts := make([]string, len(v.Status))
	for i, s := range v.Status {
		parts[i] = string(s)
	}
	return strings.Join(parts, ",")
}
