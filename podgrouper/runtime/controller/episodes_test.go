package controller

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// clock is a fake time: timers fire when Advance passes their deadline.
type clock struct {
	mu     sync.Mutex
	t      time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) afterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.t.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// advance moves the clock by d, firing every due timer in deadline order (also those armed by a
// timer that fired).
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	end := c.t.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var due *fakeTimer
		for i, t := range c.timers {
			if !t.stopped && !t.at.After(end) {
				due = t
				c.timers = append(c.timers[:i:i], c.timers[i+1:]...)
				break
			}
		}
		if due == nil {
			c.t = end
			c.mu.Unlock()
			return
		}
		c.t = due.at
		c.mu.Unlock()
		due.f()
	}
}

// recordedEvent is one Event the episodeRecorder got.
type recordedEvent struct {
	object       string
	typ, reason  string
	message      string
	involvedKind string
}

// episodeRecorder keeps the Events (record.EventRecorder).
type episodeRecorder struct {
	mu     sync.Mutex
	events []recordedEvent
}

func (r *episodeRecorder) Event(o runtime.Object, typ, reason, msg string) {
	u := o.(*unstructured.Unstructured)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, recordedEvent{object: u.GetNamespace() + "/" + u.GetName(), typ: typ, reason: reason, message: msg, involvedKind: u.GetKind()})
}
func (r *episodeRecorder) Eventf(o runtime.Object, typ, reason, f string, args ...any) {
	r.Event(o, typ, reason, fmt.Sprintf(f, args...))
}
func (r *episodeRecorder) AnnotatedEventf(o runtime.Object, _ map[string]string, typ, reason, f string, args ...any) {
	r.Eventf(o, typ, reason, f, args...)
}

func (r *episodeRecorder) all() []recordedEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recordedEvent(nil), r.events...)
}

func episodeWorkload(name string) *unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetAPIVersion("e2e.example.com/v1")
	w.SetKind("CustomJob")
	w.SetNamespace("ns")
	w.SetName(name)
	w.SetUID(types.UID("uid-" + name))
	w.SetLabels(map[string]string{"big": "not kept"})
	return w
}

func newAggregator(rec *episodeRecorder, c *clock) *aggregator {
	a := &aggregator{recorder: rec, typ: corev1.EventTypeWarning, reason: "Test",
		message: func(e *episode) string {
			return fmt.Sprintf("%d pods: %s; %s", e.Pods, e.SampleList(), e.DetailList())
		}}
	a.now, a.afterFunc = c.now, c.afterFunc
	return a
}

// TestOneEventPerWorkloadEpisode: 100 workloads of 10 pods each added in turn (as a controller
// reconciles them, interleaved) give 100 Events, one per workload, each with its 10 pods, once
// the workloads were quiet for Quiet; nothing is written before.
func TestOneEventPerWorkloadEpisode(t *testing.T) {
	rec, c := &episodeRecorder{}, &clock{t: time.Unix(1000, 0)}
	a := newAggregator(rec, c)
	for p := 0; p < 10; p++ {
		for w := 0; w < 100; w++ {
			a.add(episodeWorkload(fmt.Sprintf("w%03d", w)), fmt.Sprintf("w%03d-%d", w, p), fmt.Sprintf("joined pg-w%03d", w))
		}
		c.advance(100 * time.Millisecond)
	}
	assert.Empty(t, rec.all(), "no Event while the episodes last")
	assert.Equal(t, 100, openEpisodes(a))
	c.advance(EpisodeQuiet)
	events := rec.all()
	require.Len(t, events, 100)
	assert.Equal(t, 0, openEpisodes(a))
	seen := map[string]bool{}
	for _, e := range events {
		name := e.object[len("ns/"):]
		assert.False(t, seen[name], "one Event per workload: %s", name)
		seen[name] = true
		assert.Equal(t, "CustomJob", e.involvedKind)
		assert.Equal(t, corev1.EventTypeWarning, e.typ)
		assert.Equal(t, "Test", e.reason)
		assert.Equal(t, fmt.Sprintf("10 pods: %s-0, %s-1, %s-2 and 7 more; 10 joined pg-%s", name, name, name, name), e.message)
	}
}

