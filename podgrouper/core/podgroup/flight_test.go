package podgroup

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// lagging is a cache that has not seen any PodGroup yet (every Get of a PodGroup is NotFound)
// until caught is set; gets counts the Gets of PodGroups.
type lagging struct {
	caught atomic.Bool
	gets   atomic.Int32
}

func (l *lagging) get(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*v2alpha2.PodGroup); ok {
		l.gets.Add(1)
		if !l.caught.Load() {
			return apierrors.NewNotFound(schema.GroupResource{Group: v2alpha2.SchemeGroupVersion.Group, Resource: "podgroups"}, key.Name)
		}
	}
	return c.Get(ctx, key, obj, opts...)
}

// followers is the number of callers waiting for the create of obj in flight.
func followers(a *Applier, obj client.Object) int {
	a.flights.mu.Lock()
	defer a.flights.mu.Unlock()
	if fl := a.flights.m[client.ObjectKeyFromObject(obj)]; fl != nil {
		return fl.followers
	}
	return 0
}

// stored reads the PodGroup of md from the API server behind the lagging cache l.
func (l *lagging) stored(t *testing.T, c client.Client, md *Metadata) *v2alpha2.PodGroup {
	t.Helper()
	was := l.caught.Swap(true)
	defer l.caught.Store(was)
	return getPodGroup(t, c, md)
}

// applyAll runs n Applies of md at once and returns their results and errors.
func applyAll(a *Applier, n int) ([]Result, []error) {
	res, errs := make([]Result, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { res[i], errs[i] = a.Apply(context.Background(), karta()) })
	}
	wg.Wait()
	return res, errs
}

// Eight workers reconciling pods of one workload at once, none of which finds the PodGroup in
// the cache: one POST (the first caller's), the others wait for it and return Unchanged; none
// gets a 409.
func TestConcurrentCreatesPostOnce(t *testing.T) {
	const n = 8
	cache := &lagging{}
	var a *Applier
	var first atomic.Bool
	a, c, w := newApplier(t, interceptor.Funcs{Get: cache.get,
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			// Hold the first POST until every other caller has joined the flight (each does: it
			// finds no PodGroup in the lagging cache and the flight in progress), however long a
			// loaded machine takes to start them; the test's own timeout bounds a bug.
			for !first.Load() && followers(a, obj) < n-1 {
				time.Sleep(time.Millisecond)
			}
			first.Store(true)
			return c.Create(ctx, obj, opts...)
		}})
	res, errs := applyAll(a, n)
	for _, err := range errs {
		require.NoError(t, err)
	}
	counts := map[Result]int{}
	for _, r := range res {
		counts[r]++
	}
	assert.Equal(t, map[Result]int{Created: 1, Unchanged: n - 1}, counts)
	assert.Equal(t, int32(1), w.creates.Load(), "one POST")
	assert.Equal(t, int32(n), cache.gets.Load())
	assert.Equal(t, "team-a", cache.stored(t, c, karta()).Spec.Queue)
	assert.Empty(t, a.flights.m, "without cache events nothing outlives its flight")

	// Without cache events a caller after the flight POSTs (and meets the 409, as before).
	_, err := a.Apply(context.Background(), karta())
	assert.True(t, apierrors.IsAlreadyExists(err), "got %v", err)
	assert.Equal(t, int32(2), w.creates.Load())
}

