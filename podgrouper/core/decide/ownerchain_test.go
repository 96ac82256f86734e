package decide

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/podgrouper/core/hub"
	"github.com/gangmap/gangmap/podgrouper/core/native"
	"github.com/gangmap/gangmap/podgrouper/core/owners"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
)

// replicaSetKarta makes apps/v1 ReplicaSet a kind gangmap groups (with ReplicaSet removed from
// the native table): one gang of its replicas.
const replicaSetKarta = `apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: replicaset}
spec:
  structureDefinition:
    rootComponent:
      name: replicaset
      kind: {group: apps, version: v1, kind: ReplicaSet}
      statusDefinition:
        phaseDefinition: {path: .status.phase}
        statusMappings:
          running: [{byPhase: Running}]
      specDefinition: {podTemplateSpecPath: .spec.template}
      scaleDefinition: {replicasPath: '.spec.replicas // 1'}
`

// TestOwnerChainOfAGroupedKindIsClaimed: a pod whose owner chain is a cycle (two ReplicaSets
// owning each other) through an owner of a kind gangmap groups fails with reason OwnerChain,
// Claimed, so the webhook and the controller hold it from KAI's pod-grouper (whose own walk,
// podgrouper.go getResourceOwners, follows a cycle for as long as it runs) and report it; the
// same cycle of a kind gangmap does not group stays an OwnerWalk failure, left to KAI (fresh's
// review, finding 9: such pods got GangmapGroupingFailed and no hold).
func TestOwnerChainOfAGroupedKindIsClaimed(t *testing.T) {
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	ls, err := definitions.Decode(strings.NewReader(replicaSetKarta), "rs.yaml", definitions.SourceFile, definitions.DecodeOptions{})
	require.NoError(t, err)
	reg := definitions.NewRegistry(c)
	reg.SetSource(definitions.SourceFile, ls)
	require.Empty(t, reg.Problems())

	ref := func(name string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: types.UID("uid-" + name), Controller: ptr.To(true)}
	}
	rs := func(name, owner string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: ref(name).UID, OwnerReferences: []metav1.OwnerReference{ref(owner)}}}
	}
	s := runtime.NewScheme()
	require.NoError(t, appsv1.AddToScheme(s))
	require.NoError(t, corev1.AddToScheme(s))
	reader := fake.NewClientBuilder().WithScheme(s).WithObjects(rs("a", "b"), rs("b", "a")).Build()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), meta.RESTScopeNamespace)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: []metav1.OwnerReference{ref("a")}},
		Spec: corev1.PodSpec{SchedulerName: "kai-scheduler"}}

	decider := func(table *native.Table) *Decider {
		return &Decider{Walker: &owners.Walker{Reader: reader, Mapper: mapper}, SchedulerName: "kai-scheduler",
			Hub: &hub.Hub{Native: table, Registry: reg, Grouper: &workloadmap.Grouper{Registry: reg}}}
	}
	gangmaps := native.DefaultTable()
	require.NoError(t, gangmaps.Remove("apps/v1/ReplicaSet"))
	_, err = decider(gangmaps).Decide(context.Background(), pod)
	var de *DecideError
	require.True(t, errors.As(err, &de), "%v", err)
	assert.Equal(t, OwnerChain, de.Reason)
	assert.True(t, ClaimedFailure(err), "held from KAI's pod-grouper")
	assert.EqualError(t, err, "OwnerChain: owner references form a cycle at ReplicaSet a")

	_, err = decider(native.DefaultTable()).Decide(context.Background(), pod)
	require.True(t, errors.As(err, &de), "%v", err)
	assert.Equal(t, "OwnerWalk", de.Reason, "ReplicaSet is KAI's: not gangmap's to hold")
	assert.False(t, ClaimedFailure(err))
}
