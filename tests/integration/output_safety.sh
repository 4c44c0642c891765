#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Output paths another user can influence (issue 14). In a sticky
# world-writable directory, with fs.protected_symlinks off, an unprivileged
# attacker swaps a symlink to a root-only file in and out of the -o path
# while root writes there: the file is never touched. Another user's FIFO,
# file or symlink at the name is refused at once; root's own FIFO needs a
# reader and gets the output; a block device is refused; /dev/stdout,
# /dev/null and >(cmd) work; a SIGKILLed recording leaves nothing beside
# the output; an extension flamed does not write is a usage error. The
# daemon refuses an output directory someone else controls and creates a
# missing one.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib_restore.sh"
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib_daemon.sh"
command -v setpriv >/dev/null || skip "setpriv is not installed (Debian: util-linux)"
id nobody >/dev/null 2>&1 || skip "no user nobody to play the attacker"
[[ -w /proc/sys/fs/protected_symlinks ]] || skip "cannot set fs.protected_symlinks"

# "${NOBODY[@]}" CMD [ARGS...]: CMD as an unprivileged user (exec'd: its pid is CMD's).
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --)

# The kernel's own symlink protection off, as on the machines of the issue;
# the old value comes back however the test ends (lib_restore.sh).
OLD_PS=$(cat /proc/sys/fs/protected_symlinks)
restore_on_exit "echo $OLD_PS >/proc/sys/fs/protected_symlinks"
trap 'exit 130' INT
trap 'exit 143' TERM
echo 0 >/proc/sys/fs/protected_symlinks

chmod 711 "$T" # nobody may go through to the shared directory, nothing more
SH=$T/shared
mkdir "$SH"
chmod 1777 "$SH"
printf 'main;a;b 3\nmain;a;c 2\n' >"$T/in.folded"
VICTIM=$T/victim
echo precious >"$VICTIM"
chmod 600 "$VICTIM"
VICTIM_SUM=$(sha256sum <"$VICTIM")

victim_intact() {
	[[ $(sha256sum <"$VICTIM") == "$VICTIM_SUM" && $(stat -c '%a %U' "$VICTIM") == "600 root" ]] ||
		fail "$1: the victim file was changed: $(stat -c '%a %U %s' "$VICTIM"), $(head -c 80 "$VICTIM")"
}

# wait_fifo_reader PID: PID is waiting in open() for a FIFO's writer.
wait_fifo_reader() {
	local i
	for ((i = 0; i < 200; i++)); do
		[[ $(cat "/proc/$1/wchan" 2>/dev/null) == wait_for_partner ]] && return 0
		sleep 0.05
	done
	fail "the FIFO's reader (pid $1) did not open it within 10 s"
}

# recorded NAME FILE: NAME's recording exited 0 and FILE holds the samples its
# summary reports, as folded stacks (a loaded machine may give the fixture few).
recorded() {
	local n
	expect_rc 0
	n=$(summary_samples "$T/$1.err")
	if [[ $n -gt 0 ]]; then
		check_folded "$2"
		[[ $(total_count "$2") -eq $n ]] || fail "$1: $(total_count "$2") samples in $2, the summary says $n"
	else
		[[ ! -s $2 ]] || fail "$1: no samples reported, but $2 is not empty"
	fi
}

# one_line NAME WHAT PATTERN: NAME's stderr is one line matching PATTERN.
one_line() {
	[[ $(wc -l <"$T/$1.err") -eq 1 ]] || fail "$2: not one line on stderr: $(cat "$T/$1.err")"
	grep -qE "^flamed: .*$3" "$T/$1.err" || fail "$2: unexpected message: $(cat "$T/$1.err")"
}

# --- the race: a symlink swapped in and out while root writes -----------------
# perl (always there with Debian's perl-base): a shell loop forks too slowly to hit the window.
# shellcheck disable=SC2016 # perl's variables
bg "${NOBODY[@]}" perl -e 'chdir $ARGV[0] or die; while (1) { symlink $ARGV[1], "x.svg"; unlink "x.svg" }' \
	"$SH" "$VICTIM"
ATTACKER=$BG_PID
ok=0 refused=0
for ((i = 0; i < 100; i++)); do
	set +e
	"$FLAMED" svg "$T/in.folded" -o "$SH/x.svg" 2>"$T/race.err"
	rc=$?
	set -e
	case $rc in
	0) ok=$((ok + 1)) ;;
	1) refused=$((refused + 1)) ;;
	*) fail "flamed svg -o in the race: exit $rc: $(cat "$T/race.err")" ;;
	esac
	# Root's file would stop the attacker (sticky directory): the race goes on.
	rm -f "$SH/x.svg"
	victim_intact "flamed svg -o, run $i"
