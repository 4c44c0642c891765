#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Measurement: how much of each user stack flamed's --call-graph modes recover
# on real programs nobody here wrote, against --call-graph dwarf.
#
#   tests/bench/unwind_accuracy.sh [-m MODES] [-d SECONDS] [-F HZ] [-w WORKLOADS] [-b] [-k DIR]
#
# By default every mode records the same run of each workload: the
# recorders are nested, `flamed record --call-graph dwarf -- flamed record
# --call-graph fp -- ... -- flamed record --call-graph dwarf -- timeout
# SECONDS CMD`, so that each sees the same processes do the same work, and
# the only differences between their profiles are their unwinding and their
# sampling (each recorder leaves the samples of the flamed processes inside
# it out of its profile). A build with make -j2 on a machine others share is
# not the same twice: recorded in turn, the modes would differ by what the
# scheduler did. The cost: every recorder's work slows the workload for all
# of them, and a mode that cannot run beside another instance of itself
# cannot be measured so; -b (--back-to-back) records each mode in a run of
# its own instead, the same command from its start each time.
#
# The reference mode records twice (outermost and innermost, or first and
# last): its second recording is a control row, which must pass against the
# first, or the verdicts of the other modes mean nothing.
#
# Per workload and mode (tests/bench/unwind_accuracy.py computes them from the
# folded output, user frames only, the flamed processes left out):
#   no user stack %  samples without a user frame (exec, exit, ...)
#   whole %          samples whose user stack reaches a root: main, _start,
#                    __libc_start_main, __libc_start_call_main, or a thread's
#                    clone/clone3/start_thread (ROOTS), or that starts at
#                    the dynamic linker's entry (a process not at main yet)
#   L1               sum over functions of |p_mode(f) - p_ref(f)|, p(f) the
#                    share of samples whose user stack contains f (inclusive)
#   noise            the median L1 between two random halves (binomial
#                    thinning) of the reference's recording: see
#                    split_noise() in the .py
# Goals: whole % at most 2 points below the reference's (MAX_DROP); L1 at most
# the noise.
#
# Workloads (-w, WORKLOADS, default "build python xz sort"):
#   build   make -j2 of a copy of this repository (configured and built once
#           first), from `make clean`, restarted in a loop: gcc's cc1, as, ld,
#           make, cmake, clang for the BPF object, rustc for two fixtures
#           when it is installed; many short processes
#   python  /usr/bin/python3 -c: a loop of small recursive functions
#   xz      xz -9 -k -c of a generated 50 MB text file
#   sort    sort on three keys of the same file (it may end before SECONDS)
#
# Options (and the environment variables they set):
#   -m, --modes MODES    (MODES, default "fp dwarf default") --call-graph
#                        values, one word each (fp, dwarf, dwarf,8192, ...);
#                        "default" records without --call-graph
#   -r, --ref MODE       (REF, default dwarf) the reference mode
#   -d, --duration S     (DURATION, default 10) seconds per recording
#   -F, --freq HZ        (FREQ, default 999) sampling frequency
#   -w, --workloads W    (WORKLOADS) a subset of the workloads above
#   -b, --back-to-back   (SAME_RUN=0) one run per mode instead of nested recorders
#   -k, --keep DIR       (KEEP) keep every run's folded output and stderr in DIR
#   -h, --help           this text
# Also FLAMED (build/flamed), BENCH_SRC (the project the build workload builds;
# the repository), PY (/usr/bin/python3: a distribution build, not a pyenv
# shim), ROOTS (comma-separated), MAX_DROP, SPLITS (21), PYTHON (python3, to
# compute). Takes about workloads x SECONDS (-b: x (modes + 2)), plus a
# minute to build the copy. Needs root; exits 77 when a tool is missing.
# libc's frames are named with its debug info (Debian: libc6-dbg); without it
# start_thread and __libc_start_call_main stay unnamed and every mode loses
# whole stacks alike. Not part of ctest.
set -euo pipefail
export LC_ALL=C

SRCDIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
MODES=${MODES:-fp dwarf default}
REF=${REF:-dwarf}
DURATION=${DURATION:-10}
FREQ=${FREQ:-999}
WORKLOADS=${WORKLOADS:-build python xz sort}
KEEP=${KEEP:-}
SAME_RUN=${SAME_RUN:-1}
FLAMED=${FLAMED:-$SRCDIR/build/flamed}
BENCH_SRC=${BENCH_SRC:-$SRCDIR}
PY=${PY:-/usr/bin/python3}
PYTHON=${PYTHON:-python3}
ROOTS=${ROOTS:-main,_start,__libc_start_main,__libc_start_call_main,clone,__clone,clone3,__clone3,start_thread}
MAX_DROP=${MAX_DROP:-2}
SPLITS=${SPLITS:-21}

# shellcheck source=tests/bench/lib.sh
source "$SRCDIR/tests/bench/lib.sh"

usage() {
	sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$SRCDIR/tests/bench/unwind_accuracy.sh"
}

