// SPDX-License-Identifier: GPL-2.0-or-later
// --nameattr in the browser: a frame with a link opens it on a click, as flamegraph.pl's
// do, and zooms on Ctrl-click; a frame whose tooltip the file replaced keeps its name for the
// labels and the search.
//
//   node tests/browser/check_links.js FILE.svg NAME HREF TARGET TITLE
//
// FILE.svg is drawn with --nameattr giving the frame NAME the link HREF (TARGET) and the
// tooltip TITLE.
'use strict';

const path = require('path');
const cdp = require('./cdp.js');

const RAF2 = 'new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))';

function fail(msg) {
	throw new Error(msg);
}

async function run(b, args) {
	const [file, name, href, target, title] = args;
	if (!file || !name || !href || !target || !title) fail('usage: check_links.js FILE.svg NAME HREF TARGET TITLE');
	const errors = [];
	b.on('Runtime.exceptionThrown', (p) => errors.push(p.exceptionDetails.text));
	await b.navigate(`file://${path.resolve(file)}`);
	// Where the page would go: window.open, recorded instead of followed; and every click the
	// document sees, with what it landed on, for the message when no link opens.
	await b.evaluate(`window.__opened = []; window.open = (u, t) => { window.__opened.push([u, t]); return null; };
		window.__clicks = [];
		document.addEventListener('click', (e) => window.__clicks.push(e.target.localName + (e.target.id ? '#' + e.target.id : '')), true);
		true`);
	// Input before the page's first frame may be dropped (Chromium routes it by what it has
	// drawn): wait for two frames, as check_svg.js does.
	await b.evaluate(RAF2);
	const i = await b.evaluate(`(() => {
		const f = window.flamed.frames();
		for (let i = 0; i < f.length; i++) if (f.name(i) === ${JSON.stringify(name)}) return i;
		return -1;
	})()`);
	if (i < 0) fail(`no frame named ${name} in the page's model (its tooltip is the file's: the name must come from data-n)`);
	const tip = await b.evaluate(`window.flamed.rectOf(${i}).parentNode.querySelector('title').textContent`);
	if (tip !== title) fail(`the tooltip is ${JSON.stringify(tip)}, not the file's ${JSON.stringify(title)}`);
	const box = await b.evaluate(`(() => {
		const r = window.flamed.rectOf(${i}).getBoundingClientRect();
		return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
	})()`);
	const click = async (modifiers) => {
		await b.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: box.x, y: box.y, button: 'none', modifiers });
		await b.send('Input.dispatchMouseEvent', { type: 'mousePressed', x: box.x, y: box.y, button: 'left', buttons: 1, clickCount: 1, modifiers });
		await b.send('Input.dispatchMouseEvent', { type: 'mouseReleased', x: box.x, y: box.y, button: 'left', buttons: 0, clickCount: 1, modifiers });
		await b.evaluate(RAF2);
	};
	await click(0);
	const opened = await b.evaluate('window.__opened');
	if (opened.length !== 1 || opened[0][0] !== href || opened[0][1] !== target) {
		const clicks = await b.evaluate('window.__clicks');
		const at = await b.evaluate(`(() => { const e = document.elementFromPoint(${box.x}, ${box.y}); return e ? e.localName : null; })()`);
		fail(`a click at (${box.x.toFixed(1)}, ${box.y.toFixed(1)}) opened ${JSON.stringify(opened)}, want [["${href}","${target}"]]; ` +
			`clicks seen: ${JSON.stringify(clicks)}; element there: ${at}`);
	}
	const zoomedAfterClick = await b.evaluate('!document.getElementById("unzoom").classList.contains("hide")');
	if (zoomedAfterClick) fail('a click on a linked frame also zoomed');
	console.log(`ok: a click opens ${href} in ${target}`);
	await click(2); // Ctrl
	const zoomed = await b.evaluate('!document.getElementById("unzoom").classList.contains("hide")');
	if (!zoomed || (await b.evaluate('window.__opened.length')) !== 1) fail('Ctrl-click did not zoom (or opened the link)');
	console.log('ok: Ctrl-click zooms');
	const found = await b.evaluate(`(window.flamed.search(${JSON.stringify('^' + name + '$')}, false), document.querySelectorAll('#frames .match').length)`);
	if (found < 1) fail(`searching /^${name}$/ matched no frame`);
	console.log(`ok: the search finds ${name} by its name`);
	if (errors.length) fail(`the page threw: ${errors.join('; ')}`);
}

module.exports = { run };

if (require.main === module) {
	cdp.runCheck(module.exports, process.argv.slice(2)).then((rc) => process.exit(rc));
}
