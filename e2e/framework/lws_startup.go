package framework

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StepLeaderWorkerSet plays one reconcile of the LeaderWorkerSet controllers on the named LWS
// (re-read from the API server), creating what RunLeaderWorkerSet creates, but in the operator's
// order:
//   - the leader StatefulSet and its leader pods, when missing (lws
//     leaderworkerset_controller.go; the StatefulSet controller creates the pods);
//   - per group, the worker StatefulSet (owned by the group's leader pod) and its size-1 worker
//     pods, when missing and the leader pod allows it: with spec.startupPolicy LeaderReady only
//     once the leader pod is Ready, with LeaderCreated (the default) as soon as it exists
//     (pod_controller.go Reconcile: "defer the creation of the worker statefulset because leader
//     pod is not ready").
//
// It returns the pods it created. Pod phases come from kwok or the test (SetPodPhase).
func (cp *ControlPlane) StepLeaderWorkerSet(ctx context.Context, namespace, name string) ([]*corev1.Pod, error) {
	lws := &unstructured.Unstructured{}
	lws.SetAPIVersion("leaderworkerset.x-k8s.io/v1")
	lws.SetKind("LeaderWorkerSet")
	if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, lws); err != nil {
		return nil, err
	}
	s, err := readLWSShape(lws)
	if err != nil {
		return nil, err
	}
	leaderSts := &appsv1.StatefulSet{}
	err = cp.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, leaderSts)
	if apierrors.IsNotFound(err) {
		leaderSts = statefulSet(name, namespace, s.leader, int32(s.replicas), UnstructuredOwnerRef(lws))
		err = cp.Client.Create(ctx, leaderSts)
	}
	if err != nil {
		return nil, fmt.Errorf("leader statefulset: %w", err)
	}
	policy, _, _ := unstructured.NestedString(lws.Object, "spec", "startupPolicy")
	leaderReady := policy == "LeaderReady"
	var created []*corev1.Pod
	for g := int64(0); g < s.replicas; g++ {
		lp := &corev1.Pod{}
		err := cp.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fmt.Sprintf("%s-%d", name, g)}, lp)
		if apierrors.IsNotFound(err) {
			lp = s.leaderPod(g, leaderSts)
			if err := cp.Client.Create(ctx, lp); err != nil {
				return nil, fmt.Errorf("leader pod: %w", err)
			}
			created = append(created, lp)
		} else if err != nil {
			return nil, err
		}
		if s.size < 2 || (leaderReady && !(lp.Status.Phase == corev1.PodRunning && podReady(*lp))) {
			continue
		}
		ws := &appsv1.StatefulSet{}
		err = cp.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fmt.Sprintf("%s-%d", name, g)}, ws)
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
		workers, err := cp.createWorkers(ctx, s, g, lp)
		if err != nil {
			return nil, err
		}
		created = append(created, workers...)
	}
	return created, nil
}

// lwsShape is what the LWS controllers read of a LeaderWorkerSet: its replicas (groups), the
// group size, and the leader and worker templates (the worker's when leaderTemplate is missing).
type lwsShape struct {
	name, namespace string
	replicas, size  int64
	leader, worker  *corev1.PodTemplateSpec
}

func readLWSShape(lws *unstructured.Unstructured) (*lwsShape, error) {
	s := &lwsShape{name: lws.GetName(), namespace: lws.GetNamespace(), replicas: 1, size: 1}
	if r, found, _ := unstructured.NestedInt64(lws.Object, "spec", "replicas"); found {
		s.replicas = r
	}
	if n, found, _ := unstructured.NestedInt64(lws.Object, "spec", "leaderWorkerTemplate", "size"); found {
		s.size = n
	}
	var err error
	if s.worker, err = template(lws, "spec", "leaderWorkerTemplate", "workerTemplate"); err != nil {
		return nil, err
	}
	if s.leader, err = template(lws, "spec", "leaderWorkerTemplate", "leaderTemplate"); err != nil {
		return nil, err
	}
	if s.leader == nil {
		s.leader = s.worker
	}
	if s.leader == nil || (s.worker == nil && s.size > 1) {
		return nil, fmt.Errorf("LeaderWorkerSet %s/%s: no spec.leaderWorkerTemplate.workerTemplate", s.namespace, s.name)
	}
	return s, nil
}

// leaderPod is group g's leader pod, <lws>-<g>, owned by the leader StatefulSet.
func (s *lwsShape) leaderPod(g int64, leaderSts *appsv1.StatefulSet) *corev1.Pod {
	labels := map[string]string{LabelLWSName: s.name, LabelGroupIndex: fmt.Sprint(g), LabelWorkerIndex: "0"}
	return PodFromTemplate(s.leader, s.namespace, fmt.Sprintf("%s-%d", s.name, g), labels, OwnerRef(leaderSts, "apps/v1", "StatefulSet"))
}

// createWorkers creates group g's worker StatefulSet <lws>-<g>, owned by the leader pod, and its
// pods <lws>-<g>-<w>, w from 1 to size-1.
func (cp *ControlPlane) createWorkers(ctx context.Context, s *lwsShape, g int64, leader *corev1.Pod) ([]*corev1.Pod, error) {
	ws := statefulSet(fmt.Sprintf("%s-%d", s.name, g), s.namespace, s.worker, int32(s.size-1), OwnerRef(leader, "v1", "Pod"))
	if err := cp.Client.Create(ctx, ws); err != nil {
		return nil, fmt.Errorf("worker statefulset: %w", err)
	}
	var pods []*corev1.Pod
	for w := int64(1); w < s.size; w++ {
		wl := map[string]string{LabelLWSName: s.name, LabelGroupIndex: fmt.Sprint(g), LabelWorkerIndex: fmt.Sprint(w)}
		wp := PodFromTemplate(s.worker, s.namespace, fmt.Sprintf("%s-%d-%d", s.name, g, w), wl, OwnerRef(ws, "apps/v1", "StatefulSet"))
		if err := cp.Client.Create(ctx, wp); err != nil {
			return nil, fmt.Errorf("worker pod: %w", err)
		}
		pods = append(pods, wp)
	}
	return pods, nil
}
