// Package workloadevents writes one Event per workload and episode for a fact gangmap learns
// per pod (a pod labelled after creation, a pod a dry run would group), so that the Events a
// grouper writes scale with workloads, not pods: a workload of 1,000 pods the controller repairs
// gets one Event with the count, not 1,000. The per-pod facts stay in the logs and metrics of the
// caller.
//
// An episode of a workload begins with its first pod, takes every pod added while it lasts, and
// ends when no pod came for Quiet or when it is Longest old; its Event is written then, once,
// with the count of pods and the details (e.g. PodGroup names) they were added under. The next pod
// of the workload begins a new episode. Events go through the recorder, so client-go's correlator
// still applies (same object and reason: a repeat of the very same message is a PATCH of the
// count).
package workloadevents

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
)

// Defaults of an Aggregator's bounds.
const (
	// DefaultQuiet ends an episode when no pod came for 5 s: a workload's pods are created in a
	// burst and reconciled close together, also behind a client rate limit (the 10,000-pod
	// benchmark's queue holds a workload's ten pods within a second of each other).
	DefaultQuiet = 5 * time.Second
	// DefaultLongest ends an episode a minute after it began, so that a workload whose pods keep
	// coming gets an Event a minute (and a count) rather than none until they stop.
	DefaultLongest = time.Minute
	// DefaultMaxOpen bounds the episodes open at once (about 300 B each); past it the oldest is
	// written early.
	DefaultMaxOpen = 10000
	// maxDetails bounds the distinct details an episode keeps (a LeaderWorkerSet of 1,000 groups
	// has 1,000 PodGroups); the rest are counted as others.
	maxDetails = 8
	// maxSample is the number of pod names an episode keeps to name in its Event.
	maxSample = 3
)

// Aggregator turns the pods Added under their workloads into one Event per workload and episode.
// The zero value of Quiet, Longest and MaxOpen means their defaults. Safe for concurrent use.
type Aggregator struct {
	// Recorder writes the Events.
	Recorder record.EventRecorder
	// Type (corev1.EventTypeNormal or EventTypeWarning) and Reason of the Events.
	Type, Reason string
	// Message renders the Event of an episode that ended.
	Message func(*Episode) string
	// Quiet, Longest and MaxOpen bound an episode (see the package comment and the defaults).
	Quiet, Longest time.Duration
	MaxOpen        int

	mu   sync.Mutex
	open map[types.UID]*Episode
	// now and afterFunc are time.Now and time.AfterFunc, replaced in tests.
	now       func() time.Time
	afterFunc func(time.Duration, func()) (stop func() bool)
}

// Episode is what an Aggregator gathered for one workload between its first pod and its Event.
type Episode struct {
	// Workload is the workload's identity (apiVersion, kind, namespace, name, UID): the Event's
	// object.
	Workload *unstructured.Unstructured
	// Pods is the number of pods added (each Add counts one).
	Pods int
	// Sample holds the names of the first pods added (at most 3).
	Sample []string
	// Details counts the pods by the detail they were added with (at most 8 distinct details;
	// OtherDetails counts the pods of the others). An empty detail is not counted.
	Details      map[string]int
	OtherDetails int
	// Started and Last are when the first and the latest pod were added.
	Started, Last time.Time

	stop func() bool
}

// Add counts pod under workload's current episode, with detail (e.g. the PodGroup the pod
// joined; "" for none), beginning an episode when the workload has none. Only workload's identity
// is kept (not the object).
func (a *Aggregator) Add(workload *unstructured.Unstructured, pod, detail string) {
	uid := workload.GetUID()
	a.mu.Lock()
	a.init()
	e, ok := a.open[uid]
	var evicted *Episode
	if !ok {
		evicted = a.evictOldestLocked()
		e = &Episode{Workload: Identity(workload), Started: a.now(), Details: map[string]int{}}
		a.open[uid] = e
		e.stop = a.afterFunc(a.Quiet, func() { a.expire(uid, e) })
	}
	e.Pods++
	e.Last = a.now()
	if len(e.Sample) < maxSample {
		e.Sample = append(e.Sample, pod)
	}
	if detail != "" {
		if _, known := e.Details[detail]; known || len(e.Details) < maxDetails {
			e.Details[detail]++
		} else {
			e.OtherDetails++
		}
	}
	a.mu.Unlock()
	a.write(evicted)
}