// With cache events wired, a create is remembered until the cache shows the PodGroup: a caller
// in the lag sends nothing (Unchanged when it wants the same PodGroup, AlreadyExists otherwise);
// once the cache's event came, or after createdTTL, a caller creates again (the PodGroup may
// have been deleted).
func TestCreateRememberedUntilTheCacheShowsIt(t *testing.T) {
	ctx := context.Background()
	cache := &lagging{}
	a, c, w := newApplier(t, interceptor.Funcs{Get: cache.get})
	events := a.CacheEvents()
	now := time.Unix(1764590000, 0)
	a.flights.now = func() time.Time { return now }

	res, err := a.Apply(ctx, karta())
	require.NoError(t, err)
	require.Equal(t, Created, res)
	res, err = a.Apply(ctx, karta())
	require.NoError(t, err)
	assert.Equal(t, Unchanged, res, "the cache lags: the create answers")
	changed := karta()
	changed.Annotations["gangmap.io/gpus"] = "16"
	_, err = a.Apply(ctx, changed)
	assert.True(t, apierrors.IsAlreadyExists(err), "a different PodGroup is read again later: %v", err)
	assert.Equal(t, int32(1), w.creates.Load())

	// The cache's add event: the answer is dropped; the PodGroup deleted since is created again.
	events(cache.stored(t, c, karta()))
	assert.Empty(t, a.flights.m)
	require.NoError(t, c.Delete(ctx, cache.stored(t, c, karta())))
	res, err = a.Apply(ctx, karta())
	require.NoError(t, err)
	assert.Equal(t, Created, res)
	assert.Equal(t, int32(2), w.creates.Load())

	// No event within createdTTL: a caller creates again.
	require.NoError(t, c.Delete(ctx, cache.stored(t, c, karta())))
	now = now.Add(createdTTL)
	res, err = a.Apply(ctx, karta())
	require.NoError(t, err)
	assert.Equal(t, Created, res)
	assert.Equal(t, int32(3), w.creates.Load())

	// A Get that finds the PodGroup drops the answer too.
	cache.caught.Store(true)
	res, err = a.Apply(ctx, karta())
	require.NoError(t, err)
	assert.Equal(t, Unchanged, res)
	assert.Empty(t, a.flights.m)
}

// When the first caller's POST fails, the waiting callers do not take its failure for theirs:
// the next one POSTs on its own.
func TestFailedCreateIsNotShared(t *testing.T) {
	cache := &lagging{}
	var calls atomic.Int32
	var a *Applier
	a, _, w := newApplier(t, interceptor.Funcs{Get: cache.get,
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if calls.Add(1) == 1 {
				for followers(a, obj) < 1 {
					time.Sleep(time.Millisecond)
				}
				return apierrors.NewServiceUnavailable("etcd is away")
			}
			return c.Create(ctx, obj, opts...)
		}})
	res, errs := applyAll(a, 2)
	assert.ElementsMatch(t, []Result{"", Created}, res)
	failed := errors.Join(errs...)
	assert.True(t, apierrors.IsServiceUnavailable(failed), "got %v", failed)
	assert.Equal(t, int32(2), w.creates.Load())
}

// A first caller whose POST panics (controller-runtime recovers a reconcile's panic and goes on)
// does not leave its flight open: the next caller of the PodGroup creates it instead of waiting
// for an answer that never comes (a reconcile's context has no deadline: it would wait forever,
// and so would every worker that reconciles a pod of the workload).
func TestPanickedCreateIsNotWaitedFor(t *testing.T) {
	cache := &lagging{}
	var calls atomic.Int32
	a, _, w := newApplier(t, interceptor.Funcs{Get: cache.get,
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if calls.Add(1) == 1 {
				panic("the client broke")
			}
			return c.Create(ctx, obj, opts...)
		}})
	func() {
		defer func() { assert.Equal(t, "the client broke", recover()) }()
		_, _ = a.Apply(context.Background(), karta())
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := a.Apply(ctx, karta())
	require.NoError(t, err)
	assert.Equal(t, Created, res)
	assert.Equal(t, int32(2), w.creates.Load())
	assert.Empty(t, a.flights.m)
}

