#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed record` without -d stops on SIGINT and on SIGTERM, exits 0 and
# writes what it recorded. Started in the background from a script, as here,
# flamed inherits SIGINT ignored and must handle it all the same.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

# Something to sample however idle the machine is.
bg "$FIXTURES/chains" 12
wait_comm "$BG_PID" chains

for sig in INT TERM; do
	# 2 s of sampling: the start-up may take seconds on a busy machine.
	bg_flamed "$sig" record -a -v -F 99 -o "$T/$sig.folded"
	wait_sampling "$sig"
	sleep 2
	signal_and_wait "$FLAMED_PID" "$sig" flamed
	rc=$WAIT_RC
	[[ $rc -eq 0 ]] || fail "exit status $rc after SIG$sig, expected 0"
	check_folded "$T/$sig.folded"
	grep -q '^chains;' "$T/$sig.folded" || fail "no stacks under 'chains' after SIG$sig"
	summary_samples "$T/$sig.err" >/dev/null
done

pass "record -a stops on SIGINT and SIGTERM with exit 0 and a complete profile"
