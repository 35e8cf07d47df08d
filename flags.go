package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/nsmfwd/forwarder-vpp/internal/inspect"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/config"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/liveness"
)

// version is stamped by the build: go build -ldflags "-X main.version=v1.2.3" (see make image).
var version = "dev"

// handleFlags runs what the command line asks for besides forwarding (help, -version, the
// liveness probe) and says whether the process is done, with which exit code.
func handleFlags(args []string) (exitCode int, done bool) {
	if len(args) > 0 && args[0] == "inspect" {
		return inspect.Main(context.Background(), args[1:], os.Stdout, os.Stderr), true
	}
	flags := flag.NewFlagSet("forwarder-vpp", flag.ContinueOnError)
	showVersion, probe := defineFlags(flags, os.Stdout)
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

// defineFlags defines the command's flags on flags, whose usage (-h) goes to out.
func defineFlags(flags *flag.FlagSet, out io.Writer) (showVersion *bool, probe *string) {
	flags.SetOutput(out)
	showVersion = flags.Bool("version", false, "print the version and exit")
	probe = flags.String("liveness", "", "check that the forwarder serving on this `URL` (NSM_LISTEN_ON) "+
		"answers, then exit: the liveness probe")
	flags.Usage = func() { printHelp(out, flags) }
	return showVersion, probe
}

// printHelp writes the variables, the flags and the subcommand, no line wider than
// config.UsageWidth.
func printHelp(out io.Writer, flags *flag.FlagSet) {
	_ = config.PrintUsage(out)
	fmt.Fprintln(out, "\nFlags:")
	flags.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintln(out, strings.TrimRight("  -"+f.Name+" "+name, " "))
		fmt.Fprint(out, config.Wrap(usage))
	})
	fmt.Fprintln(out, "\nSubcommand:\n  inspect [-json]")
	fmt.Fprint(out, config.Wrap("print what this forwarder owns (its journal, VPP, the client namespaces), "+
		"orphans and foreign state; reads only, exits 1 naming what it could not read (inspect -h)"))
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
