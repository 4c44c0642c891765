#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""How close the user stacks of flamed's --call-graph modes are to a reference mode's.

  unwind_accuracy.py [options] WORKLOAD REF_DIR LABEL=DIR...

Each DIR holds one `flamed record` of WORKLOAD: out.folded (folded stacks, the
process name as the root frame, as flamed record writes them) and record.err
(its stderr). REF_DIR is the reference mode's run. Prints one Markdown table
row per LABEL (the reference's own row first, labelled --ref-label):

  samples; lost (flamed's accounting line); the share of samples without
  a user frame; whole-stack %: the share of samples whose user stack
  contains a root frame (--roots: main, _start, the libc start functions,
  the thread roots) or starts at the dynamic linker's entry (see
  is_whole()); its difference from the reference's in points; L1: sum over functions f of |p_a(f) - p_ref(f)|,
  p(f) the share of samples whose user stack contains f at least once
  (inclusive, recursion counted once); the noise it is judged against
  (see split_noise()); and PASS or FAIL for each of the two goals.

User frames only: kernel frames (`_[k]`) come from the kernel's own unwinder
in every mode and would add noise, not signal. Placeholders such as
`[unknown]` or `[python3.11]` count as functions: a mode that invents frames
(frame pointers through code built without them) is charged for them.
Standard library only.
"""

import argparse
import random
import re
import statistics
import sys

DEFAULT_ROOTS = ("main,_start,__libc_start_main,__libc_start_call_main,"
                 "clone,__clone,clone3,__clone3,start_thread")

# What the dynamic linker's entry (_start, then _dl_start_user, in ld.so)
# calls: a process that is still being linked and relocated, or running its
# libraries' constructors, has no main on its stack yet.
LD_ENTRY_CALLEES = frozenset(("_dl_start", "_dl_init"))
LD_PLACEHOLDER = re.compile(r"\[ld[-.][^]]*\.so[^]]*\]")


def is_ld_entry(frame):
    """ld.so's entry frame: by name, or unnamed (its asm symbols have no size)."""
    return frame in ("_start", "_dl_start_user") or bool(LD_PLACEHOLDER.fullmatch(frame))


def is_whole(user, roots):
    """Whether a user stack (root first) reaches the root of its thread."""
    if any(fr in roots for fr in user):
        return True
    return len(user) > 1 and user[1] in LD_ENTRY_CALLEES and is_ld_entry(user[0])


def read_run(d, roots, drop_comm=""):
    """(stacks, lost, described mode).

    stacks maps (the set of the user frames of a stack, whether it is whole)
    to samples.

    Samples of processes whose name starts with drop_comm are left out (the
    profilers nested around the workload: see unwind_accuracy.sh).
    """
    stacks = {}
    with open(f"{d}/out.folded", encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                sys.exit(f"unwind_accuracy.py: {d}/out.folded: not a folded line: {line[:80]}")
            # The first frame is the process name (flamed record's root), not a function.
            frames = stack.split(";")
            if drop_comm and frames[0].startswith(drop_comm):
                continue
            user = [fr for fr in frames[1:] if not fr.endswith("_[k]")]
            key = (frozenset(user), is_whole(user, roots))
            stacks[key] = stacks.get(key, 0) + int(count)
    lost, mode = "-", ""
    try:
        with open(f"{d}/record.err", encoding="utf-8", errors="replace") as f:
            err = f.read()
        m = re.search(r"accounting: .* (\d+) lost \(", err)
        if m:
            lost = m.group(1)
        # The kernel-dwarf summary names the mode the default turned out to be.
        m = re.search(r"user stacks \(([^)]+)\)", err)
        if m:
            mode = m.group(1)
    except OSError:
        pass
    return stacks, lost, mode


def total(stacks):
    return sum(stacks.values())


def whole_share(stacks):
    n = total(stacks)
    return 100.0 * sum(c for (_, whole), c in stacks.items() if whole) / n if n else 0.0


def userless_share(stacks):
    n = total(stacks)
    return 100.0 * sum(c for (user, _), c in stacks.items() if not user) / n if n else 0.0


def inclusive(stacks):
    """Per function, the share of samples whose user stack contains it."""
    n = total(stacks)
    incl = {}
    for (user, _), c in stacks.items():
        for fr in user:
            incl[fr] = incl.get(fr, 0) + c
    return {fr: c / n for fr, c in incl.items()} if n else {}


def l1(a, b):
    pa, pb = inclusive(a), inclusive(b)
    return sum(abs(pa.get(f, 0.0) - pb.get(f, 0.0)) for f in pa.keys() | pb.keys())


def split_noise(stacks, splits, seed):
    """Median L1 between two random halves of one run, over `splits` splits.

    Why binomial thinning: each sample goes to either half with probability
    1/2, independently (a stack counted c times sends Binomial(c, 1/2) of its
    samples to the first half), so each half is what a run of half the length
    would have sampled, and the L1 between them is the sampling noise alone.
    Dealing a stack's samples out alternately would split every stack evenly
    and make the halves look more alike than two runs are; a second recording
    would add whatever changed in the workload between the runs (that is
    what the reference's second recording shows). The median over several
    splits keeps one lucky split from setting the bar.

    The halves hold half the samples of a run, so this noise is above what two
    whole recordings drawn from the same distribution show (up to sqrt(2) for
    frequent functions; about the same for functions seen a few times, whose
    contribution does not shrink with more samples): that margin absorbs the
    small differences between recordings (back-to-back runs of a
    deterministic workload, or profilers perturbing each other in one run).
    The reference's second recording checks that it does.
    """
    items = list(stacks.items())
    out = []
    for k in range(splits):
        rng = random.Random(seed + k)
        a, b = {}, {}
        for s, c in items:
            x = bin(rng.getrandbits(c)).count("1")
            if x:
                a[s] = x
            if c - x:
                b[s] = c - x
        out.append(l1(a, b))
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workload")
    ap.add_argument("ref")
    ap.add_argument("runs", nargs="+", metavar="LABEL=DIR")
    ap.add_argument("--ref-label", default="dwarf")
    ap.add_argument("--roots", default=DEFAULT_ROOTS, help="comma-separated root frames")
    ap.add_argument("--max-drop", type=float, default=2.0,
                    help="whole-stack share may be this many points below the reference's")
    ap.add_argument("--splits", type=int, default=21)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--drop-comm", default="", metavar="PREFIX",
                    help="leave out the samples of processes whose name starts with PREFIX")
    args = ap.parse_args()
    roots = frozenset(r for r in args.roots.split(",") if r)

    ref, ref_lost, _ = read_run(args.ref, roots, args.drop_comm)
    if not total(ref):
        sys.exit(f"unwind_accuracy.py: {args.ref}: no samples")
    ref_whole = whole_share(ref)
    noise = split_noise(ref, args.splits, args.seed)
    print(f"| {args.workload} | {args.ref_label} (reference) | {total(ref)} | {ref_lost} | "
          f"{userless_share(ref):.1f} | {ref_whole:.1f} | - | - | {noise:.3f} | - | - |")
    for arg in args.runs:
        label, sep, d = arg.partition("=")
        if not sep:
            sys.exit(f"unwind_accuracy.py: '{arg}' is not LABEL=DIR")
        run, lost, mode = read_run(d, roots, args.drop_comm)
        if mode and label == "default":
            label = f"default ({mode})"
        n = total(run)
        if not n:
            print(f"| {args.workload} | {label} | 0 | {lost} | - | - | - | - | {noise:.3f} | FAIL | FAIL |")
            continue
        w = whole_share(run)
        dist = l1(run, ref)
        # Fewer whole stacks than the reference fails; more is better, and passes.
        wv = "PASS" if w >= ref_whole - args.max_drop else "FAIL"
        lv = "PASS" if dist <= noise else "FAIL"
        print(f"| {args.workload} | {label} | {n} | {lost} | {userless_share(run):.1f} | {w:.1f} | "
              f"{w - ref_whole:+.1f} | {dist:.3f} | {noise:.3f} | {wv} | {lv} |")

if __name__ == "__main__":
    main()
