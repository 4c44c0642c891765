#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: what DWARF unwinding costs with `flamed record --call-graph dwarf`
# versus `perf record --call-graph dwarf` + `perf script` (perf unwinds in
# `perf script`, flamed while it records), per sample, on a busy machine.
#
#   tests/bench/dwarf_vs_perf.sh [DURATION]
#
# Both tools record the whole machine (-a, cpu-clock) for DURATION seconds
# (default 10) at each frequency, copying the same number of bytes of every
# user stack (STACK_SIZE, default 16384: flamed's default; perf's own default
# is 8192, so it is passed to both explicitly) through per-CPU ring buffers of
# the same size (perf -m PERF_MMAP_PAGES, default 1024 pages: flamed's ring
# for DWARF). perf's recording is post-processed twice: by `perf script` as it
# is (inlined functions become frames, looked up by addr2line processes,
# which dominate its CPU on compiler stacks) and by `perf script --no-inline`
# (frames as flamed has them).
#
# Measured, post-processing included (perf record with its build-id pass,
# then perf script and its addr2line children writing the text; flamed until
# it exits): CPU seconds, user + system, of every process of the profiler's,
# orphans included (tests/bench/treetime.py; not wall time: the workload
# competes with the profilers for the CPUs); peak RSS of the largest process;
# bytes written. Samples are every sample the tool was handed, idle ones
# included (perf: the samples in `perf script`'s output; flamed: its "N
# samples" plus the idle samples it dropped), so "CPU ms / 1000 samples"
# compares like with like. Also printed: lost records, frames per non-idle
# sample (inlined functions not counted) and how flamed's unwinding ended.
#
# "Samples per second flamed unwinds on one core" (flamed is single-threaded)
# comes twice: from all of flamed's CPU, and from the CPU of its recording
# phase alone as `flamed record -v` times it (reading the ring buffers,
# unwinding every stack as it is read, counting the stacks; not set-up,
# symbolization or writing).
#
# Workloads (WORKLOADS, default "make nofp"): make, a parallel (make -j2)
# build of flamed from a copy of the source, restarted from `make clean` and
# repeated, as in record_vs_perf.sh: compilers built without frame pointers,
# DWARF unwinding's use case, and many short-lived processes and binaries;
# nofp, one build/tests/fixtures/nofp_chain (ten frames without frame
# pointers, a CPU-bound leaf) per CPU: the same few stacks over and over.
# Every measurement restarts the workload.
#
# Environment: DURATION, FREQS ("99 999"), WORKLOADS, STACK_SIZE,
# PERF_MMAP_PAGES, PERF_SCRIPT_ARGS (more `perf script` options, for both
# runs), FLAMED (build/flamed), NOFP (nofp_chain next to FLAMED, in
# tests/fixtures/), BENCH_TOOLS ("perf flamed"), BENCH_SRC (the CMake project
# built by the make workload; the repository), KEEP (a directory: keep the
# raw outputs there), PYTHON (python3). Needs root, perf (Debian:
# linux-perf) and python3; exits 77 when one is missing. Not part of ctest:
# it takes about 6 minutes (perf script's addr2line lookups take minutes of
# CPU at 999 Hz) and wants a quiet machine.
set -euo pipefail
export LC_ALL=C # '.' as the decimal point everywhere

SRCDIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
DURATION=${1:-${DURATION:-10}}
FREQS=${FREQS:-99 999}
STACK_SIZE=${STACK_SIZE:-16384}
PERF_MMAP_PAGES=${PERF_MMAP_PAGES:-1024}
PERF_SCRIPT_ARGS=${PERF_SCRIPT_ARGS:-}
FLAMED=${FLAMED:-$SRCDIR/build/flamed}
BENCH_TOOLS=${BENCH_TOOLS:-perf flamed}
BENCH_SRC=${BENCH_SRC:-$SRCDIR}
KEEP=${KEEP:-}
PYTHON=${PYTHON:-python3}
WARMUP=2   # seconds of workload before each measurement starts
GOAL_RATIO=3 # perf's CPU per sample over flamed's: at least this much

# shellcheck source=tests/bench/lib.sh
source "$SRCDIR/tests/bench/lib.sh"

[[ $DURATION =~ ^[0-9]+$ && $DURATION -gt 0 ]] || die "DURATION must be a whole number of seconds, not '$DURATION'"
[[ $STACK_SIZE =~ ^[0-9]+$ && $STACK_SIZE -gt 0 && $STACK_SIZE -le 65528 && $((STACK_SIZE % 8)) -eq 0 ]] ||
	die "STACK_SIZE must be a multiple of 8 up to 65528, not '$STACK_SIZE'"
