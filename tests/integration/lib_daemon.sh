#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the daemon tests share (daemon_run.sh, daemon_faults.sh): sourced after
# lib.sh, never run on its own. Starting and stopping the daemon and the
# notification listener, listing and checking snapshots.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	echo "SKIP: lib_daemon.sh holds the daemon tests' helpers; it is sourced, not a test"
	exit 77
fi

command -v xmllint >/dev/null || skip "xmllint is not installed (Debian: libxml2-utils)"
NOTIFY_LISTEN=$FIXTURES/notify_listen
[[ -x $NOTIFY_LISTEN ]] || fail "no $NOTIFY_LISTEN (tests/fixtures/progs/notify_listen.c)"
"$FLAMED" daemon --help >/dev/null 2>&1 || fail "'flamed daemon --help' fails: no daemon in $FLAMED?"

# --- helpers -----------------------------------------------------------------
# A snapshot's base name, e.g. 2026-11-22T03-12-00Z or 2026-11-22T03-12-00Z-2
# (grep -E; mawk has no {N}, hence the spelled-out digits in SNAP_AWK).
SNAP_RE='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}Z(-[0-9]+)?$'
SNAP_AWK='[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]-[0-9][0-9]-[0-9][0-9]Z(-[0-9]+)?'

# snapshots DIR [EXT]: the base names of the snapshot files DIR/*.EXT
# (default folded), oldest first: by time, then -2, -3... after the plain one.
snapshots() {
	local ext=${2:-folded}
	find "$1" -maxdepth 1 -type f -name "*.$ext" -printf '%f\n' 2>/dev/null |
		sed "s/\\.$ext\$//" | grep -E "$SNAP_RE" |
		awk '{ t = $0; n = 1
			if (match(t, /Z-[0-9]+$/)) { n = substr(t, RSTART + 2) + 0; t = substr(t, 1, RSTART) }
			printf "%s %012d %s\n", t, n, $0 }' |
		LC_ALL=C sort | awk '{ print $3 }' || true
}

# nsnap DIR [EXT]: how many snapshots snapshots() lists.
nsnap() {
	snapshots "$@" | wc -l
}

# nsnap_at_least DIR N / nsnap_at_most DIR N
# shellcheck disable=SC2317 # called by wait_until
nsnap_at_least() {
	[[ $(nsnap "$1") -ge $2 ]]
}
# shellcheck disable=SC2317 # called by wait_until
nsnap_at_most() {
	[[ $(nsnap "$1") -le $2 ]]
}

# snap_time BASE: the start of the snapshot's interval, seconds since the epoch.
snap_time() {
	local t=${1%%Z*}
	date -u -d "${t%%T*} $(tr - : <<<"${t#*T}")" +%s
}

# snap_log LOG: the base names of the snapshots LOG reports as written, in order.
snap_log() {
	awk -v re="$SNAP_AWK" '/snapshot/ && /[0-9]+ samples/ && !/cannot write/ {
		if (match($0, re)) print substr($0, RSTART, RLENGTH) }' "$1"
}

# nlog LOG: how many snapshots LOG reports.
nlog() {
	snap_log "$1" | wc -l
}

# logged_at_least N: the daemon's log reports N snapshots or more.
# shellcheck disable=SC2317 # called by wait_until
logged_at_least() {
	[[ $(nlog "$DLOG") -ge $1 ]]
}

# folded_ok FILE: empty, or lines "stack COUNT" ending in a newline.
folded_ok() {
	local bad
	[[ -f $1 ]] || fail "$1 is missing"
	[[ -s $1 ]] || return 0
	[[ -z $(tail -c 1 "$1") ]] || fail "$1 does not end with a newline"
	bad=$(grep -nvE '^.+ [0-9]+$' "$1" | head -n 3 || true)
	[[ -z $bad ]] || fail "$1 has lines that are not 'stack COUNT': $bad"
}

# root_count FILE ROOT: the samples of the lines whose root frame is ROOT.
root_count() {
	awk -v root="$2" '{ s = $0; sub(/ [0-9]+$/, "", s); split(s, f, ";")
		if (f[1] == root) n += $NF } END { printf "%.0f\n", n }' "$1"
}

