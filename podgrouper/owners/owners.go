// Package owners finds a pod's top owner: the object at the end of its chain of owner
// references, whose kind decides how the pod is grouped (KAI pod-grouper's GetPodOwners, with
// gangmap's fixes: controller references first, cluster-scoped owners, cycles and depth bounded,
// and several owners not an error).
package owners

import (
	"context"
	"errors"
	"fmt"
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
	// Truncated says the walk stopped early at an owner it may not read (Forbidden), as KAI does:
	// the last readable owner is then the top owner.
	Truncated bool
	// Forbidden is the reference the walk stopped at when Truncated, so callers can tell whether
	// the unreadable owner is of a kind they group (then the truncated chain is wrong for them).
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
// With CacheTTL set, each owner read is remembered by UID for that long, so the pods of one Job
// or StatefulSet cost one read of each owner instead of one per pod and reconcile (a UID names
// one object forever; only its own owner references could change meanwhile, which CacheTTL
// bounds). The cached objects are shared: callers must not modify a Chain's owners.
type Walker struct {
	Reader   client.Reader
	Mapper   meta.RESTMapper
	CacheTTL time.Duration

	once  sync.Once
	cache *lru.Cache
}

// ownerCacheSize bounds the owners remembered.
const ownerCacheSize = 8192

type cachedOwner struct {
	obj *metav1.PartialObjectMetadata
	at  time.Time
}

// Walk returns the owner chain of the object with the given namespace and owner references. At
// each level it follows the controller reference, else the first reference. Errors: ErrNoOwner;
// an owner whose UID differs from the reference (it was replaced); a cycle; a chain deeper than
// MaxDepth; an owner that no longer exists; any API error but Forbidden. Forbidden stops the walk
// at the last readable owner (KAI's rule) and sets Chain.Truncated and Chain.Forbidden; Forbidden
// on the first owner is a *ForbiddenError, because then no owner at all can be read.
func (w *Walker) Walk(ctx context.Context, namespace string, refs []metav1.OwnerReference) (*Chain, error) {
	if len(refs) == 0 {
		return nil, ErrNoOwner
	}
	chain := &Chain{}
	seen := map[types.UID]bool{}
	ref := Pick(refs)
	for depth := 0; ; depth++ {
		if depth >= MaxDepth {
			return nil, fmt.Errorf("owner chain deeper than %d at %s %s", MaxDepth, ref.Kind, ref.Name)
		}
		if seen[ref.UID] {
			return nil, fmt.Errorf("owner references form a cycle at %s %s", ref.Kind, ref.Name)
		}
		seen[ref.UID] = true
		obj, err := w.get(ctx, namespace, ref)
		if apierrors.IsForbidden(err) {
			if len(chain.Owners) == 0 {
				return nil, &ForbiddenError{Ref: ref, Err: err}
			}
			chain.Truncated = true
			chain.Forbidden = &ref
			return chain, nil
		}
		if err != nil {
			return nil, fmt.Errorf("owner %s %s: %w", ref.Kind, ref.Name, err)
		}
		if obj.UID != ref.UID {
			return nil, fmt.Errorf("owner %s %s has UID %s, the reference says %s (it was replaced)", ref.Kind, ref.Name, obj.UID, ref.UID)
		}
		chain.Owners = append(chain.Owners, obj)
		if len(obj.OwnerReferences) == 0 {
			return chain, nil
		}
		ref = Pick(obj.OwnerReferences)
	}
}

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

func (w *Walker) get(ctx context.Context, namespace string, ref metav1.OwnerReference) (*metav1.PartialObjectMetadata, error) {
	if w.CacheTTL <= 0 {
		return w.read(ctx, namespace, ref)
	}
	w.once.Do(func() { w.cache = lru.New(ownerCacheSize) })
	if v, ok := w.cache.Get(ref.UID); ok {
		if c := v.(cachedOwner); time.Since(c.at) < w.CacheTTL {
			return c.obj, nil
		}
	}
	obj, err := w.read(ctx, namespace, ref)
	if err == nil && obj.UID == ref.UID {
		w.cache.Add(ref.UID, cachedOwner{obj: obj, at: time.Now()})
	}
	return obj, err
}

func (w *Walker) read(ctx context.Context, namespace string, ref metav1.OwnerReference) (*metav1.PartialObjectMetadata, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("apiVersion %q: %w", ref.APIVersion, err)
	}
	gvk := gv.WithKind(ref.Kind)
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	key := client.ObjectKey{Namespace: namespace, Name: ref.Name}
	if w.Mapper != nil {
		if m, err := w.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil && m.Scope.Name() == meta.RESTScopeNameRoot {
			key.Namespace = ""
		}
	}
	if err := w.Reader.Get(ctx, key, obj); err != nil {
		return nil, err
	}
	obj.SetGroupVersionKind(gvk)
	return obj, nil
}
