package controller

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/internal/heapmeasure"
	"github.com/gangmap/gangmap/manifest"
)

// customJob is the scale benchmark's workload (e2e/testdata/customjob.yaml) as the cache holds
// it: namespace, UID and resourceVersion set.
func customJob(tb testing.TB, i int) *unstructured.Unstructured {
	tb.Helper()
	objs, err := manifest.ReadFile("../../../e2e/testdata/customjob.yaml")
	require.NoError(tb, err)
	u := objs[0]
	u.SetNamespace("scale")
	u.SetName(fmt.Sprintf("train-%06d", i))
	u.SetUID(types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)))
	u.SetResourceVersion("123456")
	return u
}

// The stray collector gets the workload's identity, nothing of its spec.
func TestOwnerIdentity(t *testing.T) {
	u := customJob(t, 7)
	id := ownerIdentity(u)
	assert.Equal(t, map[string]any{
		"apiVersion": "e2e.example.com/v1", "kind": "CustomJob",
		"metadata": map[string]any{"namespace": "scale", "name": "train-000007", "uid": "00000000-0000-0000-0000-000000000007", "resourceVersion": "123456"},
	}, id.Object)
	assert.Contains(t, u.Object, "spec", "the workload is left as it was")
}

// BenchmarkStrayOwnerBytes reports the live heap the stray collector keeps per workload for its
// owner (it keeps the latest request of every workload until the workload is deleted): the
// decision's copy of the whole workload before, its identity now.
func BenchmarkStrayOwnerBytes(b *testing.B) {
	const n = 10000
	for _, tc := range []struct {
		name string
		keep func(*unstructured.Unstructured) *unstructured.Unstructured
	}{{"whole-workload", (*unstructured.Unstructured).DeepCopy}, {"identity", ownerIdentity}} {
		b.Run(tc.name, func(b *testing.B) {
			base := customJob(b, 0)
			src := make([]*unstructured.Unstructured, n)
			for i := range src {
				src[i] = base.DeepCopy()
				src[i].SetName(fmt.Sprintf("train-%06d", i))
				src[i].SetUID(types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)))
			}
			var per float64
			for range b.N {
				kept := make([]*unstructured.Unstructured, n)
				before := heapmeasure.Live()
				for i := range kept {
					kept[i] = tc.keep(src[i])
				}
				per = float64(heapmeasure.Live()-before) / n
				runtime.KeepAlive(kept)
			}
			b.ReportMetric(per, "bytes/workload")
		})
	}
}
