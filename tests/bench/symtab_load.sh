#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: what reading the function symbols of a big ELF file costs
# flamed (its first use of the file in a recording), against perf reading
# the same symbol table to list its functions.
#
#   tests/bench/symtab_load.sh [FILE...]
#
# FILEs default to the NFILES (4) ELF files with the most symbols among
# /usr/lib/x86_64-linux-gnu, /usr/lib/gcc and the Rust toolchains in
# ~/.rustup (where rustup installed one: its libLLVM and librustc_driver
# keep their .symtab, Debian's libraries only their .dynsym), one of each
# name (libLLVM: the biggest of Rust's and Debian's).
#
# For each file, RUNS (5) runs of each, alternating, each in a fresh
# process, medians of CPU (user + system) and of the whole process's peak
# RSS (tests/bench/treetime.py):
#   flamed: tests/bench/symtab_load.c, fl_elfsyms__open() as the symbolizer
#           calls it (function symbols, PLT stubs, one per address, sorted)
#           and fl_elfsyms__free(): their CPU alone, as the tool measures it;
#   perf:   perf probe -F -x FILE --filter '*' (perf's symbol loader, every
#           function name printed, to /dev/null), less perf's own start (the
#           same on /bin/true). perf cannot read some files (Rust's
#           librustc_driver): "failed".
#
# Environment: RUNS, NFILES, BUILD (where libflamed.a is, built if missing;
# default /tmp/build-symtab), CC (cc), PYTHON (python3). Needs perf (Debian:
# linux-perf), pkg-config and python3; exits 77 when one is missing. Not
# part of ctest: about a minute.
set -euo pipefail
export LC_ALL=C

SRCDIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
BUILD=${BUILD:-/tmp/build-symtab}
RUNS=${RUNS:-5}
NFILES=${NFILES:-4}
CC=${CC:-cc}
PYTHON=${PYTHON:-python3}

# shellcheck source=tests/bench/lib.sh
source "$SRCDIR/tests/bench/lib.sh"

for v in RUNS NFILES; do
	[[ ${!v} =~ ^[0-9]+$ && ${!v} -gt 0 ]] || die "$v must be a positive whole number, not '${!v}'"
done
perf version >/dev/null 2>&1 || skip "needs perf (Debian: apt-get install linux-perf)"
command -v pkg-config >/dev/null || skip "needs pkg-config"
"$PYTHON" -c 'import ctypes, resource' 2>/dev/null || skip "needs $PYTHON (it measures the process trees)"

if [[ ! -f $BUILD/libflamed.a ]]; then
	say "building libflamed.a in $BUILD"
	cmake -S "$SRCDIR" -B "$BUILD" >/dev/null
	cmake --build "$BUILD" -j"$(nproc)" --target flamed_lib >/dev/null
fi
TOOL=$BUILD/symtab_load
PKGS="libbpf libelf libdw liblzma libdeflate"
# shellcheck disable=SC2046,SC2086 # pkg-config's flags and PKGS: words
"$CC" -O2 -g -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -I"$SRCDIR/include" \
	$(pkg-config --cflags $PKGS) "$SRCDIR/tests/bench/symtab_load.c" \
	"$BUILD/libflamed.a" $(pkg-config --libs $PKGS) -ldl -lm -o "$TOOL"

