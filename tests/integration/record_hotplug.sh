#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A CPU taken offline and back during -a: the kernel never revives the perf
# events of a CPU that went offline, even once it is back. flamed notices
# (their enabled time stands still), opens them again, says so, and the
# CPU is sampled again: a program pinned to it afterwards is in the profile
# with its symbols (the tracker's events were opened again too, and the
# processes scanned). With BPF and with the ring buffer, whose kernel
# filter (-- CMD) is attached to the new event too.
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

# revived_rate SAMPLES WHAT: SAMPLES of 2 s of CPU on CPU 1 after it came
# back, at 99 Hz, are those of a CPU sampled again at its rate. The band
# reaches lower than expect_samples_of_cpu()'s default: in a VM whose host is
# busy, time the vCPU is not run can count in the program's CPU time while
# the sampling timer skips its ticks (84.8% was seen once on a loaded CI
# machine, 92-106% otherwise). A CPU not sampled again gives none, one
# sampled part of the time half.
revived_rate() {
	expect_samples_of_cpu "$1" 99 2 "$2" 70
}

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
	revived_rate "$burn" "$backend: short_burn on CPU 1"
	expect_between "$hot" $((burn * 8 / 10)) "$burn" "$backend: of them symbolized in short_hot"
done

# The ring buffer with a target (-- CMD): the event opened again gets the
# kernel filter too. The command waits for CPU 1 to come back, then runs
# short_burn pinned there, beside a busy loop pinned there that is no
# target: none of the loop's samples may reach flamed (flamed -v says).
go=$T/go
# shellcheck disable=SC2016 # $1 and $2 are the inner bash's
bg_flamed ring_cmd record -v --no-bpf -F 99 -o "$T/ring_cmd.folded" -- \
	bash -c 'while [[ ! -e $1 ]]; do sleep 0.05; done; FIXTURE_CLOCK=cpu exec taskset -c 1 "$2" 2' \
	cmd "$go" "$FIXTURES/short_burn"
wait_sampling ring_cmd
echo 0 >"$ONLINE"
sleep 1
echo 1 >"$ONLINE"
wait_until 15 "ring_cmd: the notice of CPU 1 coming back" \
	grep -q '^flamed: CPU 1 is back online: sampling it again' "$T/ring_cmd.err"
bg taskset -c 1 bash -c 'while :; do :; done'
loop=$BG_PID
touch "$go"
wait_flamed ring_cmd
kill "$loop"
check_folded "$T/ring_cmd.folded"
burn=$(count_matching "$T/ring_cmd.folded" ';short_hot')
revived_rate "$burn" "ring_cmd: short_burn on CPU 1 (its short_hot frames)"
read -r k u < <(sed -nE 's/^flamed: samples of other processes: ([0-9]+) dropped in the kernel, ([0-9]+) read .*/\1 \2/p' "$T/ring_cmd.err")
note "ring_cmd: other processes' samples: ${k:-?} dropped in the kernel, ${u:-?} by flamed"
# (One reached flamed once, in a sanitized run: the cause is not known, see the
# note of issue 15. Without the filter on the revived CPU, all of the loop's
# would: hundreds.)
[[ ${k:-0} -ge 100 && $((${u:-1000} * 20)) -le ${k:-0} ]] ||
	fail "ring_cmd: the busy loop on CPU 1 after it came back: ${k:-?} samples dropped in the kernel, ${u:-?} read by flamed"

pass "CPU 1 offline and back during -a: sampled again, with symbols (BPF and ring buffer); with -- CMD filtered in the kernel again"
