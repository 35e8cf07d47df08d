#!/usr/bin/env bash
# make k8s-e2e: the forwarder DaemonSet from deployments/ on a real kubelet on this machine
# (issue 25; docs/deploy.md, "A real kubelet here"). Root; not part of make test.
#
# Installs what is missing (scripts/install-k8s.sh), builds the binaries and the images from
# local files, starts a one-node cluster (scripts/k8s-cluster.sh), installs SPIRE, the NSM
# registry and nsmgr, applies the forwarder from deployments/base with only its image reference
# changed, runs the scenarios, and removes everything it made, also on failure and on Ctrl-C.
#
# K8S_E2E_STAGE stops after a stage, for a partial run: cluster, spire, nsm, all (the default).
# K8S_PREFIX names what the run makes on the host (network namespace, links, cgroups, state dir).
# K8S_E2E_SCENARIOS picks scenarios (kernel2kernel heal upgrade, the default: all of them).
set -euo pipefail

# The run's own output, kept for the teardown: a trap runs under the redirections of the command
# it interrupts (a check's output file), and the teardown's report belongs on the terminal.
exec 8>&1 9>&2

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
K8S_E2E_STAGE="${K8S_E2E_STAGE:-all}"
case "$K8S_E2E_STAGE" in cluster | spire | nsm | all) ;; *)
	echo "k8s-e2e: K8S_E2E_STAGE=$K8S_E2E_STAGE: want cluster, spire, nsm or all" >&2
	exit 2
	;;
esac

# shellcheck source=scripts/k8s-cluster.sh
. "$root/scripts/k8s-cluster.sh"
# shellcheck source=scripts/k8s-workloads.sh
. "$root/scripts/k8s-workloads.sh"
# shellcheck source=scripts/k8s-scenarios.sh
. "$root/scripts/k8s-scenarios.sh"

fail() {
	echo "k8s-e2e: FAILED: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || fail "must run as root (it starts a kubelet, containerd and network namespaces)"

started=$SECONDS
# K8S_E2E_INSTALL=no uses what the machine has (no apt-get, no Kubernetes build): whatever is
# missing is then named below and the run fails.
case "${K8S_E2E_INSTALL:-yes}" in
yes) scripts/install-k8s.sh ;;
no) k8s_say "K8S_E2E_INSTALL=no: installing nothing, using what is there" ;;
*) fail "K8S_E2E_INSTALL=$K8S_E2E_INSTALL: want yes or no" ;;
esac

# Everything the run needs, named when missing: a skip here would report success for nothing.
missing=()
for p in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
	[ -x "$K8S_BIN/$p" ] || missing+=("$K8S_BIN/$p (scripts/install-k8s.sh)")
done
for c in containerd ctr runc etcd nsenter ip iptables openssl curl findmnt ldd jq; do
	command -v "$c" >/dev/null 2>&1 || missing+=("$c")
done
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] ||
	missing+=("/usr/lib/cni/{bridge,host-local,loopback} (containernetworking-plugins)")
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 ||
	missing+=("a static /bin/busybox (busybox-static): the images' shell and ping")
if [ "$K8S_E2E_STAGE" != cluster ]; then
	for p in spire-server spire-agent; do
		[ -x "$root/.cache/bin/$p" ] || missing+=("$root/.cache/bin/$p (make tools)")
	done
	[ -x "$root/.cache/vpp/bin/vpp" ] ||
		missing+=("$root/.cache/vpp/bin/vpp (make tools unpacks ../shared/vpp/*.tar.xz)")
	K8S_VPP_TEMPLATE="$root/../shared/vpp/startup.conf.template"
	[ -f "$K8S_VPP_TEMPLATE" ] || missing+=("$K8S_VPP_TEMPLATE (the test VPP's start-up configuration)")
fi
[ ${#missing[@]} -eq 0 ] || fail "missing: ${missing[*]}"

K8S_BUILD="$root/.cache/k8s/build"
K8S_IMAGES="$root/.cache/k8s/images"
K8S_PAUSE_IMAGE=k8s-e2e.local/pause:e2e
mkdir -p "$K8S_BUILD" "$K8S_IMAGES"
k8s_say "building the pause program, the image writer and (later stages) the forwarder and the NSM programs"
CGO_ENABLED=0 go build -trimpath -o "$K8S_BUILD/" ./test/k8s/cmd/k8s-pause ./test/k8s/cmd/k8s-image
image() { "$K8S_BUILD/k8s-image" "$@"; }
image -ref "$K8S_PAUSE_IMAGE" -o "$K8S_IMAGES/pause.tar" -file "$K8S_BUILD/k8s-pause=/pause" \
	-entrypoint /pause
# A shell and the tools the scenarios exec in pods, for every image that needs them.
K8S_BUSYBOX=(-file /bin/busybox=/bin/busybox)
for applet in sh ping ip sleep cat ls ps; do
	K8S_BUSYBOX+=(-symlink "busybox=/bin/$applet")
done
image -ref k8s-e2e.local/busybox:e2e -o "$K8S_IMAGES/busybox.tar" "${K8S_BUSYBOX[@]}" \
	-entrypoint /bin/sh
K8S_IMAGE_TARBALLS="$K8S_IMAGES/pause.tar $K8S_IMAGES/busybox.tar"
if [ "$K8S_E2E_STAGE" != cluster ]; then
	k8s_build_workload_images
fi
k8s_say "binaries and images ready after $((SECONDS - started)) s"

finish() {
	local status=$1
	# The teardown must reach its end: no set -e (a diagnostic that fails is no reason to leave the
	# cluster running), and Ctrl-C or SIGTERM during it are ignored; its waits are bounded.
	set +e
	trap - EXIT
	trap '' INT TERM
	exec 1>&8 2>&9
	k8s_stop_registrar
	[ "$status" -eq 0 ] || k8s_dump
	cluster_down || status=1
	echo "k8s-e2e: $k8s_passed passed, $k8s_failed failed; $k8s_findings findings about stock"
	k8s_say "done after $((SECONDS - started)) s (logs: $K8S_LOGS)"
	exit "$status"
}
trap 'finish $?' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cluster_up
k8s_smoke
[ "$K8S_E2E_STAGE" = cluster ] && exit 0
k8s_spire
[ "$K8S_E2E_STAGE" = spire ] && exit 0
k8s_nsm
[ "$K8S_E2E_STAGE" = nsm ] && exit 0
k8s_scenarios
