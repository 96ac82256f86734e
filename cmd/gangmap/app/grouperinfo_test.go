package app

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/podgrouper/core/native"
)

// chartGrouper is the grouper's Deployment and definitions ConfigMap as the chart renders them
// (deploy/helm/gangmap templates/deployment.yaml and definitions-configmap.yaml: the args, the
// mount of <fullname>-definitions at /etc/gangmap/definitions, the labels), with the example
// CustomJob definition inline and JobSet removed from the native table.
func chartGrouper(t *testing.T) (*appsv1.Deployment, *corev1.ConfigMap) {
	t.Helper()
	labels := map[string]string{"app.kubernetes.io/name": "gangmap", "app.kubernetes.io/instance": "gangmap", "app.kubernetes.io/component": "grouper", "app.kubernetes.io/part-of": "gangmap"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "gangmap", Namespace: "gangmap-system", Labels: labels}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{
		Name: "grouper",
		Args: []string{"--scheduler-name=kai-scheduler", "--kai-version=v0.17", "--native-kinds-remove=jobset.x-k8s.io/v1alpha2/JobSet",
			"--strict-definitions=true", "--definitions=/etc/gangmap/definitions", "--definitions-poll=10s"},
		VolumeMounts: []corev1.VolumeMount{{Name: "definitions", MountPath: "/etc/gangmap/definitions", ReadOnly: true}},
	}}
	d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "definitions", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gangmap-definitions"}}}}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gangmap-definitions", Namespace: "gangmap-system"},
		Data: map[string]string{"customjob.yaml": readFile(t, exampleKarta), "README": "not a definition"}}
	return d, cm
}

// TestDescribeAdoptsTheGroupersSettings: describe and get read the grouper's own definition files
// (its definitions ConfigMap, found through its Deployment's --definitions mount) and native
// table (its --kai-version and --native-kinds-* args), so that they agree with it without flags
// (issue 31 point 5: a chart-installed definition was "no usable definition" and JobSet native).
func TestDescribeAdoptsTheGroupersSettings(t *testing.T) {
	d, cm := chartGrouper(t)
	c := &kubeClients{kube: fake.NewSimpleClientset(d, cm)}
	reg, err := newOfflineRegistry(nil, definitions.DecodeOptions{})
	require.NoError(t, err)
	customJob := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "CustomJob"}
	jobSet := schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	require.Nil(t, reg.Lookup(customJob))
	require.True(t, nativeInKAI(jobSet), "JobSet is native with KAI v0.17's defaults")
	t.Cleanup(func() { kaiNativeTable, nativeFlagsGiven = native.DefaultTable(), false })

	var warn bytes.Buffer
	c.adoptGrouper(context.Background(), reg, &warn)
	got := reg.Lookup(customJob)
	require.NotNil(t, got, warn.String())
	assert.Equal(t, "configmap:gangmap-system/gangmap-definitions/customjob.yaml#0", got.Loaded.Origin)
	assert.False(t, nativeInKAI(jobSet), "the grouper's --native-kinds-remove is used")
	assert.Equal(t, "using the settings of the grouper gangmap-system/gangmap: 1 definition(s) from ConfigMap gangmap-system/gangmap-definitions; its native table (--kai-version=v0.17 --native-kinds-remove=jobset.x-k8s.io/v1alpha2/JobSet)\n", warn.String())

	// Flags given on the command line win over the grouper's native table.
	kaiNativeTable, nativeFlagsGiven = native.DefaultTable(), true
	reg, err = newOfflineRegistry(nil, definitions.DecodeOptions{})
	require.NoError(t, err)
	warn.Reset()
	c.adoptGrouper(context.Background(), reg, &warn)
	assert.True(t, nativeInKAI(jobSet))
	assert.NotNil(t, reg.Lookup(customJob))

	// No grouper: nothing adopted, nothing said.
	c = &kubeClients{kube: fake.NewSimpleClientset()}
	warn.Reset()
	c.adoptGrouper(context.Background(), reg, &warn)
	assert.Empty(t, warn.String())

	// A Deployment with the grouper's labels in another namespace (any user who may create one
	// there can copy them) is never read: the grouper namespace's is adopted.
	spoof, spoofCM := chartGrouper(t)
	spoof.Namespace, spoofCM.Namespace = "aaa-team", "aaa-team"
	spoof.Spec.Template.Spec.Containers[0].Args = append(spoof.Spec.Template.Spec.Containers[0].Args, "--native-kinds-remove=leaderworkerset.x-k8s.io/v1/LeaderWorkerSet")
	c = &kubeClients{kube: fake.NewSimpleClientset(d, cm, spoof, spoofCM)}
	reg, warn = adoptFresh(t, c)
	require.NotNil(t, reg.Lookup(customJob), warn.String())
	assert.Equal(t, "configmap:gangmap-system/gangmap-definitions/customjob.yaml#0", reg.Lookup(customJob).Loaded.Origin)
	leaderWorkerSet := schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"}
	assert.True(t, nativeInKAI(leaderWorkerSet), "the copy's --native-kinds-remove is not used")
	assert.NotContains(t, warn.String(), "aaa-team")

	// Only the copy, with --grouper-namespace naming its namespace: adopted, as asked.
	c = &kubeClients{kube: fake.NewSimpleClientset(spoof, spoofCM), grouperNamespace: "aaa-team"}
	reg, warn = adoptFresh(t, c)
	assert.False(t, nativeInKAI(leaderWorkerSet), warn.String())

	// Two in the grouper namespace: neither is adopted, and the warning names both.
	second, secondCM := chartGrouper(t)
	second.Name = "gangmap-2"
	secondCM.Name = "gangmap-definitions-2"
	c = &kubeClients{kube: fake.NewSimpleClientset(d, cm, second, secondCM)}
	reg, warn = adoptFresh(t, c)
	assert.Nil(t, reg.Lookup(customJob), "no definition of either is adopted")
	assert.True(t, nativeInKAI(jobSet), "no native table of either is adopted")
	assert.Contains(t, warn.String(), "2 Deployments in gangmap-system carry the grouper's labels (gangmap-system/gangmap, gangmap-system/gangmap-2): none of their settings are used")
}

// adoptFresh runs c.adoptGrouper on a fresh offline registry with the default native table and
// no native flags given, and returns the registry and what it said.
func adoptFresh(t *testing.T, c *kubeClients) (*definitions.Registry, bytes.Buffer) {
	t.Helper()
	kaiNativeTable, nativeFlagsGiven = native.DefaultTable(), false
	reg, err := newOfflineRegistry(nil, definitions.DecodeOptions{})
	require.NoError(t, err)
	var warn bytes.Buffer
	c.adoptGrouper(context.Background(), reg, &warn)
	return reg, warn
}
