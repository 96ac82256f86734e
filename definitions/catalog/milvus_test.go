package catalog_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gangmap/gangmap/gang"
)

// The Milvus tests take their expected components and counts from milvus-operator v1.3.8
// (commit a6dcc6386adf), not from the manifest's keys:
//   - pkg/controllers/components.go GetComponentsBySpec: which components a Milvus deploys, in
//     order (cdc if set; standalone mode: standalone; cluster ≥ 2.6: Milvus2_6Components; cluster
//     < 2.6: MixtureComponents or MilvusComponents, plus streamingnode if UseStreamingNode);
//   - apis/milvus.io/v1beta1/milvus_webhook.go DefaultComponents / defaultComponentsReplicas: the
//     spec the operator reconciles (mixCoord when no coordinator is set, image
//     milvusdb/milvus:v2.6.11 when none, replicas 1, standalone 0 in cluster mode);
//   - components.go GetReplicas / GetLeastReplicasRegardingHPA: a group's replicas, -1 (HPA) is 1;
//   - apis/milvus.io/v1beta1/milvus_types.go isImageVersionGreaterThan2_6: the version rule.

// Milvus roles as the operator deploys them; cluster mode always has a standalone Deployment at 0
// replicas (defaultComponentsReplicas), which is a role of 0 pods and no sub-group.
func TestMilvus(t *testing.T) {
	one := func(name string) roleWant { return roleWant{name, 1, 1, 1, 1, 0} }
	sub := func(name string) subGroupWant { return subGroupWant{name, 1, 1} }
	standalone0 := roleWant{"standalone", 0, 0, 0, 0, 0}
	// Milvus2_6Components at replicas 1 (all defaulted): mixcoord, datanode, streamingnode,
	// querynode, proxy, standalone (0).
	v26 := planWant{
		podGroups: []podGroupWant{{
			name: "pg-my-release-milvus", minSubGroup: 5, pods: 5,
			subGroups: []subGroupWant{sub("mixcoord"), sub("datanode"), sub("streamingnode"), sub("querynode"), sub("proxy")},
		}},
		roles: []roleWant{one("mixcoord"), one("datanode"), one("streamingnode"), one("querynode"), one("proxy"), standalone0},
	}
	// MilvusComponents (v2.5, a coordinator set): the four coordinators, datanode, querynode,
	// indexnode, proxy; no streaming node (streamingMode and streamingNode unset).
	v25coords := planWant{
		podGroups: []podGroupWant{{
			name: "pg-my-release-milvus", minSubGroup: 8, pods: 8,
			subGroups: []subGroupWant{sub("rootcoord"), sub("datacoord"), sub("querycoord"), sub("indexcoord"), sub("datanode"), sub("querynode"), sub("indexnode"), sub("proxy")},
		}},
		roles: []roleWant{one("rootcoord"), one("datacoord"), one("querycoord"), one("indexcoord"), one("datanode"), one("querynode"), one("indexnode"), one("proxy"), standalone0},
	}
	cases := map[string]planWant{
		// v2.5.16, all eight components listed; image and resources are shared defaults.
		"milvus-cluster-components-map-resources.yaml": v25coords,
		// v2.5.16 with only rootCoord listed: DefaultComponents adds the other three coordinators
		// (a coordinator is set, so no mixCoord), and datanode, querynode, indexnode, proxy.
		"milvus-cluster-4coords.yaml": v25coords,
		// components {}: the default image v2.6.11, so Milvus2_6Components, all defaulted.
		"milvus-cluster-default.yaml": v26,
		// v2.6.0 (the first version above 2.5.999).
		"milvus-cluster-woodpecker.yaml": v26,
		// v2.6.6 with cdc: cdc first (GetComponentsBySpec), then Milvus2_6Components.
		"milvus-cluster-cdc.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-my-release-milvus", minSubGroup: 6, pods: 6,
				subGroups: []subGroupWant{sub("cdc"), sub("mixcoord"), sub("datanode"), sub("streamingnode"), sub("querynode"), sub("proxy")},
			}},
			roles: []roleWant{one("cdc"), one("mixcoord"), one("datanode"), one("streamingnode"), one("querynode"), one("proxy"), standalone0},
		},
		// Standalone mode with cdc: cdc is deployed in either mode (UseCdc comes first).
		"milvus-standalone-cdc.yaml": {
			podGroups: []podGroupWant{{name: "pg-my-release-milvus", minSubGroup: 2, pods: 2, subGroups: []subGroupWant{sub("cdc"), sub("standalone")}}},
			roles:     []roleWant{one("cdc"), one("standalone")},
		},
		// Standalone mode, nothing listed: one standalone pod (replicas default 1).
		"milvus-standalone-default.yaml": {
			podGroups: []podGroupWant{{name: "pg-my-release-milvus", minSubGroup: 1, pods: 1, subGroups: []subGroupWant{sub("standalone")}}},
			roles:     []roleWant{one("standalone")},
		},
		// v2.5.11 without streamingNode or streamingMode (the beta sample at HEAD): UseStreamingNode
		// is false before 2.6, no coordinator is set, so MixtureComponents.
		"milvus-streaming-node-v2-5-11.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-my-release-milvus", minSubGroup: 5, pods: 5,
				subGroups: []subGroupWant{sub("mixcoord"), sub("datanode"), sub("querynode"), sub("indexnode"), sub("proxy")},
			}},
			roles: []roleWant{one("mixcoord"), one("datanode"), one("querynode"), one("indexnode"), one("proxy"), standalone0},
		},
		// v2.5.0-beta with streamingNode (the sample as first written): MixtureComponents plus
		// streamingnode (UseStreamingNode: streamingNode set), appended last.
		"milvus-streaming-node-v2-5-0-beta.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-milvus-milvus", minSubGroup: 6, pods: 6,
				subGroups: []subGroupWant{sub("mixcoord"), sub("datanode"), sub("querynode"), sub("indexnode"), sub("proxy"), sub("streamingnode")},
			}},
			roles: []roleWant{one("mixcoord"), one("datanode"), one("querynode"), one("indexnode"), one("proxy"), standalone0, one("streamingnode")},
		},
		// Per-zone groups (default image: 2.6): pods = Σ groups' replicas; mixcoord, not listed,
		// is deployed all the same.
		"milvus-deployment-groups.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-my-release-milvus", minSubGroup: 5, pods: 13,
				subGroups: []subGroupWant{sub("mixcoord"), {"datanode", 4, 4}, {"streamingnode", 2, 2}, {"querynode", 4, 4}, {"proxy", 2, 2}},
			}},
			roles: []roleWant{
				one("mixcoord"),
				{"datanode", 4, 4, 4, 4, 0},      // g1 2 + g2 2
				{"streamingnode", 2, 2, 2, 2, 0}, // g1 1 + g2 1
				{"querynode", 4, 4, 4, 4, 0},     // g1 2 + g2 2
				{"proxy", 2, 2, 2, 2, 0},         // g1 1 + g2 1
				standalone0,
			},
		},
		// A datanode group at replicas -1: HPA-managed, started at 1 (GetLeastReplicasRegardingHPA);
		// the other 2.6 components are defaulted.
		"milvus-group-replicas-minus1-hpa.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-grouped-milvus", minSubGroup: 5, pods: 5,
				subGroups: []subGroupWant{sub("mixcoord"), sub("datanode"), sub("streamingnode"), sub("querynode"), sub("proxy")},
			}},
			roles: []roleWant{one("mixcoord"), one("datanode"), one("streamingnode"), one("querynode"), one("proxy"), standalone0},
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// operatorIsAtLeast2_6 is milvus-operator v1.3.8's version rule, apis/milvus.io/v1beta1/
// milvus_types.go isImageVersionGreaterThan2_6, with the library the operator uses
// (github.com/blang/semver/v4 v4.0.0, in its go.mod): spec.components.version when set (parsed
// with ParseTolerant, an error is "before 2.6"); else the image's text after its last ':' (none:
// before 2.6), a "master-" tag being 2.6 or later; a version is 2.6 or later when it is greater
// than 2.5.999. An empty image is the operator's default (DefaultComponents, config.go).
func operatorIsAtLeast2_6(version, image string) bool {
	limit := semver.MustParse("2.5.999")
	if version != "" {
		v, err := semver.ParseTolerant(version)
		return err == nil && v.GT(limit)
	}
	if image == "" {
		image = "milvusdb/milvus:v2.6.11"
	}
	parts := strings.Split(image, ":")
	if len(parts) < 2 {
		return false
	}
	tag := parts[len(parts)-1]
	if strings.HasPrefix(tag, "master-") {
		return true
	}
	v, err := semver.ParseTolerant(tag)
	return err == nil && v.GT(limit)
}

