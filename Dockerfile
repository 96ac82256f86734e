# syntax=docker/dockerfile:1
# gangmap's container image: gangmap-grouper (the controller the Helm chart deploys, the
# entrypoint) and the gangmap CLI, static binaries on distroless, running as nonroot (65532).
#
#   docker build -t gangmap:dev .
#   docker build --build-arg VERSION=v0.1.0 -t ghcr.io/gangmap/gangmap:0.1.0 .

# The release toolchain: hack/vuln.sh checks the standard library at this version (keep in step).
ARG GO_VERSION=1.27.3
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS builder
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} GOFLAGS=-buildvcs=false \
    go build -trimpath \
      -ldflags "-s -w -X github.com/gangmap/gangmap/cmd/gangmap/app.Version=${VERSION} -X github.com/gangmap/gangmap/cmd/gangmap-grouper/app.Version=${VERSION}" \
      -o /out/ ./cmd/gangmap-grouper ./cmd/gangmap

FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.source="https://github.com/gangmap/gangmap" \
      org.opencontainers.image.description="gangmap: a fallback pod-grouper for KAI Scheduler" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=builder /out/gangmap-grouper /out/gangmap /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/gangmap-grouper"]
