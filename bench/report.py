#!/usr/bin/python3
"""report.py - BENCHMARKS.md's table from bench/run's results file.

usage: report.py RESULTS                  print the table (markdown)
       report.py --write FILE RESULTS     replace the generated part of
                                          FILE (BENCHMARKS.md) with it
       report.py --check RESULTS BENCH... exit 1 unless every BENCH
                                          reported its figures (smoke run)

RESULTS holds "key value..." lines (bench/lib.sh, result).  The generated
part of FILE lies between the lines BEGIN and END below; the rest of the
file (method, analysis) is left alone.
"""
import statistics
import sys
from collections import defaultdict

BEGIN = '<!-- bench/run: generated from here -->'
END = '<!-- bench/run: generated up to here -->'

TARGETS = {
    # the goals of the speed work (issue 15): nginx and the stack <= 5%,
    # echo <= 10%, CGI <= 20%, a traced call <= 100 ns over the floor
    'nginx': ('throughput loss', '<= 5%', 0.05),
    'tls': ('throughput loss', '<= 10%', 0.10),
    'echo': ('throughput loss', '<= 10%', 0.10),
    'cgi': ('throughput loss', '<= 20%', 0.20),
    'stack': ('throughput loss', '<= 5%', 0.05),
}


def load(path):
    res = defaultdict(list)
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if not line:
                continue
            key, _, rest = line.partition(' ')
            res[key].append(rest)
    return res


def one(res, key, default=''):
    v = res.get(key)
    return v[-1] if v else default


def kv(text):
    out = {}
    for part in text.replace(',', ' ').split():
        k, _, v = part.partition('=')
        out[k] = v
    return out


def pct(x):
    return '%+.1f%%' % (x * 100)


def ab_rows(res, name):
    """Per-pair throughput and p99 ratios of A/B runs."""
    a = [list(map(float, x.split())) for x in res.get(name + '_a', [])]
    b = [list(map(float, x.split())) for x in res.get(name + '_b', [])]
    n = min(len(a), len(b))
    if not n:
        return None
    thr = [b[i][0] / a[i][0] for i in range(n)]
    p99 = [b[i][1] / a[i][1] for i in range(n) if a[i][1] > 0]
    cpu = [b[i][2] / a[i][2] for i in range(n)
           if len(a[i]) > 2 and len(b[i]) > 2 and a[i][2] > 0]
    return {
        'n': n,
        'cpu': statistics.median(cpu) if cpu else None,
        'a_cpu': statistics.median(x[2] for x in a[:n]) if cpu else None,
        'b_cpu': statistics.median(x[2] for x in b[:n]) if cpu else None,
        'thr': statistics.median(thr),
        'thr_all': thr,
        'p99': statistics.median(p99) if p99 else float('nan'),
        'a': statistics.median(x[0] for x in a[:n]),
        'b': statistics.median(x[0] for x in b[:n]),
        'a_p99': statistics.median(x[1] for x in a[:n]),
        'b_p99': statistics.median(x[1] for x in b[:n]),
    }


def calls_table(res):
    """case -> dict of medians: floor, shim, added (median of per-pair
    differences), bare, ir_floor, ir_shim."""
    per = defaultdict(lambda: defaultdict(list))
    for kind in ('floor', 'shim', 'bare'):
        for line in res.get('calls_ns_' + kind, []):
            c, v = line.split()
            per[c][kind].append(float(v))
    for kind in ('floor', 'shim'):
        for line in res.get('calls_ir_' + kind, []):
            c, v = line.split()
            per[c]['ir_' + kind].append(float(v))
    out = {}
    for c, d in per.items():
        row = {k: statistics.median(v) for k, v in d.items() if v}
        n = min(len(d['floor']), len(d['shim']))
        if n:
            row['added'] = statistics.median(
                d['shim'][i] - d['floor'][i] for i in range(n))
        out[c] = row
    return out


