#!/usr/bin/env bash
# hack/record-status/disaggregatedset.sh: record a DisaggregatedSet (disaggregatedset.x-k8s.io/v1)
# starting and running, written by the LWS controller manager's own DisaggregatedSet and
# LeaderWorkerSet controllers on the status cluster.
#
#   KUBEBUILDER_ASSETS=$(bash hack/control-plane.sh) OPERATOR_BIN=/work/ops/lws/bin/manager \
#     OPERATOR_SRC=/work/ops/lws/src bash hack/record-status/disaggregatedset.sh [WORKDIR]
#
# OPERATOR_BIN is `go build ./cmd` of github.com/kubernetes-sigs/lws at OPERATOR_SRC's commit: the
# DisaggregatedSet status (roleStatuses, Available/Progressing) is written since commits fb80447
# and 060ab4d, after v0.10.0 (whose controller writes no DisaggregatedSet status). The LWS pod
# webhook labels the pods the LWS controller reads (worker index, group), so the webhooks run:
# the internal cert controller is off (its Configuration's internalCertManagement.enable false),
# the manager serves its webhooks on 127.0.0.1 with a self-signed certificate, and its
# config/webhook/manifests.yaml configurations are registered by URL (webhooks.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
source hack/record-status/lib.sh
source hack/record-status/webhooks.sh
: "${OPERATOR_BIN:?}" "${OPERATOR_SRC:?}"
dir=${1:-$(mktemp -d /tmp/record-disaggregatedset.XXXX)}
out=definitions/catalog/tests/status/disaggregatedset-x-k8s-io-disaggregatedset-v1
commit=$(git -C "$OPERATOR_SRC" rev-parse --short HEAD)
port=$(free_port)

start_cluster "$dir" --crds "$OPERATOR_SRC/config/crd/bases"
webhook_certs "$dir/certs"
cat >"$dir/lws-config.yaml" <<YAML
apiVersion: config.lws.x-k8s.io/v1alpha1
kind: Configuration
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
webhook: {host: 127.0.0.1, port: $port, certDir: $dir/certs}
metrics: {bindAddress: "0"}
health: {healthProbeBindAddress: "0"}
YAML
"$OPERATOR_BIN" --config "$dir/lws-config.yaml" >"$dir/operator.log" 2>&1 &
op=$!
trap 'kill $op 2>/dev/null || true; wait $op 2>/dev/null || true; stop_cluster' EXIT
wait_for "(exec 3<>/dev/tcp/127.0.0.1/$port)" 120
webhook_register "$OPERATOR_SRC/config/webhook/manifests.yaml" "$port" "$dir/certs"

# kwok makes the pods Ready within a second, so the Progressing status the controller writes
# first is caught by a watch started before the object is created.
"$KUBEBUILDER_ASSETS/kubectl" get disaggregatedsets -n default -w -o json >"$dir/watch.json" &
watch=$!
trap 'kill $op $watch 2>/dev/null || true; wait $op $watch 2>/dev/null || true; stop_cluster' EXIT
kubectl apply -f "$OPERATOR_SRC/config/samples/disaggregatedset_v1_disaggregatedset.yaml" >/dev/null
cond() { kubectl get disaggregatedset disaggregatedset-sample -n default -o jsonpath="{.status.conditions[?(@.type==\"$1\")].status}"; }
record() { record_to "$out/$1" "recorded $(date -u +%F) by hack/record-status/disaggregatedset.sh: the object the LWS controller manager (github.com/kubernetes-sigs/lws commit $commit, after v0.10.0) wrote, its controllers and webhooks running on gangmap's test control plane (kube-apiserver 1.34.4, kube-controller-manager, kube-scheduler, kwok 0.7 nodes)." "$2 Spec: config/samples/disaggregatedset_v1_disaggregatedset.yaml (commit $commit)."; }
wait_for '[[ $(cond Available) == True ]]' 300
sleep 2
snapshot disaggregatedset disaggregatedset-sample default | record running "Every pod Ready (kwok): Available."
watched "$dir/watch.json" 'any(.status.conditions[]?; .type == "Progressing" and .status == "True")' |
  record initializing "The first status written, as a watch saw it: Progressing, the pods not all Ready yet."
