package framework

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/manifest"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// ReadObject reads the first object of a manifest file.
func ReadObject(path string) (*unstructured.Unstructured, error) {
	objs, err := manifest.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%s: no object", path)
	}
	return objs[0], nil
}

// KartaFor reads a Karta manifest and renames it to name, for the workload kind group/kind (same
// version), so that one definition file serves several kinds.
func KartaFor(path, name, group, kind string) (*unstructured.Unstructured, error) {
	k, err := ReadObject(path)
	if err != nil {
		return nil, err
	}
	k.SetName(name)
	if err := unstructured.SetNestedField(k.Object, group, "spec", "structureDefinition", "rootComponent", "kind", "group"); err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedField(k.Object, kind, "spec", "structureDefinition", "rootComponent", "kind", "kind"); err != nil {
		return nil, err
	}
	return k, nil
}

// RolePod is the pod a CustomJob-shaped operator creates for role number i: the template at
// spec.<role>.template, named <workload>-<role>-<i>, owned by the workload.
func RolePod(w *unstructured.Unstructured, role string, i int) (*corev1.Pod, error) {
	tpl, err := template(w, "spec", role, "template")
	if err != nil {
		return nil, err
	}
	if tpl == nil {
		return nil, fmt.Errorf("%s %s: no spec.%s.template", w.GetKind(), w.GetName(), role)
	}
	return PodFromTemplate(tpl, w.GetNamespace(), fmt.Sprintf("%s-%s-%d", w.GetName(), role, i), nil, UnstructuredOwnerRef(w)), nil
}

// RunRoles makes, for each role, spec.<role>.replicas pods of a CustomJob-shaped workload (see
// RolePod) and creates them with CreatePods.
func (cp *ControlPlane) RunRoles(ctx context.Context, w *unstructured.Unstructured, parallel int, roles ...string) ([]*corev1.Pod, error) {
	var pods []*corev1.Pod
	for _, role := range roles {
		n, _, err := unstructured.NestedInt64(w.Object, "spec", role, "replicas")
		if err != nil {
			return nil, err
		}
		for i := 0; i < int(n); i++ {
			p, err := RolePod(w, role, i)
			if err != nil {
				return nil, err
			}
			pods = append(pods, p)
		}
	}
	return pods, cp.CreatePods(ctx, pods, parallel)
}

// CreatePods creates pods with up to parallel requests in flight.
func (cp *ControlPlane) CreatePods(ctx context.Context, pods []*corev1.Pod, parallel int) error {
	if parallel < 1 {
		parallel = 1
	}
	work := make(chan *corev1.Pod)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for i := 0; i < parallel; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				if err := cp.Client.Create(ctx, p); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, p := range pods {
		work <- p
	}
	close(work)
	wg.Wait()
	return firstErr
}

// PodGroups lists the PodGroups of a namespace.
func (cp *ControlPlane) PodGroups(ctx context.Context, namespace string) ([]v2alpha2.PodGroup, error) {
	var list v2alpha2.PodGroupList
	if err := cp.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Pods lists the pods of a namespace.
func (cp *ControlPlane) Pods(ctx context.Context, namespace string) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := cp.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// CreatePodFor creates pod number i of role (see RolePod).
func (cp *ControlPlane) CreatePodFor(ctx context.Context, w *unstructured.Unstructured, role string, i int) (*corev1.Pod, error) {
	p, err := RolePod(w, role, i)
	if err != nil {
		return nil, err
	}
	return p, cp.Client.Create(ctx, p)
}
