// vscode-jsonrpc, the JSON-RPC layer of VS Code's language clients, drives
// examples/lsp-server over its default transport: Content-Length framing
// on the child's standard input and output. Usage:
// node lsp_client.mjs path/to/lsp-server
//
// The checks run in order on one session; the server's standard error is
// copied to ours, so that a failure shows its logs. The random edits of
// one run are replayed with LSP_EDITS_SEED set to the seed its failure
// message gives.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
	CancellationTokenSource,
	ProgressType,
	StreamMessageReader,
	StreamMessageWriter,
	createMessageConnection,
} from 'vscode-jsonrpc/node';
import { LogWatch } from './logwatch.mjs';

const server = process.argv[2];
assert.ok(server, 'usage: node lsp_client.mjs path/to/lsp-server');
const timeout = 20_000; // for each test, so that a hang fails with a name

// start runs the server and connects to it, without listening yet.
function start() {
	const child = spawn(server, [], { stdio: ['pipe', 'pipe', 'pipe'] });
	const log = new LogWatch(child.stderr);
	const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
	const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
	after(() => {
		conn.dispose();
		if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); // a failed test left it running
	});
	return { child, log, exited, conn };
}

const initializeParams = {
	processId: process.pid,
	rootUri: null,
	capabilities: { workspace: { configuration: true } },
};

const { log, exited, conn } = start();

// The editor's settings: the greeting names the document it is asked for.
// The configuration request for file:///slow.go is held until the server
// cancels it: slow.arrived and slow.cancelled are called as that happens.
let configurationRequests = 0;
const slow = { arrived() {}, cancelled() {} };
conn.onRequest('workspace/configuration', async (params, token) => {
	configurationRequests++;
	const uri = params.items[0].scopeUri;
	if (uri === 'file:///slow.go') {
		const cancelled = new Promise((resolve) => token.onCancellationRequested(resolve));
		slow.arrived();
		await cancelled;
		slow.cancelled();
		return [{ greeting: 'too late' }];
	}
	return params.items.map((item) => ({ greeting: `Hi ${item.scopeUri}` }));
});
conn.listen();

test('initialize', { timeout }, async () => {
	const result = await conn.sendRequest('initialize', initializeParams);
	assert.equal(result.serverInfo.name, 'jsonrpc-example');
	assert.equal(result.capabilities.hoverProvider, true);
	assert.deepEqual(result.capabilities.textDocumentSync, { openClose: true, change: 2 }); // incremental
	assert.deepEqual(result.capabilities.executeCommandProvider, { commands: ['example.count'], workDoneProgress: true }); // it reports $/progress
	await conn.sendNotification('initialized', {});
});

function hover(uri, line, token, character = 4) {
	const params = { textDocument: { uri }, position: { line, character } };
	return token ? conn.sendRequest('textDocument/hover', params, token) : conn.sendRequest('textDocument/hover', params);
}

// open sends textDocument/didOpen, and does not wait for the server: the
// requests sent after it are handled after it.
function open(uri, text) {
	conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'go', version: 1, text } });
}

function change(uri, version, contentChanges) {
	conn.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges });
}

// hoverLine resolves to the line of the document that a hover shows, after
// its greeting, or to null for a null result.
async function hoverLine(uri, line, character = 0) {
	const result = await hover(uri, line, undefined, character);
	if (result === null) return null;
	assert.equal(result.contents.kind, 'plaintext');
	const [greeting, ...rest] = result.contents.value.split('\n');
	assert.equal(greeting, `Hi ${uri} from ${uri}:${line + 1}:${character + 1}`);
	assert.equal(rest.length, 1, result.contents.value);
	return rest[0];
}

test("a hover's call to workspace/configuration is answered by the editor", { timeout }, async () => {
	open('file:///a.go', 'package a\n\nfunc A() {}\n');
	const result = await hover('file:///a.go', 2);
	assert.deepEqual(result.contents, { kind: 'plaintext', value: 'Hi file:///a.go from file:///a.go:3:5\nfunc A() {}' });
	assert.equal(configurationRequests, 1);
});

test('500 concurrent hovers, each calling the editor back', { timeout }, async () => {
	const n = 500;
	for (let i = 0; i < n; i++) open(`file:///doc${i}.go`, `${'\n'.repeat(i)}package doc${i}`);
	const results = await Promise.all(Array.from({ length: n }, (_, i) => hover(`file:///doc${i}.go`, i)));
	results.forEach((result, i) => {
		assert.equal(result.contents.value, `Hi file:///doc${i}.go from file:///doc${i}.go:${i + 1}:5\npackage doc${i}`);
	});
	assert.equal(configurationRequests, 1 + n);
});

