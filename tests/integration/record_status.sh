#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# On a terminal, flamed record keeps one status line updated on stderr
# (elapsed time, samples so far); when stderr is not a terminal, none.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
command -v script >/dev/null || skip "needs script(1) (util-linux) for a pseudo-terminal"

# Something to sample: an idle machine gives -a no samples (idle is dropped).
bg "$FIXTURES/chains" 8
wait_comm "$BG_PID" chains

# script(1) gives flamed a pseudo-terminal and copies what it writes to tty.log.
run_cmd tty script -qfec "$FLAMED record -a -F 99 -d 2.5 -o $T/tty.folded" "$T/tty.log"
expect_rc 0
check_folded "$T/tty.folded"
updates=$(grep -o $'\rflamed: recording [0-9]* s, [0-9]* samples' "$T/tty.log" | wc -l)
[[ $updates -ge 2 ]] || fail "expected the status line to be updated at least twice, saw $updates"
grep -q $'\r\e\\[K' "$T/tty.log" || fail "the status line is not cleared at the end"

run_flamed notty record -a -F 99 -d 1.5 -o "$T/notty.folded"
expect_rc 0
! grep -q 'recording' "$T/notty.err" || fail "a status line although stderr is a file"

pass "status line on a terminal only"
