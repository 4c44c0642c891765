// SPDX-License-Identifier: GPL-2.0-or-later
// Times flamed's HTML flame graph against its SVGs in headless Chromium: load, click-zoom, Reset
// Zoom and search, side by side, for each profile (issue 19's goals).
//
//   node tests/bench/html_view.js CONFIG.json     (written and run by tests/bench/html_view.sh)
//
// CONFIG: { goalMs, profiles: [{ name, about, folded, search, files: [{ label, kind ("html" or
// "svg"), path, runs, load, interact, frames, merged, writeMs }] }] }.
//
// Load: RUNS navigations (from about:blank); first paint and ready in ms after navigation start.
// HTML: the viewer's performance marks flamed-first-paint and flamed-ready (it sets
// documentElement.dataset.state = 'ready'). SVG: the browser's first-paint entry (else the load
// event and two animation frames), ready = the load event's end. Also the browser's
// first-contentful-paint and the JS heap used once ready.
//
// Interactions, RUNS each, from the unzoomed view, with real input events (Input.dispatch*): the
// time from the page's dispatch of the event (a capturing listener on window, ahead of the
// viewer's) to the second requestAnimationFrame callback after it, as tests/bench/svg_click.js.
//  - click-zoom on a frame near the root and on a mid-level one (targets picked from the folded
//    file, at least 0.4% of the samples wide so that a click can hit them);
//  - Reset Zoom: a click on #reset (HTML) or #unzoom (SVG) after each zoom;
//  - search: HTML, the regex typed into <input id="search"> and Enter, timed from the Enter
//    keydown until #matched's text changes, then two frames; SVG, F3 opens its prompt, which is
//    answered through CDP; timed from the prompt's return (window.prompt wrapped) likewise.
// Then one more run of each interaction under Tracing: the longest main-thread task and the
// main thread's busy time (toplevel tasks) between the event and the second frame after it.
//
// Prints a table per profile and one "goal:" line per HTML interaction (median <= goalMs).
'use strict';

const fs = require('fs');
const path = require('path');
const cdp = require('../browser/cdp.js');

const RAF2 = 'new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now()))))';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const MIN_SHARE = 0.004; // targets at least this wide: 4.7 px of the SVG's 1180, 5.5 of the HTML's

// In the page: stamps the armed interaction (window.__arm) and the second frame after it.
const STAMPER = `(() => {
	if (window.__bench) return true;
	const B = window.__bench = { t: [], arm: null, t0: 0, text: null };
	const done = (t0) => requestAnimationFrame(() => requestAnimationFrame(() => {
		B.t.push(performance.now() - t0);
		performance.mark('bench-t1');
	}));
	const start = () => {
		B.arm = null;
		B.t0 = performance.now();
		performance.mark('bench-t0');
		return B.t0;
	};
	window.addEventListener('click', () => { if (B.arm === 'click') done(start()); }, true);
	window.addEventListener('keydown', (e) => {
		if (B.arm === 'escape' && e.key === 'Escape') done(start());
		else if (B.arm === 'search' && e.key === 'Enter') { start(); B.waiting = true; }
	}, true);
	// search: the end is when #matched's text changes
	const m = document.getElementById('matched');
	if (m) {
		new MutationObserver(() => {
			if (B.waiting && m.textContent !== B.text) { B.waiting = false; done(B.t0); }
		}).observe(m, { childList: true, characterData: true, subtree: true });
	}
	B.armSearch = () => { B.text = m ? m.textContent : null; B.arm = 'search'; };
	// the SVG asks for its regex with window.prompt: the search starts when it returns
	const prompt = window.prompt.bind(window);
	window.prompt = (...a) => {
		const r = prompt(...a);
		if (B.arm === 'search') { start(); B.waiting = true; }
		return r;
	};
	return true;
})()`;