def table(res):
    L = []
    w = L.append
    m = one
    w('Measured %s on %s CPU(s), %s, Linux %s; commit %s.' % (
        m(res, 'machine_date'), m(res, 'machine_nproc'),
        m(res, 'machine_cpu'), m(res, 'machine_kernel'),
        m(res, 'machine_commit')))
    w('Server benchmarks: %s pairs of %s s runs, untraced (A) and traced (B) '
      'alternating; each figure is the median of the per-pair ratios B/A. '
      'CPU per request: the servers\' CPU time (with bp-logd\'s for B) '
      'over the requests served.' % (
          m(res, 'method_pairs'), m(res, 'method_seconds')))
    w('')
    w('| # | benchmark | measured | target | met |')
    w('|---|---|---|---|---|')

    def row(num, name, measured, target, ok):
        w('| %s | %s | %s | %s | %s |' % (
            num, name, measured, target,
            '-' if ok is None else ('yes' if ok else '**no**')))

    labels = {
        'nginx': '1 | nginx, 1 KB static file, wrk -c50',
        'tls': '1b | nginx over HTTPS (TLS 1.3, OpenSSL), 1 KB static file, wrk -c50',
        'echo': '2 | 1-byte echo, 50 connections',
        'cgi': '3 | apache2 mod_cgi, fork/exec per request, wrk -c8',
        'stack': '4 | nginx -> php-fpm -> PostgreSQL, wrk -c8',
    }
    for name in ('nginx', 'tls', 'echo', 'cgi', 'stack'):
        r = ab_rows(res, name)
        num, label = labels[name].split(' | ')
        if not r:
            continue
        loss = 1 - r['thr']
        what, target, lim = TARGETS[name]
        cpu = ''
        if r['cpu'] is not None:
            cpu = '; CPU per request %s (%.0f -> %.0f us)' % (
                pct(r['cpu'] - 1), r['a_cpu'], r['b_cpu'])
        row(num, label, '%s throughput (%.0f -> %.0f req/s), p99 x%.2f '
            '(%.0f -> %.0f us)%s' % (pct(-loss), r['a'], r['b'], r['p99'],
                                    r['a_p99'], r['b_p99'], cpu),
            '%s %s' % (what, target), loss <= lim)

    ct = calls_table(res)
    if ct:
        for fam, lim in (('chan', 100), ('plain', 10)):
            cases = sorted(c for c in ct if c.endswith('-' + fam))
            parts = []
            worst = 0
            for c in cases:
                d = ct[c]
                if 'added' not in d:
                    continue
                worst = max(worst, d['added'])
                ir = ''
                if 'ir_shim' in d and 'ir_floor' in d:
                    ir = ', %+.0f instr' % (d['ir_shim'] - d['ir_floor'])
                parts.append('%s %+.0f ns%s' % (c.rsplit('-', 1)[0], d['added'], ir))
            label = ('traced channel' if fam == 'chan' else 'untraced fd')
            row(5, 'ns added per call, %s (vs floor shim)' % label,
                '; '.join(parts), '<= %d ns' % lim, worst <= lim)

    for name in ('nginx', 'stack'):
        rec = m(res, 'volume_%s_records' % name)
        if not rec:
            continue
        bpe = float(m(res, 'volume_%s_bytes_per_event' % name))
        row(6, 'log volume, %s run' % name,
            '%.1f B/event (%.1f with block headers), %s events, %.2f '
            'events and %s B per request; attribute repeats %s of %s B' % (
                bpe, float(m(res, 'volume_%s_file_bytes_per_event' % name)),
                rec, float(m(res, 'volume_%s_events_per_request' % name, 0)),
                m(res, 'volume_%s_per_request' % name, '?'),
                m(res, 'volume_%s_attr_repeat_bytes' % name),
                m(res, 'volume_%s_attr_bytes' % name)),
            '<= 24 B/event', bpe <= 24)

    drains = res.get('logd_drain', [])
    if drains:
        first = drains[0]
        rate = first.split('events/s per core')[0].split()[-2]
        share = ''
        ticks = m(res, 'logd_cpu_ticks')
        secs = m(res, 'nginx_b_seconds')
        if ticks and secs and float(secs) > 0:
            tck = float(m(res, 'clk_tck', 100))
            share = '; %.1f%% of a core during benchmark 1 (nginx worker ' \
                '%.0f%%)' % (100 * float(ticks) / tck / float(secs),
                             100 * float(m(res, 'nginx_worker_ticks_b', 0)) /
                             tck / float(secs))
        row(7, 'bp-logd drain', '%s M events per CPU-second (%s)%s' % (
            rate, first.split(' events')[0].split('  ')[0].strip(), share),
            '-', None)

    runs = res.get('recon_run', [])
    if runs:
        parts = []
        best = None
        for r in runs:
            f = r.split()
            n = int(f[0])
            g = kv(f[1])
            t = kv(f[2])
            cpu = float(t['user']) + float(t['sys'])
            ev = int(g.get('events', n))
            rate = ev / cpu if cpu > 0 else 0
            parts.append('%.1fM events: %.2fM events/s per CPU-s, %.2fM/s '
                         'wall, peak RSS %.0f MB' % (
                             ev / 1e6, rate / 1e6,
                             ev / float(t['wall']) / 1e6 if float(t['wall']) else 0,
                             int(t['maxrss_kb']) / 1024))
            best = rate
        row(8, 'bp-reconstruct (bench/bp-genbig logs)', '; '.join(parts),
            '>= 1M events/s; RSS flat', best is not None and best >= 1e6)

    nest = res.get('nesting', [])
    if nest:
        cells = []
        for r in nest:
            f = r.split()
            arch, c = f[0], f[1]
            o = kv(f[2]) if len(f) > 2 else {}
            t = kv(f[3]) if len(f) > 3 else {}
            ours = (100.0 * int(o['ours_right']) / int(o['ours_requests'])
                    if o.get('ours_requests') else float('nan'))
            cells.append('%s c=%s: nesting %.1f%%, ours %.1f%%' % (
                arch, c, 100 * float(t.get('precision', 'nan')), ours))
        row(9, 'paths exactly right: nesting algorithm vs BorderPatrol',
            '; '.join(cells), 'ours 100%', None)

    notes = res.get('note', [])
    if notes:
        w('')
        for n in notes:
            w('- ' + n)
    return '\n'.join(L) + '\n'


