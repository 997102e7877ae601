#!/usr/bin/env python3
"""The 6-node 50 ms bench crawl, simulated: how soon placement and balancing
rules could end it, without the bench's noise.

Usage: balance_sim.py FETCH_LOG RUNS [SPEC ...]

FETCH_LOG is the fetch-log.jsonl of one crawl of the bench's site by a single
node (every request, with its depth and referrer: the site's link graph and
its failures). Each SPEC (comma-separated key=value, "" for the defaults) is
simulated RUNS times, each with another draw of hosts to nodes (seed 0, 1,
...), and its ends are printed with their mean and largest.

The model: `nodes` nodes of `conns` connections, every request 50 ms (60 for
/slow/), one at a time per host; a host's robots.txt first (a 5xx fetched
again after 1, 2, 4 s x 0.5-1.5, then its pages skipped); a page's links
admitted `proc` s after it (`xlat` more when another node owns them); a
redirect's target first in its host's queue; of the due hosts the one with
the most queued work first (FrontierOptions::most_work_first; with
`pick_by_depth` each queued URL weighed as `load_kind=depth` below); a
failed page back at its depth's end, its host held for the back-off only
when it has nothing else. Hosts are dealt to nodes evenly (placement by seed hosts;
`place_by_work`: by each host's requests, known only to a simulation).

With `balance`, each node every `hb` s (staggered) gives its heaviest hosts
(`lightest_first`: its lightest), up to half the gap, to the least loaded
node not reserved (`reserve` s after a give), when the gap is at least
`min_gap` of its load, its load is at least `min_s` of work, neither is
under `min_queued` URLs, it gave none in the last `beats_between`
heartbeats, and its rate is known (`rate_after` s); the hosts move `land` s
later (balance.h, balancer.cc; the defaults are the rules as built,
2026-12-04; before: min_gap=0.25,beats_between=2,reserve=10). `load_kind`:
the load a node publishes, `queued` (its URLs queued, as built), `depth`
(each queued URL weighed by what URLs of its depth brought on this node so
far) or `oracle` (each host's requests still to come).

Not modelled: CPU (six nodes and the site on two cores), a give's drain and
checkpoint, the exchange's batching, the nodes' start and exit. The bench
measured ~1 s over this model (docs/benchmarks.md)."""
import collections
import heapq
import json
import random
import sys
from urllib.parse import urlsplit

DELAY = 0.050


def host_of(url):
    return urlsplit(url).netloc


class Site:
    def __init__(self, path):
        self.attempts = collections.defaultdict(list)  # url -> its request lines
        self.info = {}
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if "fetch_ms" in r:
                    self.attempts[r["url"]].append(r)
                    self.info.setdefault(r["url"], r)
        self.children = collections.defaultdict(list)
        roots = []
        for u, r in self.info.items():
            (self.children[r["referrer"]] if r["referrer"] else roots).append(u)
        self.robots = {host_of(u): u for u in roots if u.endswith("/robots.txt")}
        self.seeds = [u for u in roots if not u.endswith("/robots.txt")]
        self.hosts = sorted({host_of(u) for u in self.info})
        self.work = collections.Counter()
        for u, v in self.attempts.items():
            self.work[host_of(u)] += len(v)


