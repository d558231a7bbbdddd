// otlp-check.js - check an OTLP/JSON file (bp-reconstruct --otlp) against
// the OpenTelemetry protobuf definitions, independently of the exporter.
//
//   node otlp-check.js PROTO_DIR FILE [--traces N] [--spans N]
//
// PROTO_DIR holds opentelemetry/proto/... (.proto files from an npm
// package); protobufjs comes from NODE_PATH.  Every line of FILE must be
// one TracesData object in the OTLP/JSON encoding (the protobuf JSON
// mapping with lowerCamelCase names, trace and span ids as hex, enums as
// integers, 64-bit integers as decimal strings):
//  - every key is a field of its message type, every value has the
//    field's JSON type, AnyValue sets exactly one of its oneof;
//  - the object converts to the protobuf message, verifies, and survives
//    a binary encode/decode round trip with the same ids and times;
//  - one trace per line, span ids unique, exactly one root, every parent
//    in the trace, kind SERVER or CLIENT, start <= end, service.name on
//    every resource, the attributes the semantic conventions ask for.
// Prints one line of counts; exits 1 with the first problems found.
'use strict';
const fs = require('fs');
const path = require('path');
const protobuf = require('protobufjs');

const args = process.argv.slice(2);
if (args.length < 2) {
	console.error('usage: node otlp-check.js PROTO_DIR FILE [--traces N] [--spans N]');
	process.exit(2);
}
const protoDir = args[0], file = args[1];
const want = {};
for (let i = 2; i + 1 < args.length; i += 2)
	want[args[i].replace(/^--/, '')] = Number(args[i + 1]);

const root = new protobuf.Root();
root.resolvePath = (origin, target) => path.join(protoDir, target);
root.loadSync('opentelemetry/proto/trace/v1/trace.proto');
root.resolveAll();
const TracesData = root.lookupType('opentelemetry.proto.trace.v1.TracesData');

const problems = [];
function fail(where, what) {
	if (problems.length < 20)
		problems.push(where + ': ' + what);
}

const int64Types = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);
const int32Types = new Set(['int32', 'uint32', 'sint32', 'fixed32', 'sfixed32']);
const hexIds = { traceId: 16, spanId: 8, parentSpanId: 8 };

// Check VALUE against TYPE (a protobufjs Type) and return the object
// protobufjs's fromObject accepts (hex ids as bytes).
function check(value, type, where) {
	if (value === null || typeof value !== 'object' || Array.isArray(value)) {
		fail(where, 'expected an object for ' + type.name);
		return {};
	}
	const out = {};
	for (const key of Object.keys(value)) {
		const field = type.fields[key];
		if (!field) {
			fail(where, 'unknown field "' + key + '" in ' + type.fullName);
			continue;
		}
		field.resolve();
		const v = value[key];
		const w = where + '.' + key;
		if (field.repeated) {
			if (!Array.isArray(v)) {
				fail(w, 'expected an array');
				continue;
			}
			out[key] = v.map((e, i) => checkOne(e, field, key, w + '[' + i + ']'));
		} else {
			out[key] = checkOne(v, field, key, w);
		}
	}
	for (const oneof of type.oneofsArray) {
		const set = oneof.oneof.filter((n) => value[n] !== undefined);
		if (type.name === 'AnyValue' && set.length !== 1)
			fail(where, 'AnyValue must set exactly one of ' + oneof.oneof.join(', '));
		else if (set.length > 1)
			fail(where, 'more than one of oneof ' + oneof.name);
	}
	return out;
}

function checkOne(v, field, key, w) {
	const t = field.type;
	if (field.resolvedType instanceof protobuf.Type)
		return check(v, field.resolvedType, w);
	if (field.resolvedType instanceof protobuf.Enum) {
		if (!Number.isInteger(v) || !Object.values(field.resolvedType.values).includes(v))
			fail(w, 'enum ' + field.resolvedType.name + ' must be one of its integer values, got ' + JSON.stringify(v));
		return v;
	}
	if (t === 'string') {
		if (typeof v !== 'string')
			fail(w, 'expected a string');
		return v;
	}
	if (t === 'bool') {
		if (typeof v !== 'boolean')
			fail(w, 'expected true or false');
		return v;
	}
	if (int64Types.has(t)) {
		const ok = (typeof v === 'string' && /^-?[0-9]+$/.test(v)) ||
			Number.isSafeInteger(v);
		if (!ok || (t[0] !== 's' && t !== 'int64' && String(v)[0] === '-'))
			fail(w, t + ' must be a decimal string (or a safe integer), got ' + JSON.stringify(v));
		return String(v);
	}
	if (int32Types.has(t)) {
		if (!Number.isInteger(v))
			fail(w, t + ' must be an integer');
		return v;
	}
	if (t === 'double' || t === 'float') {
		if (typeof v !== 'number')
			fail(w, t + ' must be a number');
		return v;
	}
	if (t === 'bytes') {
		if (hexIds[key] !== undefined) {
			const n = hexIds[key];
			if (typeof v !== 'string' || !new RegExp('^[0-9a-f]{' + 2 * n + '}$').test(v))
				fail(w, key + ' must be ' + 2 * n + ' lowercase hex digits, got ' + JSON.stringify(v));
			else if (/^0+$/.test(v))
				fail(w, key + ' must not be all zero');
			return Buffer.from(String(v), 'hex');
		}
		if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*=*$/.test(v))
			fail(w, 'bytes must be base64');
		return Buffer.from(String(v), 'base64');
	}
	fail(w, 'unexpected field type ' + t);
	return v;
}

