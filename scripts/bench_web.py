#!/usr/bin/env python3
"""The figures of scripts/bench-web.sh, per tenth of the crawl's time.

  bench_web.py SAMPLES REQUESTS_LOG TRUTH

SAMPLES: one JSON object per line (t, rss_mb, stats.json's frontier
figures and its DNS lookups, hit ratio and p99 latency), written by bench-web.sh while the crawl runs. REQUESTS_LOG: the
testsite's request log (--web: 7 fields, the last the address the request
came to). TRUTH: `crawler-testsite --web ... --truth`.
"""
import json
import sys
from collections import defaultdict

TRAPS = ("www.calendar.test", "www.session.test", "www.repeat.test", "www.query.test",
         "www.soft404.test")


def load_requests(path):
    out = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) < 7:
                continue
            out.append((int(p[0]), int(p[2]), p[3], int(p[4]), p[5], p[6]))
    out.sort()
    return out


def per_address_limits(reqs):
    """The most requests in progress at once, and the shortest gap between two
    request starts, that any one address saw: (max, address), (gap_ms, address)."""
    by_addr = defaultdict(list)
    for start, end, _, _, _, addr in reqs:
        by_addr[addr].append((start, end))
    most, most_at, gap, gap_at = 0, "-", float("inf"), "-"
    for addr, spans in by_addr.items():
        events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
        open_now = 0
        for _, d in events:
            open_now += d
            if open_now > most:
                most, most_at = open_now, addr
        starts = sorted(s for s, _ in spans)
        for a, b in zip(starts, starts[1:]):
            if (b - a) / 1000 < gap:
                gap, gap_at = (b - a) / 1000, addr
    return (most, most_at), (gap, gap_at)


def main():
    samples = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    reqs = load_requests(sys.argv[2])
    truth = set(l.strip() for l in open(sys.argv[3]) if l.strip())
    if not reqs:
        print("no requests logged")
        return 1
    t0, t1 = reqs[0][0], max(r[1] for r in reqs)
    span = max(t1 - t0, 1)
    tenth = [[] for _ in range(10)]
    for r in reqs:
        tenth[min(9, (r[0] - t0) * 10 // span)].append(r)
    print("tenth  pages/s  rss_mb  queued_ram  queued_disk  hosts_known  hosts_active"
          "  max_conn_per_addr  min_gap_ms  trap_share  dns_queries  dns_hit  dns_p99_ms")
    sample_t0 = samples[0]["t"] if samples else 0
    for k in range(10):
        rs = tenth[k]
        pages = sum(1 for r in rs if r[3] == 200 and r[4] != "/robots.txt")
        secs = span / 10 / 1e6
        lo, hi = k * span / 10 / 1e6, (k + 1) * span / 10 / 1e6
        inside = [s for s in samples if lo <= s["t"] - sample_t0 < hi] or samples[-1:]
        last = inside[-1] if inside else {}
        (most, _), (gap, _) = per_address_limits(rs)
        trap = sum(1 for r in rs if r[2].split(":")[0] in TRAPS or ".farm" in r[2])
        print(f"{k + 1:5d}  {pages / secs:7.0f}  {max((s['rss_mb'] for s in inside), default=0):6d}"
              f"  {last.get('queued_memory', 0):10d}  {last.get('queued_disk', 0):11d}"
              f"  {last.get('hosts', 0):11d}  {last.get('hosts_active', 0):12d}"
              f"  {most:17d}  {gap:10.1f}  {trap / max(len(rs), 1):10.3f}"
              f"  {last.get('dns_queries', 0):11d}  {last.get('dns_hit_ratio', 0):7.3f}"
              f"  {last.get('dns_p99_ms', 0):10.1f}")
    fetched = set()
    seen = defaultdict(int)
    for r in reqs:
        if r[4] == "/robots.txt":
            continue
        url = "http://" + r[2] + r[4]
        if r[3] == 200:
            fetched.add(url)
        seen[url] += 1
    (most, most_at), (gap, gap_at) = per_address_limits(reqs)
    covered = len(truth & fetched)
    print(f"coverage of the truth (outside traps): {covered}/{len(truth)}"
          f" = {100 * covered / max(len(truth), 1):.2f}%")
    print(f"URLs requested more than once: {sum(1 for n in seen.values() if n > 1)}")
    print(f"most requests at once at one address: {most} ({most_at});"
          f" shortest gap at one address: {gap:.2f} ms ({gap_at})")
    trapped = defaultdict(int)
    for r in reqs:
        host = r[2].split(":")[0]
        if host in TRAPS or ".farm" in host:
            trapped[".".join(host.split(".")[-2:])] += 1
    most_trap = max(trapped.items(), key=lambda kv: kv[1], default=("-", 0))
    print(f"requests to the traps and the farm: {sum(trapped.values())} of {len(reqs)}"
          f" = {100 * sum(trapped.values()) / len(reqs):.2f}%;"
          f" most to one of their registered domains: {most_trap[1]} ({most_trap[0]})")
    print(f"peak RSS: {max((s['rss_mb'] for s in samples), default=0)} MB;"
          f" pages/s over the run: {len(fetched) / (span / 1e6):.0f}")
    print_memory(samples)
    return 0


PARTS = ("filter", "frontier_urls", "frontier_hosts", "host_table", "dns", "scope",
         "robots_queue", "bodies", "other")


def print_memory(samples):
    """The crawler's memory by part (stats.json "memory") at the sample of the
    highest RSS, per host known and per URL queued in RAM."""
    withmem = [s for s in samples if s.get("memory", {}).get("rss")]
    if not withmem:
        return
    s = max(withmem, key=lambda s: s["memory"]["rss"])
    m = s["memory"]
    mb = lambda b: f"{b / 1e6:.1f}"
    print(f"memory at {s['t']:.0f} s (stats.json): resident {mb(m['rss'])} MB"
          f" ({m['allocator']}: {mb(m['allocated'])} MB allocated,"
          f" {mb(m.get('allocator_resident', 0))} MB resident) = "
          + " + ".join(f"{p} {mb(m.get(p, 0))}" for p in PARTS))
    hosts, urls = s.get("hosts", 0), s.get("queued_memory", 0)
    if hosts:
        per_host = m["frontier_hosts"] + m["host_table"] + m["dns"] + m.get("scope", 0)
        print(f"per host known ({hosts}): {m['rss'] / hosts:.0f} B resident,"
              f" {per_host / hosts:.0f} B in the per-host parts"
              f" (frontier {m['frontier_hosts'] / hosts:.0f}, host table"
              f" {m['host_table'] / hosts:.0f}, DNS {m['dns'] / hosts:.0f},"
              f" scope {m.get('scope', 0) / hosts:.0f})")
    if urls:
        print(f"per URL queued in RAM ({urls}): {m['frontier_urls'] / urls:.0f} B")


if __name__ == "__main__":
    sys.exit(main())
