#!/usr/bin/env bash
# Installs what the end-to-end suite and `make demo` need beyond Go itself:
# spire-server and spire-agent (built from the pinned tools module, cached in
# .cache/bin), iproute2 and iputils-ping when `ip` or `ping` is missing, and clang with the kernel's
# UAPI headers when missing (scripts/build-xdp.sh builds the uplink's XDP program for the tests),
# and strace for the real-VPP tests.
# When the machine has a real VPP build beside the repository
# (../shared/vpp/*.tar.xz), it is unpacked into .cache/vpp, where the real-VPP
# tests find it (test/realvpp); without it those tests skip.
# Safe to run repeatedly: a cached build of the pinned version is reused.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/.cache/bin"
stamp="$bin/.spire-version"
spire_version="$(awk '$1 == "github.com/spiffe/spire" {print $2}' "$root/tools/go.mod")"

if [ -z "$spire_version" ]; then
	echo "install-tools: no github.com/spiffe/spire requirement in tools/go.mod" >&2
	exit 1
fi

vpp_tarball="$(ls "$root"/../shared/vpp/*.tar.xz 2>/dev/null | head -n 1 || true)"

missing=()
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v ping >/dev/null 2>&1 || missing+=(iputils-ping)
command -v clang >/dev/null 2>&1 || missing+=(clang)
[ -e /usr/include/linux/bpf.h ] || missing+=(linux-libc-dev)
if [ -n "$vpp_tarball" ]; then
	command -v xz >/dev/null 2>&1 || missing+=(xz-utils)
	# The VPP build links OpenSSL 3's libcrypto (its crypto_openssl plugin and ikev2).
	ldconfig -p 2>/dev/null | grep 'libcrypto\.so\.3 ' >/dev/null || missing+=(libssl3)
	# test/realvpp stalls VPP's start-up clock estimate through strace, as a loaded machine does.
	command -v strace >/dev/null 2>&1 || missing+=(strace)
	# setpriv ends that stalled VPP with its strace.
	command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
	# The encrypted-tunnel scenarios capture the link between the nodes (test/e2e, docs/e2e.md).
	command -v tcpdump >/dev/null 2>&1 || missing+=(tcpdump)
fi
# Upstream's checks in make upstream-slow: iperf3 (use-cases/Kernel2RVlanInternal) and a wget
# that does not crash (features/nse-composition; this busybox's wget segfaults).
command -v iperf3 >/dev/null 2>&1 || missing+=(iperf3)
# features/vl3-lb's balancer translates with nftables in its pod (this VPP has no cnat plugin).
command -v nft >/dev/null 2>&1 || missing+=(nftables)
[ -x /usr/bin/wget ] || missing+=(wget)
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-tools: installing ${missing[*]} with apt-get (a minute or two)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The real VPP: unpacked once per tarball (a stamp holds its name, size and time).
if [ -n "$vpp_tarball" ]; then
	vpp_dir="$root/.cache/vpp"
	vpp_id="$(basename "$vpp_tarball") $(stat -c '%s %Y' "$vpp_tarball")"
	if [ ! -x "$vpp_dir/bin/vpp" ] || [ "$(cat "$vpp_dir/.tarball" 2>/dev/null)" != "$vpp_id" ]; then
		echo "install-tools: unpacking $(basename "$vpp_tarball")" \
			"($(($(stat -c %s "$vpp_tarball") / 1048576)) MiB) into $vpp_dir, once"
		rm -rf "$vpp_dir"
		mkdir -p "$vpp_dir"
		tar -C "$vpp_dir" -xJf "$vpp_tarball"
		echo "$vpp_id" >"$vpp_dir/.tarball"
	fi
fi

if [ -x "$bin/spire-server" ] && [ -x "$bin/spire-agent" ] &&
	[ "$(cat "$stamp" 2>/dev/null)" = "$spire_version" ]; then
	echo "install-tools: SPIRE $spire_version is built (in $bin)"
	exit 0
fi

# A cold build compiles about 2,300 packages: some 20 minutes on a busy 2-core machine.
# Later builds, in this clone or another sharing the Go build cache, take seconds.
echo "install-tools: building SPIRE $spire_version into $bin, once (a cold build can take 20 minutes" \
	"on 2 busy cores; progress every ${PROGRESS_EVERY:-20} s)"
mkdir -p "$bin"
rm -f "$stamp"
# shellcheck source=scripts/progress.sh
. "$root/scripts/progress.sh"
go_build_progress install-tools "SPIRE $spire_version" "$root/tools" -trimpath -o "$bin/" -- \
	github.com/spiffe/spire/cmd/spire-server \
	github.com/spiffe/spire/cmd/spire-agent
echo "$spire_version" >"$stamp"
