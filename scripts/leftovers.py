#!/usr/bin/env python3
"""Processes the tests start and must stop: redis-server, redis-sentinel,
nginx, crawler-testsite, the crawler, chromium.

  leftovers.py snapshot FILE   records the pids of such processes running now
  leftovers.py check FILE [DIR]
                               lists those started since FILE and not gone
                               (with DIR, only those whose working directory
                               is in DIR: a check beside other tests):
                               prints each (pid, command line), kills it (-9)
                               so the next step runs on a clean machine, and
                               exits 1; exits 0 when there are none

scripts/test.sh and .ci/run take a snapshot before the tests and check after.
"""
import os
import signal
import sys

NAMES = {"redis-server", "redis-sentinel", "nginx", "crawler-testsite", "crawler",
         "chromium"}


def cwd_in(pid, under):
    try:
        cwd = os.path.realpath(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return False
    return cwd == under or cwd.startswith(under + os.sep)


def running():
    """pid -> command line of every process whose program is one of NAMES."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue  # gone meanwhile
        if state == b"Z" or not argv or not argv[0]:
            continue  # a zombie holds nothing; its parent reaps it
        program = os.path.basename(argv[0].decode(errors="replace")).split(" ")[0]
        if program in NAMES:
            found[int(entry)] = " ".join(a.decode(errors="replace") for a in argv if a)
    return found


def main():
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in ("snapshot", "check"):
        sys.exit(__doc__)
    verb, path = sys.argv[1], sys.argv[2]
    under = os.path.realpath(sys.argv[3]) if len(sys.argv) == 4 else None
    if verb == "snapshot":
        with open(path, "w") as f:
            f.write("".join(f"{pid}\n" for pid in sorted(running())))
        return 0
    with open(path) as f:
        before = {int(line) for line in f if line.strip()}
    left = {pid: cmd for pid, cmd in running().items()
            if pid not in before and (under is None or cwd_in(pid, under))}
    for pid, cmd in sorted(left.items()):
        print(f"left running after the tests: pid {pid}: {cmd}")
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if left:
        print(f"{len(left)} process(es) outlived the tests that started them "
              "(killed now)")
        return 1
    print("no test process left running")
    return 0


if __name__ == "__main__":
    sys.exit(main())
