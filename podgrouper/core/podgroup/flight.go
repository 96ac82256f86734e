package podgroup

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// createFlights makes Applier's creation of a PodGroup single-flight per PodGroup key: the pods
// of a workload are reconciled by several workers at once, each read "no PodGroup" from the cache
// and each POSTed it, all but one answered 409 AlreadyExists and requeued (about one 409 per
// workload in the 100,000-pod run). Now the first caller creates and the others wait for its
// result: when it sent a PodGroup equal to what they would send (podGroupsEqual), they return
// Unchanged; otherwise they return AlreadyExists without a request (the caller requeues and
// reads again, as after the 409 before); when its create failed they create on their own.
//
// Once cache events are wired (Applier.CacheEvents), a successful create is also remembered
// until the cache shows the PodGroup (its add, update or delete event, or a Get that finds it),
// so that callers reading the cache in that lag get the same answer instead of a 409; at most
// createdTTL, after which a caller creates again. Memory: one entry per create in flight (at most
// the concurrent callers) plus the remembered creates, bounded by maxRemembered (beyond it the
// oldest answer is not kept: a caller then meets a 409, as before). Without cache events nothing
// outlives its flight, so a PodGroup deleted right after its creation is never taken for present.
type createFlights struct {
	mu       sync.Mutex
	m        map[types.NamespacedName]*createFlight
	remember bool
	// now is time.Now; tests set it.
	now func() time.Time
}

// createFlight is one create of a PodGroup: done closes when it ended; created is the PodGroup
// the create sent (nil: it failed), ended when; seen says the cache showed the key during the
// flight, so the answer is not remembered after it; followers counts the callers that joined it.
type createFlight struct {
	done      chan struct{}
	created   *v2alpha2.PodGroup
	ended     time.Time
	seen      bool
	followers int
}

const (
	// createdTTL bounds how long a successful create answers for the cache (see createFlights).
	createdTTL = 10 * time.Second
	// maxRemembered bounds the creates remembered after their flight.
	maxRemembered = 1024
)

// join returns the flight for key that the caller follows (leader false: a create in flight, or
// a remembered successful one), else a new flight the caller leads.
func (f *createFlights) join(key types.NamespacedName) (fl *createFlight, leader bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[types.NamespacedName]*createFlight{}
	}
	if cur, ok := f.m[key]; ok {
		if cur.ended.IsZero() || (cur.created != nil && clockOf(f.now).Sub(cur.ended) < createdTTL) {
			cur.followers++
			return cur, false
		}
	}
	fl = &createFlight{done: make(chan struct{})}
	f.m[key] = fl
	return fl, true
}

// finish ends the flight fl of key with created, the PodGroup sent (nil: the create failed), and
// wakes its followers.
func (f *createFlights) finish(key types.NamespacedName, fl *createFlight, created *v2alpha2.PodGroup) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl.created, fl.ended = created, clockOf(f.now)
	close(fl.done)
	if f.m[key] != fl {
		return
	}
	if created == nil || fl.seen || !f.remember {
		delete(f.m, key)
		return
	}
	if len(f.m) > maxRemembered {
		for k, o := range f.m {
			if !o.ended.IsZero() && k != key {
				delete(f.m, k)
			}
		}
	}
}

// seen forgets the remembered create of key (the cache shows it now), or marks the one in flight
// so that it is not remembered.
func (f *createFlights) seen(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur, ok := f.m[key]; ok && cur.ended.IsZero() {
		cur.seen = true
	} else {
		delete(f.m, key)
	}
}

// create creates desired, single-flight per key (see createFlights).
func (a *Applier) create(ctx context.Context, desired *v2alpha2.PodGroup) (Result, error) {
	key := types.NamespacedName{Namespace: desired.Namespace, Name: desired.Name}
	for {
		fl, leader := a.flights.join(key)
		if leader {
			return a.lead(ctx, key, fl, desired)
		}
		select {
		case <-fl.done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if fl.created == nil {
			continue // the leader's create failed: try on our own
		}
		if podGroupsEqual(fl.created, desired) {
			return Unchanged, nil
		}
		return "", apierrors.NewAlreadyExists(v2alpha2.GroupResource(v2alpha2.Resource), desired.Name)
	}
}

// lead POSTs desired for the flight fl of key and ends the flight with its result, also when
// the POST panics (the flight's followers then create on their own instead of waiting forever).
func (a *Applier) lead(ctx context.Context, key types.NamespacedName, fl *createFlight, desired *v2alpha2.PodGroup) (Result, error) {
	// What is sent, before the client overwrites desired with what the server stored (defaults,
	// metadata): the others compare what they would send.
	sent := desired.DeepCopy()
	var created *v2alpha2.PodGroup // nil: the POST failed or panicked (the panic goes on)
	defer func() { a.flights.finish(key, fl, created) }()
	if err := a.Client.Create(ctx, desired); err != nil {
		return "", err
	}
	created = sent
	return Created, nil
}

// CacheEvents returns the function to call with each PodGroup the informer of the cache Client
// reads PodGroups from adds, updates or deletes: each tells Apply that the cache shows it (or its
// deletion), so a create is remembered until then (see Apply). Call it before Apply is first
// called; the runtime adds it to the informer (controller.WatchPodGroupCache).
func (a *Applier) CacheEvents() func(*v2alpha2.PodGroup) {
	a.flights.mu.Lock()
	a.flights.remember = true
	a.flights.mu.Unlock()
	return func(pg *v2alpha2.PodGroup) {
		a.flights.seen(types.NamespacedName{Namespace: pg.Namespace, Name: pg.Name})
	}
}
