#!/usr/bin/env python3
"""same-content.py A.db B.db LABEL: do two paths databases hold the same
rows by content?

Every row of the tables a user reads, with its ids replaced by what they
name (a request by its start and its root's thread, a span by its start,
thread and name, a channel by its process, descriptor and open time),
sorted; the ids themselves follow the order rows were written in.  Used
to check the merge in steps (BP_RECONSTRUCT_STEPS, docs/reconstruct.md
"The merge in steps") against the merge at once.  Exit 0 when the same,
1 with the first differences printed.
"""
import difflib
import sqlite3
import sys

RQ = ("COALESCE((SELECT r.start_ns || '/' || rs.pid || '/' || rs.tid "
      "FROM requests r JOIN spans rs ON rs.span_id = r.root_span_id "
      "WHERE r.request_id = {}), '-')")
SP = ("COALESCE((SELECT z.start_ns || '/' || z.pid || '/' || z.tid || '/' || "
      "COALESCE(z.name, '') FROM spans z WHERE z.span_id = {}), '-')")
CH = ("COALESCE((SELECT y.pid || '/' || y.fd || '/' || y.open_ns "
      "FROM channels y WHERE y.channel_id = {}), '-')")

QUERIES = [
    "SELECT 'R', " + RQ.format("q.request_id") + ", end_ns, protocol, method,"
    " target, status, client, complete, certainty, certainty_reason, "
    + SP.format("q.root_span_id") + " FROM requests q",
    "SELECT 'S', " + SP.format("s.span_id") + ", " + RQ.format("s.request_id")
    + ", " + SP.format("s.parent_span_id") + ", kind, protocol, target, status,"
    " host, exe, peer, end_ns, " + CH.format("s.channel_id")
    + ", certainty, certainty_reason FROM spans s",
    "SELECT 'F', " + RQ.format("f.request_id") + ", " + SP.format("f.span_id")
    + ", pid, tid, start_ns, end_ns, trigger, fd, " + CH.format("f.channel_id")
    + ", events FROM fragments f",
    "SELECT 'M', " + RQ.format("m.request_id") + ", " + SP.format("m.span_id")
    + ", " + CH.format("m.channel_id") + ", pid, tid, begin_ns, ts_ns, dir, kind,"
    " protocol, flags, off, len, status, witness FROM messages m",
    "SELECT 'A', " + SP.format("a.span_id") + ", a.key, a.value FROM attrs a",
    "SELECT 'I', " + RQ.format("i.request_id") + ", " + SP.format("i.span_id")
    + ", pid, tid, ts_ns, path, flags, result FROM files i",
    "SELECT 'P', host, pid, ppid, exe, cmdline, ring_id, start_ns, end_ns,"
    " COALESCE((SELECT x.pid || '/' || x.start_ns FROM processes x"
    " WHERE x.process_id = p.parent_process_id), '-'), how, "
    + RQ.format("p.request_id") + ", events FROM processes p",
    "SELECT 'C', pid, fd, kind, role, protocol, local, remote, path, ino,"
    " peer_ino, " + CH.format("c.peer_channel_id") + ", traced_peer, "
    + RQ.format("c.request_id") + ", open_ns, close_ns FROM channels c",
    "SELECT 'W', file, offset, text FROM warnings",
    "SELECT 'T', key, value FROM stats",
    "SELECT 'N', rank, n, complete, protocol, service, root, nodes, depth,"
    " signature, min_ns, max_ns, p50_ns, p90_ns, p99_ns FROM patterns",
]


def rows(path):
    db = sqlite3.connect("file:" + path + "?mode=ro", uri=True)
    out = []
    for q in QUERIES:
        for r in db.execute(q):
            out.append("|".join("<null>" if v is None else str(v) for v in r))
    db.close()
    out.sort()
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: same-content.py A.db B.db LABEL")
    a, b = rows(sys.argv[1]), rows(sys.argv[2])
    if a == b:
        print("%s: the same %d rows by content" % (sys.argv[3], len(a)))
        return 0
    diff = [l for l in difflib.unified_diff(a, b, "at once", "in steps",
                                            n=0, lineterm="")]
    print("%s: the rows differ by content (%d lines of %d and %d):"
          % (sys.argv[3], sum(1 for l in diff[2:] if l[:1] in "+-"),
             len(a), len(b)))
    for l in diff[:24]:
        print("  " + l[:300])
    return 1


if __name__ == "__main__":
    sys.exit(main())
