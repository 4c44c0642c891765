// SPDX-License-Identifier: GPL-2.0-or-later
// Deep stacks in the browser: frames written flat below depth 64 (data-depth) form the same tree.
//
//   node tests/browser/check_deep.js FILE.svg DEPTH
//
// FILE.svg is `flamed svg --minwidth 0` of one stack f0;f1;...;f(DEPTH-1) plus a second root
// "other". The script's model must give frame fK depth K and parent f(K-1), the subtree of f0
// must hold all DEPTH frames, hovering the deepest frame must name it, and zooming to it must
// stretch it over the full width.
'use strict';

const path = require('path');
const cdp = require('./cdp.js');

function fail(msg) {
	throw new Error(msg);
}

async function run(b, args) {
	const [file, depthArg] = args;
	const want = parseInt(depthArg, 10);
	if (!file || !(want > 0)) fail('usage: check_deep.js FILE.svg DEPTH');
	const errors = [];
	b.on('Runtime.exceptionThrown', (p) => errors.push(p.exceptionDetails.text));
	await b.navigate(`file://${path.resolve(file)}`);
	const m = await b.evaluate(`(() => {
		const f = window.flamed.frames();
		const out = { n: f.length, bad: [], f0: -1, deepest: -1 };
		for (let i = 0; i < f.length; i++) {
			const name = f.name(i);
			if (name === 'other') continue;
			const k = parseInt(name.slice(1), 10);
			if (k === 0) out.f0 = i;
			if (k === ${want - 1}) out.deepest = i;
			const p = f.parent[i];
			const pk = p < 0 ? -1 : parseInt(f.name(p).slice(1), 10);
			if (f.depth[i] !== k || pk !== k - 1) out.bad.push(name + ' depth ' + f.depth[i] + ' parent ' + (p < 0 ? '-' : f.name(p)));
		}
		out.subtree = out.f0 >= 0 ? f.end[out.f0] - out.f0 : 0;
		return out;
	})()`);
	if (m.n !== want + 1) fail(`the model has ${m.n} frames, want ${want + 1}`);
	if (m.bad.length) fail(`frames out of place: ${m.bad.slice(0, 5).join('; ')}`);
	if (m.subtree !== want) fail(`the subtree of f0 has ${m.subtree} frames, want ${want}`);
	console.log(`ok: model of ${want} nested frames: depths and parents right`);

	// Hover the deepest frame through the real mouse, then zoom to it.
	const box = await b.evaluate(`(() => {
		const r = window.flamed.rectOf(${m.deepest}).getBoundingClientRect();
		return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
	})()`);
	// Input before the page's first frame may be dropped: wait for two frames first.
	await b.evaluate('new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))');
	await b.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: box.x, y: box.y });
	await b.evaluate('new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))');
	const details = await b.evaluate('document.getElementById("details").textContent');
	if (!details.includes(`f${want - 1} (`)) fail(`hovering the deepest frame shows "${details}"`);
	console.log(`ok: hover f${want - 1}: ${details}`);
	const width = await b.evaluate(`(() => {
		window.flamed.zoom(${m.deepest});
		return new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() =>
			r(window.flamed.rectOf(${m.deepest}).getBoundingClientRect().width))));
	})()`);
	const full = await b.evaluate('document.documentElement.width.baseVal.value - 2 * parseFloat(document.documentElement.getAttribute("data-xpad"))');
	if (Math.abs(width - full) > 1) fail(`zoomed to f${want - 1}: ${width} px wide, want ${full}`);
	console.log(`ok: zoom to f${want - 1}: ${width.toFixed(1)} px`);
	if (errors.length) fail(`the page threw: ${errors.join('; ')}`);
}

module.exports = { run };

if (require.main === module) {
	cdp.runCheck(module.exports, process.argv.slice(2)).then((rc) => process.exit(rc));
}
