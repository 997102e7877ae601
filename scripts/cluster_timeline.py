#!/usr/bin/env python3
# Where a multi-node crawl's time goes: the testsite's request log (--log)
# against the nodes' fetch logs. Each request is counted, in 5 s bins, for
# the node that first fetched its host (so after a work-aware give, a host's
# requests stay with its first owner). Prints each node's requests, first
# and last request, and bins. docs/benchmarks.md ("Scaling") shows its use.
#
# Usage: python3 scripts/cluster_timeline.py REQUESTS_LOG NODE_OUT_DIR...
# (each NODE_OUT_DIR a node's --out, named ...-nN)
import sys, json, collections, urllib.parse
log, outs = sys.argv[1], sys.argv[2:]
owner = {}
for o in outs:
    for line in open(o + "/fetch-log.jsonl"):
        try: u = json.loads(line)["url"]
        except Exception: continue
        owner.setdefault(urllib.parse.urlsplit(u).netloc, o.rsplit("-", 1)[-1])
reqs = []
for line in open(log):
    f = line.split()
    if len(f) >= 4: reqs.append((int(f[0]), f[3]))
t0 = min(t for t, _ in reqs)
per = collections.defaultdict(list)
for t, a in reqs: per[owner.get(a, "?")].append((t - t0) / 1e6)
end = max(max(v) for v in per.values())
print(f"requests {len(reqs)}, first to last {end:.1f} s")
W = 5
for n in sorted(per):
    v = sorted(per[n]); hist = collections.Counter(int(x // W) for x in v)
    print(f"{n:>4} {len(v):6d} req  {v[0]:6.1f}..{v[-1]:6.1f} s  per {W}s: " +
          " ".join(f"{hist.get(i,0):3d}" for i in range(int(end // W) + 1)))
