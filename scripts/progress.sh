# Sourced by install-tools.sh and demo.sh: a `go build` that says how far it is.
#
# go_build_progress PREFIX WHAT DIR BUILD_FLAGS... -- PACKAGES...
# runs `go build -v BUILD_FLAGS PACKAGES` in DIR and prints, every PROGRESS_EVERY seconds (20 by
# default), how many packages it has compiled of those the Go build cache lacks (`go list` says
# which are stale), or that it is linking, and for how long. A warm build only links.
# Compiler errors are passed through.
go_build_progress() {
	local prefix=$1 what=$2 dir=$3
	shift 3
	local flags=() packages=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do
		flags+=("$1")
		shift
	done
	shift
	packages=("$@")

	echo "$prefix: looking for the packages of $what that are not compiled yet (the first time, go downloads its modules)"
	# go list takes the build flags that change what is compiled (-trimpath), not -o.
	local list_flags=() i
	for ((i = 0; i < ${#flags[@]}; i++)); do
		if [ "${flags[i]}" = "-o" ]; then
			i=$((i + 1))
		else
			list_flags+=("${flags[i]}")
		fi
	done
	local stale compile link
	stale=$(cd "$dir" && go list "${list_flags[@]}" -deps \
		-f '{{if .Stale}}{{if eq .Name "main"}}link{{else}}compile{{end}}{{end}}' "${packages[@]}")
	compile=$(grep -c '^compile$' <<<"$stale" || true)
	link=$(grep -c '^link$' <<<"$stale" || true)
	local counter
	counter=$(mktemp)
	echo 0 >"$counter"
	local start=$SECONDS every=${PROGRESS_EVERY:-20}
	echo "$prefix: building $what: $compile package(s) to compile, $link program(s) to link"
	(
		while sleep "$every"; do
			kill -0 "$$" 2>/dev/null || exit 0 # the script ended without us (a signal)
			local done_count
			done_count=$(cat "$counter" 2>/dev/null)
			if [ "${done_count:-0}" -lt "$compile" ]; then
				echo "$prefix: still building $what: ${done_count:-0} of $compile packages" \
					"compiled, $((SECONDS - start)) s"
			else
				echo "$prefix: still building $what: linking, $((SECONDS - start)) s"
			fi
		done
	) &
	local ticker=$!
	local status
	if (cd "$dir" && go build -v "${flags[@]}" "${packages[@]}" 2>&1) | count_packages "$counter"; then
		status=0
	else
		status=${PIPESTATUS[0]}
	fi
	kill "$ticker" 2>/dev/null || true
	wait "$ticker" 2>/dev/null || true
	if [ "$status" -eq 0 ]; then
		echo "$prefix: built $what in $((SECONDS - start)) s"
	else
		echo "$prefix: building $what failed after $((SECONDS - start)) s" >&2
	fi
	rm -f "$counter" "$counter.next"
	return "$status"
}

# count_packages FILE: reads `go build -v`, keeps the count of package paths in FILE and passes
# every other line (a compiler message) to stderr.
count_packages() {
	local n=0 line
	while IFS= read -r line; do
		case "$line" in
		*" "* | "#"*) echo "$line" >&2 ;;
		*)
			n=$((n + 1))
			# Renamed into place: the ticker never reads a half-written count.
			echo "$n" >"$1.next" && mv "$1.next" "$1"
			;;
		esac
	done
}
