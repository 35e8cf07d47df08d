# forwarder-vpp image.
#
#   make image                                                            # versioned runtime image (see Makefile)
#   docker build -t forwarder-vpp .                                       # the same, unversioned ("dev")
#   docker run --privileged --rm $(docker build -q --target test .)       # unit tests next to a real VPP
#
# The runtime stage sits on the same govpp VPP image family the stock cmd-forwarder-vpp uses, so the
# VPP binary and the binapi pinned in go.mod (github.com/networkservicemesh/govpp, VPP 24.10) agree.

ARG GO_VERSION=1.26.8
ARG VPP_VERSION=v24.10.0-4-ga9d527a67
ARG GRPC_HEALTH_PROBE_VERSION=v0.4.25

FROM ghcr.io/networkservicemesh/govpp/vpp:${VPP_VERSION} AS vpp

FROM golang:${GO_VERSION} AS build
# Static binaries: the runtime image is a different distribution than the build image.
ENV CGO_ENABLED=0
WORKDIR /build
# clang compiles the uplink's XDP program (NSM_VPP_INIT=AF_XDP); the kernel headers are the image's.
RUN apt-get update && apt-get install -y --no-install-recommends clang && rm -rf /var/lib/apt/lists/*
COPY go.mod go.sum ./
RUN go mod download
ARG GRPC_HEALTH_PROBE_VERSION
# The DaemonSet's readiness and start-up probes exec this binary against the forwarder's socket.
RUN GOBIN=/bin go install -trimpath github.com/grpc-ecosystem/grpc-health-probe@${GRPC_HEALTH_PROBE_VERSION}
COPY scripts/build-xdp.sh scripts/
COPY internal/vpp/vppinit/xdp internal/vpp/vppinit/xdp
RUN scripts/build-xdp.sh /bin/afxdp.o
COPY . .
ARG VERSION=dev
RUN go build -trimpath -ldflags "-X main.version=${VERSION}" -o /bin/forwarder-vpp .

# Tests need a real kernel (netns, veth, tap) and may start VPP: run this target with --privileged.
FROM vpp AS test
COPY --from=build /usr/local/go /usr/local/go
COPY --from=build /go/pkg/mod /go/pkg/mod
COPY --from=build /build /build
ENV PATH=/usr/local/go/bin:${PATH} GOPATH=/go CGO_ENABLED=0
WORKDIR /build
CMD ["go", "test", "-count=1", "./..."]

# Last stage, so a plain `docker build .` produces the image operators deploy.
FROM vpp AS runtime
# VPP's af_xdp plugin loads libbpf at run time, as in the stock image.
RUN apt-get update && apt-get install -y --no-install-recommends libbpf-dev && rm -rf /var/lib/apt/lists/*
COPY --from=build /bin/forwarder-vpp /bin/forwarder-vpp
COPY --from=build /bin/grpc-health-probe /bin/grpc-health-probe
# Where the stock image has its XDP program, and where NSM_VPP_INIT=AF_XDP loads it from by default.
COPY --from=build /bin/afxdp.o /bin/afxdp.o
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="forwarder-vpp" \
      org.opencontainers.image.description="Network Service Mesh forwarder on VPP, a drop-in for cmd-forwarder-vpp v1.18" \
      org.opencontainers.image.source="https://github.com/nsmfwd/forwarder-vpp" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
ENTRYPOINT ["/bin/forwarder-vpp"]
