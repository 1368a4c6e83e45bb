// Checks examples/openrpc over HTTP with the OpenRPC tools. Usage:
// node openrpc_client.mjs URL, where URL is what the server printed
// (openrpc -http ADDR).
//
// rpc.discover's document must validate against the OpenRPC meta-schema
// (@open-rpc/meta-schema, with ajv and the JSON Schema meta-schema it
// refers to, @json-schema-tools/meta-schema), and @open-rpc/test-coverage, with
// the rule that calls each method with the params of the document's own
// examples, must find every result equal to its example's. test-coverage
// cannot send notifications or expect errors, so the notifications'
// examples are POSTed here as notifications (202, no body), and each
// method documented by its errors alone is called and must answer with
// its first error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import metaSchemaModule from '@open-rpc/meta-schema';
import jsonSchemaMetaSchemaModule from '@json-schema-tools/meta-schema';
import coverageModule from '@open-rpc/test-coverage';
import examplesRuleModule from '@open-rpc/test-coverage/build/rules/examples-rule.js';

const url = process.argv[2];
assert.ok(url, 'usage: node openrpc_client.mjs URL');
const timeout = 20_000;

const coverage = coverageModule.default;
const ExamplesRule = examplesRuleModule.default;

let id = 0;
async function post(message) {
	const response = await fetch(url, {
		method: 'POST',
		headers: { 'Content-Type': 'application/json' },
		body: JSON.stringify({ jsonrpc: '2.0', ...message }),
	});
	const text = await response.text();
	return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}
const call = (method, params) => post({ id: ++id, method, ...(params === undefined ? {} : { params }) });

let doc;

test('rpc.discover answers an OpenRPC 1.3 document', { timeout }, async () => {
	const { status, body } = await call('rpc.discover');
	assert.equal(status, 200);
	assert.equal(body.error, undefined);
	doc = body.result;
	assert.equal(doc.openrpc, '1.3.2');
	assert.equal(doc.servers[0].url, url);
	assert.ok(doc.methods.length >= 13, `${doc.methods.length} methods`);
});

test('the document validates against the OpenRPC meta-schema', { timeout }, () => {
	// The meta-schema refers to json-schema.tools' meta-schema for the
	// schemas in the document; each names itself as its $schema, which
	// ajv does not know, so that is dropped: both are draft-07, ajv's
	// default.
	const { $schema, ...metaSchema } = metaSchemaModule.default;
	const { $schema: _, ...jsonSchemaMetaSchema } = jsonSchemaMetaSchemaModule.default ?? jsonSchemaMetaSchemaModule;
	// It is referred to with and without the slash that ends its $id.
	// Formats (uri, regex) are not checked: ajv needs ajv-formats for them.
	const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
	ajv.addSchema(jsonSchemaMetaSchema);
	const { $id, ...unnamed } = jsonSchemaMetaSchema;
	ajv.addSchema(unnamed, $id.replace(/\/$/, ''));
	const validate = ajv.compile(metaSchema);
	assert.ok(validate(doc), JSON.stringify(validate.errors, null, 2));
	// and a document that breaks it does not
	assert.equal(validate({ ...doc, methods: [{ name: 'x' }] }), false);
});

test('@open-rpc/test-coverage: every example call gives its result', { timeout }, async () => {
	const tested = doc.methods.filter((m) => m.result && m.examples?.length);
	const skip = doc.methods.filter((m) => !tested.includes(m)).map((m) => m.name);
	const calls = await coverage({
		openrpcDocument: doc,
		transport: 'http',
		reporters: ['empty'],
		rules: [new ExamplesRule()],
		skip,
	});
	const failed = calls.filter((c) => !c.valid);
	assert.deepEqual(failed.map((c) => `${c.methodName}: ${c.reason ?? c.requestError}`), []);
	const want = tested.reduce((n, m) => n + m.examples.length, 0);
	assert.equal(calls.length, want);
	for (const c of calls) assert.deepEqual(c.result, c.expectedResult, c.methodName);
	assert.deepEqual([...new Set(calls.map((c) => c.methodName))].sort(), tested.map((m) => m.name).sort());
});

test('notifications: each example is accepted with no answer', { timeout }, async () => {
	const notifications = doc.methods.filter((m) => !m.result);
	assert.deepEqual(notifications.map((m) => m.name), ['update', 'notify_hello', 'notify_sum']);
	for (const m of notifications) {
		assert.ok(m.examples.length > 0, m.name);
		for (const ex of m.examples) {
			const { status, body } = await post({ method: m.name, params: ex.params.map((p) => p.value) });
			assert.equal(status, 202, m.name);
			assert.equal(body, undefined, m.name);
		}
	}
});

test('methods documented by their errors answer with them', { timeout }, async () => {
	const failing = doc.methods.filter((m) => m.result && !m.examples?.length);
	assert.deepEqual(failing.map((m) => m.name), ['fail', 'internal', 'panic']);
	for (const m of failing) {
		const { body } = await call(m.name);
		assert.equal(body.error?.code, m.errors[0].code, m.name);
		assert.equal(body.error.message, m.errors[0].message, m.name);
		if (m.errors[0].data !== undefined) assert.deepEqual(body.error.data, m.errors[0].data, m.name);
	}
});

test('unknown rpc. methods are not found', { timeout }, async () => {
	const { body } = await call('rpc.other');
	assert.equal(body.error?.code, -32601);
});
