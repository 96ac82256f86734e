package decide

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gangmap/gangmap/podgrouper/core/grouper"
	"github.com/gangmap/gangmap/podgrouper/core/hub"
	"github.com/gangmap/gangmap/podgrouper/core/owners"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// AccessChecker checks, before a kind's first read through a cache, that gangmap may get, list
// and watch it, and reports a read of it that was Forbidden (the standalone runtime's
// controller.AccessChecker: a SelfSubjectAccessReview per verb, an Event and a metric).
type AccessChecker interface {
	// Check returns nil when gangmap may get, list and watch gvk, else an error naming what is
	// missing.
	Check(ctx context.Context, gvk schema.GroupVersionKind) error
	// ReportForbidden reports that reading an object of gvk was Forbidden (verb is what was tried).
	ReportForbidden(ctx context.Context, gvk schema.GroupVersionKind, verb string, err error)
}

// SharedOwnerReader reads a top owner as the informer cache holds it, without the deep copy a
// cached client's Get makes. The object is shared with the cache and with every other reader:
// it is read-only. ok is false when the reader cannot give it (no synced informer for the kind
// yet, not in the cache): the caller then reads the owner the ordinary way.
type SharedOwnerReader interface {
	GetShared(ctx context.Context, gvk schema.GroupVersionKind, key types.NamespacedName) (owner *unstructured.Unstructured, ok bool)
}

// rbacMissing hands a Forbidden read of an owner of gvk to Access, or logs it without one, and
// returns its DecideError (RBACMissing).
func (d *Decider) rbacMissing(ctx context.Context, gvk schema.GroupVersionKind, err error) error {
	if d.Access != nil {
		d.Access.ReportForbidden(ctx, gvk, "get", err)
	} else {
		log.FromContext(ctx).Error(err, "Gangmap may not read a kind it groups", "kind", gvk.String(), "verb", "get")
	}
	return &DecideError{Reason: "RBACMissing", Err: err}
}

// Decider decides whether gangmap groups a pod and, if so, its PodGroup. The pod controller and
// the admission webhook share it, so both paths give a pod the same PodGroup and sub-group.
type Decider struct {
	// Client reads top owners (the manager's cached client: an informer per kind, like KAI's).
	Client client.Reader
	// APIReader reads a top owner the cache does not hold yet (a workload created a moment before
	// its first pod, as seen by the webhook).
	APIReader client.Reader
	Walker    *owners.Walker
	Hub       *hub.Hub
	// SharedOwners, when set, gives DecideShared the top owner as the informer cache holds it,
	// without a deep copy (see DecideShared for the read-only contract).
	SharedOwners SharedOwnerReader
	// Access, when set, checks that gangmap may get, list and watch a kind before its first read
	// through the cache, and reports when it may not (the standalone runtime's
	// controller.AccessChecker); unset, nothing is checked and a Forbidden read is logged.
	Access        AccessChecker
	SchedulerName string

	// confirmed remembers, per workload UID, the resourceVersion the API server last returned to
	// refreshOwner and when (a confirmedVersion), so that pods created before that read cost no
	// further read: bounded by confirmedSize, created on first use.
	confirmedOnce sync.Once
	confirmed     *lru.Cache

	// readKinds holds the kinds (schema.GroupVersionKind keys) whose top owners were read
	// through the cache (WalkOwners).
	readKinds sync.Map
}

// confirmedSize bounds the workloads whose confirmed resourceVersion the Decider remembers.
const confirmedSize = 4096

// creationSkew is how much earlier than a confirming read a pod must have been created for the
// read to cover it: creationTimestamp has whole seconds and is the API server's clock.
const creationSkew = 2 * time.Second

// confirmedVersion is a workload's resourceVersion as the API server returned it at a time.
type confirmedVersion struct {
	rv string
	at time.Time
}

// coveredByConfirmedRead reports that the API server returned owner's version after pod was
// created: an operator creates a pod only after the workload version it acts on is stored, so
// that read would have returned the version the pod belongs to, and a new read cannot find a
// newer plan for the pod. A pod being admitted (no creationTimestamp yet) is never covered.
func (d *Decider) coveredByConfirmedRead(owner *unstructured.Unstructured, pod *corev1.Pod) bool {
	v, ok := d.confirmed.Get(owner.GetUID())
	if !ok || pod.CreationTimestamp.IsZero() {
		return false
	}
	c := v.(confirmedVersion)
	return c.rv == owner.GetResourceVersion() && pod.CreationTimestamp.Add(creationSkew).Before(c.at)
}

