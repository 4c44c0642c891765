#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed svg` and `flamed diff` as commands: inputs, outputs, malformed lines,
# errors, hostile names (checked with xmllint), --cp and --hash colours.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v xmllint >/dev/null || skip "xmllint is not installed (Debian: libxml2-utils)"

# well_formed FILE: xmllint accepts it, it has exactly one script element and
# no attribute of any element is an event handler (on...).
well_formed() {
	xmllint --noout "$1" 2>"$T/xmllint.err" || fail "$1 is not well-formed XML: $(head -3 "$T/xmllint.err")"
	local n
	n=$(xmllint --xpath 'count(//*[local-name()="script"])' "$1")
	[[ $n == 1 ]] || fail "$1 has $n script elements, not 1"
	n=$(xmllint --xpath 'count(//@*[starts-with(local-name(), "on")])' "$1")
	[[ $n == 0 ]] || fail "$1 has $n event-handler attributes"
}

# frames FILE: the number of drawn frames.
frames() {
	xmllint --xpath 'count(//*[local-name()="g"][contains(concat(" ", @class, " "), " f ")])' "$1"
}

# title_of FILE NAME: the tooltip title of the frame named NAME.
title_of() {
	xmllint --xpath "string(//*[local-name()=\"title\"][starts-with(., \"$2 (\")])" "$1"
}

printf 'app;main;a;b 50\napp;main;a;c 30\napp;main;d 20\n' >"$T/basic.folded"

# Labels hold as many characters as flamegraph.pl's: whole character widths
# (12 x 0.59 px) of the frame's width, 3 at least, cut to 2 fewer and "..".
# 1180 counts over 1180 px: a count is a pixel.
printf 'mix64 36\nabcd 21.3\nabcdefgh 40\nxy 14\nother 1068.7\n' >"$T/labels.folded"
run_flamed labels svg "$T/labels.folded" -o "$T/labels.svg"
expect_rc 0
labels=$(xmllint --xpath '//*[local-name()="g"][@id="labels"]/*' "$T/labels.svg" | sed 's/<[^>]*>/|/g')
for want in '|mix64|' '|a..|' '|abc..|'; do
	[[ $labels == *"$want"* ]] || fail "labels: no ${want//|/} among $labels"
done
[[ $labels != *'|xy|'* ]] || fail "labels: a 2-character frame (14 px) has a label: $labels"

# Frames in flamegraph.pl's order: its folded lines sorted bytewise, so cc1
# ("p;cc1 4") comes between cc's own samples ("p;cc 5") and its callees
# ("p;cc;x 3"), and cc is two frames, as flamegraph.pl draws it.
printf 'p;cc;x 3\np;cc1 4\np;cc 5\n' >"$T/order.folded"
run_flamed order svg "$T/order.folded" -o "$T/order.svg"
expect_rc 0
got=$(xmllint --xpath '//*[local-name()="g"][@class="f"]/@data-x | //*[local-name()="g"][@class="f"]/*[local-name()="title"]' "$T/order.svg" |
	sed -e 's/<title>\([^ ]*\) (\([0-9]*\) samples[^<]*<\/title>/\1:\2 /g' -e 's/ data-x="\([0-9]*\)"/@\1 /g' | tr -s ' \n' ' ')
[[ $got == "@0 p:12 @0 cc:5 @5 cc1:4 @9 cc:3 @9 x:3 " ]] || fail "sibling order or frames not flamegraph.pl's: $got"

# --nameattr FILE, as flamegraph.pl's: a frame's tooltip, link, id, class by
# its name, escaped; raw markup (g_extra, a_extra) is not written; a bad line
# is one error naming the file, the line and the fix.
printf 'main 5\nmain;work 3\n' >"$T/na.folded"
printf 'work\ttitle=Work <it> "now"\thref=https://example.com/w?a=1&b=2\tclass=hot\tid=w1\tg_extra=onclick="x()"\n' >"$T/na.attr"
run_flamed na svg --nameattr "$T/na.attr" "$T/na.folded" -o "$T/na.svg"
expect_rc 0
well_formed "$T/na.svg"
grep -q '<g class="f hot" data-x="[0-9.]*" data-c="3" id="w1" data-href="https://example.com/w?a=1&amp;b=2" data-target="_top" data-n="work"><title>Work &lt;it&gt; &quot;now&quot;</title>' "$T/na.svg" ||
	fail "--nameattr: the frame's attributes: $(grep -o '<g class="f hot"[^>]*>' "$T/na.svg")"
