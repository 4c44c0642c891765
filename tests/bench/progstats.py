#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What the BPF programs one process holds cost, from their kernel statistics.

  progstats.py PIDFILE OUT

Waits for PIDFILE to name a process, then reads the fdinfo of every BPF
program file descriptor it holds (/proc/PID/fdinfo/N: prog_type, run_cnt,
run_time_ns; the counts need kernel.bpf_stats_enabled=1) every few
milliseconds until the process exits, and writes one line to OUT:

  perf_event_runs perf_event_ns all_ns first_run_ms

perf_event_runs and perf_event_ns: the runs and run time of its perf_event
programs (the samplers; a program they tail-call counts in its caller's
time); all_ns: the run time of all its programs (trackers included); the
last values seen before the descriptors were closed. first_run_ms: from the
process's start (/proc/PID/stat) to the first time a perf_event program had
run, to the poll interval and the clock tick; "-" if none ran. Counts run in
the kernel, in whatever task was interrupted: they are not in the process's
own CPU time. Standard library only.
"""

import os
import sys
import time

BPF_PROG_TYPE_PERF_EVENT = 7
POLL_S = 0.01


def read_pid(path, deadline):
    while time.monotonic() < deadline:
        try:
            with open(path, encoding="ascii") as f:
                s = f.read().strip()
            if s:
                return int(s)
        except (OSError, ValueError):
            pass
        time.sleep(POLL_S)
    sys.exit(f"progstats.py: no pid in {path}")


def start_boottime_s(pid):
    """The process's start, in seconds of CLOCK_BOOTTIME."""
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime


def prog_fds(pid):
    fds = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:bpf-prog":
                fds.append(fd)
        except OSError:
            pass
    return fds


def read_fdinfo(pid, fd):
    """{field: int} for the fields this needs, or None once the fd is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("prog_type", "prog_id", "run_time_ns", "run_cnt"):
                    out[k] = int(v)
    except (OSError, ValueError):
        return None
    return out if "prog_id" in out else None


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: progstats.py PIDFILE OUT")
    pid = read_pid(sys.argv[1], time.monotonic() + 30)
    try:
        start = start_boottime_s(pid)
    except OSError:
        start = None
    progs = {}  # prog_id -> last fdinfo
    fds, rescan = [], 0.0
    first_run = None
    while os.path.exists(f"/proc/{pid}/fd"):
        now = time.monotonic()
        if now >= rescan:
            try:
                fds = prog_fds(pid)
            except OSError:
                break
            # Until a sampler has run, look for new programs at every poll:
            # first_run_ms would be late by the rescan interval otherwise.
            rescan = now + (0.25 if first_run is not None else 0)
        for fd in fds:
            info = read_fdinfo(pid, fd)
            if info:
                progs[info["prog_id"]] = info
        if first_run is None and any(p.get("prog_type") == BPF_PROG_TYPE_PERF_EVENT
                                     and p.get("run_cnt", 0) > 0 for p in progs.values()):
            first_run = time.clock_gettime(time.CLOCK_BOOTTIME)
        time.sleep(POLL_S)
    perf = [p for p in progs.values() if p.get("prog_type") == BPF_PROG_TYPE_PERF_EVENT]
    runs = sum(p.get("run_cnt", 0) for p in perf)
    perf_ns = sum(p.get("run_time_ns", 0) for p in perf)
    all_ns = sum(p.get("run_time_ns", 0) for p in progs.values())
    first = "-"
    if first_run is not None and start is not None:
        first = f"{(first_run - start) * 1000:.0f}"
    with open(sys.argv[2], "w", encoding="ascii") as f:
        f.write(f"{runs} {perf_ns} {all_ns} {first}\n")


if __name__ == "__main__":
    main()
