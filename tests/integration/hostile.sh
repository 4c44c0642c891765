#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What profiled programs control cannot escape into flamed's output, a shell
# or a crash:
#  - a process named "ev;il\nx 9\r" running a function whose ELF symbol is
#    "evil;name\nforged;line 999\r" can neither split nor forge folded lines:
#    every line is "STACK COUNT", the counts sum to the samples, the names
#    are there with ':' and '?' in place, the summary counts them, the SVG
#    is well-formed;
#  - flamed runs no program (strace -f: no execve but its own) while it
#    profiles binaries under paths like ";touch${IFS}FILE;" and "$(touch FILE)";
#  - a library truncated while it runs (its process then dies of SIGBUS) is
#    read without a SIGBUS in flamed, in the default mode and with
#    --call-graph dwarf (-p and -a), where the unwinder reads the library's
#    CFI: flamed exits 0, writes its output, leaves no temporary file, and
#    its profile holds every sample its summary counts.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

EVIL=$T/evil
cp "$FIXTURES/evil_names" "$EVIL"
# The assembler keeps \n and \r of the quoted symbol as two bytes each: make
# them the control bytes (same length, nothing moves).
perl -0777 -pi -e 's/evil;name\\nforged;line 999\\r/evil;name\nnforged;line 999\rr/g' "$EVIL"
grep -qaF "$(printf 'evil;name\nnforged')" "$EVIL" || fail "could not put a newline into the symbol of $EVIL"

# --- names --------------------------------------------------------------------
# 1 s of its own CPU (tests/fixtures/progs/work.h): its start-up, named
# otherwise, stays a small share however busy the machine.
FIXTURE_CLOCK=cpu run_flamed names record -F 999 -o "$T/names.folded" -- "$EVIL" 1
expect_rc 0
samples=$(summary_samples "$T/names.err")
# Lines: as many as newlines, each "STACK COUNT" with no control byte in it.
bad=$(LC_ALL=C awk '!/^[^\001-\037\177]+ [0-9]+$/ { n++ } END { print n + 0 }' "$T/names.folded")
[[ $bad -eq 0 ]] || fail "$bad lines of $T/names.folded are not 'STACK COUNT' without control bytes: $(cat -A "$T/names.folded" | head -5)"
[[ $(tr -d -c '\r' <"$T/names.folded" | wc -c) -eq 0 ]] || fail "a carriage return reached $T/names.folded"
sum=$(awk '{ s += $NF } END { print s + 0 }' "$T/names.folded")
[[ $sum -eq $samples ]] || fail "the counts sum to $sum, the summary says $samples samples: a line was split or forged"
hot=$(awk -v F='ev:il?x_9?;' 'index($0, F) == 1 && index($0, ";evil:name?nforged:line 999?r") { s += $NF } END { print s + 0 }' "$T/names.folded")
note "names: $hot of $samples samples under ev:il?x_9?;...;evil:name?nforged:line 999?r"
expect_between "$(percent "$hot" "$samples")" 80 100 "the share of samples named with the sanitized process and function names"
grep -q "names held ';' or control characters" "$T/names.err" || fail "the summary does not count the names it had to change"
# A 1510-byte function name: cut to the 1023 bytes a frame may hold, and said so.
long=$(awk '{ n = split($0, f, ";"); for (i = 1; i <= n; i++) if (index(f[i], "evil_long_") == 1) { print length(f[i]); exit } }' "$T/names.folded")
[[ ${long:-0} -eq 1023 ]] || fail "the 1510-byte function name is ${long:-missing} bytes in the profile, not 1023"
grep -q 'frame names longer than 1023 bytes were cut' "$T/names.err" || fail "the summary does not say a name was cut"
run_flamed names_svg record -F 999 -o "$T/names.svg" -- "$EVIL" 0.5
expect_rc 0
if command -v xmllint >/dev/null; then
	xmllint --noout "$T/names.svg" 2>"$T/xmllint.err" || fail "names.svg is not well-formed: $(head -n 3 "$T/xmllint.err")"
fi
[[ $(tr -d -c '\r' <"$T/names.svg" | wc -c) -eq 0 ]] || fail "a carriage return reached names.svg"
grep -q 'evil:name?nforged:line 999?r' "$T/names.svg" || fail "names.svg does not name the function"

# --- no program run, whatever the paths say ------------------------------------
command -v strace >/dev/null || skip "strace is not installed (Debian: strace): names checked, the no-exec check not run"
# The commands in the names are relative: flamed runs in $T, where they would land.
# shellcheck disable=SC2016 # the $(...), `...` and ${IFS} are meant literally
HOSTILE_DIR=$T/';touch${IFS}pwned1;'
# shellcheck disable=SC2016
HOSTILE_BIN=$HOSTILE_DIR/'$(touch pwned2)`touch pwned3`'
mkdir -p "$HOSTILE_DIR"
cp "$FIXTURES/short_burn" "$HOSTILE_BIN"
"$HOSTILE_BIN" 3 >/dev/null &
hostile_pid=$!
BG_PIDS+=("$hostile_pid")
LAST_ERR=$T/strace.err
# LeakSanitizer cannot run under ptrace (packaging/sanitize.sh): no leak check here.
(cd "$T" && ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -qq -e trace=execve,execveat -o "$T/strace.out" \
	"$FLAMED" record -a -d 2 -o "$T/hostile.folded" >"$T/strace.stdout" 2>"$LAST_ERR") ||
	fail "flamed under strace failed"
