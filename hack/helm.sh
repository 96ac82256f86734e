#!/usr/bin/env bash
# hack/helm.sh runs a pinned helm CLI: `bash hack/helm.sh lint deploy/helm/gangmap`.
#
# helm is built once with `go install` through the Go module proxy (about 2.5 minutes cold on 2
# cores) and cached outside the clone, under $GANGMAP_TOOLS/helm-$HELM_VERSION/helm (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/gangmap/tools), so a fresh clone and CI on the same machine reuse
# it. Every run gets a fresh temporary HOME and XDG config/cache/data directories (removed on
# exit): nothing is read from or written to the user's helm configuration, repositories or
# plugins. KUBECONFIG keeps pointing at the caller's kubeconfig ($KUBECONFIG, else
# $HOME/.kube/config when it exists).
#
# Progress goes to stderr; helm's own output is untouched. `bash hack/helm.sh --path` builds helm
# if needed and prints the binary's path instead of running it.
#
# Environment:
#   HELM_VERSION   helm.sh/helm/v3 version (v3.19.0)
#   HELM_K8S_VERSION  Kubernetes major.minor helm assumes offline (1.34, helm v3.19's client-go)
#   GANGMAP_TOOLS  where tools are installed
set -euo pipefail

HELM_VERSION=${HELM_VERSION:-v3.19.0}
# Kubernetes major.minor of helm's client-go (k8s.io/client-go v0.34.0 in helm v3.19.0).
HELM_K8S_VERSION=${HELM_K8S_VERSION:-1.34}
TOOLS=${GANGMAP_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/gangmap/tools}
DIR=$TOOLS/helm-$HELM_VERSION
HELM=$DIR/helm

log() { echo "[helm.sh] $(date +%H:%M:%S) $*" >&2; }

if [[ ! -x $HELM ]]; then
	mkdir -p "$DIR"
	# One build at a time: a second caller waits for the first and then reuses its binary.
	exec 9>"$DIR/.lock"
	if ! flock -n 9; then
		log "waiting for another build of helm $HELM_VERSION (lock $DIR/.lock) to finish; it is reused when done"
		t0=$SECONDS
		flock 9
		log "lock acquired after $((SECONDS - t0))s"
	fi
	if [[ ! -x $HELM ]]; then
		command -v go >/dev/null || { log "go is not on PATH: cannot build helm $HELM_VERSION"; exit 1; }
		log "building helm $HELM_VERSION with go install into $DIR (about 2-3 minutes cold; cached afterwards)"
		tmp=$(mktemp -d)
		t0=$SECONDS
		# The sleep does not hold stderr, so a killed heartbeat leaves no pipe open behind it.
		( while sleep 30 >/dev/null 2>&1 </dev/null; do log "still building helm ($((SECONDS - t0))s)"; done ) &
		hb=$!
		# Built from outside the module so gangmap's go.mod is neither read nor changed; GOFLAGS is
		# cleared because `go install pkg@version` rejects flags such as -mod. The ldflags are those
		# of helm's own release build: its version, and the Kubernetes version `helm template` and
		# `helm lint` assume without a cluster (that of helm's client-go, 1.34 for v3.19; the
		# default would be 1.20).
		ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
		for pkg in chartutil lint/rules; do
			ldflags+=" -X helm.sh/helm/v3/pkg/$pkg.k8sVersionMajor=${HELM_K8S_VERSION%%.*}"
			ldflags+=" -X helm.sh/helm/v3/pkg/$pkg.k8sVersionMinor=${HELM_K8S_VERSION#*.}"
		done
		if ! (cd "$tmp" && GOBIN=$tmp GOFLAGS= GOTOOLCHAIN=local CGO_ENABLED=0 go install -trimpath \
			-ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2); then
			kill "$hb" 2>/dev/null || true
			rm -rf "$tmp"
			log "FAILED to build helm $HELM_VERSION (is the Go module proxy reachable?)"
			exit 1
		fi
		kill "$hb" 2>/dev/null || true
		mv "$tmp/helm" "$HELM.tmp" && mv "$HELM.tmp" "$HELM"
		rm -rf "$tmp"
		log "helm $HELM_VERSION built in $((SECONDS - t0))s"
	fi
	exec 9>&-
fi

if [[ ${1:-} == --path ]]; then
	echo "$HELM"
	exit 0
fi

if [[ -z ${KUBECONFIG:-} && -f $HOME/.kube/config ]]; then
	export KUBECONFIG=$HOME/.kube/config
fi
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
export HOME=$home XDG_CONFIG_HOME=$home/config XDG_CACHE_HOME=$home/cache XDG_DATA_HOME=$home/data
"$HELM" "$@"
