// SPDX-License-Identifier: GPL-2.0-or-later
// Checks a flamed HTML flame graph's viewer in headless Chromium against numbers given by the caller.
//
//   node tests/browser/check_html.js MODE FILE.html EXPECT SHOTDIR
//
// MODE is one of:
//   main     hover, click-zoom, search (typed), ignore case, URL state and reload, orientation,
//            keyboard, function list, merge by function; EXPECT as below
//   diff     hover a frame of a `flamed diff` page: { "path", "count", "before" }
//   deep     a stack of { "depth" } frames f0;f1;...: hover and zoom the deepest
//   hostile  names that look like markup and one of { "longname" } characters:
//            { "paths": [...], "longpath": "..." }: nothing added to the document, no freeze
//   error    the page must refuse its data: state "error" and one line in #flamed-error
// EXPECT (JSON text, or @file.json) for main; paths are "root;child;...", names as shown:
//   {
//     "total": 100,
//     "hover": { "path": "app;main;parse;alloc", "count": 25, "percent": 25 },
//     "zoom": { "path": "app;main;parse", "count": 40, "children": { "alloc": 25, "lex": 15 } },
//     "search": [ { "re": "alloc", "percent": 75, "zoomed": 62.5 } ],
//     "ignorecase": { "re": "^ALLOC", "sensitive": 0, "insensitive": 75 },
//     "keys": { "start": "app;main;parse", "down": "app;main", "up": "app;main;alloc", "right": "app;main;idle" },
//     "funcs": { "alloc": { "self": 35, "total": 75 } },
//     "exact": { "name": "alloc", "percent": 75 },
//     "sandwich": { "name": "alloc", "callers": { "alloc;main": 50 }, "callees": { "alloc;memcpy": 10 } }
//   }
// Every number comes from the caller's own reading of the input; colours are checked against
// the page's data as this file decodes it (docs/html-format.md), not as the viewer does. The page
// is driven by real mouse and keyboard events; window.flamed only says where frames are drawn.
// Screenshots go to SHOTDIR. Exit status: 0 all good, 1 a mismatch, 77 no Chromium.
'use strict';

const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const cdp = require('./cdp.js');

const PX_TOLERANCE = 0.75; // CSS pixels
const PCT_TOLERANCE = 0.011; // percentages are shown with 2 decimals
const MAGENTA = [230, 0, 230];

class CheckError extends Error {}

function fail(msg) {
	throw new CheckError(msg);
}

function ok(msg) {
	process.stdout.write(`ok: ${msg}\n`);
}

function near(actual, expected, tol, what) {
	if (typeof actual !== 'number' || !isFinite(actual) || Math.abs(actual - expected) > tol) {
		fail(`${what}: got ${actual}, expected ${expected} (within ${tol})`);
	}
}

function lastName(p) {
	return p.split(';').pop();
}

// The page's own data, read as docs/html-format.md says: names, colours, and each name's colour.
function readPageData(file) {
	const html = fs.readFileSync(file, 'utf8');
	const metaText = /<script type="application\/json" id="flamed-meta">([^<]*)<\/script>/.exec(html);
	const dataText = /<script type="application\/octet-stream" id="flamed-data">([^<]*)<\/script>/.exec(html);
	if (!metaText || !dataText) fail(`${file}: no flamed-meta or flamed-data element`);
	const meta = JSON.parse(metaText[1]);
	const data = zlib.inflateSync(Buffer.from(dataText[1], 'base64'));
	if (data.length !== meta.bytes) fail(`${file}: the data has ${data.length} bytes, the meta says ${meta.bytes}`);
	let pos = 0;
	const names = [];
	for (let k = 0; k < meta.names; k++) {
		const nl = data.indexOf(10, pos);
		names.push(data.subarray(pos, nl).toString('utf8'));
		pos = nl + 1;
	}
	const colors = [];
	for (let k = 0; k < meta.colors; k++, pos += 3) colors.push([data[pos], data[pos + 1], data[pos + 2]]);
	const nameColor = new Map();
	for (let k = 0; k < meta.names; k++) {
		let v = 0;
		let mul = 1;
		for (;;) {
			const b = data[pos++];
			v += (b & 0x7f) * mul;
			if (b < 0x80) break;
			mul *= 128;
		}
		nameColor.set(names[k], colors[v]);
	}
	return { meta, names, nameColor };
}

const RAF2 = 'new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))';

