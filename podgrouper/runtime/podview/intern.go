package podview

import (
	"hash/maphash"
	"reflect"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/lru"
)

// Interner is the transform of the grouper's cached workloads: TransformWorkload, then every
// map and list of an unstructured object that equals one already cached (same keys, same values
// of the same JSON types, recursively) is replaced by that one, so equal subtrees of different
// workloads are stored once. Workloads made from one template (a sweep of JobSets, the pods'
// templates of a pipeline's jobs) differ in their metadata and a few values; the rest, most of
// an unstructured object's memory (a Go map costs about 330 bytes however few entries it has),
// is shared. Content is unchanged (TestInternerKeepsContent): decisions read the same object.
//
// Sharing is sound because nothing writes to a cached object: controller-runtime's cached
// client returns deep copies (runtime.DeepCopyJSONValue copies shared subtrees like any other),
// client-go replaces stored objects and never edits one, and the readers of the stored object
// itself (controller.InformerOwners, the informer's event handlers) are read-only by contract.
// The root map and its metadata map are never shared (they hold the object's identity and are
// written by readers that set the kind on their result); metadata's labels and annotations are.
//
// The table of known subtrees is an LRU of at most size entries, keyed by a hash of the subtree
// (maphash; a hit is used only when reflect.DeepEqual confirms it, so a collision only costs the
// sharing). It holds subtrees alive after their workloads are gone until they are evicted, which
// bounds that memory by size subtrees. Safe for concurrent use (informers transform in their own
// goroutines).
type Interner struct {
	mu    sync.Mutex
	seed  maphash.Seed
	trees *lru.Cache
	// values and valuesSeen: the boxed strings of sharedValueKeys, and the hashes of those seen
	// once (internkeys.go).
	values     map[string]any
	valuesSeen map[uint64]struct{}
}

// WorkloadInternerSize is the size of the grouper's Interner table: 4,096 subtrees, so at most
// that many outlive their workloads until evicted.
const WorkloadInternerSize = 4096

// NewInterner returns an Interner whose table keeps at most size subtrees (size > 0).
func NewInterner(size int) *Interner {
	return &Interner{seed: maphash.MakeSeed(), trees: lru.New(size), values: map[string]any{}, valuesSeen: map[uint64]struct{}{}}
}

// Transform is TransformWorkload followed by the sharing of equal subtrees (see Interner) for an
// unstructured object; other objects get TransformWorkload only. It never fails.
//
// The first time it sees an object, it replaces the object's root and metadata maps with new ones
// whose well-known keys are static strings (internkeys.go), each key written once with its final
// value (a shared subtree, a boxed value): a Go map that holds 8 entries (a metadata map of name,
// namespace, uid, resourceVersion, generation, creationTimestamp, labels and annotations) grows
// from one group of 8 slots to a table of 16 at the next assignment, even to a key it has
// (Go's swiss maps; 616 bytes more per workload, measured). Otherwise it never writes to a map
// or list it did not just make, except the object's own root and metadata maps, and those only
// where a value changes: client-go may hand an object to the
// transform twice (the watch-list path stores it in a temporary store, then passes it to the
// FIFO's Replace, client-go's tools/cache/reflector.go and delta_fifo.go), and its subtrees may
// by then be shared with objects other goroutines read.
func (in *Interner) Transform(obj any) (any, error) {
	obj, err := TransformWorkload(obj)
	u, ok := obj.(*unstructured.Unstructured)
	if err != nil || !ok || u.Object == nil {
		return obj, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	// The root and metadata maps are the object's own; their keys (and a few values) are made
	// the static ones once, in new maps (internkeys.go), so a second pass finds nothing to do.
	if root, ok := in.rekeyed(u.Object); ok {
		u.Object = root
		return u, nil
	}
	for k, v := range u.Object {
		if md, ok := v.(map[string]any); ok && k == "metadata" {
			for mk, mv := range md {
				if sharedMetadataTrees[mk] {
					setIfMoved(md, mk, mv, in.canonical(mv))
				}
			}
			continue
		}
		setIfMoved(u.Object, k, v, in.canonical(v))
	}
	return u, nil
}

// sharedMetadataTrees are the metadata keys whose subtrees Interner shares with other workloads'
// (the rest of metadata is the object's identity and stays its own).
var sharedMetadataTrees = map[string]bool{"labels": true, "annotations": true}

// canonical is share's value.
func (in *Interner) canonical(v any) any {
	c, _, _ := in.share(v)
	return c
}

// setIfMoved sets m[k] to c when c is not old itself (a map or list of another identity).
func setIfMoved(m map[string]any, k string, old, c any) {
	if !sameTree(old, c) {
		m[k] = c
	}
}

// sameTree reports whether a and b are the same map or list (identity), or both neither.
func sameTree(a, b any) bool {
	switch a.(type) {
	case map[string]any, []any:
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	return true
}

// share returns the cached subtree equal to v, else v itself, or a copy of v holding its shared
// subtrees when any of them is another object than v's own (v is never written), with v's hash;
// ok is false when v holds a value of a type a decoded JSON object cannot hold (then v is
// returned, its subtrees possibly shared in a copy, and is not cached).
func (in *Interner) share(v any) (any, uint64, bool) {
	switch t := v.(type) {
	case map[string]any:
		return in.shareMap(t)
	case []any:
		var h maphash.Hash
		h.SetSeed(in.seed)
		h.WriteByte('l')
		ok := true
		var moved []any
		for i := range t {
			c, ch, cok := in.share(t[i])
			ok = ok && cok
			if moved == nil && !sameTree(t[i], c) {
				moved = slices.Clone(t)
			}
			if moved != nil {
				moved[i] = c
			}
			maphash.WriteComparable(&h, ch)
		}
		if moved != nil {
			return in.lookup(moved, h.Sum64(), ok)
		}
		return in.lookup(v, h.Sum64(), ok)
	case string, int64, float64, bool, nil:
		return v, maphash.Comparable(in.seed, v), true
	}
	return v, 0, false
}

// shareMap is share of a map: a new map holding the shared children when any of them moved,
// each key written once (an assignment to a full map of 8 grows it, see Transform).
func (in *Interner) shareMap(t map[string]any) (any, uint64, bool) {
	var h maphash.Hash
	h.SetSeed(in.seed)
	h.WriteByte('m')
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ok, moved := true, false
	var small [8]any // most maps are small: no allocation for their children
	children := small[:0]
	if len(keys) > len(small) {
		children = make([]any, 0, len(keys))
	}
	for _, k := range keys {
		c, ch, cok := in.share(t[k])
		ok = ok && cok
		children = append(children, c)
		moved = moved || !sameTree(t[k], c)
		maphash.WriteComparable(&h, k)
		maphash.WriteComparable(&h, ch)
	}
	if !moved {
		return in.lookup(t, h.Sum64(), ok)
	}
	m := make(map[string]any, len(t))
	for i, k := range keys {
		m[k] = children[i]
	}
	return in.lookup(m, h.Sum64(), ok)
}

// lookup returns the cached subtree of hash sum when it equals v, else caches v and returns it,
// with sum; when not ok (v holds a value no decoded JSON holds), v uncached and no hash.
func (in *Interner) lookup(v any, sum uint64, ok bool) (any, uint64, bool) {
	if !ok {
		return v, 0, false
	}
	if c, found := in.trees.Get(sum); found && reflect.DeepEqual(c, v) {
		return c, sum, true
	}
	in.trees.Add(sum, v)
	return v, sum, true
}
