#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every sample is named with the mappings its process had when it was taken,
# even where the same address means other code later on: after an exec of a
# program loaded at the same fixed address (hist_exec_a, then hist_exec_b),
# and after dlclose() of a library and dlopen() of another one put where it
# was (hist_dlopen: libhist_one.so, then libhist_two.so). Named with the
# mappings the process ended with, the first half of each run would take the
# second half's names: hist_a_hot and hist_one_hot would vanish, and
# hist_b_hot would show up under hist_exec_a, hist_two_hot under hist_run_one.
# For the BPF backend, the ring buffer (--no-bpf) and --call-graph dwarf.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
# binutils built the fixtures, so these are there; without them the premise is unchecked.
command -v nm >/dev/null || fail "needs nm (binutils) to check that the fixtures' hot functions overlap"
command -v readelf >/dev/null || fail "needs readelf (binutils) to check that hist_exec_a/b are not PIEs"

# sym_range FILE SYMBOL: sets SYM_START and SYM_END to where SYMBOL is in FILE's symbol table.
sym_range() {
	local start size
	read -r start size < <(nm -S --defined-only "$1" | awk -v s="$2" '$4 == s { print $1, $2; exit }') ||
		fail "no symbol $2 with a size in $1 (nm -S)"
	SYM_START=$((16#$start))
	SYM_END=$((16#$start + 16#$size))
}

# expect_overlap FILE_A SYM_A FILE_B SYM_B: the two functions share addresses.
expect_overlap() {
	local a0 a1
	sym_range "$1" "$2"
	a0=$SYM_START a1=$SYM_END
	sym_range "$3" "$4"
	note "$2 at [$(printf %#x "$a0"), $(printf %#x "$a1")), $4 at [$(printf %#x "$SYM_START"), $(printf %#x "$SYM_END"))"
	[[ $a0 -lt $SYM_END && $SYM_START -lt $a1 ]] ||
		fail "$2 ($1) and $4 ($3) do not overlap: the fixtures no longer test address reuse"
}

# leaf_count FILE ROOT CHAIN: the samples under root frame ROOT whose user
# frames (those without _[k]) end with the frames CHAIN ("f;g").
leaf_count() {
	awk -v root="$2" -v chain=";$3" '{
		s = $0; sub(/ [0-9]+$/, "", s)
		n = split(s, f, ";"); u = f[1]
		for (i = 2; i <= n && f[i] !~ /_\[k\]$/; i++) u = u ";" f[i]
		if (f[1] == root && substr(u, length(u) - length(chain) + 1) == chain) c += $NF
	} END { printf "%.0f\n", c }' "$1"
}

# frame_count FILE ROOT FRAMES: the samples under root frame ROOT whose stack
# has the frames FRAMES ("f" or "f;g"), one after the other.
frame_count() {
	awk -v root="$2" -v want=";$3;" '{
		s = $0; sub(/ [0-9]+$/, "", s)
		split(s, f, ";")
		if (f[1] == root && index(s ";", want)) c += $NF
	} END { printf "%.0f\n", c }' "$1"
}

# Checks that fail are gathered, so that one run shows every mode's outcome.
PROBLEMS=()
problem() {
	echo "-- PROBLEM: $*"
	PROBLEMS+=("$*")
}

# expect_share NAME PART WHOLE WHAT: PART is 25 to 75 % of WHOLE (each half of the run is about 50 %).
expect_share() {
	local s
	s=$(percent "$2" "$3")
	note "$1: $4: $2 of $3 samples ($s%)"
	awk -v v="$s" 'BEGIN { exit !(v >= 25 && v <= 75) }' || problem "$1: $4 is $s% of the samples, outside [25, 75]"
}

# expect_none NAME COUNT WHAT
expect_none() {
	[[ $2 -eq 0 ]] || problem "$1: $2 samples of $3"
}

# record NAME MODE CMD [ARGS...]: records CMD in MODE (bpf, ring or dwarf) into $T/NAME.folded.
record() {
	local name=$1 mode=$2 args=()
	shift 2
	case $mode in
	bpf) ;;
	ring) args=(--no-bpf) ;;
	dwarf) args=(--call-graph dwarf) ;;
	*) fail "no mode $mode" ;;
	esac
	# Each half burns its second of CPU: the halves stay halves however the
	# machine's load changes in between (tests/fixtures/progs/work.h).
	FIXTURE_CLOCK=cpu run_flamed "$name" record -F 999 "${args[@]}" -o "$T/$name.folded" -- "$@"
	expect_rc 0
	! grep -q 'address not reused' "$T/$name.err" ||
		fail "$name: address not reused: $(grep 'hist_dlopen:' "$T/$name.err" | tr '\n' ' ')"
	check_folded "$T/$name.folded"
	[[ $mode == bpf ]] || grep -q "ring buffer backend" "$T/$name.err" ||
		fail "$name: not recorded through the ring buffer: $(cat "$T/$name.err")"
}

