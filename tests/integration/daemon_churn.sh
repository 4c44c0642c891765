#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed daemon` on a machine with constant process churn stays bounded:
# processes that exited are dropped after their snapshot, and so are the
# files it held open for them. The churn runs a fresh copy of a binary each
# time (a new inode: a new file to hold), so without the release the held
# files, and the daemon's fds, would grow by one per process.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib_daemon.sh"

SHORT=$FIXTURES/short_burn
[[ -x $SHORT ]] || fail "no $SHORT"
COPIES=$T/copies
mkdir "$COPIES"

# churn SECONDS: runs copy after copy of short_burn, each a new file, removed once it exited.
churn() {
	local end=$((SECONDS + $1)) i=0
	while ((SECONDS < end)); do
		cp "$SHORT" "$COPIES/burn-$i"
		"$COPIES/burn-$i" 0.05 >/dev/null 2>&1 || true
		rm -f "$COPIES/burn-$i"
		i=$((i + 1))
	done
	echo "$i" >"$T/churn.count"
}

fds() { find "/proc/$DPID/fd" -mindepth 1 -maxdepth 1 | wc -l; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status"; }

: >"$T/empty.conf"
start_daemon churn --config "$T/empty.conf" --interval 2s --output-dir "$T/out"
wait_until 10 "the daemon's first snapshot" logged_at_least 1
fds0=$(fds)
churn 8
rss1=$(rss_kb)
fds1=$(fds)
churn 16
n=$(cat "$T/churn.count")
# Two flushes (at most 10 s apart) and a snapshot after the last exit.
sleep 12
rss2=$(rss_kb)
fds2=$(fds)
running || fail "the daemon died during the churn"
stop_daemon TERM
[[ $DRC -eq 0 ]] || fail "SIGTERM: exit $DRC"
note "$n fresh binaries run in the second phase; fds $fds0 -> $fds1 -> $fds2; RSS $rss1 -> $rss2 KiB"
# Each copy was held while it ran: released once it exited and was named.
((n >= 50)) || fail "the churn ran only $n processes"
((fds2 <= fds0 + 20)) || fail "the daemon holds $fds2 fds after the churn (it had $fds0): held files not released"
# Memory follows the processes alive: 16 s of churn after 8 s add little.
((rss2 <= rss1 * 5 / 4 + 4096)) || fail "RSS grew from $rss1 to $rss2 KiB during the churn"
grep -q "short_hot" "$T/out/"*.folded || fail "no snapshot names short_hot of the copies"
pass "daemon under churn: fds $fds0 -> $fds2 after $n fresh binaries, RSS $rss1 -> $rss2 KiB"
