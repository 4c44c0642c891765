#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed record --no-bpf -- CMD`: the ring-buffer backend gives the same
# profile as the BPF one, and says that it is the one in use. And when the
# system refuses bpf(2) (a seccomp filter here), flamed falls back to it by
# itself with one notice, kernel names then coming from /proc/kallsyms.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

# 3 s of its own CPU, however busy the machine: about 3 x 999 samples.
FIXTURE_CLOCK=cpu run_flamed ring record --no-bpf -F 999 -o "$T/out.folded" -- "$FIXTURES/chains" 3
expect_rc 0
grep -qi 'ring' "$T/ring.err" || fail "stderr does not mention the ring buffer backend"
check_folded "$T/out.folded"
check_chains_split "$T/out.folded"
expect_samples_of_cpu "$(total_count "$T/out.folded")" 999 3 "chains through the ring buffer"

roots=$(root_frames "$T/out.folded" | sort -u | tr '\n' ' ')
[[ $roots == "chains " ]] || fail "root frames other than 'chains': $roots"

FIXTURE_CLOCK=cpu run_cmd refused "$FIXTURES/nobpf" "$FLAMED" record -F 999 -o "$T/refused.folded" -- "$FIXTURES/chains" 3
expect_rc 0
[[ $(grep -c 'BPF unavailable' "$T/refused.err") -eq 1 ]] || fail "expected one notice that BPF is unavailable"
grep -q 'ring buffer' "$T/refused.err" || fail "the notice does not say that the ring buffer is used"
check_folded "$T/refused.folded"
check_chains_split "$T/refused.folded"
expect_samples_of_cpu "$(total_count "$T/refused.folded")" 999 3 "chains with bpf(2) refused"

bg timeout 10 dd if=/dev/zero of=/dev/null bs=64k
run_cmd refused_all "$FIXTURES/nobpf" "$FLAMED" record -a -F 499 -d 1 -o "$T/refused_all.folded"
expect_rc 0
check_folded "$T/refused_all.folded"
grep -q '^dd;.*read_zero_\[k\]\|^dd;.*vfs_read_\[k\]' "$T/refused_all.folded" ||
	fail "without BPF, kernel frames of dd are not named from kallsyms"

pass "record --no-bpf, and with bpf(2) refused: chains A and B at 75/25 through the ring buffer"
