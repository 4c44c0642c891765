#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Measurement: flamed's libdw DWARF unwinder (lib/unwinding/unwind.c) against libunwind's
# remote API (UNW_CACHE_GLOBAL, .eh_frame_hdr through dwarf_search_unwind_table)
# on the same in-memory perf samples: agreement of the frames, ns per sample
# (cold first pass, warm passes), peak memory. See unwind_compare.c.
#
#   tests/bench/unwind_compare.sh [unwind_compare options...]
#
# Builds libflamed.a in BUILD (default /tmp/build-uwc) if it is not there,
# builds the tool beside it, and samples the nofp_chain, nofp_callback and
# chains fixtures, cc1 compiling a generated 6 MB C file (when gcc 12's cc1 is
# there) and python3 running a loop (when /usr/bin/python3 is there). Options
# go to the tool (-n samples per program, default 3000; -w warm passes; -r
# rounds; -F Hz; -s stack bytes; -d disagreements shown; -c cache size;
# -m lu,lubig,lupt,lunone: which libunwind variants). About a minute here.
# Needs perf_event_open on a child (exits 77 otherwise). Not part of ctest.
set -euo pipefail
export LC_ALL=C

SRCDIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
BUILD=${BUILD:-/tmp/build-uwc}
CC=${CC:-cc}
CC1=${CC1:-/usr/lib/gcc/x86_64-linux-gnu/12/cc1}
PY=${PY:-/usr/bin/python3}

if [[ ! -f $BUILD/libflamed.a || ! -x $BUILD/tests/fixtures/nofp_chain ]]; then
	cmake -S "$SRCDIR" -B "$BUILD" >/dev/null
	cmake --build "$BUILD" -j2 >/dev/null
fi
TOOL=$BUILD/unwind_compare
# libunwind is what flamed is compared with here, and nothing else needs it.
pkg-config --exists libunwind-generic || {
	echo "unwind_compare: needs libunwind (Debian: apt-get install libunwind-dev)" >&2
	exit 77
}
PKGS="libbpf libelf libdw libunwind-generic liblzma"
# shellcheck disable=SC2046
"$CC" -O2 -g -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -I"$SRCDIR/include" \
	$(pkg-config --cflags $PKGS) "$SRCDIR/tests/bench/unwind_compare.c" \
	"$BUILD/libflamed.a" $(pkg-config --libs $PKGS) -lunwind-x86_64 -lm -o "$TOOL"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FIX=$BUILD/tests/fixtures
progs=("nofp_chain=$FIX/nofp_chain {SECS}" "nofp_callback=$FIX/nofp_callback {SECS}"
	"chains=$FIX/chains {SECS}")

if [[ -x $CC1 ]]; then
	# Enough code for cc1 -O2 to run well past the capture (about 20 s here).
	awk 'BEGIN {
		for (i = 0; i < 6000; i++) {
			printf "struct s%d { int a, b; double c; struct s%d *next; };\n", i, i;
			printf "static int g%d[64];\n", i;
			printf "int f%d(int x, struct s%d *p) {\n  int r = x;\n", i, i;
			printf "  for (int i = 0; i < x; i++) {\n    switch ((i + r) %% 7) {\n";
			for (c = 0; c < 7; c++)
				printf "    case %d: r += p->a * i + g%d[(i + %d) & 63]; p = p->next; break;\n", c, i, c;
			printf "    }\n    if (r > %d) r = (r ^ p->b) / 3 + (int)p->c;\n  }\n", i + 100;
			if (i)
				printf "  return r + f%d(r & 3, (struct s%d *)p);\n}\n", i - 1, i - 1;
			else
				printf "  return r;\n}\n";
		}
	}' >"$TMP/big.c"
	progs+=("cc1=$CC1 -quiet -O2 $TMP/big.c -o /dev/null")
fi
if [[ -x $PY ]]; then
	cat >"$TMP/loop.py" <<'EOF'
import sys, time, json

def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

def walk(d):
    if d == 0:
        return leaf(300) + len(json.dumps({"a": [1, 2, 3], "b": "x" * 20}))
    return walk(d - 1) + sorted([d, 3, 1])[0]

end = time.time() + float(sys.argv[1])
while time.time() < end:
    walk(20)
EOF
	progs+=("python3=$PY $TMP/loop.py {SECS}")
fi

"$TOOL" "$@" "${progs[@]}"
