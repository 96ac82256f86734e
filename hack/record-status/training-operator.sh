#!/usr/bin/env bash
# hack/record-status/training-operator.sh: record the kubeflow.org/v1 MPIJob and PaddleJob status
# snapshots, and the failed PyTorchJob, of the status corpus from the Kubeflow training-operator
# v1's own controller.
#
#   OPERATOR_SRC=/work/ops/trainingop/src OPERATOR_BIN=/work/ops/trainingop/bin/training-operator.v1 \
#   KUBEBUILDER_ASSETS=$(bash hack/control-plane.sh) bash hack/record-status/training-operator.sh
#
# OPERATOR_SRC: a checkout of github.com/kubeflow/trainer at v1.9.4 (the CRDs come from its
# manifests/base/crds); OPERATOR_BIN: `go build ./cmd/training-operator.v1` of that checkout.
# Only the mpijob, paddlejob and pytorchjob schemes run, no gang scheduler. The operator has no flag to turn its
# validating webhook off: its cert rotator (pkg/cert ManageCerts) fills the Secret
# kubeflow/training-operator-webhook-cert and waits until tls.crt is in the fixed directory
# /tmp/k8s-webhook-server/serving-certs, as a mounted Secret would put it; the script copies the
# Secret's certs there, in a mount namespace of the operator's own (unshare -m, root) so that no
# other process's /tmp is touched. No ValidatingWebhookConfiguration is installed, so the webhook
# server runs but the API server never calls it (the rotator skips a configuration it cannot find).
# Run from the repository root; needs root (unshare), jq and yq. Writes into
# definitions/catalog/tests/status/kubeflow-org-{mpijob,paddlejob,pytorchjob}-v1/.
set -euo pipefail
: "${OPERATOR_SRC:?checkout of kubeflow/trainer v1.9.4}" "${OPERATOR_BIN:?training-operator.v1 binary}"
source hack/record-status/lib.sh

corpus=definitions/catalog/tests/status
work=${RECORD_DIR:-$(mktemp -d)}
mkdir -p "$work/certs"
commit=$(git -C "$OPERATOR_SRC" rev-parse HEAD)
release=$(git -C "$OPERATOR_SRC" describe --tags --exact-match 2>/dev/null || echo "$commit")

start_cluster "$work" --crds "$OPERATOR_SRC/manifests/base/crds/kubeflow.org_mpijobs.yaml" \
  --crds "$OPERATOR_SRC/manifests/base/crds/kubeflow.org_paddlejobs.yaml" \
  --crds "$OPERATOR_SRC/manifests/base/crds/kubeflow.org_pytorchjobs.yaml"

# The MPIJob launcher's kubectl-delivery init container requests ephemeral-storage (mpijob_controller.go
# newLauncher): hack/statuscluster gives node-0 1Ti of it, as a kubelet reports.

# The operator, in its own mount namespace where $work/certs is /tmp/k8s-webhook-server.
kubectl create namespace kubeflow >/dev/null
kubectl create secret generic training-operator-webhook-cert -n kubeflow >/dev/null
mkdir -p /tmp/k8s-webhook-server # the mount point only; the operator sees $work/certs there
unshare -m --propagation private sh -c 'mount --bind "$1/certs" /tmp/k8s-webhook-server && shift && exec "$@"' _ "$work" \
  env MY_POD_NAMESPACE=kubeflow "$OPERATOR_BIN" --enable-scheme=mpijob --enable-scheme=paddlejob --enable-scheme=pytorchjob \
  --metrics-bind-address=0 --health-probe-bind-address=0 --webhook-server-port=$(free_port) \
  >"$work/operator.log" 2>&1 &
OPERATOR_PID=$!
trap 'kill $OPERATOR_PID 2>/dev/null || true; wait $OPERATOR_PID 2>/dev/null || true; stop_cluster' EXIT
wait_for "kubectl get secret -n kubeflow training-operator-webhook-cert -o jsonpath='{.data.tls\.key}' | grep -q ." 60
mkdir -p "$work/certs/serving-certs"
for f in tls.crt tls.key; do
  kubectl get secret -n kubeflow training-operator-webhook-cert -o json | jq -r --arg f "$f" '.data[$f] | @base64d' >"$work/certs/serving-certs/$f"
done
for k in mpijob paddlejob pytorchjob; do wait_for "grep -q 'Starting workers.*$k' '$work/operator.log'" 120; done

