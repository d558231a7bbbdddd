#!/usr/bin/env python3
"""compare-trees.py - are two paths databases the same request trees?

Usage: compare-trees.py A.db B.db

Each request becomes one canonical string: its target, certainty and
reasons, and its tree of spans, each span by kind, protocol, target, host,
executable, status and certainty, children sorted.  Ids, times and row
order do not count (a central reconstruction and bp-reconstruct --join of
host-local ones number rows differently and estimate clocks apart).  The
multisets of requests must be equal, and so must the count of spans in no
request.  Prints a summary line and the first differences; exit status 1
when they differ.
"""
import collections
import sqlite3
import sys


def trees(path):
    db = sqlite3.connect(path)
    spans = db.execute(
        "SELECT span_id, parent_span_id, kind, protocol, target, host, exe,"
        " status, certainty, IFNULL(certainty_reason, '') FROM spans").fetchall()
    kids = collections.defaultdict(list)
    byid = {}
    for s in spans:
        byid[s[0]] = s
        kids[s[1]].append(s[0])

    def canon(i):
        # iterative post-order: trees can be deep
        out = {}
        stack = [(i, False)]
        while stack:
            n, done = stack.pop()
            if done:
                s = byid[n]
                out[n] = '(' + '|'.join(str(x) for x in s[2:]) + ' ' + \
                    ' '.join(sorted(out[k] for k in kids[n])) + ')'
            else:
                stack.append((n, True))
                stack.extend((k, False) for k in kids[n])
        return out[i]

    reqs = collections.Counter()
    for tgt, root, cert, why in db.execute(
            "SELECT target, root_span_id, certainty,"
            " IFNULL(certainty_reason, '') FROM requests"):
        reqs['%s %s %s %s' % (tgt, cert, why,
                              canon(root) if root in byid else '-')] += 1
    unattr = db.execute(
        "SELECT COUNT(*) FROM spans WHERE request_id IS NULL").fetchone()[0]
    return reqs, unattr


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, ua = trees(sys.argv[1])
    b, ub = trees(sys.argv[2])
    only_a, only_b = a - b, b - a
    print('compare-trees: %d and %d requests, %d only in the first, %d only'
          ' in the second; spans in no request %d and %d' % (
              sum(a.values()), sum(b.values()), sum(only_a.values()),
              sum(only_b.values()), ua, ub))
    for k in list(only_a)[:3]:
        print('  only in %s: %s' % (sys.argv[1], k[:400]))
    for k in list(only_b)[:3]:
        print('  only in %s: %s' % (sys.argv[2], k[:400]))
    return 1 if only_a or only_b or ua != ub else 0


if __name__ == '__main__':
    sys.exit(main())
