#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: `flamed record --call-graph dwarf -- CMD` on a machine kept busy
# by processes that are not the target. Every CPU runs a shell busy loop
# (BUSY of them, default 2), and flamed records `xz -9 -k -c FILE` at 99 Hz.
# A sample of a busy loop must never reach flamed (issue 15): with the
# filter in the kernel, the perf rings carry xz's samples only, and none is
# lost, so xz gets its 99 samples per second of CPU.
#
#   tests/bench/dwarf_filter.sh [SIZE_MB]
#
# Printed: flamed's lost records, its samples (all of them, and xz's alone:
# the folded stacks whose root is "xz"), xz's CPU seconds (user + system,
# from /usr/bin/time), and xz's samples / (FREQ x xz CPU-s): 1 when every
# sample of xz was kept. The goal is 0 lost and a ratio within 3% of 1.
# Then flamed's accounting, and (flamed -v) how many of the other processes'
# samples the kernel dropped and how many flamed read from the rings first.
#
# FILE is SIZE_MB (default 64) MiB of base64 text from /dev/urandom: xz -9
# compresses it at about 3 MB per CPU-second here, so about 20 s of CPU.
# Environment: FLAMED (build/flamed), FREQ (99), BUSY (2), SIZE_MB, KEEP (a
# directory: keep the outputs there). Needs root; exits 77 without it. Not
# part of ctest: it takes a minute and keeps every CPU busy.
set -euo pipefail
export LC_ALL=C

SRCDIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
# shellcheck source=tests/bench/lib.sh
source "$SRCDIR/tests/bench/lib.sh"

SIZE_MB=${1:-${SIZE_MB:-64}}
FREQ=${FREQ:-99}
BUSY=${BUSY:-2}
FLAMED=${FLAMED:-$SRCDIR/build/flamed}

[[ $(id -u) -eq 0 ]] || skip "needs root (perf events of other processes, BPF)"
[[ -x /usr/bin/time ]] || skip "needs /usr/bin/time (Debian: apt-get install time)"
command -v xz >/dev/null || skip "needs xz (Debian: apt-get install xz-utils)"
[[ -x $FLAMED ]] || die "no flamed binary at $FLAMED"
[[ $SIZE_MB =~ ^[1-9][0-9]*$ ]] || die "SIZE_MB must be a number of MiB, not '$SIZE_MB'"

bench_workdir
BUSY_PIDS=()
# shellcheck disable=SC2317 # called by the trap
finish() {
	local p
	for p in "${BUSY_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${BUSY_PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	[[ -n ${KEEP:-} ]] || rm -rf "$W"
}
trap finish EXIT

say "making $SIZE_MB MiB of input in $W"
head -c "$((SIZE_MB * 3 / 4))M" /dev/urandom | base64 >"$W/input"

for ((i = 0; i < BUSY; i++)); do
	bash -c 'while :; do :; done' &
	BUSY_PIDS+=($!)
done
say "$BUSY busy loops: ${BUSY_PIDS[*]}; recording xz -9 with $FLAMED"

rc=0
"$FLAMED" record -v --call-graph dwarf -F "$FREQ" -o "$W/xz.folded" -- \
	/usr/bin/time -f '%U %S' -o "$W/xz.time" xz -9 -k -c "$W/input" >/dev/null 2>"$W/record.err" || rc=$?
[[ $rc -eq 0 ]] || die "flamed record failed ($rc): $(tail -n 5 "$W/record.err")"

read -r user sys <"$W/xz.time"
samples=$(sed -nE 's/^flamed: ([0-9]+) samples, [0-9]+ stacks in .*/\1/p' "$W/record.err")
lost=$(sed -nE 's/^flamed: ([0-9]+) records lost: .*/\1/p' "$W/record.err")
# The root frame is the process name: "xz;main;... COUNT" (or "xz COUNT").
xz_samples=$(awk '{ r = $0; sub(/;.*/, "", r); sub(/ [0-9]+$/, "", r); if (r == "xz") s += $NF } END { print s + 0 }' "$W/xz.folded")
[[ -n $samples ]] || die "no sample count in flamed's summary: $(tail -n 5 "$W/record.err")"
awk -v s="$samples" -v x="$xz_samples" -v l="${lost:-0}" -v u="$user" -v k="$sys" -v f="$FREQ" 'BEGIN {
	cpu = u + k
	printf "lost records      %d\n", l
	printf "samples           %d (xz: %d)\n", s, x
	printf "xz CPU            %.2f s (user %.2f, system %.2f)\n", cpu, u, k
	printf "xz samples / (%d x xz CPU-s) = %.3f\n", f, (cpu > 0 ? x / (f * cpu) : 0)
}'
grep -E '^flamed: (accounting|samples of other processes|BPF unavailable|cannot filter)' "$W/record.err" >&2 || true
