#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Debug info fetched by build-id from a real debuginfod server (elfutils'
# debuginfod, started here on localhost over a directory holding the debug
# build of a fixture): a stripped copy of inline_chain recorded with
# DEBUGINFOD_URLS pointing at it gets its functions and its inlined frames;
# without the variable, or with --no-debuginfod, nothing is asked for and
# its frames are named by the file. A server that hangs (SIGSTOP) or ends
# each transfer halfway (a stand-in, debuginfod_stub.py) costs at most the
# budget's seconds, and the recording is written whole all the same.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
command -v debuginfod >/dev/null || skip "debuginfod is not installed (Debian: the debuginfod package)"
command -v python3 >/dev/null || skip "python3 is not installed (the broken server is a Python script)"

# The program: its debug build served, its stripped copy run (the build-id
# note stays: that is what it is fetched by).
mkdir -p "$T/srv" "$T/bin"
cp "$FIXTURES/inline_chain" "$T/srv/inline_chain"
strip --strip-all -o "$T/bin/inline_chain" "$T/srv/inline_chain"
! readelf -S "$T/bin/inline_chain" | grep -q '\.debug_info\|\.symtab' || fail "strip left debug info"
ID=$(readelf -n "$T/bin/inline_chain" | awk '/Build ID/ { print $3 }')
[[ -n $ID ]] || fail "the fixture has no build-id"
FIXTURE_CLOCK=cpu
export FIXTURE_CLOCK

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The server scans the directory once (-t 0: no rescans, -g 0: no grooming).
PORT=$(free_port)
bg debuginfod -F "$T/srv" -p "$PORT" -d "$T/debuginfod.sqlite" -t 0 -g 0
SRV=$BG_PID
# shellcheck disable=SC2317 # called through wait_until
served() {
	python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5).read()' \
		"http://127.0.0.1:$PORT/buildid/$ID/debuginfo" 2>/dev/null
}
wait_until 60 "debuginfod serving the fixture's debug info" served
note "debuginfod (pid $SRV) on 127.0.0.1:$PORT serves $ID"

# record NAME [ENV...] -- [FLAMED ARGS...]: records the stripped fixture for
# 1 s of its CPU at 999 Hz, its own debuginfod cache in $T/cache-NAME.
record() {
	local name=$1
	shift
	local -a envs=()
	while [[ $1 != -- ]]; do
		envs+=("$1")
		shift
	done
	shift
	run_cmd "$name" env -u DEBUGINFOD_URLS DEBUGINFOD_CACHE_PATH="$T/cache-$name" "${envs[@]}" \
		"$FLAMED" record -F 999 "$@" -o "$T/$name.folded" -- "$T/bin/inline_chain" 1
	expect_rc 0
	check_folded "$T/$name.folded"
}

# share FILE ERE: percent of FILE's samples whose stack matches ERE.
share() {
	percent "$(awk -v re="$2" '{ s = $0; sub(/ [0-9]+$/, "", s); if (s ~ re) n += $NF } END { print n + 0 }' "$1")" \
		"$(total_count "$1")"
}
readonly WHOLE=';main;inline_outer;inline_a_\[i\];inline_b_\[i\];inline_c_\[i\]$'

# --- Fetched: named, inlined frames too -------------------------------------------
record fetched DEBUGINFOD_URLS="http://127.0.0.1:$PORT" --
s=$(share "$T/fetched.folded" "$WHOLE")
note "fetched: $s% of the samples in main;inline_outer;inline_a_[i];inline_b_[i];inline_c_[i]"
expect_between "$s" 90 100 "the share of samples with the whole inlined chain, debug info from debuginfod (%)"
grep -q "^flamed: debuginfod: 1 file fetched" "$T/fetched.err" ||
	fail "no summary line '1 file fetched': $(grep debuginfod "$T/fetched.err" || echo none)"
[[ -s $T/cache-fetched/$ID/debuginfo ]] || fail "nothing in the debuginfod cache for $ID"
cmp -s "$T/cache-fetched/$ID/debuginfo" "$T/srv/inline_chain" || fail "the cached file is not the debug build"

# Again from the cache it filled, with the server stopped: named all the same
# (a fetch that ends while the file is first read is not missed).
kill -STOP "$SRV"
record warm DEBUGINFOD_URLS="http://127.0.0.1:$PORT" DEBUGINFOD_CACHE_PATH="$T/cache-fetched" --
kill -CONT "$SRV"
expect_between "$(share "$T/warm.folded" "$WHOLE")" 90 100 "the share of whole inlined chains from the debuginfod cache (%)"

# A symbolic link in the cache where libdebuginfod keeps files is not one it
# wrote: flamed does not follow it (the file there would be used as the
# binary's debug info, whoever wrote it).
mkdir -p "$T/cache-link/$ID"
ln -s "$T/srv/inline_chain" "$T/cache-link/$ID/debuginfo"
record link DEBUGINFOD_URLS="http://127.0.0.1:$PORT" --
expect_between "$(share "$T/link.folded" ';\[inline_chain\]$')" 90 100 "the share of samples named by the file, the cache entry a symlink (%)"

# The same with --debuginfod=URL and no variable.
record option -- --debuginfod="http://127.0.0.1:$PORT"
expect_between "$(share "$T/option.folded" "$WHOLE")" 90 100 "the share of whole inlined chains with --debuginfod=URL (%)"

