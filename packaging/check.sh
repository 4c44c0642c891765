#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs the whole test suite twice, after packaging/bootstrap.sh --test: as
# built in build/ (ctest), then sanitized in build-san/ (sanitize.sh). Both
# runs always happen, so that one failure does not hide what the other finds;
# the exit status is 0 only when both pass.
#
#   packaging/check.sh              from any directory
#
# Some tests change the machine for a few seconds and put it back however
# they end (SIGKILL included): kernel.kptr_restrict,
# kernel.perf_event_max_sample_rate, fs.protected_symlinks, and CPU 1's
# online state (tests/integration/lib_restore.sh).
set -uo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

case ${1:-} in
-h | --help)
	sed -n '3,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	exit 0
	;;
esac

[[ -f build/CTestTestfile.cmake ]] ||
	{ echo "check: no tests in build/: run packaging/bootstrap.sh --test first" >&2; exit 1; }

t0=$SECONDS
ctest --test-dir build --output-on-failure
plain=$?
printf 'check: ctest in build/: %s (%d s)\n' "$([[ $plain -eq 0 ]] && echo passed || echo FAILED)" \
	$((SECONDS - t0)) >&2

t0=$SECONDS
packaging/sanitize.sh
san=$?
printf 'check: sanitized suite in build-san/: %s (%d s)\n' "$([[ $san -eq 0 ]] && echo passed || echo FAILED)" \
	$((SECONDS - t0)) >&2

[[ $plain -eq 0 && $san -eq 0 ]]
