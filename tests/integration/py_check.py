#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Metrics and checks of the Python frames in a folded profile, stdlib only.

  py_check.py [options] FOLDED        (FOLDED may be - for stdin)
  py_check.py --self-test

Reads folded stacks (`root;frame;...;leaf COUNT`, root first) and prints
`key value` lines, computed over the samples whose root frame is the
process name --comm (default python3), alone or followed by -PID or
-PID/TID:

  samples           the samples of those processes
  malformed         lines that are not `STACK COUNT` (all processes)
  py_samples        samples with at least one Python frame (`..._[p]`)
  py_share          py_samples, in percent of samples
  named_leaf_share  percent of py_samples whose leaf-most Python frame has a
                    name: not `[python code 0x...]`
  evalframe_left    samples still holding a native _PyEval_EvalFrameDefault
                    frame (or a part of it such as .cold), which the
                    profiler should have replaced by Python frames
  leaf_top          the five most common leaf-most Python qualnames, as
                    NAME:PERCENT,... of samples (for reading failures)
  leaf.NAME         for each --require NAME: percent of samples whose
                    leaf-most Python frame is NAME
  split_samples     with --split A,B: samples whose leaf-most Python frame
                    is A or B
  split             A's share of split_samples, in percent
  chain_samples     with --chain: samples whose leaf-most Python frame is
                    the chain's last name
  chain             percent of chain_samples whose Python frames end with
                    exactly the chain's names (see --chain)

A Python frame is one that ends in `_[p]`: `QUALNAME (FILE:LINE)_[p]`, or
`[python code 0x...]_[p]` when the profiler could not name it. Its
qualname is the text before the FIRST ` (`: co_qualname, as the compiler
makes it, holds no space, while FILE is any path (`/tmp/x (1)/a.py`).
Native and kernel (`_[k]`) frames are skipped when Python frames are
compared. Frames are cut at every `;` (the folded format has no escape);
the count is the last space-separated field. Bytes that are not UTF-8 are
kept (surrogateescape) and never match a name given on the command line.

Checks, each failing the run (exit 1, one line on stderr naming every
failure); any check also fails on malformed lines and on no samples:

  --min-samples N       samples >= N
  --min-py-share P      py_share >= P
  --min-named-leaf P    named_leaf_share >= P
  --max-evalframe-left N
                        evalframe_left <= N
  --require NAME        leaf.NAME >= 1 (repeatable)
  --split A,B --expect-split P [--tolerance T]
                        |split - P| <= T (default 3)
  --chain 'Q1;...;QN' --min-chain P
                        chain >= P. Names are qualnames, root to leaf;
                        NAME*K stands for K times NAME (recurse*60). Python
                        frames outer than Q1 are ignored: pass the caller of
                        a recursion as Q1 (recurse_main;recurse*60;leaf_burn)
                        so that a 61st level does not match.

