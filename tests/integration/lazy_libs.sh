#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# libcurl (push), libmicrohttpd (the metrics endpoint) and libdebuginfod
# (fetching debug info) are opened by the job that needs them, not linked:
# loading them and the libraries they pull in took about 4 ms of CPU at
# every start of every command. flamed names none of them as NEEDED, a recording
# maps none of them, and where one cannot be loaded the job that needs it
# fails with one line naming the file and its package (a bogus file in
# LD_LIBRARY_PATH stands for a broken or missing library).
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
command -v readelf >/dev/null || skip "readelf is not installed (Debian: binutils)"

LAZY='libcurl|libmicrohttpd|libdebuginfod'
# With DEBUGINFOD_URLS set, a recording fetches (and opens libdebuginfod).
unset DEBUGINFOD_URLS

# 1. Not linked.
needed=$(readelf -d "$FLAMED" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p')
[[ -n $needed ]] || fail "readelf finds no NEEDED entry in $FLAMED"
if grep -E "^($LAZY)" <<<"$needed"; then
	fail "flamed is linked with $(grep -E "^($LAZY)" <<<"$needed" | tr '\n' ' ')"
fi
note "NEEDED: $(tr '\n' ' ' <<<"$needed")"

# 2. A recording (no push, no metrics, no debuginfod) maps none of them.
bg "$FIXTURES/chains" 60
CHAINS=$BG_PID
wait_comm "$CHAINS" chains
bg_flamed rec record -v -F 99 -p "$CHAINS" -o "$T/rec.folded"
wait_sampling rec
maps=$(grep -E "/($LAZY)[^/]*\.so" "/proc/$FLAMED_PID/maps" || true)
[[ -z $maps ]] || fail "a recording maps $(awk '{print $NF}' <<<"$maps" | sort -u | tr '\n' ' ')"
stop_flamed rec

# 3. A library that cannot be loaded: the job that needs it says which and where from.
BOGUS=$T/bogus-libs
mkdir -p "$BOGUS"
for so in libcurl.so.4 libmicrohttpd.so.12 libdebuginfod.so.1; do
	echo "not a library" >"$BOGUS/$so"
done
OUT=$T/out
mkdir -p "$OUT"
cat >"$T/push.conf" <<EOF
interval = 1s
frequency = 99
formats = pprof
push_url = http://127.0.0.1:9/
EOF
cat >"$T/metrics.conf" <<EOF
interval = 1s
frequency = 99
formats = folded
metrics_listen = 127.0.0.1:1
EOF
# expect_refused NAME PATTERN CMD...: exits non-zero within the timeout, and
# its one error line names the file (PATTERN) and the package to install.
expect_refused() {
	local name=$1 pattern=$2 lines
	shift 2
	TIMEOUT=20 run_cmd "$name" env LD_LIBRARY_PATH="$BOGUS" "$@"
	[[ $RC -ne 0 ]] || fail "$name: exit 0 with $pattern unloadable"
	lines=$(grep -v 'debug:' "$LAST_ERR" | grep -c "$pattern" || true)
	[[ $lines -eq 1 ]] || fail "$name: $lines lines name $pattern: $(cat "$LAST_ERR")"
	grep "$pattern" "$LAST_ERR" | grep -q 'install ' ||
		fail "$name: the message does not say what to install: $(grep "$pattern" "$LAST_ERR")"
	note "$name: $(grep "$pattern" "$LAST_ERR")"
}
expect_refused push libcurl.so.4 "$FLAMED" daemon --config "$T/push.conf" --output-dir "$OUT"
expect_refused metrics libmicrohttpd.so.12 "$FLAMED" daemon --config "$T/metrics.conf" --output-dir "$OUT"
expect_refused debuginfod libdebuginfod.so.1 "$FLAMED" record --debuginfod=http://127.0.0.1:9 \
	-d 0.2 -o "$T/d.folded" -- "$FIXTURES/chains" 0.1

pass "push, metrics and debuginfod load their libraries when they start; a recording maps none of them"
