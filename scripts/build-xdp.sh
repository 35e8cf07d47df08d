#!/usr/bin/env bash
# Compiles the uplink's XDP program (internal/vppinit/xdp/afxdp.c) into the BPF object that VPP
# attaches with NSM_VPP_INIT=AF_XDP. The image's build stage and the tests both run this script,
# so what is tested is what ships. Needs clang and the kernel's UAPI headers (linux-libc-dev).
#
#   scripts/build-xdp.sh OUTPUT.o
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 OUTPUT.o" >&2
	exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
# -g: the maps are BTF-defined, and libbpf (VPP's loader) needs the BTF to read them.
exec clang -O2 -g -Wall -Wextra -Werror -target bpf \
	-I"/usr/include/$(uname -m)-linux-gnu" \
	-c "$root/internal/vppinit/xdp/afxdp.c" -o "$1"
