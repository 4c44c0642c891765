#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A binary replaced or deleted on disk while its process runs: the file now
# at the path (another inode) is never used to name that process's frames,
# its symbols would be wrong; the mapped file itself is, held open by flamed
# from the moment it saw the mapping (through /proc/PID/map_files if it was
# already gone), also after the process exited.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
command -v objcopy >/dev/null || skip "needs objcopy (binutils) to make the replacement binary"

cp "$FIXTURES/chains" "$T/victim"
bg "$T/victim" 3
wait_comm "$BG_PID" victim
"$FLAMED" record -F 999 -p "$BG_PID" -o "$T/out.folded" 2>"$T/rec.err" &
rec=$!
sleep 1
# The same code under other names (every symbol prefixed), same path, new inode;
# the old inode lives on, deleted, in the process. Its names would fit the
# addresses perfectly, and would be wrong.
objcopy --prefix-symbols=WRONG_ "$FIXTURES/chains" "$T/victim.new"
mv -f "$T/victim.new" "$T/victim"
wait "$rec" || fail "flamed record failed: $(cat "$T/rec.err")"
check_folded "$T/out.folded"
! grep -q 'WRONG_' "$T/out.folded" || fail "frames named from the file that replaced the binary"
grep -q '^victim;.*;main;chain_a1' "$T/out.folded" || fail "the replaced binary's own names are missing"

# Deleted right after it started, and gone before the recording ends: named
# from the file held open (the path names nothing by then, the process's
# map_files neither).
"$FLAMED" record -a -F 999 -d 4 -o "$T/gone.folded" 2>"$T/gone.err" &
rec=$!
sleep 1
cp "$FIXTURES/chains" "$T/victim3"
"$T/victim3" 1.5 &
gone=$!
sleep 0.2
rm "$T/victim3"
wait "$gone" || fail "victim3 failed"
wait "$rec" || fail "flamed record failed: $(cat "$T/gone.err")"
check_folded "$T/gone.folded"
grep -q '^victim3;.*;main;chain_a1' "$T/gone.folded" ||
	fail "the deleted, exited binary's frames are not named: $(grep '^victim3' "$T/gone.folded" | head -3)"

# The same run with the binary left alone names the chains: the check above is not vacuous.
cp "$FIXTURES/chains" "$T/victim2"
bg "$T/victim2" 2
wait_comm "$BG_PID" victim2
run_flamed intact record -F 999 -p "$BG_PID" -o "$T/intact.folded"
expect_rc 0
grep -q ';main;chain_a1' "$T/intact.folded" || fail "the untouched binary's frames are not named"

pass "a replaced binary is not used for symbols; the mapped one is, also deleted and exited"
