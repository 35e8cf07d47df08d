// Command k8s-stock-uplink does, in the stock-equivalent forwarder image of make k8s-e2e (the
// upgrade scenario), what the stock cmd-forwarder-vpp does with the VPP it starts under its
// default NSM_VPP_INIT=AF_PACKET: it hands the node's uplink to VPP as an af_packet interface with
// the link's addresses and routes, and prints the tunnel IP (the uplink's address). The
// stock-equivalent program (test/stockforwarder) runs beside an external VPP only, whose operator
// does this; the image's entrypoint plays that part, with the code the e2e harness uses for it
// (test/e2e/domain/uplink.go: this project's vppinit).
//
//	k8s-stock-uplink -socket /var/run/vpp/api.sock
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"go.fd.io/govpp"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppinit"
)

func main() {
	socket := flag.String("socket", "/var/run/vpp/api.sock", "the VPP API socket")
	flag.Parse()
	if err := run(*socket); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-stock-uplink:", err)
		os.Exit(1)
	}
}

func run(socket string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := govpp.Connect(socket)
	if err != nil {
		return fmt.Errorf("connect to VPP at %s: %w", socket, err)
	}
	defer conn.Disconnect()
	tunnelIP, err := vppinit.Run(ctx, conn, vppinit.AfPacket, nil)
	if err != nil {
		return fmt.Errorf("hand the uplink to VPP: %w", err)
	}
	fmt.Println(tunnelIP)
	return nil
}
