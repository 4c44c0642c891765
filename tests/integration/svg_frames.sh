#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# flamed svg draws the frames flamegraph.pl draws: for every folded file in
# tests/fixtures/svgframes and every folded output of the collapse fixtures
# (recordings of frame pointers, DWARF, the kernel, JIT, node, a JVM...), the
# frames of the SVG (name, depth, x, width; not the grey boxes of merged
# narrow frames, which flamegraph.pl leaves out) are those of
# expected/NAME.frames, written by model.py, a model of flamegraph.pl's
# layout (its sorted lines, frames merged only with the line before, the
# widths of a 1200-pixel graph), to 0.1 pixel. And flamed diff --folded
# writes what difffolded_model.py, a model of difffolded.pl, writes.
FX=$(readlink -f "$(dirname "${BASH_SOURCE[0]}")/../fixtures")
AWK=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/svg_frames.awk
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[[ -z ${SRCDIR:-} ]] || FX=$(readlink -f "$SRCDIR/tests/fixtures")
[[ -d $FX/svgframes/expected ]] || fail "no expected frames in $FX/svgframes"

TAB=$(printf '\t')
files=0 frames=0 bad=0
check() { # NAME FOLDED
	local name=$1 in=$2 want=$FX/svgframes/expected/$1.frames
	[[ -e $want ]] || fail "no $want (tests/fixtures/svgframes/make.sh writes it)"
	"$FLAMED" svg "$in" -o "$T/$name.svg" 2>"$T/$name.err" || fail "flamed svg $in: exit $? $(cat "$T/$name.err")"
	awk -f "$AWK" "$T/$name.svg" | sort -t "$TAB" -k1,1n -k2,2n >"$T/$name.frames"
	# Same frames in the same order; x and width within 0.056 px of the
	# model's, which flamegraph.pl rounds to 0.1 (flamed writes 0.01).
	if ! awk -F "$TAB" -v want="$want" '
		{ if ((getline w < want) <= 0) { print "extra frame: " $0; bad = 1; exit 1 }
		  split(w, e, "\t")
		  dx = $2 - e[2]; dw = $3 - e[3]
		  if ($1 != e[1] || $4 != e[4] || dx > 0.056 || dx < -0.056 || dw > 0.056 || dw < -0.056) {
			print "got  " $0; print "want " w; bad = 1; exit 1 } }
		END { if (!bad && (getline w < want) > 0) { print "missing frame: " w; exit 1 } }' \
		"$T/$name.frames" >"$T/$name.diff"; then
		echo "MISMATCH: $name" >&2
		head -n 4 "$T/$name.diff" >&2
		bad=$((bad + 1))
	fi
	files=$((files + 1))
	frames=$((frames + $(wc -l <"$want")))
}
for f in "$FX"/svgframes/*.folded; do
	check "$(basename "$f" .folded)" "$f"
done
for f in "$FX"/perfscript/expected/*.folded; do
	check "perfscript.$(basename "$f" .folded)" "$f"
done
# flamed diff --folded writes what difffolded.pl writes (difffolded_model.py),
# byte for byte, sorted: each pair of DIFF_PAIRS with no option, -n, -s, both.
diffs=0 diff_lines=0
while read -r name a b; do
	for o in "" n s ns; do
		args=()
		[[ $o != *n* ]] || args+=(--normalize)
		[[ $o != *s* ]] || args+=(--strip-hex)
		want=$FX/svgframes/expected/$name${o:+.$o}.diff
		(cd "$FX/svgframes" && "$FLAMED" diff --folded "${args[@]}" "$a" "$b") >"$T/d.out" 2>"$T/d.err" ||
			fail "flamed diff --folded ${args[*]} $a $b: $(cat "$T/d.err")"
		if ! cmp -s "$want" "$T/d.out"; then
			echo "MISMATCH: diff $name ${args[*]}" >&2
			diff "$want" "$T/d.out" | head -n 4 >&2
			bad=$((bad + 1))
		fi
		diffs=$((diffs + 1))
		diff_lines=$((diff_lines + $(wc -l <"$want")))
	done
done <"$FX/svgframes/DIFF_PAIRS"
[[ $files -ge 100 && $diffs -ge 32 ]] || fail "only $files graphs and $diffs diffs"
[[ $bad -eq 0 ]] || fail "$bad of $files graphs and $diffs diffs differ from flamegraph.pl's and difffolded.pl's (above)"
pass "flamed svg: the frames flamegraph.pl draws, $frames frames in $files graphs; flamed diff --folded: difffolded.pl's $diff_lines lines in $diffs diffs"
