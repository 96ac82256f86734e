package podview

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
)

// maxPhases bounds the distinct status.phase values Records tell apart: the API's five, none,
// and up to 250 others (a phase is not an enum the API server enforces on every write); a pod of
// yet another phase reads as Unknown.
const maxPhases = 256

// phases is the table of phase codes: phases.names (copied on write) holds every phase given a
// code, its index the code; names[0] is no phase.
var phases = struct {
	mu    sync.Mutex
	names atomic.Pointer[[]corev1.PodPhase]
}{}

func init() {
	names := []corev1.PodPhase{"", corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown}
	phases.names.Store(&names)
}

// phaseCode returns p's code, giving p one if it has none and the table has room.
func phaseCode(p corev1.PodPhase) uint8 {
	if c, ok := findPhase(*phases.names.Load(), p); ok {
		return c
	}
	phases.mu.Lock()
	defer phases.mu.Unlock()
	names := *phases.names.Load()
	if c, ok := findPhase(names, p); ok {
		return c
	}
	if len(names) >= maxPhases {
		c, _ := findPhase(names, corev1.PodUnknown)
		return c
	}
	grown := append(append(make([]corev1.PodPhase, 0, len(names)+1), names...), corev1.PodPhase(intern(string(p))))
	phases.names.Store(&grown)
	return uint8(len(grown) - 1)
}

func findPhase(names []corev1.PodPhase, p corev1.PodPhase) (uint8, bool) {
	for i, n := range names {
		if n == p {
			return uint8(i), true
		}
	}
	return 0, false
}

// phaseOf is the phase with code c.
func phaseOf(c uint8) corev1.PodPhase { return (*phases.names.Load())[c] }
