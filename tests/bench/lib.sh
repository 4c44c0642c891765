# SPDX-License-Identifier: GPL-2.0-or-later
# What the benchmark scripts share (sourced): their messages and exits.
# A benchmark prints numbers; it exits 77 (skip) when this machine lacks a
# tool it needs, and 1 when something is wrong.

say() { echo "bench: $*" >&2; }
skip() {
	echo "SKIP: $*"
	exit 77
}
die() {
	echo "bench: $*" >&2
	exit 1
}

# stop_workload: ends the background workload whose process group leader is
# $WPID (started with setsid), if any.
stop_workload() {
	[[ -n ${WPID:-} ]] || return 0
	kill -TERM -- "-$WPID" 2>/dev/null || true
	wait "$WPID" 2>/dev/null || true
	WPID=
}

# timed FILE CMD...: runs CMD, appending "wall user sys maxrss_kb" of its whole
# process tree to FILE (tests/bench/treetime.py: GNU time would miss the
# addr2line processes perf script leaves behind). Uses $PYTHON and $SRCDIR.
timed() {
	local out=$1
	shift
	"${PYTHON:-python3}" "$SRCDIR/tests/bench/treetime.py" "$out" "$@"
}

# result_dir DIR: an empty DIR for one measurement's files. Emptied, not just
# made: timed appends to DIR/times, and a kept directory (-k) of an earlier
# run would add that run's times to this one's.
result_dir() {
	rm -rf -- "$1"
	mkdir -p -- "$1"
}

# perf_record_script DIR HZ DURATION: perf record -g of the whole machine for
# DURATION seconds into DIR/perf.data, then perf script into DIR/out.txt, both
# timed into DIR/times (see timed).
perf_record_script() {
	local r=$1 hz=$2 duration=$3
	result_dir "$r"
	timed "$r/times" perf record -q -e cpu-clock -a -g -F "$hz" -o "$r/perf.data" -- sleep "$duration" \
		2>"$r/record.err" || die "perf record failed: $(tail -n 3 "$r/record.err")"
	timed "$r/times" perf script -i "$r/perf.data" >"$r/out.txt" 2>"$r/script.err" ||
		die "perf script failed: $(tail -n 3 "$r/script.err")"
}

# size_of FILE...: their total size in bytes.
size_of() {
	local n=0 f
	for f; do
		n=$((n + $(stat -c %s "$f")))
	done
	echo "$n"
}

# prepare_make_workload SRC DIR: copies the CMake project SRC into DIR/src and
# configures and builds it once in DIR/build (that checks it builds, and warms
# the page cache for the measured builds).
prepare_make_workload() {
	local src=$1 w=$2
	say "copying $src and configuring the workload build in $w"
	mkdir -p "$w/src"
	tar -C "$src" --exclude=./build --exclude=./.git -cf - . | tar -C "$w/src" -xf -
	cmake -S "$w/src" -B "$w/build" -G "Unix Makefiles" >"$w/configure.log" 2>&1 ||
		die "configuring the workload failed: $(tail -n 5 "$w/configure.log")"
	say "building it once"
	make -C "$w/build" -j2 >"$w/build.log" 2>&1 ||
		die "the workload does not build: $(tail -n 5 "$w/build.log")"
}

# start_make_workload DIR: rebuilds DIR/build from clean in a loop, in its own
# session (so that stop_workload stops every compiler it started); sets WPID.
start_make_workload() {
	# shellcheck disable=SC2016 # $1 is expanded by the inner bash
	setsid bash -c 'while :; do make -C "$1" -j2 clean; make -C "$1" -j2; done' \
		workload "$1/build" </dev/null >/dev/null 2>&1 &
	WPID=$!
}

# bench_workdir: sets W, the directory of a benchmark's files: KEEP (made if
# missing, kept) or a new temporary one (the caller removes it when KEEP is empty).
bench_workdir() {
	if [[ -n ${KEEP:-} ]]; then
		mkdir -p "$KEEP"
		W=$(readlink -f "$KEEP")
	else
		# shellcheck disable=SC2034 # read by the scripts that source this one
		W=$(mktemp -d "${TMPDIR:-/tmp}/flamed-bench.XXXXXX")
	fi
}
