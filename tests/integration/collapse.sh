#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed collapse`: perf script text to folded stacks. Every input in
# tests/fixtures/perfscript/ with every option set gives, byte for byte, the
# expected output there (expected/INPUT.OPTION.folded, written by the reference
# implementation reference.py; the notes on stderr: expected/INPUT.OPTION.stderr,
# none when that file is missing). Then: standard input, several files, -o,
# --event-filter, lines at the length limit, a missing file, the output drawn by
# `flamed svg`, and --inline on a perf script of the inline_chain fixture
# recorded now (needs perf; skipped alone when it is not installed).
DATA=$(readlink -f "$(dirname "${BASH_SOURCE[0]}")/../fixtures/perfscript")
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[[ -z ${SRCDIR:-} ]] || DATA=$(readlink -f "$SRCDIR/tests/fixtures/perfscript")
[[ -d $DATA/expected ]] || fail "no collapse fixtures in $DATA"

OPTIONS=(default pid tid kernel jit all addrs)
MISMATCHES=()

# mismatch WHAT EXPECTED GOT: notes a difference (the first lines of the diff,
# long lines cut); the test fails at the end, after every comparison.
mismatch() {
	MISMATCHES+=("$1")
	echo "MISMATCH: $1" >&2
	diff -u --label "expected ($2)" --label got "$2" "$3" | head -n 12 | cut -c1-240 >&2 || true
}

# compare WHAT NAME EXPECTED_BASE: the stdout and stderr of the run NAME are
# EXPECTED_BASE.folded and EXPECTED_BASE.stderr (empty when there is no such file).
compare() {
	local what=$1 name=$2 base=$3 err=/dev/null
	cmp -s "$base.folded" "$T/$name.out" || mismatch "$what: stdout" "$base.folded" "$T/$name.out"
	[[ ! -e $base.stderr ]] || err=$base.stderr
	cmp -s "$err" "$T/$name.err" || mismatch "$what: stderr" "$err" "$T/$name.err"
}

