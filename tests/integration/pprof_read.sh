#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# pprof in: `flamed svg` and `flamed diff` read the CPU profiles a real Go
# program writes (runtime/pprof, tests/fixtures/go/burn): the same totals as
# Debian's `go tool pprof` (the reference reader) for each sample type, both
# burning functions as frames in their 2:1 ratio, from a file, from stdin,
# gzipped or not, mixed with folded stacks; and one clear line for an
# unknown --sample-type and for a damaged profile.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v go >/dev/null || skip "no go (Debian: apt-get install golang-go): it builds the Go program whose profile is read"
command -v xmllint >/dev/null || skip "xmllint is not installed (Debian: libxml2-utils)"
[[ -n ${SRCDIR:-} ]] || fail "SRCDIR is not set (run through ctest, or export SRCDIR=the repository)"
# Everything Go keeps goes into the scratch directory; stdlib only, no network.
export HOME=$T/home GOCACHE=$T/gocache GOPATH=$T/gopath GOTOOLCHAIN=local GOPROXY=off GOFLAGS=
export PPROF_TMPDIR=$T/pprof
mkdir -p "$HOME" "$PPROF_TMPDIR"

TIMEOUT=180 run_cmd go-build go build -o "$T/burn" "$SRCDIR/tests/fixtures/go/burn/main.go"
expect_rc 0
run_cmd burn-a "$T/burn" "$T/a.pb.gz" 2
expect_rc 0
run_cmd burn-b "$T/burn" "$T/b.pb.gz" 1
expect_rc 0
[[ $(head -c 2 "$T/a.pb.gz" | od -An -tx1 | tr -d ' ') == 1f8b ]] || fail "a.pb.gz is not gzipped"

# pprof_totals FILE: "SAMPLES CPU", the sums of the two values of every sample, as go tool pprof -raw lists them.
pprof_totals() {
	go tool pprof -raw "$1" >"$T/raw.out" 2>"$T/raw.err" || fail "go tool pprof -raw $1: $(tail -n 3 "$T/raw.err")"
	grep -q '^samples/count cpu/nanoseconds$' "$T/raw.out" || fail "go tool pprof -raw $1: not samples and cpu: $(head -n 8 "$T/raw.out")"
	awk '/^Samples:/ { on = 1; next } /^Locations/ { on = 0 }
		on && $2 ~ /^[0-9]+:$/ { s += $1; c += $2 } END { printf "%.0f %.0f\n", s, c }' "$T/raw.out"
}

# folded NAME ARGS...: the stacks flamed reads, as "stack COUNT" lines in
# $T/NAME.folded: a diff from nothing (flamed diff --folded /dev/null ...).
folded() {
	local name=$1
	shift
	run_flamed "$name" diff --folded "$@"
	expect_rc 0
	awk '{ print substr($0, 1, length($0) - length($NF) - length($(NF - 1)) - 2), $NF }' \
		"$T/$name.out" >"$T/$name.folded"
}

# --- svg: a valid graph with both functions, the unit and sample type said ----
run_flamed svg svg "$T/a.pb.gz" -o "$T/a.svg"
expect_rc 0
[[ ! -s $T/svg.err ]] || fail "svg: says something: $(cat "$T/svg.err")"
xmllint --noout "$T/a.svg" 2>"$T/xmllint.err" || fail "a.svg is not well-formed XML: $(head -3 "$T/xmllint.err")"
for fn in main.burnOne main.burnTwo main.spin runtime.main; do
	n=$(xmllint --xpath "count(//*[local-name()=\"title\"][starts-with(., \"$fn (\")])" "$T/a.svg")
	[[ $n -ge 1 ]] || fail "svg: no frame $fn"
done
grep -q 'data-countname="nanoseconds"' "$T/a.svg" || fail "svg: the counts are not called nanoseconds"
grep -q '<text id="subtitle"[^>]*>cpu (nanoseconds)</text>' "$T/a.svg" || fail "svg: no subtitle naming the sample type"

# From standard input, and gunzipped: the same graph.
run_flamed stdin svg -o "$T/stdin.svg" <"$T/a.pb.gz"
expect_rc 0
cmp -s "$T/stdin.svg" "$T/a.svg" || fail "svg from stdin differs from svg from a file"
gzip -dc "$T/a.pb.gz" >"$T/a.pb"
run_flamed raw svg "$T/a.pb" -o "$T/raw.svg"
expect_rc 0
cmp -s "$T/raw.svg" "$T/a.svg" || fail "svg of the gunzipped profile differs"

# --- the totals, exactly go tool pprof's; the ratio, roughly 2:1 --------------
read -r want_samples want_cpu < <(pprof_totals "$T/a.pb.gz")
note "go tool pprof: $want_samples samples, $want_cpu ns of cpu"
[[ $want_samples -ge 50 ]] || fail "the Go profile has $want_samples samples: too few to compare"
folded cpu /dev/null "$T/a.pb.gz"
[[ $(total_count "$T/cpu.folded") == "$want_cpu" ]] ||
	fail "cpu: flamed reads $(total_count "$T/cpu.folded") ns, go tool pprof $want_cpu"
folded samples --sample-type samples /dev/null "$T/a.pb.gz"
[[ $(total_count "$T/samples.folded") == "$want_samples" ]] ||
	fail "--sample-type samples: flamed reads $(total_count "$T/samples.folded"), go tool pprof $want_samples"