class Page {
	constructor(b, shotDir, prefix) {
		this.b = b;
		this.shotDir = shotDir;
		this.prefix = prefix;
		this.errors = [];
		this.shots = 0;
		b.on('Runtime.exceptionThrown', (p) => {
			const d = p.exceptionDetails;
			this.errors.push((d.exception && d.exception.description) || d.text);
		});
	}

	eval(expr) {
		return this.b.evaluate(expr);
	}

	async settle() {
		await this.eval(RAF2);
		if (this.errors.length) fail(`the page threw: ${this.errors.join('\n')}`);
	}

	async load(url, want = 'ready') {
		await this.b.navigate(url);
		let state = null;
		for (let k = 0; k < 600; k++) {
			state = await this.eval('document.documentElement.dataset.state || null');
			if (state === 'ready' || state === 'error') break;
			await new Promise((r) => setTimeout(r, 50));
		}
		if (state !== want) {
			const why = await this.eval('(document.getElementById("flamed-error") || {}).textContent || ""');
			fail(`${url}: state is ${state}, expected ${want} ${why}`);
		}
		await this.settle();
	}

	async mouse(type, x, y, extra) {
		await this.b.mouse(type, x, y, extra);
	}

	async hover(x, y) {
		await this.b.mouse('mouseMoved', x, y);
		await this.settle();
	}

	async click(x, y) {
		await this.b.click(x, y);
		await this.settle();
	}

	// A key: special keys by name (Enter, Escape, ArrowUp ...), printable ones by their character.
	async key(key) {
		const codes = { Enter: 13, Escape: 27, ArrowLeft: 37, ArrowUp: 38, ArrowRight: 39, ArrowDown: 40 };
		if (codes[key]) {
			const base = { key, code: key, windowsVirtualKeyCode: codes[key], nativeVirtualKeyCode: codes[key] };
			await this.b.send('Input.dispatchKeyEvent', Object.assign({ type: 'rawKeyDown' }, base));
			await this.b.send('Input.dispatchKeyEvent', Object.assign({ type: 'keyUp' }, base));
		} else {
			const vk = key === '/' ? 191 : key === '?' ? 191 : key.toUpperCase().charCodeAt(0);
			const base = { key, text: key, unmodifiedText: key, windowsVirtualKeyCode: vk, nativeVirtualKeyCode: vk, modifiers: key === '?' ? 8 : 0 };
			await this.b.send('Input.dispatchKeyEvent', Object.assign({ type: 'keyDown' }, base));
			await this.b.send('Input.dispatchKeyEvent', Object.assign({ type: 'keyUp' }, base));
		}
		await this.settle();
	}

	async type(text) {
		await this.b.send('Input.insertText', { text });
		await this.settle();
	}

	async state() {
		return this.eval('window.flamed.state()');
	}

	async find(p) {
		const i = await this.eval(`window.flamed.find(${JSON.stringify(p)})`);
		if (!(i >= 0)) fail(`no frame with the path ${p}`);
		return i;
	}

	async rect(i) {
		return this.eval(`window.flamed.rect(${i})`);
	}

	async box(sel) {
		return this.eval(`(() => { const e = document.querySelector(${JSON.stringify(sel)});
			if (!e) return null; const r = e.getBoundingClientRect(); const cs = getComputedStyle(e);
			return { x: r.left, y: r.top, w: r.width, h: r.height, cx: r.left + r.width / 2, cy: r.top + r.height / 2,
				shown: !e.hidden && cs.display !== 'none' && cs.visibility !== 'hidden' && r.width > 0 }; })()`);
	}

	async text(sel) {
		return this.eval(`(document.querySelector(${JSON.stringify(sel)}) || {}).textContent`);
	}

	// The main canvas's pixel at a client point: [r, g, b, a].
	async pixel(x, y) {
		return this.eval(`(() => { const c = document.querySelector('#chart canvas'); const r = c.getBoundingClientRect();
			const k = c.width / r.width; const d = c.getContext('2d').getImageData(Math.floor((${x} - r.left) * k), Math.floor((${y} - r.top) * k), 1, 1).data;
			return [d[0], d[1], d[2], d[3]]; })()`);
	}

	async shot(name) {
		const r = await this.b.send('Page.captureScreenshot', { format: 'png' });
		const buf = Buffer.from(r.data, 'base64');
		if (buf.length < 1000 || buf.readUInt32BE(0) !== 0x89504e47) fail(`screenshot ${name}: not a PNG of any size (${buf.length} bytes)`);
		const file = path.join(this.shotDir, `${this.prefix}-${String(++this.shots).padStart(2, '0')}-${name}.png`);
		fs.writeFileSync(file, buf);
		return file;
	}
}

