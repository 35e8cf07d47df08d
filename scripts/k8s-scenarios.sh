# Sourced by k8s-e2e.sh: the scenarios past kernel2kernel, each the steps of a deployments-k8s
# v1.18 heal example with kubectl, then the checks that nothing is left in the pods, on the node
# or in VPP: local NSE death, local nsmgr restart, SPIRE agent restart, the liveness probe
# restarting a hung forwarder, and the upgrade from the stock-equivalent image and back.

K8S_HEAL_NS=ns-heal

# K8S_E2E_SCENARIOS picks scenarios, in this order, for a partial run (all by default).
k8s_scenarios() {
	local s
	for s in ${K8S_E2E_SCENARIOS:-kernel2kernel heal upgrade}; do
		case "$s" in
		kernel2kernel | heal | upgrade) ;;
		*)
			k8s_say "K8S_E2E_SCENARIOS: unknown scenario $s (kernel2kernel, heal, upgrade)" >&2
			return 1
			;;
		esac
	done
	K8S_VPP_BASELINE=$(vpp_interfaces)
	k8s_say "the forwarder's VPP has $K8S_VPP_BASELINE interfaces before the scenarios"
	for s in kernel2kernel heal upgrade; do
		case " ${K8S_E2E_SCENARIOS:-kernel2kernel heal upgrade} " in *" $s "*) "k8s_$s" ;; esac
	done
	[ "$k8s_failed" -eq 0 ]
}

# nettools NS COMMAND...: a command in the examples' client container.
nettools() {
	local ns=$1
	shift
	kubectl -n "$ns" exec pod/nettools -c nettools -- "$@"
}

# nse_exec NS COMMAND...: a command in the (newest ready) endpoint pod.
nse_exec() {
	local ns=$1 pod
	shift
	pod=$(kubectl -n "$ns" get pods -l app=nse-kernel --field-selector=status.phase=Running \
		--sort-by=.metadata.creationTimestamp -o jsonpath='{.items[-1:].metadata.name}')
	kubectl -n "$ns" exec "$pod" -- "$@"
}

# nsm_address NS: the first of nettools' 172.16.1.x addresses on nsm-1.
nsm_address() {
	nettools "$1" ip -4 -o addr show dev nsm-1 | sed -nE 's|.* inet (172\.16\.1\.[0-9]+)/.*|\1|p' |
		head -n 1 | grep .
}

cannot_ping() { ! nettools "$1" ping -c 2 -W 1 "$2"; }

# pings NS NSE_ADDR NSC_ADDR: ping both ways from the given addresses, as local-nse-death does
# (after its heal the client holds the old address too), while the connection heals.
pings() {
	local ns=$1 nse=$2 nsc=$3
	check "nettools pings the endpoint ($nsc to $nse)" \
		retry 60 nettools "$ns" ping -c 4 -W 2 -I "$nsc" "$nse" || true
	check "the endpoint pings nettools ($nse to $nsc)" \
		retry 60 nse_exec "$ns" ping -c 4 -W 2 -I "$nse" "$nsc" || true
}

