package inspect

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/nsmfwd/forwarder-vpp/internal/config"
)

// Exit codes of the subcommand.
const (
	exitOK       = 0
	exitFailure  = 1
	exitBadUsage = 2
)

// Main runs `forwarder-vpp inspect [-json]` with the forwarder's configuration (NSM_STATE_DIR,
// NSM_NAME, NSM_VPP_API_SOCKET) and returns its exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("forwarder-vpp inspect", flag.ContinueOnError)
	flags.SetOutput(stderr)
	asJSON := flags.Bool("json", false, "print the report as JSON")
	flags.Usage = func() {
		fmt.Fprintln(stderr, "Usage: forwarder-vpp inspect [-json]\n\nPrints what the forwarder named by NSM_NAME owns: per connection of its journal (NSM_STATE_DIR/NSM_NAME),\n"+
			"the VPP interfaces (NSM_VPP_API_SOCKET) and the client namespaces' interfaces, routes and policy rules;\n"+
			"then orphans and foreign state in its table range. It only reads.")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitBadUsage
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "forwarder-vpp inspect: unexpected arguments %q\n", flags.Args())
		return exitBadUsage
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintf(stderr, "forwarder-vpp inspect: %v\n", err)
		return exitFailure
	}
	report := Gather(ctx, Sources{JournalDir: filepath.Join(cfg.StateDir, cfg.Name), VPPSocket: cfg.VppAPISocket})
	if *asJSON {
		encoder := json.NewEncoder(stdout)
		encoder.SetIndent("", "  ")
		err = encoder.Encode(report)
	} else {
		err = WriteText(stdout, report)
	}
	if err != nil {
		fmt.Fprintf(stderr, "forwarder-vpp inspect: %v\n", err)
		return exitFailure
	}
	return exitOK
}
