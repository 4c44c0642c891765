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

# It burns 2 s of its own CPU (tests/fixtures/progs/work.h), and stands still
# (SIGSTOP) until flamed samples it: the binary is replaced while it is
# recorded, however long a busy machine takes to start flamed.
cp "$FIXTURES/chains" "$T/victim"
FIXTURE_CLOCK=cpu bg "$T/victim" 2
victim=$BG_PID
wait_comm "$victim" victim
freeze "$victim"
bg_flamed rec record -v -F 999 -p "$victim" -o "$T/out.folded"
wait_sampling rec
# The same code under other names (every symbol prefixed), same path, new inode;
# the old inode lives on, deleted, in the process. Its names would fit the
# addresses perfectly, and would be wrong.
objcopy --prefix-symbols=WRONG_ "$FIXTURES/chains" "$T/victim.new"
mv -f "$T/victim.new" "$T/victim"
thaw "$victim"
wait_flamed rec
check_folded "$T/out.folded"
! grep -q 'WRONG_' "$T/out.folded" || fail "frames named from the file that replaced the binary"
grep -q '^victim;.*;main;chain_a1' "$T/out.folded" || fail "the replaced binary's own names are missing"

# Deleted right after it started, and gone before the recording ends: named
# from the file held open (the path names nothing by then, the process's
# map_files neither).
# (The recording ends once it is gone: a -d window may be over before a
# busy machine gave it its 1.5 s of CPU.)
bg_flamed gone record -a -v --per-process -F 999 -o "$T/gone.folded"
wait_sampling gone
cp "$FIXTURES/chains" "$T/victim3"
FIXTURE_CLOCK=cpu "$T/victim3" 1.5 &
gone=$!
sleep 0.2
rm "$T/victim3"
wait "$gone" || fail "victim3 failed"
stop_flamed gone
check_folded "$T/gone.folded"
# Its own samples: other tests on the machine may run a victim3 too.
of_pids "$T/gone.folded" "$gone" >"$T/gone.mine"
grep -q '^victim3-[0-9]*;.*;main;chain_a1' "$T/gone.mine" ||
	fail "the deleted, exited binary's frames are not named: $(head -3 "$T/gone.mine")"

# The same run with the binary left alone names the chains: the check above is not vacuous.
cp "$FIXTURES/chains" "$T/victim2"
FIXTURE_CLOCK=cpu bg "$T/victim2" 1
wait_comm "$BG_PID" victim2
record_frozen intact "$BG_PID" -F 999 -o "$T/intact.folded"
grep -q ';main;chain_a1' "$T/intact.folded" || fail "the untouched binary's frames are not named"

pass "a replaced binary is not used for symbols; the mapped one is, also deleted and exited"
