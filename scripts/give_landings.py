"""How long each work-aware give took to land (scripts/bench-cluster.sh).

Usage: python3 scripts/give_landings.py OUT_PREFIX
reads OUT_PREFIX-n*/crawler.log: from a giver's "balance: giving N shards
... to node X" to X's first "took over ... shards from node" after it
(landed), and to the giver's last "handed N shards over" before its next
give (handed over: a give's shards go one checkpoint each as they drain).
Prints two lines; nothing when no give was made.
"""
import datetime
import glob
import re
import sys


def when(line):
    return datetime.datetime.fromisoformat(line[:23])


gives, takes, handed = [], [], []
for path in glob.glob(sys.argv[1] + "-n*/crawler.log"):
    node = re.search(r"-(n\d+)/crawler\.log$", path).group(1)
    given_at = last_handed = None
    with open(path, errors="replace") as log:
        for line in log:
            m = re.search(r"balance: giving \d+ shards .* to node (\S+) \(", line)
            if m:
                if given_at and last_handed:
                    handed.append((last_handed - given_at).total_seconds())
                given_at, last_handed = when(line), None
                gives.append((given_at, m.group(1)))
            elif "cluster: took over" in line:
                takes.append((when(line), node))
            elif given_at and re.search(r"cluster: handed \d+ shards over", line):
                last_handed = when(line)
    if given_at and last_handed:
        handed.append((last_handed - given_at).total_seconds())
landed = []
for at, to in gives:
    after = [t for t, n in takes if n == to and t >= at]
    if after:
        landed.append((min(after) - at).total_seconds())
if gives:
    print(f"    gives landed (s): {', '.join(f'{x:.2f}' for x in sorted(landed))}"
          f"{'' if len(landed) == len(gives) else f'; {len(gives) - len(landed)} not seen to land'}")
    print(f"    gives handed over (s): {', '.join(f'{x:.2f}' for x in sorted(handed))}")
