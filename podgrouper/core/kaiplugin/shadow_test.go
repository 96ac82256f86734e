package kaiplugin

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/internal/kaisamples"
)

// TestShadowTellsEachDifferenceOnce: in shadow mode KAI writes its own grouper's PodGroup; for the
// e2e CustomJob (no native plugin, KAI's default grouper: pg-<name>-<uid>, minMember 1, pkg/
// podgrouper/podgrouper/plugins/defaultgrouper) gangmap's PodGroup differs (pg-<uid>-customjob,
// minSubGroup 2: coordinator 1, worker 2), so Compare counts Different for every pod and tells it
// once per workload in a DryRunPodGroup Event naming both; equal gangs count Same and tell
// nothing; gangmap's error and gangmap's "no PodGroup" are told too.
func TestShadowTellsEachDifferenceOnce(t *testing.T) {
	s, g := customJob(t)
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

// customJob is the e2e CustomJob sample (1 coordinator, 2 workers: e2e/testdata/customjob.yaml
// with the Karta e2e/testdata/customjob-karta.yaml) and gangmap's grouper inside KAI for it.
func customJob(t *testing.T) (kaisamples.Sample, *Grouper) {
	t.Helper()
	reg := sampleRegistry(t)
	s, ok, err := kaisamples.LoadFile(context.Background(), "../../../e2e/testdata/customjob.yaml", "team-a", reg)
	require.NoError(t, err)
	require.True(t, ok)
	require.Len(t, s.Pods, 3)
	_, g := embedded(t, reg, nil, s)
	return s, g
}