! grep -q 'onclick' "$T/na.svg" || fail "--nameattr: raw g_extra markup written"
grep -q 'g_extra/a_extra attributes ignored' "$T/na.err" || fail "--nameattr: no note about g_extra: $(cat "$T/na.err")"
printf 'work title=no tab\n' >"$T/na_bad.attr"
run_flamed na_bad svg --nameattr "$T/na_bad.attr" "$T/na.folded" -o "$T/na_bad.svg"
expect_rc 1
[[ $(cat "$T/na_bad.err") == "flamed: --nameattr $T/na_bad.attr line 1: no tab after the function name: expected NAME<TAB>key=value<TAB>key=value..." ]] ||
	fail "--nameattr, a bad line: $(cat "$T/na_bad.err")"
[[ ! -e $T/na_bad.svg ]] || fail "--nameattr, a bad line: an SVG was left"
run_flamed na_missing svg --nameattr "$T/nope.attr" "$T/na.folded"
expect_rc 1
grep -q "cannot read --nameattr $T/nope.attr: No such file" "$T/na_missing.err" || fail "--nameattr, missing: $(cat "$T/na_missing.err")"

# Names are kept byte for byte, a blank at the end of the last one too:
# "p;u  3" is p, "u " (one blank before the count), as in "p;u ;x 5".
printf 'p;u ;x 5\np;u  3\n' >"$T/trail.folded"
run_flamed trail svg "$T/trail.folded" -o "$T/trail.svg"
expect_rc 0
[[ $(title_of "$T/trail.svg" 'u ') == "u  (8 samples, 100.00%)" ]] ||
	fail "a trailing blank: not one frame 'u ' of 8: $(xmllint --xpath '//*[local-name()="title"]' "$T/trail.svg")"
[[ -z $(title_of "$T/trail.svg" u) ]] || fail "a trailing blank: a frame 'u' beside 'u '"

# A file argument, -o, and the same graph from stdin to stdout.
run_flamed file svg "$T/basic.folded" -o "$T/basic.svg"
expect_rc 0
well_formed "$T/basic.svg"
[[ $(frames "$T/basic.svg") == 6 ]] || fail "basic.svg: $(frames "$T/basic.svg") frames, want 6"
[[ $(title_of "$T/basic.svg" b) == "b (50 samples, 50.00%)" ]] || fail "title of b: $(title_of "$T/basic.svg" b)"
run_cmd stdin bash -c "'$FLAMED' svg < '$T/basic.folded'"
expect_rc 0
cmp -s "$T/stdin.out" "$T/basic.svg" || fail "svg from stdin differs from svg from a file"
[[ ! -s $T/stdin.err ]] || fail "a clean input printed: $(cat "$T/stdin.err")"

# Several files add up; --title, --countname, --width, --factor, --total.
run_flamed two svg --title "Two files" --countname ms --width 600 --factor 2 --total 800 \
	"$T/basic.folded" "$T/basic.folded" -o "$T/two.svg"
expect_rc 0
well_formed "$T/two.svg"
[[ $(title_of "$T/two.svg" b) == "b (200 ms, 25.00%)" ]] || fail "--factor/--total: $(title_of "$T/two.svg" b)"
grep -q '>Two files</text>' "$T/two.svg" || fail "--title not shown"
grep -q 'width="600"' "$T/two.svg" || fail "--width not applied"

# Malformed lines are skipped, counted and reported once with their line numbers.
printf 'app;a 5\n\nno count\napp;b -3\r\napp;c 2\r\napp;d 1.5\n' >"$T/bad.folded"
run_flamed bad svg "$T/bad.folded" -o "$T/bad.svg"
expect_rc 0
well_formed "$T/bad.svg"
[[ $(wc -l <"$T/bad.err") == 1 ]] || fail "malformed lines: want one line on stderr, got: $(cat "$T/bad.err")"
grep -q "skipped 4 malformed lines of 6: lines 2 (blank), 3 (no count), 4 (CRLF line ending), ..." "$T/bad.err" ||
	fail "malformed report: $(cat "$T/bad.err")"
grep -q "dos2unix" "$T/bad.err" || fail "CRLF hint missing: $(cat "$T/bad.err")"
# As flamegraph.pl shows a fraction: rounded ("%.0f"), the percentage of the rounded count.
[[ $(title_of "$T/bad.svg" d) == "d (2 samples, 30.77%)" ]] || fail "fractional count: $(title_of "$T/bad.svg" d)"

