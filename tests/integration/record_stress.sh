#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Load: -a -F 999 for 60 s while every CPU runs stack_storm, whose random
# call chains make nearly every sample a stack never seen before: far more
# than the BPF stack map holds, so the overflow path (samples sent whole to
# user space) carries much of the load. Every sample taken must be
# accounted for: the summary's profile + idle + other processes + lost (each
# cause its own counter) add up to the samples taken, within 1 %, and the
# profile written holds what the summary says. flamed's own CPU and peak RSS
# are printed (tests/bench/stress_vs_perf.sh checks the goals at 99 Hz).
# STRESS_SECONDS (default 60) shortens it for a quick try.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

secs=${STRESS_SECONDS:-60}
cpus=$(nproc)
bg "$FIXTURES/stack_storm" $((secs + 10)) "$cpus"
sleep 1

TIMEOUT=$((secs + 120)) run_flamed stress record -a -F 999 -d "$secs" -o "$T/stress.folded"
expect_rc 0
check_folded "$T/stress.folded"
grep '^flamed: ' "$T/stress.err" | sed 's/^/   /'

acct=$(grep '^flamed: accounting: [0-9]* samples taken' "$T/stress.err") ||
	fail "no accounting line in the summary"
! grep -q 'unaccounted' "$T/stress.err" || fail "samples unaccounted for: $(grep unaccounted "$T/stress.err")"
read -r taken profile idle other lost ring_full perf_full < <(
	sed -E 's/^flamed: accounting: ([0-9]+) samples taken: ([0-9]+) in the profile, ([0-9]+) idle, ([0-9]+) of other processes, ([0-9]+) lost \(([0-9]+) with the BPF overflow ring full, ([0-9]+) with a perf ring full\)$/\1 \2 \3 \4 \5 \6 \7/' <<<"$acct")
[[ $perf_full =~ ^[0-9]+$ ]] || fail "cannot read the accounting line: $acct"
sum=$((profile + idle + other + lost))
note "taken $taken = profile $profile + idle $idle + other processes $other + lost $lost ($ring_full overflow ring full, $perf_full perf ring full): $sum"
[[ $lost -eq $((ring_full + perf_full)) ]] || fail "lost $lost is not the sum of its causes"
diff=$((taken > sum ? taken - sum : sum - taken))
[[ $((diff * 100)) -le $taken ]] || fail "the accounted samples ($sum) differ from those taken ($taken) by more than 1 %"
written=$(total_count "$T/stress.folded")
[[ $written -eq $profile ]] || fail "the profile holds $written samples, the summary says $profile"

# The storm must have been what it is for: more distinct stacks than the map.
recovered=$(sed -n 's/^flamed: \([0-9]*\) samples counted in user space.*/\1/p' "$T/stress.err")
[[ ${recovered:-0} -gt 0 ]] || fail "no sample went through the overflow path: the stack map held every stack"
stacks=$(wc -l <"$T/stress.folded")
expected=$((999 * cpus * secs))
note "$stacks distinct stacks, $recovered samples counted in user space; $taken of about $expected samples taken"
# Throttling or a starved CPU takes some; far fewer means sampling broke down.
[[ $((taken * 10)) -ge $((expected * 7)) ]] || fail "only $taken samples taken of about $expected"
grep '^flamed: own cost:' "$T/stress.err" || fail "no own-cost line in the summary"

pass "-a -F 999 for $secs s under a storm of distinct stacks: every sample accounted for"
