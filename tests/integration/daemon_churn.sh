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
# Every copy has this name (in a directory of its own): the daemon samples
# them only, not the rest of a shared machine, whose processes come and go
# with files and memory of their own.
NAME=burn-$$

# churn SECONDS [MIN]: runs copy after copy of short_burn, each a new file,
# removed once it exited, for SECONDS and MIN copies at the least.
churn() {
	local end=$((SECONDS + $1)) i=0
	while ((SECONDS < end || i < ${2:-0})); do
		mkdir "$COPIES/$i"
		cp "$SHORT" "$COPIES/$i/$NAME"
		"$COPIES/$i/$NAME" 0.05 >/dev/null 2>&1 || true
		rm -rf "${COPIES:?}/$i"
		i=$((i + 1))
	done
	echo "$i" >"$T/churn.count"
}

fds() { find "/proc/$DPID/fd" -mindepth 1 -maxdepth 1 | wc -l; }
# held: how many of the daemon's fds are copies (each deleted once it ran).
held() { find "/proc/$DPID/fd" -mindepth 1 -maxdepth 1 -lname "$COPIES/*" | wc -l; }
# shellcheck disable=SC2317 # called by wait_until
none_held() { [[ $(held) -eq 0 ]]; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status"; }

: >"$T/empty.conf"
start_daemon churn --config "$T/empty.conf" --interval 2s --output-dir "$T/out" --targets "$NAME"
wait_until 10 "the daemon's first snapshot" logged_at_least 1
fds0=$(fds)
churn 8
rss1=$(rss_kb)
fds1=$(fds)
held1=$(held)
churn 16 100
n=$(cat "$T/churn.count")
# The copies that exited are dropped two ticks after their exit at the
# soonest, every 256 exits or 10 ticks: a flush after the last exit.
wait_until 30 "the files of the exited copies released" none_held
rss2=$(rss_kb)
fds2=$(fds)
running || fail "the daemon died during the churn"
stop_daemon TERM
[[ $DRC -eq 0 ]] || fail "SIGTERM: exit $DRC"
note "$n fresh binaries run in the second phase; fds $fds0 -> $fds1 ($held1 of copies) -> $fds2 (none of copies); RSS $rss1 -> $rss2 KiB"
# Memory follows the processes alive: 16 s of churn after 8 s add little.
((rss2 <= rss1 * 5 / 4 + 4096)) || fail "RSS grew from $rss1 to $rss2 KiB during the churn"
grep -q "short_hot" "$T/out/"*.folded || fail "no snapshot names short_hot of the copies"
pass "daemon under churn: fds $fds0 -> $fds2 after $n fresh binaries, RSS $rss1 -> $rss2 KiB"
