package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

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
	views := v.countPods(pods)
	defer func() {
		v.PodGroups = comparePodGroups(v, obj, existing, live)
		admissions(v.PodGroups, existing, pods)
	}()

	gvk := obj.GroupVersionKind()
	v.NativeInKAI = nativeInKAI(gvk)
	c := reg.Lookup(gvk)
	if v.NativeInKAI {
		v.Notes = append(v.Notes, nativeNote(gvk))
	}
	if c == nil && v.NativeInKAI {
		v.Unclaimed = append(v.Unclaimed, reasons(views, "KAI's "+gvk.Kind+" plugin groups it")...)
		return v
	}
	if c == nil {
		v.Error = noDefinition(reg, gvk)
		v.Unclaimed = append(v.Unclaimed, reasons(views, "no definition for the workload's kind")...)
		return v
	}
	v.compiled = c
	v.Definition = &gang.DefinitionRef{Name: c.Name(), Source: string(c.Loaded.Source)}
	content := expr.Normalize(obj.UnstructuredContent()).(map[string]any)
	w, err := c.Resolve(ctx, content)
	if err == nil {
		v.misses = w.Misses
		v.defaults = hiddenDefaults(c.Loaded.Karta, content)
		for _, h := range v.defaults {
			v.Notes = append(v.Notes, h.String())
		}
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
		status := "applied"
		if !o.Applied {
			status = "refused: " + o.Reason
		}
		v.Notes = append(v.Notes, fmt.Sprintf("override %s=%q %s", o.Annotation, o.Value, status))
	}
	v.Tree = buildTree(c, w, v.plan)
	v.placePods(ctx, c, pods, views)
	v.Placement = buildPlacement(v.plan, views)
	return v
}

// countPods makes the view of each pod (views[i] of pods[i]) and counts them in v: pods, ready
// pods, GPUs requested and pods with DRA claims.
func (v *workloadView) countPods(pods []*corev1.Pod) []*podView {
	views := make([]*podView, len(pods))
	for i, p := range pods {
		pv := &podView{Name: p.Name, Phase: cmp.Or(string(p.Status.Phase), string(corev1.PodPending)), Node: p.Spec.NodeName, Annotated: p.Annotations[kaikeys.PodGroupName]}
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
		views[i] = pv
		v.Pods.Total++
		if pv.Ready {
			v.Pods.Ready++
		}
		v.PodGPUs += pv.GPUs
		if len(pv.GPUDetail.DRAClaims) > 0 {
			v.DRAClaimPods++
		}
	}
	return views
}

// placePods places each pod (views[i] of pods[i]) in the instance of v.Tree the definition puts
// it in; a pod no instance of the plan takes is added to v.Unclaimed with its reason.
func (v *workloadView) placePods(ctx context.Context, c *definitions.Compiled, pods []*corev1.Pod, views []*podView) {
	instances := map[[2]string]*instanceNode{}
	eachInstance(v.Tree, func(n *componentNode, in *instanceNode) { instances[[2]string{n.Name, in.ID}] = in })
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
}

func reasons(pods []*podView, reason string) []*podView {
	for _, p := range pods {
		p.Reason = reason
	}
	return pods
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
	if errors.Is(err, definitions.ErrNoComponent) {
		pv.Reason = err.Error() + ": " + selectorMismatch(ctx, c, podMap)
		return
	}
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
