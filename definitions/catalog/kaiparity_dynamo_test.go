package catalog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/gang"
)

// dynamoPodCliqueSet is the Grove PodCliqueSet the Dynamo operator generates for a v1beta1
// DynamoGraphDeployment with Grove enabled, reduced to what gangs are made of. Transcribed from
// ai-dynamo/dynamo deploy/cloud/operator/internal/dynamo/graph.go (main, 2026):
//   - GenerateGrovePodCliqueSet: spec.replicas 1; per component, the cliques of its roles, and a
//     PodCliqueScalingGroup when the component uses one (multi-node components; PCSNameForDGD:
//     "Single-node: PCLQ = lowerName (no PCSG)");
//   - expandRolesForComponent: single-node (expandSingleNodeRoles) one clique named after the
//     component with replicas = the component's replicas (default 1); multi-node
//     (expandMultinodeRoles) "<name>-ldr" with 1 replica and "<name>-wkr" with nodeCount − 1
//     (constants GroveRoleSuffixLeader "ldr", GroveRoleSuffixWorker "wkr");
//   - buildCliqueForRole: clique name lower case; minAvailable = the component's minAvailable for
//     a single-node clique (default 1), the clique's replicas for a multi-node one;
//   - buildGroveScalingGroupConfig: name lower case, the roles' cliques, replicas = the
//     component's replicas, minAvailable = the component's minAvailable (default 1).
//
// GMS (gpuMemoryService), failover, forced scaling groups and checkpoint gating are not in the
// samples and not transcribed.
func dynamoPodCliqueSet(t *testing.T, dgd *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	components, found, err := unstructured.NestedSlice(dgd.Object, "spec", "components")
	require.NoError(t, err)
	require.True(t, found)
	var cliques, groups []any
	clique := func(name string, replicas, minAvailable int64) {
		cliques = append(cliques, map[string]any{"name": name, "spec": map[string]any{
			"roleName": name, "replicas": replicas, "minAvailable": minAvailable, "podSpec": map[string]any{},
		}})
	}
	for _, c := range components {
		comp := c.(map[string]any)
		name := strings.ToLower(comp["name"].(string))
		replicas, minAvailable, nodeCount := int64(1), int64(1), int64(1)
		if v, ok := comp["replicas"].(int64); ok {
			replicas = v
		}
		if v, ok := comp["minAvailable"].(int64); ok {
			minAvailable = v
		}
		if mn, ok := comp["multinode"].(map[string]any); ok {
			if v, ok := mn["nodeCount"].(int64); ok {
				nodeCount = v
			}
		}
		if nodeCount <= 1 {
			clique(name, replicas, minAvailable)
			continue
		}
		clique(name+"-ldr", 1, 1)
		clique(name+"-wkr", nodeCount-1, nodeCount-1)
		groups = append(groups, map[string]any{
			"name": name, "cliqueNames": []any{name + "-ldr", name + "-wkr"},
			"replicas": replicas, "minAvailable": minAvailable,
		})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
		"metadata": map[string]any{"name": dgd.GetName(), "namespace": "default"},
		"spec": map[string]any{"replicas": int64(1), "template": map[string]any{
			"cliques": cliques, "podCliqueScalingGroups": groups,
		}},
	}}
}

