package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/runtime/podview"
)

// getPod returns the pod with key: from the pod cache when the reconciler has one (its
// podview.Record as a Pod), else through Client. A pod the cache lacks is NotFound: the cache
// holds every pod of the scheduler once synced, which the controller waits for.
func (r *PodReconciler) getPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	if r.Pods == nil {
		pod := &corev1.Pod{}
		return pod, r.Client.Get(ctx, key, pod)
	}
	pod, ok := r.Pods.Get(key)
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, key.Name)
	}
	return pod, nil
}

// fullPod is the Decider's FullPodFunc with a pod cache (nil without one: Client's pods are
// whole): a GET of the pod from the API server (Decider.APIReader), made the webhook's view of it
// (podview.Pod). Only pods of workloads whose definition reads beyond a pod's metadata pay it, on
// each reconcile. A pod replaced under the same name (another UID) is NotFound: the new pod has
// its own event.
func (r *PodReconciler) fullPod() decide.FullPodFunc {
	if r.Pods == nil {
		return nil
	}
	return func(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
		full := &corev1.Pod{}
		if err := r.Decider.APIReader.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, full); err != nil {
			return nil, err
		}
		if full.UID != pod.UID {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, fmt.Sprintf("%s (UID %s)", pod.Name, pod.UID))
		}
		return podview.Pod(full), nil
	}
}
