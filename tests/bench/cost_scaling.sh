#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: does flamed's cost grow with the work (the samples), not with
# its square? A profiler that does, per sample, work that grows with the
# stacks or processes it has already met costs more per recorded second the
# longer it records; this script records the same workloads for longer and
# longer and prints the cost per recorded second.
#
#   tests/bench/cost_scaling.sh [SECTION...]
#
# Sections (default: all three, in this order; or SECTIONS="churn daemon mixed"):
#
#   churn   Workload: two stack_churn programs (tests/bench/stack_churn.c,
#           compiled here with cc: random call chains 5-40 deep through eight
#           functions, so new distinct stacks keep coming for as long as it
#           runs) and a `while :; do /bin/true; done` shell loop (processes
#           starting and exiting all the time). `flamed record -a -F 999 -d D
#           -v -o out.svg` for each D in DURATIONS, and `perf record -a -g -F
#           999 -e cpu-clock -- sleep D` + `perf script` for each D in
#           PERF_DURATIONS, REPEATS times, the two tools one after the other
#           at each D (which goes first alternates between repeats). Prints
#           per run the CPU seconds, CPU seconds per recorded second and peak
#           RSS, with flamed's own lines about samples, collisions, overflow,
#           processes and its own cost (-v); then the medians, each D's CPU per
#           recorded second over that of the shortest D (goal: flamed's
#           constant within 25 %), the same for flamed's recording phase alone
#           (its -v timing, without the set-up, symbolization and writing
#           that weigh more in short runs), and perf's CPU over flamed's.
#   daemon  The same workload under `flamed daemon` (a configuration of its
#           own: frequency 999, interval 10s, folded snapshots in the work
#           directory) for DAEMON_MINUTES. Every 10 s, the daemon's CPU
#           (utime + stime, /proc/PID/stat) and VmRSS / VmHWM (/proc/PID/status),
#           one line each; at the end the CPU per interval over the first,
#           middle and last fifth of the run, and VmRSS at the end of the
#           warm-up (2 minutes or a fifth of the run, the shorter) against
#           VmRSS at the end. Stopped with SIGTERM.
#   mixed   Workload: a `make -j2` loop building a copy of this repository
#           (BENCH_SRC), a CPU burner (`sh -c 'while :; do :; done'`) and `xz
#           -9 -T1` compressing random data (base64 of /dev/urandom) in a loop.
#           For each HZ in MIXED_FREQS, REPEATS times: `flamed record -a -F HZ
#           -d MIXED_DURATION -v -o out.svg` against perf record -g + perf
#           script + FlameGraph's stackcollapse-perf.pl and flamegraph.pl (when
#           FLAMEGRAPH_DIR has them; without them perf's side is understated,
#           and the output says so), and `flamed record --call-graph fp
#           --no-inline` beside them ("flamed fp": the job perf record -g
#           does, frame-pointer stacks and no inlined frames, where flamed's
#           default unwinds code without frame pointers from its CFI and adds
#           inlined frames). Prints the medians of CPU and peak RSS, and
#           perf's over flamed's.
#
# Every workload runs in a process group of its own, started 2 s before each
# measurement and killed after it (and on exit, by a trap; a watchdog in the
# group ends it by itself should this script be killed with SIGKILL). CPU =
# user + system seconds of the tool's whole process tree, post-processing
# included, and peak RSS = that of its largest process (tests/bench/treetime.py).
# Neither counts the kernel's work in the sampling interrupt, charged to the
# interrupted tasks: flamed's BPF programs (tests/bench/unwind_cost.sh
# measures them) and perf's stack walks.
#
# Environment: SECTIONS, DURATIONS ("30 120 600"), PERF_DURATIONS ("30 120";
# empty: flamed only), REPEATS (3), DAEMON_MINUTES (30), MIXED_FREQS ("99 999
# 4999"), MIXED_DURATION (30), FLAMED (build/flamed), FLAMEGRAPH_DIR (a
# FlameGraph checkout), BENCH_SRC (the CMake project the mixed section builds;
# this repository), CC (cc), PYTHON (python3), KEEP (a directory: keep the
# outputs, logs and timings there; else a temporary one is removed). Needs
# root, python3, perf (Debian: linux-perf) for churn and mixed, a C compiler
# for churn and daemon, and xz, make and cmake for mixed; exits 77 when one is
# missing. With the defaults it takes about two hours and writes a few GB
# (perf's files are removed after each run unless KEEP is set). Not part of
# ctest: it wants a quiet machine.
set -euo pipefail

SRCDIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
if (($# > 0)); then
	SECTIONS=$*
fi
SECTIONS=${SECTIONS:-churn daemon mixed}
DURATIONS=${DURATIONS:-30 120 600}
PERF_DURATIONS=${PERF_DURATIONS-30 120}
REPEATS=${REPEATS:-3}
DAEMON_MINUTES=${DAEMON_MINUTES:-30}
MIXED_FREQS=${MIXED_FREQS:-99 999 4999}
MIXED_DURATION=${MIXED_DURATION:-30}
FLAMED=${FLAMED:-$SRCDIR/build/flamed}
FLAMEGRAPH_DIR=${FLAMEGRAPH_DIR:-}
BENCH_SRC=${BENCH_SRC:-$SRCDIR}
CC=${CC:-cc}
CHURN_FREQ=999
DAEMON_FREQ=999
DAEMON_INTERVAL=10 # seconds: the daemon's snapshot interval, and how often it is looked at
WARMUP=2           # seconds of workload before each measurement starts
GRACE=1800         # seconds a workload may outlive its measurement before its watchdog ends it

# shellcheck source=tests/bench/lib.sh
source "$SRCDIR/tests/bench/lib.sh"

# in_list WORD LIST...: whether WORD is one of LIST.
in_list() {
	local w=$1 x
	shift
	for x; do
		[[ $x == "$w" ]] && return 0
	done
	return 1
}

# check_counts NAME VALUE...: dies unless every VALUE is a whole number > 0.
check_counts() {
	local name=$1 v
	shift
	for v; do
		[[ $v =~ ^[1-9][0-9]*$ ]] || die "$name must be whole numbers > 0, not '$v'"
	done
}

# shellcheck disable=SC2086 # the lists are split into their words on purpose
{
	for s in $SECTIONS; do
		in_list "$s" churn daemon mixed || die "no section '$s' (churn, daemon, mixed)"
	done
	check_counts DURATIONS $DURATIONS
	[[ -z $PERF_DURATIONS ]] || check_counts PERF_DURATIONS $PERF_DURATIONS
	check_counts REPEATS $REPEATS
	check_counts DAEMON_MINUTES $DAEMON_MINUTES
	check_counts MIXED_FREQS $MIXED_FREQS
	check_counts MIXED_DURATION $MIXED_DURATION
}
[[ -n $DURATIONS && -n $MIXED_FREQS ]] || die "DURATIONS and MIXED_FREQS may not be empty"

has_section() { [[ " $SECTIONS " == *" $1 "* ]]; }

[[ $(id -u) -eq 0 ]] || skip "needs root (every tool here records every CPU)"
PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import ctypes, resource' 2>/dev/null || skip "needs $PYTHON (it measures the process trees)"
# The interpreter itself, not a wrapper of it: a pyenv shim is a shell script
# whose helper processes' CPU stays in getrusage(RUSAGE_CHILDREN) across its
# exec of python, so treetime.py would add it (half a second) to every
# measurement.
PYTHON=$("$PYTHON" -c 'import sys; print(sys.executable)')
if has_section mixed || { has_section churn && [[ -n $PERF_DURATIONS ]]; }; then
	perf version >/dev/null 2>&1 || skip "needs perf (Debian: apt-get install linux-perf)"
fi
if has_section churn || has_section daemon; then
	command -v "$CC" >/dev/null || skip "needs a C compiler ($CC) for the stack_churn workload"
fi
if has_section mixed; then
	for t in xz make cmake; do
		command -v "$t" >/dev/null || skip "needs $t for the mixed workload"
	done
fi
[[ -x $FLAMED ]] || die "no flamed binary at $FLAMED (run packaging/bootstrap.sh first)"
FLAMED=$(readlink -f "$FLAMED")
VERBOSE=
record_help=$("$FLAMED" record --help 2>&1 || true)
if [[ $record_help == *--verbose* ]]; then
	VERBOSE=-v
else
	say "flamed record has no -v here: its own lines about samples and cost are not printed"
fi
FLAMEGRAPH=
if [[ -n $FLAMEGRAPH_DIR ]]; then
	if [[ -f $FLAMEGRAPH_DIR/stackcollapse-perf.pl && -f $FLAMEGRAPH_DIR/flamegraph.pl ]]; then
		FLAMEGRAPH=$(readlink -f "$FLAMEGRAPH_DIR")
	else
		say "FLAMEGRAPH_DIR=$FLAMEGRAPH_DIR has no stackcollapse-perf.pl and flamegraph.pl: perf's side goes without them"
	fi
fi
CLK_TCK=$(getconf CLK_TCK)

bench_workdir
WPID= # the process group of the running workload (lib.sh's stop_workload)
DPID= # the running daemon
stop_daemon() {
	[[ -n $DPID ]] || return 0
	kill -TERM "$DPID" 2>/dev/null || true
	wait "$DPID" 2>/dev/null || true
	DPID=
}
cleanup() {
	stop_daemon
	stop_workload
	[[ -n ${KEEP:-} ]] || rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_group LIMIT SCRIPT ARGS...: runs the bash SCRIPT (with ARGS as $1...)
# as the workload, in a session and process group of its own that a watchdog
# kills after LIMIT seconds if nobody did before; sets WPID, then lets the
# workload warm up.
start_group() {
	local limit=$1 script=$2
	shift 2
	setsid bash -c "(sleep $limit; kill -TERM 0) & $script" workload "$@" </dev/null >/dev/null 2>&1 &
	WPID=$!
	sleep "$WARMUP"
}

# summarize TIMES SECONDS: "cpu_s cpu_s_per_recorded_s rss_mib" of one measurement.
summarize() {
	awk -v d="$2" '
		{ cpu += $2 + $3; if ($4 > rss) rss = $4 }
		END { printf "%.2f %.4f %.1f\n", cpu, cpu / d, rss / 1024 }' "$1"
}

# median: the median of the numbers on stdin (nothing for none).
median() {
	sort -g | awk '
		{ v[NR] = $1 }
		END {
			if (NR == 0) exit
			if (NR % 2) print v[(NR + 1) / 2]
			else print (v[NR / 2] + v[NR / 2 + 1]) / 2
		}'
}

# result_median FILE KEY1 KEY2 COLUMN: the median of COLUMN over FILE's lines
# whose first two columns are KEY1 and KEY2 (nothing when it has no number there).
result_median() {
	awk -v a="$2" -v b="$3" -v c="$4" '$1 == a && $2 == b && $c ~ /^[0-9.]+$/ { print $c }' "$1" | median
}

# flamed_notes ERR: what flamed record -v said about its samples, stacks,
# processes and own cost, and how long each of its phases took, indented.
flamed_notes() {
	awk '
		/^flamed: debug: / {
			if ($0 ~ /^flamed: debug: (set-up \(|recording and final|drain and symbolize|write:)/)
				print "    " $0
			next
		}
		/^flamed: / && /collision|overflow|own cost|samples|process tracker/ { print "    " $0 }' "$1"
}

# recording_cpu ERR: the CPU seconds flamed record -v says its recording
# phase took (sampling: reading the rings, unwinding, counting; without set-up,
# symbolization and writing), or - when it does not say.
recording_cpu() {
	awk '/^flamed: debug: recording and final ring reads: .* ms CPU/ { v = $(NF - 2) / 1000 }
		END { if (v == "") print "-"; else printf "%.3f\n", v }' "$1"
}

# flamed_record DIR HZ SECONDS: flamed record -a into DIR/out.svg, timed into DIR/times.
flamed_record() {
	local r=$1 hz=$2 d=$3
	shift 3
	result_dir "$r"
	timed "$r/times" "$FLAMED" record -a -F "$hz" -d "$d" "$@" ${VERBOSE:+"$VERBOSE"} -o "$r/out.svg" \
		2>"$r/record.err" || die "flamed record failed: $(grep -v debug: "$r/record.err" | tail -n 3)"
}

# perf_cleanup DIR: removes perf's large files once measured, unless KEEP.
perf_cleanup() {
	[[ -n ${KEEP:-} ]] || rm -f "$1/perf.data" "$1/out.txt" "$1/out.folded" "$1/out.svg"
}

# --- churn and daemon: new stacks and new processes all the time ---

build_churn() {
	[[ -x $W/stack_churn ]] && return 0
	say "compiling tests/bench/stack_churn.c"
	"$CC" -O1 -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls \
		-o "$W/stack_churn" "$SRCDIR/tests/bench/stack_churn.c" 2>"$W/stack_churn.log" ||
		die "stack_churn does not compile: $(tail -n 5 "$W/stack_churn.log")"
}

# start_churn SECONDS: the churn workload, for a measurement of SECONDS.
start_churn() {
	local limit=$((WARMUP + $1 + GRACE))
	# shellcheck disable=SC2016 # expanded by the workload's bash
	start_group "$limit" '"$1" "$2" 1 & "$1" "$2" 2 & while :; do /bin/true; done' \
		"$W/stack_churn" "$limit"
}

churn_flamed() {
	local rep=$1 d=$2 r=$W/churn/flamed-$2-$1 cpu cps rss rec
	flamed_record "$r" "$CHURN_FREQ" "$d"
	read -r cpu cps rss <<<"$(summarize "$r/times" "$d")"
	rec=$(recording_cpu "$r/record.err")
	[[ $rec == - ]] || rec=$(awk -v c="$rec" -v d="$d" 'BEGIN { printf "%.4f\n", c / d }')
	echo "flamed $d $rep $cpu $cps $rss $rec" >>"$W/churn/results"
	printf 'churn: flamed, %s s, run %s: %.2f s CPU, %.4f s CPU per recorded s (recording phase: %s), %.1f MiB peak RSS\n' \
		"$d" "$rep" "$cpu" "$cps" "$rec" "$rss"
	flamed_notes "$r/record.err"
}

churn_perf() {
	local rep=$1 d=$2 r=$W/churn/perf-$2-$1 cpu cps rss
	perf_record_script "$r" "$CHURN_FREQ" "$d"
	read -r cpu cps rss <<<"$(summarize "$r/times" "$d")"
	echo "perf $d $rep $cpu $cps $rss -" >>"$W/churn/results"
	printf 'churn: perf, %s s, run %s: %.2f s CPU, %.4f s CPU per recorded s, %.1f MiB peak RSS\n' \
		"$d" "$rep" "$cpu" "$cps" "$rss"
	perf_cleanup "$r"
}

churn_section() {
	local rep d tool order all first rfirst cpu cps rss rec pcpu fcpu
	build_churn
	result_dir "$W/churn"
	# shellcheck disable=SC2086 # the lists are split into their words on purpose
	all=$(printf '%s\n' $DURATIONS $PERF_DURATIONS | sort -n -u)
	echo
	echo "== churn: flamed record -a -F $CHURN_FREQ -d D ${VERBOSE:+-v }-o out.svg (D: $DURATIONS)" \
		"and perf record -g + perf script (D: ${PERF_DURATIONS:-none}), $REPEATS run(s) each"
	for ((rep = 1; rep <= REPEATS; rep++)); do
		order="flamed perf"
		((rep % 2)) || order="perf flamed"
		for d in $all; do
			for tool in $order; do
				if [[ $tool == flamed ]]; then
					# shellcheck disable=SC2086
					in_list "$d" $DURATIONS || continue
				else
					# shellcheck disable=SC2086
					in_list "$d" $PERF_DURATIONS || continue
				fi
				say "churn: $tool for $d s, run $rep of $REPEATS"
				start_churn "$d"
				"churn_$tool" "$rep" "$d"
				stop_workload
			done
		done
	done

	echo
	echo "churn: medians of $REPEATS run(s), $CHURN_FREQ Hz, whole machine, $(nproc) CPUs."
	echo "CPU/s = CPU s per recorded s; vs first = that over the tool's own at its shortest D;"
	echo "rec CPU/s = flamed's recording phase alone (-v), without set-up, symbolization and writing."
	echo
	echo "| tool | D s | CPU s | CPU/s | peak RSS MiB | CPU/s vs first | rec CPU/s | rec vs first |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|"
	for tool in flamed perf; do
		first='' rfirst=''
		for d in $all; do
			[[ -n $(result_median "$W/churn/results" "$tool" "$d" 4) ]] || continue
			cpu=$(result_median "$W/churn/results" "$tool" "$d" 4)
			cps=$(result_median "$W/churn/results" "$tool" "$d" 5)
			rss=$(result_median "$W/churn/results" "$tool" "$d" 6)
			rec=$(result_median "$W/churn/results" "$tool" "$d" 7)
			[[ -n $rec ]] || rec=-
			first=${first:-$cps}
			rfirst=${rfirst:-$rec}
			echo "$tool $d $cpu $cps $rss $first $rec $rfirst" | awk '
				function ratio(a, b) { return (a != "-" && b != "-" && b > 0) ? sprintf("%.2f", a / b) : "-" }
				{ printf "| %s | %s | %.2f | %.4f | %.1f | %s | %s | %s |\n", $1, $2, $3, $4, $5,
					ratio($4, $6), ($7 == "-" ? "-" : sprintf("%.4f", $7)), ratio($7, $8) }'
			if [[ $tool == flamed ]]; then
				echo "$d $cps $first $rec $rfirst" >>"$W/churn/flamed-ratios"
			fi
		done
	done
	echo
	for d in $all; do
		pcpu=$(result_median "$W/churn/results" perf "$d" 4)
		fcpu=$(result_median "$W/churn/results" flamed "$d" 4)
		[[ -n $pcpu && -n $fcpu ]] || continue
		awk -v d="$d" -v p="$pcpu" -v f="$fcpu" 'BEGIN {
			printf "%s s: perf CPU / flamed CPU = %.1fx\n", d, p / (f > 0.01 ? f : 0.01) }'
	done
	# The goal is about growth: a lower cost per second at longer D is the
	# fixed set-up and writing spread thinner, and is said apart.
	awk '
		function judge(what, col, base,   i, r, lo, hi, dlo, dhi) {
			lo = hi = 1
			for (i = 1; i <= NR; i++) {
				if (v[i, col] == "-" || v[i, base] == "-" || v[i, base] <= 0) return
				r = v[i, col] / v[i, base]
				if (r > hi) { hi = r; dhi = d[i] }
				if (r < lo) { lo = r; dlo = d[i] }
			}
			if (hi > 1.25) verdict = sprintf("NOT MET: %.2fx at %s s", hi, dhi)
			else if (lo < 0.75) verdict = sprintf("met upwards (at most %.2fx), not downwards: %.2fx at %s s", hi, lo, dlo)
			else verdict = sprintf("met (%.2fx to %.2fx)", lo, hi)
			printf "goal (flamed CPU per recorded s constant within 25 %%), %s: %s\n", what, verdict
		}
		{ d[NR] = $1; for (i = 2; i <= 5; i++) v[NR, i] = $i }
		END {
			if (NR < 2) { print "goal (flamed CPU per recorded s constant within 25 %): needs two durations"; exit }
			judge("whole run", 2, 3)
			judge("recording alone", 4, 5)
		}' "$W/churn/flamed-ratios"
}

# --- daemon: the same workload under flamed daemon ---

# proc_ticks PID: utime + stime of PID, in clock ticks.
proc_ticks() {
	local stat f
	stat=$(<"/proc/$1/stat")
	# shellcheck disable=SC2206 # the fields after the command name, split on spaces
	f=(${stat##*) })
	echo $((f[11] + f[12]))
}

# proc_kib PID KEY: KEY's value in /proc/PID/status (VmRSS, VmHWM), in KiB.
proc_kib() {
	awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"
}

# now_us: the time in microseconds.
now_us() {
	echo "${EPOCHREALTIME//[!0-9]/}"
}

daemon_section() {
	local d=$W/daemon total=$((DAEMON_MINUTES * 60)) n i start next wait_us
	local -a t ticks rss hwm
	build_churn
	result_dir "$d"
	printf 'frequency = %s\ninterval = %ss\noutput_dir = %s/snapshots\nformats = folded\n' \
		"$DAEMON_FREQ" "$DAEMON_INTERVAL" "$d" >"$d/flamed.conf"
	"$FLAMED" daemon --config "$d/flamed.conf" --check-config >"$d/check.log" 2>&1 ||
		die "flamed daemon refuses its configuration: $(tail -n 3 "$d/check.log")"
	n=$((total / DAEMON_INTERVAL))
	echo
	echo "== daemon: flamed daemon, frequency $DAEMON_FREQ, interval ${DAEMON_INTERVAL}s, folded snapshots," \
		"$DAEMON_MINUTES min, churn workload"
	say "daemon: $DAEMON_MINUTES min under the churn workload"
	start_churn "$total"
	"$FLAMED" daemon --config "$d/flamed.conf" 2>"$d/daemon.log" &
	DPID=$!
	start=$(now_us)
	t[0]=0 ticks[0]=$(proc_ticks "$DPID") rss[0]=$(proc_kib "$DPID" VmRSS) hwm[0]=$(proc_kib "$DPID" VmHWM)
	for ((i = 1; i <= n; i++)); do
		next=$((start + i * DAEMON_INTERVAL * 1000000))
		wait_us=$((next - $(now_us)))
		((wait_us <= 0)) || sleep "$((wait_us / 1000000)).$(printf '%06d' $((wait_us % 1000000)))"
		kill -0 "$DPID" 2>/dev/null || die "flamed daemon died: $(tail -n 5 "$d/daemon.log")"
		t[i]=$((($(now_us) - start) / 1000))
		ticks[i]=$(proc_ticks "$DPID")
		rss[i]=$(proc_kib "$DPID" VmRSS)
		hwm[i]=$(proc_kib "$DPID" VmHWM)
		awk -v t="${t[i]}" -v c="${ticks[i]}" -v dc="$((ticks[i] - ticks[i - 1]))" -v hz="$CLK_TCK" \
			-v r="${rss[i]}" -v h="${hwm[i]}" 'BEGIN {
			printf "daemon: t=%5.0f s: %7.2f s CPU (+%.2f), VmRSS %6.1f MiB, VmHWM %6.1f MiB\n",
				t / 1000, c / hz, dc / hz, r / 1024, h / 1024 }'
	done
	kill -0 "$DPID" 2>/dev/null || die "flamed daemon died: $(tail -n 5 "$d/daemon.log")"
	kill -TERM "$DPID"
	local status=0
	wait "$DPID" || status=$?
	DPID=
	stop_workload
	((status == 0)) || say "flamed daemon exited with status $status on SIGTERM"

	echo
	echo "daemon: CPU per ${DAEMON_INTERVAL} s interval (the first fifth includes the daemon's start-up):"
	local k a b warm w
	for k in 0 2 4; do
		a=$((k * n / 5)) b=$(((k + 1) * n / 5))
		echo "$k ${t[a]} ${t[b]} $((ticks[b] - ticks[a]))"
	done | awk -v hz="$CLK_TCK" -v iv="$DAEMON_INTERVAL" '
		BEGIN { split("first,,middle,,last", name, ",") }
		{
			per[$1] = $4 / hz / (($3 - $2) / 1000) * iv
			printf "  %-6s fifth (t=%.0f-%.0f s): %.3f s CPU per interval\n", name[$1 + 1], $2 / 1000, $3 / 1000, per[$1]
		}
		END { if (per[2] > 0) printf "  last / middle: %.2fx\n", per[4] / per[2] }'
	warm=$((total / 5 < 120 ? total / 5 : 120))
	for ((w = 1; w < n && t[w] < warm * 1000; w++)); do :; done
	awk -v tw="${t[w]}" -v rw="${rss[w]}" -v te="${t[n]}" -v re="${rss[n]}" -v he="${hwm[n]}" 'BEGIN {
		printf "daemon: VmRSS %.1f MiB at the end of the warm-up (t=%.0f s), %.1f MiB at the end (t=%.0f s): %+.1f MiB (%+.0f %%); VmHWM %.1f MiB\n",
			rw / 1024, tw / 1000, re / 1024, te / 1000, (re - rw) / 1024, 100 * (re - rw) / rw, he / 1024 }'
	echo "daemon: $(find "$d/snapshots" -maxdepth 1 -type f -name '*.folded' | wc -l) snapshots written;" \
		"its last log lines:"
	grep -v debug: "$d/daemon.log" | tail -n 3 | sed 's/^/    /'
}

# --- mixed: a build, a CPU burner and a compressor ---

# start_mixed: the mixed workload: make -j2 rebuilding the copy from clean in
# a loop, as start_make_workload (lib.sh) does, but in one process group with
# the burner and the compressor.
start_mixed() {
	# shellcheck disable=SC2016 # expanded by the workload's bash
	start_group "$((WARMUP + MIXED_DURATION + GRACE))" '
		(while :; do make -C "$1" -j2 clean; make -C "$1" -j2; done) &
		sh -c "while :; do :; done" &
		while :; do xz -9 -T1 -c "$2" >/dev/null; done' "$W/mixed/build" "$W/mixed/xz.in"
}

# mixed_flamed_as TOOL REP HZ [ARGS...]: flamed record with ARGS, its results named TOOL.
mixed_flamed_as() {
	local tool=$1 rep=$2 hz=$3 r=$W/mixed/$1-$3-$2 cpu rss
	shift 3
	flamed_record "$r" "$hz" "$MIXED_DURATION" "$@"
	read -r cpu _ rss <<<"$(summarize "$r/times" "$MIXED_DURATION")"
	echo "$tool $hz $rep $cpu $rss" >>"$W/mixed/results"
	printf 'mixed: %s, %s Hz, run %s: %.2f s CPU, %.1f MiB peak RSS\n' "$tool" "$hz" "$rep" "$cpu" "$rss"
	flamed_notes "$r/record.err"
}

mixed_flamed() {
	mixed_flamed_as flamed "$@"
}

# flamed doing what perf record -g does: frame-pointer stacks, no inlined frames.
mixed_flamed_fp() {
	mixed_flamed_as flamed_fp "$@" --call-graph fp --no-inline
}

mixed_perf() {
	local rep=$1 hz=$2 r=$W/mixed/perf-$2-$1 cpu rss
	perf_record_script "$r" "$hz" "$MIXED_DURATION"
	if [[ -n $FLAMEGRAPH ]]; then
		timed "$r/times" perl "$FLAMEGRAPH/stackcollapse-perf.pl" "$r/out.txt" >"$r/out.folded" \
			2>"$r/collapse.err" || die "stackcollapse-perf.pl failed: $(tail -n 3 "$r/collapse.err")"
		timed "$r/times" perl "$FLAMEGRAPH/flamegraph.pl" "$r/out.folded" >"$r/out.svg" \
			2>"$r/flamegraph.err" || die "flamegraph.pl failed: $(tail -n 3 "$r/flamegraph.err")"
	fi
	read -r cpu _ rss <<<"$(summarize "$r/times" "$MIXED_DURATION")"
	echo "perf $hz $rep $cpu $rss" >>"$W/mixed/results"
	printf 'mixed: perf, %s Hz, run %s: %.2f s CPU, %.1f MiB peak RSS\n' "$hz" "$rep" "$cpu" "$rss"
	perf_cleanup "$r"
}

mixed_section() {
	local rep hz tool order perf_what rate_before rate_after
	local rate=/proc/sys/kernel/perf_event_max_sample_rate
	prepare_make_workload "$BENCH_SRC" "$W/mixed"
	rate_before=$(<"$rate")
	: >"$W/mixed/results"
	head -c 16M /dev/urandom | base64 >"$W/mixed/xz.in"
	perf_what="perf record -g + perf script"
	if [[ -n $FLAMEGRAPH ]]; then
		perf_what+=" + stackcollapse-perf.pl + flamegraph.pl"
	fi
	echo
	echo "== mixed: flamed record -a -F HZ -d $MIXED_DURATION ${VERBOSE:+-v }-o out.svg and $perf_what," \
		"HZ: $MIXED_FREQS, $REPEATS run(s) each"
	[[ -n $FLAMEGRAPH ]] || echo "mixed: no FLAMEGRAPH_DIR: perf's side lacks stackcollapse-perf.pl and" \
		"flamegraph.pl, so its cost is understated"
	for ((rep = 1; rep <= REPEATS; rep++)); do
		order="flamed flamed_fp perf"
		((rep % 2)) || order="perf flamed_fp flamed"
		for hz in $MIXED_FREQS; do
			for tool in $order; do
				say "mixed: $tool at $hz Hz for $MIXED_DURATION s, run $rep of $REPEATS"
				start_mixed
				"mixed_$tool" "$rep" "$hz"
				stop_workload
			done
		done
	done

	echo
	echo "mixed: medians of $REPEATS run(s), $MIXED_DURATION s, whole machine, $(nproc) CPUs;" \
		"workload: make -j2 + a CPU burner + xz -9."
	echo "perf = $perf_what. flamed fp = flamed record --call-graph fp --no-inline, the job perf -g does:" \
		"frame-pointer stacks (broken in code without them), no inlined frames."
	# The kernel lowers this when sampling interrupts take too long; a run
	# asking for more than it allows then samples less than it says.
	rate_after=$(<"$rate")
	if ((rate_after != rate_before)); then
		echo "kernel.perf_event_max_sample_rate went from $rate_before to $rate_after during the runs:" \
			"runs at a higher frequency sampled less than asked"
	fi
	echo
	echo "| Hz | flamed CPU s | flamed RSS MiB | perf CPU s | perf RSS MiB | perf / flamed CPU | perf / flamed RSS |" \
		"flamed fp CPU s | flamed fp RSS MiB | perf / flamed fp CPU |"
	echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for hz in $MIXED_FREQS; do
		echo "$hz" \
			"$(result_median "$W/mixed/results" flamed "$hz" 4)" "$(result_median "$W/mixed/results" flamed "$hz" 5)" \
			"$(result_median "$W/mixed/results" perf "$hz" 4)" "$(result_median "$W/mixed/results" perf "$hz" 5)" \
			"$(result_median "$W/mixed/results" flamed_fp "$hz" 4)" \
			"$(result_median "$W/mixed/results" flamed_fp "$hz" 5)" |
			awk '{ printf "| %s | %.2f | %.1f | %.2f | %.1f | %.1fx | %.1fx | %.2f | %.1f | %.1fx |\n",
				$1, $2, $3, $4, $5, $4 / ($2 > 0.01 ? $2 : 0.01), $5 / ($3 > 0.1 ? $3 : 0.1),
				$6, $7, $4 / ($6 > 0.01 ? $6 : 0.01) }'
	done
}

echo "cost_scaling: $(uname -r), $(nproc) CPUs, flamed $FLAMED; sections: $SECTIONS"
for s in $SECTIONS; do
	"${s}_section"
done
[[ -z ${KEEP:-} ]] || say "outputs, logs and timings kept in $W"
