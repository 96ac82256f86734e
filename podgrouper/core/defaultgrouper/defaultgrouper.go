// Package defaultgrouper computes the PodGroup metadata that KAI's default grouper computes
// (KAI pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go, v0.17): owner
// reference, queue, priority class, preemptibility, preemption delay, staleness grace period,
// topology, labels and annotations. gangmap starts every PodGroup from it, so its PodGroups carry
// what KAI's would, then sets the gang.
package defaultgrouper

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// Grouper computes KAI's default PodGroup metadata.
type Grouper struct {
	// ownerYAML caches the top-owner-metadata annotation of owners whose names need YAML's
	// encoder (see topOwnerMetadata).
	ownerYAML *lru.Cache
	once      sync.Once

	// Reader checks that a priority class exists (KAI uses a candidate only if it does); nil
	// skips the check.
	Reader client.Reader
	// QueueLabelKey and NodePoolLabelKey are KAI's --queue-label-key and --nodepool-label-key.
	QueueLabelKey    string
	NodePoolLabelKey string
}

// Metadata returns KAI's default metadata for pod under topOwner; owners is the chain from the
// pod's direct owner to the top owner. Name is "pg-<top owner name>-<uid>" and MinAvailable 1:
// callers set the gang. Errors come only from reading priority classes. topOwner is only read
// (the webhook passes the informer's stored object): its labels and annotations are read once,
// as copies (unstructured's getters copy), which the metadata then keeps.
func (g *Grouper) Metadata(ctx context.Context, topOwner *unstructured.Unstructured, pod *corev1.Pod, owners []*metav1.PartialObjectMetadata) (*podgroup.Metadata, error) {
	labels, ann := topOwner.GetLabels(), topOwner.GetAnnotations()
	if len(owners) == 0 { // the top owner alone is asked
		owners = []*metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: ann}}}
	}
	md := &podgroup.Metadata{
		Name:      fmt.Sprintf("pg-%s-%s", topOwner.GetName(), topOwner.GetUID()),
		Namespace: pod.Namespace,
		Owner: metav1.OwnerReference{
			APIVersion: topOwner.GetAPIVersion(), Kind: topOwner.GetKind(), Name: topOwner.GetName(), UID: topOwner.GetUID(),
		},
		MinAvailable: 1,
		// read before labels and ann become the metadata's own (and change)
		Queue:                  g.queue(labels, pod),
		Preemptibility:         preemptibility(pod, owners),
		PreemptionDelay:        duration(kaikeys.PreemptionDelay, pod, owners),
		StalenessGracePeriod:   duration(kaikeys.StalenessGracePeriod, pod, owners),
		Topology:               ann[kaikeys.Topology],
		RequiredTopologyLevel:  ann[kaikeys.TopologyRequiredPlacement],
		PreferredTopologyLevel: ann[kaikeys.TopologyPreferredPlace],
	}
	pc, err := g.priorityClass(ctx, pod, owners)
	if err != nil {
		return nil, err
	}
	md.PriorityClassName = pc
	md.Labels = withUser(labels, pod.Labels)
	// KAI: the pod's user annotation and the top-owner-metadata, then the top owner's
	// annotations over them.
	md.Annotations = withUser(ann, pod.Annotations)
	if _, has := md.Annotations[kaikeys.TopOwnerMetadata]; !has {
		md.Annotations[kaikeys.TopOwnerMetadata] = g.topOwnerMetadata(topOwner)
	}
	return md, nil
}

// withUser returns m (a new map when nil) with the pod's user key (of podMap, its labels or
// annotations) added unless m has one.
func withUser(m, podMap map[string]string) map[string]string {
	if m == nil {
		m = make(map[string]string, 2)
	}
	if u, ok := podMap[kaikeys.UserLabel]; ok {
		if _, has := m[kaikeys.UserLabel]; !has {
			m[kaikeys.UserLabel] = u
		}
	}
	return m
}

// queue: the top owner's queue label, the pod's, the project label (top owner, then pod) with
// "-<pod node pool>" appended when the pod has one, else default-queue.
func (g *Grouper) queue(ownerLabels map[string]string, pod *corev1.Pod) string {
	key := cmp.Or(g.QueueLabelKey, kaikeys.DefaultQueueLabel)
	if q := cmp.Or(ownerLabels[key], pod.Labels[key]); q != "" {
		return q
	}
	project := cmp.Or(ownerLabels[kaikeys.ProjectLabel], pod.Labels[kaikeys.ProjectLabel])
	if project == "" {
		return kaikeys.DefaultQueue
	}
	if np := pod.Labels[cmp.Or(g.NodePoolLabelKey, kaikeys.DefaultNodePoolLabel)]; np != "" {
		return project + "-" + np
	}
	return project
}

// priorityClass: for each owner (nearest first; the top owner when there are none) its
// priorityClassName label, else the pod's label, else pod.spec.priorityClassName; the first that
// exists wins; else KAI's fallback "train" (not validated).
func (g *Grouper) priorityClass(ctx context.Context, pod *corev1.Pod, owners []*metav1.PartialObjectMetadata) (string, error) {
	for _, o := range owners {
		for _, cand := range []string{o.Labels[kaikeys.PriorityClassLabel], pod.Labels[kaikeys.PriorityClassLabel], pod.Spec.PriorityClassName} {
			if cand == "" {
				continue
			}
			ok, err := g.priorityClassExists(ctx, cand)
			if err != nil {
				return "", err
			}
			if ok {
				return cand, nil
			}
		}
	}
	return kaikeys.DefaultPriorityClass, nil
}

func (g *Grouper) priorityClassExists(ctx context.Context, name string) (bool, error) {
	if g.Reader == nil {
		return true, nil
	}
	err := g.Reader.Get(ctx, client.ObjectKey{Name: name}, &schedulingv1.PriorityClass{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("priority class %s: %w", name, err)
	}
}

// preemptibility: the first valid kai.scheduler/preemptibility label of the owners (nearest
// first; the top owner when there are none), then the pod.
func preemptibility(pod *corev1.Pod, owners []*metav1.PartialObjectMetadata) v2alpha2.Preemptibility {
	for _, o := range owners {
		if p, ok := preemptibilityIn(o.Labels); ok {
			return p
		}
	}
	p, _ := preemptibilityIn(pod.Labels)
	return p
}

func preemptibilityIn(labels map[string]string) (v2alpha2.Preemptibility, bool) {
	switch p := v2alpha2.Preemptibility(labels[kaikeys.PreemptibilityLabel]); p {
	case v2alpha2.Preemptible, v2alpha2.NonPreemptible:
		return p, true
	}
	return "", false
}

// duration: the first annotation key that parses as a duration, on the owners (nearest first;
// the top owner when there are none), then the pod.
func duration(key string, pod *corev1.Pod, owners []*metav1.PartialObjectMetadata) *metav1.Duration {
	for _, o := range owners {
		if d := durationIn(o.Annotations, key); d != nil {
			return d
		}
	}
	return durationIn(pod.Annotations, key)
}

func durationIn(annotations map[string]string, key string) *metav1.Duration {
	if v, ok := annotations[key]; ok {
		if d, err := time.ParseDuration(v); err == nil {
			return &metav1.Duration{Duration: d}
		}
	}
	return nil
}