# cond KIND NS NAME TYPE STATUS [REASON_SUFFIX]: the job has that condition.
cond() {
  kubectl get "$1" -n "$2" "$3" -o json |
    jq -e --arg t "$4" --arg s "$5" --arg r "${6:-}" 'any(.status.conditions[]?; .type == $t and .status == $s and ((.reason // "") | endswith($r)))'
}
all_running() { [[ $(kubectl get pods -n "$1" -l "training.kubeflow.org/job-name=$2" -o json | jq '[.items[] | select(.status.phase == "Running")] | length') == "$3" ]]; }
npods() { [[ $(kubectl get pods -n "$1" -l "training.kubeflow.org/job-name=$2" -o name | wc -l) == "$3" ]]; }
set_suspend() { kubectl patch "$1" -n "$2" "$3" --type merge -p "{\"spec\":{\"runPolicy\":{\"suspend\":$4}}}" >/dev/null; }
fresh() { # fresh KIND NS NAME: delete the job and wait until its pods are gone
  kubectl delete "$1" -n "$2" "$3" --ignore-not-found --wait >/dev/null
  wait_for "npods $2 $3 0" 120
}

# record DEF STATE KIND NS NAME HOW: write the job as the operator left it as DEF/STATE's manifest.
record() { # DEFINITION STATE RESOURCE NS NAME HOW
  snapshot "$3" "$5" "$4" | record_to "$corpus/$1/$2" "recorded $(date -u +%F) by hack/record-status/training-operator.sh: the object the Kubeflow training-operator $release (github.com/kubeflow/trainer commit $commit, cmd/training-operator.v1 with --enable-scheme=mpijob --enable-scheme=paddlejob --enable-scheme=pytorchjob, no gang scheduler) wrote, its controller running on gangmap's test control plane (kube-apiserver 1.34.4, kube-controller-manager, kube-scheduler, kwok 0.7 nodes; the script set pod phases as containers exiting would)." "$6"
}

kfjob() { # KIND NAME NS: apply the kubeflow.org/v1 job whose spec (YAML, indented 2) is stdin
  { printf 'apiVersion: kubeflow.org/v1\nkind: %s\nmetadata: {name: %s, namespace: %s}\nspec:\n' "$@"; cat; } |
    kubectl apply -f - >/dev/null
}

mpijob() { # mpijob RESTART_POLICY: examples/mpi/tensorflow-mnist.yaml, as the corpus had it
  kfjob MPIJob tensorflow-mnist default <<EOF
  slotsPerWorker: 1
  runPolicy: {cleanPodPolicy: Running}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      restartPolicy: $1
      template:
        spec:
          containers:
          - {image: "horovod/horovod:0.28.1", name: mpi, command: [mpirun], args: ["-np", "2", --allow-run-as-root, python, /horovod/examples/tensorflow2/tensorflow2_mnist.py], resources: {limits: {cpu: 1, memory: 2Gi}}}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {image: "horovod/horovod:0.28.1", name: mpi, resources: {limits: {cpu: 2, memory: 4Gi}}}
EOF
}

paddlejob() { # paddlejob RESTART_POLICY: examples/paddlepaddle/simple-cpu.yaml
  kfjob PaddleJob paddle-simple-cpu kubeflow <<EOF
  paddleReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: $1
      template:
        spec:
          containers:
          - {name: paddle, image: "registry.baidubce.com/paddlepaddle/paddle:2.4.0rc0-cpu", command: [python], args: ["-m", paddle.distributed.launch, run_check], ports: [{containerPort: 37777, name: master}]}
EOF
}

pytorchjob() { # pytorchjob RESTART_POLICY: examples/pytorch/mnist/v1/pytorch_job_mnist_gloo.yaml
  kfjob PyTorchJob pytorch-dist-mnist kubeflow <<EOF
  pytorchReplicaSpecs:
    Master: {replicas: 1, restartPolicy: $1, template: &pod {spec: {containers: [{name: pytorch, image: "kubeflow/pytorch-dist-mnist:latest", command: [python3, /opt/mnist/src/mnist.py, --epochs=1]}]}}}
    Worker: {replicas: 1, restartPolicy: $1, template: *pod}
EOF
}

# run_failed DEF KIND NS NAME CREATE PODS POD: the job created with restartPolicy Never; once its
# PODS pods run, POD fails (exit 1).
run_failed() {
  local def=$1 kind=$2 ns=$3 name=$4 create=$5 npods=$6 pod=$7
  $create Never
  wait_for "all_running $ns $name $npods && cond $kind $ns $name Running True" 120
  pod_fail "$ns" "$pod" 1
  wait_for "cond $kind $ns $name Failed True" 60
  record "$def" failed "$kind" "$ns" "$name" "Created (restartPolicy Never) and running as in running/, then the script set pod $pod Failed (exit 1): the operator set Failed True."
  fresh "$kind" "$ns" "$name"
}

