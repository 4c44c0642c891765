#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A CPU taken offline and back during -a: the kernel never revives the perf
# events of a CPU that went offline, even once it is back. flamed notices
# (their enabled time stands still), opens them again, says so, and the
# CPU is sampled again: a program pinned to it afterwards is in the profile
# with its symbols (the tracker's events were opened again too, and the
# processes scanned). With BPF and with the ring buffer.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

ONLINE=/sys/devices/system/cpu/cpu1/online
[[ $(nproc --all) -ge 2 && -w $ONLINE ]] ||
	skip "no CPU 1 that can be taken offline here ($ONLINE is not writable)"
[[ $(cat "$ONLINE") == 1 ]] || skip "CPU 1 is offline already"
# Whatever happens, CPU 1 comes back.
trap 'echo 1 >"$ONLINE" 2>/dev/null || true; cleanup' EXIT

for backend in bpf ring; do
	opts=()
	[[ $backend == ring ]] && opts=(--no-bpf)
	out=$T/$backend.folded
	bg_flamed "$backend" record -a -F 99 -d 7 "${opts[@]}" -o "$out"
	sleep 1.5
	echo 0 >"$ONLINE"
	sleep 1
	echo 1 >"$ONLINE"
	# Events are checked every second: two ticks later CPU 1 is sampled again.
	sleep 2.2
	taskset -c 1 "$FIXTURES/short_burn" 2
	wait_flamed "$backend"
	check_folded "$out"
	grep -q '^flamed: CPU 1 is back online: sampling it again' "$T/$backend.err" ||
		fail "$backend: no notice of CPU 1 coming back: $(cat "$T/$backend.err")"
	burn=$(count_matching "$out" 'short_burn;')
	hot=$(count_matching "$out" ';short_hot')
	note "$backend: short_burn pinned to CPU 1 for 2 s after it came back: $burn samples, $hot in short_hot"
	# 99 Hz for 2 s: about 198.
	expect_between "$burn" 150 230 "$backend: samples of the program on CPU 1"
	expect_between "$hot" $((burn * 8 / 10)) "$burn" "$backend: of them symbolized in short_hot"
done

pass "CPU 1 offline and back during -a: sampled again, with symbols (BPF and ring buffer)"