// TestEpisodeEndsQuietOrLongest: pods that keep coming less than Quiet apart end the episode when
// it is Longest old; the next pod begins another, which ends Quiet after its last pod.
func TestEpisodeEndsQuietOrLongest(t *testing.T) {
	rec, c := &episodeRecorder{}, &clock{t: time.Unix(1000, 0)}
	a := newAggregator(rec, c)
	a.quiet, a.longest = 5*time.Second, 20*time.Second
	w := episodeWorkload("train")
	for i := 0; i < 6; i++ { // pods at 0, 4, 8, 12, 16, 20 s
		a.add(w, fmt.Sprintf("p%d", i), "")
		c.advance(4 * time.Second)
	}
	// The timer fires at 20 s, Longest after the first pod, before the pod of 20 s is added: the
	// first episode has the five pods of 0-16 s, the second the pod of 20 s, written at 25 s.
	events := rec.all()
	require.Len(t, events, 1, "the first episode ended when it was Longest old")
	assert.Equal(t, "5 pods: p0, p1, p2 and 2 more; ", events[0].message)
	c.advance(time.Minute)
	events = rec.all()
	require.Len(t, events, 2)
	assert.Equal(t, "1 pods: p5; ", events[1].message)
}

// TestDetailsBounded: an episode keeps 8 distinct details and counts the pods of the rest.
func TestDetailsBounded(t *testing.T) {
	rec, c := &episodeRecorder{}, &clock{t: time.Unix(1000, 0)}
	a := newAggregator(rec, c)
	w := episodeWorkload("lws")
	for g := 0; g < 20; g++ {
		for p := 0; p < 2; p++ {
			a.add(w, fmt.Sprintf("g%02d-%d", g, p), fmt.Sprintf("in pg-%02d", g))
		}
	}
	a.flush()
	events := rec.all()
	require.Len(t, events, 1)
	assert.Equal(t, "40 pods: g00-0, g00-1, g01-0 and 37 more; 2 in pg-00, 2 in pg-01, 2 in pg-02, 2 in pg-03, 2 in pg-04, 2 in pg-05, 2 in pg-06, 2 in pg-07, and 24 more", events[0].message)
}

// TestMaxOpenWritesOldestEarly: with MaxOpen episodes open, a new workload's first pod ends the
// oldest episode at once.
func TestMaxOpenWritesOldestEarly(t *testing.T) {
	rec, c := &episodeRecorder{}, &clock{t: time.Unix(1000, 0)}
	a := newAggregator(rec, c)
	a.maxOpen = 3
	for i := 0; i < 5; i++ {
		a.add(episodeWorkload(fmt.Sprintf("w%d", i)), fmt.Sprintf("w%d-0", i), "")
		c.advance(time.Millisecond)
	}
	events := rec.all()
	require.Len(t, events, 2)
	assert.Equal(t, "ns/w0", events[0].object)
	assert.Equal(t, "ns/w1", events[1].object)
	assert.Equal(t, 3, openEpisodes(a))
	c.advance(EpisodeQuiet)
	assert.Len(t, rec.all(), 5)
}

// TestConcurrentAdds: pods added from many goroutines (reconcile workers) are each counted once,
// with the real clock (-race).
func TestConcurrentAdds(t *testing.T) {
	rec := &episodeRecorder{}
	a := &aggregator{recorder: rec, typ: corev1.EventTypeNormal, reason: "Test", quiet: time.Hour,
		message: func(e *episode) string { return fmt.Sprint(e.Pods) }}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := 0; p < 100; p++ {
				a.add(episodeWorkload(fmt.Sprintf("w%d", p%10)), fmt.Sprintf("p%d-%d", g, p), "")
			}
		}()
	}
	wg.Wait()
	a.flush()
	events := rec.all()
	require.Len(t, events, 10)
	for _, e := range events {
		assert.Equal(t, "80", e.message, e.object)
	}
}

// openEpisodes is the number of episodes open now.
func openEpisodes(a *aggregator) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.open)
}
