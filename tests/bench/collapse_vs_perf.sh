#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: how fast `flamed collapse` folds `perf script` text, against the
# goal of 300 MB/s on one core and stackcollapse-perf.pl's ~30 MB/s, and what
# it adds to `perf script` when piped after it.
#
#   tests/bench/collapse_vs_perf.sh [DURATION]
#
# 1. Input: the whole machine (perf record -a -F FREQ, frame-pointer stacks
#    by default) for DURATION seconds (default 30) while a parallel (make -j2)
#    build of flamed runs in a loop (from a copy of the source in a temporary
#    directory, as in record_vs_perf.sh), then `perf script` of it: one.txt.
#    big.txt is as many copies of one.txt, end to end, as make it at least
#    SIZE_MB megabytes (MB = 10^6 bytes throughout). Copies repeat the same
#    stacks: big.txt measures parsing and counting, not how the tool copes
#    with more distinct stacks (their number is printed).
# 2. `flamed collapse big.txt > /dev/null` on one core (taskset -c PIN_CPU),
#    RUNS times (default 3), from the page cache, under GNU time -v: best
#    wall seconds, CPU seconds and peak RSS of that run, MB/s; the same with
#    --all, with --pid, and reading a pipe (cat big.txt | flamed collapse).
#    perf script's default fields have no PID: --pid roots every stack at
#    COMM-? then (PERF_SCRIPT_ARGS="-F +pid" gives it PIDs, and more stacks).
#    stackcollapse-perf.pl is measured too when it is on PATH (or named by
#    STACKCOLLAPSE); otherwise its ~30 MB/s, the figure the issue gives, is
#    used for the ratio (it is not installed on the development VM, and this
#    script never downloads it).
# 3. `perf script -i perf.data > /dev/null` against
#    `perf script -i perf.data | flamed collapse > /dev/null`, RUNS times
#    each: best wall seconds (and CPU of the pipeline's processes that were
#    waited for), so what flamed collapse adds to perf script, in percent;
#    free CPUs (the pipeline can use two) and all on CPU PIN_CPU.
# 4. Sanity of every output: not empty; every line "STACK COUNT"
#    (^.+ [0-9]+$); stacks distinct; the sum of the counts equal to the sum of
#    the sample periods or to the number of samples in the input (idle
#    samples, swapper's, included or not); big.txt folding the same from
#    stdin as from the file, and to the stacks of one.txt, each count times
#    the copies; one.txt folded as the specification's reference
#    implementation (tests/fixtures/perfscript/reference.py) folds it, with
#    each option set of step 2.
# A summary table ends the output. Exit status: 0; 1 when a check fails or
# something goes wrong; 77 (skip) without root, perf, taskset or `flamed
# collapse`. Without GNU time (/usr/bin/time) it times with bash's time and
# the peak RSS is unknown; without python3 the reference comparison is left out.
#
# Environment: DURATION, FREQ (999), CALL_GRAPH (fp, or dwarf: perf's
# --call-graph dwarf; then perf script takes minutes, most of them in the
# addr2line processes that find inlined functions, unless PERF_SCRIPT_ARGS
# is --no-inline), EVENT (cpu-clock), PERF_SCRIPT_ARGS (more options for
# every perf script), SIZE_MB (150), RUNS (3), PIN_CPU (0), FLAMED
# (build/flamed), BENCH_SRC (the CMake project built as the workload;
# default: the repository's last commit, from git archive, as a tree being
# edited may not build; outside git, the tree), STACKCOLLAPSE (path of
# stackcollapse-perf.pl), PYTHON (python3), REFERENCE (reference.py),
# GNU_TIME (/usr/bin/time; empty: bash's time), KEEP (a directory: the
# recording, the texts and every output are kept there, and a later run with
# the same DURATION, FREQ, CALL_GRAPH, EVENT and PERF_SCRIPT_ARGS reuses its
# recording instead of making a new one). Not part of ctest: it takes about
# 1.5 minutes here (20 s reusing a KEEP recording) and wants a quiet machine.
set -euo pipefail
export LC_ALL=C # bytewise sort, '.' as the decimal point everywhere