// Decision is what the Decider found for a pod gangmap groups.
type Decision struct {
	// Kind is the top owner's kind.
	Kind schema.GroupVersionKind
	// Owner is the top owner, read in full.
	Owner *unstructured.Unstructured
	// Metadata is the pod's PodGroup.
	Metadata *podgroup.Metadata
	// SubGroup is the pod's sub-group, or "" when the PodGroup has none for it.
	SubGroup string
	// Seen is what the grouper saw of the pod for the findings (zero for a grouper that is not
	// a grouper.PlanGrouper).
	Seen grouper.Seen
	// Planned names every PodGroup of the workload's current plan (Metadata.Name among them),
	// when the grouper can say (grouper.Planner); otherwise just Metadata.Name.
	Planned []string
	// Pod is the pod the decision read when it is not the one given: the whole pod read by
	// DecideCached's full function (the definition's pod-side expressions read beyond .metadata).
	Pod *corev1.Pod
}

// FullPodFunc returns the whole pod (as the admission webhook sees it: podview.Pod) for one the
// caller holds only in part (the pod cache's podview.Record).
type FullPodFunc func(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)

// DecideError is an error of Decide with the step that failed, the reason label of
// gangmap_grouping_errors_total (OwnerWalk, OwnerChain, InvalidOwnerReference, RBACMissing,
// TopOwnerRead, Plan).
type DecideError struct {
	Reason string
	// Owner is the top owner when it was read before the failure, else nil.
	Owner *unstructured.Unstructured
	Err   error
}

// Error implements error.
func (e *DecideError) Error() string { return fmt.Sprintf("%s: %v", e.Reason, e.Err) }

// Unwrap returns the cause.
func (e *DecideError) Unwrap() error { return e.Err }

// Claimed reports whether the decision failed after the top owner's kind was found to be one
// gangmap groups (a definition claimed the workload): the owner may not be read (RBACMissing),
// its read failed (TopOwnerRead, PodRead), its gang plan failed (Plan), or its owner chain, through
// an owner of such a kind, is a cycle (OwnerChain). Such a pod is
// gangmap's to group even though no PodGroup is known for it yet, and must not be left to KAI's
// pod-grouper, which would give it a PodGroup of its own outside its gang. A failure before that
// point (OwnerWalk, InvalidOwnerReference) says nothing about the kind.
func (e *DecideError) Claimed() bool { return ClaimedReason(e.Reason) }

// ClaimedReason reports whether a DecideError of reason is Claimed (the reasons listed there).
func ClaimedReason(reason string) bool {
	switch reason {
	case "RBACMissing", "TopOwnerRead", "PodRead", "Plan", OwnerChain:
		return true
	}
	return false
}

// ClaimedFailure reports whether err is a DecideError that is Claimed.
func ClaimedFailure(err error) bool {
	var de *DecideError
	return errors.As(err, &de) && de.Claimed()
}

// Decide returns the pod's Decision, or nil without an error when the pod is not gangmap's: another
// scheduler, being deleted, no owner references (KAI's Pod plugin groups those), or a top owner
// whose kind is native to KAI or has no definition. The pod's namespace must be set (the webhook
// takes it from the admission request); its name may be empty (generateName), in which case a
// definition that places pods by name cannot place it and Decide fails.
func (d *Decider) Decide(ctx context.Context, pod *corev1.Pod) (*Decision, error) {
	return placed(d.decide(ctx, pod, false, nil))
}

// placed drops a Decision without Metadata (the pod is in no gang), keeping the error.
func placed(dec *Decision, err error) (*Decision, error) {
	if dec != nil && dec.Metadata == nil {
		return nil, err
	}
	return dec, err
}

// DecideCached is Decide, except that a pod of a workload gangmap groups which the definition
// places in no gang (no component claims it, or its role is in no gang) gets a Decision with nil
// Metadata and what the grouper saw (Seen), for the findings; and it is for a pod of which only
// the pod cache's fields are known (podview.Record: metadata, scheduler name, priority class,
// phase): when the winning definition's pod-side expressions read beyond .metadata
// (definitions.Compiled.PodReadsOnlyMetadata is false), the pod is first read whole with full,
// and the Decision's Pod is that pod. A nil full decides on pod as given (the webhook's pod is
// already whole).
func (d *Decider) DecideCached(ctx context.Context, pod *corev1.Pod, full FullPodFunc) (*Decision, error) {
	return d.decide(ctx, pod, false, full)
}

