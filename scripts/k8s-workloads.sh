# Sourced by k8s-e2e.sh: the images, what runs on the one-node cluster (SPIRE, the NSM control
# plane, the forwarder from deployments/) and the scenarios, each checked with kubectl as the
# deployments-k8s v1.18 examples check them. Manifests: test/k8s/testdata.

K8S_TESTDATA="$root/test/k8s/testdata"
K8S_SPIRE_AGENT_ID=spiffe://k8s.nsm/ns/spire/sa/spire-agent
k8s_passed=0
k8s_failed=0

# k8s_build_workload_images: the forwarder (with the test VPP of .cache/vpp in place of the
# govpp/vpp base image), the stock-equivalent forwarder built the same way (the upgrade), the NSM
# programs of test/e2e/cmd, the examples' nettools and SPIRE, each a one-layer image.
k8s_build_workload_images() {
	local b="$K8S_BUILD" probe_version
	probe_version=$(sed -n 's/^ARG GRPC_HEALTH_PROBE_VERSION=//p' "$root/Dockerfile")
	k8s_say "building forwarder-vpp, stockforwarder, e2e-nsmgr, e2e-registry, e2e-nse, e2e-nsc and grpc-health-probe $probe_version"
	CGO_ENABLED=0 go build -trimpath -o "$b/" . ./test/stockforwarder ./test/k8s/cmd/k8s-stock-uplink \
		./test/e2e/cmd/e2e-nsmgr \
		./test/e2e/cmd/e2e-registry ./test/e2e/cmd/e2e-nse ./test/e2e/cmd/e2e-nsc
	CGO_ENABLED=0 GOBIN="$b" go install -trimpath \
		"github.com/grpc-ecosystem/grpc-health-probe@$probe_version"
	# The test VPP runs without hugepages or DPDK only with its own start-up configuration
	# (docs/vpp.md); the forwarder's vpphelper reads it from /etc/vpp/helper/vpp.conf when it
	# exists, as the e2e harness gives it (test/e2e/domain/ownvpp.go).
	sed -e 's|RUNDIR|/var/run/vpp|g' -e 's|PREFIX|forwarder|g' "$K8S_VPP_TEMPLATE" >"$b/vpp.conf"
	local shell=("${K8S_BUSYBOX[@]}")
	local probe=(-file "$b/grpc-health-probe=/bin/grpc-health-probe")
	k8s_say "writing the images into $K8S_IMAGES"
	image -ref k8s-e2e.local/forwarder-vpp:e2e -o "$K8S_IMAGES/forwarder-vpp.tar" \
		-file "$b/forwarder-vpp=/bin/forwarder-vpp" "${probe[@]}" "${shell[@]}" \
		-file "$b/vpp.conf=/etc/vpp/helper/vpp.conf" -dir "$root/.cache/vpp=/" -libs \
		-entrypoint /bin/forwarder-vpp
	# The stock image's layout: /bin/forwarder, VPP, grpc-health-probe; VPP started by the
	# entrypoint, as the stock program starts its own (test/k8s/testdata/stock-forwarder).
	image -ref k8s-e2e.local/stock-forwarder:e2e -o "$K8S_IMAGES/stock-forwarder.tar" \
		-file "$b/stockforwarder=/bin/forwarder" "${probe[@]}" "${shell[@]}" \
		-file "$K8S_TESTDATA/stock-forwarder/entrypoint.sh=/bin/stock-entrypoint" \
		-file "$b/k8s-stock-uplink=/bin/k8s-stock-uplink" \
		-file "$b/vpp.conf=/etc/vpp/helper/vpp.conf" -dir "$root/.cache/vpp=/" -libs \
		-entrypoint /bin/stock-entrypoint
	# The examples' nettools: busybox with iproute2's ip, which the policy checks need
	# (ip route get ... ipproto tcp dport 6666; the protocol names from /etc/protocols).
	local nettools=(-file /bin/busybox=/bin/busybox -file "$(command -v ip)=/bin/ip"
		-file /etc/protocols=/etc/protocols)
	for applet in sh ping sleep cat ls ps; do
		nettools+=(-symlink "busybox=/bin/$applet")
	done
	image -ref k8s-e2e.local/nettools:e2e -o "$K8S_IMAGES/nettools.tar" "${nettools[@]}" -libs \
		-entrypoint /bin/sh
	image -ref k8s-e2e.local/nsmgr:e2e -o "$K8S_IMAGES/nsmgr.tar" \
		-file "$b/e2e-nsmgr=/bin/nsmgr" "${probe[@]}" "${shell[@]}" -entrypoint /bin/nsmgr
	image -ref k8s-e2e.local/registry:e2e -o "$K8S_IMAGES/registry.tar" \
		-file "$b/e2e-registry=/bin/registry" "${probe[@]}" "${shell[@]}" -entrypoint /bin/registry
	image -ref k8s-e2e.local/nse:e2e -o "$K8S_IMAGES/nse.tar" \
		-file "$b/e2e-nse=/bin/nse" "${shell[@]}" -entrypoint /bin/nse
	image -ref k8s-e2e.local/nsc:e2e -o "$K8S_IMAGES/nsc.tar" \
		-file "$b/e2e-nsc=/bin/nsc" "${shell[@]}" -entrypoint /bin/nsc
	local s
	# As the stock SPIRE images: the entrypoint runs the server or agent, the pod gives -config.
	for s in server agent; do
		image -ref "k8s-e2e.local/spire-$s:e2e" -o "$K8S_IMAGES/spire-$s.tar" \
			-file "$root/.cache/bin/spire-$s=/opt/spire/bin/spire-$s" "${shell[@]}" -libs \
			-entrypoint "/opt/spire/bin/spire-$s" -entrypoint run
	done
	for s in forwarder-vpp stock-forwarder nettools nsmgr registry nse nsc spire-server spire-agent; do
		K8S_IMAGE_TARBALLS="$K8S_IMAGE_TARBALLS $K8S_IMAGES/$s.tar"
	done
}