T_START=$EPOCHREALTIME
SRCDIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
DURATION=${1:-${DURATION:-30}}
FREQ=${FREQ:-999}
CALL_GRAPH=${CALL_GRAPH:-fp}
EVENT=${EVENT:-cpu-clock}
PERF_SCRIPT_ARGS=${PERF_SCRIPT_ARGS:-}
SIZE_MB=${SIZE_MB:-150}
RUNS=${RUNS:-3}
PIN_CPU=${PIN_CPU:-0}
FLAMED=${FLAMED:-$SRCDIR/build/flamed}
BENCH_SRC=${BENCH_SRC:-}
KEEP=${KEEP:-}
GOAL_MBPS=300 # flamed collapse's goal, one core (the issue)
SC_MBPS=30    # stackcollapse-perf.pl on this kind of machine (the issue)
WARMUP=2      # seconds of workload before the recording starts

# shellcheck source=tests/bench/lib.sh
source "$SRCDIR/tests/bench/lib.sh"

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
	sed -n 's/^#   //p' "${BASH_SOURCE[0]}" | head -n 1
	exit 0
fi
for v in DURATION FREQ RUNS PIN_CPU; do
	[[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number, not '${!v}'"
done
((DURATION > 0 && FREQ > 0 && RUNS > 0)) || die "DURATION, FREQ and RUNS must be at least 1"
[[ $SIZE_MB =~ ^[0-9]+([.][0-9]+)?$ ]] || die "SIZE_MB must be a number, not '$SIZE_MB'"
case $CALL_GRAPH in
fp) CG=(-g) ;;
dwarf) CG=(--call-graph dwarf) ;;
*) die "CALL_GRAPH must be fp or dwarf, not '$CALL_GRAPH'" ;;
esac
((PIN_CPU < $(nproc))) || die "PIN_CPU $PIN_CPU: this machine has $(nproc) CPUs"

[[ $(id -u) -eq 0 ]] || skip "needs root (perf records every CPU)"
perf version >/dev/null 2>&1 || skip "needs perf (Debian: apt-get install linux-perf)"
command -v taskset >/dev/null 2>&1 || skip "needs taskset (util-linux)"
[[ -x $FLAMED ]] || die "no flamed binary at $FLAMED (build it first: cmake -S . -B build && cmake --build build)"
FLAMED=$(readlink -f "$FLAMED")
GNU_TIME=${GNU_TIME-/usr/bin/time}
if [[ -z $GNU_TIME ]] || ! "$GNU_TIME" -v true >/dev/null 2>&1; then
	say "no GNU time${GNU_TIME:+ at $GNU_TIME} (apt-get install time): timing with bash's time, peak RSS unknown"
	GNU_TIME=
fi
STACKCOLLAPSE=${STACKCOLLAPSE:-$(command -v stackcollapse-perf.pl || true)}
PYTHON=${PYTHON:-python3}
REFERENCE=${REFERENCE:-$SRCDIR/tests/fixtures/perfscript/reference.py}
PIN=(taskset -c "$PIN_CPU")

bench_workdir
WL= # the workload's scratch directory
WPID=
cleanup() {
	stop_workload
	[[ -z $WL ]] || rm -rf "$WL"
	[[ -n $KEEP ]] || rm -rf "$W"
}
trap cleanup EXIT

# Does this flamed have `collapse`? Asked with a two-sample input, so that a
# command that exists but fails is told apart from one not written yet.
printf '%s\n' 'sh 1 [000] 1.000001:    1001001 cpu-clock: ' $'\tffffffff81000001 f+0x1 ([kernel.kallsyms])' \
	$'\t1001 main+0x1 (/bin/sh)' '' 'sh 1 [001] 1.000002:    1001001 cpu-clock: ' \
	$'\t1001 main+0x1 (/bin/sh)' '' >"$W/probe.txt"
if ! "$FLAMED" collapse "$W/probe.txt" >"$W/probe.out" 2>&1; then
	grep -q "unknown command" "$W/probe.out" &&
		skip "$FLAMED has no collapse command yet ($(head -n 1 "$W/probe.out"))"
	die "flamed collapse fails on a two-sample input: $(head -n 5 "$W/probe.out")"
