#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The SVG's script in a real browser: `flamed svg` output loaded in headless
# Chromium, hovered, clicked, searched and reloaded from its URL
# (tests/browser/check_svg.js), against numbers computed here from the input.
# Needs node and chromium (Debian: nodejs, chromium); exits 77 without them.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRCDIR=${SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
export CHROMIUM
command -v node >/dev/null || skip "needs node (Debian: apt-get install nodejs)"
[[ -x $CHROMIUM ]] || skip "needs chromium at $CHROMIUM (Debian: apt-get install chromium)"

# Known counts: "alloc" is both a child of main and of parse, and alloc_page
# sits inside alloc, so /alloc/ has nested matches: they count once.
cat >"$T/in.folded" <<'EOF'
app;main;alloc;alloc_page 40
app;main;alloc;memcpy 10
app;main;idle 10
app;main;parse;alloc 25
app;main;parse;lex 15
EOF

run_flamed svg svg "$T/in.folded" -o "$T/out.svg"
expect_rc 0
[[ -s $T/out.svg ]] || fail "flamed svg wrote no SVG"

total=$(total_count "$T/in.folded")

zoom=app\;main\;parse
hover=app\;main\;parse\;alloc
zc=$(under "$zoom")
hc=$(under "$hover")
# Sanity of this test's own arithmetic: the nested case must differ from a sum.
[[ $(share alloc) == "75.0000" ]] || fail "test bug: /alloc/ should match 75% of $T/in.folded, computed $(share alloc)"

cat >"$T/expect.json" <<EOF
{
  "total": $total,
  "hover": { "path": "$hover", "count": $hc, "percent": $(awk -v a="$hc" -v b="$total" 'BEGIN { printf "%.4f", 100 * a / b }') },
  "zoom": { "path": "$zoom", "count": $zc,
            "children": { "alloc": $(under "$zoom;alloc"), "lex": $(under "$zoom;lex") } },
  "search": [
    { "re": "alloc", "percent": $(share alloc), "zoomed": $(share alloc "$zoom") },
    { "re": "^(main|parse)\$", "percent": $(share '^(main|parse)$'), "zoomed": $(share '^(main|parse)$' "$zoom") },
    { "re": "^alloc_page\$|^lex\$", "percent": $(share '^alloc_page$|^lex$'), "zoomed": $(share '^alloc_page$|^lex$' "$zoom") }
  ],
  "ignorecase": { "re": "^ALLOC", "sensitive": $(share '^ALLOC'), "insensitive": $(share '^ALLOC' "" i) }
}
EOF
note "expected: $(tr -s ' \n' ' ' <"$T/expect.json")"

TIMEOUT=120 run_cmd browser node "$SRCDIR/tests/browser/check_svg.js" "$T/out.svg" "@$T/expect.json"
cat "$T/browser.out"
[[ $RC -ne 77 ]] || skip "$(head -n 1 "$T/browser.out")"
[[ $RC -eq 0 ]] || fail "the SVG's script misbehaves in chromium: $(tail -n 1 "$LAST_ERR")"

# A stack deeper than the writer nests (frames below depth 64 are flat, with data-depth).
awk 'BEGIN { s = "f0"; for (i = 1; i < 150; i++) s = s ";f" i; print s " 5"; print "other 1" }' >"$T/deep.folded"
run_flamed deep svg --minwidth 0 "$T/deep.folded" -o "$T/deep.svg"
expect_rc 0
TIMEOUT=120 run_cmd deep_browser node "$SRCDIR/tests/browser/check_deep.js" "$T/deep.svg" 150
cat "$T/deep_browser.out"
[[ $RC -eq 0 ]] || fail "deep stacks in chromium: $(tail -n 1 "$LAST_ERR")"

# --nameattr: a linked frame opens its link on a click (Ctrl-click zooms); a
# tooltip from the file leaves the frame its name.
printf 'app;main;parse 6\napp;main;lex 4\n' >"$T/links.folded"
printf 'parse\ttitle=Parser, see the docs\thref=https://example.com/parse?x=1&y=2\ttarget=_blank\n' >"$T/links.attr"
run_flamed links svg --nameattr "$T/links.attr" "$T/links.folded" -o "$T/links.svg"
expect_rc 0
TIMEOUT=120 run_cmd links_browser node "$SRCDIR/tests/browser/check_links.js" "$T/links.svg" parse \
	'https://example.com/parse?x=1&y=2' _blank 'Parser, see the docs'
cat "$T/links_browser.out"
[[ $RC -eq 0 ]] || fail "--nameattr links in chromium: $(tail -n 1 "$LAST_ERR")"

pass "svg in chromium: hover, click-zoom, search (nested matches once), ignore case, URL state, deep stacks, --nameattr links"
