#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The HTML flame graph's viewer in a real browser: `flamed svg --format html`
# and `flamed diff` pages loaded in headless Chromium, hovered, clicked,
# searched, typed at, reloaded from their URL, with the function list and the
# merge-by-function view (tests/browser/check_html.js), against numbers
# computed here from the input; deep stacks, hostile names and refused data.
# Needs node and chromium (Debian: nodejs, chromium); exits 77 without them.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRCDIR=${SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
export CHROMIUM
command -v node >/dev/null || skip "needs node (Debian: apt-get install nodejs)"
[[ -x $CHROMIUM ]] || skip "needs chromium at $CHROMIUM (Debian: apt-get install chromium)"
CHECK=$SRCDIR/tests/browser/check_html.js
mkdir -p "$T/shots"

# Known counts: "alloc" is both a child of main and of parse, and alloc_page
# sits inside alloc, so /alloc/ has nested matches: they count once.
cat >"$T/in.folded" <<'EOF'
app;main;alloc;alloc_page 40
app;main;alloc;memcpy 10
app;main;idle 10
app;main;parse;alloc 25
app;main;parse;lex 15
EOF

run_flamed html svg --format html "$T/in.folded" -o "$T/out.html"
expect_rc 0
[[ -s $T/out.html ]] || fail "flamed svg --format html wrote nothing"

total=$(total_count "$T/in.folded")

# widest_child PREFIX: the path of PREFIX's child with the most samples.
widest_child() {
	awk -v prefix="$1" '{
		s = $0; sub(/ [0-9]+$/, "", s)
		if (index(s, prefix ";") != 1) next
		rest = substr(s, length(prefix) + 2); sub(/;.*/, "", rest)
		c[rest] += $NF
	} END { for (k in c) if (c[k] > best) { best = c[k]; name = k } print prefix ";" name }' "$T/in.folded"
}

# right_of PATH: the next frame at PATH's depth, left to right (siblings sorted by name).
right_of() {
	awk -v path="$1" 'BEGIN { d = split(path, x, ";") } {
		s = $0; sub(/ [0-9]+$/, "", s)
		n = split(s, f, ";")
		if (n < d) next
		p = f[1]; for (i = 2; i <= d; i++) p = p ";" f[i]
		print p
	}' "$T/in.folded" | LC_ALL=C sort -u | awk -v path="$1" 'found { print; exit } $0 == path { found = 1 }'
}

# funcs NAME...: {"NAME": {"self": own samples, "total": samples of stacks with NAME}}
funcs() {
	awk -v names="$*" 'BEGIN { n = split(names, want, " ") } {
		s = $0; sub(/ [0-9]+$/, "", s)
		k = split(s, f, ";")
		for (j = 1; j <= n; j++) {
			if (f[k] == want[j]) self[want[j]] += $NF
			for (i = 1; i <= k; i++) if (f[i] == want[j]) { total[want[j]] += $NF; break }
		}
	} END {
		printf "{"
		for (j = 1; j <= n; j++) printf "%s\"%s\": {\"self\": %d, \"total\": %d}", (j > 1 ? ", " : ""), want[j], self[want[j]], total[want[j]]
		printf "}"
	}' "$T/in.folded"
}

# sandwich NAME: the callers tree (NAME, its caller, ...) and the callees tree
# (NAME, its callee, ...) of the outermost NAME of each stack, paths with their samples.
sandwich() {
	awk -v name="$1" '{
		s = $0; sub(/ [0-9]+$/, "", s)
		k = split(s, f, ";")
		for (at = 1; at <= k && f[at] != name; at++) {}
		if (at > k) next
		p = f[at]; up[p] += $NF
		for (i = at - 1; i >= 1; i--) { p = p ";" f[i]; up[p] += $NF }
		p = f[at]; down[p] += $NF
		for (i = at + 1; i <= k; i++) { p = p ";" f[i]; down[p] += $NF }
	} END {
		printf "{\"name\": \"%s\", \"callers\": {", name
		sep = ""; for (p in up) { printf "%s\"%s\": %d", sep, p, up[p]; sep = ", " }
		printf "}, \"callees\": {"
		sep = ""; for (p in down) { printf "%s\"%s\": %d", sep, p, down[p]; sep = ", " }
		printf "}}"
	}' "$T/in.folded"
}

zoom=app\;main\;parse
hover=app\;main\;parse\;alloc
zc=$(under "$zoom")
hc=$(under "$hover")
[[ $(share alloc) == "75.0000" ]] || fail "test bug: /alloc/ should match 75% of $T/in.folded, computed $(share alloc)"
keys_up=$(widest_child app\;main)
[[ $keys_up == "app;main;alloc" ]] || fail "test bug: the widest child of app;main is $keys_up"

