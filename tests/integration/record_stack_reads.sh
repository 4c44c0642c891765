#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Emptying the kernel's stack map after a gather costs one bpf call a
# stack, not three: where the kernel can (Linux 6.13 and later), each stack
# id the drain reads is deleted in the same call
# (BPF_MAP_LOOKUP_AND_DELETE_ELEM), and what little is left is found with
# one BPF_MAP_GET_NEXT_KEY. (Each id was looked up, then found again with
# BPF_MAP_GET_NEXT_KEY and deleted with BPF_MAP_DELETE_ELEM.) Counted with
# perf on the bpf syscall's tracepoint, by command, while flamed records
# stack_storm, nearly every sample of which is a new stack, with frame
# pointers (the user stacks are in that map then).
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
need_bpf
need_bpf_calls

CMD_GET_NEXT_KEY=4
CMD_LOOKUP_AND_DELETE=21

bg "$FIXTURES/stack_storm" 60 1
STORM=$BG_PID
wait_comm "$STORM" stack_storm

RC=0
perf stat -x, -o "$T/stat.csv" \
	-e syscalls:sys_enter_bpf --filter "cmd == $CMD_GET_NEXT_KEY" \
	-e syscalls:sys_enter_bpf --filter "cmd == $CMD_LOOKUP_AND_DELETE" \
	-- "$FLAMED" record -v --call-graph fp -F 999 -p "$STORM" -d 4 -o "$T/out.folded" \
	2>"$T/record.err" || RC=$?
expect_rc 0
grep -q ', bpf backend' "$T/record.err" || fail "not the BPF backend: $(grep -v debug: "$T/record.err")"
if grep -q 'cannot be looked up and deleted at once' "$T/record.err"; then
	skip "this kernel ($(uname -r)) cannot look up and delete a stack-map entry in one call (Linux 6.13 and later can)"
fi
moved=$(sed -nE 's/.* gathers moved ([0-9]+) entries.*/\1/p' "$T/record.err")
gathers=$(sed -nE 's/.*; ([0-9]+) gathers moved.*/\1/p' "$T/record.err")
next=$(stat_count "$T/stat.csv" 1)
lad=$(stat_count "$T/stat.csv" 2)
[[ -n $moved && -n $gathers && -n $next && -n $lad ]] ||
	fail "cannot read the counts: moved '$moved', gathers '$gathers', get_next_key '$next', lookup_and_delete '$lad'"
note "$gathers gathers moved $moved counts; bpf calls: $lad lookups-and-deletes, $next get_next_key"
# A meaningful load: stack_storm makes a new stack nearly every sample.
[[ $moved -ge 200 ]] || fail "only $moved counts gathered in 4 s at 999 Hz: stack_storm barely ran"
# Every gathered count names a stack read once, and deleted by that read.
[[ $((lad * 2)) -ge $moved ]] ||
	fail "$lad lookups-and-deletes for $moved gathered counts: the stacks are not deleted as they are read"
# Left to clear after each gather: one call that finds the map empty, a few
# for ids no count named (collisions). Three calls a stack before.
[[ $next -le $((4 * gathers + 20)) ]] ||
	fail "$next BPF_MAP_GET_NEXT_KEY calls for $gathers gathers of $moved counts: the stack map is still walked id by id"
pass "stack map emptied as it is read: $lad lookups-and-deletes and $next get_next_key for $moved counts in $gathers gathers"
