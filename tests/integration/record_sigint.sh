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
	LAST_ERR=$T/$sig.err
	"$FLAMED" record -a -F 99 -o "$T/$sig.folded" >"$T/$sig.out" 2>"$LAST_ERR" &
	fpid=$!
	sleep 2
	kill -"$sig" "$fpid" 2>/dev/null || fail "flamed exited before SIG$sig"
	# A watchdog, so that a flamed that ignores the signal fails the test.
	# It takes its sleep along when stopped, and holds none of our output
	# open (ctest waits for that to close).
	(
		trap 'kill "$nap" 2>/dev/null; exit 0' TERM
		sleep 15 &
		nap=$!
		wait "$nap"
		kill -KILL "$fpid" 2>/dev/null
	) </dev/null >/dev/null 2>&1 &
	dog=$!
	set +e
	wait "$fpid"
	rc=$?
	set -e
	kill "$dog" 2>/dev/null || true
	wait "$dog" 2>/dev/null || true
	note "SIG$sig: exit $rc"
	[[ $rc -ne 137 ]] || fail "flamed did not exit within 15 s of SIG$sig"
	[[ $rc -eq 0 ]] || fail "exit status $rc after SIG$sig, expected 0"
	check_folded "$T/$sig.folded"
	grep -q '^chains;' "$T/$sig.folded" || fail "no stacks under 'chains' after SIG$sig"
	summary_samples "$T/$sig.err" >/dev/null
done

pass "record -a stops on SIGINT and SIGTERM with exit 0 and a complete profile"
