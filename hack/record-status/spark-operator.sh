#!/usr/bin/env bash
# hack/record-status/spark-operator.sh: record the SparkApplication (sparkoperator.k8s.io/v1beta2)
# and SparkConnect (v1alpha1) states the Kubeflow Spark operator's own controller writes, on
# gangmap's test control plane (hack/statuscluster), into the status corpus.
#
#   KUBEBUILDER_ASSETS=$(bash hack/control-plane.sh) \
#   OPERATOR_BIN=/work/ops/spark/bin/spark-operator OPERATOR_SRC=/work/ops/spark/src \
#     bash hack/record-status/spark-operator.sh
#
# OPERATOR_BIN: cmd/operator of a spark-operator checkout built with `go build`, run as
# `controller start` (its webhook is the separate `webhook start`, not run); OPERATOR_SRC: that
# checkout (its CRDs are applied). Submitting a SparkApplication runs spark-submit (a JVM and a
# Spark distribution), which this machine has not: only states reached without it are recorded.
# A SparkApplication created with spec.suspend: true is never submitted (Reconcile goes from the
# new state to Suspending); a SparkConnect's server pod the controller creates itself.
set -euo pipefail
cd "$(dirname "$0")/../.."
source hack/record-status/lib.sh
: "${OPERATOR_BIN:?path of the built spark-operator}" "${OPERATOR_SRC:?path of its checkout}"
status=definitions/catalog/tests/status
work=$(mktemp -d /tmp/record-spark.XXXX)
rel=$(git -C "$OPERATOR_SRC" describe --tags --exact-match 2>/dev/null || git -C "$OPERATOR_SRC" describe --tags)
sha=$(git -C "$OPERATOR_SRC" rev-parse --short=9 HEAD)

start_cluster "$work" --crds "$OPERATOR_SRC/config/crd/bases"
# In a pod the kubelet sets KUBERNETES_SERVICE_HOST and _PORT (the default/kubernetes Service); the
# SparkConnect controller builds the server's --master from them (pkg/util GetMasterURL).
wait_for 'kubectl get service kubernetes' 60
KUBERNETES_SERVICE_HOST=$(kubectl get service kubernetes -o jsonpath='{.spec.clusterIP}') \
KUBERNETES_SERVICE_PORT=$(kubectl get service kubernetes -o jsonpath='{.spec.ports[?(@.name=="https")].port}') \
"$OPERATOR_BIN" controller start --leader-election=false --metrics-bind-address=0 \
  --health-probe-bind-address=0 >"$work/spark-operator.log" 2>&1 &
operator=$!
trap 'kill $operator 2>/dev/null || true; wait $operator 2>/dev/null || true; stop_cluster' EXIT
# The service account the examples' driver and server pods run as (the Helm chart creates it).
kubectl create serviceaccount spark-operator-spark

# record DEFINITION/STATE HOW: write the object YAML on stdin into that corpus case.
record() { record_to "$status/$1" "recorded $(date -u +%F) by hack/record-status/spark-operator.sh: the object the Kubeflow Spark operator $rel (github.com/kubeflow/spark-operator commit $sha) wrote, its controller running on gangmap's test control plane (kube-apiserver 1.34.4, kube-controller-manager, kube-scheduler, kwok 0.7 nodes; the script set no pod phase: kwok ran the pods)." "$2"; }

# apply_watched RESOURCE WATCHFILE MANIFEST CONDITION: apply MANIFEST with a watch of RESOURCE
# writing every version to WATCHFILE (for watched), until CONDITION holds (60 s at most).
apply_watched() {
  "$KUBEBUILDER_ASSETS/kubectl" get "$1" -w -o json >"$2" 2>/dev/null &
  local watch=$!
  kubectl apply -f "$3"
  wait_for "$4" 60
  kill $watch
}

# SparkApplication: examples/spark-pi.yaml with spec.suspend: true, as a queueing system (Kueue)
# creates one it has not admitted yet.
app=sparkoperator-k8s-io-sparkapplication-v1beta2
yq -y '.spec.suspend = true' "$OPERATOR_SRC/examples/spark-pi.yaml" >"$work/spark-pi.yaml"
apply_watched sparkapplications "$work/app-watch.json" "$work/spark-pi.yaml" \
  '[[ $(kubectl get sparkapplication spark-pi -o jsonpath="{.status.applicationState.state}") == SUSPENDED ]]'
snapshot sparkapplication spark-pi default | record $app/suspended "Created as examples/spark-pi.yaml with spec.suspend: true: the controller never submitted it (no spark-submit), wrote SUSPENDING (Reconcile, transitionToSuspending) and, with no driver or executor to delete, SUSPENDED (reconcileSuspendingSparkApplication)."
watched "$work/app-watch.json" '.status.applicationState.state == "SUSPENDING"' |
  record $app/suspending "Created as examples/spark-pi.yaml with spec.suspend: true. This is the version of the object (from a watch) in which the controller had written SUSPENDING (Reconcile, transitionToSuspending), before reconcileSuspendingSparkApplication deleted its (absent) driver and wrote SUSPENDED."

# SparkConnect: examples/sparkconnect/spark-connect.yaml. The controller creates the server pod
# and writes NotReady; kwok runs the pod, it becomes Ready, and the controller writes Ready.
conn=sparkoperator-k8s-io-sparkconnect-v1alpha1
apply_watched sparkconnects "$work/conn-watch.json" "$OPERATOR_SRC/examples/sparkconnect/spark-connect.yaml" \
  '[[ $(kubectl get sparkconnect spark-connect -o jsonpath="{.status.state}") == Ready ]]'
snapshot sparkconnect spark-connect default | record $conn/running "Created as examples/sparkconnect/spark-connect.yaml: the controller created the server pod; kube-scheduler bound it, kwok ran it and made it Ready, and the controller wrote ServerPodReady True, state Ready (createOrUpdateServerPod)."
watched "$work/conn-watch.json" '.status.state == "NotReady"' |
  record $conn/initializing-not-ready "Created as examples/sparkconnect/spark-connect.yaml. This is the first version of the object (from a watch) the controller wrote: it had just created the server pod, not bound or ready yet, so ServerPodReady False, state NotReady (createOrUpdateServerPod)."
