#!/usr/bin/env bash
# Repeats, at the end of `make test`, what failed in its output: each failed test with its own
# messages, panics, leaked goroutines and failed packages. CI keeps only the tail of a run, and
# the forwarder's logs can bury a failure hundreds of lines above it.
set -euo pipefail
log="${1:?usage: test-failures.sh LOG}"
[ -s "$log" ] || exit 0
failures=$(awk '
	/^[[:space:]]*--- FAIL/ { block = 1; lines = 0; print; next }
	block && /^[[:space:]][[:space:]][[:space:]][[:space:]]/ { if (++lines <= 40) print; next }
	{ block = 0 }
	/^panic: |^goleak: |^FAIL[[:space:]]/ { print }
' "$log")
if [ -n "$failures" ]; then
	echo "==== what failed (repeated from the output above) ===="
	echo "$failures"
fi