// TestMilvusComponentsByVersion sets spec.components.version and image on a v2.5 cluster sample
// that lists rootCoord (milvus_cluster_4coords.yaml) and checks the components planned against
// the operator's rule: from 2.6, Milvus2_6Components (the listed rootCoord and the defaulted
// coordinators and indexNode are not deployed); before, MilvusComponents. Each case's decision
// is written from the rule (want) and also checked against the rule run with the operator's
// semver library, so the definition's CEL parsing is compared with the real parser.
func TestMilvusComponentsByVersion(t *testing.T) {
	before := []string{"rootcoord", "datacoord", "querycoord", "indexcoord", "datanode", "querynode", "indexnode", "proxy"}
	from26 := []string{"mixcoord", "datanode", "streamingnode", "querynode", "proxy"}
	cases := []struct {
		version, image string
		want           bool
	}{
		{"", "milvusdb/milvus:v2.6.0", true},
		{"", "milvusdb/milvus:v2.5.16", false},
		{"", "", true},                                           // the operator's default image, v2.6.11
		{"", "milvusdb/milvus:latest", false},                    // not semver: before 2.6, as the operator decides
		{"", "milvusdb/milvus", false},                           // no tag
		{"", "registry.local:5000/milvusdb/milvus", false},       // the port is not a tag that parses
		{"", "registry.local:5000/milvusdb/milvus:v2.6.3", true}, // the last ':' is the tag's
		{"", "milvusdb/milvus:master-20250601-1a2b3c4d", true},   // nightly builds
		{"", "milvusdb/milvus:v2.6.0@sha256:4e5f", false},        // digest: the text after the last ':' is the hash
		{"", "milvusdb/milvus:2.6", true},                        // ParseTolerant pads 2.6 to 2.6.0
		{"", "milvusdb/milvus:v3", true},
		{"", "milvusdb/milvus:v2", false},
		{"", "milvusdb/milvus:v2.6.0-rc1", true}, // 2.6.0-rc1 > 2.5.999
		{"", "milvusdb/milvus:v2.6-rc1", false},  // a short version cannot carry a pre-release
		{"", "milvusdb/milvus:v2.5.999", false},  // not greater than 2.5.999
		{"", "milvusdb/milvus:v2.5.1000", true},  // greater, strictly by semver
		{"", "milvusdb/milvus:v2.06.00", true},   // leading zeros dropped by ParseTolerant
		{"", "milvusdb/milvus:v2.6.0-01", false}, // a numeric pre-release with a leading zero
		{"", "milvusdb/milvus:v2.6.0+build.7", true},
		{"", "milvusdb/milvus:v2.6.0+", false},  // empty build metadata
		{"", "milvusdb/milvus:V2.6.0", false},   // only a lower-case v is dropped
		{"", "milvusdb/milvus:v2.6.0.1", false}, // four numbers
		{"", "milvusdb/milvus:v2.6.0-rc.1-x", true},
		{"", "milvusdb/milvus:2.6.-rc1", true},                      // ParseTolerant makes the third part "0-rc1"
		{"", "milvusdb/milvus:2.6.", false},                         // an empty patch
		{"", "milvusdb/milvus:v99999999999999999999999.0.0", false}, // over uint64: does not parse
		{"2.6.1", "milvusdb/milvus:v2.5.4", true},                   // version wins over the image
		{" v2.6.3 ", "milvusdb/milvus:v2.5.4", true},                // spaces trimmed
		{"bogus", "milvusdb/milvus:v2.6.0", false},                  // an unparsable version is before 2.6, image ignored
		{"master-20250601", "milvusdb/milvus:v2.6.0", false},        // "master-" counts in an image tag only
		{"v2.5.4", "milvusdb/milvus:master-20250601-1a2b", false},
	}
	for _, tc := range cases {
		t.Run(tc.version+"|"+tc.image, func(t *testing.T) {
			require.Equal(t, tc.want, operatorIsAtLeast2_6(tc.version, tc.image), "the written decision is the operator's")
			obj := workloadOf(t, "milvus-cluster-4coords.yaml")
			components := obj.Object["spec"].(map[string]any)["components"].(map[string]any)
			components["image"] = tc.image
			if tc.version != "" {
				components["version"] = tc.version
			}
			p, err := gang.Build(context.Background(), catalogRegistry(t).Lookup(obj.GroupVersionKind()), obj)
			require.NoError(t, err)
			var got []string
			for _, r := range p.Roles {
				if r.Pods > 0 {
					got = append(got, r.Name)
				}
			}
			want := before
			if tc.want {
				want = from26
			}
			assert.Equal(t, want, got)
		})
	}
}