cat >"$T/expect.json" <<EOF
{
  "total": $total,
  "hover": { "path": "$hover", "count": $hc, "percent": $(awk -v a="$hc" -v b="$total" 'BEGIN { printf "%.4f", 100 * a / b }') },
  "zoom": { "path": "$zoom", "count": $zc,
            "children": { "alloc": $(under "$zoom;alloc"), "lex": $(under "$zoom;lex") } },
  "search": [
    { "re": "alloc", "percent": $(share alloc), "zoomed": $(share alloc "$zoom") },
    { "re": "^(main|parse)\$", "percent": $(share '^(main|parse)$'), "zoomed": $(share '^(main|parse)$' "$zoom") },
    { "re": "^alloc_page\$|^lex\$", "percent": $(share '^alloc_page$|^lex$'), "zoomed": $(share '^alloc_page$|^lex$' "$zoom"),
      "magenta": "$zoom;lex" }
  ],
  "ignorecase": { "re": "^ALLOC", "sensitive": $(share '^ALLOC'), "insensitive": $(share '^ALLOC' "" i) },
  "keys": { "start": "$zoom", "down": "app;main", "up": "$keys_up", "right": "$(right_of "$keys_up")" },
  "funcs": $(funcs alloc alloc_page main lex),
  "exact": { "name": "alloc", "percent": $(share '^alloc$') },
  "sandwich": $(sandwich alloc)
}
EOF
note "expected: $(tr -s ' \n' ' ' <"$T/expect.json")"

# run_check NAME MODE FILE [EXPECT]: check_html.js in chromium; 77 skips the test.
run_check() {
	local name=$1
	shift
	TIMEOUT=180 run_cmd "$name" node "$CHECK" "$1" "$2" "${3:-}" "$T/shots"
	cat "$T/$name.out"
	[[ $RC -ne 77 ]] || skip "$(head -n 1 "$T/$name.out")"
	[[ $RC -eq 0 ]] || fail "$name: the HTML viewer misbehaves in chromium: $(tail -n 1 "$LAST_ERR")"
}

run_check browser main "$T/out.html" "@$T/expect.json"

# A differential graph: counts after, before, the change and its percentage.
cat >"$T/before.folded" <<'EOF'
app;main;parse 30
app;main;lex 10
EOF
cat >"$T/after.folded" <<'EOF'
app;main;parse 45
app;main;lex 5
app;main;new 2
EOF
run_flamed diff diff "$T/before.folded" "$T/after.folded" -o "$T/diff.html"
expect_rc 0
before_count() { awk -v p="$1" '{ s = $0; sub(/ [0-9]+$/, "", s) } s == p || index(s, p ";") == 1 { n += $NF } END { print n + 0 }' "$2"; }
dtotal=$(total_count "$T/after.folded")
for p in app\;main\;parse app\;main\;lex app\;main\;new; do
	run_check "diff_${p##*;}" diff "$T/diff.html" \
		"{\"path\": \"$p\", \"count\": $(before_count "$p" "$T/after.folded"), \"before\": $(before_count "$p" "$T/before.folded"), \"total\": $dtotal}"
done

# A stack 5,000 frames deep, far taller than a canvas may be.
awk 'BEGIN { s = "f0"; for (i = 1; i < 5000; i++) s = s ";f" i; print s " 5"; print "other 1" }' >"$T/deep.folded"
run_flamed deep svg --format html "$T/deep.folded" -o "$T/deep.html"
expect_rc 0
run_check deep_browser deep "$T/deep.html" '{"depth": 5000}'

# Names that look like markup, and one of 100,000 characters.
long=$(head -c 100000 /dev/zero | tr '\0' 'x')
{
	echo 'app;<script>alert(1)<\/script> 3'
	echo 'app;<img src=x onerror=alert(2)> 2'
	echo 'app;&lt;b&gt; "quoted" '"'"'single'"'"' 2'
	echo 'app;<!-- comment --> ]]> 1'
	echo "app;$long 4"
} >"$T/hostile.folded"
run_flamed hostile svg --format html "$T/hostile.folded" -o "$T/hostile.html"
expect_rc 0
cat >"$T/hostile.json" <<EOF
{ "paths": ["app;<script>alert(1)<\\\\/script>", "app;<img src=x onerror=alert(2)>", "app;&lt;b&gt; \\"quoted\\" 'single'",
            "app;<!-- comment --> ]]>"],
  "longpath": "app;$long", "longname": 100000 }
EOF
run_check hostile_browser hostile "$T/hostile.html" "@$T/hostile.json"

# Data that does not add up is refused, with one line on the page.
sed -E 's/"bytes":([0-9]+)/"bytes":1\1/' "$T/out.html" >"$T/bad_len.html"
run_check refuse_len error "$T/bad_len.html"
sed -E 's/(id="flamed-data">)[A-Za-z0-9+\/]{8}/\1AAAAAAAA/' "$T/out.html" >"$T/bad_zlib.html"
run_check refuse_zlib error "$T/bad_zlib.html"

shots=("$T"/shots/*.png)
[[ -s ${shots[0]} ]] || fail "no screenshots in $T/shots"
pass "html in chromium: hover, click-zoom, typed search (nested matches once), ignore case, URL state, orientation, keys, function list, merge by function, diff, 5,000-deep stacks, hostile names, refused data; screenshots in $T/shots"
