// SPDX-License-Identifier: GPL-2.0-or-later
// Checks a flamed SVG's interactive behaviour in headless Chromium against numbers given by the caller.
//
//   node tests/browser/check_svg.js FILE.svg EXPECT      (EXPECT: JSON text, or @file.json)
//
// EXPECT (paths are folded-style, "root;child;...", frame names as in the input):
//   {
//     "total": 100,                                   data-total
//     "hover": { "path": "app;main;a;b", "count": 50, "percent": 50 },
//     "zoom": { "path": "app;main;a", "count": 80, "children": { "b": 50, "c": 30 } },
//     "search": [                                     one per regular expression
//       { "re": "^(a|b)$", "percent": 80, "zoomed": 100 }   % of all; % of the zoomed frame
//     ],
//     "ignorecase": { "re": "^B$", "sensitive": 0, "insensitive": 50 }
//   }
// Every number is what the caller computed from its own input; nothing is taken from the
// script's model. Hover and clicks are real mouse events at the rect's place on the screen;
// search goes through the prompt (clicking #search, Ctrl-F, F3) as well as window.flamed.
// Exit status: 0 all good, 1 a mismatch (with what and where), 77 no Chromium.
'use strict';

const fs = require('fs');
const path = require('path');
const cdp = require('./cdp.js');

const PX_TOLERANCE = 0.5; // rect edges, in CSS pixels
const PCT_TOLERANCE = 0.011; // percentages are shown with 2 decimals

class CheckError extends Error {}

function fail(msg) {
	throw new CheckError(msg);
}

function near(actual, expected, tol, what) {
	if (typeof actual !== 'number' || !isFinite(actual) || Math.abs(actual - expected) > tol) {
		fail(`${what}: got ${actual}, expected ${expected} (within ${tol})`);
	}
}

function ok(msg) {
	process.stdout.write(`ok: ${msg}\n`);
}

// Runs in the page: an index of the frames by path, made from the DOM alone (titles and
// nesting), and helpers that read what is on the screen.
const PAGE_HELPERS = `
window.__chk = (() => {
	const nodes = Array.from(document.querySelectorAll('#frames .f'));
	const index = new Map(nodes.map((el, i) => [el, i]));
	const nameOf = (el) => {
		const t = Array.from(el.children).find((c) => c.localName === 'title');
		const s = t ? t.textContent : '';
		const cut = s.lastIndexOf(' (');
		return cut >= 0 ? s.slice(0, cut) : s;
	};
	const pathOf = (el) => {
		const names = [];
		for (let e = el; e && e.classList && e.classList.contains('f'); e = e.parentNode) names.unshift(nameOf(e));
		return names.join(';');
	};
	const byPath = new Map(nodes.map((el, i) => [pathOf(el), i]));
	const svg = document.documentElement;
	const num = (el, a) => parseFloat(el.getAttribute(a));
	const shown = (el) => {
		for (let e = el; e && e.nodeType === 1; e = e.parentNode) {
			const cs = getComputedStyle(e);
			if (cs.display === 'none' || cs.visibility === 'hidden' || parseFloat(cs.opacity) === 0) return false;
		}
		return true;
	};
	const box = (el) => {
		const r = el.getBoundingClientRect();
		return { x: r.left, y: r.top, w: r.width, h: r.height, cx: r.left + r.width / 2, cy: r.top + r.height / 2 };
	};
	return {
		nodes, index, byPath, nameOf, pathOf, shown, box,
		W: num(svg, 'width'), XPAD: num(svg, 'data-xpad'), total: num(svg, 'data-total'),
		scale: () => svg.getScreenCTM().a,
		find(p) {
			const i = byPath.get(p);
			if (i === undefined) throw new Error('no frame with the path ' + JSON.stringify(p) + ' in #frames');
			return i;
		},
		depth(i) {
			let d = 0;
			for (let e = nodes[i].parentNode; e && e.classList && e.classList.contains('f'); e = e.parentNode) d++;
			return d;
		},
		children(i) {
			return Array.from(nodes[i].children).filter((c) => c.classList.contains('f')).map((c) => index.get(c));
		},
		subtree(i) {
			return [i, ...Array.from(nodes[i].querySelectorAll('.f')).map((c) => index.get(c))];
		},
		ancestors(i) {
			const out = [];
			for (let e = nodes[i].parentNode; e && e.classList && e.classList.contains('f'); e = e.parentNode) out.push(index.get(e));
			return out;
		},
		// The rect that draws frame i on the screen now, or null.
		visible(i) {
			const r = window.flamed.rectOf(i);
			return r && shown(r) ? r : null;
		},
		text(id) {
			const e = document.getElementById(id);
			return e ? e.textContent : null;
		},
	};
})();
true`;