// TestKAIParityDynamoGraphDeployment: KAI v0.17 groups a DynamoGraphDeployment natively by
// skipping it (pkg/podgrouper/podgrouper/hub/hub.go: nvidia.com/*/DynamoGraphDeployment →
// skiptopowner; skiptopowner.go GetPodGroupMetadata hands the pod to the plugin of the owner
// below, the PodCliqueSet Dynamo generates), so KAI's gang is the Grove plugin's on that
// PodCliqueSet: the base PodGang, as TestKAIParityPodCliqueSet shows the catalog's PodCliqueSet
// definition computes. The test builds Dynamo's PodCliqueSet for the sample (dynamoPodCliqueSet),
// plans it with the catalog's PodCliqueSet definition (KAI's gang, per clique), folds the
// cliques back into their Dynamo components (<name>-ldr and <name>-wkr are <name>'s pods), and
// compares with the catalog's DynamoGraphDeployment plan.
//
// Documented differences: KAI names its sub-groups after the cliques (frontend, decode-ldr,
// decode-wkr), gangmap after the components; a multi-node component with replicas above
// minAvailable has, in KAI, a scaled PodGang (one more PodGroup) per extra replica, which the
// catalog keeps in the one PodGroup without requiring it (as for PodCliqueSet). Without Grove
// (Dynamo's DynamoComponentDeployment path: Deployments, LWS) the owner below the
// DynamoGraphDeployment is a DynamoComponentDeployment, which KAI v0.17 has no plugin for: its
// default grouper gives each component a PodGroup of minMember 1, no gang; the catalog's gang is
// the Grove one in both cases.
func TestKAIParityDynamoGraphDeployment(t *testing.T) {
	reg := catalogRegistry(t)
	const file = "dynamographdeployment-v1beta1-sglang-disagg-multinode-components-list.yaml"
	cases := []struct {
		name string
		edit func(*testing.T, *unstructured.Unstructured)
		// KAI's required pods per component (base PodGang), and its PodGroups (base + scaled).
		required  map[string]int64
		podGroups int
	}{
		// Frontend 1 replica; decode and prefill 1 replica of 2 nodes (ldr 1 + wkr 1), minAvailable
		// 1 by default: one PodGang requiring every pod.
		{"sample", nil, map[string]int64{"frontend": 1, "decode": 2, "prefill": 2}, 1},
		// decode replicas 3, minAvailable 2: the base PodGang requires 2 replicas × 2 nodes; the
		// third replica is a scaled PodGang (a second KAI PodGroup). Frontend replicas 3,
		// minAvailable 2: one clique of 3 pods, 2 required.
		{"replicas above minAvailable", func(t *testing.T, u *unstructured.Unstructured) {
			components, _, err := unstructured.NestedSlice(u.Object, "spec", "components")
			require.NoError(t, err)
			for _, c := range components {
				comp := c.(map[string]any)
				switch comp["name"] {
				case "decode", "Frontend":
					comp["replicas"], comp["minAvailable"] = int64(3), int64(2)
				}
			}
			require.NoError(t, unstructured.SetNestedSlice(u.Object, components, "spec", "components"))
		}, map[string]int64{"frontend": 2, "decode": 4, "prefill": 2}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dgd := workloadOf(t, file)
			if tc.edit != nil {
				tc.edit(t, dgd)
			}
			pcs := dynamoPodCliqueSet(t, dgd)
			kai, err := gang.Build(context.Background(), reg.Lookup(pcs.GroupVersionKind()), pcs)
			require.NoError(t, err)
			kaiRequired := map[string]int64{}
			for _, r := range kai.Roles {
				component := strings.TrimSuffix(strings.TrimSuffix(r.Name, "-ldr"), "-wkr")
				kaiRequired[component] += r.GangPods
			}
			require.Equal(t, tc.required, kaiRequired, "KAI's gang, from the Grove rule on Dynamo's PodCliqueSet")

			p, err := gang.Build(context.Background(), reg.Lookup(dgd.GroupVersionKind()), dgd)
			require.NoError(t, err)
			assertGang(t, p, kaiGang{podGroups: 1, required: tc.required})
			var kaiPods, pods int64
			for _, pg := range kai.PodGroups {
				kaiPods += pg.Pods
			}
			for _, pg := range p.PodGroups {
				pods += pg.Pods
			}
			assert.Equal(t, kaiPods, pods, "the same pods in both")
			// Grove (podgang/syncflow.go computeExpectedPodGangs): one base PodGang per PodCliqueSet
			// replica, plus a scaled PodGang per scaling-group replica from minAvailable on; KAI
			// writes a PodGroup per PodGang. The catalog writes one (assertGang above).
			groups, _, err := unstructured.NestedSlice(pcs.Object, "spec", "template", "podCliqueScalingGroups")
			require.NoError(t, err)
			podGangs := 1
			for _, g := range groups {
				m := g.(map[string]any)
				podGangs += int(max(m["replicas"].(int64)-m["minAvailable"].(int64), 0))
			}
			assert.Equal(t, tc.podGroups, podGangs, "KAI's PodGroups: the base PodGang and the scaled ones")
		})
	}
}
