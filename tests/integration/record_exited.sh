#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Processes that live for a moment and are gone when the recording ends:
# during `record -a`, a script runs short_burn 200 times (40 ms in short_hot
# each); short_hot's share of short_burn's samples is, within 5 points, its
# share of their CPU, with frame pointers and with --call-graph dwarf, and
# their samples match their CPU time. And a machine that starts thousands
# of processes: what flamed keeps of those that exited is dropped once
# their samples are named, so what it tracks follows the processes alive,
# and naming them looks at their stacks only.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

# record_during NAME COMMAND [FLAMED ARGS...]: records -a (-v) while bash
# runs COMMAND, started once flamed samples, and stops it afterwards: 3 s
# after COMMAND, and 12 s after the start at the earliest. (flamed drops
# what it held for processes that exited two of its 1 s ticks before, every
# 256 exits or every 10 ticks: the last ones must have had their turn.)
record_during() {
	local name=$1 cmd=$2 t0
	shift 2
	bg_flamed "$name" record -a -F 999 -v "$@" -o "$T/$name.folded"
	wait_sampling "$name"
	t0=$SECONDS
	bash -c "$cmd"
	sleep $((SECONDS - t0 < 9 ? 12 - (SECONDS - t0) : 3))
	stop_flamed "$name"
	check_folded "$T/$name.folded"
}

# cpu_seconds FILE: the children's user + system CPU seconds from what
# bash's `times` wrote to FILE (its second line: "XmY.YYYs XmY.YYYs").
cpu_seconds() {
	sed -n 2p "$1" | awk '{ t = 0
		for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += 60 * a[1] + a[2] }
		printf "%.3f\n", t }'
}

for mode in fp dwarf; do
	args=()
	[[ $mode == dwarf ]] && args=(--call-graph dwarf)
	# Each burns 40 ms of its own CPU, however busy the machine (work.h),
	# and says how long its burn loop took; `times` gives the CPU of them
	# all, start-up and exit included (the loop's only children). Their
	# pids tell them from the short_burn of other tests on the machine.
	pids=$T/short-$mode.pids burns=$T/short-$mode.burns times=$T/short-$mode.times
	record_during "short-$mode" "export FIXTURE_CLOCK=cpu SHORT_BURN_REPORT=1; for i in \$(seq 200); do
		'$FIXTURES/short_burn' 0.04 >>'$burns' & echo \$! >>'$pids'; wait \$!; done; times >'$times'" --per-process "${args[@]}"
	# shellcheck disable=SC2046 # one pid per word
	of_pids "$T/short-$mode.folded" $(cat "$pids") >"$T/short-$mode.mine"
	all=$(total_count "$T/short-$mode.mine")
	hot=$(count_matching "$T/short-$mode.mine" ";short_hot")
	cpu=$(cpu_seconds "$times")
	burn=$(awk '{ t += $1 } END { printf "%.3f\n", t / 1e9 }' "$burns")
	[[ $(wc -l <"$burns") -eq 200 ]] || fail "$mode: $(wc -l <"$burns") of 200 short_burn runs reported their burn"
	# Every CPU second of theirs at 999 Hz, none lost with its process:
	# measured against the CPU they used, which start-up and exit make
	# more than 200 x 40 ms (by 2 % here, 16 % on a busy VM).
	expect_samples_of_cpu "$all" 999 "$cpu" "$mode: short_burn"
	# Named after they exited: short_hot's share of the samples is its
	# share of their CPU (the burn loop), less the loop's clock reads.
	want=$(awk -v b="$burn" -v c="$cpu" 'BEGIN { printf "%.1f\n", (c > 0 ? 100 * b / c : 0) }')
	s=$(percent "$hot" "$all")
	note "$mode: $hot of $all short_burn samples name short_hot ($s%); their burn loops took $burn of their $cpu CPU seconds ($want%)"
	expect_between "$want" 50 100 "$mode: the burn loops' share of short_burn's CPU (%)"
	expect_between "$s" "$(awk -v w="$want" 'BEGIN { print w - 5 }')" 100 "the share of short_burn samples in short_hot ($mode, %)"
	# They were named as the recording went, and their processes dropped.
	grep -Eq "process tracker: .* [1-9][0-9]+ dropped once their samples were named" "$T/short-$mode.err" ||
		fail "$mode: no processes dropped: $(grep 'process tracker' "$T/short-$mode.err")"
done

# Thousands of processes: what is tracked at once stays a fraction of them.
# flamed drops a process two of its 1 s ticks after its exit at the soonest:
# the churn lasts 10 s, and 1500 processes (a busy machine runs fewer in 10 s).
# Beside them a long-lived process burns 4 s of CPU in stacks of its own
# (thousands: its leaf addresses vary), still running at every flush.
record_during churn "FIXTURE_CLOCK=cpu '$FIXTURES/short_burn' 4 & end=\$((SECONDS + 10)); for ((i = 0; i < 1500 || SECONDS < end; i++)); do /bin/true; done; wait"
# What a flush costs: the stacks of the processes it passes on, and no
# other: it looks at none of the long-lived one's (nor any still running).
line=$(grep "exited processes:" "$T/churn.err") || fail "no exited processes line in -v output"
note "$line"
read -r flushes passed looked gathers < <(sed -E 's/.*: ([0-9]+) flushes passed on ([0-9]+) stacks and looked at ([0-9]+); ([0-9]+) gathers.*/\1 \2 \3 \4/' <<<"$line")
[[ $flushes -ge 2 && $passed -gt 0 ]] || fail "flushes passed on nothing: $line"
[[ $looked -eq $passed ]] || fail "the flushes looked at $looked stacks to pass on $passed: $line"
[[ $gathers -ge 8 ]] || fail "the kernel's counts were gathered $gathers times in 12 s or more: $line"
line=$(grep "process tracker:" "$T/churn.err") || fail "no process tracker line in -v output"
note "$line"
read -r forks exits peak dropped < <(sed -E 's/.* ([0-9]+) forks, [0-9]+ execs, ([0-9]+) exits; [0-9]+ processes tracked at the end, at most ([0-9]+) at once, ([0-9]+) dropped.*/\1 \2 \3 \4/' <<<"$line")
[[ $forks -ge 1000 ]] || fail "only $forks forks: the churn did not run"
expect_between "$(percent "$dropped" "$exits")" 80 100 "the share of exited processes dropped during the recording"
expect_between "$(percent "$peak" "$forks")" 0 70 "the most processes tracked at once, as a share of those started"

pass "short-lived processes are named (fp and dwarf) and dropped once named"
