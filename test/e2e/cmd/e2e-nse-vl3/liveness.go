package main

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"time"

	"go.fd.io/govpp/core"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/govpp/binapi/ping"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/vrf"
	vppheal "github.com/networkservicemesh/sdk-vpp/pkg/tools/heal"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/heal"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// peeringLivenessCheck is the data-path check of a peering connection from this endpoint's VPP:
// sdk-vpp's, as cmd-nse-vl3-vpp's, where the VPP has the ping-events API it calls
// (want_ping_finished_events with a sw_if_index, which NSM's VPP build adds). Upstream VPP's
// message has no sw_if_index: the call fails and sdk-vpp's check reports every peering alive,
// so a broken one would never heal. There, given vppctl and the VPP's CLI socket, the same pings
// go through the CLI socket, whose sessions are where VPP's ping command is meant to wait (the
// binary API's cli_inband would run it in the API process, which then misses its own events and
// stalls).
func peeringLivenessCheck(ctx context.Context, cfg *config, vppConn *core.Connection) heal.LivenessCheck {
	err := pingEventsAPI(vppConn)
	if err == nil || cfg.Vppctl == "" || cfg.VppCliSocket == "" {
		return vppheal.VPPLivenessCheck(vppConn)
	}
	log.FromContext(ctx).Infof("peering liveness check: vppctl -s %s ping (no NSM ping-events API: %v)", cfg.VppCliSocket, err)
	return vppctlLivenessCheck(cfg.Vppctl, cfg.VppCliSocket)
}

// pingEventsAPI says why the VPP lacks the ping-events API sdk-vpp's check calls, nil if it has it.
func pingEventsAPI(vppConn *core.Connection) error {
	ch, err := vppConn.NewAPIChannel()
	if err != nil {
		return err
	}
	defer ch.Close()
	return ch.CheckCompatiblity(&ping.WantPingFinishedEvents{}, &ping.PingFinishedEvent{})
}

// pingReceived is the summary line of VPP's ping CLI.
var pingReceived = regexp.MustCompile(`(\d+) sent, (\d+) received`)

// livenessPings is how many echoes each destination gets per check, as sdk-vpp's.
const livenessPings = 2

// vppctlLivenessCheck pings each of the connection's destination addresses from the VPP, in the
// connection's VRF (where its memif and the endpoint's loopback are), within the check's
// deadline: dead when an address answers none of its echoes. As sdk-vpp's check, a check that
// cannot run (no VRF yet, vppctl failing) says nothing against the connection.
func vppctlLivenessCheck(vppctl, socket string) heal.LivenessCheck {
	return func(deadlineCtx context.Context, conn *networkservice.Connection) bool {
		timeout := time.Second
		if deadline, ok := deadlineCtx.Deadline(); ok {
			timeout = time.Until(deadline)
		}
		// Every echo's wait fits in the deadline, with room for vppctl itself.
		interval := timeout.Seconds() * 0.7 / livenessPings
		for _, dst := range conn.GetContext().GetIpContext().GetDstIPNets() {
			table, ok := vrf.Load(deadlineCtx, true, dst.IP.To4() == nil)
			if !ok {
				continue
			}
			args := []string{"-s", socket, "ping", dst.IP.String(), "table-id", strconv.FormatUint(uint64(table), 10),
				"repeat", strconv.Itoa(livenessPings), "interval", fmt.Sprintf("%.3f", interval)}
			out, err := exec.CommandContext(deadlineCtx, vppctl, args...).CombinedOutput()
			if err != nil {
				log.FromContext(deadlineCtx).Warnf("liveness check %v: %v: %s", args, err, out)
				continue
			}
			// No summary at all is a ping that could not leave (no route, interface down).
			if received(string(out)) <= 0 {
				log.FromContext(deadlineCtx).Errorf("liveness check %v: no echo answered: %s", args, out)
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
