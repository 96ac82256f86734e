// Package native holds the table of workload kinds that KAI Scheduler's pod-grouper groups with
// a native plugin. gangmap never groups those kinds: native wins. The table is data: the default
// is KAI v0.17's hub (pkg/podgrouper/podgrouper/hub/hub.go, 42 entries), and flags can add or
// remove kinds so that a cluster on another KAI release hands gangmap exactly the kinds its KAI
// lacks.
package native

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AnyVersion in a table entry matches every version of the group and kind (KAI's wildcard
// entries, such as nvidia.com/*/DynamoGraphDeployment).
const AnyVersion = "*"

// Table is a set of group/version/kind entries; a version may be AnyVersion.
type Table struct {
	entries map[schema.GroupVersionKind]bool
}

// kaiV017 is KAI v0.17.0's native plugin table, from pkg/podgrouper/podgrouper/hub/hub.go
// (see shared/reference/kai-podgrouper.md §4). Each line is group/version/Kind; the core group
// is written as "core".
var kaiV017 = []string{
	"apps/v1/Deployment", "apps/v1/StatefulSet", "apps/v1/ReplicaSet",
	"batch/v1/Job", "batch/v1/CronJob",
	"core/v1/Pod",
	"machinelearning.seldon.io/v1alpha2/SeldonDeployment", "machinelearning.seldon.io/v1/SeldonDeployment",
	"kubevirt.io/v1/VirtualMachineInstance",
	"kubeflow.org/v1/TFJob", "kubeflow.org/v1/PyTorchJob", "kubeflow.org/v1/XGBoostJob", "kubeflow.org/v1/JAXJob",
	"kubeflow.org/v1/MPIJob", "kubeflow.org/v2beta1/MPIJob",
	"kubeflow.org/v1beta1/Notebook", "kubeflow.org/v1alpha1/ScheduledWorkflow",
	"run.ai/v1/RunaiJob",
	"amlarc.azureml.com/v1alpha1/AmlJob",
	"serving.knative.dev/v1/Service",
	"workspace.devfile.io/v1alpha2/DevWorkspace",
	"ray.io/v1alpha1/RayCluster", "ray.io/v1alpha1/RayJob", "ray.io/v1alpha1/RayService",
	"ray.io/v1/RayCluster", "ray.io/v1/RayJob", "ray.io/v1/RayService",
	"tekton.dev/v1/PipelineRun", "tekton.dev/v1/TaskRun",
	"egx.nvidia.io/v1/SPOTRequest",
	"leaderworkerset.x-k8s.io/v1/LeaderWorkerSet",
	"jobset.x-k8s.io/v1alpha2/JobSet",
	"grove.io/v1alpha1/PodGangSet", "grove.io/v1alpha1/PodCliqueSet",
	"argoproj.io/v1alpha1/Workflow",
	"run.ai/*/InferenceWorkload", "run.ai/*/TrainingWorkload", "run.ai/*/DistributedWorkload",
	"run.ai/*/InteractiveWorkload", "run.ai/*/DistributedInferenceWorkload",
	"trainer.kubeflow.org/v1alpha1/TrainJob",
	"nvidia.com/*/DynamoGraphDeployment",
}

// Releases maps a KAI release name to its native table, for the --kai-version flag.
var Releases = map[string][]string{"v0.17": kaiV017}

// DefaultRelease is the KAI release whose table is the default.
const DefaultRelease = "v0.17"

// DefaultTable is KAI v0.17's table.
func DefaultTable() *Table {
	t, _ := ForRelease(DefaultRelease)
	return t
}

// ForRelease returns the table of a KAI release listed in Releases, or an error naming the ones
// known.
func ForRelease(release string) (*Table, error) {
	entries, ok := Releases[release]
	if !ok {
		known := make([]string, 0, len(Releases))
		for k := range Releases {
			known = append(known, k)
		}
		sort.Strings(known)
		return nil, fmt.Errorf("unknown KAI release %q: known releases are %v (use --native-kinds-add/--native-kinds-remove for others)", release, known)
	}
	t := &Table{entries: map[schema.GroupVersionKind]bool{}}
	for _, e := range entries {
		if err := t.Add(e); err != nil {
			panic(err) // the built-in table is well formed; a test checks it
		}
	}
	return t, nil
}

// ParseGVK parses "group/version/Kind" ("core" or "" for the core group; version may be "*").
func ParseGVK(s string) (schema.GroupVersionKind, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("expected group/version/Kind (core for the core group, * for any version), got %q", s)
	}
	g := parts[0]
	if g == "core" {
		g = ""
	}
	return schema.GroupVersionKind{Group: g, Version: parts[1], Kind: parts[2]}, nil
}

// Add adds an entry in the ParseGVK form.
func (t *Table) Add(s string) error {
	gvk, err := ParseGVK(s)
	if err != nil {
		return err
	}
	t.entries[gvk] = true
	return nil
}

// Remove removes an entry in the ParseGVK form; removing "g/*/K" removes every version of g/K.
func (t *Table) Remove(s string) error {
	gvk, err := ParseGVK(s)
	if err != nil {
		return err
	}
	for e := range t.entries {
		if e == gvk || (gvk.Version == AnyVersion && e.Group == gvk.Group && e.Kind == gvk.Kind) {
			delete(t.entries, e)
		}
	}
	return nil
}

// Has reports whether KAI groups gvk natively: an exact entry, or a wildcard entry for its group
// and kind (KAI's hub lookup steps 1 and 2).
func (t *Table) Has(gvk schema.GroupVersionKind) bool {
	if t == nil {
		return false
	}
	if t.entries[gvk] {
		return true
	}
	return t.entries[schema.GroupVersionKind{Group: gvk.Group, Version: AnyVersion, Kind: gvk.Kind}]
}

// Entries lists the table in the ParseGVK form, sorted.
func (t *Table) Entries() []string {
	out := make([]string, 0, len(t.entries))
	for e := range t.entries {
		g := e.Group
		if g == "" {
			g = "core"
		}
		out = append(out, g+"/"+e.Version+"/"+e.Kind)
	}
	sort.Strings(out)
	return out
}