// DecideShared is Decide, for a caller that only reads the Decision (the admission webhook):
// the top owner is read through SharedOwners when set, without a deep copy, so Decision.Owner
// (and DecideError.Owner) may be the informer cache's own object, shared with every reader.
// Read-only contract: nothing may change it, its maps or its slices; the grouper's plan build,
// expressions (expr.Normalize copies what it converts; jq and CEL do not write their input) and
// KAI's default metadata (unstructured getters return copies) only read it.
// TestDecideSharedLeavesTheCachedOwnerAlone checks this under the race detector.
func (d *Decider) DecideShared(ctx context.Context, pod *corev1.Pod) (*Decision, error) {
	return placed(d.decide(ctx, pod, true, nil))
}

func (d *Decider) decide(ctx context.Context, pod *corev1.Pod, shared bool, full FullPodFunc) (*Decision, error) {
	// 1. Only live pods of our scheduler that have owners.
	if d.notOurs(pod) {
		return nil, nil
	}

	// 2. Walk owner references to the top owner. An owner of a kind gangmap groups that gangmap may
	// not read is reported, never silently replaced by the last readable owner.
	chain, err := d.Walker.Walk(ctx, pod.Namespace, pod.OwnerReferences)
	if err != nil {
		return nil, d.walkError(ctx, err)
	}
	if f := chain.Forbidden; f != nil {
		if gvk, ok := d.grouped(*f); ok {
			return nil, d.rbacMissing(ctx, gvk, fmt.Errorf("may not read owner %s %s of a kind gangmap groups; not grouping by the last readable owner", f.Kind, f.Name))
		}
	}
	top := chain.Top()

	// 3. Native kinds and kinds without a definition are not gangmap's.
	gvk := top.GroupVersionKind()
	grp := d.Hub.GetPodGrouperPlugin(gvk)
	if grp == nil {
		return nil, nil
	}

	// 4. Make sure the kind may be listed and watched before reading it through the cache (a cache
	// read of a kind whose informer cannot list blocks instead of failing).
	if d.Access != nil {
		if err := d.Access.Check(ctx, gvk); err != nil {
			return nil, &DecideError{Reason: "RBACMissing", Err: err}
		}
	}

	// 5. Read the top owner in full: cache first, the API server for one the cache lacks yet.
	owner, err := d.readOwner(ctx, gvk, top, shared)
	if err != nil {
		return nil, &DecideError{Reason: "TopOwnerRead", Err: fmt.Errorf("top owner %s %s: %w", gvk.Kind, top.Name, err)}
	}
	d.noteReadKind(gvk)

	// 6. Decide the PodGroup from the workload's gang plan, on the whole pod when the definition
	// reads beyond its metadata.
	var read *corev1.Pod
	if full != nil && d.readsBeyondMetadata(gvk) {
		if read, err = full(ctx, pod); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, &DecideError{Reason: "PodRead", Owner: owner, Err: fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)}
		}
		pod = read
	}
	dec, err := d.decidePodGroup(ctx, grp, gvk, owner, chain.Owners, pod)
	if dec != nil {
		dec.Pod = read
	}
	return dec, err
}

// walkError is decide's answer to a failed owner walk: nil when the pod is not gangmap's, else
// its DecideError.
func (d *Decider) walkError(ctx context.Context, err error) error {
	var fe *owners.ForbiddenError
	var ie *owners.InvalidReferenceError
	var ce *owners.ChainError
	switch {
	case errors.As(err, &fe):
		if gvk, ok := d.grouped(fe.Ref); ok {
			return d.rbacMissing(ctx, gvk, err)
		}
		// Not a kind gangmap groups: KAI would make the pod its own top owner; not gangmap's.
		return nil
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		// An owner is gone: the garbage collector deletes the pod; there is nothing to group. Or
		// an owner is of a kind the API server does not serve (the walk's RESTMapper looked it up
		// afresh): no such object exists, so no definition can apply; KAI groups the pod by its
		// own rules. Retrying would only log an error and call discovery again at every backoff,
		// for as long as the pod lives, for a reference any pod's author can write.
		return nil
	case errors.As(err, &ie):
		// A reference to another namespace's object or to a replaced owner: the pod has no owner
		// (KAI groups it as its own top owner). Permanent: the pod controller reports it once.
		return &DecideError{Reason: InvalidOwnerReference, Err: err}
	case errors.As(err, &ce) && ce.Cycle && slices.ContainsFunc(ce.Refs, func(r metav1.OwnerReference) bool { _, ok := d.grouped(r); return ok }):
		// A cycle through an owner of a kind gangmap groups: the pod is gangmap's, held and
		// reported (OwnerChain, Claimed), not left to KAI's pod-grouper, whose owner walk would
		// follow the cycle for as long as it runs. A chain only too deep is left to KAI, which
		// follows it to its top owner (possibly of a kind KAI groups).
		return &DecideError{Reason: OwnerChain, Err: err}
	}
	return &DecideError{Reason: "OwnerWalk", Err: err}
}

