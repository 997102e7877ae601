#!/usr/bin/env python3
"""Writes the crawl benchmark's static site: N pages of about 10 KB, each with
30-80 links to other pages (relative, root-relative and a few with fragments).
Page 0 is index.html; every page is reachable from it. Deterministic.
Usage: bench_site.py DIR [PAGES]"""
import os
import random
import sys

WORDS = ("crawler frontier bloom filter politeness archive record host the of and a page link "
         "web index robots delay queue depth seed fetch response header body digest").split()


def main():
    out = sys.argv[1]
    pages = int(sys.argv[2]) if len(sys.argv) > 2 else 50000
    rng = random.Random(7)
    os.makedirs(os.path.join(out, "p"), exist_ok=True)
    filler = [" ".join(rng.choice(WORDS) for _ in range(400)) for _ in range(64)]
    for i in range(pages):
        nlinks = rng.randint(30, 80)
        # Page i+1 is always linked (so the chain reaches every page); the rest are random.
        targets = [(i + 1) % pages] + [rng.randrange(pages) for _ in range(nlinks - 1)]
        parts = [f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>page {i}</title></head><body><h1>Page {i}</h1>\n"]
        per = max(0, 10000 // nlinks - 50)
        for k, t in enumerate(targets):
            style = k % 3
            href = f"{t}.html" if style == 0 else f"/p/{t}.html" if style == 1 else f"../p/{t}.html#s{k}"
            text = filler[rng.randrange(64)][:per]
            parts.append(f"<p>{text} <a href=\"{href}\">page {t}</a></p>\n")
        parts.append("</body></html>\n")
        with open(os.path.join(out, "p", f"{i}.html"), "w") as f:
            f.write("".join(parts))
    with open(os.path.join(out, "index.html"), "w") as f:
        f.write("<!DOCTYPE html><html><body><a href=\"/p/0.html\">start</a></body></html>\n")


if __name__ == "__main__":
    main()
