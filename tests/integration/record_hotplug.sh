#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A CPU taken offline and back during -a: the kernel never revives the perf
# events of a CPU that went offline, even once it is back. flamed notices
# (their enabled time stands still), opens them again, says so, and the
# CPU is sampled again: a program pinned to it afterwards is in the profile
# with its symbols (the tracker's events were opened again too, and the
# processes scanned). With BPF and with the ring buffer.
# CPU 1 is brought back online whatever happens, also when the test fails or
# is killed (lib_restore.sh).
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib_restore.sh"
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

ONLINE=/sys/devices/system/cpu/cpu1/online
[[ $(nproc --all) -ge 2 && -w $ONLINE ]] ||
	skip "no CPU 1 that can be taken offline here ($ONLINE is not writable)"
[[ $(cat "$ONLINE") == 1 ]] || skip "CPU 1 is offline already"
restore_on_exit "echo 1 >$ONLINE"

for backend in bpf ring; do
	opts=()
	[[ $backend == ring ]] && opts=(--no-bpf)
	out=$T/$backend.folded
	bg_flamed "$backend" record -a -v --per-process -F 99 "${opts[@]}" -o "$out"
	wait_sampling "$backend"
	echo 0 >"$ONLINE"
	sleep 1
	echo 1 >"$ONLINE"
	# Events are checked every second: flamed says when CPU 1 is sampled again.
	wait_until 15 "$backend: the notice of CPU 1 coming back" \
		grep -q '^flamed: CPU 1 is back online: sampling it again' "$T/$backend.err"
	# 2 s of its own CPU, however busy CPU 1 is (tests/fixtures/progs/work.h);
	# its pid tells it from other tests' short_burn on the machine.
	FIXTURE_CLOCK=cpu taskset -c 1 "$FIXTURES/short_burn" 2 &
	burner=$!
	wait "$burner" || fail "$backend: short_burn failed"
	stop_flamed "$backend"
	check_folded "$out"
	of_pids "$out" "$burner" >"$T/$backend.mine"
	burn=$(total_count "$T/$backend.mine")
	hot=$(count_matching "$T/$backend.mine" ';short_hot')
	note "$backend: short_burn pinned to CPU 1 for 2 s of CPU after it came back: $burn samples, $hot in short_hot"
	# 99 Hz for 2 s of CPU: about 198.
	expect_samples_of_cpu "$burn" 99 2 "$backend: short_burn on CPU 1"
	expect_between "$hot" $((burn * 8 / 10)) "$burn" "$backend: of them symbolized in short_hot"
done

pass "CPU 1 offline and back during -a: sampled again, with symbols (BPF and ring buffer)"
