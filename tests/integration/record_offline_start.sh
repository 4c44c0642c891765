#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A CPU offline when -a starts is sampled once it comes online: flamed
# opens a slot for every possible CPU and opens the events of one that comes
# online (its tracker's too), says so at the start, when it comes, and in
# the summary (with the CPU time not sampled). A program pinned to it once
# it is online is in the profile with its symbols, as many samples as the
# CPU time it got allows. With BPF and with the ring buffer.
#
# CPU 1 is brought back online whatever happens, also when the test fails or
# is killed (lib_restore.sh).
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib_restore.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

ONLINE=/sys/devices/system/cpu/cpu1/online
[[ $(nproc --all) -ge 2 && -w $ONLINE ]] ||
	skip "no CPU 1 that can be taken offline here ($ONLINE is not writable)"
[[ $(cat "$ONLINE") == 1 ]] || skip "CPU 1 is offline already"
restore_on_exit "echo 1 >$ONLINE"

# A name of its own: other work on the machine may run short_burn too.
cp "$FIXTURES/short_burn" "$T/offline_burn"

for backend in bpf ring; do
	opts=()
	[[ $backend == ring ]] && opts=(--no-bpf)
	out=$T/$backend.folded
	echo 0 >"$ONLINE"
	# Stopped with SIGINT once the program ran: no -d that a slow start could eat.
	bg_flamed "$backend" record -a -F 99 "${opts[@]}" -o "$out"
	# Sampling has started (the notice is printed then) before the CPU comes
	# back: waited for, however long a busy machine makes the start.
	wait_until 60 "$backend: the notice that CPU 1 is offline at the start" \
		grep -q '^flamed: CPU 1 is offline: it is sampled from when it comes online' "$T/$backend.err"
	echo 1 >"$ONLINE"
	# Online CPUs are looked for every second (a busy machine: later).
	wait_until 30 "$backend: the notice of CPU 1 coming online" \
		grep -q '^flamed: CPU 1 came online: sampling it from now on' "$T/$backend.err"
	# The CPU time the program got, as the kernel counted it (bash's time: user + system).
	TIMEFORMAT='%3U %3S'
	cpu=$({ time taskset -c 1 "$T/offline_burn" 1.5 >/dev/null; } 2>&1 | awk '{ print $1 + $2 }')
	signal_and_wait "$FLAMED_PID" INT "$backend: flamed"
	[[ $WAIT_RC -eq 0 ]] || fail "$backend: exit $WAIT_RC: $(cat "$T/$backend.err")"
	check_folded "$out"
	burn=$(awk '/^offline_burn;/ { s += $NF } END { print s + 0 }' "$out")
	hot=$(awk '/^offline_burn;.*;short_hot/ { s += $NF } END { print s + 0 }' "$out")
	expected=$(awk -v c="$cpu" 'BEGIN { printf "%d", c * 99 }')
	note "$backend: offline_burn (short_burn) pinned to CPU 1 after it came online got $cpu s of CPU: $burn samples (99 Hz: $expected), $hot in short_hot"
	[[ $expected -ge 30 ]] || skip "offline_burn got only $cpu s of CPU on CPU 1: too busy a machine to tell"
	# Sampling counts the CPU time of whatever runs on the CPU: all of the
	# program's time should be there, less the tick the notice may lag.
	expect_between "$burn" $((expected * 7 / 10)) $((expected * 12 / 10 + 5)) "$backend: samples of the program on CPU 1"
	expect_between "$hot" $((burn * 8 / 10)) "$burn" "$backend: of them symbolized in short_hot"
	grep -q '^flamed: CPU hotplug: 1 CPU was offline for part of the time (about [0-9.]* CPU-seconds in all)' "$T/$backend.err" ||
		fail "$backend: the summary does not say CPU 1 was offline for part of the time: $(cat "$T/$backend.err")"
	grep -q 'accounting: .* 0 lost' "$T/$backend.err" || note "$backend: $(grep accounting "$T/$backend.err")"
done

pass "a CPU offline at the start is sampled once it comes online, and the summary says it was missing (BPF and ring buffer)"
