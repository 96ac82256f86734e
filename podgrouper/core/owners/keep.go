package owners

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// KAIOwnerLabels are the label keys KAI's default grouper reads from every owner of a pod's chain
// (allOwners, nearest first; KAI pkg/podgrouper/podgrouper/plugins/defaultgrouper/
// default_grouper.go: calcPodGroupPriorityClass reads constants.PriorityLabelKey,
// calcPodGroupPreemptibilityWithDefaults constants.PreemptibilityLabelKey), as gangmap's
// defaultgrouper does (priorityClass, preemptibility). The top owner's other labels (queue,
// project, the PodGroup's copy of them all) are read from the top owner read in full, never from
// the walk.
var KAIOwnerLabels = []string{kaikeys.PriorityClassLabel, kaikeys.PreemptibilityLabel}

// KAIOwnerAnnotations are the annotation keys KAI's default grouper reads from every owner of a
// pod's chain: the preemption delay and the staleness grace period (KAI v0.17's default grouper,
// /work/shared/reference/kai-podgrouper.md section 3; gangmap's defaultgrouper.duration). Topology
// and the PodGroup's copy of every annotation come from the top owner read in full.
var KAIOwnerAnnotations = []string{kaikeys.PreemptionDelay, kaikeys.StalenessGracePeriod}

// controllerTrue is the Controller field of the references kept (read-only, shared).
var controllerTrue = true

// slim is what the walk keeps of an owner read at key (whose name, namespace and UID were checked
// against ref): its identity, the one reference the walk follows from it (Pick; none for a top
// owner) and, of its labels and annotations, only the keys KAI's default metadata reads of owners
// (KAIOwnerLabels, KAIOwnerAnnotations) and extraLabels. Everything else (other labels and
// annotations, managed fields, other references, resourceVersion, timestamps) is dropped: nothing
// in gangmap reads it of an owner walked. The identity strings are the reference's.
func slim(ref metav1.OwnerReference, gvk schema.GroupVersionKind, key client.ObjectKey, refs []metav1.OwnerReference,
	labels, annotations func(string) (string, bool), extraLabels []string) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{}
	o.APIVersion, o.Kind = apiVersion(ref.APIVersion, gvk), gvk.Kind
	o.Name, o.Namespace, o.UID = key.Name, key.Namespace, ref.UID
	if len(refs) > 0 {
		next := Pick(refs)
		if next.Controller != nil && *next.Controller {
			next.Controller = &controllerTrue
		}
		next.BlockOwnerDeletion = nil
		o.OwnerReferences = []metav1.OwnerReference{next}
	}
	o.Labels = kept(labels, KAIOwnerLabels, extraLabels)
	o.Annotations = kept(annotations, KAIOwnerAnnotations, nil)
	return o
}

// apiVersion is the reference's apiVersion when it spells gvk's group/version the usual way (the
// string is then shared with the reference), else gvk's.
func apiVersion(refAPIVersion string, gvk schema.GroupVersionKind) string {
	if gvk.Group == "" && refAPIVersion == gvk.Version {
		return refAPIVersion
	}
	if gvk.Group != "" && len(refAPIVersion) == len(gvk.Group)+1+len(gvk.Version) &&
		refAPIVersion[:len(gvk.Group)] == gvk.Group && refAPIVersion[len(gvk.Group)] == '/' && refAPIVersion[len(gvk.Group)+1:] == gvk.Version {
		return refAPIVersion
	}
	return gvk.GroupVersion().String()
}

// kept returns the entries of keys and extra that get finds, or nil when it finds none.
func kept(get func(string) (string, bool), keys, extra []string) map[string]string {
	var out map[string]string
	for _, list := range [2][]string{keys, extra} {
		for _, k := range list {
			if v, ok := get(k); ok {
				if out == nil {
					out = make(map[string]string, 2)
				}
				out[k] = v
			}
		}
	}
	return out
}

// stringsOf looks keys up in a map of strings (a typed object's labels or annotations).
func stringsOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// anyStrings looks keys up in an unstructured object's labels or annotations: only string values
// count (what unstructured.GetLabels would return).
func anyStrings(m map[string]interface{}) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k].(string)
		return v, ok
	}
}

// extraLabels are the label keys kept besides KAIOwnerLabels now (Walker.ExtraLabels).
func (w *Walker) extraLabels() []string {
	if w.ExtraLabels == nil {
		return nil
	}
	return w.ExtraLabels()
}

// noteLocation remembers that uid lives in namespace (Walker.seen), without a write when it is
// already known there. What it keeps is copied (see detached).
func (w *Walker) noteLocation(uid types.UID, namespace string) {
	if v, ok := w.seen.Get(uid); ok && v.(string) == namespace {
		return
	}
	w.seen.Add(types.UID(strings.Clone(string(uid))), strings.Clone(namespace))
}

// detached returns a copy of a slimmed owner o and its cache key whose identity strings share
// nothing with the strings they were made from. A walk's namespace and first reference come from
// the pod, and a caller's pod strings may be substrings of a larger buffer (the webhook's
// decoder shared one copy of the admitted pod's JSON among them until session 9): a kept
// substring would pin the whole buffer for as long as the cache keeps the owner. Labels and annotations come from the read object, not the pod.
func detached(o *metav1.PartialObjectMetadata, ck cacheKey) (*metav1.PartialObjectMetadata, cacheKey) {
	c := *o
	c.APIVersion, c.Name, c.Namespace = strings.Clone(o.APIVersion), strings.Clone(o.Name), strings.Clone(o.Namespace)
	c.UID = types.UID(strings.Clone(string(o.UID)))
	return &c, cacheKey{namespace: c.Namespace, uid: c.UID}
}
