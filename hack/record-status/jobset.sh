#!/usr/bin/env bash
# hack/record-status/jobset.sh: records the JobSet (jobset.x-k8s.io/v1alpha2) running, completed and
# failed snapshots of the status corpus (definitions/catalog/tests/status/jobset-x-k8s-io-jobset-v1alpha2)
# from the JobSet controller running against hack/statuscluster.
#
#   JOBSET_BIN=/work/ops/jobset/bin/jobset-manager JOBSET_SRC=/work/ops/jobset/src \
#   KUBEBUILDER_ASSETS=$(bash hack/control-plane.sh) bash hack/record-status/jobset.sh [WORKDIR]
#
# Built from kubernetes-sigs/jobset v0.12.0 (main.go). Its admission webhooks are served as an install
# serves them (jobset-lib.sh start_jobset), the Jobs by kube-controller-manager's Job controller.
set -euo pipefail
cd "$(dirname "$0")/../.."
source hack/record-status/lib.sh
source hack/record-status/webhooks.sh
source hack/record-status/jobset-lib.sh
W=$(realpath -m "${1:-$(mktemp -d)}")
OUT=definitions/catalog/tests/status/jobset-x-k8s-io-jobset-v1alpha2
NS=default

start_cluster "$W" --crds "$JOBSET_CRDS"
webhook_certs "$W/certs"
trap 'kubectl get jobsets,jobs,pods -A -o yaml >"$W/objects.yaml" 2>&1; kill ${JOBSET_PID:-} 2>/dev/null || true
  wait ${JOBSET_PID:-} 2>/dev/null || true; stop_cluster' EXIT
start_jobset "$W" "$W/certs"

jobset() { # NAME: jobset's integration test JobSet (test/integration/controller/jobset_controller_test.go
  # testJobSet): replicated-job-a, one Job; replicated-job-b, three; each Job one pod, never restarted.
  kubectl create -f - >/dev/null <<EOF
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: $1, namespace: $NS}
spec:
  replicatedJobs:
  - name: replicated-job-a
    replicas: 1
    template: &job
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            containers: [{name: test-container, image: "busybox:latest"}]
  - {name: replicated-job-b, replicas: 3, template: *job}
EOF
}
js() { kubectl get jobset -n "$NS" "$1" -o json | jq -e "$2"; }
all_ready='([.status.replicatedJobsStatus[]? | .ready] | add) == 4'
cond() { printf '(.status.conditions // [] | any(.type == "%s" and .status == "True"))' "$1"; }

record() { # STATE NAME HOW
  snapshot jobset "$2" "$NS" | record_to "$OUT/$1" "recorded $(date -u +%F) by hack/record-status/jobset.sh: the object $JOBSET_RELEASE wrote, its controller running on gangmap's test control plane (kube-apiserver 1.34.4, kube-controller-manager, kube-scheduler, kwok 0.7 nodes; the script set pod phases as containers exiting would), serving its admission webhooks as installed." "$3"
}

jobset test-js
jobset test-js-fail
wait_for "js test-js '$all_ready'" 120
record running test-js "Reached by: JobSet created; the Job controller made each Job's pod, kwok ran it Running and Ready; every Job ready, no condition yet."

for p in $(pods "$NS" jobset.sigs.k8s.io/jobset-name=test-js); do pod_succeed "$NS" "$p"; done
wait_for "js test-js '$(cond Completed)'" 120
record completed test-js "Reached by: the running JobSet's four pods exited 0 (pod_succeed); each Job completed, and the success policy (operator All, defaulted by the webhook) completed the JobSet."

wait_for "js test-js-fail '$all_ready'" 120
pod_fail "$NS" "$(pods "$NS" jobset.sigs.k8s.io/jobset-name=test-js-fail,jobset.sigs.k8s.io/replicatedjob-name=replicated-job-b | head -1)"
wait_for "js test-js-fail '$(cond Failed)'" 120
record failed test-js-fail "Reached by: running as in running/, one replicated-job-b pod (restartPolicy Never) exited 1 (pod_fail); its Job failed (backoffLimit 0: BackoffLimitExceeded) and, with no failurePolicy, so did the JobSet."
