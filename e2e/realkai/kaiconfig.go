package realkai

import (
	"fmt"
	"strings"
)

// schedulerPlugins are the plugins of a default SchedulingShard, highest priority first, as KAI
// v0.17's operator renders them (pkg/apis/kai/v1/schedulingshard_types.go
// defaultPluginPriorities with placementStrategy gpu and cpu "binpack", so gpupack on and gpuspread
// off; pkg/operator/operands/scheduler/plugin_action_merge.go resolvePlugins orders them).
var schedulerPlugins = []string{
	"predicates", "proportion", "priority", "nodeavailability", "resourcetype", "podaffinity", "elastic",
	"kubeflow", "ray", "subgrouporder", "taskorder", "nominatednode", "dynamicresources", "minruntime",
	"topology", "snapshot", "sg-nodelocalgreedy", "sg-multinodegang", "gpupack", "nodeplacement", "gpusharingorder",
}

// schedulerActions are a default SchedulingShard's actions by priority (defaultActionPriorities;
// consolidation is on with binpack placement).
var schedulerActions = []string{"allocate", "consolidation", "reclaim", "preempt", "stalegangeviction"}

// schedulerConfig is the scheduler's --scheduler-conf: the config.yaml KAI's operator puts in the
// shard's ConfigMap (pkg/operator/operands/scheduler/resources_for_shard.go, conf.SchedulerConfiguration):
// the actions, and one tier of the plugins, nodeplacement with its gpu and cpu strategy arguments.
func schedulerConfig() string {
	var b strings.Builder
	fmt.Fprintf(&b, "actions: %q\ntiers:\n- plugins:\n", strings.Join(schedulerActions, ", "))
	for _, p := range schedulerPlugins {
		fmt.Fprintf(&b, "  - name: %s\n", p)
		if p == "nodeplacement" {
			b.WriteString("    arguments:\n      cpu: binpack\n      gpu: binpack\n")
		}
	}
	return b.String()
}

// FakeNodeAnnotation on a node makes kwok manage it (and its pods), as KAI's own kwok scale tests
// mark theirs (test/e2e/scale/kwok_test_utils.go).
const FakeNodeAnnotation = "kwok.x-k8s.io/node"

// kwokStages are kwok's pod stages here: a pod bound to a fake node becomes Running and Ready (the
// shape of kwok's kustomize/stage/pod/fast/pod-ready.yaml), and a deleted pod goes away
// (pod-delete.yaml). kwok's pod-complete stage, which finishes every Job-owned pod the moment it
// runs, is left out: a test finishes a pod itself (Cluster.FinishPod), as its container exiting
// would, so an initializer completes when the test says and a JobSet's workers keep running.
const kwokStages = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.podIP'
      operator: 'DoesNotExist'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      phase: Running
      startTime: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
  next:
    finalizers:
      empty: true
    delete: true
`