// DecideOwned is Decide for a caller that walked the pod's owners and read its top owner itself:
// KAI's pod-grouper with gangmap as its plugin hub (podgrouper/core/kaiplugin), which has chosen grp,
// gangmap's grouper, for the top owner's kind. It asks grp for the pod's PodGroup exactly as
// Decide does (the same plan, names and sub-groups), re-reading through APIReader a top owner
// older than the pod (see refreshOwner). owners is KAI's chain, from the pod's direct owner to the
// top owner (the last element). A nil Decision without an error: the grouper places the pod in no
// PodGroup (nil Metadata is dropped, as in Decide). Errors are *DecideError with reason Plan.
func (d *Decider) DecideOwned(ctx context.Context, grp grouper.Grouper, owner *unstructured.Unstructured, chain []*metav1.PartialObjectMetadata, pod *corev1.Pod) (*Decision, error) {
	return placed(d.decidePodGroup(ctx, grp, owner.GroupVersionKind(), owner, chain, pod))
}

// readsBeyondMetadata reports whether the definition of gvk has pod-side expressions that may read
// more of a pod than its metadata.
func (d *Decider) readsBeyondMetadata(gvk schema.GroupVersionKind) bool {
	c := d.Hub.Registry.Lookup(gvk)
	return c == nil || !c.PodReadsOnlyMetadata()
}

// decidePodGroup asks the kind's grouper for the pod's PodGroup. The PodGroup is always in the
// pod's own namespace, whatever the top owner's scope: a cluster-scoped owner may be named by pods
// of any namespace, and pods of two namespaces are never one PodGroup.
func (d *Decider) decidePodGroup(ctx context.Context, grp grouper.Grouper, gvk schema.GroupVersionKind, owner *unstructured.Unstructured, chain []*metav1.PartialObjectMetadata, pod *corev1.Pod) (*Decision, error) {
	var md *podgroup.Metadata
	var seen grouper.Seen
	var err error
	if pg, ok := grp.(grouper.PlanGrouper); ok {
		md, seen, err = pg.GroupPod(ctx, owner, pod, chain...)
		if err == nil && seen.NotInPlan != nil {
			if fresh := d.refreshOwner(ctx, gvk, owner, pod); fresh != nil {
				owner = fresh
				md, seen, err = pg.GroupPod(ctx, owner, pod, chain...)
			}
		}
	} else {
		md, err = grp.GetPodGroupMetadata(ctx, owner, pod, chain...)
	}
	if err != nil {
		return nil, &DecideError{Reason: "Plan", Owner: owner, Err: err}
	}
	if md == nil {
		if seen.Plan == nil {
			return nil, nil
		}
		return &Decision{Kind: gvk, Owner: owner, Seen: seen}, nil
	}
	if md.Namespace != pod.Namespace {
		return nil, &DecideError{Reason: "Plan", Owner: owner, Err: fmt.Errorf("PodGroup %s/%s is not in the pod's namespace %s", md.Namespace, md.Name, pod.Namespace)}
	}
	dec := &Decision{Kind: gvk, Owner: owner, Metadata: md, Seen: seen, Planned: []string{md.Name}}
	if p, ok := grp.(grouper.Planner); ok {
		if names, err := p.PlannedPodGroups(ctx, owner); err == nil {
			dec.Planned = append(names, md.Name)
		}
	}
	if sg := md.FindSubGroupForPod(pod.Namespace, pod.Name); sg != nil {
		dec.SubGroup = sg.Name
	}
	return dec, nil
}

// refreshOwner re-reads the top owner from the API server for a pod the grouper found outside
// the plan of owner (grouper.Seen.NotInPlan): the cached workload may be older than the pod (the
// operator scaled up, and created the pod, before the informer delivered the new version). It
// returns the fresh owner when it is a newer version of the same object, else nil (no API
// reader, a read error, the same resourceVersion: the plan already is the workload's). A pod
// created before an earlier read returned this same version costs no read
// (coveredByConfirmedRead): its stray pods' later reconciles are free, each new pod costs at most
// one read; never a retry loop: a pod the fresh plan still does not know is the
// grouper's to place outside the gang.
func (d *Decider) refreshOwner(ctx context.Context, gvk schema.GroupVersionKind, owner *unstructured.Unstructured, pod *corev1.Pod) *unstructured.Unstructured {
	if d.APIReader == nil {
		return nil
	}
	d.confirmedOnce.Do(func() { d.confirmed = lru.New(confirmedSize) })
	if d.coveredByConfirmedRead(owner, pod) {
		return nil
	}
	at := time.Now()
	fresh := newObject(gvk)
	if err := d.APIReader.Get(ctx, client.ObjectKeyFromObject(owner), fresh); err != nil {
		log.FromContext(ctx).V(2).Info("Cannot re-read the workload for a pod outside its plan", "workload", klog.KObj(owner), "error", err.Error())
		return nil
	}
	if fresh.GetUID() != owner.GetUID() {
		return nil
	}
	d.confirmed.Add(fresh.GetUID(), confirmedVersion{rv: fresh.GetResourceVersion(), at: at})
	if fresh.GetResourceVersion() == owner.GetResourceVersion() {
		return nil
	}
	return fresh
}

