#!/usr/bin/env bash
# hack/record-status/milvus.sh: record a Milvus (milvus.io/v1beta1) that ran and was stopped,
# written by milvus-operator's own controller on the status cluster.
#
#   KUBEBUILDER_ASSETS=$(bash hack/control-plane.sh) OPERATOR_BIN=/work/ops/milvus/bin/manager \
#     OPERATOR_SRC=/work/ops/milvus/src HELM_VALUES=/work/ops/milvus/milvus-helm-values.yaml \
#     bash hack/record-status/milvus.sh [WORKDIR]
#
# OPERATOR_BIN is `go build .` of github.com/zilliztech/milvus-operator at OPERATOR_SRC's commit
# (webhooks off: its --webhook flag defaults to false). It reads config/assets from its working
# directory, as in its image (Makefile docker-prepare): the templates from OPERATOR_SRC and
# charts/values.yaml, HELM_VALUES: zilliztech/milvus-helm's charts/milvus/values.yaml (the image
# takes MILVUS_HELM_VERSION's; its dependency defaults only matter for in-cluster dependencies). Dependencies are external, so the operator
# installs no Helm release: etcd is a real etcd (the control plane's etcd binary, its own data
# dir) the operator's health check reads; storage is external Azure, which the operator's storage
# check accepts without a network call (pkg/external/minio.go CheckMinIO: "we simply assume ok");
# the message stream is the embedded woodpecker (no check). So the dependency conditions are True,
# the operator deploys the standalone component, kwok makes its pod Ready (Healthy), and then
# spec.components.standalone.replicas 0 stops it (MilvusSpec.IsStopping, status_cluster.go).
set -euo pipefail
cd "$(dirname "$0")/../.."
source hack/record-status/lib.sh
: "${OPERATOR_BIN:?}" "${OPERATOR_SRC:?}" "${HELM_VALUES:?}"
dir=${1:-$(mktemp -d /tmp/record-milvus.XXXX)}
out=definitions/catalog/tests/status/milvus-io-milvus-v1beta1
release=$(git -C "$OPERATOR_SRC" describe --tags --match 'v*' --always) commit=$(git -C "$OPERATOR_SRC" rev-parse --short HEAD)

start_cluster "$dir" --crds "$OPERATOR_SRC/config/crd/bases"
etcd_port=$(free_port) peer=http://127.0.0.1:$(free_port)
"$KUBEBUILDER_ASSETS/etcd" --data-dir "$dir/milvus-etcd" --listen-peer-urls "$peer" \
  --initial-advertise-peer-urls "$peer" --initial-cluster "default=$peer" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  >"$dir/milvus-etcd.log" 2>&1 &
etcd=$!
mkdir -p "$dir/operator/config/assets/charts"
cp -r "$OPERATOR_SRC/config/assets/templates" "$dir/operator/config/assets/"
cp "$HELM_VALUES" "$dir/operator/config/assets/charts/values.yaml"
(cd "$dir/operator" && exec "$OPERATOR_BIN" --health-probe-bind-address=0 --metrics-bind-address=0 \
  --namespace default) >"$dir/operator.log" 2>&1 &
op=$!
trap 'kill $op $etcd 2>/dev/null || true; wait $op $etcd 2>/dev/null || true; stop_cluster' EXIT

kubectl create secret generic milvus-storage -n default --from-literal=accesskey=account \
  --from-literal=secretkey=key >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: milvus.io/v1beta1
kind: Milvus
metadata: {name: karta-e2e-milvus, namespace: default}
spec:
  mode: standalone
  components:
    standalone: {replicas: 1, resources: {requests: {cpu: 250m, memory: 1Gi}}}
  dependencies:
    etcd: {external: true, endpoints: ["127.0.0.1:$etcd_port"]}
    storage: {external: true, type: Azure, endpoint: storage.invalid:443, secretRef: milvus-storage}
    msgStreamType: woodpecker
YAML
status() { kubectl get milvus karta-e2e-milvus -n default -o jsonpath='{.status.status}'; }
wait_for '[[ $(status) == Healthy ]]' 300
kubectl patch milvus karta-e2e-milvus -n default --type merge -p '{"spec":{"components":{"standalone":{"replicas":0}}}}' >/dev/null
wait_for '[[ $(status) == Stopped && -z $(pods default app.kubernetes.io/instance=karta-e2e-milvus) ]]' 300
# The status syncer's periodic pass (every 30s, status_cluster.go syncUnealthyOrUpdating) then
# drops the dependency conditions of a stopping Milvus (checkDependencyConditions) and reads the
# scaled-down Deployment: the steady stopped status.
wait_for "[[ -z \$(kubectl get milvus karta-e2e-milvus -n default -o jsonpath='{.status.conditions[?(@.type==\"EtcdReady\")]}') ]]" 180
snapshot milvus karta-e2e-milvus default | record_to "$out/stopped" \
  "recorded $(date -u +%F) by hack/record-status/milvus.sh: the object milvus-operator $release (github.com/zilliztech/milvus-operator commit $commit) wrote, its controller running on gangmap's test control plane (kube-apiserver 1.34.4, kube-controller-manager, kube-scheduler, kwok 0.7 nodes)." \
  "External dependencies (a real etcd; Azure storage, which the operator's check accepts without a call; embedded woodpecker), so no Helm release: the standalone pod became Ready (kwok; Healthy), then spec.components.standalone.replicas was set to 0: Stopped, as the status syncer's next periodic pass left it."
