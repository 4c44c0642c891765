#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed daemon` in the foreground, as systemd runs it: READY=1, WATCHDOG=1
# and STOPPING=1 on NOTIFY_SOCKET; a snapshot every interval, named by the
# UTC start of its interval, complete in every format, mode 0600, with
# latest.* pointing at the newest; SIGUSR1 writes one now, SIGTERM and
# SIGINT a last one and exit 0; an interval without samples is a snapshot
# too. Retention by count and by size deletes the oldest snapshots and
# nothing else. SIGHUP reloads the file under the command-line overrides,
# and refuses a broken file. A broken file at start: exit 1, one line.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib_daemon.sh"

# check_dir DIR: after a clean exit, DIR holds the snapshots (each checked in
# every format of FORMATS, mode 0600), latest.* pointing at the newest, the
# files named in KEEP, and nothing else (no .tmp-* left).
check_dir() {
	local dir=$1 f base newest ext mode bad=()
	newest=$(snapshots "$dir" | tail -n 1)
	[[ -n $newest ]] || fail "no snapshot in $dir"
	while IFS= read -r base; do
		f=$dir/$base
		case $base in
		latest.folded | latest.svg)
			ext=${base#latest.}
			[[ -L $f ]] || fail "$f is not a symbolic link"
			[[ $(readlink "$f") == "$newest.$ext" ]] ||
				fail "$f points at '$(readlink "$f")', not the newest snapshot $newest.$ext"
			[[ $FORMATS == *$ext* ]] || fail "$f exists, but formats are $FORMATS"
			continue
			;;
		*.folded | *.svg)
			ext=${base##*.}
			grep -qE "$SNAP_RE" <<<"${base%."$ext"}" || {
				bad+=("$base")
				continue
			}
			;;
		*)
			bad+=("$base")
			continue
			;;
		esac
		[[ $FORMATS == *$ext* ]] || fail "$f: formats are $FORMATS"
		[[ -f $f && ! -L $f ]] || fail "$f is not a regular file"
		mode=$(stat -c %a "$f")
		[[ $mode == 600 ]] || fail "$f has mode $mode, not 600"
		if [[ $ext == folded ]]; then
			folded_ok "$f"
		else
			xmllint --noout "$f" 2>"$T/xmllint.err" || fail "$f is not well-formed: $(head -n 3 "$T/xmllint.err")"
		fi
	done < <(dir_files "$dir")
	[[ ${#bad[@]} -eq 0 ]] || fail "unexpected files in $dir: ${bad[*]}"
	for ext in folded svg; do
		if [[ $FORMATS == *$ext* ]]; then
			[[ -L $dir/latest.$ext ]] || fail "no $dir/latest.$ext"
		fi
	done
	if [[ $FORMATS == *folded* && $FORMATS == *svg* ]]; then
		[[ $(snapshots "$dir" folded) == "$(snapshots "$dir" svg)" ]] ||
			fail "$dir: the .folded and .svg snapshots differ: $(snapshots "$dir" folded | tr '\n' ' ') / $(snapshots "$dir" svg | tr '\n' ' ')"
	fi
}

# same_frames DIR: each snapshot's SVG draws the frames (name, depth, x,
# width) that flamed svg draws of the same snapshot's folded stacks. The
# snapshot's SVG folds the frames too narrow to draw while it builds its
# tree; flamed svg builds the tree of every frame.
AWK=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/svg_frames.awk
same_frames() {
	local s drawn=0 n=0
	while read -r s; do
		"$FLAMED" svg "$1/$s.folded" -o "$T/re.svg" 2>"$T/re.err" || fail "flamed svg $s.folded: $(cat "$T/re.err")"
		awk -f "$AWK" "$1/$s.svg" | sort >"$T/snap.frames"
		awk -f "$AWK" "$T/re.svg" | sort >"$T/re.frames"
		cmp -s "$T/snap.frames" "$T/re.frames" ||
			fail "$s.svg draws other frames than flamed svg of $s.folded: $(diff "$T/snap.frames" "$T/re.frames" | head -n 4 | tr '\n' '|')"
		drawn=$((drawn + $(wc -l <"$T/re.frames")))
		n=$((n + 1))
	done < <(snapshots "$1")
	[[ $drawn -gt 0 ]] || fail "the snapshots' SVGs in $1 draw no frame"
	note "$n snapshots' SVGs draw the $drawn frames that flamed svg draws of their folded stacks"
}

# Something to sample: one busy thread (chains never forks or renames).
bg "$FIXTURES/chains" 120
BURNER=$BG_PID
wait_comm "$BURNER" chains
EMPTY=$T/empty.conf
: >"$EMPTY"

# --- a broken configuration at start: exit 1, one line ------------------------
printf 'interval = 1s\nbogus_key = 1\n' >"$T/bad.conf"
TIMEOUT=20 run_flamed bad-conf daemon --config "$T/bad.conf" --output-dir "$T/bad-out"
expect_rc 1
[[ $(wc -l <"$LAST_ERR") -eq 1 ]] || fail "expected one error line, got: $(cat "$LAST_ERR")"
grep -qF "$T/bad.conf:2: bogus_key" "$LAST_ERR" || fail "the error does not say '$T/bad.conf:2: bogus_key': $(cat "$LAST_ERR")"
[[ ! -e $T/bad-out ]] || fail "the output directory was created despite the broken configuration"
TIMEOUT=20 run_flamed missing-conf daemon --config "$T/missing.conf" --output-dir "$T/bad-out"
expect_rc 1
[[ $(wc -l <"$LAST_ERR") -eq 1 ]] || fail "expected one error line, got: $(cat "$LAST_ERR")"
grep -qF "$T/missing.conf" "$LAST_ERR" || fail "the error does not name $T/missing.conf: $(cat "$LAST_ERR")"
TIMEOUT=20 run_flamed bad-option daemon --config "$EMPTY" --output-dir "$T/bad-out" --frequency abc
[[ $RC -ne 0 ]] || fail "--frequency abc was accepted"
grep -q frequency "$LAST_ERR" || fail "the error about --frequency abc does not name it: $(cat "$LAST_ERR")"

# --- one run on a 1 s interval, as systemd would run it -----------------------
# A time zone far from UTC (POSIX syntax, no tzdata needed): names must stay UTC.
OUT=$T/out # the daemon creates it
FORMATS=folded,svg
start_listener "$T/notify.sock" main
DAEMON_ENV=(NOTIFY_SOCKET="$T/notify.sock" WATCHDOG_USEC=1000000 TZ=XST-5:30)
t_start=$(date -u +%s)
start_daemon main --config "$EMPTY" --interval 1s --output-dir "$OUT" --formats "$FORMATS"
wait_until 20 "READY=1 on NOTIFY_SOCKET" grep -qx READY=1 "$NLOG"
t_ready=$(now)
note "READY=1 after $(awk -v a="$t_start" -v b="$t_ready" 'BEGIN { printf "%.1f", b - a }') s"
wait_until 2 "a 'started' line in the log" grep -q started "$DLOG"
grep -q '^STATUS=.' "$NLOG" || fail "no STATUS= with READY=1"

wait_until 4.5 "3 snapshots within 4.5 s of READY=1" nsnap_at_least "$OUT" 3
[[ -d $OUT ]] || fail "$OUT was not created"
# Whatever else is there now: the snapshots, latest.*, temporaries in flight.
for f in "$OUT"/* "$OUT"/.[!.]*; do
	[[ -e $f || -L $f ]] || continue
	base=${f##*/}
	case $base in
	latest.folded | latest.svg | .tmp-*) ;;
	*.folded | *.svg) grep -qE "$SNAP_RE" <<<"${base%.*}" || fail "unexpected file $base in $OUT" ;;
	*) fail "unexpected file $base in $OUT" ;;
	esac