# biggest N DIR...: the N ELF files under DIRs with the most symbols
# (.symtab's entries, else .dynsym's), from their section headers.
biggest() {
	"$PYTHON" - "$@" <<'PY'
import os, struct, sys
n, dirs = int(sys.argv[1]), sys.argv[2:]
found = []
for d in dirs:
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            try:
                with open(p, 'rb') as fh:
                    h = fh.read(64)
                    if len(h) < 64 or h[:4] != b'\x7fELF' or h[4] != 2 or h[5] != 1:
                        continue
                    shoff, = struct.unpack_from('<Q', h, 0x28)
                    shentsize, shnum = struct.unpack_from('<HH', h, 0x3a)
                    if shentsize != 64 or not shnum or shnum > 4096:
                        continue
                    fh.seek(shoff)
                    sh = fh.read(64 * shnum)
            except OSError:
                continue
            counts = {}
            for i in range(len(sh) // 64):
                t, = struct.unpack_from('<I', sh, i * 64 + 4)
                size, = struct.unpack_from('<Q', sh, i * 64 + 32)
                if t in (2, 11):
                    counts[t] = size // 24
            c = counts.get(2) or counts.get(11) or 0
            if c:
                found.append((c, p))
found.sort(reverse=True)
seen = set()
for c, p in found:
    # one of the copies of a file (a hard link, another toolchain's build of it)
    stem = os.path.basename(p).split('.so')[0].split('-')[0]
    key = (os.stat(p).st_ino, stem)
    if key[0] in seen or key[1] in seen:
        continue
    seen.update(key)
    print(p)
    n -= 1
    if not n:
        break
PY
}

if (($#)); then
	FILES=("$@")
else
	dirs=(/usr/lib/x86_64-linux-gnu /usr/lib/gcc)
	for t in "${HOME:-/root}"/.rustup/toolchains/*/lib; do
		[[ -d $t ]] && dirs+=("$t")
	done
	mapfile -t FILES < <(biggest "$NFILES" "${dirs[@]}")
fi
((${#FILES[@]})) || skip "no ELF file with symbols found"

W=$(mktemp -d "${TMPDIR:-/tmp}/flamed-symtab.XXXXXX")
trap 'rm -rf -- "$W"' EXIT

# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# run NAME CMD...: one timed run; appends "cpu_s maxrss_kib" of CMD's whole
# process to $W/NAME, and what it printed to $W/out; fails as CMD does (its
# messages in $W/err).
run() {
	local name=$1
	shift
	: >"$W/t"
	timed "$W/t" "$@" >"$W/out" 2>"$W/err" || return 1
	awk '{ print $2 + $3, $4 }' "$W/t" >>"$W/$name"
}

say "perf probe on /bin/true: perf's own start"
: >"$W/perf0"
for ((r = 1; r <= RUNS; r++)); do
	run perf0 perf probe -F -x /bin/true --filter '*' || die "perf probe failed: $(tail -n 3 "$W/err")"
done
perf0=$(cut -d' ' -f1 "$W/perf0" | median)

printf '%-34s %9s %11s %11s %11s %11s %8s\n' file symbols "flamed CPU" "flamed RSS" "perf CPU" "perf RSS" "perf/fl"
for f in "${FILES[@]}"; do
	: >"$W/flamed"
	: >"$W/flamed_load"
	: >"$W/perf"
	perf_ok=1
	for ((r = 1; r <= RUNS; r++)); do
		run flamed "$TOOL" "$f" || die "symtab_load on $f failed: $(tail -n 3 "$W/err")"
		awk '{ print $2 / 1000 }' "$W/out" >>"$W/flamed_load"
		if ((perf_ok)) && ! run perf perf probe -F -x "$f" --filter '*' >/dev/null; then
			say "perf probe cannot list $f: $(head -n 1 "$W/err")"
			perf_ok=0
		fi
	done
	syms=$("$TOOL" "$f" | awk '{ print $4 }')
	fc=$(median <"$W/flamed_load")
	fr=$(cut -d' ' -f2 "$W/flamed" | median)
	pc=-1 pr=-1
	if ((perf_ok)); then
		pc=$(cut -d' ' -f1 "$W/perf" | median | awk -v p="$perf0" '{ print $1 - p }')
		pr=$(cut -d' ' -f2 "$W/perf" | median)
	fi
	awk -v f="$(basename "$f")" -v s="$syms" -v fc="$fc" -v fr="$fr" -v pc="$pc" -v pr="$pr" 'BEGIN {
		printf "%-34.34s %9d %9.1f ms %7.1f MiB", f, s, fc * 1000, fr / 1024
		if (pc < 0)
			printf " %11s %11s %8s\n", "failed", "-", "-"
		else
			printf " %8.1f ms %7.1f MiB %7.1fx\n", pc * 1000, pr / 1024, (fc > 0 ? pc / fc : 0) }'
done
awk -v p="$perf0" -v n="$RUNS" 'BEGIN {
	printf "medians of %d runs each, each a fresh process. flamed CPU: fl_elfsyms__open() and __free() alone;\n", n
	printf "perf CPU: the whole perf probe less its start (%.1f ms on /bin/true). RSS: peak of the whole process.\n", p * 1000 }'
