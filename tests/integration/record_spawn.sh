#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Starting processes, as shells and builds do all day, in the default mode
# (kernel-dwarf) on a program without frame pointers (nofp_spawn.c):
#  - vfork: glibc's __vfork keeps its return address in rdi around the
#    system call. Its samples (the parent in the kernel's fork work, the
#    child on its way back) go on to main, here and with --call-graph dwarf.
#  - posix_spawn: glibc's clone3 ends its CFI before the syscall
#    instruction. The parent's samples there go on to main, here and with
#    --call-graph dwarf.
#  - fork and exec: past execve()'s point of no return the old image is
#    gone; those samples have no user stack, never [unwind failed] or a
#    frame made up from the old registers (with --call-graph dwarf too).
# Each was [unwind failed] (or [unknown]) before: under every exec and
# vfork of a build's profile.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
need_bpf

# Kernel frames after the leaf: any number of them.
readonly K='(;[^;]*_\[k\])*$'

# both_re FILE ERE1 ERE2: count_re's sum, for the lines matching both.
both_re() {
	RE1=$2 RE2=$3 awk '{
		s = $0; sub(/ [0-9]+$/, "", s)
		if (s ~ ENVIRON["RE1"] && s ~ ENVIRON["RE2"]) n += $NF
	} END { printf "%.0f\n", n }' "$1"
}

# record MODE [FLAMED ARGS...]: records nofp_spawn MODE for 3 s at 999 Hz into $T/MODE.folded.
record() {
	local mode=$1 name=$1
	shift
	[[ $# -eq 0 ]] || name=$mode-dwarf
	TIMEOUT=60 run_flamed "$name" record -F 999 "$@" -o "$T/$name.folded" -- "$FIXTURES/nofp_spawn" "$mode" 3
	expect_rc 0
	check_folded "$T/$name.folded"
	FOLDED=$T/$name.folded
}

# expect_whole WHAT ALL WHOLE MIN_ALL MIN_SHARE: of ALL samples, WHOLE go on
# to main; ALL at least MIN_ALL, the share at least MIN_SHARE %.
expect_whole() {
	local share
	[[ $2 -ge $4 ]] || fail "$1: only $2 samples (expected >= $4): $(sort -t' ' -k2 -rn "$FOLDED" | head -n 3)"
	share=$(percent "$3" "$2")
	note "$1: $3 of $2 samples on to main ($share%)"
	expect_between "$share" "$5" 100 "$1: the share going on to main (%)"
}

# --- vfork ---------------------------------------------------------------------
record vfork
grep -q 'call graph kernel-dwarf' "$LAST_ERR" ||
	skip "no kernel-dwarf here: $(grep -m 1 'samples,' "$LAST_ERR")"
expect_whole "vfork" "$(count_re "$FOLDED" ";__vfork$K")" \
	"$(count_re "$FOLDED" ";main;nofp_spawn_vfork;__vfork$K")" 30 95
record vfork --call-graph dwarf
expect_whole "vfork, --call-graph dwarf" "$(count_re "$FOLDED" ";__vfork$K")" \
	"$(count_re "$FOLDED" ";main;nofp_spawn_vfork;__vfork$K")" 30 90

# --- posix_spawn ---------------------------------------------------------------
# The parent's samples in clone3, a frame before it; not the child's (clone3
# is its outermost frame, the first after the command's name).
record spawn
expect_whole "posix_spawn's clone3" "$(count_re "$FOLDED" ";[^;]+;clone3$K")" \
	"$(count_re "$FOLDED" ";main;nofp_spawn_posix;posix_spawn;([^;]+;)*clone3$K")" 20 90
record spawn --call-graph dwarf
expect_whole "posix_spawn's clone3, --call-graph dwarf" "$(count_re "$FOLDED" ";[^;]+;clone3$K")" \
	"$(count_re "$FOLDED" ";main;nofp_spawn_posix;posix_spawn;([^;]+;)*clone3$K")" 20 90

# --- fork and exec -------------------------------------------------------------
# The samples in execve()'s loading of the new image: before the point of no
# return the old image's stack (to main), after it none.
# expect_exec WHAT: the samples of $FOLDED loading the new image.
expect_exec() {
	local all bad none
	all=$(count_re "$FOLDED" ";load_elf_binary_\\[k\\]")
	bad=$(both_re "$FOLDED" ";load_elf_binary_\\[k\\]" "\\[unwind failed\\]|\\[unknown\\]|\\[stack copy ended\\]")
	none=$(count_re "$FOLDED" "^[^;]*(;[^;]*_\\[k\\])*;load_elf_binary_\\[k\\]")
	note "$1: $all samples loading the new image, $none of them without a user stack, $bad [unwind failed], [unknown] or [stack copy ended]"
	[[ $all -ge 30 ]] || fail "$1: only $all samples in load_elf_binary (expected >= 30)"
	[[ $none -ge 1 ]] || fail "$1: no sample past the point of no return (without a user stack)"
	expect_between "$(percent "$bad" "$all")" 0 3 "$1: the share of [unwind failed], [unknown] or [stack copy ended] (%)"
}
record exec
expect_exec exec
# The stack copy of a sample past the point of no return is of the new
# memory, where the old stack pointer points at nothing.
record exec --call-graph dwarf
expect_exec "exec, --call-graph dwarf"

pass "vfork, posix_spawn and exec unwound"
