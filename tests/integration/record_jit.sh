#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# JIT code is named from the perf map its process writes (/tmp/perf-PID.map),
# and its frames are marked _[j]: (a) the jit_spin fixture's generated loop,
# under the C functions that call it, in the default mode and with
# --call-graph dwarf (whose unwinder steps code without CFI by frame
# pointers, as the in-kernel walker does); (b) two JavaScript functions of a
# script run by `node --perf-basic-prof`, when node is installed.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

# count_jit FILE NAME: the sum of the counts of the stacks with a JIT frame
# (one ending in _[j]) whose name contains NAME (a fixed string).
count_jit() {
	awk -v name="$2" '{
		s = $0; sub(/ [0-9]+$/, "", s)
		nf = split(s, f, ";")
		for (i = 1; i <= nf; i++)
			if (index(f[i], name) && f[i] ~ /_\[j\]$/) { n += $NF; break }
	} END { printf "%.0f\n", n }' "$1"
}

parts=0

# (a) The fixture maps its code, names it in its perf map and removes the
# map when it exits: flamed must read it while the process lives.
if [[ $(uname -m) != x86_64 ]]; then
	note "jit_spin: its machine code is x86-64, this is $(uname -m): part (a) skipped"
else
	# 2 s of CPU, however long the machine takes to give them.
	FIXTURE_CLOCK=cpu run_flamed jit record -F 999 -o "$T/jit.folded" -- "$FIXTURES/jit_spin" 2
	expect_rc 0
	check_folded "$T/jit.folded"
	all=$(total_count "$T/jit.folded")
	hot=$(count_jit "$T/jit.folded" jit_spin_hot)
	chain=$(count_matching "$T/jit.folded" ';main;jit_call;jit_spin_hot_[j]')
	note "jit_spin_hot_[j]: $hot of $all samples, $chain of them under main;jit_call"
	expect_samples_of_cpu "$all" 999 2 "jit_spin"
	expect_between "$(percent "$hot" "$all")" 90 100 "the share of samples in jit_spin_hot_[j] (%)"
	# The generated code keeps a frame pointer: the unwind goes on through it.
	expect_between "$(percent "$chain" "$all")" 90 100 \
		"the share of samples in main;jit_call;jit_spin_hot_[j] (%)"
	FIXTURE_CLOCK=cpu run_flamed jit-dwarf record -F 999 --call-graph dwarf -o "$T/jit-dwarf.folded" -- "$FIXTURES/jit_spin" 2
	expect_rc 0
	check_folded "$T/jit-dwarf.folded"
	all=$(total_count "$T/jit-dwarf.folded")
	chain=$(count_matching "$T/jit-dwarf.folded" ';main;jit_call;jit_spin_hot_[j]')
	note "--call-graph dwarf: $chain of $all samples under main;jit_call;jit_spin_hot_[j]"
	expect_between "$(percent "$chain" "$all")" 90 100 \
		"the share of samples in main;jit_call;jit_spin_hot_[j] with --call-graph dwarf (%)"
	# Each of them took a frame-pointer step out of the JIT's code, and the summary says so.
	fp=$(sed -nE 's/.* ([0-9]+) frames stepped by frame pointers, in code without CFI.*/\1/p' "$LAST_ERR")
	[[ ${fp:-0} -ge $chain ]] ||
		fail "--call-graph dwarf: ${fp:-no} frames stepped by frame pointers for $chain JIT samples: $(grep 'DWARF unwinding' "$LAST_ERR")"
	# A map with junk before the real line: the junk is skipped and counted,
	# the rest named. (2 s: flamed reads its mapping records, and so learns of
	# the JIT, once a second; a JIT that lives less may be gone with its map.)
	JIT_SPIN_JUNK=1 FIXTURE_CLOCK=cpu run_flamed junk record -F 999 -o "$T/junk.folded" -- "$FIXTURES/jit_spin" 2
	expect_rc 0
	expect_between "$(percent "$(count_jit "$T/junk.folded" jit_spin_hot)" "$(total_count "$T/junk.folded")")" \
		90 100 "the share of samples in jit_spin_hot_[j] with junk in the map (%)"
	# The count covers every perf map flamed opened: those of other JIT
	# processes on the machine (another test's jit_spin, node) add to it.
	skipped=$(sed -nE 's/^flamed: perf maps \(JIT\): ([0-9]+) lines skipped in ([0-9]+) maps \(([0-9]+) malformed, ([0-9]+) longer than 4096 bytes.*/\1 \2 \3 \4/p' "$T/junk.err")
	read -r lines maps malformed long <<<"${skipped:-0 0 0 0}"
	if [[ $maps -eq 1 ]]; then
		[[ $lines -eq 3 && $malformed -eq 2 && $long -eq 1 ]]
	else
		[[ $maps -gt 1 && $lines -ge 3 && $malformed -ge 2 && $long -ge 1 ]]
	fi || fail "the skipped perf-map lines (2 malformed, 1 longer than 4096 bytes) are not reported: $(grep 'perf maps' "$T/junk.err")"
	parts=$((parts + 1))
