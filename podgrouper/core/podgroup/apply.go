package podgroup

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// Result says what Applier.Apply did to the cluster.
type Result string

// The results of Applier.Apply.
const (
	// Created: no PodGroup of that name existed, and one was created.
	Created Result = "Created"
	// Updated: the existing PodGroup differed, and it was updated.
	Updated Result = "Updated"
	// Unchanged: the existing PodGroup already matched; nothing was written.
	Unchanged Result = "Unchanged"
	// Deferred: the existing PodGroup differed in labels or annotations alone, and Apply updated
	// it less than Applier.MetadataUpdateInterval ago; nothing was written. One caller applies
	// again later (RetryDeferred).
	Deferred Result = "Deferred"
)

// Applier writes PodGroups the way KAI's pod grouper does (KAI
// pkg/podgrouper/podgroup/handler.go Handler, constructed there by NewHandler(client,
// nodePoolKey, queueLabelKey)).
type Applier struct {
	// Client reads and writes PodGroups. Apply reads the existing PodGroup through it, so a
	// cached client can make Apply write from a stale copy; the write then fails with Conflict
	// (or AlreadyExists) and is retried by the caller.
	Client client.Client
	// NodePoolLabelKey is the PodGroup label that names the node pool (KAI flag
	// --nodepool-label-key, default kai.scheduler/node-pool). It can only be set at creation.
	NodePoolLabelKey string
	// QueueLabelKey is the PodGroup label that names the queue (KAI flag --queue-label-key,
	// default kai.scheduler/queue). An existing value is kept.
	QueueLabelKey string

	// MetadataUpdateInterval, when above zero, is how often at most Apply updates a PodGroup
	// whose labels or annotations alone differ (Deferred in between; see metadataPace). Updates
	// of the Spec or OwnerReferences are never deferred.
	MetadataUpdateInterval time.Duration

	// flights makes creates single-flight per PodGroup (see createFlights); an Applier must not
	// be copied after first use.
	flights createFlights
	// metadata remembers the PodGroups' last updates for MetadataUpdateInterval.
	metadata metadataPace
}

// RetryDeferred gives the retry of a deferred update of md's PodGroup (Apply returned Deferred)
// to one caller: the first to ask since the PodGroup's last update (or since the retry taken
// before was due) gets ok and how long to wait before applying again; the others need not retry
// (that caller's Apply writes what they would, read from the workload then). So the pods of a
// workload whose annotations change in a loop requeue one reconcile per PodGroup, not one each.
func (a *Applier) RetryDeferred(md *Metadata) (after time.Duration, ok bool) {
	return a.metadata.takeRetry(types.NamespacedName{Namespace: md.Namespace, Name: md.Name}, a.MetadataUpdateInterval)
}

// Apply creates or updates the PodGroup md describes, as KAI's ApplyToCluster
// (pkg/podgrouper/podgroup/handler.go) does:
//
//  1. Build the desired PodGroup (Desired) and Get the existing one; NotFound ⇒ Create it
//     (Created), single-flight per PodGroup (createFlights: Unchanged or AlreadyExists for a
//     caller that finds another's create of it).
//  2. Otherwise keep what other controllers own (KAI ignoreFields): Spec.MarkUnschedulable,
//     Spec.SchedulingBackoff and Spec.Queue come from the existing PodGroup (the queue is
//     immutable after creation); the node-pool label comes from the existing PodGroup, or is
//     removed from the desired labels when the existing one lacks it (so it is only ever set at
//     creation); an existing queue label is kept; and when the desired
//     Spec.TopologyConstraint.Topology is empty, the existing topology constraint is kept.
//  3. Compare (KAI updater.go podGroupsEqual): Spec and OwnerReferences must be deeply equal,
//     and the desired labels and annotations must be a subset of the existing ones. Equal ⇒
//     nothing is written (Unchanged).
//  4. When only labels or annotations differ and the PodGroup was updated less than
//     MetadataUpdateInterval ago, nothing is written (Deferred).
//  5. Otherwise (KAI updatePodGroup) merge the desired labels and annotations into the existing
//     ones (desired values win, other existing keys stay, so keys other components add such as
//     kai.scheduler/stale-podgroup-timestamp survive), replace Spec and OwnerReferences wholesale,
//     and Update (Updated).
//
// API errors are wrapped with %w: a Conflict from Update or AlreadyExists from Create (a stale
// read) means "read again and retry", as KAI's pod controller requeues on Conflict without
// reporting an error.
//
// Differences from KAI, none of which changes what ends up stored (step 4 only delays it):
//   - Apply first checks the desired PodGroup with Validate and returns an Invalid API error
//     (apierrors.IsInvalid) without calling the API server when it fails; KAI leaves that to its
//     webhook and CRD.
//   - Spec and OwnerReferences are compared with equality.Semantic.DeepEqual, which treats nil
//     and empty slices and maps as equal, instead of reflect.DeepEqual. Build starts
//     Spec.SubGroups as an empty slice, and a PodGroup read back from the API server has nil
//     there (the field is omitempty), so with reflect.DeepEqual a PodGroup without subgroups
//     never compares equal and KAI issues a no-op Update on every reconcile.
//   - For the same reason an empty desired label or annotation map counts as a subset of a
//     missing one (KAI's mapsEqualBySourceKeys treats (empty, nil) as different).
func (a *Applier) Apply(ctx context.Context, md *Metadata) (Result, error) {
	desired := Build(md)
	if err := invalid(desired); err != nil {
		return "", err
	}

	// The existing PodGroup is read without a deep copy (from the manager's cache: the stored
	// object's maps and slices are shared) and only read until it must change: the usual
	// outcome is Unchanged, and a deep copy per reconcile of every pod was most of this
	// function's allocations. It is copied before mergeInto writes to it.
	existing := &v2alpha2.PodGroup{}
	if err := a.Client.Get(ctx, client.ObjectKeyFromObject(desired), existing, client.UnsafeDisableDeepCopy); err != nil {
		if !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("getting PodGroup %s/%s: %w", desired.Namespace, desired.Name, err)
		}
		res, err := a.create(ctx, desired)
		if err != nil {
			return "", fmt.Errorf("creating PodGroup %s/%s: %w", desired.Namespace, desired.Name, err)
		}
		return res, nil
	}
	a.flights.seen(client.ObjectKeyFromObject(desired))

	if len(keptReleased(md, existing)) > 0 {
		desired = Desired(md, existing)
		if err := invalid(desired); err != nil {
			return "", err
		}
	}
	desired = a.keepOwnedFields(existing, desired)
	if podGroupsEqual(existing, desired) {
		return Unchanged, nil
	}
	key := client.ObjectKeyFromObject(desired)
	if a.MetadataUpdateInterval > 0 && metadataOnly(existing, desired) && a.metadata.wait(key, a.MetadataUpdateInterval) > 0 {
		return Deferred, nil
	}
	existing = existing.DeepCopy()
	// desired kept the cached object's own pointers (keepOwnedFields); the Update decodes the
	// server's answer into what it sends, through its pointers: send the copy's.
	desired.Spec.MarkUnschedulable, desired.Spec.SchedulingBackoff = existing.Spec.MarkUnschedulable, existing.Spec.SchedulingBackoff
	mergeInto(existing, desired)
	if err := a.Client.Update(ctx, existing); err != nil {
		return "", fmt.Errorf("updating PodGroup %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	if a.MetadataUpdateInterval > 0 {
		a.metadata.updated(key, a.MetadataUpdateInterval)
	}
	return Updated, nil
}