# --- the premises: the same addresses hold other code in the second half ---
[[ $(readelf -h "$FIXTURES/hist_exec_a") == *"EXEC (Executable file)"* &&
	$(readelf -h "$FIXTURES/hist_exec_b") == *"EXEC (Executable file)"* ]] ||
	fail "hist_exec_a or hist_exec_b is a PIE: they must load at the same fixed address"
expect_overlap "$FIXTURES/hist_exec_a" hist_a_hot "$FIXTURES/hist_exec_b" hist_b_hot
expect_overlap "$FIXTURES/libhist_one.so" hist_one_hot "$FIXTURES/libhist_two.so" hist_two_hot
# Whether the kernel puts libhist_two.so where libhist_one.so was: exit 3 when not.
run_cmd reuse "$FIXTURES/hist_dlopen" 0.01
[[ $RC -ne 3 ]] || fail "address not reused: $(tr '\n' ' ' <"$T/reuse.err")"
expect_rc 0
note "$(tr '\n' ' ' <"$T/reuse.err")"

for mode in bpf ring dwarf; do
	# hist_exec_a burns 1 s, execs hist_exec_b, which burns 1 s: the comm says which one ran.
	f=$T/exec-$mode.folded
	record "exec-$mode" "$mode" "$FIXTURES/hist_exec_a" 1 1
	all=$(total_count "$f")
	expect_share "exec-$mode" "$(leaf_count "$f" hist_exec_a 'main;hist_a_hot')" "$all" \
		"hist_exec_a;...;main;hist_a_hot"
	expect_share "exec-$mode" "$(leaf_count "$f" hist_exec_b 'main;hist_b_hot')" "$all" \
		"hist_exec_b;...;main;hist_b_hot"
	expect_none "exec-$mode" "$(frame_count "$f" hist_exec_a hist_b_hot)" "hist_b_hot under hist_exec_a"
	expect_none "exec-$mode" "$(frame_count "$f" hist_exec_b hist_a_hot)" "hist_a_hot under hist_exec_b"

	# hist_dlopen burns 1 s in each library: the caller in the program says which.
	f=$T/dlopen-$mode.folded
	record "dlopen-$mode" "$mode" "$FIXTURES/hist_dlopen" 1
	all=$(total_count "$f")
	expect_share "dlopen-$mode" "$(leaf_count "$f" hist_dlopen 'main;hist_run_one;hist_one_hot')" "$all" \
		"main;hist_run_one;hist_one_hot"
	expect_share "dlopen-$mode" "$(leaf_count "$f" hist_dlopen 'main;hist_run_two;hist_two_hot')" "$all" \
		"main;hist_run_two;hist_two_hot"
	expect_none "dlopen-$mode" "$(frame_count "$f" hist_dlopen 'hist_run_one;hist_two_hot')" \
		"hist_two_hot called from hist_run_one"
	expect_none "dlopen-$mode" "$(frame_count "$f" hist_dlopen 'hist_run_two;hist_one_hot')" \
		"hist_one_hot called from hist_run_two"
done

if [[ ${#PROBLEMS[@]} -gt 0 ]]; then
	LAST_ERR=
	fail "${#PROBLEMS[@]} checks failed (the PROBLEM lines above): samples named with the mappings of another time"
fi
pass "after exec and after dlclose/dlopen at the same addresses, each sample has the names of its own time"
