package workloadmetrics

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// A workload whose author wrote 40 roles and 40 PodGroups (an AppWrapper of 40 components, a
// LeaderWorkerSet of 40 groups) gets series for the first MaxRoleSeries roles plus one
// OtherRoles series summing the rest, GPUs and pods alike, and condition series for the first
// MaxPodGroupSeries PodGroups by name: its series stay bounded whatever the author writes.
func TestSeriesPerWorkloadBounded(t *testing.T) {
	w := Workload{UID: "u1", Namespace: "team-a", Kind: "AppWrapper.workload.codeflare.dev", Name: "many"}
	for i := range 40 {
		w.Roles = append(w.Roles, Role{Name: fmt.Sprintf("r-%02d", i), GPUs: 1, GangGPUs: 0.5})
		w.PodGroups = append(w.PodGroups, fmt.Sprintf("pg-%02d", 39-i))
	}
	stored := &v2alpha2.PodGroup{Status: v2alpha2.PodGroupStatus{
		Conditions: []v2alpha2.PodGroupCondition{{Type: "Ready", Status: corev1.ConditionFalse}}}}
	tr := &Tracker{MaxWorkloads: 10, Reader: &sharedPodGroups{stored: stored}}
	require.True(t, tr.SetWorkload(w))
	setPod(tr, "u1", types.NamespacedName{Namespace: "team-a", Name: "p0"}, "r-00", "Running")
	setPod(tr, "u1", types.NamespacedName{Namespace: "team-a", Name: "p35"}, "r-35", "Pending")
	setPod(tr, "u1", types.NamespacedName{Namespace: "team-a", Name: "p39"}, "r-39", "Pending")

	byName := collectByName(t, tr)
	roleGPUs := labelValues(byName["gangmap_workload_role_gpus"], "role")
	assert.Len(t, roleGPUs, MaxRoleSeries+1)
	assert.Equal(t, 1.0, roleGPUs["r-00"])
	assert.Equal(t, 1.0, roleGPUs["r-31"])
	assert.Equal(t, 8.0, roleGPUs[OtherRoles], "roles r-32 … r-39, one GPU each")
	assert.NotContains(t, roleGPUs, "r-32")
	assert.Equal(t, 4.0, labelValues(byName["gangmap_workload_role_gang_min_gpus"], "role")[OtherRoles])
	pods := labelValues(byName["gangmap_workload_role_pods"], "role")
	assert.Equal(t, map[string]float64{"r-00": 1, OtherRoles: 2}, pods)
	conds := labelValues(byName["gangmap_workload_podgroup_condition"], "podgroup")
	assert.Len(t, conds, MaxPodGroupSeries)
	assert.Contains(t, conds, "pg-00")
	assert.Contains(t, conds, "pg-31")
	assert.NotContains(t, conds, "pg-32")

	problems, err := testutil.CollectAndLint(tr)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// A workload with at most MaxRoleSeries roles keeps every role's own series and no OtherRoles.
func TestSeriesPerWorkloadUnderTheCap(t *testing.T) {
	tr := &Tracker{MaxWorkloads: 10}
	require.True(t, tr.SetWorkload(FromPlan(seedPlan(t), "u1", "JobSet.jobset.x-k8s.io")))
	setPod(tr, "u1", types.NamespacedName{Namespace: "team-a", Name: "w-0"}, "workers", "Pending")
	byName := collectByName(t, tr)
	assert.Equal(t, map[string]float64{"leader": 4, "workers": 8}, labelValues(byName["gangmap_workload_role_gpus"], "role"))
	assert.Equal(t, map[string]float64{"workers": 1}, labelValues(byName["gangmap_workload_role_pods"], "role"))
}

// collectByName gathers the tracker's metric families by name.
func collectByName(t *testing.T, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// labelValues sums a family's gauge values by the value of one label.
func labelValues(mf *dto.MetricFamily, label string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				out[l.GetValue()] += m.GetGauge().GetValue()
			}
		}
	}
	return out
}
