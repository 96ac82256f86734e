package fairqueue

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func request(namespace, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}
}

// TestPopServesNamespacesInTurn: each namespace's items leave in the order they came, and the
// namespaces take turns, a namespace that runs out of items leaving the round.
func TestPopServesNamespacesInTurn(t *testing.T) {
	s := New(func(r reconcile.Request) string { return r.Namespace })
	for _, r := range []reconcile.Request{
		request("a", "1"), request("a", "2"), request("a", "3"), request("b", "1"), request("c", "1"),
		request("a", "4"), request("b", "2"),
	} {
		s.Push(r)
	}
	require.Equal(t, 7, s.Len())
	var got []string
	for s.Len() > 0 {
		r := s.Pop()
		got = append(got, r.Namespace+"/"+r.Name)
	}
	assert.Equal(t, []string{"a/1", "b/1", "c/1", "a/2", "b/2", "a/3", "a/4"}, got)
	assert.Empty(t, s.lanes, "a namespace without items keeps no lane")
	assert.Empty(t, s.turns)
}

// TestPushAfterDrainTakesLastTurn: a namespace whose lane emptied comes back behind the
// namespaces that still have items.
func TestPushAfterDrainTakesLastTurn(t *testing.T) {
	s := New(func(r reconcile.Request) string { return r.Namespace })
	s.Push(request("a", "1"))
	s.Push(request("b", "1"))
	s.Push(request("b", "2"))
	assert.Equal(t, request("a", "1"), s.Pop())
	s.Push(request("a", "2"))
	assert.Equal(t, request("b", "1"), s.Pop())
	assert.Equal(t, request("a", "2"), s.Pop())
	assert.Equal(t, request("b", "2"), s.Pop())
	assert.Zero(t, s.Len())
}

// TestByNamespaceQuietNamespaceNotBehindBacklog: through client-go's queue (what the controller
// runs), a pod of a quiet namespace enqueued after 10,000 pods of another namespace is the second
// request a worker gets, not the 10,001st; and the queue keeps client-go's rules: an item added
// twice is queued once, and an item added while a worker has it comes back only after Done.
func TestByNamespaceQuietNamespaceNotBehindBacklog(t *testing.T) {
	q := ByNamespace("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	for i := range 10_000 {
		q.Add(request("storm", fmt.Sprint("pod-", i)))
	}
	q.Add(request("storm", "pod-0")) // already queued
	q.Add(request("quiet", "pod-0"))
	require.Equal(t, 10_001, q.Len())

	first, _ := q.Get()
	assert.Equal(t, request("storm", "pod-0"), first)
	second, _ := q.Get()
	assert.Equal(t, request("quiet", "pod-0"), second)

	q.Add(first) // while a worker has it: dirty, not queued
	assert.Equal(t, 9_999, q.Len())
	q.Done(first)
	assert.Equal(t, 10_000, q.Len(), "re-added at Done")
	q.Done(second)
	third, _ := q.Get()
	assert.Equal(t, request("storm", "pod-1"), third)
}

// BenchmarkPushPop is the storage's cost per item (Push then Pop) against client-go's FIFO, with
// 100 namespaces of items queued.
func BenchmarkPushPop(b *testing.B) {
	reqs := make([]reconcile.Request, 10_000)
	for i := range reqs {
		reqs[i] = request(fmt.Sprint("ns-", i%100), fmt.Sprint("pod-", i))
	}
	for _, c := range []struct {
		name  string
		queue workqueue.Queue[reconcile.Request]
	}{
		{"fair", New(func(r reconcile.Request) string { return r.Namespace })},
		{"client-go-fifo", workqueue.DefaultQueue[reconcile.Request]()},
	} {
		b.Run(c.name, func(b *testing.B) {
			for _, r := range reqs[:1000] {
				c.queue.Push(r)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c.queue.Push(reqs[i%len(reqs)])
				c.queue.Pop()
				i++
			}
		})
	}
}