[[ $PERF_MMAP_PAGES =~ ^[0-9]+$ && $PERF_MMAP_PAGES -gt 0 && $((PERF_MMAP_PAGES & (PERF_MMAP_PAGES - 1))) -eq 0 ]] ||
	die "PERF_MMAP_PAGES must be a power of 2, not '$PERF_MMAP_PAGES'"
for hz in $FREQS; do
	[[ $hz =~ ^[0-9]+$ && $hz -gt 0 ]] || die "FREQS: '$hz' is not a frequency"
done
for tool in $BENCH_TOOLS; do
	[[ $tool == perf || $tool == flamed ]] || die "BENCH_TOOLS: unknown tool '$tool' (perf, flamed)"
done
[[ $(id -u) -eq 0 ]] || skip "needs root (both tools record every CPU)"
if [[ " $BENCH_TOOLS " == *" perf "* ]]; then
	perf version >/dev/null 2>&1 || skip "needs perf (Debian: apt-get install linux-perf)"
fi
"$PYTHON" -c 'import ctypes, resource' 2>/dev/null || skip "needs $PYTHON (it measures the process trees)"
if [[ " $BENCH_TOOLS " == *" flamed "* ]]; then
	[[ -x $FLAMED ]] || die "no flamed binary at $FLAMED (run packaging/bootstrap.sh first)"
	FLAMED=$(readlink -f "$FLAMED")
	"$FLAMED" record --help 2>&1 | grep -q -- '--call-graph' ||
		skip "$FLAMED has no --call-graph dwarf"
fi
if [[ -z ${NOFP:-} ]]; then
	NOFP=$(dirname "$(readlink -f "$FLAMED")")/tests/fixtures/nofp_chain
fi
if [[ -z ${WORKLOADS:-} ]]; then
	WORKLOADS="make nofp"
	if [[ ! -x $NOFP ]]; then
		say "no nofp_chain fixture at $NOFP (built with the tests): only the make workload"
		WORKLOADS="make"
	fi
fi
for wl in $WORKLOADS; do
	case $wl in
	make) ;;
	nofp) [[ -x $NOFP ]] || die "no nofp_chain fixture at $NOFP (set NOFP)" ;;
	*) die "WORKLOADS: unknown workload '$wl' (make, nofp)" ;;
	esac
done
NCPU=$(nproc)

W=$(mktemp -d "${TMPDIR:-/tmp}/flamed-dwbench.XXXXXX")
WPID=
cleanup() {
	stop_workload
	if [[ -n $KEEP ]]; then
		mkdir -p "$KEEP" && { cp -a "$W"/*-*-*/ "$KEEP/" 2>/dev/null || true; }
	fi
	rm -rf "$W"
}
trap cleanup EXIT

if [[ " $WORKLOADS " == *" make "* ]]; then
	prepare_make_workload "$BENCH_SRC" "$W"
fi

# start_workload NAME: in its own session, so that stopping it stops every process it started.
start_workload() {
	case $1 in
	make)
		start_make_workload "$W"
		;;
	nofp)
		# shellcheck disable=SC2016 # $1 and $2 are expanded by the inner bash
		setsid bash -c 'for ((i = 0; i < $2; i++)); do "$1" 86400 & done; wait' \
			workload "$NOFP" "$NCPU" </dev/null >/dev/null 2>&1 &
		;;
	esac
	WPID=$!
	sleep "$WARMUP"
}

# Prints "cpu_s rss_mib post_wall_s" of the commands timed into FILE...
times_of() {
	awk -v d="$DURATION" '
		{ wall += $1; cpu += $2 + $3; if ($4 > rss) rss = $4 }
		END { printf "%.3f %.1f %.2f\n", cpu, rss / 1024, wall - d }' "$@"
}

# Every measurement prints one line of fields (perf: two, see measure_perf):
#   samples idle lost cpu_s rss_mib mib_written post_wall_s frames_per_sample
#   user_stacks complete_pct cut_pct failed_pct loop_cpu_s
# (the last five: flamed only, "-" for perf).

