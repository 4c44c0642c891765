#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed record -p PID`: all threads of a running process, including one it
# creates while recording; ends by itself when the process exits; the
# --per-thread and --per-process root frames; a list of PIDs.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

# 1. No -d: flamed must stop when the process exits. The fixture burns 4 s
# of its own CPU (tests/fixtures/progs/work.h), however long that takes.
FIXTURE_CLOCK=cpu bg "$FIXTURES/chains" 4 --late-thread
pid=$BG_PID
wait_comm "$pid" chains
freeze "$pid"
bg_flamed pid record -v -F 999 -p "$pid" -o "$T/pid.folded"
wait_sampling pid
t_start=$(now)
c0=$(cpu_ticks "$pid")
thaw "$pid"
# Its exit, as this shell sees it (bash reaps it at once), and the CPU it
# had used when last seen alive.
# shellcheck disable=SC2317 # called by wait_until
exited() {
	local stat fields
	stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 0
	read -ra fields <<<"${stat##*) }"
	[[ ${fields[0]} == Z ]] && return 0
	c1=$((fields[11] + fields[12]))
	return 1
}
wait_until 120 "the exit of chains (4 s of CPU)" exited
t_exit=$(now)
wait_flamed pid
wait "$pid" || fail "the chains fixture failed"
check_folded "$T/pid.folded"
read -r secs why < <(sed -nE 's/^flamed: [0-9]+ samples, [0-9]+ stacks in ([0-9.]+) s \(([^,]*),.*/\1 \2/p' "$T/pid.err")
lived=$(awk -v a="$t_start" -v b="$t_exit" 'BEGIN { printf "%.2f", b - a }')
note "flamed recorded ${secs:-?} s and stopped as '${why:-?}'; chains exited ${lived} s after flamed said it samples"
[[ ${why:-} == "the processes exited" ]] || fail "flamed did not stop because the process exited: $(grep -v debug: "$T/pid.err" | head -n 1)"
expect_between "$secs" 0 "$(awk -v l="$lived" 'BEGIN { print l + 1 }')" "the time flamed recorded, against chains' life while recorded (s)"
check_chains_split "$T/pid.folded"
c=$(count_matching "$T/pid.folded" "$CHAIN_C")
all=$(total_count "$T/pid.folded")
expect_samples_of_cpu "$all" 999 "$(awk -v a="$c0" -v b="$c1" -v t="$CLK_TCK" 'BEGIN { printf "%.2f", (b - a) / t }')" "chains while recorded"
note "late thread: $c of $all samples (expected about 45%)"
[[ $c -gt 0 ]] || fail "no samples of the thread created while recording ($CHAIN_C)"
expect_between "$(percent "$c" "$all")" 25 70 "the late thread's share of all samples (%)"
roots=$(root_frames "$T/pid.folded" | sort -u | tr '\n' ' ')
[[ $roots == "chains " ]] || fail "root frames other than 'chains': $roots"

# 2. --per-thread: roots are chains-PID/TID; the main thread runs chains A
# and B, the late thread chain C.
FIXTURE_CLOCK=cpu bg "$FIXTURES/chains" 3 --late-thread
pid=$BG_PID
wait_comm "$pid" chains
record_frozen thread "$pid" -F 999 --per-thread -o "$T/thread.folded"
check_folded "$T/thread.folded"
bad=$(root_frames "$T/thread.folded" | grep -vE "^chains-$pid/[0-9]+\$" | sort -u | head -n 3 || true)
[[ -z $bad ]] || fail "--per-thread root frames not of the form chains-$pid/TID: $bad"
tids=$(root_frames "$T/thread.folded" | sort -u | wc -l)
[[ $tids -ge 2 ]] || fail "--per-thread: $tids thread(s), expected the main and the late thread"
bad=$(grep -F -- "$CHAIN_A" "$T/thread.folded" | grep -vE "^chains-$pid/$pid;" | head -n 1 || true)
[[ -z $bad ]] || fail "--per-thread: chain A outside the main thread: $bad"
late=$(grep -F -- "$CHAIN_C" "$T/thread.folded" | head -n 1 || true)
[[ -n $late ]] || fail "--per-thread: no samples of the late thread"
[[ $late != "chains-$pid/$pid;"* ]] || fail "--per-thread: the late thread's chain under the main thread: $late"

# 3. --per-process with two PIDs: roots are chains-PID1 and chains-PID2.
FIXTURE_CLOCK=cpu bg "$FIXTURES/chains" 2
p1=$BG_PID
FIXTURE_CLOCK=cpu bg "$FIXTURES/chains" 2
p2=$BG_PID
wait_comm "$p1" chains
wait_comm "$p2" chains
record_frozen procs "$p1,$p2" -F 999 --per-process -o "$T/procs.folded"
check_folded "$T/procs.folded"
roots=$(root_frames "$T/procs.folded" | sort -u | tr '\n' ' ')
want=$(printf '%s\n' "chains-$p1" "chains-$p2" | sort | tr '\n' ' ')
[[ $roots == "$want" ]] || fail "--per-process -p $p1,$p2: root frames '$roots', expected '$want'"

pass "record -p: all threads (one created late), stops at exit, --per-thread, --per-process, PID lists"
