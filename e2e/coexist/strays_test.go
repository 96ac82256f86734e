//go:build e2e

package coexist

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
	"github.com/gangmap/gangmap/podgrouper/runtime/strays"
)

// waitDefinition waits until the grouper uses, for gvk, a definition whose name is name ("" for
// none) from source.
func waitDefinition(t *testing.T, ctx context.Context, apiVersion, kind, name string, source definitions.Source) {
	t.Helper()
	gv, err := schemaGV(apiVersion)
	require.NoError(t, err)
	require.NoError(t, framework.WaitFor(ctx, timeout, func(context.Context) (bool, error) {
		c := gm.g.Registry.Lookup(gv.WithKind(kind))
		if name == "" {
			return c == nil, nil
		}
		return c != nil && c.Name() == name && c.Loaded.Source == source, nil
	}), "the grouper uses definition %q (%s) for %s", name, source, kind)
}

// TestGangRenamedOnePodGroup: a cluster definition renames its gang (podGroup.name) under a
// running workload. Its pods move to the new PodGroup at once and the old one, which no pod names
// any more, is deleted after the grace period: exactly one PodGroup within seconds. Deleting the
// definition (no other covers the kind) then removes gangmap's skip mark from the workload, so
// KAI's pod-grouper groups its later pods again.
func TestGangRenamedOnePodGroup(t *testing.T) {
	ctx := context.Background()
	ns := "renamed"
	karta, err := framework.KartaFor("../testdata/customjob-karta.yaml", "faults-example-com-v1-doomedjob", "faults.example.com", "DoomedJob")
	require.NoError(t, err)
	require.NoError(t, cp.Client.Create(ctx, karta))
	waitDefinition(t, ctx, "faults.example.com/v1", "DoomedJob", karta.GetName(), definitions.SourceCluster)
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	job, err := framework.ReadObject("../testdata/customjob.yaml")
	require.NoError(t, err)
	job.SetAPIVersion("faults.example.com/v1")
	job.SetKind("DoomedJob")
	job.SetNamespace(ns)
	job.SetName("renamed")
	require.NoError(t, cp.Client.Create(ctx, job))
	pods, err := cp.RunRoles(ctx, job, 1, "coordinator", "worker")
	require.NoError(t, err)
	before := fmt.Sprintf("pg-%s-customjob", job.GetUID())
	waitGrouped(t, ctx, ns, before, pods...)
	waitOnePodGroup(t, ctx, ns, job, before, timeout)

	patch := []byte(`{"spec":{"optimizationInstructions":{"gangScheduling":{"podGroup":{"name":"trainer"}}}}}`)
	start := time.Now()
	require.NoError(t, cp.Client.Patch(ctx, karta, client.RawPatch(types.MergePatchType, patch)))
	after := fmt.Sprintf("pg-%s-trainer", job.GetUID())
	waitGrouped(t, ctx, ns, after, pods...)
	waitOnePodGroup(t, ctx, ns, job, after, strayGrace+timeout)
	t.Logf("one PodGroup (%s) %v after the rename (grace %v)", after, time.Since(start).Round(100*time.Millisecond), strayGrace)
	assertStrayEvent(t, ctx, ns, job.GetName(), before)

	// The definition goes: the kind is no longer gangmap's, and the mark gangmap set goes too.
	require.True(t, ownerskip.Marked(getObject(t, ctx, job)), "gangmap marked the DoomedJob")
	require.NoError(t, cp.Client.Delete(ctx, karta))
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		got := getObject(t, ctx, job)
		_, set := got.GetAnnotations()[ownerskip.SetBy]
		return !ownerskip.Marked(got) && !set, nil
	}), "gangmap removes its skip mark when the kind stops being gangmap's")
	next := createPodFor(t, ctx, job, "worker", 9)
	waitGrouped(t, ctx, ns, fmt.Sprintf("pg-%s-%s", job.GetName(), job.GetUID()), next)
}

