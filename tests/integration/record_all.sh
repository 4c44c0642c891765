#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed record -a -d 2`: the whole machine, user and kernel frames, for the
# given time; the summary's sample count matches the output.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

bg "$FIXTURES/chains" 5
wait_comm "$BG_PID" chains
# Something that lives in the kernel, so that kernel stacks are sampled for sure.
bg timeout 10 dd if=/dev/zero of=/dev/null bs=64k

run_flamed all record -a -F 199 -d 2 -o "$T/all.folded"
expect_rc 0
expect_between "$ELAPSED" 1.9 10 "record -d 2's wall time (s)"
check_folded "$T/all.folded"
grep -q '_\[k\]' "$T/all.folded" || fail "no kernel frames (_[k]) in a system-wide profile"
grep -q '^dd;.*_\[k\]' "$T/all.folded" || fail "no kernel stacks of dd"
[[ $(count_matching "$T/all.folded" "$CHAIN_A") -gt 0 ]] || fail "no samples in $CHAIN_A"
[[ $(count_matching "$T/all.folded" "$CHAIN_B") -gt 0 ]] || fail "no samples in $CHAIN_B"
grep -q '^chains;' "$T/all.folded" || fail "no stacks under 'chains'"

sum=$(total_count "$T/all.folded")
said=$(summary_samples "$T/all.err")
[[ $sum -eq $said ]] || fail "the output holds $sum samples, the summary says $said"

# Every ELF file is read once per recording, however many processes map it:
# this machine's libc is mapped by every process here. A file is its device
# and inode, as flamed's debug line gives them: the processes of a container
# map a libc.so.6 of their own, another file under the same name.
bg "$FIXTURES/chains" 3
wait_comm "$BG_PID" chains
read -r dev ino < <(awk '$6 ~ /\/libc\.so\.6$/ { print $4, $5; exit }' "/proc/$BG_PID/maps") ||
	fail "the chains fixture maps no libc.so.6"
libc="(device $((16#${dev%%:*})):$((16#${dev#*:})), inode $ino)"
run_flamed verbose record -v -a --per-process -F 199 -d 1 -o "$T/v.folded"
expect_rc 0
check_folded "$T/v.folded"
[[ $(root_frames "$T/v.folded" | sort -u | wc -l) -ge 2 ]] || fail "expected stacks of several processes"
reads=$(grep -cF "/libc.so.6 $libc:" "$T/verbose.err" || true)
note "libc.so.6 $libc read $reads times; all libc.so.6 read: $(grep -c 'symbolizer: read .*/libc\.so\.6 ' "$T/verbose.err" || true)"
[[ $reads -eq 1 ]] || fail "libc.so.6 $libc was read $reads times, expected once: $(grep 'symbolizer: read .*/libc\.so\.6' "$T/verbose.err")"

pass "record -a -d 2: kernel and user stacks, chains present, $sum samples as summarized"
