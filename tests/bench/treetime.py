#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What a command and every process it started cost, orphans included.

  treetime.py OUT CMD [ARGS...]

Runs CMD and appends one line to OUT: "wall_s user_s sys_s maxrss_kib" (the
seconds to the microsecond; the peak RSS of the largest process). GNU time
and bash's time count only the descendants their parents waited for; a
process left running when its parent exits is reparented and reaped
elsewhere, its CPU lost to them. `perf script` leaves its addr2line children
that way, and they can use more CPU than perf itself. Here the wrapper is a
child subreaper (PR_SET_CHILD_SUBREAPER): orphans are reparented to it and it
waits until every descendant has exited. Exits with CMD's status (127: CMD
could not be run).
"""
import ctypes
import os
import resource
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: treetime.py OUT CMD [ARGS...]")
    out, cmd = sys.argv[1], sys.argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("treetime.py: prctl(PR_SET_CHILD_SUBREAPER): "
                 + os.strerror(ctypes.get_errno()))
    # What this process's own children used before: a python3 started by
    # a wrapper (pyenv's shim runs helpers, then execs python) inherits
    # their CPU in RUSAGE_CHILDREN, half a second of it on one machine.
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(cmd[0], cmd)
        except OSError as e:
            print(f"treetime.py: {cmd[0]}: {e.strerror}", file=sys.stderr)
        os._exit(127)
    status = 0
    while True:
        try:
            child, st = os.wait()
        except ChildProcessError:
            break  # no descendant left
        if child == pid:
            status = st
    wall = time.monotonic() - start
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "a", encoding="ascii") as f:
        f.write(f"{wall:.3f} {ru.ru_utime - before.ru_utime:.3f} "
                f"{ru.ru_stime - before.ru_stime:.3f} {ru.ru_maxrss}\n")
    if os.WIFSIGNALED(status):
        sys.exit(128 + os.WTERMSIG(status))
    sys.exit(os.WEXITSTATUS(status))


if __name__ == "__main__":
    main()
