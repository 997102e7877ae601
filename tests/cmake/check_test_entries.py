#!/usr/bin/env python3
"""Checks a build's ctest entries against what they should be, so that a
test cannot be lost or doubled without a failure:

1. The costs file (tests/cmake/ctest-costs-asan.txt): every line names an
   entry. Otherwise the cost it gives (the entry's TIMEOUT, its place in
   the asan run's order) is lost without a word when a case is renamed.
   Lines of a program this build does not have (the cluster's, built with
   -DCRAWLER_CLUSTER=OFF; a program a partial build left out, shown as
   PROGRAM_NOT_BUILT) are skipped, and counted.
2. No case runs in two entries: a named entry (tests/CMakeLists.txt's
   crawler_add_catch_entry: a spec by name or tag, maybe a section) selects
   only cases that no per-case entry runs (hidden ones, [.]), and no two
   named entries run the same case and section.

3. No case's name hangs Catch2's console reporter. Catch 2.13 prints a
   case's name as a header when the case fails or warns, its continuation
   lines indented to just past the first ": " of the name; with that past
   column ~70 of its 80, a line holds one character and the wrapping never
   ends (a failed case printed 22 GB of "-" lines until ctest's TIMEOUT).
   The first ": " must be within the first 70 characters.

Usage: check_test_entries.py COSTS_FILE BUILD_DIR [CTEST]
Exit 0 when all hold, 1 otherwise (what is wrong, listed).
"""
import json
import re
import subprocess
import sys


def cost_names(path):
    names = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            m = re.fullmatch(r"(.+) ([0-9]+) ([0-9.eE+-]+)", line)
            if not m:
                sys.exit(f"{path}:{n}: not 'NAME RUNS SECONDS': {line!r}")
            names.append((n, m.group(1)))
    return names


def program_of(name):
    """The program an entry's or a cost line's name belongs to: "PROGRAM:case"
    (one entry per case) or "NAME/part" (the named entries)."""
    return re.split(r":|/", name)[0]


def check_costs(costs, entries):
    programs = {program_of(e) for e in entries}
    not_built = {e[: -len("_NOT_BUILT")] for e in entries if e.endswith("_NOT_BUILT")}
    cluster_built = any(p.startswith("cluster_") for p in programs)
    problems, skipped = [], 0
    lines = cost_names(costs)
    for n, name in lines:
        if name in entries:
            continue
        program = program_of(name)
        if program in not_built or (program.startswith("cluster_") and not cluster_built):
            skipped += 1
            continue
        problems.append(f"{costs}:{n}: no ctest entry is named {name!r}")
    print(f"costs: {len(lines)} lines, {len(lines) - len(problems) - skipped} name an entry, "
          f"{skipped} of programs not built here, {len(problems)} name none")
    if problems:
        problems.append("a case was renamed or removed: scripts/update-test-costs.sh "
                        "BUILD_DIR asan rewrites the file from a run's timings")
    return problems


def selected(command):
    """The cases (and the section, '' for all) a named entry's command runs."""
    binary, args = command[0], command[1:]
    spec, section, i = [], "", 0
    while i < len(args):
        if args[i] in ("-c", "-w", "--durations"):
            if args[i] == "-c":
                section = args[i + 1]
            i += 2
            continue
        spec.append(args[i])
        i += 1
    out = subprocess.run([binary, *spec, "--list-test-names-only"], capture_output=True,
                         text=True, check=False).stdout
    return binary, section, [line for line in out.splitlines() if line]


def check_once(tests):
    by_case = {}  # (binary, case with ';' as ',') -> entries that run it, with sections
    named = []
    for t in tests:
        command = t.get("command")
        if not command or not command[0].endswith("_test"):
            continue
        name = t["name"]
        m = re.fullmatch(r"([a-z_]+):(.+)", name)
        if m and command[0].endswith("/" + m.group(1)):
            by_case.setdefault((command[0], m.group(2)), []).append((name, ""))
        else:
            named.append((name, command))
    for name, command in named:
        binary, section, cases = selected(command)
        for case in cases:
            by_case.setdefault((binary, case.replace(";", ",")), []).append((name, section))
    problems = []
    for (binary, case), runs in sorted(by_case.items()):
        sections = [s for _, s in runs]
        if len(runs) > 1 and ("" in sections or len(set(sections)) < len(sections)):
            problems.append(f"{case!r} runs in {len(runs)} entries: "
                            + ", ".join(n for n, _ in runs))
    print(f"entries: {len(by_case)} cases (or sections), {len(named)} named entries, "
          f"{len(problems)} run twice")
    return problems


# Catch 2.13's header: continuation lines indented past the first ": ".
HEADER_INDENT_MAX = 70


def check_headers(tests):
    problems = []
    for t in tests:
        m = re.fullmatch(r"[a-z_]+:(.+)", t["name"])
        if not m:
            continue
        at = m.group(1).find(": ")
        if at >= 0 and at + 2 > HEADER_INDENT_MAX:
            problems.append(f"{t['name']!r}: its first ': ' is at column {at}, past "
                            f"{HEADER_INDENT_MAX - 2}: Catch's header would wrap forever "
                            "if the case fails (reword, or put the ': ' earlier)")
    print(f"headers: {len(problems)} case names Catch could not print")
    return problems


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    costs, build = sys.argv[1], sys.argv[2]
    ctest = sys.argv[3] if len(sys.argv) == 4 else "ctest"
    listed = subprocess.run([ctest, "--test-dir", build, "--show-only=json-v1"],
                            check=True, capture_output=True, text=True).stdout
    tests = json.loads(listed)["tests"]
    problems = (check_costs(costs, {t["name"] for t in tests}) + check_once(tests) +
                check_headers(tests))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
