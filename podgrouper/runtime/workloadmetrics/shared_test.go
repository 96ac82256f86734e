package workloadmetrics

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

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
