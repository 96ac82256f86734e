// Package kaisamples is the shared table of "the same gangs either way": for every real manifest
// of the built-in catalog's testdata (definitions/catalog/testdata), the segment samples of
// testdata/segments (KAI's docs/topology/segments.md examples and a Volcano Job) and the e2e
// CustomJob, the workload and a set of pods for it, so that a test can group each pod with the
// standalone grouper and with gangmap inside KAI's pod-grouper and compare the PodGroups. The main module's
// kaiplugin test compares gangmap's two paths on gangmap's copy of KAI's types; the nested module
// kaipodgrouper drives KAI's own PodReconciler with the same table on a real API server.
//
// The pods are synthesized from the definition, not from the operator's code: for each planned
// PodGroup, as many pods per role as the PodGroup counts (at most MaxPodsPerRole), each with the
// role's pod-template labels and the labels the definition's pod selectors read when they are
// plain label lookups (componentTypeSelector, componentInstanceSelector, replicaSelector; the
// per-replica key set to the PodGroup's replica), and the pod's index in its role where the
// definition reads one (podIndexPath: see podIndex). A selector of another form gets no label, so
// such a pod may be placed in no gang: both paths must then agree on that too (KAI's default
// PodGroup). Where the definition's start rule holds roles (gang.Role.StartupHold: the operator
// creates them only once the others started), the pods of the roles it does not hold are
// running (spec.nodeName StartedNode, status.phase Running), as they are by the time the held
// roles' pods exist. Which pods an operator really creates is checked per kind by the catalog's own
// tests (definitions/catalog/operatorpods_test.go and the kind tests).
package kaisamples

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
)

// MaxPodsPerRole bounds the pods made per role and PodGroup (a Knative sample plans 50).
const MaxPodsPerRole = 4

// SchedulerName is the pods' spec.schedulerName (KAI's default).
const SchedulerName = "kai-scheduler"

// StartedNode is the spec.nodeName of the pods of the roles a start rule does not hold (their
// status.phase is Running).
const StartedNode = "node-started"

// Sample is one workload and its pods.
type Sample struct {
	// Name is the manifest's file name.
	Name string
	// Workload is the manifest's first object, in the namespace given to Load, with a UID
	// (uid-<file stem>) and resourceVersion "1".
	Workload *unstructured.Unstructured
	// Pods are owned by Workload directly (one controller owner reference), in the namespace,
	// named <workload>-<role>-<PodGroup index>-<i>.
	Pods []*corev1.Pod
}

