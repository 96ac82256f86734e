package catalog_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// NIMService multi-node (NIM operator NimServiceMultiNodeConfig): each replica is a
// LeaderWorkerSet group of one pod per pipeline stage, each pod with the spec's resources. The
// operator's sample: 1 replica, pp 2, 8 GPUs a pod: 2 pods, 16 GPUs, all required.
func TestNIMServiceMultiNode(t *testing.T) {
	checkPlan(t, "nimservice-multinode-deepseek-pp2.yaml", planWant{
		podGroups: []podGroupWant{{name: "pg-deepseek-r1-nimservice", minMember: 2, pods: 2}},
		roles:     []roleWant{{"nimservice", 1, 1, 2, 2, 8}},
		totalGPUs: 16,
	})
}

// NIMService with draResources (NIM operator DRAResource): the GPU comes from a DRA claim made
// from the ResourceClaimTemplate, so the plan reports the claim and its template instead of a
// silent 0 devices.
func TestNIMServiceDRAClaims(t *testing.T) {
	p := buildPlan(t, "nimservice-dra-resourceclaimtemplate.yaml")
	if assert.Len(t, p.Roles, 1) {
		assert.Equal(t, []string{"dra-0 (template gpu-resourceclaimtemplate)"}, p.Roles[0].GPUDetail.DRAClaims)
		assert.Zero(t, p.Roles[0].GPUsPerPod, "a claim's devices are not nvidia.com/gpu requests")
	}
}
