#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Time ranges over a daemon's snapshot directory, built by hand (no root, no
# daemon): `flamed svg --from --to DIR` merges exactly the snapshots whose
# intervals overlap the range, from .folded or (without one) .pb.gz, skips
# the SVG-only ones, and says gaps, uncovered ends and partial snapshots in
# the subtitle and on stderr; relative times, an offset, local time with TZ;
# bad TIMEs (exit 2, one line); `flamed diff --before R --after R DIR`; and
# no snapshot in the range (exit 1, one line, the "No samples" graph).
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

D=$T/snaps
mkdir -p "$D"

# Ten one-minute snapshots, the first starting 15 minutes before now's
# minute: minutes 4 and 5 are missing (the daemon was down), 2 and 7 have
# only a pprof file, 8 an SVG too, 9 an SVG only. Snapshot k holds
# "proc;main;f_k" (k + 1) * 10 times and "proc;main;common" 7 times.
NOW=$(date +%s)
BASE=$((NOW / 60 * 60 - 15 * 60))
# The range texts are checked as a day's ("2026-11-22 03:00-03:10 UTC"): not across midnight.
[[ $(date -u -d "@$((BASE - 300))" +%F) == $(date -u -d "@$((NOW + 120))" +%F) ]] ||
	skip "it is shortly after midnight UTC: the snapshots would span two days; run it again in 20 minutes"
start() { echo $((BASE + $1 * 60)); }
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
hm() { date -u -d "@$1" +%H:%M; }
name() { date -u -d "@$(start "$1")" +%Y-%m-%dT%H-%M-%SZ; }
count() { echo $((($1 + 1) * 10 + 7)); }
for k in 0 1 2 3 6 7 8 9; do
	n=$D/$(name "$k")
	printf 'proc;main;common 7\nproc;main;f_%d %d\n' "$k" $(((k + 1) * 10)) >"$n.folded"
	if [[ $k == 2 || $k == 7 ]]; then
		run_flamed convert-$k convert "$n.folded" -o "$n.pb.gz"
		expect_rc 0
		rm "$n.folded"
	fi
	[[ $k == 8 || $k == 9 ]] && echo '<svg/>' >"$n.svg"
	[[ $k == 9 ]] && rm "$n.folded"
	# Written when the interval ended, a little after.
	for f in "$n".*; do
		touch -d "@$(($(start "$k") + 60)).3" "$f"
	done
done
# Not snapshots: the latest links, a daemon temporary file, another name.
ln -s "$(name 8).folded" "$D/latest.folded"
echo 'proc;main;bogus 1000' >"$D/.tmp-$(name 3).folded"
echo 'proc;main;bogus 1000' >"$D/$(name 3).folded.bak"
# A symlink with a snapshot's name is not one either.
ln -s "$D/$(name 8).folded" "$D/$(date -u -d "@$(start 10)" +%Y-%m-%dT%H-%M-%SZ).folded"

sum() {
	local n=0 k
	for k in "$@"; do
		n=$((n + $(count "$k")))
	done
	echo "$n"
}
svg_total() {
	grep -o 'data-total="[0-9]*"' "$1" | head -n 1 | tr -dc 0-9
}
subtitle() {
	sed -n 's/.*<text id="subtitle"[^>]*>\([^<]*\)<.*/\1/p' "$1"
}
# expect_svg NAME TOTAL: the run NAME exited 0 and drew TOTAL samples.
expect_svg() {
	expect_rc 0
	local got
	got=$(svg_total "$T/$1.svg")
	[[ $got == "$2" ]] || fail "$1: $got samples drawn, expected $2 (subtitle: $(subtitle "$T/$1.svg"))"
	note "$1: $(subtitle "$T/$1.svg")"
}

# --- the whole directory, and exactly the first ten minutes --------------------
run_flamed all svg "$D" -o "$T/all.svg"
expect_svg all "$(sum 0 1 2 3 6 7 8)"
grep -q 'skipped 1 snapshot with only a graph, SVG or HTML' "$T/all.err" || fail "all: the SVG-only snapshot is not said: $(cat "$T/all.err")"
sub=$(subtitle "$T/all.svg")
[[ $sub == *"7 snapshots; 1 gap ($(hm "$(start 4)")-$(hm "$(start 6)"))"* ]] || fail "all: subtitle: $sub"
[[ $sub == *"1 skipped (graphs only)"* ]] || fail "all: subtitle does not count the SVG-only one: $sub"
grep -q 'bogus' "$T/all.svg" && fail "all: a file that is no snapshot was read"

