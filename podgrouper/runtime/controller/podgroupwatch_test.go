package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestPodGroupEventRegroupsOnlyItsNamespace: a change to a PodGroup gangmap wrote regroups the
// pods of its workload in the PodGroup's namespace only. A cluster-scoped owner's pods of another
// namespace have their own PodGroup there; and a PodGroup someone creates in their own namespace
// with gangmap's annotation and another namespace's workload UID as owner regroups nothing (it
// made gangmap reconcile every pod of that workload at each change of the forged PodGroup).
func TestPodGroupEventRegroupsOnlyItsNamespace(t *testing.T) {
	r := &PodReconciler{}
	r.init()
	owner := types.UID("7d7b9d2e-0c4f-4f6e-9f0e-1b2c3d4e5f60")
	r.Book.Group(types.NamespacedName{Namespace: "team-a", Name: "train-0"}, owner)
	r.Book.Group(types.NamespacedName{Namespace: "team-a", Name: "train-1"}, owner)
	r.Book.Group(types.NamespacedName{Namespace: "team-b", Name: "train-0"}, owner)
	pg := func(ns string) *v2alpha2.PodGroup {
		return &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: "pg-" + string(owner) + "-customjob",
			Annotations:     map[string]string{kaikeys.Definition: "customjob (cluster)"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "e2e.example.com/v1", Kind: "CustomJob", Name: "train", UID: owner}},
		}}
	}
	ctx := context.Background()
	assert.ElementsMatch(t, []reconcile.Request{
		{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "train-0"}},
		{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "train-1"}},
	}, r.podsOfPodGroup(ctx, pg("team-a")))
	assert.Equal(t, []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "team-b", Name: "train-0"}}},
		r.podsOfPodGroup(ctx, pg("team-b")))
	assert.Empty(t, r.podsOfPodGroup(ctx, pg("intruder")), "a forged PodGroup in another namespace regroups nothing")
	assert.Len(t, r.requests(owner), 3, "the book still holds every pod of the workload")
}

// TestSetupNeedsPodCache: the controller reads pods from its pod cache only; without one it is
// not set up.
func TestSetupNeedsPodCache(t *testing.T) {
	assert.ErrorContains(t, (&PodReconciler{}).SetupWithManager(nil, 1, nil), "needs the pod cache (PodReconciler.Pods)")
}