function parseDetails(text, what) {
	const m = /^(.*?) \(([\d,.]+) (\S+), ([\d.]+)% of all(?:, ([\d.]+)% of zoomed)?(.*)\)$/s.exec(text || '');
	if (!m) fail(`${what}: the details are ${JSON.stringify(text)}, not "NAMETYPE NAME (COUNT COUNTNAME, P% of all...)"`);
	return { head: m[1], count: parseFloat(m[2].replace(/,/g, '')), countname: m[3], pct: parseFloat(m[4]), zoomedPct: m[5] === undefined ? null : parseFloat(m[5]), rest: m[6] };
}

function parseMatched(text, what) {
	const m = /^Matched: ([\d.]+)%(?: of all, ([\d.]+)% of zoomed)?\s*$/.exec(text || '');
	if (!m) fail(`${what}: #matched is ${JSON.stringify(text)}, not "Matched: X%[ of all, Y% of zoomed]"`);
	return { pct: parseFloat(m[1]), zoomedPct: m[2] === undefined ? null : parseFloat(m[2]) };
}

function sameColor(px, rgb, what, tol = 2) {
	for (let c = 0; c < 3; c++) if (Math.abs(px[c] - rgb[c]) > tol) fail(`${what}: pixel is rgba(${px.join(',')}), expected rgb(${rgb.join(',')})`);
	if (px[3] !== 255) fail(`${what}: pixel is rgba(${px.join(',')}), expected opaque`);
}

async function hoverCheck(pg, p, count, percent, zoomCount, what) {
	const i = await pg.find(p);
	const r = await pg.rect(i);
	if (!r) fail(`${what}: ${p} is not drawn`);
	await pg.hover(r.x + r.w / 2, r.y + r.h / 2);
	const d = parseDetails(await pg.text('#details'), `${what}: hover over ${p}`);
	if (!d.head.endsWith(` ${lastName(p)}`)) fail(`${what}: the details name "${d.head}", expected "... ${lastName(p)}"`);
	near(d.count, count, 1e-9, `${what}: count of ${p}`);
	near(d.pct, percent, PCT_TOLERANCE, `${what}: % of all of ${p}`);
	if (zoomCount) near(d.zoomedPct, (100 * count) / zoomCount, PCT_TOLERANCE, `${what}: % of zoomed of ${p}`);
	else if (d.zoomedPct !== null) fail(`${what}: "% of zoomed" shown while not zoomed`);
	const tip = await pg.box('#tooltip');
	if (!tip || !tip.shown) fail(`${what}: no tooltip near the pointer`);
	if ((await pg.text('#tooltip')) !== (await pg.text('#details'))) fail(`${what}: the tooltip differs from #details`);
	return { i, r, d };
}

