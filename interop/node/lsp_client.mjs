// vscode-jsonrpc, the JSON-RPC layer of VS Code's language clients, drives
// examples/lsp-server over its default transport: Content-Length framing
// on the child's standard input and output. Usage:
// node lsp_client.mjs path/to/lsp-server
//
// The checks run in order on one session; the server's standard error is
// copied to ours, so that a failure shows its logs.
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
	assert.deepEqual(result.capabilities.executeCommandProvider, { commands: ['example.count'] });
	await conn.sendNotification('initialized', {});
});

function hover(uri, line, token) {
	const params = { textDocument: { uri }, position: { line, character: 4 } };
	return token ? conn.sendRequest('textDocument/hover', params, token) : conn.sendRequest('textDocument/hover', params);
}

test("a hover's call to workspace/configuration is answered by the editor", { timeout }, async () => {
	const result = await hover('file:///a.go', 2);
	assert.deepEqual(result.contents, { kind: 'plaintext', value: 'Hi file:///a.go from file:///a.go:3:5' });
	assert.equal(configurationRequests, 1);
});

test('500 concurrent hovers, each calling the editor back', { timeout }, async () => {
	const n = 500;
	const results = await Promise.all(Array.from({ length: n }, (_, i) => hover(`file:///doc${i}.go`, i)));
	results.forEach((result, i) => {
		assert.equal(result.contents.value, `Hi file:///doc${i}.go from file:///doc${i}.go:${i + 1}:5`);
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
	await assert.rejects(hover('file:///slow.go', 0, source.token), (err) => {
		assert.equal(err.code, -32800, err.message);
		return true;
	});
	await told; // the server sent $/cancelRequest for its workspace/configuration
	const result = await hover('file:///b.go', 0);
	assert.equal(result.contents.value, 'Hi file:///b.go from file:///b.go:1:5');
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