done
el=$(since "$t_ready")
ge "$el" 3 || sleep "$(awk -v e="$el" 'BEGIN { print 3 - e }')"
wd=$(notified WATCHDOG=1)
note "WATCHDOG=1 x $wd within $(since "$t_ready") s of READY=1 (WATCHDOG_USEC=1000000)"
[[ $wd -ge 2 ]] || fail "WATCHDOG=1 came $wd times in 3 s; WATCHDOG_USEC=1000000 wants one every 0.5 s"
[[ -L $OUT/latest.folded && -e $OUT/latest.folded ]] || fail "no $OUT/latest.folded pointing at a snapshot"

# SIGTERM in the middle of an interval: 0.3 s after a snapshot.
n=$(nlog "$DLOG")
wait_until 2 "a snapshot every second" logged_at_least $((n + 1))
sleep 0.3
n=$(nlog "$DLOG")
last=$(snap_log "$DLOG" | tail -n 1)
stop_daemon TERM
[[ $DRC -eq 0 ]] || fail "exit status $DRC after SIGTERM, expected 0"
[[ $(nlog "$DLOG") -eq $((n + 1)) ]] ||
	fail "SIGTERM 0.3 s into an interval: $(($(nlog "$DLOG") - n)) snapshots logged after it, expected 1"
