#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# flamed inside a container's pid namespace (as unshare --pid --fork
# --mount-proc makes one; Docker, systemd-nspawn and pods without hostPID
# do the same): -- CMD, -p and -a name the processes of the namespace as
# they are named outside it, with both backends and DWARF unwinding; samples
# of processes outside the namespace are counted in the summary and credited
# to no process of the namespace; a /proc of another namespace, and --idle
# with the ring buffer, are refused with the fix named.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
command -v unshare >/dev/null || skip "needs unshare (util-linux)"
command -v pgrep >/dev/null || skip "needs pgrep (procps)"
unshare --pid --fork --mount-proc true 2>/dev/null ||
	skip "cannot make a pid namespace here (unshare --pid --fork --mount-proc failed)"
export FLAMED FIXTURES T

# in_ns NAME SCRIPT: runs bash -c SCRIPT as pid 1 of a new pid namespace
# with its own /proc; stdout and stderr as run_cmd leaves them.
in_ns() {
	run_cmd "$1" unshare --pid --fork --mount-proc --kill-child bash -c "$2"
}

# chain_a_share FILE: chain A's share of chains A and B (%).
chain_a_share() {
	percent "$(count_matching "$1" "$CHAIN_A")" \
		$(($(count_matching "$1" "$CHAIN_A") + $(count_matching "$1" "$CHAIN_B")))
}

# like_outside FILE: chains A and B split in FILE as outside the namespace.
like_outside() {
	local share
	check_folded "$1"
	check_chains_split "$1"
	share=$(chain_a_share "$1")
	note "$1: chain A's share $share%, outside the namespace $BASE_SHARE%"
	awk -v a="$share" -v b="$BASE_SHARE" 'BEGIN { d = a - b; exit !(d <= 8 && d >= -8) }' ||
		fail "$1: chain A's share is $share% in the namespace, $BASE_SHARE% outside"
}

# accounting ERRFILE: the accounting line adds up, and has a term for the
# samples of processes outside the namespace. Sets OUTSIDE to it.
accounting() {
	local line nums
	line=$(grep '^flamed: accounting: ' "$1") || fail "no accounting line in $1"
	grep -q 'unaccounted' "$1" && fail "samples unaccounted for: $(grep unaccounted "$1")"
	nums=$(sed -E 's/^flamed: accounting: ([0-9]+) samples taken: ([0-9]+) in the profile, ([0-9]+) idle, ([0-9]+) of other processes, ([0-9]+) outside flamed.s pid namespace, ([0-9]+) lost .*/\1 \2 \3 \4 \5 \6/' <<<"$line")
	[[ $nums =~ ^[0-9\ ]+$ ]] || fail "no count of samples outside the pid namespace in: $line"
	read -r taken prof idle other OUTSIDE lost <<<"$nums"
	[[ $taken -eq $((prof + idle + other + OUTSIDE + lost)) ]] ||
		fail "the accounting does not add up: $line"
}

# kernel_filter ERRFILE: the ring buffer's filter worked in the kernel (it
# translates the host's pids into the namespace's, as the BPF program does):
# the samples it kept are the ones like_outside checks.
kernel_filter() {
	! grep -q 'cannot filter samples in the kernel' "$1" || fail "$(grep 'cannot filter' "$1")"
}

# 1. The baseline: the fixture's split as flamed sees it from the host.
run_flamed base record -F 999 -o "$T/base.folded" -- "$FIXTURES/chains" 3
expect_rc 0
check_chains_split "$T/base.folded"
BASE_SHARE=$(chain_a_share "$T/base.folded")

# 2. -- CMD in the namespace, with each backend and with DWARF unwinding.
for mode in bpf ring dwarf; do
	case $mode in
	bpf) opts="" ;;
	ring) opts="--no-bpf" ;;
	dwarf) opts="--call-graph dwarf" ;;
	esac
	in_ns "cmd_$mode" "exec \"\$FLAMED\" record $opts -F 999 -o \"\$T/cmd_$mode.folded\" -- \"\$FIXTURES/chains\" 3"
	expect_rc 0
	like_outside "$T/cmd_$mode.folded"
	accounting "$T/cmd_$mode.err"
	kernel_filter "$T/cmd_$mode.err"
	roots=$(root_frames "$T/cmd_$mode.folded" | sort -u | tr '\n' ' ')
	[[ $roots == "chains " ]] || fail "cmd_$mode: root frames other than 'chains': $roots"
done