while (($#)); do
	case $1 in
	-m | --modes) MODES=${2?}; shift ;;
	-r | --ref) REF=${2?}; shift ;;
	-d | --duration) DURATION=${2?}; shift ;;
	-F | --freq) FREQ=${2?}; shift ;;
	-w | --workloads) WORKLOADS=${2?}; shift ;;
	-b | --back-to-back) SAME_RUN=0 ;;
	-k | --keep) KEEP=${2?}; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done

[[ $DURATION =~ ^[0-9]+$ && $DURATION -gt 0 ]] || die "DURATION must be a whole number of seconds, not '$DURATION'"
[[ $FREQ =~ ^[0-9]+$ && $FREQ -gt 0 ]] || die "FREQ must be a frequency in Hz, not '$FREQ'"
SAFETY=$((DURATION + 120)) # seconds: see workload_cmd
for wl in $WORKLOADS; do
	case $wl in
	build | python | xz | sort) ;;
	*) die "unknown workload '$wl' (build, python, xz, sort)" ;;
	esac
done
[[ $(id -u) -eq 0 ]] || skip "needs root (flamed record samples with perf events and BPF)"
[[ -x $FLAMED ]] || die "no flamed binary at $FLAMED (cmake -S . -B build && cmake --build build)"
FLAMED=$(readlink -f "$FLAMED")
"$PYTHON" -c 'import statistics' 2>/dev/null || skip "needs $PYTHON (it computes the distances)"
[[ " $WORKLOADS " != *" python "* || -x $PY ]] || skip "no $PY (set PY)"
[[ " $WORKLOADS " != *" xz "* ]] || command -v xz >/dev/null || skip "needs xz (Debian: xz-utils)"

# The reference first, the other modes, the reference again (the control row).
RUNS=("$REF")
for m in $MODES; do
	[[ $m == "$REF" ]] || RUNS+=("$m")
done
RUNS+=("$REF")

bench_workdir
WPGID= # the build workload's process group, while it runs
cleanup() {
	stop_build
	[[ -n $KEEP ]] || rm -rf "$W"
}
trap cleanup EXIT

# stop_build: ends what is left of the build workload's process group (its
# shell stops it on SIGTERM from timeout; this is for when it could not).
stop_build() {
	local i
	[[ -n $WPGID ]] || return 0
	kill -TERM -- "-$WPGID" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		kill -0 -- "-$WPGID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL -- "-$WPGID" 2>/dev/null || true
	WPGID=
}

if [[ " $WORKLOADS " == *" build "* ]]; then
	prepare_make_workload "$BENCH_SRC" "$W"
fi
if [[ " $WORKLOADS " == *" xz "* || " $WORKLOADS " == *" sort "* ]]; then
	# 50 MB of lines of numbers and words: compressible, but not trivially;
	# the same bytes for every mode.
	say "generating $W/input.txt (50 MB)"
	awk 'BEGIN {
		srand(42)
		split("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu " \
		      "nu xi omicron pi rho sigma tau upsilon phi chi psi omega", w, " ")
		for (n = 0; n < 50000000; n += length(l)) {
			l = sprintf("%08d %s %s %d %s\n", int(rand() * 1e8), w[int(rand() * 24) + 1],
				w[int(rand() * 24) + 1], int(rand() * 100000), w[int(rand() * 24) + 1])
			printf "%s", l
		}
	}' >"$W/input.txt"
fi

# workload_cmd NAME: sets CMD, the command flamed runs. The workload ends
# itself, through timeout(1), and every recorder stops when it has exited:
# had the innermost recorder stopped it at its -d, the outer ones would have
# seen it exit (tearing down its memory, user stack gone) and it would not.
# -d SAFETY only stops a recorder whose command hangs.
workload_cmd() {
	CMD=(timeout "$DURATION")
	case $1 in
	build)
		# In its own process group (setsid execs in place: timeout's child
		# is no group leader), so that the SIGTERM timeout sends it at the
		# end stops every make and compiler, not only the shell.
		# shellcheck disable=SC2016 # expanded by the inner bash
		CMD+=(setsid bash -c 'echo $$ >"$1"
			trap "trap - TERM; kill -TERM -- -$$ 2>/dev/null; exit 143" TERM
			while :; do
				make -C "$2" -j2 >/dev/null 2>&1 & wait $!
				make -C "$2" clean >/dev/null 2>&1 & wait $!
			done' build "$W/build.pgid" "$W/build")
		;;
	python)
		# Bounded by count, not time: every mode sees the same work.
		CMD+=("$PY" -c '
def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

def mid(d):
    return leaf(200) if d == 0 else mid(d - 1) + len(sorted(str(d) * 20))

for _ in range(10**7):
    mid(8)
')
		;;
	xz) CMD+=(xz -9 -k -c "$W/input.txt") ;; # its stdout: flamed's, /dev/null
	sort) CMD+=(sort "-k3,3" "-k5,5" "-k4,4n" -o /dev/null "$W/input.txt") ;;
	esac
}