# Empty, wholly malformed and all-zero inputs are errors (exit 1, one line on
# stderr) that still write a graph saying there were no samples, as
# flamegraph.pl does for the tools that always expect one.
no_samples() { # NAME: the run wrote a well-formed SVG that says so, and nothing else went wrong
	expect_rc 1
	well_formed "$T/$1.svg"
	[[ $(xmllint --xpath 'string(//*[local-name()="text"][@id="subtitle"])' "$T/$1.svg") == "No samples:"* ]] ||
		fail "$1: the SVG does not say there were no samples"
	[[ $(xmllint --xpath 'count(//*[local-name()="g"][@class="f"])' "$T/$1.svg") == 0 ]] || fail "$1: frames drawn"
}
: >"$T/empty.folded"
run_flamed empty svg "$T/empty.folded" -o "$T/empty.svg"
no_samples empty
grep -q "no folded stacks in it" "$T/empty.err" || fail "empty input: $(cat "$T/empty.err")"
printf 'garbage\nmore garbage\n' >"$T/garbage.folded"
run_flamed garbage svg "$T/garbage.folded" -o "$T/garbage.svg"
no_samples garbage
printf 'a;b 0\nc 0\n' >"$T/zero.folded"
run_flamed zero svg "$T/zero.folded" -o "$T/zero.svg"
no_samples zero
grep -q "every count is zero" "$T/zero.err" || fail "all-zero input: $(cat "$T/zero.err")"
[[ $(wc -l <"$T/zero.err") == 1 ]] || fail "all-zero input: not one line on stderr: $(cat "$T/zero.err")"
# Skipped lines are counted in the graph too: its subtitle and notes.
[[ $(xmllint --xpath 'string(//*[local-name()="text"][@id="subtitle"])' "$T/bad.svg") == "4 malformed input lines skipped" ]] ||
	fail "skipped lines: the SVG's subtitle does not count them"
xmllint --xpath 'string(//*[local-name()="desc"][@id="notes"])' "$T/bad.svg" | grep -q '^4 malformed input lines skipped$' ||
	fail "skipped lines: the SVG's notes do not count them"
run_flamed missing svg "$T/nonexistent.folded"
expect_rc 1
grep -q "cannot read .*nonexistent.folded: No such file" "$T/missing.err" || fail "missing file: $(cat "$T/missing.err")"

# Bad options: usage errors (exit 2) naming the option and what it wants.
for args in "--width 0" "--minwidth x" "--colors rainbow" "--bgcolors url(x)" "--sort size" "--nosuch" \
	"--height 0.5" "--fontsize 1e-300" "--fontwidth 0"; do
	# shellcheck disable=SC2086 # word splitting wanted
	run_flamed badopt svg $args "$T/basic.folded"
	expect_rc 2
	[[ $(wc -l <"$T/badopt.err") -le 2 ]] || fail "$args: more than a line or two of error: $(cat "$T/badopt.err")"
done

# Hostile names and option texts: well-formed, one script, nothing injected.
{
	printf 'p;<script>alert(1)</script> 3\n'
	printf 'p;]]><x/> 3\n'
	printf 'p;</script><script>alert(2)</script> 3\n'
	printf 'p;<!-- comment --> 3\n'
	printf 'p;" onload="alert(3) 3\n'
	printf "p;' onmouseover='alert(4) 3\n"
	printf 'p;&amp;&lt;& 3\n'
	printf 'p;ctl\001\002\033[31m\177 3\n'
	printf 'p;bad utf8 \377\376\300\257 \355\240\200 \357\277\276 3\n'
	printf 'p;tab\there 3\n'
	head -c 65536 /dev/zero | tr '\0' '<'
	printf ' 3\n'
} >"$T/hostile.folded"
run_flamed hostile svg --title '<script>alert(5)</script>]]>' --subtitle '" onload="x' \
	--notes '</desc><script>alert(6)</script>' --countname '<b>' --nametype '&' \
	--fonttype '"><script>' "$T/hostile.folded" -o "$T/hostile.svg"
expect_rc 0
well_formed "$T/hostile.svg"
[[ $(frames "$T/hostile.svg") -ge 11 ]] || fail "hostile.svg: only $(frames "$T/hostile.svg") frames"
xmllint --xpath 'string(//*[local-name()="text"][@id="title"])' "$T/hostile.svg" | grep -qF '<script>alert(5)</script>]]>' ||
	fail "the hostile title is not shown as text"

