#!/usr/bin/env python3
"""Writes a small deterministic two-host demo site for scripts/demo.sh.

Usage: demo_site.py DIR PORT_A PORT_B [PAGES]
DIR/a is served on 127.0.0.1:PORT_A, DIR/b on PORT_B. Host a has a robots.txt
that disallows /private/, pages that link to each other, to host b, to a
missing page and to a private page; host b has no robots.txt (404: allow all).
"""
import os
import random
import sys

root, port_a, port_b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pages = int(sys.argv[4]) if len(sys.argv) > 4 else 120
rng = random.Random(7)
words = "crawl archive index page link web frontier polite robots filter".split()

def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)

write(f"{root}/a/robots.txt", "User-agent: *\nDisallow: /private/\n")
write(f"{root}/a/private/secret.html", "<p>not for crawlers</p>")
half = pages // 2
for host, port, other in (("a", port_a, port_b), ("b", port_b, port_a)):
    for i in range(half):
        links = [f"/p/{rng.randrange(half)}.html" for _ in range(5)]
        links += [f"http://127.0.0.1:{other}/p/{rng.randrange(half)}.html", f"{i}.html#top"]
        if host == "a" and i % 10 == 0:
            links += ["/private/secret.html", "/missing.html"]
        body = " ".join(rng.choice(words) for _ in range(200))
        anchors = "\n".join(f'<a href="{l}">{l}</a>' for l in links)
        write(f"{root}/{host}/p/{i}.html",
              f"<!doctype html><title>{host} {i}</title><p>{body}</p>\n{anchors}\n")
    write(f"{root}/{host}/index.html",
          "<!doctype html><title>start</title>" +
          "".join(f'<a href="/p/{i}.html">{i}</a> ' for i in range(0, half, 7)))
