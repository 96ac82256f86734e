//go:build e2e_kai

package realkai_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestCustomJobAllOrNothing: a CustomJob of 1 coordinator (1 GPU) and 2 workers (2 GPUs each),
// one gang of 5 GPUs (e2e/testdata/customjob-karta.yaml), on the real KAI scheduler.
//   - On 2 nodes of 2 GPUs (4 GPUs) the two workers would fit, one per node, but the gang does not:
//     KAI binds none of the 3 pods for 10 scheduling cycles. KAI's allocate action commits a
//     job's statement only when attemptToAllocateJob placed all the tasks its gang needs, and
//     discards it otherwise (pkg/scheduler/actions/allocate/allocate.go Execute;
//     actions/common/allocate.go AllocateJob, allocateSubGroupSet rolls back to the checkpoint
//     unless every member with tasks is placed).
//   - With a third node of 2 GPUs (6 GPUs: any placement of the three fits), KAI binds all 3.
func TestCustomJobAllOrNothing(t *testing.T) {
	ctx := context.Background()
	b := newBed(t, "customjob", 2, 2)
	job := b.readWorkload(t, "../testdata/customjob.yaml")
	require.NoError(t, kai.Client.Create(ctx, job))
	pods, err := kai.RunRoles(ctx, job, 3, "coordinator", "worker")
	require.NoError(t, err)
	require.Len(t, pods, 3)
	pgs := waitGrouped(t, ctx, pods)
	require.Len(t, pgs, 1, "the CustomJob's 3 pods are in one PodGroup")
	for _, pg := range pgs {
		assert.Equal(t, queue, pg.Spec.Queue, "the PodGroup is in the workload's queue")
		t.Logf("PodGroup %s: %s", pg.Name, describe(pg))
	}

	p, err := kai.AssertNoneBound(ctx, b.ns, labels.Everything(), holdPeriod)
	require.NoError(t, err, "4 GPUs for a 5-GPU gang: KAI binds none of its pods")
	assert.Len(t, p.Pending, 3)
	lines := kai.Scheduler.Grep(3, "Could not allocate", b.ns)
	t.Logf("KAI scheduler while the gang does not fit: %v", lines)

	b.addNodes(t, 1, 2)
	p, err = kai.WaitAllBound(ctx, b.ns, labels.Everything(), 3, admitTimeout)
	require.NoError(t, err, "6 GPUs for a 5-GPU gang: KAI binds all its pods")
	require.Len(t, p.Bound, 3)
	for _, pod := range p.Bound {
		assert.Contains(t, pgs, pod.Annotations[kaikeys.PodGroupName], "%s was bound in the gang's PodGroup", pod.Name)
		assert.Contains(t, pod.Spec.NodeName, b.ns+"-", "%s is on one of the test's nodes", pod.Name)
	}
}
