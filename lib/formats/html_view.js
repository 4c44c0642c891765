// SPDX-License-Identifier: GPL-2.0-or-later
// The viewer of every flamed HTML flame graph: decodes the page's data, draws it on a canvas and
// gives it the SVG's behaviour (details, zoom, search, URL state) plus what big profiles need.
//
// docs/html-format.md is the contract with the writer (lib/formats/html.c), which embeds this file
// in a <script> element: it must never contain the characters that end one, nor those that open
// an HTML comment. Plain modern JS, no modules, no libraries, no innerHTML, no eval: nodes are
// built with createElement and filled with textContent; names reach the canvas through fillText.
//
// Why it works the way it does:
// - Every frame is kept, as typed arrays in depth-first order (parents first): the subtree of
//   frame i is the index range [i, end[i]). No script object is made per frame, so a million
//   frames cost some 60 MB of arrays and no garbage-collector time.
// - The frames of each depth are listed left to right (byDepth[depthAt[d] .. depthAt[d + 1])),
//   which is also ascending index order. A zoom on z keeps, at each depth below z, the frames
//   whose indices are in [z, end[z]): two binary searches per row. A redraw touches only the
//   rows on the screen and, in each, jumps over runs of sub-pixel frames with a binary search
//   on their starts, so it costs about the number of pixels drawn, not the number of frames.
// - The canvas is as big as the viewport, sticky in a scroll container whose spacer is as tall
//   as the rows: stacks 5,000 deep stay far below any canvas size limit.
// - Frames are pixels, not canvas calls: each row is drawn as one line of a row-high ImageData
//   (a typed-array fill per frame, no colour string parsed), copied down and put; labels and
//   the selection go on top with fillText and strokeRect. Setting fillStyle to thousands of
//   colours cost more than the rest of a redraw; a frame-sized buffer cost more still on the
//   first draw (fresh memory is slow to touch in the 2-CPU VMs this was measured in).
// - Marks: flamed-script, flamed-inflated, flamed-decoded (diagnostics), flamed-first-paint,
//   flamed-ready (docs/html-format.md). After ready, an idle callback runs the zoom, search and
//   hover code once on views never shown, so that the first real click is not the engine's
//   first time through it.
// - A search tests each distinct name once; frames look their name up. Matched shares and the
//   function list walk the typed arrays, skipping the subtree of a match.
// - Redraws are coalesced with requestAnimationFrame; the URL follows a moment after changes.
(function () {
	'use strict';

	const doc = document;
	const root = doc.documentElement;
	const MAGENTA_PX = rgbPx(230, 0, 230);
	const XPAD = 10; // CSS pixels left and right of the frames, as the SVG's
	const MIN_PX = 1; // frames narrower than this are drawn in merged runs
	const RUN_MIN_PX = 0.1; // nothing narrower is drawn
	const SHOW_MAX = 2000; // characters of a name shown in the details and the tooltip
	const LIST_PAGE = 200; // rows of the function list added at a time
	const URL_DELAY_MS = 300;
	const SEARCH_IDLE_MS = 400;

	// A colour as a canvas pixel: RGBA bytes in a little-endian Uint32Array.
	function rgbPx(r, g, b) {
		return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
	}

	function el(tag, attrs, text) {
		const e = doc.createElement(tag);
		if (attrs) for (const k of Object.keys(attrs)) e.setAttribute(k, attrs[k]);
		if (text !== undefined && text !== null) e.textContent = text;
		return e;
	}

	function cutText(s, max) {
		if (s.length <= max) return s;
		let cut = max;
		const c = s.charCodeAt(cut - 1);
		if (c >= 0xd800 && c <= 0xdbff) cut--;
		return s.slice(0, cut) + '\u2026';
	}

	// As the SVG's: rounded half to even, 1,234,567.
	function fmtCount(v) {
		let r = Math.round(v);
		if (Math.abs(v - Math.trunc(v)) === 0.5) r = 2 * Math.round(v / 2);
		if (Object.is(r, -0)) r = 0;
		return r.toLocaleString('en-US', { maximumFractionDigits: 0 });
	}

	function pct(part, whole) {
		return whole > 0 ? ((100 * part) / whole).toFixed(2) : '0.00';
	}

	function escapeRe(s) {
		return s.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
	}

	class DataError extends Error {}

	function showError(msg) {
		root.dataset.state = 'error';
		let e = doc.getElementById('flamed-error');
		if (!e) {
			e = el('p', { id: 'flamed-error', role: 'alert' });
			doc.body.insertBefore(e, doc.body.firstChild);
		}
		e.textContent = `This flame graph cannot be shown: ${msg}`;
	}

	// ---- decoding (docs/html-format.md, flamed-data) ----

	function isCount(v) {
		return typeof v === 'number' && isFinite(v) && v >= 0;
	}

	function readMeta() {
		const e = doc.getElementById('flamed-meta');
		if (!e) throw new DataError('no flamed-meta element');
		let m;
		try {
			m = JSON.parse(e.textContent);
		} catch (err) {
			throw new DataError(`flamed-meta is not JSON (${err.message})`);
		}
		if (!m || typeof m !== 'object') throw new DataError('flamed-meta is not an object');
		if (m.version !== 1) throw new DataError(`data version ${m.version}, this viewer reads version 1`);
		for (const k of ['frames', 'names', 'colors', 'bytes']) {
			if (!Number.isSafeInteger(m[k]) || m[k] < 0) throw new DataError(`flamed-meta: "${k}" is not a count`);
		}
		// Each frame takes 3 bytes at least, each name 1, each colour 3: refused before any
		// allocation is made from these numbers.
		if (m.bytes > 0x7fffffff || 3 * m.frames + m.names + 3 * m.colors > m.bytes) {
			throw new DataError(`flamed-meta's counts do not add up (${m.frames} frames, ${m.names} names, ${m.colors} colours in ${m.bytes} bytes)`);
		}
		const str = (v, d) => (typeof v === 'string' ? v : d);
		const num = (v, d) => (typeof v === 'number' && isFinite(v) && v > 0 ? v : d);
		let bg = ['#eeeeee', '#eeeeb0'];
		if (Array.isArray(m.bg) && m.bg.length === 2) bg = m.bg;
		else if (m.bg && typeof m.bg === 'object') bg = [m.bg.top, m.bg.bottom];
		bg = bg.map((c, k) => (/^#[0-9a-fA-F]{6}$/.test(c) ? c : k ? '#eeeeb0' : '#eeeeee'));
		return {
			title: str(m.title, 'Flame Graph'),
			subtitle: str(m.subtitle, ''),
			notes: str(m.notes, ''),
			countname: str(m.countname, 'samples'),
			nametype: str(m.nametype, 'Function:'),
			fonttype: str(m.fonttype, 'Verdana'),
			fontsize: num(m.fontsize, 12),
			fontwidth: num(m.fontwidth, 0.59),
			frameheight: Math.max(4, num(m.frameheight, 16)),
			total: isCount(m.total) ? m.total : 0,
			inverted: m.inverted === true,
			flamechart: m.flamechart === true,
			diff: m.diff === true,
			diffself: m.diffself === true,
			negate: m.negate === true,
			bg,
			frames: m.frames,
			names: m.names,
			colors: m.colors,
			integral: m.integral !== false,
			framecolors: m.framecolors === true,
			gaps: m.gaps === true,
			bytes: m.bytes,
		};
	}

	async function inflate(meta) {
		const e = doc.getElementById('flamed-data');
		if (!e) throw new DataError('no flamed-data element');
		let bin;
		try {
			bin = atob(e.textContent);
		} catch (err) {
			throw new DataError('flamed-data is not base64');
		}
		const z = new Uint8Array(bin.length);
		for (let i = 0; i < bin.length; i++) z[i] = bin.charCodeAt(i);
		// Straight into the stream and out of it, into one buffer of the announced size: no Blob
		// or Response in between (each costs the main thread a few tasks).
		const out = new Uint8Array(meta.bytes);
		let got = 0;
		try {
			const ds = new DecompressionStream('deflate');
			const w = ds.writable.getWriter();
			w.write(z).catch(() => {});
			w.close().catch(() => {});
			const r = ds.readable.getReader();
			for (;;) {
				const { done, value } = await r.read();
				if (done) break;
				if (got + value.length > out.length) throw new DataError(`the data has more than the ${meta.bytes} bytes flamed-meta says`);
				out.set(value, got);
				got += value.length;
			}
		} catch (err) {
			if (err instanceof DataError) throw err;
			throw new DataError('flamed-data is not a zlib stream');
		}
		if (got !== out.length) throw new DataError(`the data has ${got} bytes, flamed-meta says ${meta.bytes}`);
		return out;
	}

	// Reads n varints from data at pos into out (each below limit); returns the position after.
	// One loop for every column, so that it is compiled early: a page has one chance to be fast.
	function readVarints(data, pos, out, n, limit, what) {
		const len = data.length;
		for (let i = 0; i < n; i++) {
			let b = data[pos++];
			if (b < 0x80) {
				if (b >= limit) throw new DataError(`${what} ${i} is ${b}, out of range (${limit})`);
				out[i] = b;
				continue;
			}
			if (pos > len) throw new DataError('the data ends before its last column');
			let v = b & 0x7f;
			let mul = 128;
			for (let k = 1; ; k++) {
				if (k >= 8) throw new DataError('a varint is longer than 8 bytes');
				if (pos >= len) throw new DataError('the data ends before its last column');
				b = data[pos++];
				v += (b & 0x7f) * mul;
				if (b < 0x80) break;
				mul *= 128;
			}
			if (v > Number.MAX_SAFE_INTEGER) throw new DataError('a varint is 2^53 or more');
			if (v >= limit) throw new DataError(`${what} ${i} is ${v}, out of range (${limit})`);
			out[i] = v;
		}
		return pos;
	}

	function decode(meta, data) {
		const len = data.length;
		const N = meta.frames;
		const M = meta.names;
		const C = meta.colors;
		const short = () => new DataError('the data ends before its last column');

		// names
		let p = 0;
		for (let k = 0; k < M; k++) {
			const nl = data.indexOf(10, p);
			if (nl < 0) throw new DataError(`the data has fewer than ${M} names`);
			p = nl + 1;
		}
		const names = M ? new TextDecoder().decode(data.subarray(0, p)).split('\n') : [''];
		if (names.length !== M + 1) throw new DataError('the name table does not add up');
		names.length = M;
		let pos = p;
		// colours
		if (pos + 3 * C > len) throw short();
		const colorPx = new Uint32Array(C);
		for (let k = 0; k < C; k++, pos += 3) colorPx[k] = rgbPx(data[pos], data[pos + 1], data[pos + 2]);
		const namecolor = new Int32Array(M);
		pos = readVarints(data, pos, namecolor, M, C, 'the colour of name');
		const namePx = new Uint32Array(M);
		for (let k = 0; k < M; k++) namePx[k] = colorPx[namecolor[k]];
		// depth: the zigzag deltas, turned into depths (and checked) by buildModel
		const depth = new Int32Array(N);
		pos = readVarints(data, pos, depth, N, 0x7fffffff, 'the depth of frame');
		const name = new Int32Array(N);
		pos = readVarints(data, pos, name, N, M, 'the name of frame');
		const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
		function counts(what) {
			const out = new Float64Array(N);
			if (meta.integral) return [out, readVarints(data, pos, out, N, Infinity, what)];
			if (pos + 8 * N > len) throw short();
			for (let i = 0, q = pos; i < N; i++, q += 8) {
				const v = view.getFloat64(q, true);
				if (!(v >= 0 && v < Infinity)) throw new DataError(`${what} ${i} is ${v}`);
				out[i] = v;
			}
			return [out, pos + 8 * N];
		}
		let count = null;
		let gap = null;
		let before = null;
		[count, pos] = counts('the count of frame');
		if (meta.gaps) [gap, pos] = counts('the gap of frame');
		if (meta.diff) [before, pos] = counts('the count before of frame');
		let color = null;
		if (meta.framecolors) {
			color = new Int32Array(N);
			pos = readVarints(data, pos, color, N, C, 'the colour of frame');
		}
		if (pos > len) throw short();
		if (pos !== len) throw new DataError(`${len - pos} bytes are left over after the last column`);
		return { names, colorPx, namecolor, namePx, depth, name, count, gap, before, color };
	}

	// ---- the model: one pass over frames in depth-first order ----

	// depth: the depths, or with zigzag set the writer's zigzag deltas, replaced by the depths.
	// color: per-frame colour indices or null (the name's colour). own counts: see ownCounts().
	function buildModel(n, depth, zigzag, name, count, gap, before, color) {
		// The gaps become the starts in place: one array of N doubles less to touch.
		const start = gap === null ? new Float64Array(n) : gap;
		const end = new Int32Array(n);
		const parent = new Int32Array(n);
		let cap = 64;
		let stack = new Int32Array(cap);
		let place = new Float64Array(cap + 1); // where the next frame at depth sp goes
		let rowCount = new Int32Array(cap + 1);
		let sp = 0;
		let rows = 0;
		for (let i = 0; i < n; i++) {
			let d = depth[i];
			if (zigzag) {
				d = sp + (d & 1 ? -((d + 1) / 2) : d / 2);
				depth[i] = d;
			}
			if (d > sp || d < 0) {
				if (d < 0) throw new DataError(`frame ${i} has depth ${d}`);
				throw new DataError(`frame ${i} is ${d - sp + 1} levels deeper than the one before`);
			}
			while (sp > d) end[stack[--sp]] = i;
			const s = gap === null ? place[sp] : place[sp] + start[i];
			start[i] = s;
			place[sp] = s + count[i];
			parent[i] = sp ? stack[sp - 1] : -1;
			rowCount[sp]++;
			if (sp + 1 >= cap) {
				cap *= 2;
				const s2 = new Int32Array(cap);
				s2.set(stack);
				stack = s2;
				const p2 = new Float64Array(cap + 1);
				p2.set(place);
				place = p2;
				const r2 = new Int32Array(cap + 1);
				r2.set(rowCount);
				rowCount = r2;
			}
			stack[sp++] = i;
			place[sp] = s;
			if (sp > rows) rows = sp;
		}
		const rootSum = place[0];
		while (sp) end[stack[--sp]] = n;
		// Depth-first order lists each depth's frames left to right.
		const depthAt = new Int32Array(rows + 1);
		for (let d = 0; d < rows; d++) depthAt[d + 1] = depthAt[d] + rowCount[d];
		const fill = depthAt.slice(0, rows);
		const byDepth = new Int32Array(n);
		for (let i = 0; i < n; i++) byDepth[fill[depth[i]]++] = i;
		return { n, depth, name, count, before, own: null, ownBefore: null, color, start, end, parent, byDepth, depthAt, rows, rootSum };
	}

	// Own counts (count minus the children's), made on first use.
	function ownCounts(m) {
		if (m.own) return;
		const own = new Float64Array(m.count);
		const ownBefore = m.before ? new Float64Array(m.before) : null;
		for (let i = 0; i < m.n; i++) {
			const p = m.parent[i];
			if (p < 0) continue;
			own[p] -= m.count[i];
			if (ownBefore) ownBefore[p] -= m.before[i];
		}
		m.own = own;
		m.ownBefore = ownBefore;
	}

	// The frames of model m whose name matches (nameMatch[name] is 1), ascending.
	function matchesOf(m, nameMatch) {
		let out = new Int32Array(1024);
		let n = 0;
		const nameOf = m.name;
		for (let i = 0; i < m.n; i++) {
			if (nameMatch[nameOf[i]] === 0) continue;
			if (n === out.length) {
				const grown = new Int32Array(n * 2);
				grown.set(out);
				out = grown;
			}
			out[n++] = i;
		}
		return out.subarray(0, n);
	}

	// The first position q in [lo, hi) of byDepth with byDepth[q] >= idx.
	function lowerIndex(byDepth, lo, hi, idx) {
		while (lo < hi) {
			const mid = (lo + hi) >>> 1;
			if (byDepth[mid] < idx) lo = mid + 1;
			else hi = mid;
		}
		return lo;
	}

	// The first position q in [lo, hi) whose frame starts at s or later.
	function lowerStart(byDepth, start, lo, hi, s) {
		while (lo < hi) {
			const mid = (lo + hi) >>> 1;
			if (start[byDepth[mid]] < s) lo = mid + 1;
			else hi = mid;
		}
		return lo;
	}

	// ---- the renderer: one canvas over a scroll container ----

	// opts: model, names (the string table), colorPx, namePx (pixels of colours and names), orientation, scaleTotal, font, fh,
	// charW, hl (the shared search state), onHover(view, i, ev), onClick(view, i, ev).
	class FlameView {
		constructor(host, opts) {
			Object.assign(this, opts);
			this.zoomed = -1;
			this.selected = -1;
			this.anc = null; // the ancestors of the zoomed frame by depth
			this.pending = 0;
			this.matchGen = -1;
			this.matchAt = null; // the matches of depth d: matchList[matchAt[d] .. matchAt[d + 1])
			this.matchList = null;
			this.cssW = 0;
			this.cssH = 0;
			this.contentH = 0;
			this.el = host;
			host.classList.add('fv');
			this.stick = el('div', { class: 'fv-stick' });
			this.canvas = el('canvas', { class: 'fv-canvas' });
			this.spacer = el('div', { class: 'fv-spacer' });
			this.stick.appendChild(this.canvas);
			host.appendChild(this.stick);
			host.appendChild(this.spacer);
			this.ctx = this.canvas.getContext('2d', { alpha: true });
			this.labelMin = 3 * this.charW;
			this.img = null; // the pixels of the canvas, drawn by typed-array fills
			this.u32 = null;
			this.pxW = 0;
			this.line = 0; // the first pixel of the line being drawn
			this.nLabels = 0;
			this.labelIdx = new Int32Array(256);
			this.labelPos = new Float64Array(1024);
			this.drawnTop = -1; // the scroll position and size last drawn
			this.drawnW = -1;
			this.drawnH = -1;
			host.addEventListener('scroll', () => {
				if (host.scrollTop !== this.drawnTop) this.requestDraw();
			}, { passive: true });
			this.canvas.addEventListener('mousemove', (e) => {
				const i = this.frameAt(e.clientX, e.clientY);
				this.onHover(this, i, e);
			});
			this.canvas.addEventListener('mouseleave', (e) => this.onHover(this, -1, e));
			this.canvas.addEventListener('click', (e) => {
				this.onClick(this, this.frameAt(e.clientX, e.clientY), e);
			});
		}

		get bottomPad() {
			return 4;
		}

		get topPad() {
			return Math.round(this.fh / 2);
		}

		// Sizes the canvas to the container and the spacer to the rows; true if anything changed.
		layout() {
			const w = this.el.clientWidth;
			const h = this.el.clientHeight;
			const dpr = window.devicePixelRatio || 1;
			const rowsH = this.model.rows * this.fh + this.topPad + this.bottomPad;
			const contentH = Math.max(rowsH, h);
			let changed = false;
			if (w !== this.cssW || h !== this.cssH || dpr !== this.dpr) {
				this.cssW = w;
				this.cssH = h;
				this.dpr = dpr;
				this.canvas.width = Math.max(1, Math.round(w * dpr));
				this.canvas.height = Math.max(1, Math.round(h * dpr));
				this.canvas.style.width = `${w}px`;
				this.canvas.style.height = `${h}px`;
				changed = true;
			}
			if (contentH !== this.contentH) {
				const atBottom = this.contentH > 0 && this.el.scrollTop + h >= this.contentH - 2;
				this.contentH = contentH;
				this.spacer.style.height = `${contentH}px`;
				if (atBottom && this.orientation === 'flame') this.el.scrollTop = contentH;
				changed = true;
			}
			return changed;
		}

		// The top of row d in content pixels.
		rowTop(d) {
			if (this.orientation === 'icicle') return this.topPad + d * this.fh;
			return this.contentH - this.bottomPad - (d + 1) * this.fh;
		}

		rowAt(contentY) {
			const fh = this.fh;
			if (this.orientation === 'icicle') return Math.floor((contentY - this.topPad) / fh);
			return Math.floor((this.contentH - this.bottomPad - contentY) / fh);
		}

		span() {
			return Math.max(1, this.cssW - 2 * XPAD);
		}

		// The horizontal mapping of the current view: x = XPAD + (start - base) * k.
		scale() {
			const m = this.model;
			const z = this.zoomed;
			const span = this.span();
			if (z >= 0) return { base: m.start[z], k: m.count[z] > 0 ? span / m.count[z] : 0 };
			return { base: 0, k: this.scaleTotal > 0 ? span / this.scaleTotal : 0 };
		}

		// The positions in byDepth of the frames of depth d that the view shows.
		rowRange(d) {
			const m = this.model;
			let lo = m.depthAt[d];
			let hi = m.depthAt[d + 1];
			const z = this.zoomed;
			if (z >= 0) {
				lo = lowerIndex(m.byDepth, lo, hi, z);
				hi = lowerIndex(m.byDepth, lo, hi, m.end[z]);
			}
			return [lo, hi];
		}

		requestDraw() {
			if (this.pending) return;
			this.pending = requestAnimationFrame(() => this.draw());
		}

		isMatch(i) {
			const nm = this.hl.nameMatch;
			return nm !== null && nm[this.model.name[i]] === 1;
		}

		// Is a frame of depth d with an index in [from, to] a match? For merged runs: the
		// matches of the view's model, grouped by depth, made once per search.
		matchesIn(d, from, to) {
			const hl = this.hl;
			if (hl.nameMatch === null) return false;
			if (this.matchGen !== hl.gen) {
				const m = this.model;
				const all = hl.model === m ? hl.list : matchesOf(m, hl.nameMatch);
				const at = new Int32Array(m.rows + 1);
				for (let j = 0; j < all.length; j++) at[m.depth[all[j]] + 1]++;
				for (let r = 0; r < m.rows; r++) at[r + 1] += at[r];
				const fill = at.slice(0, m.rows);
				const list = new Int32Array(all.length);
				for (let j = 0; j < all.length; j++) list[fill[m.depth[all[j]]]++] = all[j];
				this.matchAt = at;
				this.matchList = list;
				this.matchGen = hl.gen;
			}
			const list = this.matchList;
			const q = lowerIndex(list, this.matchAt[d], this.matchAt[d + 1], from);
			return q < this.matchAt[d + 1] && list[q] <= to;
		}

		// The colour of frame i as a pixel (little-endian RGBA in a Uint32Array).
		pixelOf(i) {
			const m = this.model;
			if (this.hl.nameMatch !== null && this.hl.nameMatch[m.name[i]] === 1) return MAGENTA_PX;
			return m.color === null ? this.namePx[m.name[i]] : this.colorPx[m.color[i]];
		}

		// A horizontal span of pixels on the line being drawn, from CSS x0 to x1.
		fillSpan(px, x0, x1, gap) {
			const dpr = this.dpr;
			let a = Math.round(x0 * dpr);
			let b = Math.round(x1 * dpr) - gap;
			if (b <= a) b = a + 1;
			if (a < 0) a = 0;
			if (b > this.pxW) b = this.pxW;
			if (b > a) this.u32.fill(px, this.line + a, this.line + b);
		}

		// Queues a label for frame i, drawn over the pixels once they are on the canvas.
		// pale: an ancestor of the zoomed frame, drawn half transparent.
		queueLabel(i, x, y, w, pale) {
			const n = this.nLabels;
			if (n === this.labelIdx.length) {
				const idx = new Int32Array(n * 2);
				idx.set(this.labelIdx);
				this.labelIdx = idx;
				const pos = new Float64Array(n * 8);
				pos.set(this.labelPos);
				this.labelPos = pos;
			}
			this.labelIdx[n] = i;
			this.labelPos[4 * n] = x;
			this.labelPos[4 * n + 1] = y;
			this.labelPos[4 * n + 2] = w;
			this.labelPos[4 * n + 3] = pale;
			this.nLabels = n + 1;
		}

		drawLabels() {
			const ctx = this.ctx;
			ctx.font = this.font;
			ctx.textBaseline = 'middle';
			ctx.fillStyle = '#000';
			const charW = this.charW;
			const names = this.names;
			const nameOf = this.model.name;
			const ty = (this.fh - 1) / 2 + 0.5;
			for (let n = 0; n < this.nLabels; n++) {
				const i = this.labelIdx[n];
				const x = this.labelPos[4 * n];
				const y = this.labelPos[4 * n + 1];
				const w = this.labelPos[4 * n + 2];
				const fit = Math.floor(w / charW);
				if (fit < 3) continue;
				const name = names[nameOf[i]];
				let text = name;
				if (name.length > fit) {
					let cut = fit - 2;
					const c = name.charCodeAt(cut - 1);
					if (c >= 0xd800 && c <= 0xdbff) cut--;
					text = name.slice(0, cut) + '..';
				}
				ctx.globalAlpha = this.labelPos[4 * n + 3] ? 0.5 : 1;
				ctx.fillText(text, x + 3, y + ty, Math.max(1, w - 4));
			}
			ctx.globalAlpha = 1;
		}

		// Draws the frames byDepth[lo .. hi) of one row on the current pixel line. Hot: frames
		// of a pixel or more are one typed-array fill each; narrower ones are merged into runs,
		// and each step of a run crosses a pixel boundary by a binary search on the starts.
		drawRow(d, lo, hi, y, base, k) {
			const m = this.model;
			const byDepth = m.byDepth;
			const start = m.start;
			const count = m.count;
			const nameOf = m.name;
			const color = m.color;
			const colorPx = this.colorPx;
			const namePx = this.namePx;
			const nm = this.hl.nameMatch;
			const labelMin = this.labelMin;
			const x0 = XPAD - base * k;
			const u32 = this.u32;
			const line = this.line;
			const dpr = this.dpr;
			const pxW = this.pxW;
			let p = lo;
			while (p < hi) {
				const i = byDepth[p];
				const w = count[i] * k;
				const x = x0 + start[i] * k;
				if (w >= MIN_PX) {
					const px = nm !== null && nm[nameOf[i]] === 1 ? MAGENTA_PX : color === null ? namePx[nameOf[i]] : colorPx[color[i]];
					let a = Math.round(x * dpr);
					let b = Math.round((x + w) * dpr) - (w >= 3 ? 1 : 0);
					if (b <= a) b = a + 1;
					if (a < 0) a = 0;
					if (b > pxW) b = pxW;
					if (b > a) u32.fill(px, line + a, line + b);
					if (w >= labelMin) this.queueLabel(i, x, y, w, 0);
					p++;
					continue;
				}
				const first = p;
				let last = p;
				let x1 = x + w;
				p++;
				while (p < hi) {
					const bx = Math.floor(x1) + 1;
					// the first frame from p on that starts at or right of the boundary
					const s = (bx - x0) / k;
					let a = p;
					let b = hi;
					while (a < b) {
						const mid = (a + b) >>> 1;
						if (start[byDepth[mid]] < s) a = mid + 1;
						else b = mid;
					}
					if (a > p) {
						const i2 = byDepth[a - 1];
						const w2 = count[i2] * k;
						if (w2 >= MIN_PX) {
							if (a - 1 > p) {
								const i3 = byDepth[a - 2];
								const e3 = x0 + (start[i3] + count[i3]) * k;
								if (e3 > x1) x1 = e3;
								last = a - 2;
							}
							p = a - 1;
							break;
						}
						const e2 = x0 + start[i2] * k + w2;
						if (e2 > x1) x1 = e2;
						last = a - 1;
						p = a;
						continue;
					}
					const i4 = byDepth[p];
					const x4 = x0 + start[i4] * k;
					const w4 = count[i4] * k;
					if (w4 >= MIN_PX || x4 - x1 >= 0.5) break;
					x1 = x4 + w4;
					last = p;
					p++;
				}
				if (x1 - x >= RUN_MIN_PX) {
					const f = byDepth[first];
					const px = this.matchesIn(d, f, byDepth[last]) ? MAGENTA_PX : color === null ? namePx[nameOf[f]] : colorPx[color[f]];
					this.fillSpan(px, x, x1, 0);
				}
			}
		}

		draw() {
			if (this.pending) cancelAnimationFrame(this.pending);
			this.pending = 0;
			this.layout();
			const m = this.model;
			const ctx = this.ctx;
			const pxW = this.canvas.width;
			const pxH = this.canvas.height;
			const dpr = this.dpr;
			const rowPx = Math.max(1, Math.round((this.fh - 1) * dpr));
			// One row of frames at a time: its first pixel line is drawn, copied down to the
			// row's height and put on the canvas. A frame-sized buffer would be 5 MB, and
			// touching fresh memory is what costs most on the first draw of a page.
			if (!this.img || this.img.width !== pxW || this.img.height !== rowPx) {
				this.img = ctx.createImageData(pxW, rowPx);
				this.u32 = new Uint32Array(this.img.data.buffer);
			}
			const u32 = this.u32;
			this.pxW = pxW;
			this.line = 0;
			ctx.setTransform(1, 0, 0, 1, 0, 0);
			ctx.clearRect(0, 0, pxW, pxH);
			this.nLabels = 0;
			const top = this.el.scrollTop;
			this.drawnTop = top;
			this.drawnW = this.cssW;
			this.drawnH = this.cssH;
			let d0 = this.rowAt(top);
			let d1 = this.rowAt(top + this.cssH);
			if (d0 > d1) [d0, d1] = [d1, d0];
			d0 = Math.max(0, d0);
			d1 = Math.min(m.rows - 1, d1);
			const { base, k } = this.scale();
			const z = this.zoomed;
			const zd = z >= 0 ? m.depth[z] : 0;
			const span = this.span();
			for (let d = d0; d <= d1 && m.n; d++) {
				const y = this.rowTop(d) - top;
				const py0 = Math.round(y * dpr);
				if (py0 + rowPx <= 0 || py0 >= pxH) continue;
				u32.fill(0, 0, pxW);
				if (z >= 0 && d < zd) {
					const a = this.anc[d];
					this.fillSpan(((this.pixelOf(a) & 0x00ffffff) | 0x80000000) >>> 0, XPAD, XPAD + span, 1);
					if (span >= this.labelMin) this.queueLabel(a, XPAD, y, span, 1);
				} else {
					const [lo, hi] = this.rowRange(d);
					if (lo >= hi) continue;
					this.drawRow(d, lo, hi, y, base, k);
				}
				for (let l = 1; l < rowPx; l++) u32.copyWithin(l * pxW, 0, pxW);
				ctx.putImageData(this.img, 0, py0);
			}
			ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
			this.drawLabels();
			const s = this.selected;
			if (s >= 0) {
				const g = this.geom(s);
				if (g) {
					ctx.lineWidth = 2;
					ctx.strokeStyle = '#000';
					ctx.strokeRect(g.x + 1, g.y - top + 1, Math.max(1, g.w - 2), this.fh - 3);
				}
			}
		}

		// Frame i in the current view: x, w in canvas CSS px and y in content px; null when the
		// view does not draw it on its own (outside the zoom, or narrower than a pixel).
		geom(i) {
			const m = this.model;
			if (i < 0 || i >= m.n) return null;
			const z = this.zoomed;
			const y = this.rowTop(m.depth[i]);
			if (z >= 0 && (i < z || i >= m.end[z])) {
				if (m.depth[i] < m.depth[z] && this.anc[m.depth[i]] === i) return { x: XPAD, y, w: this.span() };
				return null;
			}
			const { base, k } = this.scale();
			const w = m.count[i] * k;
			if (w < MIN_PX) return null;
			return { x: XPAD + (m.start[i] - base) * k, y, w };
		}

		// The frame under a point of the client area, or -1.
		frameAt(cx, cy) {
			const m = this.model;
			if (!m.n) return -1;
			const r = this.canvas.getBoundingClientRect();
			const x = cx - r.left;
			const cyContent = cy - r.top + this.el.scrollTop;
			const d = this.rowAt(cyContent);
			if (d < 0 || d >= m.rows) return -1;
			if (cyContent - this.rowTop(d) >= this.fh - 1) return -1; // the gap between rows
			const z = this.zoomed;
			if (z >= 0 && d < m.depth[z]) return x >= XPAD && x < XPAD + this.span() ? this.anc[d] : -1;
			const { base, k } = this.scale();
			if (!(k > 0)) return -1;
			const s = base + (x - XPAD) / k;
			const [lo, hi] = this.rowRange(d);
			const q = lowerStart(m.byDepth, m.start, lo, hi, s + 1e-9 * Math.abs(s)) - 1;
			if (q < lo) return -1;
			const i = m.byDepth[q];
			return s < m.start[i] + m.count[i] ? i : -1;
		}

		zoom(i) {
			const m = this.model;
			if (i >= m.n || (i >= 0 && !(m.count[i] > 0))) return false;
			this.zoomed = i;
			if (i >= 0) {
				const anc = new Int32Array(m.depth[i]);
				for (let a = m.parent[i]; a >= 0; a = m.parent[a]) anc[m.depth[a]] = a;
				this.anc = anc;
			} else {
				this.anc = null;
			}
			this.requestDraw();
			return true;
		}

		setOrientation(o) {
			if (o === this.orientation) return;
			// Keep the same rows in sight: mirror the scroll position.
			const top = this.el.scrollTop;
			this.orientation = o;
			this.layout();
			this.el.scrollTop = Math.max(0, this.contentH - this.cssH - top);
			this.requestDraw();
		}

		// Scrolls so that row d is on the screen (in the middle when it was not).
		showRow(d) {
			this.layout();
			const y = this.rowTop(d);
			const top = this.el.scrollTop;
			if (y >= top && y + this.fh <= top + this.cssH) return;
			this.el.scrollTop = Math.max(0, y - (this.cssH - this.fh) / 2);
		}

		scrollToEnd() {
			this.layout();
			this.el.scrollTop = this.orientation === 'flame' ? this.contentH : 0;
		}
	}

	// ---- merged trees (the sandwich view) ----

	// Builds a tree from paths given root-first; emits it depth-first, siblings by name. The
	// nodes are typed arrays and (parent, name) -> node an open-addressing hash table, so that
	// merging the subtrees of a function found under most of a million frames takes no Map
	// per node.
	class TreeBuilder {
		// hint: about how many nodes the tree will have
		constructor(names, diff, hint) {
			this.names = names;
			this.n = 0;
			this.cap = 1024;
			while (this.cap < hint) this.cap *= 2;
			this.parent = new Int32Array(this.cap);
			this.name = new Int32Array(this.cap);
			this.count = new Float64Array(this.cap);
			this.before = diff ? new Float64Array(this.cap) : null;
			this.table = new Int32Array(this.cap * 2).fill(-1);
		}

		slot(p, nm) {
			const mask = this.table.length - 1;
			let h = (Math.imul(p + 1, 0x9e3779b1) ^ Math.imul(nm + 1, 0x85ebca77)) >>> 0;
			h = (h ^ (h >>> 15)) & mask;
			const table = this.table;
			for (;;) {
				const v = table[h];
				if (v < 0 || (this.parent[v] === p && this.name[v] === nm)) return h;
				h = (h + 1) & mask;
			}
		}

		grow() {
			const cap = this.cap * 2;
			const g = (a, T) => {
				const b = new T(cap);
				b.set(a);
				return b;
			};
			this.parent = g(this.parent, Int32Array);
			this.name = g(this.name, Int32Array);
			this.count = g(this.count, Float64Array);
			if (this.before) this.before = g(this.before, Float64Array);
			this.cap = cap;
			this.table = new Int32Array(cap * 2).fill(-1);
			for (let v = 0; v < this.n; v++) this.table[this.slot(this.parent[v], this.name[v])] = v;
		}

		// The child of node p (-1: a root) named nm, made if needed.
		child(p, nm) {
			let h = this.slot(p, nm);
			let v = this.table[h];
			if (v >= 0) return v;
			if (this.n === this.cap) {
				this.grow();
				h = this.slot(p, nm);
			}
			v = this.n++;
			this.parent[v] = p;
			this.name[v] = nm;
			this.table[h] = v;
			return v;
		}

		add(node, c, b) {
			this.count[node] += c;
			if (this.before) this.before[node] += b;
		}

		// The model of the tree (its frames have their names' colours).
		build() {
			const n = this.n;
			const names = this.names;
			// children lists: kids[at[v] .. at[v + 1]) for node v, at[n] .. for the roots
			const at = new Int32Array(n + 2);
			for (let v = 0; v < n; v++) at[(this.parent[v] < 0 ? n : this.parent[v]) + 1]++;
			for (let v = 0; v <= n; v++) at[v + 1] += at[v];
			const fill = at.slice(0, n + 1);
			const kids = new Int32Array(n);
			for (let v = 0; v < n; v++) kids[fill[this.parent[v] < 0 ? n : this.parent[v]]++] = v;
			const nameOf = this.name;
			const byName = (a, b) => {
				const x = names[nameOf[a]];
				const y = names[nameOf[b]];
				return x < y ? -1 : x > y ? 1 : 0;
			};
			const depth = new Int32Array(n);
			const name = new Int32Array(n);
			const count = new Float64Array(n);
			const before = this.before ? new Float64Array(n) : null;
			const stackV = new Int32Array(n + 1);
			const stackD = new Int32Array(n + 1);
			let sp = 0;
			const push = (slotOf, d) => {
				const lo = at[slotOf];
				const hi = at[slotOf + 1];
				if (hi - lo > 1) kids.subarray(lo, hi).sort(byName);
				for (let j = hi - 1; j >= lo; j--) {
					stackV[sp] = kids[j];
					stackD[sp++] = d;
				}
			};
			push(n, 0);
			let k = 0;
			while (sp) {
				const v = stackV[--sp];
				const d = stackD[sp];
				depth[k] = d;
				name[k] = nameOf[v];
				count[k] = this.count[v];
				if (before) before[k] = this.before[v];
				k++;
				push(v, d + 1);
			}
			return buildModel(n, depth, false, name, count, null, before, null);
		}
	}

	// ---- the page ----

	async function run() {
		const meta = readMeta();
		const raw = await inflate(meta);
		performance.mark('flamed-inflated');
		const dec = decode(meta, raw);
		const N = meta.frames;
		const M = meta.names;
		const names = dec.names;
		const model = buildModel(N, dec.depth, true, dec.name, dec.count, dec.gap, dec.before, dec.color);
		performance.mark('flamed-decoded');
		const TOTAL = meta.total > 0 ? meta.total : model.rootSum;
		const SCALE_TOTAL = Math.max(TOTAL, model.rootSum);
		const FH = meta.frameheight;
		const CHARW = meta.fontsize * meta.fontwidth > 0 ? meta.fontsize * meta.fontwidth : 7.08;

		// The page.
		const body = doc.body;
		body.style.setProperty('--bg-top', meta.bg[0]);
		body.style.setProperty('--bg-bottom', meta.bg[1]);
		const app = el('div', { id: 'flamed-app' });
		const head = el('header', { id: 'head' });
		const h1 = el('h1', { id: 'title' }, meta.title);
		head.appendChild(h1);
		if (meta.subtitle) head.appendChild(el('p', { id: 'subtitle' }, meta.subtitle));
		if (meta.notes) head.appendChild(el('p', { id: 'notes' }, meta.notes));
		const bar = el('div', { id: 'toolbar', role: 'toolbar' });
		const resetBtn = el('button', { id: 'reset', type: 'button', title: 'Reset zoom (Escape)' }, 'Reset Zoom');
		const orientBtn = el('button', { id: 'orient', type: 'button', title: 'Flame or icicle (o)', 'aria-pressed': 'false' }, 'Icicle');
		const searchEl = el('input', { id: 'search', type: 'search', placeholder: 'Search (regular expression)', 'aria-label': 'Search frames by regular expression', spellcheck: 'false', autocomplete: 'off' });
		const icBtn = el('button', { id: 'ignorecase', type: 'button', title: 'Ignore case', 'aria-pressed': 'false' }, 'Aa');
		const funcsBtn = el('button', { id: 'tab-funcs', type: 'button', title: 'Function list (f)', 'aria-expanded': 'false' }, 'Functions');
		const helpBtn = el('button', { id: 'help-button', type: 'button', title: 'Keys (?)' }, '?');
		for (const b of [resetBtn, orientBtn, searchEl, icBtn, funcsBtn, helpBtn]) bar.appendChild(b);
		if (meta.diff) {
			const lg = el('span', { id: 'legend' });
			const more = meta.negate ? 'blue' : 'red';
			const less = meta.negate ? 'red' : 'blue';
			lg.textContent = `${more}: more ${meta.diffself ? 'own ' : ''}${meta.countname}, ${less}: fewer`;
			bar.appendChild(lg);
		}
		head.appendChild(bar);
		const chartEl = el('div', { id: 'chart', tabindex: '0', 'aria-label': 'Flame graph; arrows move the selected frame, Enter zooms' });
		const foot = el('footer', { id: 'foot' });
		const detailsEl = el('div', { id: 'details', 'aria-live': 'polite' }, ' ');
		const matchedEl = el('div', { id: 'matched' }, ' ');
		foot.appendChild(detailsEl);
		foot.appendChild(matchedEl);
		const tipEl = el('div', { id: 'tooltip', role: 'tooltip' });
		tipEl.hidden = true;
		const helpEl = el('div', { id: 'help', role: 'dialog', 'aria-label': 'Keys' });
		helpEl.hidden = true;
		helpEl.appendChild(el('h2', null, 'Keys'));
		const keys = [
			['click', 'zoom to a frame'],
			['\u2190 \u2192', 'previous / next frame at the same depth'],
			['\u2191 \u2193', 'child / parent, as drawn'],
			['Enter', 'zoom to the selected frame'],
			['Escape', 'close a panel, else reset the zoom'],
			['/', 'search (a regular expression)'],
			['o', 'flame or icicle'],
			['f', 'function list'],
			['m', 'merge by function: callers and callees of the selected frame'],
			['?', 'this help'],
		];
		const dl = el('dl');
		for (const [k, v] of keys) {
			dl.appendChild(el('dt', null, k));
			dl.appendChild(el('dd', null, v));
		}
		helpEl.appendChild(dl);
		app.appendChild(head);
		app.appendChild(chartEl);
		app.appendChild(foot);
		body.appendChild(app);
		body.appendChild(tipEl);
		body.appendChild(helpEl);

		const font = (() => {
			const c = doc.createElement('canvas').getContext('2d');
			c.font = '1px serif';
			c.font = `${meta.fontsize}px ${meta.fonttype}`;
			return c.font === '1px serif' ? `${meta.fontsize}px sans-serif` : c.font;
		})();

		const hl = { nameMatch: null, gen: 0, model: null, list: null }; // the search, shared by every view
		const viewOpts = { names, colorPx: dec.colorPx, namePx: dec.namePx, font, fh: FH, charW: CHARW, hl };

		// ---- state ----
		let orientation = meta.inverted ? 'icicle' : 'flame';
		let searchRe = null;
		let ignoreCase = false;
		let matchedSum = 0;
		let matchList = new Int32Array(0); // matching frames, ascending
		let urlTimer = 0;
		let restoring = false;
		let sandwichName = -1;
		let sandwich = null; // { name, callers: view, callees: view }

		const main = new FlameView(chartEl, Object.assign({}, viewOpts, { model, orientation, scaleTotal: SCALE_TOTAL, onHover, onClick }));

		// ---- details ----

		function signed(v) {
			return (v < 0 ? '-' : '+') + fmtCount(Math.abs(v));
		}

		function detailsOf(view, i) {
			const m = view.model;
			const c = m.count[i];
			let s = `${meta.nametype} ${cutText(names[m.name[i]], SHOW_MAX)} (${fmtCount(c)} ${meta.countname}, ${pct(c, TOTAL)}% of all`;
			const z = view.zoomed;
			if (z >= 0 && i >= z && i < m.end[z]) s += `, ${pct(c, m.count[z])}% of zoomed`;
			if (meta.diffself && m.before) {
				ownCounts(m);
				let v = m.own[i] - m.ownBefore[i];
				if (meta.negate) v = -v;
				const p = TOTAL > 0 ? (100 * v) / TOTAL : 0;
				s += (p > 0 ? '; +' : '; ') + (Math.abs(p) < 1e9 ? `${p.toFixed(2)}%` : `${p.toPrecision(3)}%`);
			} else if (m.before) {
				const a = m.before[i];
				const d = c - a;
				s += `; before: ${fmtCount(a)}, ${signed(d)}`;
				s += a > 0 ? `, ${d < 0 ? '-' : '+'}${pct(Math.abs(d), a)}%` : ', new';
			}
			return s + ')';
		}

		let shown = { view: null, i: -1 };

		function onHover(view, i, e) {
			if (i < 0) {
				if (shown.i >= 0) detailsEl.textContent = ' ';
				shown = { view: null, i: -1 };
				tipEl.hidden = true;
				return;
			}
			if (shown.view !== view || shown.i !== i) {
				const t = detailsOf(view, i);
				detailsEl.textContent = t;
				tipEl.textContent = t;
				shown = { view, i };
			}
			tipEl.hidden = false;
			const tw = tipEl.offsetWidth;
			const th = tipEl.offsetHeight;
			let x = e.clientX + 12;
			let y = e.clientY + 16;
			if (x + tw > window.innerWidth - 4) x = Math.max(4, e.clientX - 12 - tw);
			if (y + th > window.innerHeight - 4) y = Math.max(4, e.clientY - 8 - th);
			tipEl.style.transform = `translate(${x}px, ${y}px)`;
		}

		function refreshDetails() {
			if (shown.i >= 0) {
				const t = detailsOf(shown.view, shown.i);
				detailsEl.textContent = t;
				tipEl.textContent = t;
			}
		}

		function onClick(view, i) {
			if (i < 0) return;
			if (view === main) {
				select(i, false);
				zoomTo(i);
			} else if (i !== view.zoomed) {
				view.zoom(i);
				refreshDetails();
			}
		}

		// ---- zoom, selection, orientation ----

		function zoomTo(i) {
			if (i === main.zoomed) return;
			if (!main.zoom(i)) return;
			resetBtn.disabled = i < 0;
			resetBtn.classList.toggle('hide', i < 0);
			if (i >= 0) {
				// The zoomed frame in sight: at the bottom for a flame, at the top for an icicle.
				main.layout();
				const y = main.rowTop(model.depth[i]);
				const top = main.el.scrollTop;
				if (y < top || y + FH > top + main.cssH) {
					main.el.scrollTop = main.orientation === 'flame' ? Math.max(0, y + FH + main.bottomPad - main.cssH) : Math.max(0, y - main.topPad);
				}
			}
			showMatched();
			refreshDetails();
			saveUrl();
		}

		function select(i, scroll) {
			main.selected = i;
			if (i >= 0 && scroll) {
				main.showRow(model.depth[i]);
				const z = main.zoomed;
				if (z >= 0 && !(i >= z && i < model.end[z]) && !(model.depth[i] < model.depth[z] && main.anc[model.depth[i]] === i)) {
					zoomTo(-1);
				}
				detailsEl.textContent = detailsOf(main, i);
				shown = { view: main, i };
			}
			main.requestDraw();
		}

		function setOrientation(o) {
			orientation = o;
			main.setOrientation(o);
			orientBtn.setAttribute('aria-pressed', String(o === 'icicle'));
			saveUrl();
		}

		// ---- search ----

		function setIgnoreCase(on) {
			ignoreCase = on;
			icBtn.setAttribute('aria-pressed', String(on));
		}

		// The samples under the matches in [from, to), a match inside a match counted once.
		function sumMatches(from, to) {
			let q = lowerIndex(matchList, 0, matchList.length, from);
			let sum = 0;
			let covered = from;
			for (; q < matchList.length && matchList[q] < to; q++) {
				const i = matchList[q];
				if (i < covered) continue;
				sum += model.count[i];
				covered = model.end[i];
			}
			return sum;
		}

		function showMatched() {
			if (searchRe === null) {
				matchedEl.textContent = ' ';
				return;
			}
			let s = `Matched: ${pct(matchedSum, TOTAL)}%`;
			const z = main.zoomed;
			if (z >= 0) {
				let inZoom = -1;
				for (let a = z; a >= 0; a = model.parent[a]) if (main.isMatch(a)) inZoom = model.count[z];
				if (inZoom < 0) inZoom = sumMatches(z, model.end[z]);
				s += ` of all, ${pct(inZoom, model.count[z])}% of zoomed`;
			}
			matchedEl.textContent = s;
		}

		function redrawAll() {
			main.requestDraw();
			if (sandwich) {
				sandwich.callers.requestDraw();
				sandwich.callees.requestDraw();
			}
		}

		function search(re) {
			let rx;
			try {
				rx = new RegExp(re, ignoreCase ? 'i' : '');
			} catch (e) {
				matchedEl.textContent = cutText(`Bad regex: ${re}`, 200);
				return false;
			}
			const nm = new Uint8Array(M);
			for (let k = 0; k < M; k++) if (rx.test(names[k])) nm[k] = 1;
			hl.nameMatch = nm;
			hl.gen++;
			searchRe = re;
			// Every matching frame, in document order; hl.list lets the main view reuse it.
			matchList = matchesOf(model, nm);
			hl.model = model;
			hl.list = matchList;
			const sum = sumMatches(0, N);
			matchedSum = sum;
			showMatched();
			redrawAll();
			saveUrl();
			return true;
		}

		function clearSearch() {
			hl.nameMatch = null;
			hl.gen++;
			searchRe = null;
			matchList = new Int32Array(0);
			matchedSum = 0;
			showMatched();
			redrawAll();
			saveUrl();
		}

		function applySearchBox() {
			clearTimeout(searchTimer);
			searchTimer = 0;
			const v = searchEl.value;
			if (v === '') {
				if (searchRe !== null) clearSearch();
			} else if (v !== searchRe) {
				search(v);
			}
		}

		let searchTimer = 0;
		searchEl.addEventListener('input', () => {
			clearTimeout(searchTimer);
			searchTimer = setTimeout(applySearchBox, SEARCH_IDLE_MS);
		});
		searchEl.addEventListener('keydown', (e) => {
			if (e.key === 'Enter') {
				e.preventDefault();
				applySearchBox();
			} else if (e.key === 'Escape') {
				e.preventDefault();
				e.stopPropagation();
				searchEl.blur();
				chartEl.focus({ preventScroll: true });
			}
		});

		function toggleIgnoreCase() {
			setIgnoreCase(!ignoreCase);
			if (searchRe !== null) search(searchRe);
			else saveUrl();
		}

		// A search for exactly one name: every instance of the function is highlighted.
		function highlightName(k) {
			const re = `^${escapeRe(names[k])}$`;
			searchEl.value = re;
			if (re !== searchRe) search(re);
		}

		// ---- the function list ----

		let stats = null; // per name: self, total, present; computed on first open
		let funcsEl = null;
		let listOrder = null;
		let listShown = 0;
		let sortKey = 'self';
		let sortDesc = true;
		let filterText = '';
		let tbody = null;
		let moreBtn = null;
		let countEl = null;

		function computeStats() {
			ownCounts(model);
			const self = new Float64Array(M);
			const total = new Float64Array(M);
			const present = new Uint8Array(M);
			const onStack = new Int32Array(M);
			const stack = [];
			const nameOf = model.name;
			for (let i = 0; i < N; i++) {
				const d = model.depth[i];
				while (stack.length > d) onStack[nameOf[stack.pop()]]--;
				const k = nameOf[i];
				self[k] += model.own[i];
				present[k] = 1;
				if (onStack[k] === 0) total[k] += model.count[i];
				onStack[k]++;
				stack.push(i);
			}
			return { self, total, present };
		}

		// Sorting 100,000 names with a comparator function costs a second: each order is a
		// rank per name instead, packed with the name's index into one float64 per row and
		// sorted natively (no comparator). Ranks by name come from one native string sort.
		let nameRank = null;
		const PACK = 2097152; // 2^21: rank * PACK + index stays below 2^53

		function rankByName() {
			if (!nameRank) {
				const sorted = names.slice().sort();
				const at = new Map();
				for (let r = sorted.length - 1; r >= 0; r--) at.set(sorted[r], r);
				nameRank = new Float64Array(M);
				for (let k = 0; k < M; k++) nameRank[k] = at.get(names[k]);
			}
			return nameRank;
		}

		function rankByValue(v, ids) {
			const sorted = new Float64Array(ids.length);
			for (let j = 0; j < ids.length; j++) sorted[j] = v[ids[j]];
			sorted.sort();
			const rank = new Float64Array(M);
			for (let j = 0; j < ids.length; j++) rank[ids[j]] = lowerIndex(sorted, 0, sorted.length, v[ids[j]]);
			return rank;
		}

		function sortList() {
			const f = filterText.toLowerCase();
			let ids = new Int32Array(M);
			let n = 0;
			for (let k = 0; k < M; k++) {
				if (!stats.present[k]) continue;
				if (f && !names[k].toLowerCase().includes(f)) continue;
				ids[n++] = k;
			}
			ids = ids.subarray(0, n);
			const rank = sortKey === 'name' ? rankByName() : rankByValue(stats[sortKey], ids);
			if (M < PACK) {
				const keys = new Float64Array(n);
				for (let j = 0; j < n; j++) keys[j] = rank[ids[j]] * PACK + ids[j];
				keys.sort();
				for (let j = 0; j < n; j++) ids[j] = keys[sortDesc ? n - 1 - j : j] % PACK;
			} else {
				const dir = sortDesc ? -1 : 1;
				ids = Int32Array.from(ids).sort((a, b) => (rank[a] - rank[b]) * dir || a - b);
			}
			listOrder = ids;
			listShown = 0;
			while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
			for (const th of funcsEl.querySelectorAll('th[data-sort]')) {
				th.setAttribute('aria-sort', th.dataset.sort === sortKey ? (sortDesc ? 'descending' : 'ascending') : 'none');
			}
			countEl.textContent = `${ids.length.toLocaleString('en-US')} functions`;
			showMoreRows();
		}

		function numCell(v) {
			const td = el('td', { class: 'num' }, fmtCount(v));
			td.appendChild(el('span', { class: 'pct' }, ` ${pct(v, TOTAL)}%`));
			return td;
		}

		function showMoreRows() {
			const stop = Math.min(listOrder.length, listShown + LIST_PAGE);
			const frag = doc.createDocumentFragment();
			for (let r = listShown; r < stop; r++) {
				const k = listOrder[r];
				const tr = el('tr');
				tr.dataset.name = String(k);
				const nameTd = el('td', { class: 'fname' }, cutText(names[k], SHOW_MAX));
				tr.appendChild(nameTd);
				tr.appendChild(numCell(stats.self[k]));
				tr.appendChild(numCell(stats.total[k]));
				const b = el('button', { type: 'button', class: 'sw', title: 'Merge by function: callers and callees' }, 'Merge');
				const td = el('td');
				td.appendChild(b);
				tr.appendChild(td);
				frag.appendChild(tr);
			}
			tbody.appendChild(frag);
			listShown = stop;
			moreBtn.hidden = listShown >= listOrder.length;
			moreBtn.textContent = `Show ${Math.min(LIST_PAGE, listOrder.length - listShown)} more`;
		}

		function buildFuncs() {
			funcsEl = el('aside', { id: 'funcs', 'aria-label': 'Functions' });
			const ph = el('div', { class: 'ph' });
			ph.appendChild(el('strong', null, 'Functions'));
			const filter = el('input', { id: 'funcs-filter', type: 'search', placeholder: 'Filter', 'aria-label': 'Filter functions', spellcheck: 'false', autocomplete: 'off' });
			ph.appendChild(filter);
			countEl = el('span', { class: 'count' });
			ph.appendChild(countEl);
			const close = el('button', { type: 'button', class: 'close', title: 'Close (Escape)' }, '\u00d7');
			ph.appendChild(close);
			funcsEl.appendChild(ph);
			const scroller = el('div', { class: 'fl-scroll' });
			const table = el('table');
			const thead = el('thead');
			const tr = el('tr');
			for (const [key, text] of [['name', 'Function'], ['self', 'Self'], ['total', 'Total']]) {
				const th = el('th', { 'data-sort': key, scope: 'col', title: 'Sort' }, text);
				tr.appendChild(th);
			}
			tr.appendChild(el('th', { scope: 'col' }, ''));
			thead.appendChild(tr);
			table.appendChild(thead);
			tbody = el('tbody');
			table.appendChild(tbody);
			scroller.appendChild(table);
			moreBtn = el('button', { type: 'button', id: 'funcs-more' }, 'Show more');
			scroller.appendChild(moreBtn);
			funcsEl.appendChild(scroller);
			body.appendChild(funcsEl);

			close.addEventListener('click', () => openFuncs(false));
			moreBtn.addEventListener('click', showMoreRows);
			thead.addEventListener('click', (e) => {
				const th = e.target.closest('th[data-sort]');
				if (!th) return;
				const key = th.dataset.sort;
				if (key === sortKey) sortDesc = !sortDesc;
				else {
					sortKey = key;
					sortDesc = key !== 'name';
				}
				sortList();
			});
			let ft = 0;
			filter.addEventListener('input', () => {
				clearTimeout(ft);
				ft = setTimeout(() => {
					filterText = filter.value;
					sortList();
				}, 150);
			});
			tbody.addEventListener('click', (e) => {
				const row = e.target.closest('tr');
				if (!row || row.dataset.name === undefined) return;
				const k = parseInt(row.dataset.name, 10);
				for (const r of tbody.querySelectorAll('tr.sel')) r.classList.remove('sel');
				row.classList.add('sel');
				if (e.target.closest('button.sw')) openSandwich(k);
				else highlightName(k);
			});
		}

		function openFuncs(on) {
			if (on && !funcsEl) {
				stats = computeStats();
				buildFuncs();
				sortList();
			}
			if (funcsEl) funcsEl.hidden = !on;
			funcsBtn.setAttribute('aria-expanded', String(on));
			body.classList.toggle('funcs-open', on);
			main.requestDraw();
		}

		// ---- merge by function ----

		let sandwichEl = null;

		function buildSandwichModels(k) {
			const nameOf = model.name;
			const before = model.before;
			const end = model.end;
			let up = 0;
			let down = 0;
			for (let i = 0; i < N; ) {
				if (nameOf[i] !== k) {
					i++;
					continue;
				}
				up += model.depth[i] + 1;
				down += end[i] - i;
				i = end[i];
			}
			const callers = new TreeBuilder(names, !!model.before, Math.min(up, N));
			const callees = new TreeBuilder(names, !!model.before, Math.min(down, N));
			const path = [];
			// Each outermost instance of k: its callers, and its subtree.
			for (let i = 0; i < N; ) {
				if (nameOf[i] !== k) {
					i++;
					continue;
				}
				const b = before ? before[i] : 0;
				let node = callers.child(-1, k);
				callers.add(node, model.count[i], b);
				for (let a = model.parent[i]; a >= 0; a = model.parent[a]) {
					node = callers.child(node, nameOf[a]);
					callers.add(node, model.count[i], b);
				}
				const top = callees.child(-1, k);
				callees.add(top, model.count[i], b);
				path.length = 0;
				path.push(top);
				const d0 = model.depth[i];
				for (let j = i + 1, stop = end[i]; j < stop; j++) {
					const rel = model.depth[j] - d0;
					path.length = rel;
					const c = callees.child(path[rel - 1], nameOf[j]);
					callees.add(c, model.count[j], before ? before[j] : 0);
					path.push(c);
				}
				i = end[i];
			}
			// Recursion below an outermost instance counts its samples again under the
			// instance's own path; that is what merging paths means, as in the main tree.
			return { callers: callers.build(), callees: callees.build() };
		}

		function closeSandwich() {
			if (!sandwichEl) return;
			sandwichEl.remove();
			sandwichEl = null;
			sandwich = null;
			sandwichName = -1;
			body.classList.remove('sandwich-open');
			saveUrl();
		}

		function openSandwich(k) {
			if (k < 0 || k >= M) return;
			closeSandwich();
			const models = buildSandwichModels(k);
			sandwichName = k;
			sandwichEl = el('section', { id: 'sandwich', 'aria-label': 'Merged by function' });
			const ph = el('div', { class: 'ph' });
			ph.appendChild(el('strong', null, 'Merged by function: '));
			ph.appendChild(el('span', { id: 'sw-name' }, cutText(names[k], SHOW_MAX)));
			const close = el('button', { type: 'button', class: 'close', title: 'Close (Escape)' }, '\u00d7');
			ph.appendChild(close);
			sandwichEl.appendChild(ph);
			sandwichEl.appendChild(el('div', { class: 'sw-label' }, 'Callers (the function at the bottom)'));
			const up = el('div', { id: 'sw-callers' });
			sandwichEl.appendChild(up);
			sandwichEl.appendChild(el('div', { class: 'sw-label' }, 'Callees (the function at the top)'));
			const down = el('div', { id: 'sw-callees' });
			sandwichEl.appendChild(down);
			body.appendChild(sandwichEl);
			body.classList.add('sandwich-open');
			close.addEventListener('click', closeSandwich);
			const mk = (host, m, o) =>
				new FlameView(host, Object.assign({}, viewOpts, { model: m, orientation: o, scaleTotal: m.rootSum, onHover, onClick }));
			sandwich = { name: k, models, callers: mk(up, models.callers, 'flame'), callees: mk(down, models.callees, 'icicle') };
			sandwich.callers.scrollToEnd();
			sandwich.callers.draw();
			sandwich.callees.draw();
			saveUrl();
		}

		// ---- the URL: ?x=START&y=DEPTH&s=REGEX&i=1&o=icicle&f=NAME ----

		const OURS = ['x', 'y', 's', 'i', 'o', 'f'];

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
					// a malformed escape: that parameter is ignored
				}
			}
			return out;
		}

		function saveUrl() {
			if (restoring) return;
			clearTimeout(urlTimer);
			urlTimer = setTimeout(saveUrlNow, URL_DELAY_MS);
		}

		function saveUrlNow() {
			urlTimer = 0;
			const q = queryParts().filter((p) => !OURS.includes(p.split('=')[0]));
			const z = main.zoomed;
			if (z >= 0) q.push(`x=${encodeURIComponent(String(model.start[z]))}`, `y=${model.depth[z]}`);
			if (searchRe !== null) q.push(`s=${encodeURIComponent(searchRe)}`);
			if (ignoreCase) q.push('i=1');
			if (orientation !== (meta.inverted ? 'icicle' : 'flame')) q.push(`o=${orientation}`);
			if (sandwichName >= 0 && names[sandwichName].length <= 4096) q.push(`f=${encodeURIComponent(names[sandwichName])}`);
			const url = location.pathname + (q.length ? `?${q.join('&')}` : '') + location.hash;
			try {
				history.replaceState(history.state, '', url);
			} catch (e) {
				// file:// URLs may refuse: the view still works, only the link does not follow it
			}
		}

		// The frame at depth d that starts at x, or else the one that contains x.
		function findAt(x, d) {
			if (!(d >= 0 && d < model.rows) || !isFinite(x)) return -1;
			const lo = model.depthAt[d];
			const hi = model.depthAt[d + 1];
			const q = lowerStart(model.byDepth, model.start, lo, hi, x);
			if (q < hi && model.start[model.byDepth[q]] === x) return model.byDepth[q];
			if (q > lo) {
				const i = model.byDepth[q - 1];
				if (x < model.start[i] + model.count[i]) return i;
			}
			return -1;
		}

		let nameIndex = null;

		function nameId(s) {
			if (!nameIndex) {
				nameIndex = new Map();
				for (let k = M - 1; k >= 0; k--) nameIndex.set(names[k], k);
			}
			const k = nameIndex.get(s);
			return k === undefined ? -1 : k;
		}

		function restore() {
			const q = parseQuery();
			restoring = true;
			try {
				if (q.o === 'icicle' || q.o === 'flame') setOrientation(q.o);
				if (q.i === '1') setIgnoreCase(true);
				if (q.x !== undefined && q.y !== undefined) {
					const i = findAt(parseFloat(q.x), parseInt(q.y, 10));
					if (i >= 0) zoomTo(i);
				}
				if (q.s !== undefined && q.s !== '') {
					searchEl.value = q.s;
					search(q.s);
				}
				if (q.f !== undefined) {
					const k = nameId(q.f);
					if (k >= 0) openSandwich(k);
				}
			} finally {
				restoring = false;
			}
		}

		// ---- keyboard ----

		function moveSelection(key) {
			let s = main.selected;
			if (s < 0 || s >= N) {
				s = main.zoomed >= 0 ? main.zoomed : N ? model.byDepth[0] : -1;
				if (s >= 0) select(s, true);
				return;
			}
			const up = key === 'ArrowUp';
			const down = key === 'ArrowDown';
			const toChild = (up && orientation === 'flame') || (down && orientation === 'icicle');
			let t = -1;
			if (up || down) {
				if (toChild) {
					// the widest child
					let best = -1;
					for (let j = s + 1, stop = model.end[s]; j < stop; j = model.end[j]) {
						if (best < 0 || model.count[j] > model.count[best]) best = j;
					}
					t = best;
				} else {
					t = model.parent[s];
				}
			} else {
				const d = model.depth[s];
				const q = lowerIndex(model.byDepth, model.depthAt[d], model.depthAt[d + 1], s) + (key === 'ArrowRight' ? 1 : -1);
				const [lo, hi] = main.zoomed >= 0 && d >= model.depth[main.zoomed] ? main.rowRange(d) : [model.depthAt[d], model.depthAt[d + 1]];
				if (q >= lo && q < hi) t = model.byDepth[q];
			}
			if (t >= 0) select(t, true);
		}

		function openHelp(on) {
			helpEl.hidden = !on;
		}

		function typing(e) {
			const t = e.target;
			return t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.isContentEditable);
		}

		window.addEventListener('keydown', (e) => {
			if (e.ctrlKey || e.metaKey || e.altKey) return;
			const key = e.key;
			if (key === 'Escape') {
				if (!helpEl.hidden) openHelp(false);
				else if (sandwich) closeSandwich();
				else if (funcsEl && !funcsEl.hidden) openFuncs(false);
				else if (main.zoomed >= 0) zoomTo(-1);
				else if (main.selected >= 0) select(-1, false);
				else return;
				e.preventDefault();
				return;
			}
			if (typing(e)) return;
			if (key === '/') {
				e.preventDefault();
				searchEl.focus();
				searchEl.select();
			} else if (key === '?') {
				openHelp(helpEl.hidden);
			} else if (key === 'o' || key === 'O') {
				setOrientation(orientation === 'flame' ? 'icicle' : 'flame');
			} else if (key === 'f' || key === 'F') {
				openFuncs(!funcsEl || funcsEl.hidden);
			} else if (key === 'm' || key === 'M') {
				if (main.selected >= 0) openSandwich(model.name[main.selected]);
			} else if (key === 'ArrowUp' || key === 'ArrowDown' || key === 'ArrowLeft' || key === 'ArrowRight') {
				if (e.target && e.target.tagName === 'BUTTON' && e.target.closest('#funcs')) return;
				e.preventDefault();
				moveSelection(key);
			} else if (key === 'Enter') {
				if (e.target && e.target.tagName === 'BUTTON') return;
				if (main.selected >= 0) {
					e.preventDefault();
					zoomTo(main.selected);
				}
			}
		});

		resetBtn.addEventListener('click', () => zoomTo(-1));
		orientBtn.addEventListener('click', () => setOrientation(orientation === 'flame' ? 'icicle' : 'flame'));
		icBtn.addEventListener('click', toggleIgnoreCase);
		funcsBtn.addEventListener('click', () => openFuncs(!funcsEl || funcsEl.hidden));
		helpBtn.addEventListener('click', () => openHelp(helpEl.hidden));
		helpEl.addEventListener('click', () => openHelp(false));
		window.addEventListener('resize', redrawAll);

		// ---- the handle for tests and benchmarks ----

		function findPath(p) {
			const parts = String(p).split(';');
			let lo = 0;
			let hi = N;
			let found = -1;
			for (let d = 0; d < parts.length; d++) {
				found = -1;
				for (let j = lo; j < hi; j = model.end[j]) {
					if (names[model.name[j]] === parts[d]) {
						found = j;
						break;
					}
				}
				if (found < 0) return -1;
				lo = found + 1;
				hi = model.end[found];
			}
			return found;
		}

		function treePaths(m) {
			const out = [];
			const path = [];
			for (let i = 0; i < m.n && out.length < 100000; i++) {
				path.length = m.depth[i];
				path.push(names[m.name[i]]);
				out.push([path.join(';'), m.count[i]]);
			}
			return out;
		}

		const idx = (i) => (Number.isInteger(i) && i >= 0 && i < N ? i : -1);

		window.flamed = Object.freeze({
			frames: N,
			find: findPath,
			rect(i) {
				if (idx(i) < 0) return null;
				main.layout();
				const pre = main.geom(i);
				if (!pre) return null;
				main.showRow(model.depth[i]);
				main.draw();
				const g = main.geom(i);
				const r = main.canvas.getBoundingClientRect();
				return { x: r.left + g.x, y: r.top + g.y - main.el.scrollTop, w: g.w, h: FH - 1 };
			},
			state() {
				return {
					zoomed: main.zoomed,
					search: searchRe,
					ignorecase: ignoreCase,
					orientation,
					details: detailsEl.textContent,
					matched: matchedEl.textContent,
					selected: main.selected,
				};
			},
			name: (i) => (idx(i) < 0 ? null : names[model.name[i]]),
			count: (i) => (idx(i) < 0 ? null : model.count[i]),
			depth: (i) => (idx(i) < 0 ? null : model.depth[i]),
			sandwich() {
				if (!sandwich) return null;
				return { name: names[sandwich.name], callers: treePaths(sandwich.models.callers), callees: treePaths(sandwich.models.callees) };
			},
		});

		// ---- first draw ----

		resetBtn.disabled = true;
		resetBtn.classList.add('hide');
		orientBtn.setAttribute('aria-pressed', String(orientation === 'icicle'));
		main.scrollToEnd();
		restore();
		main.draw();
		performance.mark('flamed-first-paint');
		if (typeof ResizeObserver === 'function') {
			new ResizeObserver(() => {
				if (chartEl.clientWidth !== main.drawnW || chartEl.clientHeight !== main.drawnH) main.requestDraw();
			}).observe(chartEl);
		}
		root.dataset.state = 'ready';
		performance.mark('flamed-ready');

		// A page has one chance to be fast: the first click, search and hover would run code
		// the engine has not compiled yet. Once the browser is idle, run that code once on a
		// zoomed view and a search that are never shown (zoom, draw, unzoom, draw, search,
		// draw, clear, draw: all in one task, so no frame is presented in between).
		const idle = window.requestIdleCallback || ((fn) => setTimeout(fn, 200));
		idle(() => {
			if (main.zoomed >= 0 || !N || main.pending) return;
			const r = main.canvas.getBoundingClientRect();
			main.frameAt(r.left + r.width / 2, r.top + r.height - 10);
			let z = -1;
			for (let i = 0; i < N && i < 64; i++) if (model.depth[i] === Math.min(2, model.rows - 1)) z = i;
			if (z >= 0 && main.zoom(z)) {
				main.draw();
				main.zoom(-1);
				main.draw();
			}
			if (searchRe === null && !sandwich) {
				restoring = true;
				search(`^${escapeRe(names[model.name[0]])}$`);
				main.draw();
				clearSearch();
				main.draw();
				restoring = false;
			}
		});
	}

	function start() {
		run().catch((e) => {
			showError(e instanceof DataError ? e.message : `${e && e.message ? e.message : e}`);
			if (!(e instanceof DataError) && window.console) console.error(e);
		});
	}

	root.dataset.state = 'loading';
	performance.mark('flamed-script');
	if (doc.body) start();
	else doc.addEventListener('DOMContentLoaded', start);
})();
