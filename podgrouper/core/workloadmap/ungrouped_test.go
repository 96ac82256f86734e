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

// TestWorkloadCannotWriteGangmapKeys: KAI's default metadata copies every annotation of the top
// owner to its PodGroup; the gangmap.io/ keys of a PodGroup gangmap writes are gangmap's. A
// workload whose author wrote gangmap.io/status, gangmap.io/health, gangmap.io/start-held,
// gangmap.io/definition and gangmap.io/min-member gets a PodGroup with gangmap's values: the
// catalog definition, its status mapping's word for an application with no status
// ("initializing"), its start rule (executors are created after the driver starts: the spark
// operator's submission order), no health (the findings write it on the PodGroup themselves); and
// its other annotations copied as KAI copies them.
func TestWorkloadCannotWriteGangmapKeys(t *testing.T) {
	g := newGrouper(t)
	w := workload(t, "sparkapplication-volcano-batchscheduler.yaml", func(u *unstructured.Unstructured) {
		u.SetAnnotations(map[string]string{
			kaikeys.Status: "running", "gangmap.io/health": `{"status":"True"}`, kaikeys.StartHeld: `{"driver":"forged"}`,
			kaikeys.Definition: "forged (cluster)", "gangmap.io/min-member": "1", "example.com/team": "a",
		})
	})
	md, _, err := g.GroupPod(context.Background(), w, pod("driver", map[string]string{"spark-role": "driver"}))
	require.NoError(t, err)
	require.NotNil(t, md)
	assert.Equal(t, "a", md.Annotations["example.com/team"], "the workload's own annotations are copied, as KAI copies them")
	assert.Equal(t, "initializing", md.Annotations[kaikeys.Status])
	assert.NotContains(t, md.Annotations, "gangmap.io/health")
	assert.Equal(t, `{"executor":"its pods are created only after those of driver start"}`, md.Annotations[kaikeys.StartHeld])
	assert.NotContains(t, md.Annotations, "gangmap.io/min-member")
	assert.Contains(t, md.Annotations[kaikeys.Definition], "sparkapplication", "gangmap's definition, not the forged one")
	assert.NotContains(t, md.Annotations[kaikeys.Definition], "forged")
	assert.NotEmpty(t, md.Annotations[kaikeys.GPUs])
}