const RAF2 = 'new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))';

class Page {
	constructor(b) {
		this.b = b;
		this.errors = [];
		b.on('Runtime.exceptionThrown', (p) => {
			const d = p.exceptionDetails;
			this.errors.push((d.exception && d.exception.description) || d.text);
		});
	}

	async eval(expr) {
		return this.b.evaluate(expr);
	}

	async settle() {
		await this.eval(RAF2);
		if (this.errors.length) fail(`the page threw: ${this.errors.join('\n')}`);
	}

	async load(url) {
		await this.b.navigate(url);
		const hasApi = await this.eval('typeof window.flamed === "object" && typeof window.flamed.frames === "function"');
		if (!hasApi) fail(`${url}: no window.flamed: the SVG's script did not run (${this.errors.join('; ') || 'no exception seen'})`);
		await this.eval(PAGE_HELPERS);
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

	async key(key, code, vk, modifiers) {
		const base = { key, code, windowsVirtualKeyCode: vk, nativeVirtualKeyCode: vk, modifiers: modifiers || 0 };
		await this.b.send('Input.dispatchKeyEvent', Object.assign({ type: 'rawKeyDown' }, base));
		await this.b.send('Input.dispatchKeyEvent', Object.assign({ type: 'keyUp' }, base));
		await this.settle();
	}

	// Runs action(), which must open a prompt, and answers it with text.
	async answerPrompt(what, text, action) {
		let seen = null;
		const off = this.b.on('Page.javascriptDialogOpening', (p) => {
			seen = p;
			this.b.send('Page.handleJavaScriptDialog', { accept: true, promptText: text }).catch(() => {});
		});
		try {
			await action();
			await this.settle();
		} finally {
			off();
		}
		if (!seen) fail(`${what}: no prompt opened`);
		if (seen.type !== 'prompt') fail(`${what}: a ${seen.type} dialog opened, not a prompt`);
	}

	async box(expr) {
		const b = await this.eval(`(() => { const e = ${expr}; return e ? __chk.box(e) : null; })()`);
		return b;
	}
}

function parseDetails(text, what) {
	const m = /^(.*?) \(([\d,.]+) (\S+), ([\d.]+)% of all(?:, ([\d.]+)% of zoomed)?/.exec(text || '');
	if (!m) fail(`${what}: #details is ${JSON.stringify(text)}, not "NAMETYPE NAME (COUNT COUNTNAME, P% of all...)"`);
	return { head: m[1], count: parseFloat(m[2].replace(/,/g, '')), countname: m[3], pct: parseFloat(m[4]), zoomedPct: m[5] === undefined ? null : parseFloat(m[5]) };
}

function parseMatched(text, what) {
	const m = /^Matched: ([\d.]+)%(?: of all, ([\d.]+)% of zoomed)?\s*$/.exec(text || '');
	if (!m) fail(`${what}: #matched is ${JSON.stringify(text)}, not "Matched: X%[ of all, Y% of zoomed]"`);
	return { pct: parseFloat(m[1]), zoomedPct: m[2] === undefined ? null : parseFloat(m[2]) };
}

function lastName(p) {
	return p.split(';').pop();
}

async function checkHover(pg, ex, zoomCount) {
	const h = ex.hover;
	const i = await pg.eval(`__chk.find(${JSON.stringify(h.path)})`);
	const b = await pg.box(`__chk.visible(${i})`);
	if (!b) fail(`hover: frame ${h.path} is not on the screen`);
	await pg.hover(b.cx, b.cy);
	const d = parseDetails(await pg.eval('__chk.text("details")'), `hover over ${h.path}`);
	if (!d.head.endsWith(` ${lastName(h.path)}`)) fail(`hover over ${h.path}: #details names "${d.head}", expected "... ${lastName(h.path)}"`);
	near(d.count, h.count, 1e-9, `hover over ${h.path}: count in #details`);
	near(d.pct, h.percent, PCT_TOLERANCE, `hover over ${h.path}: % of all in #details`);
	if (zoomCount) near(d.zoomedPct, (100 * h.count) / zoomCount, PCT_TOLERANCE, `hover over ${h.path}: % of zoomed in #details`);
	else if (d.zoomedPct !== null) fail(`hover over ${h.path}: "% of zoomed" shown while not zoomed`);
	// Leaving the frame clears the line.
	await pg.hover(1, 1);
	const after = await pg.eval('__chk.text("details")');
	if (after.trim() !== '') fail(`hover: #details still says ${JSON.stringify(after)} after the pointer left the frames`);
	ok(`hover ${h.path}: ${d.count} ${d.countname}, ${d.pct}%${zoomCount ? `, ${d.zoomedPct}% of zoomed` : ''}`);
}

// The view zoomed on frame z: geometry on the screen, what is hidden and dimmed.
async function checkZoomedView(pg, ex, z, what) {
	const zx = ex.zoom;
	const st = await pg.eval('window.flamed.state()');
	if (st.zoomed !== z) fail(`${what}: the script says it is zoomed on frame ${st.zoomed}, expected ${z} (${zx.path})`);
	const g = await pg.eval(`(() => {
		const c = __chk, z = ${z}, k = c.scale();
		const zx = parseFloat(c.nodes[z].getAttribute('data-x')), zc = parseFloat(c.nodes[z].getAttribute('data-c'));
		const span = (c.W - 2 * c.XPAD) * k;
		const out = { span, left: c.XPAD * k, frames: [], ancestors: [], others: [], unzoomShown: c.shown(document.getElementById('unzoom')) };
		const inZoom = new Set(c.subtree(z));
		const anc = new Set(c.ancestors(z));
		for (let i = 0; i < c.nodes.length; i++) {
			const r = c.visible(i);
			if (inZoom.has(i)) {
				const x = parseFloat(c.nodes[i].getAttribute('data-x')), n = parseFloat(c.nodes[i].getAttribute('data-c'));
				out.frames.push({ i, path: c.pathOf(c.nodes[i]), box: r ? c.box(r) : null, x: c.XPAD * k + (x - zx) / zc * span, w: n / zc * span });
			} else if (anc.has(i)) {
				out.ancestors.push({ i, path: c.pathOf(c.nodes[i]), box: r ? c.box(r) : null, cls: r ? r.getAttribute('class') || '' : '',
					dim: r ? parseFloat(getComputedStyle(r).opacity) : 1 });
			} else if (r || c.shown(c.nodes[i])) {
				out.others.push(c.pathOf(c.nodes[i]));
			}
		}
		return out;
	})()`);
	const zf = g.frames.find((f) => f.i === z);
	if (!zf.box) fail(`${what}: the zoomed frame ${zx.path} is not drawn`);
	near(zf.box.x, g.left, PX_TOLERANCE, `${what}: left edge of the zoomed frame ${zx.path}`);
	near(zf.box.w, g.span, PX_TOLERANCE, `${what}: width of the zoomed frame ${zx.path} (W - 2*XPAD)`);
	let drawn = 0;
	for (const f of g.frames) {
		if (!f.box) continue;
		drawn++;
		near(f.box.x, f.x, PX_TOLERANCE, `${what}: left edge of ${f.path}`);
		near(f.box.w, f.w, PX_TOLERANCE, `${what}: width of ${f.path}`);
	}
	for (const [name, c] of Object.entries(zx.children || {})) {
		const f = g.frames.find((x) => x.path === `${zx.path};${name}`);
		if (!f) fail(`${what}: ${zx.path} has no child ${name} in the SVG`);
		if (!f.box) fail(`${what}: child ${f.path} is not drawn`);
		near(f.box.w, (c / zx.count) * g.span, PX_TOLERANCE, `${what}: width of child ${f.path} (${c} of ${zx.count})`);
	}
	for (const a of g.ancestors) {
		if (!a.box) fail(`${what}: ancestor ${a.path} is not drawn`);
		near(a.box.x, g.left, PX_TOLERANCE, `${what}: left edge of ancestor ${a.path}`);
		near(a.box.w, g.span, PX_TOLERANCE, `${what}: width of ancestor ${a.path}`);
		if (!/(^|\s)parent(\s|$)/.test(a.cls)) fail(`${what}: ancestor ${a.path} has class "${a.cls}", not "parent"`);
		if (!(a.dim < 1)) fail(`${what}: ancestor ${a.path} is not dimmed (opacity ${a.dim})`);
	}
	if (g.others.length) fail(`${what}: frames outside the zoomed path are still shown: ${g.others.slice(0, 5).join(', ')}`);
	if (!g.unzoomShown) fail(`${what}: "Reset Zoom" is not shown`);
	ok(`${what}: ${zx.path} spans ${zf.box.w.toFixed(2)} px; ${drawn} of ${g.frames.length} frames of its subtree drawn in place, ${g.ancestors.length} ancestors dimmed at full width, nothing else shown`);
}

async function checkMatches(pg, re, ignoreCase, what) {
	// The frames marked as matches are exactly those whose name matches.
	const bad = await pg.eval(`(() => {
		const rx = new RegExp(${JSON.stringify(re)}, ${JSON.stringify(ignoreCase ? 'i' : '')});
		const c = __chk, out = [];
		for (const el of c.nodes) {
			if (el.classList.contains('m')) continue;
			const want = rx.test(c.nameOf(el)), has = el.classList.contains('match');
			if (want !== has) out.push(c.pathOf(el) + (want ? ' (not marked)' : ' (marked)'));
		}
		return out;
	})()`);
	if (bad.length) fail(`${what}: wrong "match" marks: ${bad.slice(0, 5).join(', ')}`);
}

async function checkSearch(pg, s, zoomed, what, ignoreCase) {
	const m = parseMatched(await pg.eval('__chk.text("matched")'), what);
	near(m.pct, s.percent, PCT_TOLERANCE, `${what}: Matched % of all for /${s.re}/`);
	if (zoomed) {
		if (s.zoomed === undefined) fail(`${what}: no expected "zoomed" percentage for /${s.re}/`);
		near(m.zoomedPct, s.zoomed, PCT_TOLERANCE, `${what}: Matched % of the zoomed frame for /${s.re}/`);
	} else if (m.zoomedPct !== null) {
		fail(`${what}: "% of zoomed" shown while not zoomed`);
	}
	await checkMatches(pg, s.re, ignoreCase, what);
	// As flamegraph.pl: the button offers to reset the search; the line stays inside the image.
	const btn = await pg.eval('__chk.text("search")');
	if (btn !== 'Reset Search') fail(`${what}: the search button reads ${JSON.stringify(btn)}, not "Reset Search"`);
	const mb = await pg.box('document.getElementById("matched")');
	const svgW = await pg.eval('document.documentElement.getBoundingClientRect().right');
	if (!mb || mb.x < 0 || mb.x + mb.w > svgW + 0.5) fail(`${what}: #matched spans ${mb && mb.x}..${mb && mb.x + mb.w}, outside the image (0..${svgW})`);
	ok(`${what}: /${s.re}/ matched ${m.pct}%${zoomed ? `, ${m.zoomedPct}% of zoomed` : ''}`);
}

async function waitUrl(pg, want, what) {
	for (let t = 0; t < 50; t++) {
		const q = await pg.eval('location.search');
		if (want(q)) return q;
		await new Promise((r) => setTimeout(r, 100));
	}
	fail(`${what}: the URL's query is ${JSON.stringify(await pg.eval('location.search'))}`);
}

function queryOf(q) {
	const out = {};
	for (const part of q.replace(/^\?/, '').split('&')) {
		if (!part) continue;
		const eq = part.indexOf('=');
		out[part.slice(0, eq < 0 ? part.length : eq)] = eq < 0 ? '' : decodeURIComponent(part.slice(eq + 1));
	}
	return out;
}

async function run(b, args) {
	if (args.length !== 2) fail('usage: check_svg.js FILE.svg EXPECT-JSON|@FILE.json');
	const file = path.resolve(args[0]);
	if (!fs.existsSync(file)) fail(`no such file: ${file}`);
	const ex = JSON.parse(args[1].startsWith('@') ? fs.readFileSync(args[1].slice(1), 'utf8') : args[1]);
	const url = `file://${file}`;
	const pg = new Page(b);

	await pg.load(url);
	// A viewport that shows the whole graph: mouse events go where the frames are.
	const size = await pg.eval('[document.documentElement.width.baseVal.value, document.documentElement.height.baseVal.value]');
	await b.send('Emulation.setDeviceMetricsOverride', {
		width: Math.ceil(Math.max(size[0], 800)),
		height: Math.ceil(Math.max(size[1], 600)),
		deviceScaleFactor: 1,
		mobile: false,
	});
	await pg.settle();

	// The document itself.
	const doc = await pg.eval('({ total: __chk.total, frames: __chk.nodes.length, model: window.flamed.frames().length })');
	near(doc.total, ex.total, 1e-9, 'data-total');
	if (doc.model !== doc.frames) fail(`the script's model has ${doc.model} frames, #frames has ${doc.frames}`);
	ok(`loaded ${file}: ${doc.frames} frames, total ${doc.total}`);

	// Hover, unzoomed.
	await checkHover(pg, ex, 0);

	// Click to zoom.
	const zx = ex.zoom;
	const z = await pg.eval(`__chk.find(${JSON.stringify(zx.path)})`);
	near(await pg.eval(`parseFloat(__chk.nodes[${z}].getAttribute('data-c'))`), zx.count, 1e-9, `data-c of ${zx.path}`);
	const zb = await pg.box(`__chk.visible(${z})`);
	if (!zb) fail(`frame ${zx.path} is not on the screen before the zoom`);
	await pg.click(zb.cx, zb.cy);
	await checkZoomedView(pg, ex, z, `click on ${zx.path}`);

	// Hover inside the zoomed frame: "% of zoomed".
	if (ex.hover.path.startsWith(`${zx.path};`)) await checkHover(pg, ex, zx.count);

	// Searches while zoomed, through the API.
	for (const s of ex.search) {
		await pg.eval(`window.flamed.search(${JSON.stringify(s.re)}, false)`);
		await pg.settle();
		await checkSearch(pg, s, true, 'search while zoomed');
	}
	// The zoom survives a search.
	await checkZoomedView(pg, ex, z, 'zoomed view after the searches');

	// The view is in the URL; loading that URL brings it back.
	const last = ex.search[ex.search.length - 1];
	const zDepth = await pg.eval(`__chk.depth(${z})`);
	const zStart = await pg.eval(`__chk.nodes[${z}].getAttribute('data-x')`);
	const q = await waitUrl(pg, (s) => /[?&]x=/.test(s) && /[?&]s=/.test(s), 'URL after zoom and search');
	const qp = queryOf(q);
	if (qp.y !== String(zDepth) || parseFloat(qp.x) !== parseFloat(zStart) || qp.s !== last.re) {
		fail(`URL query ${q}: expected x=${zStart}, y=${zDepth}, s=${last.re}`);
	}
	ok(`URL query ${q}`);
	await pg.load(`${url}${q}`);
	await checkZoomedView(pg, ex, z, `reload with ${q}`);
	await checkSearch(pg, last, true, `reload with ${q}`);

	// Reset Zoom, clicked.
	const ub = await pg.box('document.getElementById("unzoom")');
	await pg.click(ub.cx, ub.cy);
	const after = await pg.eval(`({ zoomed: window.flamed.state().zoomed, shown: __chk.shown(__chk.nodes[${z}]),
		unzoom: __chk.shown(document.getElementById('unzoom')), hidden: __chk.nodes.filter((el) => !__chk.shown(el)).length })`);
	if (after.zoomed !== -1 || !after.shown || after.hidden) fail(`Reset Zoom: still zoomed (${JSON.stringify(after)})`);
	if (after.unzoom) fail('Reset Zoom: the button is still shown after the reset');
	await checkSearch(pg, last, false, 'after Reset Zoom');
	await waitUrl(pg, (s) => !/[?&]x=/.test(s), 'URL after Reset Zoom');
	ok('Reset Zoom: all frames back, the search kept');

	// Clicking #search while a search is active clears it.
	const sb = await pg.box('document.getElementById("search")');
	await pg.click(sb.cx, sb.cy);
	const cleared = await pg.eval('({ m: __chk.text("matched"), n: document.querySelectorAll("#frames .match").length })');
	if (cleared.m.trim() !== '' || cleared.n) fail(`clicking Search during a search: #matched ${JSON.stringify(cleared.m)}, ${cleared.n} frames still marked`);
	const btn = await pg.eval('__chk.text("search")');
	if (btn !== 'Search') fail(`clicking Reset Search: the button reads ${JSON.stringify(btn)}, not "Search"`);
	ok('clicking Search during a search clears it');

	// Search through the prompt: clicking #search, Ctrl-F, F3.
	const ways = [
		['click on Search', () => pg.click(sb.cx, sb.cy)],
		['Ctrl-F', () => pg.key('f', 'KeyF', 70, 2)],
		['F3', () => pg.key('F3', 'F3', 114, 0)],
	];
	for (let w = 0; w < ways.length; w++) {
		const s = ex.search[w % ex.search.length];
		await pg.answerPrompt(ways[w][0], s.re, ways[w][1]);
		await checkSearch(pg, s, false, `search by ${ways[w][0]}`);
	}

	// Ignore case: Ctrl-I and clicking "ic".
	const ic = ex.ignorecase;
	await pg.eval(`window.flamed.search(${JSON.stringify(ic.re)}, false)`);
	await pg.settle();
	await checkSearch(pg, { re: ic.re, percent: ic.sensitive }, false, 'case-sensitive search');
	await pg.key('i', 'KeyI', 73, 2);
	await checkSearch(pg, { re: ic.re, percent: ic.insensitive }, false, 'after Ctrl-I', true);
	if (!(await pg.eval('document.getElementById("ignorecase").classList.contains("show")'))) fail('after Ctrl-I: #ignorecase does not show that case is ignored');
	await waitUrl(pg, (s) => /[?&]i=1(&|$)/.test(s), 'URL after Ctrl-I');
	const icb = await pg.box('document.getElementById("ignorecase")');
	await pg.click(icb.cx, icb.cy);
	await checkSearch(pg, { re: ic.re, percent: ic.sensitive }, false, 'after clicking ic', false);
	await waitUrl(pg, (s) => !/[?&]i=1(&|$)/.test(s), 'URL after clicking ic');
	ok(`ignore case: /${ic.re}/ ${ic.sensitive}% case-sensitive, ${ic.insensitive}% ignoring case`);

	if (pg.errors.length) fail(`the page threw: ${pg.errors.join('\n')}`);
}

module.exports = { run };

if (require.main === module) {
	cdp.runCheck(module.exports, process.argv.slice(2)).then((rc) => process.exit(rc));
}
