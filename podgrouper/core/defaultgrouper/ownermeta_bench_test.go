package defaultgrouper

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/internal/heapmeasure"
)

// BenchmarkTopOwnerMetadataBytes reports what the default grouper keeps per workload for the
// top-owner-metadata annotation once 10,000 of the scale benchmark's CustomJobs were decided
// (live heap after a GC, the owners' own objects excluded), and the time per annotation.
func BenchmarkTopOwnerMetadataBytes(b *testing.B) {
	const n = 10000
	rng := rand.New(rand.NewPCG(1, 2))
	for range b.N {
		owners := make([]topOwnerMetadata, n)
		for i := range owners {
			owners[i] = topOwnerMetadata{Name: fmt.Sprintf("w%05d", i), UID: randomUID(rng), Group: "e2e.example.com", Version: "v1", Kind: "CustomJob"}
		}
		objs := make([]*unstructured.Unstructured, n)
		for i, m := range owners {
			objs[i] = ownerOf(m)
		}
		g := &Grouper{}
		before := heapmeasure.Live()
		for _, o := range objs {
			_ = g.topOwnerMetadata(o)
		}
		after := heapmeasure.Live()
		runtime.KeepAlive(g)
		runtime.KeepAlive(objs)
		b.ReportMetric(float64(int64(after)-int64(before))/n, "B/workload")
	}
}
