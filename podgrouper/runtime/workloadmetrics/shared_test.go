package workloadmetrics

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// Each workload reads back its own kind, status words and roles, updates included.
func TestTrackerKeepsEachWorkloadsLists(t *testing.T) {
	tr := &Tracker{MaxWorkloads: 10}
	mk := func(uid types.UID, status string, workerGPUs float64) Workload {
		return Workload{UID: uid, Namespace: "ns", Kind: fmt.Sprint("CustomJob", ".e2e.example.com"), Name: string(uid),
			Status: []string{status}, Roles: []Role{{Name: "coordinator", GPUs: 1}, {Name: "worker", GPUs: workerGPUs}}}
	}
	for _, w := range []Workload{mk("a", "running", 9), mk("b", "running", 9), mk("c", "failed", 8), mk("a", "running", 9)} {
		require.True(t, tr.SetWorkload(w))
	}
	assert.Equal(t, []Role{{Name: "coordinator", GPUs: 1}, {Name: "worker", GPUs: 8}}, tr.workloads["c"].Roles)
	assert.Equal(t, "CustomJob.e2e.example.com", tr.workloads["a"].Kind)
	assert.Equal(t, []string{"failed"}, tr.workloads["c"].Status)
	assert.Equal(t, []string{"running"}, tr.workloads["a"].Status)
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
	assert.Equal(t, goneSize, tr.gone.Len())
}