// Flush ends every open episode now and writes their Events (for a stop, and for tests).
func (a *Aggregator) Flush() {
	a.mu.Lock()
	a.init()
	ended := make([]*Episode, 0, len(a.open))
	for uid, e := range a.open {
		e.stop()
		delete(a.open, uid)
		ended = append(ended, e)
	}
	a.mu.Unlock()
	sort.Slice(ended, func(i, j int) bool { return ended[i].Started.Before(ended[j].Started) })
	for _, e := range ended {
		a.write(e)
	}
}

// expire is the timer of episode e of uid: it ends e when it has been quiet for Quiet or is
// Longest old, else waits again until the earlier of the two.
func (a *Aggregator) expire(uid types.UID, e *Episode) {
	a.mu.Lock()
	if a.open[uid] != e {
		a.mu.Unlock()
		return // ended already (flushed, evicted)
	}
	now := a.now()
	end := e.Last.Add(a.Quiet)
	if longest := e.Started.Add(a.Longest); longest.Before(end) {
		end = longest
	}
	if now.Before(end) {
		e.stop = a.afterFunc(end.Sub(now), func() { a.expire(uid, e) })
		a.mu.Unlock()
		return
	}
	delete(a.open, uid)
	a.mu.Unlock()
	a.write(e)
}

// evictOldestLocked removes and returns the oldest open episode when MaxOpen are open, else nil.
func (a *Aggregator) evictOldestLocked() *Episode {
	if len(a.open) < a.MaxOpen {
		return nil
	}
	var oldest *Episode
	var oldestUID types.UID
	for uid, e := range a.open {
		if oldest == nil || e.Started.Before(oldest.Started) {
			oldest, oldestUID = e, uid
		}
	}
	oldest.stop()
	delete(a.open, oldestUID)
	return oldest
}

// write records the Event of the ended episode e (nil: nothing).
func (a *Aggregator) write(e *Episode) {
	if e == nil {
		return
	}
	a.Recorder.Event(e.Workload, a.Type, a.Reason, a.Message(e))
}

// init makes the map of open episodes and sets the zero bounds to their defaults, at the first
// Add or Flush.
func (a *Aggregator) init() {
	if a.open != nil {
		return
	}
	a.open = map[types.UID]*Episode{}
	if a.now == nil {
		a.now = time.Now
	}
	if a.afterFunc == nil {
		a.afterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	a.Quiet, a.Longest = cmp.Or(max(a.Quiet, 0), DefaultQuiet), cmp.Or(max(a.Longest, 0), DefaultLongest)
	a.MaxOpen = cmp.Or(max(a.MaxOpen, 0), DefaultMaxOpen)
}

// DetailList renders the episode's details, each after its count of pods, by count then detail:
// details phrased as what a pod did ("joined PodGroup a") read "7 joined PodGroup a, 3 moved
// from PodGroup b to a"; ", and N more" counts the pods of the details not kept; "" when none.
func (e *Episode) DetailList() string {
	keys := slices.SortedFunc(maps.Keys(e.Details), func(a, b string) int {
		return cmp.Or(cmp.Compare(e.Details[b], e.Details[a]), strings.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", e.Details[k], k)
	}
	s := strings.Join(parts, ", ")
	if e.OtherDetails > 0 {
		s += fmt.Sprintf(", and %d more", e.OtherDetails)
	}
	return s
}

// SampleList renders the sample of pod names, with "and N more" when the episode counted more.
func (e *Episode) SampleList() string {
	s := strings.Join(e.Sample, ", ")
	if more := e.Pods - len(e.Sample); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// Identity is a new object with only u's apiVersion, kind, namespace, name and UID: what an
// Event's involvedObject records.
func Identity(u *unstructured.Unstructured) *unstructured.Unstructured {
	id := &unstructured.Unstructured{Object: make(map[string]any, 3)}
	id.SetAPIVersion(u.GetAPIVersion())
	id.SetKind(u.GetKind())
	id.SetNamespace(u.GetNamespace())
	id.SetName(u.GetName())
	id.SetUID(u.GetUID())
	return id
}