# check NAME COMMAND...: one assertion of a scenario, counted and reported.
check() {
	local what=$1
	shift
	if "$@" >"$K8S_LOGS/check.out" 2>&1; then
		k8s_passed=$((k8s_passed + 1))
		k8s_say "PASS: $what"
	else
		k8s_failed=$((k8s_failed + 1))
		k8s_say "FAIL: $what" >&2
		sed 's/^/    /' "$K8S_LOGS/check.out" >&2
		return 1
	fi
}

# retry SECONDS COMMAND...: COMMAND until it succeeds, for at most SECONDS; its last output stays.
retry() {
	local limit=$1 start=$SECONDS
	shift
	until "$@"; do
		[ $((SECONDS - start)) -ge "$limit" ] && return 1
		sleep 2
	done
}

# A pod on the pod network reaches the node: the CNI bridge and the runtime work.
k8s_smoke() {
	k8s_say "smoke: a busybox pod on the pod network pings the node"
	kubectl run smoke --image=k8s-e2e.local/busybox:e2e --image-pull-policy=Never --restart=Never \
		--command -- /bin/sh -c 'trap : TERM INT; sleep 1000000 & wait' >/dev/null
	check "smoke pod Ready" kubectl wait --for=condition=Ready pod/smoke --timeout=120s
	check "smoke pod has an address on $K8S_POD_SUBNET" smoke_on_pod_network
	check "smoke pod pings the node ($K8S_NODE_IP)" kubectl exec smoke -- ping -c 2 -W 2 "$K8S_NODE_IP"
	kubectl delete pod smoke --grace-period=1 --wait=true >/dev/null
}

smoke_on_pod_network() {
	kubectl get pod smoke -o jsonpath='{.status.podIP}' | grep '^10\.247\.0\.'
}

spire_server() { kubectl -n spire exec spire-server-0 -c spire-server -- /opt/spire/bin/spire-server "$@"; }

# k8s_spire: the server, the agents' node alias, the agent, and the registrar.
k8s_spire() {
	k8s_say "SPIRE: server and agent (deployments-k8s v1.18 examples/spire/single_cluster, test/k8s/testdata/spire)"
	kubectl apply -k "$K8S_TESTDATA/spire" >/dev/null
	check "spire-server ready" kubectl -n spire rollout status statefulset/spire-server --timeout=180s
	check "node alias entry for every agent of the cluster" spire_server entry create -node \
		-spiffeID "$K8S_SPIRE_AGENT_ID" -selector k8s_psat:cluster:k8s-nsm-cluster
	check "spire-agent ready (k8s_psat node attestation)" \
		kubectl -n spire rollout status daemonset/spire-agent --timeout=180s
	k8s_registrar &
	K8S_REGISTRAR_PID=$!
}