// TestMilvusComponentRules: the other inputs of GetComponentsBySpec and GetReplicas, on the
// v2.5 sample milvus_cluster_4coords.yaml (rootCoord listed) and edits of it.
func TestMilvusComponentRules(t *testing.T) {
	cases := []struct {
		name string
		edit func(c map[string]any)
		want map[string]int64 // role → pods (roles of 0 pods left out)
	}{
		{"mixCoord wins over listed coordinators (UseMixCoord)", func(c map[string]any) {
			c["mixCoord"] = map[string]any{"replicas": int64(2)}
		}, map[string]int64{"mixcoord": 2, "datanode": 1, "querynode": 1, "indexnode": 1, "proxy": 1}},
		{"streamingMode false keeps a listed streamingNode out before 2.6", func(c map[string]any) {
			c["streamingNode"] = map[string]any{"replicas": int64(3)}
			c["streamingMode"] = false
		}, map[string]int64{"rootcoord": 1, "datacoord": 1, "querycoord": 1, "indexcoord": 1, "datanode": 1, "querynode": 1, "indexnode": 1, "proxy": 1}},
		{"streamingMode true deploys a defaulted streaming node before 2.6", func(c map[string]any) {
			c["streamingMode"] = true
		}, map[string]int64{"rootcoord": 1, "datacoord": 1, "querycoord": 1, "indexcoord": 1, "datanode": 1, "querynode": 1, "indexnode": 1, "proxy": 1, "streamingnode": 1}},
		{"groups only split proxy, dataNode, queryNode, streamingNode (GetDeploymentGroups)", func(c map[string]any) {
			c["queryNode"] = map[string]any{"replicas": int64(7), "groups": []any{
				map[string]any{"name": "a", "replicas": int64(2)}, map[string]any{"name": "b", "replicas": int64(-1)},
			}}
			c["rootCoord"] = map[string]any{"replicas": int64(2), "groups": []any{map[string]any{"name": "a", "replicas": int64(5)}}}
		}, map[string]int64{"rootcoord": 2, "datacoord": 1, "querycoord": 1, "indexcoord": 1, "datanode": 1, "querynode": 3, "indexnode": 1, "proxy": 1}},
		{"an empty groups list is no groups: the component's replicas", func(c map[string]any) {
			c["dataNode"] = map[string]any{"replicas": int64(4), "groups": []any{}}
		}, map[string]int64{"rootcoord": 1, "datacoord": 1, "querycoord": 1, "indexcoord": 1, "datanode": 4, "querynode": 1, "indexnode": 1, "proxy": 1}},
		{"a stopped component and a standalone set in cluster mode", func(c map[string]any) {
			c["proxy"] = map[string]any{"replicas": int64(0)}
			c["standalone"] = map[string]any{"replicas": int64(1)}
		}, map[string]int64{"rootcoord": 1, "datacoord": 1, "querycoord": 1, "indexcoord": 1, "datanode": 1, "querynode": 1, "indexnode": 1, "standalone": 1}},
		{"indexNode listed on 2.6 is not deployed", func(c map[string]any) {
			c["image"] = "milvusdb/milvus:v2.6.11"
			c["indexNode"] = map[string]any{"replicas": int64(3)}
		}, map[string]int64{"mixcoord": 1, "datanode": 1, "streamingnode": 1, "querynode": 1, "proxy": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := workloadOf(t, "milvus-cluster-4coords.yaml")
			tc.edit(obj.Object["spec"].(map[string]any)["components"].(map[string]any))
			p, err := gang.Build(context.Background(), catalogRegistry(t).Lookup(obj.GroupVersionKind()), obj)
			require.NoError(t, err)
			got := map[string]int64{}
			for _, r := range p.Roles {
				if r.Pods > 0 {
					got[r.Name] = r.Pods
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestOperatorPodsMilvusDefaulted: every pod milvus-operator creates for samples that list few
// or no components, with the labels of GetSelectorLabels (NewComponentAppLabels: instance,
// component, name "milvus", managed-by "milvus-operator"). milvus_cluster_default.yaml
// (components {}): Milvus2_6Components at replicas 1, standalone at 0 (no pod).
// milvus_cdc.yaml: standalone mode with cdc, one pod each.
func TestOperatorPodsMilvusDefaulted(t *testing.T) {
	const pg = "pg-my-release-milvus"
	pod := func(component string) placedPod {
		return placedPod{map[string]string{
			"app.kubernetes.io/instance":   "my-release",
			"app.kubernetes.io/component":  component,
			"app.kubernetes.io/name":       "milvus",
			"app.kubernetes.io/managed-by": "milvus-operator",
		}, pg, component, component}
	}
	t.Run("cluster default", func(t *testing.T) {
		assertEveryPodClaimed(t, "milvus-cluster-default.yaml", []placedPod{
			pod("mixcoord"), pod("datanode"), pod("streamingnode"), pod("querynode"), pod("proxy"),
		})
	})
	t.Run("standalone with cdc", func(t *testing.T) {
		assertEveryPodClaimed(t, "milvus-standalone-cdc.yaml", []placedPod{pod("cdc"), pod("standalone")})
	})
}

// TestMilvusRetiredComponentPod: during an upgrade to 2.6 the operator keeps the indexnode
// Deployment until the new proxy image is rolled out (pkg/controllers/deployments.go
// cleanupIndexNodeIfNeeded), but no longer deploys indexnode (GetComponentsBySpec). A pod of it
// is in no instance of the plan (gang.ErrNotInPlan, naming the component and the instance), never
// placed in the gang, and the gang does not count it; e2e TestMilvusComponentsTheSpecDoesNotList
// shows the grouper then gives it KAI's default PodGroup and a Warning Event.
func TestMilvusRetiredComponentPod(t *testing.T) {
	labels := map[string]string{
		"app.kubernetes.io/instance":   "my-release",
		"app.kubernetes.io/component":  "indexnode",
		"app.kubernetes.io/name":       "milvus",
		"app.kubernetes.io/managed-by": "milvus-operator",
	}
	_, err := assignPod(t, "milvus-cluster-default.yaml", labels)
	require.ErrorIs(t, err, gang.ErrNotInPlan, "the grouper's outside-the-plan path (KAI's default PodGroup, a Warning Event)")
	assert.Contains(t, err.Error(), `component "component" has no instance "indexnode" in the plan`)
	p := buildPlan(t, "milvus-cluster-default.yaml")
	require.Len(t, p.PodGroups, 1)
	assert.Equal(t, int64(5), p.PodGroups[0].Pods, "mixcoord, datanode, streamingnode, querynode, proxy")
}

// TestMilvusVersionRuleMatchesTheOperatorsParser compares the definition's decision with the
// operator's rule (operatorIsAtLeast2_6, blang/semver) on pseudo-random image tags and versions
// built from the characters that matter to semver parsing (fixed seed: reproducible).
func TestMilvusVersionRuleMatchesTheOperatorsParser(t *testing.T) {
	pieces := []string{"v", "2", "6", "5", "0", "00", "999", "1000", "3", ".", ".", ".", "-", "-", "+", "rc", "01", "a", "_", " ", ":", "master-"}
	rng := rand.New(rand.NewPCG(14, 26))
	base := workloadOf(t, "milvus-cluster-4coords.yaml")
	c := catalogRegistry(t).Lookup(base.GroupVersionKind())
	later := 0
	for i := 0; i < 600; i++ {
		var b strings.Builder
		for n := 1 + rng.IntN(8); n > 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		version, image := "", "milvusdb/milvus:"+text
		if i%2 == 1 {
			version, image = text, "milvusdb/milvus:v2.5.16"
		}
		obj := base.DeepCopy()
		components := obj.Object["spec"].(map[string]any)["components"].(map[string]any)
		components["image"] = image
		if version != "" {
			components["version"] = version
		}
		p, err := gang.Build(context.Background(), c, obj)
		require.NoError(t, err, "version %q image %q", version, image)
		got := false
		for _, r := range p.Roles {
			if r.Name == "mixcoord" && r.Pods > 0 {
				got = true
			}
		}
		want := operatorIsAtLeast2_6(version, image)
		assert.Equal(t, want, got, "version %q image %q: 2.6 or later", version, image)
		if want {
			later++
		}
	}
	assert.Greater(t, later, 60, "enough texts that parse as 2.6 or later to compare")
	t.Logf("%d of 600 texts are 2.6 or later for the operator", later)
}

// TestMilvusLongVersionIsNotMatched: the workload author writes spec.components.version (and
// the image tag) at any length; a text over 128 characters (longer than any OCI image tag) is
// not run through the version regular expressions and reads as not parsable, so before 2.6
// (the four coordinators of the sample, no mixcoord), whatever it starts with. The operator's
// semver would read this one as 2.7.0 with a build suffix: a deliberate difference for texts no
// image tag can carry. (A text of a megabyte ends earlier, at the CEL cost limit of its trim(),
// as a plan error naming spec.variables[milvusSemver].)
func TestMilvusLongVersionIsNotMatched(t *testing.T) {
	base := workloadOf(t, "milvus-cluster-4coords.yaml")
	c := catalogRegistry(t).Lookup(base.GroupVersionKind())
	for _, version := range []string{"2.7.0+" + strings.Repeat("a", 10_000), "2.7.0+" + strings.Repeat("a", 123)} {
		obj := base.DeepCopy()
		obj.Object["spec"].(map[string]any)["components"].(map[string]any)["version"] = version
		p, err := gang.Build(context.Background(), c, obj)
		require.NoError(t, err, "a %d-character version", len(version))
		mixcoord := false
		for _, r := range p.Roles {
			if r.Name == "mixcoord" && r.Pods > 0 {
				mixcoord = true
			}
		}
		assert.Equal(t, len(version) <= 128, mixcoord, "a %d-character version: 2.6 or later only when matched", len(version))
	}
}
