# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers shared by the integration tests (sourced, never run on its own).
#
# ctest passes FLAMED (the binary), FIXTURES (the fixture programs' directory)
# and SRCDIR (the repository). A test exits 0 when it passes, 1 when it fails
# and 77 when this machine cannot run it (ctest reports SKIP, with the reason).

set -euo pipefail

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	echo "SKIP: lib.sh holds the integration tests' helpers; it is sourced, not a test"
	exit 77
fi

# The fixture's call chains (tests/fixtures/progs/chains.c). Matched as
# substrings: what sits above main depends on libc (__libc_start_call_main,
# _start, ...), and kernel frames may follow the leaf.
# shellcheck disable=SC2034 # used by the tests that source this file
readonly CHAIN_A=';main;chain_a1;chain_a2;chain_a3;burn_cpu' \
	CHAIN_B=';main;chain_b1;chain_b2;chain_b3;burn_cpu' \
	CHAIN_C=';thread_main;chain_c1;chain_c2;burn_cpu' \
	CHILD_SPIN=';main;child_spin;burn_cpu' # the last one: tests/fixtures/progs/spawner.c

LAST_ERR=

skip() {
	echo "SKIP: $*"
	exit 77
}

fail() {
	echo "FAIL: $*" >&2
	if [[ -n $LAST_ERR && -s $LAST_ERR ]]; then
		echo "--- stderr of the last run ($LAST_ERR):" >&2
		tail -n 20 "$LAST_ERR" >&2
	fi
	exit 1
}

# signal_and_wait PID SIG WHO: sends SIG to PID, a child of this shell, and
# waits for its exit; one that ignores the signal is killed after 15 s and
# fails the test. Sets WAIT_RC.
signal_and_wait() {
	local pid=$1 sig=$2 who=$3 dog
	kill -"$sig" "$pid" 2>/dev/null || fail "$who exited before SIG$sig"
	# The watchdog takes its sleep along when stopped, and holds none of our
	# output open (ctest waits for that to close).
	(
		trap 'kill "$nap" 2>/dev/null; exit 0' TERM
		sleep 15 &
		nap=$!
		wait "$nap"
		kill -KILL "$pid" 2>/dev/null
	) </dev/null >/dev/null 2>&1 &
	dog=$!
	set +e
	wait "$pid"
	WAIT_RC=$?
	set -e
	kill "$dog" 2>/dev/null || true
	wait "$dog" 2>/dev/null || true
	note "SIG$sig: exit $WAIT_RC"
	[[ $WAIT_RC -ne 137 ]] || fail "$who did not exit within 15 s of SIG$sig"
}

pass() {
	echo "PASS: $*"
	exit 0
}

note() {
	echo "-- $*"
}

[[ -n ${FLAMED:-} ]] || fail "FLAMED is not set (run through ctest, or export FLAMED=path/to/flamed)"
[[ -n ${FIXTURES:-} ]] || fail "FIXTURES is not set (run through ctest, or export FIXTURES=build/tests/fixtures)"
[[ -x $FLAMED ]] || fail "no flamed binary at $FLAMED"
[[ -x $FIXTURES/chains ]] || fail "no fixture programs in $FIXTURES"
FLAMED=$(readlink -f "$FLAMED")
# Names come from the files here: a machine that sets DEBUGINFOD_URLS for
# login shells would have every recording ask a server (record_debuginfod.sh
# sets it where it means to).
unset DEBUGINFOD_URLS
FIXTURES=$(readlink -f "$FIXTURES")

# Skips unless this process may sample every CPU: root, a kernel with perf
# events, and perf_event_open allowed (containers and some VMs forbid it even
# to root). The probe is a fixture program, so no perf tool is needed.
need_root_and_perf() {
	[[ $(id -u) -eq 0 ]] || skip "needs root (perf events on all CPUs, BPF); running as uid $(id -u)"
	[[ -r /proc/sys/kernel/perf_event_paranoid ]] ||
		skip "kernel without perf events (no /proc/sys/kernel/perf_event_paranoid)"
	local why
	why=$("$FIXTURES/perf_probe" 2>&1) || skip "perf events unavailable: $why"
}

