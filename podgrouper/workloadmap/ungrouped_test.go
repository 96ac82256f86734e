package workloadmap

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/ownerskip"
)

// markedBy sets KAI's skip annotation on the workload as gangmap's ownerskip.Marker does (the
// annotation and gangmap's SetBy), with a queue label KAI's default grouper reads.
func markedBy(u *unstructured.Unstructured) {
	u.SetAnnotations(map[string]string{kaikeys.SkipPodGrouper: "true", ownerskip.SetBy: ownerskip.SetByValue})
	u.SetLabels(map[string]string{"kai.scheduler/queue": "team-a"})
}

// TestUngroupedPodOfMarkedWorkload: the catalog SparkApplication definition claims a pod by its
// spark-role label, driver or executor (the values Spark sets on the pods it creates, the spark
// operator's LabelSparkRole); a pod the application owns with another role (one a user or another
// controller added) is claimed by no component. While the workload is not marked, KAI's
// pod-grouper groups such a pod (nil: not gangmap's). Once gangmap has marked the workload with
// kai.scheduler/skip-podgrouper, KAI's pod-grouper skips every pod of it, so gangmap gives the
// pod KAI's default PodGroup (pg-<name>-<UID>, minMember 1, no sub-group, the top owner's queue,
// without the mark copied to it) rather than leaving it with none.
func TestUngroupedPodOfMarkedWorkload(t *testing.T) {
	g := newGrouper(t)
	stray := pod("sidecar-0", map[string]string{"spark-role": "sidecar"})

	plain := workload(t, "sparkapplication-volcano-batchscheduler.yaml", nil)
	md, seen, err := g.GroupPod(context.Background(), plain, stray)
	require.NoError(t, err)
	assert.True(t, seen.Unclaimed)
	assert.Nil(t, md, "not marked: KAI's pod-grouper groups it")

	marked := workload(t, "sparkapplication-volcano-batchscheduler.yaml", func(u *unstructured.Unstructured) {
		markedBy(u)
		u.SetResourceVersion("2")
	})
	md, seen, err = g.GroupPod(context.Background(), marked, stray)
	require.NoError(t, err)
	assert.True(t, seen.Unclaimed, "still reported as unclaimed to the findings")
	require.NotNil(t, md)
	assert.Equal(t, "pg-spark-pi-volcano-11111111-2222-3333-4444-555555555555", md.Name)
	assert.Equal(t, "bench", md.Namespace)
	assert.Equal(t, int32(1), md.MinAvailable)
	assert.Nil(t, md.MinSubGroup)
	assert.Empty(t, md.SubGroups)
	assert.Equal(t, "team-a", md.Queue)
	assert.NotContains(t, md.Annotations, kaikeys.SkipPodGrouper, "the mark is the workload's, not the PodGroup's")

	// The gang's own pods keep the gang's PodGroup, never this one.
	driver := pod("driver", map[string]string{"spark-role": "driver"})
	gmd, _, err := g.GroupPod(context.Background(), marked, driver)
	require.NoError(t, err)
	require.NotNil(t, gmd)
	assert.NotEqual(t, md.Name, gmd.Name)
	assert.Zero(t, gmd.MinAvailable, "the gang's minimum is per sub-group")

	// A plan whose gang already has KAI's default name: the ungrouped pods get their own
	// PodGroup, so the gang's is never rewritten to minMember 1.
	clash := &gang.Plan{PodGroups: []*gang.PodGroup{{Name: md.Name}}}
	own, err := g.ungrouped(context.Background(), clash, marked, stray, nil)
	require.NoError(t, err)
	assert.Equal(t, md.Name+UngroupedSuffix, own.Name)
}

// TestPodOutsidePlanOfMarkedWorkload: the seed JobSet's replicated jobs are leader and workers
// (the catalog definition's instanceIdPath, .spec.replicatedJobs[].name). A pod the JobSet
// controller labels jobset.sigs.k8s.io/replicatedjob-name: evaluator (a replicated job the plan
// does not know) is outside the plan. Before, that was a plan error retried with backoff for
// good while KAI's pod-grouper skipped the marked workload: the pod had no PodGroup from anyone.
// Now it is reported (Seen.NotInPlan names the instance) and, on a marked workload, gets KAI's
// default PodGroup (minMember 1); on an unmarked one KAI's pod-grouper groups it (nil).
func TestPodOutsidePlanOfMarkedWorkload(t *testing.T) {
	g := newGrouper(t)
	evaluator := pod("evaluator-0", map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "evaluator", "jobset.sigs.k8s.io/job-index": "0"})

	plain := workload(t, "jobset-leader-workers.yaml", nil)
	md, seen, err := g.GroupPod(context.Background(), plain, evaluator)
	require.NoError(t, err, "not an error to retry")
	assert.Nil(t, md, "not marked: KAI's pod-grouper groups it")
	var nip *gang.NotInPlanError
	require.ErrorAs(t, seen.NotInPlan, &nip)
	assert.Equal(t, "replicatedjob[evaluator]", nip.Instance)
	assert.False(t, seen.Unclaimed, "a component claims it; its instance is what the plan lacks")

	marked := workload(t, "jobset-leader-workers.yaml", func(u *unstructured.Unstructured) {
		markedBy(u)
		u.SetResourceVersion("2")
	})
	md, seen, err = g.GroupPod(context.Background(), marked, evaluator)
	require.NoError(t, err)
	require.ErrorIs(t, seen.NotInPlan, gang.ErrNotInPlan)
	require.NotNil(t, md)
	assert.Equal(t, "pg-"+marked.GetName()+"-"+string(marked.GetUID()), md.Name, "KAI's default grouper's name")
	assert.Equal(t, int32(1), md.MinAvailable)
	assert.Empty(t, md.SubGroups)
	assert.Equal(t, "team-a", md.Queue)
}
