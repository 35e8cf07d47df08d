# Sourced by k8s-e2e.sh: a one-node Kubernetes cluster on this machine, without Docker or kind,
# and its complete removal (docs/deploy.md, "A real kubelet here").
#
# The node is a network namespace ($K8S_PREFIX-node) holding etcd, the control plane, containerd
# and the kubelet, with a veth "eth0" as its uplink (10.247.255.2/30, the host side
# $K8S_PREFIX-up at .1) and a CNI bridge ($K8S_PREFIX-cni0, pods in 10.247.0.0/24). Host-network
# pods (the forwarder, which hands its uplink to VPP) therefore see the node's interfaces, not the
# machine's, and every iptables rule the kubelet or a pod writes dies with the namespace. The
# processes share the machine's mount namespace, as a kubelet and its runtime must.
#
# cluster_up starts everything and waits for the node to be Ready; cluster_down removes every
# process, container, mount, network namespace, cgroup and file it made, whatever state cluster_up
# reached, and says what, if anything, it could not remove.

: "${K8S_PREFIX:=k8se2e}"
K8S_BIN="$root/.cache/k8s/bin"
K8S_STATE="/var/lib/$K8S_PREFIX-k8s"
K8S_LOGS="$root/.cache/k8s/logs"
K8S_NETNS="$K8S_PREFIX-node"
K8S_NODE="$K8S_PREFIX-node"
K8S_NODE_IP=10.247.255.2
K8S_HOST_IP=10.247.255.1
K8S_POD_SUBNET=10.247.0.0/24
K8S_SERVICE_RANGE=10.96.0.0/24
K8S_API_SERVICE_IP=10.96.0.1
K8S_CGROUP="$K8S_PREFIX-k8s"
K8S_CONTAINERD_SOCK="$K8S_STATE/containerd.sock"
export KUBECONFIG="$K8S_STATE/pki/admin.kubeconfig"

# The node's hostPath volumes that the stock manifests name (the forwarder's, nsmgr's, SPIRE's)
# are this machine's paths. What the run made there is removed afterwards: the paths that are
# wholly the cluster's, and their parents when the run made them and they are empty (another
# program of this machine may use /var/lib/networkservicemesh too).
K8S_HOST_OWNED="/run/spire/sockets /var/lib/networkservicemesh/nsm.io.sock
  /var/lib/networkservicemesh/forwarder-vpp /run/vpp/external"
K8S_HOST_PARENTS="/run/spire /var/lib/networkservicemesh /run/vpp"
K8S_JOURNALS=/var/lib/networkservicemesh/forwarder-vpp

k8s_say() { echo "k8s-e2e: $*"; }

