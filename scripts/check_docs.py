#!/usr/bin/env python3
"""Checks that README.md and docs/ name only what exists.

1. Paths: every `backticked` token and every markdown link that names a file
   of the repository (it starts with one of its top-level folders, or with a
   room of crawler/src, or is an include path such as `crawler/warc.h`) must
   resolve to a file or folder of the clone, as the compiler would find it:
   from the root, under a library's include/ folder, or under crawler/src/.
   Paths under a crawl's output directory (OUT) are told apart by their
   placeholders (`NNNNN`, `<prefix>`, `SEQ`, `*`) or by not starting with a
   folder of the repository.
2. Config keys: every `section.key` token (also as `section.key = value` and
   `--set section.key=value`) whose section is one of the config's must be a
   key of the schema (crawler/src/engine/config*.cc) or a field of stats.json
   (crawler/src/report/stats_schema.h, crawler/include/crawler/crawl_counts.h:
   docs/stats.md speaks of `crawl.guarded` and its kin).
3. No work-log words: tracker numbers and the like have no place in the docs,
   nor in the sources, scripts and tests (every text file git tracks under
   README.md, docs/, scripts/, tests/, crawler/ but test data and fuzz
   corpora), read across line breaks (a phrase split over two lines counts).
6. Dated figures name their command: a paragraph of README.md or docs/ (but
   docs/history.md, the record of past runs) that dates a measurement (the
   marker: a YYYY-MM-DD date) must name the command that reproduces it, in
   itself or in the paragraph before or after: `bash scripts/...`,
   `python3 scripts/...`, `build/tests/...` (a benchmark), `build/crawler/
   crawler ...`, a `scripts/*.sh`, or a test (`*_test "..."`, ctest).
5. The declarations docs/architecture.md gives `Cluster` ("a facade of N
   declarations") are what scripts/count_declarations.py counts now.
4. The Grafana dashboard (docs/grafana-dashboard.json) is valid JSON, and
   every metric its queries name is a family the renderer writes
   (crawler/src/report/metrics.cc; a histogram's _bucket, _sum and _count
   are its family's). cluster_test "Cluster metrics*" checks them against a
   live node's /metrics as well.

Usage: python3 scripts/check_docs.py   (from anywhere; exit 1 on a failure)
"""
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOP = ["base", "dedup", "frontier", "parsers", "crawler", "configs", "tests",
       "scripts", "docs", ".ci"]
ROOMS = ["output", "engine", "checkpoint", "archive", "report", "crawl", "cluster", "cli"]
# Where an include path is looked up, as the build's include directories.
INCLUDE_ROOTS = [ROOT, ROOT / "crawler" / "src"] + sorted(ROOT.glob("*/include"))
BASENAMES = {pathlib.PurePath(f).name for f in subprocess.run(
    ["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True,
    check=True).stdout.split()}
PLACEHOLDER = re.compile(r"NNN|<|>|\bSEQ\b|\*|\.\.\.|\bX\b|\bN\b|\bNAME\b")
WORK_WORDS = re.compile(
    # (Written with brackets so that this file holds none of the words.)
    r"issu[e] [0-9]|sto[p] [0-9]|sessio[n] [0-9]|rehears[a]l|\.\./share[d]|hard 9[0]|"
    r"issu[e] notes?\b", re.IGNORECASE)
FILE_EXT = re.compile(r"\.(cc|h|md|py|sh|toml|json|jsonl|txt|bin|log|q|cmake|gz|"
                      r"cdxj|wacz|html|yml|yaml|lua|js|mjs)$")


def schema_keys():
    keys = set()
    for f in sorted((ROOT / "crawler/src/engine").glob("config*.cc")):
        for m in re.finditer(r'\b\w*Key(?:<[^>]*>)?\(\s*"(\w+)",\s*"(\w+)"',
                             f.read_text()):
            keys.add(m.group(1) + "." + m.group(2))
    return keys


def stats_fields():
    words = set()
    for f in ["crawler/src/report/stats_schema.h",
              "crawler/include/crawler/crawl_counts.h"]:
        words |= set(re.findall(r"\b[a-z][a-z0-9_]*\b", (ROOT / f).read_text()))
    return words


def is_repo_path(token):
    first = token.split("/", 1)[0]
    if "/" not in token:
        return token in ("CMakeLists.txt", "README.md", "CMakePresets.json")
    if first in ROOMS:  # also an OUT folder's name (`checkpoint/hosts.bin`)
        return re.search(r"\.(cc|h)$", token) is not None
    return first in TOP and not re.search(r"/\d+\.\d+$", token)  # not crawler/0.1


def resolves(token):
    t = token.rstrip("/")
    return any((base / t).exists() for base in INCLUDE_ROOTS)


def check_work_words(path, errors):
    """WORK_WORDS in `path`, the text's runs of white space (line breaks and a
    comment's leading // or #) read as one space."""
    rel = path.relative_to(ROOT)
    try:
        text = path.read_text()
    except (UnicodeDecodeError, OSError):
        return
    # Each character's line, then the text with line breaks, comment marks
    # and indentation folded into one space.
    flat, line_of, line = [], [], 1
    for m in re.finditer(r"\s*\n\s*(?:(?://+|#+)\s*)?|.", text, re.DOTALL):
        piece = m.group(0)
        if "\n" in piece:
            flat.append(" ")
            line_of.append(line)
            line += piece.count("\n")
        else:
            flat.append(piece)
            line_of.append(line)
    joined = "".join(flat)
    for m in WORK_WORDS.finditer(joined):
        errors.append(f"{rel}:{line_of[m.start()]}: work-log words: {m.group(0)}")


def work_word_files():
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "README.md", "docs", "scripts", "tests",
         "crawler"], capture_output=True, text=True, check=True).stdout.split()
    skip = ("tests/parsers/data/", "tests/fuzz/corpus/")
    return [ROOT / f for f in listed
            if not f.startswith(skip) and re.search(r"\.(md|cc|h|py|sh|txt|toml|cjs|js|"
                                                    r"html|json|cmake|lua)$|^README", f)]


