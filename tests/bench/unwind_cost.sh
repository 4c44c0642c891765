#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: what each --call-graph mode of `flamed record -a` costs on a busy
# machine, next to `perf record --call-graph dwarf -a` + `perf script
# --no-inline` + `flamed collapse`.
#
#   tests/bench/unwind_cost.sh [-m MODES] [-d SECONDS] [-f FREQS] [--no-perf] [-k DIR]
#
# The workload is a parallel (make -j2) build of this repository from a copy,
# restarted from `make clean` for every measurement and repeated until the
# measurement ends (tests/bench/lib.sh). Each mode, and perf, records the
# whole machine for SECONDS at each frequency. Measured:
#   CPU s          user + system of the profiler's processes
#                  (tests/bench/treetime.py), set-up and post-processing
#                  included (perf: record, script and collapse)
#   BPF s          run time of the BPF programs flamed holds (their fdinfo,
#                  with kernel.bpf_stats_enabled=1, restored on exit): spent
#                  in the interrupted tasks, so in nobody's CPU s above
#   total          CPU s + BPF s: what the ratios compare
#   sampling s     flamed's CPU while it sampled (-v "recording": reading the
#                  rings, unwinding, counting) + BPF s: the cost that grows
#                  with the samples, without set-up, symbolization and
#                  writing, which weigh most in short runs and at 99 Hz
#   BPF ns/sample  run time per run of flamed's perf_event programs (the
#                  sampler, programs it tail-calls included)
#   peak RSS       of the profiler's largest process
#   armed ms       from flamed record's start until its sampler runs, the sum
#                  of the -v phases before "recording" (flamed does not tell
#                  when its first sample came)
#   first BPF ms   from the process's start until its perf_event program had
#                  first run (polled every 10 ms; modes without a BPF sampler,
#                  such as dwarf, have none)
# Not measured, for any tool: the kernel's own work in the sample interrupt
# (perf's copy of each user stack into the ring buffer for dwarf modes and
# perf; the BPF programs are measured), charged to the interrupted task.
#
# Ratios of total CPU, at each frequency, with goals: default / fp <= 1.5;
# dwarf / default >= 5; perf pipeline / default >= 10; then those of flamed's
# modes again for the sampling alone. Without "default" in MODES, fp (today's
# default) stands in for it, and the ratios say so.
#
# Options (and the environment variables they set):
#   -m, --modes MODES    (MODES, default "fp dwarf default") --call-graph
#                        values, one word each; "default": no --call-graph
#   -d, --duration S     (DURATION, default 10) seconds per recording
#   -f, --freqs FREQS    (FREQS, default "99 999")
#       --no-perf        (PERF=0) leave perf out
#   -k, --keep DIR       (KEEP) keep the outputs in DIR
#   -h, --help           this text
# Also FLAMED (build/flamed), BENCH_SRC (the project built as the workload;
# the repository), STACK_SIZE (perf's --call-graph dwarf,SIZE: 16384, as
# flamed's dwarf default), PERF_MMAP_PAGES (perf -m: 1024, as in
# dwarf_vs_perf.sh), PYTHON (python3). Takes about (modes + 1) x 2 x
# (SECONDS + 3) seconds, plus perf script's post-processing (a minute of CPU
# or more at 999 Hz) and a minute to build the copy. Needs root, perf
# (Debian: linux-perf) and python3; exits 77 when one is missing. Not part of
# ctest; wants a quiet machine.
set -euo pipefail
export LC_ALL=C

SRCDIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
MODES=${MODES:-fp dwarf default}
DURATION=${DURATION:-10}
FREQS=${FREQS:-99 999}
PERF=${PERF:-1}
KEEP=${KEEP:-}
FLAMED=${FLAMED:-$SRCDIR/build/flamed}
BENCH_SRC=${BENCH_SRC:-$SRCDIR}
STACK_SIZE=${STACK_SIZE:-16384}
PERF_MMAP_PAGES=${PERF_MMAP_PAGES:-1024}
PYTHON=${PYTHON:-python3}
WARMUP=2 # seconds of workload before each measurement starts
GOAL_DEFAULT_VS_FP=1.5
GOAL_DWARF_VS_DEFAULT=5
GOAL_PERF_VS_DEFAULT=10

