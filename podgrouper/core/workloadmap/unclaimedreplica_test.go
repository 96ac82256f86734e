package workloadmap

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gangmap/gangmap/podgrouper/core/kaiadmission"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// A LeaderWorkerSet's plan is one PodGroup per group (perReplicaOf group, the replica key
// leaderworkerset.sigs.k8s.io/group-index, which the LWS controller and pod webhook write on
// every pod of a group). A pod of group 1 that no component claims (no worker-index label, which
// both components' selectors read) joins group 1's PodGroup in no sub-group, not group 0's: the
// workload's gang for that pod is its own group's. KAI leaves it unscheduled there (a PodGroup
// with sub-groups, job_info.go AddTaskInfo) and group 1's own pods are admitted whole. A pod
// naming a group the plan lacks (group 7 of 2), or none, joins the plan's first PodGroup.
func TestUnclaimedPodJoinsItsReplicasPodGroup(t *testing.T) {
	g := newGrouper(t)
	lws := workload(t, "lws-replicas2-size4-8gpu-limits.yaml", nil)
	plan, _, err := g.Plan(context.Background(), lws)
	require.NoError(t, err)
	require.Len(t, plan.PodGroups, 2)
	group := map[string]string{}
	for _, pg := range plan.PodGroups {
		group[pg.Replica] = pg.Name
	}
	require.NotEqual(t, group["0"], group["1"])

	for _, c := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"leaderworkerset.sigs.k8s.io/group-index": "1"}, group["1"]},
		{map[string]string{"leaderworkerset.sigs.k8s.io/group-index": "0"}, group["0"]},
		{map[string]string{"leaderworkerset.sigs.k8s.io/group-index": "7"}, plan.PodGroups[0].Name},
		{map[string]string{}, plan.PodGroups[0].Name},
	} {
		stray := pod("stray", c.labels)
		md, seen, err := g.GroupPod(context.Background(), lws, stray)
		require.NoError(t, err)
		assert.True(t, seen.Unclaimed, "%v: unclaimed", c.labels)
		require.NotNil(t, md)
		assert.Equal(t, c.want, md.Name, "%v", c.labels)
		assert.Nil(t, md.FindSubGroupForPod("bench", "stray"), "%v: in no sub-group", c.labels)
	}

	// Group 1's own pods with the stray beside them: admitted whole, the stray never bound.
	s := newStartSim(t)
	pods := []simPod{lwsPod(1, 0, kaiadmission.Pending), lwsPod(1, 1, kaiadmission.Pending), lwsPod(1, 2, kaiadmission.Pending), lwsPod(1, 3, kaiadmission.Pending)}
	v := s.phase(lws, pods)
	require.Len(t, v, 1)
	md, _, err := g.GroupPod(context.Background(), lws, pod("stray", map[string]string{"leaderworkerset.sigs.k8s.io/group-index": "1"}))
	require.NoError(t, err)
	written := s.written[md.Name]
	require.NotNil(t, written, "the stray's PodGroup is group 1's, written by its pods")
	assert.Equal(t, podgroup.Build(md).Spec, written.Spec)
	model := []kaiadmission.Pod{{Name: "stray", State: kaiadmission.Pending}}
	for _, p := range pods {
		sg := ""
		if pmd, _, err := g.GroupPod(context.Background(), lws, p.pod()); err == nil {
			if f := pmd.FindSubGroupForPod("bench", p.name); f != nil {
				sg = f.Name
			}
		}
		model = append(model, kaiadmission.Pod{Name: p.name, SubGroup: sg, State: kaiadmission.Pending})
	}
	verdict := kaiadmission.Evaluate(written, model, nil)
	assert.True(t, verdict.Admitted, "%s: %s", verdict.Blocking, verdict.Reason)
	assert.False(t, verdict.Partial)
	assert.Equal(t, 4, verdict.BoundAtAdmission, "group 1's 4 pods")
	assert.Equal(t, []string{"stray"}, verdict.Stranded, "KAI never binds the unclaimed pod")
}