// invalid is Validate's errors as an Invalid API error, nil when pg is valid.
func invalid(pg *v2alpha2.PodGroup) error {
	if errs := Validate(pg); len(errs) > 0 {
		return apierrors.NewInvalid(v2alpha2.SchemeGroupVersion.WithKind(v2alpha2.Kind).GroupKind(), pg.Name, errs)
	}
	return nil
}

// keptReleased lists the deferred roles of md (SubGroupMetadata.Deferred) whose subgroups the
// existing PodGroup has already written: a pod of the role released them, and they stay written
// (a pod of another role must not take them back) until md.DropDeferred. None without existing.
func keptReleased(md *Metadata, existing *v2alpha2.PodGroup) map[string]bool {
	if md.DropDeferred || existing == nil {
		return nil
	}
	var out map[string]bool
	for _, sg := range md.SubGroups {
		if sg == nil || sg.Deferred == "" || out[sg.Deferred] ||
			!slices.ContainsFunc(existing.Spec.SubGroups, func(w v2alpha2.SubGroup) bool { return w.Name == sg.Name }) {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[sg.Deferred] = true
	}
	return out
}

// keepOwnedFields is KAI's handler.go ignoreFields: it returns a copy of desired that keeps the
// fields of existing that other controllers own.
func (a *Applier) keepOwnedFields(existing, desired *v2alpha2.PodGroup) *v2alpha2.PodGroup {
	out := desired.DeepCopy()
	out.Spec.MarkUnschedulable = existing.Spec.MarkUnschedulable
	out.Spec.SchedulingBackoff = existing.Spec.SchedulingBackoff
	out.Spec.Queue = existing.Spec.Queue

	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if a.NodePoolLabelKey != "" {
		if pool, ok := existing.Labels[a.NodePoolLabelKey]; ok {
			out.Labels[a.NodePoolLabelKey] = pool
		} else {
			delete(out.Labels, a.NodePoolLabelKey)
		}
	}
	if a.QueueLabelKey != "" {
		if queue, ok := existing.Labels[a.QueueLabelKey]; ok {
			out.Labels[a.QueueLabelKey] = queue
		}
	}

	if out.Spec.TopologyConstraint.Topology == "" {
		out.Spec.TopologyConstraint = existing.Spec.TopologyConstraint
	}
	return out
}

// podGroupsEqual is KAI's updater.go podGroupsEqual, with nil and empty treated as equal (see
// Apply).
func podGroupsEqual(existing, desired *v2alpha2.PodGroup) bool {
	return metadataOnly(existing, desired) && isSubset(desired.Labels, existing.Labels) && isSubset(desired.Annotations, existing.Annotations)
}

// isSubset reports whether every entry of sub is in super (KAI updater.go
// mapsEqualBySourceKeys, except that an empty sub is a subset of a nil super).
func isSubset(sub, super map[string]string) bool {
	for k, v := range sub {
		if got, ok := super[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// mergeInto is KAI's updater.go updatePodGroup: labels and annotations are merged (desired
// values win), Spec and OwnerReferences are replaced.
func mergeInto(existing, desired *v2alpha2.PodGroup) {
	existing.Annotations = mergeMaps(existing.Annotations, desired.Annotations)
	existing.Labels = mergeMaps(existing.Labels, desired.Labels)
	existing.Spec = desired.Spec
	existing.OwnerReferences = desired.OwnerReferences
}

func mergeMaps(dst, src map[string]string) map[string]string {
	if dst == nil && len(src) > 0 {
		dst = make(map[string]string, len(src))
	}
	maps.Copy(dst, src)
	return dst
}
