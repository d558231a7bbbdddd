#!/usr/bin/python3
"""results.py - per-test results of other projects' test suites, and their
comparison between an untraced and a traced run (tests/transparency).

  results.py junit FILE.xml          print "TEST<TAB>RESULT" lines
  results.py tap FILE.tap [PREFIX]   likewise from TAP output
  results.py compare PLAIN.tsv MODE TRACED.tsv EXPECTED [SUMMARY]

RESULT is pass, fail or skip.  compare prints one line per difference and
a summary; it exits 1 when a test's result differs between the runs and
EXPECTED (lines "MODES GLOB REASON", MODES a comma list or *) does not
list that test for MODE, or when a test ran in one run only.  A test
failing both ways is the environment's, reported but not counted against
the shim.  An expected difference that did not happen is reported (the
test may be timing dependent), not failed.
"""
import fnmatch
import re
import sys
import xml.etree.ElementTree as ET


def junit(path):
    out = {}
    root = ET.parse(path).getroot()
    for tc in root.iter('testcase'):
        name = tc.get('name')
        if tc.get('classname'):
            name = tc.get('classname') + '.' + name
        res = 'pass'
        for c in tc:
            if c.tag in ('failure', 'error'):
                res = 'fail'
            elif c.tag == 'skipped' and res == 'pass':
                res = 'skip'
        if tc.get('status') == 'skipped' or tc.get('result') == 'skipped':
            res = 'skip' if res == 'pass' else res
        # a name seen twice (reruns): a failure wins
        if out.get(name) == 'fail':
            continue
        out[name] = res
    return out


TAP_LINE = re.compile(r'^\s*(not ok|ok)\s+\d+\s*(?:-\s*)?(.*?)\s*(#\s*(SKIP|TODO)\b.*)?$', re.I)


def tap(path, prefix=''):
    out = {}
    with open(path, errors='replace') as f:
        for line in f:
            m = TAP_LINE.match(line.rstrip('\n'))
            if not m:
                continue
            ok, name, directive = m.group(1).lower(), m.group(2), m.group(4)
            if directive and directive.upper() == 'SKIP':
                res = 'skip'
            elif directive and directive.upper() == 'TODO':
                res = 'skip'
            else:
                res = 'pass' if ok == 'ok' else 'fail'
            key = prefix + (name or '?')
            # same name twice: number it
            k, i = key, 2
            while k in out:
                k = '%s#%d' % (key, i)
                i += 1
            out[k] = res
    return out


def load_tsv(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if '\t' in line:
                k, v = line.rsplit('\t', 1)
                out[k] = v
    return out


def load_expected(path):
    rules = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith('#'):
                    continue
                if line.startswith('skip '):
                    continue        # glib.sh: left out of every run
                parts = line.split(None, 2)
                if len(parts) < 3:
                    sys.exit('%s: bad line (want MODES GLOB REASON): %s' % (path, line))
                rules.append((parts[0].split(','), parts[1], parts[2]))
    except FileNotFoundError:
        pass
    return rules


def expected(rules, mode, test):
    for modes, glob, reason in rules:
        if ('*' in modes or mode in modes) and fnmatch.fnmatchcase(test, glob):
            return reason
    return None


def compare(plain_p, mode, traced_p, exp_p, summary_p=None):
    plain, traced = load_tsv(plain_p), load_tsv(traced_p)
    rules = load_expected(exp_p)
    n = {'run': 0, 'same': 0, 'pass': 0, 'skip': 0, 'both_fail': 0,
         'diff_expected': 0, 'diff_unexpected': 0, 'expected_absent': 0}
    bad = []
    for t in sorted(set(plain) | set(traced)):
        a, b = plain.get(t), traced.get(t)
        why = expected(rules, mode, t)
        if a is None or b is None:
            if why:
                n['diff_expected'] += 1
                print('expected [%s] %s: %s untraced, %s traced (%s)' % (mode, t, a or 'absent', b or 'absent', why))
            else:
                n['diff_unexpected'] += 1
                bad.append('%s: %s untraced, %s traced' % (t, a or 'absent', b or 'absent'))
            continue
        n['run'] += 1
        if a == b:
            n['same'] += 1
            if a == 'pass':
                n['pass'] += 1
            elif a == 'skip':
                n['skip'] += 1
            else:
                n['both_fail'] += 1
                print('environment [%s] %s: fails untraced and traced' % (mode, t))
            if why:
                n['expected_absent'] += 1
            continue
        if why:
            n['diff_expected'] += 1
            print('expected [%s] %s: %s untraced, %s traced (%s)' % (mode, t, a, b, why))
        else:
            n['diff_unexpected'] += 1
            bad.append('%s: %s untraced, %s traced' % (t, a, b))
    for line in bad:
        print('DIFFERENCE [%s] %s' % (mode, line))
    s = ('[%s] %d tests: %d same (%d passed, %d skipped, %d failed both ways), '
         '%d expected differences, %d unexpected differences' %
         (mode, n['run'], n['same'], n['pass'], n['skip'], n['both_fail'],
          n['diff_expected'], n['diff_unexpected']))
    print(s)
    if summary_p:
        with open(summary_p, 'a') as f:
            f.write(s + '\n')
    return 1 if n['diff_unexpected'] else 0


def main(argv):
    if len(argv) >= 3 and argv[1] == 'junit':
        for k, v in sorted(junit(argv[2]).items()):
            print('%s\t%s' % (k, v))
        return 0
    if len(argv) >= 3 and argv[1] == 'tap':
        for k, v in tap(argv[2], argv[3] if len(argv) > 3 else '').items():
            print('%s\t%s' % (k, v))
        return 0
    if len(argv) >= 6 and argv[1] == 'compare':
        return compare(argv[2], argv[3], argv[4], argv[5], argv[6] if len(argv) > 6 else None)
    sys.stderr.write(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