# shellcheck source=tests/bench/lib.sh
source "$SRCDIR/tests/bench/lib.sh"

usage() {
	sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$SRCDIR/tests/bench/unwind_cost.sh"
}

while (($#)); do
	case $1 in
	-m | --modes) MODES=${2?}; shift ;;
	-d | --duration) DURATION=${2?}; shift ;;
	-f | --freqs) FREQS=${2?}; shift ;;
	--no-perf) PERF=0 ;;
	-k | --keep) KEEP=${2?}; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done

[[ $DURATION =~ ^[0-9]+$ && $DURATION -gt 0 ]] || die "DURATION must be a whole number of seconds, not '$DURATION'"
for hz in $FREQS; do
	[[ $hz =~ ^[0-9]+$ && $hz -gt 0 ]] || die "FREQS: '$hz' is not a frequency"
done
[[ $(id -u) -eq 0 ]] || skip "needs root (it records every CPU and reads BPF statistics)"
if ((PERF)); then
	perf version >/dev/null 2>&1 || skip "needs perf (Debian: apt-get install linux-perf)"
fi
"$PYTHON" -c 'import ctypes, resource' 2>/dev/null || skip "needs $PYTHON (it measures the process trees)"
[[ -x $FLAMED ]] || die "no flamed binary at $FLAMED (cmake -S . -B build && cmake --build build)"
FLAMED=$(readlink -f "$FLAMED")
[[ -r /proc/sys/kernel/bpf_stats_enabled ]] || skip "no kernel.bpf_stats_enabled on this kernel"

bench_workdir
WPID=
BPF_STATS_WAS=
cleanup() {
	stop_workload
	if [[ -n $BPF_STATS_WAS ]]; then
		echo "$BPF_STATS_WAS" >/proc/sys/kernel/bpf_stats_enabled || say "could not restore kernel.bpf_stats_enabled=$BPF_STATS_WAS"
	fi
	[[ -n $KEEP ]] || rm -rf "$W"
}
trap cleanup EXIT
# The trap restores it: statistics cost two clock reads per program run, for
# every BPF program on the machine.
BPF_STATS_WAS=$(</proc/sys/kernel/bpf_stats_enabled)
echo 1 >/proc/sys/kernel/bpf_stats_enabled

prepare_make_workload "$BENCH_SRC" "$W"

# Prints "cpu_s rss_mib" of the commands timed into FILE...
times_of() {
	awk '{ cpu += $2 + $3; if ($4 > rss) rss = $4 } END { printf "%.3f %.1f\n", cpu, rss / 1024 }' "$@"
}

# Every measurement prints one line:
#   samples lost cpu_s bpf_s bpf_ns_per_run rss_mib armed_ms first_bpf_ms loop_cpu_s
# ("-" where the tool has no such number).