# --minwidth: narrow frames merge into one grey box that says what it stands for.
{
	echo "r;big 1000"
	for i in $(seq 1 30); do echo "r;tiny$i;below 1"; done
} >"$T/narrow.folded"
run_flamed narrow svg --minwidth 5 "$T/narrow.folded" -o "$T/narrow.svg"
expect_rc 0
well_formed "$T/narrow.svg"
xmllint --xpath 'string(//*[local-name()="title"][starts-with(., "30 frames narrower than 5 px")])' "$T/narrow.svg" |
	grep -q "30 frames narrower than 5 px, 30 below (30 samples" || fail "no merged box for 30 narrow frames"
run_flamed narrow_pct svg --minwidth 0.05% "$T/narrow.folded" -o "$T/narrow_pct.svg"
expect_rc 0
[[ $(frames "$T/narrow_pct.svg") -gt 30 ]] || fail "--minwidth 0.05%: narrow frames not drawn"

# --hash: a name has the same colour in two different graphs.
printf 'x;shared_fn 10\nx;other 5\n' >"$T/h1.folded"
printf 'y;z;q;shared_fn 3\ny;first 8\n' >"$T/h2.folded"
fill_of() { # FILE NAME
	xmllint --xpath "string(//*[local-name()=\"title\"][starts-with(., \"$2 (\")]/following-sibling::*[local-name()=\"rect\"]/@fill)" "$1"
}
run_flamed h1 svg --hash "$T/h1.folded" -o "$T/h1.svg"
run_flamed h2 svg --hash "$T/h2.folded" -o "$T/h2.svg"
[[ -n $(fill_of "$T/h1.svg" shared_fn) && $(fill_of "$T/h1.svg" shared_fn) == $(fill_of "$T/h2.svg" shared_fn) ]] ||
	fail "--hash: shared_fn is $(fill_of "$T/h1.svg" shared_fn) and $(fill_of "$T/h2.svg" shared_fn)"

# --cp: colours kept in a palette file between runs, even without --hash.
(cd "$T" && "$FLAMED" svg --cp h1.folded >"$T/cp1.svg") || fail "--cp run 1"
[[ -s $T/palette.map ]] || fail "--cp did not write palette.map"
grep -q '^shared_fn->rgb(' "$T/palette.map" || fail "palette.map: $(head -3 "$T/palette.map")"
(cd "$T" && "$FLAMED" svg --cp h2.folded >"$T/cp2.svg") || fail "--cp run 2"
[[ $(fill_of "$T/cp1.svg" shared_fn) == $(fill_of "$T/cp2.svg" shared_fn) ]] ||
	fail "--cp: shared_fn is $(fill_of "$T/cp1.svg" shared_fn) then $(fill_of "$T/cp2.svg" shared_fn)"
grep -q '^first->rgb(' "$T/palette.map" || fail "--cp: the second run's new name was not added"
# A palette.map that is a FIFO (someone else's, in a shared directory) is
# refused without being opened: the writer waiting in its open() stays there.
mkdir "$T/fifo_cp"
mkfifo "$T/fifo_cp/palette.map"
(exec 3>"$T/fifo_cp/palette.map" && touch "$T/fifo_cp/opened") &
writer=$!
BG_PIDS+=("$writer")
# Until the writer waits in open (/proc/PID/syscall: openat on x86-64 or arm64, open).
for ((i = 0; i < 100; i++)); do
	read -r nr _ <"/proc/$writer/syscall" 2>/dev/null || nr=
	[[ $nr == 257 || $nr == 56 || $nr == 2 ]] && break
	sleep 0.05
done
run_cmd cp_fifo sh -c "cd '$T/fifo_cp' && exec '$FLAMED' svg --cp '$T/h1.folded'"
sleep 0.2
[[ ! -e $T/fifo_cp/opened ]] || fail "--cp opened a FIFO named palette.map"
if [[ $RC -eq 0 ]] || ! grep -q '^flamed: cannot use palette.map: it is a FIFO, not a regular file' "$T/cp_fifo.err"; then
	fail "--cp with a FIFO: exit $RC: $(cat "$T/cp_fifo.err")"
fi
kill "$writer" 2>/dev/null || true

