#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The ring buffer backend (--no-bpf) and the samples the kernel gives pid
# -1: a task on its last way out after it was released, which has no pid
# any more (here: children of a parent that ignores SIGCHLD, which release
# themselves as they exit). flamed cannot tell whose they were; they are
# kernel time all the same, so -a keeps them under the root "[exiting]"
# and its accounting adds up. (They were counted as taken and then refused
# by the stack table: "N samples unaccounted for (a bug)", a dozen in
# 2.5 s of this load.) A released thread of a live process (tid -1) goes
# by its process.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
command -v python3 >/dev/null || skip "python3 is not installed (the fork loop is a Python one-liner)"

# Forks as fast as it can; each child exits at once and, SIGCHLD ignored, is
# released by its own exit.
bg python3 -c '
import os, signal, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
end = time.monotonic() + 30
while time.monotonic() < end:
    if os.fork() == 0:
        os._exit(0)
'
LOOP=$BG_PID
# Started once python runs it (the children live too briefly to wait for).
wait_comm "$LOOP" python3

run_flamed exiting record -a --no-bpf -F 999 -d 3 -o "$T/out.folded"
expect_rc 0
check_folded "$T/out.folded"
! grep -q 'unaccounted' "$T/exiting.err" || fail "$(grep unaccounted "$T/exiting.err")"
grep -q '^flamed: accounting: ' "$T/exiting.err" || fail "no accounting line: $(cat "$T/exiting.err")"
n=$(grep '^\[exiting\];' "$T/out.folded" | total_count /dev/stdin)
total=$(total_count "$T/out.folded")
note "$n of $total samples under [exiting]"
[[ $n -ge 1 ]] || fail "no sample under [exiting] in 3 s of a loop of self-releasing exits"
# Only kernel frames: a released task has no user stack left to show.
bad=$(grep '^\[exiting\];' "$T/out.folded" | sed -E 's/ [0-9]+$//' | tr ';' '\n' | grep -v '^\[exiting\]$' |
	grep -v '_\[k\]$' | head -n 3 || true)
[[ -z $bad ]] || fail "frames under [exiting] that are not the kernel's: $bad"

# A released thread of a live process has a pid but tid -1: it goes by its
# process (with --per-thread: COMM-PID/PID), never by a tid -1 whose name
# was kept from whichever process came first.
bg python3 -c '
import threading, time
end = time.monotonic() + 30
while time.monotonic() < end:
    ts = [threading.Thread(target=lambda: None) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
'
THREADS=$BG_PID
wait_comm "$THREADS" python3
run_flamed threads record -a --no-bpf --per-thread -F 999 -d 3 -o "$T/threads.folded"
expect_rc 0
check_folded "$T/threads.folded"
! grep -q 'unaccounted' "$T/threads.err" || fail "threads: $(grep unaccounted "$T/threads.err")"
bad=$(root_frames "$T/threads.folded" | grep -E '/4294967295$' | sort -u | head -n 3 || true)
[[ -z $bad ]] || fail "threads: root frames with tid -1 (4294967295): $bad"
n_thr=$(grep -E "^[^;]*-$THREADS/[0-9]+;" "$T/threads.folded" | total_count /dev/stdin)
note "threads: $n_thr samples of the thread loop, none under tid -1"
[[ $n_thr -ge 1 ]] || fail "threads: no sample of the thread loop (pid $THREADS)"

# In a child pid namespace a released task may have been one outside it:
# counted as outside, and the accounting adds up there too.
if command -v unshare >/dev/null && unshare --pid --fork --mount-proc true 2>/dev/null; then
	run_cmd in_ns unshare --pid --fork --mount-proc --kill-child \
		"$FLAMED" record -a --no-bpf -F 999 -d 3 -o "$T/ns.folded"
	expect_rc 0
	! grep -q 'unaccounted' "$T/in_ns.err" || fail "in a pid namespace: $(grep unaccounted "$T/in_ns.err")"
	outside=$(sed -nE "s/^flamed: accounting: .* ([0-9]+) outside flamed's pid namespace,.*/\1/p" "$T/in_ns.err")
	[[ -n $outside && $outside -ge 1 ]] || fail "in a pid namespace: no sample counted outside it: $(grep accounting "$T/in_ns.err")"
	! grep -q '^\[exiting\];' "$T/ns.folded" || fail "in a pid namespace: samples under [exiting], whose task may be outside it"
	note "in a pid namespace: $outside samples counted outside it, none under [exiting]"
else
	note "no pid namespace here (unshare --pid --fork --mount-proc failed): that half not run"
fi
pass "$n samples of released tasks kept under [exiting], the accounting adds up ($total samples; and in a pid namespace)"
