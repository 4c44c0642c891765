#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Low limits: flamed raises what it may, and otherwise stops with one line
# that names the limit and what it needs; never a quietly partial profile.
#  - RLIMIT_NOFILE too low (soft and hard): one line naming RLIMIT_NOFILE and
#    the number needed, exit 1, no output;
#  - a low soft limit under a high hard one: raised, a whole profile;
#  - -p on a process with 1,000 threads under a limit of 128 fds: every
#    thread's samples (events are per CPU, not per thread);
#  - RLIMIT_MEMLOCK of 64 KiB: BPF, ring buffer and DWARF recordings work
#    (this kernel charges BPF maps to memory cgroups, and root's rings are
#    not limited) or say why not.
# shellcheck source-path=SCRIPTDIR disable=SC2016 # bash -c scripts get their arguments as $0, $1...
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

bg "$FIXTURES/chains" 20
wait_comm "$BG_PID" chains

# --- RLIMIT_NOFILE below what flamed needs --------------------------------------
run_cmd nofile bash -c 'ulimit -n 32 && exec "$0" record -a -d 1 -o "$1"' "$FLAMED" "$T/nofile.folded"
[[ $RC -eq 1 ]] || fail "RLIMIT_NOFILE 32: exit $RC, expected 1"
[[ $(wc -l <"$LAST_ERR") -eq 1 ]] || fail "RLIMIT_NOFILE 32: not one line on stderr: $(cat "$LAST_ERR")"
grep -qE '^flamed: RLIMIT_NOFILE is 32 .*needs at least [0-9]+' "$LAST_ERR" ||
	fail "RLIMIT_NOFILE 32: the line does not name the limit and the number needed: $(cat "$LAST_ERR")"
[[ ! -e $T/nofile.folded ]] || fail "RLIMIT_NOFILE 32: an output file was written"
need=$(sed -nE 's/.*needs at least ([0-9]+).*/\1/p' "$LAST_ERR")
note "RLIMIT_NOFILE 32: refused, needs $need"

# The number it names is enough: a whole profile at exactly that limit.
run_cmd nofile_need bash -c 'ulimit -n "$2" && exec "$0" record -a -d 2 -o "$1"' "$FLAMED" "$T/need.folded" "$need"
expect_rc 0
check_folded "$T/need.folded"
# Nothing fell back or went missing for want of an fd: no warning (kallsyms
# unreadable would be one), BPF used, user frames named, no kernel frame left
# unnamed (a 2 s window may hold no kernel sample at all).
# (Not the line on names holding ';' that "cannot split or forge a line":
# other processes on the machine, such as the hostile test's, have them.)
warned=$(grep -vE '^flamed: [0-9]+ process or function names held ' "$LAST_ERR" | grep -iE 'warning|cannot|unavailable' | head -3 || true)
[[ -z $warned ]] || fail "RLIMIT_NOFILE $need: $warned"
grep -q 'bpf backend' "$LAST_ERR" || fail "RLIMIT_NOFILE $need: not the BPF backend: $(head -n 1 "$LAST_ERR")"
grep -q "$CHAIN_A" "$T/need.folded" || fail "RLIMIT_NOFILE $need: chains is not named"
! grep -q '\[kernel\]_\[k\]' "$T/need.folded" || fail "RLIMIT_NOFILE $need: kernel frames unnamed ([kernel])"
note "RLIMIT_NOFILE $need: BPF, no warning, user frames named, no [kernel] frame"

# A low soft limit is raised to the hard one.
run_cmd nofile_soft bash -c 'ulimit -Sn 16 && exec "$0" record -a -d 1 -o "$1"' "$FLAMED" "$T/soft.folded"
expect_rc 0
grep -q "$CHAIN_A" "$T/soft.folded" || fail "soft RLIMIT_NOFILE 16: chains is not named"

# --- -p on a process with 1,000 threads ------------------------------------------
# Long enough that the recording sees them all: 1000 runnable threads on a
# few CPUs take seconds to each get their first slice. Niced: flamed is one
# runnable thread among a thousand otherwise, and waits seconds for each slice.
nice -n 19 "$FIXTURES/many_threads" 1000 30 >"$T/threads.out" &
mt=$!
BG_PIDS+=("$mt")
for ((i = 0; i < 300; i++)); do
	grep -qx ready "$T/threads.out" && break
	sleep 0.05