// Before the page's scripts: stamps the second animation frame after data-state becomes ready.
const SHOWN = `new MutationObserver((_, o) => {
	if (document.documentElement && document.documentElement.dataset.state === 'ready') {
		o.disconnect();
		requestAnimationFrame(() => requestAnimationFrame(() => { window.__shown = performance.now(); }));
	}
}).observe(document, { attributes: true, attributeFilter: ['data-state'], subtree: true });`;

function median(xs) {
	const s = xs.slice().sort((a, b) => a - b);
	if (!s.length) return NaN;
	return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

// ---- targets, from the folded file ----

// The call tree of a folded file: nested Maps; returns the near-root and mid-level targets.
function pickTargets(file) {
	const text = fs.readFileSync(file, 'utf8');
	const rootKids = new Map();
	let total = 0;
	let stacks = 0;
	let pos = 0;
	while (pos < text.length) {
		let nl = text.indexOf('\n', pos);
		if (nl < 0) nl = text.length;
		const line = text.slice(pos, nl);
		pos = nl + 1;
		const sp = line.lastIndexOf(' ');
		if (sp <= 0) continue;
		const c = parseFloat(line.slice(sp + 1));
		if (!(c > 0)) continue;
		stacks++;
		total += c;
		let kids = rootKids;
		for (const f of line.slice(0, sp).split(';')) {
			// as shown (docs/html-format.md): the annotation _[k], _[j], _[i], _[w], _[p] taken off
			let n = kids.get(f);
			if (!n) kids.set(f, (n = { c: 0, k: null }));
			n.c += c;
			if (!n.k) n.k = new Map();
			kids = n.k;
		}
	}
	// walk: subtree sizes, and the frames wide enough to click
	const wide = []; // [path, depth, count, subtree]
	let frames = 0;
	let maxDepth = 0;
	let maxWide = 0;
	// depth-first, iteratively (stacks may be 5,000 deep): a node's subtree size is known
	// when its children are done
	const stack = [{ it: rootKids.entries(), depth: 0, prefix: null, entry: null, sub: 0 }];
	while (stack.length) {
		const top = stack[stack.length - 1];
		const nx = top.it.next();
		if (nx.done) {
			stack.pop();
			const s = 1 + top.sub;
			if (top.entry) top.entry[3] = s;
			if (stack.length) stack[stack.length - 1].sub += s;
			continue;
		}
		const name = nx.value[0].replace(/_\[[kjiwp]\]$/, '');
		const node = nx.value[1];
		frames++;
		const isWide = node.c >= MIN_SHARE * total;
		const p = isWide ? (top.prefix === null ? name : `${top.prefix};${name}`) : '';
		const entry = isWide ? [p, top.depth, node.c, 0] : null;
		if (isWide) wide.push(entry);
		maxDepth = Math.max(maxDepth, top.depth);
		if (isWide) maxWide = Math.max(maxWide, top.depth);
		stack.push({ it: node.k.entries(), depth: top.depth + 1, prefix: p, entry, sub: 0 });
	}
	// the root pseudo-entry counted itself once
	const best = (ok) => {
		let b = null;
		for (const w of wide) if (ok(w) && (!b || w[3] > b[3])) b = w;
		return b;
	};
	// depth 0 here is the folded file's first frame (the SVG's depth 1, below "all")
	const near = best((w) => w[1] <= 1 && w[2] < 0.9 * total);
	const midDepth = Math.max(2, Math.floor(maxWide / 2));
	const mid = best((w) => w[1] === midDepth);
	const desc = (w) => (w ? { path: w[0], name: w[0].slice(w[0].lastIndexOf(';') + 1), depth: w[1], share: (100 * w[2]) / total, subtree: w[3] } : null);
	return { stacks, total, frames, maxDepth: maxDepth + 1, near: desc(near), mid: desc(mid) };
}

// ---- input ----

async function click(b, x, y) {
	const ev = (type, extra) => b.send('Input.dispatchMouseEvent', Object.assign({ type, x, y }, extra));
	await ev('mouseMoved', {});
	await ev('mousePressed', { button: 'left', buttons: 1, clickCount: 1 });
	await ev('mouseReleased', { button: 'left', buttons: 0, clickCount: 1 });
}

const KEYS = {
	Enter: { key: 'Enter', code: 'Enter', windowsVirtualKeyCode: 13, text: '\r' },
	Escape: { key: 'Escape', code: 'Escape', windowsVirtualKeyCode: 27 },
	Backspace: { key: 'Backspace', code: 'Backspace', windowsVirtualKeyCode: 8 },
	F3: { key: 'F3', code: 'F3', windowsVirtualKeyCode: 114 },
};

async function key(b, name, extra) {
	const k = Object.assign({}, KEYS[name], extra || {});
	await b.send('Input.dispatchKeyEvent', Object.assign({ type: k.text ? 'keyDown' : 'rawKeyDown' }, k));
	const up = Object.assign({ type: 'keyUp' }, k);
	delete up.text;
	await b.send('Input.dispatchKeyEvent', up);
}

// Waits for the page's measurement number `n` (0-based) of window.__bench.t.
async function measurement(b, n, what, ms = 20000) {
	for (let t = 0; t * 5 < ms; t++) {
		const v = await b.evaluate(`window.__bench.t.length > ${n} ? window.__bench.t[${n}] : null`);
		if (v !== null) return v;
		await sleep(5);
	}
	throw new Error(`${what}: no measurement within ${ms / 1000} s (did the event reach the page? did #matched change?)`);
}

// ---- tracing: main-thread tasks between the marks bench-t0 and bench-t1 ----

async function traced(b, fn) {
	const events = [];
	const offData = b.on('Tracing.dataCollected', (p) => {
		for (const e of p.value) events.push(e);
	});
	await b.send('Tracing.start', {
		transferMode: 'ReportEvents',
		traceConfig: { includedCategories: ['toplevel', 'blink.user_timing', '__metadata'], excludedCategories: ['*'] },
	});
	try {
		await fn();
	} finally {
		const complete = b.waitEvent('Tracing.tracingComplete', 60000);
		await b.send('Tracing.end');
		await complete;
		offData();
	}
	const mark = (name) => {
		let m = null;
		for (const e of events) if (e.name === name && (!m || e.ts > m.ts)) m = e;
		return m;
	};
	const t0 = mark('bench-t0');
	const t1 = mark('bench-t1');
	if (!t0 || !t1) return null;
	let longest = 0;
	let busy = 0;
	for (const e of events) {
		if (e.pid !== t0.pid || e.tid !== t0.tid || e.ph !== 'X' || !e.dur) continue;
		if (!/RunTask/.test(e.name)) continue;
		if (e.ts + e.dur < t0.ts || e.ts > t1.ts) continue;
		// toplevel tasks may nest (a task run inside another's nested loop): count the outer ones
		longest = Math.max(longest, e.dur);
	}
	// busy: union of the tasks' intervals, clipped to [start of the task holding t0, t1]
	const iv = events
		.filter((e) => e.pid === t0.pid && e.tid === t0.tid && e.ph === 'X' && e.dur && /RunTask/.test(e.name) && e.ts + e.dur >= t0.ts && e.ts <= t1.ts)
		.map((e) => [e.ts, Math.min(e.ts + e.dur, t1.ts)])
		.sort((x, y) => x[0] - y[0]);
	let end = -Infinity;
	for (const [s, e] of iv) {
		if (e <= end) continue;
		busy += e - Math.max(s, end);
		end = e;
	}
	return { longest: longest / 1000, busy: busy / 1000, window: (t1.ts - t0.ts) / 1000 };
}

// ---- one file ----

async function load(b, f) {
	await b.navigate('about:blank');
	const t = Date.now();
	await b.navigate(`file://${path.resolve(f.path)}`, 600000);
	const out = { wall: Date.now() - t };
	if (f.kind === 'html') {
		for (let i = 0; ; i++) {
			const st = await b.evaluate('document.documentElement.dataset.state || ""');
			if (st === 'ready') break;
			if (st === 'error') throw new Error(`the viewer says: ${await b.evaluate('(document.getElementById("flamed-error") || {}).textContent')}`);
			if (i * 20 > 600000) throw new Error('not ready within 600 s');
			await sleep(20);
		}
		const m = await b.evaluate(`(() => {
			const g = (n) => { const e = performance.getEntriesByName(n)[0]; return e ? e.startTime : null; };
			const fcp = performance.getEntriesByName('first-contentful-paint')[0];
			return { paint: g('flamed-first-paint'), ready: g('flamed-ready'), fcp: fcp ? fcp.startTime : null,
				marks: performance.getEntriesByType('mark').map((e) => [e.name, e.startTime]) };
		})()`);
		Object.assign(out, m);
	} else {
		if (!(await b.evaluate('typeof window.flamed === "object"'))) throw new Error(`${f.path}: the SVG's script did not run`);
		const raf = await b.evaluate(RAF2);
		const m = await b.evaluate(`(() => {
			const p = (n) => { const e = performance.getEntriesByName(n)[0]; return e ? e.startTime : null; };
			const nav = performance.getEntriesByType('navigation')[0];
			return { fp: p('first-paint'), fcp: p('first-contentful-paint'), ready: nav ? nav.loadEventEnd : null };
		})()`);
		out.paint = m.fp !== null ? m.fp : raf;
		out.paintFrom = m.fp !== null ? 'paint entry' : 'load + 2 frames';
		out.fcp = m.fcp;
		out.ready = m.ready;
	}
	if (f.kind === 'html') {
		// shown: the second animation frame after data-state became ready (SHOWN below)
		for (let i = 0; i < 200 && !(await b.evaluate('window.__shown || 0')); i++) await sleep(10);
		out.shown = await b.evaluate('window.__shown || null');
	}
	const heap = await b.send('Runtime.getHeapUsage');
	out.heap = heap.usedSize / 1e6;
	return out;
}

// Scrolls the SVG so that frame i is on the screen; its centre in client coordinates.
async function svgCentre(b, i) {
	const js = `(() => { const r = window.flamed.rectOf(${i}); if (!r) return null; const e = r.getBoundingClientRect();
		return [e.left + e.width / 2, e.top + e.height / 2, e.width, innerHeight]; })()`;
	let c = await b.evaluate(js);
	if (c && (c[1] < 5 || c[1] > c[3] - 5)) {
		await b.evaluate(`window.scrollBy(0, ${c[1] - c[3] / 2}); ${RAF2}`);
		c = await b.evaluate(js);
	}
	return c;
}

async function htmlCentre(b, i) {
	await b.evaluate(`window.flamed.rect(${i}); ${RAF2}`);
	const r = await b.evaluate(`window.flamed.rect(${i})`);
	return r ? [r.x + r.w / 2, r.y + r.h / 2, r.w] : null;
}

async function elCentre(b, id, scroll) {
	return b.evaluate(`(() => { const e = document.getElementById(${JSON.stringify(id)}); if (!e) return null;
		${scroll ? 'e.scrollIntoView({ block: "center" });' : ''}
		const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`);
}

async function interact(b, f, prof, res, runs) {
	const html = f.kind === 'html';
	if (!html) {
		// the SVG moves its frames into their own root once idle after load: wait for that
		for (let t = 0; t < 1200; t++) {
			if (await b.evaluate('window.flamed.state().isolated')) break;
			await sleep(50);
		}
	}
	await b.evaluate(STAMPER);
	let n = 0; // measurements taken so far
	const indexOf = async (p) => {
		if (html) return b.evaluate(`window.flamed.find(${JSON.stringify(p)})`);
		// the SVG: walk the path below "all" with frames().end
		return b.evaluate(`(() => {
			const m = window.flamed.frames();
			const parts = ${JSON.stringify(p)}.split(';');
			let lo = 0, hi = m.length, d = 0;
			if (m.name(0) === 'all' && m.depth[0] === 0) { lo = 1; hi = m.end[0]; d = 1; }
			let found = -1;
			for (const name of parts) {
				found = -1;
				for (let j = lo; j < hi; j = m.end[j]) if (m.depth[j] === d && m.name(j) === name) { found = j; break; }
				if (found < 0) return -1;
				lo = found + 1; hi = m.end[found]; d++;
			}
			return found;
		})()`);
	};
	const unzoom = async () => {
		if (html) {
			if (await b.evaluate('window.flamed.state().zoomed >= 0')) {
				const rb = await elCentre(b, 'reset', false);
				await click(b, rb[0], rb[1]);
			}
		} else await b.evaluate('window.flamed.unzoom()');
		await b.evaluate(RAF2);
	};
	const zoomed = () => b.evaluate('window.flamed.state().zoomed');

	// one click-zoom, from the unzoomed view; returns its ms
	const zoomClick = async (i, name) => {
		await unzoom();
		await sleep(50);
		const c = html ? await htmlCentre(b, i) : await svgCentre(b, i);
		if (!c) throw new Error(`frame ${i} (${name}) has no rect`);
		await b.evaluate('window.__bench.arm = "click"');
		await click(b, c[0], c[1]);
		const t = await measurement(b, n++, `click-zoom on ${name}`);
		const z = await zoomed();
		if (z !== i) throw new Error(`the click on ${name} at ${c[0].toFixed(1)},${c[1].toFixed(1)} (${c[2].toFixed(1)} px wide) zoomed to frame ${z}, not ${i}`);
		return t;
	};
	// Reset Zoom, from a zoomed view; returns its ms
	const resetClick = async () => {
		await sleep(50);
		const rb = await elCentre(b, html ? 'reset' : 'unzoom', !html);
		if (!rb) throw new Error(`no ${html ? '#reset' : '#unzoom'} to click`);
		await b.evaluate('window.__bench.arm = "click"');
		await click(b, rb[0], rb[1]);
		const t = await measurement(b, n++, 'Reset Zoom');
		const z = await zoomed();
		if (z !== -1 && z !== null) throw new Error(`Reset Zoom left frame ${z} zoomed`);
		return t;
	};

	// one search; returns its ms
	const re = prof.search;
	const clearSearch = async () => {
		if (html) {
			const st = await b.evaluate('[window.flamed.state().search, document.getElementById("search").value]');
			if (st[0] === null && st[1] === '') return;
			const c = await elCentre(b, 'search', false);
			await click(b, c[0], c[1]);
			await b.send('Input.dispatchKeyEvent', { type: 'rawKeyDown', key: 'a', code: 'KeyA', windowsVirtualKeyCode: 65, modifiers: 2, commands: ['selectAll'] });
			await b.send('Input.dispatchKeyEvent', { type: 'keyUp', key: 'a', code: 'KeyA', windowsVirtualKeyCode: 65, modifiers: 2 });
			await key(b, 'Backspace');
			await key(b, 'Enter');
			for (let t = 0; t < 400 && (await b.evaluate('window.flamed.state().search')) !== null; t++) await sleep(10);
		} else {
			await b.evaluate('window.flamed.resetSearch()');
		}
		await b.evaluate(RAF2);
	};
	const searchOnce = async () => {
		await clearSearch();
		await sleep(50);
		if (html) {
			const c = await elCentre(b, 'search', false);
			await click(b, c[0], c[1]);
			await b.send('Input.insertText', { text: re });
			await b.evaluate('window.__bench.armSearch()');
			await key(b, 'Enter');
		} else {
			await b.evaluate('window.scrollTo(0, 0); window.__bench.armSearch()');
			const dialog = b.waitEvent('Page.javascriptDialogOpening', 20000);
			const down = b.send('Input.dispatchKeyEvent', Object.assign({ type: 'rawKeyDown' }, KEYS.F3));
			await dialog;
			await b.send('Page.handleJavaScriptDialog', { accept: true, promptText: re });
			await down;
			await b.send('Input.dispatchKeyEvent', Object.assign({ type: 'keyUp' }, KEYS.F3));
		}
		const t = await measurement(b, n++, `search /${re}/`, 60000);
		const st = await b.evaluate('window.flamed.state()');
		if (st.search !== re) throw new Error(`after the search the viewer's search is ${JSON.stringify(st.search)}, not ${JSON.stringify(re)}`);
		res.matched = html ? st.matched : await b.evaluate('document.getElementById("matched").textContent');
		return t;
	};

	for (const which of ['near', 'mid']) {
		const tg = prof.targets[which];
		if (!tg) continue;
		const i = await indexOf(tg.path);
		if (!(i >= 0)) throw new Error(`${which} target ${tg.path.slice(-200)} not found in the ${f.kind}`);
		const zs = [];
		const rs = [];
		for (let r = 0; r < runs; r++) {
			zs.push(await zoomClick(i, tg.name));
			rs.push(await resetClick());
		}
		res[`click ${which}`] = zs;
		res[`reset ${which}`] = rs;
		if (process.env.TRACE !== '0') {
			res[`task click ${which}`] = await traced(b, () => zoomClick(i, tg.name));
			res[`task reset ${which}`] = await traced(b, () => resetClick());
		}
	}
	await unzoom();
	const ss = [];
	for (let r = 0; r < runs; r++) ss.push(await searchOnce());
	res.search = ss;
	if (process.env.TRACE !== '0') {
		await clearSearch();
		await sleep(50);
		res['task search'] = await traced(b, () => searchOnce());
	}
	await clearSearch();
}

// ---- the table ----

function fmtTimes(xs) {
	if (!xs || !xs.length) return '-';
	if (xs.length === 1) return xs[0].toFixed(1);
	return `${median(xs).toFixed(1)} (${xs[0].toFixed(0)}/${Math.max(...xs).toFixed(0)})`;
}

function printTable(rows, cols) {
	const widths = cols.map((c, k) => Math.max(...rows.map((r) => String(r[k] === undefined ? '' : r[k]).length)));
	for (const r of rows) {
		process.stdout.write(
			`${r
				.map((v, k) => {
					const s = String(v === undefined ? '' : v);
					return k === 0 ? s.padEnd(widths[k]) : s.padStart(widths[k]);
				})
				.join('  ')
				.trimEnd()}\n`,
		);
	}
}

async function run(b, args) {
	const cfg = JSON.parse(fs.readFileSync(args[0], 'utf8'));
	const goal = cfg.goalMs || 30;
	const goals = [];
	let failed = 0;
	await b.send('Page.enable');
	await b.send('Page.addScriptToEvaluateOnNewDocument', { source: SHOWN });
	for (const prof of cfg.profiles) {
		const t = Date.now();
		prof.targets = pickTargets(prof.folded);
		const tg = prof.targets;
		process.stdout.write(`\n== ${prof.name}: ${prof.about}\n`);
		process.stdout.write(
			`   ${tg.stacks} stacks, ${tg.total} samples, ${tg.frames} frames (distinct prefixes), ${tg.maxDepth} levels; search /${prof.search}/\n`,
		);
		for (const w of ['near', 'mid']) {
			const p = tg[w];
			if (p) process.stdout.write(`   ${w === 'near' ? 'near-root' : 'mid-level'} target: ${p.name.slice(0, 60)} (depth ${p.depth + 1}, ${p.share.toFixed(1)}% wide, ${p.subtree} frames in its subtree)\n`);
			else process.stdout.write(`   no ${w} target at least ${MIN_SHARE * 100}% wide\n`);
		}
		const results = [];
		for (const f of prof.files) {
			const res = { f, loads: [], err: null };
			results.push(res);
			try {
				if (f.load) {
					for (let r = 0; r < f.runs; r++) {
						process.stderr.write(`bench: ${prof.name} ${f.label}: load ${r + 1}/${f.runs}\n`);
						res.loads.push(await load(b, f));
					}
				}
				if (f.interact) {
					if (!res.loads.length) res.loads.push(await load(b, f));
					process.stderr.write(`bench: ${prof.name} ${f.label}: interactions\n`);
					await interact(b, f, prof, res, f.runs);
				}
			} catch (e) {
				res.err = e.message;
				failed++;
				process.stderr.write(`bench: ${prof.name} ${f.label}: ${e.message}\n`);
			}
			await b.navigate('about:blank').catch(() => {});
		}
		// the table
		const cols = ['', ...results.map((r) => r.f.label)];
		const rows = [cols];
		const row = (label, fn) => rows.push([label, ...results.map((r) => {
			try {
				const v = fn(r);
				return v === null || v === undefined ? '-' : v;
			} catch (e) {
				return '?';
			}
		})]);
		const med = (r, k) => (r.loads.length ? median(r.loads.map((l) => l[k]).filter((x) => x !== null && x !== undefined)) : null);
		row('size MB', (r) => (r.f.size / 1e6).toFixed(2));
		row('frames (svg: drawn+merged)', (r) => (r.f.kind === 'html' ? r.f.frames : `${r.f.frames}+${r.f.merged}`));
		row('write ms (flamed)', (r) => r.f.writeMs);
		row('load runs', (r) => (r.f.load ? r.loads.length : '-'));
		row('first paint ms', (r) => (r.f.load ? med(r, 'paint').toFixed(0) : null));
		row('ready ms', (r) => (r.f.load ? med(r, 'ready').toFixed(0) : null));
		row('ready + 2 frames ms', (r) => (r.f.kind === 'html' && r.f.load ? med(r, 'shown').toFixed(0) : null));
		row('browser FCP ms', (r) => (r.f.load && med(r, 'fcp') >= 0 ? med(r, 'fcp').toFixed(0) : null));
		row('JS heap MB', (r) => (r.loads.length ? med(r, 'heap').toFixed(1) : null));
		const inter = [
			['click-zoom near ms', 'click near'],
			['  longest task / busy', 'task click near'],
			['Reset Zoom ms', 'reset near'],
			['  longest task / busy', 'task reset near'],
			['click-zoom mid ms', 'click mid'],
			['  longest task / busy', 'task click mid'],
			['Reset Zoom (mid) ms', 'reset mid'],
			['search ms', 'search'],
			['  longest task / busy', 'task search'],
		];
		for (const [label, k] of inter) {
			row(label, (r) => {
				const v = r[k];
				if (!v) return null;
				if (Array.isArray(v)) return fmtTimes(v);
				return `${v.longest.toFixed(1)} / ${v.busy.toFixed(1)}`;
			});
		}
		row('search result', (r) => (r.matched ? r.matched.trim().slice(0, 40) : null));
		row('error', (r) => (r.err ? r.err.slice(0, 80) : ''));
		process.stdout.write('\n');
		printTable(rows, cols);
		process.stdout.write('   (times: median (first/max) of the runs; "longest task / busy": one traced run, main thread)\n');
		const h = results.find((r) => r.f.kind === 'html' && r.f.interact);
		if (h) {
			for (const [label, k] of [
				['click-zoom-near', 'click near'],
				['click-zoom-mid', 'click mid'],
				['reset-zoom', 'reset near'],
				['search', 'search'],
			]) {
				const v = h[k] ? median(h[k]) : NaN;
				goals.push(`goal: ${prof.name} html ${label} ${isNaN(v) ? 'n/a' : `${v.toFixed(1)}ms`} <= ${goal}ms ${v <= goal ? 'ok' : 'MISSED'}`);
			}
		}
		process.stderr.write(`bench: ${prof.name} took ${((Date.now() - t) / 1000).toFixed(0)} s\n`);
	}
	process.stdout.write('\n');
	for (const g of goals) process.stdout.write(`${g}\n`);
	if (failed) throw new Error(`${failed} file(s) could not be measured (see above)`);
}

module.exports = { run, launchOptions: { width: 1400, height: 1000 } };

if (require.main === module) {
	cdp.runCheck(module.exports, process.argv.slice(2)).then((rc) => process.exit(rc));
}
