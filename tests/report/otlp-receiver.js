// otlp-receiver.js - a small OTLP/HTTP trace receiver for the push tests
// (tests/report/push.sh), decoding with protobufjs and the OpenTelemetry
// .proto files, independently of bp-reconstruct's encoder.
//
//   node otlp-receiver.js PROTO_DIR DIR [--fail N] [--fail-status CODE]
//        [--retry-after SECONDS] [--delay MS] [--chunked 1] [--close 1]
//        [--partial N] [--tls DIR]
//
// Listens on 127.0.0.1, port chosen by the system, written to DIR/port.
// POST /v1/traces: the first N requests are answered CODE (default 503,
// with Retry-After when given) without being read as traces; after that
// the body is gunzipped when Content-Encoding is gzip, decoded as an
// ExportTraceServiceRequest (application/x-protobuf: protobuf, which must
// encode back to the same bytes;
// application/json: the OTLP/JSON mapping, hex ids, converted through the
// same message), and written back as one line of OTLP/JSON to
// DIR/batches.jsonl.  DIR/requests.jsonl gets a line per HTTP request
// (status, headers, spans, connection).  A body that does not decode is
// answered 400 and logged with the reason.  --delay: every answer waits
// MS milliseconds; --chunked: answers without Content-Length (chunked);
// --close: answers with Connection: close; --partial: the first batch
// accepted is answered with an OTLP partial success rejecting N spans;
// --tls: HTTPS with DIR/cert.pem and DIR/key.pem.
'use strict';
const fs = require('fs');
const http = require('http');
const https = require('https');
const path = require('path');
const zlib = require('zlib');
const protobuf = require('protobufjs');

const args = process.argv.slice(2);
if (args.length < 2) {
	console.error('usage: node otlp-receiver.js PROTO_DIR DIR [--fail N] [--fail-status CODE] [--retry-after S]');
	process.exit(2);
}
const protoDir = args[0], dir = args[1];
const opt = { fail: 0, 'fail-status': 503, 'retry-after': null, delay: 0,
	chunked: 0, close: 0, partial: 0, tls: null };
for (let i = 2; i + 1 < args.length; i += 2)
	opt[args[i].replace(/^--/, '')] = args[i] === '--tls' ? args[i + 1] : Number(args[i + 1]);

const root = new protobuf.Root();
root.resolvePath = (origin, target) => path.join(protoDir, target);
root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
root.resolveAll();
const Req = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
const Resp = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');

const ids = new Set(['traceId', 'spanId', 'parentSpanId']);
// Rewrite the ids of every span from ENC to DEC ('hex' <-> 'base64').
function convertIds(msg, from, to) {
	for (const rs of msg.resourceSpans || [])
		for (const ss of rs.scopeSpans || [])
			for (const s of ss.spans || [])
				for (const k of ids)
					if (typeof s[k] === 'string')
						s[k] = Buffer.from(s[k], from).toString(to);
	return msg;
}

let n = 0, partialDone = false;
const log = (f, o) => fs.appendFileSync(path.join(dir, f), JSON.stringify(o) + '\n');