# Scratch directory and background processes, cleaned up on any exit.
T=$(mktemp -d "${TMPDIR:-/tmp}/flamed-test.XXXXXX")
BG_PIDS=()
cleanup() {
	local pid
	# TERM first: a `timeout CMD` passes it on to CMD; KILL would orphan CMD.
	for pid in "${BG_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	sleep 0.1
	for pid in "${BG_PIDS[@]}"; do
		kill -KILL "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	[[ -n ${FLAMED_KEEP_T:-} ]] && echo "kept $T" >&2 || rm -rf "$T"
}
trap cleanup EXIT
# Whatever a test leaves in its working directory goes away with it.
cd "$T"

# bg CMD [ARGS...]: starts CMD in the background (stdout and stderr into
# $T/bg-N.log), sets BG_PID, and kills it on exit if it is still running.
BG_N=0
bg() {
	BG_N=$((BG_N + 1))
	"$@" >"$T/bg-$BG_N.log" 2>&1 &
	BG_PID=$!
	BG_PIDS+=("$BG_PID")
}

# bg_flamed NAME ARGS...: starts flamed ARGS in the background, its stderr into
# $T/NAME.err (LAST_ERR); sets FLAMED_PID (killed on exit if still running).
# FLAMED_WRAP, when set, is a command that execs flamed (its arguments): to
# run it under other limits, e.g. (bash -c 'ulimit -n 128 && exec "$@"' -).
FLAMED_WRAP=()
bg_flamed() {
	local name=$1
	shift
	LAST_ERR=$T/$name.err
	"${FLAMED_WRAP[@]}" "$FLAMED" "$@" 2>"$LAST_ERR" &
	FLAMED_PID=$!
	BG_PIDS+=("$FLAMED_PID")
}

# wait_flamed NAME: waits for the flamed bg_flamed NAME started; fails unless it exits 0.
wait_flamed() {
	local rc=0
	wait "$FLAMED_PID" || rc=$?
	[[ $rc -eq 0 ]] || fail "$1: exit $rc: $(cat "$T/$1.err")"
}

# wait_sampling NAME: waits until the flamed bg_flamed NAME started, with -v,
# says that it samples (at most 30 s: on a busy machine the start-up takes
# time; a recording checked against what happens next must have begun).
wait_sampling() {
	local i
	for ((i = 0; i < 600; i++)); do
		grep -q '^flamed: debug: tracker start .* and sampler start' "$T/$1.err" && return 0
		kill -0 "$FLAMED_PID" 2>/dev/null || fail "$1: flamed exited before sampling: $(grep -v 'debug:' "$T/$1.err")"
		sleep 0.05
	done
	fail "$1: flamed does not say that it samples after 30 s (no 'tracker start ... and sampler start' with -v)"
}

# stop_flamed NAME: SIGINT to the flamed bg_flamed NAME started (a recording
# without -d: it ends when what it records is done, not at a wall-clock time
# a busy machine may not keep); fails unless it exits 0.
stop_flamed() {
	signal_and_wait "$FLAMED_PID" INT flamed
	[[ $WAIT_RC -eq 0 ]] || fail "$1: exit $WAIT_RC after SIGINT: $(grep -v 'debug:' "$T/$1.err")"
}

# wait_comm PID NAME: waits (at most 5 s) until PID has exec'd NAME, so that a
# recording started next sees the program and not the shell that forked it.
wait_comm() {
	local i comm
	for ((i = 0; i < 100; i++)); do
		comm=$(cat "/proc/$1/comm" 2>/dev/null) || fail "process $1 ($2) is gone"
		[[ $comm == "$2" ]] && return 0
		sleep 0.05
	done
	fail "process $1 is still '$comm', not '$2', after 5 s"
}

# now: seconds since the epoch, with microseconds.
now() {
	echo "${EPOCHREALTIME/,/.}"
}

# wait_until SECONDS WHAT CMD [ARGS...]: polls CMD every 50 ms; fails after SECONDS.
wait_until() {
	local limit=$1 what=$2 t0
	shift 2
	t0=$(now)
	until "$@"; do
		awk -v a="$t0" -v b="$(now)" -v m="$limit" 'BEGIN { exit !(b - a > m) }' &&
			fail "$what: not within $limit s"
		sleep 0.05
	done
}

