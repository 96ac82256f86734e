//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/kaikeys"
)

// TestJobSetDependsOnStartSequence: JobSet's own dependsOn example (initializer; launcher after
// the initializer is Complete; 4 workers after the launcher is Ready), with the JobSet
// controller's start sequence played by framework.StepJobSet. At every step the PodGroup
// requires only sub-groups whose pods exist (minSubGroup counts the sub-groups not held by the
// start rule, each with all its pods present), and the final PodGroup requires the 4 workers.
func TestJobSetDependsOnStartSequence(t *testing.T) {
	ctx := context.Background()
	ns := "jobset-depends-on"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	objs, err := cp.ApplyFile(ctx, "testdata/jobset-depends-on-initializer-launcher-worker.yaml", ns)
	require.NoError(t, err)
	js := objs[0]
	pgName := fmt.Sprintf("pg-%s-jobset", js.GetUID())
	allSubGroups := []v2alpha2.SubGroup{
		{Name: "initializer", MinMember: ptr.To[int32](1)},
		{Name: "launcher", MinMember: ptr.To[int32](1)},
		{Name: "worker", MinMember: ptr.To[int32](4)},
	}

	step := func(name string, wantHeld []string, wantMinSubGroup int32) *v2alpha2.PodGroup {
		t.Helper()
		var pg *v2alpha2.PodGroup
		err := framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
			got := &v2alpha2.PodGroup{}
			if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pgName}, got); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			pg = got
			return equalKeys(heldRoles(t, got), wantHeld) && got.Spec.MinSubGroup != nil && *got.Spec.MinSubGroup == wantMinSubGroup, nil
		})
		require.NoError(t, err, "%s: PodGroup holds %v with minSubGroup %d; last seen %v", name, wantHeld, wantMinSubGroup, pg)
		assert.Nil(t, pg.Spec.MinMember, name)
		assert.Equal(t, allSubGroups, pg.Spec.SubGroups, "%s: every replicated job keeps its sub-group and minimum", name)
		assertRequiredPodsExist(t, ctx, ns, js.GetName(), pg, name)
		return pg
	}

	// 1. Only the initializer's Job exists: the PodGroup requires its sub-group only.
	initPods, err := cp.StepJobSet(ctx, ns, js.GetName())
	require.NoError(t, err)
	require.Len(t, initPods, 1)
	step("initializer created", []string{"launcher", "worker"}, 1)

	// 2. The initializer runs (Ready is not Complete): nothing new is created.
	require.NoError(t, cp.SetPodPhase(ctx, initPods[0], corev1.PodRunning))
	created, err := cp.StepJobSet(ctx, ns, js.GetName())
	require.NoError(t, err)
	require.Empty(t, created)
	step("initializer running", []string{"launcher", "worker"}, 1)

	// 3. The initializer's pod completes: the controller creates the launcher. The initializer's
	// finished pod no longer counts; the launcher is required.
	require.NoError(t, cp.SetPodPhase(ctx, initPods[0], corev1.PodSucceeded))
	launcher, err := cp.StepJobSet(ctx, ns, js.GetName())
	require.NoError(t, err)
	require.Len(t, launcher, 1)
	assert.Equal(t, "launcher", launcher[0].Labels[framework.LabelReplicatedJobName])
	step("initializer complete", []string{"initializer", "worker"}, 1)

	// 4. The launcher is Ready: the controller creates the 4 workers; the final PodGroup requires
	// the launcher and all 4 workers, together.
	require.NoError(t, cp.SetPodPhase(ctx, launcher[0], corev1.PodRunning))
	workers, err := cp.StepJobSet(ctx, ns, js.GetName())
	require.NoError(t, err)
	require.Len(t, workers, 4)
	step("launcher ready", []string{"initializer"}, 2)
	for _, p := range workers {
		got, err := cp.WaitForPodAnnotation(ctx, ns, p.Name, kaikeys.PodGroupName, timeout)
		require.NoError(t, err)
		assert.Equal(t, pgName, got.Annotations[kaikeys.PodGroupName], p.Name)
		assert.Equal(t, "worker", got.Labels[kaikeys.SubGroupName], p.Name)
	}
}

// heldRoles reads the PodGroup's gangmap.io/start-held annotation: the roles the start rule keeps
// out of the minimum now.
func heldRoles(t *testing.T, pg *v2alpha2.PodGroup) []string {
	t.Helper()
	v, ok := pg.Annotations[kaikeys.StartHeld]
	if !ok {
		return nil
	}
	held := map[string]string{}
	require.NoError(t, json.Unmarshal([]byte(v), &held))
	out := make([]string, 0, len(held))
	for r, reason := range held {
		assert.NotEmpty(t, reason, "role %s is held with a reason", r)
		out = append(out, r)
	}
	return out
}

func equalKeys(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	seen := map[string]bool{}
	for _, g := range got {
		seen[g] = true
	}
	for _, w := range want {
		if !seen[w] {
			return false
		}
	}
	return true
}

// assertRequiredPodsExist checks that the PodGroup asks only for pods that exist: the sub-groups
// not held are exactly minSubGroup many, and each has at least its minMember live pods.
func assertRequiredPodsExist(t *testing.T, ctx context.Context, ns, jobset string, pg *v2alpha2.PodGroup, step string) {
	t.Helper()
	var pods corev1.PodList
	require.NoError(t, cp.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{framework.LabelJobSetName: jobset}))
	live := map[string]int32{}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			live[p.Labels[framework.LabelReplicatedJobName]]++
		}
	}
	held := map[string]bool{}
	for _, r := range heldRoles(t, pg) {
		held[r] = true
	}
	required := int32(0)
	for _, sg := range pg.Spec.SubGroups {
		if sg.Parent != nil || held[sg.Name] {
			continue
		}
		required++
		assert.GreaterOrEqual(t, live[sg.Name], *sg.MinMember, "%s: required sub-group %s has its pods", step, sg.Name)
	}
	assert.Equal(t, *pg.Spec.MinSubGroup, required, "%s: minSubGroup counts exactly the required sub-groups", step)
}
