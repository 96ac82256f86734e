#!/usr/bin/env bash
# Builds, vets and tests the nested module kaipodgrouper/ (the gangmap-kai-podgrouper binary:
# KAI Scheduler's pod-grouper with gangmap's plugin hub) against a KAI Scheduler source checkout.
#
# KAI's Go module (github.com/kai-scheduler/KAI-scheduler) is not served by every module proxy
# (not by this workplace's), so kaipodgrouper/go.mod names the real module and version and this
# script points the build at KAI_SRC through a go.work it writes under .e2e/ (ignored by git):
# nothing of KAI is ever copied into the repository. KAI_SRC is a checkout of the version
# kaipodgrouper/go.mod requires (v0.17.0); it is only read.
#
#   KAI_SRC=/path/to/KAI-scheduler bash hack/kai-module.sh         build, vet, unit tests
#   KAI_SRC=... KAI_MODULE_E2E=1 bash hack/kai-module.sh            also the e2e tests (real API server)
#   KAI_SRC=... KAI_MODULE_BUILD_ONLY=1 bash hack/kai-module.sh      only the binary (e2e/realkai/inkai)
#   KAI_MODULE_PROXY=1 KAI_MODULE_BUILD_ONLY=1 bash hack/kai-module.sh  the binary from the module proxy
#                                                                    (no KAI_SRC, no go.work: the image)
#
# The binary is built by build_binary below, the one go build command of gangmap-kai-podgrouper:
# kaipodgrouper/Dockerfile runs this script with KAI_MODULE_PROXY=1 (podgrouper/kaiplugin
# TestDockerfileBuildsWithTheMakefilesCommand checks it does), so the image's binary and make
# kai-module's are built the same way. With KAI_MODULE_PROXY=1 KAI's module comes from the module
# proxy and is checked against kaipodgrouper/go.sum's lines for it (computed from the tag by
# hack/modsum: make kai-sum).
#
# Output: bin/gangmap-kai-podgrouper, or KAI_MODULE_OUT.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${KAI_MODULE_OUT:-$root/bin/gangmap-kai-podgrouper}

# build_binary builds gangmap-kai-podgrouper into $out from kaipodgrouper/ (the working
# directory): static (CGO_ENABLED=0, distroless has no libc), reproducible paths (-trimpath), no
# symbol tables (-s -w). GOOS/GOARCH come from the environment (the image sets them).
build_binary() {
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out" ./cmd/gangmap-kai-podgrouper
}

if [[ ${KAI_MODULE_PROXY:-} == 1 ]]; then
  if [[ ${KAI_MODULE_BUILD_ONLY:-} != 1 ]]; then
    echo "kai-module: KAI_MODULE_PROXY=1 builds the binary only (KAI_MODULE_BUILD_ONLY=1)" >&2
    exit 2
  fi
  cd "$root/kaipodgrouper"
  echo "kai-module: building against KAI from the module proxy (GOWORK=off)" >&2
  GOWORK=off build_binary
  exit 0
fi
if [[ -z ${KAI_SRC:-} ]]; then
  echo "kai-module: KAI_SRC is unset: set it to a KAI Scheduler source checkout (v0.17.0)" >&2
  exit 2
fi
kai=$(cd "$KAI_SRC" && pwd)
if ! grep -qx 'module github.com/kai-scheduler/KAI-scheduler' "$kai/go.mod" 2>/dev/null; then
  echo "kai-module: $kai/go.mod is not module github.com/kai-scheduler/KAI-scheduler" >&2
  exit 2
fi
version=$(awk '$1 == "github.com/kai-scheduler/KAI-scheduler" {print $2; exit}' "$root/kaipodgrouper/go.mod")
if [[ -z $version ]]; then
  echo "kai-module: kaipodgrouper/go.mod requires no github.com/kai-scheduler/KAI-scheduler" >&2
  exit 2
fi
if tag=$(git -C "$kai" describe --tags --exact-match 2>/dev/null) && [[ $tag != "$version" ]]; then
  echo "kai-module: warning: $kai is at $tag, kaipodgrouper/go.mod requires $version" >&2
fi

mkdir -p "$root/.e2e/kai-module" "$root/bin"
work="$root/.e2e/kai-module/go.work"
cat >"$work" <<WORK
go 1.26.3

use $root/kaipodgrouper

replace github.com/kai-scheduler/KAI-scheduler $version => $kai
WORK
export GOWORK=$work
cd "$root/kaipodgrouper"
echo "kai-module: building against KAI $version at $kai (GOWORK=$work)" >&2
build_binary
if [[ ${KAI_MODULE_BUILD_ONLY:-} == 1 ]]; then
  exit 0
fi
go vet ./...
go vet -tags e2e ./...
test -z "$(gofmt -l .)" || { echo "kai-module: gofmt needed on:"; gofmt -l .; exit 1; }
go test -count=1 ./...
if [[ ${KAI_MODULE_E2E:-} == 1 ]]; then
  assets=$(bash "$root/hack/control-plane.sh")
  KUBEBUILDER_ASSETS=$assets go test -tags e2e -count=1 -timeout 20m ./...
fi
echo "kai-module: ok: $out"
