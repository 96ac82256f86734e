#!/usr/bin/env bash
# hack/record-status/trainer.sh: records the TrainJob (trainer.kubeflow.org/v1alpha1) status corpus
# (definitions/catalog/tests/status/trainer-kubeflow-org-trainjob-v1alpha1) from Kubeflow Trainer's
# own controller and the JobSet controller it builds on, both running against hack/statuscluster.
#
#   TRAINER_BIN=/work/ops/trainer/bin/trainer-controller-manager TRAINER_SRC=/work/ops/trainer/src \
#   JOBSET_BIN=/work/ops/jobset/bin/jobset-manager JOBSET_SRC=/work/ops/jobset/src \
#   KUBEBUILDER_ASSETS=$(bash hack/control-plane.sh) bash hack/record-status/trainer.sh [WORKDIR]
#
# Built from the releases' sources (kubeflow/trainer v2.3.0: cmd/trainer-controller-manager;
# kubernetes-sigs/jobset v0.12.0, the version trainer's go.mod requires: main.go). Both serve their
# admission webhooks as an install does (JobSet's defaulting webhook sets the JobSet fields its
# controller dereferences, e.g. spec.network), with the operators' own webhook manifests pointed at
# 127.0.0.1 and a self-signed certificate instead of their in-cluster cert rotation.
set -euo pipefail
cd "$(dirname "$0")/../.."
source hack/record-status/lib.sh
source hack/record-status/webhooks.sh
source hack/record-status/jobset-lib.sh
: "${TRAINER_BIN:?}" "${TRAINER_SRC:?}"
W=$(realpath -m "${1:-$(mktemp -d)}")
OUT=definitions/catalog/tests/status/trainer-kubeflow-org-trainjob-v1alpha1
NS=default
TRAINER_TAG=$(git -C "$TRAINER_SRC" describe --tags) TRAINER_SHA=$(git -C "$TRAINER_SRC" rev-parse HEAD)

start_cluster "$W" --crds "$JOBSET_CRDS" \
  $(printf -- '--crds %s ' "$TRAINER_SRC"/manifests/base/crds/trainer.kubeflow.org_*.yaml)

# One serving certificate for both webhook servers (127.0.0.1); trainer reads it from
# $TMPDIR/k8s-webhook-server/serving-certs (controller-runtime's default).
CERTS=$W/tmp/k8s-webhook-server/serving-certs
webhook_certs "$CERTS"
trap 'kubectl get trainjobs,jobsets,jobs,pods -A -o yaml >"$W/objects.yaml" 2>&1; kill ${TRAINER_PID:-} ${JOBSET_PID:-} 2>/dev/null || true
  wait ${TRAINER_PID:-} ${JOBSET_PID:-} 2>/dev/null || true; stop_cluster' EXIT
start_jobset "$W" "$CERTS"

TR_HOOK=$(free_port) TR_HEALTH=$(free_port)
cat >"$W/trainer-config.yaml" <<EOF
apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
webhook: {port: $TR_HOOK, host: 127.0.0.1}
metrics: {bindAddress: "0"}
health: {healthProbeBindAddress: "127.0.0.1:$TR_HEALTH", readinessEndpointName: readyz, livenessEndpointName: healthz}
leaderElection: {leaderElect: false}
certManagement: {enable: false}
EOF
TMPDIR=$W/tmp "$TRAINER_BIN" --config="$W/trainer-config.yaml" --kubeconfig="$KUBECONFIG" --zap-log-level=2 >"$W/trainer.log" 2>&1 &
TRAINER_PID=$!
wait_for "curl -sf http://127.0.0.1:$TR_HEALTH/readyz" 120
webhook_register "$TRAINER_SRC/manifests/base/webhook/manifests.yaml" "$TR_HOOK" "$CERTS" trainer-
# The cluster admin installs the torch-distributed runtime (validated by trainer's webhook).
wait_for "kubectl apply -f '$TRAINER_SRC/manifests/base/runtimes/torch_distributed.yaml'" 60

