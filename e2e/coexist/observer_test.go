//go:build e2e

package coexist

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// observer records, from watches on one namespace, every PodGroup each pod named and the smallest
// number of pods each PodGroup ever required, over the whole test: every pod and PodGroup version
// the API server sent, not samples.
type observer struct {
	mu sync.Mutex
	// named[pod] is every PodGroup name the pod carried in pod-group-name.
	named map[string]map[string]bool
	// minPods[podGroup] is the smallest gang size any version of the PodGroup had.
	minPods map[string]int32
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

var podGroupsGVR = schema.GroupVersionResource{Group: v2alpha2.SchemeGroupVersion.Group, Version: v2alpha2.SchemeGroupVersion.Version, Resource: "podgroups"}

// observe starts watching ns; the watches stop at test cleanup.
func observe(t *testing.T, ctx context.Context, ns string) *observer {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	o := &observer{named: map[string]map[string]bool{}, minPods: map[string]int32{}, cancel: cancel}
	pw, err := cp.Kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	gw, err := cp.Dynamic.Resource(podGroupsGVR).Namespace(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	o.wg.Add(2)
	go o.drain(pw, o.pod)
	go o.drain(gw, o.podGroup)
	t.Cleanup(func() { cancel(); o.wg.Wait() })
	return o
}

func (o *observer) drain(w watch.Interface, f func(runtime.Object)) {
	defer o.wg.Done()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Added || ev.Type == watch.Modified {
			f(ev.Object)
		}
	}
}

func (o *observer) pod(obj runtime.Object) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	name := p.Annotations[kaikeys.PodGroupName]
	if name == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.named[p.Name] == nil {
		o.named[p.Name] = map[string]bool{}
	}
	o.named[p.Name][name] = true
}

func (o *observer) podGroup(obj runtime.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	pg := &v2alpha2.PodGroup{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pg); err != nil {
		return
	}
	n := gangSize(pg)
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur, ok := o.minPods[pg.Name]; !ok || n < cur {
		o.minPods[pg.Name] = n
	}
}

// gangSize is the fewest pods that satisfy the PodGroup: minMember, or with minSubGroup the
// sum of the smallest minSubGroup top-level sub-groups' minMember (leaves; gangmap's and KAI's
// flat sub-groups here).
func gangSize(pg *v2alpha2.PodGroup) int32 {
	if pg.Spec.MinSubGroup == nil {
		return ptr.Deref(pg.Spec.MinMember, 0)
	}
	var sizes []int32
	for _, sg := range pg.Spec.SubGroups {
		if sg.Parent == nil {
			sizes = append(sizes, ptr.Deref(sg.MinMember, 0))
		}
	}
	for i := range sizes { // ascending
		for j := i + 1; j < len(sizes); j++ {
			if sizes[j] < sizes[i] {
				sizes[i], sizes[j] = sizes[j], sizes[i]
			}
		}
	}
	var n int32
	for i := 0; i < int(*pg.Spec.MinSubGroup) && i < len(sizes); i++ {
		n += sizes[i]
	}
	return n
}

// aloneSatisfied lists, for the given pods, each PodGroup a pod ever named whose gang size was
// ever 1 or less: a PodGroup the pod alone satisfies, so KAI could have bound it alone.
func (o *observer) aloneSatisfied(pods ...string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, p := range pods {
		for name := range o.named[p] {
			if n, ok := o.minPods[name]; !ok || n <= 1 {
				out = append(out, fmt.Sprintf("%s in %s (gang size %d, seen %v)", p, name, n, ok))
			}
		}
	}
	return out
}

// podGroupsOf lists the PodGroups of ns owned by the workload with uid.
func podGroupsOf(ctx context.Context, ns string, uid string) ([]string, error) {
	list := &v2alpha2.PodGroupList{}
	if err := cp.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []string
	for _, pg := range list.Items {
		for _, r := range pg.OwnerReferences {
			if string(r.UID) == uid {
				out = append(out, pg.Name)
			}
		}
	}
	return out, nil
}

func schemaGV(apiVersion string) (schema.GroupVersion, error) {
	return schema.ParseGroupVersion(apiVersion)
}
