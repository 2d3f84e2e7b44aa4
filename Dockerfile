# syntax=docker/dockerfile:1
# reportjob: a static Go binary on distroless (CA certificates, tzdata, a
# "nonroot" user; no shell, no package manager). No config is baked in: mount
# config.yaml (deploy/kubernetes/configmap.yaml) or use REPORTJOB_* variables.
#   docker build --build-arg VERSION=$(git describe --tags --always) -t reportjob .
#   docker run --rm -v $PWD/config.yaml:/etc/reportjob/config.yaml:ro reportjob \
#     --config /etc/reportjob/config.yaml run

# The builder runs natively and cross-compiles (fast multi-arch builds with buildx).
# go.mod asks for go 1.26.8: the 1.26 tag is at or past it. Image names are fully
# qualified (registry/namespace/name), so docker, podman and buildah resolve them alike
# (podman refuses short names unless its registries.conf lists a search registry).
FROM --platform=$BUILDPLATFORM docker.io/library/golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
# go.mod replaces github.com/go-pdf/fpdf with ./third_party/fpdf (a patched
# copy): the download reads its go.mod, the build its sources.
COPY third_party/fpdf/go.mod ./third_party/fpdf/
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY cmd ./cmd
COPY internal ./internal
COPY third_party ./third_party
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/reportjob ./cmd/reportjob

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/reportjob /reportjob
# 65532:65532, as runAsUser in deploy/kubernetes/cronjob.yaml.
USER nonroot:nonroot
ENTRYPOINT ["/reportjob"]
