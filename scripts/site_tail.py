#!/usr/bin/env python3
"""Where a crawl's last seconds go, from crawler-testsite's request log.

Usage: site_tail.py SITE_LOG [GAP_S]

The log (crawler-testsite --log) holds one line per request: start, reply
and end in microseconds, the host, the status and the target. Runs one
after another (bench-cluster.sh scaling) are told apart by a gap of GAP_S
(default 2) with no request. For each run: its span, its requests in every
half second, and the hosts whose last request ended last, with how many of
their requests ended in the run's last 4 s (a host served one request at a
time holds the crawl's end by itself)."""
import collections
import sys


def main():
    gap = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    rows = sorted((int(r[0]), int(r[2]), r[3]) for r in
                  (line.split() for line in open(sys.argv[1])) if len(r) >= 6)
    runs, cur, last_end = [], [], None
    for start, end, host in rows:
        if cur and start - last_end > gap * 1e6:
            runs.append(cur)
            cur = []
        last_end = max(last_end, end) if cur else end
        cur.append((start, end, host))
    if cur:
        runs.append(cur)
    for n, run in enumerate(runs, 1):
        t0 = run[0][0]
        ends = [(e - t0) / 1e6 for _, e, _ in run]
        span = max(ends)
        print(f'run {n}: {len(run)} requests in {span:.2f} s')
        bins = collections.Counter(int(t * 2) for t in ends)
        print('  per 0.5 s: ' + ' '.join(str(bins[k]) for k in range(int(span * 2) + 1)))
        by_host = collections.defaultdict(list)
        for (_, e, h), t in zip(run, ends):
            by_host[h].append(t)
        late = sorted(((max(v), h, len(v), sum(1 for x in v if x > span - 4))
                       for h, v in by_host.items()), reverse=True)[:8]
        for t, h, total, tail in late:
            print(f'  {h} last at {t:.2f} s: {total} requests, {tail} in the last 4 s')


if __name__ == '__main__':
    main()
