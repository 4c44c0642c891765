#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Perf maps as an attacker writes them (issue 14): one big map of unique
# names, hard-linked as the /tmp/perf-PID.map of several JIT processes.
# flamed must (a) record for the whole -d, counted from when sampling
# starts, whatever the maps cost, with the samples the CPUs allow; (b) read
# the file once for all the processes; (c) keep the memory it takes within
# --max-symbol-cache and say in the summary what it left unread.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
[[ $(uname -m) == x86_64 ]] || skip "jit_spin: its machine code is x86-64, this is $(uname -m)"

NPROC=4      # JIT processes sharing the map
MAP_MIB=64   # its size: 1.3 million lines, past the 1,048,576 entries kept of a map
DURATION=3   # -d
FREQ=99
CAP_MIB=48   # the small --max-symbol-cache of (c)
# flamed's own peak RSS on -a without perf maps is about 45 MiB here (BPF
# maps, tracker, profile); the bound of (c) leaves it twice that.
OWN_MIB=100

big=$T/hostile.map
links=()
# The links are in /tmp, outside $T: removed on any exit, with the rest.
trap 'rm -f "${links[@]}"; cleanup' EXIT

pids=()
for ((i = 0; i < NPROC; i++)); do
	bg "$FIXTURES/jit_spin" 60
	pids+=("$BG_PID")
done
for pid in "${pids[@]}"; do
	wait_comm "$pid" jit_spin
	for ((i = 0; i < 100; i++)); do
		[[ -s /tmp/perf-$pid.map ]] && break
		sleep 0.05
	done
	[[ -s /tmp/perf-$pid.map ]] || fail "jit_spin $pid wrote no /tmp/perf-$pid.map"
done
# The real names first (the entries past the first 1,048,576 are dropped),
# then junk that costs memory: unique names at addresses nothing runs at.
for pid in "${pids[@]}"; do
	cat "/tmp/perf-$pid.map"
done >"$big"
awk -v n=$((MAP_MIB * 1024 * 1024 / 52)) 'BEGIN {
	for (i = 0; i < n; i++)
		printf "%x 10 hostile_unique_jit_function_%012d\n", 268435456 + i * 16, i # 52 bytes
}' >>"$big"
# Written after the processes started: a fresh map of theirs, owned by root.
for pid in "${pids[@]}"; do
	ln -f "$big" "/tmp/perf-$pid.map"
	links+=("/tmp/perf-$pid.map")
done
note "$NPROC jit_spin processes (${pids[*]}) share one $(($(stat -c %s "$big") >> 20)) MiB perf map"

# Peak RSS in MiB from the summary's "own cost: ..., X MiB peak RSS".
peak_rss() {
	sed -nE 's/^flamed: own cost: .*, ([0-9.]+) MiB peak RSS$/\1/p' "$1"
}

# check_recording NAME: the summary says the recording lasted -d from when
# sampling started, and the samples taken are what -F, -d and the CPUs allow.
check_recording() {
	local err=$T/$1.err secs taken cpus low high share
	secs=$(sed -nE 's/^flamed: [0-9]+ samples, [0-9]+ stacks in ([0-9.]+) s \(duration reached.*/\1/p' "$err")
	[[ -n $secs ]] || fail "$1: no 'N samples, M stacks in S s (duration reached' line: $(head -n 1 "$err")"
	expect_between "$secs" "$DURATION" $((DURATION + 5)) "$1: the recording's length (s)"
	taken=$(sed -nE 's/^flamed: accounting: ([0-9]+) samples taken.*/\1/p' "$err")
	[[ -n $taken ]] || fail "$1: no accounting line"
	# cpu-clock samples every online CPU, busy or idle (idle ones are counted
	# apart): F x seconds x CPUs, loosely (the kernel may throttle, a loaded
	# machine delays the timers).
	cpus=$(getconf _NPROCESSORS_ONLN)
	low=$((FREQ * DURATION * cpus / 2))
	high=$(awk -v f=$FREQ -v s="$secs" -v c="$cpus" 'BEGIN { printf "%d", 1.5 * f * s * c + 10 }')
	note "$1: $taken samples taken in $secs s on $cpus CPUs at $FREQ Hz (expected $low to $high)"
	expect_between "$taken" "$low" "$high" "$1: samples taken"
	# flamed's own CPU over its whole run is a share of what the machine had.
	share=$(sed -nE 's/^flamed: own cost: [0-9.]+ s of CPU \(([0-9.]+)% of .*/\1/p' "$err")
	[[ -n $share ]] || fail "$1: no own-cost line"
	expect_between "$share" 0 100 "$1: flamed's own CPU share (%)"
}

