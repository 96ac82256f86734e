#!/usr/bin/env bash
# hack/record-status/dynamo.sh: record the DynamoGraphDeployment (nvidia.com/v1beta1, and its
# v1alpha1 view) states the NVIDIA Dynamo operator's own controller writes, on gangmap's test
# control plane (hack/statuscluster), into the status corpus.
#
#   KUBEBUILDER_ASSETS=$(bash hack/control-plane.sh) \
#   OPERATOR_BIN=/work/ops/dynamo/bin/manager OPERATOR_SRC=/work/ops/dynamo/src \
#     bash hack/record-status/dynamo.sh
#
# OPERATOR_BIN: deploy/operator/cmd/main.go of a Dynamo checkout built with `go build`;
# OPERATOR_SRC: that checkout (its CRDs, chart and examples are used).
#
# How the operator runs here (Dynamo 1.4 has no switch to turn its webhooks off):
# - its config (deploy/helm/.../operator-config.yaml) with Grove, LWS, KAI and Volcano off, the
#   Kubernetes discovery backend (no etcd, no NATS), no leader election, certProvisionMode manual;
# - the webhook certificate: a CA and a server certificate for 127.0.0.1 made with openssl, in the
#   Secret webhook-server-cert of dynamo-system (the operator reads ca.crt from it and patches it
#   into the CRDs' conversion webhooks) and in certDir (its webhook server serves them);
# - it reads its namespace from the service-account file of a pod, so it runs in a private mount
#   namespace (unshare -m) holding that one file;
# - the test control plane has no Service routing, so once the operator has injected its CA the
#   script points the CRD conversion webhooks and the chart's DynamoGraphDeployment validating and
#   mutating webhooks at https://127.0.0.1:PORT, the operator's own webhook server.
# The v1beta1 object is the stored one; the v1alpha1 view is the same object read at v1alpha1,
# which the apiserver converts by calling the operator's conversion webhook.
set -euo pipefail
cd "$(dirname "$0")/../.."
source hack/record-status/lib.sh
: "${OPERATOR_BIN:?path of the built Dynamo operator}" "${OPERATOR_SRC:?path of its checkout}"
op=$OPERATOR_SRC/deploy/operator
corpus=definitions/catalog/tests/status/nvidia-com-dynamographdeployment
work=$(mktemp -d /tmp/record-dynamo.XXXX)
rel=$(yq -r .appVersion "$OPERATOR_SRC/deploy/helm/charts/platform/components/operator/Chart.yaml")
sha=$(git -C "$OPERATOR_SRC" rev-parse --short=9 HEAD)
port=$(free_port)

start_cluster "$work" --crds "$op/config/crd/bases"

# The webhook certificate (what the chart's cert-manager or auto mode would provide).
mkdir -p "$work/certs"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=dynamo-webhook-ca \
  -keyout "$work/certs/ca.key" -out "$work/certs/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$work/certs/tls.key" -out "$work/certs/tls.csr" 2>/dev/null
openssl x509 -req -in "$work/certs/tls.csr" -CA "$work/certs/ca.crt" -CAkey "$work/certs/ca.key" -CAcreateserial -days 2 \
  -extfile <(echo "subjectAltName=IP:127.0.0.1,DNS:dynamo-operator-webhook-service.dynamo-system.svc") \
  -out "$work/certs/tls.crt" 2>/dev/null
kubectl create namespace dynamo-system
kubectl -n dynamo-system create secret generic webhook-server-cert --type=kubernetes.io/tls \
  --from-file="$work/certs/ca.crt" --from-file="$work/certs/tls.crt" --from-file="$work/certs/tls.key"

cat >"$work/config.yaml" <<EOF
apiVersion: operator.config.dynamo.nvidia.com/v1alpha1
kind: OperatorConfiguration
server:
  metrics: {bindAddress: 127.0.0.1, port: 0, secure: false}
  healthProbe: {bindAddress: 127.0.0.1, port: 0}
  webhook:
    host: 127.0.0.1
    port: $port
    certDir: $work/certs
    certProvisionMode: manual
    secretName: webhook-server-cert
    serviceName: dynamo-operator-webhook-service
leaderElection: {enabled: false}
orchestrators:
  grove: {enabled: false}
  lws: {enabled: false}
  kaiScheduler: {enabled: false}
  volcanoScheduler: {enabled: false}
rbac:
  plannerClusterRoleName: dynamo-operator-planner
  dgdrProfilingClusterRoleName: dynamo-operator-dgdr-profiling
  eppClusterRoleName: dynamo-operator-epp
mpi: {sshSecretName: mpi-run-ssh-secret, sshSecretNamespace: dynamo-system}
EOF
unshare -m sh -c 'mount -t tmpfs none /run && mkdir -p /run/secrets/kubernetes.io/serviceaccount &&
  echo dynamo-system >/run/secrets/kubernetes.io/serviceaccount/namespace && exec "$0" "$@"' \
  "$OPERATOR_BIN" --config="$work/config.yaml" --operator-version="$rel" >"$work/dynamo.log" 2>&1 &
operator=$!
trap 'kill $operator 2>/dev/null || true; wait $operator 2>/dev/null || true; stop_cluster' EXIT
wait_for "grep -q 'Serving webhook server' '$work/dynamo.log'" 120

