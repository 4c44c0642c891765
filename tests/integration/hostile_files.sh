#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Files that other users' processes name are opened only as regular files
# (issue 14 point 3). An unprivileged user (nobody), in user and mount
# namespaces of its own (unshare -Urm), runs:
#  - a program it calls /dev/pts/N (a tmpfs over /dev), N being a pty of the
#    host that nobody has open (tests/fixtures/progs/pty_hold.c);
#  - a program at a path that, on the host, is a FIFO (a tmpfs over its
#    directory);
#  - two JITs whose perf maps became a FIFO and, bind-mounted, that pty.
# Root flamed records them (-a, and -p with --call-graph dwarf):
#  - under strace, it opens none of those paths but with O_PATH;
#  - the two programs are still named (short_hot), through
#    /proc/PID/map_files or /proc/PID/root;
#  - started by setsid with no terminal, it does not take the pty as its
#    controlling terminal: /proc/PID/stat's tty_nr stays 0, and the ^C typed
#    on the pty does not stop it (it records for its whole duration).
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
for tool in strace setpriv unshare setsid mount; do
	command -v "$tool" >/dev/null || skip "$tool is not installed (Debian: strace, util-linux, mount)"
done
NOBODY=65534
setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups -- unshare -Urm true 2>/dev/null ||
	skip "an unprivileged user cannot make user namespaces here (user.max_user_namespaces, kernel.unprivileged_userns_clone)"

# What nobody runs must be reachable by nobody.
chmod 755 "$T"
mkdir -m 755 "$T/bin" "$T/shadow"
mkdir -m 777 "$T/ns"
cp "$FIXTURES/short_burn" "$FIXTURES/jit_spin" "$T/bin/"
# The host's side of the shadowed path: a FIFO.
mkfifo -m 666 "$T/shadow/prog"

"$FIXTURES/pty_hold" 120 >"$T/pty.name" 2>"$T/pty.err" &
PTY_PID=$!
BG_PIDS+=("$PTY_PID")
for ((i = 0; i < 100; i++)); do
	[[ -s $T/pty.name ]] && break
	sleep 0.05
