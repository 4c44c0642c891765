#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed daemon` gives back the memory a big program made it take once the
# program is gone. clang (libLLVM and libclang-cpp: tens of MB of symbols
# and CFI) runs for a while under the daemon; its files are dropped a few
# intervals after it ends, and the daemon's RSS must fall back at least half
# way from its peak to where it was before, not stay at the peak with the
# freed memory kept in glibc's heaps.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib_daemon.sh"

CLANG=$(command -v clang-14 || command -v clang || true)
[[ -n $CLANG ]] || fail "no clang (a build dependency) to run"
# The sanitizers' allocator keeps freed memory its own way (quarantine).
if [[ -n ${ASAN_OPTIONS:-} ]]; then
	note "SKIPPED: sanitized build (its allocator holds freed memory in quarantine)"
	exit 77
fi
# A copy named for this test, so that the daemon samples it alone (not the
# rest of a shared machine); clang runs its -cc1 from its own path.
NAME=bigprog-$$
mkdir "$T/bin"
cp "$(readlink -f "$CLANG")" "$T/bin/$NAME"
RESOURCE=$("$CLANG" -print-resource-dir)
cat "$SRCDIR"/lib/*/*.c >"$T/big.c"

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status"; }
hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$DPID/status"; }

: >"$T/empty.conf"
start_daemon memory -v --config "$T/empty.conf" --interval 2s --frequency 999 \
	--output-dir "$T/out" --targets "$NAME"
wait_until 20 "the daemon's first snapshot" logged_at_least 1
sleep 2
rss0=$(rss_kb)
end=$((SECONDS + 12))
runs=0
while ((SECONDS < end)); do
	"$T/bin/$NAME" -fsyntax-only -w -ferror-limit=0 -resource-dir "$RESOURCE" \
		-I"$SRCDIR/include" -I"$SRCDIR/lib" "$T/big.c" >/dev/null 2>&1 || true
	runs=$((runs + 1))
done
peak=$(hwm_kb)
grep -q "$NAME" "$T/out/"*.folded 2>/dev/null || fail "no snapshot has samples of $NAME"
# Files unused for two intervals go; their memory with them.
end=$((SECONDS + 40))
while (($(rss_kb) > rss0 + (peak - rss0) / 2)); do
	((SECONDS < end)) ||
		fail "RSS before $rss0 KiB, peak $peak KiB, still $(rss_kb) KiB 40 s after $runs runs of clang; $(grep 'heap:' "$DLOG" | tail -n 3)"
	sleep 0.5
done
rss1=$(rss_kb)
waited=$((40 - (end - SECONDS)))
running || fail "the daemon died"
stop_daemon TERM
[[ $DRC -eq 0 ]] || fail "SIGTERM: exit $DRC"
note "$runs runs of clang; RSS $rss0 KiB before, peak $peak KiB, $rss1 KiB ${waited} s after"
((peak > rss0 + 8192)) || note "clang made the daemon take only $((peak - rss0)) KiB: a weak check"
pass "daemon: RSS $rss0 -> peak $peak -> $rss1 KiB after a big program came and went"
