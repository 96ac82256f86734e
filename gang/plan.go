// Package gang turns a Workload Map definition evaluated on a live workload into a gang plan:
// the roles (component × instance) with their pods and GPUs, and the KAI PodGroups with
// minMember or minSubGroup and sub-groups that gang-schedule them. It also places each pod of
// the workload in its PodGroup and sub-group.
//
// The rules, and where they come from:
//   - Pods of a role = replicas × pods per replica (JobSet replicas × parallelism, LWS size, Ray
//     numOfHosts); the gang counts min replicas × pods per replica where the framework defines a
//     minimum (Ray minReplicas, elastic PyTorchJob); zero is legal and adds nothing.
//   - A gang's minMember is the sum over all of its roles; a per-replica gang (LWS group) takes
//     each role's share of one replica.
//   - Sub-groups are DNS labels; every pod lands in exactly one leaf sub-group; minSubGroup counts
//     every top-level sub-group written to the PodGroup (one of minMember 0 is satisfied by no
//     pod, so left out of the count it would stand in for a required one: KAI subgroupset.go
//     GetNumActiveAllocatedDirectSubGroups); minMember and minSubGroup are never both set (KAI's
//     PodGroup webhook rejects it).
//   - Start order (startup.go): a role whose pods have all finished keeps a sub-group of minimum
//     0; a role whose pods the operator creates later is Deferred: its sub-group is planned (its
//     pods are labelled with it) but not written until its pods exist, so KAI, which takes the
//     first minSubGroup sub-groups by name, never waits for it (podgrouper/core/kaiadmission).
package gang

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
)

// Annotations on the top owner that override a gang's minMember, in precedence order.
const (
	// AnnotationMinMember is gangmap's override.
	AnnotationMinMember = "gangmap.io/min-member"
	// AnnotationKAIBatchMinMember is KAI's override (kai.scheduler/batch-min-member, read by its
	// Job and JobSet plugins).
	AnnotationKAIBatchMinMember = "kai.scheduler/batch-min-member"
)

// Plan is the gang plan of one workload: see the package doc for the rules. A Plan is computed
// once per workload generation and is read-only afterwards; Assign is safe for concurrent use.
type Plan struct {
	Workload   WorkloadRef   `json:"workload"`
	Definition DefinitionRef `json:"definition"`
	PodGroups  []*PodGroup   `json:"podGroups"`
	Roles      []*Role       `json:"roles"`
	TotalGPUs  GPUs          `json:"totalGPUs"`
	// Notes are facts a user should see: paths that resolved to nothing, roles in no gang,
	// minimums above the desired count.
	Notes []string `json:"notes,omitempty"`
	// Overrides lists the min-member annotations found on the top owner and what became of them.
	Overrides []Override `json:"overrides,omitempty"`
	// HasStartRule says the definition has a start rule (spec.gangmap.gang.startup), whether or
	// not it holds a role of this workload now.
	HasStartRule bool `json:"-"`
	// Misses lists the definition paths that resolved to nothing on this workload (drift between
	// the definition and the framework, or a typo); each is also in Notes.
	Misses []definitions.PathMiss `json:"misses,omitempty"`
	// OwnsNoPods is the definition's reason why this workload creates no pods of its own
	// (spec.gangmap.ownsNoPods), "" when it does.
	OwnsNoPods string `json:"ownsNoPods,omitempty"`
	// Status is every word of the common status vocabulary whose matchers in the definition's
	// statusDefinition hold on the workload, in upstream's order ([undefined] when none does);
	// nil with StatusError set when evaluating it failed. The CLI's get and describe, the
	// workload metrics, the PodGroup's gangmap.io/status annotation and "gangmap plan" (table and
	// -o json|yaml, key "status") all show this.
	Status []definitions.Status `json:"status"`
	// StatusError says why Status could not be evaluated (it names the definition field).
	StatusError string `json:"statusError,omitempty"`
	// TopologyIssues are the topology and segment requests (KAI's annotations on the workload and
	// its pod templates) the plan could not honour, each with the reason; each is in Notes too.
	TopologyIssues []TopologyIssue `json:"topologyIssues,omitempty"`

	// workloadTopo is the PodGroup constraint of the workload's kai.scheduler/topology
	// annotations, used where the definition sets none.
	workloadTopo *definitions.TopologyConstraint

	perReplica *definitions.Component
	// alphaNames are the gang names of the alpha pod groups, by index (alpha form only).
	alphaNames []string
	roleIndex  smallIndex[roleKey, *Role]
	gangIndex  smallIndex[gangKey, *PodGroup]
	// ownerKey is the top owner's UID (its name in offline plans), which PodGroup names start with.
	ownerKey string
	// alphaMember is, in the alpha form, the pod group member that takes each grouped role's pods
	// (nil in the other forms).
	alphaMember map[*Role]definitions.AlphaMember
}

