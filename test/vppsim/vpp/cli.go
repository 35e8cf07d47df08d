package vpp

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/networkservicemesh/govpp/binapi/vlib"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
)

// registerCLI answers cli_inband: `show clock` as VPP v24.10 does (the forwarder checks VPP's
// clock at start-up), every other command as VPP answers one it does not know.
func (v *VPP) registerCLI() {
	on(v, v.cliInband)
}

func (v *VPP) cliInband(_ *server.Session, req *vlib.CliInband) []api.Message {
	if slices.Equal(strings.Fields(req.Cmd), []string{"show", "clock"}) {
		return one(&vlib.CliInbandReply{Reply: ShowClock(time.Since(v.started), time.Now())})
	}
	return one(&vlib.CliInbandReply{Retval: retval(api.UNSPECIFIED), Reply: unknownCommand(req.Cmd) + "\n"})
}

// ShowClock is VPP v24.10's answer to `show clock` (src/vlib/threads.c show_clock_command_fn) when
// it has run for uptime at now, with no worker threads: VPP's seconds, the kernel's date, then the
// main thread's line and barrier offsets, zero without workers.
func ShowClock(uptime time.Duration, now time.Time) string {
	seconds := vppFloat(uptime.Seconds(), 6)
	return fmt.Sprintf("Time now %s, %s GMT\nTime last barrier release %s\n0: Time now %s\nThread 0 offset %[3]s error %[3]s\n",
		seconds, now.UTC().Format("Mon, 02 Jan 2006 15:04:05"), vppFloat(0, 9), seconds)
}

// vppFloat is VPP's %.<digits>f (src/vppinfra/format.c format_float): no zero before the
// decimal point of a number between 0 and 1, unlike C's and Go's, except for zero itself.
func vppFloat(x float64, digits int) string {
	s := strconv.FormatFloat(x, 'f', digits, 64)
	if x != 0 && math.Abs(x) < 1 && strings.Trim(s, "-0.") != "" {
		s = strings.Replace(s, "0.", ".", 1)
	}
	return s
}

// unknownCommand is VPP's answer to a command it does not know (src/vlib/cli.c "unknown input"):
// the path of the words it knew, then at most 30 bytes of the rest (src/vppinfra/unformat.c
// format_unformat_error). The simulator knows `show` and nothing below it but `clock`.
func unknownCommand(command string) string {
	word := strings.TrimLeft(command, vppWhiteSpace)
	if end := strings.IndexAny(word, vppWhiteSpace); end > 0 && word[:end] == "show" {
		// VPP takes the white space character that ends a word it knows with the word.
		return "show: unknown input `" + unparsed(word[end+1:]) + "'"
	}
	// An unknown first word leaves the input where it was, white space and all.
	return "unknown input `" + unparsed(command) + "'"
}

// vppWhiteSpace is what VPP's unformat skips between words.
const vppWhiteSpace = " \t\r\n"

// unparsedShown is how much of the unparsed input VPP shows.
const unparsedShown = 30

func unparsed(rest string) string {
	shown := strings.TrimRight(rest, vppWhiteSpace)
	if len(rest) > unparsedShown {
		shown = rest[:unparsedShown]
	}
	shown = strings.NewReplacer("\r", `\r`, "\n", `\n`, "\t", `\t`).Replace(shown)
	if len(rest) > unparsedShown {
		shown += "..."
	}
	return shown
}
