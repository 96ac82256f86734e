#!/usr/bin/env bash
# hack/record-status/kserve.sh: record an InferenceService (serving.kserve.io/v1beta1) that ran and
# was stopped, written by KServe's own controller manager on the status cluster.
#
#   KUBEBUILDER_ASSETS=$(bash hack/control-plane.sh) OPERATOR_BIN=/work/ops/kserve/bin/manager \
#     OPERATOR_SRC=/work/ops/kserve/src bash hack/record-status/kserve.sh [WORKDIR]
#
# OPERATOR_BIN is `go build ./cmd/manager` of github.com/kserve/kserve at OPERATOR_SRC's commit.
# Standard (raw Deployment) mode, so no Knative or Istio: the inferenceservice-config ConfigMap
# (config/configmap/inferenceservice.yaml) in namespace kserve with deploy.defaultDeploymentMode
# Standard. The manager always serves its webhooks (ISVC defaulter and validator, pod mutator): it
# serves them on 127.0.0.1 with a self-signed certificate (TMPDIR holds controller-runtime's
# default cert dir) and config/webhook/manifests.yaml is registered by URL (webhooks.sh), so the
# InferenceService gets the webhook's own defaults. Runtime: config/runtimes' kserve-sklearnserver;
# storage initializer: config/storagecontainers' default.
set -euo pipefail
cd "$(dirname "$0")/../.."
source hack/record-status/lib.sh
source hack/record-status/webhooks.sh
: "${OPERATOR_BIN:?}" "${OPERATOR_SRC:?}"
dir=${1:-$(mktemp -d /tmp/record-kserve.XXXX)}
out=definitions/catalog/tests/status/serving-kserve-io-inferenceservice-v1beta1
release=$(git -C "$OPERATOR_SRC" describe --tags --always) commit=$(git -C "$OPERATOR_SRC" rev-parse --short HEAD)
port=$(free_port)

start_cluster "$dir" --crds "$OPERATOR_SRC/config/crd/full/serving.kserve.io_inferenceservices.yaml" \
  --crds "$OPERATOR_SRC/config/crd/full/serving.kserve.io_servingruntimes.yaml" \
  --crds "$OPERATOR_SRC/config/crd/full/serving.kserve.io_clusterservingruntimes.yaml" \
  --crds "$OPERATOR_SRC/config/crd/full/serving.kserve.io_trainedmodels.yaml" \
  --crds "$OPERATOR_SRC/config/crd/full/serving.kserve.io_inferencegraphs.yaml" \
  --crds "$OPERATOR_SRC/config/crd/full/clusterstoragecontainer/serving.kserve.io_clusterstoragecontainers.yaml"
kubectl create namespace kserve >/dev/null
python3 - "$OPERATOR_SRC/config/configmap/inferenceservice.yaml" <<'PY' | kubectl apply -n kserve -f - >/dev/null
import sys, yaml
cm = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d.get("kind") == "ConfigMap")
cm["data"]["deploy"] = '{"defaultDeploymentMode": "Standard"}'
print(yaml.safe_dump(cm))
PY
# The sklearn runtime and the default storage initializer, their images as kustomize sets them.
sed 's|kserve-sklearnserver:replace|kserve/sklearnserver:latest|' "$OPERATOR_SRC/config/runtimes/kserve-sklearnserver.yaml" |
  kubectl apply -f - >/dev/null
sed 's|default-storage-initilizer:replace|kserve/storage-initializer:latest|' "$OPERATOR_SRC/config/storagecontainers/default.yaml" |
  kubectl apply -f - >/dev/null
webhook_certs "$dir/tmp/k8s-webhook-server/serving-certs"
TMPDIR=$dir/tmp POD_NAMESPACE=kserve "$OPERATOR_BIN" --webhook-port "$port" --metrics-addr 0 \
  --health-probe-addr 0 >"$dir/operator.log" 2>&1 &
op=$!
trap 'kill $op 2>/dev/null || true; wait $op 2>/dev/null || true; stop_cluster' EXIT
wait_for "(exec 3<>/dev/tcp/127.0.0.1/$port)" 120
webhook_register "$OPERATOR_SRC/config/webhook/manifests.yaml" "$port" "$dir/tmp/k8s-webhook-server/serving-certs"

# The upstream Workload Map recording's spec (../running).
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: karta-e2e-kserve, namespace: default, annotations: {modelFormat: sklearn}}
spec:
  predictor:
    model:
      modelFormat: {name: sklearn}
      resources: {limits: {cpu: 100m, memory: 256Mi}, requests: {cpu: 100m, memory: 256Mi}}
      storageUri: gs://kfserving-examples/models/sklearn/1.0/model
YAML
cond() { kubectl get isvc karta-e2e-kserve -n default -o jsonpath="{.status.conditions[?(@.type==\"$1\")].status}"; }
wait_for '[[ $(cond Ready) == True ]]' 300
kubectl annotate isvc karta-e2e-kserve -n default serving.kserve.io/stop=true >/dev/null
wait_for '[[ $(cond Stopped) == True && -z $(kubectl get deploy -n default -o name) ]]' 300
sleep 3
snapshot isvc karta-e2e-kserve default | record_to "$out/stopped" \
  "recorded $(date -u +%F) by hack/record-status/kserve.sh: the object KServe $release (github.com/kserve/kserve commit $commit) wrote, its controller manager and webhooks running on gangmap's test control plane (kube-apiserver 1.34.4, kube-controller-manager, kube-scheduler, kwok 0.7 nodes), in Standard (raw Deployment) mode." \
  "The predictor pod became Ready (kwok; Ready True), then the annotation serving.kserve.io/stop \"true\" was set: the controller deleted the Deployment and wrote Stopped. Spec as created: the upstream Workload Map recording's (../running); the rest is the webhook's defaults."