// WorkloadRef names the workload.
type WorkloadRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	UID        string `json:"-"`
}

// DefinitionRef names the definition that planned the workload and the source it won from.
type DefinitionRef struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// Role is one component × instance with pods.
type Role struct {
	// Name is the role's sub-group name: the instance id for a multi-instance component, else the
	// component name (qualified as <component>-<instance> on a clash), as a DNS-1123 label.
	Name        string `json:"name"`
	Component   string `json:"component"`
	Instance    string `json:"instance"`
	Replicas    int64  `json:"replicas"`
	MinReplicas int64  `json:"minReplicas"`
	// PodsPerReplica is the pods each replica runs (1 unless the definition says otherwise).
	PodsPerReplica int64 `json:"podsPerReplica"`
	// Pods = Replicas × PodsPerReplica; GangPods = MinReplicas × PodsPerReplica, or 0 while the
	// definition's start rule keeps the role out of the gang minimum (StartupHold says why).
	Pods     int64 `json:"pods"`
	GangPods int64 `json:"gangPods"`
	// StartupHold, when set, says why the start rule keeps the role out of the PodGroup's
	// minimum now: its pods cannot exist yet, or have all finished. HeldPods is the role's own
	// minimum, which its sub-group keeps, so its pods still start as one unit once they exist.
	StartupHold string `json:"startupHold,omitempty"`
	HeldPods    int64  `json:"heldPods,omitempty"`
	// StartupFinished says the start rule holds the role because its pods have all finished:
	// its sub-group asks for 0 pods (KAI counts no finished pod towards a minimum, pod_status.go
	// activeAllocatedStatuses). A held role that has not finished is not created yet: its
	// sub-groups are Deferred.
	StartupFinished bool `json:"startupFinished,omitempty"`
	// GPUsPerPod counts whole devices plus fractions, in devices; GangGPUs and GPUs multiply it by
	// GangPods and Pods.
	GPUsPerPod GPUs    `json:"gpusPerPod"`
	GangGPUs   GPUs    `json:"gangGPUs"`
	GPUs       GPUs    `json:"gpus"`
	GPUDetail  PodGPUs `json:"gpuDetail,omitzero"`
	// Topology is the role's own constraint from its pod template's kai.scheduler/topology
	// annotations (its sub-group's, unless the definition's sub-group mapping sets one); nil
	// without.
	Topology *definitions.TopologyConstraint `json:"topology,omitempty"`
	// Segments is the segmentation the role asks for (kai.scheduler/segment-size), nil without.
	Segments *Segmentation `json:"segments,omitempty"`

	component *definitions.Component
	// gang is the name of the gang that holds the role, when grouped says one does (a field, not
	// a map per plan: a Go map costs a plan about 250 bytes however few roles it has).
	gang    string
	grouped bool
	// holdIsPerRole says StartupHold came from the definition's startup.holds, which names each
	// role's own condition, not from its static first/firstInstances rule (one text for every
	// later role, whatever it waits for): see ReleaseKey.
	holdIsPerRole bool
	// instance is the resolved instance (replica counts and pod template), read while the plan
	// is built and nil afterwards (see dropTemplates).
	instance *definitions.Instance
}