test('cancelling a command stops its handler, which is answered -32800', { timeout }, async () => {
	const source = new CancellationTokenSource();
	const reports = [];
	const progress = conn.onProgress(new ProgressType(), 'count-1', (value) => {
		reports.push(value.kind);
		if (value.kind === 'report' && reports.length === 4) source.cancel(); // begin and 3 reports
	});
	const params = { command: 'example.count', arguments: [1000], workDoneToken: 'count-1' };
	await assert.rejects(conn.sendRequest('workspace/executeCommand', params, source.token), (err) => {
		assert.equal(err.code, -32800, err.message);
		return true;
	});
	progress.dispose();
	const m = await log.waitFor(/msg="count cancelled" step=(\d+) of=1000/);
	assert.ok(Number(m[1]) >= 4 && Number(m[1]) < 1000, m[0]);
	assert.deepEqual(reports.slice(0, 4), ['begin', 'report', 'report', 'report']);
	assert.ok(!reports.includes('end'), 'the count ran to its end');
});

test('a command runs to its end when not cancelled', { timeout }, async () => {
	const reports = [];
	const progress = conn.onProgress(new ProgressType(), 'count-2', (value) => reports.push(value.kind));
	const result = await conn.sendRequest('workspace/executeCommand', {
		command: 'example.count',
		arguments: [3],
		workDoneToken: 'count-2',
	});
	progress.dispose();
	assert.equal(result, 3);
	assert.deepEqual(reports, ['begin', 'report', 'report', 'report', 'end']);
});

test('cancelling a hover cancels its call to the editor too', { timeout }, async () => {
	const source = new CancellationTokenSource();
	const told = new Promise((resolve) => (slow.cancelled = resolve));
	slow.arrived = () => source.cancel(); // once the server waits for the editor
	open('file:///slow.go', 'package slow\n');
	open('file:///b.go', 'package b\n');
	await assert.rejects(hover('file:///slow.go', 0, source.token), (err) => {
		assert.equal(err.code, -32800, err.message);
		return true;
	});
	await told; // the server sent $/cancelRequest for its workspace/configuration
	const result = await hover('file:///b.go', 0);
	assert.equal(result.contents.value, 'Hi file:///b.go from file:///b.go:1:5\npackage b');
});

test('a hover on a document that is not open, or below its last line, gets null', { timeout }, async () => {
	assert.equal(await hover('file:///never-opened.go', 0), null);
	open('file:///short.go', 'one line');
	assert.equal(await hoverLine('file:///short.go', 0), 'one line');
	assert.equal(await hoverLine('file:///short.go', 1), null);
});

test('didChange with ranges in UTF-16 code units, with the whole text, then didClose', { timeout }, async () => {
	const uri = 'file:///edit.go';
	open(uri, 'café 😀 ok\r\nsecond\nthird');
	change(uri, 2, [
		{ range: { start: { line: 0, character: 8 }, end: { line: 0, character: 10 } }, text: 'OK' }, // 😀 is 2 units
		{ range: { start: { line: 1, character: 6 }, end: { line: 2, character: 0 } }, text: ' & ' }, // the changes apply in order
	]);
	assert.equal(await hoverLine(uri, 0, 7), 'café 😀 OK');
	assert.equal(await hoverLine(uri, 1), 'second & third');
	change(uri, 3, [{ range: { start: { line: 0, character: 4 }, end: { line: 0, character: 99 } }, text: '!' }]); // to the end of the line
	assert.equal(await hoverLine(uri, 0), 'café!');
	change(uri, 4, [{ text: 'new\ntext' }]);
	assert.deepEqual(await Promise.all([hoverLine(uri, 0), hoverLine(uri, 1), hoverLine(uri, 2)]), ['new', 'text', null]);
	conn.sendNotification('textDocument/didClose', { textDocument: { uri } });
	assert.equal(await hover(uri, 0), null);
});

// Text is a local model of a document: its text and the edits LSP makes,
// with positions in UTF-16 code units, which JavaScript strings count in.
class Text {
	static breaks = /\r\n|\r|\n/g;

	constructor(text) {
		this.text = text;
	}

	lines() {
		return this.text.split(Text.breaks);
	}

	offset({ line, character }) {
		let start = 0;
		for (let i = 0; i < line; i++) {
			Text.breaks.lastIndex = start;
			const m = Text.breaks.exec(this.text);
			start = m.index + m[0].length;
		}
		return start + character;
	}

	apply({ range, text }) {
		this.text = this.text.slice(0, this.offset(range.start)) + text + this.text.slice(this.offset(range.end));
	}
}