fi
grep -qE '^.+ [0-9]+$' "$W/probe.out" || die "flamed collapse folded nothing of a two-sample input: $(head -n 5 "$W/probe.out")"

# --- 1. The input -----------------------------------------------------------

# shellcheck disable=SC2206 # PERF_SCRIPT_ARGS: words
PSA=($PERF_SCRIPT_ARGS)
params="duration=$DURATION freq=$FREQ cg=$CALL_GRAPH event=$EVENT script=${PSA[*]} $(perf version 2>&1) $(uname -r)"
if [[ -s $W/perf.data && -s $W/one.txt && $(cat "$W/params" 2>/dev/null) == "$params" ]]; then
	say "reusing the recording in $W"
else
	rm -f "$W/params"
	WL=$(mktemp -d "${TMPDIR:-/tmp}/flamed-bench-wl.XXXXXX")
	src=$BENCH_SRC
	if [[ -z $src ]] && git -C "$SRCDIR" rev-parse --verify -q HEAD >/dev/null 2>&1; then
		# The last commit: a working tree being edited may not build.
		src=$WL/head
		mkdir -p "$src"
		git -C "$SRCDIR" archive HEAD | tar -C "$src" -xf - || die "git archive HEAD of $SRCDIR failed"
	fi
	prepare_make_workload "${src:-$SRCDIR}" "$WL"
	what=$(basename "$(readlink -f "${BENCH_SRC:-$SRCDIR}")")
	[[ $src != "$WL/head" ]] || what="$what at $(git -C "$SRCDIR" rev-parse --short HEAD)"
	echo "$what" >"$W/workload"
	say "recording the whole machine at $FREQ Hz ($CALL_GRAPH stacks) for $DURATION s, make -j2 running"
	start_make_workload "$WL"
	sleep "$WARMUP"
	perf record -q -e "$EVENT" -a -F "$FREQ" "${CG[@]}" -o "$W/perf.data" -- sleep "$DURATION" \
		2>"$W/record.err" || die "perf record failed: $(tail -n 3 "$W/record.err")"
	stop_workload
	say "perf script"
	perf script "${PSA[@]}" -i "$W/perf.data" >"$W/one.txt" 2>"$W/script.err" ||
		die "perf script failed: $(tail -n 3 "$W/script.err")"
	[[ -s $W/one.txt ]] || die "perf script wrote nothing: $(tail -n 3 "$W/script.err")"
	echo "$params" >"$W/params"
	rm -rf "$WL"
	WL=
fi

ONE_BYTES=$(stat -c %s "$W/one.txt")
COPIES=$(awk -v s="$SIZE_MB" -v b="$ONE_BYTES" 'BEGIN { n = int(s * 1e6 / b); if (n * b < s * 1e6) n++; print (n < 1 ? 1 : n) }')
# Samples are separated by an empty line; one.txt ends with one, or copies get
# one between them.
sep=
[[ $(tail -c 2 "$W/one.txt" | od -An -c | tr -d ' ') == '\n\n' ]] || sep=$'\n'
say "big.txt: $COPIES copies of one.txt ($ONE_BYTES bytes)"
for ((i = 0; i < COPIES; i++)); do
	cat "$W/one.txt"
	printf '%s' "$sep"
done >"$W/big.txt"
BIG_BYTES=$(stat -c %s "$W/big.txt")