function attrs(list) {
	const m = new Map();
	for (const a of list || []) {
		if (m.has(a.key))
			fail('attribute ' + a.key, 'appears twice');
		const v = a.value || {};
		m.set(a.key, v.stringValue !== undefined ? v.stringValue :
			v.intValue !== undefined ? Number(v.intValue) :
			v.boolValue !== undefined ? v.boolValue : v.doubleValue);
	}
	return m;
}

const lines = fs.readFileSync(file, 'utf8').split('\n');
if (lines[lines.length - 1] === '')
	lines.pop();
let traces = 0, spans = 0, errorSpans = 0;
const allTraceIds = new Set();
const kinds = { 2: 0, 3: 0 };
lines.forEach((line, i) => {
	const where = file + ':' + (i + 1);
	let obj;
	try {
		obj = JSON.parse(line);
	} catch (e) {
		fail(where, 'not JSON: ' + e.message);
		return;
	}
	const conv = check(obj, TracesData, where);
	const msg = TracesData.fromObject(conv);
	const err = TracesData.verify(msg);
	if (err)
		fail(where, 'protobuf verify: ' + err);
	const back = TracesData.decode(TracesData.encode(msg).finish());
	const rt = TracesData.toObject(back, { longs: String, bytes: String });

	const ids = new Map();
	let traceId = null, roots = 0, n = 0;
	(obj.resourceSpans || []).forEach((rs, r) => {
		const ra = attrs(rs.resource && rs.resource.attributes);
		if (!ra.get('service.name'))
			fail(where + ' resource ' + r, 'no service.name');
		if (!ra.get('host.name') || !ra.get('process.pid'))
			fail(where + ' resource ' + r, 'no host.name or process.pid');
		(rs.scopeSpans || []).forEach((ss, k) => {
			(ss.spans || []).forEach((sp, j) => {
				const sw = where + ' span ' + sp.spanId;
				n++;
				if (traceId === null)
					traceId = sp.traceId;
				else if (sp.traceId !== traceId)
					fail(sw, 'a second trace id in one line');
				if (ids.has(sp.spanId))
					fail(sw, 'span id used twice');
				ids.set(sp.spanId, sp);
				if (sp.kind !== 2 && sp.kind !== 3)
					fail(sw, 'kind must be SERVER (2) or CLIENT (3)');
				kinds[sp.kind]++;
				if (BigInt(sp.startTimeUnixNano) > BigInt(sp.endTimeUnixNano))
					fail(sw, 'ends before it starts');
				if (BigInt(sp.startTimeUnixNano) < 1000000000000000000n)
					fail(sw, 'start is not Unix-epoch nanoseconds');
				const a = attrs(sp.attributes);
				const proto = a.get('borderpatrol.protocol');
				if (proto === 'http' && !a.get('http.request.method'))
					fail(sw, 'http span without http.request.method');
				if (proto === 'http' && sp.kind === 2 && a.get('url.path') === undefined)
					fail(sw, 'http server span without url.path');
				if (proto === 'postgresql' && (a.get('db.system.name') !== 'postgresql' || !a.get('db.query.text')))
					fail(sw, 'postgresql span without db.system.name or db.query.text');
				if (sp.status && sp.status.code === 2)
					errorSpans++;
				// the round trip kept it
				const b = rt.resourceSpans[r].scopeSpans[k].spans[j];
				if (Buffer.from(b.spanId, 'base64').toString('hex') !== sp.spanId ||
				    Buffer.from(b.traceId, 'base64').toString('hex') !== sp.traceId ||
				    b.startTimeUnixNano !== sp.startTimeUnixNano ||
				    b.endTimeUnixNano !== sp.endTimeUnixNano ||
				    b.attributes.length !== (sp.attributes || []).length)
					fail(sw, 'changed by a protobuf encode/decode round trip');
			});
		});
	});
	for (const sp of ids.values()) {
		if (!sp.parentSpanId)
			roots++;
		else if (!ids.has(sp.parentSpanId))
			fail(where + ' span ' + sp.spanId, 'parent ' + sp.parentSpanId + ' is not in the trace');
	}
	if (n && roots !== 1)
		fail(where, roots + ' root spans, wanted 1');
	if (allTraceIds.has(traceId))
		fail(where, 'trace id of an earlier line');
	allTraceIds.add(traceId);
	traces++;
	spans += n;
});
if (want.traces !== undefined && traces !== want.traces)
	fail(file, traces + ' traces, wanted ' + want.traces);
if (want.spans !== undefined && spans !== want.spans)
	fail(file, spans + ' spans, wanted ' + want.spans);
if (want.errors !== undefined && errorSpans !== want.errors)
	fail(file, errorSpans + ' spans with status ERROR, wanted ' + want.errors);
if (problems.length) {
	console.error('otlp-check: ' + problems.join('\notlp-check: '));
	process.exit(1);
}
console.log('otlp-check: ' + file + ': ' + traces + ' traces, ' + spans +
	' spans (' + kinds[2] + ' server, ' + kinds[3] + ' client), ' +
	errorSpans + ' with status ERROR: valid OTLP/JSON');