folded cpu_named --sample-type cpu /dev/null "$T/a.pb.gz"
cmp -s "$T/cpu_named.folded" "$T/cpu.folded" || fail "--sample-type cpu is not the default"
one=$(count_matching "$T/samples.folded" ';main.burnOne;')
two=$(count_matching "$T/samples.folded" ';main.burnTwo;')
note "burnOne: $one samples, burnTwo: $two"
awk -v a="$one" -v b="$two" 'BEGIN { exit !(a > 0 && b / a >= 1.3 && b / a <= 3) }' ||
	fail "burnTwo/burnOne is $two/$one, not about 2"
grep -q '^runtime\.main;main\.main;main\.burnTwo;main\.spin [0-9]*$' "$T/samples.folded" ||
	fail "no root-first stack runtime.main;main.main;main.burnTwo;main.spin: $(head -n 3 "$T/samples.folded")"

# --- diff: two Go profiles, and folded against pprof ---------------------------
read -r _ want_cpu_b < <(pprof_totals "$T/b.pb.gz")
run_flamed diff diff "$T/a.pb.gz" "$T/b.pb.gz" -o "$T/diff.svg"
expect_rc 0
xmllint --noout "$T/diff.svg" 2>"$T/xmllint.err" || fail "diff.svg is not well-formed XML: $(head -3 "$T/xmllint.err")"
grep -q 'data-diff="1"' "$T/diff.svg" || fail "diff: not a differential graph"
run_flamed diff_folded diff --folded "$T/a.pb.gz" "$T/b.pb.gz"
expect_rc 0
got=$(awk '{ a += $(NF - 1); b += $NF } END { printf "%.0f %.0f\n", a, b }' "$T/diff_folded.out")
[[ $got == "$want_cpu $want_cpu_b" ]] || fail "diff --folded: totals $got, go tool pprof's $want_cpu $want_cpu_b"
# BEFORE as folded stacks (the samples of a), AFTER the profile b: each read as what it is.
run_flamed mixed diff --folded --sample-type samples "$T/samples.folded" "$T/b.pb.gz"
expect_rc 0
got=$(awk '{ a += $(NF - 1) } END { printf "%.0f\n", a }' "$T/mixed.out")
[[ $got == "$want_samples" ]] || fail "diff folded vs pprof: before totals $got, not $want_samples"
grep -q ';main.burnTwo;main.spin [0-9]* [0-9]*$' "$T/mixed.out" || fail "diff folded vs pprof: stacks do not meet"

# --- errors: one line naming the file and the fix, exit 1, no graph -----------
run_flamed bad_type svg --sample-type foo "$T/a.pb.gz" -o "$T/bad_type.svg"
expect_rc 1
[[ $(cat "$T/bad_type.err") == "flamed: $T/a.pb.gz: no sample type \"foo\" (it has: samples, cpu): choose one with --sample-type" ]] ||
	fail "unknown --sample-type: $(cat "$T/bad_type.err")"
[[ ! -e $T/bad_type.svg ]] || fail "unknown --sample-type: an SVG was written"
run_flamed bad_type_diff diff --sample-type alloc_space "$T/a.pb.gz" "$T/b.pb.gz"
expect_rc 1
[[ $(wc -l <"$T/bad_type_diff.err") == 1 ]] && grep -q 'no sample type "alloc_space"' "$T/bad_type_diff.err" ||
	fail "diff, unknown --sample-type: $(cat "$T/bad_type_diff.err")"

size=$(stat -c %s "$T/a.pb.gz")
head -c $((size / 2)) "$T/a.pb.gz" >"$T/cut.pb.gz"
run_flamed cut svg "$T/cut.pb.gz" -o "$T/cut.svg"
expect_rc 1
[[ $(cat "$T/cut.err") == "flamed: $T/cut.pb.gz: cannot read it as a pprof profile: truncated gzip data (is the file whole? write it again)" ]] ||
	fail "truncated profile: $(cat "$T/cut.err")"
[[ ! -e $T/cut.svg ]] || fail "truncated profile: an SVG was written"
# A damaged message in good gzip: the second half of the profile.
tail -c +$(($(stat -c %s "$T/a.pb") / 2)) "$T/a.pb" | gzip >"$T/junk.pb.gz"
run_flamed junk diff "$T/junk.pb.gz" "$T/b.pb.gz"
expect_rc 1
[[ $(wc -l <"$T/junk.err") == 1 ]] && grep -q "^flamed: $T/junk.pb.gz: cannot read it as a pprof profile: " "$T/junk.err" ||
	fail "damaged profile: $(cat "$T/junk.err")"

# Folded text is still folded text, from stdin too.
printf 'a;b 3\n' >"$T/ab.folded"
run_flamed folded_stdin diff --folded /dev/null - <"$T/ab.folded"
expect_rc 0
[[ $(cat "$T/folded_stdin.out") == "a;b 0 3" ]] || fail "folded from stdin: $(cat "$T/folded_stdin.out")"

run_flamed help svg --help
grep -q -- '--sample-type NAME' "$T/help.out" || fail "svg --help does not list --sample-type"
run_flamed help_diff diff --help
grep -q -- '--sample-type NAME' "$T/help_diff.out" || fail "diff --help does not list --sample-type"

pass "svg and diff read Go's pprof profiles: totals as go tool pprof's, burnTwo/burnOne $two/$one"
