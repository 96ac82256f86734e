package app

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testclock "k8s.io/utils/clock/testing"

	"github.com/gangmap/gangmap/internal/heapmeasure"
)

// workloadEvent is the PodGroupCreated Event of the scale benchmark's CustomJob number w, as
// client-go's recorder makes it, at time now.
func workloadEvent(w int, now time.Time) *corev1.Event {
	ref := corev1.ObjectReference{Kind: "CustomJob", Namespace: "scale", Name: fmt.Sprintf("w%05d", w),
		UID: types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", w, w)), APIVersion: "e2e.example.com/v1", ResourceVersion: fmt.Sprint(100000 + w)}
	t := metav1.NewTime(now)
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%v.%x", ref.Name, now.UnixNano()+int64(w)), Namespace: ref.Namespace},
		InvolvedObject: ref, Reason: "PodGroupCreated", Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "gangmap-podgrouper"},
		Message:        fmt.Sprintf("created PodGroup pg-w%05d-0123456789: minSubGroup 2, coordinator minMember 1, worker minMember 9, 10 GPUs", w),
		FirstTimestamp: t, LastTimestamp: t, Count: 1}
}

// correlate passes the Event through the correlator as the broadcaster's sink does, the API
// server's answer (a resource version) recorded after a write.
func correlate(tb testing.TB, c *record.EventCorrelator, ev *corev1.Event) *record.EventCorrelateResult {
	tb.Helper()
	r, err := c.EventCorrelate(ev)
	if err != nil {
		tb.Fatal(err)
	}
	if !r.Skip {
		written := r.Event.DeepCopy()
		written.ResourceVersion = "500000"
		c.UpdateState(written)
	}
	return r
}

// BenchmarkEventCorrelatorBytes measures the live heap of the Events' correlator once 10,000
// workloads have had their PodGroupCreated Event (more than the caches hold: they are full),
// with client-go's default caches (controller-runtime's recorder) and with the grouper's
// (correlation: eventCacheSize entries).
func BenchmarkEventCorrelatorBytes(b *testing.B) {
	for _, c := range []struct {
		name string
		o    record.CorrelatorOptions
	}{{"client-go-default", record.CorrelatorOptions{}}, {"gangmap", correlation}} {
		b.Run(c.name, func(b *testing.B) {
			const n = 10_000
			for range b.N {
				before := heapmeasure.Live()
				corr := record.NewEventCorrelatorWithOptions(c.o)
				now := time.Now()
				for w := range n {
					correlate(b, corr, workloadEvent(w, now))
				}
				b.ReportMetric(float64(heapmeasure.Live()-before)/(1<<20), "MiB")
				runtime.KeepAlive(corr)
			}
		})
	}
}

// The grouper's correlator keeps client-go's rules (correlation changes only the caches' size):
// an identical Event is a count (a patch), the 10th similar one in 10 minutes is combined, an
// object's 26th Event in a burst is dropped; they hold across fewer than eventCacheSize other
// objects' Events, and an object evicted by more starts again.
func TestCorrelationKeepsClientGosRules(t *testing.T) {
	now := time.Unix(1764590000, 0)
	clock := testclock.NewFakeClock(now)
	o := correlation
	o.Clock = clock
	c := record.NewEventCorrelatorWithOptions(o)
	others := 0
	noise := func(n int) { // other objects' Events
		for range n {
			others++
			correlate(t, c, workloadEvent(1000+others, now))
		}
	}

	first := correlate(t, c, workloadEvent(1, now))
	assert.Nil(t, first.Patch)
	noise(eventCacheSize - 10)
	again := correlate(t, c, workloadEvent(1, now))
	assert.Equal(t, int32(2), again.Event.Count, "an identical Event is counted")
	assert.NotNil(t, again.Patch, "and written as a patch of the first")

	similar := func(i int) *corev1.Event {
		ev := workloadEvent(2, now)
		ev.Reason, ev.Message = "Repaired", fmt.Sprintf("pod %d repaired", i)
		return ev
	}
	for i := range 9 {
		r := correlate(t, c, similar(i))
		require.False(t, r.Skip)
		require.Equal(t, fmt.Sprintf("pod %d repaired", i), r.Event.Message)
		noise(100)
	}
	combined := correlate(t, c, similar(9))
	assert.True(t, strings.HasPrefix(combined.Event.Message, "(combined from similar events)"), combined.Event.Message)

	spam := func(i int) *record.EventCorrelateResult {
		ev := workloadEvent(3, now)
		ev.Reason, ev.Message = fmt.Sprintf("Reason%d", i), fmt.Sprintf("message %d", i)
		return correlate(t, c, ev)
	}
	for i := range 25 {
		require.False(t, spam(i).Skip, "Event %d of the burst", i)
	}
	noise(eventCacheSize - 10)
	assert.True(t, spam(25).Skip, "the 26th Event of an object is dropped")
	noise(eventCacheSize + 10)
	assert.False(t, spam(26).Skip, "evicted by eventCacheSize other objects: a full burst again")
}

// The grouper's recorders write Events through the sink with their component as the source,
// once the first Event is recorded; after the manager stops, an Event is dropped.
func TestEventsRecordThroughTheSink(t *testing.T) {
	cs := fake.NewClientset()
	ev := &events{sink: cs.CoreV1().Events(""), scheme: Scheme(), log: logr.Discard()}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- ev.Start(ctx) }()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u"}}
	pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	ev.For("gangmap-test").Eventf(pod, corev1.EventTypeWarning, "Repaired", "pod %s repaired", pod.Name)
	var got []corev1.Event
	require.Eventually(t, func() bool {
		list, err := cs.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		got = list.Items
		return len(got) == 1
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, "gangmap-test", got[0].Source.Component)
	assert.Equal(t, "Repaired", got[0].Reason)
	assert.Equal(t, "pod p repaired", got[0].Message)
	assert.Equal(t, "p", got[0].InvolvedObject.Name)

	cancel()
	require.NoError(t, <-stopped)
	ev.For("gangmap-late").Event(pod, corev1.EventTypeNormal, "Late", "after the stop")
	assert.Nil(t, ev.get(), "no broadcaster after the stop")
}
