#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: how fast the SVG's script zooms a flame graph of about 100,000
# drawn frames in headless Chromium, against the goal of 100 ms per click.
#
#   tests/bench/svg_click.sh [RUNS]
#
# Generates a folded file whose graph, drawn with `flamed svg --minwidth 0`
# (every frame drawn, none merged), has about 100,000 frames: a deterministic
# pseudo-random call tree, 6 to 35 frames below main, hot paths and a long
# tail of rare stacks, most frames narrower than a pixel as in real profiles.
# Then tests/bench/svg_click.js loads it and prints the load time and, for a
# frame near the root and a mid-level one, the time of a click-zoom (real mouse
# events; from the click event to the second animation frame after it) and of
# the Reset Zoom after it: first (cold) click, median, min, max of RUNS
# (default 7). Exits 1 when a median click-zoom is over GOAL_MS (100).
#
# Environment: FLAMED (build/flamed), STACKS (8000 distinct stacks, about
# 104,000 frames), RUNS, GOAL_MS, CHROMIUM (/usr/bin/chromium), KEEP (a
# directory to leave the folded file and the SVG in). Needs node and chromium;
# exits 77 when one is missing or flamed has no svg command. Not part of ctest:
# timings want a quiet machine.
set -euo pipefail
export LC_ALL=C

SRCDIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
FLAMED=${FLAMED:-$SRCDIR/build/flamed}
STACKS=${STACKS:-8000}
RUNS=${1:-${RUNS:-7}}
export GOAL_MS=${GOAL_MS:-100} CHROMIUM=${CHROMIUM:-/usr/bin/chromium}

# shellcheck source=tests/bench/lib.sh
source "$SRCDIR/tests/bench/lib.sh"

[[ $STACKS =~ ^[0-9]+$ && $STACKS -gt 0 ]] || die "STACKS must be a positive number, not '$STACKS'"
[[ $RUNS =~ ^[0-9]+$ && $RUNS -gt 0 ]] || die "RUNS must be a positive number, not '$RUNS'"
[[ -x $FLAMED ]] || die "no flamed binary at $FLAMED (build it, or set FLAMED)"
"$FLAMED" svg --help >/dev/null 2>&1 || skip "$FLAMED has no svg command"
command -v node >/dev/null || skip "needs node (Debian: apt-get install nodejs)"
[[ -x $CHROMIUM ]] || skip "needs chromium at $CHROMIUM (Debian: apt-get install chromium)"

if [[ -n ${KEEP:-} ]]; then
	W=$KEEP
	mkdir -p "$W"
else
	W=$(mktemp -d "${TMPDIR:-/tmp}/flamed-bench.XXXXXX")
	trap 'rm -rf "$W"' EXIT
fi

# The call tree: at each level a frame picks one of 3 or 4 callees, skewed to
# the first; counts are mostly small with a few hot stacks. Park-Miller random
# numbers: exact in awk's doubles, so every awk gives the same file.
awk -v STACKS="$STACKS" '
function rnd() {
	seed = (seed * 16807) % 2147483647
	return seed / 2147483647
}
BEGIN {
	seed = 42
	split("alloc parse render flush read write lookup hash insert update encode decode compress sort merge visit walk emit scan match", verb, " ")
	split("buffer node table tree page entry frame token record block string index cache queue request", noun, " ")
	for (s = 0; s < STACKS; s++) {
		d = 6 + int(rnd() * 30)
		stack = "bench;main"
		for (l = 0; l < d; l++) {
			fan = l < 4 ? 4 : 3
			k = int(rnd() * rnd() * fan * 1.5) % fan
			stack = stack ";" verb[1 + (l * 7 + k * 3) % 20] "_" noun[1 + (l + k * 5) % 15] "_" l "_" k
		}
		count[stack] += 1 + int(400 * rnd() ^ 6)
	}
	for (s in count) print s, count[s]
}' | sort >"$W/bench.folded"

"$FLAMED" svg --minwidth 0 --title "svg_click bench" "$W/bench.folded" -o "$W/bench.svg"
frames=$(sed '/<script/,$d' "$W/bench.svg" | grep -c '<g class="f' || true)
echo "bench: $(wc -l <"$W/bench.folded") stacks -> $frames frames, $(($(stat -c %s "$W/bench.svg") / 1000000)) MB of SVG"

node "$SRCDIR/tests/bench/svg_click.js" "$W/bench.svg" "$RUNS"