done
note "svg -o x.svg against the symlink loop: $ok written, $refused refused"
for ((i = 0; i < 4; i++)); do
	TIMEOUT=30 run_flamed race-rec record -F 999 -d 0.3 -o "$SH/x.svg" -- "$FIXTURES/chains" 1
	[[ $RC -le 1 ]] || fail "record -o in the race: exit $RC"
	rm -f "$SH/x.svg"
	victim_intact "flamed record -o, run $i"
done
kill "$ATTACKER"
wait "$ATTACKER" 2>/dev/null || true
rm -f "$SH/x.svg"
left=$(find "$SH" -mindepth 1 -user root -printf '%f\n')
[[ -z $left ]] || fail "files left in the shared directory: $left"

# --- another user's things at the name ----------------------------------------
# A symlink of nobody's: refused, nothing written.
ln -s "$VICTIM" "$SH/planted.svg"
chown -h nobody "$SH/planted.svg"
run_flamed planted svg "$T/in.folded" -o "$SH/planted.svg"
expect_rc 1
one_line planted "planted symlink" "refusing to write .*symlink .*65534"
victim_intact "planted symlink"

# A FIFO of nobody's with a reader waiting: refused at once, the reader gets nothing.
"${NOBODY[@]}" mkfifo -m 666 "$SH/p.folded"
bg "${NOBODY[@]}" cat "$SH/p.folded"
READER=$BG_PID
GOT=$T/bg-$BG_N.log
wait_fifo_reader "$READER"
# (flamed of before opened it and blocked, or wrote the profile to the reader)
TIMEOUT=30 run_flamed fifo-other record -a -d 0.3 -o "$SH/p.folded"
expect_rc 1
one_line fifo-other "another user's FIFO" "refusing to write .*FIFO of uid 65534"
[[ ! -s $GOT ]] || fail "the other user's FIFO got the profile"
kill "$READER" 2>/dev/null || true

# A file of nobody's: refused, left as it was.
# shellcheck disable=SC2016 # expanded by the inner shell
"${NOBODY[@]}" sh -c 'echo theirs >"$1"' _ "$SH/theirs.svg"
run_flamed theirs svg "$T/in.folded" -o "$SH/theirs.svg"
expect_rc 1
one_line theirs "another user's file" "refusing to write .*file of uid 65534"
[[ $(cat "$SH/theirs.svg") == theirs ]] || fail "another user's file was replaced"

# Root's own symlink is followed: the file it points to is replaced, the link stays.
echo old >"$T/mine.svg"
ln -s "$T/mine.svg" "$SH/mine.svg"
run_flamed own-link svg "$T/in.folded" -o "$SH/mine.svg"
expect_rc 0
[[ -L $SH/mine.svg ]] || fail "our own symlink was replaced"
grep -q '<svg' "$T/mine.svg" || fail "our own symlink was not followed"

# --- FIFOs and devices ----------------------------------------------------------
# Root's own FIFO: nobody reading is an error at once; with a reader, it gets the graph.
mkfifo -m 600 "$T/fifo.svg"
TIMEOUT=30 run_flamed fifo-noreader svg "$T/in.folded" -o "$T/fifo.svg"
expect_rc 1
one_line fifo-noreader "a FIFO without reader" "no process has the FIFO open for reading"
bg cat "$T/fifo.svg"
READER=$BG_PID
GOT=$T/bg-$BG_N.log
wait_fifo_reader "$READER"
TIMEOUT=30 run_flamed fifo-reader svg "$T/in.folded" -o "$T/fifo.svg"
expect_rc 0
wait "$READER" || fail "the FIFO's reader failed"
grep -q '</svg>' "$GOT" || fail "the FIFO's reader did not get the graph"
TIMEOUT=30 run_flamed fifo-noreader-rec record -a -d 0.3 -o "$T/fifo.svg"
expect_rc 1

# A block device (a major without a driver: nothing real behind it) is refused.
mknod "$T/blk" b 240 0
run_flamed blk svg "$T/in.folded" -o "$T/blk"
expect_rc 1
one_line blk "a block device" "refusing to write .*block device"
[[ -b $T/blk ]] || fail "the block device node was replaced"

# Descriptors of ours and /dev/null.
{ "$FLAMED" svg "$T/in.folded" -o /dev/stdout 2>"$T/stdout.err" | cat >"$T/stdout.svg"; } ||
	fail "-o /dev/stdout into a pipe: $(cat "$T/stdout.err")"
