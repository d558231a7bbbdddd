#!/usr/bin/python3
"""otlp-push-check.py - what an OTLP receiver got, against the paths database.

    otlp-push-check.py DB BATCHES [--file OTLP.json] [--missing N] [--extra N]
                       [--revised-apart [--revised-whole]] [--resent-identical]

BATCHES is the receiver's batches.jsonl (tests/report/otlp-receiver.js:
each line an ExportTraceServiceRequest decoded by protobufjs, written as
OTLP/JSON).  Checks, for every span of a request in DB:
  - it arrived exactly once (no span id twice, no span that is not in DB);
    with --missing N, exactly N spans of DB did not arrive; with --extra N,
    exactly N spans arrived that DB no longer has (bp-reconstruct --follow
    withdrew their requests);
  - its ids: one trace id per request ending in the request id, distinct
    traces for distinct requests, its parentSpanId the span id the
    parent span arrived with (none for a root);
  - name, kind, start and end times, the attributes the semantic
    conventions ask for (http.request.method, url.path, db.system.name,
    db.query.text, db.namespace: the database its connection's start-up
    message named, server.address/client.address ...), bp.certainty and
    bp.certainty_reason, borderpatrol.request_id and span_id, and the
    resource (service.name, host.name, process.pid, process.parent_pid,
    process.executable.path, process.command_line, borderpatrol.process_id);
  - with --revised-apart, the requests bp-reconstruct --follow wrote
    again after their first time (follow_requests.revised > 0: what the
    receiver got may be their first version, which OTLP cannot take
    back) are set aside and counted: neither their spans in DB nor the
    spans that arrived for them are compared; with --revised-whole, the
    spans that arrived for each of them must still be a whole version:
    as many of each kind and name as DB has (a request pushed before its
    late spans came, with nginx's spans and no php-fpm part, fails it;
    one whose times moved with a new clock estimate does not);
  - with --resent-identical, a span that arrived twice, both copies the
    same, is counted, not failed: bp-reconstruct --follow SIGKILLed
    between a push and the transaction that marks it sends that push
    again when it starts again (at least once: docs/reconstruct.md,
    "Live"); copies that differ, or a third, still fail;
  - with --file, the spans are exactly those of bp-reconstruct --otlp
    (same ids, attributes, events, status and resources).
Prints one line of counts; exits 1 with the first problems.
"""
import json
import os
import sqlite3
import sys

problems = []


def fail(msg):
    if len(problems) < 20:
        problems.append(msg)


def value(v):
    for k in ('stringValue', 'intValue', 'boolValue', 'doubleValue'):
        if k in v:
            return str(v[k]).lower() if k == 'boolValue' else str(v[k])
    return json.dumps(v, sort_keys=True)


def attrs(lst):
    out = {}
    for kv in lst or []:
        if kv['key'] in out:
            fail('attribute %s twice' % kv['key'])
        out[kv['key']] = value(kv.get('value', {}))
    return out


resent = {}                 # span id -> its request id


def _adiff(a, b):
    """The attributes of a that b lacks or has otherwise."""
    return {k: v for k, v in a.items() if b.get(k) != v}


def spans_of(docs, where, identical_ok=False):
    """Span id -> canonical span, from OTLP/JSON documents."""
    out = {}
    for doc in docs:
        for rs in doc.get('resourceSpans', []):
            res = attrs(rs.get('resource', {}).get('attributes'))
            for ss in rs.get('scopeSpans', []):
                scope = ss.get('scope', {})
                for s in ss.get('spans', []):
                    sid = s.get('spanId')
                    c = {
                        'traceId': s.get('traceId'),
                        'parentSpanId': s.get('parentSpanId') or '',
                        'name': s.get('name'),
                        'kind': int(s.get('kind', 0)),
                        'start': str(s.get('startTimeUnixNano')),
                        'end': str(s.get('endTimeUnixNano')),
                        'attributes': attrs(s.get('attributes')),
                        'events': [(str(e.get('timeUnixNano')), e.get('name'),
                                    attrs(e.get('attributes')))
                                   for e in s.get('events', [])],
                        'droppedEvents': int(s.get('droppedEventsCount', 0)),
                        'status': (int(s.get('status', {}).get('code', 0)),
                                   s.get('status', {}).get('message', '')),
                        'resource': res,
                        'scope': (scope.get('name'), scope.get('version')),
                    }
                    if sid in out:
                        if identical_ok and out[sid] == c and sid not in resent:
                            resent[sid] = c['attributes'].get('borderpatrol.request_id')
                        elif out[sid] != c:
                            diff = sorted(k for k in c if c[k] != out[sid][k])
                            fail('%s: span %s arrived twice, the copies '
                                 'differing in %s (request %s; first %s, then %s)'
                                 % (where, sid, ', '.join(diff),
                                    c['attributes'].get('borderpatrol.request_id'),
                                    {k: out[sid][k] for k in diff if k != 'attributes'}
                                    or _adiff(out[sid]['attributes'], c['attributes']),
                                    {k: c[k] for k in diff if k != 'attributes'}
                                    or _adiff(c['attributes'], out[sid]['attributes'])))
                        elif sid in resent:
                            fail('%s: span %s arrived a third time' % (where, sid))
                        else:
                            fail('%s: span %s arrived twice' % (where, sid))
                    out[sid] = c
    return out