done
PTS=$(head -n 1 "$T/pty.name")
[[ $PTS == /dev/pts/* ]] || fail "pty_hold gave no pty: $(cat "$T/pty.err")"
note "the pty: $PTS"

# The namespace's side. /dev goes last: the bind mount needs the host's pty.
cat >"$T/ns/setup.sh" <<'EOF'
set -eu
BIN=$1 PTS=$2 SHADOW=$3 OUT=$4
"$BIN/jit_spin" 60 >"$OUT/j1.log" 2>&1 &
j1=$!
"$BIN/jit_spin" 60 >"$OUT/j2.log" 2>&1 &
j2=$!
for i in $(seq 100); do
	[ -s "/tmp/perf-$j1.map" ] && [ -s "/tmp/perf-$j2.map" ] && break
	sleep 0.05
done
rm "/tmp/perf-$j1.map"
mkfifo "/tmp/perf-$j1.map"
mount --bind "$PTS" "/tmp/perf-$j2.map"
mount -t tmpfs none "$SHADOW"
cp "$BIN/short_burn" "$SHADOW/prog"
: >"$OUT/null"
mount --bind /dev/null "$OUT/null"
mount -t tmpfs none /dev
# sh gives background jobs /dev/null as their stdin: the real one again.
: >/dev/null
mount --bind "$OUT/null" /dev/null
mkdir -p "${PTS%/*}"
cp "$BIN/short_burn" "$PTS"
"$PTS" 60 >"$OUT/p1.log" 2>&1 &
p1=$!
"$SHADOW/prog" 60 >"$OUT/p2.log" 2>&1 &
p2=$!
trap 'kill $j1 $j2 $p1 $p2 2>/dev/null' TERM INT
echo "$j1 $j2 $p1 $p2" >"$OUT/pids"
wait
EOF
setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups -- \
	unshare -Urm -- sh "$T/ns/setup.sh" "$T/bin" "$PTS" "$T/shadow" "$T/ns" 2>"$T/ns.err" &
BG_PIDS+=("$!")
for ((i = 0; i < 200; i++)); do
	[[ -s $T/ns/pids ]] && break
	sleep 0.05
done
[[ -s $T/ns/pids ]] || fail "the namespace's processes did not start: $(cat "$T/ns.err")"
read -r J1 J2 P1 P2 <"$T/ns/pids"
BG_PIDS+=("$J1" "$J2" "$P1" "$P2")
# Their perf maps stay behind in the host's /tmp (one is a mount point in the namespace).
trap 'rm -f "/tmp/perf-$J1.map" "/tmp/perf-$J2.map"; cleanup' EXIT
wait_comm "$P1" "${PTS##*/}"
wait_comm "$P2" prog
note "in the namespace: jit_spin $J1 (perf map a FIFO), jit_spin $J2 (perf map the pty), $PTS $P1, $T/shadow/prog $P2"

# open/openat/openat2 of one of those paths (also as the relative path under
# /proc/PID/root) without O_PATH: a FIFO or a tty opened for reading.
bad_opens() {
	grep -E "\"[^\"]*(${PTS#/}|shadow/prog|perf-($J1|$J2)\\.map)\"" "$1" | grep -v O_PATH || true
}

# --- under strace: no such open -------------------------------------------------
strace_flamed() {
	local name=$1 bad
	shift
	LAST_ERR=$T/$name.err
	# LeakSanitizer cannot run under ptrace (packaging/sanitize.sh): no leak check here.
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout -k 5 60 \
		strace -f -qq -e trace=open,openat,openat2 -o "$T/$name.strace" \
		"$FLAMED" record "$@" -o "$T/$name.folded" </dev/null >"$T/$name.out" 2>"$LAST_ERR" ||
		fail "$name: flamed record $* under strace failed"
	bad=$(bad_opens "$T/$name.strace")
	[[ -z $bad ]] || fail "$name: flamed opened a FIFO or a tty another user named: $(head -n 3 <<<"$bad")"
	note "$name: $(grep -cE "${PTS#/}|shadow/prog|perf-($J1|$J2)\\.map" "$T/$name.strace" || true) opens of the hostile paths, all O_PATH"
}
strace_flamed all -a -d 3
strace_flamed dwarf -p "$P1" -p "$P2" -p "$J1" -p "$J2" --call-graph dwarf -d 3

# The programs are named, through map_files or their root: comm;...;main;short_hot.
# (With -a on a busy machine, others' processes may take the samples: -p decides.)
named() {
	awk -v c="$2" '{ s = $0; sub(/ [0-9]+$/, "", s); split(s, f, ";")
		if (f[1] == c && index(s, ";main;short_hot")) n += $NF } END { print n + 0 }' "$1"
}
for run in all dwarf; do
	check_folded "$T/$run.folded"
	n1=$(named "$T/$run.folded" "${PTS##*/}")
	n2=$(named "$T/$run.folded" prog)
	note "$run: $n1 samples of $PTS, $n2 of $T/shadow/prog in main;short_hot"
done
[[ $n1 -gt 0 && $n2 -gt 0 ]] || fail "the programs the namespace names $PTS and $T/shadow/prog were not named: $(head -n 3 "$T/dwarf.folded")"

# --- no controlling terminal -----------------------------------------------------
# setsid: flamed leads a session with no terminal (a daemon under systemd),
# the first thing to open the pty without O_NOCTTY would get it.
setsid "$FLAMED" record -p "$P1" -p "$P2" -p "$J1" -p "$J2" -d 4 -o "$T/ctty.folded" </dev/null >"$T/ctty.out" 2>"$T/ctty.err" &
FLAMED_PID=$!
BG_PIDS+=("$FLAMED_PID")
LAST_ERR=$T/ctty.err
sleep 2
[[ $(cat "/proc/$FLAMED_PID/comm" 2>/dev/null) == flamed ]] || fail "setsid forked: no pid of flamed to watch"
# /proc/PID/stat: the comm ends at the last ')'; tty_nr is the 5th field after it.
tty_nr=$(sed 's/.*) //' "/proc/$FLAMED_PID/stat" | awk '{ print $5 }')
kill -USR1 "$PTY_PID" # ^C, then a hang-up, on the pty
rc=0
wait "$FLAMED_PID" || rc=$?
note "setsid flamed: tty_nr $tty_nr during the recording, exit $rc after the pty's ^C"
[[ $tty_nr -eq 0 ]] || fail "flamed took a terminal (tty_nr $tty_nr): the pty another user named"
[[ $rc -eq 0 ]] || fail "flamed exited $rc"
grep -q 'duration reached' "$T/ctty.err" || fail "flamed was stopped by the ^C typed on another user's pty: $(head -n 1 "$T/ctty.err")"
check_folded "$T/ctty.folded"
pass "FIFOs and ttys other users named were never opened for reading; no controlling terminal taken; the programs named"