# policy_route NS CLIENT_ADDR MARK WANT RULE ARGS...: one of the examples' `ip route get`
# checks. Upstream greps for tables 1 to 5; any table is accepted here (forwarder-vpp derives it
# from the connection and the policy: docs/deploy.md, "Policy-based routing"), but it must be
# routed through nsm-1 as WANT says, and a rule must look that table up selecting the policy's
# traffic (RULE); with MARK=250 that rule must carry forwarder-vpp's protocol.
policy_route() {
	local ns=$1 addr=$2 mark=$3 want=$4 rule=$5 out table family=-4
	shift 5
	want=${want//ADDR/${addr//./\\.}}
	out=$(nettools "$ns" ip "$@") || {
		echo "ip $*: $out"
		return 1
	}
	echo "ip $*: $out"
	grep -Eq "$want" <<<"$out" || {
		echo "does not match: $want"
		return 1
	}
	table=$(sed -nE 's/.* table ([0-9]+).*/\1/p' <<<"$out" | head -n 1)
	[ "$1" = -6 ] && family=-6
	out=$(nettools "$ns" ip "$family" rule show table "$table") || return 1
	echo "ip $family rule show table $table: $out"
	grep -Eq "$rule" <<<"$out" || {
		echo "no rule selecting the policy's traffic looks up table $table"
		return 1
	}
	if [ "$mark" = 250 ]; then
		grep -Eq "$rule.*proto 250" <<<"$out" || {
			echo "the rule looking up table $table does not carry forwarder-vpp's protocol 250"
			return 1
		}
	fi
}

# policy_routes NS CLIENT_ADDR MARK: the examples' five checks (the test/e2e upstream suite's).
policy_routes() {
	local ns=$1 addr=$2 mark=$3 p='( proto [0-9a-z]+)?'
	policy_route "$ns" "$addr" "$mark" \
		'172\.16\.3\.1 from 172\.16\.2\.201 via 172\.16\.2\.200 dev nsm-1 table [0-9]+' \
		'from 172\.16\.2\.(0|201)/24 ipproto tcp dport 6666 lookup' \
		route get 172.16.3.1 from 172.16.2.201 ipproto tcp dport 6666 &&
		policy_route "$ns" "$addr" "$mark" \
			'172\.16\.3\.1 from 172\.16\.2\.201 dev nsm-1 table [0-9]+' \
			'from 172\.16\.2\.(0|201)/24 ipproto tcp sport 5555 lookup' \
			route get 172.16.3.1 from 172.16.2.201 ipproto tcp sport 5555 &&
		policy_route "$ns" "$addr" "$mark" "172\\.16\\.4\\.1 dev nsm-1 table [0-9]+$p src ADDR" \
			'from all ipproto udp dport 6666 lookup' \
			route get 172.16.4.1 ipproto udp dport 6666 &&
		policy_route "$ns" "$addr" "$mark" "172\\.16\\.4\\.1 dev nsm-1 table [0-9]+$p src ADDR" \
			'from all ipproto udp dport 6667-6670 lookup' \
			route get 172.16.4.1 ipproto udp dport 6668 &&
		policy_route "$ns" "$addr" "$mark" "via 2004::6 dev nsm-1 table [0-9]+$p src 2004::3" \
			'from 2004::(3)?/120 ipproto udp dport 5555 lookup' \
			-6 route get 2004::5 from 2004::3 ipproto udp dport 5555
}

# forwarder_one_connection: the forwarder's journal holds exactly one connection, with no problem,
# no orphan and nothing foreign (forwarder-vpp inspect in its pod).
forwarder_one_connection() {
	local out
	out=$(forwarder_inspect) || return 1
	jq -e '(.connections | length) == 1 and all(.connections[]; (.problems // []) == [])
		and .orphans == [] and .foreign == []' <<<"$out" >/dev/null || {
		echo "$out"
		return 1
	}
}

# client_state NS: what the client's namespace holds, for the log and the leftover checks.
client_state() {
	local ns=$1
	nettools "$ns" ip -o addr show
	nettools "$ns" ip rule show
	nettools "$ns" ip -6 rule show
}

# client_clean NS [ADDR...]: nsm-1 is the only NSM interface and none of ADDR (addresses of an
# earlier connection) is on it or in the rules.
client_clean() {
	local ns=$1 out a
	shift
	out=$(client_state "$ns") || return 1
	echo "$out"
	[ "$(nettools "$ns" ip -o link show | grep -c 'nsm-')" = 1 ] || {
		echo "more than one nsm- interface"
		return 1
	}
	for a in "$@"; do
		if grep -q "$a[/ ]" <<<"$out"; then
			echo "$a is still there"
			return 1
		fi
	done
}

# node_link_ends: the links of the node's network namespace as "index name", but the CNI's pod
# veths (veth and 8 hex digits), which come and go with pods (a restarted nsmgr gets a new one).
node_link_ends() {
	in_node ip -o link show | sed -E 's/^([0-9]+): ([^:@]+).*/\1 \2/' |
		grep -Ev ' veth[0-9a-f]{8}$' | sort -k2
}

# node_links: the names of node_link_ends.
node_links() {
	node_link_ends | cut -d' ' -f2
}

# node_links_beside FILE: the node's link ends ("index name") whose name is not in FILE (node_links
# taken earlier): what came since.
node_links_beside() {
	node_link_ends | awk 'NR == FNR { before[$1]; next } !($2 in before)' "$1" -
}

