// SPDX-License-Identifier: GPL-2.0-or-later
// Times a flame graph SVG in headless Chromium: load, click-zoom near the root and mid-level, reset.
//
//   node tests/bench/svg_click.js FILE.svg [RUNS]     (run by tests/bench/svg_click.sh)
//
// A click is real mouse events (Input.dispatchMouseEvent) at the frame's rect. Its time runs
// from the moment the page dispatches the click event (a capturing listener on window, ahead
// of the SVG's own) to the second requestAnimationFrame callback after it, that is until the
// frame with the new view has been produced. Each target is clicked RUNS times (default 7),
// from the unzoomed view; printed: the first (cold) click and the median, min and max.
// Prints one "result:" line per measurement, and exits 1 when a median exceeds GOAL_MS (env,
// default 100).
'use strict';

const path = require('path');
const cdp = require('../browser/cdp.js');

const RAF2 = 'new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now()))))';

// In the page: stamps every click and the second animation frame after it.
const STAMPER = `(() => {
	window.__bench = [];
	window.addEventListener('click', () => {
		const t0 = performance.now();
		requestAnimationFrame(() => requestAnimationFrame(() => window.__bench.push(performance.now() - t0)));
	}, true);
	return true;
})()`;

function median(xs) {
	const s = xs.slice().sort((a, b) => a - b);
	return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function click(b, x, y) {
	const ev = (type, extra) => b.send('Input.dispatchMouseEvent', Object.assign({ type, x, y }, extra));
	await ev('mouseMoved', {});
	await ev('mousePressed', { button: 'left', buttons: 1, clickCount: 1 });
	await ev('mouseReleased', { button: 'left', buttons: 0, clickCount: 1 });
}

// Clicks at (x, y) and returns the page's measurement of that click.
async function timedClick(b, x, y) {
	const before = await b.evaluate('window.__bench.length');
	await click(b, x, y);
	for (let t = 0; t < 400; t++) {
		const n = await b.evaluate('window.__bench.length');
		if (n > before) return b.evaluate(`window.__bench[${before}]`);
		await sleep(5);
	}
	throw new Error('no click measurement within 2 s: did the click reach the page?');
}

async function run(b, args) {
	const file = path.resolve(args[0] || '');
	const runs = parseInt(args[1] || process.env.RUNS || '7', 10);
	const goal = parseFloat(process.env.GOAL_MS || '100');
	const t0 = Date.now();
	await b.navigate(`file://${file}`, 300000);
	const loadWall = Date.now() - t0;
	if (!(await b.evaluate('typeof window.flamed === "object"'))) throw new Error(`${file}: the SVG's script did not run`);
	const firstFrame = await b.evaluate(`${RAF2}.then((t) => t)`);
	const nav = await b.evaluate('(() => { const e = performance.getEntriesByType("navigation")[0]; return e ? e.loadEventEnd : 0; })()');
	const size = await b.evaluate('[document.documentElement.width.baseVal.value, document.documentElement.height.baseVal.value]');
	await b.send('Emulation.setDeviceMetricsOverride', {
		width: Math.ceil(size[0]),
		height: Math.ceil(size[1]),
		deviceScaleFactor: 1,
		mobile: false,
	});
	await b.evaluate(RAF2);
	// The script moves the frames into an SVG root of their own once the browser is idle
	// after load; clicks are measured after that, and the time it was done is printed.
	let ready = 0;
	for (let t = 0; t < 600 && !ready; t++) {
		if (await b.evaluate('window.flamed.state().isolated')) ready = await b.evaluate(RAF2);
		else await sleep(50);
	}
	if (!ready) throw new Error('the script did not finish its after-load work within 30 s');
	await b.evaluate(STAMPER);

	// Targets, at least 4 px wide so that a click can hit them: near the root, the frame of
	// depth 1 or 2 with the biggest subtree among those narrower than 90% (so that the zoom
	// changes something); mid-level, the one with the biggest subtree at half the depth of the
	// deepest frame that wide.
	const pick = await b.evaluate(`(() => {
		const m = window.flamed.frames();
		const total = parseFloat(document.documentElement.getAttribute('data-total'));
		const span = document.documentElement.width.baseVal.value - 2 * parseFloat(document.documentElement.getAttribute('data-xpad'));
		const wide = (i) => m.count[i] / total * span >= 4;
		let maxDepth = 0;
		let maxWide = 0;
		for (let i = 0; i < m.length; i++) {
			maxDepth = Math.max(maxDepth, m.depth[i]);
			if (wide(i)) maxWide = Math.max(maxWide, m.depth[i]);
		}
		const best = (ok) => {
			let b = -1;
			for (let i = 0; i < m.length; i++) {
				if (!ok(i) || !wide(i)) continue;
				if (b < 0 || m.end[i] - i > m.end[b] - b) b = i;
			}
			return b;
		};
		const near = best((i) => m.depth[i] >= 1 && m.depth[i] <= 2 && m.count[i] < 0.9 * total);
		const mid = best((i) => m.depth[i] === Math.max(3, Math.floor(maxWide / 2)));
		const desc = (i) => i < 0 ? null : { i, depth: m.depth[i], subtree: m.end[i] - i, share: 100 * m.count[i] / total, name: m.name(i) };
		return { frames: m.length, maxDepth, near: desc(near), mid: desc(mid) };
	})()`);
	process.stdout.write(`${file}: ${pick.frames} frames, ${pick.maxDepth + 1} levels\n`);
	process.stdout.write(
		`result: load ${loadWall} ms to the load event (navigation timing: ${nav.toFixed(0)} ms), first frame drawn at ` +
			`${firstFrame.toFixed(0)} ms, after-load work (frames in their own SVG root) drawn at ${ready.toFixed(0)} ms\n`,
	);

	let over = false;
	for (const which of ['near', 'mid']) {
		const p = pick[which];
		if (!p) {
			process.stdout.write(`result: no ${which} target wide enough to click\n`);
			continue;
		}
		const zoomTimes = [];
		const resetTimes = [];
		let info = null;
		for (let r = 0; r < runs; r++) {
			await b.evaluate(`window.flamed.unzoom(); ${RAF2}`);
			await sleep(50);
			const box = await b.evaluate(`(() => { const e = window.flamed.rectOf(${p.i}).getBoundingClientRect(); return [e.left + e.width / 2, e.top + e.height / 2]; })()`);
			zoomTimes.push(await timedClick(b, box[0], box[1]));
			const st = await b.evaluate('window.flamed.state()');
			if (st.zoomed !== p.i) throw new Error(`the click on ${p.name} zoomed to frame ${st.zoomed}, not ${p.i}`);
			info = st;
			await sleep(50);
			const ub = await b.evaluate('(() => { const e = document.getElementById("unzoom").getBoundingClientRect(); return [e.left + e.width / 2, e.top + e.height / 2]; })()');
			resetTimes.push(await timedClick(b, ub[0], ub[1]));
		}
		const med = median(zoomTimes);
		over = over || med > goal;
		const fmt = (xs) => `first ${xs[0].toFixed(1)}, median ${median(xs).toFixed(1)}, min ${Math.min(...xs).toFixed(1)}, max ${Math.max(...xs).toFixed(1)} ms`;
		process.stdout.write(
			`result: click-zoom ${which === 'near' ? 'near the root' : 'mid-level'} (${p.name}, depth ${p.depth}, ${p.share.toFixed(1)}% wide, ` +
				`${p.subtree} frames in its subtree; ${info.drawn} drawn, ${info.runs} merged runs): ${fmt(zoomTimes)}` +
				`${med > goal ? `  OVER THE ${goal} ms GOAL` : ''}\n`,
		);
		process.stdout.write(`result: Reset Zoom after it: ${fmt(resetTimes)}\n`);
	}
	if (over) throw new Error(`a median click-zoom time is over the ${goal} ms goal`);
}

module.exports = { run, launchOptions: { width: 1400, height: 1000 } };

if (require.main === module) {
	cdp.runCheck(module.exports, process.argv.slice(2)).then((rc) => process.exit(rc));
}
