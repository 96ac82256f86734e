package defaultgrouper

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// topOwner is a JobSet "train" with the given labels and annotations.
func topOwner(labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("jobset.x-k8s.io/v1alpha2")
	u.SetKind("JobSet")
	u.SetNamespace("ns")
	u.SetName("train")
	u.SetUID("u-1")
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

// TestMetadataIsKAIsDefault: the metadata KAI's default grouper computes (default_grouper.go,
// v0.17; the keys and lookup orders of kai-podgrouper.md §3): the top owner's labels and
// annotations copied whole; the pod's user label added unless the owner has one, the pod's user
// annotation overridden by the owner's; the queue from the top owner's queue label, else the
// pod's, else "<project>-<node pool>", else default-queue; the first existing priority class
// of the owners' label, the pod's label, the pod's spec; preemptibility and durations from the
// nearest owner, then the pod; topology from the top owner's annotations. The top owner is left
// as it was (the webhook reads it from the informer's store).
func TestMetadataIsKAIsDefault(t *testing.T) {
	s := runtime.NewScheme()
	if err := schedulingv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "spec-class"}, Value: 10},
	).Build()
	ownerYAML := "group: jobset.x-k8s.io\nkind: JobSet\nname: train\nuid: u-1\nversion: v1alpha2\n"
	cases := []struct {
		name   string
		owner  *unstructured.Unstructured
		pod    *corev1.Pod
		owners []*metav1.PartialObjectMetadata
		want   podgroup.Metadata
	}{{
		name: "top owner's labels and annotations",
		owner: topOwner(
			map[string]string{kaikeys.DefaultQueueLabel: "q1", kaikeys.PriorityClassLabel: "high", kaikeys.PreemptibilityLabel: "preemptible", "team": "a"},
			map[string]string{kaikeys.Topology: "rack-topo", kaikeys.TopologyRequiredPlacement: "rack", kaikeys.PreemptionDelay: "5m", "note": "n"}),
		pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p",
			Labels: map[string]string{kaikeys.UserLabel: "alice", kaikeys.DefaultQueueLabel: "pod-queue"}, Annotations: map[string]string{kaikeys.UserLabel: "alice-a"}}},
		want: podgroup.Metadata{
			Name: "pg-train-u-1", Namespace: "ns", MinAvailable: 1,
			Owner:  metav1.OwnerReference{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "train", UID: "u-1"},
			Labels: map[string]string{kaikeys.DefaultQueueLabel: "q1", kaikeys.PriorityClassLabel: "high", kaikeys.PreemptibilityLabel: "preemptible", "team": "a", kaikeys.UserLabel: "alice"},
			Annotations: map[string]string{kaikeys.Topology: "rack-topo", kaikeys.TopologyRequiredPlacement: "rack", kaikeys.PreemptionDelay: "5m", "note": "n",
				kaikeys.UserLabel: "alice-a", kaikeys.TopOwnerMetadata: ownerYAML},
			Queue: "q1", PriorityClassName: "high", Preemptibility: v2alpha2.Preemptible,
			PreemptionDelay: &metav1.Duration{Duration: 5 * time.Minute}, Topology: "rack-topo", RequiredTopologyLevel: "rack",
		},
	}, {
		name:  "the owner's user keys win; the pod's project and node pool; the pod's spec priority class",
		owner: topOwner(map[string]string{kaikeys.UserLabel: "bob", kaikeys.PriorityClassLabel: "missing"}, map[string]string{kaikeys.UserLabel: "bob-a"}),
		pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p",
			Labels:      map[string]string{kaikeys.UserLabel: "alice", kaikeys.ProjectLabel: "proj", kaikeys.DefaultNodePoolLabel: "pool-a", kaikeys.PreemptibilityLabel: "non-preemptible"},
			Annotations: map[string]string{kaikeys.UserLabel: "alice-a", kaikeys.StalenessGracePeriod: "30s"}},
			Spec: corev1.PodSpec{PriorityClassName: "spec-class"}},
		want: podgroup.Metadata{
			Name: "pg-train-u-1", Namespace: "ns", MinAvailable: 1,
			Owner:       metav1.OwnerReference{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "train", UID: "u-1"},
			Labels:      map[string]string{kaikeys.UserLabel: "bob", kaikeys.PriorityClassLabel: "missing"},
			Annotations: map[string]string{kaikeys.UserLabel: "bob-a", kaikeys.TopOwnerMetadata: ownerYAML},
			Queue:       "proj-pool-a", PriorityClassName: "spec-class", Preemptibility: v2alpha2.NonPreemptible,
			StalenessGracePeriod: &metav1.Duration{Duration: 30 * time.Second},
		},
	}, {
		name:  "an owner chain: the nearest owner's valid labels and annotations decide, the top owner's are copied",
		owner: topOwner(map[string]string{kaikeys.PriorityClassLabel: "spec-class"}, map[string]string{kaikeys.PreemptionDelay: "1m"}),
		pod:   &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}},
		owners: []*metav1.PartialObjectMetadata{
			{ObjectMeta: metav1.ObjectMeta{Name: "job", Labels: map[string]string{kaikeys.PriorityClassLabel: "high", kaikeys.PreemptibilityLabel: "sometimes"},
				Annotations: map[string]string{kaikeys.PreemptionDelay: "2m", kaikeys.StalenessGracePeriod: "soon"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "train", Labels: map[string]string{kaikeys.PriorityClassLabel: "spec-class", kaikeys.PreemptibilityLabel: "preemptible"},
				Annotations: map[string]string{kaikeys.StalenessGracePeriod: "1h"}}},
		},
		want: podgroup.Metadata{
			Name: "pg-train-u-1", Namespace: "ns", MinAvailable: 1,
			Owner:       metav1.OwnerReference{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "train", UID: "u-1"},
			Labels:      map[string]string{kaikeys.PriorityClassLabel: "spec-class"},
			Annotations: map[string]string{kaikeys.PreemptionDelay: "1m", kaikeys.TopOwnerMetadata: ownerYAML},
			Queue:       kaikeys.DefaultQueue, PriorityClassName: "high", Preemptibility: v2alpha2.Preemptible,
			PreemptionDelay: &metav1.Duration{Duration: 2 * time.Minute}, StalenessGracePeriod: &metav1.Duration{Duration: time.Hour},
		},
	}, {
		name:  "no labels, no annotations, no priority class",
		owner: topOwner(nil, nil),
		pod:   &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}},
		want: podgroup.Metadata{
			Name: "pg-train-u-1", Namespace: "ns", MinAvailable: 1,
			Owner:  metav1.OwnerReference{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "train", UID: "u-1"},
			Labels: map[string]string{}, Annotations: map[string]string{kaikeys.TopOwnerMetadata: ownerYAML},
			Queue: kaikeys.DefaultQueue, PriorityClassName: kaikeys.DefaultPriorityClass,
		},
	}}
	g := &Grouper{Reader: reader}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.owner.DeepCopy()
			got, err := g.Metadata(context.Background(), tc.owner, tc.pod, tc.owners)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&tc.want, got); diff != "" {
				t.Errorf("metadata (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.owner); diff != "" {
				t.Errorf("the top owner changed (-before,+after):\n%s", diff)
			}
			got.Labels["added"], got.Annotations["added"] = "x", "x"
			if _, ok := tc.owner.GetLabels()["added"]; ok {
				t.Error("the metadata's labels are the top owner's map")
			}
			if _, ok := tc.owner.GetAnnotations()["added"]; ok {
				t.Error("the metadata's annotations are the top owner's map")
			}
		})
	}
}
