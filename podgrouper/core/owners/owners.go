// Package owners finds a pod's top owner: the object at the end of its chain of owner
// references, whose kind decides how the pod is grouped (KAI pod-grouper's GetPodOwners, with
// gangmap's fixes: controller references first, cluster-scoped owners, cycles and depth bounded,
// and several owners not an error).
package owners

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MaxDepth bounds the owner chain (LWS workers are 4 levels below their LeaderWorkerSet).
const MaxDepth = 10

// ErrNoOwner says the pod has no owner references: KAI groups such pods natively (its Pod plugin).
var ErrNoOwner = errors.New("the pod has no owner references")

// Chain is a pod's owners, from its direct owner to its top owner (the last element).
type Chain struct {
	Owners []*metav1.PartialObjectMetadata
	// Forbidden, when set, says the walk stopped early at this reference, to an owner it may not
	// read (Forbidden), as KAI does: the last readable owner is then the top owner. Callers can
	// tell whether the unreadable owner is of a kind they group (then the chain is wrong for them).
	Forbidden *metav1.OwnerReference
}

// ForbiddenError says the pod's first owner may not be read (Forbidden): no owner at all is known.
type ForbiddenError struct {
	// Ref is the owner reference that could not be read.
	Ref metav1.OwnerReference
	// Err is the API error.
	Err error
}

// Error implements error.
func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("owner %s %s: %v", e.Ref.Kind, e.Ref.Name, e.Err)
}

// Unwrap returns the API error, so apierrors.IsForbidden holds.
func (e *ForbiddenError) Unwrap() error { return e.Err }

// Top is the top owner, or nil for an empty chain.
func (c *Chain) Top() *metav1.PartialObjectMetadata {
	if len(c.Owners) == 0 {
		return nil
	}
	return c.Owners[len(c.Owners)-1]
}

// Walker walks owner references with Reader (an uncached reader: owners of arbitrary kinds are
// read by metadata only) and Mapper (to know which owners are cluster scoped).
//
// With Shared set, an owner of a kind another cache of the process already watches (the
// grouper's workload informers) is read from that cache, and the walker keeps no copy of it (one
// the informer does not hold yet is read from the API server, and not kept either).
//
// With CacheTTL set, each owner read from the API server is remembered for that long, so the
// pods of one Job or StatefulSet cost one read of each owner instead of one per pod and reconcile
// (a UID names one object forever; only its own owner references could change meanwhile, which
// CacheTTL bounds). The cache is keyed by namespace and UID, and a hit is used only when its
// namespace, name and group/kind are the reference's too: a reference in one namespace never
// resolves to an object of another, whatever UID it names (an owner reference never crosses
// namespaces; Kubernetes' garbage collector treats such a reference as absent).
//
// Of each owner the walker keeps only what a walk and KAI's default metadata read (see slim):
// its identity, the reference the walk follows, and the labels and annotations KAIOwnerLabels,
// KAIOwnerAnnotations and ExtraLabels name. The owners of a Chain are shared: callers must not
// modify them.
type Walker struct {
	Reader   client.Reader
	Mapper   meta.RESTMapper
	CacheTTL time.Duration
	// CacheSize bounds the owners remembered (and, separately, the UIDs located); 0 is
	// DefaultCacheSize.
	CacheSize int
	// Shared, when set, gives owners of the kinds it holds without an API request.
	Shared SharedReader
	// ExtraLabels, when set, names label keys kept on owners besides KAIOwnerLabels (the
	// onboarding policy's queue.fromOwnerLabel, read of the top owner). It is asked at each
	// owner read; a cached owner slimmed under other keys is read again.
	ExtraLabels func() []string

	once  sync.Once
	cache *lru.Cache
	// seen remembers the namespace each UID read lives in (UIDs never move; "" for cluster
	// scope), without expiry, so that a reference naming another namespace's object by UID is
	// reported as crossing namespaces.
	seen *lru.Cache
}

// DefaultCacheSize is the default bound of the owners a Walker remembers: the owners read from the
// API server (with Shared set, those of kinds no workload informer watches: the Jobs of JobSets,
// ReplicaSets, StatefulSets, owners of native kinds), each ~0.7 KB slimmed with its cache and
// location entries (BenchmarkCachedOwnerBytes).
const DefaultCacheSize = 32768

