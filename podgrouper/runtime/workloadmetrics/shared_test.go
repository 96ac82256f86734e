package workloadmetrics

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// Alike workloads (each update made anew, as FromPlan makes it) keep one copy of their kind,
// status words and roles; a workload that differs in a role's name or GPUs, or in its status,
// keeps its own; every workload still reads its own values.
func TestAlikeWorkloadsShareTheirLists(t *testing.T) {
	tr := &Tracker{MaxWorkloads: 10}
	mk := func(uid types.UID, status string, workerGPUs float64) Workload {
		return Workload{UID: uid, Namespace: "ns", Kind: fmt.Sprint("CustomJob", ".e2e.example.com"), Name: string(uid),
			Status: []string{status}, Roles: []Role{{Name: "coordinator", GPUs: 1}, {Name: "worker", GPUs: workerGPUs}}}
	}
	for _, w := range []Workload{mk("a", "running", 9), mk("b", "running", 9), mk("c", "failed", 8), mk("a", "running", 9)} {
		require.True(t, tr.SetWorkload(w))
	}
	a, b, c := tr.workloads["a"], tr.workloads["b"], tr.workloads["c"]
	assert.Same(t, &a.roles[0], &b.roles[0])
	assert.Same(t, &a.status[0], &b.status[0])
	assert.Same(t, unsafeStringData(a.kind), unsafeStringData(c.kind))
	assert.NotSame(t, &a.roles[0], &c.roles[0])
	assert.NotSame(t, &a.status[0], &c.status[0])
	assert.Equal(t, []Role{{Name: "coordinator", GPUs: 1}, {Name: "worker", GPUs: 8}}, c.roles)
	st, ok := tr.Status("c")
	require.True(t, ok)
	assert.Equal(t, []string{"failed"}, st)
	st, _ = tr.Status("a")
	assert.Equal(t, []string{"running"}, st)
}

// The tracker remembers the last goneSize forgotten workloads: a late update of one of them is
// refused; one forgotten before them is tracked again.
func TestForgottenWorkloadsStayGone(t *testing.T) {
	tr := &Tracker{MaxWorkloads: goneSize + 100}
	uid := func(i int) types.UID { return types.UID(fmt.Sprintf("uid-%d", i)) }
	for i := range goneSize + 10 {
		tr.ForgetWorkload(uid(i))
		tr.ForgetWorkload(uid(i)) // twice: remembered once
	}
	for i := range 10 {
		assert.True(t, tr.SetWorkload(Workload{UID: uid(i)}), "uid-%d was forgotten before the last %d", i, goneSize)
	}
	for i := 10; i < goneSize+10; i++ {
		require.False(t, tr.SetWorkload(Workload{UID: uid(i)}), "uid-%d", i)
	}
	assert.True(t, tr.SetWorkload(Workload{UID: "never-forgotten"}))
	assert.Len(t, tr.gone.set, goneSize)
}

// unsafeStringData is the address of a string's bytes.
func unsafeStringData(s string) *byte { return unsafe.StringData(s) }
