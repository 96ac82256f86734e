package kaisamples

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/manifest"
)

// Registry returns a definitions registry holding gangmap's catalog and, as cluster definitions,
// the Karta objects of kartaFiles (e.g. e2e/testdata/customjob-karta.yaml). Errors: a file that
// does not read or parse, a definition that does not load, or any problem the registry reports.
func Registry(kartaFiles ...string) (*definitions.Registry, error) {
	c, err := expr.NewCompiler(expr.DefaultLimits())
	if err != nil {
		return nil, err
	}
	reg := definitions.NewRegistry(c)
	if err := catalog.Register(reg); err != nil {
		return nil, err
	}
	var cluster []*definitions.Loaded
	for _, f := range kartaFiles {
		objs, err := manifest.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			l, err := definitions.FromUnstructured(o)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			cluster = append(cluster, l)
		}
	}
	if len(cluster) > 0 {
		reg.SetSource(definitions.SourceCluster, cluster)
	}
	if p := reg.Problems(); len(p) > 0 {
		return nil, fmt.Errorf("the sample definitions have problems: %v", p)
	}
	return reg, nil
}

// FakeAPI returns a fake API client holding the workload w and its pods (copies), whose REST
// mapper knows w's kind and Pod, both namespaced. Errors: the scheme cannot be built.
func FakeAPI(w *unstructured.Unstructured, pods []*corev1.Pod) (client.Client, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, err
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(w.GroupVersionKind(), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	b := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(w)
	for _, p := range pods {
		b = b.WithObjects(p.DeepCopy())
	}
	return b.Build(), nil
}

// Chain is the owner chain KAI's pod controller passes to a grouper for a pod owned by the
// workload w (podgrouper.go getResourceOwners: the owners read as PartialObjectMetadata).
func Chain(w *unstructured.Unstructured) []*metav1.PartialObjectMetadata {
	p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: w.GetAPIVersion(), Kind: w.GetKind()}}
	p.Name, p.Namespace, p.UID, p.Labels, p.Annotations = w.GetName(), w.GetNamespace(), w.GetUID(), w.GetLabels(), w.GetAnnotations()
	return []*metav1.PartialObjectMetadata{p}
}
