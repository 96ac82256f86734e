package podgroup

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// TestActualNamesOfPlaceholderName: an alpha plan grouped by a label the operator sets plans
// pg-<UID>-{.metadata.labels["e2e.example.com/job-name"]}; the pods' PodGroup is
// pg-<UID>-train (KAI's calcPodGroupName with the pod's value). Writers keyed by PodGroup get the
// real name, and not another workload's PodGroup nor one in another namespace; a plain planned
// name is returned as is, without a list.
func TestActualNamesOfPlaceholderName(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	require.NoError(t, v2alpha2.AddToScheme(s))
	pg := func(ns, name string) client.Object {
		return &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		pg("ns", "pg-uid-1-train"), pg("ns", "pg-uid-2-train"), pg("other", "pg-uid-1-eval"), pg("ns", "pg-uid-1-gang"),
	).Build()
	planned := gang.KAIAlphaName("uid-1", `{.metadata.labels["e2e.example.com/job-name"]}`)

	names, complete, err := ActualNames(ctx, c, nil, "ns", "", []string{planned})
	require.NoError(t, err)
	assert.True(t, complete)
	assert.ElementsMatch(t, []string{"pg-uid-1-train", "pg-uid-1-gang"}, names, "every value the pods gave, in the workload's namespace only")

	names, complete, err = ActualNames(ctx, c, nil, "empty", "", []string{planned, "pg-uid-1-plain"})
	require.NoError(t, err)
	assert.False(t, complete, "no pod grouped yet: the writer retries")
	assert.Equal(t, []string{"pg-uid-1-plain"}, names)

	failing := fake.NewClientBuilder().Build() // no PodGroup type: a List would fail
	names, complete, err = ActualNames(ctx, failing, nil, "ns", "", []string{"pg-uid-1-plain"})
	require.NoError(t, err, "no placeholder, no list")
	assert.True(t, complete)
	assert.Equal(t, []string{"pg-uid-1-plain"}, names)
}