measure_flamed() {
	local mode=$1 hz=$2 r=$3 cg=() t
	[[ $mode == default ]] || cg=(--call-graph "$mode")
	"$PYTHON" "$SRCDIR/tests/bench/progstats.py" "$r/pid" "$r/bpf" &
	local mon=$!
	# shellcheck disable=SC2016 # expanded by the inner bash
	timed "$r/times" bash -c 'echo $$ >"$1"; shift; exec "$@"' pidof "$r/pid" \
		"$FLAMED" record -a -F "$hz" "${cg[@]}" -d "$DURATION" -v -o "$r/out.folded" \
		2>"$r/record.err" || {
		wait "$mon" || true
		die "flamed record ${cg[*]} failed: $(grep -v 'debug:' "$r/record.err" | tail -n 3)"
	}
	wait "$mon" || die "progstats.py failed"
	t=$(times_of "$r/times")
	sed -e 's/[(),%:]/ /g' "$r/record.err" | awk -v t="$t" -v bpf="$(<"$r/bpf")" '
		# "accounting: T samples taken: ... N lost (...)": every sample the kernel handed over.
		$1 == "flamed" && $2 == "accounting" && $4 == "samples" && $5 == "taken" {
			taken = $3
			for (i = 2; i <= NF; i++) if ($i == "lost") lost = $(i - 1)
		}
		# The -v phases ("flamed: debug: PHASE: W ms, C ms CPU", see
		# phase_done() in record.c): the wall time of those before the
		# sampling (until the sampler runs), the CPU of the sampling itself.
		$1 == "flamed" && $2 == "debug" && $NF == "CPU" && $(NF - 1) == "ms" && !recording {
			if ($3 == "recording") { recording = 1; loop = $(NF - 2) / 1000 }
			else armed += $(NF - 4)
		}
		END {
			split(t, x, " ")
			split(bpf, b, " ")
			printf "%d %d %s %.3f %s %s %.0f %s %.3f\n", taken, lost, x[1], b[3] / 1e9,
				(b[1] > 0 ? sprintf("%.0f", b[2] / b[1]) : "-"), x[2], armed, b[4], loop
		}'
	[[ -n $KEEP ]] || rm -f "$r/out.folded"
}

measure_perf() {
	local hz=$1 r=$2 t
	timed "$r/times" perf record -q -e cpu-clock -a -F "$hz" --call-graph "dwarf,$STACK_SIZE" \
		-m "$PERF_MMAP_PAGES" -o "$r/perf.data" -- sleep "$DURATION" 2>"$r/record.err" ||
		die "perf record failed: $(tail -n 3 "$r/record.err")"
	# shellcheck disable=SC2016 # expanded by the inner bash
	timed "$r/times" bash -c 'perf script --no-inline -i "$1" 2>"$2" | "$3" collapse -o "$4"' \
		collapse "$r/perf.data" "$r/script.err" "$FLAMED" "$r/out.folded" ||
		die "perf script | flamed collapse failed: $(tail -n 3 "$r/script.err")"
	# Not timed: the samples and lost records, from perf's event statistics.
	perf report -i "$r/perf.data" --stats >"$r/stats.txt" 2>&1 ||
		die "perf report --stats failed: $(tail -n 3 "$r/stats.txt")"
	t=$(times_of "$r/times")
	awk -v t="$t" '
		# The aggregated stats only: the per-event ones after them repeat them.
		/^[^ ]/ && !/^Aggregated/ { done = 1 }
		!done && /^ *SAMPLE events:/ { split($0, f, ":"); n += f[2] + 0 }
		!done && /^ *LOST(_SAMPLES)? events:/ { split($0, f, ":"); lost += f[2] + 0 }
		END { split(t, x, " "); printf "%d %d %s - - %s - - -\n", n, lost, x[1], x[2] }' "$r/stats.txt"
	[[ -n $KEEP ]] || rm -f "$r/perf.data" "$r/out.folded"
}

ROWS=$MODES
((PERF)) && ROWS+=" perf"
declare -A RESULT
for hz in $FREQS; do
	for row in $ROWS; do
		r=$W/$row-$hz
		result_dir "$r"
		say "$row at $hz Hz for $DURATION s (workload running)"
		start_make_workload "$W"
		sleep "$WARMUP"
		if [[ $row == perf ]]; then
			RESULT[$row,$hz]=$(measure_perf "$hz" "$r")
		else
			RESULT[$row,$hz]=$(measure_flamed "$row" "$hz" "$r")
		fi
		stop_workload
	done
done

label() {
	case $1 in
	perf) echo "perf dwarf + script --no-inline + collapse" ;;
	*) echo "$1" ;;
	esac
}

