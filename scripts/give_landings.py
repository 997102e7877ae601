"""How long each work-aware give took to land (scripts/bench-cluster.sh).

Usage: python3 scripts/give_landings.py OUT_PREFIX
reads OUT_PREFIX-n*/crawler.log: from a giver's "balance: giving N shards
... to node X" to X's first "took over ... shards from node" after it.
Prints one line; nothing when no give was made.
"""
import datetime
import glob
import re
import sys


def when(line):
    return datetime.datetime.fromisoformat(line[:23])


gives, takes = [], []
for path in glob.glob(sys.argv[1] + "-n*/crawler.log"):
    node = re.search(r"-(n\d+)/crawler\.log$", path).group(1)
    with open(path, errors="replace") as log:
        for line in log:
            m = re.search(r"balance: giving \d+ shards .* to node (\S+) \(", line)
            if m:
                gives.append((when(line), m.group(1)))
            elif "cluster: took over" in line:
                takes.append((when(line), node))
landed = []
for at, to in gives:
    after = [t for t, n in takes if n == to and t >= at]
    if after:
        landed.append((min(after) - at).total_seconds())
if gives:
    print(f"    gives landed (s): {', '.join(f'{x:.2f}' for x in sorted(landed))}"
          f"{'' if len(landed) == len(gives) else f'; {len(gives) - len(landed)} not seen to land'}")
