#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The ring buffer backend filters in the kernel (issue 15): with -p or
# -- CMD, `--call-graph dwarf` and `--no-bpf` alike, a sample of a process
# that is no target never reaches flamed. A busy loop that is no target runs
# beside each recording: `flamed record -v` says how many of the other
# processes' samples the kernel dropped and how many flamed read and
# dropped itself, which must be none. Children are still followed. Where
# bpf(2) is refused, flamed filters as before and says so once.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

# dropped ERRFILE: "KERNEL USER" from the line of `flamed record -v` on the
# other processes' samples (none: "0 0").
dropped() {
	local k='' u=''
	read -r k u < <(sed -nE 's/^flamed: samples of other processes: ([0-9]+) dropped in the kernel, ([0-9]+) read from the perf ring buffer and dropped by flamed$/\1 \2/p' "$1") || true
	echo "${k:-0} ${u:-0}"
}

# kernel_filtered NAME: the recording NAME dropped the busy loop's samples
# in the kernel, read none of them, and its accounting adds up.
kernel_filtered() {
	local err=$T/$1.err k u
	read -r k u < <(dropped "$err")
	note "$1: other processes' samples: $k dropped in the kernel, $u by flamed"
	! grep -q 'cannot filter samples in the kernel' "$err" ||
		fail "$1: $(grep 'cannot filter' "$err")"
	[[ $k -ge 100 ]] || fail "$1: the kernel dropped $k samples of the busy loop, expected its second or more at 999 Hz"
	[[ $u -eq 0 ]] || fail "$1: $u samples of other processes were copied to flamed (the kernel should have dropped them)"
	grep -q '^flamed: accounting: ' "$err" || fail "$1: no accounting line"
	! grep -q 'unaccounted for' "$err" || fail "$1: $(grep 'unaccounted' "$err")"
}

bg bash -c 'while :; do :; done'
busy=$BG_PID

# 1. -p with DWARF stack copies: the target's samples only, whole chains.
FIXTURE_CLOCK=cpu bg "$FIXTURES/nofp_chain" 1
wait_comm "$BG_PID" nofp_chain
record_frozen dwarf_pid "$BG_PID" -F 999 --call-graph dwarf -o "$T/dwarf_pid.folded"
check_folded "$T/dwarf_pid.folded"
kernel_filtered dwarf_pid
roots=$(root_frames "$T/dwarf_pid.folded" | sort -u | tr '\n' ' ')
[[ $roots == "nofp_chain " ]] || fail "dwarf -p: root frames other than 'nofp_chain': $roots"

# 2. -- CMD with DWARF: the command's child is followed through the kernel filter too.
FIXTURE_CLOCK=cpu run_flamed dwarf_cmd record -v -F 999 --call-graph dwarf -o "$T/dwarf_cmd.folded" -- "$FIXTURES/spawner" 1
expect_rc 0
check_folded "$T/dwarf_cmd.folded"
kernel_filtered dwarf_cmd
all=$(total_count "$T/dwarf_cmd.folded")
expect_samples_of_cpu "$all" 999 1 "spawner and its child (dwarf)"
expect_between "$(percent "$(count_matching "$T/dwarf_cmd.folded" "$CHILD_SPIN")" "$all")" 80 100 \
	"the forked child's share of all samples, dwarf (%)"

# 3. --no-bpf: frame-pointer call chains through the ring, filtered in the kernel as well.
FIXTURE_CLOCK=cpu run_flamed nobpf record -v --no-bpf -F 999 -o "$T/nobpf.folded" -- "$FIXTURES/chains" 1
expect_rc 0
check_folded "$T/nobpf.folded"
kernel_filtered nobpf
roots=$(root_frames "$T/nobpf.folded" | sort -u | tr '\n' ' ')
[[ $roots == "chains " ]] || fail "--no-bpf: root frames other than 'chains': $roots"

# 4. bpf(2) refused: filtered in flamed as before, and said once.
FIXTURE_CLOCK=cpu run_cmd refused "$FIXTURES/nobpf" "$FLAMED" record -v -F 999 --call-graph dwarf -o "$T/refused.folded" -- "$FIXTURES/chains" 1
expect_rc 0
check_folded "$T/refused.folded"
[[ $(grep -c '^flamed: cannot filter samples in the kernel' "$T/refused.err") -eq 1 ]] ||
	fail "bpf(2) refused: expected one notice that the kernel cannot filter: $(grep -v 'debug:' "$T/refused.err" | head -n 3)"
read -r k u < <(dropped "$T/refused.err")
note "refused: other processes' samples: $k dropped in the kernel, $u by flamed"
[[ $k -eq 0 && $u -ge 100 ]] || fail "bpf(2) refused: $k dropped in the kernel, $u by flamed; expected 0 and the busy loop's"
! grep -q 'unaccounted for' "$T/refused.err" || fail "refused: $(grep 'unaccounted' "$T/refused.err")"

kill "$busy"
pass "ring buffer: other processes' samples dropped in the kernel (dwarf -p, dwarf --, --no-bpf), in flamed when bpf(2) is refused"
