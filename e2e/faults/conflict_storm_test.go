//go:build e2e

package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/controller"
)

// TestConflictStorm: for 5 seconds another writer (as KAI's scheduler and an admin would) updates
// the PodGroup of a running workload as fast as it can — its own labels, spec.markUnschedulable,
// spec.schedulingBackoff and spec.queue, the fields KAI owns — while the workload is scaled up a
// worker every half second and its new pods are created, so gangmap must update the same
// PodGroup (sub-group minimum, GPUs) under constant conflicts. No update is lost: the other
// writer's last values are all there, and gangmap's own fields match the final workload. The
// grouper does not spin: its PodGroup writes and reconciles stay bounded, and stop once the storm
// is over.
func TestConflictStorm(t *testing.T) {
	ctx := context.Background()
	ns := "conflict-storm"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	g := startGrouper(t, ctx)
	waitDefinitions(t, ctx, g, func(n float64) bool { return n >= 1 })

	job := customJob(t, ctx, ns, "storm", 2, "", "")
	_, err := cp.RunRoles(ctx, job, 4, "coordinator", "worker")
	require.NoError(t, err)
	waitAllGrouped(t, ctx, ns, 3, timeout)
	name := fmt.Sprintf("pg-%s-customjob", job.GetUID())
	pg := &v2alpha2.PodGroup{}
	require.NoError(t, waitPodGroup(ctx, ns, name, pg, func(*v2alpha2.PodGroup) bool { return true }))
	before, err := g.Metrics(ctx)
	require.NoError(t, err)

	const stormFor, scaleEvery = 5 * time.Second, 500 * time.Millisecond
	stormCtx, stop := context.WithTimeout(ctx, stormFor)
	defer stop()
	var wg sync.WaitGroup

	// The other writer: read-modify-write of the PodGroup in a loop, retrying on conflict.
	type written struct {
		i       int
		queue   string
		backoff int32
		unsched bool
	}
	var last written
	var writes, conflicts int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; stormCtx.Err() == nil; i++ {
			cur := &v2alpha2.PodGroup{}
			if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cur); err != nil {
				t.Errorf("other writer: get: %v", err)
				return
			}
			w := written{i: i, queue: fmt.Sprintf("storm-queue-%d", i), backoff: int32(i), unsched: i%2 == 0}
			if cur.Labels == nil {
				cur.Labels = map[string]string{}
			}
			cur.Labels["storm.example.com/seq"] = fmt.Sprint(i)
			cur.Labels[fmt.Sprintf("storm.example.com/key-%d", i%7)] = fmt.Sprint(i)
			cur.Spec.Queue = w.queue
			cur.Spec.SchedulingBackoff = ptr.To(w.backoff)
			cur.Spec.MarkUnschedulable = ptr.To(w.unsched)
			err := cp.Client.Update(ctx, cur)
			switch {
			case apierrors.IsConflict(err):
				conflicts++
			case err != nil:
				t.Errorf("other writer: update: %v", err)
				return
			default:
				writes++
				last = w
			}
		}
	}()

	// The operator: one more worker every scaleEvery, with its pod.
	workers := int64(2)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(scaleEvery)
		defer tick.Stop()
		for {
			select {
			case <-stormCtx.Done():
				return
			case <-tick.C:
			}
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(job.GroupVersionKind())
			if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(job), cur); err != nil {
				t.Errorf("operator: %v", err)
				return
			}
			if err := unstructured.SetNestedField(cur.Object, workers+1, "spec", "worker", "replicas"); err != nil {
				t.Errorf("operator: %v", err)
				return
			}
			if err := cp.Client.Update(ctx, cur); err != nil {
				t.Errorf("operator: scale: %v", err)
				return
			}
			if _, err := cp.CreatePodFor(ctx, cur, "worker", int(workers)); err != nil {
				t.Errorf("operator: pod: %v", err)
				return
			}
			workers++
		}
	}()
	wg.Wait()
	require.False(t, t.Failed())
	t.Logf("other writer: %d updates, %d conflicts; workload scaled from 2 to %d workers", writes, conflicts, workers)
	require.Greater(t, writes, 20, "the other writer wrote often enough to collide")

	// gangmap's fields reach the final workload; the other writer's last values are all kept.
	pods := waitAllGrouped(t, ctx, ns, int(1+workers), timeout)
	err = waitPodGroup(ctx, ns, name, pg, func(pg *v2alpha2.PodGroup) bool {
		return len(pg.Spec.SubGroups) == 2 && int64(*pg.Spec.SubGroups[1].MinMember) == workers
	})
	require.NoError(t, err, "the PodGroup reaches %d workers: %+v", workers, pg.Spec.SubGroups)
	assert.Equal(t, ptr.To[int32](2), pg.Spec.MinSubGroup)
	assert.Equal(t, []v2alpha2.SubGroup{{Name: "coordinator", MinMember: ptr.To[int32](1)}, {Name: "worker", MinMember: ptr.To(int32(workers))}}, pg.Spec.SubGroups)
	assert.Equal(t, fmt.Sprint(1+2*workers), pg.Annotations[kaikeys.GPUs])
	assert.Equal(t, "e2e-example-com-v1-customjob (cluster)", pg.Annotations[kaikeys.Definition])
	assert.Equal(t, last.queue, pg.Spec.Queue, "spec.queue: the other writer's last value")
	assert.Equal(t, ptr.To(last.backoff), pg.Spec.SchedulingBackoff, "spec.schedulingBackoff: the other writer's last value")
	assert.Equal(t, ptr.To(last.unsched), pg.Spec.MarkUnschedulable, "spec.markUnschedulable: the other writer's last value")
	assert.Equal(t, fmt.Sprint(last.i), pg.Labels["storm.example.com/seq"], "the other writer's last label")
	for k := 0; k < 7; k++ {
		assert.NotEmpty(t, pg.Labels[fmt.Sprintf("storm.example.com/key-%d", k)], "label key-%d kept", k)
	}
	assert.Equal(t, "team-a", pg.Labels[kaikeys.DefaultQueueLabel], "gangmap's queue label kept")
	for _, p := range pods {
		assert.Equal(t, name, p.Annotations[kaikeys.PodGroupName], p.Name)
	}

	// Bounded work: PodGroup writes are about one per scale step (each changes the gang), and the
	// reconciles (conflict requeues included) a small multiple of the pod and workload events.
	// The last regroup comes at most controller.RegroupWindow after the last scale step (a
	// workload changed every 0.5 s regroups its pods once a window); then its reconciles finish.
	time.Sleep(controller.RegroupWindow + time.Second)
	settled, err := g.Metrics(ctx)
	require.NoError(t, err)
	delta := func(m map[string]float64, name string, labels ...string) float64 {
		return framework.Sum(m, name, labels...) - framework.Sum(before, name, labels...)
	}
	steps := float64(workers - 2)
	updated := delta(settled, "gangmap_podgroup_writes_total", `result="Updated"`)
	created := delta(settled, "gangmap_podgroup_writes_total", `result="Created"`)
	reconciles := delta(settled, "controller_runtime_reconcile_total", `controller="gangmap-pod-grouper"`)
	requeues := delta(settled, "controller_runtime_reconcile_total", `controller="gangmap-pod-grouper"`, `result="requeue"`)
	t.Logf("grouper during the storm: %v PodGroup updates, %v creates, %v reconciles (%v requeued on conflict) for %v scale steps", updated, created, reconciles, requeues, steps)
	assert.Zero(t, created, "the PodGroup is never created twice")
	assert.LessOrEqual(t, updated, 3*steps+3, "PodGroup updates bounded by the scale steps")
	// Each scale step regroups every indexed pod (up to 1+workers) and adds a pod; conflicts
	// requeue some of them.
	assert.LessOrEqual(t, reconciles, 4*steps*float64(1+workers)+50, "reconciles bounded")

	// Quiet afterwards: nothing more is written or reconciled while nothing changes.
	time.Sleep(3 * time.Second)
	quiet, err := g.Metrics(ctx)
	require.NoError(t, err)
	assert.Equal(t, framework.Sum(settled, "gangmap_podgroup_writes_total"), framework.Sum(quiet, "gangmap_podgroup_writes_total"), "no PodGroup write once the storm is over")
	assert.Equal(t, framework.Sum(settled, "controller_runtime_reconcile_total", `controller="gangmap-pod-grouper"`),
		framework.Sum(quiet, "controller_runtime_reconcile_total", `controller="gangmap-pod-grouper"`), "no reconcile once the storm is over")
}
