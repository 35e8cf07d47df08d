#!/usr/bin/env bash
# Prints how many tests ran on a real VPP, from the log the real-VPP tests append to
# (test/realvpp, FORWARDER_REALVPP_LOG): one line per use of VPP in a test,
# "<outcome>\t<package>\t<test>[\t<skip reason>]". A test that started several VPPs counts once.
set -euo pipefail
log="${1:?usage: realvpp-summary.sh LOG}"
if [ ! -s "$log" ]; then
	echo "real VPP: no test asked for it"
	exit 0
fi
awk -F '\t' '
	{
		key = $2 " " $3
		rank = ($1 == "fail") ? 3 : ($1 == "pass") ? 2 : 1
		if (rank > best[key]) { best[key] = rank }
		if ($1 == "skip" && $4 != "") { reasons[$4] = 1 }
	}
	END {
		for (key in best) {
			if (best[key] == 3) { fail++; failed[key] = 1 }
			else if (best[key] == 2) { pass++ }
			else { skip++ }
		}
		printf "real VPP: %d tests ran on it (%d passed, %d failed), %d skipped\n", pass + fail, pass, fail, skip
		for (r in reasons) { printf "real VPP: skipped because %s\n", r }
		for (f in failed) { printf "real VPP: FAILED %s\n", f }
	}' "$log"