async function checkMain(pg, file, ex, url) {
	const data = readPageData(file);
	const n = await pg.eval('window.flamed.frames');
	if (!(n > 0)) fail(`window.flamed.frames is ${n}`);
	if (!(await pg.eval('Object.isFrozen(window.flamed)'))) fail('window.flamed is not frozen');
	const marks = await pg.eval(`performance.getEntriesByType('mark').map((m) => m.name)`);
	for (const m of ['flamed-first-paint', 'flamed-ready']) if (!marks.includes(m)) fail(`no performance mark ${m}`);
	let st = await pg.state();
	if (st.orientation !== (data.meta.inverted ? 'icicle' : 'flame')) fail(`starts as ${st.orientation}`);
	if (st.zoomed !== -1 || st.search !== null || st.selected !== -1) fail(`starts in state ${JSON.stringify(st)}`);
	const reset0 = await pg.box('#reset');
	if (reset0.shown && !(await pg.eval('document.getElementById("reset").disabled'))) fail('"Reset Zoom" is usable while not zoomed');
	await pg.shot('start');

	// The root fills the width at the bottom (flame), in its name's colour.
	const root = await pg.find(ex.zoom.path.split(';')[0]);
	const rr = await pg.rect(root);
	const chart = await pg.box('#chart canvas');
	near(rr.x, chart.x + 10, PX_TOLERANCE, 'root: left edge');
	near(rr.w, ((chart.w - 20) * (await pg.eval(`window.flamed.count(${root})`))) / ex.total, PX_TOLERANCE, 'root: width');
	if (!(rr.y > chart.y + chart.h / 2)) fail(`flame graph: the root is not in the lower half (y ${rr.y} of ${chart.y}..${chart.y + chart.h})`);
	sameColor(await pg.pixel(rr.x + rr.w / 2, rr.y + rr.h / 2), data.nameColor.get(ex.zoom.path.split(';')[0]), 'root colour on the canvas');
	ok(`root drawn at ${rr.x.toFixed(1)},${rr.y.toFixed(1)} ${rr.w.toFixed(1)} px wide, in its colour`);

	// Hover.
	const h = ex.hover;
	await hoverCheck(pg, h.path, h.count, h.percent, 0, 'hover');
	await pg.hover(2, 2);
	if ((await pg.text('#details')).trim() !== '') fail('the details stay after the pointer left the frames');
	if ((await pg.box('#tooltip')).shown) fail('the tooltip stays after the pointer left the frames');
	ok(`hover ${h.path}: ${h.count} (${h.percent}%), tooltip, cleared on leaving`);

	// Click-zoom.
	const zx = ex.zoom;
	const z = await pg.find(zx.path);
	let r = await pg.rect(z);
	await pg.click(r.x + r.w / 2, r.y + r.h / 2);
	st = await pg.state();
	if (st.zoomed !== z) fail(`clicked ${zx.path}: zoomed is ${st.zoomed}, expected ${z}`);
	r = await pg.rect(z);
	near(r.x, chart.x + 10, PX_TOLERANCE, 'zoomed frame: left edge');
	near(r.w, chart.w - 20, PX_TOLERANCE, 'zoomed frame: width');
	for (const [name, c] of Object.entries(zx.children)) {
		const ci = await pg.find(`${zx.path};${name}`);
		const cr = await pg.rect(ci);
		if (!cr) fail(`zoomed: child ${name} not drawn`);
		near(cr.w, ((chart.w - 20) * c) / zx.count, PX_TOLERANCE, `zoomed: width of child ${name}`);
	}
	const parts = zx.path.split(';');
	for (let k = 1; k < parts.length; k++) {
		const a = parts.slice(0, k).join(';');
		const ar = await pg.rect(await pg.find(a));
		if (!ar) fail(`zoomed: ancestor ${a} not drawn`);
		near(ar.w, chart.w - 20, PX_TOLERANCE, `zoomed: ancestor ${a} width`);
		const px = await pg.pixel(ar.x + ar.w / 2, ar.y + ar.h / 2);
		if (!(px[3] < 200)) fail(`zoomed: ancestor ${a} is not paler (alpha ${px[3]})`);
	}
	const rb = await pg.box('#reset');
	if (!rb.shown || (await pg.eval('document.getElementById("reset").disabled'))) fail('zoomed: "Reset Zoom" is not usable');
	await hoverCheck(pg, h.path, h.count, h.percent, zx.count, 'hover while zoomed');
	await pg.shot('zoomed');
	ok(`click-zoom ${zx.path}: full width, children to scale, ancestors paler at full width, % of zoomed`);

	// Search, typed: '/' focuses the box and selects its text; Enter applies; Escape leaves it.
	for (const s of ex.search) {
		await pg.key('/');
		if (!(await pg.eval('document.activeElement && document.activeElement.id === "search"'))) fail('"/" does not focus the search box');
		await pg.type(s.re);
		await pg.key('Enter');
		st = await pg.state();
		if (st.search !== s.re) fail(`search ${s.re}: the state says ${st.search}`);
		const m = parseMatched(await pg.text('#matched'), `search /${s.re}/`);
		near(m.pct, s.percent, PCT_TOLERANCE, `search /${s.re}/: % of all`);
		near(m.zoomedPct, s.zoomed, PCT_TOLERANCE, `search /${s.re}/: % of zoomed`);
		ok(`search /${s.re}/: ${m.pct}% of all, ${m.zoomedPct}% of zoomed`);
		await pg.key('Escape');
		if (await pg.eval('document.activeElement && document.activeElement.id === "search"')) fail('Escape does not leave the search box');
		if ((await pg.state()).zoomed !== z) fail('Escape in the search box reset the zoom');
	}
	// The last search's matches are magenta on the canvas.
	const last = ex.search[ex.search.length - 1];
	if (last.magenta) {
		const mr = await pg.rect(await pg.find(last.magenta));
		sameColor(await pg.pixel(mr.x + mr.w / 2, mr.y + mr.h / 2), MAGENTA, `search /${last.re}/: ${last.magenta}`);
		await pg.shot('search');
		ok(`search /${last.re}/: ${last.magenta} drawn magenta`);
	}
	// Typing and waiting applies too.
	const ic = ex.ignorecase;
	await pg.key('/');
	await pg.type(ic.re);
	await pg.eval('new Promise((r) => setTimeout(r, 900))');
	await pg.settle();
	if ((await pg.state()).search !== ic.re) fail(`typing ${ic.re} and waiting does not search`);
	near(parseMatched(await pg.text('#matched'), 'case-sensitive').pct, ic.sensitive, PCT_TOLERANCE, `/${ic.re}/ case-sensitive`);
	await pg.key('Escape'); // leaves the box
	const icb = await pg.box('#ignorecase');
	await pg.click(icb.cx, icb.cy);
	if ((await pg.eval('document.getElementById("ignorecase").getAttribute("aria-pressed")')) !== 'true') fail('#ignorecase is not pressed after a click');
	if (!(await pg.state()).ignorecase) fail('ignore case is off after the click');
	near(parseMatched(await pg.text('#matched'), 'ignoring case').pct, ic.insensitive, PCT_TOLERANCE, `/${ic.re}/ ignoring case`);
	ok(`ignore case: /${ic.re}/ ${ic.sensitive}% then ${ic.insensitive}%`);

	// The URL keeps the view; a reload restores it.
	await pg.eval('new Promise((r) => setTimeout(r, 700))');
	const q = await pg.eval('location.search');
	for (const k of ['x=', 'y=', 's=', 'i=1']) if (!q.includes(k)) fail(`the URL ${q} has no ${k}`);
	const before = await pg.state();
	await pg.load(await pg.eval('location.href'));
	const after = await pg.state();
	for (const k of ['zoomed', 'search', 'ignorecase', 'matched']) {
		if (after[k] !== before[k]) fail(`reload: ${k} is ${JSON.stringify(after[k])}, was ${JSON.stringify(before[k])}`);
	}
	if ((await pg.eval('document.getElementById("search").value')) !== ic.re) fail('reload: the search box lost its text');
	ok(`URL ${q} restores zoom, search and ignore case`);

	// Reset: the button, then Escape.
	const rz = await pg.box('#reset');
	await pg.click(rz.cx, rz.cy);
	if ((await pg.state()).zoomed !== -1) fail('"Reset Zoom" did not reset');
	// Clear the search: empty box + Enter.
	await pg.key('/');
	await pg.b.send('Input.dispatchKeyEvent', { type: 'rawKeyDown', key: 'Backspace', code: 'Backspace', windowsVirtualKeyCode: 8 });
	await pg.b.send('Input.dispatchKeyEvent', { type: 'keyUp', key: 'Backspace', code: 'Backspace', windowsVirtualKeyCode: 8 });
	await pg.key('Enter');
	st = await pg.state();
	if (st.search !== null || st.matched.trim() !== '') fail(`an empty search box does not clear the search: ${JSON.stringify(st)}`);
	await pg.key('Escape');
	ok('reset zoom (button), empty search clears');

	// Orientation.
	const oi = await pg.find(ex.zoom.path.split(';')[0]);
	await pg.key('o');
	if ((await pg.state()).orientation !== 'icicle') fail('"o" does not make an icicle');
	let ir = await pg.rect(oi);
	if (!(ir.y < chart.y + chart.h / 2)) fail(`icicle: the root is not at the top (y ${ir.y})`);
	await pg.shot('icicle');
	const ob = await pg.box('#orient');
	await pg.click(ob.cx, ob.cy);
	if ((await pg.state()).orientation !== 'flame') fail('#orient does not go back to a flame graph');
	ir = await pg.rect(oi);
	if (!(ir.y > chart.y + chart.h / 2)) fail(`flame again: the root is not at the bottom (y ${ir.y})`);
	ok('orientation: "o" and #orient');

	// Keyboard: click selects; arrows move as drawn; Enter zooms; Escape resets.
	const k = ex.keys;
	const ks = await pg.find(k.start);
	r = await pg.rect(ks);
	await pg.click(r.x + r.w / 2, r.y + r.h / 2);
	if ((await pg.state()).selected !== ks) fail(`a click does not select ${k.start}`);
	for (const [key, want] of [['ArrowDown', k.down], ['ArrowUp', k.up], ['ArrowRight', k.right]]) {
		await pg.key(key);
		const sel = (await pg.state()).selected;
		const wi = await pg.find(want);
		if (sel !== wi) fail(`${key}: selected ${sel}, expected ${wi} (${want})`);
	}
	await pg.key('Enter');
	if ((await pg.state()).zoomed !== (await pg.find(k.right))) fail('Enter does not zoom to the selected frame');
	await pg.key('Escape');
	if ((await pg.state()).zoomed !== -1) fail('Escape does not reset the zoom');
	await pg.key('?');
	if (!(await pg.box('#help')).shown) fail('"?" shows no help');
	await pg.key('Escape');
	if ((await pg.box('#help')).shown) fail('Escape does not close the help');
	ok(`keys: ${k.start} -> Down ${k.down} -> Up ${k.up} -> Right ${k.right}, Enter, Escape, ?`);

	// The function list.
	await pg.key('f');
	if (!(await pg.box('#funcs')).shown) fail('"f" does not open #funcs');
	const rows = await pg.eval(`Array.from(document.querySelectorAll('#funcs tbody tr')).map((tr) => [tr.cells[0].textContent,
		parseFloat(tr.cells[1].firstChild.textContent.replace(/,/g, '')), parseFloat(tr.cells[2].firstChild.textContent.replace(/,/g, ''))])`);
	for (const [name, v] of Object.entries(ex.funcs)) {
		const row = rows.find((x) => x[0] === name);
		if (!row) fail(`#funcs has no row ${name}`);
		near(row[1], v.self, 1e-9, `#funcs: self of ${name}`);
		near(row[2], v.total, 1e-9, `#funcs: total of ${name}`);
	}
	const th = await pg.box('#funcs th[data-sort="name"]');
	await pg.click(th.cx, th.cy);
	const byName = await pg.eval(`Array.from(document.querySelectorAll('#funcs tbody tr')).map((tr) => tr.cells[0].textContent)`);
	const sorted = byName.slice().sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
	if (byName.join('\n') !== sorted.join('\n')) fail(`#funcs sorted by name: ${byName.join(', ')}`);
	const thT = await pg.box('#funcs th[data-sort="total"]');
	await pg.click(thT.cx, thT.cy);
	const byTotal = await pg.eval(`Array.from(document.querySelectorAll('#funcs tbody tr')).map((tr) => parseFloat(tr.cells[2].firstChild.textContent.replace(/,/g, '')))`);
	for (let j = 1; j < byTotal.length; j++) if (byTotal[j] > byTotal[j - 1]) fail(`#funcs sorted by total: ${byTotal.join(', ')}`);
	ok(`function list: self and total of ${Object.keys(ex.funcs).join(', ')}; sorts by name and total`);
	// A row highlights its function everywhere.
	const ex2 = ex.exact;
	const rowBox = await pg.eval(`(() => { const tr = Array.from(document.querySelectorAll('#funcs tbody tr')).find((t) => t.cells[0].textContent === ${JSON.stringify(ex2.name)});
		const r = tr.cells[0].getBoundingClientRect(); return { x: r.left + r.width / 2, y: r.top + r.height / 2 }; })()`);
	await pg.click(rowBox.x, rowBox.y);
	near(parseMatched(await pg.text('#matched'), `row ${ex2.name}`).pct, ex2.percent, PCT_TOLERANCE, `#funcs row ${ex2.name}: matched`);
	ok(`function list row ${ex2.name}: highlighted, ${ex2.percent}% matched`);

	// Merge by function, from the row's button.
	const sw = ex.sandwich;
	const btn = await pg.eval(`(() => { const tr = Array.from(document.querySelectorAll('#funcs tbody tr')).find((t) => t.cells[0].textContent === ${JSON.stringify(sw.name)});
		const r = tr.querySelector('button').getBoundingClientRect(); return { x: r.left + r.width / 2, y: r.top + r.height / 2 }; })()`);
	await pg.click(btn.x, btn.y);
	if (!(await pg.box('#sandwich')).shown) fail('the row button does not open #sandwich');
	await checkSandwich(pg, sw);
	await pg.shot('sandwich');
	// Hover and click-zoom in the callees view.
	const callee = Object.keys(sw.callees).find((p) => p.includes(';'));
	const cv = await pg.box('#sw-callees canvas');
	// The callees tree is an icicle, its root spans the canvas at the top: the first child sits
	// one row below; find it by hovering across that row.
	let hit = null;
	for (let x = cv.x + 12; x < cv.x + cv.w - 10 && !hit; x += 6) {
		await pg.hover(x, cv.y + 8 + 16 + 7);
		const t = await pg.text('#details');
		if (t.includes(` ${lastName(callee)} (`)) hit = { x, y: cv.y + 8 + 16 + 7 };
	}
	if (!hit) fail(`#sandwich callees: no frame ${callee} under the pointer`);
	await pg.click(hit.x, hit.y);
	await pg.hover(cv.x + cv.w / 2, hit.y);
	const dz = parseDetails(await pg.text('#details'), 'callees zoomed');
	if (!dz.head.endsWith(` ${lastName(callee)}`) || dz.zoomedPct !== 100) fail(`callees: a click does not zoom to ${callee}: ${JSON.stringify(dz)}`);
	ok(`merge by function ${sw.name}: callers and callees trees as computed; hover and click-zoom in the callees`);
	await pg.key('Escape');
	if (await pg.eval('!!document.getElementById("sandwich")')) fail('Escape does not close #sandwich');
	await pg.key('Escape');
	if ((await pg.box('#funcs')).shown) fail('Escape does not close #funcs');
	// "m" on the selected frame.
	const mi = await pg.find(h.path);
	r = await pg.rect(mi);
	await pg.click(r.x + r.w / 2, r.y + r.h / 2);
	await pg.key('m');
	const s2 = await pg.eval('window.flamed.sandwich()');
	if (!s2 || s2.name !== lastName(h.path)) fail(`"m" on ${h.path} opens ${JSON.stringify(s2 && s2.name)}`);
	await pg.eval('new Promise((r) => setTimeout(r, 700))');
	if (!(await pg.eval('location.search')).includes(`f=${encodeURIComponent(lastName(h.path))}`)) fail('the URL does not name the merged function');
	await pg.load(await pg.eval('location.href'));
	const s3 = await pg.eval('window.flamed.sandwich()');
	if (!s3 || s3.name !== lastName(h.path)) fail('reload: the merged function view is not restored');
	ok(`"m" on ${h.path}: merged view of ${s2.name}, kept in the URL`);

	// Resize: the canvas follows the window.
	await pg.b.send('Emulation.setDeviceMetricsOverride', { width: 900, height: 700, deviceScaleFactor: 1, mobile: false });
	await pg.eval('new Promise((r) => setTimeout(r, 100))');
	await pg.settle();
	const c2 = await pg.box('#chart canvas');
	const rr2 = await pg.rect(root);
	near(rr2.w, ((c2.w - 20) * (await pg.eval(`window.flamed.count(${root})`))) / ex.total, PX_TOLERANCE, 'after a resize: root width');
	if (!(c2.w < chart.w)) fail('the canvas did not follow the window');
	ok(`resize: canvas ${chart.w} -> ${c2.w} px, frames to scale`);
	void url;
}

