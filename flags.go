package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"

	"github.com/nsmfwd/forwarder-vpp/internal/config"
	"github.com/nsmfwd/forwarder-vpp/internal/liveness"
)

// version is stamped by the build: go build -ldflags "-X main.version=v1.2.3" (see make image).
var version = "dev"

// handleFlags runs what the command line asks for besides forwarding (help, -version, the
// liveness probe) and says whether the process is done, with which exit code.
func handleFlags(args []string) (exitCode int, done bool) {
	flags := flag.NewFlagSet("forwarder-vpp", flag.ContinueOnError)
	flags.SetOutput(os.Stdout)
	showVersion := flags.Bool("version", false, "print the version and exit")
	probe := flags.String("liveness", "", "check that the forwarder serving on this `URL` (NSM_LISTEN_ON) answers, then exit: the liveness probe")
	flags.Usage = func() { _ = config.PrintUsage(os.Stdout); fmt.Println("\nFlags:"); flags.PrintDefaults() }
	err := flags.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0, true // Parse printed the usage
	case err == nil && flags.NArg() == 1 && flags.Arg(0) == "help":
		flags.Usage()
		return 0, true
	case err != nil || flags.NArg() > 0:
		fmt.Fprintf(os.Stderr, "forwarder-vpp: unexpected arguments %q: configuration is read from NSM_* variables (see -h)\n", args)
		return exitCodeBadUsage, true
	case *showVersion:
		fmt.Println(version)
		return 0, true
	case *probe != "":
		return checkLiveness(*probe), true
	}
	return 0, false
}

func checkLiveness(listenOn string) int {
	u, err := url.Parse(listenOn)
	if err == nil {
		err = liveness.Check(context.Background(), u, liveness.DefaultTimeout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "forwarder-vpp: not alive: %v\n", err)
		return exitCodeFailure
	}
	return 0
}
