#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed record -p PID`: all threads of a running process, including one it
# creates while recording; ends by itself when the process exits; the
# --per-thread and --per-process root frames; a list of PIDs.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

# 1. No -d: flamed must stop when the process exits (6 s after it started).
t0=$(now)
bg "$FIXTURES/chains" 6 --late-thread
pid=$BG_PID
wait_comm "$pid" chains
sleep 0.2
TIMEOUT=30 run_flamed pid record -F 999 -p "$pid" -o "$T/pid.folded"
t1=$(now)
expect_rc 0
wait "$pid" || fail "the chains fixture failed"
end=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
expect_between "$end" 5.8 11 "the time from starting the 6 s fixture to flamed's exit (s)"
check_folded "$T/pid.folded"
check_chains_split "$T/pid.folded"
c=$(count_matching "$T/pid.folded" "$CHAIN_C")
all=$(total_count "$T/pid.folded")
note "late thread: $c of $all samples (expected about 45%)"
[[ $c -gt 0 ]] || fail "no samples of the thread created while recording ($CHAIN_C)"
expect_between "$(percent "$c" "$all")" 25 70 "the late thread's share of all samples (%)"
roots=$(root_frames "$T/pid.folded" | sort -u | tr '\n' ' ')
[[ $roots == "chains " ]] || fail "root frames other than 'chains': $roots"

# 2. --per-thread: roots are chains-PID/TID; the main thread runs chains A
# and B, the late thread chain C.
bg "$FIXTURES/chains" 3 --late-thread
pid=$BG_PID
wait_comm "$pid" chains
TIMEOUT=30 run_flamed thread record -F 999 -p "$pid" --per-thread -o "$T/thread.folded"
expect_rc 0
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
bg "$FIXTURES/chains" 2
p1=$BG_PID
bg "$FIXTURES/chains" 2
p2=$BG_PID
wait_comm "$p1" chains
wait_comm "$p2" chains
TIMEOUT=30 run_flamed procs record -F 999 -p "$p1,$p2" --per-process -o "$T/procs.folded"
expect_rc 0
check_folded "$T/procs.folded"
roots=$(root_frames "$T/procs.folded" | sort -u | tr '\n' ' ')
want=$(printf '%s\n' "chains-$p1" "chains-$p2" | sort | tr '\n' ' ')
[[ $roots == "$want" ]] || fail "--per-process -p $p1,$p2: root frames '$roots', expected '$want'"

pass "record -p: all threads (one created late), stops at exit, --per-thread, --per-process, PID lists"
