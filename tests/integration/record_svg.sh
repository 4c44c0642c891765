#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed record -o out.svg`: the flame graph written directly, with the
# fixture's chains in it, the 75/25 split in the widths, the recording's
# losses in the subtitle and notes, and flame graph options applied.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
command -v xmllint >/dev/null || skip "xmllint is not installed (Debian: libxml2-utils)"

# count_of FILE NAME: the sample count in the title of the frame named NAME
# (summed over every frame of that name).
count_of() {
	xmllint --xpath "//*[local-name()=\"title\"][starts-with(., \"$2 (\")]/text()" "$1" 2>/dev/null |
		sed -n 's/.* (\([0-9,]*\) samples.*/\1/p' | tr -d , | awk '{ s += $1 } END { print s + 0 }'
}

# 2 s of its own CPU: the 75/25 split has its ~2000 samples however busy the machine.
FIXTURE_CLOCK=cpu run_flamed svg record -F 999 -o "$T/out.svg" -- "$FIXTURES/chains" 2
expect_rc 0
xmllint --noout "$T/out.svg" || fail "out.svg is not well-formed"
grep -q "written to $T/out.svg" "$T/svg.err" || fail "the summary does not name the output: $(cat "$T/svg.err")"
a=$(count_of "$T/out.svg" chain_a1)
b=$(count_of "$T/out.svg" chain_b1)
note "chain_a1 $a samples, chain_b1 $b samples"
[[ $a -gt 0 && $b -gt 0 ]] || fail "out.svg lacks the chains (chain_a1 $a, chain_b1 $b)"
# The frames nest as the stacks do: chain_a3 inside chain_a2 inside chain_a1.
xmllint --xpath 'count(//*[local-name()="g"][starts-with(*[local-name()="title"], "chain_a1 (")]//*[local-name()="g"][starts-with(*[local-name()="title"], "chain_a2 (")]//*[local-name()="title"][starts-with(., "chain_a3 (")])' "$T/out.svg" |
	grep -qv '^0$' || fail "chain_a3 is not drawn above chain_a2 above chain_a1"
expect_between "$(percent "$a" $((a + b)))" 70 80 "chain A's share of the width"

# What the recording lost is stated in the graph itself.
sub=$(xmllint --xpath 'string(//*[local-name()="text"][@id="subtitle"])' "$T/out.svg")
note "subtitle: $sub"
[[ $sub == *"samples in "*" s at 999 Hz, call graph kernel-dwarf; stacks lost: "*"unsymbolized frames: "*"idle samples dropped: "* ]] ||
	fail "the subtitle does not state the recording's losses: $sub"
samples=$(summary_samples "$T/svg.err")
# Its counts with thousands separators, as flamegraph.pl writes counts: 12,345.
commas=$(sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta' <<<"$samples")
[[ $samples -lt 1000 || $commas == *,* ]] || fail "test bug: $samples has no separator: $commas"
[[ $sub == "$commas samples in"* ]] || fail "subtitle says '$sub', the summary $samples samples"
xmllint --xpath 'string(//*[local-name()="desc"][@id="notes"])' "$T/out.svg" | grep -q "^flamed record: " ||
	fail "the notes do not carry the recording's summary"

# Flame graph options work in record too; --format svg whatever the extension.
run_flamed opts record -F 999 --format svg --title "Fixture" --inverted --colors java \
	--subtitle "mine" -o "$T/out.img" -- "$FIXTURES/chains" 1
expect_rc 0
xmllint --noout "$T/out.img" || fail "--format svg output is not well-formed"
grep -q '>Fixture</text>' "$T/out.img" || fail "--title not applied in record"
grep -q 'data-inverted="1"' "$T/out.img" || fail "--inverted not applied in record"
[[ $(xmllint --xpath 'string(//*[local-name()="text"][@id="subtitle"])' "$T/out.img") == mine ]] ||
	fail "--subtitle should replace the recording's subtitle"
xmllint --xpath 'string(//*[local-name()="desc"][@id="notes"])' "$T/out.img" | grep -q "stacks lost" ||
	fail "with --subtitle, the losses must still be in the notes"

pass "record -o out.svg: chains nested, 75/25 widths, losses stated, options applied"
