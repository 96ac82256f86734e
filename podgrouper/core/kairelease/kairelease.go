// Package kairelease holds, as data, what each KAI Scheduler release line from v0.9 to v0.17 does
// that matters to gangmap: its pod-grouper's native-kind table, whether it honours the
// kai.scheduler/skip-podgrouper annotation, which PodGroup fields its CRD has, and its default
// node-pool label key. Every fact is from shared/reference/kai-releases.md, which read them at the
// named tags of KAI's public git history (hub = pkg/podgrouper/podgrouper/hub/hub.go, crd =
// deployments/kai-scheduler/crds/scheduling.run.ai_podgroups.yaml, pc =
// pkg/podgrouper/pod_controller.go, cc = pkg/common/constants/constants.go).
//
// Other packages ask this one, never compare version strings themselves: Parse turns a
// --kai-version value into a Release, and the Release's fields gate each behaviour (for example
// HonoursSkipAnnotation for the skip annotation on pods and top owners).
package kairelease

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Release is one KAI release line (for the few tables that changed inside a line, one range of
// patch tags of it), as gangmap must treat it.
type Release struct {
	// Line is the release line, "v0.9" … "v0.17".
	Line string
	// Requested is the --kai-version value this Release was parsed from.
	Requested string
	// NativeKinds is the pod-grouper's table (hub NewDefaultPluginsHub) as group/version/Kind
	// entries ("core" for the core group, "*" for any version): own plugins, kinds listed but
	// mapped to the default grouper, and skip-top-owner kinds. gangmap groups none of them.
	NativeKinds []string
	// SkipAnnotation: the pod-grouper honours kai.scheduler/skip-podgrouper="true" on the pod and
	// every owner it can read (cc SkipPodGrouperAnnotation, pc shouldSkipPodGrouper; v0.15.0+).
	SkipAnnotation bool
	// SubGroupParent: the CRD's subGroups have parent and topologyConstraint (v0.10.0+).
	SubGroupParent bool
	// MinSubGroup: the CRD has spec.minSubGroup and subGroups[].minSubGroup, and minMember is
	// optional (v0.15.0+).
	MinSubGroup bool
	// SubGroupTree: the scheduler admits a PodGroup as a tree of sub-group sets, taking the first
	// minSubGroup children of each unsatisfied set in the subgrouporder plugin's order, ties by
	// name (pkg/scheduler/api/podgroup_info/allocation_info.go collectTasksFromSubGroupSet,
	// v0.15.0+, unchanged through v0.17.0); before, every leaf sub-group is required and the
	// tasks are those of every leaf below its minimum (GetTasksToAllocate at v0.14.7). The
	// admission model (podgrouper/core/kaiadmission) follows it.
	SubGroupTree bool
	// Preemptibility: the CRD has spec.preemptibility (v0.10.0+).
	Preemptibility bool
	// Delays: the CRD has spec.preemptionDelay and spec.stalenessGracePeriod (v0.17.0).
	Delays bool
	// KartaFallback: the pod-grouper groups kinds without a table entry by a matching Karta
	// (--generic-karta-fallback, default true; v0.17.0).
	KartaFallback bool
	// NodePoolLabelKey is the binary's default --nodepool-label-key (cc DefaultNodePoolLabelKey):
	// "" in the v0.9 branch (node-pool labelling off), kai.scheduler/node-pool from v0.10.0.
	NodePoolLabelKey string
	// Warning is set when Requested is not a known release and the Release stands in for it
	// (a newer release is treated as the latest known one).
	Warning string
}

// Latest is the newest release line gangmap knows; a newer --kai-version is treated as it.
const Latest = "v0.17"

// Oldest is the oldest release line gangmap supports.
const Oldest = "v0.9"

// HonoursSkipAnnotation reports whether the release's pod-grouper leaves alone a pod that, or an
// owner of which, carries kai.scheduler/skip-podgrouper="true" (v0.15.0+). It is the one gate for
// writing the skip annotation on pods and top owners. A nil Release is the latest.
func (r *Release) HonoursSkipAnnotation() bool { return r == nil || r.SkipAnnotation }

// HasMinSubGroup reports whether the release's PodGroup CRD has minSubGroup (v0.15.0+): before,
// a gang with sub-groups cannot be written and gangmap writes a flat minMember. A nil Release is
// the latest.
func (r *Release) HasMinSubGroup() bool { return r == nil || r.MinSubGroup }

// SubGroupTreeAdmission reports whether the release's scheduler admits sub-groups as a tree with
// minSubGroup (v0.15.0+; see SubGroupTree). A nil Release is the latest.
func (r *Release) SubGroupTreeAdmission() bool { return r == nil || r.SubGroupTree }

// HasSegments reports whether the release's PodGroup CRD can hold segments and per-role topology:
// sub-groups with parent and topologyConstraint (v0.10+) and minSubGroup on a parent sub-group
// (v0.15+; KAI's own segment plugins write a segmented role as a parent with minSubGroup). A nil
// Release is the latest.
func (r *Release) HasSegments() bool { return r == nil || (r.MinSubGroup && r.SubGroupParent) }

// SegmentsNote says what gangmap writes instead of segments on a release without them.
func (r *Release) SegmentsNote() string {
	return "KAI " + r.Line + "'s PodGroup has no minSubGroup (v0.15+): segments (kai.scheduler/segment-size) and per-role topology constraints are not written, only the PodGroup's own topology constraint (every release has it)"
}

// Costs says, one sentence each, what gangmap cannot do on this release compared with the latest
// and what it does instead; none for v0.15 and later except the Karta note. The startup log,
// plan and describe print them.
func (r *Release) Costs() []string {
	if r == nil {
		return nil
	}
	var out []string
	if !r.MinSubGroup {
		out = append(out, r.FlatGangNote())
	}
	if !r.HasSegments() {
		out = append(out, r.SegmentsNote())
	}
	if !r.SkipAnnotation {
		out = append(out, "KAI "+r.Line+" does not honour kai.scheduler/skip-podgrouper (v0.15+): its pod-grouper regroups every pod of its scheduler into pg-<workload>-<uid> (minMember 1). To avoid a tug-of-war gangmap labels pods only at admission and never takes back a pod KAI's pod-grouper regrouped (Warning Event "+ReasonYielded+"); keep gangs by keeping KAI's pod-grouper off these pods (e.g. KAI's pod or namespace label selector) or by upgrading KAI to v0.15 or later")
	}
	if !r.Preemptibility {
		out = append(out, "KAI "+r.Line+"'s PodGroup has no preemptibility (v0.10+): gangmap does not write it")
	}
	if !r.Delays {
		out = append(out, "KAI "+r.Line+"'s PodGroup has no preemptionDelay or stalenessGracePeriod (v0.17): gangmap does not write them")
	}
	return out
}

// FlatGangNote says that, on a release without minSubGroup, gangmap writes flat gangs.
func (r *Release) FlatGangNote() string {
	return "KAI " + r.Line + "'s PodGroup has no minSubGroup (v0.15+): gangmap writes a flat PodGroup, minMember = the gang's pods, and no sub-groups, so KAI does not keep each role's or replica's pods together (as KAI's own JobSet plugin before v0.16)"
}

// ReasonYielded is the Event reason on a pod gangmap leaves to KAI's pod-grouper because the
// release cannot be told to skip it (see Costs).
const ReasonYielded = "GangmapYieldedToKAI"

// line is one release line's facts; patch ranges override the native table for some tags.
type line struct {
	minor   int
	lastTag string
	kinds   []string
	// patches maps an inclusive range of patch numbers to the table of those tags.
	patches []patchTable
}

type patchTable struct {
	from, to int
	kinds    []string
}

// base is the 38-entry set present unchanged in every line v0.9.20 → v0.17.0 (kai-releases.md §1).
var base = []string{
	// own plugins
	"apps/v1/Deployment", "batch/v1/Job", "batch/v1/CronJob", "core/v1/Pod",
	"kubeflow.org/v1/TFJob", "kubeflow.org/v1/PyTorchJob", "kubeflow.org/v1/XGBoostJob", "kubeflow.org/v1/JAXJob",
	"kubeflow.org/v1/MPIJob", "kubeflow.org/v2beta1/MPIJob", "kubeflow.org/v1beta1/Notebook",
	"run.ai/v1/RunaiJob", "amlarc.azureml.com/v1alpha1/AmlJob", "serving.knative.dev/v1/Service",
	"ray.io/v1/RayCluster", "ray.io/v1/RayJob", "ray.io/v1/RayService",
	"ray.io/v1alpha1/RayCluster", "ray.io/v1alpha1/RayJob", "ray.io/v1alpha1/RayService",
	"egx.nvidia.io/v1/SPOTRequest", "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet", "grove.io/v1alpha1/PodGangSet",
	// listed, mapped to the default grouper
	"apps/v1/StatefulSet", "apps/v1/ReplicaSet",
	"machinelearning.seldon.io/v1/SeldonDeployment", "machinelearning.seldon.io/v1alpha2/SeldonDeployment",
	"kubevirt.io/v1/VirtualMachineInstance", "workspace.devfile.io/v1alpha2/DevWorkspace",
	"kubeflow.org/v1alpha1/ScheduledWorkflow", "tekton.dev/v1/PipelineRun", "tekton.dev/v1/TaskRun",
	// skip-top-owner
	"argoproj.io/v1alpha1/Workflow",
	"run.ai/*/TrainingWorkload", "run.ai/*/InteractiveWorkload", "run.ai/*/DistributedWorkload",
	"run.ai/*/InferenceWorkload", "run.ai/*/DistributedInferenceWorkload",
}

// The entries that vary between lines (kai-releases.md §1, "Entries that vary").
const (
	podCliqueSet    = "grove.io/v1alpha1/PodCliqueSet"
	dynamoComponent = "nvidia.com/v1alpha1/DynamoComponentDeployment"
	dynamoGraphV1a1 = "nvidia.com/v1alpha1/DynamoGraphDeployment"
	dynamoGraphAny  = "nvidia.com/*/DynamoGraphDeployment"
	jobSet          = "jobset.x-k8s.io/v1alpha2/JobSet"
	trainJob        = "trainer.kubeflow.org/v1alpha1/TrainJob"
)

func with(extra ...string) []string { return append(append([]string{}, base...), extra...) }

// lines are the release lines v0.9–v0.17 (there are no v0.11 tags).
var lines = []line{
	// v0.9.2 and v0.9.3 were cut from main and carry PodCliqueSet.
	{minor: 9, lastTag: "v0.9.20", kinds: with(), patches: []patchTable{{2, 3, with(podCliqueSet)}}},
	// v0.10.0–v0.10.4 lack the Dynamo entries of v0.10.5.
	{minor: 10, lastTag: "v0.10.5", kinds: with(podCliqueSet, dynamoComponent, dynamoGraphV1a1), patches: []patchTable{{0, 4, with(podCliqueSet)}}},
	// v0.12.0–v0.12.4 still have v0.10.5's Dynamo entries (grove).
	{minor: 12, lastTag: "v0.12.23", kinds: with(podCliqueSet, dynamoGraphV1a1), patches: []patchTable{{0, 4, with(podCliqueSet, dynamoComponent, dynamoGraphV1a1)}}},
	{minor: 13, lastTag: "v0.13.4", kinds: with(podCliqueSet, dynamoGraphV1a1, jobSet, trainJob)},
	{minor: 14, lastTag: "v0.14.7", kinds: with(podCliqueSet, dynamoGraphV1a1, jobSet, trainJob)},
	{minor: 15, lastTag: "v0.15.3", kinds: with(podCliqueSet, dynamoGraphV1a1, jobSet, trainJob)},
	{minor: 16, lastTag: "v0.16.8", kinds: with(podCliqueSet, dynamoGraphV1a1, jobSet, trainJob)},
	{minor: 17, lastTag: "v0.17.0", kinds: with(podCliqueSet, dynamoGraphAny, jobSet, trainJob)},
}

// Known lists the known release lines, oldest first, for flags' help and the chart's schema.
func Known() []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = fmt.Sprintf("v0.%d", l.minor)
	}
	return out
}

