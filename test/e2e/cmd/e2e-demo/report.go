package main

import (
	"fmt"
	"io"
	"time"
)

// report prints the demo's summary as it goes.
type report struct{ w io.Writer }

func newReport(w io.Writer) *report {
	fmt.Fprintln(w, "forwarder-vpp demo: a two-node NSM domain in network namespaces")
	return &report{w: w}
}

func (r *report) section(title string) {
	fmt.Fprintf(r.w, "\n== %s\n", title)
}

func (r *report) timing(what string, d time.Duration) {
	fmt.Fprintf(r.w, "  %-52s %8s\n", what, d.Round(time.Millisecond))
}
