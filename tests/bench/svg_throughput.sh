#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: how fast `flamed svg` turns a large folded-stacks file into a
# flame graph, against the goal of 100 MB/s on one core and, when it is on
# PATH, against FlameGraph's flamegraph.pl (about 6 MB/s on this kind of
# machine).
#
#   tests/bench/svg_throughput.sh [--keep DIR] [--runs N] [--mb MB] [--stacks N] [--seed N]
#
# The input is made by tests/bench/gen_folded.py: at least MB megabytes
# (default 50; MB = 10^6 bytes throughout) and at least N distinct stacks
# (default 200000; with both defaults it is about 127 MB, the stacks being
# 24 frames deep on average) shaped like a whole-machine profile, once sorted (as
# stackcollapse writes it) and once shuffled (the reader's worst case). Each
# is drawn RUNS times (default 3) with `flamed svg FILE -o OUT`, from the page
# cache, under GNU time -v; printed: input size, distinct stacks, best and
# median wall seconds, CPU seconds, MB/s, peak RSS, SVG size and the frames
# drawn (`<g class="f" ...>` elements; merged boxes, `<g class="f m" ...>`, apart).
#
# The data lives in a temporary directory removed at the end, or in DIR with
# --keep DIR, where it is reused by later runs with the same parameters.
# Environment: FLAMED (build/flamed), RUNS, BENCH_MB, BENCH_STACKS, SEED (1),
# FG_RUNS (runs of flamegraph.pl, default 1: it is slow), FLAMEGRAPH (path of
# flamegraph.pl; default: the one on PATH), PIN_CPU (a CPU number: run every
# tool under taskset -c PIN_CPU), PYTHON (python3). Needs python3; without
# /usr/bin/time the peak RSS is unknown. Exits 77 when python3 is missing or
# flamed has no svg command yet. Not part of ctest: it takes about 20 s here,
# and flamegraph.pl adds about 20 s per run and input.
set -euo pipefail
export LC_ALL=C # byte order for sort, '.' as the decimal point everywhere

SRCDIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
FLAMED=${FLAMED:-$SRCDIR/build/flamed}
RUNS=${RUNS:-3}
FG_RUNS=${FG_RUNS:-1}
MB=${BENCH_MB:-50}
STACKS=${BENCH_STACKS:-200000}
SEED=${SEED:-1}
PYTHON=${PYTHON:-python3}
GEN=$SRCDIR/tests/bench/gen_folded.py
GOAL_MBPS=100 # flamed's goal, one core
FG_MBPS=6     # what flamegraph.pl does on this kind of machine
KEEP=

# shellcheck source=tests/bench/lib.sh
source "$SRCDIR/tests/bench/lib.sh"
usage() {
	sed -n 's/^#   //p' "${BASH_SOURCE[0]}" | head -n 1
	exit 0
}

while (($#)); do
	case $1 in
	--keep) KEEP=${2:?--keep needs a directory} && shift ;;
	--runs) RUNS=${2:?} && shift ;;
	--mb) MB=${2:?} && shift ;;
	--stacks) STACKS=${2:?} && shift ;;
	--seed) SEED=${2:?} && shift ;;
	-h | --help) usage ;;
	*) die "unknown argument '$1' (usage: $(sed -n 's/^#   //p' "${BASH_SOURCE[0]}" | head -n 1))" ;;
	esac
	shift
