package workloadmap

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/internal/heapmeasure"
)

// liveHeap is the live heap after two collections.

// BenchmarkCachedPlanBytes reports the live heap one cached plan costs (the plan cache's entry:
// the gang.Plan and its per-PodGroup metadata) for n workloads of a catalog kind, each planned
// from its own copy of the workload, as the grouper plans each workload read from its cache.
// The workload objects themselves are not counted (they are dropped after planning). Goal
// (issue 19): the grouper within 256 MiB resident with 100,000 pods and 10,000 workloads.
func BenchmarkCachedPlanBytes(b *testing.B) {
	ctx := context.Background()
	const n = 4000 // all cached (PlanCacheSize above n)
	for _, file := range []string{"jobset-leader-workers.yaml", "pytorchjob-kai-elastic-min1-max3.yaml", "lws-replicas2-size4-8gpu-limits.yaml", "../../../e2e/testdata/customjob.yaml"} {
		b.Run(filepath.Base(file), func(b *testing.B) {
			base := workload(b, file, nil)
			var per float64
			for i := 0; i < b.N; i++ {
				g := newGrouper(b)
				g.PlanCacheSize = n + 1
				// The scale benchmark's CustomJob has its definition in e2e/testdata.
				defs, err := definitions.LoadPaths([]string{"../../../e2e/testdata/customjob-karta.yaml"}, definitions.SourceFile, definitions.DecodeOptions{Strict: true})
				require.NoError(b, err)
				g.Registry.SetSource(definitions.SourceFile, defs)
				// Warm the definition and the grouper's lazily made state.
				_, _, err = g.Plan(ctx, base.DeepCopy())
				require.NoError(b, err)
				g.Forget("bench", base.GetUID())
				before := heapmeasure.Live()
				for j := 0; j < n; j++ {
					u := &unstructured.Unstructured{Object: base.DeepCopy().Object}
					u.SetName(fmt.Sprintf("w-%06d", j))
					u.SetUID(types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", j)))
					if _, _, err := g.Plan(ctx, u); err != nil {
						b.Fatal(err)
					}
				}
				per = float64(heapmeasure.Live()-before) / n
				runtime.KeepAlive(g)
			}
			b.ReportMetric(per, "bytes/plan")
			b.ReportMetric(per*10000/(1<<20), "MiB/10k-plans")
		})
	}
}