# run_states DEF KIND NS NAME CREATE RESTART_POLICY PODS FINISHER: three jobs created with
# RESTART_POLICY (Never for the failed one). 1: initializing (node-0 cordoned: the pods wait for a
# node), running, completed (FINISHER's pods succeed). 2: failed (FINISHER's first pod fails).
# 3: running, suspended, resuming (node-0 cordoned again: the recreated pods wait), running again.
run_states() {
  local def=$1 kind=$2 ns=$3 name=$4 create=$5 policy=$6 npods=$7 finisher=$8 p
  kubectl cordon node-0 >/dev/null
  $create "$policy"
  wait_for "npods $ns $name $npods && cond $kind $ns $name Created True" 60 && sleep 3
  record "$def" initializing "$kind" "$ns" "$name" "Created (restartPolicy $policy) while node-0 was cordoned: the operator created the pods, which wait unscheduled (Pending)."
  kubectl uncordon node-0 >/dev/null
  wait_for "all_running $ns $name $npods && cond $kind $ns $name Running True" 120
  record "$def" running "$kind" "$ns" "$name" "Created (restartPolicy $policy); every pod bound to the kwok node and Running; the operator set Running True."
  for p in $finisher; do pod_succeed "$ns" "$p"; done
  wait_for "cond $kind $ns $name Succeeded True" 60
  record "$def" "${COMPLETED_STATE:-completed}" "$kind" "$ns" "$name" "Running as in running/, then the script set pod(s) $finisher Succeeded (exit 0): the operator set Succeeded True."
  fresh "$kind" "$ns" "$name"

  run_failed "$def" "$kind" "$ns" "$name" "$create" "$npods" "${finisher%% *}"

  $create "$policy"
  wait_for "all_running $ns $name $npods && cond $kind $ns $name Running True" 120
  set_suspend "$kind" "$ns" "$name" true
  wait_for "cond $kind $ns $name Suspended True && npods $ns $name 0" 120
  record "$def" suspended "$kind" "$ns" "$name" "Created (restartPolicy $policy) and running as in running/, then the script set spec.runPolicy.suspend true: the operator deleted the pods and set Suspended True, Running False."
  kubectl cordon node-0 >/dev/null
  set_suspend "$kind" "$ns" "$name" false
  wait_for "cond $kind $ns $name Suspended False Resumed && npods $ns $name $npods" 60 && sleep 3
  record "$def" resuming "$kind" "$ns" "$name" "Suspended as in suspended/, then the script cordoned node-0 and set spec.runPolicy.suspend false: the operator set Suspended False (reason Resumed) and recreated the pods, which wait unscheduled (Pending)."
  kubectl uncordon node-0 >/dev/null
  wait_for "all_running $ns $name $npods && cond $kind $ns $name Running True" 120
  record "$def" running-after-resume "$kind" "$ns" "$name" "Resuming as in resuming/, then the script uncordoned node-0: kwok ran the pods and the operator set Running True again."
  fresh "$kind" "$ns" "$name"
}

# MPIJob v1: the launcher decides the job (pkg/controller.v1/mpi/mpijob_controller.go UpdateJobStatus).
run_states kubeflow-org-mpijob-v1 mpijobs.kubeflow.org default tensorflow-mnist mpijob Never 3 tensorflow-mnist-launcher
# PaddleJob: Worker only; every worker succeeding completes it, one failing with Never fails it
# (pkg/controller.v1/paddlepaddle/paddlepaddle_controller.go UpdateJobStatus). The docs' completed
# snapshot stays; this one is completed-recorded.
COMPLETED_STATE=completed-recorded run_states kubeflow-org-paddlejob-v1 paddlejobs.kubeflow.org kubeflow paddle-simple-cpu paddlejob OnFailure 2 \
  "paddle-simple-cpu-worker-0 paddle-simple-cpu-worker-1"
# PyTorchJob: only its failed state here (the others are recorded elsewhere): the Master decides the job
# (pkg/controller.v1/pytorch/pytorchjob_controller.go UpdateJobStatus).
run_failed kubeflow-org-pytorchjob-v1 pytorchjobs.kubeflow.org kubeflow pytorch-dist-mnist pytorchjob 2 pytorch-dist-mnist-master-0
