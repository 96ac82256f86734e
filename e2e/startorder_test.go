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
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestJobSetDependsOnStartSequence: JobSet's own dependsOn example (initializer; launcher after
// the initializer is Complete; 4 workers after the launcher is Ready), with the JobSet
// controller's start sequence played by framework.StepJobSet. At every step the PodGroup writes
// only the sub-groups whose pods exist (a role not created yet is deferred: no sub-group), all of
// them counted in minSubGroup, and a role whose Jobs all succeeded asks for 0 pods: what KAI's
// scheduler admits whatever the names' order (podgrouper/core/kaiadmission; issue 27).
func TestJobSetDependsOnStartSequence(t *testing.T) {
	ctx := context.Background()
	ns := "jobset-depends-on"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	objs, err := cp.ApplyFile(ctx, "testdata/jobset-depends-on-initializer-launcher-worker.yaml", ns)
	require.NoError(t, err)
	js := objs[0]
	pgName := fmt.Sprintf("pg-%s-jobset", js.GetUID())
	sg := func(name string, min int32) v2alpha2.SubGroup {
		return v2alpha2.SubGroup{Name: name, MinMember: ptr.To(min)}
	}

	step := func(name string, wantHeld []string, want []v2alpha2.SubGroup) *v2alpha2.PodGroup {
		t.Helper()
		var pg *v2alpha2.PodGroup
		err := framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
			got := &v2alpha2.PodGroup{}
			if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pgName}, got); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			pg = got
			return equalKeys(heldRoles(t, got), wantHeld) && len(got.Spec.SubGroups) == len(want), nil
		})
		require.NoError(t, err, "%s: PodGroup holds %v with sub-groups %v; last seen %v", name, wantHeld, want, pg)
		assert.Nil(t, pg.Spec.MinMember, name)
		assert.Equal(t, want, pg.Spec.SubGroups, "%s: the sub-groups written now", name)
		assert.Equal(t, ptr.To(int32(len(want))), pg.Spec.MinSubGroup, "%s: minSubGroup counts every written sub-group", name)
		assertRequiredPodsExist(t, ctx, ns, js.GetName(), pg, name)
		return pg
	}

	// 1. Only the initializer's Job exists: the PodGroup has its sub-group only.
	initPods, err := cp.StepJobSet(ctx, ns, js.GetName())
	require.NoError(t, err)
	require.Len(t, initPods, 1)
	step("initializer created", []string{"launcher", "worker"}, []v2alpha2.SubGroup{sg("initializer", 1)})

	// 2. The initializer runs (Ready is not Complete): nothing new is created.
	require.NoError(t, cp.SetPodPhase(ctx, initPods[0], corev1.PodRunning))
	created, err := cp.StepJobSet(ctx, ns, js.GetName())
	require.NoError(t, err)
	require.Empty(t, created)
	step("initializer running", []string{"launcher", "worker"}, []v2alpha2.SubGroup{sg("initializer", 1)})

	// 3. The initializer's pod completes: the controller creates the launcher. The initializer's
	// sub-group asks for 0 pods (its pod finished); the launcher's is written.
	require.NoError(t, cp.SetPodPhase(ctx, initPods[0], corev1.PodSucceeded))
	launcher, err := cp.StepJobSet(ctx, ns, js.GetName())
	require.NoError(t, err)
	require.Len(t, launcher, 1)
	assert.Equal(t, "launcher", launcher[0].Labels[framework.LabelReplicatedJobName])
	step("initializer complete", []string{"initializer", "worker"}, []v2alpha2.SubGroup{sg("initializer", 0), sg("launcher", 1)})

	// 4. The launcher is Ready: the controller creates the 4 workers; the final PodGroup requires
	// the launcher and all 4 workers, together.
	require.NoError(t, cp.SetPodPhase(ctx, launcher[0], corev1.PodRunning))
	workers, err := cp.StepJobSet(ctx, ns, js.GetName())
	require.NoError(t, err)
	require.Len(t, workers, 4)
	step("launcher ready", []string{"initializer"}, []v2alpha2.SubGroup{sg("initializer", 0), sg("launcher", 1), sg("worker", 4)})
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

// assertRequiredPodsExist checks that the PodGroup asks only for pods that exist: every written
// sub-group has at least its minMember live pods.
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
	for _, sg := range pg.Spec.SubGroups {
		if sg.Parent != nil || sg.MinMember == nil {
			continue
		}
		assert.GreaterOrEqual(t, live[sg.Name], *sg.MinMember, "%s: written sub-group %s has its pods", step, sg.Name)
	}
}
