#!/usr/bin/env bash
# hack/generate.sh regenerates the code and manifests derived from the Go API types:
#   - podgrouper/core/apis/**/zz_generated.deepcopy.go   (controller-gen object)
#   - deploy/crds/scheduling.run.ai_podgroups.yaml   (controller-gen crd)
# deploy/crds/run.ai_kartas.yaml is written by hand (an upstream-shaped Karta CRD) and is left alone:
# controller-gen only writes the CRDs of the types under podgrouper/core/apis.
#
# controller-gen is installed once, pinned, under $GANGMAP_TOOLS (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/gangmap/tools), outside the clone, so that a fresh clone reuses it.
#
# Environment:
#   CONTROLLER_GEN_VERSION  sigs.k8s.io/controller-tools version (v0.19.0)
#   GANGMAP_TOOLS           where tools are installed
set -euo pipefail

CONTROLLER_GEN_VERSION=${CONTROLLER_GEN_VERSION:-v0.19.0}
TOOLS=${GANGMAP_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/gangmap/tools}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { echo "[generate] $*" >&2; }

CONTROLLER_GEN=$TOOLS/controller-gen-$CONTROLLER_GEN_VERSION
if [[ ! -x $CONTROLLER_GEN ]]; then
	log "installing controller-gen $CONTROLLER_GEN_VERSION into $TOOLS"
	mkdir -p "$TOOLS"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	# Install from outside the module so that gangmap's go.mod is neither read nor changed.
	(cd "$tmp" && GOBIN=$tmp GOFLAGS=-mod=mod go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_GEN_VERSION")
	mv "$tmp/controller-gen" "$CONTROLLER_GEN"
fi

cd "$ROOT"
log "deepcopy: podgrouper/core/apis/..."
"$CONTROLLER_GEN" object paths=./podgrouper/core/apis/...
log "CRDs: podgrouper/core/apis/... -> deploy/crds"
"$CONTROLLER_GEN" crd paths=./podgrouper/core/apis/... output:crd:dir=deploy/crds
