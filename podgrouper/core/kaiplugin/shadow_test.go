package kaiplugin

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gangmap/gangmap/podgrouper/core/kaiplugin/kaisamples"
)

// TestShadowTellsEachDifferenceOnce: in shadow mode KAI writes its own grouper's PodGroup; for the
// e2e CustomJob (no native plugin, KAI's default grouper: pg-<name>-<uid>, minMember 1, pkg/
// podgrouper/podgrouper/plugins/defaultgrouper) gangmap's PodGroup differs (pg-<uid>-customjob,
// minSubGroup 2: coordinator 1, worker 2), so Compare counts Different for every pod and tells it
// once per workload in a DryRunPodGroup Event naming both; equal gangs count Same and tell
// nothing; gangmap's error and gangmap's "no PodGroup" are told too.
func TestShadowTellsEachDifferenceOnce(t *testing.T) {
	s, g, _, _ := observed(t)
	rec := record.NewFakeRecorder(10)
	sh := &Shadow{Recorder: rec}
	kai := &Gang{Name: "pg-customjob-" + string(s.Workload.GetUID()), MinMember: 1}
	before := testutil.ToFloat64(shadowOutcomes.WithLabelValues(ShadowDifferent))
	for _, p := range s.Pods {
		md, err := g.Metadata(s.Workload, p, kaiChain(s.Workload)...)
		require.NoError(t, err)
		gm := GangOf(md)
		assert.Equal(t, ShadowDifferent, sh.Compare(s.Workload, p, &gm, nil, "Default Grouper", kai))
	}
	assert.Equal(t, 3.0, testutil.ToFloat64(shadowOutcomes.WithLabelValues(ShadowDifferent))-before)
	require.Len(t, rec.Events, 1, "one Event for the workload's three pods")
	assert.Equal(t, "Normal DryRunPodGroup shadow mode: gangmap would write PodGroup pg-uid-customjob-customjob (minSubGroup 2: coordinator 1, worker 2); KAI's grouper \"Default Grouper\" wrote PodGroup pg-customjob-uid-customjob (minMember 1)", <-rec.Events)

	same := Gang{Name: "pg-a", MinSubGroup: ptr.To[int32](1), SubGroups: []SubGroupGang{{Name: "r", MinMember: 2}}}
	assert.Equal(t, ShadowSame, sh.Compare(s.Workload, s.Pods[0], &same, nil, "x", &same))
	assert.Equal(t, ShadowGangmapError, sh.Compare(s.Workload, s.Pods[0], nil, errors.New("plan: boom"), "Default Grouper", kai))
	assert.Equal(t, ShadowNoPodGroup, sh.Compare(s.Workload, s.Pods[0], nil, nil, "Default Grouper", nil))
	require.Len(t, rec.Events, 2, "Same tells nothing")
	assert.Contains(t, <-rec.Events, "gangmap could not group pod "+s.Pods[0].Name+": plan: boom")
	assert.Equal(t, "Normal DryRunPodGroup shadow mode: gangmap would put pod "+s.Pods[0].Name+" in no PodGroup; KAI's grouper \"Default Grouper\" gave no PodGroup", <-rec.Events)
}

// TestSetupWiresFindingsMetricsAndShadow: Setup on a manager (as KAI's app builds it; nothing is
// started) gives the grouper an Observer with findings and the workload metrics, registered on
// controller-runtime's registry (the one KAI's --metrics-bind-address serves:
// gangmap_workload_metrics_workloads is gathered), and a Shadow only with --gangmap-shadow;
// --max-workload-metrics=0 leaves the workload series out.
func TestSetupWiresFindingsMetricsAndShadow(t *testing.T) {
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	require.NoError(t, err)
	o := DefaultOptions()
	o.ClusterDefinitions = false
	kai := KAIConfig{SchedulerName: kaisamples.SchedulerName}
	_, g, err := Setup(mgr, o, kai, nil)
	require.NoError(t, err)
	require.NotNil(t, g.Observer)
	assert.NotNil(t, g.Observer.Findings)
	require.NotNil(t, g.Observer.Metrics)
	assert.Nil(t, g.Shadow)
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	assert.Contains(t, names, "gangmap_workload_metrics_workloads")
	assert.Contains(t, names, "gangmap_kai_plugin_shadow_total")

	o.Shadow, o.MaxWorkloadMetrics = true, 0
	_, g, err = Setup(mgr, o, kai, nil)
	require.NoError(t, err)
	require.NotNil(t, g.Shadow)
	assert.Nil(t, g.Observer.Metrics)
}

// TestValidateRefusesBadFindingsAndMetricsFlags: each bad value is named by its flag.
func TestValidateRefusesBadFindingsAndMetricsFlags(t *testing.T) {
	o := DefaultOptions()
	require.NoError(t, o.Validate())
	o.Findings.MoreThanPlannedGrace, o.Findings.GangUnsatisfiableGrace, o.Findings.ResendInterval, o.MaxWorkloadMetrics = 0, -1, 0, -2
	err := o.Validate()
	require.Error(t, err)
	for _, want := range []string{"--findings-more-than-planned-grace must be positive, got 0s", "--findings-gang-unsatisfiable-grace must be positive, got -1ns",
		"--findings-event-interval must be positive, got 0s", "--max-workload-metrics must not be negative, got -2"} {
		assert.Contains(t, err.Error(), want)
	}
}