# What one.txt holds: samples (lines at the left margin: "COMM TID [CPU]
# TIME: PERIOD EVENT:"), their periods, and the same for the idle task's
# (swapper's) samples; events seen.
read -r N_SAMPLES N_PERIODS N_IDLE IDLE_PERIODS EVENTS < <(awk '
	/^[^ \t]/ {
		n++; p = ($(NF - 1) ~ /^[0-9]+$/) ? $(NF - 1) : 1; per += p
		if ($1 == "swapper") { idle++; iper += p }
		if (!($NF in ev)) { ev[$NF] = 1; evs = evs (evs == "" ? "" : ",") $NF }
	}
	END { printf "%d %.0f %d %.0f %s\n", n, per, idle, iper, evs }' "$W/one.txt")
((N_SAMPLES > 0)) || die "one.txt holds no sample"

# --- 2. Throughput on one core -----------------------------------------------

# timed TIMES PIPE_IN CMD...: runs CMD with its output to /dev/null (its
# stdin: PIPE_IN through cat, or /dev/null when PIPE_IN is empty) and
# appends "wall_s cpu_s maxrss_kb" to TIMES (maxrss "?" without GNU time).
# CPU and RSS are CMD's and its waited-for descendants' (not cat's).
timed() {
	local times=$1 in=$2 t0 t1 rc=0 cpu rss
	shift 2
	local TIMEFORMAT='%U %S'
	t0=$EPOCHREALTIME
	if [[ -n $GNU_TIME && -n $in ]]; then
		# shellcheck disable=SC2002 # a pipe, not a file, is what is measured
		cat "$in" | "$GNU_TIME" -v -o "$times.v" "$@" >/dev/null 2>"$times.err" || rc=$?
	elif [[ -n $GNU_TIME ]]; then
		"$GNU_TIME" -v -o "$times.v" "$@" </dev/null >/dev/null 2>"$times.err" || rc=$?
	elif [[ -n $in ]]; then
		# shellcheck disable=SC2002 # a pipe, not a file, is what is measured
		cat "$in" | { time "$@" >/dev/null 2>"$times.err"; } 2>"$times.v" || rc=$?
	else
		{ time "$@" </dev/null >/dev/null 2>"$times.err"; } 2>"$times.v" || rc=$?
	fi
	t1=$EPOCHREALTIME
	((rc == 0)) || die "$* failed (exit $rc): $(tail -n 5 "$times.err")"
	if [[ -n $GNU_TIME ]]; then
		cpu=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { print u + s }' "$times.v")
		rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$times.v")
	else
		cpu=$(awk '{ c = $1 + $2 } END { print c }' "$times.v")
		rss='?'
	fi
	awk -v a="$t0" -v b="$t1" -v c="$cpu" -v r="$rss" 'BEGIN { printf "%.3f %.2f %s\n", b - a, c, r }' >>"$times"
}

# best TIMES: "wall_s cpu_s rss_mib" of the fastest run (the peak RSS: of all runs).
best() {
	local rss
	rss=$(awk '$3 == "?" { u = 1 } $3 > r { r = $3 } END { if (u) print "?"; else printf "%.1f\n", r / 1024 }' "$1")
	echo "$(sort -n -k1,1 "$1" | awk 'NR == 1 { print $1, $2 }') $rss"
}

# Modes of step 2: name, the input through a pipe (1) or as a file (0), options.
MODES=("default|0|" "--all|0|--all" "--pid|0|--pid" "default, from a pipe|1|")
declare -A RES # mode -> "wall cpu rss"
for m in "${MODES[@]}"; do
	IFS='|' read -r name pipe opts <<<"$m"
	# shellcheck disable=SC2206 # opts: words
	args=($opts)
	t=$W/collapse-${name//[^a-z]/}.times
	rm -f "$t"
	for ((i = 1; i <= RUNS; i++)); do
		say "flamed collapse $name, run $i/$RUNS (CPU $PIN_CPU)"
		if ((pipe)); then
			timed "$t" "$W/big.txt" "${PIN[@]}" "$FLAMED" collapse "${args[@]}"
		else
			timed "$t" "" "${PIN[@]}" "$FLAMED" collapse "${args[@]}" "$W/big.txt"
		fi
	done
	RES[$name]=$(best "$t")
done
if [[ -n $STACKCOLLAPSE ]]; then
	t=$W/stackcollapse.times
	rm -f "$t"
	for ((i = 1; i <= RUNS; i++)); do
		say "stackcollapse-perf.pl, run $i/$RUNS (CPU $PIN_CPU)"
		timed "$t" "" "${PIN[@]}" "$STACKCOLLAPSE" "$W/big.txt"
	done
	RES[stackcollapse-perf.pl]=$(best "$t")
fi

# --- 3. What it adds to perf script -----------------------------------------

declare -A PS # alone|pipe,free|pinned -> "wall cpu rss"
for where in free pinned; do
	pin=()
	[[ $where == free ]] || pin=("${PIN[@]}")
	for how in alone pipe; do
		t=$W/script-$how-$where.times
		rm -f "$t"
		for ((i = 1; i <= RUNS; i++)); do
			say "perf script$([[ $how == pipe ]] && echo " | flamed collapse"), run $i/$RUNS ($([[ $where == free ]] && echo "any CPU" || echo "CPU $PIN_CPU"))"
			if [[ $how == alone ]]; then
				# shellcheck disable=SC2016 # expanded by the inner bash
				timed "$t" "" "${pin[@]}" bash -c 'perf script "${@:2}" -i "$1" 2>/dev/null' _ "$W/perf.data" "${PSA[@]}"
			else
				# shellcheck disable=SC2016 # expanded by the inner bash
				timed "$t" "" "${pin[@]}" bash -c 'set -o pipefail; perf script "${@:3}" -i "$1" 2>/dev/null | "$2" collapse' \
					_ "$W/perf.data" "$FLAMED" "${PSA[@]}"
			fi
		done
		PS[$how,$where]=$(best "$t")
	done
done

# --- 4. Sanity ---------------------------------------------------------------

FAILED=0
fail() {
	echo "FAIL: $*"
	FAILED=1
}

# check NAME FILE: the checks of one output; sets LINES, DISTINCT and SUM.
check() {
	local name=$1 f=$2 bad
	LINES=0 DISTINCT=0 SUM=0
	if [[ ! -s $f ]]; then
		fail "flamed collapse $name wrote nothing"
		return 0
	fi
	bad=$(grep -cvE '^.+ [0-9]+$' "$f" || true)
	((bad == 0)) || fail "flamed collapse $name: $bad lines not 'STACK COUNT', such as: $(grep -vE '^.+ [0-9]+$' "$f" | head -n 3)"
	LINES=$(wc -l <"$f")
	DISTINCT=$(sed 's/ [0-9]*$//' "$f" | sort -u | wc -l)
	((DISTINCT == LINES)) || fail "flamed collapse $name: $((LINES - DISTINCT)) stacks on more than one line"
	SUM=$(awk '{ s += $NF } END { printf "%.0f\n", s }' "$f")
}

# What a sum of counts is, for COPIES copies of one.txt.
sum_is() {
	local sum=$1 copies=$2
	awk -v s="$sum" -v c="$copies" -v n="$N_SAMPLES" -v p="$N_PERIODS" -v i="$N_IDLE" -v ip="$IDLE_PERIODS" 'BEGIN {
		if (s == c * p) print "the sum of the periods"
		else if (s == c * n) print "the number of samples"
		else if (s == c * (p - ip)) print "the sum of the non-idle periods"
		else if (s == c * (n - i)) print "the number of non-idle samples"
		else print "?" }'
}

declare -A CHK # mode -> "lines distinct sum what"
for m in "${MODES[@]}"; do
	IFS='|' read -r name pipe opts <<<"$m"
	((pipe == 0)) || continue
	# shellcheck disable=SC2206 # opts: words
	args=($opts)
	o=$W/big-${name//[^a-z]/}.folded
	"$FLAMED" collapse "${args[@]}" "$W/big.txt" >"$o" 2>"$o.err" || fail "flamed collapse $name failed: $(tail -n 3 "$o.err")"
	check "$name" "$o"
	what=$(sum_is "$SUM" "$COPIES")
	[[ $what != "?" ]] || fail "flamed collapse $name: the counts sum to $SUM, neither the samples" \
		"($((COPIES * N_SAMPLES)), $((COPIES * (N_SAMPLES - N_IDLE))) non-idle) nor their periods" \
		"($(awk -v c="$COPIES" -v p="$N_PERIODS" 'BEGIN { printf "%.0f", c * p }'): $(awk -v c="$COPIES" -v p="$N_PERIODS" \
			-v s="$SUM" 'BEGIN { printf "%+.0f", s - c * p }') off)"
	CHK[$name]="$LINES $DISTINCT $SUM $what"
done
# The default output from a pipe is the file's; one.txt folds to the same
# stacks, with counts COPIES times smaller.
# shellcheck disable=SC2002 # a pipe, as in the timed runs
cat "$W/big.txt" | "$FLAMED" collapse >"$W/big-pipe.folded" 2>/dev/null || fail "flamed collapse from a pipe failed"
cmp -s "$W/big-pipe.folded" "$W/big-default.folded" || fail "flamed collapse: big.txt from stdin and as a file fold differently"
perf script "${PSA[@]}" -i "$W/perf.data" 2>/dev/null | "$FLAMED" collapse >"$W/one.folded" 2>"$W/one.folded.err" ||
	fail "perf script | flamed collapse failed: $(tail -n 3 "$W/one.folded.err")"
check "of one.txt" "$W/one.folded"
ONE_DISTINCT=$DISTINCT ONE_SUM=$SUM
read -r _ BIG_DISTINCT BIG_SUM _ <<<"${CHK[default]}"
((ONE_DISTINCT == BIG_DISTINCT && ONE_SUM * COPIES == BIG_SUM)) ||
	fail "one.txt folds to $ONE_DISTINCT stacks summing to $ONE_SUM, $COPIES copies of it to $BIG_DISTINCT summing to $BIG_SUM"
scaled=$(awk -v c="$COPIES" '{ n = $NF; sub(/ [0-9]+$/, ""); printf "%s %.0f\n", $0, n * c }' "$W/one.folded" | sort)
[[ $scaled == "$(sort "$W/big-default.folded")" ]] ||
	fail "big.txt does not fold to the stacks of one.txt with counts times $COPIES"
# The specification's reference implementation (Python, slow: one.txt only)
# folds one.txt as flamed does, with each option set of step 2.
REF_DONE=
if [[ -f $REFERENCE ]] && command -v "$PYTHON" >/dev/null 2>&1; then
	for m in "${MODES[@]}"; do
		IFS='|' read -r name pipe opts <<<"$m"
		((pipe == 0)) || continue
		# shellcheck disable=SC2206 # opts: words
		args=($opts)
		o=$W/one-${name//[^a-z]/}
		say "reference.py $name of one.txt"
		"$PYTHON" "$REFERENCE" "${args[@]}" "$W/one.txt" >"$o.ref" 2>"$o.ref.err" ||
			fail "reference.py $name failed: $(tail -n 3 "$o.ref.err")"
		"$FLAMED" collapse "${args[@]}" "$W/one.txt" >"$o.folded" 2>"$o.err" ||
			fail "flamed collapse $name of one.txt failed: $(tail -n 3 "$o.err")"
		if ! cmp -s "$o.ref" "$o.folded"; then
			fail "flamed collapse $name and reference.py fold one.txt differently" \
				"($(diff "$o.ref" "$o.folded" | grep -c '^<') of $(wc -l <"$o.ref") reference lines differ), such as" \
				"(< reference.py, > flamed):"$'\n'"$(diff "$o.ref" "$o.folded" | grep '^[<>]' | head -n 4 | cut -c1-300 | sed 's/^/  /')"
		fi
		REF_DONE+=" $name"
	done
else
	say "no $REFERENCE or no $PYTHON: flamed's output not compared with the reference implementation's"
fi

# --- Summary -----------------------------------------------------------------

mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1e6 }'; }
echo
echo "Input: perf record -e $EVENT -a -F $FREQ ${CG[*]}, $DURATION s, make -j2 of $(cat "$W/workload" 2>/dev/null) in a loop," \
	"$(nproc) CPUs; perf script${PSA[*]:+ ${PSA[*]}}: $(mb "$ONE_BYTES") MB, $N_SAMPLES samples ($N_IDLE idle; events $EVENTS), $ONE_DISTINCT distinct stacks."
echo "big.txt: $COPIES copies of it, $(mb "$BIG_BYTES") MB, $((COPIES * N_SAMPLES)) samples: the copies repeat the same" \
	"stacks ($BIG_DISTINCT distinct), so this measures parsing, not the growth in distinct stacks."
echo "flamed: $FLAMED; best of $RUNS runs, from the page cache, pinned to CPU $PIN_CPU; MB = 10^6 bytes."
echo
echo "| command (input big.txt) | best wall s | CPU s | MB/s | MB per CPU s | peak RSS MiB | output lines | distinct stacks | counts sum to |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
for m in "${MODES[@]}" "stackcollapse-perf.pl|0|"; do
	IFS='|' read -r name pipe opts <<<"$m"
	[[ -n ${RES[$name]:-} ]] || continue
	read -r wall cpu rss <<<"${RES[$name]}"
	lines=- distinct=- what=-
	[[ -z ${CHK[$name]:-} ]] || read -r lines distinct _ what <<<"${CHK[$name]}"
	[[ $name != "default, from a pipe" ]] || read -r lines distinct _ what <<<"${CHK[default]}"
	cmd="flamed collapse${opts:+ $opts}"
	[[ $name != "default, from a pipe" ]] || cmd="cat \\| flamed collapse"
	[[ $name != stackcollapse-perf.pl ]] || cmd=stackcollapse-perf.pl
	awk -v c="$cmd" -v b="$BIG_BYTES" -v w="$wall" -v cpu="$cpu" -v r="$rss" -v l="$lines" -v d="$distinct" -v s="$what" 'BEGIN {
		printf "| %s | %.3f | %.2f | %.1f | %s | %s | %s | %s | %s |\n", c, w, cpu, b / 1e6 / w,
			(cpu > 0 ? sprintf("%.1f", b / 1e6 / cpu) : "-"), r, l, d, s }'
done
[[ -n $GNU_TIME ]] || echo "Peak RSS unknown: no GNU time (apt-get install time); timed with bash's time."
echo
read -r wall _ <<<"${RES[default]}"
awk -v b="$BIG_BYTES" -v w="$wall" -v g="$GOAL_MBPS" 'BEGIN {
	m = b / 1e6 / w
	printf "Goal: >= %d MB/s on one core. flamed collapse: %.1f MB/s = %.2fx the goal: %s\n", g, m, m / g, (m >= g ? "met" : "NOT met") }'
