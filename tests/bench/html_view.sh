#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: flamed's HTML flame graph (`flamed svg --format html`, every frame, drawn on a
# canvas) against its SVGs, in headless Chromium, for issue 19's goals.
#
#   tests/bench/html_view.sh [RUNS]
#
# For each profile, side by side: the HTML, the default SVG (`flamed svg`, frames narrower than
# 0.1 px merged) and the all-frames SVG (`flamed svg --minwidth 0`):
#   - file size, frames (the HTML's flamed-meta "frames"; the SVG's <g class="f"> drawn frames
#     and <g class="f m"> merged boxes) and the time flamed took to write it;
#   - load: first paint and ready, ms after navigation start (HTML: the viewer's marks
#     flamed-first-paint and flamed-ready; SVG: the browser's first-paint entry and the load
#     event's end), and the JS heap once ready;
#   - click-zoom near the root and mid-level, Reset Zoom and search, main-thread ms from the
#     real input event to the second animation frame after it (tests/bench/html_view.js), and the
#     longest main-thread task and busy time of one traced run of each.
# Medians of RUNS (default 5); the all-frames SVG loads in tens of seconds: measured once.
# Profiles (PROFILES, default "main deep 1m"; "2m" adds 2,000,000 frames):
#   main  ~160,000 frames, ~121,000 samples, 20,600 stacks: PROFILE (a folded file) if set, else
#         tests/bench/gen_folded.py --mb 0 --stacks 20600 --seed 3 (162,740 frames, 121,716
#         samples, 62 levels);
#   deep  250 stacks 5,000 frames deep branching off each other (prefixes shared, most of the
#         way down), and 2,000 shallow ones: ~195,000 frames;
#   1m    gen_folded.py --mb 0 --stacks 131500 --seed 1: ~1,000,000 frames (its all-frames SVG:
#         size only);
#   2m    gen_folded.py --mb 0 --stacks 265000 --seed 1: ~2,000,000 frames (likewise).
# Prints a table per profile, then "goal: PROFILE html NAME VALUE <= 30ms ok|MISSED" for the
# HTML's click-zoom near and mid, Reset Zoom and search (medians). Missed goals do not fail it.
#
# Environment: FLAMED (build/flamed), RUNS, PROFILES, PROFILE, ALLSVG (0: no all-frames SVG),
# GOAL_MS (30), TRACE (0: no traced runs), CHROMIUM (/usr/bin/chromium), KEEP (a directory to
# keep the generated files in; generated folded files found there are reused), PYTHON. Needs node
# and chromium; exits 77 when one is missing or flamed cannot write HTML. Not part of ctest.
set -euo pipefail
export LC_ALL=C

SRCDIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
FLAMED=${FLAMED:-$SRCDIR/build/flamed}
RUNS=${1:-${RUNS:-5}}
PROFILES=${PROFILES:-main deep 1m}
ALLSVG=${ALLSVG:-1}
GOAL_MS=${GOAL_MS:-30}
PYTHON=${PYTHON:-python3}
export CHROMIUM=${CHROMIUM:-/usr/bin/chromium} TRACE=${TRACE:-1}

# shellcheck source=tests/bench/lib.sh
source "$SRCDIR/tests/bench/lib.sh"

[[ $RUNS =~ ^[0-9]+$ && $RUNS -gt 0 ]] || die "RUNS must be a positive number, not '$RUNS'"
[[ -x $FLAMED ]] || die "no flamed binary at $FLAMED (build it, or set FLAMED)"
command -v node >/dev/null || skip "needs node (Debian: apt-get install nodejs)"
[[ -x $CHROMIUM ]] || skip "needs chromium at $CHROMIUM (Debian: apt-get install chromium)"
command -v "$PYTHON" >/dev/null || skip "needs $PYTHON"
[[ -z ${PROFILE:-} || -r $PROFILE ]] || die "cannot read PROFILE=$PROFILE"

bench_workdir
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$W"' EXIT
printf 'a;b 1\n' >"$W/probe.folded"
"$FLAMED" svg --format html "$W/probe.folded" -o "$W/probe.html" >/dev/null 2>&1 &&
	grep -q 'id="flamed-meta"' "$W/probe.html" || skip "$FLAMED cannot write HTML (svg --format html)"

now_ms() { date +%s%3N; }

# The 5,000-deep profile: deterministic (Python's random with a fixed seed).
gen_deep() {
	"$PYTHON" - <<'EOF'
import random, sys
D, NDEEP, NSHALLOW = 5000, 250, 2000
rng = random.Random(19)
verbs = "parse eval visit walk emit lower fold check resolve expand rewrite match".split()
nouns = "expr term factor node block stmt call list tree type scope pattern".split()
def name():
    return f"{rng.choice(verbs)}_{rng.choice(nouns)}"
stacks = {}
def add(s, c):
    k = ";".join(s)
    stacks[k] = stacks.get(k, 0) + c
# Each deep stack branches off an earlier one, mostly far down (the max of 7 uniforms).
deep = [["deep", "main"] + [name() for _ in range(D - 2)]]
while len(deep) < NDEEP:
    b = deep[rng.randrange(len(deep))]
    cut = 3 + int(max(rng.random() for _ in range(7)) * (D - 4))
    deep.append(b[:cut] + [name() for _ in range(D - cut)])
for s in deep:
    add(s, 5 * (1 + int(rng.paretovariate(1.2))))
shallow = []
while len(stacks) < NDEEP + NSHALLOW:
    if shallow and rng.random() < 0.8:
        b = shallow[rng.randrange(len(shallow))]
        s = b[:2 + rng.randrange(len(b) - 1)] + [name() for _ in range(rng.randrange(1, 20))]
    else:
        s = ["deep", "worker"] + [name() for _ in range(rng.randrange(3, 30))]
    shallow.append(s)
    add(s, 1 + int(rng.paretovariate(1.2)))
out = sys.stdout
for k in sorted(stacks):
    out.write(f"{k} {stacks[k]}\n")
EOF
}