// Parse turns a --kai-version value into its Release. Accepted: a line ("v0.14"), a tag
// ("v0.14.7", "v0.15.0-rc1"), with or without the leading "v". A release newer than the latest
// line (v0.18, v1.2.0) is treated as the latest known one, with Warning set. Errors: not a
// version; older than v0.9; v0.11 (never released); v0.20.0/v0.20.1 (tags on the v0.10 line that
// KAI's go.mod retracts: give v0.10).
func Parse(version string) (*Release, error) {
	major, minor, patch, err := split(version)
	if err != nil {
		return nil, fmt.Errorf("KAI release %q: %w; known releases are %s", version, err, strings.Join(Known(), ", "))
	}
	if major == 0 && minor == 20 && patch >= 0 && patch <= 1 {
		return nil, fmt.Errorf("KAI release %q is a tag on the v0.10 line that KAI retracts (v0.17.0 go.mod): set v0.10", version)
	}
	last := lines[len(lines)-1]
	i := slices.IndexFunc(lines, func(l line) bool { return l.minor == minor })
	var r *Release
	switch {
	case major > 0 || minor > last.minor:
		r = build(last, -1)
		r.Warning = fmt.Sprintf("KAI release %q is newer than the latest release gangmap knows (%s): treated as %s; check its native-kind table (--native-kinds-add/--native-kinds-remove)", version, Latest, Latest)
	case i >= 0:
		r = build(lines[i], patch)
	case minor == 11:
		return nil, fmt.Errorf("KAI release %q: there is no v0.11 release; known releases are %s", version, strings.Join(Known(), ", "))
	default:
		return nil, fmt.Errorf("KAI release %q is older than %s, the oldest gangmap supports; known releases are %s", version, Oldest, strings.Join(Known(), ", "))
	}
	r.Requested = version
	return r, nil
}