async function checkSandwich(pg, sw) {
	const s = await pg.eval('window.flamed.sandwich()');
	if (!s || s.name !== sw.name) fail(`sandwich(): ${JSON.stringify(s && s.name)}, expected ${sw.name}`);
	for (const which of ['callers', 'callees']) {
		const got = new Map(s[which]);
		const want = sw[which];
		for (const [p, c] of Object.entries(want)) {
			if (!got.has(p)) fail(`sandwich ${which}: no ${p} (have ${[...got.keys()].join(', ')})`);
			near(got.get(p), c, 1e-9, `sandwich ${which}: ${p}`);
		}
		if (got.size !== Object.keys(want).length) fail(`sandwich ${which}: ${got.size} paths, expected ${Object.keys(want).length}: ${[...got.keys()].join(', ')}`);
	}
}

async function checkDiff(pg, ex) {
	const { d } = await hoverCheck(pg, ex.path, ex.count, (100 * ex.count) / ex.total, 0, 'diff');
	const delta = ex.count - ex.before;
	const sign = delta < 0 ? '-' : '+';
	const abs = Math.abs(delta).toLocaleString('en-US');
	const tail = ex.before > 0 ? `, ${sign}${((100 * Math.abs(delta)) / ex.before).toFixed(2)}%` : ', new';
	const want = `; before: ${ex.before.toLocaleString('en-US')}, ${sign}${abs}${tail}`;
	if (d.rest !== want) fail(`diff: the details end with ${JSON.stringify(d.rest)}, expected ${JSON.stringify(want)}`);
	await pg.shot('diff');
	ok(`diff ${ex.path}: ${d.rest}`);
}

