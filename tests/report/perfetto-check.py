#!/usr/bin/python3
"""perfetto-check.py - check a Chrome trace-event JSON file (bp-reconstruct
--perfetto) with Python's json module, independently of the exporter.

  perfetto-check.py FILE [--spans N] [--flows N] [--processes N]

Checks: the object form {"traceEvents": [...]}; every event has a known
phase and the fields of that phase (X: name, cat, pid, tid, ts, dur >= 0;
M: process_name / thread_name / *_sort_index with args; s and f: id, cat,
pid, tid, ts; f binds to the enclosing slice, "bp": "e"); complete events
of one (pid, tid) nest properly (the rule of the trace viewers); every
pid and (pid, tid) with events has a name; every flow has one start and
one end, and each end lies inside a complete event of its thread.
Prints one line of counts; exits 1 with the first problems found.
"""
import argparse
import collections
import json
import sys

EPS = 0.0005  # us: the file has nanosecond decimals


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--spans", type=int)
    ap.add_argument("--flows", type=int)
    ap.add_argument("--processes", type=int)
    a = ap.parse_args()
    problems = []

    def fail(msg):
        if len(problems) < 20:
            problems.append(msg)

    with open(a.file, encoding="utf-8") as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        print("perfetto-check: not {\"traceEvents\": [...]}", file=sys.stderr)
        return 1
    pnames, tnames = set(), set()
    slices = collections.defaultdict(list)
    flows = collections.defaultdict(dict)
    spans = work = 0
    for i, e in enumerate(doc["traceEvents"]):
        where = "event %d" % i
        ph = e.get("ph")
        for k in ("pid", "tid"):
            if not isinstance(e.get(k), int):
                fail("%s: %s is not an integer" % (where, k))
        if ph == "M":
            name = e.get("name")
            args = e.get("args")
            if name not in ("process_name", "thread_name", "process_sort_index",
                            "thread_sort_index") or not isinstance(args, dict):
                fail("%s: bad metadata %r" % (where, e))
            elif name == "process_name":
                pnames.add(e["pid"])
            elif name == "thread_name":
                tnames.add((e["pid"], e["tid"]))
        elif ph == "X":
            if not isinstance(e.get("name"), str) or not isinstance(e.get("cat"), str):
                fail("%s: X without name or cat" % where)
            ts, dur = e.get("ts"), e.get("dur")
            if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)) or dur < 0:
                fail("%s: X with bad ts/dur %r %r" % (where, ts, dur))
                continue
            slices[(e["pid"], e["tid"])].append((ts, dur, i))
            if e["cat"] == "work":
                work += 1
            else:
                spans += 1
                if not isinstance(e.get("args", {}).get("span_id"), int):
                    fail("%s: span without args.span_id" % where)
        elif ph in ("s", "f"):
            if "id" not in e or e.get("cat") != "message" or not isinstance(e.get("ts"), (int, float)):
                fail("%s: flow without id, cat or ts" % where)
                continue
            if ph == "f" and e.get("bp") != "e":
                fail("%s: flow end not bound to the enclosing slice" % where)
            if ph in flows[e["id"]]:
                fail("%s: second flow %s for id %s" % (where, ph, e["id"]))
            flows[e["id"]][ph] = e
        else:
            fail("%s: unknown phase %r" % (where, ph))

    for (pid, tid), lst in slices.items():
        if pid not in pnames:
            fail("pid %d has no process_name" % pid)
        if (pid, tid) not in tnames:
            fail("thread %d/%d has no thread_name" % (pid, tid))
        lst.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for ts, dur, i in lst:
            while stack and stack[-1] <= ts + EPS:
                stack.pop()
            if stack and ts + dur > stack[-1] + EPS:
                fail("event %d on %d/%d overlaps an enclosing slice without nesting" % (i, pid, tid))
            stack.append(ts + dur)

    def inside(ev):
        for ts, dur, _ in slices.get((ev["pid"], ev["tid"]), ()):
            if ts - EPS <= ev["ts"] <= ts + dur + EPS:
                return True
        return False

    for fid, pair in flows.items():
        if set(pair) != {"s", "f"}:
            fail("flow %s lacks its %s" % (fid, "end" if "s" in pair else "start"))
            continue
        for ph in ("s", "f"):
            if not inside(pair[ph]):
                fail("flow %s %s is outside every slice of its thread" % (fid, ph))
        if pair["f"]["ts"] + EPS < pair["s"]["ts"]:
            fail("flow %s arrives before it leaves" % fid)

    if a.spans is not None and spans != a.spans:
        fail("%d spans, wanted %d" % (spans, a.spans))
    if a.flows is not None and len(flows) != a.flows:
        fail("%d flows, wanted %d" % (len(flows), a.flows))
    if a.processes is not None and len(pnames) != a.processes:
        fail("%d processes, wanted %d" % (len(pnames), a.processes))
    if problems:
        for p in problems:
            print("perfetto-check: %s: %s" % (a.file, p), file=sys.stderr)
        return 1
    print("perfetto-check: %s: %d spans on %d threads, %d fragments, %d flows, %d processes: valid"
          % (a.file, spans, len(slices), work, len(flows), len(pnames)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
