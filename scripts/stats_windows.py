#!/usr/bin/env python3
# Pages per second of a crawl's nodes, window by window: each node's
# OUT/stats-series.jsonl (a row every 2 s: its pages fetched so far and its
# queued URLs). Prints, per window, the nodes' pages/s summed and each
# node's pages/s / queued URLs. Shows where a multi-node crawl loses time
# against its steady rate (docs/benchmarks.md, "Where the rest of the 6-node
# time goes"). bench-cluster.sh keeps each run's node directories.
#
# Usage: python3 scripts/stats_windows.py NODE_OUT_DIR...
import json, sys

series = [[json.loads(line) for line in open(d + "/stats-series.jsonl")] for d in sys.argv[1:]]
for i in range(max(len(s) for s in series)):
    total, cells = 0.0, []
    for rows in series:
        if i >= len(rows):
            cells.append("     -")
            continue
        dt = rows[i]["t"] - (rows[i - 1]["t"] if i else 0.0)
        rate = (rows[i]["pages"] - (rows[i - 1]["pages"] if i else 0)) / max(dt, 1e-9)
        total += rate
        cells.append(f"{rate:5.1f}/{rows[i]['queued']}")
    t = max(rows[min(i, len(rows) - 1)]["t"] for rows in series)
    print(f"{t:6.1f} s  all {total:6.1f} pages/s | " + "  ".join(cells))