// cacheKey keys the owner cache: the namespace the reference was resolved in ("" for a
// cluster-scoped owner) and the UID.
type cacheKey struct {
	namespace string
	uid       types.UID
}

type cachedOwner struct {
	obj *metav1.PartialObjectMetadata
	at  time.Time
	// extra are the ExtraLabels keys obj was slimmed under.
	extra []string
}

// InvalidReferenceError says an owner reference names no object the dependent may have as its
// owner, so the reference is treated as absent (as Kubernetes' garbage collector does, which
// deletes a dependent whose owners are all absent): the object of that name in the dependent's
// namespace has another UID (the owner was replaced, or the UID is wrong), the UID is that of an
// object in another namespace (owner references never cross namespaces), or a cluster-scoped
// owner references a namespaced kind. Retrying cannot help: the reference itself is wrong.
type InvalidReferenceError struct {
	// Ref is the reference.
	Ref metav1.OwnerReference
	// Namespace is the namespace the reference was resolved in ("" for cluster scope).
	Namespace string
	// FoundUID is the UID of the object the reference's name resolves to, "" when there is none.
	FoundUID types.UID
	// OtherNamespace is the namespace of the object with the reference's UID when the walker has
	// seen it in another namespace, else "".
	OtherNamespace string
	// NamespacedFromCluster says a cluster-scoped owner references a namespaced kind.
	NamespacedFromCluster bool
}

// Error implements error.
func (e *InvalidReferenceError) Error() string {
	ref := fmt.Sprintf("owner reference %s %s (UID %s)", e.Ref.Kind, e.Ref.Name, e.Ref.UID)
	switch {
	case e.NamespacedFromCluster:
		return ref + " of a cluster-scoped owner names a namespaced kind; treated as no owner"
	case e.OtherNamespace != "":
		return fmt.Sprintf("%s names an object of namespace %s from namespace %s: owner references never cross namespaces; treated as no owner", ref, e.OtherNamespace, e.Namespace)
	case e.FoundUID != "":
		return fmt.Sprintf("%s: %s %s has UID %s (it was replaced, or the reference is wrong); treated as no owner", ref, e.Ref.Kind, e.Ref.Name, e.FoundUID)
	}
	return ref + " names no object; treated as no owner"
}

// Walk returns the owner chain of the object with the given namespace and owner references. At
// each level it follows the controller reference, else the first reference. A namespaced owner is
// looked up in the pod's namespace only; a cluster-scoped one (known through Mapper) without a
// namespace, and its own references must be cluster scoped too. Errors: ErrNoOwner; an
// *InvalidReferenceError for a reference whose UID is not the named object's (replaced, another
// namespace's object, or a namespaced owner of a cluster-scoped one); a cycle; a chain deeper than
// MaxDepth; an owner that no longer exists (NotFound); any API error but Forbidden. Forbidden
// stops the walk at the last readable owner (KAI's rule) and sets Chain.Forbidden; Forbidden on
// the first owner is a *ForbiddenError, because then no owner at all can be read.
func (w *Walker) Walk(ctx context.Context, namespace string, refs []metav1.OwnerReference) (*Chain, error) {
	if len(refs) == 0 {
		return nil, ErrNoOwner
	}
	chain := &Chain{}
	_, err := w.follow(namespace, refs, func(namespace string, ref metav1.OwnerReference) (*metav1.PartialObjectMetadata, error) {
		obj, err := w.get(ctx, namespace, ref)
		switch {
		case err == nil:
			chain.Owners = append(chain.Owners, obj)
			return obj, nil
		case apierrors.IsForbidden(err):
			if len(chain.Owners) == 0 {
				return nil, &ForbiddenError{Ref: ref, Err: err}
			}
			forbidden := ref // only this branch's copy escapes
			chain.Forbidden = &forbidden
			return nil, nil
		case errors.As(err, new(*InvalidReferenceError)):
			return nil, err
		}
		return nil, fmt.Errorf("owner %s %s: %w", ref.Kind, ref.Name, err)
	})
	if err != nil {
		return nil, err
	}
	return chain, nil
}