Exit status: 0 all checks passed (or none asked), 1 a check failed,
2 usage or I/O error.
"""

import argparse
import collections
import os
import re
import sys
import tempfile

PY_SUFFIX = "_[p]"
UNNAMED_PREFIX = "[python code"
EVALFRAME = "_PyEval_EvalFrameDefault"
COUNT_RE = re.compile(r"[0-9]+")


def root_matcher(comm):
    """A predicate: is a root frame COMM, COMM-PID or COMM-PID/TID?"""
    rx = re.compile(re.escape(comm) + r"(?:-[0-9]+(?:/[0-9]+)?)?")
    return lambda root: rx.fullmatch(root) is not None


def parse_line(line):
    """(frames, count) of a folded line, or None when it is malformed."""
    stack, sep, count = line.rpartition(" ")
    if not sep or not stack or not COUNT_RE.fullmatch(count):
        return None
    return stack.split(";"), int(count)


def is_python(frame):
    return frame.endswith(PY_SUFFIX)


def qualname(frame):
    """The qualname of a Python frame: the text before the first ` (`."""
    return frame[:-len(PY_SUFFIX)].split(" (", 1)[0]


def is_named(name):
    return bool(name) and not name.startswith(UNNAMED_PREFIX)


def is_evalframe(frame):
    """A native frame of the eval loop, or of a part of it (.cold, .isra)."""
    return frame == EVALFRAME or frame.startswith(EVALFRAME + ".")


def expand_chain(spec):
    """'a;b*3;c' -> ['a', 'b', 'b', 'b', 'c']; ValueError when malformed."""
    out = []
    for part in spec.split(";"):
        name, star, times = part.rpartition("*")
        if not star:
            name, times = part, "1"
        if not name or not COUNT_RE.fullmatch(times) or int(times) < 1:
            raise ValueError(f"bad chain element {part!r} in {spec!r}")
        out.extend([name] * int(times))
    return out


class Profile:
    """What the metrics need of the samples of one process name."""

    def __init__(self, lines, comm):
        is_root = root_matcher(comm)
        self.samples = self.malformed = self.py_samples = 0
        self.named_leaf = self.evalframe_left = 0
        # Python qualnames of each stack, root to leaf, and its samples.
        self.py_stacks = collections.Counter()
        for line in lines:
            line = line.rstrip("\r\n")
            if not line:
                continue
            parsed = parse_line(line)
            if parsed is None:
                self.malformed += 1
                continue
            frames, count = parsed
            if not is_root(frames[0]):
                continue
            self.samples += count
            rest = frames[1:]
            if any(is_evalframe(f) for f in rest):
                self.evalframe_left += count
            names = tuple(qualname(f) for f in rest if is_python(f))
            if names:
                self.py_samples += count
                self.named_leaf += count if is_named(names[-1]) else 0
                self.py_stacks[names] += count

    def leaves(self):
        """Samples per leaf-most Python qualname."""
        out = collections.Counter()
        for names, n in self.py_stacks.items():
            out[names[-1]] += n
        return out

    def chain(self, names):
        """(samples whose leaf-most Python frame is names[-1], those of them
        whose Python frames end with names)."""
        names = tuple(names)
        total = match = 0
        for stack, n in self.py_stacks.items():
            if stack[-1] == names[-1]:
                total += n
                match += n if stack[-len(names):] == names else 0
        return total, match


def pct(part, whole):
    return 100.0 * part / whole if whole else 0.0


def fmt(x):
    return f"{x:.2f}" if isinstance(x, float) else str(x)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="py_check.py",
        description="Metrics and checks of the Python frames in a folded "
                    "profile (see the top of this file).")
    ap.add_argument("folded", nargs="?", help="folded stacks, - for stdin")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--comm", default="python3")
    ap.add_argument("--min-samples", type=int)
    ap.add_argument("--min-py-share", type=float)
    ap.add_argument("--min-named-leaf", type=float)
    ap.add_argument("--max-evalframe-left", type=int)
    ap.add_argument("--require", action="append", default=[], metavar="NAME")
    ap.add_argument("--split", metavar="A,B")
    ap.add_argument("--expect-split", type=float, metavar="PERCENT")
    ap.add_argument("--tolerance", type=float, default=3.0)
    ap.add_argument("--chain", metavar="'Q1;...;QN'")
    ap.add_argument("--min-chain", type=float, metavar="PERCENT")
    args = ap.parse_args(argv)
    if args.self_test != (args.folded is None):
        ap.error("give either FOLDED or --self-test")
    if args.split is not None:
        args.split = args.split.split(",")
        if len(args.split) != 2 or not all(args.split):
            ap.error("--split takes two qualnames: A,B")
    if args.expect_split is not None and args.split is None:
        ap.error("--expect-split needs --split")
    if args.chain is not None:
        try:
            args.chain = expand_chain(args.chain)
        except ValueError as e:
            ap.error(str(e))
    if args.min_chain is not None and args.chain is None:
        ap.error("--min-chain needs --chain")
    return args


def run(argv, out, err):
    """py_check.py with ARGV, writing to OUT and ERR; returns the exit status."""
    args = parse_args(argv)
    if args.self_test:
        return self_test(out, err)
    try:
        if args.folded == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.folded, "rb") as f:
                data = f.read()
    except OSError as e:
        print(f"py_check.py: cannot read {args.folded}: {e.strerror}", file=err)
        return 2
    prof = Profile(data.decode("utf-8", "surrogateescape").splitlines(),
                   args.comm)
    leaves = prof.leaves()
    metrics = {
        "samples": prof.samples,
        "malformed": prof.malformed,
        "py_samples": prof.py_samples,
        "py_share": pct(prof.py_samples, prof.samples),
        "named_leaf_share": pct(prof.named_leaf, prof.py_samples),
        "evalframe_left": prof.evalframe_left,
        "leaf_top": ",".join(f"{name}:{pct(n, prof.samples):.1f}"
                             for name, n in leaves.most_common(5)) or "-",
    }
    fails = []
    for name in args.require:
        share = metrics["leaf." + name] = pct(leaves[name], prof.samples)
        if share < 1.0:
            fails.append(f"{name} is the leaf-most Python frame of "
                         f"{share:.2f}% of the samples (< 1%)")
    if args.split:
        a, b = (leaves[n] for n in args.split)
        metrics["split_samples"] = a + b
        metrics["split"] = pct(a, a + b)
        if args.expect_split is not None:
            if a + b == 0:
                fails.append(f"no sample ends in {args.split[0]} or "
                             f"{args.split[1]}")
            elif abs(metrics["split"] - args.expect_split) > args.tolerance:
                fails.append(f"split {args.split[0]}/{args.split[1]} is "
                             f"{metrics['split']:.2f}%, expected "
                             f"{args.expect_split}±{args.tolerance}")
    if args.chain:
        total, match = prof.chain(args.chain)
        metrics["chain_samples"] = total
        metrics["chain"] = pct(match, total)
        if args.min_chain is not None:
            if total == 0:
                fails.append(f"no sample ends in {args.chain[-1]}")
            elif metrics["chain"] < args.min_chain:
                fails.append(f"{metrics['chain']:.2f}% of the samples ending "
                             f"in {args.chain[-1]} have the chain "
                             f"(< {args.min_chain}%)")

    def at_least(key, limit, what):
        if limit is not None and metrics[key] < limit:
            fails.append(f"{what} is {fmt(metrics[key])} (< {limit})")

    at_least("samples", args.min_samples, "samples")
    at_least("py_share", args.min_py_share, "py_share")
    at_least("named_leaf_share", args.min_named_leaf, "named_leaf_share")
    if (args.max_evalframe_left is not None
            and prof.evalframe_left > args.max_evalframe_left):
        fails.append(f"{prof.evalframe_left} samples still hold a native "
                     f"{EVALFRAME} (> {args.max_evalframe_left})")
    checked = any(x is not None for x in (
        args.min_samples, args.min_py_share, args.min_named_leaf,
        args.max_evalframe_left, args.expect_split, args.min_chain)) \
        or args.require
    if checked and prof.samples == 0:
        fails.insert(0, f"no samples of {args.comm}")
    if checked and prof.malformed:
        fails.insert(0, f"{prof.malformed} malformed lines")

    for key, value in metrics.items():
        print(key, fmt(value), file=out)
    if fails:
        print("py_check.py: FAIL: " + "; ".join(fails), file=err)
        return 1
    return 0


# --- self-test ---------------------------------------------------------------
# (stack, count) of a synthetic profile; comments say what each line tests.
REC = ";".join(["recurse (/w/py_work.py:98)_[p]", "_PyFunction_Vectorcall"])
SELF_TEST_LINES = [
    # split, 200 : 100, in three process-name forms; native glue between.
    (b"python3;_start;Py_RunMain;<module> (/w/py_work.py:1)_[p];"
     b"cli (/w/py_work.py:254)_[p];main (/w/py_work.py:78)_[p];"
     b"_PyFunction_Vectorcall;hot_two (/w/py_work.py:71)_[p]", 150),
    (b"python3-1234;_start;main (/w/py_work.py:78)_[p];"
     b"hot_two (/w/py_work.py:71)_[p];do_syscall_64_[k];"
     b"asm_sysvec_apic_timer_interrupt_[k]", 50),
    (b"python3-1234/1240;_start;main (/w/py_work.py:78)_[p];"
     b"hot_one (/w/py_work.py:64)_[p]", 100),
    # A name with spaces and a path with ` (`: qualname is Worker.run.
    (b"python3;Worker.run (/tmp/my dir (1)/x.py:10)_[p];"
     b"main.<locals>.inner (...y/x.py:12)_[p]", 20),
    # An unnamed leaf; a native eval loop left over (and its .cold part).
    (b"python3;main (/w/py_work.py:78)_[p];[python code 0x7f00deadbe00]_[p]", 10),
    (b"python3;_PyEval_EvalFrameDefault;main (/w/py_work.py:78)_[p]", 5),
    (b"python3;_PyEval_EvalFrameDefault.cold", 5),
    # Native only; bytes that are not UTF-8; a CRLF ending.
    (b"python3;_start;pysleep;clock_nanosleep;\xff\xfebad_[k]", 10),
    # Recursion: 60 levels twice, 61 once (matches the chain only without
    # its caller), 59 once.
    (b"python3;" + ("recurse_main (/w/py_work.py:105)_[p];" + REC + ";" +
                    ";".join([REC] * 59) + ";leaf_burn (/w/py_work.py:91)_[p]"
                    ).encode(), 40),
    (b"python3;" + ("recurse_main (/w/py_work.py:105)_[p];" + REC + ";" +
                    ";".join([REC] * 60) + ";leaf_burn (/w/py_work.py:91)_[p]"
                    ).encode(), 5),
    (b"python3;" + ("recurse_main (/w/py_work.py:105)_[p];" +
                    ";".join([REC] * 59) + ";leaf_burn (/w/py_work.py:91)_[p]"
                    ).encode(), 5),
    # Other processes, not counted: other names, python3 as a prefix only.
    (b"python3.11;main (/w/py_work.py:78)_[p]", 1000),
    (b"python3-x;main (/w/py_work.py:78)_[p]", 1000),
    (b"bash;main;hot_two (/w/py_work.py:71)_[p]", 1000),
]
SELF_TEST_EXTRA = b"\n\r\n"  # blank lines: neither samples nor malformed
SELF_TEST_BAD = b"python3;no_count\npython3;x 12a\n"  # 2 malformed lines

# py_samples: every python3 sample above but the two native-only lines.
SELF_TEST_EXPECT = {
    "samples": 400,
    "malformed": 0,
    "py_samples": 385,
    "py_share": "96.25",
    "named_leaf_share": fmt(pct(375, 385)),
    "evalframe_left": 10,
    "leaf_top": "hot_two:50.0,hot_one:25.0,leaf_burn:12.5,"
                "main.<locals>.inner:5.0,[python code 0x7f00deadbe00]:2.5",
}


def self_test_file(tmp, bad=False):
    path = os.path.join(tmp, "bad.folded" if bad else "ok.folded")
    lines = [s + b" " + str(n).encode() for s, n in SELF_TEST_LINES]
    lines[7] += b"\r"
    with open(path, "wb") as f:
        f.write(b"\n".join(lines) + b"\n" + SELF_TEST_EXTRA +
                (SELF_TEST_BAD if bad else b""))
    return path


def self_test(out, err):
    import io

    failures = []

    def call(argv):
        o, e = io.StringIO(), io.StringIO()
        rc = run(argv, o, e)
        got = dict(line.split(" ", 1) for line in o.getvalue().splitlines())
        return rc, got, e.getvalue()

    def expect(what, got, want):
        if str(got) != str(want):
            failures.append(f"{what}: got {got!r}, want {want!r}")

    with tempfile.TemporaryDirectory() as tmp:
        ok, bad = self_test_file(tmp), self_test_file(tmp, bad=True)

        rc, got, e = call([ok])
        expect("plain rc", rc, 0)
        for key, want in SELF_TEST_EXPECT.items():
            expect(key, got.get(key), want)

        rc, got, e = call([ok, "--split", "hot_two,hot_one",
                           "--expect-split", "66.7", "--tolerance", "0.1"])
        expect("split", got.get("split"), "66.67")
        expect("split_samples", got.get("split_samples"), 300)
        expect("split rc", rc, 0)
        rc, got, e = call([ok, "--split", "hot_one,hot_two",
                           "--expect-split", "66.7"])
        expect("reversed split rc", rc, 1)
        expect("reversed split reason", "split hot_one/hot_two is 33.33%" in e
               and e.count("\n") == 1, True)
        rc, got, e = call([ok, "--split", "nope,nada", "--expect-split", "50"])
        expect("empty split rc", (rc, "no sample ends in nope" in e), (1, True))

        chain = "recurse_main;recurse*60;leaf_burn"
        rc, got, e = call([ok, "--chain", chain, "--min-chain", "80"])
        expect("chain", got.get("chain"), "80.00")
        expect("chain_samples", got.get("chain_samples"), 50)
        expect("chain rc", rc, 0)
        rc, got, e = call([ok, "--chain", "recurse*60;leaf_burn"])
        expect("chain without its caller", got.get("chain"), "90.00")
        rc, got, e = call([ok, "--chain", chain, "--min-chain", "95"])
        expect("chain rc below", rc, 1)
        rc, got, e = call([ok, "--chain", "main;hot_two", "--min-chain", "100"])
        expect("chain through native frames", (rc, got.get("chain")),
               (0, "100.00"))
        rc, got, e = call([ok, "--chain", "Worker.run;main.<locals>.inner"])
        expect("chain of dotted names", got.get("chain"), "100.00")
        expect("expand", expand_chain("a;b*3;c"), ["a", "b", "b", "b", "c"])
        for spec in ("a;;b", "a*0", "*2", "a*x"):
            try:
                expand_chain(spec)
                failures.append(f"expand_chain({spec!r}) did not fail")
            except ValueError:
                pass

        rc, got, e = call([ok, "--require", "hot_one", "--require",
                           "main.<locals>.inner"])
        expect("require rc", rc, 0)
        expect("leaf.hot_one", got.get("leaf.hot_one"), "25.00")
        rc, got, e = call([ok, "--require", "main"])
        expect("require main (1.25%)", (rc, got.get("leaf.main")), (0, "1.25"))
        rc, got, e = call([ok, "--require", "hot_one", "--require", "recurse"])
        expect("require recurse (never a leaf)", rc, 1)
        expect("require reason", "recurse is the leaf-most" in e, True)

        rc, got, e = call([ok, "--min-py-share", "96", "--min-named-leaf",
                           "97", "--max-evalframe-left", "10",
                           "--min-samples", "400"])
        expect("thresholds pass", (rc, e), (0, ""))
        rc, got, e = call([ok, "--min-py-share", "97", "--min-named-leaf",
                           "98", "--max-evalframe-left", "9"])
        expect("thresholds fail", rc, 1)
        expect("one line naming all three",
               (e.count("\n"), e.count(";")), (1, 2))

        rc, got, e = call([ok, "--comm", "python3.11", "--min-py-share", "100"])
        expect("other comm", (rc, got.get("samples")), (0, "1000"))
        rc, got, e = call([ok, "--comm", "nosuch", "--min-py-share", "0"])
        expect("no samples", (rc, "no samples of nosuch" in e), (1, True))
        rc, got, e = call([ok, "--comm", "nosuch"])
        expect("no samples, no checks", (rc, got.get("py_share")), (0, "0.00"))

        rc, got, e = call([bad])
        expect("malformed counted", (rc, got.get("malformed")), (0, "2"))
        rc, got, e = call([bad, "--min-py-share", "0"])
        expect("malformed fails a check", (rc, "2 malformed" in e), (1, True))
        rc, got, e = call([os.path.join(tmp, "missing")])
        expect("missing file", rc, 2)

    for f in failures:
        print("py_check.py: self-test:", f, file=err)
    print(f"self-test: {'FAIL' if failures else 'ok'}", file=out)
    return 1 if failures else 0


if __name__ == "__main__":
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(errors="backslashreplace")
    sys.exit(run(sys.argv[1:], sys.stdout, sys.stderr))