// ReleaseKey is what the role waits for when the start rule defers it: the reason startup.holds
// gives it, which every role the operator creates on the same event shares (JobSet's dependsOn:
// two replicated jobs that both wait for the initializer to be Ready, or Complete, are created in
// one reconcile, jobset_controller.go createJobs), else the role's own name (a static first
// rule's reason names no condition of the role's own). The grouper releases the deferred
// sub-groups of one key together, on a pod of any of their roles: released one at a time, a
// launcher whose pod came before the JobSet's status was bound alone by the real KAI scheduler
// (e2e/realkai TestJobSetTwoDependentsReleasedTogether, dependsOn Ready, before a35a8f4).
func (r *Role) ReleaseKey() string {
	if r.holdIsPerRole && r.StartupHold != "" {
		return r.StartupHold
	}
	return r.Name
}

// PodGroup is one planned KAI PodGroup.
type PodGroup struct {
	Name string `json:"name"`
	// Gang is the gang's name in the definition; Replica the replica key of a per-replica gang.
	Gang    string `json:"gang"`
	Replica string `json:"replica,omitempty"`
	// MinMember and MinSubGroup: exactly one is set.
	MinMember   *int32                          `json:"minMember"`
	MinSubGroup *int32                          `json:"minSubGroup"`
	SubGroups   []*SubGroup                     `json:"subGroups"`
	Pods        int64                           `json:"pods"`
	GPUs        GPUs                            `json:"gpus"`
	Topology    *definitions.TopologyConstraint `json:"topology,omitempty"`

	members []*member
}

// SubGroup is one planned sub-group of a PodGroup.
type SubGroup struct {
	Name        string                          `json:"name"`
	Parent      *string                         `json:"parent"`
	MinMember   *int32                          `json:"minMember"`
	MinSubGroup *int32                          `json:"minSubGroup,omitempty"`
	Pods        int64                           `json:"pods"`
	GPUsPerPod  GPUs                            `json:"gpusPerPod"`
	GPUs        GPUs                            `json:"gpus"`
	Topology    *definitions.TopologyConstraint `json:"topology,omitempty"`
	// Segment is the index of the segment this sub-group is (kai.scheduler/segment-size), nil
	// when it is no segment.
	Segment *int32 `json:"segment,omitempty"`
	// Deferred says the start rule holds the sub-group's role until the operator creates its
	// pods: the sub-group is not written to the PodGroup (nor counted in its minSubGroup) until
	// a pod of it exists; its pods carry its name meanwhile, and KAI leaves a pod whose
	// sub-group the PodGroup lacks unscheduled (job_info.go AddTaskInfo). MinMember is the
	// minimum it is written with then.
	Deferred bool `json:"deferred,omitempty"`
}

// Override is a min-member annotation found on the top owner.
type Override struct {
	Annotation string `json:"annotation"`
	Value      string `json:"value"`
	Applied    bool   `json:"applied"`
	// Effect says what an applied override set (minMember, or minSubGroup on a PodGroup with
	// sub-groups).
	Effect string `json:"effect,omitempty"`
	// Reason says why an override was refused.
	Reason string `json:"reason,omitempty"`
}

// member is a role's share of one gang.
type member struct {
	role     *Role
	pods     int64
	gangPods int64
	// heldPods is the role's own minimum while the start rule holds it (its sub-group keeps it).
	heldPods int64
	subGroup *SubGroup
	// replicaLeaves are the per-replica leaves under subGroup, by replica index (or none).
	replicaLeaves []*SubGroup
	// seg are the member's segments, nil when it has none.
	seg *memberSegments
}

type roleKey struct{ component, instance string }

// gangKey finds a PodGroup: by gang and replica key, and in the alpha form by role too (a gang's
// roles can be in different PodGroups there, named by their grouping-key values).
type gangKey struct {
	gang, replica string
	role          *Role
}

