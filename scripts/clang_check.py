#!/usr/bin/env python3
"""clang's front end (-fsyntax-only) over the sources the fuzz build does not
compile: the cluster library, the crawler's own main and the testsite.

The fuzz build (clang, -Werror, CMakePresets.json) is where -Wthread-safety
and clang's other warnings are enforced, but it compiles only what the
fuzzers link. Thread-safety analysis is part of clang's front end, so a
syntax-only pass over the rest, with the same flags, checks every GUARDED_BY
annotation for a fraction of a build (the cluster's had never been compiled
by clang in CI, and one of its unity files did not: a -Wshadow error).

Usage: python3 scripts/clang_check.py [BUILD_DIR]   (default build-fuzz,
configured by scripts/fuzz.sh). Exits 1 naming each file that fails.
"""
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

TARGETS = ("crawler_cluster.dir", "crawler.dir", "crawler-testsite.dir")


def main() -> int:
    build = sys.argv[1] if len(sys.argv) > 1 else "build-fuzz"
    with open(f"{build}/compile_commands.json", encoding="utf-8") as f:
        entries = [e for e in json.load(f) if any(f"/{t}/" in e["file"] for t in TARGETS)]
    if not entries:
        print(f"clang_check: no {', '.join(TARGETS)} sources in {build}/compile_commands.json")
        return 1

    def check(entry):
        command = re.sub(r" -o \S+", " ", entry["command"]).replace(" -c ", " -fsyntax-only ")
        run = subprocess.run(command, shell=True, cwd=entry["directory"],
                             capture_output=True, text=True, check=False)
        return entry["file"], run.returncode, run.stderr

    failed = 0
    with ThreadPoolExecutor(max_workers=2) as pool:
        for name, code, err in pool.map(check, entries):
            if code != 0:
                failed += 1
                print(err, end="")
                print(f"clang_check: {name} failed")
    print(f"clang_check: {len(entries) - failed} of {len(entries)} files pass clang -fsyntax-only "
          "(-Wthread-safety -Werror)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
