# syntax=docker/dockerfile:1
#
#   docker build -t edge .        (docker buildx build --platform linux/amd64,linux/arm64 ... works too)
#
# The build stage runs on the builder's platform and cross-compiles a static binary (no cgo, so no
# libc to match); .git stays in the context so that `edge version` names the commit (-buildvcs).
FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build
ARG TARGETOS=linux TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -buildvcs=auto -trimpath -ldflags="-s -w" -o /out/edge ./cmd/edge

# Static and shell-less: CA certificates, /etc/passwd and tzdata, nothing else.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/edge /usr/local/bin/edge
# Numeric, so that Kubernetes' runAsNonRoot can verify it without resolving a name
# (deploy/kubernetes sets runAsUser 65532 to match).
USER 65532:65532
# public, internal (edge to edge), ops (/metrics, /healthz, /readyz)
EXPOSE 8080 8081 9090
ENTRYPOINT ["/usr/local/bin/edge"]
CMD ["serve", "--config", "/etc/edge/edge.yaml"]