const handler = (req, res) => {
	const chunks = [];
	req.on('data', (c) => chunks.push(c));
	req.on('end', () => {
		n++;
		const rec = {
			n, method: req.method, url: req.url, httpVersion: req.httpVersion,
			tls: !!req.socket.encrypted,
			headers: req.headers, conn: req.socket.remotePort,
			bytes: chunks.reduce((a, c) => a + c.length, 0),
		};
		const answer = (status, type, body, extra) => {
			rec.status = status;
			log('requests.jsonl', rec);
			const h = Object.assign({ 'Content-Type': type }, extra || {});
			if (!opt.chunked)
				h['Content-Length'] = body.length;
			if (opt.close)
				h['Connection'] = 'close';
			setTimeout(() => {
				res.writeHead(status, h);
				if (opt.chunked && body.length > 1) {
					res.write(body.subarray(0, 1));
					res.end(body.subarray(1));
				} else {
					res.end(body);
				}
			}, opt.delay);
		};
		if (n <= opt.fail) {
			const extra = opt['retry-after'] !== null ?
				{ 'Retry-After': String(opt['retry-after']) } : {};
			answer(opt['fail-status'], 'text/plain', Buffer.from('not now (test)\n'), extra);
			return;
		}
		let body = Buffer.concat(chunks), msg;
		try {
			if (req.method !== 'POST' || req.url !== '/v1/traces')
				throw new Error('not POST /v1/traces: ' + req.method + ' ' + req.url);
			const enc = req.headers['content-encoding'];
			if (enc === 'gzip')
				body = zlib.gunzipSync(body);
			else if (enc)
				throw new Error('unknown Content-Encoding ' + enc);
			const type = req.headers['content-type'];
			if (type === 'application/x-protobuf') {
				msg = Req.decode(body);
				// strict: protobufjs encodes the message back to the
				// very same bytes (fields in order, no defaults written,
				// strings valid UTF-8: a bad byte would come back as
				// U+FFFD and differ)
				if (Buffer.compare(Buffer.from(Req.encode(msg).finish()), body))
					throw new Error('the protobuf does not encode back to the same bytes');
			} else if (type === 'application/json') {
				const o = convertIds(JSON.parse(body.toString('utf8')), 'hex', 'base64');
				const err = Req.verify(Req.fromObject(o));
				if (err)
					throw new Error('JSON does not verify: ' + err);
				msg = Req.decode(Req.encode(Req.fromObject(o)).finish());
			} else {
				throw new Error('Content-Type ' + type);
			}
		} catch (e) {
			rec.error = String(e.message || e);
			answer(400, 'text/plain', Buffer.from(rec.error + '\n'));
			return;
		}
		const obj = convertIds(Req.toObject(msg, { longs: String, enums: Number,
			bytes: String }), 'base64', 'hex');
		rec.spans = 0;
		for (const rs of obj.resourceSpans || [])
			for (const ss of rs.scopeSpans || [])
				rec.spans += (ss.spans || []).length;
		log('batches.jsonl', obj);
		const json = req.headers['content-type'] === 'application/json';
		if (opt.partial && !partialDone) {
			// ExportTraceServiceResponse { partial_success = 1 {
			// rejected_spans = 1; error_message = 2 } }, by hand: the
			// .proto files of the npm package predate it
			partialDone = true;
			rec.rejected = opt.partial;
			const m = Buffer.from('spans too old (test)');
			const inner = Buffer.concat([Buffer.from([0x08, opt.partial]),
				Buffer.from([0x12, m.length]), m]);
			answer(200, json ? 'application/json' : 'application/x-protobuf', json ?
				Buffer.from(JSON.stringify({ partialSuccess: {
					rejectedSpans: String(opt.partial),
					errorMessage: m.toString() } })) :
				Buffer.concat([Buffer.from([0x0a, inner.length]), inner]));
			return;
		}
		if (json)
			answer(200, 'application/json', Buffer.from('{}'));
		else
			answer(200, 'application/x-protobuf', Buffer.from(Resp.encode({}).finish()));
	});
};
const server = opt.tls ?
	https.createServer({ cert: fs.readFileSync(path.join(opt.tls, 'cert.pem')),
		key: fs.readFileSync(path.join(opt.tls, 'key.pem')) }, handler) :
	http.createServer(handler);
server.on('tlsClientError', (e) => log('tls-errors.jsonl', { error: String(e.message || e) }));
server.listen(0, '127.0.0.1', () => {
	fs.writeFileSync(path.join(dir, 'port.tmp'), String(server.address().port));
	fs.renameSync(path.join(dir, 'port.tmp'), path.join(dir, 'port'));
});
process.on('SIGTERM', () => process.exit(0));
