#!/usr/bin/env bash
# hack/e2e-kind.sh (`make e2e-kind`): gangmap's end-to-end test with the real KAI Scheduler on a
# kind cluster, for machines with Docker.
#
#   1. Checks that Docker can run privileged containers (kind's nodes are privileged containers);
#      fails at once, saying why, when it cannot. It never passes without running the test.
#   2. Installs kind (pinned, `go install`) and helm (hack/helm.sh), creates a cluster (one
#      control-plane node, one worker that gets fake GPUs), installs KAI Scheduler from its
#      published chart (pinned), builds gangmap's image and loads it into kind, and installs
#      gangmap from deploy/helm/gangmap with e2e/kind/testdata/gangmap-values.yaml.
#   3. Runs the Go test in e2e/kind (build tag kind) against the cluster: a CustomJob (a kind no
#      KAI version knows, defined by e2e/testdata/customjob-karta.yaml) is admitted
#      all-or-nothing, and KAI's pod-grouper makes no second PodGroup.
#   4. Deletes the cluster (KEEP_CLUSTER=1 keeps it; ARTIFACTS=dir exports kind's logs on failure).
#
# Environment (defaults in brackets):
#   KIND_VERSION [v0.30.0]  KIND_NODE_IMAGE [kindest/node:v1.34.0]  KIND_CLUSTER_NAME [gangmap-e2e]
#   KAI_CHART [oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler]  KAI_VERSION [v0.17.0]
#   GANGMAP_IMAGE [gangmap:e2e]  KEEP_CLUSTER  ARTIFACTS  DOCKER_CHECK_IMAGE [busybox:1.36.1]
set -euo pipefail

KIND_VERSION=${KIND_VERSION:-v0.30.0}
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-kindest/node:v1.34.0}
CLUSTER=${KIND_CLUSTER_NAME:-gangmap-e2e}
KAI_CHART=${KAI_CHART:-oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler}
KAI_VERSION=${KAI_VERSION:-v0.17.0}
KAI_NAMESPACE=kai-scheduler
GANGMAP_IMAGE=${GANGMAP_IMAGE:-gangmap:e2e}
GANGMAP_NAMESPACE=gangmap-system
DOCKER_CHECK_IMAGE=${DOCKER_CHECK_IMAGE:-busybox:1.36.1}
TOOLS=${GANGMAP_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/gangmap/tools}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { echo "[e2e-kind] $(date +%H:%M:%S) $*" >&2; }
die() {
	echo "[e2e-kind] FAILED: $*" >&2
	exit 1
}

# 1. Docker, fast: no daemon, or no privileged containers, ends the run here with a reason.
no_docker() {
	die "$1
  make e2e-kind needs a Docker engine that can run privileged containers: kind runs each Kubernetes
  node as a privileged container from the kindest/node image. Run it on a machine with Docker (a
  laptop, or the GitHub Actions workflow .github/workflows/e2e-kind.yaml). Without Docker, 'make test'
  runs the hermetic e2e on a real kube-apiserver and etcd, and the chart checks."
}
command -v docker >/dev/null 2>&1 || no_docker "the docker CLI is not installed."
if ! out=$(timeout 20 docker info 2>&1); then
	no_docker "the Docker engine is not reachable ('docker info' failed: $(grep -m1 -iE 'error|cannot' <<<"$out" || head -n1 <<<"$out"))."
fi
if ! out=$(timeout 120 docker run --rm --privileged "$DOCKER_CHECK_IMAGE" true 2>&1); then
	no_docker "Docker cannot run a privileged container ('docker run --rm --privileged $DOCKER_CHECK_IMAGE true' failed: $(tail -n1 <<<"$out"))."
fi
log "Docker runs privileged containers"

command -v go >/dev/null 2>&1 || die "go is not on PATH (it installs kind and helm and runs the test)"