// follow is the walk of Walk and CachedTop: from refs in namespace, at each level it picks the
// reference (Pick) and resolves it with get, until an owner without references (the top owner,
// returned), get's error, or get's nil owner (the walk stops: nil, nil). A cycle or a chain
// deeper than MaxDepth is a *ChainError.
func (w *Walker) follow(namespace string, refs []metav1.OwnerReference, get func(namespace string, ref metav1.OwnerReference) (*metav1.PartialObjectMetadata, error)) (*metav1.PartialObjectMetadata, error) {
	w.init()
	var followed [MaxDepth]metav1.OwnerReference
	ref := Pick(refs)
	for depth := 0; ; depth++ {
		if depth >= MaxDepth {
			return nil, &ChainError{Msg: fmt.Sprintf("owner chain deeper than %d at %s %s", MaxDepth, ref.Kind, ref.Name)}
		}
		if slices.ContainsFunc(followed[:depth], func(r metav1.OwnerReference) bool { return r.UID == ref.UID }) {
			return nil, &ChainError{Msg: fmt.Sprintf("owner references form a cycle at %s %s", ref.Kind, ref.Name), Refs: slices.Clone(followed[:depth]), Cycle: true}
		}
		followed[depth] = ref
		obj, err := get(namespace, ref)
		if obj == nil || err != nil || len(obj.OwnerReferences) == 0 {
			return obj, err
		}
		if obj.Namespace == "" {
			// A cluster-scoped owner's references resolve at cluster scope only.
			namespace = ""
		}
		ref = Pick(obj.OwnerReferences)
	}
}

// ChainError is an owner chain Walk cannot follow to a top owner: a cycle, or a chain deeper than
// MaxDepth. KAI's own walk (podgrouper.go getResourceOwners) has no such bound: it follows a
// cycle for as long as it runs.
type ChainError struct {
	// Msg says where the walk stopped ("owner references form a cycle at CustomJob a").
	Msg string
	// Refs are the references the walk followed, in order, the pod's own first; set for a
	// cycle only.
	Refs []metav1.OwnerReference
	// Cycle says the chain loops (else it is deeper than MaxDepth).
	Cycle bool
}

// Error returns Msg.
func (e *ChainError) Error() string { return e.Msg }

// Pick returns the reference an owner walk follows: the controller reference, else the first
// one. refs must not be empty.
func Pick(refs []metav1.OwnerReference) metav1.OwnerReference {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			return r
		}
	}
	return refs[0]
}

// init creates the caches, once.
func (w *Walker) init() {
	w.once.Do(func() {
		size := cmp.Or(max(w.CacheSize, 0), DefaultCacheSize)
		w.cache, w.seen = lru.New(size), lru.New(size)
	})
}

// get resolves ref in namespace: from the cache when a live entry for the namespace and UID has
// the reference's name and group/kind, else from Shared when it watches the kind and holds that
// object, else from the API server (kept in the cache unless Shared watches the kind). A read
// object whose UID is not the reference's is an *InvalidReferenceError, and so is a missing
// object whose UID the walker saw in another namespace. The owner returned is slimmed (see slim).
func (w *Walker) get(ctx context.Context, namespace string, ref metav1.OwnerReference) (*metav1.PartialObjectMetadata, error) {
	gvk, key, err := w.resolve(namespace, ref)
	if err != nil {
		return nil, err
	}
	ck := cacheKey{namespace: key.Namespace, uid: ref.UID}
	if obj := w.cached(ck, key, gvk); obj != nil {
		return obj, nil
	}
	watched := w.Shared != nil && w.Shared.Watches(gvk)
	if watched {
		if obj := w.fromShared(ctx, gvk, key, ref); obj != nil {
			return obj, nil
		}
	}
	read := &metav1.PartialObjectMetadata{}
	read.SetGroupVersionKind(gvk)
	err = w.Reader.Get(ctx, key, read)
	switch {
	case apierrors.IsNotFound(err):
		if other := w.elsewhere(ref.UID, key.Namespace); other != "" {
			return nil, &InvalidReferenceError{Ref: ref, Namespace: key.Namespace, OtherNamespace: other}
		}
		return nil, err
	case err != nil:
		return nil, err
	}
	if read.UID != ref.UID || read.Name != key.Name || read.Namespace != key.Namespace {
		return nil, &InvalidReferenceError{Ref: ref, Namespace: key.Namespace, FoundUID: read.UID, OtherNamespace: w.elsewhere(ref.UID, key.Namespace)}
	}
	w.noteLocation(ref.UID, key.Namespace)
	extra := w.extraLabels()
	obj := slim(ref, gvk, key, read.OwnerReferences, stringsOf(read.Labels), stringsOf(read.Annotations), extra)
	if w.CacheTTL > 0 && !watched {
		obj, ck = detached(obj, ck)
		w.cache.Add(ck, cachedOwner{obj: obj, at: time.Now(), extra: extra})
	}
	return obj, nil
}