async function checkDeep(pg, ex) {
	const deepest = Array.from({ length: ex.depth }, (_, k) => `f${k}`).join(';');
	const i = await pg.find(deepest);
	if ((await pg.eval(`window.flamed.depth(${i})`)) !== ex.depth - 1) fail('deep: wrong depth');
	const r = await pg.rect(i);
	if (!r) fail('deep: the deepest frame is not drawn');
	await pg.hover(r.x + r.w / 2, r.y + r.h / 2);
	if (!(await pg.text('#details')).includes(` f${ex.depth - 1} (`)) fail(`deep: hover shows ${await pg.text('#details')}`);
	await pg.click(r.x + r.w / 2, r.y + r.h / 2);
	const chart = await pg.box('#chart canvas');
	const z = await pg.rect(i);
	near(z.w, chart.w - 20, PX_TOLERANCE, 'deep: zoomed width');
	const f0 = await pg.rect(await pg.find('f0'));
	if (!f0) fail('deep: the root is not drawn when zoomed to the leaf');
	await pg.shot('deep');
	ok(`deep: f${ex.depth - 1} at depth ${ex.depth - 1} hovered and zoomed (${z.w.toFixed(1)} px)`);
}

async function checkHostile(pg, ex) {
	const nodes = await pg.eval('document.querySelectorAll("script, img, iframe, object, embed, a, style").length');
	// The page's own: three scripts and a style.
	if (nodes !== 4) fail(`hostile: the document has ${nodes} script/img/iframe/object/embed/a/style elements, expected 4`);
	for (const p of ex.paths) {
		const i = await pg.find(p);
		const r = await pg.rect(i);
		if (!r) continue;
		await pg.hover(r.x + r.w / 2, r.y + r.h / 2);
		const t = await pg.text('#details');
		if (!t.includes(lastName(p))) fail(`hostile: hovering ${JSON.stringify(lastName(p))} shows ${JSON.stringify(t.slice(0, 200))}`);
	}
	const li = await pg.find(ex.longpath);
	const r = await pg.rect(li);
	const t0 = Date.now();
	await pg.hover(r.x + r.w / 2, r.y + r.h / 2);
	const t = await pg.text('#details');
	if (!(t.length < 2200 && t.includes('\u2026'))) fail(`hostile: the long name's details have ${t.length} characters`);
	await pg.key('f');
	await pg.key('Escape');
	await pg.click(r.x + r.w / 2, r.y + r.h / 2);
	const ms = Date.now() - t0;
	if (ms > 5000) fail(`hostile: hover, function list and zoom of a long name took ${ms} ms`);
	const nodes2 = await pg.eval('document.querySelectorAll("script, img, iframe, object, embed, a, style").length');
	if (nodes2 !== 4) fail(`hostile: ${nodes2} such elements after the interaction`);
	await pg.shot('hostile');
	ok(`hostile names shown as text; a ${ex.longname}-character name cut in the details (${ms} ms)`);
}