# run_cmd NAME CMD [ARGS...]: runs CMD with a time limit of $TIMEOUT seconds
# (default 60), stdout into $T/NAME.out and stderr into $T/NAME.err. Sets RC
# (its exit status), ELAPSED (wall seconds) and LAST_ERR. Never aborts.
run_cmd() {
	local name=$1 t0 t1
	shift
	LAST_ERR=$T/$name.err
	t0=$(now)
	set +e
	timeout -k 5 "${TIMEOUT:-60}" "$@" >"$T/$name.out" 2>"$LAST_ERR"
	RC=$?
	set -e
	t1=$(now)
	ELAPSED=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	note "$name: exit $RC after ${ELAPSED}s: $*"
	[[ $RC -ne 124 && $RC -ne 137 ]] || fail "$name: no exit within ${TIMEOUT:-60} s: $*"
}

# run_flamed NAME ARGS...: run_cmd with the flamed binary.
run_flamed() {
	local name=$1
	shift
	run_cmd "$name" "$FLAMED" "$@"
}

# need_bpf_calls: skips unless perf can count the bpf syscall by command here
# (the tracepoint syscalls:sys_enter_bpf, filtered on cmd; see bpf_calls).
need_bpf_calls() {
	perf stat -x, -o /dev/null -e syscalls:sys_enter_bpf --filter 'cmd == 0' -- true 2>"$T/bpf-calls-probe.err" ||
		skip "perf cannot count the bpf syscall's tracepoint here: $(head -n 2 "$T/bpf-calls-probe.err")"
}

# stat_count FILE N: the count of the N-th event (from 1) in perf stat -x, output FILE.
stat_count() {
	grep -v '^#' "$1" | grep -v '^$' | sed -n "${2}p" | cut -d, -f1
}

# need_bpf: skips unless flamed counts stacks in BPF here (it falls back to
# the perf ring buffer when the kernel or a policy refuses BPF programs).
need_bpf() {
	run_flamed bpf-probe record --call-graph fp -o "$T/bpf-probe.folded" -- "$FIXTURES/chains" 0.05
	expect_rc 0
	grep -q ', bpf backend[,)]' "$T/bpf-probe.err" ||
		skip "no BPF here: $(grep -m 1 'BPF unavailable' "$T/bpf-probe.err" || grep -m 1 backend "$T/bpf-probe.err")"
}

expect_rc() {
	[[ $RC -eq $1 ]] || fail "expected exit status $1, got $RC"
}

# expect_elapsed_at_most SECONDS WHAT
expect_elapsed_at_most() {
	awk -v e="$ELAPSED" -v m="$1" 'BEGIN { exit !(e <= m) }' ||
		fail "$2 took ${ELAPSED}s, more than $1 s"
}

# check_folded FILE: FILE is a non-empty folded profile: every line
# "frame;frame;... COUNT", sorted bytewise by stack, each stack once.
check_folded() {
	local f=$1 bad
	[[ -s $f ]] || fail "$f is missing or empty"
	bad=$(grep -nvE '^[^ ].* [0-9]+$' "$f" | head -n 3 || true)
	[[ -z $bad ]] || fail "$f has lines that are not 'stack COUNT': $bad"
	LC_ALL=C sort -c "$f" 2>/dev/null || fail "$f is not sorted by stack (bytewise)"
	bad=$(sed -E 's/ [0-9]+$//' "$f" | LC_ALL=C uniq -d | head -n 3)
	[[ -z $bad ]] || fail "$f has the same stack on more than one line: $bad"
}

# total_count FILE: the sum of all counts.
total_count() {
	awk '{ n += $NF } END { printf "%.0f\n", n }' "$1"
}

# count_matching FILE SUBSTRING: the sum of the counts of the lines whose
# stack contains SUBSTRING (a fixed string, not a pattern).
count_matching() {
	awk -v pat="$2" '{
		s = $0; sub(/ [0-9]+$/, "", s)
		if (index(s, pat)) n += $NF
	} END { printf "%.0f\n", n }' "$1"
}

# count_re FILE ERE: the sum of the counts of the lines whose stack matches
# ERE. (Passed in the environment: awk -v would take its backslashes for
# escape sequences.)
count_re() {
	RE=$2 awk '{
		s = $0; sub(/ [0-9]+$/, "", s)
		if (s ~ ENVIRON["RE"]) n += $NF
	} END { printf "%.0f\n", n }' "$1"
}

# root_frames FILE: the first frame (the comm, perhaps with -PID or
# -PID/TID) of every line, one per line.
root_frames() {
	awk '{ s = $0; sub(/ [0-9]+$/, "", s); split(s, f, ";"); print f[1] }' "$1"
}

