# SPDX-License-Identifier: GPL-2.0-or-later
# What the benchmark scripts share (sourced): their messages and exits.
# A benchmark prints numbers; it exits 77 (skip) when this machine lacks a
# tool it needs, and 1 when something is wrong.

say() { echo "bench: $*" >&2; }
skip() {
	echo "SKIP: $*"
	exit 77
}
die() {
	echo "bench: $*" >&2
	exit 1
}

# stop_workload: ends the background workload whose process group leader is
# $WPID (started with setsid), if any.
stop_workload() {
	[[ -n ${WPID:-} ]] || return 0
	kill -TERM -- "-$WPID" 2>/dev/null || true
	wait "$WPID" 2>/dev/null || true
	WPID=
}

# timed FILE CMD...: runs CMD, appending "wall user sys maxrss_kb" of its whole
# process tree to FILE (tests/bench/treetime.py: GNU time would miss the
# addr2line processes perf script leaves behind). Uses $PYTHON and $SRCDIR.
timed() {
	local out=$1
	shift
	"${PYTHON:-python3}" "$SRCDIR/tests/bench/treetime.py" "$out" "$@"
}