def simulate(site, seed, load_kind="queued", min_gap=0.1, min_s=2.0, beats_between=1,
             hb=2.0, land=0.55, reserve=2.0, min_queued=50, rate_after=1.0, nodes=6, conns=8,
             xlat=0.025, proc=0.002, balance=True, lightest_first=False, place_by_work=False,
             pick_by_depth=False):
    rnd = random.Random(seed)
    hosts = site.hosts[:]
    rnd.shuffle(hosts)
    node_of = {h: i % nodes for i, h in enumerate(hosts)}
    if place_by_work:  # each host, largest first, to the node with the least work so far
        placed = [0] * nodes
        for h in sorted(hosts, key=lambda h: -site.work[h]):
            node_of[h] = min(range(nodes), key=lambda n: placed[n])
            placed[node_of[h]] += site.work[h]
    queue = {h: [] for h in hosts}
    busy = dict.fromkeys(hosts, False)
    ready = dict.fromkeys(hosts, False)
    due_since = dict.fromkeys(hosts, 0.0)
    hold = {}
    fetched = collections.Counter()
    admitted_d, fetched_d = collections.Counter(), collections.Counter()
    free = [conns] * nodes
    done_at = collections.defaultdict(list)
    last_give, reserved = [-99.0] * nodes, [-99.0] * nodes
    events, seq, tries = [], [0], collections.Counter()
    waiting_seeds = collections.defaultdict(list)
    for u in site.seeds:
        waiting_seeds[host_of(u)].append(u)
    robots_q = {n: [] for n in range(nodes)}
    for h, u in site.robots.items():
        robots_q[node_of[h]].append(u)

    def push(t, kind, data):
        heapq.heappush(events, (t, seq[0], kind, data))
        seq[0] += 1

    def admit(t, u, rank, front=False):
        h = host_of(u)
        seq[0] += 1
        heapq.heappush(queue[h], (rank, -seq[0] if front else seq[0], u))
        if not busy[h] and len(queue[h]) == 1:
            due_since[h] = t

    def hosts_of(n):
        return [h for h in hosts if node_of[h] == n]

    def start(t, n):
        while free[n] > 0:
            if robots_q[n]:
                free[n] -= 1
                push(t + DELAY, "done", (robots_q[n].pop(0), n))
                continue
            due = [h for h in hosts_of(n)
                   if ready[h] and not busy[h] and queue[h] and hold.get(h, 0) <= t]
            if not due:
                return
            h = min(due, key=lambda h: (due_since[h] - t) - (
                sum(brings(n, site.info[u]["depth"]) for _, _, u in queue[h])
                if pick_by_depth else len(queue[h])) * DELAY)
            _, _, u = heapq.heappop(queue[h])
            busy[h] = True
            free[n] -= 1
            push(t + DELAY + (0.010 if "/slow/" in u else 0), "done", (u, n))

    def brings(n, d):  # requests a URL of depth d brings on node n, itself included
        e = 1.0
        for dd in range(5, d - 1, -1):
            b = admitted_d[(n, dd + 1)] / fetched_d[(n, dd)] if fetched_d[(n, dd)] else 0
            e = 1 + b * e
        return e

    def estimate(h, n):
        if load_kind == "queued":
            return len(queue[h])
        if load_kind == "oracle":
            return site.work[h] - fetched[h]
        if load_kind == "depth":
            return sum(brings(n, site.info[u]["depth"]) for _, _, u in queue[h])
        raise ValueError(load_kind)

    def load(n):
        return sum(estimate(h, n) for h in hosts_of(n) if ready[h])

    def beat(t, n):
        if t < rate_after or t - last_give[n] < beats_between * hb:
            return
        mine = [h for h in hosts_of(n) if ready[h] and hold.get(h, 0) <= t]
        total = sum(estimate(h, n) for h in mine)
        rate = len([x for x in done_at[n] if x > t - 5]) / min(5.0, t)
        if total < min_queued or rate <= 0 or total / rate < min_s:
            return
        loads = {m: load(m) for m in range(nodes) if m != n and reserved[m] <= t}
        if not loads:
            return
        taker = min(loads, key=loads.get)
        gap = total - loads[taker]
        if gap < min_queued or gap < min_gap * total:
            return
        give, given = [], 0
        order = 1 if lightest_first else -1
        for h in sorted(mine, key=lambda h: order * estimate(h, n)):
            e = estimate(h, n)
            if e <= 0:
                continue
            if given + e <= gap / 2:
                give.append(h)
                given += e
        if given < min_queued / 2:
            return
        last_give[n], reserved[taker] = t, t + reserve
        for h in give:
            hold[h] = t + land
        push(t + land, "move", (give, taker))

    for n in range(nodes):
        start(0.0, n)
        if balance:
            push(0.1 + hb * n / nodes, "beat", n)
    end = 0.0
    while events:
        t, _, kind, data = heapq.heappop(events)
        if kind == "done":
            u, n = data
            h = host_of(u)
            free[n] += 1
            end = max(end, t)
            done_at[n].append(t)
            fetched[h] += 1
            k = tries[u]
            tries[u] += 1
            again = k + 1 < len(site.attempts[u])
            if u.endswith("/robots.txt"):
                if again:
                    push(t + (2 ** k) * rnd.uniform(0.5, 1.5), "robots", u)
                else:
                    ready[h] = True
                    for s in waiting_seeds[h]:
                        admit(t, s, 0)
            else:
                busy[h] = False
                due_since[h] = t
                if again:
                    if not queue[h]:
                        hold[h] = t + (2 ** k) * rnd.uniform(0.5, 1.5)
                        push(hold[h], "wake", node_of[h])
                    admit(t, u, site.info[u]["depth"])
                else:
                    fetched_d[(n, site.info[u]["depth"])] += 1
                    location = site.info[u].get("location")
                    for c in site.children.get(u, []):
                        owner = node_of[host_of(c)]
                        admitted_d[(owner, site.info[c]["depth"])] += 1
                        front = bool(location) and c.endswith(location)
                        push(t + proc + (xlat if owner != n else 0), "admit",
                             (c, site.info[c]["depth"], front))
            start(t, n)
            if node_of[h] != n:
                start(t, node_of[h])
        elif kind == "robots":
            n = node_of[host_of(data)]
            robots_q[n].append(data)
            start(t, n)
        elif kind == "admit":
            c, rank, front = data
            admit(t, c, rank, front)
            start(t, node_of[host_of(c)])
        elif kind == "wake":
            start(t, data)
        elif kind == "move":
            give, taker = data
            for h in give:
                node_of[h] = taker
            for n in range(nodes):
                start(t, n)
        elif kind == "beat":
            if any(e[2] != "beat" for e in events):  # the crawl is not over
                push(t + hb, "beat", data)
                beat(t, data)
    return end


def parse(spec):
    out = {}
    for item in filter(None, spec.split(",")):
        k, v = item.split("=")
        out[k] = (v if k == "load_kind" else (v == "True") if k in ("balance", "lightest_first", "place_by_work",
                                           "pick_by_depth")
                  else float(v))
    return out


def main():
    site = Site(sys.argv[1])
    runs = int(sys.argv[2])
    total = sum(len(v) for v in site.attempts.values())
    print(f"{total} requests; 48 connections at {DELAY * 1000:.0f} ms: "
          f"{total * DELAY / 48:.2f} s at the least")
    for spec in sys.argv[3:] or [""]:
        ends = [simulate(site, s, **parse(spec)) for s in range(runs)]
        print(f"{spec or 'as built'}: " + " ".join(f"{e:.2f}" for e in ends) +
              f"  mean {sum(ends) / len(ends):.2f}, largest {max(ends):.2f}")


if __name__ == "__main__":
    main()