// Build computes the plan of obj (a workload of the definition's root kind). Errors name the
// definition field path and what was expected (a replica count that is not a number, a negative
// count, replicas that do not divide among per-replica gangs, counts beyond int32).
func Build(ctx context.Context, c *definitions.Compiled, obj *unstructured.Unstructured) (*Plan, error) {
	content := expr.Normalize(obj.UnstructuredContent()).(map[string]any)
	w, err := c.Resolve(ctx, content)
	if err != nil {
		return nil, err
	}
	uid := string(obj.GetUID())
	p := &Plan{
		Workload:   WorkloadRef{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: uid},
		Definition: DefinitionRef{Name: c.Name(), Source: string(c.Loaded.Source)},
		PodGroups:  []*PodGroup{},
		Roles:      []*Role{},
	}
	p.Misses = w.Misses
	p.OwnsNoPods = w.OwnsNoPods
	if st, err := c.EvaluateStatus(ctx, content, w.Variables); err != nil {
		p.StatusError = err.Error()
	} else {
		p.Status = st
	}
	for _, m := range w.Misses {
		p.Notes = append(p.Notes, fmt.Sprintf("%s (%s) resolved to nothing on this workload", m.Path, m.Expression))
	}
	p.Notes = append(p.Notes, w.Notes...)
	p.Notes = append(p.Notes, c.AdvisoryNotes(ctx, w.Object)...)
	if err := p.buildRoles(w); err != nil {
		return nil, err
	}
	if err := p.applyStartup(ctx, c, content, w.Variables); err != nil {
		return nil, err
	}
	p.readTopology(c, obj.GetAnnotations())
	p.dropRolePlacement(ctx)
	ownerKey := uid
	if ownerKey == "" {
		// Offline plans of manifests have no UID yet: the name stands in for it (generateName
		// for an object the API server has not named yet).
		ownerKey = obj.GetName()
		if ownerKey == "" {
			ownerKey = strings.TrimSuffix(obj.GetGenerateName(), "-")
		}
	}
	if err := p.buildGangs(ctx, c, w, ownerKey); err != nil {
		return nil, err
	}
	p.applyOverrides(obj.GetAnnotations())
	p.explainNoPodGroup(c)
	p.dropTemplates()
	return p, nil
}

// dropTemplates forgets the roles' resolved instances (their pod templates, decoded typed:
// about half of a plan's memory) once the plan is built. Only the build reads them (the GPU
// count in buildRoles, the alpha form's member filters in alphaMemberOf); what later steps read
// of a role (its counts, GPUs and names) is in the Role's exported fields. A plan is cached per
// workload (podgrouper/core/workloadmap), so the templates would otherwise live as long as the
// workload: TestBuiltPlanKeepsNoTemplate.
func (p *Plan) dropTemplates() {
	for _, r := range p.Roles {
		r.instance = nil
	}
}

// buildRoles makes one role per instance of every pod-bearing component.
func (p *Plan) buildRoles(w *definitions.Workload) error {
	names := sets.New[string]()
	for _, rc := range w.Components {
		comp := rc.Component
		if !comp.IsRole() {
			continue
		}
		for _, inst := range rc.Instances {
			r, err := newRole(comp, inst)
			if err != nil {
				return err
			}
			p.noteNegative(r, inst)
			switch {
			case comp.ScaledRole && r.Pods > 0:
				p.Notes = append(p.Notes, fmt.Sprintf("role %s: component %q has a scaleDefinition but no specDefinition: gangmap counts its %d replicas as pods, as KAI's fallback does (its pods are those its podSelector matches; GPUs unknown, counted 0); if each replica runs several pods, the gang is smaller than the workload", roleLabel(r), comp.Name, r.Replicas))
			case inst.Template == nil && r.Pods > 0:
				p.Notes = append(p.Notes, fmt.Sprintf("role %s: no pod template resolved; counted as 0 pods rather than guessed", roleLabel(r)))
				r.Pods, r.GangPods = 0, 0
			}
			if inst.MinReplicas != nil && *inst.MinReplicas > r.Replicas {
				p.Notes = append(p.Notes, fmt.Sprintf("role %s: min replicas %d above replicas %d; the gang uses %d", roleLabel(r), *inst.MinReplicas, r.Replicas, r.Replicas))
			}
			r.Name = roleName(comp, inst.ID, names)
			names.Insert(r.Name)
			gpus, err := PodTemplateGPUs(inst.Template)
			if err != nil {
				return fmt.Errorf("%s: pod template: %w", comp.Path.Child("specDefinition"), err)
			}
			r.GPUDetail, r.GPUsPerPod = gpus, gpus.Devices
			p.Roles = append(p.Roles, r)
			p.roleIndex.set(roleKey{comp.Name, inst.ID}, r)
		}
	}
	return nil
}

