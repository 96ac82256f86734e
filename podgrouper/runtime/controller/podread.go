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

// fullPod is the Decider's FullPodFunc (the cached pods are Records, not whole pods): a GET of the pod from the API server (Decider.APIReader), made the webhook's view of it
// (podview.Pod). Only pods of workloads whose definition reads beyond a pod's metadata pay it, on
// each reconcile. A pod replaced under the same name (another UID) is NotFound: the new pod has
// its own event.
func (r *PodReconciler) fullPod() decide.FullPodFunc {
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