# since T0: seconds elapsed since T0 (a value of now), 2 decimals.
since() {
	awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'
}

# ge A B: A >= B (numbers).
ge() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'
}

# settle: two snapshots asked for with SIGUSR1, the second once the first
# is logged: it was taken after this call, so every sample taken before the
# call is in the snapshots logged when it returns.
settle() {
	local n
	for _ in 1 2; do
		n=$(nlog "$DLOG")
		kill -USR1 "$DPID"
		wait_until 10 "a snapshot after SIGUSR1" logged_at_least $((n + 1))
	done
}

# cpu_window DIR PID SECONDS ROOT: the daemon's samples of PID for SECONDS of
# its CPU, however long the machine takes to give them. PID is frozen while
# the snapshots settle, runs for SECONDS of CPU, is frozen again while they
# settle: the snapshots logged in between hold every sample of it for that
# CPU, and no other. Sets WINDOW_CPU (its CPU seconds) and WINDOW_SAMPLES
# (the samples under root frame ROOT in those snapshots, in DIR).
cpu_window() {
	local dir=$1 pid=$2 secs=$3 root=$4 n0 s
	freeze "$pid"
	settle
	n0=$(nlog "$DLOG")
	cpu_span "$pid" "$secs" settle
	# shellcheck disable=SC2034 # read by the tests
	WINDOW_CPU=$CPU_USED
	WINDOW_SAMPLES=0
	for s in $(snap_log "$DLOG" | tail -n +$((n0 + 1))); do
		WINDOW_SAMPLES=$((WINDOW_SAMPLES + $(root_count "$dir/$s.folded" "$root")))
	done
}

# start_listener SOCKET NAME: notify_listen on SOCKET, its output in $NLOG.
start_listener() {
	NLOG=$T/$2.notify
	"$NOTIFY_LISTEN" "$1" >"$NLOG" 2>"$NLOG.err" &
	NPID=$!
	BG_PIDS+=("$NPID")
	wait_until 5 "notify_listen $1 ready" grep -qx ready "$NLOG.err"
}

# notified LINE: how many times LINE came in on the listener's socket.
notified() {
	grep -cxF -- "$1" "$NLOG" || true
}

# start_daemon NAME ARGS...: `flamed daemon ARGS` in the background with the
# environment DAEMON_ENV; sets DPID and DLOG (its stderr, also LAST_ERR).
DAEMON_ENV=()
start_daemon() {
	local name=$1
	shift
	DLOG=$T/$name.log
	# shellcheck disable=SC2034 # read by lib.sh's fail
	LAST_ERR=$DLOG
	env "${DAEMON_ENV[@]}" "$FLAMED" daemon "$@" >"$T/$name.out" 2>"$DLOG" &
	DPID=$!
	BG_PIDS+=("$DPID")
	note "$name: flamed daemon $* (pid $DPID)"
}

# stop_daemon SIG: sends SIG and waits (at most 15 s) for the exit; sets DRC.
stop_daemon() {
	signal_and_wait "$DPID" "$1" "the daemon"
	# shellcheck disable=SC2034 # read by the tests
	DRC=$WAIT_RC
}

# running: the daemon is still there (not exited, not a zombie).
running() {
	local stat
	stat=$(cat "/proc/$DPID/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[[ ${stat:0:1} != Z ]]
}

# stop_listener: SIGTERM to notify_listen; it exits 0 and removes its socket.
stop_listener() {
	local rc=0
	kill -TERM "$NPID"
	wait "$NPID" || rc=$?
	[[ $rc -eq 0 ]] || fail "notify_listen exited $rc: $(cat "$NLOG.err")"
}

# dir_files DIR: the names in DIR, hidden ones too, but those in KEEP.
KEEP=()
dir_files() {
	local f base keep
	for f in "$1"/* "$1"/.[!.]*; do
		[[ -e $f || -L $f ]] || continue
		base=${f##*/}
		for keep in "${KEEP[@]}"; do
			[[ $base == "$keep" ]] && continue 2
		done
		echo "$base"
	done
}