// TestClusterDefinitionDeletedCatalogWins: a cluster Karta for JobSet (gang "cluster-jobset")
// wins over the built-in catalog's (gang "jobset"); deleting it makes the catalog's win. The
// JobSet's pods move to the catalog's PodGroup and the cluster definition's PodGroup is deleted
// after the grace period: exactly one PodGroup within seconds.
func TestClusterDefinitionDeletedCatalogWins(t *testing.T) {
	ctx := context.Background()
	ns := "catalog-wins"
	karta := catalogJobSetKarta(t, "cluster-jobset")
	require.NoError(t, cp.Client.Create(ctx, karta))
	waitDefinition(t, ctx, "jobset.x-k8s.io/v1alpha2", "JobSet", karta.GetName(), definitions.SourceCluster)
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	objs, err := cp.ApplyFile(ctx, "../testdata/jobset-leader-workers.yaml", ns)
	require.NoError(t, err)
	js := objs[0]
	pods, err := cp.RunJobSet(ctx, js)
	require.NoError(t, err)
	clusterName := fmt.Sprintf("pg-%s-cluster-jobset", js.GetUID())
	waitGrouped(t, ctx, ns, clusterName, pods...)
	waitOnePodGroup(t, ctx, ns, js, clusterName, timeout)

	start := time.Now()
	require.NoError(t, cp.Client.Delete(ctx, karta))
	catalogName := fmt.Sprintf("pg-%s-jobset", js.GetUID())
	waitGrouped(t, ctx, ns, catalogName, pods...)
	waitOnePodGroup(t, ctx, ns, js, catalogName, strayGrace+timeout)
	t.Logf("one PodGroup (%s) %v after the cluster definition was deleted (grace %v)", catalogName, time.Since(start).Round(100*time.Millisecond), strayGrace)
	assert.True(t, ownerskip.Marked(getObject(t, ctx, js)), "the catalog's definition keeps the JobSet gangmap's: the mark stays")
}

// catalogJobSetKarta is the built-in catalog's JobSet definition as a cluster Karta named
// cluster-jobset with its gang renamed; its gangmap extensions travel in the annotation
// gangmap.io/extensions, as on any cluster Karta.
func catalogJobSetKarta(t *testing.T, gang string) *unstructured.Unstructured {
	t.Helper()
	k, err := framework.ReadObject("../../definitions/catalog/jobset-x-k8s-io-jobset-v1alpha2.yaml")
	require.NoError(t, err)
	k.SetName("cluster-jobset")
	ext, found, err := unstructured.NestedMap(k.Object, "spec", "gangmap")
	require.NoError(t, err)
	if found {
		b, err := json.Marshal(ext)
		require.NoError(t, err)
		k.SetAnnotations(map[string]string{"gangmap.io/extensions": string(b)})
		unstructured.RemoveNestedField(k.Object, "spec", "gangmap")
	}
	require.NoError(t, unstructured.SetNestedField(k.Object, gang, "spec", "optimizationInstructions", "gangScheduling", "podGroup", "name"))
	return k
}

// assertStrayEvent checks the Event on the workload that says the stray PodGroup was deleted.
func assertStrayEvent(t *testing.T, ctx context.Context, ns, workload, stray string) {
	t.Helper()
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		evs, err := cp.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == workload && e.Reason == strays.ReasonStray && strings.Contains(e.Message, "deleted stray PodGroup "+stray) {
				return true, nil
			}
		}
		return false, nil
	}), "a %s Event on %s for %s", strays.ReasonStray, workload, stray)
}

func getObject(t *testing.T, ctx context.Context, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(obj), got))
	return got
}

func createPodFor(t *testing.T, ctx context.Context, job *unstructured.Unstructured, role string, i int) *corev1.Pod {
	t.Helper()
	p, err := cp.CreatePodFor(ctx, job, role, i)
	if apierrors.IsAlreadyExists(err) {
		t.Fatalf("pod %s-%s-%d exists", job.GetName(), role, i)
	}
	require.NoError(t, err)
	return p
}
