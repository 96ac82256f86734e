#!/usr/bin/env bash
# hack/control-plane.sh builds, once, a real Kubernetes control plane from the Go module proxy and
# caches it outside the clone, so a fresh clone (and CI on the same machine) reuses it.
#
# It prints the directory holding the binaries on stdout (use it as KUBEBUILDER_ASSETS); progress
# goes to stderr. A cold build takes about 18 minutes on 2 cores (kube-apiserver alone about 10).
#
# Environment:
#   K8S_VERSION   k8s.io/kubernetes version, staging modules pinned to v0.<minor>.<patch> (1.34.4)
#   ETCD_VERSION  go.etcd.io/etcd/server/v3 version (3.6.4)
#   KWOK_VERSION  sigs.k8s.io/kwok version (0.7.0)
#   COMPONENTS    what to build (default: "etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok")
#   CONTROL_PLANE_DIR  where the binaries go
#                 (default $XDG_CACHE_HOME or $HOME/.cache, then gangmap/control-plane/<versions>)
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.34.4}
ETCD_VERSION=${ETCD_VERSION:-3.6.4}
KWOK_VERSION=${KWOK_VERSION:-0.7.0}
COMPONENTS=${COMPONENTS:-"etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok"}
OUT=${CONTROL_PLANE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gangmap/control-plane/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION}

log() { echo "[control-plane] $(date +%H:%M:%S) $*" >&2; }

missing=()
for c in $COMPONENTS; do [[ -x $OUT/$c ]] || missing+=("$c"); done
if [[ ${#missing[@]} -eq 0 ]]; then echo "$OUT"; exit 0; fi

mkdir -p "$OUT"
# One build at a time: a second caller (make test while make demo builds) waits for the first,
# saying so and showing the first build's progress (its log lines, from $OUT/.build.log).
exec 9>"$OUT/.lock"
if ! flock -n 9; then
  log "waiting for another build of the control plane in $OUT (started by another process; its progress follows)"
  touch "$OUT/.build.log"
  tail --pid=$$ -n 2 -F "$OUT/.build.log" 2>/dev/null | sed -u 's/^/[control-plane] (other build) /' >&2 &
  tailer=$!
  t0=$SECONDS
  while ! flock -w 60 9; do log "still waiting for the other build ($((SECONDS - t0))s)"; done
  kill "$tailer" 2>/dev/null || true
  log "the other build finished after $((SECONDS - t0))s"
fi
missing=()
for c in $COMPONENTS; do [[ -x $OUT/$c ]] || missing+=("$c"); done
if [[ ${#missing[@]} -eq 0 ]]; then echo "$OUT"; exit 0; fi
# From here this process builds: its progress also goes to $OUT/.build.log for waiting callers.
: >"$OUT/.build.log"
log() { echo "[control-plane] $(date +%H:%M:%S) $*" | tee -a "$OUT/.build.log" >&2; }

log "building ${missing[*]} into $OUT"
log "a cold build takes about 18 minutes on 2 cores; later runs reuse the binaries"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CGO_ENABLED=0 GOFLAGS="-mod=mod" GOTOOLCHAIN=local

# heartbeat prints progress while a long compile runs, so the user sees the build is alive.
heartbeat() {
  local what=$1 t0=$SECONDS
  while sleep 30; do log "still building $what ($((SECONDS - t0))s)"; done
}

build() { # build NAME PKG LDFLAGS
  local name=$1 pkg=$2 ldf=$3 t0=$SECONDS
  log "building $name"
  heartbeat "$name" & local hb=$!
  if ! go build -trimpath -ldflags "$ldf" -o "$OUT/$name.tmp" "$pkg" >&2; then
    kill "$hb" 2>/dev/null || true
    log "FAILED to build $name"; exit 1
  fi
  kill "$hb" 2>/dev/null || true
  mv "$OUT/$name.tmp" "$OUT/$name"
  log "$name done in $((SECONDS - t0))s"
}

want() { [[ " ${missing[*]} " == *" $1 "* ]]; }

# etcd: its go.mod has replace directives, so `go install` refuses it; a wrapper module works.
if want etcd; then
  mkdir -p "$work/etcd" && cd "$work/etcd"
  printf 'module controlplane/etcd\n\ngo 1.24.0\n\nrequire go.etcd.io/etcd/server/v3 v%s\n' "$ETCD_VERSION" >go.mod
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >tools.go
  go mod tidy >&2
  build etcd go.etcd.io/etcd/server/v3 "-s -w"
fi

# kube-*: k8s.io/kubernetes replaces its staging modules with ./staging paths; pin each to v0.<minor>.
k8s=()
for c in kube-apiserver kube-scheduler kube-controller-manager kubectl; do want "$c" && k8s+=("$c"); done
if [[ ${#k8s[@]} -gt 0 ]]; then
  mkdir -p "$work/k8s" && cd "$work/k8s"
  minor=${K8S_VERSION#*.}
  gomod=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    printf 'module controlplane/k8s\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S_VERSION"
    grep -oE '^\s*k8s.io/[a-z0-9-]+ => \./staging' "$gomod" | awk -v v="v0.$minor" '{print "\t"$1" => "$1" "v}'
    printf ')\n'
  } >go.mod
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for c in "${k8s[@]}"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
    printf ')\n'
  } >tools.go
  go mod tidy >&2
  ldf="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION"
  ldf+=" -X k8s.io/component-base/version.gitMajor=${K8S_VERSION%%.*} -X k8s.io/component-base/version.gitMinor=${minor%%.*}"
  ldf+=" -X k8s.io/component-base/version.gitTreeState=clean"
  for c in "${k8s[@]}"; do build "$c" "k8s.io/kubernetes/cmd/$c" "$ldf"; done
fi

# kwok: a plain module, `go install` works.
if want kwok; then
  log "building kwok"
  heartbeat kwok & hb=$!
  GOBIN="$work/kwokbin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION" >&2
  kill "$hb" 2>/dev/null || true
  mv "$work/kwokbin/kwok" "$OUT/kwok"
  log "kwok done"
fi

echo "$OUT"
