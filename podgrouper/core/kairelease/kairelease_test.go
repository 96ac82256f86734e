package kairelease

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Entry counts and varying entries per tag are kai-releases.md §1 ("GVK entries / distinct kinds"
// and "Entries that vary"), read from KAI's hub.go at each tag.
func TestNativeTablesPerTag(t *testing.T) {
	cases := []struct {
		version    string
		entries    int
		has, lacks []string
	}{
		{"v0.9", 38, nil, []string{podCliqueSet, jobSet, trainJob}},
		{"v0.9.20", 38, nil, []string{podCliqueSet}},
		{"v0.9.3", 39, []string{podCliqueSet}, nil}, // cut from main
		{"v0.10", 41, []string{podCliqueSet, dynamoComponent, dynamoGraphV1a1}, []string{jobSet}},
		{"v0.10.4", 39, []string{podCliqueSet}, []string{dynamoComponent, dynamoGraphV1a1}},
		{"v0.12", 40, []string{podCliqueSet, dynamoGraphV1a1}, []string{dynamoComponent, jobSet}},
		{"v0.12.3", 41, []string{dynamoComponent, dynamoGraphV1a1}, nil},
		{"v0.13", 42, []string{jobSet, trainJob, dynamoGraphV1a1}, []string{dynamoComponent, dynamoGraphAny}},
		{"v0.14.7", 42, []string{jobSet}, nil},
		{"v0.15.3", 42, []string{jobSet}, nil},
		{"v0.16", 42, []string{jobSet}, nil},
		{"v0.17", 42, []string{jobSet, trainJob, dynamoGraphAny}, []string{dynamoGraphV1a1}},
		{"0.17.0", 42, []string{dynamoGraphAny}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.version, func(t *testing.T) {
			r, err := Parse(tc.version)
			require.NoError(t, err)
			assert.Len(t, r.NativeKinds, tc.entries)
			for _, k := range tc.has {
				assert.Contains(t, r.NativeKinds, k)
			}
			for _, k := range tc.lacks {
				assert.NotContains(t, r.NativeKinds, k)
			}
			assert.Empty(t, r.Warning)
		})
	}
}

// Capabilities per line are kai-releases.md §2 (skip annotation v0.15.0+), §3 (CRD fields) and
// §6 (DefaultNodePoolLabelKey).
func TestCapabilitiesPerLine(t *testing.T) {
	type caps struct{ skip, parent, minSubGroup, preemptibility, delays, karta bool }
	want := map[string]caps{
		"v0.9":  {},
		"v0.10": {parent: true, preemptibility: true},
		"v0.12": {parent: true, preemptibility: true},
		"v0.13": {parent: true, preemptibility: true},
		"v0.14": {parent: true, preemptibility: true},
		"v0.15": {skip: true, parent: true, minSubGroup: true, preemptibility: true},
		"v0.16": {skip: true, parent: true, minSubGroup: true, preemptibility: true},
		"v0.17": {skip: true, parent: true, minSubGroup: true, preemptibility: true, delays: true, karta: true},
	}
	assert.Equal(t, []string{"v0.9", "v0.10", "v0.12", "v0.13", "v0.14", "v0.15", "v0.16", "v0.17"}, Known())
	for _, v := range Known() {
		r := MustParse(v)
		got := caps{r.SkipAnnotation, r.SubGroupParent, r.MinSubGroup, r.Preemptibility, r.Delays, r.KartaFallback}
		assert.Equal(t, want[v], got, v)
		assert.Equal(t, r.SkipAnnotation, r.HonoursSkipAnnotation(), v)
		assert.Equal(t, v, r.Line)
		if v == "v0.9" {
			assert.Equal(t, "", r.NodePoolLabelKey)
		} else {
			assert.Equal(t, "kai.scheduler/node-pool", r.NodePoolLabelKey)
		}
		// Costs: a line before v0.15 names the skip annotation and the flat minMember.
		costs := r.Costs()
		assert.Equal(t, !r.SkipAnnotation, slices.ContainsFunc(costs, func(s string) bool { return strings.Contains(s, "skip-podgrouper") }), v)
		assert.Equal(t, !r.MinSubGroup, slices.ContainsFunc(costs, func(s string) bool { return strings.Contains(s, "flat PodGroup") }), v)
	}
	var nilRelease *Release
	assert.True(t, nilRelease.HonoursSkipAnnotation())
	assert.True(t, nilRelease.HasMinSubGroup())
}

func TestParseNewerAndBad(t *testing.T) {
	for _, v := range []string{"v0.18", "v0.18.2", "v1.0.0", "v0.30.0-rc1"} {
		r, err := Parse(v)
		require.NoError(t, err, v)
		assert.Equal(t, "v0.17", r.Line, v)
		assert.Contains(t, r.Warning, "newer than the latest release gangmap knows (v0.17)", v)
		assert.Equal(t, v, r.Requested)
	}
	r, err := Parse("v0.15.0-rc1")
	require.NoError(t, err)
	assert.Equal(t, "v0.15", r.Line)
	for v, msg := range map[string]string{
		"v0.11":   "no v0.11 release",
		"v0.8.3":  "older than v0.9",
		"v0.20.1": "retracts",
		"latest":  "expected vMAJOR.MINOR",
		"v0.x":    "is not a number",
		"":        "expected vMAJOR.MINOR",
	} {
		_, err := Parse(v)
		assert.ErrorContains(t, err, msg, v)
	}
	// v0.20.2 and later are newer than every line: treated as the latest.
	r, err = Parse("v0.20.2")
	require.NoError(t, err)
	assert.NotEmpty(t, r.Warning)
}

// TestHasSegmentsPerLine: segments need sub-groups with parent and topologyConstraint (CRD
// v0.10.0+) and minSubGroup (v0.15.0+), read from deployments/kai-scheduler/crds/
// scheduling.run.ai_podgroups.yaml at v0.9.20, v0.10.5, v0.14.7, v0.15.0 and v0.16.0
// (kai-releases.md §3); lines before v0.15 name what is not written in their costs.
func TestHasSegmentsPerLine(t *testing.T) {
	for line, want := range map[string]bool{"v0.9": false, "v0.10": false, "v0.14": false, "v0.15": true, "v0.16": true, "v0.17": true} {
		r, err := Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.HasSegments(); got != want {
			t.Errorf("%s: HasSegments() = %v, want %v", line, got, want)
		}
		found := false
		for _, c := range r.Costs() {
			found = found || c == r.SegmentsNote()
		}
		if found == want {
			t.Errorf("%s: Costs() names the segments note: %v, want %v", line, found, !want)
		}
	}
	var nilRelease *Release
	if !nilRelease.HasSegments() {
		t.Error("a nil Release (the latest) has segments")
	}
}
