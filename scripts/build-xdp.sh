#!/usr/bin/env bash
# Compiles the uplink's XDP program (internal/vpp/vppinit/xdp/afxdp.c) into the BPF object that VPP
# attaches with NSM_VPP_INIT=AF_XDP. The image's build stage and the tests both run this script,
# so what is tested is what ships. Needs clang and the kernel's UAPI headers (linux-libc-dev).
#
#   scripts/build-xdp.sh OUTPUT.o [SOURCE.c]     (SOURCE.c: another program, for the tests)
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 OUTPUT.o [SOURCE.c]" >&2
	exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
source="${2:-$root/internal/vpp/vppinit/xdp/afxdp.c}"
# -g: the maps are BTF-defined, and libbpf (VPP's loader) needs the BTF to read them.
exec clang -O2 -g -Wall -Wextra -Werror -target bpf \
	-I"/usr/include/$(uname -m)-linux-gnu" \
	-c "$source" -o "$1"
