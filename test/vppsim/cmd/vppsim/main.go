// Command vppsim runs a simulated VPP on VPP's API socket, for tests and the demo. It is
// test tooling, never part of the product image.
//
//	vppsim [flags]                       serve until SIGINT/SIGTERM
//	vppsim show [--json] [--state-socket PATH]   print a running simulator's state
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim"
)

const defaultAPISocket = "/var/run/vpp/api.sock"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "show" {
		os.Exit(show(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(serve(os.Args[1:], os.Stderr))
}

func defaultStateSocket(apiSocket string) string {
	return filepath.Join(filepath.Dir(apiSocket), "vppsim-state.sock")
}

func serve(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("vppsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	apiSocket := fs.String("api-socket", defaultAPISocket, "VPP API socket to serve (a stale socket file is replaced)")
	stateSocket := fs.String("state-socket", "", "socket serving the whole state as JSON (default: vppsim-state.sock next to the API socket; \"none\" disables it)")
	statsSocket := fs.String("stats-socket", "", "VPP stats socket with interface counters for govpp's statsclient (default: stats.sock next to the API socket; \"none\" disables it)")
	netns := fs.String("netns", "", "network namespace (name or path) for af_packet host interfaces and VXLAN sockets (default: the current one)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: vppsim [flags]\n       vppsim show [--json] [--state-socket PATH]\n\n"+
			"Serves VPP's binary API (govpp socketclient protocol) with a simulated VPP: taps and\n"+
			"af_packet interfaces are real, L2/L3 cross-connects and VXLAN tunnels carry traffic.\n"+
			"Killing it loses all state and removes its taps, like a VPP crash.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "vppsim: invalid --log-level %q\n", *logLevel)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	state := *stateSocket
	switch state {
	case "":
		state = defaultStateSocket(*apiSocket)
	case "none":
		state = ""
	}

	statsPath := *statsSocket
	switch statsPath {
	case "":
		statsPath = filepath.Join(filepath.Dir(*apiSocket), "stats.sock")
	case "none":
		statsPath = ""
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	sim, err := vppsim.Start(ctx, vppsim.Config{APISocket: *apiSocket, StateSocket: state, StatsSocket: statsPath, Netns: *netns, Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "vppsim: %v\n", err)
		return 1
	}
	log.Info("vppsim serving", "api_socket", *apiSocket, "state_socket", state, "stats_socket", statsPath, "netns", *netns)
	<-ctx.Done()
	if err := sim.Close(); err != nil {
		log.Debug("closing", "error", err)
	}
	return 0
}

func show(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vppsim show", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the whole state as JSON instead of an interface table")
	stateSocket := fs.String("state-socket", defaultStateSocket(defaultAPISocket), "state socket of the running simulator")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	snap, err := vppsim.ReadState(*stateSocket)
	if err != nil {
		fmt.Fprintf(stderr, "vppsim show: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(snap); err != nil {
			fmt.Fprintf(stderr, "vppsim show: %v\n", err)
			return 1
		}
		return 0
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "IDX\tNAME\tKIND\tSTATE\tL2XC->\tADDRESSES\tTAG")
	for _, i := range snap.State.SortedInterfaces() {
		st := "down"
		if i.AdminUp {
			st = "up"
		}
		xc := "-"
		if i.L2XconnectTx != nil {
			xc = fmt.Sprint(*i.L2XconnectTx)
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", i.SwIfIndex, i.Name, i.Kind, st, xc, strings.Join(i.Addresses, ","), i.Tag)
	}
	if err := w.Flush(); err != nil {
		return 1
	}
	return 0
}