# call_graph MODE: sets CG, the option that selects MODE.
call_graph() {
	CG=()
	[[ $1 == default ]] || CG=(--call-graph "$1")
}

# before_run WORKLOAD / after_run WORKLOAD: what a run of WORKLOAD needs
# around it (the build: from clean, and nothing of it left running after).
before_run() {
	[[ $1 == build ]] || return 0
	make -C "$W/build" clean >/dev/null 2>&1
	rm -f "$W/build.pgid"
}
after_run() {
	[[ $1 == build && -s $W/build.pgid ]] || return 0
	WPGID=$(<"$W/build.pgid")
	stop_build
}

# record_apart WORKLOAD: each of RUNS in a run of its own, into $W/WORKLOAD-I.
record_apart() {
	local wl=$1 i r
	workload_cmd "$wl"
	for ((i = 0; i < ${#RUNS[@]}; i++)); do
		r=$W/$wl-$i
		result_dir "$r"
		say "$wl: ${RUNS[i]}, $DURATION s at $FREQ Hz"
		call_graph "${RUNS[i]}"
		before_run "$wl"
		"$FLAMED" record -F "$FREQ" -d "$SAFETY" "${CG[@]}" -o "$r/out.folded" -- "${CMD[@]}" \
			>/dev/null 2>"$r/record.err" || true
		after_run "$wl"
	done
}

# record_nested WORKLOAD: every one of RUNS around the same run, into
# $W/WORKLOAD-I; RUNS[0] outermost.
record_nested() {
	local wl=$1 i r cmd=()
	for ((i = 0; i < ${#RUNS[@]}; i++)); do
		r=$W/$wl-$i
		result_dir "$r"
		call_graph "${RUNS[i]}"
		# Each recorder's stderr to its own file: through a script whose
		# name (the process name of its few samples) starts with "flamed",
		# as the recorders' own do, so that the outer recorders leave
		# both out.
		cmd+=("$W/flamed-stderr" "$r/record.err" "$FLAMED" record -F "$FREQ" -d "$SAFETY"
			"${CG[@]}" -o "$r/out.folded" --)
	done
	workload_cmd "$wl"
	say "$wl: ${RUNS[*]} at once, $DURATION s at $FREQ Hz"
	before_run "$wl"
	"${cmd[@]}" "${CMD[@]}" >/dev/null || true
	after_run "$wl"
}

if ((SAME_RUN)); then
	# shellcheck disable=SC2016 # for the script's shell to expand
	printf '#!/bin/sh\n# stderr to $1, then runs the rest\nexec 2>"$1"\nshift\nexec "$@"\n' \
		>"$W/flamed-stderr"
	chmod +x "$W/flamed-stderr"
fi

declare -A ROWS
for wl in $WORKLOADS; do
	if ((SAME_RUN)); then
		record_nested "$wl"
	else
		record_apart "$wl"
	fi
	args=()
	for ((i = 0; i < ${#RUNS[@]}; i++)); do
		r=$W/$wl-$i
		[[ -s $r/out.folded ]] ||
			die "flamed record ${RUNS[i]} of $wl wrote nothing: $(tail -n 3 "$r/record.err" 2>/dev/null)"
		if ((i == ${#RUNS[@]} - 1)); then
			args+=("$REF (again)=$r")
		elif ((i)); then
			args+=("${RUNS[i]}=$r")
		fi
	done
	ROWS[$wl]=$("$PYTHON" "$SRCDIR/tests/bench/unwind_accuracy.py" --ref-label "$REF" \
		--drop-comm flamed --roots "$ROOTS" --max-drop "$MAX_DROP" --splits "$SPLITS" \
		"$wl" "$W/$wl-0" "${args[@]}")
done

echo
if ((SAME_RUN)); then
	echo "flamed record -F $FREQ, all modes nested around the same run of each workload (timeout $DURATION);"
	echo "reference: --call-graph $REF, recorded twice (outermost and innermost)."
else
	echo "flamed record -F $FREQ -- timeout $DURATION CMD, each mode in a run of its own; reference:"
	echo "--call-graph $REF, recorded first and again last."
fi
echo "Its second recording must pass against the first: else the verdicts mean nothing."
echo "whole %: samples whose user stack reaches main/_start/__libc_start_*/clone*/start_thread"
echo "or starts at ld.so's entry; no user stack %: samples without a user frame (exec, exit...);"
echo "L1: sum over functions |p_mode(f) - p_$REF(f)|, p(f) = share of samples whose user stack"
echo "contains f; noise: median L1 between random halves of the reference run ($SPLITS splits)."
echo "Goals: whole % at most $MAX_DROP points below $REF's; L1 <= noise."
echo
echo "| workload | mode | samples | lost | no user stack % | whole % | vs $REF (pts) | L1 vs $REF | noise | whole | L1 |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"
for wl in $WORKLOADS; do
	echo "${ROWS[$wl]}"
done
[[ -z $KEEP ]] || say "runs kept in $W"