def main():
    args = sys.argv[1:]
    db, batches = args[0], args[1]
    file = None
    missing = 0
    extra = 0
    apart = False
    whole = False
    identical_ok = False
    i = 2
    while i < len(args):
        if args[i] == '--resent-identical':
            identical_ok = True
            i += 1
            continue
        if args[i] in ('--revised-apart', '--revised-whole'):
            apart = True
            whole = whole or args[i] == '--revised-whole'
            i += 1
            continue
        if args[i] == '--file':
            file = args[i + 1]
        elif args[i] == '--missing':
            missing = int(args[i + 1])
        elif args[i] == '--extra':
            extra = int(args[i + 1])
        i += 2
    with open(batches) as f:
        got = spans_of([json.loads(l) for l in f if l.strip()], 'receiver',
                       identical_ok)
    h = sqlite3.connect('file:%s?mode=ro' % db, uri=True)
    rows = h.execute(
        "SELECT s.span_id, s.request_id, s.parent_span_id, s.kind, s.protocol,"
        " s.name, s.target, s.status, s.host, s.pid, s.exe, s.peer, s.start_ns,"
        " s.end_ns, r.end_ns, s.certainty, s.certainty_reason,"
        " (SELECT value FROM attrs a WHERE a.span_id = s.span_id AND a.key = 'method'),"
        " (SELECT value FROM attrs a WHERE a.span_id = s.span_id AND a.key = 'host'),"
        " (SELECT MIN(a.value) FROM attrs a JOIN messages m ON m.message_id = a.message_id"
        "  WHERE a.key = 'database' AND m.channel_id = s.channel_id),"
        " s.process_id, p.ppid, p.cmdline"
        " FROM spans s JOIN requests r ON r.request_id = s.request_id"
        " LEFT JOIN processes p ON p.process_id = s.process_id").fetchall()
    revised = set()
    if apart:
        revised = {r[0] for r in h.execute(
            'SELECT request_id FROM follow_requests WHERE revised > 0')}
        if whole:
            from collections import Counter
            want, have = {}, {}
            for r in rows:
                if r[1] in revised:
                    want.setdefault(r[1], Counter())[
                        (2 if r[3] == 'server' else 3, r[5] or r[4])] += 1
            for c in got.values():
                req = int(c['attributes'].get('borderpatrol.request_id', -1))
                if req in revised:
                    have.setdefault(req, Counter())[(c['kind'], c['name'])] += 1
            part = [q for q in want if have.get(q, Counter()) != want[q]]
            for q in part[:5]:
                fail('request %d, revised, reached the receiver as %s, not whole: %s'
                     % (q, dict(have.get(q, {})), dict(want[q])))
            if part:
                fail('%d of %d revised requests reached the receiver in another version'
                     % (len(part), len(want)))
        rows = [r for r in rows if r[1] not in revised]
        got = {sid: c for sid, c in got.items()
               if int(c['attributes'].get('borderpatrol.request_id', -1))
               not in revised}
    by_bp = {}
    for sid, c in got.items():
        b = c['attributes'].get('borderpatrol.span_id')
        if b is None:
            fail('span %s has no borderpatrol.span_id' % sid)
            continue
        if int(b) in by_bp:
            fail('span_id %s arrived twice' % b)
        by_bp[int(b)] = (sid, c)
    ndb = len(rows)
    known = {r[0] for r in rows}
    unknown = [b for b in by_bp if b not in known]
    if len(unknown) != extra:
        fail('%d spans arrived that are not spans of a request in %s (expected %d), e.g. span_id %s' %
             (len(unknown), db, extra, unknown[:5]))
    absent = [r[0] for r in rows if r[0] not in by_bp]
    if len(absent) != missing:
        fail('%d of %d spans did not arrive (expected %d), e.g. span_id %s' %
             (len(absent), ndb, missing, absent[:5]))
    traces = {}
    for (span_id, req, parent, kind, proto, name, target, status, host, pid,
         exe, peer, start, end, rend, cert, reason, method, hhost, dbname,
         proc, ppid, cmdline) in rows:
        if span_id not in by_bp:
            continue
        sid, c = by_bp[span_id]
        a = c['attributes']
        where = 'span_id %d (request %d)' % (span_id, req)
        tid = c['traceId'] or ''
        if len(tid) != 32 or int(tid[16:], 16) != req:
            fail('%s: trace id %s does not end in the request id' % (where, tid))
        if traces.setdefault(req, tid) != tid:
            fail('%s: two trace ids for one request' % where)
        if len(sid) != 16 or int(sid, 16) == 0:
            fail('%s: span id %s' % (where, sid))
        if parent is None:
            if c['parentSpanId']:
                fail('%s: a root span with parent %s' % (where, c['parentSpanId']))
        elif parent in by_bp and c['parentSpanId'] != by_bp[parent][0]:
            fail('%s: parent %s, the parent span arrived as %s' %
                 (where, c['parentSpanId'], by_bp[parent][0]))
        elif parent not in by_bp and not missing:
            fail('%s: its parent %d did not arrive' % (where, parent))
        if c['name'] != (name or proto):
            fail('%s: name %r, not %r' % (where, c['name'], name or proto))
        if c['kind'] != (2 if kind == 'server' else 3):
            fail('%s: kind %s for a %s span' % (where, c['kind'], kind))
        want_end = end if end is not None else (rend if rend is not None else start)
        want_end = max(want_end, start)
        if c['start'] != str(start) or c['end'] != str(want_end):
            fail('%s: times %s..%s, not %s..%s' % (where, c['start'], c['end'],
                                                    start, want_end))
        expect = {
            'borderpatrol.request_id': str(req),
            'borderpatrol.span_id': str(span_id),
            'borderpatrol.protocol': proto,
            'bp.certainty': cert,
            'bp.certainty_reason': reason,
        }
        if proto in ('http', 'fastcgi'):
            expect['http.request.method'] = method
            if target:
                expect['url.path'] = target.split('?')[0]
            if proto == 'http' and status is not None:
                expect['http.response.status_code'] = str(status)
            if hhost:
                expect['server.address'] = hhost
        elif proto == 'postgresql':
            expect['db.system.name'] = 'postgresql'
            expect['db.query.text'] = target
            expect['db.namespace'] = dbname
        if kind == 'server' and peer and not peer.startswith(('unix:', 'pipe:')):
            expect['client.address'] = peer.rsplit(':', 1)[0].strip('[]')
        if kind == 'client' and peer and not hhost and \
                not peer.startswith(('unix:', 'pipe:')):
            expect['server.address'] = peer.rsplit(':', 1)[0].strip('[]')
        for k, v in expect.items():
            if v is None or v == '':
                if k in a:
                    fail('%s: %s=%r, the database has none' % (where, k, a[k]))
            elif a.get(k) != v:
                fail('%s: %s=%r, not %r' % (where, k, a.get(k), v))
        r = c['resource']
        want_r = {'service.name': os.path.basename(exe or '') or None,
                  'host.name': host, 'process.pid': str(pid),
                  'process.parent_pid': None if ppid is None else str(ppid),
                  'process.executable.path': exe or None,
                  'process.command_line': cmdline or None,
                  'borderpatrol.process_id': None if proc is None else str(proc)}
        bad_r = {k: (r.get(k), v) for k, v in want_r.items() if r.get(k) != v}
        if bad_r:
            fail('%s: resource %s (got, want)' % (where, bad_r))
    if len(set(traces.values())) != len(traces):
        fail('two requests share a trace id')
    if file:
        with open(file) as f:
            want = spans_of([json.loads(l) for l in f if l.strip()], file)
        for sid, c in want.items():
            if sid not in got:
                if not missing:
                    fail('span %s of %s did not arrive' % (sid, file))
            elif got[sid] != c:
                diff = [k for k in c if c[k] != got[sid].get(k)]
                fail('span %s differs from %s in %s: %r vs %r' %
                     (sid, file, diff, [got[sid].get(k) for k in diff],
                      [c[k] for k in diff]))
        if set(got) - set(want):
            fail('%d spans arrived that %s does not have' % (len(set(got) - set(want)), file))
    if problems:
        for p in problems:
            print('otlp-push-check: ' + p, file=sys.stderr)
        return 1
    print('otlp-push-check: %d spans of %d requests arrived once each (%d in %s, %d not sent, %d no longer in it), ids, parents, names, times and attributes as in the database%s%s' %
          (len(got), len(traces), ndb, os.path.basename(db), missing, extra,
           ', identical to ' + os.path.basename(file) if file else '',
           '; %d requests written again after their first time set apart%s' %
           (len(revised), ', each whole at the receiver' if whole else '')
           if apart else '') +
          ('; %d spans of %d requests arrived twice, the same (sent again after a restart)'
           % (len(resent), len(set(resent.values())))
           if identical_ok else ''))
    return 0


if __name__ == '__main__':
    sys.exit(main())
