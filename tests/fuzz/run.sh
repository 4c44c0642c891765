#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the libFuzzer targets with clang and runs each for SECONDS.
#
#   tests/fuzz/run.sh SECONDS [--build-dir DIR] [--update-corpus] [TARGET...]
#
# Without --build-dir, configures (once) a clang build with -DFLAMED_FUZZ=ON in
# ${TMPDIR:-/tmp}/flamed-fuzz-build. Each target fuzzes a copy of its corpus
# (tests/fuzz/corpus/NAME), so the checked-in seeds stay as they are; with
# --update-corpus, the inputs that found new coverage are merged into them
# (libFuzzer -merge=1: only those that add coverage). Prints one line per
# target (executions per second, crash or not); a crash leaves its input in
# BUILD/fuzz-out/NAME/ and the script exits 1. Needs clang's libFuzzer runtime
# (Debian: libclang-rt-14-dev, or the one of your clang version).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
build=""
update=false
seconds=""
targets=()

usage() {
	echo "usage: $0 SECONDS [--build-dir DIR] [--update-corpus] [TARGET...]" >&2
	echo "targets: $(cd "$here/corpus" && echo *)" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case "$1" in
	--build-dir) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
	--build-dir=*) build=${1#*=}; shift ;;
	--update-corpus) update=true; shift ;;
	-h|--help) usage ;;
	-*) usage ;;
	*)
		if [ -z "$seconds" ]; then seconds=$1; else targets+=("$1"); fi
		shift ;;
	esac
done
case "$seconds" in
'' | *[!0-9]* | 0) usage ;;
esac
if [ ${#targets[@]} -eq 0 ]; then
	for d in "$here"/corpus/*/; do
		targets+=("$(basename "$d")")
	done
fi
for t in "${targets[@]}"; do
	[ -f "$here/fuzz_$t.c" ] || { echo "run.sh: no target $t (no tests/fuzz/fuzz_$t.c)" >&2; exit 2; }
done

build=${build:-${TMPDIR:-/tmp}/flamed-fuzz-build}
if [ ! -f "$build/CMakeCache.txt" ]; then
	cc=${CC:-$(command -v clang || command -v clang-14 || true)}
	[ -n "$cc" ] || { echo "run.sh: clang not found (set CC)" >&2; exit 1; }
	# -O1 without NDEBUG: the usual speed for fuzzing, and lib/'s assertions stay on.
	CC=$cc cmake -S "$src" -B "$build" -DFLAMED_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null
else
	cmake -S "$src" -B "$build" -DFLAMED_FUZZ=ON >/dev/null
fi
if ! cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}" >"$build/fuzz-build.log" 2>&1; then
	tail -n 30 "$build/fuzz-build.log" >&2
	echo "run.sh: build failed (all of it in $build/fuzz-build.log)" >&2
	exit 1
fi

out=$build/fuzz-out
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
work=$(mktemp -d "${TMPDIR:-/tmp}/flamed-fuzz-corpus.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Inputs bigger than the default 4096 bytes where the parser has limits beyond it.
max_len_of() {
	case "$1" in
	perfmap) echo 16384 ;; # FL_PERFMAP_MAX_LINE is 4096: lines past it, and after
	ksyms | config) echo 8192 ;;
	*) echo "" ;; # the largest seed, at least 4096 (ELF seeds are up to 64 KiB)
	esac
}

status=0
printf '%-11s %10s %12s %8s  %s\n' target exec/s executions corpus result
for t in "${targets[@]}"; do
	bin=$build/tests/fuzz/fuzz_$t
	seeds=$here/corpus/$t
	mkdir -p "$out/$t" "$work/$t"
	cp -a "$seeds/." "$work/$t/"
	log=$out/$t/log
	args=(-max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 -print_final_stats=1
	      -artifact_prefix="$out/$t/")
	ml=$(max_len_of "$t")
	[ -z "$ml" ] || args+=(-max_len="$ml")
	rc=0
	"$bin" "${args[@]}" "$work/$t" >"$log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	units=$(find "$work/$t" -type f | wc -l)
	artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
	if [ "$rc" -ne 0 ] || [ -n "$artifact" ]; then
		status=1
		printf '%-11s %10s %12s %8s  %s\n' "$t" "${rate:-?}" "${execs:-?}" "$units" \
			"CRASH (exit $rc): ${artifact:-see $log}; log $log"
		continue
	fi
	printf '%-11s %10s %12s %8s  %s\n' "$t" "${rate:-?}" "${execs:-?}" "$units" ok
	if $update; then
		before=$(find "$seeds" -type f | wc -l)
		"$bin" -merge=1 ${ml:+-max_len=$ml} "$seeds" "$work/$t" >>"$log" 2>&1
		after=$(find "$seeds" -type f | wc -l)
		echo "            corpus/$t: $before -> $after seeds"
	fi
done
exit $status
