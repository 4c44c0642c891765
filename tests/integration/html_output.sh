#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The HTML flame graph from every command that draws graphs: `flamed svg
# --format html` and -o x.html, `flamed diff -o x.html`, `flamed record -o
# x.html` and the daemon's `formats = html`. Each page is read back with
# html_data.py (a decoder written from docs/html-format.md alone) and must hold
# every stack of its input with its exact count, where the SVG merges frames
# narrower than 0.1 px. Format mix-ups and the SVG-only --nameattr are one
# line and exit 2, before any recording. (The viewer itself runs in Chromium
# in html_browser.sh.)
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SRCDIR=${SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
command -v python3 >/dev/null || skip "needs python3 to read the pages back"
DECODE=(python3 "$SRCDIR/tests/integration/html_data.py")

# canon FILE: its folded lines with equal stacks summed, sorted bytewise ("stack COUNT..." ).
canon() {
	python3 -c '
import sys
sums = {}
for line in open(sys.argv[1], "rb").read().decode().splitlines():
    parts = line.rsplit(" ", int(sys.argv[2]))
    vals = [float(v) for v in parts[1:]]
    old = sums.get(parts[0], [0.0] * len(vals))
    sums[parts[0]] = [a + b for a, b in zip(old, vals)]
fmt = lambda v: str(int(v)) if v.is_integer() else repr(v)
for k in sorted(sums, key=lambda s: s.encode()):
    if any(sums[k]):
        print(k, *map(fmt, sums[k]))
' "$1" "${2:-1}"
}

# same_stacks WHAT EXPECTED PAGE [NCOUNTS]: the page holds exactly EXPECTED's stacks and counts.
same_stacks() {
	"${DECODE[@]}" "$3" >"$T/back.folded" || fail "$1: cannot read $3 back: $(cat "$T/back.folded")"
	canon "$2" "${4:-1}" >"$T/want.folded"
	canon "$T/back.folded" "${4:-1}" >"$T/got.folded"
	diff -q "$T/want.folded" "$T/got.folded" >/dev/null ||
		fail "$1: the page's stacks differ from its input: $(diff "$T/want.folded" "$T/got.folded" | head -n 5)"
}

# --- flamed svg ------------------------------------------------------------------
# A wide frame beside 3,000 frames of one sample: the SVG merges them, the page keeps them.
{
	echo "app;main;hot 1000000"
	echo "app;main 5"
	for ((i = 0; i < 3000; i++)); do echo "app;main;cold$i;leaf_$((i % 7)) 1"; done
	echo "app;main;with  two  blanks;é ü 中文 3"
	awk 'BEGIN { s = "app;deep"; for (i = 0; i < 300; i++) s = s ";d" i; print s " 2" }'
} >"$T/in.folded"
run_flamed svg svg --format html "$T/in.folded" -o "$T/fmt.page"
expect_rc 0
same_stacks "svg --format html" "$T/in.folded" "$T/fmt.page"
frames=$("${DECODE[@]}" "$T/fmt.page" --meta frames)
run_flamed svgdef svg "$T/in.folded" -o "$T/def.svg"
expect_rc 0
svg_frames=$(grep -c '<g class="f"' "$T/def.svg")
note "frames: $frames in the page, $svg_frames drawn one by one in the default SVG"
[[ $frames -eq $((3 + 3000 * 2 + 2 + 1 + 300)) ]] || fail "the page has $frames frames, expected every one ($((3 + 3000 * 2 + 2 + 1 + 300)))"
[[ $svg_frames -lt 1000 ]] || fail "test bug: the default SVG should merge the narrow frames ($svg_frames drawn)"

run_flamed ext svg "$T/in.folded" -o "$T/by-name.HTML"
expect_rc 0
same_stacks "svg -o x.HTML" "$T/in.folded" "$T/by-name.HTML"
run_flamed htm svg --title 'Mine & <b>' --subtitle 'lost: 3' "$T/in.folded" -o "$T/x.htm"
expect_rc 0
[[ $("${DECODE[@]}" "$T/x.htm" --meta title) == '"Mine & <b>"' ]] || fail "svg --title: $("${DECODE[@]}" "$T/x.htm" --meta title)"
[[ $("${DECODE[@]}" "$T/x.htm" --meta subtitle) == '"lost: 3"' ]] || fail "svg --subtitle did not reach the page"
grep -q '<title>Mine &amp; &lt;b&gt;</title>' "$T/x.htm" || fail "the page's <title> is not the escaped --title"

# Fractional counts (--factor) are kept as doubles.
printf 'a;b 3\na 1\n' >"$T/frac.in"
run_flamed frac svg --factor 0.5 --format html "$T/frac.in" -o -
expect_rc 0
cp "$T/frac.out" "$T/frac.html"
printf 'a;b 1.5\na 0.5\n' >"$T/frac.want"
same_stacks "--factor 0.5" "$T/frac.want" "$T/frac.html"

# --- flamed diff -----------------------------------------------------------------
printf 'app;main;a 10\napp;main;b 20\napp;gone 5\n' >"$T/before.folded"
printf 'app;main;a 30\napp;main;b 5\napp;main;new 7\n' >"$T/after.folded"
run_flamed diff diff "$T/before.folded" "$T/after.folded" -o "$T/d.html"
expect_rc 0
[[ $("${DECODE[@]}" "$T/d.html" --meta diff) == true ]] || fail "diff -o d.html is not a differential page"
run_flamed difffolded diff --folded "$T/before.folded" "$T/after.folded" -o "$T/d.folded"
expect_rc 0
# A frame gone after has no width: the page, as the SVG, draws what is there after; its
# samples before stay in its parent's count before ("app" had 5 of its own before).
grep -v '^app;gone ' "$T/d.folded" >"$T/d.want"
grep -q '^app;gone 5 0$' "$T/d.folded" || fail "test bug: diff --folded lacks 'app;gone 5 0': $(cat "$T/d.folded")"
echo "app 5 0" >>"$T/d.want"
same_stacks "diff -o d.html" "$T/d.want" "$T/d.html" 2

# --- refused, one line, exit 2 ----------------------------------------------------
printf 'main\ttitle=x\n' >"$T/na.attr"
# bad NAME 'ARGS...' MESSAGE-RE
bad() {
	local name=$1 re=$3
	# shellcheck disable=SC2086 # ARGS split on purpose
	run_flamed "$name" $2
	expect_rc 2
	# A usage error may add where the options are listed.
	[[ $(grep -vc -- '--help lists the options)$' "$T/$name.err") -eq 1 ]] &&
		grep -qE "^flamed: .*$re" "$T/$name.err" ||
		fail "$name: expected one line matching '$re', got: $(cat "$T/$name.err")"
}
bad fmtname "svg --format html $T/in.folded -o $T/x.svg" "format html writes HTML"
bad fmtsvg "svg --format svg $T/in.folded -o $T/x.html" "format svg writes an SVG"
bad json "svg $T/in.folded -o $T/x.json" "SVG \\(.svg\\) or HTML \\(.html\\)"
bad fmtbad "svg --format png $T/in.folded" "unknown format 'png'"
bad nameattr "svg --nameattr $T/na.attr $T/in.folded -o $T/na.html" "nameattr.*SVG only"
bad difffolded_fmt "diff --folded --format html $T/before.folded $T/after.folded" "drop --format"
run_flamed recfmt record --format png -a -d 1
expect_rc 2
head -n 1 "$T/recfmt.err" | grep -q "^flamed: unknown format 'png': use folded, svg, html or pprof" ||
	fail "record --format png: $(head -n 1 "$T/recfmt.err")"
[[ ! -e $T/x.svg && ! -e $T/x.html && ! -e $T/x.json && ! -e $T/na.html ]] || fail "a refused command wrote a file"

# --- flamed record ----------------------------------------------------------------
need_root_and_perf
# Refused before recording (one line, no summary of samples): none is taken only to be lost.
bad recnameattr "record --nameattr $T/na.attr -d 5 -a -o $T/rec.html" "nameattr.*SVG only"
[[ ! -e $T/rec.html ]] || fail "record --nameattr -o rec.html wrote a file"

FIXTURE_CLOCK=cpu run_flamed rec record -F 999 -o "$T/rec.html" -- "$FIXTURES/chains" 1
expect_rc 0
grep -q "written to $T/rec.html" "$T/rec.err" || fail "the summary does not name the output: $(cat "$T/rec.err")"
"${DECODE[@]}" "$T/rec.html" >"$T/rec.back" || fail "record -o rec.html: cannot read it back"
samples=$(summary_samples "$T/rec.err")
[[ $(total_count "$T/rec.back") -eq $samples ]] ||
	fail "the page holds $(total_count "$T/rec.back") samples, the recording $samples"
check_chains_split "$T/rec.back"
sub=$("${DECODE[@]}" "$T/rec.html" --meta subtitle)
[[ $sub == *"samples in "*" s at 999 Hz"* ]] || fail "the page's subtitle does not state the recording: $sub"
run_flamed recfmt2 record --format html -F 999 -o - -- "$FIXTURES/chains" 0.5
expect_rc 0
grep -q '<script type="application/octet-stream" id="flamed-data">' "$T/recfmt2.out" || fail "record --format html -o -: no page on stdout"

# --- the daemon -------------------------------------------------------------------
mkdir -m 0700 "$T/snaps"
"$FLAMED" daemon --targets all --interval 1s --formats folded,html --output-dir "$T/snaps" \
	>"$T/daemon.out" 2>"$T/daemon.err" &
DPID=$!
BG_PIDS+=("$DPID")
wait_until 20 "a daemon snapshot" test -e "$T/snaps/latest.html"
signal_and_wait "$DPID" TERM "the daemon"
[[ $WAIT_RC -eq 0 ]] || fail "the daemon exited $WAIT_RC: $(tail -n 3 "$T/daemon.err")"
page=$(readlink "$T/snaps/latest.html")
[[ $page == *Z.html || $page == *Z-[0-9]*.html ]] || fail "latest.html points at '$page'"
[[ $(stat -c %a "$T/snaps/$page") == 600 ]] || fail "$page has mode $(stat -c %a "$T/snaps/$page")"
# The page and the folded file of one snapshot hold the same stacks.
sed 's/_\[[kjiw]\]\(;\| [0-9]*$\)/\1/g' "$T/snaps/${page%.html}.folded" >"$T/snap.want"
same_stacks "the daemon's html snapshot" "$T/snap.want" "$T/snaps/$page"

pass "html pages from svg, diff, record and the daemon hold every stack with its count ($frames frames kept where the SVG draws $svg_frames); mix-ups refused in one line"
