#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 1m), one after the other, and
# ends with a summary; exits non-zero when any target found a failing input (go test writes it
# under the package's testdata/fuzz, where `make test` then replays it). Each new interesting input
# is minimized for at most FUZZMINIMIZETIME (default 5s): go's default, 60s, can stall a target
# for its whole FUZZTIME. FUZZFLAGS are passed to go test (e.g. FUZZFLAGS=-parallel=1).
#
# Targets are what `go test -list '^Fuzz'` reports. Only packages whose test files declare a
# Fuzz function are asked: listing runs a package's TestMain, and some (the end-to-end suite's)
# build programs and sweep namespaces.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
fuzztime="${FUZZTIME:-1m}"
minimizetime="${FUZZMINIMIZETIME:-5s}"
read -r -a flags <<<"${FUZZFLAGS:-}"

fuzz_packages() {
	go list -f '{{.ImportPath}} {{.Dir}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}' ./... |
		while read -r pkg dir files; do
			for file in $files; do
				if grep -q '^func Fuzz' "$dir/$file"; then
					echo "$pkg"
					break
				fi
			done
		done
}

results=()
failed=0
for pkg in $(fuzz_packages); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz: $pkg $target for $fuzztime"
		start=$(date +%s)
		if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimizetime" ${flags[@]+"${flags[@]}"} "$pkg"; then
			results+=("ok    $pkg $target ($(($(date +%s) - start))s)")
		else
			results+=("FAIL  $pkg $target ($(($(date +%s) - start))s)")
			failed=1
		fi
	done
done

if [ ${#results[@]} -eq 0 ]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi
echo "fuzz: summary (fuzztime $fuzztime per target)"
printf '  %s\n' "${results[@]}"
exit "$failed"