trainjob() { # NAME [SUSPEND]: a TrainJob on the torch-distributed runtime, as trainer's e2e tests make it
  kubectl create -f - >/dev/null <<EOF
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: $1, namespace: $NS}
spec:
  runtimeRef: {apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime, name: torch-distributed}
${2:+  suspend: $2}
EOF
}
tj() { kubectl get trainjob -n "$NS" "$1" -o json | jq -e "$2"; }
cond() { printf '(.status.conditions // [] | any(.type == "%s" and .status == "%s"))' "$1" "$2"; }
node_pod() { pods "$NS" "jobset.sigs.k8s.io/jobset-name=$1,jobset.sigs.k8s.io/replicatedjob-name=node" | head -1; }

record() { # STATE NAME HOW
  snapshot trainjob "$2" "$NS" | record_to "$OUT/$1" "recorded $(date -u +%F) by hack/record-status/trainer.sh: the object Kubeflow Trainer $TRAINER_TAG (kubeflow/trainer commit ${TRAINER_SHA:0:9}) wrote, $JOBSET_RELEASE running its JobSet, both controllers running on gangmap's test control plane (kube-apiserver 1.34.4, kube-controller-manager, kube-scheduler, kwok 0.7 nodes; the script set pod states as containers exiting would), both serving their admission webhooks as installed." "$3"
}

# No room on the node: the training node's pod stays Pending (its Job active, not ready).
kubectl cordon node-0 >/dev/null
trainjob torch
trainjob torch-fail
wait_for "tj torch '.status.jobsStatus // [] | any(.name == \"node\" and .active == 1)'" 120
record initializing-active torch "Reached by: node-0 cordoned, TrainJob torch created; its node Job's pod is Pending (unschedulable): the JobSet reports the Job active, not ready."

trainjob torch-suspend true
wait_for "tj torch-suspend '$(cond Suspended True) and (.status.jobsStatus // [] | any(.suspended == 1))'" 120
record suspended torch-suspend "Reached by: TrainJob created with spec.suspend true; the controller wrote Suspended True and JobSet suspended its Job."
kubectl patch trainjob -n "$NS" torch-suspend --type=merge -p '{"spec":{"suspend":false}}' >/dev/null
wait_for "tj torch-suspend '$(cond Suspended False) and (.status.jobsStatus // [] | any(.active == 1))'" 120
record resuming torch-suspend "Reached by: the suspended TrainJob's spec.suspend set false while node-0 is cordoned; the controller wrote Suspended False (Resumed) and the resumed Job's pod is Pending."

kubectl uncordon node-0 >/dev/null
wait_for "tj torch '.status.jobsStatus // [] | any(.name == \"node\" and .ready == 1)'" 120
record running torch "Reached by: node-0 uncordoned; the node pod was bound and kwok made it Running and Ready; the JobSet reports the Job ready."
wait_for "tj torch-suspend '.status.jobsStatus // [] | any(.name == \"node\" and .ready == 1)'" 120
record running-resumed torch-suspend "Reached by: the TrainJob of resuming/, once node-0 was uncordoned: its node pod Running and Ready, the JobSet reports the Job ready; Suspended False (Resumed) stays."

pod_succeed "$NS" "$(node_pod torch)"
wait_for "tj torch '$(cond Complete True)'" 120
record completed torch "Reached by: the running TrainJob's node pod exited 0 (pod_succeed); the Job completed, then the JobSet, whose Completed condition trainer copied."

wait_for "tj torch-fail '.status.jobsStatus // [] | any(.name == \"node\" and .ready == 1)'" 120
restarts=$(kubectl get jobs -n "$NS" -l jobset.sigs.k8s.io/jobset-name=torch-fail -o jsonpath='{.items[0].spec.backoffLimit}')
pod_crashloop "$NS" "$(node_pod torch-fail)" "$restarts"
wait_for "tj torch-fail '$(cond Failed True)'" 120
record failed torch-fail "Reached by: the running TrainJob's node container (restartPolicy OnFailure, JobSet's default) exited 1 and was restarted $restarts times, its Job's backoffLimit (pod_crashloop of lib.sh, as the kubelet reports it); the Job failed (BackoffLimitExceeded), then the JobSet, whose Failed condition trainer copied."
