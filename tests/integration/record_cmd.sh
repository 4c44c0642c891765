#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed record -- CMD`: the command's call chains, their CPU split, its name.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

# 3 s of its own CPU, however busy the machine: about 3 x 999 samples.
FIXTURE_CLOCK=cpu run_flamed cmd record -F 999 -o "$T/out.folded" -- "$FIXTURES/chains" 3
expect_rc 0
check_folded "$T/out.folded"
check_chains_split "$T/out.folded"
expect_samples_of_cpu "$(total_count "$T/out.folded")" 999 3 "chains"

# Only the command is profiled, and only after its exec: every root is its comm.
roots=$(root_frames "$T/out.folded" | sort -u | tr '\n' ' ')
[[ $roots == "chains " ]] || fail "root frames other than 'chains': $roots"

# The command runs with the signal dispositions flamed was started with:
# flamed ignores SIGPIPE for itself, and `yes` in a closed pipe must still
# die of SIGPIPE (status 141), not see EPIPE.
# (env --default-signal: whatever the test runner ignores, flamed starts with the default.)
run_cmd pipe env --default-signal=PIPE "$FLAMED" record -o "$T/pipe.folded" -- bash -c 'yes | head -c 1 >/dev/null; echo "${PIPESTATUS[0]}" >"$1"' pipe "$T/pipe.status"
expect_rc 0
[[ $(cat "$T/pipe.status") == 141 ]] || fail "yes in a closed pipe exited $(cat "$T/pipe.status"), not 141 (SIGPIPE)"

pass "record -- chains: chains A and B at 75/25, all under 'chains'"
