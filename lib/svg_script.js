// SPDX-License-Identifier: GPL-2.0-or-later
// The script of every flamed SVG: hover details, click-to-zoom, search and the view kept in the URL.
//
// docs/svg-format.md is the contract with the writer (lib/svg.c), which embeds this file in a
// CDATA section: it must never contain the three characters that end one.
//
// Costs, for graphs of 100,000 frames:
// - Load reads each frame's data-x, data-c and depth once into typed arrays, in document
//   order (depth-first), so a frame's subtree is the index range [i, end[i]). Names are read
//   from the <title>s only when needed (a label, a hover, a search).
// - A zoom touches what changes: the ancestors (stretched and dimmed), the siblings of the
//   ancestors and of the zoomed frame (hidden; hiding a <g> hides its subtree), and either one
//   transform on the zoomed frame's <g> (big subtrees) or the rects of the subtree (small ones,
//   written from the exact counts: the 2-decimal pixel values would be magnified by the zoom).
//   Every change is recorded and undone before the next zoom.
// - Labels are redrawn from the model for the frames of the view wide enough for three
//   characters (a child is never wider than its parent, so narrower subtrees are skipped),
//   reusing a pool of <text> nodes, with one character width measured at load.
// - Hover and click use one listener each on #frames.
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

	// Beyond this many frames in the zoomed subtree, one transform instead of rewriting rects.
	const TRANSFORM_MIN_FRAMES = 512;
	// A transform magnifies the rects' 2-decimal rounding (0.005 px) by k: up to this k the
	// error stays under 0.15 px. Above it, the frames that stay visible get exact coordinates.
	const TRANSFORM_MAX_K = 30;
	// With such a magnification, frames that stay narrower than this after the zoom are hidden
	// rather than corrected: they would not show, and their rounding is magnified most.
	const SLIVER_PX = 0.5;

	// The model, in document order (depth-first, parents before children).
	const list = framesG.getElementsByClassName('f');
	const n = list.length;
	const start = new Float64Array(n);
	const count = new Float64Array(n);
	const before = DIFF ? new Float64Array(n) : null;
	const depth = new Int32Array(n);
	const parent = new Int32Array(n);
	const end = new Int32Array(n); // the subtree of i is [i, end[i])
	const merged = new Uint8Array(n);
	const isMatch = new Uint8Array(n);
	const els = new Array(n);
	const rects = new Array(n);
	const names = new Array(n); // filled on demand from the titles
	const yAt = []; // a rect's y attribute per depth: fixed by the layout, never changed here

	(function buildModel() {
		const stack = [];
		for (let i = 0; i < n; i++) {
			const el = list[i];
			const up = el.parentNode;
			while (stack.length && els[stack[stack.length - 1]] !== up) end[stack.pop()] = i;
			const d = stack.length;
			parent[i] = d ? stack[d - 1] : -1;
			depth[i] = d;
			stack.push(i);
			els[i] = el;
			el.flamedIndex = i;
			start[i] = parseFloat(el.getAttribute('data-x')) || 0;
			count[i] = parseFloat(el.getAttribute('data-c')) || 0;
			if (before) before[i] = parseFloat(el.getAttribute('data-a')) || 0;
			if (el.classList.contains('m')) merged[i] = 1;
			let r = el.firstElementChild;
			while (r && r.localName !== 'rect') r = r.nextElementSibling;
			rects[i] = r;
			if (d === yAt.length) yAt.push(r ? parseFloat(r.getAttribute('y')) || 0 : 0);
		}
		while (stack.length) end[stack.pop()] = n;
	})();

	function nameOf(i) {
		let s = names[i];
		if (s === undefined) {
			let t = els[i].firstElementChild;
			while (t && t.localName !== 'title') t = t.nextElementSibling;
			const text = t ? t.textContent : '';
			const cut = text.lastIndexOf(' (');
			s = cut >= 0 ? text.slice(0, cut) : text;
			names[i] = s;
		}
		return s;
	}

	// The frame index of an event target: its own g.f or the nearest one above it.
	function frameOf(node) {
		for (; node && node !== framesG; node = node.parentNode) {
			if (node.flamedIndex !== undefined) return node.flamedIndex;
		}
		return -1;
	}

	function fmtCount(v) {
		return Number.isInteger(v) ? String(v) : String(Math.round(v * 100) / 100);
	}

	function pct(part, whole) {
		return whole > 0 ? ((100 * part) / whole).toFixed(2) : '0.00';
	}

	// The zoom-only rule the stylesheet need not know: stretched rects keep square corners.
	(function addStyle() {
		const st = document.createElementNS(NS, 'style');
		st.textContent = '#frames .zt rect { rx: 0; ry: 0; vector-effect: non-scaling-stroke; }';
		svg.insertBefore(st, framesG);
	})();
	if (labelsG) labelsG.setAttribute('pointer-events', 'none'); // labels must not eat clicks

	// One average character width for the labels, measured once with the labels' own style.
	const CHARW = (function measure() {
		const sample = 'abcdefghijklmnopqrstuvwxyz_ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789';
		let w = 0;
		if (labelsG) {
			const proto = labelsG.firstElementChild;
			const t = proto ? proto.cloneNode(false) : document.createElementNS(NS, 'text');
			t.textContent = sample;
			labelsG.appendChild(t);
			try {
				w = t.getComputedTextLength() / sample.length;
			} catch (e) {
				w = 0;
			}
			labelsG.removeChild(t);
		}
		return w > 0 ? w : FONTWIDTH * FONTSIZE;
	})();
	const LABEL_MIN_PX = 3 * CHARW + 6; // three characters and the 3 px margins

	// ---- zoom ----

	let zoomed = -1;
	const undoHidden = [];
	const undoParents = [];
	const undoRects = []; // rect, old x, old width; repeated
	let undoTransform = -1;

	function hide(i) {
		els[i].classList.add('hide');
		undoHidden.push(i);
	}

	function setRect(i, x, w) {
		const r = rects[i];
		if (!r) return;
		undoRects.push(r, r.getAttribute('x'), r.getAttribute('width'));
		r.setAttribute('x', x);
		r.setAttribute('width', w);
	}

	function undoZoom() {
		for (const i of undoHidden) els[i].classList.remove('hide');
		for (const i of undoParents) els[i].classList.remove('parent');
		for (let j = undoRects.length - 3; j >= 0; j -= 3) {
			undoRects[j].setAttribute('x', undoRects[j + 1]);
			undoRects[j].setAttribute('width', undoRects[j + 2]);
		}
		if (undoTransform >= 0) {
			els[undoTransform].removeAttribute('transform');
			els[undoTransform].classList.remove('zt');
		}
		undoHidden.length = 0;
		undoParents.length = 0;
		undoRects.length = 0;
		undoTransform = -1;
		zoomed = -1;
	}

	function applyZoom(z) {
		undoZoom();
		if (z < 0 || !(count[z] > 0) || !(SCALE > 0)) return;
		zoomed = z;
		// Up the path: hide the siblings of each frame on it, stretch and dim its ancestors.
		for (let c = z; c >= 0; c = parent[c]) {
			const p = parent[c];
			const last = p >= 0 ? end[p] : n;
			for (let s = p >= 0 ? p + 1 : 0; s < last; s = end[s]) if (s !== c) hide(s);
			if (p >= 0) {
				els[p].classList.add('parent');
				undoParents.push(p);
				setRect(p, XPAD, SPAN);
			}
		}
		const kz = SPAN / count[z]; // pixels per sample in the zoomed view
		const stop = end[z];
		if (stop - z < TRANSFORM_MIN_FRAMES) {
			for (let i = z; i < stop; i++) setRect(i, XPAD + (start[i] - start[z]) * kz, count[i] * kz);
			return;
		}
		// x' = k x + e maps the unzoomed pixel range of z onto [XPAD, W - XPAD].
		const k = kz / SCALE;
		const x0 = XPAD + start[z] * SCALE;
		els[z].setAttribute('transform', `matrix(${k} 0 0 1 ${XPAD - k * x0} 0)`);
		els[z].classList.add('zt');
		undoTransform = z;
		if (k <= TRANSFORM_MAX_K) {
			setRect(z, x0, count[z] * SCALE); // exact, so the zoomed frame spans the width exactly
			return;
		}
		// Large magnification: exact unzoomed coordinates for what stays visible, slivers hidden.
		for (let i = z; i < stop; ) {
			if (count[i] * kz >= SLIVER_PX) {
				setRect(i, XPAD + start[i] * SCALE, count[i] * SCALE);
				i++;
			} else {
				hide(i);
				i = end[i];
			}
		}
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

	// The label for frame i at pixel x with width w, or nothing when too narrow.
	function fitLabel(i, x, w, j) {
		const name = nameOf(i);
		const fit = Math.floor((w - 6) / CHARW);
		let text = name;
		if (name.length > fit) {
			if (fit < 3) return j;
			let cut = fit - 2;
			const c = name.charCodeAt(cut - 1);
			if (c >= 0xd800 && c <= 0xdbff) cut--; // never half a surrogate pair
			text = name.slice(0, cut) + '..';
		}
		const t = labelNode(j);
		t.setAttribute('x', (x + 3).toFixed(2));
		t.setAttribute('y', yAt[depth[i]] + FH - 5);
		t.textContent = text;
		return j + 1;
	}

	function renderLabels() {
		if (!labelsG) return;
		let j = 0;
		let from = 0;
		let to = n;
		let base = 0;
		let k = SCALE;
		if (zoomed >= 0) {
			for (let a = parent[zoomed]; a >= 0; a = parent[a]) j = fitLabel(a, XPAD, SPAN, j);
			from = zoomed;
			to = end[zoomed];
			base = start[zoomed];
			k = SPAN / count[zoomed];
		}
		for (let i = from; i < to; ) {
			const w = count[i] * k;
			if (w < LABEL_MIN_PX) {
				i = end[i];
				continue;
			}
			j = fitLabel(i, XPAD + (start[i] - base) * k, w, j);
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
		if (before) {
			const a = before[i];
			const d = c - a;
			s += `; before: ${fmtCount(a)}, ${signed(d)}`;
			if (a > 0) s += `, ${d < 0 ? '-' : '+'}${pct(Math.abs(d), a)}%`;
		}
		detailsEl.textContent = s + ')';
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
			els[i].classList.remove('match');
			isMatch[i] = 0;
		}
		matches = [];
		matchedSum = 0;
	}

	// Samples under matches in [from, to), each counted once.
	function sumMatches(from, to) {
		let lo = 0;
		let hi = matches.length;
		while (lo < hi) {
			const mid = (lo + hi) >> 1;
			if (matches[mid] < from) lo = mid + 1;
			else hi = mid;
		}
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
			els[i].classList.add('match');
			isMatch[i] = 1;
			matches.push(i);
		}
		matchedSum = sumMatches(0, n);
		if (searchEl) searchEl.classList.add('on');
		showMatched();
		saveUrl();
		return true;
	}

	function resetSearch() {
		clearMatches();
		searchRe = null;
		if (searchEl) searchEl.classList.remove('on');
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
		if (icEl) icEl.classList.toggle('on', on);
	}

	function toggleIgnoreCase() {
		setIgnoreCase(!ignoreCase);
		if (searchRe !== null) search(searchRe);
		else saveUrl();
	}

	// ---- the view as a whole ----

	function zoom(i) {
		applyZoom(i);
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

	function queryParts() {
		const q = location.search.replace(/^\?/, '');
		return q ? q.split('&') : [];
	}

	function parseQuery() {
		const out = {};
		for (const part of queryParts()) {
			const eq = part.indexOf('=');
			const key = eq >= 0 ? part.slice(0, eq) : part;
			let value = eq >= 0 ? part.slice(eq + 1) : '';
			try {
				value = decodeURIComponent(value);
			} catch (e) {
				continue;
			}
			out[key] = value;
		}
		return out;
	}

	let restoring = false;

	function saveUrl() {
		if (restoring) return;
		const q = queryParts().filter((p) => !OURS.includes(p.split('=')[0]));
		if (zoomed >= 0) q.push(`x=${encodeURIComponent(els[zoomed].getAttribute('data-x'))}`, `y=${depth[zoomed]}`);
		if (searchRe !== null) q.push(`s=${encodeURIComponent(searchRe)}`);
		if (ignoreCase) q.push('i=1');
		const url = location.pathname + (q.length ? `?${q.join('&')}` : '') + location.hash;
		try {
			history.replaceState(history.state, '', url);
		} catch (e) {
			// file:// URLs may refuse: the view still works, the link just does not follow
		}
	}

	// The frame at depth d that starts at x (or, failing that, contains it).
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

	framesG.addEventListener('mouseover', (e) => {
		const i = frameOf(e.target);
		if (i >= 0) showDetails(i);
	});
	framesG.addEventListener('mouseout', clearDetails);
	framesG.addEventListener('click', (e) => {
		const i = frameOf(e.target);
		if (i >= 0 && i !== zoomed) zoom(i);
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

	window.flamed = {
		// el: a frame's <g class="f">, anything inside it, or its index in frames()
		zoom(el) {
			const i = typeof el === 'number' ? el : frameOf(el);
			if (i >= 0 && i < n) zoom(i);
		},
		unzoom,
		search(re, ic) {
			return search(re, ic);
		},
		resetSearch,
		frames() {
			return { length: n, start, count, before, depth, parent, end, merged, elements: els, name: nameOf };
		},
		state() {
			return { zoomed, search: searchRe, ignoreCase, matched: matchedSum, charWidth: CHARW };
		},
	};

	restore();
})();
