#!/bin/sh
# Runs every Go fuzz target of the module for FUZZTIME each (default 60s); go test runs their seed
# corpora (testdata/fuzz) as regular tests without this. A finding is written to the package's
# testdata/fuzz and fails the run.
set -eu
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-60s}"
go test -list '^Fuzz' ./... | awk '/^Fuzz/ { targets = targets " " $1 } /^ok/ { if (targets != "") print $2 targets; targets = "" }' |
while read -r pkg targets; do
	for target in $targets; do
		echo "== $pkg $target ($FUZZTIME)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg"
	done
done
