#!/usr/bin/env bash
# `make demo`: installs what the demo needs, then runs test/e2e/cmd/e2e-demo,
# which brings a two-node NSM domain up in network namespaces, connects
# clients through forwarder-vpp, pings, prints a summary and tears it all
# down. The trap below is the second line of defence: whatever way the demo
# ends, no demo namespace of a finished run and no demo process stays.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: needs root (it creates network namespaces); try: sudo make demo" >&2
	exit 1
fi

demo_pid=""

sweep() {
	local status=$?
	trap - EXIT INT TERM
	if [ -n "$demo_pid" ] && kill -0 "$demo_pid" 2>/dev/null; then
		kill -TERM "$demo_pid" 2>/dev/null || true
		wait "$demo_pid" 2>/dev/null || true
	fi
	# Namespaces are named demo-<pid>-...; delete those whose run is over.
	local ns pid
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^demo-' || true); do
		pid="${ns#demo-}"
		pid="${pid%%-*}"
		if ! kill -0 "$pid" 2>/dev/null; then
			ip netns delete "$ns" 2>/dev/null || true
		fi
	done
	exit "$status"
}
trap sweep EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "demo: step 1 of 3: the tools (SPIRE, iproute2, the real VPP when ../shared/vpp has it)"
scripts/install-tools.sh
# The same packages, flags and output directory as the demo's own build (test/e2e/domain.Build),
# which then finds them built; here a cold build says how far it is.
echo "demo: step 2 of 3: the forwarder, the VPP simulator and the demo's NSM programs"
# shellcheck source=scripts/progress.sh
. scripts/progress.sh
mkdir -p .cache/e2e/bin
go_build_progress demo "the demo's programs" "$root" -o .cache/e2e/bin/ -- \
	./test/e2e/cmd/e2e-demo ./test/e2e/cmd/e2e-registry ./test/e2e/cmd/e2e-nsmgr \
	./test/e2e/cmd/e2e-nse ./test/e2e/cmd/e2e-nsc ./test/e2e/cmd/e2e-idlecut ./test/stockforwarder
go_build_progress demo "forwarder-vpp" "$root" -o .cache/e2e/bin/forwarder-vpp -- .
go_build_progress demo "the VPP simulator" "$root" -o .cache/e2e/bin/vppsim -- ./test/vppsim/cmd/vppsim

echo "demo: step 3 of 3: the demo itself (about a minute)"

# Run in the background and wait, so that the traps fire while it runs.
.cache/e2e/bin/e2e-demo --repo "$root" "$@" &
demo_pid=$!
wait "$demo_pid"