# --- Not asked: no variable, or --no-debuginfod --------------------------------------
record off --
record no DEBUGINFOD_URLS="http://127.0.0.1:$PORT" -- --no-debuginfod
for name in off no; do
	s=$(share "$T/$name.folded" ';\[inline_chain\]$')
	note "$name: $s% of the samples end in [inline_chain]"
	expect_between "$s" 90 100 "the share of samples named by the file, debuginfod $name (%)"
	! grep -q "inline_outer\|debuginfod" "$T/$name.folded" "$T/$name.err" ||
		fail "$name: debug info was fetched: $(grep debuginfod "$T/$name.err")"
	[[ ! -e $T/cache-$name ]] || fail "$name: a debuginfod cache was made: $(ls -R "$T/cache-$name")"
done

# --debuginfod with nothing to ask: a line that says so (then the usage), exit 2.
run_cmd nourl env -u DEBUGINFOD_URLS "$FLAMED" record --debuginfod -o "$T/x.folded" -- true
expect_rc 2
head -n 1 "$T/nourl.err" | grep -q "^flamed: --debuginfod: DEBUGINFOD_URLS is not set; give the servers" ||
	fail "--debuginfod without servers: $(head -n 1 "$T/nourl.err")"

# --- A server that hangs: at most the budget's 3 s, the profile whole ----------------
kill -STOP "$SRV"
record hung DEBUGINFOD_URLS="http://127.0.0.1:$PORT" -- --debuginfod-budget 64,1G,3
kill -CONT "$SRV"
expect_elapsed_at_most 20 "a recording of 1 s of CPU beside a server that hangs (budget 3 s)"
grep -Eq "^flamed: debuginfod: 0 files fetched .*(1 failed|1 skipped|1 pending)" "$T/hung.err" ||
	fail "hung: the summary does not say the fetch failed or was cut: $(grep debuginfod "$T/hung.err" || echo none)"
expect_between "$(share "$T/hung.folded" ';\[inline_chain\]$')" 90 100 "the share of samples named by the file, server hung (%)"
grep -q '^flamed: 1[0-9][0-9][0-9] samples\|^flamed: 9[0-9][0-9] samples' "$T/hung.err" ||
	fail "hung: not the samples of 1 s at 999 Hz: $(grep -m 1 samples "$T/hung.err")"

# --- A transfer cut halfway: failed, nothing half-written is used ---------------------
bg python3 "$SRCDIR/tests/fixtures/debuginfod_stub.py" half "$ID" "$T/srv/inline_chain" --log "$T/half.log"
wait_until 15 "debuginfod_stub.py listening" test -s "$T/bg-$BG_N.log"
HPORT=$(head -n 1 "$T/bg-$BG_N.log")
record half DEBUGINFOD_URLS="http://127.0.0.1:$HPORT" -- --debuginfod-budget 64,1G,10
grep -q "/buildid/$ID/debuginfo" "$T/half.log" || fail "half: the stand-in was not asked for $ID"
grep -Eq "^flamed: debuginfod: 0 files fetched .*1 failed" "$T/half.err" ||
	fail "half: the summary does not count a failure: $(grep debuginfod "$T/half.err" || echo none)"
expect_between "$(share "$T/half.folded" ';\[inline_chain\]$')" 90 100 "the share of samples named by the file, transfer cut (%)"
[[ ! -s $T/cache-half/$ID/debuginfo ]] || fail "half: a cut transfer left a debug file in the cache"

# --- The daemon: snapshots on time while the server hangs, named once it answers ---
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib_daemon.sh"
: >"$T/empty.conf"
bg "$T/bin/inline_chain" 120
BURNER=$BG_PID
wait_comm "$BURNER" inline_chain
kill -STOP "$SRV"
DAEMON_ENV=(DEBUGINFOD_URLS="http://127.0.0.1:$PORT" DEBUGINFOD_CACHE_PATH="$T/cache-daemon")
start_daemon daemon --config "$T/empty.conf" --interval 1s --output-dir "$T/snaps" --formats folded \
	--targets "$BURNER"
# Its snapshots come every second while the fetch hangs (it never waits):
# three within 15 s, all of them named by the file.
wait_until 15 "three snapshots while the debuginfod server hangs" nsnap_at_least "$T/snaps" 3
for f in $(snapshots "$T/snaps" | head -n 3); do
	! grep -q inline_outer "$T/snaps/$f.folded" || fail "daemon: $f named inline_outer while the server hung"
	grep -q ';\[inline_chain\] ' "$T/snaps/$f.folded" || fail "daemon: $f has no [inline_chain] frame"
done
kill -CONT "$SRV"
# Once the server answers, a later snapshot has the functions and their inlined frames.
# shellcheck disable=SC2317 # called through wait_until
named() {
	local f
	for f in $(snapshots "$T/snaps"); do
		grep -Eq "$WHOLE_LINE" "$T/snaps/$f.folded" && return 0
	done
	return 1
}
WHOLE_LINE=';main;inline_outer;inline_a_\[i\];inline_b_\[i\];inline_c_\[i\] [0-9]+$'
wait_until 60 "a snapshot named with the fetched debug info" named
note "daemon: $(nsnap "$T/snaps") snapshots, the first ones by file, later ones named"
stop_daemon TERM
[[ $DRC -eq 0 ]] || fail "the daemon exited $DRC"
kill "$BURNER"

pass "debuginfod: fetched by build-id with inlined frames, nothing without it, a hung or cut server bounded, the daemon never waits"