# k8s_registrar writes, for every pod labelled spiffe.io/spiffe-id=true, the entry that stock's
# spire-controller-manager writes from the ClusterSPIFFEID nsm-workloads: the SPIFFE ID
# spiffe://k8s.nsm/ns/NAMESPACE/pod/NAME for the selectors k8s:ns and k8s:pod-uid.
k8s_registrar() {
	# A background copy of the script: it must neither stop at a failed kubectl (set -e) nor run
	# the script's teardown (its EXIT trap) when it ends; the script ends it (k8s_stop_registrar).
	set +e
	trap - EXIT
	trap '' INT
	local seen="$K8S_STATE/registrar-seen" ns name uid
	touch "$seen"
	while sleep 2; do
		kubectl get pods --all-namespaces -l spiffe.io/spiffe-id=true -o \
			jsonpath='{range .items[*]}{.metadata.namespace} {.metadata.name} {.metadata.uid}{"\n"}{end}' \
			2>/dev/null | while read -r ns name uid; do
			[ -n "$uid" ] || continue
			grep -qx "$uid" "$seen" && continue
			if spire_server entry create -parentID "$K8S_SPIRE_AGENT_ID" \
				-spiffeID "spiffe://k8s.nsm/ns/$ns/pod/$name" \
				-selector "k8s:ns:$ns" -selector "k8s:pod-uid:$uid" >>"$K8S_LOGS/registrar.log" 2>&1; then
				echo "$uid" >>"$seen"
			fi
		done
	done
}

k8s_stop_registrar() {
	[ -n "${K8S_REGISTRAR_PID:-}" ] || return 0
	kill "$K8S_REGISTRAR_PID" 2>/dev/null || true
	wait "$K8S_REGISTRAR_PID" 2>/dev/null || true
	K8S_REGISTRAR_PID=
}

# k8s_nsm: registry, nsmgr, then the forwarder from deployments/base with its image changed.
k8s_nsm() {
	k8s_say "NSM: registry and nsmgr (test/k8s/testdata/nsm)"
	kubectl apply -k "$K8S_TESTDATA/nsm" >/dev/null
	check "registry ready" kubectl -n nsm-system rollout status deployment/registry --timeout=180s
	check "nsmgr ready" kubectl -n nsm-system rollout status daemonset/nsmgr --timeout=180s
	k8s_say "forwarder: deployments/base, the image reference the only change"
	kubectl apply -k "$K8S_TESTDATA/nsm/forwarder" >/dev/null
	check "forwarder-vpp DaemonSet ready (its own VPP, SVID, readiness probe)" \
		kubectl -n nsm-system rollout status daemonset/forwarder-vpp --timeout=300s
}

# k8s_ping NAMESPACE ADDRESS EXEC_TARGET...: ping from a pod, as the examples do, for up to a
# minute while the connection comes up or heals.
k8s_ping() {
	local ns=$1 to=$2
	shift 2
	retry 60 kubectl -n "$ns" exec "$@" -- ping -c 4 -W 2 "$to"
}

forwarder_inspect() {
	kubectl -n nsm-system exec ds/forwarder-vpp -- /bin/forwarder-vpp inspect -json
}

# vpp_interfaces: how many interfaces the forwarder's VPP has (forwarder-vpp inspect).
vpp_interfaces() {
	forwarder_inspect | sed -n 's/^ *"interfaces": \([0-9]*\).*/\1/p'
}

# forwarder_holds_connection: the forwarder's journal has a connection (forwarder-vpp inspect).
forwarder_holds_connection() {
	forwarder_inspect | grep '"connections": \[$'
}

