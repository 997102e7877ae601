#!/usr/bin/env python3
"""Checks the arrows between the rooms of crawler/src/ (docs/architecture.md).

The rooms, bottom up:

  browser -> output -> engine -> checkpoint -> archive -> report -> crawl -> cluster -> cli

A file may include headers of its own room and of rooms below it, never of a
room above. A public header (crawler/include/crawler/X.h) belongs to the room
named in PUBLIC. On top of that, no file outside cluster/ may include a
cluster header but cli/main.cc, and that only cluster/entry.h: the engine
reaches the cluster through one interface (engine/placement.h and
crawl/node.h), and the cluster is its own CMake target, the only
one that links hiredis (checked below from crawler/CMakeLists.txt).
Inside cluster/, the sub-rooms, bottom up (each a folder; the files at
cluster/ itself assemble them, above all):

  redis -> exchange -> membership -> handoff -> report -> cluster/

  redis/       the connection, Sentinel, the shared Lua functions, wire formats
  exchange/    URLs between nodes: sender, receiver, outbox, inbox, spill
  membership/  who holds what: members, tenure, leases, heartbeats, shards,
               their loads and states, commits, the job
  handoff/     shards moving: handoffs, transfers, kept checkpoints, balancing
  report/      `crawler cluster-stats` and the timeline

A cluster file may include cluster headers of its own sub-room and of those
below it, never of one above.
Each room's code is in its room's namespace (NAMESPACE): output/'s in
crawler::output, cluster/'s in crawler::cluster, and so on, so a name shows its
room (an engine name used in crawl/ reads engine::X).
The places where a rule is broken today are listed in KNOWN, each with its
reason; the check fails on any other, and on a KNOWN entry that no longer
occurs (so that the list stays true as the rooms are cleaned up).

Usage: python3 scripts/check_rooms.py   (from anywhere; exit 1 on a failure)
"""
import pathlib
import re
import sys

ROOMS = ["browser", "output", "engine", "checkpoint", "archive", "report", "crawl", "cluster", "cli"]
# The one cluster header a file outside cluster/ may include, and where.
CLUSTER_ENTRY = ("crawler/src/cli/main.cc", "cluster/entry.h")
PUBLIC = {
    "warc.h": "output",
    "wacz.h": "archive",
    "config.h": "engine",
    "seeds.h": "engine",
    "fetcher.h": "engine",
    "body.h": "engine",
    "resolver.h": "engine",
    "crawl_counts.h": "engine",
    "stats_report.h": "report",
    "version.h": "report",
    "checkpoint.h": "checkpoint",
    "crawl.h": "crawl",
}
SUBROOMS = ["redis", "exchange", "membership", "handoff", "report", ""]
# Each room's namespace; a file declares no crawler:: namespace but its
# room's (or one nested in it).
NAMESPACE = {room: "crawler::" + room for room in ROOMS}
NAMESPACE_DECL = re.compile(r"^\s*namespace\s+(crawler(?:::\w+)*)\s*\{", re.M)
# (file, included header) -> why it is allowed for now.
KNOWN = {
    ("crawler/src/cluster/report/cluster_stats.cc", "cluster/entry.h"):
        "it defines ClusterStats, which the cluster's one entry header declares "
        "for cli/main.cc",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def room_of_header(inc):
    """The room a quoted include names, or None for another library."""
    first, _, rest = inc.partition("/")
    if first in ROOMS:
        return first
    if first == "crawler" and rest in PUBLIC:
        return PUBLIC[rest]
    return None


def subroom(path):
    """The cluster sub-room of "cluster/X/f.h" (X), or "" for cluster/f.h."""
    parts = path.split("/")
    return parts[1] if len(parts) > 2 else ""


def check_links(root):
    """hiredis is linked by the cluster target alone, and the engine target
    builds no cluster source (crawler/CMakeLists.txt)."""
    text = (root / "crawler/CMakeLists.txt").read_text()
    errors = []
    blocks = re.findall(r"crawler_library\((\w+)(.*?)\)\s*$", text, re.S | re.M)
    for name, body in blocks:
        if name != "cluster" and "HIREDIS" in body:
            errors.append(f"crawler/CMakeLists.txt: target {name} links hiredis "
                          "(only crawler::cluster may)")
        if name != "cluster" and "src/cluster/" in body:
            errors.append(f"crawler/CMakeLists.txt: target {name} builds cluster/ sources")
    if "cluster" not in [n for n, _ in blocks]:
        errors.append("crawler/CMakeLists.txt: no crawler_library(cluster ...)")
    return errors


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    files = sorted((root / "crawler/src").rglob("*.[ch]*")) + sorted(
        (root / "crawler/include/crawler").glob("*.h"))
    found, errors = set(), []
    for path in files:
        rel = path.relative_to(root).as_posix()
        parts = rel.split("/")
        if parts[1] == "include":
            if parts[-1] not in PUBLIC:
                errors.append(f"{rel}: public header with no room (add it to PUBLIC)")
                continue
            room = PUBLIC[parts[-1]]
        elif parts[2] in ROOMS:
            room = parts[2]
        else:
            errors.append(f"{rel}: not in a room ({', '.join(ROOMS)})")
            continue
        text = path.read_text()
        for ns in NAMESPACE_DECL.findall(text):
            want = NAMESPACE[room]
            if ns != want and not ns.startswith(want + "::"):
                errors.append(f"{rel}: namespace {ns} in room {room}/ (its namespace: {want})")
        for inc in INCLUDE.findall(text):
            target = room_of_header(inc)
            if target is None:
                continue
            bad = []
            if ROOMS.index(target) > ROOMS.index(room):
                bad.append(f"{room}/ reaches up to {target}/")
            if target == "cluster" and room != "cluster" and (rel, inc) != CLUSTER_ENTRY:
                bad.append("a cluster header outside cluster/")
            if target == "cluster" and room == "cluster" and parts[1] == "src":
                mine = subroom("/".join(parts[2:]))
                theirs = subroom(inc)
                if mine not in SUBROOMS or theirs not in SUBROOMS:
                    bad.append(f"cluster/{mine or theirs}/ is not a sub-room "
                               f"({', '.join(r for r in SUBROOMS if r)})")
                elif SUBROOMS.index(theirs) > SUBROOMS.index(mine):
                    bad.append(f"cluster/{mine}/ reaches up to cluster/{theirs or ''}")
            if not bad:
                continue
            if (rel, inc) in KNOWN:
                found.add((rel, inc))
            else:
                errors.append(f"{rel}: includes \"{inc}\": {'; '.join(bad)}")
    errors += check_links(root)
    for key in sorted(set(KNOWN) - found):
        errors.append(f"{key[0]}: KNOWN lists \"{key[1]}\", which it no longer "
                      "breaks a rule with: remove the entry")
    for rel, inc in sorted(found):
        print(f"known: {rel} -> {inc}: {KNOWN[(rel, inc)]}")
    for e in errors:
        print(f"error: {e}")
    print(f"check_rooms: {len(files)} files, {len(found)} known exceptions, "
          f"{len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