// cached returns the live cache entry for ck when it has the reference's name and group/kind and
// was slimmed under the ExtraLabels keys asked for now, else nil.
func (w *Walker) cached(ck cacheKey, key client.ObjectKey, gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	if w.CacheTTL <= 0 {
		return nil
	}
	v, ok := w.cache.Get(ck)
	if !ok {
		return nil
	}
	c := v.(cachedOwner)
	if time.Since(c.at) < w.CacheTTL && c.obj.Name == key.Name && c.obj.Namespace == key.Namespace &&
		c.obj.GroupVersionKind().GroupKind() == gvk.GroupKind() && slices.Equal(c.extra, w.extraLabels()) {
		return c.obj
	}
	return nil
}

// CachedTop is Walk's top owner when every owner of the chain is in the owner cache (CacheTTL),
// found without any read: ok is false when an owner is not cached or has expired, and for
// everything Walk reports as an error (a cycle, a chain deeper than MaxDepth, a reference
// resolved to no owner). It never reads through Reader, so a caller on a latency budget (the
// admission webhook) may call it inline and fall back to Walk. The result is shared: callers
// must not modify it.
func (w *Walker) CachedTop(namespace string, refs []metav1.OwnerReference) (top *metav1.PartialObjectMetadata, ok bool) {
	if len(refs) == 0 || w.CacheTTL <= 0 {
		return nil, false
	}
	top, err := w.follow(namespace, refs, func(namespace string, ref metav1.OwnerReference) (*metav1.PartialObjectMetadata, error) {
		gvk, key, err := w.resolve(namespace, ref)
		if err != nil {
			return nil, err
		}
		return w.cached(cacheKey{namespace: key.Namespace, uid: ref.UID}, key, gvk), nil
	})
	return top, err == nil && top != nil
}

// elsewhere returns the namespace the walker saw uid in when it is not namespace, else "".
func (w *Walker) elsewhere(uid types.UID, namespace string) string {
	if v, ok := w.seen.Get(uid); ok {
		if ns := v.(string); ns != namespace {
			if ns == "" {
				return "(cluster scope)"
			}
			return ns
		}
	}
	return ""
}

// resolve returns the reference's GVK and the key it is read at: the namespace given, or none for
// a cluster-scoped kind (known through Mapper). A namespaced kind referenced at cluster scope (by
// a cluster-scoped owner) is an *InvalidReferenceError.
func (w *Walker) resolve(namespace string, ref metav1.OwnerReference) (schema.GroupVersionKind, client.ObjectKey, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}, client.ObjectKey{}, fmt.Errorf("apiVersion %q: %w", ref.APIVersion, err)
	}
	gvk := gv.WithKind(ref.Kind)
	key := client.ObjectKey{Namespace: namespace, Name: ref.Name}
	if w.Mapper != nil {
		if m, err := w.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			switch {
			case m.Scope.Name() == meta.RESTScopeNameRoot:
				key.Namespace = ""
			case namespace == "":
				return gvk, key, &InvalidReferenceError{Ref: ref, NamespacedFromCluster: true}
			}
		}
	}
	return gvk, key, nil
}