echo
echo "Whole machine (-a), $DURATION s, $(nproc) CPUs, workload: make -j2 of a copy of $BENCH_SRC in a loop."
echo "samples: every sample taken (idle ones too). total = CPU s of the profiler's processes + BPF s"
echo "(its BPF programs' run time, spent in the interrupted tasks). sampling = flamed's CPU while it"
echo "sampled (-v: reading rings, unwinding, counting; not set-up, symbolization, writing) + BPF s."
echo "armed: ms until flamed's sampler runs (-v); first BPF: ms until its perf_event program first ran"
echo "(polled). perf: --call-graph dwarf,$STACK_SIZE -m $PERF_MMAP_PAGES, then perf script --no-inline | flamed collapse."
echo
echo "| Hz | mode | samples | lost | CPU s | BPF s | total s | total ms / 1000 samples | sampling s | BPF ns / sample | peak RSS MiB | armed ms | first BPF ms |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for hz in $FREQS; do
	for row in $ROWS; do
		read -r n lost cpu bpf ns rss armed first loop <<<"${RESULT[$row,$hz]}"
		awk -v hz="$hz" -v row="$(label "$row")" -v n="$n" -v lost="$lost" -v cpu="$cpu" -v bpf="$bpf" \
			-v ns="$ns" -v rss="$rss" -v armed="$armed" -v first="$first" -v loop="$loop" 'BEGIN {
			b = bpf == "-" ? 0 : bpf
			per = n > 0 ? sprintf("%.2f", (cpu + b) * 1e6 / n) : "-"
			steady = loop == "-" ? "-" : sprintf("%.3f", loop + b)
			printf "| %s | %s | %d | %d | %.2f | %s | %.2f | %s | %s | %s | %s | %s | %s |\n",
				hz, row, n, lost, cpu, bpf, cpu + b, per, steady, ns, rss, armed, first
		}'
	done
done

# ratio NAME A B GOAL OP WHAT: "NAME, HZ Hz: X.YZx (goal OP GOALx: met / NOT met)" per
# frequency, for WHAT (total or sampling, as in the table) of A over B's.
ratio() {
	local name=$1 a=$2 b=$3 goal=$4 op=$5 what=$6 hz
	for hz in $FREQS; do
		[[ -n ${RESULT[$a,$hz]:-} && -n ${RESULT[$b,$hz]:-} ]] || continue
		awk -v name="$name" -v hz="$hz" -v ra="${RESULT[$a,$hz]}" -v rb="${RESULT[$b,$hz]}" \
			-v goal="$goal" -v op="$op" -v what="$what" '
			function cost(r, f) {
				split(r, f, " ")
				return (what == "total" ? f[3] : f[9]) + (f[4] == "-" ? 0 : f[4])
			}
			BEGIN {
			a = cost(ra); b = cost(rb)
			if (b <= 0) { printf "%s, %s Hz: no CPU measured for the divisor\n", name, hz; exit }
			x = a / b
			met = op == "<=" ? x <= goal : x >= goal
			printf "%s, %s Hz: %.2fx (goal %s %sx: %s)\n", name, hz, x, op, goal, met ? "met" : "NOT met"
		}'
	done
}

base=default
if [[ " $MODES " != *" default "* ]]; then
	base=fp
	echo
	echo "(default is not in MODES: fp, today's default, stands in for it below)"
fi
for what in total sampling; do
	echo
	if [[ $what == total ]]; then
		echo "Ratios of total CPU (the profiler's processes + its BPF programs); the goals:"
	else
		echo "The same for the sampling alone (flamed's CPU while sampling + BPF): the cost per sample"
		echo "without set-up and symbolization, which weigh most in short runs and at 99 Hz:"
	fi
	if [[ " $MODES " == *" default "* && " $MODES " == *" fp "* ]]; then
		ratio "default / fp" default fp "$GOAL_DEFAULT_VS_FP" "<=" "$what"
	fi
	if [[ " $MODES " == *" $base "* ]]; then
		[[ " $MODES " != *" dwarf "* ]] || ratio "dwarf / $base" dwarf "$base" "$GOAL_DWARF_VS_DEFAULT" ">=" "$what"
		[[ $what == sampling ]] || ((!PERF)) ||
			ratio "perf pipeline / $base" perf "$base" "$GOAL_PERF_VS_DEFAULT" ">=" "$what"
	fi
done
[[ -z $KEEP ]] || say "outputs kept in $W"
