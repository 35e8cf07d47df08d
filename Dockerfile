# forwarder-vpp image.
#
#   docker build -t forwarder-vpp .                                       # runtime image (last stage)
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
COPY go.mod go.sum ./
RUN go mod download
ARG GRPC_HEALTH_PROBE_VERSION
# The DaemonSet's liveness and readiness probes exec this binary against the forwarder's socket.
RUN GOBIN=/bin go install -trimpath github.com/grpc-ecosystem/grpc-health-probe@${GRPC_HEALTH_PROBE_VERSION}
COPY . .
RUN go build -trimpath -o /bin/forwarder-vpp .

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
COPY --from=build /bin/forwarder-vpp /bin/forwarder-vpp
COPY --from=build /bin/grpc-health-probe /bin/grpc-health-probe
ENTRYPOINT ["/bin/forwarder-vpp"]
