#!/usr/bin/env bash
# hack/vuln.sh runs govulncheck on every package of the module, as the release image is built.
#
# The vulnerability data comes through the Go module proxy, not from vuln.go.dev: the module
# golang.org/x/vulndb (the repository behind vuln.go.dev) carries every advisory as OSV JSON under
# data/osv, and its own command cmd/indexdb turns that folder into the database layout govulncheck
# reads with -db file://. The snapshot is pinned (VULNDB_VERSION, a pseudo-version whose date is the
# snapshot's); the database is built once per snapshot and cached outside the clone, under
# $GANGMAP_TOOLS/vulndb-$VULNDB_VERSION (default ${XDG_CACHE_HOME:-$HOME/.cache}/gangmap/tools).
# Bump VULNDB_VERSION to take newer advisories (`go list -m golang.org/x/vulndb@latest` names the
# newest snapshot the proxy serves).
#
# The standard library is checked at the Go version the release image is built with (the
# Dockerfile's GO_VERSION), fetched through the module proxy with GOTOOLCHAIN: the binary users run
# links that standard library, not the one of whatever Go happens to run the tests.
#
# Exit status is govulncheck's: 0 when no vulnerable symbol is reachable from gangmap's code, 3 when
# one is (it prints the call trace and the fixed version). Extra arguments go to govulncheck
# (`bash hack/vuln.sh -show verbose` also lists advisories in imported but uncalled code).
#
# Environment:
#   VULNDB_VERSION      golang.org/x/vulndb version to take advisories from
#   GOVULNCHECK_VERSION golang.org/x/vuln version (govulncheck itself)
#   RELEASE_GO          Go toolchain of the release image (go1.27.3; keep in step with Dockerfile)
#   GANGMAP_TOOLS       where the database is cached
set -euo pipefail

VULNDB_VERSION=${VULNDB_VERSION:-v0.0.0-20261105234957-e22db6528018}
GOVULNCHECK_VERSION=${GOVULNCHECK_VERSION:-v1.9.0}
RELEASE_GO=${RELEASE_GO:-go1.27.3}
TOOLS=${GANGMAP_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/gangmap/tools}
DB=$TOOLS/vulndb-$VULNDB_VERSION

log() { echo "[vuln.sh] $(date +%H:%M:%S) $*" >&2; }

command -v go >/dev/null || { log "go is not on PATH"; exit 1; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The Dockerfile is the release build: refuse to scan a toolchain it does not use.
docker_go=$(sed -n 's/^ARG GO_VERSION=//p' "$ROOT/Dockerfile")
if [[ go$docker_go != "$RELEASE_GO" ]]; then
	log "RELEASE_GO=$RELEASE_GO but the Dockerfile builds with GO_VERSION=$docker_go; keep them in step"
	exit 1
fi

if [[ ! -f $DB/index/db.json ]]; then
	mkdir -p "$TOOLS"
	exec 9>"$TOOLS/.vulndb.lock"
	flock 9
	if [[ ! -f $DB/index/db.json ]]; then
		log "building the vulnerability database from golang.org/x/vulndb@$VULNDB_VERSION into $DB (about a minute; cached afterwards)"
		tmp=$(mktemp -d)
		trap 'rm -rf "$tmp"' EXIT
		# Download outside this module, so that go.mod and go.sum are left alone.
		src=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		[[ -d $src/data/osv ]] || { log "golang.org/x/vulndb@$VULNDB_VERSION has no data/osv folder"; exit 1; }
		(cd "$tmp" && go run "golang.org/x/vulndb/cmd/indexdb@$VULNDB_VERSION" -vulns "$src/data/osv" -out "$tmp/db")
		n=$(find "$tmp/db/ID" -name '*.json' | wc -l)
		[[ $n -gt 0 ]] || { log "indexdb wrote no advisory"; exit 1; }
		rm -rf "$DB"
		mv "$tmp/db" "$DB"
		log "database ready: $n advisories"
	fi
	flock -u 9
fi

# govulncheck is installed (not `go run`, which turns its exit status 3 into 1) next to the database,
# built by the release Go: its type checker must know that Go's standard library.
GOVULNCHECK=$TOOLS/govulncheck-$GOVULNCHECK_VERSION-$RELEASE_GO/govulncheck
if [[ ! -x $GOVULNCHECK ]]; then
	log "installing govulncheck $GOVULNCHECK_VERSION (built by $RELEASE_GO) into ${GOVULNCHECK%/*}"
	GOTOOLCHAIN=$RELEASE_GO GOBIN=${GOVULNCHECK%/*} go install "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION"
fi

log "govulncheck $GOVULNCHECK_VERSION, standard library of $RELEASE_GO, advisories of golang.org/x/vulndb@$VULNDB_VERSION"
cd "$ROOT"
# govulncheck loads the packages with the go command on PATH; GOTOOLCHAIN makes that the release Go.
GOTOOLCHAIN=$RELEASE_GO exec "$GOVULNCHECK" -db "file://$DB" "$@" ./...