// Load reads every *.yaml manifest of dir whose first object's kind has a definition in
// registry, and makes its pods from the definition's plan of it. namespace is set on every
// workload and pod. Errors: a file that does not parse, or a definition that cannot plan the
// manifest (the catalog's tests plan them all).
func Load(ctx context.Context, dir, namespace string, registry *definitions.Registry) ([]Sample, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Sample
	for _, f := range files {
		s, ok, err := LoadFile(ctx, f, namespace, registry)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// LoadFile is Load for one manifest file; ok is false when its kind has no definition.
func LoadFile(ctx context.Context, path, namespace string, registry *definitions.Registry) (Sample, bool, error) {
	objs, err := manifest.ReadFile(path)
	if err != nil {
		return Sample{}, false, err
	}
	if len(objs) == 0 {
		return Sample{}, false, nil
	}
	w := objs[0]
	compiled := registry.Lookup(w.GroupVersionKind())
	if compiled == nil {
		return Sample{}, false, nil
	}
	name := filepath.Base(path)
	w.SetNamespace(namespace)
	w.SetUID(types.UID("uid-" + strings.TrimSuffix(name, ".yaml")))
	w.SetResourceVersion("1")
	plan, err := gang.Build(ctx, compiled, w)
	if err != nil {
		return Sample{}, false, fmt.Errorf("%s: %w", name, err)
	}
	resolved, err := compiled.Resolve(ctx, w.Object)
	if err != nil {
		return Sample{}, false, fmt.Errorf("%s: %w", name, err)
	}
	return Sample{Name: name, Workload: w, Pods: pods(compiled, resolved, plan, w)}, true, nil
}

// pods makes the pods of every planned PodGroup's members, then one pod of each role with pods
// that no PodGroup holds (a role in no gang: its pod gets KAI's default PodGroup).
// labelPrefix marks, among podIndex's keys, a label (the others are annotations).
const labelPrefix = "label:"

// indexKey finds the label and annotation keys a pod index expression reads
// (.metadata.labels["k"], .metadata.annotations["k"]).
var indexKey = regexp.MustCompile(`\.metadata\.(labels|annotations)\["([^"]+)"\]`)

// podIndex is where pod i of a role of `of` pods (in its PodGroup) carries its index in the role,
// as the operator writes it, for a component with a pod index (spec.gangmap.components[].
// podIndexPath): every label and annotation key the expression reads (labels as "label:<key>"). The made pods of a role spread
// over its pods (MaxPodsPerRole of 16 workers get 0, 4, 8, 12: one per segment of 4). The workers
// of a segment leader count from 1, the leader being 0 (LeaderWorkerSet
// leaderworkerset.sigs.k8s.io/worker-index; KAI docs/topology/segments.md "The leader pod has
// index 0; workers start at 1"). nil for a component without a pod index.
func podIndex(c *definitions.Compiled, comp *definitions.Component, i, of int64) map[string]string {
	if comp == nil {
		return nil
	}
	src, idx := comp, i
	if of > MaxPodsPerRole {
		idx = i * (of / MaxPodsPerRole)
	}
	switch {
	case c.IsSegmentLeader(comp):
		for _, o := range c.Components {
			if o.SegmentLeader == comp {
				src = o
			}
		}
		idx = 0
	case comp.SegmentLeader != nil:
		idx++
	}
	if src.PodIndex == nil {
		return nil
	}
	out := map[string]string{}
	for _, m := range indexKey.FindAllStringSubmatch(src.PodIndex.Source(), -1) {
		if m[1] == "labels" {
			out[labelPrefix+m[2]] = fmt.Sprint(idx)
		} else {
			out[m[2]] = fmt.Sprint(idx)
		}
	}
	return out
}

func pods(c *definitions.Compiled, resolved *definitions.Workload, plan *gang.Plan, w *unstructured.Unstructured) []*corev1.Pod {
	var out []*corev1.Pod
	held := false
	for _, r := range plan.Roles {
		held = held || r.StartupHold != ""
	}
	inGang := map[*gang.Role]bool{}
	for pgIndex, pg := range plan.PodGroups {
		for _, m := range pg.Members() {
			inGang[m.Role] = true
			n := min(m.Pods, MaxPodsPerRole)
			for i := int64(0); i < n; i++ {
				out = append(out, pod(c, resolved, m.Role, pg.Replica, pgIndex, i, m.Pods, w, held))
			}
		}
	}
	for _, r := range plan.Roles {
		if !inGang[r] && r.Pods > 0 {
			out = append(out, pod(c, resolved, r, "", len(plan.PodGroups), 0, r.Pods, w, held))
		}
	}
	return out
}

// pod makes pod i of role r (of pods in the PodGroup) in the PodGroup of replica key replica; held says the plan's start
// rule holds some role (then the pods of the roles it does not hold are bound).
func pod(c *definitions.Compiled, resolved *definitions.Workload, r *gang.Role, replica string, pgIndex int, i, of int64, w *unstructured.Unstructured, held bool) *corev1.Pod {
	labels := map[string]string{}
	comp := c.Component(r.Component)
	if rc := resolved.Component(r.Component); rc != nil {
		for _, inst := range rc.Instances {
			if inst.ID == r.Instance && inst.Template != nil {
				maps.Copy(labels, inst.Template.Labels)
			}
		}
	}
	if comp != nil {
		maps.Copy(labels, comp.MatchLabels)
		if key, ok := definitions.PlainLabelKey(comp.TypeKey); ok {
			labels[key] = "present"
			if comp.TypeValue != nil {
				labels[key] = *comp.TypeValue
			}
		}
		if key, ok := definitions.PlainLabelKey(comp.InstanceKey); ok && r.Instance != "" {
			labels[key] = r.Instance
		}
		for a := comp; a != nil; a = a.Parent {
			key, ok := definitions.PlainLabelKey(a.ReplicaKey)
			if !ok {
				continue
			}
			labels[key] = fmt.Sprint(i)
			if a == c.PerReplicaOf && replica != "" {
				labels[key] = replica
			}
		}
	}
	annotations := podIndex(c, comp, i, of)
	for k, v := range annotations {
		if strings.HasPrefix(k, labelPrefix) {
			labels[strings.TrimPrefix(k, labelPrefix)] = v
			delete(annotations, k)
		}
	}
	name := fmt.Sprintf("%s-%s-%d-%d", w.GetName(), r.Name, pgIndex, i)
	node, phase := "", corev1.PodPhase("")
	if held && r.StartupHold == "" {
		node, phase = StartedNode, corev1.PodRunning
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: w.GetNamespace(), UID: types.UID("uid-pod-" + name), Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: w.GetAPIVersion(), Kind: w.GetKind(), Name: w.GetName(), UID: w.GetUID(),
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec:   corev1.PodSpec{SchedulerName: SchedulerName, NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "registry.example/main:1"}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}