# 3. -p of a process started in the namespace (pid 2 there: no kernel
# thread), and of one in a namespace nested in flamed's.
for mode in bpf ring; do
	opts=$([[ $mode == ring ]] && echo --no-bpf || true)
	in_ns "pid_$mode" "\"\$FIXTURES/chains\" 5 & p=\$!; sleep 0.3
		\"\$FLAMED\" record $opts -F 999 -d 3.5 -p \$p -o \"\$T/pid_$mode.folded\"; rc=\$?
		echo \"pid \$p\"; wait; exit \$rc"
	expect_rc 0
	note "$(cat "$T/pid_$mode.out")"
	like_outside "$T/pid_$mode.folded"
	accounting "$T/pid_$mode.err"
	kernel_filter "$T/pid_$mode.err"

	in_ns "nested_$mode" "unshare --pid --fork --mount-proc --kill-child \"\$FIXTURES/chains\" 5 &
		for i in \$(seq 100); do p=\$(pgrep -x chains) && break; sleep 0.05; done
		[[ -n \$p ]] || exit 99
		\"\$FLAMED\" record $opts -F 999 -d 3.5 -p \$p -o \"\$T/nested_$mode.folded\"; rc=\$?
		wait; exit \$rc"
	[[ $RC -ne 99 ]] || fail "the nested namespace's chains did not start"
	expect_rc 0
	like_outside "$T/nested_$mode.folded"
	kernel_filter "$T/nested_$mode.err"
done

# 4. -a: the processes of the namespace are named as outside; a spinner
# outside it (named outspin) is counted as outside, and named nowhere.
cp "$FIXTURES/chains" "$T/outspin"
for mode in bpf ring; do
	opts=$([[ $mode == ring ]] && echo --no-bpf || true)
	bg "$T/outspin" 12
	spin=$BG_PID
	wait_comm "$spin" outspin
	read -r u0 s0 < <(awk '{ print $14, $15 }' "/proc/$spin/stat")
	in_ns "all_$mode" "\"\$FIXTURES/chains\" 5 & sleep 0.3
		\"\$FLAMED\" record -a $opts -F 999 -d 3.5 -o \"\$T/all_$mode.folded\"; rc=\$?
		wait; exit \$rc"
	expect_rc 0
	read -r u1 s1 < <(awk '{ print $14, $15 }' "/proc/$spin/stat")
	kill "$spin"
	like_outside "$T/all_$mode.folded"
	accounting "$T/all_$mode.err"
	! root_frames "$T/all_$mode.folded" | grep -qx outspin ||
		fail "all_$mode: samples of outspin, outside the namespace, are in the profile"
	said=$(sed -nE "s/^flamed: ([0-9]+) samples of processes outside flamed's pid namespace left out: .*--pid=host.*/\1/p" "$T/all_$mode.err")
	[[ -n $said ]] || fail "all_$mode: no summary line on the samples outside the namespace"
	[[ $said -eq $OUTSIDE ]] || fail "all_$mode: the summary says $said outside, the accounting $OUTSIDE"
	# outspin's CPU time while flamed ran (part of the run's wall time):
	# at least a fair part of it must be among the samples counted outside.
	cpu=$(awk -v t=$((u1 + s1 - u0 - s0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { print t / hz }')
	expect=$(awk -v c="$cpu" -v e="$ELAPSED" 'BEGIN { printf "%.0f", 0.3 * 999 * c * 3.5 / e }')
	note "all_$mode: $OUTSIDE samples outside; outspin ran ${cpu}s of CPU in ${ELAPSED}s: expected >= $expect"
	[[ $OUTSIDE -ge $expect ]] || fail "all_$mode: $OUTSIDE samples outside the namespace, expected >= $expect"
done

# 5. Refused with the fix named: the host's /proc in the namespace, and
# --idle with the ring buffer (idle and outside both have pid 0 there).
run_cmd noproc unshare --pid --fork "$FLAMED" record -a -d 1 -o "$T/noproc.folded"
[[ $RC -ne 0 ]] || fail "noproc: flamed ran with a /proc of another pid namespace"
grep -q "^flamed: /proc is not of flamed's pid namespace .*--mount-proc" "$T/noproc.err" ||
	fail "noproc: no line naming the /proc problem and its fix"
[[ $(grep -c '^flamed: ' "$T/noproc.err") -eq 1 ]] || fail "noproc: more than one line: $(cat "$T/noproc.err")"
[[ ! -e $T/noproc.folded ]] || fail "noproc: an output was written"

in_ns idle "exec \"\$FLAMED\" record -a --idle --no-bpf -d 1 -o \"\$T/idle.folded\""
[[ $RC -ne 0 ]] || fail "idle: --idle --no-bpf ran in a child pid namespace"
grep -q "^flamed: cannot keep idle samples with the perf ring buffer in a child pid namespace.*drop --idle" "$T/idle.err" ||
	fail "idle: no line naming the problem and the fix"

pass "in a pid namespace: -- CMD, -p (nested too) and -a named as outside (A $BASE_SHARE%), outside samples counted apart"
