#!/usr/bin/env python3
"""Writes configs/bloom.toml, cuckoo.toml, counting.toml and archive.toml from
configs/default.toml: every key of default.toml, each as there but the few a
variant changes, which its header names. So every full config has every key,
and says exactly how it differs.

Usage: python3 scripts/gen_configs.py          # writes the four files
       python3 scripts/gen_configs.py --check  # exit 1 if one is not as written
                                                 (CI step 1e)
"""
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"

# Each variant: its header's first paragraph, and its keys: section.key ->
# (value as TOML, the line's comment; None keeps default.toml's).
VARIANTS = {
    "bloom.toml": (
        "The default configuration with the bloom URL-seen filter (default.toml's:\n"
        "`dedup.type = \"bloom\"`), named for the tests that run every variant.",
        {},
    ),
    "cuckoo.toml": (
        "The default configuration with the cuckoo URL-seen filter, which can\n"
        "forget a URL (a recrawl's, or one given up: a later link admits it again).",
        {"dedup.type": ('"cuckoo"', None),
         "dedup.allow_erase": ("true", None)},
    ),
    "counting.toml": (
        "The default configuration with the counting Bloom URL-seen filter, which\n"
        "can forget a URL (a recrawl's, or one given up: a later link admits it\n"
        "again).",
        {"dedup.type": ('"counting"', None),
         "dedup.allow_erase": ("true", None)},
    ),
    "archive.toml": (
        "For archival crawls (docs/formats.md): pages come with what a browser\n"
        "loads to show them (stylesheets and what they @import, images, srcset,\n"
        "fonts, media, icons), bodies are kept whole up to 100 MB, and a payload\n"
        "archived once is written as a revisit of it after.",
        {"crawl.include_assets": (
            "true", "ARCHIVE: page requisites too: img/srcset, script, stylesheets "
                    "and their url()/@import, media, icons"),
         "fetch.max_body_bytes": (
             "104857600", "ARCHIVE: bodies are cut here (100 MB: video and PDFs "
                          "whole) and recorded as truncated"),
         "dedup.payload": (
             "true", "ARCHIVE: a 200 whose payload was archived already (any URL) "
                     "is written as a revisit of it (OUT/history/; docs/formats.md)")},
    ),
}

KEY_LINE = re.compile(r"^(?P<key>[a-z_0-9]+)(?P<eq>\s*=\s*)(?P<rest>.*)$")


def split_value(rest):
    """`value   # comment` -> (value, spaces, comment or None), TOML strings kept
    whole (a '#' inside quotes is not a comment)."""
    in_str = None
    for i, c in enumerate(rest):
        if in_str:
            if c == "\\":
                continue
            if c == in_str:
                in_str = None
        elif c in "\"'":
            in_str = c
        elif c == "#":
            value = rest[:i].rstrip()
            return value, rest[len(value):i], rest[i + 1:].strip()
    return rest.rstrip(), "", None


def generate(name, default_text):
    intro, overrides = VARIANTS[name]
    lines = default_text.split("\n")
    # default.toml's header: the comment lines before the first section; its
    # first sentence names it, the rest (how to override) is kept.
    first = next(i for i, l in enumerate(lines) if l.startswith("["))
    header_rest = [l for l in lines[1:first] if l.startswith("#")]
    changed = ", ".join(f"`{k}`" for k in overrides)
    out = ["# " + l if l else "#" for l in intro.split("\n")]
    out.append("# Generated from default.toml by scripts/gen_configs.py: every key as")
    out.append(f"# there but {changed}." if overrides else "# there.")
    out += header_rest
    out.append("")
    section, seen = None, set()
    for line in lines[first:]:
        m = re.match(r"^\[(\w+)\]", line)
        if m:
            section = m.group(1)
        km = KEY_LINE.match(line)
        if section and km and f"{section}.{km.group('key')}" in overrides:
            key = f"{section}.{km.group('key')}"
            seen.add(key)
            value, pad, comment = split_value(km.group("rest"))
            new_value, new_comment = overrides[key]
            comment = new_comment if new_comment is not None else comment
            head = km.group("key") + km.group("eq") + new_value
            # Keep the comment's column where the value fits.
            column = len(km.group("key") + km.group("eq") + value + pad)
            line = head + (" " * max(1, column - len(head)) + "# " + comment
                           if comment is not None else "")
        out.append(line)
    missing = set(overrides) - seen
    if missing:
        sys.exit(f"gen_configs: {name}: keys not in default.toml: {sorted(missing)}")
    text = "\n".join(out)
    tomllib.loads(text)  # still TOML
    return text


def main():
    check = sys.argv[1:] == ["--check"]
    default_text = (CONFIGS / "default.toml").read_text()
    stale = []
    for name in VARIANTS:
        text = generate(name, default_text)
        path = CONFIGS / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print("gen_configs: not as generated from configs/default.toml: " +
              ", ".join(stale) + " (run python3 scripts/gen_configs.py)")
        return 1
    print("gen_configs: " + ("checked " if check else "wrote ") + ", ".join(VARIANTS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