final=$(snap_log "$DLOG" | tail -n 1)
[[ $final == "$(snapshots "$OUT" | tail -n 1)" ]] || fail "the last snapshot logged, $final, is not the newest file"
d=$(($(snap_time "$final") - $(snap_time "$last")))
[[ $d -ge 0 && $d -le 2 ]] || fail "the last snapshot $final starts $d s after the previous one, $last"
wait_until 2 "STOPPING=1 on NOTIFY_SOCKET" grep -qx STOPPING=1 "$NLOG"
[[ $(grep -nx READY=1 "$NLOG" | cut -d: -f1) -lt $(grep -nx STOPPING=1 "$NLOG" | cut -d: -f1) ]] ||
	fail "STOPPING=1 came before READY=1"
[[ $(notified READY=1) -eq 1 ]] || fail "READY=1 came $(notified READY=1) times"
stop_listener
note "main: $(nsnap "$OUT") snapshots: $(snapshots "$OUT" | tr '\n' ' ')"

check_dir "$OUT"
mapfile -t snaps < <(snapshots "$OUT")
same_frames "$OUT"
[[ $(nlog "$DLOG") -eq ${#snaps[@]} ]] || fail "${#snaps[@]} snapshots in $OUT, $(nlog "$DLOG") in the log"
[[ $(grep -c '^STATUS=' "$NLOG") -ge ${#snaps[@]} ]] ||
	fail "$(grep -c '^STATUS=' "$NLOG") STATUS= for ${#snaps[@]} snapshots"
# The first interval starts between the start and READY=1.
first=$(snap_time "${snaps[0]}")
[[ $first -ge $((t_start - 1)) && $first -le $((${t_ready%.*} + 1)) ]] ||
	fail "the first snapshot ${snaps[0]} is not between the start ($(date -u -d "@$t_start" +%FT%TZ)) and READY=1 ($(date -u -d "@${t_ready%.*}" +%FT%TZ)): not UTC?"
# Every snapshot's log line: its name, its samples. Scheduled ones (all but
# the last) about 1 s apart.
with_samples=0
all_chains=0
prev=
for s in "${snaps[@]}"; do
	awk -v s="$s" '/snapshot/ && /[0-9]+ samples/ && (i = index($0, s)) &&
		substr($0, i + length(s), 1) !~ /[-0-9]/ { found = 1 } END { exit !found }' "$DLOG" ||
		fail "no log line 'snapshot ... $s ... N samples'"
	total=$(total_count "$OUT/$s.folded")
	c=$(root_count "$OUT/$s.folded" chains)
	note "$s: $total samples, chains $c"
	[[ $total -gt 0 ]] && with_samples=$((with_samples + 1))
	all_chains=$((all_chains + $(count_matching "$OUT/$s.folded" "$CHAIN_A")))
	if [[ -n $prev && $s != "$final" ]]; then
		d=$(($(snap_time "$s") - $(snap_time "$prev")))
		[[ $d -ge 0 && $d -le 2 ]] || fail "$prev then $s: $d s apart, on a 1 s interval"
	fi
	prev=$s
done
[[ $with_samples -ge $((${#snaps[@]} - 1)) ]] ||
	fail "only $with_samples of ${#snaps[@]} snapshots have samples, with a busy process running"
[[ $all_chains -gt 0 ]] || fail "no sample of 'chains' in $CHAIN_A in any snapshot"
span=$(($(snap_time "${snaps[-2]}") - first))
expect_between "$(awk -v s="$span" -v n="${#snaps[@]}" 'BEGIN { printf "%.2f", s / (n - 2) }')" \
	0.75 1.35 "the mean time between scheduled snapshots (s)"

# --- SIGUSR1 and keep_files ----------------------------------------------------
# A 1 h interval: every snapshot is one that SIGUSR1 asked for. The abstract
# socket, and a WATCHDOG_PID that is not the daemon's: no WATCHDOG=1 then.
OUT2=$T/keep
mkdir -p "$OUT2"
echo "notes" >"$OUT2/notes.txt"
printf 'junk;x 1\n' >"$OUT2/junk.folded"
printf 'bad;x 1\n' >"$OUT2/2026-bad.folded"
# A snapshot of an earlier run, older than any: the first to go.
printf 'old;x 1\n' >"$OUT2/2020-01-01T00-00-00Z.folded"
cp "$OUT/${snaps[0]}.svg" "$OUT2/2020-01-01T00-00-00Z.svg"
KEEP=(notes.txt junk.folded 2026-bad.folded)
start_listener "@flamed-test-$$" keep
DAEMON_ENV=(NOTIFY_SOCKET="@flamed-test-$$" WATCHDOG_USEC=200000 WATCHDOG_PID=1)
start_daemon keep --config "$EMPTY" --interval=1h --output-dir="$OUT2" --formats=folded,svg --keep-files 3
wait_until 20 "READY=1 on the abstract NOTIFY_SOCKET" grep -qx READY=1 "$NLOG"
for i in 1 2 3 4 5 6; do
	n=$(nlog "$DLOG")
	t0=$(now)
	kill -USR1 "$DPID"
	# The first one may symbolize every binary on the machine: more time.
	wait_until "$([[ $i -eq 1 ]] && echo 5 || echo 2)" "a snapshot after SIGUSR1 #$i" logged_at_least $((n + 1))
	note "SIGUSR1 #$i: $(snap_log "$DLOG" | tail -n 1) after $(since "$t0") s"
	[[ $(nlog "$DLOG") -eq $((n + 1)) ]] || fail "SIGUSR1 #$i: $(($(nlog "$DLOG") - n)) snapshots, expected 1"
	sleep 0.1
done
wait_until 2 "at most 3 snapshots with --keep-files 3" nsnap_at_most "$OUT2" 3
stop_daemon TERM
[[ $DRC -eq 0 ]] || fail "exit status $DRC after SIGTERM, expected 0"
[[ $(notified WATCHDOG=1) -eq 0 ]] || fail "WATCHDOG=1 sent although WATCHDOG_PID=1 is not the daemon"
stop_listener
check_dir "$OUT2"
mapfile -t logged < <(snap_log "$DLOG")
note "keep: logged ${logged[*]}; kept $(snapshots "$OUT2" | tr '\n' ' ')"
[[ ${#logged[@]} -eq 7 ]] || fail "7 snapshots expected (6 x SIGUSR1, SIGTERM), ${#logged[@]} logged"
[[ $(snapshots "$OUT2") == "$(printf '%s\n' "${logged[@]:4}")" ]] ||
	fail "--keep-files 3 kept $(snapshots "$OUT2" | tr '\n' ' '), not the newest 3: ${logged[*]:4}"
[[ $(snapshots "$OUT2" svg) == "$(snapshots "$OUT2")" ]] || fail "the .svg of the deleted snapshots were kept"
[[ $(cat "$OUT2/notes.txt") == notes && $(cat "$OUT2/junk.folded") == 'junk;x 1' &&
	$(cat "$OUT2/2026-bad.folded") == 'bad;x 1' ]] || fail "retention touched files that are not snapshots"
# Several snapshots in one second: NAME, NAME-2, NAME-3..., in that order.
prev=
for s in "${logged[@]}"; do
	grep -qE "$SNAP_RE" <<<"$s" || fail "bad snapshot name $s"
	if [[ -n $prev ]]; then
		if [[ ${s%Z*} == "${prev%Z*}" ]]; then
			p=${prev#*Z}
			p=${p#-}
			[[ ${s#*Z} == "-$((${p:-1} + 1))" ]] || fail "$s follows $prev in the same second"
		else
			[[ ${s#*Z} == "" ]] || fail "$s is the first snapshot of its second, yet has a suffix"
			[[ $(snap_time "$s") -gt $(snap_time "$prev") ]] || fail "$s follows $prev: back in time"
		fi
	fi
	prev=$s
done

# --- keep_bytes ----------------------------------------------------------------
# A bound of three snapshots of the kind just written; a big file of someone
# else's in the directory counts for nothing.
max=0
for s in $(snapshots "$OUT2"); do
	b=$(($(stat -c %s "$OUT2/$s.folded") + $(stat -c %s "$OUT2/$s.svg")))
	[[ $b -gt $max ]] && max=$b
done
bound=$((3 * max))
OUT3=$T/bytes
mkdir -p "$OUT3"
head -c 1048576 /dev/zero >"$OUT3/big.bin"
KEEP=(big.bin)
DAEMON_ENV=()
start_daemon bytes --config "$EMPTY" --interval 1h --output-dir "$OUT3" --formats folded,svg --keep-bytes "$bound"
wait_until 20 "'started' in the log" grep -q started "$DLOG"
# snap_bytes DIR: the total size of the snapshot files in DIR.
snap_bytes() {
	local s total=0
	for s in $(snapshots "$1"); do
		total=$((total + $({ stat -c %s "$1/$s.folded" "$1/$s.svg" 2>/dev/null || true; } |
			awk '{ n += $1 } END { print n + 0 }')))
	done
	echo "$total"
}
# shellcheck disable=SC2317 # called by wait_until
bytes_at_most() {
	[[ $(snap_bytes "$1") -le $2 ]]
}
for i in $(seq 1 11); do
	n=$(nlog "$DLOG")
	kill -USR1 "$DPID"
	wait_until 3 "a snapshot after SIGUSR1 #$i" logged_at_least $((n + 1))
	wait_until 2 "snapshots within --keep-bytes $bound" bytes_at_most "$OUT3" "$bound"
	sleep 0.1
done
# SIGINT as SIGTERM: a last snapshot, exit 0.
n=$(nlog "$DLOG")
stop_daemon INT
[[ $DRC -eq 0 ]] || fail "exit status $DRC after SIGINT, expected 0"
[[ $(nlog "$DLOG") -eq $((n + 1)) ]] || fail "SIGINT: $(($(nlog "$DLOG") - n)) snapshots logged after it, expected 1"
check_dir "$OUT3"
total=$(snap_bytes "$OUT3")
note "keep-bytes $bound: $(nsnap "$OUT3") of $(nlog "$DLOG") snapshots kept, $total bytes"
[[ $total -le $bound ]] || fail "$total bytes of snapshots kept, more than --keep-bytes $bound"
[[ $(nsnap "$OUT3") -ge 1 ]] || fail "--keep-bytes deleted every snapshot"
[[ $(nsnap "$OUT3") -lt $(nlog "$DLOG") ]] || fail "--keep-bytes $bound deleted nothing (snapshots smaller than expected?)"
[[ $(stat -c %s "$OUT3/big.bin") -eq 1048576 ]] || fail "retention touched big.bin"
KEEP=()

# --- intervals without samples ---------------------------------------------------
# A target that does not run: snapshots all the same, without samples.
OUT5=$T/empty
start_daemon empty --config "$EMPTY" --interval 1s --output-dir "$OUT5" --formats folded,svg --targets nosuch-process
wait_until 20 "'started' in the log" grep -q started "$DLOG"
wait_until 4 "2 snapshots of intervals without samples" logged_at_least 2
stop_daemon TERM
[[ $DRC -eq 0 ]] || fail "exit status $DRC after SIGTERM, expected 0"
check_dir "$OUT5"
for s in $(snapshots "$OUT5"); do
	[[ $(total_count "$OUT5/$s.folded") -eq 0 ]] || fail "$s has samples of a process that does not run: $(head -n 3 "$OUT5/$s.folded")"
done
note "targets nosuch-process: $(nsnap "$OUT5") snapshots without samples"

# --- the SVG folds what it cannot draw -----------------------------------------
# A frame narrower than 0.1 px of 1180 (1/11,800 of the samples) is not
# drawn; the snapshot's tree folds such subtrees as it is built, and says
# how many frames it folded (-v). At 4999 Hz the burner alone gives a 4 s
# snapshot some 20,000 samples, so the machine's rarer stacks fold.
OUT6=$T/fold
FORMATS=folded,svg
max_rate=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
if [[ $max_rate -lt 4999 ]]; then
	note "SKIPPED the folding check: kernel.perf_event_max_sample_rate is $max_rate, below 4999"
else
	start_daemon fold -v --config "$EMPTY" --interval 4s --frequency 4999 --output-dir "$OUT6" --formats "$FORMATS"
	wait_until 20 "'started' in the log" grep -q started "$DLOG"
	wait_until 14 "2 snapshots at 4999 Hz" logged_at_least 2
	stop_daemon TERM
	[[ $DRC -eq 0 ]] || fail "exit status $DRC after SIGTERM, expected 0"
	check_dir "$OUT6"
	same_frames "$OUT6"
	folded=$(sed -n 's/.*flame graph: [0-9]* frames built, \([0-9]*\) more folded.*/\1/p' "$DLOG" | sort -n | tail -n 1)
	note "fold: the most frames folded in one snapshot's SVG: ${folded:-none}; $(snap_log "$DLOG" | wc -l) snapshots: $(grep -o '[0-9]* samples' "$DLOG" | tr '\n' ' ')"
	[[ ${folded:-0} -gt 0 ]] || fail "no snapshot's SVG folded a frame: $(grep 'flame graph:' "$DLOG" | head -n 3)"
fi

# --- SIGHUP --------------------------------------------------------------------
# The file says a 1 h interval, the command line 1 s: the override must
# survive the reloads. The default format is folded only. Only the burner is
# sampled (other tests run chains too): its samples per second of its CPU
# show the frequency of each phase, whatever share of the CPU it gets.
CONF=$T/hup.conf
OUT4=$T/hup
FORMATS=folded
printf 'interval = 1h\nfrequency = 99\n' >"$CONF"
start_daemon hup -v --config "$CONF" --interval 1s --output-dir "$OUT4" --targets "$BURNER"
wait_until 20 "'started' in the log" grep -q started "$DLOG"
# max_stacks is auto by default: the counts maps sized as record's, 4 per
# sample a second (a power of two from 4096 to 65536), not 65536 each.
present=$(awk -F, '{ for (i = 1; i <= NF; i++) { n = split($i, r, "-"); c += n == 2 ? r[2] - r[1] + 1 : 1 } } END { print c }' /sys/devices/system/cpu/present)
want=4096
while ((want < 99 * 4 * present && want < 65536)); do want=$((want * 2)); done
counts=$(sed -n 's/.*sampler_bpf: maps of a set: .* \([0-9]*\) counts (max_stacks).*/\1/p' "$DLOG" | head -n 1)
[[ $counts == "$want" ]] || fail "max_stacks = auto at 99 Hz on $present CPUs: counts maps of ${counts:-?} entries, expected $want"
wait_until 7 "4 snapshots at 99 Hz" logged_at_least 4
# 99 Hz: 4 s of CPU for some 400 samples, enough to tell 85 % from 100 %.
cpu_window "$OUT4" "$BURNER" 4 chains
expect_samples_of_cpu "$WINDOW_SAMPLES" 99 "$WINDOW_CPU" "chains at 99 Hz"
printf 'interval = 1h\nfrequency = 499\n' >"$CONF.new"
mv "$CONF.new" "$CONF"
kill -HUP "$DPID"
wait_until 3 "'reloaded' in the log after SIGHUP" grep -q reloaded "$DLOG"
n=$(nlog "$DLOG")
wait_until 6 "4 snapshots after the reload (the command line's --interval 1s over the file's 1h)" \
	logged_at_least $((n + 4))
cpu_window "$OUT4" "$BURNER" 1 chains
expect_samples_of_cpu "$WINDOW_SAMPLES" 499 "$WINDOW_CPU" "chains after the reload to 499 Hz"
printf 'interval = 1h\nfrequncy = 5\n' >"$CONF.new"
mv "$CONF.new" "$CONF"
kill -HUP "$DPID"
wait_until 3 "'refused' in the log after SIGHUP with a broken file" grep -q refused "$DLOG"
awk -v p="$CONF:2" '/refused/ && index($0, p) { found = 1 } END { exit !found }' "$DLOG" || fail "the refusal does not name $CONF:2: $(grep refused "$DLOG")"
n=$(nlog "$DLOG")
wait_until 5 "3 snapshots after the refused reload" logged_at_least $((n + 3))
cpu_window "$OUT4" "$BURNER" 1 chains
expect_samples_of_cpu "$WINDOW_SAMPLES" 499 "$WINDOW_CPU" "chains after the refused reload (still 499 Hz)"
running || fail "the daemon is gone after a refused reload"
stop_daemon TERM
[[ $DRC -eq 0 ]] || fail "exit status $DRC after SIGTERM, expected 0"
check_dir "$OUT4"
[[ $(grep -c reloaded "$DLOG") -eq 1 ]] || fail "'reloaded' logged $(grep -c reloaded "$DLOG") times, expected once"

pass "daemon: notify, snapshots on schedule, SIGUSR1, SIGTERM, SIGINT, keep_files, keep_bytes, empty intervals, SIGHUP, bad config"
