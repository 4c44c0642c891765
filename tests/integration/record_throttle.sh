#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Throttling during a recording is reported. The kernel throttles an event
# that interrupts more often per tick than kernel.perf_event_max_sample_rate
# allows (and lowers that itself when perf interrupts take too long): the
# test lowers it to 100 for a second of a -F 999 recording. The BPF backend
# learns of it from the notes the kernel writes in each event's ring, the
# ring backend from its records; either way one line says how many times,
# and how low the limit went. A recording without throttling says nothing.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib_restore.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

RATE=/proc/sys/kernel/perf_event_max_sample_rate
[[ -w $RATE ]] || skip "$RATE is not writable here"
old_rate=$(cat "$RATE")
[[ $old_rate -ge 999 ]] || skip "kernel.perf_event_max_sample_rate is $old_rate already: -F 999 is refused"
# Put back however the test ends (a timeout's SIGKILL included).
restore_on_exit "echo $old_rate >$RATE"

for backend in bpf ring; do
	opts=()
	[[ $backend == ring ]] && opts=(--no-bpf)
	bg_flamed "$backend" record -a -F 999 -d 4 "${opts[@]}" -o "$T/$backend.folded"
	sleep 1.5
	echo 100 >"$RATE"
	sleep 1
	echo "$old_rate" >"$RATE"
	wait_flamed "$backend"
	line=$(grep '^flamed: the kernel throttled sampling' "$T/$backend.err" || true)
	[[ -n $line ]] || fail "$backend: throttling not reported: $(cat "$T/$backend.err")"
	note "$backend: $line"
	times=$(sed -n 's/^flamed: the kernel throttled sampling \([0-9]*\) times.*/\1/p' <<<"$line")
	[[ $times -ge 1 ]] || fail "$backend: throttled '$times' times"
	[[ $line == *"went from $old_rate down to 100 during the recording"* ]] ||
		fail "$backend: the limit's fall from $old_rate to 100 is not in: $line"
done

run_flamed quiet record -a -F 99 -d 1 -o "$T/quiet.folded"
expect_rc 0
! grep -q 'throttl' "$T/quiet.err" || fail "throttling reported at 99 Hz: $(cat "$T/quiet.err")"

pass "throttling during a recording reported, with the limit's fall (BPF and ring buffer)"