# 2. Tools, pinned and cached outside the clone.
KIND=$TOOLS/kind-$KIND_VERSION
if [[ ! -x $KIND ]]; then
	log "installing kind $KIND_VERSION"
	mkdir -p "$TOOLS"
	tmp=$(mktemp -d)
	(cd "$tmp" && GOBIN=$tmp GOFLAGS= CGO_ENABLED=0 go install "sigs.k8s.io/kind@$KIND_VERSION")
	mv "$tmp/kind" "$KIND"
	rm -rf "$tmp"
fi
HELM=$(bash "$ROOT/hack/helm.sh" --path)
helm() {
	# A private helm home (repositories, registry logins, cache), as hack/helm.sh does.
	HOME=$WORK/helm-home XDG_CONFIG_HOME=$WORK/helm-home/config XDG_CACHE_HOME=$WORK/helm-home/cache \
		XDG_DATA_HOME=$WORK/helm-home/data "$HELM" "$@"
}

WORK=$(mktemp -d)
export KUBECONFIG=$WORK/kubeconfig
cleanup() {
	local rc=$?
	if [[ $rc -ne 0 && -n ${ARTIFACTS:-} ]]; then
		log "exporting kind logs to $ARTIFACTS"
		"$KIND" export logs "$ARTIFACTS" --name "$CLUSTER" >/dev/null 2>&1 || true
	fi
	if [[ -n ${KEEP_CLUSTER:-} ]]; then
		log "keeping cluster $CLUSTER (KUBECONFIG=$KUBECONFIG); delete it with: $KIND delete cluster --name $CLUSTER"
	else
		log "deleting cluster $CLUSTER"
		"$KIND" delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
		rm -rf "$WORK"
	fi
	exit $rc
}
trap cleanup EXIT

# 3. The cluster: one control-plane node, one worker for the fake GPUs.
if "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
	log "deleting a leftover cluster $CLUSTER"
	"$KIND" delete cluster --name "$CLUSTER"
fi
cat >"$WORK/kind.yaml" <<EOF
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
  - role: control-plane
  - role: worker
EOF
log "creating kind cluster $CLUSTER ($KIND_NODE_IMAGE)"
"$KIND" create cluster --name "$CLUSTER" --image "$KIND_NODE_IMAGE" --config "$WORK/kind.yaml" --kubeconfig "$KUBECONFIG" --wait 3m

# 4. KAI Scheduler from its published chart. The GPUs are fake: the test sets nvidia.com/gpu
# capacity on the worker's Node status (an extended resource no device plugin owns, as in KAI's
# env-tests' fake GPU nodes), so KAI's GPU-sharing and device-plugin parts are not needed.
log "installing KAI Scheduler $KAI_VERSION from $KAI_CHART"
helm upgrade --install kai-scheduler "$KAI_CHART" --version "$KAI_VERSION" \
	--namespace "$KAI_NAMESPACE" --create-namespace --wait --timeout 10m

# 5. gangmap: image built here and loaded into the nodes, chart from this clone.
log "building $GANGMAP_IMAGE"
DOCKER_BUILDKIT=1 docker build -t "$GANGMAP_IMAGE" "$ROOT"
"$KIND" load docker-image "$GANGMAP_IMAGE" --name "$CLUSTER"
log "installing gangmap from deploy/helm/gangmap"
helm upgrade --install gangmap "$ROOT/deploy/helm/gangmap" --namespace "$GANGMAP_NAMESPACE" --create-namespace \
	-f "$ROOT/e2e/kind/testdata/gangmap-values.yaml" \
	--set image.repository="${GANGMAP_IMAGE%:*}" --set image.tag="${GANGMAP_IMAGE##*:}" \
	--wait --timeout 5m

# 6. The test.
log "running e2e/kind"
cd "$ROOT"
GANGMAP_NAMESPACE=$GANGMAP_NAMESPACE GANGMAP_METRICS_SERVICE=gangmap-metrics \
	go test -tags kind -count=1 -timeout 30m -v ./e2e/kind/...
log "passed"
