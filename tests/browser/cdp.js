// SPDX-License-Identifier: GPL-2.0-or-later
// A minimal headless-Chromium driver over the DevTools protocol on a pipe, for the browser tests.
//
// Chromium is started with --remote-debugging-pipe: it reads commands from its fd 3 and writes
// replies and events to its fd 4, one JSON object per message, each ended by a NUL byte. No
// WebSocket, no npm package, only Node's built-ins (Node 18 or later).
//
// API (all async):
//   const cdp = require('./cdp.js');
//   const b = await cdp.launch({ width: 1400, height: 1000 });  // one page, attached
//   await b.navigate('file:///tmp/x.svg');                        // resolves after the load event
//   await b.send('Input.dispatchMouseEvent', { ... });            // a command to the page
//   await b.click(x, y);                                          // b.mouse(type, x, y) too
//   const v = await b.evaluate('1 + 1');                          // value of an expression
//   await b.close();
// b.browserSend() sends to the browser target, b.on(event, fn) listens to page events,
// b.waitEvent(name, ms) resolves with the next such event.
//
// CLI: node tests/browser/cdp.js CHECK.js [ARGS...] loads CHECK.js (a path, or a name in this
// directory), launches Chromium, calls the module's run(browser, args) and exits 0 when it
// resolves, 1 with the message when it throws, 77 when Chromium cannot be started (ctest SKIP).
//
// Environment: CHROMIUM (default /usr/bin/chromium), CDP_TRACE=1 prints every message to stderr.
'use strict';

const childProcess = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const DEFAULT_CHROMIUM = '/usr/bin/chromium';

class CdpError extends Error {}

// Thrown by launch() when there is no browser to run: the CLI turns it into exit 77.
class NoBrowserError extends Error {}

class Browser {
	constructor(proc, userDataDir) {
		this.proc = proc;
		this.userDataDir = userDataDir;
		this.nextId = 1;
		this.pending = new Map(); // id -> { resolve, reject, method }
		this.listeners = new Map(); // "sessionId|method" -> [fn]
		this.sessionId = null;
		this.buf = Buffer.alloc(0);
		this.closed = false;
		this.stderrTail = '';
		this.trace = process.env.CDP_TRACE === '1';

		this.out = proc.stdio[3];
		this.in = proc.stdio[4];
		this.in.on('data', (chunk) => this.onData(chunk));
		proc.stderr.on('data', (d) => {
			this.stderrTail = (this.stderrTail + d.toString()).slice(-4000);
		});
		proc.on('exit', (code, signal) => {
			this.closed = true;
			const why = `chromium exited (${signal || code})` + (this.stderrTail ? `; its stderr ends with:\n${this.stderrTail}` : '');
			for (const p of this.pending.values()) p.reject(new CdpError(`${p.method}: ${why}`));
			this.pending.clear();
		});
	}

	onData(chunk) {
		this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
		let nul;
		while ((nul = this.buf.indexOf(0)) >= 0) {
			const text = this.buf.subarray(0, nul).toString('utf8');
			this.buf = this.buf.subarray(nul + 1);
			if (this.trace) process.stderr.write(`cdp < ${text.slice(0, 500)}\n`);
			this.dispatch(JSON.parse(text));
		}
	}

	dispatch(msg) {
		if (msg.id !== undefined) {
			const p = this.pending.get(msg.id);
			if (!p) return;
			this.pending.delete(msg.id);
			if (msg.error) p.reject(new CdpError(`${p.method}: ${msg.error.message}${msg.error.data ? ' (' + msg.error.data + ')' : ''}`));
			else p.resolve(msg.result);
			return;
		}
		const fns = this.listeners.get(`${msg.sessionId || ''}|${msg.method}`);
		if (fns) for (const fn of fns.slice()) fn(msg.params);
	}

	// A command to the browser target (sessionId null) or to a session.
	rawSend(sessionId, method, params) {
		if (this.closed) return Promise.reject(new CdpError(`${method}: chromium is gone`));
		const id = this.nextId++;
		const msg = { id, method, params: params || {} };
		if (sessionId) msg.sessionId = sessionId;
		const text = JSON.stringify(msg);
		if (this.trace) process.stderr.write(`cdp > ${text.slice(0, 500)}\n`);
		return new Promise((resolve, reject) => {
			this.pending.set(id, { resolve, reject, method });
			this.out.write(text + '\0');
		});
	}

	browserSend(method, params) {
		return this.rawSend(null, method, params);
	}

	// A command to the page.
	send(method, params) {
		return this.rawSend(this.sessionId, method, params);
	}

	// Listens to an event of the page; returns a function that stops listening.
	on(method, fn) {
		const key = `${this.sessionId || ''}|${method}`;
		if (!this.listeners.has(key)) this.listeners.set(key, []);
		this.listeners.get(key).push(fn);
		return () => {
			const fns = this.listeners.get(key);
			const i = fns.indexOf(fn);
			if (i >= 0) fns.splice(i, 1);
		};
	}

	// The next event named `method` of the page (its params), or a rejection after `ms`.
	waitEvent(method, ms = 30000) {
		return new Promise((resolve, reject) => {
			const timer = setTimeout(() => {
				off();
				reject(new CdpError(`no ${method} within ${ms} ms`));
			}, ms);
			const off = this.on(method, (params) => {
				clearTimeout(timer);
				off();
				resolve(params);
			});
		});
	}