# gen NAME CMD...: $W/NAME.folded from CMD's output, unless KEEP already has it.
gen() {
	local name=$1
	shift
	if [[ -n ${KEEP:-} && -s $W/$name.folded ]]; then
		say "reusing $W/$name.folded"
		return
	fi
	say "generating $name.folded"
	"$@" >"$W/$name.folded.tmp" 2>"$W/$name.gen.err" || die "generating $name failed: $(tail -n 3 "$W/$name.gen.err")"
	mv "$W/$name.folded.tmp" "$W/$name.folded"
}

# write OUT ARGS...: runs flamed svg ARGS -o OUT; prints the ms it took.
write() {
	local out=$1 t
	shift
	t=$(now_ms)
	"$FLAMED" svg "$@" -o "$out" 2>"$out.err" || die "flamed svg $* failed: $(tail -n 3 "$out.err")"
	echo $(($(now_ms) - t))
}

# svg_counts FILE: "DRAWN MERGED", its <g class="f"> and <g class="f m"> (the script after the
# frames is not counted).
svg_counts() {
	sed '/<script/,$d' "$1" | grep -o '<g class="f[ m]*"' | awk '/f m/ { m++; next } { f++ } END { print f + 0, m + 0 }'
}

# profile NAME FOLDED SEARCH ABOUT ALLLOAD: writes the files and appends the profile to CONFIG.
first=1
profile() {
	local name=$1 in=$2 search=$3 about=$4 allload=$5 ms frames counts files
	say "$name: writing the HTML and the SVGs"
	ms=$(write "$W/$name.html" --format html "$in")
	frames=$(grep -o '"frames":[0-9]*' "$W/$name.html" | head -n 1 | cut -d: -f2)
	files=$(printf '{"label":"html","kind":"html","path":"%s","runs":%d,"load":true,"interact":true,"frames":%s,"size":%d,"writeMs":%d}' \
		"$W/$name.html" "$RUNS" "${frames:-null}" "$(size_of "$W/$name.html")" "$ms")
	ms=$(write "$W/$name.svg" "$in")
	counts=$(svg_counts "$W/$name.svg")
	files+=$(printf ',{"label":"svg","kind":"svg","path":"%s","runs":%d,"load":true,"interact":true,"frames":%d,"merged":%d,"size":%d,"writeMs":%d}' \
		"$W/$name.svg" "$RUNS" ${counts} "$(size_of "$W/$name.svg")" "$ms")
	if [[ $ALLSVG != 0 ]]; then
		ms=$(write "$W/$name.all.svg" --minwidth 0 "$in")
		counts=$(svg_counts "$W/$name.all.svg")
		files+=$(printf ',{"label":"svg --minwidth 0","kind":"svg","path":"%s","runs":1,"load":%s,"interact":%s,"frames":%d,"merged":%d,"size":%d,"writeMs":%d}' \
			"$W/$name.all.svg" "$allload" "$allload" ${counts} "$(size_of "$W/$name.all.svg")" "$ms")
	fi
	[[ $first == 1 ]] || echo , >>"$W/config.json"
	first=0
	printf '{"name":"%s","about":"%s","folded":"%s","search":"%s","files":[%s]}\n' \
		"$name" "$about" "$in" "$search" "$files" >>"$W/config.json"
}

echo "{\"goalMs\":$GOAL_MS,\"profiles\":[" >"$W/config.json"
for p in $PROFILES; do
	case $p in
	main)
		if [[ -n ${PROFILE:-} ]]; then
			in=$(readlink -f "$PROFILE")
			about="PROFILE=$in"
		else
			gen main "$PYTHON" "$SRCDIR/tests/bench/gen_folded.py" --mb 0 --stacks 20600 --seed 3
			in=$W/main.folded
			about="gen_folded.py --mb 0 --stacks 20600 --seed 3"
		fi
		profile main "$in" "${SEARCH:-malloc}" "$about" true
		;;
	deep)
		gen deep gen_deep
		profile deep "$W/deep.folded" "${SEARCH_DEEP:-eval_expr}" "250 stacks 5,000 deep sharing prefixes, 2,000 shallow" true
		;;
	1m)
		gen 1m "$PYTHON" "$SRCDIR/tests/bench/gen_folded.py" --mb 0 --stacks 131500 --seed 1
		profile 1m "$W/1m.folded" "${SEARCH:-malloc}" "gen_folded.py --mb 0 --stacks 131500 --seed 1" false
		;;
	2m)
		gen 2m "$PYTHON" "$SRCDIR/tests/bench/gen_folded.py" --mb 0 --stacks 265000 --seed 1
		profile 2m "$W/2m.folded" "${SEARCH:-malloc}" "gen_folded.py --mb 0 --stacks 265000 --seed 1" false
		;;
	*) die "unknown profile '$p' in PROFILES (main deep 1m 2m)" ;;
	esac
done
echo ']}' >>"$W/config.json"

say "flamed $("$FLAMED" --version 2>/dev/null | head -n 1 || true), RUNS=$RUNS, $(nproc) CPUs, $("$CHROMIUM" --version 2>/dev/null || true)"
node "$SRCDIR/tests/bench/html_view.js" "$W/config.json"
