#!/usr/bin/env bash
# hack/record-status/volcano.sh: record the Volcano Job (batch.volcano.sh/v1alpha1) states
# Volcano's own job controller writes, on gangmap's test control plane (hack/statuscluster), into
# the status corpus.
#
#   KUBEBUILDER_ASSETS=$(bash hack/control-plane.sh) \
#   OPERATOR_BIN=/work/ops/volcano/bin OPERATOR_SRC=/work/ops/volcano/src \
#     bash hack/record-status/volcano.sh
#
# OPERATOR_BIN: a directory with Volcano's controller-manager (cmd/controller-manager) and
# scheduler (cmd/scheduler), built with `go build`; OPERATOR_SRC: that checkout (its CRDs are
# applied). The job controller creates a job's pods only once the Volcano scheduler has taken its
# PodGroup out of Pending (syncJob), and the pods name schedulerName volcano, so both run: the
# controller manager with its job and queue controllers only, the scheduler with its default
# configuration (it creates the default queue); kwok runs the pods the scheduler binds. No
# admission webhook runs (vc-webhook-manager is another binary): the job is created with the
# fields the webhook would default (queue, schedulerName, maxRetry, task names) already set,
# as example/job.yaml has them.
set -euo pipefail
cd "$(dirname "$0")/../.."
source hack/record-status/lib.sh
: "${OPERATOR_BIN:?directory of the built controller-manager and scheduler}" "${OPERATOR_SRC:?path of the checkout}"
corpus=definitions/catalog/tests/status/batch-volcano-sh-job-v1alpha1
work=$(mktemp -d /tmp/record-volcano.XXXX)
rel=$(git -C "$OPERATOR_SRC" describe --tags --exact-match 2>/dev/null || git -C "$OPERATOR_SRC" describe --tags)
sha=$(git -C "$OPERATOR_SRC" rev-parse --short=9 HEAD)

start_cluster "$work" --crds "$OPERATOR_SRC/config/crd/volcano/bases"
"$OPERATOR_BIN/scheduler" --kubeconfig "$KUBECONFIG" --leader-elect=false --listen-address=127.0.0.1:0 >"$work/vc-scheduler.log" 2>&1 &
scheduler=$!
"$OPERATOR_BIN/controller-manager" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --controllers=+job-controller,+queue-controller --listen-address=127.0.0.1:0 >"$work/vc-controller-manager.log" 2>&1 &
controller=$!
trap 'kill $controller $scheduler 2>/dev/null || true; wait $controller $scheduler 2>/dev/null || true; stop_cluster' EXIT

# record STATE HOW: write the object YAML on stdin into the corpus case STATE, under its header.
record() { record_to "$corpus/$1" "recorded $(date -u +%F) by hack/record-status/volcano.sh: the object Volcano $rel (github.com/volcano-sh/volcano commit $sha) wrote, its job controller and scheduler running on gangmap's test control plane (kube-apiserver 1.34.4, kube-controller-manager, kube-scheduler, kwok 0.7 nodes; the script set pod phases as containers exiting would)." "$2"; }
phase() { [[ $(kubectl get vcjob "$1" -o jsonpath='{.status.state.phase}') == "$2" ]]; }
running_pods() { [[ $(kubectl get pods -l volcano.sh/job-name="$1" --field-selector=status.phase=Running -o name | wc -l) == "$2" ]]; }

# example/job.yaml; $1 name, $2 restartPolicy.
job() {
  cat <<EOF
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: $1
  namespace: default
spec:
  minAvailable: 3
  schedulerName: volcano
  policies:
    - event: PodEvicted
      action: RestartJob
  plugins:
    ssh: []
    env: []
    svc: []
  maxRetry: 5
  queue: default
  tasks:
    - replicas: 6
      name: "default-nginx"
      template:
        metadata:
          name: web
        spec:
          containers:
            - image: nginx
              imagePullPolicy: IfNotPresent
              name: nginx
              resources:
                requests:
                  cpu: "1"
          restartPolicy: $2
EOF
}
example="Created as example/job.yaml"

# Running, then suspended the way `vcctl job suspend` does it (pkg/cli/util CreateJobCommand): a
# bus.volcano.sh/v1alpha1 Command, action AbortJob, owned by and targeting the job.
wait_for 'kubectl get queue default' 120
job test-job OnFailure | kubectl apply -f -
wait_for 'phase test-job Running && running_pods test-job 6' 120
snapshot vcjob test-job default | record running "$example. The job controller created its PodGroup and, once the Volcano scheduler had taken the PodGroup in, its 6 pods; the scheduler bound them, kwok ran them, and the controller wrote Running (pendingState: running >= minAvailable)."
"$KUBEBUILDER_ASSETS/kubectl" get vcjob test-job -w -o json >"$work/watch.json" 2>/dev/null &
watch=$!
uid=$(kubectl get vcjob test-job -o jsonpath='{.metadata.uid}')
kubectl create -f - <<EOF
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata:
  generateName: test-job-abortjob-
  namespace: default
  ownerReferences: [{apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: test-job, uid: $uid, controller: true, blockOwnerDeletion: true}]
action: AbortJob
target: {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: test-job, uid: $uid, controller: true, blockOwnerDeletion: true}
EOF
wait_for 'phase test-job Aborted' 120
kill $watch
snapshot vcjob test-job default | record suspended "$example; once it was Running (6 pods running on kwok), the script created the Command \`vcctl job suspend\` creates (action AbortJob, targeting the job): the job controller wrote Aborting (runningState, KillJob), deleted the pods, and once none was left wrote Aborted (abortingState)."
watched "$work/watch.json" '.status.state.phase == "Aborting"' |
  record suspending "$example; once it was Running, the script created the Command \`vcctl job suspend\` creates (action AbortJob). This is the first version of the object (from a watch) in which the job controller had written Aborting (runningState, KillJob), its pods being deleted."

# Completed: every pod's container exits 0.
job test-job-done OnFailure | kubectl apply -f -
wait_for 'phase test-job-done Running && running_pods test-job-done 6' 120
for p in $(pods default volcano.sh/job-name=test-job-done); do pod_succeed default "$p"; done
wait_for 'phase test-job-done Completed' 120
snapshot vcjob test-job-done default | record completed "$example (named test-job-done); once it was Running, the script set its 6 pods Succeeded (every container exited 0): the job controller wrote Completed (runningState: succeeded >= minAvailable once every pod finished)."

# Failed: restartPolicy Never (a failed container fails its pod) and every pod's container exits 1.
job test-job-fail Never | kubectl apply -f -
wait_for 'phase test-job-fail Running && running_pods test-job-fail 6' 120
for p in $(pods default volcano.sh/job-name=test-job-fail); do pod_fail default "$p" 1; done
wait_for 'phase test-job-fail Failed' 120
snapshot vcjob test-job-fail default | record failed "$example (named test-job-fail, restartPolicy Never); once it was Running, the script set its 6 pods Failed (every container exited 1): the job controller wrote Failed (runningState: every pod finished, succeeded < minAvailable)."
