#!/usr/bin/env python3
"""An independent check of a WACZ 1.1.1 package (Python's zipfile, json,
hashlib and gzip; no code of ours): every resource listed with the right
size and sha256, the digest of datapackage.json, WARCs stored uncompressed,
pages.jsonl's header and lines, the index sorted, and every index line's
(filename, offset, length) a gzip member inside the stored WARC whose record
is the line's URL, read by seeking as a replay tool does.

Usage: check_wacz.py FILE.wacz   Prints "ok: ..." and exits 0, or the first
problem and exits 1."""
import gzip
import hashlib
import json
import sys
import zipfile


def fail(msg):
    print("wacz check: " + msg)
    sys.exit(1)


def main(path):
    z = zipfile.ZipFile(path)
    names = {i.filename: i for i in z.infolist()}
    for need in ("datapackage.json", "datapackage-digest.json", "pages/pages.jsonl",
                 "indexes/index.cdx"):
        if need not in names:
            fail(need + " missing")
    raw = z.read("datapackage.json")
    digest = json.loads(z.read("datapackage-digest.json"))
    if digest.get("path") != "datapackage.json" or \
            digest.get("hash") != "sha256:" + hashlib.sha256(raw).hexdigest():
        fail("datapackage-digest.json does not match datapackage.json")
    package = json.loads(raw)
    if package.get("wacz_version") != "1.1.1" or package.get("profile") != "data-package":
        fail("datapackage.json: wacz_version/profile: %r" % package)
    listed = set()
    for r in package["resources"]:
        data = z.read(r["path"])
        if len(data) != r["bytes"] or "sha256:" + hashlib.sha256(data).hexdigest() != r["hash"]:
            fail(r["path"] + ": bytes or hash differ from datapackage.json")
        listed.add(r["path"])
    unlisted = set(names) - listed - {"datapackage.json", "datapackage-digest.json"}
    if unlisted:
        fail("not in datapackage.json: %s" % sorted(unlisted))
    warcs = [n for n in names if n.startswith("archive/")]
    if not warcs:
        fail("no archive/ WARC")
    for w in warcs:
        if names[w].compress_type != zipfile.ZIP_STORED:
            fail(w + " is compressed in the ZIP (replay must seek into it)")
    pages = z.read("pages/pages.jsonl").decode().splitlines()
    if json.loads(pages[0]).get("format") != "json-pages-1.0":
        fail("pages.jsonl: no json-pages-1.0 header")
    for line in pages[1:]:
        p = json.loads(line)
        if not p.get("url") or not p.get("ts"):
            fail("pages.jsonl line without url or ts: " + line)
    index = z.read("indexes/index.cdx").split(b"\n")[:-1]
    if index != sorted(index):
        fail("indexes/index.cdx is not sorted")
    opened = {w: z.open(w) for w in warcs}
    for line in index:
        key, ts, fields = line.decode().split(" ", 2)
        f = json.loads(fields)
        member = opened.get("archive/" + f["filename"])
        if member is None:
            fail("index names " + f["filename"] + ", not in archive/")
        member.seek(int(f["offset"]))
        try:
            record = gzip.decompress(member.read(int(f["length"])))
        except (OSError, EOFError) as e:
            fail("index line %s: no gzip member at offset %s (%s)" % (key, f["offset"], e))
        head = record.split(b"\r\n\r\n", 1)[0].decode("utf-8", "replace")
        if not head.startswith("WARC/1.1") or \
                ("WARC-Target-URI: " + f["url"]) not in head.split("\r\n"):
            fail("index line %s: the record at offset %s is not it" % (key, f["offset"]))
    print("ok: %d WARC files, %d index lines, %d pages" % (len(warcs), len(index),
                                                           len(pages) - 1))


if __name__ == "__main__":
    main(sys.argv[1])