// MustParse is Parse for built-in constants; it panics on an error.
func MustParse(version string) *Release {
	r, err := Parse(version)
	if err != nil {
		panic(err)
	}
	return r
}

// split parses [v]MAJOR.MINOR[.PATCH][-pre]; patch is -1 when absent.
func split(version string) (major, minor, patch int, err error) {
	s := strings.TrimPrefix(strings.TrimSpace(version), "v")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, 0, fmt.Errorf("expected vMAJOR.MINOR or vMAJOR.MINOR.PATCH")
	}
	nums := []int{0, 0, -1}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return 0, 0, 0, fmt.Errorf("expected vMAJOR.MINOR or vMAJOR.MINOR.PATCH, %q is not a number", p)
		}
		nums[i] = n
	}
	return nums[0], nums[1], nums[2], nil
}

// build returns the Release of line l at patch (-1: the line's last tag).
func build(l line, patch int) *Release {
	r := &Release{
		Line:             fmt.Sprintf("v0.%d", l.minor),
		NativeKinds:      append([]string{}, l.kinds...),
		SkipAnnotation:   l.minor >= 15,
		SubGroupParent:   l.minor >= 10,
		MinSubGroup:      l.minor >= 15,
		SubGroupTree:     l.minor >= 15,
		Preemptibility:   l.minor >= 10,
		Delays:           l.minor >= 17,
		KartaFallback:    l.minor >= 17,
		NodePoolLabelKey: "kai.scheduler/node-pool",
	}
	if l.minor == 9 {
		r.NodePoolLabelKey = ""
	}
	for _, p := range l.patches {
		if patch >= p.from && patch <= p.to {
			r.NativeKinds = append([]string{}, p.kinds...)
		}
	}
	return r
}
