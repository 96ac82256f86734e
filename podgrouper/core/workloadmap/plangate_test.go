package workloadmap

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/gangmap/gangmap/definitions/expr"
)

// TestPlanGateRefusesPastItsBound: with room for three builds' shares, a fourth waits PlanWait
// and is refused with ErrPlanBuildsBusy (saying what it needs); once a build gives its share
// back, the next is let in at once. The builds are of workloads of four namespaces (one
// namespace's builds hold at most half the bound: TestPlanGateKeepsHalfForOtherNamespaces).
func TestPlanGateRefusesPastItsBound(t *testing.T) {
	g := &Grouper{PlanMemory: 3 * (32<<20 + 1<<20), PlanWait: 100 * time.Millisecond}
	gate := g.gate()
	objIn := func(ns string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"s": "x"}}}
		u.SetNamespace(ns)
		return u
	}
	obj := objIn("ns-d")
	var releases []func()
	for _, ns := range []string{"ns-a", "ns-b", "ns-c"} {
		r, err := gate.acquire(context.Background(), objIn(ns))
		require.NoError(t, err)
		releases = append(releases, r)
	}
	start := time.Now()
	_, err := gate.acquire(context.Background(), obj)
	require.ErrorIs(t, err, ErrPlanBuildsBusy)
	assert.Contains(t, err.Error(), "this build needs 33 MiB and waited 100ms")
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	releases[0]()
	r, err := gate.acquire(context.Background(), obj)
	require.NoError(t, err)
	r()
	// An object too large for the bound takes the whole of it, alone, rather than never.
	huge := &unstructured.Unstructured{Object: map[string]any{"s": strings.Repeat("x", 200<<20)}}
	assert.Equal(t, gate.capacity, gate.share(huge))
	for _, r := range releases[1:] {
		r()
	}
}

// TestPlanGateKeepsHalfForOtherNamespaces: one namespace's builds (here team-a's, holding
// their shares as slow builds of many valid workloads do) take at most half the bound; a build
// of team-c then gets its share at once rather than ErrPlanBuildsBusy, and the bound holds.
// Found by a review: 200 valid AppWrappers of one namespace refused 20 of 20 other builds.
func TestPlanGateKeepsHalfForOtherNamespaces(t *testing.T) {
	share := int64(32<<20 + 1<<20)
	g := &Grouper{PlanMemory: 6 * share, PlanWait: 50 * time.Millisecond}
	gate := g.gate()
	inNamespace := func(ns string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"s": "x"}}}
		u.SetNamespace(ns)
		return u
	}
	var releases []func()
	for range 3 { // half of six shares
		r, err := gate.acquire(context.Background(), inNamespace("team-a"))
		require.NoError(t, err)
		releases = append(releases, r)
	}
	_, err := gate.acquire(context.Background(), inNamespace("team-a"))
	require.ErrorIs(t, err, ErrPlanBuildsBusy, "a fourth team-a build passes the namespace's half")
	start := time.Now()
	for range 3 {
		r, err := gate.acquire(context.Background(), inNamespace("team-c"))
		require.NoError(t, err, "team-c gets the other half")
		releases = append(releases, r)
	}
	assert.Less(t, time.Since(start), 50*time.Millisecond, "without waiting")
	assert.Less(t, availableOf(gate), gate.share(inNamespace("team-d")), "no room for another build")
	_, err = gate.acquire(context.Background(), inNamespace("team-d"))
	require.ErrorIs(t, err, ErrPlanBuildsBusy, "the bound itself still holds")
	for _, r := range releases {
		r()
	}
	assert.Empty(t, gate.namespaces, "a namespace's share is forgotten once its builds are done")
	assert.Equal(t, gate.capacity, availableOf(gate))
}

// TestPlanGateBoundsHostileBuilds (issue 28): 24 AppWrappers with a 1.4 MB pod set path and 24
// NIMServices with a 1.4 M-digit min-scale planned at once beside 20 ordinary AppWrappers: the
// shares held at once never pass PlanMemory, every ordinary plan is built, and each hostile
// one fails by its expression budget (a *LimitError naming the field), with a Warning Event.
func TestPlanGateBoundsHostileBuilds(t *testing.T) {
	g := hostileGrouper(t)
	rec := record.NewFakeRecorder(1000)
	g.Recorder, g.PlanMemory, g.PlanWait = rec, 3*(32<<20+6<<20), 30*time.Second
	gate := g.gate()
	var held, peak atomic.Int64
	var objs []*unstructured.Unstructured
	for i := range 24 {
		objs = append(objs, hostileAppWrapperWith(fmt.Sprint("aw-", i), strings.Repeat(".", 1_400_000)))
		objs = append(objs, hostileNIMService(fmt.Sprint("nim-", i)))
	}
	for i := range 20 {
		objs = append(objs, hostileAppWrapperWith(fmt.Sprint("ok-", i), "template.spec.template"))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(objs))
	stop := make(chan struct{})
	go func() { // samples the shares held
		for {
			select {
			case <-stop:
				return
			default:
				n := int64(gate.capacity) - availableOf(gate)
				held.Store(n)
				if n > peak.Load() {
					peak.Store(n)
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	for i, obj := range objs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = g.Plan(context.Background(), obj)
		}()
	}
	wg.Wait()
	close(stop)
	assert.LessOrEqual(t, peak.Load(), gate.capacity)
	for i, obj := range objs {
		if strings.HasPrefix(obj.GetName(), "ok-") {
			assert.NoError(t, errs[i], obj.GetName())
			continue
		}
		var le *expr.LimitError
		if assert.True(t, errors.As(errs[i], &le), "%s: %.300v", obj.GetName(), errs[i]) {
			assert.Contains(t, errs[i].Error(), "Path", "names the definition field")
		}
	}
}

// availableOf is what the gate's semaphore has free (probed without blocking).
func availableOf(pg *planGate) int64 {
	lo, hi := int64(0), pg.capacity
	for lo < hi { // the largest n TryAcquire takes
		mid := (lo + hi + 1) / 2
		if pg.sem.TryAcquire(mid) {
			pg.sem.Release(mid)
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// hostileAppWrapperWith is an AppWrapper of one wrapped Job whose pod set path is path.
func hostileAppWrapperWith(name, path string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
		"metadata": map[string]any{"name": name, "namespace": "team-a", "uid": string(types.UID("uid-" + name)), "resourceVersion": "1"},
		"spec": map[string]any{"components": []any{map[string]any{
			"podSets": []any{map[string]any{"path": path, "replicas": int64(1)}},
			"template": map[string]any{"apiVersion": "batch/v1", "kind": "Job", "spec": map[string]any{
				"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "x"}}}}}},
		}}},
	}}
}

// hostileNIMService is a NIMService on KServe whose min-scale annotation has 1.4 M digits.
func hostileNIMService(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.nvidia.com/v1alpha1", "kind": "NIMService",
		"metadata": map[string]any{"name": name, "namespace": "team-b", "uid": "uid-" + name, "resourceVersion": "1"},
		"spec": map[string]any{
			"inferencePlatform": "kserve", "replicas": int64(1),
			"image":       map[string]any{"repository": "nvcr.io/nim/meta/llama3", "tag": "1.0"},
			"annotations": map[string]any{"autoscaling.knative.dev/min-scale": strings.Repeat("9", 1_400_000)},
		},
	}}
}