def check_cluster_figure(errors):
    arch = (ROOT / "docs/architecture.md").read_text()
    m = re.search(r"`Cluster`\s+is\s+a\s+facade\s+of\s+(\d+)\s+declarations", arch)
    if not m:
        errors.append("docs/architecture.md: no 'Cluster` is a facade of N declarations'")
        return
    counted = subprocess.run(
        [sys.executable, str(ROOT / "scripts/count_declarations.py"),
         str(ROOT / "crawler/src/cluster/cluster.h"), "Cluster"],
        capture_output=True, text=True).stdout.strip()
    if counted != m.group(1):
        errors.append(f"docs/architecture.md: Cluster has {m.group(1)} declarations, "
                      f"scripts/count_declarations.py counts {counted}")


def check_file(path, keys, fields, errors, checked):
    rel = path.relative_to(ROOT)
    for no, line in enumerate(path.read_text().split("\n"), 1):
        where = f"{rel}:{no}"
        tokens = re.findall(r"`([^`]+)`", line)
        tokens += [m for m in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", line)
                   if "://" not in m]
        for token in tokens:
            token = token.strip()
            # A link in docs/ is relative to docs/.
            if rel.parts[0] == "docs" and token.endswith(".md") and "/" not in token:
                token = "docs/" + token
            first_word = token.split()[0] if token.split() else ""
            if is_repo_path(first_word) and not PLACEHOLDER.search(first_word):
                checked[0] += 1
                if not resolves(first_word):
                    errors.append(f"{where}: no such path in the repository: {first_word}")
                continue
            if re.fullmatch(r"[\w-]+\.(cc|h|py|sh)", first_word):
                checked[0] += 1  # a bare file name: some file of the clone has it
                if first_word not in BASENAMES:
                    errors.append(f"{where}: no file of that name in the repository: "
                                  f"{first_word}")
                continue
            m = re.match(r"^(?:--set )?([a-z]+)\.([a-z_0-9]+)(?:\s*=.*)?$", token)
            if not m or FILE_EXT.search(token.split()[0]):
                continue
            section, key = m.group(1), m.group(2)
            if section not in {k.split(".")[0] for k in keys}:
                continue
            checked[1] += 1
            if f"{section}.{key}" not in keys and key not in fields:
                errors.append(f"{where}: no config key (nor stats.json field) "
                              f"{section}.{key}")


def check_dashboard(errors):
    path = ROOT / "docs/grafana-dashboard.json"
    try:
        dash = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        errors.append(f"docs/grafana-dashboard.json: not valid JSON: {e}")
        return 0
    families = set(re.findall(r'"(crawler_\w+)"',
                              (ROOT / "crawler/src/report/metrics.cc").read_text()))
    exprs = [t.get("expr", "") for p in dash.get("panels", [])
             for t in p.get("targets", [])]
    exprs += [v.get("query", "") for v in dash.get("templating", {}).get("list", [])]
    names = set()
    for e in exprs:
        names |= set(re.findall(r"\bcrawler_\w+", e))
    if not exprs or not names:
        errors.append("docs/grafana-dashboard.json: no query names a crawler_ metric")
    for n in sorted(names):
        if re.sub(r"_(bucket|sum|count)$", "", n) not in families and n not in families:
            errors.append(f"docs/grafana-dashboard.json: no such metric: {n}")
    return len(names)


COMMAND = re.compile(
    r"bash scripts/|python3 scripts/|build/tests/|build/crawler/crawler|"
    r"scripts/[\w-]+\.sh|_bench\b|ctest|\b[a-z_]+_test\b")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def check_dated_figures(path, errors):
    """Rule 6: each dated paragraph (or a neighbour) names its command."""
    if path.name == "history.md":
        return
    text = path.read_text()
    paras = re.split(r"\n\s*\n", text)
    at = 0
    for i, para in enumerate(paras):
        start = text.index(para, at)
        at = start + len(para)
        if not DATE.search(para):
            continue
        context = "\n".join(paras[max(0, i - 1):i + 2])
        if not COMMAND.search(context):
            line = text.count("\n", 0, start) + 1
            errors.append(f"{path.relative_to(ROOT)}:{line}: a dated figure with no "
                          f"command that reproduces it nearby: {para[:70]!r}")


def main():
    keys, fields = schema_keys(), stats_fields()
    if len(keys) < 50:
        print(f"check_docs: found only {len(keys)} config keys: the schema's "
              "form changed; fix schema_keys()")
        return 1
    errors, checked = [], [0, 0]
    for path in [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md")):
        check_file(path, keys, fields, errors, checked)
        check_dated_figures(path, errors)
    for path in work_word_files():
        check_work_words(path, errors)
    check_cluster_figure(errors)
    metrics = check_dashboard(errors)
    for e in errors:
        print(e)
    print(f"check_docs: {checked[0]} paths, {checked[1]} config keys "
          f"({len(keys)} keys in the schema) and {metrics} dashboard metrics checked: "
          f"{len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
