#!/usr/bin/env bash
# Runs every command of docs/quickstart.md, in order, as a newcomer would:
# its indented code blocks (but the first, the install and the build, which
# this script does itself), one bash session (set -e: the first command
# that fails fails the check), in a fresh directory where build/, configs/
# and scripts/ are the repository's. Then checks that the page's last block
# stopped everything it started (scripts/leftovers.py: the processes whose
# working directory is that directory, so it may run beside the tests).
# Usage: bash scripts/quickstart-check.sh   (CI runs it; ~3 min, mostly the
# crawls' 1 s politeness)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -f build/CMakeCache.txt ] || cmake --preset release >/dev/null
cmake --build build -j2 --target crawler crawler-testsite >/dev/null

work=$(mktemp -d)
before=$(mktemp)
python3 scripts/leftovers.py snapshot "$before"
for d in build configs scripts; do ln -s "$root/$d" "$work/$d"; done
# The page's indented blocks (after a blank line, four spaces in), each
# echoed before it runs.
python3 - "$root/docs/quickstart.md" >"$work/quickstart.sh" <<'EOF'
import re, shlex, sys
text = open(sys.argv[1]).read()
blocks = [b for b in re.findall(r"\n\n((?:(?:    .*)?\n)+)", text) if b.strip()]
print("set -euo pipefail")
# A block that fails leaves nothing running behind it (the test site).
print("trap 'kill $(jobs -p) 2>/dev/null || true' EXIT")
for block in blocks[1:]:  # the first: install and build
    code = "\n".join(line[4:] for line in block.strip("\n").split("\n"))
    print("echo " + shlex.quote("quickstart$ " + code.replace("\n", "\nquickstart$ ")))
    print(code)
EOF
status=0
# A command that hangs fails the check (15 min; the page takes ~4), and
# what it left running is killed by the check after it.
(cd "$work" && timeout 900 bash quickstart.sh) || status=$?
python3 scripts/leftovers.py check "$before" "$work" || status=1
if [ "$status" -eq 0 ]; then
  echo "quickstart: every command of docs/quickstart.md ran"
  rm -rf "$work"
else
  echo "quickstart: failed (its directory: $work)"
fi
rm -f "$before"
exit "$status"
