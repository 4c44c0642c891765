#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds flamed with AddressSanitizer (LeakSanitizer on) and
# UndefinedBehaviorSanitizer in build-san/ and runs the whole test suite there:
# any test that fails, and any sanitizer report from any sanitized process a
# test starts (flamed, the unit tests), fails this script.
#
#   packaging/sanitize.sh [CTEST_ARGS...]   after packaging/bootstrap.sh --test;
#                                           CTEST_ARGS select tests (-R unit/)
#
# libflamed, flamed and the unit tests are sanitized (-DFLAMED_SANITIZE=ON);
# the fixture programs are not: they are what the tests profile. Reports go to
# build-san/sanitizer-logs/TEST/ (one file per process; FLAMED_SANITIZE_BUILD
# names another build directory) and are printed after the test's result.
# Warnings are errors when CI is set or FLAMED_WERROR=1, as in bootstrap.sh.
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
ROOT=$PWD
B=${FLAMED_SANITIZE_BUILD:-$ROOT/build-san}

step() { printf 'sanitize: %s\n' "$*" >&2; }
die() {
	printf 'sanitize: error: %s\n' "$*" >&2
	exit 1
}

case ${1:-} in
-h | --help)
	sed -n '3,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	exit 0
	;;
esac

# --- configure and build: bootstrap.sh's options, plus the sanitizers ------------
werror=OFF
case ${CI:-} in '' | 0 | false) ;; *) werror=ON ;; esac
[[ ${FLAMED_WERROR:-0} == 1 ]] && werror=ON

# The bpftool bootstrap.sh found (it checked that it runs), else the usual places.
BPFTOOL=
if [[ -f build/CMakeCache.txt ]]; then
	BPFTOOL=$(sed -n 's/^BPFTOOL:[A-Z]*=//p' build/CMakeCache.txt)
fi
for b in "$BPFTOOL" "$(command -v bpftool || true)" /usr/sbin/bpftool /sbin/bpftool; do
	[[ -n $b && -x $b ]] && BPFTOOL=$b && break
done
[[ -x $BPFTOOL ]] || die "no bpftool: run packaging/bootstrap.sh --test first"

step "configuring $B (FLAMED_SANITIZE=ON, FLAMED_WERROR=$werror)"
mkdir -p "$B"
if ! cmake -S . -B "$B" -DFLAMED_SANITIZE=ON -DFLAMED_WERROR="$werror" \
	-DBPFTOOL="$BPFTOOL" >"$B/sanitize-configure.log" 2>&1; then
	cat "$B/sanitize-configure.log" >&2
	die "cmake configure failed (log: $B/sanitize-configure.log)"
fi
step "building with $(nproc) jobs"
cmake --build "$B" -j"$(nproc)"
# A CMakeLists.txt without the option would build (and pass) unsanitized.
[[ $(nm "$B/flamed" | grep -c __asan_init) -gt 0 ]] ||
	die "$B/flamed is not built with AddressSanitizer (no FLAMED_SANITIZE option in CMakeLists.txt?)"

# --- run every test, each with its own directory for sanitizer reports -----------
LOGS=$B/sanitizer-logs
rm -rf "$LOGS"
mkdir -p "$LOGS"

mapfile -t tests < <(ctest --test-dir "$B" -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p')
[[ ${#tests[@]} -gt 0 ]] || die "no tests in $B${*:+ for $*}"
step "running ${#tests[@]} tests"

failed=() reported=()
t0=$SECONDS
for name in "${tests[@]}"; do
	dir=$LOGS/${name//\//_}
	mkdir -p "$dir"
	# abort_on_error: a report ends the process with SIGABRT, which no test
	# mistakes for one of flamed's exit statuses. log_path: into files, also from
	# processes whose stderr a test keeps to itself (a daemon, a failing run).
	common="abort_on_error=1:log_path=$dir/san:log_exe_name=1"
	asan=detect_leaks=1
	case $name in
	# It bounds the daemon's RSS, which ASan's quarantine of freed memory
	# (256 MB by default) would fill: keep that smaller than the daemon.
	integration/daemon_churn) asan+=:quarantine_size_mb=8 ;;
	# It bounds flamed's peak RSS reading perf maps under --max-symbol-cache.
	integration/record_jit_hostile) asan+=:quarantine_size_mb=8 ;;
	esac
	rc=0
	ASAN_OPTIONS="$asan:$common" \
		UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:$common" \
		ctest --test-dir "$B" --output-on-failure -R "^${name}\$" >"$dir/ctest.log" 2>&1 || rc=$?
	verdict=$(sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: [^ ]* \.*\** *//p' "$dir/ctest.log" | tail -n 1)
	if compgen -G "$dir/san.*" >/dev/null; then
		reported+=("$name")
		verdict="$verdict, SANITIZER REPORT"
	fi
	[[ $rc -eq 0 ]] || failed+=("$name")
	printf 'sanitize: %-32s %s\n' "$name" "${verdict:-exit $rc}" >&2
	if [[ $rc -ne 0 ]]; then
		cat "$dir/ctest.log" >&2
	fi
	for f in "$dir"/san.*; do
		[[ -f $f ]] || continue
		printf '===== %s: %s\n' "$name" "${f##*/}" >&2
		cat "$f" >&2
	done
done

step "${#tests[@]} tests in $((SECONDS - t0)) s: ${#failed[@]} failed, ${#reported[@]} with sanitizer reports"
[[ ${#failed[@]} -eq 0 ]] || step "failed: ${failed[*]}"
[[ ${#reported[@]} -eq 0 ]] || step "sanitizer reports: ${reported[*]} (in $LOGS)"
[[ ${#failed[@]} -eq 0 && ${#reported[@]} -eq 0 ]]
