package realkai

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestFromEnvFailsNamingWhatIsMissing: without KAI_BIN, KAI_SRC and KUBEBUILDER_ASSETS the
// harness fails at once, naming each (a real-KAI test never skips), and with directories that
// lack a binary or the CRDs it names the missing files.
func TestFromEnvFailsNamingWhatIsMissing(t *testing.T) {
	t.Setenv(EnvBin, "")
	t.Setenv(EnvSrc, "")
	t.Setenv("KUBEBUILDER_ASSETS", "")
	_, err := FromEnv()
	require.ErrorIs(t, err, ErrNoKAI)
	for _, want := range []string{"KAI_BIN is not set", "KAI_SRC is not set", "KUBEBUILDER_ASSETS is not set", "make e2e-kai"} {
		assert.Contains(t, err.Error(), want)
	}

	bin, src, assets := t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "scheduler"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "binder"), []byte("not executable"), 0o644))
	t.Setenv(EnvBin, bin)
	t.Setenv(EnvSrc, src)
	t.Setenv("KUBEBUILDER_ASSETS", assets)
	_, err = FromEnv()
	require.True(t, errors.Is(err, ErrNoKAI), "%v", err)
	msg := err.Error()
	assert.NotContains(t, msg, bin+"/scheduler", "an executable binary is not reported")
	for _, want := range []string{bin + "/binder is not an executable file", bin + "/podgrouper is not an executable file",
		filepath.Join(src, "deployments/kai-scheduler/crds") + " holds no KAI CRD", assets + "/kwok is missing"} {
		assert.Contains(t, msg, want)
	}
}

// TestSchedulerConfig: the scheduler's configuration is KAI v0.17's default shard's: the five
// actions in priority order and one tier of 21 plugins, nodeplacement with binpack for GPU and CPU.
func TestSchedulerConfig(t *testing.T) {
	var conf struct {
		Actions string `json:"actions"`
		Tiers   []struct {
			Plugins []struct {
				Name      string            `json:"name"`
				Arguments map[string]string `json:"arguments"`
			} `json:"plugins"`
		} `json:"tiers"`
	}
	require.NoError(t, yaml.UnmarshalStrict([]byte(schedulerConfig()), &conf))
	assert.Equal(t, "allocate, consolidation, reclaim, preempt, stalegangeviction", conf.Actions)
	require.Len(t, conf.Tiers, 1)
	var names []string
	for _, p := range conf.Tiers[0].Plugins {
		names = append(names, p.Name)
		if p.Name == "nodeplacement" {
			assert.Equal(t, map[string]string{"gpu": "binpack", "cpu": "binpack"}, p.Arguments)
		} else {
			assert.Empty(t, p.Arguments, p.Name)
		}
	}
	assert.Equal(t, "predicates proportion priority nodeavailability resourcetype podaffinity elastic kubeflow ray subgrouporder "+
		"taskorder nominatednode dynamicresources minruntime topology snapshot sg-nodelocalgreedy sg-multinodegang gpupack "+
		"nodeplacement gpusharingorder", strings.Join(names, " "))
}

// TestKwokStagesHaveNoCompletion: kwok's stages here make a bound pod Running and Ready and delete
// a deleted pod, and never finish a pod on their own (a test finishes it with FinishPod).
func TestKwokStagesHaveNoCompletion(t *testing.T) {
	var names []string
	for _, doc := range strings.Split(kwokStages, "\n---\n") {
		var st struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &st))
		assert.Equal(t, "Stage", st.Kind)
		names = append(names, st.Metadata.Name)
	}
	assert.Equal(t, []string{"pod-ready", "pod-delete"}, names)
	assert.NotContains(t, kwokStages, "Succeeded")
}