# forwarder_veth_ends: the forwarder's ends of its connections' veth pairs, in the node's namespace,
# as "index name", as forwarder-vpp inspect reads them from its journal and the kernel (none where
# the sides are taps).
forwarder_veth_ends() {
	forwarder_inspect | jq -r '.connections[].sides[].forwarderVeth | select(. != null)
		| "\(.index) \(.name)"' | sort -k2
}

# node_links_are_connections FILE: beside the links of FILE (taken before any connection) the node
# holds exactly the veth ends forwarder-vpp's live connections hold, same index and name: a live
# connection's ends are its own, anything more is a leak (another run's, a rebuilt side's).
node_links_are_connections() {
	local came ends
	came=$(node_links_beside "$1") || return 1
	ends=$(forwarder_veth_ends) || return 1
	echo "on the node beside the links before: ${came:-nothing}"
	echo "forwarder-vpp's connections' veth ends: ${ends:-none}"
	[ "$came" = "$ends" ]
}

# node_links_none_of FILE: none of the link ends of FILE ("index name") is on the node.
node_links_none_of() {
	local left
	left=$(node_link_ends | grep -Fxf "$1") || true
	echo "left: ${left:-none}"
	[ -z "$left" ]
}

# node_links_back_to FILE: the node's network namespace holds the links it held before.
node_links_back_to() {
	diff "$1" <(node_links)
}

# forwarder_container_pid: the host PID of the running forwarder container's main process.
forwarder_container_pid() {
	local id
	id=$(kubectl -n nsm-system get pods -l app=forwarder-vpp \
		-o jsonpath='{.items[0].status.containerStatuses[0].containerID}')
	ctr_node tasks ls | awk -v id="${id#containerd://}" '$1 == id { print $2 }'
}

forwarder_restarts() {
	kubectl -n nsm-system get pods -l app=forwarder-vpp \
		-o jsonpath='{.items[0].status.containerStatuses[0].restartCount}'
}

forwarder_restarted_after() { [ "$(forwarder_restarts)" -gt "$1" ]; }