async function run(b, args) {
	const [mode, file, expectArg, shotDir] = args;
	if (!mode || !file || !shotDir) fail('usage: check_html.js MODE FILE.html EXPECT SHOTDIR');
	const ex = expectArg ? JSON.parse(expectArg.startsWith('@') ? fs.readFileSync(expectArg.slice(1), 'utf8') : expectArg) : {};
	const pg = new Page(b, shotDir, `${mode}-${path.basename(file, '.html')}`);
	const url = `file://${path.resolve(file)}`;
	if (mode === 'error') {
		await pg.load(url, 'error');
		const t = await pg.text('#flamed-error');
		if (!t || t.includes('\n')) fail(`error: #flamed-error says ${JSON.stringify(t)}`);
		ok(`refused: ${t}`);
		return;
	}
	await pg.load(url);
	if (mode === 'main') await checkMain(pg, file, ex, url);
	else if (mode === 'diff') await checkDiff(pg, ex);
	else if (mode === 'deep') await checkDeep(pg, ex);
	else if (mode === 'hostile') await checkHostile(pg, ex);
	else fail(`unknown mode ${mode}`);
	if (pg.errors.length) fail(`the page threw: ${pg.errors.join('\n')}`);
}

module.exports = { run };

if (require.main === module) {
	cdp.runCheck(module.exports, process.argv.slice(2)).then((rc) => process.exit(rc));
}