# (a) and (b): the default cap, which holds one copy of the map.
run_flamed whole record -v -a -F $FREQ -d $DURATION -o "$T/whole.folded"
expect_rc 0
check_folded "$T/whole.folded"
check_recording whole
re="perf-($(
	IFS='|'
	echo "${pids[*]}"
)).map"
reads=$(grep -cE "debug: perfmap: read tmp/$re " "$T/whole.err" || true)
shares=$(grep -cE "debug: perfmap: pid [0-9]+: tmp/$re is a file already open" "$T/whole.err" || true)
note "whole: the shared map read $reads time(s), found open already by $shares processes; peak RSS $(peak_rss "$T/whole.err") MiB"
[[ $reads -eq 1 ]] || fail "the map the $NPROC processes share was read $reads times, not once"
[[ $shares -eq $((NPROC - 1)) ]] || fail "$shares processes, not $((NPROC - 1)), found the shared map open already"
# Of the samples under jit_call, those in the JIT code (a sample at the JIT
# function's first byte, before it pushed its frame pointer, has no
# jit_call: counted in neither).
grep -F ';jit_call;' "$T/whole.folded" >"$T/under_call.folded" || true
hot=$(count_matching "$T/under_call.folded" 'jit_spin_hot_[j]')
spin=$(total_count "$T/under_call.folded")
note "whole: $hot of the $spin samples under jit_call named jit_spin_hot_[j]"
[[ $spin -gt 0 ]] || fail "no samples of jit_spin under jit_call"
expect_between "$(percent "$hot" "$spin")" 90 100 "the share of jit_call's samples in jit_spin_hot_[j] (%)"

# (c) A cap the map does not fit in: read up to it, the rest left and said.
run_flamed capped record -a -F $FREQ -d $DURATION --max-symbol-cache ${CAP_MIB}M -o "$T/capped.folded"
expect_rc 0
check_folded "$T/capped.folded"
check_recording capped
line=$(grep '^flamed: perf maps (JIT): .* not read in full' "$T/capped.err" || true)
note "capped: ${line:-no line}"
[[ -n $line ]] || fail "--max-symbol-cache ${CAP_MIB}M: the summary does not say the map was not read in full"
[[ $line == *"--max-symbol-cache"* ]] || fail "the line does not name the option that raises the cap: $line"
rss=$(peak_rss "$T/capped.err")
note "capped: peak RSS $rss MiB (bound: the cap, $CAP_MIB MiB, + $OWN_MIB MiB of flamed's own)"
expect_between "$rss" 1 $((CAP_MIB + OWN_MIB)) "peak RSS with --max-symbol-cache ${CAP_MIB}M (MiB)"
# The names read before the cap still name the code.
[[ $(count_matching "$T/capped.folded" 'jit_spin_hot_[j]') -gt 0 ]] ||
	fail "--max-symbol-cache ${CAP_MIB}M: jit_spin_hot, on the map's first lines, is not named"

pass "$NPROC processes sharing a ${MAP_MIB} MiB perf map: -d $DURATION recorded in full, the map read once, memory within the cap and the rest reported"