# Route the conversion and admission webhooks to the operator's webhook server.
ca=$(base64 -w0 <"$work/certs/ca.crt")
for crd in dynamographdeployments dynamocomponentdeployments dynamographdeploymentrequests dynamographdeploymentscalingadapters; do
  kubectl patch crd "$crd.nvidia.com" --type=json -p "[{\"op\":\"replace\",\"path\":\"/spec/conversion/webhook/clientConfig\",
    \"value\":{\"url\":\"https://127.0.0.1:$port/convert\",\"caBundle\":\"$ca\"}}]"
done
for kind in Validating Mutating; do
  path=$([[ $kind == Validating ]] && echo validate || echo mutate)
  kubectl apply -f - <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ${kind}WebhookConfiguration
metadata: {name: dynamo-operator-${path}}
webhooks:
- name: ${path:0:1}dynamographdeployment.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "https://127.0.0.1:$port/$path/nvidia.com/v1beta1/dynamographdeployments", caBundle: "$ca"}
  failurePolicy: Fail
  rules: [{apiGroups: [nvidia.com], apiVersions: [v1beta1], operations: [CREATE, UPDATE], resources: [dynamographdeployments]}]
  sideEffects: None
  timeoutSeconds: 10
EOF
done

# record DEFINITION-VERSION STATE HOW: write the object YAML on stdin into the corpus case.
record() { record_to "$corpus-$1/$2" "recorded $(date -u +%F) by hack/record-status/dynamo.sh: the object the NVIDIA Dynamo operator $rel (github.com/ai-dynamo/dynamo commit $sha, the 1.4.0 branch point) wrote, its controller running on gangmap's test control plane (kube-apiserver 1.34.4, kube-controller-manager, kube-scheduler, kwok 0.7 nodes; the script set no pod phase: kwok ran the pods). The operator ran with Grove, LWS, KAI and Volcano off, its admission and conversion webhooks served by its own webhook server." "$3"; }
state() { [[ $(kubectl get dynamographdeployment.v1beta1.nvidia.com -n "$1" "$2" -o jsonpath='{.status.state}') == "$3" ]]; }
kubectl create secret generic hf-token-secret --from-literal=HF_TOKEN=unused
# The ClusterRoles the chart installs and the operator binds in every graph's namespace (planner.yaml,
# epp.yaml, profiling-job-rbac.yaml): here without rules (no planner, EPP or profiler runs).
for role in planner epp dgdr-profiling; do
  echo "{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: dynamo-operator-$role}, rules: []}" | kubectl apply -f -
done

# Running: examples/backends/vllm/deploy/disagg.yaml (Frontend, decode and prefill workers, one
# replica each, Deployment-backed): the operator creates a DynamoComponentDeployment per component,
# each a Deployment; kwok makes their pods Ready; the controller writes state successful.
example() { sed "s/:my-tag/:$rel/" "$OPERATOR_SRC/examples/backends/vllm/deploy/$1"; } # the release's runtime image
"$KUBEBUILDER_ASSETS/kubectl" get dynamographdeployments.v1beta1.nvidia.com -n default -w -o json >"$work/watch.json" 2>/dev/null &
watch=$!
example disagg.yaml | kubectl apply -f -
wait_for 'state default vllm-disagg successful' 300
kill $watch
watched "$work/watch.json" '.status.state == "pending"' | record v1beta1 initializing "Created as examples/backends/vllm/deploy/disagg.yaml, image tag my-tag set to $rel (Frontend, VllmDecodeWorker, VllmPrefillWorker). This is the first version of the object (from a watch) with a state: the controller had created a DynamoComponentDeployment per component, which the DynamoComponentDeployment controller had not processed yet, and wrote state pending, Ready False some_resources_are_not_ready."
snapshot dynamographdeployment.v1beta1.nvidia.com vllm-disagg default | record v1beta1 running "Created as examples/backends/vllm/deploy/disagg.yaml, image tag my-tag set to $rel (Frontend, VllmDecodeWorker, VllmPrefillWorker). The controller created a DynamoComponentDeployment per component and each a Deployment; kube-controller-manager created the pods and kwok made them Ready; the controller wrote state successful, Ready True."

# Failed: examples/backends/vllm/deploy/disagg-multinode.yaml (workers with multinode.nodeCount 2):
# admission accepts it, but with neither Grove nor LWS the component program has no multinode
# orchestrator (componentProgram.Reconcile) and writes state failed.
# Both examples name their graph vllm-disagg: this one goes to its own namespace.
kubectl create namespace multinode
example disagg-multinode.yaml | kubectl apply -n multinode -f -
wait_for 'state multinode vllm-disagg failed' 120
how="Created as examples/backends/vllm/deploy/disagg-multinode.yaml, image tag my-tag set to $rel (decode and prefill workers with multinode.nodeCount 2) in namespace multinode, which the operator's admission webhooks accepted, on an operator with Grove and LWS off (a cluster without them): componentProgram.Reconcile (internal/controller/dgd_component_program.go) found no multinode orchestrator and workloadProgramResult.Fail wrote state failed, Ready False no_multinode_orchestrator_available."
snapshot dynamographdeployment.v1beta1.nvidia.com vllm-disagg multinode | record v1beta1 failed "$how"
snapshot dynamographdeployment.v1alpha1.nvidia.com vllm-disagg multinode | record v1alpha1 failed "$how The object as read at nvidia.com/v1alpha1: the apiserver converted the stored v1beta1 object by calling the operator's conversion webhook."
