#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed daemon` when things go wrong: killed with SIGKILL in the middle of
# a burst of snapshots, it never leaves a partial file under a final name, and
# the temporaries it left are removed at the next start; on a full disk it
# logs "cannot write", keeps sampling and writes the samples it kept with the
# first snapshot that fits again; a deleted output directory is created again.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib_daemon.sh"

# A small file system to fill, unmounted on any exit (after the processes
# that may hold files on it are gone; then lib.sh's cleanup).
MNT=$T/fs
mkdir "$MNT"
mount -t tmpfs -o size=16m,mode=0700 flamed-test "$MNT" 2>"$T/mount.err" ||
	skip "cannot mount a tmpfs: $(cat "$T/mount.err")"
# shellcheck disable=SC2317 # run by the trap
faults_cleanup() {
	local pid
	for pid in "${BG_PIDS[@]}"; do
		kill -KILL "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
	cleanup
}
trap faults_cleanup EXIT

# --- helpers of its own ------------------------------------------------------

# shellcheck disable=SC2317 # called by wait_until
ready_at_least() {
	[[ $(grep -cx READY=1 "$NLOG" || true) -ge $1 ]]
}

# tmp_files DIR: the names of the .tmp-* in DIR, one per line.
tmp_files() {
	find "$1" -maxdepth 1 -name '.tmp-*' -printf '%f\n' 2>/dev/null || true
}

# shellcheck disable=SC2317 # called by wait_until
no_tmp_files() {
	[[ -z $(tmp_files "$1") ]]
}

# check_final DIR: every file under a final name in DIR is complete: each
# .folded parses to its last line, each .svg is well-formed XML, latest.*
# point at files that exist. Besides: .tmp-* and the files named in KEEP.
check_final() {
	local f base
	while IFS= read -r base; do
		f=$1/$base
		case $base in
		.tmp-*) ;;
		latest.folded | latest.svg)
			[[ -L $f ]] || fail "$f is not a symbolic link"
			[[ -f $f ]] || fail "$f points at '$(readlink "$f")', which is not there"
			;;
		*.folded)
			grep -qE "$SNAP_RE" <<<"${base%.folded}" || fail "unexpected file $f"
			folded_ok "$f"
			;;
		*.svg)
			grep -qE "$SNAP_RE" <<<"${base%.svg}" || fail "unexpected file $f"
			xmllint --noout "$f" 2>"$T/xmllint.err" || fail "$f is not well-formed: $(head -n 3 "$T/xmllint.err")"
			;;
		*) fail "unexpected file $f" ;;
		esac
	done < <(dir_files "$1")
}

# Something to sample: one busy thread.
bg "$FIXTURES/chains" 120
BURNER=$BG_PID
wait_comm "$BURNER" chains
EMPTY=$T/empty.conf
: >"$EMPTY"

# --- (a) SIGKILL in a burst of snapshots ----------------------------------------
# SIGUSR1 every 50 ms on top of a 1 s interval, SIGKILL after a random 0.5 to
# 2.5 s: most likely in the middle of writing a snapshot.
OUT=$T/crash
start_listener "$T/notify.sock" crash
DAEMON_ENV=(NOTIFY_SOCKET="$T/notify.sock")
written=0
for round in 1 2 3 4 5; do
	start_daemon "crash-$round" --config "$EMPTY" --interval 1s --output-dir "$OUT" --formats folded,svg
	wait_until 20 "READY=1 of run $round" ready_at_least "$round"
	burst=$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", 0.5 + 2 * r / 32768 }')
	t0=$(now)
	# Two snapshots at the least: a busy machine makes them slow.
	while ! ge "$(since "$t0")" "$burst" || (($(nlog "$DLOG") < 2)); do
		kill -USR1 "$DPID" 2>/dev/null || fail "the daemon died in the burst of SIGUSR1"
		! ge "$(since "$t0")" 60 || fail "run $round: fewer than 2 snapshots in 60 s of SIGUSR1 every 50 ms"
		sleep 0.05
	done
	kill -KILL "$DPID"
	wait "$DPID" 2>/dev/null || true
	written=$((written + $(nlog "$DLOG")))
	note "run $round: SIGKILL after $burst s, $(nlog "$DLOG") snapshots logged; left: $(tmp_files "$OUT" | tr '\n' ' ')"
	check_final "$OUT"
done
note "$written snapshots logged in the 5 runs, $(nsnap "$OUT") .folded and $(nsnap "$OUT" svg) .svg in $OUT"
[[ $written -ge 10 ]] || fail "only $written snapshots in 5 bursts of SIGUSR1"