done
for v in RUNS FG_RUNS STACKS SEED; do
	[[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number, not '${!v}'"
done
[[ $MB =~ ^[0-9]+([.][0-9]+)?$ ]] || die "MB must be a number, not '$MB'"
((RUNS > 0)) || die "RUNS must be at least 1"

command -v "$PYTHON" >/dev/null 2>&1 || skip "needs $PYTHON to generate the input"
[[ -x $FLAMED ]] || die "no flamed binary at $FLAMED (build it first: cmake -S . -B build && cmake --build build)"
FLAMED=$(readlink -f "$FLAMED")
GNU_TIME=
if /usr/bin/time -v true >/dev/null 2>&1; then
	GNU_TIME=/usr/bin/time
else
	say "no GNU time at /usr/bin/time (apt-get install time): timing with bash's time, peak RSS unknown"
fi
FLAMEGRAPH=${FLAMEGRAPH:-$(command -v flamegraph.pl || true)}
PIN=()
if [[ -n ${PIN_CPU:-} ]]; then
	command -v taskset >/dev/null 2>&1 || die "PIN_CPU needs taskset (util-linux)"
	PIN=(taskset -c "$PIN_CPU")
fi

bench_workdir
[[ -n $KEEP ]] || trap 'rm -rf "$W"' EXIT

# Does this flamed have `svg`? Asked with a two-line input, so that a
# command that exists but fails is told apart from one not written yet.
printf 'a;b;c 1\na;b 2\n' >"$W/probe.folded"
if ! "$FLAMED" svg "$W/probe.folded" -o "$W/probe.svg" >"$W/probe.out" 2>&1; then
	grep -q "unknown command" "$W/probe.out" &&
		skip "$FLAMED has no svg command yet ($(head -n 1 "$W/probe.out"))"
	die "flamed svg fails on a two-line input: $(head -n 5 "$W/probe.out")"
fi
grep -q '</svg>' "$W/probe.svg" 2>/dev/null || die "flamed svg wrote no SVG for a two-line input"

# The input: sorted and shuffled, the same lines; kept ones reused when made
# with the same parameters by the same generator and Python.
params="mb=$MB stacks=$STACKS seed=$SEED gen=$(md5sum <"$GEN" | cut -c1-12) $("$PYTHON" -V 2>&1)"
if [[ -s $W/sorted.folded && -s $W/shuffled.folded && $(cat "$W/params" 2>/dev/null) == "$params" ]]; then
	say "reusing the input in $W"
else
	rm -f "$W/params"
	for v in sorted shuffled; do
		say "generating the $v input ($MB MB / $STACKS stacks at least, seed $SEED)"
		flag=()
		[[ $v == shuffled ]] && flag=(--shuffle)
		t0=$EPOCHREALTIME
		"$PYTHON" "$GEN" --mb "$MB" --stacks "$STACKS" --seed "$SEED" "${flag[@]}" \
			-o "$W/$v.folded" 2>"$W/gen-$v.log" || die "gen_folded.py failed: $(tail -n 3 "$W/gen-$v.log")"
		say "$(cat "$W/gen-$v.log") in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f s", b - a }')"
	done
	echo "$params" >"$W/params"
fi

declare -A BYTES NSTACKS NROOTS
for v in sorted shuffled; do
	f=$W/$v.folded
	BYTES[$v]=$(stat -c %s "$f")
	# The stack is the line less its last field, the count (frames may hold spaces).
	NSTACKS[$v]=$(sed 's/ [^ ]*$//' "$f" | sort -u | wc -l)
	NROOTS[$v]=$(cut -d';' -f1 "$f" | sort -u | wc -l)
done
[[ ${BYTES[sorted]} == "${BYTES[shuffled]}" && ${NSTACKS[sorted]} == "${NSTACKS[shuffled]}" ]] ||
	die "the sorted and shuffled inputs differ (${BYTES[sorted]} / ${BYTES[shuffled]} bytes)"

# timed TIMES OUT CMD...: runs CMD with its stdout in OUT and appends
# "wall_s cpu_s maxrss_kb" to TIMES (maxrss "?" without GNU time).
timed() {
	local times=$1 out=$2 t0 t1 rc=0 cpu rss
	shift 2
	if [[ -n $GNU_TIME ]]; then
		t0=$EPOCHREALTIME
		"$GNU_TIME" -v -o "$times.v" "${PIN[@]}" "$@" >"$out" 2>"$times.err" || rc=$?
		t1=$EPOCHREALTIME
		((rc == 0)) || die "$* failed (exit $rc): $(tail -n 5 "$times.err")"
		cpu=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { print u + s }' "$times.v")
		rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$times.v")
	else
		local TIMEFORMAT='%U %S'
		t0=$EPOCHREALTIME
		{ time "${PIN[@]}" "$@" >"$out" 2>"$times.err"; } 2>"$times.v" || rc=$?
		t1=$EPOCHREALTIME
		((rc == 0)) || die "$* failed (exit $rc): $(tail -n 5 "$times.err")"
		cpu=$(awk '{ c = $1 + $2 } END { print c }' "$times.v")
		rss='?'
	fi
	awk -v a="$t0" -v b="$t1" -v c="$cpu" -v r="$rss" 'BEGIN { printf "%.3f %.2f %s\n", b - a, c, r }' >>"$times"
}

# summary TIMES: "best_s median_s median_cpu_s maxrss_mib" over the runs.
summary() {
	local best med cpu rss
	best=$(sort -n -k1,1 "$1" | awk 'NR == 1 { print $1 }')
	med=$(sort -n -k1,1 "$1" | awk '{ w[NR] = $1 } END { print NR % 2 ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2 }')
	cpu=$(sort -n -k2,2 "$1" | awk '{ c[NR] = $2 } END { print NR % 2 ? c[(NR + 1) / 2] : (c[NR / 2] + c[NR / 2 + 1]) / 2 }')
	rss=$(awk '$3 == "?" { u = 1 } $3 > r { r = $3 } END { if (u) print "?"; else printf "%.1f\n", r / 1024 }' "$1")
	echo "$best $med $cpu $rss"
}

count() { grep -o -- "$1" "$2" | wc -l; }

declare -A RES # tool,input -> "best med cpu rss svg_bytes frames merged"
for v in sorted shuffled; do
	t=$W/flamed-$v.times
	rm -f "$t"
	for ((i = 1; i <= RUNS; i++)); do
		say "flamed svg, $v input, run $i/$RUNS"
		timed "$t" /dev/null "$FLAMED" svg "$W/$v.folded" -o "$W/flamed-$v.svg"
	done
	s=$W/flamed-$v.svg
	tail -c 64 "$s" | grep -q '</svg>' || die "flamed svg wrote an incomplete SVG for the $v input: $s"
	RES[flamed,$v]="$(summary "$t") $(stat -c %s "$s") $(count '<g class="f" ' "$s") $(count '<g class="f m" ' "$s")"
done
if [[ -n $FLAMEGRAPH ]]; then
	for v in sorted shuffled; do
		t=$W/fg-$v.times
		rm -f "$t"
		for ((i = 1; i <= FG_RUNS; i++)); do
			say "flamegraph.pl, $v input, run $i/$FG_RUNS"
			timed "$t" "$W/fg-$v.svg" "$FLAMEGRAPH" "$W/$v.folded"
		done
		s=$W/fg-$v.svg
		# flamegraph.pl draws a frame as <g><title>NAME (N samples, P%)</title><rect/>...</g>, merges none.
		RES[fg,$v]="$(summary "$t") $(stat -c %s "$s") $(count '<title>' "$s") 0"
	done
fi

echo
echo "Input: gen_folded.py --mb $MB --stacks $STACKS --seed $SEED: ${NSTACKS[sorted]} distinct stacks," \
	"${NROOTS[sorted]} roots, $(awk -v b="${BYTES[sorted]}" 'BEGIN { printf "%.1f", b / 1e6 }') MB, in the page cache."
how="flamed: $FLAMED, $RUNS runs each"
[[ -z $FLAMEGRAPH ]] || how+="; flamegraph.pl: $FLAMEGRAPH, $FG_RUNS run(s) each"
[[ -z ${PIN_CPU:-} ]] || how+="; pinned to CPU $PIN_CPU"
echo "$how; $(nproc) CPUs. MB = 10^6 bytes; MB/s from the best run."
echo
echo "| tool | input | MB | stacks | best s | median s | CPU s | MB/s | MB/s (median) | peak RSS MiB | SVG MB | frames | merged boxes |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for tool in flamed fg; do
	for v in sorted shuffled; do
		[[ -n ${RES[$tool,$v]:-} ]] || continue
		read -r best med cpu rss svg frames merged <<<"${RES[$tool,$v]}"
		name="flamed svg"
		[[ $tool == fg ]] && name=flamegraph.pl
		awk -v n="$name" -v v="$v" -v b="${BYTES[$v]}" -v st="${NSTACKS[$v]}" -v best="$best" -v med="$med" \
			-v cpu="$cpu" -v rss="$rss" -v svg="$svg" -v fr="$frames" -v m="$merged" 'BEGIN {
			printf "| %s | %s | %.1f | %d | %.3f | %.3f | %.2f | %.1f | %.1f | %s | %.1f | %d | %d |\n",
				n, v, b / 1e6, st, best, med, cpu, b / 1e6 / best, b / 1e6 / med, rss, svg / 1e6, fr, m }'
	done
