#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: flamed's own cost on a machine whose CPUs are all busy making
# far more distinct stacks than any stack map holds (the stack_storm
# fixture, one thread per CPU), against `perf record -g` + `perf script` on
# the same workload, and the goals of issue 8: at 99 Hz flamed takes under
# 1 % of the machine and under 64 MiB.
#
#   tests/bench/stress_vs_perf.sh [DURATION]
#
# Each tool records the whole machine (-a) for DURATION seconds (default
# 60) at each frequency, measured over its whole process tree with
# tests/bench/treetime.py: CPU seconds (user + system, post-processing
# included), that as a share of the machine over the recording, and the
# peak RSS. flamed's own accounting line (samples taken = profile + idle +
# other + lost) is printed too.
#
# Environment: DURATION, FREQS ("99 999"), FLAMED (build/flamed), STORM
# (build/tests/fixtures/stack_storm), BENCH_TOOLS ("perf flamed"), PYTHON
# (python3), KEEP (a directory: keep outputs and timings there). Needs root,
# perf and python3; exits 77 when one is missing. Not part of ctest: it
# takes minutes and wants a quiet machine.
set -euo pipefail

SRCDIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
DURATION=${1:-${DURATION:-60}}
FREQS=${FREQS:-99 999}
FLAMED=${FLAMED:-$SRCDIR/build/flamed}
STORM=${STORM:-$SRCDIR/build/tests/fixtures/stack_storm}
BENCH_TOOLS=${BENCH_TOOLS:-perf flamed}

# shellcheck source=tests/bench/lib.sh
source "$SRCDIR/tests/bench/lib.sh"

[[ $DURATION =~ ^[0-9]+$ && $DURATION -gt 0 ]] || die "DURATION must be a whole number of seconds, not '$DURATION'"
[[ $(id -u) -eq 0 ]] || skip "needs root (both tools record every CPU)"
PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import ctypes, resource' 2>/dev/null || skip "needs $PYTHON (it measures the process trees)"
if [[ " $BENCH_TOOLS " == *" perf "* ]]; then
	perf version >/dev/null 2>&1 || skip "needs perf (Debian: apt-get install linux-perf)"
fi
[[ -x $FLAMED ]] || die "no flamed binary at $FLAMED (run packaging/bootstrap.sh first)"
[[ -x $STORM ]] || die "no stack_storm fixture at $STORM (build the tests: packaging/bootstrap.sh --test)"
FLAMED=$(readlink -f "$FLAMED")
CPUS=$(nproc)

bench_workdir
WPID=
cleanup() {
	stop_workload
	[[ -n ${KEEP:-} ]] || rm -rf "$W"
}
trap cleanup EXIT

start_storm() {
	setsid "$STORM" $((DURATION + 3600)) "$CPUS" </dev/null >/dev/null 2>&1 &
	WPID=$!
	sleep 1
}

# Prints "cpu_s machine_percent rss_mib" for one measurement.
summarize() {
	awk -v d="$DURATION" -v n="$CPUS" '
		{ cpu += $2 + $3; if ($4 > rss) rss = $4 }
		END { printf "%.2f %.3f %.1f\n", cpu, 100 * cpu / (d * n), rss / 1024 }' "$1"
}

measure_perf() {
	local hz=$1 r=$W/perf-$1
	perf_record_script "$r" "$hz" "$DURATION"
	summarize "$r/times"
}

measure_flamed() {
	local hz=$1 r=$W/flamed-$1
	result_dir "$r"
	timed "$r/times" "$FLAMED" record -a -F "$hz" -d "$DURATION" -o "$r/out.folded" 2>"$r/record.err" ||
		die "flamed record failed: $(tail -n 3 "$r/record.err")"
	sed -n 's/^flamed: \(accounting: .*\)/\1/p' "$r/record.err" >"$r/accounting"
	summarize "$r/times"
}

declare -A RESULT
for hz in $FREQS; do
	for tool in $BENCH_TOOLS; do
		say "$tool at $hz Hz for $DURATION s (stack_storm on $CPUS CPUs)"
		start_storm
		RESULT[$tool,$hz]=$("measure_$tool" "$hz")
		stop_workload
	done
done

echo
echo "Whole machine (-a), $DURATION s, $CPUS CPUs, every CPU busy in stack_storm (random call"
echo "chains 4-24 deep through 64 functions: nearly every sample a new stack)."
echo "perf = perf record -g + perf script; CPU includes post-processing."
echo
echo "| Hz | tool | CPU s | share of the machine | peak RSS MiB |"
echo "|---:|---|---:|---:|---:|"
for hz in $FREQS; do
	for tool in $BENCH_TOOLS; do
		read -r cpu share rss <<<"${RESULT[$tool,$hz]}"
		echo "| $hz | $tool | $cpu | $share % | $rss |"
	done
done
echo
for hz in $FREQS; do
	if [[ " $BENCH_TOOLS " == *" flamed "* ]]; then
		echo "$hz Hz, flamed $(cat "$W/flamed-$hz/accounting")"
	fi
	if [[ " $BENCH_TOOLS " == *" perf "* && " $BENCH_TOOLS " == *" flamed "* ]]; then
		read -r pcpu _ prss <<<"${RESULT[perf,$hz]}"
		read -r fcpu _ frss <<<"${RESULT[flamed,$hz]}"
		awk -v hz="$hz" -v p="$pcpu" -v f="$fcpu" -v pr="$prss" -v fr="$frss" 'BEGIN {
			printf "%s Hz: perf CPU / flamed CPU = %.1fx, perf RSS / flamed RSS = %.1fx\n",
				hz, p / (f > 0.01 ? f : 0.01), pr / (fr > 0.1 ? fr : 0.1) }'
	fi
done
if [[ " $FREQS " == *" 99 "* && " $BENCH_TOOLS " == *" flamed "* ]]; then
	read -r _ share rss <<<"${RESULT[flamed,99]}"
	awk -v s="$share" -v r="$rss" 'BEGIN {
		printf "goal at 99 Hz: under 1 %% of the machine: %s (%.3f %%); under 64 MiB: %s (%.1f MiB)\n",
			s < 1 ? "met" : "NOT MET", s, r < 64 ? "met" : "NOT MET", r }'
fi
[[ -z ${KEEP:-} ]] || say "outputs and timings kept in $W"
