#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed record --call-graph dwarf`: programs and a shared library built
# without frame pointers give their whole chains (and with frame pointers
# they do not: why DWARF mode exists); the outcome of every unwinding is
# reported; a short stack copy marks the stacks it cut; bad sizes are refused.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

readonly NOFP_CHAIN=';main;nofp_1;nofp_2;nofp_3;nofp_4;nofp_5;nofp_6;nofp_7;nofp_8;nofp_burn' \
	NOFP_CB=';main;nofp_lib_iterate;nofp_lib_outer;nofp_lib_inner;nofp_cb;nofp_burn'

# share FILE CHAIN: percent of all samples whose stack has CHAIN.
share() {
	percent "$(count_matching "$1" "$2")" "$(total_count "$1")"
}

# The fixtures burn their seconds of CPU however busy the machine (work.h):
# start-up and exit, which have no whole chain, stay a small share.
FIXTURE_CLOCK=cpu run_flamed dwarf record -F 999 --call-graph dwarf -o "$T/dwarf.folded" -- "$FIXTURES/nofp_chain" 2
expect_rc 0
check_folded "$T/dwarf.folded"
s=$(share "$T/dwarf.folded" "$NOFP_CHAIN")
note "--call-graph dwarf: $s% of the samples have the whole chain"
expect_between "$s" 95 100 "the share of nofp_chain samples with main and all 8 functions (dwarf)"
grep -q "ring buffer backend" "$T/dwarf.err" || fail "dwarf mode should use the ring buffer: $(cat "$T/dwarf.err")"
grep -Eq "DWARF unwinding of [0-9]+ user stacks: (9[5-9]|100)\.[0-9]% complete" "$T/dwarf.err" ||
	fail "no DWARF outcome line with >= 95% complete: $(grep DWARF "$T/dwarf.err")"

# The same program with frame pointers: callers vanish.
FIXTURE_CLOCK=cpu run_flamed fp record -F 999 --call-graph fp -o "$T/fp.folded" -- "$FIXTURES/nofp_chain" 1
expect_rc 0
s=$(share "$T/fp.folded" "$NOFP_CHAIN")
note "frame pointers: $s% of the samples have the whole chain"
expect_between "$s" 0 5 "the share of whole chains with frame pointers (code without them)"

# A callback called from inside a shared library built without frame pointers.
FIXTURE_CLOCK=cpu run_flamed lib record -F 999 --call-graph dwarf -o "$T/lib.folded" -- "$FIXTURES/nofp_callback" 2
expect_rc 0
s=$(share "$T/lib.folded" "$NOFP_CB")
note "through libnofp_cb.so: $s%"
expect_between "$s" 95 100 "the share of nofp_callback samples with the chain through the library"

# A copy too short for the chain: the stacks it cut end in a marker, and the summary says so.
FIXTURE_CLOCK=cpu run_flamed short record -F 999 --call-graph dwarf,256 -o "$T/short.folded" -- "$FIXTURES/nofp_chain" 1
expect_rc 0
cut=$(count_matching "$T/short.folded" ";[stack copy ended];")
note "dwarf,256: $cut samples cut"
[[ $cut -gt 0 ]] || fail "a 256-byte stack copy cut no stack (nofp_8 alone has a 528-byte frame)"
grep -q "cut where the 256-byte stack copy ended (a bigger --call-graph dwarf,SIZE copies more)" "$T/short.err" ||
	fail "the summary does not report the cut stacks: $(grep DWARF "$T/short.err")"

# -p works the same way. (The -p targets burn CPU seconds, frozen until
# flamed samples them: a busy machine neither ends nor starves them first.)
FIXTURE_CLOCK=cpu bg "$FIXTURES/nofp_chain" 4
wait_comm "$BG_PID" nofp_chain
record_frozen pid "$BG_PID" -F 999 --call-graph dwarf -d 1 -o "$T/pid.folded"
expect_between "$(share "$T/pid.folded" "$NOFP_CHAIN")" 95 100 "-p --call-graph dwarf whole chains"

# A binary deleted while it runs is still unwound and named: its CFI and its
# symbols are read through /proc/PID/map_files (the file flamed holds open).
cp "$FIXTURES/nofp_chain" "$T/victim"
FIXTURE_CLOCK=cpu bg "$T/victim" 4
wait_comm "$BG_PID" victim
rm "$T/victim"
record_frozen deleted "$BG_PID" -F 999 --call-graph dwarf -d 1 -o "$T/deleted.folded"
expect_between "$(share "$T/deleted.folded" "$NOFP_CHAIN")" 95 100 \
	"the share of a deleted binary's samples with the whole chain, named"

# Mappings that change while recorded: a library dlopen()ed, used and
# dlclose()d, code run after it, then an exec of another program in the same
# process; every phase unwinds whole and is named.
# Phases of CPU time, not wall time: a load that changes between them would
# change their shares (tests/fixtures/progs/work.h).
FIXTURE_CLOCK=cpu run_flamed dlopen record -F 999 --call-graph dwarf -o "$T/dlopen.folded" -- \
	"$FIXTURES/nofp_dlopen" 2 --then "$FIXTURES/nofp_chain" 1
expect_rc 0
in_lib=$(share "$T/dlopen.folded" ';main;nofp_lib_iterate;nofp_lib_outer;nofp_lib_inner;nofp_cb;nofp_burn')
after=$(share "$T/dlopen.folded" ';main;nofp_after;nofp_burn')
execd=$(share "$T/dlopen.folded" "$NOFP_CHAIN")
note "dlopen: library $in_lib%, after dlclose $after%, after exec $execd% (of all samples)"
# Each phase is about a third of the run (start-up and exit take some of it).
expect_between "$in_lib" 15 50 "the share in the dlopen()ed library"
expect_between "$after" 15 50 "the share after dlclose"
expect_between "$execd" 15 50 "the share of the exec'd program's whole chains"
expect_between "$(percent "$(count_matching "$T/dlopen.folded" "$NOFP_CHAIN")" \
	"$(count_matching "$T/dlopen.folded" "nofp_chain;")")" 95 100 "the exec'd program's samples in its whole chain"

# Short-lived processes spend much of their time in ld.so's start-up code,
# whose entry (RTLD_START) has no CFI: it is the outermost frame, not a
# failure. And samples inside execve() carry the old image's registers with
# the new image's memory: they have no user stack (not a failed unwinding).
run_flamed execs record -F 999 --call-graph dwarf -o "$T/execs.folded" -- \
	bash -c 'for i in $(seq 300); do /bin/true; ls / >/dev/null; done'
expect_rc 0
failed=$(sed -n 's/.*% cut where .*, \([0-9.]*\)% failed.*/\1/p' "$T/execs.err")
note "exec-heavy command: $failed% of unwindings failed"
expect_between "$failed" 0 2 "the share of failed unwindings for exec-heavy work"

# Sizes perf would refuse, and modes there are not.
for bad in dwarf,0 dwarf,70000 dwarf,x lbr dwarf16; do
	run_flamed bad record --call-graph "$bad" -a -d 1 -o "$T/bad.folded"
	expect_rc 2
	grep -q "invalid --call-graph" "$T/bad.err" || fail "--call-graph $bad: $(cat "$T/bad.err")"
done

pass "--call-graph dwarf: whole chains without frame pointers (program and library), outcomes reported"
