package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/config"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppconn"
)

// Exit codes of the subcommand.
const (
	exitOK       = 0
	exitFailure  = 1
	exitBadUsage = 2
)

// ownVPPSocket is where the VPP the forwarder starts (no socket at NSM_VPP_API_SOCKET) listens.
var ownVPPSocket = vppconn.OwnSocket("")

const usage = `Usage: forwarder-vpp inspect [-json]

Prints what the forwarder named by NSM_NAME owns: per connection of its journal
(NSM_STATE_DIR/NSM_NAME), the VPP interfaces and the client namespaces' interfaces, routes and
policy rules; then orphans and foreign state in its table range. It only reads.
VPP is read where the forwarder uses it: at NSM_VPP_API_SOCKET when that socket exists
(an external VPP), else at %s (the VPP the forwarder starts).
Exits 1, naming it, when the journal or VPP cannot be read.

`

// Main runs `forwarder-vpp inspect [-json]` with the forwarder's configuration (NSM_STATE_DIR,
// NSM_NAME, NSM_VPP_API_SOCKET) and returns its exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("forwarder-vpp inspect", flag.ContinueOnError)
	// The usage goes to stdout when asked for (-h), to stderr after a bad flag's message.
	var usageText bytes.Buffer
	flags.SetOutput(stderr)
	asJSON := flags.Bool("json", false, "print the report as JSON")
	flags.Usage = func() {
		fmt.Fprintf(&usageText, usage, ownVPPSocket)
		flags.SetOutput(&usageText)
		flags.PrintDefaults()
		flags.SetOutput(stderr)
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = usageText.WriteTo(stdout)
			return exitOK
		}
		_, _ = usageText.WriteTo(stderr)
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
	report := Gather(ctx, Sources{
		JournalDir:   filepath.Join(cfg.StateDir, cfg.Name),
		VPPSocket:    cfg.VppAPISocket,
		OwnVPPSocket: ownVPPSocket,
	})
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
	return unread(stderr, report)
}

// unread names on stderr each source that could not be read, the report being incomplete
// without it, and returns the exit code that says so.
func unread(stderr io.Writer, r *Report) int {
	code := exitOK
	if r.Journal.Error != "" {
		fmt.Fprintf(stderr, "forwarder-vpp inspect: could not read the journal %s: %s\n", r.Journal.Dir, r.Journal.Error)
		code = exitFailure
	}
	if r.VPP.Error != "" {
		fmt.Fprintf(stderr, "forwarder-vpp inspect: could not read VPP: %s\n", r.VPP.Error)
		code = exitFailure
	}
	return code
}
