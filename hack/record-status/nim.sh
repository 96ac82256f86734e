#!/usr/bin/env bash
# hack/record-status/nim.sh: record a failed NIMService (apps.nvidia.com/v1alpha1) written by the
# NVIDIA NIM operator's own controller on the status cluster.
#
#   KUBEBUILDER_ASSETS=$(bash hack/control-plane.sh) OPERATOR_BIN=/work/ops/nim/bin/manager \
#     OPERATOR_SRC=/work/ops/nim/src bash hack/record-status/nim.sh [WORKDIR]
#
# OPERATOR_BIN is `go build ./cmd` of github.com/NVIDIA/k8s-nim-operator at OPERATOR_SRC's commit.
# The operator renders its objects from /manifests (its image's layout, deployments/container/
# Dockerfile): the script links /manifests to OPERATOR_SRC/manifests while it runs. Webhooks are
# off (ENABLE_WEBHOOKS unset: cmd/main.go registers none).
#
# failed: spec.storage.nimCache names a NIMCache that does not exist; the controller
# (internal/controller/platform/standalone/nimservice.go reconcileNIMService) fails the service.
set -euo pipefail
cd "$(dirname "$0")/../.."
source hack/record-status/lib.sh
: "${OPERATOR_BIN:?}" "${OPERATOR_SRC:?}"
dir=${1:-$(mktemp -d /tmp/record-nim.XXXX)}
out=definitions/catalog/tests/status/apps-nvidia-com-nimservice-v1alpha1
release=$(git -C "$OPERATOR_SRC" describe --tags --always) commit=$(git -C "$OPERATOR_SRC" rev-parse --short HEAD)

start_cluster "$dir" --crds "$OPERATOR_SRC/config/crd/bases"
linked=
if [[ ! -e /manifests ]]; then ln -s "$OPERATOR_SRC/manifests" /manifests && linked=1; fi
"$OPERATOR_BIN" --health-probe-bind-address=0 --metrics-bind-address=0 >"$dir/operator.log" 2>&1 &
op=$!
trap 'kill $op 2>/dev/null || true; wait $op 2>/dev/null || true; [[ -z $linked ]] || rm -f /manifests; stop_cluster' EXIT

# The upstream Workload Map recording's spec (../running), its model store a missing NIMCache.
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: apps.nvidia.com/v1alpha1
kind: NIMService
metadata: {name: karta-e2e-nim, namespace: default}
spec:
  authSecret: ngc-secret
  env:
  - {name: NIM_REQUEST_LATENCY, value: "2"}
  expose:
    service: {port: 8000, type: ClusterIP}
  image: {pullPolicy: IfNotPresent, repository: nim-cpu, tag: e2e}
  inferencePlatform: standalone
  replicas: 1
  resources: {limits: {cpu: 500m, memory: 512Mi}, requests: {cpu: 500m, memory: 512Mi}}
  storage:
    nimCache: {name: invalid-nimcache}
YAML
wait_for "[[ \$(kubectl get nimservice karta-e2e-nim -o jsonpath='{.status.state}') == Failed ]]" 120
snapshot nimservice karta-e2e-nim default | record_to "$out/failed" \
  "recorded $(date -u +%F) by hack/record-status/nim.sh: the object the NVIDIA NIM operator $release (github.com/NVIDIA/k8s-nim-operator commit $commit) wrote, its controller running on gangmap's test control plane (kube-apiserver 1.34.4, kube-controller-manager, kube-scheduler, kwok 0.7 nodes)." \
  "Failed: spec.storage.nimCache names a NIMCache that does not exist (internal/controller/platform/standalone/nimservice.go reconcileNIMService, NIMCacheNotFound). Spec as created: the upstream Workload Map recording's (../running) without the fields the operator defaults, its model store that missing NIMCache (generation 2: the defaults written)."