# Two count columns make a differential graph.
printf 'a;b 10 30\na;c 20 5\n' >"$T/two_col.folded"
run_flamed two_col svg "$T/two_col.folded" -o "$T/two_col.svg"
expect_rc 0
grep -q 'data-diff="1"' "$T/two_col.svg" || fail "two count columns did not make a differential graph"
# As flamegraph.pl: each frame coloured by the change of its own samples
# (max 20: b +20 full red, c -15 blue 210 x 5 / 20 = 52, a none: white), its
# tooltip the change in % of the whole.
printf 'a;b 10 30\na;c 20 5\n' >"$T/two_col.folded"
run_flamed two_col svg "$T/two_col.folded" -o "$T/two_col.svg"
[[ $(title_of "$T/two_col.svg" b) == "b (30 samples, 85.71%; +57.14%)" ]] ||
	fail "two-column title: $(title_of "$T/two_col.svg" b)"
[[ $(title_of "$T/two_col.svg" c) == "c (5 samples, 14.29%; -42.86%)" ]] ||
	fail "two-column title: $(title_of "$T/two_col.svg" c)"
[[ $(title_of "$T/two_col.svg" a) == "a (35 samples, 100.00%; 0.00%)" ]] ||
	fail "two-column title: $(title_of "$T/two_col.svg" a)"
for f in a:255,255,255 b:255,0,0 c:52,52,255; do
	[[ $(fill_of "$T/two_col.svg" "${f%%:*}") == "rgb(${f#*:})" ]] ||
		fail "two-column colour of ${f%%:*}: $(fill_of "$T/two_col.svg" "${f%%:*}"), want rgb(${f#*:})"
done

# flamed diff: widths from B, deltas, --normalize, --strip-hex, --folded.
printf 'app;main;grow 10\napp;main;shrink 30\napp;main;gone 10\napp;f+0x1a 5\n' >"$T/a.folded"
printf 'app;main;grow 40\napp;main;shrink 10\napp;main;new 10\napp;f+0x2b 5\n' >"$T/b.folded"
run_flamed diff diff "$T/a.folded" "$T/b.folded" -o "$T/diff.svg"
expect_rc 0
well_formed "$T/diff.svg"
[[ $(title_of "$T/diff.svg" main) == "main (60 samples, 92.31%; before: 50, +10, +20.00%)" ]] ||
	fail "diff: $(title_of "$T/diff.svg" main)"
[[ $(title_of "$T/diff.svg" new) == "new (10 samples, 15.38%; before: 0, +10, new)" ]] || fail "diff: $(title_of "$T/diff.svg" new)"
[[ -z $(title_of "$T/diff.svg" gone) ]] || fail "diff: a frame gone in B is drawn"
grep -q ">Differential Flame Graph<" "$T/diff.svg" || fail "diff: default title"
run_flamed diff_folded diff --folded --strip-hex "$T/a.folded" "$T/b.folded"
expect_rc 0
# As difffolded.pl -s: each address becomes "0x...".
cat >"$T/want.folded" <<'WANT'
app;f+0x... 5 5
app;main;gone 10 0
app;main;grow 10 40
app;main;new 0 10
app;main;shrink 30 10
WANT
diff -u "$T/want.folded" "$T/diff_folded.out" || fail "diff --folded --strip-hex output"
run_flamed diff_norm diff --folded --normalize "$T/a.folded" <(printf 'app;main;grow 110\n')
expect_rc 0
grep -qx 'app;main;grow 20 110' "$T/diff_norm.out" || fail "--normalize: $(cat "$T/diff_norm.out")"
# As difffolded.pl -n: each stack's count before is int(count x 5 / 3), a whole number.
run_flamed diff_int diff --folded --normalize <(printf 'x 1\ny 2\n') <(printf 'x 5\n')
expect_rc 0
printf 'x 1 5\ny 3 0\n' | diff -u - "$T/diff_int.out" || fail "--normalize: not difffolded.pl's whole numbers"
# Fractions as Perl prints them: 15 significant digits.
run_flamed diff_frac diff --folded <(printf 'a 0.1\n') <(printf 'a 0.2\nb 0.30000000000000004\n')
expect_rc 0
printf 'a 0.1 0.2\nb 0 0.3\n' | diff -u - "$T/diff_frac.out" || fail "diff --folded: fractions"
# An empty AFTER, like an empty BEFORE, is accepted: --folded writes what is
# gone; the graph of AFTER has nothing to draw (a "No samples" graph, exit 1).
: >"$T/nothing.folded"
run_flamed to_nothing diff --folded "$T/a.folded" "$T/nothing.folded"
expect_rc 0
grep -qx 'app;main;grow 10 0' "$T/to_nothing.out" || fail "diff --folded to an empty AFTER: $(cat "$T/to_nothing.out")"
run_flamed to_nothing_svg diff "$T/a.folded" "$T/nothing.folded" -o "$T/to_nothing.svg"
expect_rc 1
well_formed "$T/to_nothing.svg"
grep -q '>No samples after' "$T/to_nothing.svg" || fail "diff to an empty AFTER: the graph does not say so"
run_flamed diff_args diff "$T/a.folded"
expect_rc 2

