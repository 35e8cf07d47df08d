#!/bin/sh
# The stock-equivalent forwarder image's entrypoint (make k8s-e2e, the upgrade scenario).
#
# The stock cmd-forwarder-vpp image starts VPP itself, as a child it stops when it stops
# (vpphelper). test/stockforwarder reproduces stock's forwarding chain but only beside an
# external VPP, so this entrypoint plays vpphelper's part: it starts the image's VPP with the
# configuration vpphelper would read, at vpphelper's socket paths in the container's own
# /var/run/vpp (not the node's /var/run/vpp/external, which a later forwarder would take for an
# operator's VPP), hands it the node's uplink as stock's default NSM_VPP_INIT=AF_PACKET does
# (k8s-stock-uplink), then runs the forwarder against it. On SIGTERM both get it at once, as in stock,
# where the context that ends the forwarder also ends its VPP: whatever stock's cleanup has not
# released by the time VPP is gone stays, as it does with the stock image.
set -u
rundir=/var/run/vpp
mkdir -p "$rundir"
/bin/vpp -c /etc/vpp/helper/vpp.conf &
vpp=$!
i=0
until [ -S "$rundir/api.sock" ]; do
	if ! kill -0 "$vpp" 2>/dev/null; then
		echo "stock-forwarder entrypoint: VPP exited before serving $rundir/api.sock" >&2
		exit 1
	fi
	i=$((i + 1))
	if [ "$i" -gt 300 ]; then
		echo "stock-forwarder entrypoint: no $rundir/api.sock after 30 s" >&2
		exit 1
	fi
	sleep 0.1
done
# Stock's default NSM_VPP_INIT=AF_PACKET: the node's uplink to VPP, its address the tunnel IP.
tunnel_ip=$(/bin/k8s-stock-uplink -socket "$rundir/api.sock") || {
	kill -TERM "$vpp"
	exit 1
}
echo "stock-forwarder entrypoint: the uplink handed to VPP, tunnel IP $tunnel_ip"
NSM_TUNNEL_IP="${NSM_TUNNEL_IP:-$tunnel_ip}" NSM_VPP_API_SOCKET="$rundir/api.sock" /bin/forwarder &
forwarder=$!
trap 'kill -TERM "$forwarder" "$vpp" 2>/dev/null' TERM INT
# wait returns early when a trapped signal arrives: wait again for the forwarder's exit status.
wait "$forwarder"
status=$?
while kill -0 "$forwarder" 2>/dev/null; do
	wait "$forwarder"
	status=$?
done
kill -TERM "$vpp" 2>/dev/null
wait "$vpp" 2>/dev/null
exit "$status"
