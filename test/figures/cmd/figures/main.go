// Command figures runs a measuring command, passes its output through, and writes the figures it
// printed into a document under docs/ headed by the command, commit, date and machine
// (test/figures). It exits with the command's status. `make bench` and `make bench-forwarder`
// run their benchmarks through it:
//
//	go run ./test/figures/cmd/figures -out docs/bench.md -title T -command "make bench" -format gobench -- go test ...
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/nsmfwd/forwarder-vpp/test/figures"
)

func main() {
	out := flag.String("out", "", "document to write, e.g. docs/bench.md")
	title := flag.String("title", "Figures", "the document's title")
	command := flag.String("command", "", "what a person runs to measure again, e.g. \"make bench\"")
	format := flag.String("format", "markdown", "what to keep of the output: markdown (its tables) or gobench (go test -bench results as a table)")
	note := flag.String("note", "", "a paragraph under the header: what the figures are")
	flag.Parse()
	argv := flag.Args()
	if *out == "" || len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "usage: figures -out FILE -command TEXT [-title T] [-format markdown|gobench] -- COMMAND...")
		os.Exit(2)
	}
	var output bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...) //nolint:gosec // the Makefile's own command
	cmd.Stdout = io.MultiWriter(os.Stdout, &output)
	cmd.Stderr = os.Stderr
	run := figures.Run{Command: *command, Argv: argv, Started: time.Now()}
	err := cmd.Run()
	run.Duration = time.Since(run.Started)
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		run.ExitStatus = exitErr.ExitCode()
	case err != nil:
		fmt.Fprintln(os.Stderr, "figures:", err)
		os.Exit(1)
	}
	body := figures.MarkdownTables(output.String())
	if *format == "gobench" {
		body = figures.GoBenchTable(output.String())
	}
	if *note != "" {
		body = *note + "\n\n" + body
	}
	if err = figures.Write(".", *out, *title, run, body); err != nil {
		fmt.Fprintln(os.Stderr, "figures:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "figures: wrote %s\n", *out)
	os.Exit(run.ExitStatus)
}