# A frame name with a '-' and digits at its end is a name, not a negative count.
printf 'bash-1234 5\njava;pool-1-thread-1 7\n' >"$T/dash.folded"
run_flamed dash svg "$T/dash.folded" -o "$T/dash.svg"
expect_rc 0
[[ ! -s $T/dash.err ]] || fail "names ending in -N were taken for negative counts: $(cat "$T/dash.err")"

# Stacks deeper than libxml2's nesting limit (256) still give well-formed XML.
for depth in 300 8192; do
	awk -v n=$depth 'BEGIN { s = "f0"; for (i = 1; i < n; i++) s = s ";f" i; print s " 1"; print "other 1" }' >"$T/deep.folded"
	run_flamed deep svg --minwidth 0 "$T/deep.folded" -o "$T/deep$depth.svg"
	expect_rc 0
	well_formed "$T/deep$depth.svg"
	[[ $(frames "$T/deep$depth.svg") == $((depth + 1)) ]] || fail "deep$depth.svg: $(frames "$T/deep$depth.svg") frames"
done

# diff --folded writes counts that read back exactly (no exponents); an empty BEFORE is fine.
printf 'a;b 1234567.25\n' >"$T/fa.folded"
printf 'a;b 3\na;c 0.125\n' >"$T/fb.folded"
run_flamed frac diff --folded "$T/fa.folded" "$T/fb.folded" -o "$T/frac.folded"
expect_rc 0
printf 'a;b 1234567.25 3\na;c 0 0.125\n' | diff -u - "$T/frac.folded" || fail "diff --folded with fractions"
run_flamed frac_back svg "$T/frac.folded" -o "$T/frac.svg"
expect_rc 0
[[ ! -s $T/frac_back.err ]] || fail "diff --folded output does not read back: $(cat "$T/frac_back.err")"
: >"$T/none.folded"
run_flamed from_nothing diff "$T/none.folded" "$T/fb.folded" -o "$T/from_nothing.svg"
expect_rc 0
[[ $(title_of "$T/from_nothing.svg" b) == "b (3 samples, 96.00%; before: 0, +3, new)" ]] ||
	fail "diff from an empty BEFORE: $(title_of "$T/from_nothing.svg" b)"

# record --flamechart: a usage error (record's stacks have no time order).
run_flamed chart record --flamechart -a -d 1 -o "$T/chart.svg"
expect_rc 2

# As root: -o through a symlink planted by another user in a sticky
# world-writable directory (/tmp) is refused, and the target is untouched.
if [[ $(id -u) -eq 0 ]] && id nobody >/dev/null 2>&1; then
	mkdir -m 1777 "$T/sticky"
	echo precious >"$T/target"
	chmod 600 "$T/target"
	ln -s "$T/target" "$T/sticky/out.svg"
	chown -h nobody "$T/sticky/out.svg"
	run_flamed planted svg "$T/basic.folded" -o "$T/sticky/out.svg"
	expect_rc 1
	grep -q "refusing to write .*symlink of uid 65534" "$T/planted.err" || fail "planted symlink: $(cat "$T/planted.err")"
	[[ $(cat "$T/target") == precious && $(stat -c %a "$T/target") == 600 ]] || fail "the symlink's target was changed"
	# Our own symlink is followed: the target is replaced, the link stays.
	echo old >"$T/mine.svg"
	ln -s "$T/mine.svg" "$T/sticky/own.svg"
	run_flamed own svg "$T/basic.folded" -o "$T/sticky/own.svg"
	expect_rc 0
	[[ -L $T/sticky/own.svg ]] && grep -q "<svg" "$T/mine.svg" || fail "our own symlink was not followed"
else
	note "not root (or no user nobody): the planted-symlink case is not run"
fi

pass "svg and diff: files, stdin, malformed lines, errors, hostile names, --minwidth, --hash, --cp, diffs"
