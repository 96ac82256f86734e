package app

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions"
)

// TestLiveRegistryRefusesWhatTheGrouperRefuses: a cluster Karta with a path its kind's CRD cannot
// hold is refused by the grouper (crdlint: the kind's pods held, GangmapGroupingFailed), so
// describe and get, which plan with liveRegistry, must not use it either: they showed its plan
// ("planned, not created yet", FINDINGS None) for a workload whose pods the grouper held.
func TestLiveRegistryRefusesWhatTheGrouperRefuses(t *testing.T) {
	b, err := os.ReadFile("../../../examples/definitions/customjob-karta.yaml")
	require.NoError(t, err)
	typo := strings.Replace(string(b), "replicasPath: .spec.worker.replicas}", "replicasPath: .spec.worker.replica}", 1)
	require.NotEqual(t, string(b), typo)
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(typo), &u.Object))
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{definitions.GroupVersionResource: "KartaList"}, u)

	crdBytes, err := os.ReadFile("../../../examples/crds/example.com_customjobs.yaml")
	require.NoError(t, err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(crdBytes, crd))
	scheme := runtime.NewScheme()
	require.NoError(t, apiextensionsv1.AddToScheme(scheme))
	customJob := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "CustomJob"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(customJob, meta.RESTScopeNamespace)
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(crd).Build()
	c := &kubeClients{dynamic: dyn, kube: kubefake.NewSimpleClientset(), crds: reader, mapper: mapper}
	var warn bytes.Buffer
	reg, err := c.liveRegistry(context.Background(), nil, &warn)
	require.NoError(t, err)
	assert.Nil(t, reg.Lookup(customJob), "describe and get plan with a definition the grouper refuses")
	assert.Contains(t, reg.Unusable(customJob), "PathCannotResolve")
}