# forwarder_clean: no connection, orphan or foreign state, and VPP back to the interfaces it had
# before the scenario, as forwarder-vpp inspect reads the journal, VPP and the kernel.
forwarder_clean() {
	local out
	out=$(forwarder_inspect) || return 1
	echo "$out"
	grep -q '"connections": \[\]' <<<"$out" && grep -q '"orphans": \[\]' <<<"$out" &&
		grep -q '"foreign": \[\]' <<<"$out" &&
		grep -q "\"interfaces\": $K8S_VPP_BASELINE,\?\$" <<<"$out"
}

# k8s_kernel2kernel: examples/use-cases/Kernel2Kernel, then local-forwarder-death on it.
k8s_kernel2kernel() {
	local ns=ns-kernel2kernel links="$K8S_STATE/node-links-kernel2kernel"
	k8s_say "scenario kernel2kernel (deployments-k8s v1.18 examples/use-cases/Kernel2Kernel)"
	node_links >"$links"
	kubectl apply -k "$K8S_TESTDATA/kernel2kernel" >/dev/null
	check "nse-kernel ready" kubectl -n "$ns" wait --for=condition=Ready --timeout=180s pod -l app=nse-kernel
	check "alpine ready" kubectl -n "$ns" wait --for=condition=Ready --timeout=180s pod/alpine
	check "alpine pings the endpoint (172.16.1.100)" k8s_ping "$ns" 172.16.1.100 pod/alpine -c alpine || true
	check "the endpoint pings alpine (172.16.1.101)" k8s_ping "$ns" 172.16.1.101 deployments/nse-kernel || true
	check "the forwarder's journal holds the connection (forwarder-vpp inspect)" \
		forwarder_holds_connection || true
	check "beside the links before the scenario the node holds the connection's veth ends only" \
		retry 30 node_links_are_connections "$links" || true

	k8s_say "scenario forwarder death: kubectl delete pod of the forwarder, the DaemonSet's new pod heals"
	local old
	old=$(kubectl -n nsm-system get pods -l app=forwarder-vpp -o jsonpath='{.items[0].metadata.name}')
	kubectl -n nsm-system delete pod "$old" --wait=true >/dev/null
	check "a new forwarder pod is ready" \
		kubectl -n nsm-system rollout status daemonset/forwarder-vpp --timeout=300s
	check "alpine pings the endpoint again" k8s_ping "$ns" 172.16.1.100 pod/alpine -c alpine || true
	check "the endpoint pings alpine again" k8s_ping "$ns" 172.16.1.101 deployments/nse-kernel || true

	check "the new forwarder's journal holds the connection" forwarder_holds_connection || true
	check "beside the links before the scenario the node holds the new forwarder's veth ends only" \
		retry 30 node_links_are_connections "$links" || true

	k8s_say "the client and the endpoint deleted: nothing of theirs may stay in the forwarder"
	kubectl delete -k "$K8S_TESTDATA/kernel2kernel" --wait=true --timeout=120s >/dev/null || true
	check "no connection, orphan or foreign state; VPP back to $K8S_VPP_BASELINE interfaces" \
		retry 60 forwarder_clean || true
	check "the node's links are those before the scenario" retry 30 node_links_back_to "$links" || true
}

# k8s_dump keeps what a failed run's pods said in $K8S_LOGS/pods.log and prints the pods' states.
k8s_dump() {
	kubectl get --raw /readyz >/dev/null 2>&1 || return 0
	local out="$K8S_LOGS/pods.log" ns name c
	{
		kubectl get pods --all-namespaces -o wide
		kubectl get events --all-namespaces --sort-by=.lastTimestamp | tail -n 40
		kubectl get pods --all-namespaces -o \
			jsonpath='{range .items[*]}{.metadata.namespace} {.metadata.name}{"\n"}{end}' |
			while read -r ns name; do
				for c in $(kubectl -n "$ns" get pod "$name" -o \
					jsonpath='{.spec.initContainers[*].name} {.spec.containers[*].name}'); do
					echo "=== $ns/$name $c"
					kubectl -n "$ns" logs "$name" -c "$c" --tail=60 2>&1
					kubectl -n "$ns" logs "$name" -c "$c" --previous --tail=30 2>/dev/null |
						sed 's/^/(previous) /'
				done
			done
	} >"$out" 2>&1
	k8s_say "pods at the failure (logs and events in $out):"
	kubectl get pods --all-namespaces -o wide 2>&1 | sed 's/^/    /'
}
