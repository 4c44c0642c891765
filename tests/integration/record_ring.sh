#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed record --no-bpf -- CMD`: the ring-buffer backend gives the same
# profile as the BPF one, and says that it is the one in use.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

run_flamed ring record --no-bpf -F 999 -o "$T/out.folded" -- "$FIXTURES/chains" 3
expect_rc 0
grep -qi 'ring' "$T/ring.err" || fail "stderr does not mention the ring buffer backend"
check_folded "$T/out.folded"
check_chains_split "$T/out.folded"

roots=$(root_frames "$T/out.folded" | sort -u | tr '\n' ' ')
[[ $roots == "chains " ]] || fail "root frames other than 'chains': $roots"

pass "record --no-bpf -- chains: chains A and B at 75/25 through the ring buffer"