fi

# (b) V8 appends a line for every function it compiles; the two hot ones
# run from the event loop, so no caller inlines them.
if ! command -v node >/dev/null; then
	note "node is not on PATH: part (b), Node.js --perf-basic-prof, skipped"
else
	cat >"$T/hot.js" <<'EOF'
'use strict';
// flamedHotAlpha and flamedHotBeta take turns for SECONDS (argv[2]). Each is
// started by setImmediate, never called from JavaScript, so no optimizing
// compiler inlines it into a caller: samples land in code V8 names after it.
const end = Date.now() + 1000 * Number(process.argv[2]);
let sink = 0;
let turn = 0;

function next() {
	if (Date.now() < end)
		setImmediate(turn++ & 1 ? flamedHotBeta : flamedHotAlpha);
	else if (sink === 0.5)
		console.log(sink);
}

function flamedHotAlpha() {
	let x = sink | 1;
	for (let i = 0; i < 2e6; i++)
		x = (x * 31 + i) % 1000003;
	sink += x;
	next();
}

function flamedHotBeta() {
	let x = sink | 3;
	for (let i = 0; i < 2e6; i++)
		x = (x * 37 + i) % 999983;
	sink += x;
	next();
}

next();
EOF
	# It runs until the test ends: the recording below stops by the CPU node got.
	bg node --perf-basic-prof "$T/hot.js" 600
	node_pid=$BG_PID
	node_map=/tmp/perf-$node_pid.map
	# node leaves its map behind: remove it with the rest.
	trap 'cleanup; rm -f "$node_map"' EXIT
	wait_comm "$node_pid" node
	# Until V8 has optimized both (the '*' of its names), the samples would
	# mostly land in the interpreter. V8 tags each name with the kind of
	# code: JS:*name since node 20, LazyCompile:*name (or Function:, Script:...)
	# in node 18, the one of Debian 12; flamed names the frame as the map does.
	optimized() {
		grep -Eqs "^[0-9a-f]+ [0-9a-f]+ [A-Za-z]+:\\*$1 " "$node_map"
	}
	for ((i = 0; i < 100; i++)); do
		optimized flamedHotAlpha && optimized flamedHotBeta && break
		sleep 0.05
	done
	if ! optimized flamedHotAlpha || ! optimized flamedHotBeta; then
		fail "node did not write optimized flamedHotAlpha/Beta to $node_map within 5 s: $(grep flamedHot "$node_map" | head -n 6)"
	fi

	record_for_cpu node "$node_pid" 2 record -v -F 999 -p "$node_pid" -o "$T/node.folded"
	check_folded "$T/node.folded"
	all=$(total_count "$T/node.folded")
	alpha=$(count_jit "$T/node.folded" flamedHotAlpha)
	beta=$(count_jit "$T/node.folded" flamedHotBeta)
	note "node: flamedHotAlpha $alpha, flamedHotBeta $beta, all $all samples"
	expect_samples_of_cpu "$all" 999 "$CPU_USED" "node"
	# They share the CPU about half and half; 10% each leaves room for GC and the JIT.
	expect_between "$(percent "$alpha" "$all")" 10 100 "the share of samples in flamedHotAlpha_[j] (%)"
	expect_between "$(percent "$beta" "$all")" 10 100 "the share of samples in flamedHotBeta_[j] (%)"
	parts=$((parts + 1))
fi

[[ $parts -gt 0 ]] || skip "neither part can run here (no x86-64, no node)"
pass "JIT frames from perf maps: $parts of 2 parts"