# k8s_heal: the heal examples on one client and endpoint, in the order local-nse-death,
# local-nsmgr-restart, spire-agent-restart, then the liveness probe; after each step the
# forwarder holds exactly the one connection and the client nothing of an earlier one.
k8s_heal() {
	local ns=$K8S_HEAL_NS links="$K8S_STATE/node-links-heal"
	k8s_say "scenario heal (examples/heal: local-nse-death, local-nsmgr-restart, spire-agent-restart; the liveness probe)"
	node_links >"$links"
	kubectl apply -k "$K8S_TESTDATA/heal" >/dev/null
	check "nse-kernel ready" kubectl -n "$ns" wait --for=condition=Ready --timeout=180s pod -l app=nse-kernel
	check "nettools ready" kubectl -n "$ns" wait --for=condition=Ready --timeout=180s pod/nettools
	pings "$ns" 172.16.1.100 172.16.1.101
	check "the examples' five policy checks (forwarder-vpp's rules, protocol 250)" \
		retry 30 policy_routes "$ns" 172.16.1.101 250 || true
	check "beside the links before the scenario the node holds the connection's veth ends only" \
		retry 30 node_links_are_connections "$links" || true

	k8s_say "local NSE death: scale the endpoint to 0, patch it to new addresses, scale it to 1"
	kubectl -n "$ns" scale deployment nse-kernel --replicas=0 >/dev/null
	kubectl -n "$ns" wait --for=delete pod -l app=nse-kernel --timeout=60s >/dev/null 2>&1 || true
	check "with the endpoint gone, nettools cannot reach it" cannot_ping "$ns" 172.16.1.100 || true
	kubectl -n "$ns" patch deployment nse-kernel --type strategic \
		--patch-file "$K8S_TESTDATA/heal/nse-after-death.yaml" >/dev/null
	kubectl -n "$ns" scale deployment nse-kernel --replicas=1 >/dev/null
	check "the new endpoint ready" kubectl -n "$ns" wait --for=condition=Ready --timeout=120s \
		pod -l app=nse-kernel,version=new
	pings "$ns" 172.16.1.102 172.16.1.103
	# As upstream's checks expect: the new endpoint's IPAM (sdk point2pointipam) keeps the
	# client's earlier address in the context, so the routes' source is still 172.16.1.101.
	check "the five policy checks after the heal" retry 30 policy_routes "$ns" 172.16.1.101 250 || true
	check "nettools holds one NSM interface" retry 30 client_clean "$ns" || true
	check "the forwarder holds one connection, no orphan, nothing foreign" \
		retry 30 forwarder_one_connection || true

	k8s_say "local nsmgr restart: kubectl delete pod of the node's nsmgr"
	kubectl -n nsm-system delete pod -l app=nsmgr --wait=true >/dev/null
	check "the new nsmgr ready" kubectl -n nsm-system wait --for=condition=Ready --timeout=120s pod -l app=nsmgr
	pings "$ns" 172.16.1.102 172.16.1.103
	check "policy checks after the nsmgr restart" retry 30 policy_routes "$ns" 172.16.1.101 250 || true
	check "still one connection in the forwarder, no orphan" retry 30 forwarder_one_connection || true

	k8s_say "SPIRE agent restart: kubectl delete pod of the agent"
	kubectl -n spire delete pod -l app=spire-agent --wait=true >/dev/null
	check "the new spire-agent ready" kubectl -n spire wait --for=condition=Ready --timeout=120s pod -l app=spire-agent
	pings "$ns" 172.16.1.102 172.16.1.103
	check "policy checks after the agent restart" retry 30 policy_routes "$ns" 172.16.1.101 250 || true
	k8s_say "a new Request after the agent restart: nettools deleted and applied again"
	kubectl -n "$ns" delete pod nettools --wait=true --timeout=90s >/dev/null
	kubectl apply -k "$K8S_TESTDATA/heal" >/dev/null
	check "the new nettools ready" kubectl -n "$ns" wait --for=condition=Ready --timeout=180s pod/nettools
	# The new pod's client asks with the same connection ID (nettools-0), and the endpoint's IPAM
	# hands it the addresses it holds for that ID: the pair is read from nettools.
	local nsc nse
	check "the new nettools has an address on nsm-1" retry 60 nsm_address "$ns" || true
	nsc=$(nsm_address "$ns") || nsc=172.16.1.103
	nse=${nsc%.*}.$((${nsc##*.} ^ 1))
	k8s_say "the new client has $nsc, its endpoint side $nse"
	pings "$ns" "$nse" "$nsc"
	check "the five policy checks for the new client" retry 30 policy_routes "$ns" "$nsc" 250 || true
	check "the old client's connection released: one connection, no orphan" \
		retry 60 forwarder_one_connection || true

	k8s_liveness "$ns" "$nse" "$nsc" "$links"

	k8s_say "the client and the endpoint deleted: nothing of theirs may stay"
	kubectl delete -k "$K8S_TESTDATA/heal" --wait=true --timeout=120s >/dev/null || true
	check "no connection, orphan or foreign state; VPP back to $K8S_VPP_BASELINE interfaces" \
		retry 60 forwarder_clean || true
	check "the node's links are those before the scenario" retry 30 node_links_back_to "$links" || true
}

# k8s_liveness NS NSE_ADDR NSC_ADDR LINKS (the node's links before the scenario): the forwarder's
# process stopped (SIGSTOP: its gRPC server accepts connections in the kernel and never answers, as
# a hung server does, with no hook in the program); the kubelet's liveness probe (deployments/base:
# 25 failures 5 s apart, 3 s each) fails and the kubelet restarts the container: the stopped process
# takes SIGTERM only once killed, so the restart comes after the probe's budget plus the 30 s grace
# period.
k8s_liveness() {
	local ns=$1 nse=$2 nsc=$3 links=$4 pid restarts began took budget=$((25 * 5 + 3 + 30 + 20))
	k8s_say "liveness: SIGSTOP of forwarder-vpp; the kubelet must restart it within ${budget} s (probe budget 128 s, grace 30 s, slack 20 s)"
	restarts=$(forwarder_restarts)
	pid=$(forwarder_container_pid)
	check "the forwarder's process found ($pid)" test -n "$pid" || return 0
	began=$SECONDS
	kill -STOP "$pid"
	check "the kubelet restarted the hung forwarder within $budget s" \
		retry "$budget" forwarder_restarted_after "$restarts" || true
	took=$((SECONDS - began))
	k8s_say "restarted $took s after the SIGSTOP"
	grep -q 'Liveness probe failed' <(kubectl -n nsm-system get events \
		--field-selector reason=Unhealthy -o jsonpath='{range .items[*]}{.message}{"\n"}{end}') &&
		k8s_say "the kubelet's events say: Liveness probe failed"
	check "the restarted forwarder ready" \
		kubectl -n nsm-system wait --for=condition=Ready --timeout=120s pod -l app=forwarder-vpp
	pings "$ns" "$nse" "$nsc"
	check "policy checks after the liveness restart" retry 30 policy_routes "$ns" "$nsc" 250 || true
	check "the restarted forwarder holds the one connection, no orphan" \
		retry 60 forwarder_one_connection || true
	# Its VPP died with it: the connection is rebuilt, and the dead run's veth ends must be gone.
	check "beside the links before the scenario the node holds the rebuilt connection's veth ends only" \
		retry 30 node_links_are_connections "$links" || true
}

# finding WHAT COMMAND...: a check of what the stock-equivalent forwarder leaves. Its failure is
# stock's behaviour, reported as a finding (docs/deploy.md, "Rollback"), not a failure of the run.
finding() {
	local what=$1
	shift
	if "$@" >"$K8S_LOGS/check.out" 2>&1; then
		k8s_say "stock leaves nothing: $what"
	else
		k8s_findings=$((k8s_findings + 1))
		k8s_say "FINDING (stock): not so: $what"
		sed 's/^/    /' "$K8S_LOGS/check.out"
	fi
}
k8s_findings=0

# client_rules_ours NS: every policy rule in nettools is forwarder-vpp's (protocol 250): none of
# the stock run's is left beside them.
client_rules_ours() {
	local ns=$1 out
	out=$( (nettools "$ns" ip rule show && nettools "$ns" ip -6 rule show) | grep -v 'lookup \(local\|main\|default\)') || true
	echo "$out"
	[ -z "$(grep -v 'proto 250' <<<"$out")" ]
}

# client_rules_none_ours NS: no rule of forwarder-vpp (protocol 250) left in nettools.
client_rules_none_ours() {
	local ns=$1 out
	out=$( (nettools "$ns" ip rule show && nettools "$ns" ip -6 rule show)) || return 1
	echo "$out"
	! grep -q 'proto 250' <<<"$out"
}

# node_links_beside_count FILE N: beside the links of FILE the node holds N link ends.
node_links_beside_count() {
	local came
	came=$(node_links_beside "$1") || return 1
	echo "on the node beside the links before: ${came:-nothing}"
	[ "$(grep -c . <<<"$came")" -eq "$2" ]
}

forwarder_image_is() {
	kubectl -n nsm-system get pods -l app=forwarder-vpp -o jsonpath='{.items[*].spec.containers[0].image}' |
		grep -qx "$1"
}

# k8s_upgrade: a stock install (the stock DaemonSet, the stock-equivalent image) with a live
# connection; `kubectl set image` to forwarder-vpp (what deployments/overlays/image-only does); the
# connection heals and nothing of the stock run is left after Close; a new connection; then
# `kubectl set image` back to stock, the connection heals, and what stock leaves is reported.
k8s_upgrade() {
	local ns=ns-upgrade links="$K8S_STATE/node-links-upgrade" stock_ends="$K8S_STATE/node-links-stock"
	local ours_ends="$K8S_STATE/node-links-ours" n
	local ours=k8s-e2e.local/forwarder-vpp:e2e stock=k8s-e2e.local/stock-forwarder:e2e
	k8s_say "scenario upgrade: the stock DaemonSet with the stock-equivalent image, then kubectl set image to forwarder-vpp and back"
	kubectl -n nsm-system delete daemonset forwarder-vpp --wait=true >/dev/null
	kubectl -n nsm-system wait --for=delete pod -l app=forwarder-vpp --timeout=90s >/dev/null 2>&1 || true
	kubectl apply -k "$K8S_TESTDATA/stock-forwarder" >/dev/null
	check "the stock forwarder DaemonSet ready (stock probes: grpc-health-probe -spiffe)" \
		kubectl -n nsm-system rollout status daemonset/forwarder-vpp --timeout=300s || return 0
	node_links >"$links"
	kubectl apply -k "$K8S_TESTDATA/upgrade" >/dev/null
	check "nse-kernel ready" kubectl -n "$ns" wait --for=condition=Ready --timeout=180s pod -l app=nse-kernel
	check "nettools ready" kubectl -n "$ns" wait --for=condition=Ready --timeout=180s pod/nettools
	pings "$ns" 172.16.1.100 172.16.1.101
	check "the policy checks on stock (its own tables, its rules unmarked)" \
		retry 30 policy_routes "$ns" 172.16.1.101 stock || true
	k8s_say "nettools on stock:"
	client_state "$ns" 2>&1 | sed 's/^/    /'
	# Stock's connection holds its own links on the node (with veths, one end per kernel side):
	# after the upgrade none of them may stay.
	node_links_beside "$links" >"$stock_ends" || true
	n=$(grep -c . "$stock_ends") || true
	k8s_say "the node holds $n link ends for stock's connection: $(tr '\n' ' ' <"$stock_ends")"

	k8s_say "upgrade: kubectl set image daemonset/forwarder-vpp forwarder-vpp=$ours"
	kubectl -n nsm-system set image daemonset/forwarder-vpp "forwarder-vpp=$ours" >/dev/null
	check "the DaemonSet rolled to forwarder-vpp" \
		kubectl -n nsm-system rollout status daemonset/forwarder-vpp --timeout=300s
	check "the forwarder pod runs $ours" retry 30 forwarder_image_is "$ours" || true
	pings "$ns" 172.16.1.100 172.16.1.101
	check "the policy checks on forwarder-vpp (protocol 250)" \
		retry 60 policy_routes "$ns" 172.16.1.101 250 || true
	check "forwarder-vpp holds the healed connection, no orphan, nothing foreign" \
		retry 60 forwarder_one_connection || true
	check "nettools holds one nsm- interface, and only forwarder-vpp's rules (none of stock's)" \
		retry 30 client_rules_ours "$ns" || true
	check "none of stock's link ends (index and name) left on the node" \
		retry 30 node_links_none_of "$stock_ends" || true
	check "beside the links before the connection the node holds the healed connection's veth ends only" \
		retry 30 node_links_are_connections "$links" || true

	k8s_say "Close on forwarder-vpp: the client deleted; nothing of either run may stay"
	kubectl -n "$ns" delete pod nettools --wait=true --timeout=90s >/dev/null
	check "no connection, orphan or foreign state; VPP back to $K8S_VPP_BASELINE interfaces" \
		retry 60 forwarder_clean || true
	check "the node's links are those before the stock connection" \
		retry 30 node_links_back_to "$links" || true

	k8s_say "a new connection on forwarder-vpp, then the rollback: kubectl set image back to $stock"
	kubectl apply -k "$K8S_TESTDATA/upgrade" >/dev/null
	check "the new nettools ready" kubectl -n "$ns" wait --for=condition=Ready --timeout=180s pod/nettools
	pings "$ns" 172.16.1.100 172.16.1.101
	check "beside the links before the connection the node holds the new connection's veth ends only" \
		retry 30 node_links_are_connections "$links" || true
	forwarder_veth_ends >"$ours_ends" || true
	k8s_say "forwarder-vpp's connection holds on the node: $(tr '\n' ' ' <"$ours_ends")"
	kubectl -n nsm-system set image daemonset/forwarder-vpp "forwarder-vpp=$stock" >/dev/null
	check "the DaemonSet rolled back to stock" \
		kubectl -n nsm-system rollout status daemonset/forwarder-vpp --timeout=300s
	check "the forwarder pod runs $stock" retry 30 forwarder_image_is "$stock" || true
	pings "$ns" 172.16.1.100 172.16.1.101
	check "the policy checks on stock again" retry 60 policy_routes "$ns" 172.16.1.101 stock || true
	k8s_say "nettools after the rollback:"
	client_state "$ns" 2>&1 | sed 's/^/    /'
	check "forwarder-vpp released its rules on SIGTERM: none with protocol 250 in nettools" \
		client_rules_none_ours "$ns" || true
	check "none of forwarder-vpp's veth ends (index and name) left on the node after the rollback" \
		node_links_none_of "$ours_ends" || true
	finding "one NSM interface in nettools after the rollback" client_clean "$ns"
	finding "beside the links before, the node holds as many link ends as stock's first connection ($n)" \
		node_links_beside_count "$links" "$n"

	k8s_say "Close on stock: the client and the endpoint deleted"
	kubectl delete -k "$K8S_TESTDATA/upgrade" --wait=true --timeout=120s >/dev/null || true
	finding "the node's links are those before the first connection" retry 30 node_links_back_to "$links"
}