# --- Samples against the CPU time the fixture got ------------------------------
# At HZ, a process is sampled about HZ times per second of CPU it uses: on a
# busy machine a fixture gets less CPU than the wall time it runs, so counts of
# its samples are checked against its CPU time, never against wall time. With
# FIXTURE_CLOCK=cpu in their environment, the fixtures measure their SECONDS on
# their own CPU clock (tests/fixtures/progs/work.h): their CPU time is known
# beforehand, however long the machine makes them take.

CLK_TCK=$(getconf CLK_TCK)

# cpu_ticks PID: the CPU time (user + system, all threads) PID has used, in clock ticks.
cpu_ticks() {
	local stat fields
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || fail "process $1 is gone"
	# After "comm) ": the state (field 3), ... utime (14), stime (15).
	read -ra fields <<<"${stat##*) }"
	echo $((fields[11] + fields[12]))
}

# cpu_at_least PID TICKS: PID has used TICKS of CPU or more.
cpu_at_least() {
	(($(cpu_ticks "$1") >= $2))
}

# cpu_want PID SECONDS: the CPU ticks PID will have used SECONDS from now.
cpu_want() {
	awk -v c="$(cpu_ticks "$1")" -v s="$2" -v t="$CLK_TCK" 'BEGIN { printf "%d", c + s * t + 0.999 }'
}

# proc_state PID: the state letter of PID (R, S, T, Z...), empty once it is gone.
proc_state() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	echo "${stat:0:1}"
}

# freeze PID / thaw PID: SIGSTOP (waiting until it stops) and SIGCONT. The
# CPU a frozen process used is what it used while recorded, to the tick.
stopped() {
	[[ $(proc_state "$1") == T ]]
}
freeze() {
	kill -STOP "$1"
	wait_until 10 "process $1 stopped by SIGSTOP" stopped "$1"
}
thaw() {
	kill -CONT "$1"
}

