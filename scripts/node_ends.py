#!/usr/bin/env python3
"""When each node of a cluster bench run stopped fetching, and how much it did.

Usage: node_ends.py WORK JOB

WORK is a kept bench-cluster.sh work directory whose run had BENCH_SITE_LOG
set (WORK/site.log, the testsite's request log) and JOB the run's job name
(its nodes' --out directories are WORK/JOB-n1, WORK/JOB-n2, ...). Each
request in the site's log is put to the node whose fetch-log.jsonl holds
its URL. For each node: its requests, when its last one ended (seconds
after the run's first request started), its requests in each of the run's
first three half seconds and in each of its last five seconds' halves. A
node bound by its connections serves 8 / 0.05 s = 80 requests a half second
at 50 ms a response: a node that keeps that rate to its end and ends after
the others had more work than they did (placement and balancing), not a
slower end (the pick order)."""
import collections
import json
import pathlib
import sys
from urllib.parse import urlsplit


def main():
    work, job = pathlib.Path(sys.argv[1]), sys.argv[2]
    node_of = {}
    for d in sorted(work.glob(job + "-n*")):
        if not d.is_dir():
            continue
        with open(d / "fetch-log.jsonl") as f:
            for line in f:
                r = json.loads(line)
                if "fetch_ms" not in r:  # skipped: no request
                    continue
                u = urlsplit(r["url"])
                target = u.path + ("?" + u.query if u.query else "")
                node_of[(u.netloc, target)] = d.name[len(job) + 1:]
    ends = collections.defaultdict(list)
    first = None
    with open(work / "site.log") as f:
        for line in f:
            r = line.split()
            if len(r) < 6:
                continue
            node = node_of.get((r[3], r[5]))
            if node is None:
                continue
            first = int(r[0]) if first is None else min(first, int(r[0]))
            ends[node].append(int(r[2]))
    if not ends:
        sys.exit(f"no request of job {job} in {work}/site.log")
    span = (max(max(v) for v in ends.values()) - first) / 1e6
    print(f"site span {span:.2f} s, {sum(len(v) for v in ends.values())} requests")
    last = int(span * 2)
    for node in sorted(ends):
        halves = collections.Counter(int((t - first) / 5e5) for t in ends[node])
        print(f"  {node}: {len(ends[node])} requests, last ended {(max(ends[node]) - first) / 1e6:.2f} s;"
              f" first halves {[halves[i] for i in range(3)]},"
              f" last 5 s {[halves[i] for i in range(last - 9, last + 1)]}")


if __name__ == "__main__":
    main()
