#!/usr/bin/env bash
# hack/record-status/kuberay.sh: record the RayService (ray.io/v1) states, and the failed RayCluster,
# KubeRay's own controller writes, on gangmap's test control plane (hack/statuscluster), into the
# status corpus.
#
#   KUBEBUILDER_ASSETS=$(bash hack/control-plane.sh) \
#   OPERATOR_BIN=/work/ops/kuberay/bin/manager OPERATOR_SRC=/work/ops/kuberay/src \
#     bash hack/record-status/kuberay.sh
#
# OPERATOR_BIN: ray-operator/main.go of a KubeRay checkout built with `go build` (no webhooks:
# they are on only with ENABLE_WEBHOOKS=true); OPERATOR_SRC: that checkout (its CRDs are applied).
#
# KubeRay's RayService reconcile asks the Ray dashboard of the head pod for the Serve applications
# once the head pod is Ready; kwok runs no Ray, so a RayService whose head pod is Ready never gets
# past Initializing here. The states recorded are those the controller reaches without a
# dashboard: Initializing (head pod not Ready yet), ValidationFailed (an invalid
# ray.io/initializing-timeout), InitializingTimeout (a head pod no node can take, with a short
# ray.io/initializing-timeout) and spec.suspend (Suspending, Suspended). The RayCluster: failed,
# its head pod refused by the API server (ReplicaFailure True).
set -euo pipefail
cd "$(dirname "$0")/../.."
source hack/record-status/lib.sh
: "${OPERATOR_BIN:?path of the built KubeRay operator}" "${OPERATOR_SRC:?path of its checkout}"
corpus=definitions/catalog/tests/status/ray-io-rayservice-v1 # record writes here
work=$(mktemp -d /tmp/record-kuberay.XXXX)
rel=$(git -C "$OPERATOR_SRC" describe --tags --exact-match 2>/dev/null || git -C "$OPERATOR_SRC" describe --tags)
sha=$(git -C "$OPERATOR_SRC" rev-parse --short=9 HEAD)

start_cluster "$work" --crds "$OPERATOR_SRC/ray-operator/config/crd/bases"
"$OPERATOR_BIN" --enable-leader-election=false --metrics-addr=0 --health-probe-bind-address=0 \
  --log-stdout-encoder=console >"$work/kuberay.log" 2>&1 &
operator=$!
trap 'kill $operator 2>/dev/null || true; wait $operator 2>/dev/null || true; stop_cluster' EXIT

# record STATE HOW: write the object YAML on stdin into the corpus case STATE, under its header.
record() { record_to "$corpus/$1" "recorded $(date -u +%F) by hack/record-status/kuberay.sh: the object KubeRay $rel (github.com/ray-project/kuberay commit $sha) wrote, its controller running on gangmap's test control plane (kube-apiserver 1.34.4, kube-controller-manager, kube-scheduler, kwok 0.7 nodes; the script set no pod phase: kwok ran the pods)." "$2"; }
cond() { # cond NAME TYPE STATUS [REASON]: the RayService has that condition
  kubectl get rayservice "$1" -o json | jq -e --arg t "$2" --arg s "$3" --arg r "${4:-}" \
    'any(.status.conditions[]?; .type == $t and .status == $s and ($r == "" or .reason == $r))'
}

# The RayService of ray-operator/config/samples/ray-service.sample.yaml, its serve applications
# trimmed to their import paths. $1 name, $2 extra metadata, $3 extra head container fields.
rayservice() {
  cat <<EOF
apiVersion: ray.io/v1
kind: RayService
metadata:
  name: $1
  namespace: default
$2
spec:
  serveConfigV2: |
    applications:
      - name: fruit_app
        import_path: fruit.deployment_graph
        route_prefix: /fruit
      - name: math_app
        import_path: conditional_dag.serve_dag
        route_prefix: /calc
  rayClusterConfig:
    rayVersion: "2.52.0"
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.52.0
            resources: {limits: {cpu: "2", memory: 5Gi$3}, requests: {cpu: "2", memory: 2Gi$3}}
    workerGroupSpecs:
    - replicas: 1
      minReplicas: 1
      maxReplicas: 5
      groupName: small-group
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-worker
            image: rayproject/ray:2.52.0
            resources: {limits: {cpu: "1", memory: 2Gi}, requests: {cpu: 500m, memory: 2Gi}}
EOF
}

