#!/usr/bin/env bash
# Installs what `make k8s-e2e` needs to run a one-node Kubernetes cluster on this machine without
# Docker or kind (docs/deploy.md, "A real kubelet here"):
# - Debian's containerd, runc, etcd-server and containernetworking-plugins (CNI bridge, loopback,
#   host-local), with apt-get when any of them is missing;
# - kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kubectl, built from the
#   k8s.io/kubernetes release pinned in tools/k8s/go.mod into .cache/k8s/bin.
# Safe to run repeatedly: a cached build of the pinned version is reused. A cold build compiles
# some 2,600 packages (far longer than SPIRE's on a busy 2-core machine): it runs at nice 10 and
# says how far it is every PROGRESS_EVERY seconds.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/.cache/k8s/bin"
stamp="$bin/.k8s-version"
k8s_version="$(awk '{ for (i = 1; i < NF; i++) if ($i == "k8s.io/kubernetes") { print $(i + 1); exit } }' "$root/tools/k8s/go.mod")"
programs=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)

if [ -z "$k8s_version" ]; then
	echo "install-k8s: no k8s.io/kubernetes requirement in tools/k8s/go.mod" >&2
	exit 1
fi

missing=()
command -v containerd >/dev/null 2>&1 || missing+=(containerd)
command -v runc >/dev/null 2>&1 || missing+=(runc)
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v conntrack >/dev/null 2>&1 || missing+=(conntrack)
command -v jq >/dev/null 2>&1 || missing+=(jq)
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-k8s: installing ${missing[*]} with apt-get (a minute or two)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Debian's containerd package may start its own daemon through the init system; the suite runs
# its own, with its own state directories, and never touches that one.

# The release's version, stamped as the release build does: the kubelet reports it as its node's
# version, and the programs print it (a plain module build says v0.0.0-master).
minor=$(echo "$k8s_version" | cut -d. -f2)
ldflags="-X k8s.io/component-base/version.gitVersion=$k8s_version"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version"
ldflags+=" -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
build_id="$k8s_version $(echo "$ldflags" | sha256sum | cut -c1-12)"

have_all=1
for p in "${programs[@]}"; do
	[ -x "$bin/$p" ] || have_all=0
done
if [ "$have_all" = 1 ] && [ "$(cat "$stamp" 2>/dev/null)" = "$build_id" ]; then
	echo "install-k8s: Kubernetes $k8s_version is built (in $bin)"
	exit 0
fi

echo "install-k8s: building Kubernetes $k8s_version (${programs[*]}) into $bin, once" \
	"(a cold build can take an hour on 2 busy cores; progress every ${PROGRESS_EVERY:-20} s)"
mkdir -p "$bin"
rm -f "$stamp"
# shellcheck source=scripts/progress.sh
. "$root/scripts/progress.sh"
pkgs=()
for p in "${programs[@]}"; do
	pkgs+=("k8s.io/kubernetes/cmd/$p")
done
# The machine's cores are shared: the build yields to whatever else runs.
renice -n 10 -p $$ >/dev/null 2>&1 || true
go_build_progress install-k8s "Kubernetes $k8s_version" "$root/tools/k8s" -trimpath -ldflags "$ldflags" \
	-o "$bin/" -- \
	"${pkgs[@]}"
echo "$build_id" >"$stamp"