// KnownNotGrouped reports, without any read and without blocking, that Decide returns nil
// without an error for pod: the pod is not of the scheduler, is being deleted or has no owner
// references, or every owner of its chain is in the walker's owner cache and the top owner's
// kind is one gangmap does not group (native to KAI, or without a definition). false means only
// that it cannot tell so cheaply: call Decide. The admission webhook asks it first, so a pod of
// a native kind costs no decision goroutine and no owner read.
func (d *Decider) KnownNotGrouped(pod *corev1.Pod) bool {
	if d.notOurs(pod) {
		return true
	}
	if d.Walker == nil {
		return false
	}
	top, ok := d.Walker.CachedTop(pod.Namespace, pod.OwnerReferences)
	return ok && d.Hub.GetPodGrouperPlugin(top.GroupVersionKind()) == nil
}

// notOurs says the pod is of another scheduler, being deleted or without owner references.
func (d *Decider) notOurs(pod *corev1.Pod) bool {
	return pod.Spec.SchedulerName != d.SchedulerName || pod.DeletionTimestamp != nil || len(pod.OwnerReferences) == 0
}

// readOwner reads the top owner the walk found, by its namespace and name: shared with the
// cache when shared and SharedOwners has it (the walk's UID), else a copy from the cache, or from
// the API server when the cache lacks it or holds an object of another UID (a replaced workload
// the cache has not caught up with). An object whose UID still differs is an error: the PodGroup
// is never written for another object than the walk's.
func (d *Decider) readOwner(ctx context.Context, gvk schema.GroupVersionKind, top *metav1.PartialObjectMetadata, shared bool) (*unstructured.Unstructured, error) {
	key := types.NamespacedName{Namespace: top.Namespace, Name: top.Name}
	if shared && d.SharedOwners != nil {
		if owner, ok := d.SharedOwners.GetShared(ctx, gvk, key); ok && owner.GetUID() == top.UID {
			return owner, nil
		}
	}
	owner := newObject(gvk)
	err := d.Client.Get(ctx, key, owner)
	if (apierrors.IsNotFound(err) || (err == nil && owner.GetUID() != top.UID)) && d.APIReader != nil {
		owner = newObject(gvk)
		err = d.APIReader.Get(ctx, key, owner)
	}
	if err != nil {
		return nil, err
	}
	if owner.GetUID() != top.UID {
		return nil, fmt.Errorf("has UID %s, the owner walk found %s", owner.GetUID(), top.UID)
	}
	return owner, nil
}

// newObject is an empty object of gvk to read into.
func newObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// InvalidOwnerReference is the DecideError reason (and grouping-errors label) of a pod whose owner
// reference the walk treats as absent (an *owners.InvalidReferenceError).
const InvalidOwnerReference = "InvalidOwnerReference"

// IsInvalidOwnerReference says err is Decide's error for a pod whose owner reference names no
// object the pod may have as owner (another namespace's object, a replaced owner): such a pod has
// no owner as far as gangmap is concerned, and retrying cannot change that.
func IsInvalidOwnerReference(err error) bool {
	var de *DecideError
	return errors.As(err, &de) && de.Reason == InvalidOwnerReference
}

// grouped returns the kind ref names, and whether gangmap groups it (hub.Grouped).
func (d *Decider) grouped(ref metav1.OwnerReference) (schema.GroupVersionKind, bool) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	gvk := gv.WithKind(ref.Kind)
	return gvk, err == nil && d.Hub.Decide(gvk) == hub.Grouped
}

// OwnerChain is the DecideError reason of a pod whose owner chain, through an owner of a kind
// gangmap groups, is a cycle (owners.ChainError): Claimed, so the pod is held from KAI's
// pod-grouper and reported until the chain is fixed (or the kind is no longer gangmap's: the pod
// controller then hands it back).
const OwnerChain = "OwnerChain"