// random returns a seeded generator of integers in [0, n): xorshift32.
function random(seed) {
	let x = seed >>> 0 || 1;
	return (n) => {
		x ^= x << 13;
		x ^= x >>> 17;
		x ^= x << 5;
		return (x >>> 0) % n;
	};
}

test('2,000 didChanges of incremental edits, with hovers sent between them unawaited: each hover sees exactly the edits sent before it', { timeout }, async () => {
	const seed = Number(process.env.LSP_EDITS_SEED) || Date.now() % 1e9;
	const rand = random(seed);
	const uri = 'file:///edits.go';
	const model = new Text(Array.from({ length: 40 }, (_, i) => `line ${i}: é😀 x`).join('\n'));
	const inserts = ['x', 'é', '😀', ' ', 'word', '\n', 'a\nb', '\r\n', '\r', 'ça 😀\n', '日本語', ''];

	// at returns the position of the character on line, moved back out of
	// a surrogate pair: an editor never splits one.
	const at = (line, character) => {
		const code = model.lines()[line].charCodeAt(character - 1);
		return { line, character: code >= 0xd800 && code <= 0xdbff ? character - 1 : character };
	};
	// edit makes a random edit to the model, and returns it: an insertion,
	// or the deletion or replacement of a few characters, some across a
	// line break.
	const edit = () => {
		const lines = model.lines();
		const line = rand(lines.length);
		let start = at(line, rand(lines[line].length + 1));
		let end = start;
		const kind = model.text.length > 3000 ? 3 : rand(5); // 0 to 2 insert, 3 deletes, 4 replaces
		if (kind >= 3) {
			end = line + 1 < lines.length && rand(4) === 0
				? at(line + 1, rand(lines[line + 1].length + 1))
				: at(line, Math.min(start.character + rand(8), lines[line].length));
			if (model.offset(end) < model.offset(start)) [start, end] = [end, start];
		}
		const change = { range: { start, end }, text: kind === 3 ? '' : inserts[rand(inserts.length)] };
		model.apply(change);
		return change;
	};

	// Send everything without waiting: a didChange of one or two edits at a
	// time, and after every tenth a hover, which should see the model's
	// text as it is then, after changes[0..changes.length).
	open(uri, model.text);
	const history = [model.lines()]; // the lines after each didChange
	const hovers = [];
	for (let changes = 1; changes <= 2000; changes++) {
		change(uri, changes + 1, rand(5) ? [edit()] : [edit(), edit()]);
		const lines = model.lines();
		history.push(lines);
		if (changes % 10 === 0) {
			const line = rand(lines.length);
			const got = hoverLine(uri, line, rand(lines[line].length + 1));
			hovers.push({ changes, line, want: lines[line], got });
		}
	}
	for (const h of hovers) h.got = await h.got;

	// A hover that saw another line: after how many didChanges was that the
	// line? The nearest count either way.
	const wrong = hovers.filter((h) => h.got !== h.want);
	const fewer = [];
	const more = [];
	for (const h of wrong) {
		for (let d = 1; d < history.length; d++) {
			if (history[h.changes - d]?.[h.line] === h.got) {
				fewer.push(d);
				break;
			}
			if (history[h.changes + d]?.[h.line] === h.got) {
				more.push(d);
				break;
			}
		}
	}
	assert.equal(
		wrong.length,
		0,
		`seed ${seed}: ${wrong.length} of ${hovers.length} hovers saw another line than the one after the didChanges sent before them: ` +
			`${fewer.length} as if up to ${Math.max(0, ...fewer)} fewer had been handled, ${more.length} as if up to ${Math.max(0, ...more)} more, ` +
			`${wrong.length - fewer.length - more.length} a line of no text sent; the first: ${JSON.stringify(wrong[0])}`,
	);

	// And the whole text, line by line, once every edit is in.
	const lines = model.lines();
	const got = await Promise.all([...lines.map((_, i) => hoverLine(uri, i)), hoverLine(uri, lines.length)]);
	assert.deepEqual(got, [...lines, null], `seed ${seed}`);
});

test('shutdown, then exit: requests are refused in between, and the server exits 0', { timeout }, async () => {
	assert.equal(await conn.sendRequest('shutdown'), null);
	await assert.rejects(hover('file:///a.go', 0), (err) => {
		assert.equal(err.code, -32600, err.message);
		return true;
	});
	await conn.sendNotification('exit');
	assert.deepEqual(await exited, { code: 0, signal: null });
});

test('exit without shutdown: the server exits 1', { timeout }, async () => {
	const other = start();
	other.conn.listen();
	await other.conn.sendRequest('initialize', initializeParams);
	await other.conn.sendNotification('exit');
	assert.deepEqual(await other.exited, { code: 1, signal: null });
});
