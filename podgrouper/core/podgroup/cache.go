package podgroup

import "github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"

// CacheTransform is the transform of the grouper's PodGroup informer (controller-runtime
// cache.ByObject.Transform): it returns a new PodGroup (the input is not written) without
// metadata.managedFields and with only the type and status of the status' conditions and
// scheduling conditions, which is all the readers of cached PodGroups read of the status (workload
// metrics' podGroupConditions). KAI's scheduler writes condition messages, unschedulable
// explanations and resourcesStatus while a gang waits, most of a waiting PodGroup's bytes.
// Metadata and spec are kept whole: Applier.Apply, the status keeper and the findings reporter
// Update the whole object. The status is a subresource of the PodGroup CRD, so the trimmed status
// is never written back (TestApplyOfCachedViewWritesNothing). Any other object comes back as it
// is. It never fails.
func CacheTransform(obj any) (any, error) {
	pg, ok := obj.(*v2alpha2.PodGroup)
	if !ok || pg == nil {
		return obj, nil
	}
	out := &v2alpha2.PodGroup{TypeMeta: pg.TypeMeta, ObjectMeta: pg.ObjectMeta, Spec: pg.Spec}
	out.ManagedFields = nil
	for _, cond := range pg.Status.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, v2alpha2.PodGroupCondition{Type: cond.Type, Status: cond.Status})
	}
	for _, cond := range pg.Status.SchedulingConditions {
		out.Status.SchedulingConditions = append(out.Status.SchedulingConditions, v2alpha2.SchedulingCondition{Type: cond.Type, Status: cond.Status})
	}
	return out, nil
}

// CanonicalBool returns a shared pointer to *b's value (nil stays nil), never to be written
// through: an owner reference's controller and blockOwnerDeletion flags are otherwise two small
// allocations per cached pod (podview).
func CanonicalBool(b *bool) *bool {
	switch {
	case b == nil:
		return nil
	case *b:
		return &canonicalTrue
	default:
		return &canonicalFalse
	}
}

// canonicalTrue and canonicalFalse are shared by every cached owner reference (CanonicalBool);
// never written.
var canonicalTrue, canonicalFalse = true, false
