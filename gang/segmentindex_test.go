package gang

import (
	"math"
	"strings"
	"testing"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
)

// TestRolePodIndexOverflowIsAnError: a pod's replica index comes from the pod (its labels, which
// the workload's author can write); replica × pods per replica + index must not wrap around to a
// small index (a pod of replica 2^62 of 4 pods each would wrap to index 0 and join segment 0).
func TestRolePodIndexOverflowIsAnError(t *testing.T) {
	comp := &definitions.Component{Name: "worker"}
	r := &Role{Name: "worker", Component: "worker", PodsPerReplica: 4, component: comp}
	for _, replica := range []int64{1 << 62, math.MaxInt64/4 + 1, math.MaxInt64} {
		pl := &definitions.PodPlacement{HasPodIndex: true, PodIndex: 3, HasPodReplica: true, PodReplica: replica}
		i, err := rolePodIndex(r, pl, nil)
		if err == nil {
			t.Errorf("replica %d: index %d, want an error (the product passes int64)", replica, i)
		} else if !strings.Contains(err.Error(), "worker") {
			t.Errorf("replica %d: error %q does not name the role", replica, err)
		}
	}
	// in range: replica 2 of 4 pods, index 3 -> 11
	pl := &definitions.PodPlacement{HasPodIndex: true, PodIndex: 3, HasPodReplica: true, PodReplica: 2}
	if i, err := rolePodIndex(r, pl, nil); err != nil || i != 11 {
		t.Errorf("replica 2, index 3: got %d, %v; want 11", i, err)
	}
	// the component's replica key (a JobSet job-index) takes the same check
	comp.ReplicaKey = anyProgram{}
	pl = &definitions.PodPlacement{HasPodIndex: true, PodIndex: 1, ReplicaKeys: map[string]string{"worker": "4611686018427387904"}}
	if i, err := rolePodIndex(r, pl, nil); err == nil {
		t.Errorf("replica key 2^62: index %d, want an error", i)
	}
}

// anyProgram is a non-nil replica key program: rolePodIndex only asks whether there is one.
type anyProgram struct{ expr.Program }