wait "$hostile_pid" || true
execs=$(grep -cE 'execve(at)?\(' "$T/strace.out" || true)
[[ $execs -eq 1 ]] || fail "flamed ran $((execs - 1)) program(s): $(grep -E 'execve(at)?\(' "$T/strace.out" | tail -n +2 | head -3)"
for f in pwned1 pwned2 pwned3; do
	[[ ! -e $T/$f ]] || fail "$T/$f exists: a path reached a shell"
done
grep -q 'short_hot' "$T/hostile.folded" || fail "the binary under a hostile path was not named: $(head -3 "$T/hostile.folded")"
note "strace: one execve (flamed's own), no pwned file, short_hot named under the hostile path"

# --- a library truncated while it runs -------------------------------------------
# (A running executable cannot be written: ETXTBSY. Its libraries can.)
mkdir "$T/trunc"
cp "$FIXTURES/nofp_callback" "$FIXTURES/libnofp_cb.so" "$T/trunc/"
# It burns 4 s of its own CPU (tests/fixtures/progs/work.h), frozen until
# flamed samples it: the library is truncated while it is recorded, after a
# second of use, however long a busy machine takes to start flamed.
FIXTURE_CLOCK=cpu "$T/trunc/nofp_callback" 4 >/dev/null 2>&1 &
victim=$!
BG_PIDS+=("$victim")
wait_comm "$victim" nofp_callback
freeze "$victim"
bg_flamed trunc record -v -p "$victim" -d 3 -o "$T/trunc.folded"
wait_sampling trunc
thaw "$victim"
sleep 1
truncate -s 4096 "$T/trunc/libnofp_cb.so"
set +e
wait "$FLAMED_PID"
rc=$?
wait "$victim"
vrc=$?
set -e
note "truncated library: flamed exit $rc, the profiled process exit $vrc (135: SIGBUS)"
LAST_ERR=$T/trunc.err
[[ $rc -eq 0 ]] || fail "flamed exited $rc after the profiled library was truncated"
check_folded "$T/trunc.folded"

# --- ... and under the DWARF unwinder --------------------------------------------
# Each callback lasts 30 s: the library's frames stay on the stack after the
# truncation (the process dies only when it returns into the library), so
# flamed keeps unwinding through them. The truncation comes 2 s in, after the
# unwinder has read the library: a build that maps it dies of SIGBUS then.
dwarf_truncated() {
	local name=$1 dir=$T/$1 victim fpid rc samples sum hot
	shift
	mkdir "$dir"
	cp "$FIXTURES/nofp_callback" "$FIXTURES/libnofp_cb.so" "$dir/"
	"$dir/nofp_callback" 30 30 >/dev/null 2>&1 &
	victim=$!
	BG_PIDS+=("$victim")
	wait_comm "$victim" nofp_callback
	[[ $1 == -p ]] && set -- -p "$victim"
	"$FLAMED" record -F 999 --call-graph dwarf "$@" -d 4 -o "$dir/out.folded" \
		>/dev/null 2>"$T/$name.err" &
	fpid=$!
	sleep 2
	truncate -s 0 "$dir/libnofp_cb.so"
	rc=0
	wait "$fpid" || rc=$?
	kill "$victim" 2>/dev/null || true
	wait "$victim" 2>/dev/null || true
	LAST_ERR=$T/$name.err
	[[ $rc -eq 0 ]] || fail "$name: flamed --call-graph dwarf $* exited $rc after the library was truncated (138/135: SIGBUS)"
	check_folded "$dir/out.folded"
	[[ -z $(find "$dir" -name 'out.folded.*') ]] || fail "$name: a temporary output file was left: $(ls "$dir")"
	samples=$(summary_samples "$T/$name.err")
	sum=$(total_count "$dir/out.folded")
	[[ $sum -eq $samples ]] || fail "$name: the profile holds $sum samples, the summary says $samples"
	hot=$(count_matching "$dir/out.folded" ';nofp_cb;nofp_burn')
	# With -a on a busy machine, others' processes may take the samples.
	[[ $hot -gt 0 || $1 != -p ]] || fail "$name: no sample of nofp_cb;nofp_burn: $(head -3 "$dir/out.folded")"
	note "$name: exit 0, $samples samples, all in the profile, $hot in nofp_cb;nofp_burn"
}
dwarf_truncated dwarf_p1 -p
dwarf_truncated dwarf_p2 -p
dwarf_truncated dwarf_a -a
pass "hostile names neither split nor forge lines; no program run for hostile paths; a truncated library read safely, by the unwinder too"