	// Evaluates an expression in the page (awaiting it when it is a promise) and returns its
	// value; an exception in the page becomes an exception here, with the page's message.
	async evaluate(expression) {
		const r = await this.send('Runtime.evaluate', {
			expression,
			returnByValue: true,
			awaitPromise: true,
		});
		if (r.exceptionDetails) {
			const d = r.exceptionDetails;
			const what = (d.exception && (d.exception.description || d.exception.value)) || d.text;
			throw new CdpError(`in the page: ${what}`);
		}
		return r.result.value;
	}

	// A mouse event at (x, y), CSS pixels of the viewport: mouseMoved, mousePressed...
	async mouse(type, x, y, extra) {
		await this.send('Input.dispatchMouseEvent', Object.assign({ type, x, y, button: 'none' }, extra || {}));
	}

	// A left click at (x, y), with the move that comes before one.
	async click(x, y) {
		await this.mouse('mouseMoved', x, y);
		await this.mouse('mousePressed', x, y, { button: 'left', buttons: 1, clickCount: 1 });
		await this.mouse('mouseReleased', x, y, { button: 'left', buttons: 0, clickCount: 1 });
	}

	// Loads a URL and resolves after its load event.
	async navigate(url, ms = 60000) {
		const loaded = this.waitEvent('Page.loadEventFired', ms);
		const r = await this.send('Page.navigate', { url });
		if (r.errorText) throw new CdpError(`cannot load ${url}: ${r.errorText}`);
		await loaded;
	}

	async close() {
		if (!this.closed) {
			const gone = new Promise((resolve) => this.proc.once('exit', resolve));
			const timer = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
			this.browserSend('Browser.close').catch(() => {});
			await gone;
			clearTimeout(timer);
		}
		fs.rmSync(this.userDataDir, { recursive: true, force: true });
	}
}

// Starts headless Chromium with one blank page attached; opts: chromium (path), width and
// height (the viewport in CSS pixels), args (extra command-line flags).
async function launch(opts = {}) {
	const exe = opts.chromium || process.env.CHROMIUM || DEFAULT_CHROMIUM;
	try {
		fs.accessSync(exe, fs.constants.X_OK);
	} catch (e) {
		throw new NoBrowserError(`no chromium at ${exe} (Debian: apt-get install chromium; or set CHROMIUM)`);
	}
	const width = opts.width || 1400;
	const height = opts.height || 1000;
	const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flamed-chromium.'));
	const args = [
		'--headless=new',
		'--no-sandbox', // root, and containers without user namespaces
		'--disable-gpu',
		'--remote-debugging-pipe',
		`--user-data-dir=${userDataDir}`,
		`--window-size=${width},${height}`,
		'--no-first-run',
		'--no-default-browser-check',
		'--disable-extensions',
		'--disable-background-networking',
		'--disable-component-update',
		'--disable-sync',
		'--mute-audio',
		'--hide-scrollbars',
		...(opts.args || []),
		'about:blank',
	];
	const proc = childProcess.spawn(exe, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
	const b = new Browser(proc, userDataDir);
	const started = new Promise((resolve, reject) => {
		proc.once('error', (e) => reject(new NoBrowserError(`cannot start ${exe}: ${e.message}`)));
		proc.once('spawn', resolve);
	});
	try {
		await started;
		const { targetInfos } = await withTimeout(b.browserSend('Target.getTargets'), 30000, 'chromium did not answer on the pipe');
		let page = targetInfos.find((t) => t.type === 'page');
		if (!page) {
			const { targetId } = await b.browserSend('Target.createTarget', { url: 'about:blank' });
			page = { targetId };
		}
		const { sessionId } = await b.browserSend('Target.attachToTarget', { targetId: page.targetId, flatten: true });
		b.sessionId = sessionId;
		await b.send('Page.enable');
		await b.send('Runtime.enable');
		await b.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });
	} catch (e) {
		await b.close().catch(() => {});
		throw e;
	}
	return b;
}

function withTimeout(promise, ms, what) {
	let timer;
	const t = new Promise((resolve, reject) => {
		timer = setTimeout(() => reject(new CdpError(`${what} within ${ms} ms`)), ms);
	});
	return Promise.race([promise, t]).finally(() => clearTimeout(timer));
}

// The CLI: runs a check module's run(browser, args).
async function main(argv) {
	if (argv.length < 1) {
		process.stderr.write('usage: node cdp.js CHECK.js [ARGS...]\n');
		return 2;
	}
	let script = argv[0];
	if (!script.includes('/')) script = path.join(__dirname, script);
	return runCheck(require(path.resolve(script)), argv.slice(1));
}

// Launches Chromium, runs check.run(browser, args), closes Chromium; the exit status for the CLI.
async function runCheck(check, args, opts) {
	let b;
	try {
		b = await launch(Object.assign({}, check.launchOptions || {}, opts || {}));
	} catch (e) {
		if (e instanceof NoBrowserError) {
			process.stdout.write(`SKIP: ${e.message}\n`);
			return 77;
		}
		process.stderr.write(`FAIL: cannot start chromium: ${e.message}\n`);
		return 1;
	}
	try {
		await check.run(b, args);
		return 0;
	} catch (e) {
		process.stderr.write(`FAIL: ${e.message}\n`);
		if (process.env.CDP_TRACE === '1') process.stderr.write(`${e.stack}\n`);
		return 1;
	} finally {
		await b.close().catch(() => {});
	}
}

module.exports = { launch, runCheck, CdpError, NoBrowserError };

if (require.main === module) {
	main(process.argv.slice(2)).then(
		(rc) => process.exit(rc),
		(e) => {
			process.stderr.write(`FAIL: ${e.stack || e}\n`);
			process.exit(1);
		},
	);
}
