#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: what it costs to profile a busy machine with flamed versus with
# `perf record -g` + `perf script` (the first two steps of the FlameGraph
# chain; stackcollapse and flamegraph.pl would add to perf's side).
#
#   tests/bench/record_vs_perf.sh [DURATION]
#
# The workload is a parallel (make -j2) build of flamed itself, from a copy of
# the source in a temporary directory, restarted from `make clean` for every
# measurement and repeated until the measurement ends, so every tool sees the
# same work. Each tool records the whole machine (-a) for DURATION seconds
# (default 20) at each frequency. Measured over each tool's whole process
# tree with tests/bench/treetime.py (GNU time misses the addr2line processes
# perf script leaves behind), post-processing included: CPU seconds (user +
# system), peak RSS, bytes written, and the wall time past the recording (how
# long until the result is there).
#
# Environment: DURATION, FREQS ("99 999"), FLAMED (build/flamed), BENCH_TOOLS
# ("perf flamed"; one of them measures only that one), BENCH_SRC (the CMake
# project built as the workload; the repository), PYTHON (python3). Needs
# root, perf (Debian: linux-perf) and python3; exits 77 when one is missing.
# Not part of ctest: it takes minutes and wants a quiet machine.
set -euo pipefail

SRCDIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
DURATION=${1:-${DURATION:-20}}
FREQS=${FREQS:-99 999}
FLAMED=${FLAMED:-$SRCDIR/build/flamed}
BENCH_TOOLS=${BENCH_TOOLS:-perf flamed}
BENCH_SRC=${BENCH_SRC:-$SRCDIR}
WARMUP=2 # seconds of workload before each measurement starts

# shellcheck source=tests/bench/lib.sh
source "$SRCDIR/tests/bench/lib.sh"

[[ $DURATION =~ ^[0-9]+$ && $DURATION -gt 0 ]] || die "DURATION must be a whole number of seconds, not '$DURATION'"
[[ $(id -u) -eq 0 ]] || skip "needs root (both tools record every CPU)"
perf version >/dev/null 2>&1 || skip "needs perf (Debian: apt-get install linux-perf)"
PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import ctypes, resource' 2>/dev/null || skip "needs $PYTHON (it measures the process trees)"
if [[ " $BENCH_TOOLS " == *" flamed "* ]]; then
	[[ -x $FLAMED ]] || die "no flamed binary at $FLAMED (run packaging/bootstrap.sh first)"
	FLAMED=$(readlink -f "$FLAMED")
fi

W=$(mktemp -d "${TMPDIR:-/tmp}/flamed-bench.XXXXXX")
WPID=
cleanup() {
	stop_workload
	rm -rf "$W"
}
trap cleanup EXIT

prepare_make_workload "$BENCH_SRC" "$W"

start_workload() {
	start_make_workload "$W"
	sleep "$WARMUP"
}

# Prints "cpu_s rss_mib mib_written post_wall_s" for one measurement.
summarize() {
	local times=$1 bytes=$2
	awk -v b="$bytes" -v d="$DURATION" '
		{ wall += $1; cpu += $2 + $3; if ($4 > rss) rss = $4 }
		END { printf "%.2f %.1f %.2f %.2f\n", cpu, rss / 1024, b / 1048576, wall - d }' "$times"
}

measure_perf() {
	local hz=$1 r=$W/perf-$1
	perf_record_script "$r" "$hz" "$DURATION"
	summarize "$r/times" "$(size_of "$r/perf.data" "$r/out.txt")"
}

measure_flamed() {
	local hz=$1 r=$W/flamed-$1
	result_dir "$r"
	timed "$r/times" "$FLAMED" record -a -F "$hz" -d "$DURATION" -o "$r/out.folded" 2>"$r/record.err" ||
		die "flamed record failed: $(tail -n 3 "$r/record.err")"
	summarize "$r/times" "$(size_of "$r/out.folded")"
}

declare -A RESULT
for hz in $FREQS; do
	for tool in $BENCH_TOOLS; do
		say "$tool at $hz Hz for $DURATION s (workload running)"
		start_workload
		RESULT[$tool,$hz]=$("measure_$tool" "$hz")
		stop_workload
	done
done

echo
what=flamed
[[ $(readlink -f "$BENCH_SRC") == "$SRCDIR" ]] || what=$BENCH_SRC
echo "Whole machine (-a), $DURATION s, $(nproc) CPUs, workload: make -j2 of $what in a loop."
echo "perf = perf record -g + perf script; CPU and wall include post-processing."
echo
echo "| Hz | tool | CPU s | peak RSS MiB | MiB written | s after recording |"
echo "|---:|---|---:|---:|---:|---:|"
for hz in $FREQS; do
	for tool in $BENCH_TOOLS; do
		read -r cpu rss mib post <<<"${RESULT[$tool,$hz]}"
		echo "| $hz | $tool | $cpu | $rss | $mib | $post |"
	done
done
if [[ " $BENCH_TOOLS " == *" perf "* && " $BENCH_TOOLS " == *" flamed "* ]]; then
	echo
	for hz in $FREQS; do
		read -r pcpu _ <<<"${RESULT[perf,$hz]}"
		read -r fcpu _ <<<"${RESULT[flamed,$hz]}"
		awk -v hz="$hz" -v p="$pcpu" -v f="$fcpu" 'BEGIN {
			if (f < 0.01) printf "%s Hz: perf CPU / flamed CPU >= %.0fx (flamed < 0.01 s)\n", hz, p / 0.01
			else printf "%s Hz: perf CPU / flamed CPU = %.1fx\n", hz, p / f }'
	done
fi
