// SPDX-License-Identifier: GPL-2.0-or-later
// The script of every flamed SVG: hover details, click-to-zoom, search and the view kept in the URL.
//
// docs/svg-format.md is the contract with the writer (lib/formats/svg.c), which embeds this file in a
// CDATA section: it must never contain the three characters that end one. Plain ES2017, no
// innerHTML, no eval: nodes are built with createElementNS and filled with textContent.
//
// Why it works the way it does (measured in headless Chromium, 100,000 frames, 2 CPUs):
// - Any change to drawn frames costs the browser about 4 us per frame under the change
//   (style, layout, pre-paint, paint, raster), whatever it is: a transform on a <g>, a class,
//   display, visibility. Zooming by moving the frames in place costs hundreds of milliseconds,
//   and so does undoing it. So a zoom never touches the frames the writer drew: #frames has a
//   compositing layer of its own (will-change: opacity); a zoom makes it transparent and draws
//   the zoomed view in an overlay (<g id="flamed-zoom">, after #frames); unzooming hides the
//   overlay and makes #frames opaque again, from its cached raster.
// - The overlay is drawn from a model read once at load: the ancestors at full width (class
//   "parent"), the zoomed frame and the frames of its subtree, each a pooled <rect>, at most
//   DRAW_BUDGET of them: when more are wider than MIN_PX, the widest DRAW_BUDGET are drawn (a
//   child is never wider than its parent, so they form a tree) and the narrower ones are shown
//   the way the writer shows frames under its minwidth: each run of adjacent narrow siblings
//   is one grey box. Positions come from data-x/data-c, never from the rounded pixels.
// - Whatever changes in an SVG root makes the browser revisit every element of that root when
//   it paints (30 ms for 100,000 frames). Once the graph is shown, #frames moves into an SVG
//   root of its own (<foreignObject><div><svg>, same coordinates), so that zooms, hovers and
//   labels repaint only the small outer root.
// - The model is typed arrays in document order (depth-first, parents first), so the subtree
//   of frame i is the index range [i, end[i]) and "skip this subtree" is i = end[i]. No
//   script object is kept per frame: 100,000 DOM wrappers would slow down every garbage
//   collection.
// - Labels are redrawn from the model for the frames of the view at least three characters
//   wide, reusing the <text> nodes of #labels, with one character width measured once.
// - Hover and click are delegated: one listener each on the document.
// - The URL is updated a moment after the view changes: history.replaceState costs about
//   0.3 us per element of the document.
(function () {
	'use strict';

	const NS = 'http://www.w3.org/2000/svg';
	const svg = document.documentElement;
	const byId = (id) => document.getElementById(id);

	const framesG = byId('frames');
	if (!framesG) return;
	const labelsG = byId('labels');
	const detailsEl = byId('details');
	const matchedEl = byId('matched');
	const searchEl = byId('search');
	const icEl = byId('ignorecase');
	const unzoomEl = byId('unzoom');

	function numAttr(el, name, dflt) {
		const v = parseFloat(el.getAttribute(name));
		return isFinite(v) ? v : dflt;
	}

	const W = numAttr(svg, 'width', 1200);
	const XPAD = numAttr(svg, 'data-xpad', 10);
	const FH = numAttr(svg, 'data-fh', 16);
	const FONTSIZE = numAttr(svg, 'font-size', 12);
	const FONTWIDTH = numAttr(svg, 'data-fontwidth', 0.59);
	const TOTAL = numAttr(svg, 'data-total', 0);
	const DIFF = svg.getAttribute('data-diff') === '1';
	const COUNTNAME = svg.getAttribute('data-countname') || 'samples';
	const NAMETYPE = svg.getAttribute('data-nametype') || 'Function:';
	const SPAN = W - 2 * XPAD; // pixels between the margins
	const SCALE = TOTAL > 0 ? SPAN / TOTAL : 0; // pixels per sample, unzoomed

	// The most frames the zoomed view draws one by one: each costs about 10 us of script,
	// style, layout and paint, on top of some 30 ms that any change costs a 100,000-frame
	// document.
	const DRAW_BUDGET = 3000;
	// Frames narrower than this (or than the writer's minwidth) are merged even within budget.
	const MIN_PX = Math.max(numAttr(svg, 'data-minwidth', 0), 0.1);
	const MERGED_FILL = 'rgb(170,170,170)';

	// ---- the model, in document order ----

	// A static list: random access in O(1), and no script object per frame is kept alive
	// (100,000 DOM wrappers with properties would make every garbage collection slow).
	const nodes = framesG.querySelectorAll('.f');
	const n = nodes.length;
	const start = new Float64Array(n);
	const count = new Float64Array(n);
	const before = DIFF ? new Float64Array(n) : null;
	const depth = new Int32Array(n);
	const parent = new Int32Array(n);
	const end = new Int32Array(n); // the subtree of i is [i, end[i])
	const merged = new Uint8Array(n); // the writer's merged boxes (class "f m")
	const isMatch = new Uint8Array(n);
	const names = new Array(n); // filled on demand from the titles
	const fills = new Array(n); // the rects' fill attributes, read on demand
	const yAt = []; // a frame rect's y attribute per depth, fixed by the layout
	let byDepth = null; // the frames of depth d, left to right: byDepth[depthAt[d] .. depthAt[d + 1])
	let depthAt = null;

	function childOf(el, name) {
		let c = el.firstElementChild;
		while (c && c.localName !== name) c = c.nextElementSibling;
		return c;
	}

	(function buildModel() {
		const stack = [];
		const stackEl = [];
		for (let i = 0; i < n; i++) {
			const el = nodes[i];
			const flat = el.getAttribute('data-depth');
			if (flat !== null) {
				// Deep frames are written flat, in the same depth-first order, with their depth.
				const want = parseInt(flat, 10) || 0;
				while (stack.length > want) {
					end[stack.pop()] = i;
					stackEl.pop();
				}
			} else {
				const up = el.parentNode;
				while (stack.length && stackEl[stackEl.length - 1] !== up) {
					end[stack.pop()] = i;
					stackEl.pop();
				}
			}
			const d = stack.length;
			parent[i] = d ? stack[d - 1] : -1;
			depth[i] = d;
			stack.push(i);
			stackEl.push(el);
			start[i] = parseFloat(el.getAttribute('data-x')) || 0;
			count[i] = parseFloat(el.getAttribute('data-c')) || 0;
			if (before) before[i] = parseFloat(el.getAttribute('data-a')) || 0;
			if (el.classList.contains('m')) merged[i] = 1;
			if (d === yAt.length) {
				const r = childOf(el, 'rect');
				yAt.push(r ? parseFloat(r.getAttribute('y')) || 0 : 0);
			}
		}
		while (stack.length) end[stack.pop()] = n;
		// Depth-first order lists each depth's frames left to right.
		depthAt = new Int32Array(yAt.length + 1);
		for (let i = 0; i < n; i++) depthAt[depth[i] + 1]++;
		for (let d = 0; d < yAt.length; d++) depthAt[d + 1] += depthAt[d];
		const fill = depthAt.slice(0, yAt.length);
		byDepth = new Int32Array(n);
		for (let i = 0; i < n; i++) byDepth[fill[depth[i]]++] = i;
	})();

	function rectEl(i) {
		return childOf(nodes[i], 'rect');
	}

	// The index of a <g class="f"> of #frames: its depth and data-x find it.
	function indexOfFrame(g) {
		let d = 0;
		const flat = g.getAttribute('data-depth');
		if (flat !== null) d = parseInt(flat, 10) || 0;
		else for (let up = g.parentNode; up && up !== framesG; up = up.parentNode) d++;
		if (d >= yAt.length) return -1;
		const x = parseFloat(g.getAttribute('data-x')) || 0;
		let lo = depthAt[d];
		let hi = depthAt[d + 1];
		while (lo < hi) {
			const mid = (lo + hi) >> 1;
			if (start[byDepth[mid]] < x) lo = mid + 1;
			else hi = mid;
		}
		for (; lo < depthAt[d + 1] && start[byDepth[lo]] === x; lo++) if (nodes[byDepth[lo]] === g) return byDepth[lo];
		return -1;
	}

	function nameOf(i) {
		let s = names[i];
		if (s === undefined) {
			// data-n: the name, when --nameattr gave the frame a tooltip of its own
			const dn = nodes[i].getAttribute('data-n');
			const t = childOf(nodes[i], 'title');
			const text = t ? t.textContent : '';
			const cut = text.lastIndexOf(' (');
			s = dn !== null ? dn : cut >= 0 ? text.slice(0, cut) : text;
			names[i] = s;
		}
		return s;
	}

	// As the writer's titles (and flamegraph.pl's): rounded half to even, 1,234,567.
	function fmtCount(v) {
		let r = Math.round(v);
		if (Math.abs(v - Math.trunc(v)) === 0.5) r = 2 * Math.round(v / 2);
		if (Object.is(r, -0)) r = 0;
		return r.toLocaleString('en-US', { maximumFractionDigits: 0 });
	}

	function pct(part, whole) {
		return whole > 0 ? ((100 * part) / whole).toFixed(2) : '0.00';
	}

	// ---- what the script adds to the document ----

	// The look of the states the script sets. First in the document, so the writer's own
	// stylesheet can restyle them.
	(function addStyle() {
		let corner = '';
		const r0 = n ? rectEl(0) : null;
		if (r0) {
			const rx = parseFloat(r0.getAttribute('rx'));
			const ry = parseFloat(r0.getAttribute('ry'));
			if (rx > 0 || ry > 0) corner = `#flamed-zoom rect { rx: ${rx || 0}px; ry: ${ry || rx || 0}px; }\n`;
		}
		const st = document.createElementNS(NS, 'style');
		st.textContent =
			'#frames .match > rect, #flamed-zoom rect.match { fill: rgb(230,0,230); }\n' +
			'#flamed-zoom rect.parent { opacity: 0.5; }\n' +
			corner;
		svg.insertBefore(st, svg.firstChild);
	})();

	// The band of rows where frames are drawn, in the document's coordinates.
	const ROWS_TOP = yAt.length ? Math.min(yAt[0], yAt[yAt.length - 1]) : 0;
	const ROWS_H = yAt.length ? Math.abs(yAt[yAt.length - 1] - yAt[0]) + FH : 0;

	// #frames moves into an SVG root of its own: an <svg> in a <foreignObject> over the rows,
	// whose viewBox keeps every coordinate as it was. A browser repaints an SVG root as a
	// whole, revisiting each of its elements (30 ms for 100,000 frames) whenever anything in it
	// changes; alone in theirs, the frames are repainted only when they change (a search), not
	// for a zoom, a hover or a label. The move makes the browser lay the frames out anew (about
	// 1 s for 100,000 frames, 10 us per frame), so it waits until the graph has been shown and
	// the browser is idle; until then everything works, only zooms are slower. #frames also
	// gets a compositing layer, so making it transparent for a zoom and opaque again is free.
	framesG.style.willChange = 'opacity';
	if (labelsG) labelsG.setAttribute('pointer-events', 'none');
	let isolated = false;

	function isolateFrames() {
		if (isolated || !framesG.parentNode) return;
		isolated = true;
		const fo = document.createElementNS(NS, 'foreignObject');
		fo.setAttribute('x', 0);
		fo.setAttribute('y', ROWS_TOP);
		fo.setAttribute('width', W);
		fo.setAttribute('height', ROWS_H);
		const div = document.createElementNS('http://www.w3.org/1999/xhtml', 'div');
		const inner = document.createElementNS(NS, 'svg');
		inner.setAttribute('width', W);
		inner.setAttribute('height', ROWS_H);
		inner.setAttribute('viewBox', `0 ${ROWS_TOP} ${W} ${ROWS_H}`);
		inner.setAttribute('style', 'display: block');
		// The boxes take no pointer events; the frames do.
		fo.setAttribute('pointer-events', 'none');
		framesG.style.pointerEvents = 'visiblePainted';
		framesG.parentNode.insertBefore(fo, framesG);
		fo.appendChild(div);
		div.appendChild(inner);
		inner.appendChild(framesG);
	}

	// The overlay that shows the zoomed view, between the frames and the labels; its first
	// rect covers the rows and takes the pointer events the transparent frames must not get.
	const zoomG = document.createElementNS(NS, 'g');
	zoomG.setAttribute('id', 'flamed-zoom');
	zoomG.setAttribute('display', 'none');
	framesG.parentNode.insertBefore(zoomG, framesG.nextSibling);
	(function addCatcher() {
		const c = document.createElementNS(NS, 'rect');
		c.setAttribute('x', 0);
		c.setAttribute('width', W);
		c.setAttribute('y', ROWS_TOP);
		c.setAttribute('height', ROWS_H);
		c.setAttribute('fill', 'none');
		c.setAttribute('pointer-events', 'all');
		zoomG.appendChild(c);
	})();

	// The labels' character width, as flamegraph.pl fits its labels: font size x font width,
	// so that the labels hold the characters flamegraph.pl's do, zoomed or not.
	let CHARW = 0;
	let LABEL_MIN_PX = 0; // three characters
	const LABEL_DY = FH / 2 + FONTSIZE * 0.35; // baseline below the rect's top, as the writer's

	function measureText() {
		if (CHARW) return;
		CHARW = FONTWIDTH * FONTSIZE > 0 ? FONTWIDTH * FONTSIZE : 7.08;
		LABEL_MIN_PX = 3 * CHARW;
	}

	// ---- the zoomed view ----

	let zoomed = -1;
	let zoomK = 0; // pixels per sample in the zoomed view
	let zoomMinPx = 0; // frames narrower than this are in merged runs
	const zPool = []; // overlay rects, zPool[0..zUsed) attached after the catcher
	let zUsed = 0;
	let candW = new Float64Array(1024);
	// Merged runs of narrow siblings: first and last frame, samples, frames below them.
	const runs = { first: [], last: [], count: [], below: [] };

	function zRect(j) {
		let r = zPool[j];
		if (!r) {
			r = zPool[j] = document.createElementNS(NS, 'rect');
			r.setAttribute('height', FH - 1);
		}
		return r;
	}

	// A pooled rect remembers its fill and class, so only what differs goes to the DOM.
	function drawItem(j, x, y, w, fill, cls) {
		const r = zRect(j);
		r.setAttribute('x', x);
		r.setAttribute('y', y);
		r.setAttribute('width', w);
		if (r.flamedFill !== fill) {
			if (fill) r.setAttribute('fill', fill);
			else r.removeAttribute('fill');
			r.flamedFill = fill;
		}
		if (r.flamedClass !== cls) {
			if (cls) r.setAttribute('class', cls);
			else r.removeAttribute('class');
			r.flamedClass = cls;
		}
		return r;
	}

	function fillOf(i) {
		let f = fills[i];
		if (f === undefined) {
			const r = rectEl(i);
			f = fills[i] = r ? r.getAttribute('fill') : null;
		}
		return f;
	}

	function drawFrame(j, i, x, w, cls) {
		if (isMatch[i]) cls = cls ? `${cls} match` : 'match';
		const r = drawItem(j, x, yAt[depth[i]], w, fillOf(i), cls);
		r.flamedIndex = i;
		r.flamedRun = undefined;
		return j + 1;
	}

	// The first position in matches (ascending) whose frame is at or after from.
	function firstMatchFrom(from) {
		let lo = 0;
		let hi = matches.length;
		while (lo < hi) {
			const mid = (lo + hi) >> 1;
			if (matches[mid] < from) lo = mid + 1;
			else hi = mid;
		}
		return lo;
	}

	// Is any frame in [from, to) a match?
	function anyMatch(from, to) {
		const lo = firstMatchFrom(from);
		return lo < matches.length && matches[lo] < to;
	}

	function drawRun(j, q) {
		const first = runs.first[q];
		const last = runs.last[q];
		const x = XPAD + (start[first] - start[zoomed]) * zoomK;
		const w = (start[last] + count[last] - start[first]) * zoomK;
		const r = drawItem(j, x, yAt[depth[first]], w, MERGED_FILL, anyMatch(first, end[last]) ? 'match' : '');
		r.flamedIndex = undefined;
		r.flamedRun = q;
		return j + 1;
	}

	// The width below which the frames of the zoomed subtree are merged: MIN_PX, or higher
	// when more than DRAW_BUDGET frames are wider than that.
	function drawThreshold(z, k) {
		let nc = 0;
		for (let i = z, stop = end[z]; i < stop; ) {
			const w = count[i] * k;
			if (w < MIN_PX) {
				i = end[i];
				continue;
			}
			if (nc === candW.length) {
				const grown = new Float64Array(nc * 2);
				grown.set(candW);
				candW = grown;
			}
			candW[nc++] = w;
			i++;
		}
		if (nc <= DRAW_BUDGET) return MIN_PX;
		const sorted = candW.slice(0, nc).sort(); // ascending
		// Strictly wider than the (budget+1)-th widest: never more than the budget.
		return sorted[nc - DRAW_BUDGET - 1] + 1e-9;
	}

	function renderZoom() {
		runs.first.length = runs.last.length = runs.count.length = runs.below.length = 0;
		const z = zoomed;
		let j = 0; // the next zPool rect
		for (let a = parent[z]; a >= 0; a = parent[a]) j = drawFrame(j, a, XPAD, SPAN, 'parent');
		const k = zoomK;
		const base = start[z];
		const minPx = (zoomMinPx = drawThreshold(z, k));
		let runEnd = -1; // end[] of the open run's last frame: the next sibling's index
		for (let i = z, stop = end[z]; i < stop; ) {
			const w = count[i] * k;
			if (w >= minPx || i === z) {
				j = drawFrame(j, i, XPAD + (start[i] - base) * k, w, '');
				i++;
				continue;
			}
			const q = runs.first.length - 1;
			const last = q >= 0 ? runs.last[q] : -1;
			if (q >= 0 && runEnd === i && parent[last] === parent[i] && (start[i] - start[last] - count[last]) * k < 0.5) {
				runs.last[q] = i;
				runs.count[q] += count[i];
				runs.below[q] += end[i] - i - 1;
			} else {
				runs.first.push(i);
				runs.last.push(i);
				runs.count.push(count[i]);
				runs.below.push(end[i] - i - 1);
			}
			runEnd = end[i];
			i = end[i];
		}
		for (let q = 0; q < runs.first.length; q++) j = drawRun(j, q);
		// Attach what is new, detach what is left over (the pool keeps them for the next zoom).
		for (; zUsed < j; zUsed++) zoomG.appendChild(zPool[zUsed]);
		for (; zUsed > j; zUsed--) zoomG.removeChild(zPool[zUsed - 1]);
	}

	// ---- labels ----

	const pool = labelsG ? Array.from(labelsG.children) : [];
	let attached = pool.length;

	function labelNode(j) {
		if (j >= pool.length) {
			const t = pool.length ? pool[0].cloneNode(false) : document.createElementNS(NS, 'text');
			pool.push(t);
		}
		return pool[j];
	}

	// The label for frame i at pixel x with width w, when it is wide enough for one.
	function fitLabel(i, x, w, j) {
		const name = nameOf(i);
		const fit = Math.floor(w / CHARW); // as flamegraph.pl: whole characters, 3 at least
		if (fit < 3) return j;
		let text = name;
		if (name.length > fit) {
			let cut = fit - 2;
			const c = name.charCodeAt(cut - 1);
			if (c >= 0xd800 && c <= 0xdbff) cut--; // never half a surrogate pair
			text = name.slice(0, cut) + '..';
		}
		const t = labelNode(j);
		t.setAttribute('x', (x + 3).toFixed(2));
		t.setAttribute('y', yAt[depth[i]] + LABEL_DY);
		t.textContent = text;
		return j + 1;
	}

	function renderLabels() {
		if (!labelsG) return;
		measureText();
		let j = 0;
		let from = 0;
		let to = n;
		let base = 0;
		let k = SCALE;
		let minPx = LABEL_MIN_PX;
		if (zoomed >= 0) {
			for (let a = parent[zoomed]; a >= 0; a = parent[a]) j = fitLabel(a, XPAD, SPAN, j);
			from = zoomed;
			to = end[zoomed];
			base = start[zoomed];
			k = zoomK;
			minPx = Math.max(LABEL_MIN_PX, zoomMinPx); // merged frames get no label
		}
		for (let i = from; i < to; ) {
			const w = count[i] * k;
			if (w < minPx && i !== zoomed) {
				i = end[i];
				continue;
			}
			if (w >= LABEL_MIN_PX && !merged[i]) j = fitLabel(i, XPAD + (start[i] - base) * k, w, j);
			i++;
		}
		for (; attached < j; attached++) labelsG.appendChild(pool[attached]);
		for (; attached > j; attached--) labelsG.removeChild(pool[attached - 1]);
	}

	// ---- details ----

	function signed(v) {
		return (v < 0 ? '-' : '+') + fmtCount(Math.abs(v));
	}

	function showDetails(i) {
		if (!detailsEl) return;
		const c = count[i];
		let s = merged[i] ? nameOf(i) : `${NAMETYPE} ${nameOf(i)}`;
		s += ` (${fmtCount(c)} ${COUNTNAME}, ${pct(c, TOTAL)}% of all`;
		if (zoomed >= 0 && i >= zoomed && i < end[zoomed]) s += `, ${pct(c, count[zoomed])}% of zoomed`;
		if (before && !merged[i]) {
			const a = before[i];
			const d = c - a;
			s += `; before: ${fmtCount(a)}, ${signed(d)}`;
			s += a > 0 ? `, ${d < 0 ? '-' : '+'}${pct(Math.abs(d), a)}%` : ', new';
		}
		detailsEl.textContent = s + ')';
	}

	function showRunDetails(q) {
		if (!detailsEl) return;
		const members = runs.last[q] === runs.first[q] ? 1 : countSiblings(runs.first[q], runs.last[q]);
		const c = runs.count[q];
		detailsEl.textContent =
			`${members} frame${members === 1 ? '' : 's'} narrower than ${zoomMinPx.toFixed(2)} px, ${runs.below[q]} below ` +
			`(${fmtCount(c)} ${COUNTNAME}, ${pct(c, TOTAL)}% of all, ${pct(c, count[zoomed])}% of zoomed)`;
	}

	function countSiblings(first, last) {
		let m = 0;
		for (let s = first; s <= last; s = end[s]) m++;
		return m;
	}

	function clearDetails() {
		if (detailsEl) detailsEl.textContent = ' ';
	}

	// ---- search ----

	let searchRe = null; // the active regular expression's source, or null
	let ignoreCase = false;
	let matches = []; // matching frames, ascending
	let matchedSum = 0; // samples under a match, a match inside a match counted once

	function clearMatches() {
		for (const i of matches) {
			nodes[i].classList.remove('match');
			isMatch[i] = 0;
		}
		matches = [];
		matchedSum = 0;
	}

	// Samples under the matches in [from, to), each counted once.
	function sumMatches(from, to) {
		const lo = firstMatchFrom(from);
		let sum = 0;
		let covered = from;
		for (let m = lo; m < matches.length && matches[m] < to; m++) {
			const i = matches[m];
			if (i < covered) continue;
			sum += count[i];
			covered = end[i];
		}
		return sum;
	}

	function showMatched() {
		if (!matchedEl) return;
		if (searchRe === null) {
			matchedEl.textContent = ' ';
			return;
		}
		let s = `Matched: ${pct(matchedSum, TOTAL)}%`;
		if (zoomed >= 0) {
			let inZoom = -1;
			for (let a = zoomed; a >= 0; a = parent[a]) if (isMatch[a]) inZoom = count[zoomed];
			if (inZoom < 0) inZoom = sumMatches(zoomed, end[zoomed]);
			s += ` of all, ${pct(inZoom, count[zoomed])}% of zoomed`;
		}
		matchedEl.textContent = s;
	}

	function search(re, ic) {
		if (ic !== undefined) setIgnoreCase(!!ic);
		let rx;
		try {
			rx = new RegExp(re, ignoreCase ? 'i' : '');
		} catch (e) {
			if (matchedEl) matchedEl.textContent = `Bad regex: ${re}`;
			return false;
		}
		clearMatches();
		searchRe = String(re);
		for (let i = 0; i < n; i++) {
			if (merged[i] || !rx.test(nameOf(i))) continue;
			nodes[i].classList.add('match');
			isMatch[i] = 1;
			matches.push(i);
		}
		matchedSum = sumMatches(0, n);
		if (searchEl) {
			searchEl.classList.add('show');
			searchEl.textContent = 'Reset Search';
		}
		if (zoomed >= 0) renderZoom();
		showMatched();
		saveUrl();
		return true;
	}

	function resetSearch() {
		clearMatches();
		searchRe = null;
		if (searchEl) {
			searchEl.classList.remove('show');
			searchEl.textContent = 'Search';
		}
		if (zoomed >= 0) renderZoom();
		showMatched();
		saveUrl();
	}

	function askSearch() {
		const how = ignoreCase ? 'ignoring case' : 'case-sensitive';
		const re = window.prompt(`Search frames for a regular expression (${how})`, searchRe || '');
		if (re === null) return;
		if (re === '') resetSearch();
		else search(re);
	}

	function setIgnoreCase(on) {
		ignoreCase = on;
		if (icEl) icEl.classList.toggle('show', on);
	}

	function toggleIgnoreCase() {
		setIgnoreCase(!ignoreCase);
		if (searchRe !== null) search(searchRe);
		else saveUrl();
	}

	// ---- zoom and unzoom ----

	function zoom(i) {
		if (i >= 0 && !(count[i] > 0 && SCALE > 0)) return; // nothing to stretch
		zoomed = i;
		if (i >= 0) {
			zoomK = SPAN / count[i];
			renderZoom();
			zoomG.removeAttribute('display');
			framesG.style.opacity = '0';
		} else {
			framesG.style.opacity = '';
			zoomG.setAttribute('display', 'none');
		}
		if (unzoomEl) unzoomEl.classList.toggle('hide', zoomed < 0);
		renderLabels();
		showMatched();
		saveUrl();
	}

	function unzoom() {
		zoom(-1);
	}

	// ---- the URL: ?x=START&y=DEPTH&s=REGEX&i=1 ----

	const OURS = ['x', 'y', 's', 'i'];
	const URL_DELAY_MS = 300;

	function queryParts() {
		const q = location.search.replace(/^\?/, '');
		return q ? q.split('&') : [];
	}

	function parseQuery() {
		const out = {};
		for (const part of queryParts()) {
			const eq = part.indexOf('=');
			const key = eq >= 0 ? part.slice(0, eq) : part;
			try {
				out[key] = decodeURIComponent(eq >= 0 ? part.slice(eq + 1) : '');
			} catch (e) {
				// a malformed escape: ignore that parameter
			}
		}
		return out;
	}

	let restoring = false;
	let urlTimer = 0;

	// history.replaceState costs about 0.3 us per element of the document (30 ms on 100,000
	// frames): done once things have settled, not in the click that changed the view.
	function saveUrl() {
		if (restoring) return;
		clearTimeout(urlTimer);
		urlTimer = setTimeout(saveUrlNow, URL_DELAY_MS);
	}

	function saveUrlNow() {
		urlTimer = 0;
		const q = queryParts().filter((p) => !OURS.includes(p.split('=')[0]));
		if (zoomed >= 0) q.push(`x=${encodeURIComponent(nodes[zoomed].getAttribute('data-x'))}`, `y=${depth[zoomed]}`);
		if (searchRe !== null) q.push(`s=${encodeURIComponent(searchRe)}`);
		if (ignoreCase) q.push('i=1');
		const url = location.pathname + (q.length ? `?${q.join('&')}` : '') + location.hash;
		try {
			history.replaceState(history.state, '', url);
		} catch (e) {
			// file:// URLs may refuse: the view still works, only the link does not follow it
		}
	}

	// The frame at depth d that starts at x (or, failing that, contains x).
	function findFrame(x, d) {
		let near = -1;
		for (let i = 0; i < n; i++) {
			if (depth[i] !== d) continue;
			if (start[i] === x) return i;
			if (near < 0 && start[i] < x && x < start[i] + count[i]) near = i;
		}
		return near;
	}

	function restore() {
		const q = parseQuery();
		restoring = true;
		try {
			if (q.i === '1') setIgnoreCase(true);
			if (q.x !== undefined && q.y !== undefined) {
				const i = findFrame(parseFloat(q.x), parseInt(q.y, 10));
				if (i >= 0) zoom(i);
			}
			if (q.s !== undefined && q.s !== '') search(q.s);
		} finally {
			restoring = false;
		}
	}

	// ---- events ----

	// What the pointer is on: a frame (>= 0), a merged run of the zoomed view (-2 - run) or
	// nothing (-1). The overlay's rects carry their frame or run; in #frames, the <g>'s depth
	// and data-x tell.
	function hit(node) {
		if (!node) return -1;
		if (node.flamedIndex !== undefined) return node.flamedIndex;
		if (node.flamedRun !== undefined) return -2 - node.flamedRun;
		for (; node && node !== framesG && node !== svg; node = node.parentNode) {
			if (node.localName === 'g' && node.classList.contains('f')) return indexOfFrame(node);
		}
		return -1;
	}

	svg.addEventListener('mouseover', (e) => {
		const h = hit(e.target);
		if (h >= 0) showDetails(h);
		else if (h <= -2) showRunDetails(-2 - h);
	});
	svg.addEventListener('mouseout', (e) => {
		if (hit(e.target) !== -1) clearDetails();
	});
	svg.addEventListener('click', (e) => {
		let h = hit(e.target);
		// --nameattr's link: a click follows it, as in flamegraph.pl; Ctrl-click zooms.
		const href = h >= 0 ? nodes[h].getAttribute('data-href') : null;
		if (href && !e.ctrlKey && !e.metaKey) {
			window.open(href, nodes[h].getAttribute('data-target') || '_top');
			return;
		}
		if (h <= -2) {
			// a merged run: one frame zooms to it, several to their parent
			const q = -2 - h;
			h = runs.first[q] === runs.last[q] ? runs.first[q] : parent[runs.first[q]];
		}
		if (h >= 0 && h !== zoomed) zoom(h);
	});
	if (unzoomEl) unzoomEl.addEventListener('click', unzoom);
	if (searchEl) {
		searchEl.addEventListener('click', () => {
			if (searchRe !== null) resetSearch();
			else askSearch();
		});
	}
	if (icEl) icEl.addEventListener('click', toggleIgnoreCase);
	window.addEventListener('keydown', (e) => {
		const ctrl = e.ctrlKey || e.metaKey;
		const key = e.key && e.key.length === 1 ? e.key.toLowerCase() : e.key;
		if (key === 'F3' || (ctrl && key === 'f')) {
			e.preventDefault();
			askSearch();
		} else if (ctrl && key === 'i') {
			e.preventDefault();
			toggleIgnoreCase();
		}
	});

	// For tests and benchmarks.
	window.flamed = {
		// el: a frame's <g class="f">, anything inside it, an overlay rect, or an index
		zoom(el) {
			const i = typeof el === 'number' ? el : hit(el);
			if (i >= 0 && i < n) zoom(i);
		},
		unzoom,
		search(re, ic) {
			return search(re, ic);
		},
		resetSearch,
		// The model: typed arrays indexed by frame, in document order.
		frames() {
			return { length: n, start, count, before, depth, parent, end, merged, nodes, name: nameOf };
		},
		// The rect that shows frame i now: its own when unzoomed, the overlay's when zoomed
		// (null when the zoom hides it or merges it into a run).
		rectOf(i) {
			if (zoomed < 0) return rectEl(i);
			for (let j = 0; j < zUsed; j++) if (zPool[j].flamedIndex === i) return zPool[j];
			return null;
		},
		state() {
			return {
				zoomed,
				search: searchRe,
				ignoreCase,
				matched: matchedSum,
				charWidth: CHARW,
				isolated,
				drawn: zUsed - runs.first.length,
				runs: runs.first.length,
				minPx: zoomMinPx,
			};
		},
	};

	restore();

	// Once the graph is on the screen and the browser idle: the frames' own SVG root, and the
	// overlay's rects (about 10 ms for a full budget, better spent now than in the first click).
	const idle = window.requestIdleCallback || ((fn) => setTimeout(fn, 100));
	requestAnimationFrame(() =>
		requestAnimationFrame(() =>
			idle(() => {
				isolateFrames();
				for (let j = zPool.length; j < DRAW_BUDGET + 64; j++) zRect(j);
			}),
		),
	);
})();
