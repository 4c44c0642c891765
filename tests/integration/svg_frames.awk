# SPDX-License-Identifier: GPL-2.0-or-later
# The frames of a flamed SVG (not the grey boxes of merged narrow frames),
# one line each: DEPTH X WIDTH NAME, tab separated, X and WIDTH as written
# (to 0.001 px), to compare with the 0.1 px that
# tests/fixtures/svgframes/model.py prints of flamegraph.pl's. Each frame's
# <title> and <rect> are on one line of flamed's output.
#   awk -f svg_frames.awk FILE.svg | sort -t "$(printf '\t')" -k1,1n -k2,2n
function unescape(s) {
	gsub(/&lt;/, "<", s)
	gsub(/&gt;/, ">", s)
	gsub(/&quot;/, "\"", s)
	gsub(/&apos;/, "'", s)
	gsub(/&#39;/, "'", s)
	gsub(/&amp;/, "\\&", s)
	return s
}
function attr(line, name,   m) {
	if (!match(line, " " name "=\"[^\"]*\""))
		return ""
	m = substr(line, RSTART + length(name) + 3, RLENGTH - length(name) - 4)
	return m
}
/^<svg / && !height { height = attr($0, "height") + 0; fh = attr($0, "data-fh") + 0 }
/<g class="f" data-x=/ {
	t = $0
	sub(/^.*<title>/, "", t)
	sub(/<\/title>.*$/, "", t)
	# The name is what comes before the last " (": the counts follow it.
	n = t
	while (match(n, / \([^(]*$/) && RSTART > 0) { n = substr(n, 1, RSTART - 1); break }
	y = attr($0, "y") + 0
	depth = (height - 34 - y) / fh - 1
	printf "%d\t%.3f\t%.3f\t%s\n", depth + 0.5, attr($0, "x") + 0, attr($0, "width") + 0, unescape(n)
}