# k8s_pids_with TEXT: the processes whose command line contains TEXT (read without a
# subprocess, which would find itself).
k8s_pids_with() {
	local f arg
	for f in /proc/[0-9]*/cmdline; do
		while IFS= read -r -d '' arg; do
			if [[ "$arg" == *"$1"* ]]; then
				f=${f#/proc/}
				echo "${f%/cmdline}"
				break
			fi
		done <"$f" 2>/dev/null || true
	done
}

# in_node runs a command in the node's network namespace (and nothing else's).
in_node() { nsenter --net="/run/netns/$K8S_NETNS" "$@"; }

kubectl() { in_node "$K8S_BIN/kubectl" "$@"; }

ctr_node() { ctr --address "$K8S_CONTAINERD_SOCK" -n k8s.io "$@"; }

# k8s_start NAME COMMAND...: a daemon in the node namespace, its output in $K8S_LOGS/NAME.log.
k8s_start() {
	local name=$1
	shift
	# nsenter itself (not the in_node function, which would run in a subshell) is the background
	# command, so $! is the daemon's own PID once setsid and nsenter have exec'd it.
	# setsid: a Ctrl-C at the terminal reaches the script, whose trap stops the daemons in order,
	# not the daemons themselves (the kubelet and containerd would go before their pods).
	setsid nsenter --net="/run/netns/$K8S_NETNS" "$@" >"$K8S_LOGS/$name.log" 2>&1 8>&- 9>&- &
	echo "$!" >"$K8S_STATE/pids/$name"
}

# k8s_wait WHAT SECONDS COMMAND...: polls COMMAND once a second; fails naming WHAT and its log.
k8s_wait() {
	local what=$1 limit=$2 start=$SECONDS
	shift 2
	until "$@" >/dev/null 2>&1; do
		if [ $((SECONDS - start)) -ge "$limit" ]; then
			k8s_say "$what not ready after $limit s" >&2
			return 1
		fi
		sleep 1
	done
	k8s_say "$what ready after $((SECONDS - start)) s"
}

# k8s_cert NAME CN O [SANS]: a key and a certificate signed by the cluster CA.
k8s_cert() {
	local name=$1 cn=$2 org=$3 sans=${4:-} pki="$K8S_STATE/pki"
	local subj="/CN=$cn"
	[ -n "$org" ] && subj="/O=$org$subj"
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$pki/$name.key" -subj "$subj" -out "$pki/$name.csr" 2>/dev/null
	local ext="$pki/$name.ext"
	{
		echo "basicConstraints=CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=serverAuth,clientAuth"
		[ -n "$sans" ] && echo "subjectAltName=$sans"
	} >"$ext"
	openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
		-CAcreateserial -days 2 -extfile "$ext" -out "$pki/$name.crt" 2>/dev/null
}

# k8s_kubeconfig NAME: a kubeconfig for the certificate NAME.
k8s_kubeconfig() {
	local name=$1 pki="$K8S_STATE/pki"
	cat >"$pki/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: $K8S_PREFIX
    cluster:
      certificate-authority: $pki/ca.crt
      server: https://$K8S_NODE_IP:6443
users:
  - name: $name
    user:
      client-certificate: $pki/$name.crt
      client-key: $pki/$name.key
contexts:
  - name: $name
    context:
      cluster: $K8S_PREFIX
      user: $name
current-context: $name
EOF
}

k8s_pki() {
	local pki="$K8S_STATE/pki"
	mkdir -p "$pki"
	openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$pki/ca.key" -subj "/CN=$K8S_PREFIX-ca" -days 2 -out "$pki/ca.crt" 2>/dev/null
	k8s_cert apiserver kube-apiserver "" "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:$K8S_API_SERVICE_IP,IP:$K8S_NODE_IP,IP:127.0.0.1"
	k8s_cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
	k8s_cert admin kubernetes-admin system:masters
	k8s_cert controller-manager system:kube-controller-manager ""
	k8s_cert scheduler system:kube-scheduler ""
	k8s_cert kubelet "system:node:$K8S_NODE" system:nodes
	k8s_cert kubelet-serving "$K8S_NODE" "" "DNS:$K8S_NODE,IP:$K8S_NODE_IP,IP:127.0.0.1"
	for n in admin controller-manager scheduler kubelet; do
		k8s_kubeconfig "$n"
	done
	# The service account token signer.
	openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
	openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
}

# The node's network: its namespace, its uplink and the loopback etcd and the control plane use.
k8s_netns() {
	ip netns add "$K8S_NETNS"
	ip link add "$K8S_PREFIX-up" type veth peer name eth0 netns "$K8S_NETNS"
	ip addr add "$K8S_HOST_IP/30" dev "$K8S_PREFIX-up"
	ip link set "$K8S_PREFIX-up" up
	in_node ip link set lo up
	in_node ip addr add "$K8S_NODE_IP/30" dev eth0
	in_node ip link set eth0 up
	in_node ip route add default via "$K8S_HOST_IP"
	# No kube-proxy: the one service the cluster's own workloads use, the API server's, is this
	# DNAT in the node namespace (pods on the bridge and on the host network alike).
	in_node iptables -t nat -A PREROUTING -d "$K8S_API_SERVICE_IP" -p tcp --dport 443 \
		-j DNAT --to-destination "$K8S_NODE_IP:6443"
	in_node iptables -t nat -A OUTPUT -d "$K8S_API_SERVICE_IP" -p tcp --dport 443 \
		-j DNAT --to-destination "$K8S_NODE_IP:6443"
	in_node sysctl -qw net.ipv4.ip_forward=1
}

# The kubelet's cgroup root in every cgroup v1 hierarchy (cpuset needs its cpus and mems).
k8s_cgroups() {
	local h
	for h in /sys/fs/cgroup/*/; do
		[ "$h" = /sys/fs/cgroup/unified/ ] && continue
		mkdir -p "$h$K8S_CGROUP"
		if [ -e "$h/cpuset.cpus" ]; then
			cat "$h/cpuset.cpus" >"$h$K8S_CGROUP/cpuset.cpus"
			cat "$h/cpuset.mems" >"$h$K8S_CGROUP/cpuset.mems"
		fi
	done
}

k8s_containerd_config() {
	mkdir -p "$K8S_STATE/cni/net.d"
	cat >"$K8S_STATE/cni/net.d/10-$K8S_PREFIX.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "$K8S_PREFIX",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$K8S_PREFIX-cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$K8S_POD_SUBNET"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$K8S_STATE/cni/ipam"
      }
    }
  ]
}
EOF
	cat >"$K8S_STATE/containerd.toml" <<EOF
version = 2
root = "$K8S_STATE/containerd/root"
state = "$K8S_STATE/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "$K8S_CONTAINERD_SOCK"

[ttrpc]
  address = "$K8S_CONTAINERD_SOCK.ttrpc"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$K8S_PAUSE_IMAGE"
  # This machine's root lacks CAP_SYS_RESOURCE: the kubelet's negative OOM score adjustments
  # (-998 for sandboxes) are raised to containerd's own instead of failing every container.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$K8S_STATE/cni/net.d"
EOF
}

k8s_kubelet_config() {
	local pki="$K8S_STATE/pki"
	cat >"$K8S_STATE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$K8S_CONTAINERD_SOCK
cgroupDriver: cgroupfs
cgroupRoot: /$K8S_CGROUP
# This machine has cgroup v1 only; v1.34's kubelet still runs there when told to.
failCgroupV1: false
failSwapOn: false
address: 0.0.0.0
port: 10250
readOnlyPort: 0
tlsCertFile: $pki/kubelet-serving.crt
tlsPrivateKeyFile: $pki/kubelet-serving.key
# As in a kubeadm cluster: the SPIRE agent's workload attestor and the API server (exec, logs)
# authenticate to the kubelet, which asks the API server who may do what.
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $pki/ca.crt
authorization:
  mode: Webhook
# No cluster DNS here (no CoreDNS image): pods get the node's resolv.conf.
resolvConf: /etc/resolv.conf
# The machine's disk and memory are shared with other work: evict nothing for pressure.
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "0%"
  imagefs.available: "0%"
imageGCHighThresholdPercent: 100
serializeImagePulls: false
EOF
}

# cluster_up: certificates, network, etcd, control plane, containerd (with the images in
# K8S_IMAGE_TARBALLS imported), kubelet; returns once the node is Ready.
cluster_up() {
	if [ -e "$K8S_STATE" ] || ip netns list | grep -qw "$K8S_NETNS"; then
		k8s_say "a previous run left $K8S_STATE or network namespace $K8S_NETNS: removing it first"
		cluster_down
	fi
	mkdir -p "$K8S_STATE/pids" "$K8S_LOGS"
	rm -f "$K8S_LOGS"/*.log
	ls /run/netns >"$K8S_STATE/netns-before" 2>/dev/null || true
	local d
	for d in $K8S_HOST_OWNED $K8S_HOST_PARENTS; do
		[ -e "$d" ] || echo "$d" >>"$K8S_STATE/host-paths-made"
	done
	# The forwarder's journals outlive its pods by design; those of this run's pods go with it.
	ls "$K8S_JOURNALS" >"$K8S_STATE/journals-before" 2>/dev/null || true
	k8s_say "certificates and the node's network namespace $K8S_NETNS"
	k8s_pki
	k8s_netns
	k8s_cgroups

	k8s_say "starting etcd ($(etcd --version | head -n 1))"
	k8s_start etcd etcd --name "$K8S_NODE" --data-dir "$K8S_STATE/etcd" \
		--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster "$K8S_NODE=http://127.0.0.1:2380"
	k8s_wait etcd 60 in_node curl -sf http://127.0.0.1:2379/health

	local pki="$K8S_STATE/pki"
	k8s_say "starting kube-apiserver ($("$K8S_BIN/kube-apiserver" --version))"
	k8s_start kube-apiserver "$K8S_BIN/kube-apiserver" \
		--etcd-servers=http://127.0.0.1:2379 \
		--advertise-address="$K8S_NODE_IP" --bind-address=0.0.0.0 --secure-port=6443 \
		--service-cluster-ip-range="$K8S_SERVICE_RANGE" \
		--tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
		--client-ca-file="$pki/ca.crt" \
		--kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" \
		--kubelet-client-key="$pki/apiserver-kubelet-client.key" \
		--authorization-mode=Node,RBAC --allow-privileged=true \
		--kubelet-preferred-address-types=InternalIP \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$pki/sa.pub" \
		--service-account-signing-key-file="$pki/sa.key"
	k8s_wait kube-apiserver 180 kubectl get --raw /readyz

	k8s_say "starting kube-controller-manager and kube-scheduler"
	k8s_start kube-controller-manager "$K8S_BIN/kube-controller-manager" \
		--kubeconfig="$pki/controller-manager.kubeconfig" \
		--authentication-kubeconfig="$pki/controller-manager.kubeconfig" \
		--authorization-kubeconfig="$pki/controller-manager.kubeconfig" \
		--bind-address=127.0.0.1 --leader-elect=false \
		--service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
		--use-service-account-credentials=true
	k8s_start kube-scheduler "$K8S_BIN/kube-scheduler" \
		--kubeconfig="$pki/scheduler.kubeconfig" \
		--authentication-kubeconfig="$pki/scheduler.kubeconfig" \
		--authorization-kubeconfig="$pki/scheduler.kubeconfig" \
		--bind-address=127.0.0.1 --leader-elect=false

	k8s_say "starting containerd ($(containerd --version | awk '{print $3}'))"
	k8s_containerd_config
	k8s_start containerd containerd --config "$K8S_STATE/containerd.toml"
	k8s_wait containerd 60 ctr_node version
	local t
	for t in ${K8S_IMAGE_TARBALLS:-}; do
		k8s_say "importing $(basename "$t") into containerd"
		ctr_node images import --no-unpack=false "$t" >/dev/null
	done

	k8s_say "starting the kubelet"
	k8s_kubelet_config
	k8s_start kubelet "$K8S_BIN/kubelet" --config="$K8S_STATE/kubelet.yaml" \
		--kubeconfig="$pki/kubelet.kubeconfig" --root-dir="$K8S_STATE/kubelet" \
		--cert-dir="$K8S_STATE/kubelet-pki" \
		--hostname-override="$K8S_NODE" --node-ip="$K8S_NODE_IP"
	k8s_wait "node $K8S_NODE" 180 kubectl wait --for=condition=Ready "node/$K8S_NODE" --timeout=1s
	k8s_wait "default service account" 60 kubectl get serviceaccount default
}

# k8s_stop NAME: SIGTERM, up to 20 s, then SIGKILL, for a daemon k8s_start started.
k8s_stop() {
	local name=$1 pidfile="$K8S_STATE/pids/$1" pid i
	[ -f "$pidfile" ] || return 0
	pid=$(cat "$pidfile")
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 1 20); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$pidfile"
}

# k8s_remove_cgroups ends every process left in the kubelet's cgroups (containers whose shim or
# runtime went first: all of them are the cluster's) and removes the cgroups, deepest first.
k8s_remove_cgroups() {
	local try h p
	for try in $(seq 1 20); do
		ls -d /sys/fs/cgroup/*/"$K8S_CGROUP" >/dev/null 2>&1 || return 0
		for p in $(find /sys/fs/cgroup/*/"$K8S_CGROUP" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u); do
			kill -KILL "$p" 2>/dev/null || true
		done
		for h in /sys/fs/cgroup/*/; do
			[ -d "$h$K8S_CGROUP" ] && find "$h$K8S_CGROUP" -depth -type d -exec rmdir {} + 2>/dev/null
		done
		sleep 0.5
	done
}

# cluster_down removes what cluster_up made, from whatever point it reached.
# It runs in a subshell without set -e: a step that fails must not stop the steps after it.
cluster_down() (
	set +e
	k8s_say "tearing the cluster down"
	if [ -S "$K8S_STATE/containerd.sock" ] && [ -f "$K8S_STATE/pids/kubelet" ] &&
		kubectl get --raw /readyz >/dev/null 2>&1; then
		# Through the kubelet first, so every pod's network is torn down by the CNI plugin.
		kubectl delete daemonsets,deployments,statefulsets,jobs --all --all-namespaces \
			--wait=false >/dev/null 2>&1 || true
		kubectl delete pods --all --all-namespaces --grace-period=5 --timeout=60s \
			>/dev/null 2>&1 || true
	fi
	k8s_stop kubelet
	if [ -f "$K8S_STATE/pids/containerd" ]; then
		local c
		for c in $(ctr_node tasks ls -q 2>/dev/null); do
			ctr_node tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true
		done
		sleep 1
		for c in $(ctr_node tasks ls -q 2>/dev/null); do
			ctr_node tasks delete -f "$c" >/dev/null 2>&1 || true
		done
		for c in $(ctr_node containers ls -q 2>/dev/null); do
			ctr_node containers delete "$c" >/dev/null 2>&1 || true
		done
	fi
	local n
	for n in containerd kube-scheduler kube-controller-manager kube-apiserver etcd; do
		k8s_stop "$n"
	done
	# Shims of containers whose task could not be deleted: found by our containerd's address.
	local p
	for p in $(k8s_pids_with "$K8S_CONTAINERD_SOCK"); do
		kill -KILL "$p" 2>/dev/null || true
	done
	# Pod network namespaces the runtime made and did not remove (CNI's netns directory).
	if [ -f "$K8S_STATE/netns-before" ]; then
		for n in $(ls /run/netns 2>/dev/null); do
			case "$n" in cni-*) ;; *) continue ;; esac
			grep -qx "$n" "$K8S_STATE/netns-before" && continue
			umount "/run/netns/$n" 2>/dev/null || true
			rm -f "/run/netns/$n"
		done
	fi
	# Every mount below the state directory, deepest first.
	local m
	for m in $(findmnt -rn -o TARGET | grep "^$K8S_STATE/" | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
	ip netns del "$K8S_NETNS" 2>/dev/null || true
	ip link del "$K8S_PREFIX-up" 2>/dev/null || true
	k8s_remove_cgroups
	if [ -f "$K8S_STATE/host-paths-made" ]; then
		for n in $K8S_HOST_OWNED; do
			grep -qx "$n" "$K8S_STATE/host-paths-made" && rm -rf "$n"
		done
		for n in $K8S_HOST_PARENTS; do
			grep -qx "$n" "$K8S_STATE/host-paths-made" && rmdir "$n" 2>/dev/null
		done
		cp "$K8S_STATE/host-paths-made" "$K8S_LOGS/host-paths-made"
	fi
	if [ -f "$K8S_STATE/journals-before" ]; then
		for n in $(ls "$K8S_JOURNALS" 2>/dev/null); do
			grep -qx "$n" "$K8S_STATE/journals-before" || rm -rf "${K8S_JOURNALS:?}/$n"
		done
	fi
	rm -rf "$K8S_STATE"
	cluster_leftovers
)

# cluster_leftovers says what of the cluster is still on the machine, and fails if anything is.
cluster_leftovers() {
	local left=() d
	local pids
	pids=$(k8s_pids_with "$K8S_STATE" | { grep -vx "$$" || true; } | tr "\n" " ")
	[ -n "${pids// /}" ] && left+=("processes: $pids")
	findmnt -rn -o TARGET | grep -q "^$K8S_STATE" && left+=("mounts under $K8S_STATE")
	ip netns list | grep -qw "$K8S_NETNS" && left+=("network namespace $K8S_NETNS")
	ip link show "$K8S_PREFIX-up" >/dev/null 2>&1 && left+=("link $K8S_PREFIX-up")
	ls -d /sys/fs/cgroup/*/"$K8S_CGROUP" >/dev/null 2>&1 && left+=("cgroups $K8S_CGROUP")
	[ -e "$K8S_STATE" ] && left+=("$K8S_STATE")
	if [ -f "$K8S_LOGS/host-paths-made" ]; then
		for d in $(cat "$K8S_LOGS/host-paths-made"); do
			[ -e "$d" ] && left+=("$d")
		done
		rm -f "$K8S_LOGS/host-paths-made"
	fi
	# The kubelet's and CNI's rules live in the node's namespace; none may reach the machine's.
	if iptables-save 2>/dev/null | grep -qE "KUBE-|CNI-|10\.247\.|$K8S_PREFIX-"; then
		left+=("iptables rules of the cluster in the machine's namespace")
	fi
	if [ ${#left[@]} -gt 0 ]; then
		k8s_say "LEFT BEHIND: ${left[*]}" >&2
		return 1
	fi
	k8s_say "nothing left behind (processes, mounts, network namespaces, links, cgroups," \
		"iptables rules, files)"
}