measure_perf() {
	local hz=$1 r=$2 how t
	timed "$r/times.record" perf record -e cpu-clock -a -F "$hz" --call-graph "dwarf,$STACK_SIZE" \
		-m "$PERF_MMAP_PAGES" -o "$r/perf.data" -- sleep "$DURATION" 2>"$r/record.err" ||
		die "perf record failed: $(tail -n 3 "$r/record.err")"
	# Not timed: how many records perf lost, from its event statistics.
	perf report -i "$r/perf.data" --stats >"$r/stats.txt" 2>&1 ||
		die "perf report --stats failed: $(tail -n 3 "$r/stats.txt")"
	# Post-processed twice: as perf script does by default (inlined functions
	# as frames of their own, found with addr2line), and without them, as
	# flamed has it. One line of fields each.
	for how in default no-inline; do
		local args=()
		[[ $how == default ]] || args=(--no-inline)
		# shellcheck disable=SC2086 # PERF_SCRIPT_ARGS: words
		timed "$r/times.$how" perf script "${args[@]}" $PERF_SCRIPT_ARGS -i "$r/perf.data" \
			>"$r/out.$how.txt" 2>"$r/script.$how.err" ||
			die "perf script ${args[*]} failed: $(tail -n 3 "$r/script.$how.err")"
		t=$(times_of "$r/times.record" "$r/times.$how")
		# A sample is a line at the left margin, its frames are indented lines
		# (address first: an address with inlined functions has several); the
		# idle task's samples are swapper's.
		awk -v t="$t" -v bytes="$(size_of "$r/perf.data" "$r/out.$how.txt")" -v stats="$r/stats.txt" '
			/^[^ \t]/ { n++; idle_now = /^swapper /; if (idle_now) idle++; prev = ""; next }
			/^[ \t]/ && !idle_now && $1 != prev { frames++; prev = $1 }
			END {
				while ((getline line < stats) > 0)
					if (line ~ /^ *LOST(_SAMPLES)? events:/) { split(line, f, ":"); lost += f[2] + 0 }
				split(t, x, " ")
				printf "%d %d %d %s %s %.2f %s %.1f - - - - -\n", n, idle, lost, x[1], x[2],
					bytes / 1048576, x[3], (n > idle ? frames / (n - idle) : 0)
			}' "$r/out.$how.txt"
		[[ -n $KEEP ]] || rm -f "$r/out.$how.txt"
	done
	[[ -n $KEEP ]] || rm -f "$r/perf.data"
}

measure_flamed() {
	local hz=$1 r=$2 t
	timed "$r/times" "$FLAMED" record -a -F "$hz" --call-graph "dwarf,$STACK_SIZE" -d "$DURATION" \
		-v -o "$r/out.folded" 2>"$r/record.err" ||
		die "flamed record failed: $(grep -v 'debug:' "$r/record.err" | tail -n 3)"
	t=$(times_of "$r/times")
	# Its summary (see print_summary() in cmd/flamed/record.c) and, with -v,
	# the CPU of each phase: "recording" and "final ring reads" read and unwind.
	sed -e 's/[(),%:]/ /g' "$r/record.err" | awk -v t="$t" -v bytes="$(size_of "$r/out.folded")" '
		$1 == "flamed" && $3 == "samples" && $5 == "stacks" { kept = $2 }
		$1 == "flamed" && $3 == "idle" && $4 == "samples" { idle = $2 }
		$1 == "flamed" && $3 == "samples" && $4 == "lost" { lost += $2 }
		$2 == "ring" && $3 == "buffer" && $6 == "lost" { lost += $4 }
		$1 == "flamed" && $2 == "DWARF" {
			stacks = $5; complete = $8; cut = $10
			for (i = 1; i < NF; i++) if ($(i + 1) == "failed") failed = $i
		}
		$1 == "flamed" && $2 == "unsymbolized" { for (i = 1; i < NF; i++) if ($(i + 1) == "frames" && $(i - 1) == "of") frames = $i }
		$2 == "debug" && ($3 == "recording" || ($3 == "final" && $5 == "reads")) {
			for (i = 1; i < NF; i++) if ($(i + 1) == "ms" && $(i + 2) == "CPU") loop += $i / 1000
		}
		END {
			split(t, x, " ")
			printf "%d %d %d %s %s %.2f %s %.1f %d %s %s %s %.3f\n", kept + idle, idle, lost,
				x[1], x[2], bytes / 1048576, x[3], (kept ? frames / kept : 0),
				stacks, complete, cut, failed, loop
		}'
	[[ -n $KEEP ]] || rm -f "$r/out.folded"
}

declare -A RESULT
ROWS=${BENCH_TOOLS/perf/perf perf-noinline} # the table's rows: perf's two post-processings
for wl in $WORKLOADS; do
	for hz in $FREQS; do
		for tool in $BENCH_TOOLS; do
			say "$tool at $hz Hz for $DURATION s, workload $wl"
			r=$W/$wl-$tool-$hz
			result_dir "$r"
			start_workload "$wl"
			out=$("measure_$tool" "$hz" "$r")
			if [[ $tool == perf ]]; then
				RESULT[$wl,perf,$hz]=$(sed -n 1p <<<"$out")
				RESULT[$wl,perf-noinline,$hz]=$(sed -n 2p <<<"$out")
			else
				RESULT[$wl,$tool,$hz]=$out
			fi
			stop_workload
		done
	done