done
[[ -n $GNU_TIME ]] || echo "Peak RSS unknown: no GNU time at /usr/bin/time (apt-get install time); timed with bash's time."
echo
echo "Goal: >= $GOAL_MBPS MB/s on one core."
for v in sorted shuffled; do
	read -r best med cpu _ <<<"${RES[flamed,$v]}"
	# More CPU than wall time means more than one core: count MB per CPU second then.
	awk -v v="$v" -v b="${BYTES[$v]}" -v best="$best" -v med="$med" -v cpu="$cpu" -v goal="$GOAL_MBPS" 'BEGIN {
		mbps = b / 1e6 / best; how = "best run"
		if (cpu > 1.1 * med) { mbps = b / 1e6 / cpu; how = "per CPU second: it used " sprintf("%.1f", cpu / med) " cores" }
		printf "flamed svg, %s input: %.1f MB/s (%s) = %.2fx the goal: %s\n", v, mbps, how,
			mbps / goal, (mbps >= goal ? "met" : "NOT met") }'
done
if [[ -n $FLAMEGRAPH ]]; then
	for v in sorted shuffled; do
		read -r fbest _ <<<"${RES[flamed,$v]}"
		read -r gbest _ <<<"${RES[fg,$v]}"
		awk -v v="$v" -v b="${BYTES[$v]}" -v f="$fbest" -v g="$gbest" 'BEGIN {
			printf "%s input: flamegraph.pl %.1f MB/s; flamed svg / flamegraph.pl = %.1fx\n", v, b / 1e6 / g, g / f }'
	done
else
	echo "flamegraph.pl: not installed (not on PATH; set FLAMEGRAPH=/path/to/flamegraph.pl), so not measured."
	for v in sorted shuffled; do
		read -r fbest _ <<<"${RES[flamed,$v]}"
		awk -v v="$v" -v b="${BYTES[$v]}" -v f="$fbest" -v r="$FG_MBPS" 'BEGIN {
			printf "%s input: against the ~%d MB/s flamegraph.pl does on this kind of machine, flamed svg would be ~%.0fx (estimate)\n",
				v, r, b / 1e6 / f / r }'
	done
fi
[[ -z $KEEP ]] || say "input, SVGs and timings kept in $W"