run_flamed exact svg --from "$(iso "$(start 0)")" --to "$(iso "$(start 9)")" "$D" -o "$T/exact.svg"
expect_svg exact "$(sum 0 1 2 3 6 7 8)"
sub=$(subtitle "$T/exact.svg")
want="$(date -u -d "@$(start 0)" '+%Y-%m-%d %H:%M')-$(hm "$(start 9)") UTC: 7 snapshots; 1 gap ($(hm "$(start 4)")-$(hm "$(start 6)"))"
[[ $sub == "$want" ]] || fail "exact: subtitle '$sub', expected '$want'"
grep -q "gap from $(date -u -d "@$(start 4)" '+%Y-%m-%d %H:%M'):00 to $(date -u -d "@$(start 6)" '+%Y-%m-%d %H:%M'):00 UTC (2 min): no snapshot" "$T/exact.err" ||
	fail "exact: the gap is not said on stderr: $(cat "$T/exact.err")"
[[ $(wc -l <"$T/exact.err") == 1 ]] || fail "exact: says more than the gap: $(cat "$T/exact.err")"
grep -q 'proc;main;f_7\|f_7 (' "$T/exact.svg" || fail "exact: pprof-only snapshot 7 not drawn"

# --- partial at both ends, from the middle of 1 to the middle of 3 -------------
run_flamed partial svg --from "$(iso $(($(start 1) + 30)))" --to "$(iso $(($(start 3) + 30)))" "$D" -o "$T/partial.svg"
expect_svg partial "$(sum 1 2 3)"
sub=$(subtitle "$T/partial.svg")
[[ $sub == *": 3 snapshots; first and last partial" ]] || fail "partial: subtitle: $sub"
[[ $(grep -c 'is only partly in the range: its samples cannot be split' "$T/partial.err") == 2 ]] ||
	fail "partial: stderr does not name both partial snapshots: $(cat "$T/partial.err")"
grep -q "$(name 1) (" "$T/partial.err" && grep -q "$(name 3) (" "$T/partial.err" || fail "partial: wrong snapshots named: $(cat "$T/partial.err")"

# --- relative: from 5 min before the first to now: both ends uncovered ---------
d0=$(($(date +%s) - $(start 0) + 300))
run_flamed relative svg --from "-${d0}s" "$D" -o "$T/relative.svg"
expect_svg relative "$(sum 0 1 2 3 6 7 8)"
sub=$(subtitle "$T/relative.svg")
[[ $sub == *"none before $(hm "$(start 0)")"* ]] || fail "relative: no uncovered start in the subtitle: $sub"
[[ $sub == *"none after $(hm "$(start 9)")"* ]] || fail "relative: no uncovered end in the subtitle: $sub"
grep -q 'the range starts before the first one' "$T/relative.err" || fail "relative: stderr: $(cat "$T/relative.err")"
grep -q 'the range ends after the last one' "$T/relative.err" || fail "relative: stderr: $(cat "$T/relative.err")"
# -Nm-Ss: from (about) the start of snapshot 6 on, to a minute ago.
d6=$(($(date +%s) - $(start 6)))
run_flamed relative2 svg --from "-$((d6 / 60))m$((d6 % 60))s" --to -1m "$D" -o "$T/relative2.svg"
expect_svg relative2 "$(sum 6 7 8)"

# --- an offset, and local time with TZ: the same range as in UTC ---------------
off=$(date -u -d "@$(($(start 1) + 3600))" +%Y-%m-%dT%H:%M:%S+01:00)
run_flamed offset svg --from "$off" --to "$(iso "$(start 3)")" "$D" -o "$T/offset.svg"
expect_svg offset "$(sum 1 2)"
loc_from=$(date -u -d "@$(($(start 6) + 3 * 3600))" '+%Y-%m-%d %H:%M')
loc_to=$(date -u -d "@$(($(start 8) + 3 * 3600))" '+%Y-%m-%dT%H:%M')
TZ=XST-3 run_flamed local svg --from "$loc_from" --to "$loc_to" "$D" -o "$T/local.svg"
expect_svg local "$(sum 6 7)"
[[ $(subtitle "$T/local.svg") == *"$(hm "$(start 6)")-$(hm "$(start 8)") UTC: 2 snapshots" ]] ||
	fail "local: the subtitle is not the range in UTC: $(subtitle "$T/local.svg")"

