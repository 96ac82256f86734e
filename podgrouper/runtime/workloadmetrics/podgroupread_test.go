package workloadmetrics

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// sharedPodGroups is a stand-in of the manager's cache reader for PodGroups: with
// client.UnsafeDisableDeepCopy it hands out a shallow copy of the stored object (its slices
// shared), as controller-runtime's cache_reader.go Get does; it counts the reads without it.
type sharedPodGroups struct {
	client.Reader
	stored *v2alpha2.PodGroup
	copied int
}

func (s *sharedPodGroups) Get(_ context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	var o client.GetOptions
	o.ApplyOptions(opts)
	pg := obj.(*v2alpha2.PodGroup)
	if o.UnsafeDisableDeepCopy == nil || !*o.UnsafeDisableDeepCopy {
		s.copied++
		*pg = *s.stored.DeepCopy()
	} else {
		*pg = *s.stored
	}
	pg.Name, pg.Namespace = key.Name, key.Namespace
	return nil
}

// A scrape reports the conditions KAI wrote on the workload's PodGroup, read from the cache
// without a deep copy, and leaves the cached PodGroup as it was.
func TestPodGroupConditionsReadShared(t *testing.T) {
	stored := &v2alpha2.PodGroup{Status: v2alpha2.PodGroupStatus{
		Conditions:           []v2alpha2.PodGroupCondition{{Type: "Ready", Status: corev1.ConditionFalse}},
		SchedulingConditions: []v2alpha2.SchedulingCondition{{Type: "UnschedulableOnNodePool", NodePool: "default"}, {Type: "UnschedulableOnNodePool", NodePool: "gpu"}},
	}}
	before := stored.DeepCopy()
	reader := &sharedPodGroups{stored: stored}
	tr := &Tracker{MaxWorkloads: 10, Reader: reader}
	w := FromPlan(seedPlan(t), "u1", "JobSet.jobset.x-k8s.io")
	require.Len(t, w.PodGroups, 1)
	require.True(t, tr.SetWorkload(w))
	lbl := `kind="JobSet.jobset.x-k8s.io",name="train-llm",namespace="team-a",podgroup="` + w.PodGroups[0] + `"`
	want := `
# HELP gangmap_workload_podgroup_condition A condition KAI wrote on the workload's PodGroup (status.conditions and status.schedulingConditions, as gangmap reads them), always 1. KAI's v2alpha2 PodGroup has no phase field.
# TYPE gangmap_workload_podgroup_condition gauge
gangmap_workload_podgroup_condition{` + lbl + `,status="False",type="Ready"} 1
gangmap_workload_podgroup_condition{` + lbl + `,status="True",type="UnschedulableOnNodePool"} 1
`
	for range 2 {
		assert.NoError(t, testutil.CollectAndCompare(tr, strings.NewReader(want), "gangmap_workload_podgroup_condition"))
	}
	assert.Zero(t, reader.copied, "the scrape deep-copied the PodGroup")
	assert.Equal(t, before, stored)
}