done
grep -qx ready "$T/threads.out" || fail "many_threads did not start its threads"
# Recorded until they used 4 s of CPU (4000 samples), however busy the machine.
FLAMED_WRAP=(bash -c 'ulimit -n 128 && exec "$@"' -)
record_for_cpu threads "$mt" 4 record -v -F 999 -p "$mt" --per-thread -o "$T/threads.folded"
FLAMED_WRAP=()
grep -q '^flamed: [0-9]* samples, .*(interrupted, ' "$LAST_ERR" ||
	fail "-p with 1000 threads: the recording ended early: $(grep '^flamed: [0-9]* samples' "$LAST_ERR")"
threads=$(awk -F';' '/;thread_burn/ { split($1, a, "/"); seen[a[2]] = 1 } END { print length(seen) }' "$T/threads.folded")
note "-p with 1000 threads under RLIMIT_NOFILE 128: samples of $threads threads in thread_burn"
expect_samples_of_cpu "$(total_count "$T/threads.folded")" 999 "$CPU_USED" "1000 threads under RLIMIT_NOFILE 128"
((threads >= 500)) || fail "only $threads of the 1000 threads have samples: a partial profile"
kill "$mt" 2>/dev/null || true
wait "$mt" 2>/dev/null || true

# --- RLIMIT_MEMLOCK 64 KiB -------------------------------------------------------
bg "$FIXTURES/chains" 10
wait_comm "$BG_PID" chains
for mode in bpf ring dwarf; do
	case $mode in
	bpf) args=() ;;
	ring) args=(--no-bpf) ;;
	dwarf) args=(--call-graph dwarf) ;;
	esac
	run_cmd "memlock_$mode" bash -c 'ulimit -l 64 && exec "$0" record "$@"' "$FLAMED" -a -d 1 "${args[@]}" -o "$T/memlock_$mode.folded"
	if [[ $RC -ne 0 ]]; then
		if ! grep -qi 'memlock\|locked' "$LAST_ERR"; then
			fail "RLIMIT_MEMLOCK 64 KiB, $mode: exit $RC without a line naming the limit: $(cat "$LAST_ERR")"
		fi
		note "RLIMIT_MEMLOCK 64 KiB, $mode: refused with a clear line"
	else
		grep -q "$CHAIN_A" "$T/memlock_$mode.folded" || fail "RLIMIT_MEMLOCK 64 KiB, $mode: chains is not named"
		note "RLIMIT_MEMLOCK 64 KiB, $mode: a whole profile"
	fi
done

# --- caps: processes tracked, the symbol cache -------------------------------------
# Four processes tracked of a whole machine's: the rest counted and reported.
run_flamed maxproc record -a -d 1 --max-processes 4 -o "$T/maxproc.folded"
expect_rc 0
grep -q 'processes not tracked, --max-processes (4) being reached' "$LAST_ERR" ||
	fail "--max-processes 4 on -a: not reported: $(cat "$LAST_ERR")"
note "$(grep 'processes not tracked' "$LAST_ERR")"
# A 1 MiB symbol cache: a recording still works; files met once it is full are
# named by file and counted (unit/test_symbolizer checks which, exactly: here
# it depends on the files' sizes, libc's debug symbols, and their order).
run_flamed cache record -v --max-symbol-cache 1M -F 999 -o "$T/cache.folded" -- "$FIXTURES/chains" 1
expect_rc 0
check_folded "$T/cache.folded"
note "--max-symbol-cache 1M: $(grep '^flamed: symbol cache:' "$LAST_ERR" || echo 'no line')"
grep -q '^flamed: symbol cache:' "$LAST_ERR" || fail "--max-symbol-cache 1M: the cache is not reported"
run_flamed cache_bad record --max-symbol-cache 12 -a -d 1 -o "$T/bad.folded"
expect_rc 2
grep -q 'invalid --max-symbol-cache: "12" is out of range (1M-1024G)' "$LAST_ERR" || fail "--max-symbol-cache 12: $(head -n 1 "$LAST_ERR")"

pass "RLIMIT_NOFILE: refused in one line below $need, raised from a low soft limit; 1000 threads under 128 fds; RLIMIT_MEMLOCK 64 KiB; --max-processes and --max-symbol-cache reported"