func newRole(comp *definitions.Component, inst *definitions.Instance) (*Role, error) {
	sp := comp.Path.Child("scaleDefinition")
	replicas := int64(1)
	if comp.Replicas == nil && inst.MinReplicas != nil && *inst.MinReplicas > 1 {
		// Only a minimum (Knative min-scale, a KServe predictor's minReplicas): at least that
		// many pods run, as KAI's CalculateSubtreeScale takes the minimum first.
		replicas = *inst.MinReplicas
	}
	if comp.Replicas != nil {
		replicas = 0
		if inst.Replicas != nil {
			replicas = max(*inst.Replicas, 0) // negative (Milvus -1: HPA-managed): 0, as KAI counts it
		}
	}
	minReplicas := replicas
	if inst.MinReplicas != nil {
		minReplicas = min(max(*inst.MinReplicas, 0), replicas)
	}
	checks := []struct {
		v    int64
		path string
		prog expr.Program
	}{
		{replicas, sp.Child("replicasPath").String(), comp.Replicas},
		{minReplicas, sp.Child("minReplicasPath").String(), comp.MinReplicas},
		{inst.PodsPerReplica, "spec.gangmap.components[" + comp.Name + "].podsPerReplicaPath", comp.PodsPerReplica},
	}
	for _, c := range checks {
		if c.v < 0 {
			// The count is the expression's result, which may be computed from the workload's
			// field (size - 1): show the expression, so the user finds the field they wrote.
			return nil, fmt.Errorf("%s%s: expected a count >= 0, got %d%s", c.path, instanceNote(inst.ID), c.v, fromExpression(c.prog))
		}
		if c.v > math.MaxInt32 {
			return nil, fmt.Errorf("%s%s: expected a count that fits a PodGroup's int32, got %d", c.path, instanceNote(inst.ID), c.v)
		}
	}
	r := &Role{
		Component: comp.Name, Instance: inst.ID, Replicas: replicas, MinReplicas: minReplicas,
		PodsPerReplica: inst.PodsPerReplica, component: comp, instance: inst,
	}
	r.Pods, r.GangPods = replicas*inst.PodsPerReplica, minReplicas*inst.PodsPerReplica
	if r.Pods > math.MaxInt32 {
		return nil, fmt.Errorf("%s%s: %d replicas × %d pods per replica do not fit a PodGroup's int32", sp.Child("replicasPath"), instanceNote(inst.ID), replicas, inst.PodsPerReplica)
	}
	return r, nil
}

// roleName is the instance id for a multi-instance component, else the component name, as a
// DNS label (lower case: SanitizeLabel), qualified by the component on a clash with an earlier
// role.
func roleName(comp *definitions.Component, instance string, taken sets.Set[string]) string {
	name := SanitizeLabel(comp.Name)
	if comp.InstanceIDs != nil {
		name = SanitizeLabel(instance)
		if taken.Has(name) {
			name = SanitizeLabel(comp.Name + "-" + instance)
		}
	}
	for i := 2; taken.Has(name); i++ {
		name = SanitizeLabel(comp.Name + "-" + instance + "-" + strconv.Itoa(i))
	}
	return name
}

// StatusText is Status as one word list, comma separated ("running"); "" when the status could
// not be evaluated. It is the value of the gangmap.io/status annotation.
func (p *Plan) StatusText() string {
	parts := make([]string, len(p.Status))
	for i, s := range p.Status {
		parts[i] = string(s)
	}
	return strings.Join(parts, ",")
}

// GangGPUs is the GPUs the gang minimum requires: GangGPUs summed over the roles, in devices.
func (p *Plan) GangGPUs() GPUs {
	var g GPUs
	for _, r := range p.Roles {
		g = g.Plus(r.GangGPUs)
	}
	return g
}
