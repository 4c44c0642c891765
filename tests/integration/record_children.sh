#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed record -- CMD` follows the processes CMD forks: the spawner fixture
# burns all its CPU in a child, its parent only waits.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

# The child burns 2 s of its own CPU, however busy the machine.
FIXTURE_CLOCK=cpu run_flamed children record -F 999 -o "$T/out.folded" -- "$FIXTURES/spawner" 2
expect_rc 0
check_folded "$T/out.folded"

child=$(count_matching "$T/out.folded" "$CHILD_SPIN")
all=$(total_count "$T/out.folded")
note "child_spin: $child of $all samples"
expect_samples_of_cpu "$all" 999 2 "spawner and its child"
expect_between "$(percent "$child" "$all")" 80 100 "the child's share of all samples (%)"

roots=$(root_frames "$T/out.folded" | sort -u | tr '\n' ' ')
[[ $roots == "spawner " ]] || fail "root frames other than 'spawner': $roots"

pass "record -- spawner: the forked child's stacks are in the profile"
