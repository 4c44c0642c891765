#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Reads the profile back out of a flamed HTML flame graph (docs/html-format.md).

    html_data.py PAGE.html [--meta KEY]

Prints the stacks as folded lines, "root;...;frame OWN" (OWN: the frame's count
minus its children's, the samples of stacks that end there), or for a diff
"root;...;frame OWN_BEFORE OWN_AFTER", sorted bytewise; frames whose own count
is 0 (before and after) print nothing. With --meta KEY, prints that key of
the page's meta object instead (JSON). A decoder written from the format's
document alone, independent of the viewer, so that a test can compare what
the page holds with what went in. Exits 1 with one line on anything that does
not follow the document.
"""
import base64
import json
import re
import struct
import sys
import zlib


def die(msg):
    print(f"html_data.py: {msg}", file=sys.stderr)
    sys.exit(1)


class Reader:
    def __init__(self, data, integral):
        self.data = data
        self.off = 0
        self.integral = integral

    def varint(self):
        v = shift = 0
        while True:
            if self.off >= len(self.data):
                die("data ends inside a varint")
            c = self.data[self.off]
            self.off += 1
            v |= (c & 0x7F) << shift
            if not c & 0x80:
                return v
            shift += 7
            if shift > 56:
                die("varint longer than 8 bytes")

    def count(self):
        if self.integral:
            return self.varint()
        if self.off + 8 > len(self.data):
            die("data ends inside a count")
        (v,) = struct.unpack_from("<d", self.data, self.off)
        self.off += 8
        return v


def read(path):
    with open(path, encoding="utf-8") as f:
        page = f.read()
    m = re.search(r'<script type="application/json" id="flamed-meta">(.*?)</script>', page, re.S)
    d = re.search(r'<script type="application/octet-stream" id="flamed-data">(.*?)</script>', page, re.S)
    if not m or not d:
        die(f"{path}: no flamed-meta or flamed-data element")
    meta = json.loads(m.group(1))
    data = zlib.decompress(base64.b64decode(d.group(1), validate=True))
    if len(data) != meta["bytes"]:
        die(f"{path}: {len(data)} bytes of data, meta says {meta['bytes']}")
    return meta, data


def frames(meta, data):
    n, nn, nc = meta["frames"], meta["names"], meta["colors"]
    names = []
    off = 0
    for _ in range(nn):
        nl = data.index(b"\n", off)
        names.append(data[off:nl].decode("utf-8"))
        off = nl + 1
    off += 3 * nc
    r = Reader(data, meta["integral"])
    r.off = off
    for _ in range(nn):
        if r.varint() >= nc:
            die("a name's colour is out of range")
    depth, prev = [], -1
    for _ in range(n):
        z = r.varint()
        delta = -((z + 1) // 2) if z & 1 else z // 2
        d = prev + 1 + delta
        if d < 0 or d > prev + 1:
            die(f"depth {d} after {prev}")
        depth.append(d)
        prev = d
    name = [r.varint() for _ in range(n)]
    if any(i >= nn for i in name):
        die("a frame's name is out of range")
    count = [r.count() for _ in range(n)]
    if meta["gaps"]:
        [r.count() for _ in range(n)]
    before = [r.count() for _ in range(n)] if meta["diff"] else [0] * n
    if meta["framecolors"]:
        if any(r.varint() >= nc for _ in range(n)):
            die("a frame's colour is out of range")
    if r.off != len(data):
        die(f"{len(data) - r.off} bytes left after the columns")
    return [names[i] for i in name], depth, count, before


def main():
    if len(sys.argv) == 4 and sys.argv[2] == "--meta":
        meta, _ = read(sys.argv[1])
        print(json.dumps(meta[sys.argv[3]]))
        return
    if len(sys.argv) != 2:
        die("usage: html_data.py PAGE.html [--meta KEY]")
    meta, data = read(sys.argv[1])
    name, depth, count, before = frames(meta, data)
    n = len(name)
    own = list(count)
    own_b = list(before)
    path, sums = [], {}
    parents = []
    for i in range(n):
        del parents[depth[i]:]
        if parents:
            own[parents[-1]] -= count[i]
            own_b[parents[-1]] -= before[i]
        parents.append(i)
    for i in range(n):
        del path[depth[i]:]
        path.append(name[i])
        if own[i] or own_b[i]:
            # flamegraph.pl's order can draw one stack as two frames: they add up.
            b, a = sums.get(";".join(path), (0, 0))
            sums[";".join(path)] = (b + own_b[i], a + own[i])

    def fmt(v):
        return str(int(v)) if float(v).is_integer() else repr(v)

    out = []
    for stack in sorted(sums, key=lambda s: s.encode()):
        b, a = sums[stack]
        out.append(f"{stack} {fmt(b)} {fmt(a)}\n" if meta["diff"] else f"{stack} {fmt(a)}\n")
    sys.stdout.buffer.write("".join(out).encode())


if __name__ == "__main__":
    main()
