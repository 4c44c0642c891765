#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A binary replaced on disk while its process runs is never used to name
# that process's frames: the file at the path is another inode, so its
# symbols would be wrong. The frames say [module] instead.
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
grep -q '\[victim\]' "$T/out.folded" || fail "no [victim] frames for the replaced binary"

# The same run with the binary left alone names the chains: the check above is not vacuous.
cp "$FIXTURES/chains" "$T/victim2"
bg "$T/victim2" 2
wait_comm "$BG_PID" victim2
run_flamed intact record -F 999 -p "$BG_PID" -o "$T/intact.folded"
expect_rc 0
grep -q ';main;chain_a1' "$T/intact.folded" || fail "the untouched binary's frames are not named"

pass "a replaced binary is not used for symbols; the intact one is"