# The sample: Initializing (its head pod not Ready yet on the first status write; later the
# dashboard is unreachable), then spec.suspend: true: the controller writes Suspending, deletes
# the RayCluster and writes Suspended; then spec.suspend: false: Suspended False, Initializing.
sample="Created as ray-operator/config/samples/ray-service.sample.yaml (the serve applications' runtime_env and deployments trimmed)"
rayservice rayservice-sample "" "" | kubectl apply -f -
wait_for 'cond rayservice-sample Ready False Initializing' 120
wait_for '[[ $(kubectl get pods -l ray.io/node-type=head -o jsonpath="{.items[0].status.conditions[?(@.type==\"Ready\")].status}") == True ]]' 60
snapshot rayservice rayservice-sample default | record initializing "$sample. The controller created the RayCluster and, its head pod not Ready yet, wrote Ready False Initializing; kwok then ran the head and worker pods, but with no Ray dashboard to report Serve applications the controller stays at Initializing."
"$KUBEBUILDER_ASSETS/kubectl" get rayservice rayservice-sample -w -o json >"$work/watch.json" 2>/dev/null &
watch=$!
kubectl patch rayservice rayservice-sample --type=merge -p '{"spec":{"suspend":true}}'
wait_for 'cond rayservice-sample Suspended True SuspendComplete' 120
kill $watch
snapshot rayservice rayservice-sample default | record suspended "$sample. Once the controller had written Ready False Initializing and kwok ran the head and worker pods, the script set spec.suspend: true; the controller wrote Suspending, deleted the RayCluster (handleSuspend) and wrote Suspended True SuspendComplete."
watched "$work/watch.json" 'any(.status.conditions[]?; .type == "Suspending" and .status == "True")' |
  record suspending "$sample; the script set spec.suspend: true once it was Initializing. This is the first version of the object (from a watch) in which the controller had written Suspending True (handleSuspend, before it deleted the RayCluster)."
kubectl patch rayservice rayservice-sample --type=merge -p '{"spec":{"suspend":false}}'
wait_for 'cond rayservice-sample Suspended False RayServiceResumed && cond rayservice-sample Ready False Initializing' 120
snapshot rayservice rayservice-sample default | record resuming "$sample; suspended (spec.suspend: true, Suspended True), then the script set spec.suspend: false: the controller wrote Suspended False RayServiceResumed (handleSuspend) and, creating a new RayCluster, Ready False Initializing."

# Failed (ValidationFailed): an initializing timeout that is no duration; validateRayService.
rayservice rayservice-invalid '  annotations: {ray.io/initializing-timeout: "soon"}' "" | kubectl apply -f -
wait_for 'cond rayservice-invalid Ready False ValidationFailed' 60
snapshot rayservice rayservice-invalid default | record failed-validation "The sample with the annotation ray.io/initializing-timeout: soon (neither a Go duration nor seconds): validateRayService refused its metadata (ValidateRayServiceMetadata) and wrote Ready False ValidationFailed, creating no RayCluster."

# Failed (InitializingTimeout): a head pod asking for more GPUs than any node has stays Pending,
# so the RayService stays Initializing until ray.io/initializing-timeout (30s) has passed.
rayservice rayservice-timeout '  annotations: {ray.io/initializing-timeout: "30s"}' ', nvidia.com/gpu: "128"' | kubectl apply -f -
wait_for 'cond rayservice-timeout Ready False InitializingTimeout' 120
snapshot rayservice rayservice-timeout default | record failed "The sample with the annotation ray.io/initializing-timeout: 30s and a head pod asking for 128 nvidia.com/gpu, more than the one node (64) has: kube-scheduler left the head pod Pending, so the controller wrote Ready False Initializing, and 30s later Ready False InitializingTimeout (markFailedOnInitializingTimeout), clearing the cluster names; the RayService is in its terminal failure state."

# RayCluster failed: the sample's cluster (rayClusterConfig), its head container's imagePullPolicy
# "!invalid!" as in ray-operator/controllers/ray/raycluster_controller_test.go "Should handle
# RayClusterReplicaFailure condition correctly": the API server refuses the head pod, reconcilePods
# returns ErrFailedCreateHeadPod joined with that error, calculateStatus writes ReplicaFailure True.
invalid=raycluster-status-conditions-enabled-invalid
rayservice "$invalid" "" "" | yq -y --arg name "$invalid" '{apiVersion, kind: "RayCluster", metadata: {name: $name, namespace},
  spec: .spec.rayClusterConfig} | .spec.headGroupSpec.template.spec.containers[0].imagePullPolicy = "!invalid!"' | kubectl apply -f -
wait_for "kubectl get raycluster $invalid -o json | jq -e 'any(.status.conditions[]?; .type == \"ReplicaFailure\" and .status == \"True\")'" 60
snapshot raycluster "$invalid" default |
  corpus=definitions/catalog/tests/status/ray-io-raycluster-v1 record failed "The RayService sample's cluster (its rayClusterConfig) as a RayCluster, its head container's imagePullPolicy \"!invalid!\" (as KubeRay's envtest for the ReplicaFailure condition): the API server refused the head pod, and the controller wrote ReplicaFailure True FailedCreateHeadPod with the error (calculateStatus); no pod exists, the cluster cannot run until its spec is fixed."
