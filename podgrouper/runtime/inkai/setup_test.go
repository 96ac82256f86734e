package inkai

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gangmap/gangmap/internal/kaisamples"
)

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
	obs, ok := g.Observer.(*Observer)
	require.True(t, ok, "the grouper's Observer is inkai's")
	assert.NotNil(t, obs.Findings)
	require.NotNil(t, obs.Metrics)
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
	obs, ok = g.Observer.(*Observer)
	require.True(t, ok)
	assert.Nil(t, obs.Metrics)
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