# --- bad TIMEs: exit 2, one line naming the problem and the forms --------------
for bad in 2026-13-01 yesterday -1x 2026-11-22T03:00+25:00 '-30m1h'; do
	run_flamed bad svg --from "$bad" "$D" -o "$T/bad.svg"
	expect_rc 2
	[[ $(wc -l <"$T/bad.err") == 1 ]] || fail "bad TIME '$bad': not one line: $(cat "$T/bad.err")"
	grep -q "^flamed: --from '$bad': .*; TIME is 2026-11-22T03:00:00Z, " "$T/bad.err" ||
		fail "bad TIME '$bad': $(cat "$T/bad.err")"
	[[ ! -e $T/bad.svg ]] || fail "bad TIME '$bad': an SVG was written"
done
run_flamed backwards svg --from -1m --to -2h "$D"
expect_rc 2
grep -q 'is not before --to' "$T/backwards.err" || fail "--from after --to: $(cat "$T/backwards.err")"

# --- diff of two ranges: each side the sum of its snapshots --------------------
run_flamed diff diff --folded --before "$(iso "$(start 0)")..$(iso "$(start 3)")" \
	--after "$(iso "$(start 6)").." "$D"
expect_rc 0
got=$(awk '{ b += $(NF - 1); a += $NF } END { printf "%d %d\n", b, a }' "$T/diff.out")
[[ $got == "$(sum 0 1 2) $(sum 6 7 8)" ]] || fail "diff: totals $got, expected $(sum 0 1 2) $(sum 6 7 8)"
grep -q '^proc;main;common 21 21$' "$T/diff.out" || fail "diff: common frame: $(grep common "$T/diff.out")"
grep -q '^proc;main;f_7 0 80$' "$T/diff.out" || fail "diff: f_7 (pprof only) not after: $(cat "$T/diff.out")"
run_flamed diff_svg diff --before "..$(iso "$(start 3)")" --after "$(iso "$(start 6)").." "$D" -o "$T/diff.svg"
expect_rc 0
grep -q 'data-diff="1"' "$T/diff.svg" || fail "diff: not a differential graph"
grep -q '<title>common (21 samples' "$T/diff.svg" || fail "diff: common frame not 21 samples: $(grep -o '<title>common[^<]*' "$T/diff.svg")"
grep -q "<title>proc ($(sum 6 7 8) samples" "$T/diff.svg" ||
	fail "diff: root frame is not the after total $(sum 6 7 8): $(grep -o '<title>proc[^<]*' "$T/diff.svg")"
sub=$(subtitle "$T/diff.svg")
[[ $sub == "before "*": 3 snapshots | after "*": 3 snapshots; none after"* ]] || fail "diff: subtitle: $sub"
run_flamed diff_bad diff --before -1h --after -1h.. "$D"
expect_rc 2
[[ $(wc -l <"$T/diff_bad.err") == 1 ]] && grep -q "^flamed: --before '-1h': no '..'" "$T/diff_bad.err" ||
	fail "diff, bad RANGE: $(cat "$T/diff_bad.err")"

# --- no snapshot in the range: exit 1, one line, the "No samples" graph --------
run_flamed none svg --from "$(iso $(($(start 4) + 10)))" --to "$(iso $(($(start 5) + 50)))" "$D" -o "$T/none.svg"
expect_rc 1
[[ $(wc -l <"$T/none.err") == 1 ]] && grep -q '^flamed: .*: no snapshot in .* (it has 8, from ' "$T/none.err" ||
	fail "none: $(cat "$T/none.err")"
grep -q 'No samples: no snapshot in' "$T/none.svg" || fail "none: no 'No samples' graph"
# Only the SVG-only one: nothing flamed can read.
run_flamed svgonly svg --from "$(iso "$(start 9)")" --to "$(iso "$(start 10)")" "$D" -o "$T/svgonly.svg"
expect_rc 1
grep -q 'no snapshot flamed can read' "$T/svgonly.err" || fail "svgonly: $(cat "$T/svgonly.err")"
# Not a directory.
run_flamed notdir svg --from -1h "$D/$(name 0).folded"
expect_rc 1
grep -q 'not a directory' "$T/notdir.err" || fail "notdir: $(cat "$T/notdir.err")"

pass "ranges over snapshot directories: totals exact, gaps, partial and uncovered ends said, TIME forms, diff"
