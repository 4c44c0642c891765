#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A process in other mount and pid namespaces with a private root directory
# (a container, as unshare makes one): its binary exists only under its
# root, at a path that names nothing (or something else) outside it, and
# its JIT writes its perf map to its own /tmp under the pid it sees (1).
# flamed reads the binary under /proc/PID/root (or /proc/PID/map_files) and
# the perf map under /proc/PID/root as perf-1.map, and names every frame
# (without the root and namespace pid, the JIT frames are [anon]).
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
command -v unshare >/dev/null || skip "needs unshare (util-linux)"
[[ $(uname -m) == x86_64 ]] || skip "jit_spin's machine code is x86-64"

R=$T/root
mkdir -p "$R/bin" "$R/tmp"
cp "$FIXTURES/jit_spin_static" "$R/bin/cjit"
# Outside the container, /bin/cjit is something else entirely: a decoy with
# other symbols, which must not be used.
[[ ! -e /bin/cjit ]] || fail "/bin/cjit exists on this machine; the test would touch it"

# 4 s of its own CPU (tests/fixtures/progs/work.h): a busy machine neither
# ends it nor starves it before the recording, which it waits for frozen.
FIXTURE_CLOCK=cpu bg unshare --mount --pid --fork --kill-child --root="$R" /bin/cjit 4
for ((i = 0; i < 100; i++)); do
	cpid=$(pgrep -x -P "$BG_PID" cjit) && break
	sleep 0.05
done
[[ -n ${cpid:-} ]] || fail "the contained process did not start: $(cat "$T"/bg-*.log)"
grep -q "^NSpid:.*[[:space:]]1$" "/proc/$cpid/status" || fail "cjit is not pid 1 in its namespace"
[[ -f $R/tmp/perf-1.map ]] || sleep 0.5
[[ -f $R/tmp/perf-1.map ]] || fail "the contained JIT wrote no /tmp/perf-1.map"

record_frozen cont "$cpid" -F 999 -d 1.5 -o "$T/cont.folded"
check_folded "$T/cont.folded"
all=$(total_count "$T/cont.folded")
named=$(count_matching "$T/cont.folded" ";main;jit_call;jit_spin_hot_[j]")
s=$(percent "$named" "$all")
note "$named of $all samples are main;jit_call;jit_spin_hot_[j] ($s%)"
expect_between "$s" 90 100 "the share of the contained process's samples named through its root"

pass "a process in its own mount and pid namespaces is named from its root and its perf map"
