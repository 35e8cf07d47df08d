package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// report prints the demo's summary as it goes.
type report struct {
	w     io.Writer
	pings []string
}

func newReport(w io.Writer) *report {
	fmt.Fprintln(w, "forwarder-vpp demo: a two-node NSM domain in network namespaces")
	return &report{w: w}
}

func (r *report) section(title string) {
	fmt.Fprintf(r.w, "\n== %s\n", title)
}

func (r *report) line(text string) {
	fmt.Fprintf(r.w, "  %s\n", text)
}

func (r *report) timing(what string, d time.Duration) {
	fmt.Fprintf(r.w, "  %-52s %8s\n", what, d.Round(time.Millisecond))
}

// verdict is the demo's last line: every ping it made, all of which passed.
func (r *report) verdict() {
	fmt.Fprintf(r.w, "\nping through forwarder-vpp: OK (%s)\n", strings.Join(r.pings, "; "))
}
