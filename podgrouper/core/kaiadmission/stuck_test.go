package kaiadmission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"
)

// Stuck over the shapes the tests of admit_test.go work out from KAI v0.17.0's scheduler: the
// first-K deadlock (allocation_info.go collectTasksFromSubGroupSet, a sub-group with no pending
// pod among the first minSubGroup by name), a finished sub-group kept with its minimum (not
// ready: subgroupset.go IsReadyForScheduling counts no Succeeded pod), a partial commit; and
// what is not stuck: a gang waiting for pods not created yet, one admitted whole, one with no
// pending pod.
func TestStuck(t *testing.T) {
	deadlock := Check(tree(ptr.To[int32](1), leaf("a-init", 1), leaf("b-work", 2)), pods("b-work", 2, Pending), nil)
	assert.True(t, deadlock.Stuck(), "first-K deadlock")
	assert.Equal(t, "a-init", deadlock.Blocking)

	finished := Check(tree(ptr.To[int32](2), leaf("initializer", 1), leaf("worker", 3)),
		join(pods("initializer", 1, Succeeded), pods("worker", 3, Pending)), nil)
	assert.True(t, finished.Stuck(), "a required sub-group whose pod finished")
	assert.True(t, finished.NotReady)
	assert.Equal(t, "initializer", finished.Finished)

	partial := Check(tree(ptr.To[int32](2), leaf("a", 1), leaf("b", 1), leaf("c", 1)), join(pods("b", 1, Pending), pods("c", 1, Pending)), nil)
	assert.True(t, partial.Stuck(), "a partial first commit")

	waiting := Check(tree(ptr.To[int32](2), leaf("leader", 1), leaf("worker", 3)), join(pods("leader", 1, Pending), pods("worker", 2, Pending)), nil)
	assert.False(t, waiting.Stuck(), "2 of 3 workers exist: the operator may create the third")
	assert.True(t, waiting.NotReady)
	assert.Empty(t, waiting.Finished)

	failed := Check(tree(ptr.To[int32](2), leaf("leader", 1), leaf("worker", 2)), join(pods("leader", 1, Pending), pods("worker", 1, Pending), []Pod{{Name: "w-old", SubGroup: "worker", State: Failed}}), nil)
	assert.False(t, failed.Stuck(), "a failed pod is replaced by the operator: waiting")

	whole := Check(flat(ptr.To[int32](3)), pods("", 5, Pending), nil)
	assert.False(t, whole.Stuck())
	assert.True(t, whole.Admitted)
	assert.Equal(t, [][]string{{"pod-0", "pod-1", "pod-2"}}, whole.Steps, "Check stops at the admitting commit")
	assert.Len(t, Evaluate(flat(ptr.To[int32](3)), pods("", 5, Pending), nil).Steps, 3, "Evaluate goes on one pod at a time")

	done := Check(flat(ptr.To[int32](2)), pods("", 2, Succeeded), nil)
	assert.False(t, done.Stuck(), "nothing pending")
}