done

label() {
	case $1 in
	perf-noinline) echo "perf, script --no-inline" ;;
	*) echo "$1" ;;
	esac
}

echo
what=flamed
[[ $(readlink -f "$BENCH_SRC") == "$SRCDIR" ]] || what=$BENCH_SRC
echo "Whole machine (-a, cpu-clock), $DURATION s, $NCPU CPUs; --call-graph dwarf,$STACK_SIZE for both,"
echo "ring buffers of $PERF_MMAP_PAGES pages per CPU for both. Workloads: make = make -j2 of $what in a loop,"
echo "nofp = one nofp_chain per CPU. perf = perf record + perf script${PERF_SCRIPT_ARGS:+ $PERF_SCRIPT_ARGS}, by default"
echo "(inlined functions looked up with addr2line) and with --no-inline (the same perf.data)."
echo "CPU = user + system of all the profiler's processes (addr2line too), post-processing included;"
echo "samples: every sample taken, idle ones included."
echo "Lost = records lost; frames / sample: per non-idle sample, user + kernel, inlined functions not counted."
echo
echo "| workload | Hz | tool | samples | idle | lost | CPU s | CPU ms / 1000 samples | peak RSS MiB | MiB written | frames / sample | s after recording |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for wl in $WORKLOADS; do
	for hz in $FREQS; do
		for row in $ROWS; do
			read -r n idle lost cpu rss mib post fps _ <<<"${RESULT[$wl,$row,$hz]}"
			per=$(awk -v c="$cpu" -v n="$n" 'BEGIN { if (n > 0) printf "%.1f", c * 1e6 / n; else print "-" }')
			echo "| $wl | $hz | $(label "$row") | $n | $idle | $lost | $cpu | $per | $rss | $mib | $fps | $post |"
		done
	done
done

if [[ " $BENCH_TOOLS " == *" flamed "* ]]; then
	echo
	echo "flamed's DWARF unwinding (one thread): user stacks and how they ended; samples per CPU second,"
	echo "over all of flamed's CPU and over its recording loop alone (ring reads + unwinding + counting, -v)."
	echo
	echo "| workload | Hz | user stacks | complete % | cut % | failed % | loop CPU s | samples / CPU s (all) | user stacks / CPU s (loop) |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	for wl in $WORKLOADS; do
		for hz in $FREQS; do
			read -r n _ _ cpu _ _ _ _ stacks complete cut failed loop <<<"${RESULT[$wl,flamed,$hz]}"
			awk -v wl="$wl" -v hz="$hz" -v n="$n" -v cpu="$cpu" -v st="$stacks" -v co="$complete" \
				-v cu="$cut" -v fa="$failed" -v loop="$loop" 'BEGIN {
				all = cpu > 0 ? sprintf("%.0f", n / cpu) : "-"
				lp = loop > 0 ? sprintf("%.0f", st / loop) : "-"
				printf "| %s | %s | %d | %s | %s | %s | %.3f | %s | %s |\n", wl, hz, st, co, cu, fa, loop, all, lp
			}'
		done
	done
fi

if [[ " $BENCH_TOOLS " == *" perf "* && " $BENCH_TOOLS " == *" flamed "* ]]; then
	echo
	echo "perf's CPU per sample over flamed's (goal: at least ${GOAL_RATIO}x, flamed at most a third of perf):"
	for wl in $WORKLOADS; do
		for hz in $FREQS; do
			read -r fn _ _ fcpu _ <<<"${RESULT[$wl,flamed,$hz]}"
			for row in perf perf-noinline; do
				read -r pn _ _ pcpu _ <<<"${RESULT[$wl,$row,$hz]}"
				awk -v what="$wl, $hz Hz, $(label "$row")" -v pn="$pn" -v pc="$pcpu" -v fn="$fn" \
					-v fc="$fcpu" -v goal="$GOAL_RATIO" 'BEGIN {
					if (pn == 0 || fn == 0) { printf "%s: no samples\n", what; exit }
					p = pc / pn; f = fc / fn
					if (f <= 0) { printf "%s: flamed used no measurable CPU\n", what; exit }
					printf "%s: %.1fx (%s)\n", what, p / f, (p / f >= goal ? "met" : "NOT met")
				}'
			done
		done
	done
fi
