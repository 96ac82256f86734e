package app

import (
	"cmp"
	"slices"
	"strings"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
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
	// Placement is the topology tree of each planned PodGroup with a topology constraint
	// (issue 30): role → segment → pods, live with each pod's node's topology labels.
	Placement []*placementPodGroup `json:"placement,omitempty"`
	// Unclaimed lists the workload's pods that no component of the definition claims.
	Unclaimed []*podView `json:"unclaimedPods"`
	// Findings are the grouper's observed-vs-planned findings, from the gangmap.io/health
	// annotation of the workload's PodGroups (podgrouper/runtime/findings).
	Findings []findings.Finding `json:"findings,omitempty"`
	// FindingsOmitted counts the grouper's findings past those in Findings: the annotation lists
	// a workload's first findings.MaxHealthFindings and counts the rest (its "omitted").
	FindingsOmitted int `json:"findingsOmitted,omitempty"`
	// Notes are the plan's notes (paths that resolved to nothing, ...) and describe's own.
	Notes []string `json:"notes,omitempty"`
	// Error says why the workload could not be planned.
	Error string `json:"error,omitempty"`
	// NativeInKAI says KAI groups the workload's kind with a plugin of its own (KAI's default
	// native table, podgrouper/core/native): in a cluster gangmap creates no PodGroup for it and
	// labels none of its pods, whatever definitions say.
	NativeInKAI bool `json:"nativeInKAI,omitempty"`

	plan     *gang.Plan
	compiled *definitions.Compiled
	misses   []definitions.PathMiss
	// defaults are the `//` defaults that stood in for paths that resolved to nothing.
	defaults []hiddenDefault
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
	// Admission is what KAI's scheduler does with the existing PodGroup and its pods (the
	// kaiadmission model), nil when it or its pods do not exist.
	Admission *admissionView `json:"kaiAdmission,omitempty"`
}

// admissionView is the kaiadmission model's verdict on a PodGroup and its pods: whether KAI
// admits the gang (with room for every pod), which sub-group blocks it and why, whether a commit
// would leave the gang short (Partial), and the pods KAI never schedules (Stranded).
type admissionView struct {
	Admitted bool     `json:"admitted"`
	Partial  bool     `json:"partial,omitempty"`
	Blocking string   `json:"blocking,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	Stranded []string `json:"stranded,omitempty"`
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
	return cmp.Or((&gang.Plan{Status: v.Status}).StatusText(), "-")
}

// planCode is ExitProblems when some workload has no plan, else ExitOK.
func planCode(views []*workloadView) int {
	if slices.ContainsFunc(views, func(v *workloadView) bool { return v.Error != "" }) {
		return ExitProblems
	}
	return ExitOK
}

// eachInstance calls f on every instance of the tree under n, with its component.
func eachInstance(n *componentNode, f func(*componentNode, *instanceNode)) {
	if n == nil {
		return
	}
	for _, in := range n.Instances {
		f(n, in)
	}
	for _, ch := range n.Children {
		eachInstance(ch, f)
	}
}
