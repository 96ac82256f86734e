package podcache

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gangmap/gangmap/podgrouper/runtime/podview"
)

// store is the pod cache's store: every pod's Record by namespace, then by name. It replaces
// client-go's thread-safe store with the namespace index (a SharedIndexInformer's), which keeps
// per pod an "ns/name" key string, that key in an items map and again in the namespace index's
// set of its namespace (about 110 bytes per pod at 100,000 pods, beyond the Record). Here the
// maps' keys are the Record's own strings: the namespace's (one per namespace, podview interns
// it) and the pod's name, and a namespace's map is its listing, so no index is kept beside it.
//
// It is a client-go Store (toolscache.Store), so that a DeltaFIFO or RealFIFO uses it as its
// known objects (a relist's deletions of pods the list no longer has) and so that its behaviour
// is tested against client-go's own store. Only Records are stored; a deletion takes a Record or
// a toolscache.DeletedFinalStateUnknown tombstone. Safe for concurrent use.
type store struct {
	mu sync.RWMutex
	// pods is namespace → name → Record; no namespace's map is ever empty.
	pods map[string]map[string]*podview.Record
	n    int
}

var _ toolscache.Store = (*store)(nil)

func newStore() *store { return &store{pods: map[string]map[string]*podview.Record{}} }

// recordOf is obj as a Record, or an error naming what obj is.
func recordOf(obj any) (*podview.Record, error) {
	r, ok := obj.(*podview.Record)
	if !ok || r == nil {
		return nil, fmt.Errorf("pod cache: a %T is not a pod's record", obj)
	}
	return r, nil
}

// nameOf is the namespace and name of a Record or of a deletion tombstone (its key, "ns/name").
func nameOf(obj any) (types.NamespacedName, error) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		ns, name, err := toolscache.SplitMetaNamespaceKey(t.Key)
		if err != nil {
			return types.NamespacedName{}, fmt.Errorf("pod cache: tombstone: %w", err)
		}
		return types.NamespacedName{Namespace: ns, Name: name}, nil
	}
	r, err := recordOf(obj)
	if err != nil {
		return types.NamespacedName{}, err
	}
	return types.NamespacedName{Namespace: r.Namespace, Name: r.Name}, nil
}

// Add implements toolscache.Store: r replaces the Record of its pod, if any.
func (s *store) Add(obj any) error {
	r, err := recordOf(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putLocked(r)
	return nil
}

func (s *store) putLocked(r *podview.Record) {
	ns := s.pods[r.Namespace]
	if ns == nil {
		ns = map[string]*podview.Record{}
		s.pods[r.Namespace] = ns
	}
	if _, had := ns[r.Name]; !had {
		s.n++
	}
	ns[r.Name] = r
}

// Update implements toolscache.Store (as Add).
func (s *store) Update(obj any) error { return s.Add(obj) }

// Delete implements toolscache.Store: forgets the pod of a Record or a tombstone.
func (s *store) Delete(obj any) error {
	key, err := nameOf(obj)
	if err != nil {
		return err
	}
	s.remove(key)
	return nil
}

// remove forgets the pod with key and returns its Record (nil when not stored).
func (s *store) remove(key types.NamespacedName) *podview.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := s.pods[key.Namespace]
	r := ns[key.Name]
	if r == nil {
		return nil
	}
	delete(ns, key.Name)
	s.n--
	if len(ns) == 0 {
		delete(s.pods, key.Namespace)
	}
	return r
}

// get returns the Record of the pod with key, nil when not stored.
func (s *store) get(key types.NamespacedName) *podview.Record {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.pods[key.Namespace][key.Name]
}

// each calls f with every Record of namespace ns (every namespace when ns is ""), holding the
// store's read lock: f must not call the store.
func (s *store) each(ns string, f func(*podview.Record)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if ns != "" {
		for _, r := range s.pods[ns] {
			f(r)
		}
		return
	}
	for _, pods := range s.pods {
		for _, r := range pods {
			f(r)
		}
	}
}

// len is the number of stored pods.
func (s *store) len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.n
}

// keys returns the key of every stored pod, sharing the Records' strings.
func (s *store) keys() []types.NamespacedName {
	out := make([]types.NamespacedName, 0, s.len())
	s.each("", func(r *podview.Record) { out = append(out, types.NamespacedName{Namespace: r.Namespace, Name: r.Name}) })
	return out
}

// List implements toolscache.Store.
func (s *store) List() []any {
	out := make([]any, 0, s.len())
	s.each("", func(r *podview.Record) { out = append(out, r) })
	return out
}

// ListKeys implements toolscache.Store: client-go's keys ("ns/name"), made for the call (a
// FIFO's relist reads them to find deleted pods).
func (s *store) ListKeys() []string {
	out := make([]string, 0, s.len())
	s.each("", func(r *podview.Record) { out = append(out, storeKey(r.Namespace, r.Name)) })
	return out
}

// Get implements toolscache.Store: the stored Record of obj's pod (a Record or a tombstone).
func (s *store) Get(obj any) (any, bool, error) {
	key, err := nameOf(obj)
	if err != nil {
		return nil, false, err
	}
	return s.found(s.get(key))
}

// GetByKey implements toolscache.Store: key is client-go's, "ns/name".
func (s *store) GetByKey(key string) (any, bool, error) {
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, false, err
	}
	return s.found(s.get(types.NamespacedName{Namespace: ns, Name: name}))
}

// found is r as Get returns it: a nil Record is no item (not a typed nil in an interface).
func (s *store) found(r *podview.Record) (any, bool, error) {
	if r == nil {
		return nil, false, nil
	}
	return r, true, nil
}

// Replace implements toolscache.Store: the store holds the Records of list and nothing else.
// Nothing is changed when list holds anything but Records.
func (s *store) Replace(list []any, _ string) error {
	recs := make([]*podview.Record, len(list))
	for i, o := range list {
		r, err := recordOf(o)
		if err != nil {
			return err
		}
		recs[i] = r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods, s.n = map[string]map[string]*podview.Record{}, 0
	for _, r := range recs {
		s.putLocked(r)
	}
	return nil
}

// Resync implements toolscache.Store: nothing to do.
func (s *store) Resync() error { return nil }

// storeKey is client-go's key of a pod (MetaNamespaceKeyFunc): "ns/name", or name alone
// without a namespace.
func storeKey(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