// KAI's pod-grouper created the PodGroup first: the first caller's POST meets the 409, and so does
// each waiting caller's own (as before the single flight): every caller returns AlreadyExists (the
// reconciler requeues and reads again), none hangs, and nothing stays in the flights. A waiting
// caller whose context ends returns its error and leaves nothing behind either.
func TestConflictingCreateReachesEveryCaller(t *testing.T) {
	const n = 4
	cache := &lagging{}
	var a *Applier
	var calls atomic.Int32
	a, _, w := newApplier(t, interceptor.Funcs{Get: cache.get,
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			first := calls.Add(1) == 1
			for deadline := time.Now().Add(10 * time.Second); first && followers(a, obj) < n-1 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			return apierrors.NewAlreadyExists(schema.GroupResource{Group: v2alpha2.SchemeGroupVersion.Group, Resource: "podgroups"}, obj.GetName())
		}})
	a.CacheEvents()
	_, errs := applyAll(a, n)
	for _, err := range errs {
		assert.True(t, apierrors.IsAlreadyExists(err), "got %v", err)
	}
	assert.Equal(t, int32(n), w.creates.Load(), "each caller's own POST, one after the other")
	assert.Empty(t, a.flights.m)

	// A waiting caller whose context ends.
	release := make(chan struct{})
	b, _, _ := newApplier(t, interceptor.Funcs{Get: cache.get,
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			<-release
			return c.Create(ctx, obj, opts...)
		}})
	b.CacheEvents()
	done := make(chan error)
	go func() { _, err := b.Apply(context.Background(), karta()); done <- err }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b.flights.mu.Lock()
		started := len(b.flights.m) == 1
		b.flights.mu.Unlock()
		if started {
			break
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.Apply(ctx, karta())
	assert.ErrorIs(t, err, context.Canceled)
	close(release)
	require.NoError(t, <-done)
	cache.caught.Store(true)
	res, err := b.Apply(context.Background(), karta())
	require.NoError(t, err)
	assert.Equal(t, Unchanged, res)
	assert.Empty(t, b.flights.m, "the Get that found the PodGroup dropped the remembered create")
}

// Rounds of concurrent Applies of one PodGroup against a lagging cache, with POSTs that succeed,
// fail (503), panic or are slow, and callers whose context is cancelled before or while they
// wait: every caller returns (no hang), with Created, Unchanged, or the error of a POST (its own
// or, for AlreadyExists, the created PodGroup's), its context's, or the panic; at most one
// caller per round says Created; and once the cache's event for the round's PodGroup came,
// nothing of the round stays in the flights (under -race: no data race).
func TestSingleFlightStress(t *testing.T) {
	const rounds, n = 40, 6
	cache := &lagging{}
	rng := rand.New(rand.NewPCG(3, 5))
	var mu sync.Mutex
	roll := func(k int) int { mu.Lock(); defer mu.Unlock(); return rng.IntN(k) }
	a, c, _ := newApplier(t, interceptor.Funcs{Get: cache.get,
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			time.Sleep(time.Duration(roll(300)) * time.Microsecond)
			switch roll(6) {
			case 0:
				return apierrors.NewServiceUnavailable("etcd is away")
			case 1:
				panic("the client broke")
			}
			return c.Create(ctx, obj, opts...)
		}})
	events := a.CacheEvents()
	for round := range rounds {
		cache.caught.Store(false)
		res, errs := make([]Result, n), make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			switch roll(5) {
			case 0:
				cancel()
			case 1:
				time.AfterFunc(time.Duration(roll(200))*time.Microsecond, cancel)
			}
			wg.Go(func() {
				defer func() {
					if p := recover(); p != nil {
						errs[i] = fmt.Errorf("panic: %v", p)
					}
				}()
				res[i], errs[i] = a.Apply(ctx, karta())
			})
		}
		wg.Wait()
		created := 0
		for i := range n {
			switch err := errs[i]; {
			case err == nil && res[i] == Created:
				created++
			case err == nil:
				assert.Equal(t, Unchanged, res[i], "round %d", round)
			case apierrors.IsAlreadyExists(err), apierrors.IsServiceUnavailable(err), errors.Is(err, context.Canceled),
				err.Error() == "panic: the client broke":
			default:
				t.Errorf("round %d: unexpected error %v", round, err)
			}
		}
		assert.LessOrEqual(t, created, 1, "round %d", round)
		cache.caught.Store(true)
		pg := &v2alpha2.PodGroup{}
		err := c.Get(context.Background(), client.ObjectKeyFromObject(Build(karta())), pg)
		require.True(t, err == nil || apierrors.IsNotFound(err), "round %d: %v", round, err)
		assert.Equal(t, created, map[bool]int{true: 1}[err == nil], "round %d: one Created for the PodGroup stored", round)
		if err == nil {
			events(pg)
			events(pg)
			require.NoError(t, c.Delete(context.Background(), pg))
		}
		a.flights.mu.Lock()
		left := len(a.flights.m)
		a.flights.mu.Unlock()
		assert.Zero(t, left, "round %d: flights left", round)
	}
}
