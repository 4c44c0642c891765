#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The kernel's verifier walks flamed's sampling program at every start, and
# its time (tens of ms) is most of flamed's own start-up, in proportion to
# the instructions it walks. sample() is one global function for both map
# sets (it was inlined once per set, and each copy walked), and the
# counters' update and the clearing of a walked stack are global functions
# too (inlined, they were walked again on every path through each call).
# Budgets per call-graph mode, from bpf_prog_info's verified_insns (which
# `flamed -v` prints): before, 27,572 with kernel-dwarf and 7,859 with
# frame pointers on Linux 6.18; now 20,283 and 6,737.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
need_bpf

KDWARF_MAX=23000
FP_MAX=7300

check_mode() { # NAME MAX [ARGS...]
	local name=$1 max=$2 insns verified
	shift 2
	run_flamed "$name" record -v -F 99 "$@" -o "$T/$name.folded" -- "$FIXTURES/chains" 0.1
	expect_rc 0
	grep -q ', bpf backend' "$LAST_ERR" || fail "$name: not the BPF backend: $(grep -v debug: "$LAST_ERR")"
	if ! grep -q 'sampler_bpf: on_sample: .* verified' "$LAST_ERR"; then
		# bpf_prog_info.verified_insns: Linux 5.16 and later.
		skip "this kernel ($(uname -r)) does not say how many instructions its verifier walked"
	fi
	insns=$(sed -nE 's/.*sampler_bpf: on_sample: ([0-9]+) instructions, ([0-9]+) verified.*/\1/p' "$LAST_ERR")
	verified=$(sed -nE 's/.*sampler_bpf: on_sample: ([0-9]+) instructions, ([0-9]+) verified.*/\2/p' "$LAST_ERR")
	note "$name: on_sample has $insns instructions, the verifier walked $verified (budget $max)"
	[[ $verified -le $max ]] ||
		fail "$name: the verifier walked $verified instructions of on_sample, over the budget of $max: a path through an inlined copy came back"
	VERIFIED=$verified
}

check_mode kdwarf "$KDWARF_MAX" --call-graph kernel-dwarf
kd=$VERIFIED
check_mode fp "$FP_MAX" --call-graph fp
pass "the verifier walks $kd instructions of on_sample with kernel-dwarf (at most $KDWARF_MAX), $VERIFIED with frame pointers (at most $FP_MAX)"
