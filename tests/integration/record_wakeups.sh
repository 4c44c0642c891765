#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# flamed wakes for work, not on a clock: with a target that sleeps, its
# main thread waits once a second (the tick) and for the rings that filled,
# nothing more. (It woke every 20 ms to read the mappings for the BPF
# walker and the Python reader: 50 times a second, whatever the machine
# did. A process now asks for its mappings when it is sampled.) Counted:
# the voluntary context switches of flamed's main thread over 2 s once it
# samples, in each of the three sampling modes.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
need_bpf

bg sleep 60
SLEEPER=$BG_PID

# switches PID: the main thread's voluntary context switches.
switches() {
	awk '/^voluntary_ctxt_switches:/ { print $2 }' "/proc/$1/status"
}

results=()
for mode in kernel-dwarf fp no-bpf; do
	opt=(--call-graph "$mode")
	[[ $mode == no-bpf ]] && opt=(--no-bpf --call-graph fp)
	bg_flamed "$mode" record -v "${opt[@]}" -p "$SLEEPER" -d 5 -o "$T/$mode.folded"
	wait_sampling "$mode"
	sleep 0.5
	a=$(switches "$FLAMED_PID")
	sleep 2
	b=$(switches "$FLAMED_PID")
	wait_flamed "$mode"
	n=$((b - a))
	note "$mode: $n voluntary switches in 2 s"
	# The tick makes 2; rings that filled with other processes' mappings
	# on a busy machine more (14 under a make -j2 loop here). Every 20 ms
	# would be 100.
	[[ $n -le 40 ]] || fail "$mode: flamed's main thread waited $n times in 2 s with a target that sleeps (at most 40 expected: the 1 s tick and the rings)"
	results+=("$mode $n")
done
pass "wake-ups in 2 s with a sleeping target: ${results[*]}"
