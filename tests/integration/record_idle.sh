#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The idle task (pid 0, comm swapper/N) is left out of -a profiles and
# counted in the summary, unless --idle asks for it. Idle samples exist only
# when a CPU is idle: on a machine busy with other work the test tries a few
# times and skips, saying so, rather than pass without having seen any.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

# idle_dropped ERRFILE: N of the summary line "flamed: N idle samples dropped", or 0.
idle_dropped() {
	awk '/^flamed: [0-9]+ idle samples dropped/ { print $2; found = 1; exit }
	     END { if (!found) print 0 }' "$1"
}

for attempt in 1 2 3; do
	run_flamed "noidle$attempt" record -a -F 999 -d 1 -o "$T/noidle.folded"
	expect_rc 0
	if [[ -s $T/noidle.folded ]]; then
		check_folded "$T/noidle.folded"
		! grep -q '^swapper' "$T/noidle.folded" || fail "without --idle: stacks of the idle task"
	fi
	dropped=$(idle_dropped "$T/noidle$attempt.err")

	run_flamed "idle$attempt" record -a --idle -F 999 -d 1 -o "$T/idle.folded"
	expect_rc 0
	check_folded "$T/idle.folded"
	kept=$(awk '/^swapper/ { n += $NF } END { printf "%d\n", n }' "$T/idle.folded")
	[[ $(idle_dropped "$T/idle$attempt.err") -eq 0 ]] || fail "--idle: idle samples still dropped"
	note "attempt $attempt: $dropped idle samples dropped without --idle, $kept kept with it"
	if [[ $kept -gt 0 && $dropped -gt 0 ]]; then
		pass "idle samples dropped and counted by default, kept under swapper with --idle"
	fi
	sleep 1
done
skip "the CPUs were never idle during three tries: the machine is busy with other work"
