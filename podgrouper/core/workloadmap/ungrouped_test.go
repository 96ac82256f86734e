package workloadmap

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/kaiadmission"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// markedBy sets KAI's skip annotation on the workload as gangmap's ownerskip.Marker does (the
// annotation and gangmap's SetBy), with a queue label KAI's default grouper reads.
func markedBy(u *unstructured.Unstructured) {
	u.SetAnnotations(map[string]string{kaikeys.SkipPodGrouper: "true", ownerskip.SetBy: ownerskip.SetByValue})
	u.SetLabels(map[string]string{"kai.scheduler/queue": "team-a"})
}

// TestUnclaimedPodJoinsTheGang: the catalog SparkApplication definition claims a pod by its
// spark-role label, driver or executor (the values Spark sets on the pods it creates, the spark
// operator's LabelSparkRole); a pod the application owns with another role (a selector that
// misses, or a pod another controller added) is claimed by no component. Marked or not, it joins
// the workload's gang PodGroup in no sub-group, never a PodGroup of its own (KAI's default
// grouper gave it minMember 1 and KAI bound it alone): KAI leaves it unscheduled
// (kaiadmission: stranded), and the gang's own pods are admitted without it.
func TestUnclaimedPodJoinsTheGang(t *testing.T) {
	g := newGrouper(t)
	stray := pod("sidecar-0", map[string]string{"spark-role": "sidecar"})
	for _, marked := range []bool{false, true} {
		w := workload(t, "sparkapplication-volcano-batchscheduler.yaml", func(u *unstructured.Unstructured) {
			if marked {
				markedBy(u)
			}
		})
		md, seen, err := g.GroupPod(context.Background(), w, stray)
		require.NoError(t, err)
		assert.True(t, seen.Unclaimed, "reported as unclaimed to the findings")
		require.NotNil(t, md, "marked %v: gangmap's, never KAI's default grouping", marked)
		assert.Equal(t, "pg-11111111-2222-3333-4444-555555555555-sparkapplication", md.Name, "the gang's PodGroup")
		assert.Nil(t, md.FindSubGroupForPod("bench", "sidecar-0"), "in no sub-group")
		assert.NotContains(t, md.Annotations, kaikeys.SkipPodGrouper, "the mark is the workload's, not the PodGroup's")

		driver := pod("driver", map[string]string{"spark-role": "driver"})
		dmd, _, err := g.GroupPod(context.Background(), w, driver)
		require.NoError(t, err)
		assert.Equal(t, podgroup.Build(dmd).Spec, podgroup.Build(md).Spec, "the same PodGroup as the gang's pods write")

		v := kaiadmission.Evaluate(podgroup.Build(dmd), []kaiadmission.Pod{
			{Name: "driver", SubGroup: "driver", State: kaiadmission.Pending},
			{Name: "sidecar-0", State: kaiadmission.Pending},
		}, nil)
		assert.Equal(t, []string{"sidecar-0"}, v.Stranded, "KAI never binds the unclaimed pod")
		assert.Equal(t, []string{"driver"}, slices.Concat(v.Steps...))
	}

	// ungrouped (a role the alpha form leaves out of every gang, marked workload) keeps KAI's
	// default PodGroup, named apart from a gang's.
	marked := workload(t, "sparkapplication-volcano-batchscheduler.yaml", markedBy)
	clash := &gang.Plan{PodGroups: []*gang.PodGroup{{Name: "pg-spark-pi-volcano-11111111-2222-3333-4444-555555555555"}}}
	own, err := g.ungrouped(context.Background(), clash, marked, stray, nil)
	require.NoError(t, err)
	assert.Equal(t, "pg-spark-pi-volcano-11111111-2222-3333-4444-555555555555"+UngroupedSuffix, own.Name)
	assert.Equal(t, int32(1), own.MinAvailable)
}

// TestPodOutsidePlanJoinsTheGang: the seed JobSet's replicated jobs are leader and workers (the
// catalog definition's instanceIdPath, .spec.replicatedJobs[].name). A pod the JobSet controller
// labels jobset.sigs.k8s.io/replicatedjob-name: evaluator (a replicated job the plan does not
// know: a path that reads nothing, or a plan older than the workload) is outside the plan: it is
// reported (Seen.NotInPlan names the instance) and joins the gang's PodGroup in no sub-group,
// so KAI does not schedule it until the plan places it.
func TestPodOutsidePlanJoinsTheGang(t *testing.T) {
	g := newGrouper(t)
	evaluator := pod("evaluator-0", map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "evaluator", "jobset.sigs.k8s.io/job-index": "0"})
	for _, w := range []*unstructured.Unstructured{workload(t, "jobset-leader-workers.yaml", nil), workload(t, "jobset-leader-workers.yaml", markedBy)} {
		md, seen, err := g.GroupPod(context.Background(), w, evaluator)
		require.NoError(t, err, "not an error to retry")
		var nip *gang.NotInPlanError
		require.ErrorAs(t, seen.NotInPlan, &nip)
		assert.Equal(t, "replicatedjob[evaluator]", nip.Instance)
		assert.False(t, seen.Unclaimed, "a component claims it; its instance is what the plan lacks")
		require.NotNil(t, md)
		assert.Equal(t, "pg-11111111-2222-3333-4444-555555555555-jobset", md.Name)
		assert.Nil(t, md.FindSubGroupForPod("bench", "evaluator-0"))
		v := kaiadmission.Evaluate(podgroup.Build(md), []kaiadmission.Pod{{Name: "evaluator-0", State: kaiadmission.Pending}}, nil)
		assert.Equal(t, []string{"evaluator-0"}, v.Stranded)
		assert.Empty(t, v.Steps)
	}
}
