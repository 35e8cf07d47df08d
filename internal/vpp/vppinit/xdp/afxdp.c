// SPDX-License-Identifier: Apache-2.0
//
// The XDP program VPP attaches to the uplink with NSM_VPP_INIT=AF_XDP (af_xdp_create_v3 "prog").
//
// The uplink is the node's own link: the kernel keeps every frame except the tunnel traffic of
// NSM connections, which goes to VPP's AF_XDP socket of the receiving queue. A frame is VPP's
// only when all of these hold:
//   - it is IPv4 or IPv6 straight on Ethernet (no VLAN tag: the uplink carries none of NSM's);
//   - its destination is the tunnel IP, which the forwarder writes into nsm_xdp_tunnel once VPP
//     has loaded this program (until then nothing is redirected);
//   - it is UDP in an unfragmented datagram (IPv4 options are skipped; IPv6 extension headers
//     and fragments stay with the kernel, as VPP's tunnels never send them);
//   - its destination port is in nsm_xdp_pinhole, which the sdk's afxdppinhole chain elements
//     fill per connection: the VXLAN port, each WireGuard port, IKE (500) and NAT-T (4500, which
//     carries ESP too: NSM's IPsec sets UDP encapsulation, so raw ESP is never VPP's).
// ARP and IPv6 neighbour discovery always stay with the kernel: the node must keep resolving its
// neighbours, and VPP shares the node's MAC and tunnel IP, so the kernel's answers serve both.
// VPP learns its next hops from the kernel's neighbour table when the forwarder starts.
// When VPP has no socket on the receiving queue, bpf_redirect_map falls back to XDP_PASS.
//
// Self-contained on purpose: only the kernel's UAPI headers, no libbpf headers, so that the
// image's build stage needs clang alone.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int(*name)[val]
#define __type(name, val) typeof(val) *name
#define INLINE static inline __attribute__((always_inline))
#define LIBBPF_PIN_BY_NAME 1

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define net16(x) __builtin_bswap16(x)
#else
#define net16(x) (x)
#endif

#define IPV4_MORE_FRAGMENTS 0x2000
#define IPV4_FRAGMENT_OFFSET 0x1fff

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)BPF_FUNC_map_lookup_elem;
static long (*bpf_redirect_map)(void *map, __u64 key, __u64 flags) = (void *)BPF_FUNC_redirect_map;

// xsks_map holds VPP's AF_XDP socket of each receive queue; VPP fills it and finds it by name.
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

// nsm_xdp_pinhole: UDP destination ports (host order) of NSM's tunnels. Its name, type and sizes
// are the ones sdk-vpp's afxdppinhole element loads from this file and updates through the pin.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65535);
	__type(key, __u16);
	__type(value, __u16);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} nsm_xdp_pinhole SEC(".maps");

// tunnel_addr is the tunnel IP; an all-zero address is unset (neither is ever a tunnel IP).
struct tunnel_addr {
	__be32 ipv4;
	__be32 ipv6[4];
};

// nsm_xdp_tunnel: the one tunnel_addr, written by the forwarder through the pin.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tunnel_addr);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} nsm_xdp_tunnel SEC(".maps");

// ipv4_tunnel_port sets *port to the UDP destination port of a datagram to the tunnel IP.
INLINE int ipv4_tunnel_port(void *l3, void *end, const struct tunnel_addr *tunnel, __u16 *port)
{
	struct iphdr *ip = l3;
	if ((void *)(ip + 1) > end || tunnel->ipv4 == 0 || ip->daddr != tunnel->ipv4)
		return 0;
	if (ip->ihl < 5 || ip->protocol != IPPROTO_UDP)
		return 0;
	if (ip->frag_off & net16(IPV4_MORE_FRAGMENTS | IPV4_FRAGMENT_OFFSET))
		return 0;
	struct udphdr *udp = l3 + ip->ihl * 4;
	if ((void *)(udp + 1) > end)
		return 0;
	*port = net16(udp->dest);
	return 1;
}

INLINE int ipv6_tunnel_port(void *l3, void *end, const struct tunnel_addr *tunnel, __u16 *port)
{
	struct ipv6hdr *ip = l3;
	if ((void *)(ip + 1) > end || ip->nexthdr != IPPROTO_UDP)
		return 0;
	__be32 set = 0;
	for (int i = 0; i < 4; i++) {
		if (ip->daddr.in6_u.u6_addr32[i] != tunnel->ipv6[i])
			return 0;
		set |= tunnel->ipv6[i];
	}
	if (!set)
		return 0;
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end)
		return 0;
	*port = net16(udp->dest);
	return 1;
}

SEC("xdp")
int nsm_uplink(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end)
		return XDP_PASS;

	__u32 first = 0;
	const struct tunnel_addr *tunnel = bpf_map_lookup_elem(&nsm_xdp_tunnel, &first);
	if (!tunnel)
		return XDP_PASS;

	__u16 port = 0;
	int tunnelled = 0;
	if (eth->h_proto == net16(ETH_P_IP))
		tunnelled = ipv4_tunnel_port(eth + 1, end, tunnel, &port);
	else if (eth->h_proto == net16(ETH_P_IPV6))
		tunnelled = ipv6_tunnel_port(eth + 1, end, tunnel, &port);
	if (!tunnelled || !bpf_map_lookup_elem(&nsm_xdp_pinhole, &port))
		return XDP_PASS;
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

