// Package fairqueue is the pod controller's work queue: first in, first out within a namespace
// and round robin across namespaces, so that what one namespace enqueues by the thousand (every
// pod of a 30,000-pod workload at each patch of its annotations, each in-flight regroup) never
// stands in front of another namespace's pods. One namespace's backlog delays another
// namespace's next pod by at most one reconcile per worker, not by the length of the backlog.
//
// It is client-go's work queue (dirty and processing sets, rate limiting, delays, metrics) with
// its storage replaced (workqueue.TypedQueueConfig.Queue); only the order of Pop is gangmap's.
package fairqueue

import (
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Storage is a workqueue.Queue of T: one FIFO lane per key (a namespace), the lanes served in
// turn. client-go calls it under its queue's lock, so it needs none of its own. A lane lives
// while it holds an item: memory is the items plus one lane per key that has items.
type Storage[T comparable] struct {
	key   func(T) string
	lanes map[string]*lane[T]
	// turns are the lanes that hold items, the next to be served first.
	turns []*lane[T]
	n     int
}

var _ workqueue.Queue[reconcile.Request] = (*Storage[reconcile.Request])(nil)

// lane is one key's items, oldest first.
type lane[T comparable] struct {
	key   string
	items []T
}

// New returns an empty Storage whose lanes are keyed by key.
func New[T comparable](key func(T) string) *Storage[T] {
	return &Storage[T]{key: key, lanes: map[string]*lane[T]{}}
}

// Touch is called when a queued item is added again: it keeps its place (as client-go's FIFO).
func (s *Storage[T]) Touch(T) {}

// Push appends item to its key's lane; a key without items takes the last turn.
func (s *Storage[T]) Push(item T) {
	k := s.key(item)
	l := s.lanes[k]
	if l == nil {
		l = &lane[T]{key: k}
		s.lanes[k] = l
		s.turns = append(s.turns, l)
	}
	l.items = append(l.items, item)
	s.n++
}

// Len is the number of items of every lane.
func (s *Storage[T]) Len() int { return s.n }

// Pop takes the oldest item of the lane whose turn it is; the lane, if it still holds items,
// takes the last turn. client-go calls Pop only when Len is above zero.
func (s *Storage[T]) Pop() T {
	l := s.turns[0]
	s.turns[0] = nil
	s.turns = s.turns[1:]
	item := l.items[0]
	var zero T
	l.items[0] = zero
	l.items = l.items[1:]
	s.n--
	if len(l.items) > 0 {
		s.turns = append(s.turns, l)
	} else {
		delete(s.lanes, l.key)
	}
	return item
}

// NewRateLimiting is client-go's rate-limiting queue of T, named name for its metrics
// (workqueue_depth{name=...}), whose storage serves the lanes of key (a namespace) in turn.
func NewRateLimiting[T comparable](name string, rateLimiter workqueue.TypedRateLimiter[T], key func(T) string) workqueue.TypedRateLimitingInterface[T] {
	queue := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{Name: name, Queue: New(key)})
	return workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter, workqueue.TypedRateLimitingQueueConfig[T]{
		Name:          name,
		DelayingQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[T]{Name: name, Queue: queue}),
	})
}

// ByNamespace is a controller-runtime controller's queue (controller.Options.NewQueue):
// NewRateLimiting with the requests' namespaces as lanes.
func ByNamespace(name string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return NewRateLimiting(name, rateLimiter, func(r reconcile.Request) string { return r.Namespace })
}