# record_frozen NAME PIDS FLAMED_RECORD_ARGS...: `flamed record -v -p PIDS
# ARGS` (PIDS: "PID" or "PID,PID..."), with the processes frozen until flamed
# samples them: on a busy machine flamed may take seconds to start, and they
# must neither run unrecorded nor exit before. Waits for flamed's exit (at
# the end of -d, or of the processes); it must exit 0.
record_frozen() {
	local name=$1 pids=$2 pid
	shift 2
	for pid in ${pids//,/ }; do
		freeze "$pid"
	done
	bg_flamed "$name" record -v -p "$pids" "$@"
	wait_sampling "$name"
	for pid in ${pids//,/ }; do
		thaw "$pid"
	done
	wait_flamed "$name"
}

# cpu_span PID SECONDS CMD [ARGS...]: lets PID, which the caller froze, run
# for SECONDS of its CPU (waiting at most 120 s for them), freezes it again,
# runs CMD while it stands, and lets it go on. Sets CPU_USED, the CPU seconds
# it used in between: exactly what a recording running meanwhile saw of it.
cpu_span() {
	local pid=$1 secs=$2 c0 want
	shift 2
	c0=$(cpu_ticks "$pid")
	want=$(cpu_want "$pid" "$secs")
	thaw "$pid"
	wait_until 120 "$secs s of CPU for process $pid" cpu_at_least "$pid" "$want"
	freeze "$pid"
	CPU_USED=$(awk -v a="$c0" -v b="$(cpu_ticks "$pid")" -v t="$CLK_TCK" 'BEGIN { printf "%.2f", (b - a) / t }')
	"$@"
	thaw "$pid"
}

# record_for_cpu NAME PID CPU_SECONDS FLAMED_ARGS...: runs `flamed FLAMED_ARGS`
# (a recording without -d, with -v) in the background while PID, frozen
# until flamed samples, uses CPU_SECONDS of CPU; stops it while PID is frozen
# again. CPU_USED: the CPU seconds PID used while recorded.
record_for_cpu() {
	local name=$1 pid=$2 secs=$3
	shift 3
	freeze "$pid"
	bg_flamed "$name" "$@"
	wait_sampling "$name"
	cpu_span "$pid" "$secs" stop_flamed "$name"
	note "$name: recorded while process $pid used $CPU_USED s of CPU"
}

# expect_samples_of_cpu COUNT HZ CPU_SECONDS WHAT [LOW]: COUNT, the samples of
# a process that used CPU_SECONDS of CPU while sampled at HZ, is 85 (or LOW)
# to 115 % of HZ per CPU second: none lost, none counted twice.
expect_samples_of_cpu() {
	local share low=${5:-85}
	share=$(awk -v n="$1" -v hz="$2" -v s="$3" 'BEGIN { printf "%.1f", (s > 0 ? 100 * n / (hz * s) : 0) }')
	note "$4: $1 samples for $3 s of CPU at $2 Hz: $share% of $2 per CPU second"
	expect_between "$share" "$low" 115 "$4: samples per CPU second, as a share of $2 Hz (%)"
}

# of_pids FILE PID...: the lines of FILE, recorded with --per-process, whose
# root frame is COMM-PID for one of the PIDs. A -a recording on a shared
# machine holds other people's processes of the same name too (another run
# of the same test): a test counts the samples of the processes it started.
of_pids() {
	local f=$1
	shift
	awk -v pids="$*" 'BEGIN { n = split(pids, p, " "); for (i = 1; i <= n; i++) want[p[i]] = 1 }
		{ root = $0; sub(/;.*/, "", root); pid = root; sub(/.*-/, "", pid)
		  if (root != pid && pid in want) print }' "$f"
}

# percent PART WHOLE: 100 * PART / WHOLE with one decimal.
percent() {
	[[ $2 -gt 0 ]] || fail "percent of nothing ($1 / $2)"
	awk -v p="$1" -v w="$2" 'BEGIN { printf "%.1f\n", 100 * p / w }'
}

# expect_between VALUE LOW HIGH WHAT
expect_between() {
	awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }' ||
		fail "$4 is $1, outside [$2, $3]"
}

# check_chains_split FILE: chains A and B of the chains fixture are there,
# with enough samples between them, A taking 75 +- 5 % of them.
check_chains_split() {
	local f=$1 a b share
	a=$(count_matching "$f" "$CHAIN_A")
	b=$(count_matching "$f" "$CHAIN_B")
	note "$f: chain A $a, chain B $b, all $(total_count "$f") samples"
	[[ $a -gt 0 ]] || fail "no samples in $CHAIN_A"
	[[ $b -gt 0 ]] || fail "no samples in $CHAIN_B"
	[[ $((a + b)) -ge 300 ]] || fail "only $((a + b)) samples in chains A and B; expected >= 300"
	share=$(percent "$a" $((a + b)))
	expect_between "$share" 70 80 "chain A's share of A+B (expected 75)"
}

# summary_samples ERRFILE: N from the summary line "flamed: N samples, ..."
# on flamed's stderr (the first line that starts with "flamed: " and contains
# " samples"); fails when there is none.
summary_samples() {
	local n
	n=$(awk 'index($0, "flamed: ") == 1 && index($0, " samples") {
		s = substr($0, 9)
		if (match(s, /[0-9]+/)) { print substr(s, RSTART, RLENGTH); exit }
	}' "$1")
	[[ -n $n ]] || fail "no summary line 'flamed: N samples, M stacks' in $1"
	echo "$n"
}

# The browser tests' expectations, from the folded file FOLDED_IN (default
# $T/in.folded), computed here and never read from the page.

# share RE [PREFIX] [i]: percent of the samples under PREFIX (all without one)
# whose stack has a frame matching the extended regular expression RE (each
# stack counted once, however many of its frames match); i: ignoring case.
share() {
	awk -v re="$1" -v prefix="${2:-}" -v ic="${3:-}" '{
		s = $0; sub(/ [0-9]+$/, "", s)
		if (prefix != "" && s != prefix && index(s, prefix ";") != 1) next
		all += $NF
		n = split(s, f, ";")
		for (i = 1; i <= n; i++) {
			if ((ic == "" && f[i] ~ re) || (ic != "" && tolower(f[i]) ~ tolower(re))) { hit += $NF; break }
		}
	} END { printf "%.4f\n", all ? 100 * hit / all : 0 }' "${FOLDED_IN:-$T/in.folded}"
}

# under PREFIX: the samples of the frame at PREFIX.
under() {
	awk -v prefix="$1" '{
		s = $0; sub(/ [0-9]+$/, "", s)
		if (s == prefix || index(s, prefix ";") == 1) n += $NF
	} END { print n + 0 }' "${FOLDED_IN:-$T/in.folded}"
}
