// otlp-wire-check.js - read back the two encodings otlpwire wrote of one
// document with the encoder's edge cases (tests/report/otlpwire.c), with
// protobufjs and the OpenTelemetry .proto files:
//   - the protobuf decodes and encodes back to the very same bytes
//     (valid UTF-8, fields in order, nothing a decoder would change);
//   - the OTLP/JSON, converted through the same message, encodes to the
//     same bytes as well: both encodings say the same thing;
//   - the values: bytes that were not UTF-8 as U+FFFD, escapes, the
//     20,000-byte value, the integers, false, parents, events, status.
//
//   node otlp-wire-check.js PROTO_DIR PB JSON
'use strict';
const fs = require('fs');
const path = require('path');
const protobuf = require('protobufjs');

const [protoDir, pbFile, jsonFile] = process.argv.slice(2);
const root = new protobuf.Root();
root.resolvePath = (origin, target) => path.join(protoDir, target);
root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
root.resolveAll();
const Req = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');

const problems = [];
function expect(what, got, want) {
	if (JSON.stringify(got) !== JSON.stringify(want))
		problems.push(what + ': ' + JSON.stringify(got) + ', not ' + JSON.stringify(want));
}

const pb = fs.readFileSync(pbFile);
const msg = Req.decode(pb);
expect('protobuf encodes back to itself', Buffer.compare(Buffer.from(Req.encode(msg).finish()), pb), 0);

const json = JSON.parse(fs.readFileSync(jsonFile, 'utf8'));
for (const rs of json.resourceSpans)
	for (const ss of rs.scopeSpans)
		for (const s of ss.spans)
			for (const k of ['traceId', 'spanId', 'parentSpanId'])
				if (s[k] !== undefined)
					s[k] = Buffer.from(s[k], 'hex').toString('base64');
const err = Req.verify(Req.fromObject(json));
if (err)
	problems.push('the JSON does not verify: ' + err);
const fromJson = Buffer.from(Req.encode(Req.fromObject(json)).finish());
expect('the JSON encodes to the protobuf bytes', Buffer.compare(fromJson, pb), 0);

const o = Req.toObject(msg, { longs: String, enums: Number, bytes: String });
const hex = (b64) => Buffer.from(b64, 'base64').toString('hex');
const av = (kv) => {
	const v = kv.value;
	return v.stringValue !== undefined ? v.stringValue :
	       v.intValue !== undefined ? v.intValue : v.boolValue;
};
const attrs = (l) => Object.fromEntries((l || []).map((kv) => [kv.key, av(kv)]));
expect('resources', o.resourceSpans.length, 2);
const r0 = o.resourceSpans[0];
expect('resource', attrs(r0.resource.attributes),
	{ 'service.name': 'caf\u00e9 \ufffd\ufffd', 'process.pid': '4242' });
expect('scope', r0.scopeSpans[0].scope, { name: 'borderpatrol', version: '0.1.0' });
const [a, b] = r0.scopeSpans[0].spans;
const c = o.resourceSpans[1].scopeSpans[0].spans[0];
expect('trace id', hex(a.traceId), '0123456789abcdef000000000000002a');
expect('span ids', [hex(a.spanId), hex(b.spanId), hex(b.parentSpanId),
	hex(c.spanId), hex(c.parentSpanId)], ['8000000000000001', '0000000000000002',
	'8000000000000001', '0000000000000003', '0000000000000002']);
expect('a root has no parent', a.parentSpanId, undefined);
expect('name', a.name, 'GET /a\ufffd\ufffd');
expect('kinds', [a.kind, b.kind, c.kind], [2, 3, 3]);
expect('times', [a.startTimeUnixNano, a.endTimeUnixNano, c.startTimeUnixNano,
	c.endTimeUnixNano], ['1700000000000000000', '1700000000123456789', '6', '7']);
const big = Array.from({ length: 20000 }, (_, i) => String.fromCharCode(97 + i % 26)).join('');
expect('attributes', attrs(a.attributes), {
	'url.path': '/x?"q"\\\n\t\u0001<', 'bad\ufffdkey': 'v', big, empty: '',
	neg: '-5', min: '-9223372036854775808', max: '9223372036854775807',
	no: false, yes: true });
expect('events', a.events.map((e) => [e.timeUnixNano, e.name, attrs(e.attributes)]),
	[['1700000000000000001', 'file.open', { 'file.path': '/etc/\ufffd\ufffd\ufffd' }],
	 ['1700000000000000002', 'file.open', {}]]);
expect('dropped events', a.droppedEventsCount, 3);
expect('status', a.status, { message: 'HTTP 500 \ufffd', code: 2 });
expect('no status', [b.status, c.status, b.attributes, b.events], [undefined, undefined, undefined, undefined]);
if (problems.length) {
	for (const p of problems)
		console.error('otlp-wire-check: ' + p);
	process.exit(1);
}
console.log('otlp-wire-check: protobuf and OTLP/JSON encode the same document; not-UTF-8 bytes as U+FFFD, escapes, a 20,000-byte value, int64 extremes, false, events, status');