if [[ -n ${RES[stackcollapse-perf.pl]:-} ]]; then
	read -r swall _ <<<"${RES[stackcollapse-perf.pl]}"
	awk -v b="$BIG_BYTES" -v w="$wall" -v s="$swall" 'BEGIN {
		printf "stackcollapse-perf.pl (%s): %.1f MB/s measured; flamed collapse / stackcollapse-perf.pl = %.1fx\n",
			ENVIRON["STACKCOLLAPSE"], b / 1e6 / s, s / w }'
else
	awk -v b="$BIG_BYTES" -v w="$wall" -v r="$SC_MBPS" 'BEGIN {
		printf "stackcollapse-perf.pl: not installed (not on PATH; set STACKCOLLAPSE=/path/to/it), not downloaded, not measured;\n"
		printf "against the ~%d MB/s the issue gives for it, flamed collapse is ~%.0fx (estimate)\n", r, b / 1e6 / w / r }'
fi
echo
echo "perf script of the recording ($(mb "$ONE_BYTES") MB of text), alone and piped into flamed collapse;" \
	"CPU: of the processes waited for (perf's addr2line orphans, if any, missed):"
echo
echo "| CPUs | perf script > /dev/null | perf script \\| flamed collapse > /dev/null | overhead (wall) | CPU s: alone / piped |"
echo "|---|---:|---:|---:|---:|"
for where in free pinned; do
	read -r aw ac _ <<<"${PS[alone,$where]}"
	read -r pw pc _ <<<"${PS[pipe,$where]}"
	label="any of $(nproc)"
	[[ $where == free ]] || label="CPU $PIN_CPU only"
	awk -v l="$label" -v aw="$aw" -v ac="$ac" -v pw="$pw" -v pc="$pc" 'BEGIN {
		printf "| %s | %.3f s | %.3f s | %+.1f%% | %.2f / %.2f |\n", l, aw, pw, (pw - aw) / aw * 100, ac, pc }'
done
echo
echo "Checks: outputs not empty, every line 'STACK COUNT', stacks distinct, counts summing to the input's samples or periods,"
echo "stdin = file, big.txt = $COPIES x one.txt, one.txt folded as by reference.py (${REF_DONE# }):" \
	"$( ((FAILED)) && echo "FAILED (above)" || echo "all passed")"
[[ -z $KEEP ]] || say "recording, texts, outputs and timings kept in $W"
say "took $(awk -v a="$T_START" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f s", b - a }')"
((FAILED == 0))
