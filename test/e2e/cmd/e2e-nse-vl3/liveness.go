package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/govpp/binapi/ping"
	"github.com/networkservicemesh/govpp/binapi/vlib"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/vrf"
	vppheal "github.com/networkservicemesh/sdk-vpp/pkg/tools/heal"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/heal"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// peeringLivenessCheck is the data-path check of a peering connection from this endpoint's VPP:
// sdk-vpp's, as cmd-nse-vl3-vpp's, where the VPP has the ping-events API it uses
// (want_ping_finished_events, which NSM's VPP build adds); elsewhere, as on upstream VPP, that
// call fails and sdk-vpp's check reports every connection alive, so a broken peering would
// never heal. There the same pings go through the debug CLI instead (cliLivenessCheck).
func peeringLivenessCheck(ctx context.Context, vppConn *core.Connection) heal.LivenessCheck {
	ch, err := vppConn.NewAPIChannel()
	if err == nil {
		defer ch.Close()
		if err = ch.CheckCompatiblity(&ping.WantPingFinishedEvents{}, &ping.PingFinishedEvent{}); err == nil {
			return vppheal.VPPLivenessCheck(vppConn)
		}
	}
	log.FromContext(ctx).Infof("peering liveness check: VPP's ping CLI (no ping-events API: %v)", err)
	return cliLivenessCheck(vppConn)
}

// pingReceived is the summary line of VPP's ping CLI.
var pingReceived = regexp.MustCompile(`(\d+) sent, (\d+) received`)

// livenessPings is how many echoes each destination gets per check, as sdk-vpp's.
const livenessPings = 2

// cliLivenessCheck pings each of the connection's destination addresses from the VPP, in the
// connection's VRF (where its memif and the endpoint's loopback are), within the check's
// deadline: dead when an address answers none of its echoes. As sdk-vpp's check, a check that
// cannot run (no VRF yet, an API error) says nothing against the connection.
func cliLivenessCheck(vppConn api.Connection) heal.LivenessCheck {
	return func(deadlineCtx context.Context, conn *networkservice.Connection) bool {
		timeout := time.Second
		if deadline, ok := deadlineCtx.Deadline(); ok {
			timeout = time.Until(deadline)
		}
		// Every echo's wait fits in the deadline, with room for the call itself.
		interval := timeout.Seconds() * 0.8 / livenessPings
		for _, dst := range conn.GetContext().GetIpContext().GetDstIPNets() {
			table, ok := vrf.Load(deadlineCtx, true, dst.IP.To4() == nil)
			if !ok {
				continue
			}
			reply := &vlib.CliInbandReply{}
			cmd := fmt.Sprintf("ping %s table-id %d repeat %d interval %.3f", dst.IP, table, livenessPings, interval)
			if err := vppConn.Invoke(deadlineCtx, &vlib.CliInband{Cmd: cmd}, reply); err != nil {
				log.FromContext(deadlineCtx).Warnf("liveness check %q: %v", cmd, err)
				continue
			}
			if strings.Contains(reply.Reply, "unknown input") {
				log.FromContext(deadlineCtx).Warnf("liveness check %q: %s", cmd, reply.Reply)
				continue
			}
			// No summary at all is a ping that could not leave (no route, interface down).
			if received(reply.Reply) <= 0 {
				log.FromContext(deadlineCtx).Errorf("liveness check %q: no echo answered: %s", cmd, reply.Reply)
				return false
			}
		}
		return true
	}
}

// received is how many echoes VPP's ping CLI output says were answered; -1 when it says nothing.
func received(out string) int {
	m := pingReceived.FindStringSubmatch(out)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[2])
	return n
}