def details(res):
    """Per-pair figures, for the record."""
    L = ['', '<details><summary>per-pair figures</summary>', '', '```']
    for name in ('nginx', 'tls', 'echo', 'cgi', 'stack'):
        for side in ('a', 'b'):
            v = res.get('%s_%s' % (name, side))
            if v:
                L.append('%s %s: %s' % (name, 'untraced' if side == 'a'
                                        else 'traced', ' | '.join(v)))
    ct = calls_table(res)
    for c in sorted(ct):
        d = ct[c]
        L.append('%-12s bare %6.1f floor %6.1f shim %6.1f ns  added %+6.1f'
                 '  instr floor %s shim %s' % (
                     c, d.get('bare', float('nan')), d.get('floor', float('nan')),
                     d.get('shim', float('nan')), d.get('added', float('nan')),
                     '%.0f' % d['ir_floor'] if 'ir_floor' in d else '-',
                     '%.0f' % d['ir_shim'] if 'ir_shim' in d else '-'))
    for name in ('nginx', 'stack'):
        for t in res.get('volume_%s_type' % name, []):
            L.append('volume %s: %s' % (name, t))
    for d in res.get('logd_drain', []):
        L.append('logd: ' + d)
    for r in res.get('recon_run', []):
        L.append('recon: ' + r)
    L += ['```', '', '</details>']
    return '\n'.join(L) + '\n'


REQUIRED = {
    'nginx': ['nginx_a', 'nginx_b'],
    'tls': ['tls_a', 'tls_b'],
    'echo': ['echo_a', 'echo_b'],
    'cgi': ['cgi_a', 'cgi_b'],
    'stack': ['stack_a', 'stack_b'],
    'calls': ['calls_ns_floor', 'calls_ns_shim', 'calls_ns_bare'],
    'volume': [],
    'logd': ['logd_drain'],
    'recon': ['recon_run'],
    'nesting': ['nesting'],
}


def check(res, benches):
    bad = []
    for b in benches:
        for k in REQUIRED.get(b, []):
            if not res.get(k):
                bad.append('%s: no %s' % (b, k))
        if b == 'calls' and not res.get('calls_ir_shim') and not any(
                'valgrind' in n for n in res.get('note', [])):
            bad.append('calls: no instruction counts')
        if b == 'volume' and not any(k.startswith('volume_') for k in res):
            if not any(n.startswith('volume:') for n in res.get('note', [])):
                bad.append('volume: no figures')
        if b == 'nesting':
            for r in res.get('nesting', []):
                if 'precision=' not in r or 'ours_right=' not in r:
                    bad.append('nesting: incomplete line: ' + r)
    for line in bad:
        print('report.py: ' + line, file=sys.stderr)
    return not bad


def main(argv):
    if len(argv) >= 3 and argv[1] == '--check':
        sys.exit(0 if check(load(argv[2]), argv[3:]) else 1)
    if len(argv) == 4 and argv[1] == '--write':
        res = load(argv[3])
        text = BEGIN + '\n' + table(res) + details(res) + END + '\n'
        try:
            with open(argv[2]) as f:
                doc = f.read()
        except FileNotFoundError:
            doc = ''
        if BEGIN in doc and END in doc:
            head = doc.split(BEGIN)[0]
            tail = doc.split(END, 1)[1].lstrip('\n')
            doc = head + text + ('\n' + tail if tail else '')
        else:
            doc = doc + ('\n' if doc and not doc.endswith('\n') else '') + text
        with open(argv[2] + '.tmp', 'w') as f:
            f.write(doc)
        import os
        os.replace(argv[2] + '.tmp', argv[2])
        return
    if len(argv) == 2:
        res = load(argv[1])
        sys.stdout.write(table(res) + details(res))
        return
    print(__doc__, file=sys.stderr)
    sys.exit(2)


if __name__ == '__main__':
    main(sys.argv)