grep -q '</svg>' "$T/stdout.svg" || fail "-o /dev/stdout into a pipe wrote nothing"
"$FLAMED" svg "$T/in.folded" -o /dev/stdout >"$T/stdout-file.svg" 2>"$T/stdout-file.err" ||
	fail "-o /dev/stdout into a file: $(cat "$T/stdout-file.err")"
grep -q '</svg>' "$T/stdout-file.svg" || fail "-o /dev/stdout into a file wrote nothing"
run_flamed devnull svg "$T/in.folded" -o /dev/null
expect_rc 0
[[ -c /dev/null ]] || fail "/dev/null is no longer a device"
"$FLAMED" svg "$T/in.folded" -o >(cat >"$T/procsub.svg") 2>"$T/procsub.err" ||
	fail "-o >(cat): $(cat "$T/procsub.err")"
for ((i = 0; i < 100; i++)); do
	grep -q '</svg>' "$T/procsub.svg" 2>/dev/null && break
	sleep 0.05
done
grep -q '</svg>' "$T/procsub.svg" || fail "-o >(cat) wrote nothing"
run_flamed rec-stdout record -F 999 -o /dev/stdout -- "$FIXTURES/chains" 0.5
recorded rec-stdout "$T/rec-stdout.out"

# --- SIGKILL: nothing left beside the output ------------------------------------
mkdir "$T/k"
"$FLAMED" record -a -o "$T/k/out.folded" 2>"$T/kill.err" &
KPID=$!
BG_PIDS+=("$KPID")
for ((i = 0; i < 200; i++)); do
	find "/proc/$KPID/fd" -lname "$T/k/*" 2>/dev/null | grep -q . && break
	sleep 0.05
done
sleep 0.2
kill -KILL "$KPID"
wait "$KPID" 2>/dev/null || true
left=$(find "$T/k" -mindepth 1 -printf '%f\n')
[[ -z $left ]] || fail "a recording killed with SIGKILL left: $left"

# --- formats ---------------------------------------------------------------------
# A name of a format flamed does not write is an error, not folded text under it.
run_flamed json record -a -d 0.3 -o "$T/x.json"
expect_rc 2
one_line json "-o x.json" "\\.folded.*\\.svg.*\\.html.*\\.pb\\.gz"
[[ ! -e $T/x.json ]] || fail "-o x.json wrote a file"
run_flamed json-folded record --format folded -F 999 -o "$T/x.json" -- "$FIXTURES/chains" 0.5
recorded json-folded "$T/x.json"
# -o x.pb.gz is pprof; a subcommand that does not write it says so.
run_flamed svg-pbgz svg "$T/in.folded" -o "$T/y.pb.gz"
expect_rc 2
one_line svg-pbgz "svg -o y.pb.gz" "writes an SVG"

# --- the daemon's output directory ---------------------------------------------
: >"$T/empty.conf"
# refused_dir NAME DIR PATTERN: the daemon will not start with DIR.
refused_dir() {
	TIMEOUT=30 run_flamed "$1" daemon --config "$T/empty.conf" --interval 1s --output-dir "$2"
	expect_rc 1
	one_line "$1" "output directory $2" "cannot use the output directory .*$3"
}
mkdir "$T/d-nobody"
chown nobody "$T/d-nobody"
refused_dir d-nobody "$T/d-nobody" "belongs to uid 65534"
mkdir "$T/d-open"
chmod 0777 "$T/d-open"
refused_dir d-open "$T/d-open" "mode 0777"
mkdir -m 0755 "$T/elsewhere"
ln -s "$T/elsewhere" "$SH/prof"
chown -h nobody "$SH/prof"
refused_dir d-link "$SH/prof" "symlink of uid 65534"
[[ -z $(find "$T/elsewhere" -mindepth 1) ]] || fail "the daemon wrote through another user's symlink"
# Missing: created 0755 (parents too), through root's own symlink, at start-up
# (before sampling is set up, which is all a loaded machine may be slow at).
ln -s "$T/elsewhere" "$T/mylink"
start_daemon d-new --config "$T/empty.conf" --interval 1s --output-dir "$T/mylink/new/prof"
wait_until 60 "$T/elsewhere/new/prof created" test -d "$T/elsewhere/new/prof"
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null || true
[[ $(stat -c %a "$T/elsewhere/new" "$T/elsewhere/new/prof" | tr '\n' ' ') == "755 755 " ]] ||
	fail "the output directory was not created 0755: $(stat -c '%n %a' "$T/elsewhere/new" "$T/elsewhere/new/prof")"
[[ -L $T/mylink ]] || fail "the daemon replaced root's own symlink"

pass "output paths: a symlink race (${ok} written, ${refused} refused of 100), others' links, FIFOs and files, devices, descriptors, SIGKILL, formats, the daemon's directory"