# What a killed daemon left, and some more of the same kind, go at the next
# start; other files stay.
printf 'chains;main;chain_a1 1\nchains;mai' >"$OUT/.tmp-2026-01-01T00-00-00Z.folded"
: >"$OUT/.tmp-planted"
echo notes >"$OUT/notes.txt"
KEEP=(notes.txt)
note "stale before the start: $(tmp_files "$OUT" | tr '\n' ' ')"
start_daemon crash-restart --config "$EMPTY" --interval 1h --output-dir "$OUT" --formats folded,svg
wait_until 20 "READY=1 of the restart" ready_at_least 6
wait_until 3 "stale .tmp-* removed at start" no_tmp_files "$OUT"
[[ $(cat "$OUT/notes.txt") == notes ]] || fail "notes.txt was touched"
n=$(nsnap "$OUT")
stop_daemon TERM
[[ $DRC -eq 0 ]] || fail "exit status $DRC after SIGTERM, expected 0"
[[ $(nsnap "$OUT") -eq $((n + 1)) ]] || fail "SIGTERM: $(($(nsnap "$OUT") - n)) new snapshots, expected 1"
check_final "$OUT"
no_tmp_files "$OUT" || fail "temporaries left after a clean exit: $(tmp_files "$OUT" | tr '\n' ' ')"
KEEP=()

# --- (b) a full disk ------------------------------------------------------------
# Only the burner is sampled (other tests run chains too).
OUT=$MNT/out
start_daemon full --config "$EMPTY" --interval 1s --output-dir "$OUT" --formats folded,svg --targets "$BURNER"
wait_until 20 "'started' in the log" grep -q started "$DLOG"
wait_until 6 "4 snapshots" logged_at_least 4

# The burner frozen while what came before is written, the disk filled, the
# burner let run: every sample it gives until it is frozen again falls in
# snapshots that cannot be written. The disk is kept full (what the daemon
# frees, its failed temporaries, goes to the filler again) until the burner
# used 4 s of CPU (some 400 samples at 99 Hz) and 3.2 s have passed.
freeze "$BURNER"
settle
last_good=$(snap_log "$DLOG" | tail -n 1)
fill() {
	dd if=/dev/zero of="$MNT/filler" bs=64k oflag=append conv=notrunc status=none 2>/dev/null || true
}
fill
before=$(snapshots "$OUT")
note "filled after $last_good: $(df --output=avail -B1 "$MNT" | tail -n 1 | tr -d ' ') bytes free"
c0=$(cpu_ticks "$BURNER")
want=$(cpu_want "$BURNER" 4)
t_fill=$(now)
thaw "$BURNER"
until cpu_at_least "$BURNER" "$want" && ge "$(since "$t_fill")" 3.2; do
	sleep 0.1
	fill
	running || fail "the daemon died on a full disk"
	! ge "$(since "$t_fill")" 120 || fail "the burner did not get 4 s of CPU in 120 s"
done
freeze "$BURNER"
c1=$(cpu_ticks "$BURNER")
grep -q 'cannot write' "$DLOG" || fail "no 'cannot write' in the log with the disk full for $(since "$t_fill") s"
running || fail "the daemon died on a full disk"
[[ $(snapshots "$OUT") == "$before" ]] ||
	fail "snapshots appeared on the full disk: $(comm -13 <(echo "$before") <(snapshots "$OUT") | tr '\n' ' ')"
check_final "$OUT"
note "$(grep -c 'cannot write' "$DLOG") 'cannot write' lines, e.g. $(grep -m 1 'cannot write' "$DLOG")"

rm -f "$MNT/filler"
t_free=$(now)
wait_until 2.5 "a snapshot within 2 intervals of the disk having space again" nsnap_at_least "$OUT" $(($(wc -l <<<"$before") + 1))
# The first snapshot logged after the last failure: every sample the burner
# gave while the disk was full, none lost, none twice.
first=$(awk -v re="$SNAP_AWK" '
	/cannot write/ { found = ""; after = 1; next }
	after && !found && /snapshot/ && /[0-9]+ samples/ && match($0, re) { found = substr($0, RSTART, RLENGTH) }
	END { print found }' "$DLOG")
[[ -n $first ]] || fail "no snapshot logged after the last 'cannot write'"
c=$(root_count "$OUT/$first.folded" chains)
thaw "$BURNER"
note "$first, $(since "$t_free") s after the disk had space: chains $c samples"
expect_samples_of_cpu "$c" 99 "$(awk -v a="$c0" -v b="$c1" -v t="$CLK_TCK" 'BEGIN { printf "%.2f", (b - a) / t }')" \
	"the burner's samples of the failed snapshots, in $first"
check_final "$OUT"

# --- (c) the output directory deleted -------------------------------------------
rm -rf "$OUT"
wait_until 2.5 "$OUT created again with a snapshot" nsnap_at_least "$OUT" 1
wait_until 2.5 "a second snapshot in the new $OUT" nsnap_at_least "$OUT" 2
wait_until 1 "$OUT/latest.folded" test -L "$OUT/latest.folded"
note "after rm -rf: $(snapshots "$OUT" | tr '\n' ' ')"
stop_daemon TERM
[[ $DRC -eq 0 ]] || fail "exit status $DRC after SIGTERM, expected 0"
check_final "$OUT"
no_tmp_files "$OUT" || fail "temporaries left after a clean exit: $(tmp_files "$OUT" | tr '\n' ' ')"

pass "daemon: no partial snapshot after SIGKILL, stale temporaries removed, full disk survived with its samples, output directory recreated"
