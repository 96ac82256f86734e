package realkai

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
)

// GPU is the extended resource of NVIDIA's device plugin, which KAI counts as whole GPUs.
const GPU = corev1.ResourceName("nvidia.com/gpu")

// GPU feature discovery's node labels that KAI's scheduler reads (pkg/scheduler/api/node_info
// node_info.go GpuCountLabel, GpuMemoryLabel); without them it falls back to allocatable and a
// default memory, so they are set as GPU feature discovery would.
const (
	gpuCountLabel  = "nvidia.com/gpu.count"
	gpuMemoryLabel = "nvidia.com/gpu.memory"
	gpuPresent     = "nvidia.com/gpu.present"
)

// CreateQueues creates KAI's scheduling.run.ai/v2 Queue parent and a leaf queue under it, each
// with no quota and no limit on CPU, memory and GPUs (KAI's docs/quickstart/default-queues.yaml):
// the leaf queue is what a workload's kai.scheduler/queue label names. Existing queues are kept.
func (c *Cluster) CreateQueues(ctx context.Context, parent, leaf string) error {
	for _, q := range []struct{ name, parent string }{{parent, ""}, {leaf, parent}} {
		res := map[string]any{}
		for _, r := range []string{"cpu", "gpu", "memory"} {
			res[r] = map[string]any{"quota": int64(0), "limit": int64(-1), "overQuotaWeight": int64(1)}
		}
		spec := map[string]any{"resources": res}
		if q.parent != "" {
			spec["parentQueue"] = q.parent
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
			"metadata": map[string]any{"name": q.name}, "spec": spec,
		}}
		if err := c.Client.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("queue %s: %w", q.name, err)
		}
	}
	return nil
}

// CreateTopology creates KAI's cluster-scoped Topology (kai.scheduler/v1alpha1) named name with
// one level per node label, from the widest to the narrowest (e.g. "topology.kubernetes.io/zone",
// "example.com/rack", and kubernetes.io/hostname last if at all, as the CRD's validation
// requires), for nodes labelled with NodeSpec.PerNode. KAI's topology plugin places a PodGroup
// whose topologyConstraint names it.
func (c *Cluster) CreateTopology(ctx context.Context, name string, nodeLabels ...string) error {
	levels := make([]any, 0, len(nodeLabels))
	for _, l := range nodeLabels {
		levels = append(levels, map[string]any{"nodeLabel": l})
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"levels": levels},
	}}
	if err := c.Client.Create(ctx, u); err != nil {
		return fmt.Errorf("topology %s: %w", name, err)
	}
	return nil
}

// NodeSpec describes fake GPU nodes to create.
type NodeSpec struct {
	// Names of the nodes.
	Names []string
	// GPUs per node (nvidia.com/gpu capacity and allocatable).
	GPUs int
	// Labels on every node besides the GPU feature discovery ones (e.g. a test's own label its
	// pods select, or topology labels: zone, rack).
	Labels map[string]string
	// PerNode are more labels per node name (e.g. each node's rack).
	PerNode map[string]map[string]string
}

// CreateGPUNodes creates spec's nodes for kwok (annotation kwok.x-k8s.io/node: fake) with
// spec.GPUs GPUs (SetNodeGPUs), waits until kwok reports each Ready with its GPUs, and takes off a
// node.kubernetes.io/not-ready or unreachable taint if the API server's admission put one on (no
// kube-controller-manager runs to take it off), so KAI's predicates see a schedulable node.
func (c *Cluster) CreateGPUNodes(ctx context.Context, spec NodeSpec) error {
	for _, name := range spec.Names {
		labels := map[string]string{corev1.LabelHostname: name, gpuPresent: "true", gpuCountLabel: fmt.Sprint(spec.GPUs), gpuMemoryLabel: "81920"}
		for k, v := range spec.Labels {
			labels[k] = v
		}
		for k, v := range spec.PerNode[name] {
			labels[k] = v
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{FakeNodeAnnotation: "fake"}}}
		if err := c.Client.Create(ctx, n); err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		if err := c.SetNodeGPUs(ctx, name, spec.GPUs); err != nil {
			return err
		}
	}
	for _, name := range spec.Names {
		if err := c.waitNodeSchedulable(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// SetNodeGPUs sets a node's capacity and allocatable: 64 CPUs, 512 GiB, 110 pods and gpus GPUs.
// kwok's node stage may then put its own CPU, memory and pod counts in (1k CPUs, 1 TiB, 1M pods,
// measured); it keeps the GPUs, which is what the tests size gangs by.
func (c *Cluster) SetNodeGPUs(ctx context.Context, name string, gpus int) error {
	rl := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods: resource.MustParse("110"), GPU: *resource.NewQuantity(int64(gpus), resource.DecimalSI),
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := c.Client.Get(ctx, types.NamespacedName{Name: name}, n); err != nil {
			return err
		}
		n.Status.Capacity, n.Status.Allocatable = rl, rl.DeepCopy()
		return c.Client.Status().Update(ctx, n)
	})
}

// waitNodeSchedulable waits until kwok reports the node Ready with its GPUs, then removes the
// not-ready taints.
func (c *Cluster) waitNodeSchedulable(ctx context.Context, name string) error {
	err := framework.WaitFor(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		n := &corev1.Node{}
		if err := c.Client.Get(ctx, types.NamespacedName{Name: name}, n); err != nil {
			return false, err
		}
		gpus := n.Status.Allocatable[GPU]
		if !nodeReady(n) || gpus.IsZero() {
			return false, nil
		}
		kept := n.Spec.Taints[:0]
		for _, t := range n.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady && t.Key != corev1.TaintNodeUnreachable {
				kept = append(kept, t)
			}
		}
		if len(kept) == len(n.Spec.Taints) {
			return true, nil
		}
		n.Spec.Taints = kept
		if err := c.Client.Update(ctx, n); err != nil {
			return false, client.IgnoreNotFound(ignoreConflict(err))
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("node %s did not become Ready and schedulable (kwok log %s): %w\n%s", name, c.Kwok.LogPath, err, c.Kwok.Tail(20))
	}
	return nil
}

func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// FinishPod sets a bound pod's status as the kubelet does when every container exited with code
// 0: phase Succeeded, Ready false, containers terminated (Completed). kwok leaves it so (kwokStages
// has no completion stage).
func (c *Cluster) FinishPod(ctx context.Context, namespace, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &corev1.Pod{}
		if err := c.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, p); err != nil {
			return err
		}
		if p.Spec.NodeName == "" {
			return fmt.Errorf("pod %s/%s is not bound: a pod that never ran cannot finish", namespace, name)
		}
		now := metav1.Now()
		p.Status.Phase = corev1.PodSucceeded
		for i := range p.Status.Conditions {
			if t := p.Status.Conditions[i].Type; t == corev1.PodReady || t == corev1.ContainersReady {
				p.Status.Conditions[i].Status, p.Status.Conditions[i].LastTransitionTime = corev1.ConditionFalse, now
			}
		}
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			started := now
			if cs.State.Running != nil {
				started = cs.State.Running.StartedAt
			}
			cs.Ready, cs.State = false, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: now}}
		}
		return c.Client.Status().Update(ctx, p)
	})
}