# Every checked-in input with every option set.
inputs=0
for input in "$DATA"/*.txt; do
	name=$(basename "$input" .txt)
	for opt in "${OPTIONS[@]}"; do
		args=()
		[[ $opt == default ]] || args=("--$opt")
		run_flamed "$name.$opt" collapse "${args[@]}" "$input"
		[[ $RC -eq 0 ]] || mismatch "collapse ${args[*]} $name.txt: exit status $RC" /dev/null "$T/$name.$opt.err"
		compare "collapse ${args[*]} $name.txt" "$name.$opt" "$DATA/expected/$name.$opt"
	done
	inputs=$((inputs + 1))
done
[[ $inputs -ge 14 ]] || fail "only $inputs inputs in $DATA"

# --event-filter, both spellings; the event kept by default, asked for by name,
# gives the default output without the note.
run_flamed ef1 collapse --event-filter=task-clock "$DATA/two_events.txt"
compare "--event-filter=task-clock" ef1 "$DATA/expected/two_events.event-filter"
run_flamed ef2 collapse --event-filter task-clock "$DATA/two_events.txt"
compare "--event-filter task-clock" ef2 "$DATA/expected/two_events.event-filter"
run_flamed ef3 collapse --event-filter=cpu-clock "$DATA/two_events.txt"
cmp -s "$DATA/expected/two_events.default.folded" "$T/ef3.out" ||
	mismatch "--event-filter=cpu-clock: stdout" "$DATA/expected/two_events.default.folded" "$T/ef3.out"
cmp -s /dev/null "$T/ef3.err" || mismatch "--event-filter=cpu-clock: stderr" /dev/null "$T/ef3.err"

# The notes, spelled out: one line each.
if [[ $(wc -l <"$T/messy.default.err") -ne 1 ]] ||
	! grep -Eq '^flamed: collapse: skipped [0-9]+ lines \([0-9]+ unrecognized, [0-9]+ longer than 1048576 bytes, [0-9]+ in samples whose header could not be read\)$' \
		"$T/messy.default.err"; then
	mismatch "messy.txt: not one line 'skipped N lines (...)' on stderr" \
		"$DATA/expected/messy.default.stderr" "$T/messy.default.err"
fi
if [[ $(wc -l <"$T/two_events.default.err") -ne 1 ]] ||
	! grep -q 'samples of other events skipped (kept the first seen, cpu-clock;' "$T/two_events.default.err"; then
	mismatch "two_events.txt: not one line about the other event on stderr" \
		"$DATA/expected/two_events.default.stderr" "$T/two_events.default.err"
fi

# Standard input: no FILE, and "-".
run_flamed stdin collapse <"$DATA/fp.txt"
compare "collapse < fp.txt" stdin "$DATA/expected/fp.default"
run_flamed dash collapse - <"$DATA/fp.txt"
compare "collapse - < fp.txt" dash "$DATA/expected/fp.default"

# Two files: read in order, the counts of the same stacks add up.
run_flamed two collapse "$DATA/fp.txt" "$DATA/dwarf.txt"
compare "collapse fp.txt dwarf.txt" two "$DATA/expected/concat.default"
run_flamed two_dash collapse "$DATA/fp.txt" - <"$DATA/dwarf.txt"
compare "collapse fp.txt - < dwarf.txt" two_dash "$DATA/expected/concat.default"
run_flamed twice collapse "$DATA/fp.txt" "$DATA/fp.txt"
awk '{ n = $NF; sub(/ [0-9]+$/, ""); printf "%s %.0f\n", $0, 2 * n }' "$DATA/expected/fp.default.folded" >"$T/twice.expected"
cmp -s "$T/twice.expected" "$T/twice.out" || mismatch "collapse fp.txt fp.txt: counts not doubled" "$T/twice.expected" "$T/twice.out"

# -o FILE: the output there, nothing on stdout.
run_flamed out collapse -o "$T/o.folded" "$DATA/js.txt"
expect_rc 0
cmp -s "$DATA/expected/js.default.folded" "$T/o.folded" ||
	mismatch "collapse -o FILE js.txt" "$DATA/expected/js.default.folded" "$T/o.folded"
[[ ! -s $T/out.out ]] || mismatch "collapse -o FILE: something on stdout" /dev/null "$T/out.out"

# A file that ends without a newline does not run into the next one: its
# last line and sample end with it.
printf 'a 1/1 [000] 1.0: 1 cpu-clock:\n\t1 f (/m)' >"$T/n1.txt"
printf 'b 2/2 [000] 2.0: 1 cpu-clock:\n\t2 g (/m)\n' >"$T/n2.txt"
run_flamed noeol collapse "$T/n1.txt" "$T/n2.txt"
expect_rc 0
printf 'a;f 1\nb;g 1\n' >"$T/noeol.expected"
cmp -s "$T/noeol.expected" "$T/noeol.out" || mismatch "a file without a final newline, then another" "$T/noeol.expected" "$T/noeol.out"

# Lines at the length limit: one of exactly 1048576 bytes is read; a stack
# line one byte longer is skipped with its record (a stack missing a frame
# would name the wrong code), and the record's remaining line with it.
{
	printf 'gen 1/1 [000] 1.000001:          7 cpu-clock: \n\t    1234 '
	head -c $((1048576 - 10)) /dev/zero | tr '\0' x
	printf '\n\t    1235 main (/usr/bin/gen)\n\n'
	printf 'gen 1/1 [000] 1.000002:          5 cpu-clock: \n\t    1234 '
	head -c $((1048576 - 9)) /dev/zero | tr '\0' y
	printf '\n\t    1235 main (/usr/bin/gen)\n\n'
} >"$T/limit.txt"
{
	printf 'gen;main;'
	head -c $((1048576 - 10)) /dev/zero | tr '\0' x
	printf ' 7\n'
} >"$T/limit.expected"
run_flamed limit collapse "$T/limit.txt"
expect_rc 0
cmp -s "$T/limit.expected" "$T/limit.out" || mismatch "lines of 1048576 and 1048577 bytes" "$T/limit.expected" "$T/limit.out"
echo 'flamed: collapse: skipped 2 lines (0 unrecognized, 1 longer than 1048576 bytes, 1 in samples whose header could not be read)' >"$T/limit.err.expected"
cmp -s "$T/limit.err.expected" "$T/limit.err" || mismatch "lines of 1048576 and 1048577 bytes: stderr" "$T/limit.err.expected" "$T/limit.err"

# A missing file: an error naming it, in one line.
run_flamed missing collapse "$DATA/fp.txt" "$T/no-such-file.txt"
[[ $RC -ne 0 ]] || fail "collapse of a missing file: exit status 0"
[[ $(wc -l <"$T/missing.err") -eq 1 ]] || fail "collapse of a missing file: not one line on stderr"
grep -q 'no-such-file\.txt' "$T/missing.err" || fail "collapse of a missing file: stderr does not name it"

# Straight into `flamed svg`; names with '<', '>' and '&' too (messy --addrs).
if command -v xmllint >/dev/null; then
	for input in fp:default messy:addrs js:default; do
		args=()
		[[ ${input#*:} == default ]] || args=("--${input#*:}")
		set +e
		"$FLAMED" collapse "${args[@]}" "$DATA/${input%:*}.txt" 2>/dev/null | "$FLAMED" svg >"$T/${input%:*}.svg"
		rcs=("${PIPESTATUS[@]}")
		set -e
		[[ ${rcs[0]} -eq 0 && ${rcs[1]} -eq 0 ]] || fail "collapse ${args[*]} ${input%:*}.txt | svg: exit status ${rcs[*]}"
		xmllint --noout "$T/${input%:*}.svg" 2>"$T/xmllint.err" ||
			fail "collapse ${args[*]} ${input%:*}.txt | svg: not well-formed: $(head -n 3 "$T/xmllint.err")"
	done
	note "collapse | svg: well-formed SVG"
else
	note "xmllint is not installed (Debian: libxml2-utils): the SVG part is skipped"
fi

# --inline on a recording made now (the binary the perf script names must be
# there): perf prints no inlined frames for -g call graphs, flamed adds them
# from inline_chain's DWARF.
inline_chain=';main;inline_outer;inline_a_[i];inline_b_[i];inline_c_[i]'
if ! perf version >/dev/null 2>&1; then
	note "perf is not installed or does not run (Debian: linux-perf): the live --inline part is skipped"
elif [[ $(id -u) -ne 0 ]] || ! why=$("$FIXTURES/perf_probe" 2>&1); then
	note "cannot record here (${why:-not root}): the live --inline part is skipped"
else
	run_cmd perf_record perf record -q -F 999 -g -o "$T/inline.data" -- "$FIXTURES/inline_chain" 1
	expect_rc 0
	run_cmd perf_script perf script -i "$T/inline.data"
	expect_rc 0
	cp "$T/perf_script.out" "$T/inline.txt"
	awk -v m="($FIXTURES/inline_chain)" 'index($0, m) && index($0, "inline_outer") { f = 1 } END { exit !f }' "$T/inline.txt" ||
		fail "perf script of inline_chain has no inline_outer frame in $FIXTURES/inline_chain"
	run_flamed inline collapse --inline "$T/inline.txt"
	expect_rc 0
	check_folded "$T/inline.out"
	all=$(total_count "$T/inline.out")
	chain=$(count_matching "$T/inline.out" "$inline_chain")
	note "--inline: $chain of $all in $inline_chain"
	[[ $chain -gt 0 ]] || fail "--inline: no samples in $inline_chain"
	expect_between "$(percent "$chain" "$all")" 80 100 "the share of samples in $inline_chain (%)"
	# Without --inline, only what perf printed: no inlined frames.
	run_flamed noinline collapse "$T/inline.txt"
	expect_rc 0
	check_folded "$T/noinline.out"
	! grep -q 'inline_a\|_\[i\]' "$T/noinline.out" || fail "inlined frames without --inline"
	[[ $(total_count "$T/noinline.out") -eq $all ]] || fail "--inline changed the total count"
fi

if [[ ${#MISMATCHES[@]} -gt 0 ]]; then
	fail "${#MISMATCHES[@]} outputs differ from tests/fixtures/perfscript/expected (diffs above):$(printf '\n  %s' "${MISMATCHES[@]}")"
fi
pass "collapse: $inputs inputs x ${#OPTIONS[@]} option sets, --event-filter, stdin, several files, -o, the line limit, a missing file, svg, --inline"
