#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: the time flamed's symbolizer takes to name the distinct user
# addresses of a recording (about 100,000, over libc, libstdc++ and a large
# C++ binary with debug info) against `perf script` on the same recording.
#
#   tests/bench/symbolize_vs_perf.sh
#
# 1. Builds the workload (tests/bench/symbolize_workload.cpp: g++ -O2 -g
#    -fno-omit-frame-pointer, TYPES template instantiations in 8 translation
#    units, compiled NCPU at a time; about a minute here) and
#    tests/bench/symbolize_bench.c against libflamed.a (built in BUILD,
#    default /tmp/build-symb, when it is not there).
# 2. Runs the workload (THREADS threads, default 2) and records it with
#    `perf record -e cpu-clock:u -F HZ -g -p PID` (frame pointers; default
#    40000 Hz) for DURATION seconds (default 20), then tells it to stop
#    working: it stays alive, its mappings in place, until the end.
# 3. Times `perf script` on the recording as it is and with --no-inline
#    (tests/bench/treetime.py: CPU of the whole process tree, addr2line
#    children included; output to /dev/null), and lists the distinct user
#    addresses of every frame of every sample with perf's module and name
#    (`perf script -F ip,sym,dso`, untimed; perf prints module-relative
#    addresses, turned back into the process's with its /proc/PID/maps).
# 4. Times symbolize_bench on exactly those addresses, for the still-running
#    process: tracker (/proc/PID/maps), symbolizer from cold caches, every
#    address named and demangled; inlined functions off (batches of 127),
#    then on (batches of 1: a batch's inlined frames are readable for its
#    last address only, and they are demangled too). CPU of the whole
#    process (treetime.py), start-up and input parsing included; the
#    symbolization alone is printed as well. With inlined functions the
#    cold pass stops after INLINE_BUDGET CPU seconds (default 60) and its
#    cost is extrapolated to all addresses (they are in random order);
#    flamed's per-address DWARF scope walk is slow on large CUs.
#
# Environment: HZ, DURATION, THREADS, TYPES (default 96, a multiple of 8),
# INLINE_BUDGET, BUILD, CXX (g++), CC (cc), PYTHON (python3), KEEP (a directory: keep
# perf.data, the address list and the outputs there). Needs root (perf
# record -p, the tracker's perf events), perf (Debian: linux-perf), g++,
# pkg-config and python3; exits 77 when one is missing. Not part of ctest:
# about 3 minutes.
set -euo pipefail
export LC_ALL=C # '.' as the decimal point everywhere

SRCDIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
BUILD=${BUILD:-/tmp/build-symb}
HZ=${HZ:-40000}
DURATION=${DURATION:-20}
THREADS=${THREADS:-2}
TYPES=${TYPES:-96}
CXX=${CXX:-g++}
CC=${CC:-cc}
PYTHON=${PYTHON:-python3}
INLINE_BUDGET=${INLINE_BUDGET:-60}
KEEP=${KEEP:-}
PARTS=8
GOAL_RATIO=5 # perf script's CPU over flamed's: at least this much

# shellcheck source=tests/bench/lib.sh
source "$SRCDIR/tests/bench/lib.sh"

for v in HZ DURATION THREADS TYPES INLINE_BUDGET; do
	[[ ${!v} =~ ^[0-9]+$ && ${!v} -gt 0 ]] || die "$v must be a positive whole number, not '${!v}'"
done
((TYPES % PARTS == 0)) || die "TYPES must be a multiple of $PARTS, not $TYPES"
[[ $(id -u) -eq 0 ]] || skip "needs root (perf record -p, the tracker's perf events)"
perf version >/dev/null 2>&1 || skip "needs perf (Debian: apt-get install linux-perf)"
command -v "$CXX" >/dev/null || skip "needs $CXX (the workload is C++)"
command -v pkg-config >/dev/null || skip "needs pkg-config"
"$PYTHON" -c 'import ctypes, resource' 2>/dev/null || skip "needs $PYTHON (it measures the process trees)"
max_rate=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo 0)
((HZ <= max_rate)) || die "HZ=$HZ is above kernel.perf_event_max_sample_rate ($max_rate)"
NCPU=$(nproc)

if [[ ! -f $BUILD/libflamed.a ]]; then
	say "building libflamed.a in $BUILD"
	cmake -S "$SRCDIR" -B "$BUILD" >/dev/null
	cmake --build "$BUILD" -j"$NCPU" >/dev/null
fi
TOOL=$BUILD/symbolize_bench
PKGS="libbpf libelf libdw liblzma"
# shellcheck disable=SC2046,SC2086 # pkg-config's flags and PKGS: words
"$CC" -O2 -g -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -I"$SRCDIR/include" \
	$(pkg-config --cflags $PKGS) "$SRCDIR/tests/bench/symbolize_bench.c" \
	"$BUILD/libflamed.a" $(pkg-config --libs $PKGS) -liberty -lm -o "$TOOL"

W=$(mktemp -d "${TMPDIR:-/tmp}/flamed-symbench.XXXXXX")
WPID=
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	stop_workload
	if [[ -n $KEEP ]]; then
		mkdir -p "$KEEP"
		cp -a "$W"/perf.data "$W"/*.txt "$W"/*.err "$W"/times.* "$KEEP/" 2>/dev/null || true
	fi
	rm -rf "$W"
}
trap cleanup EXIT

# 1. The workload.
say "building the workload ($TYPES types in $PARTS parts, $NCPU at a time)"
WSRC=$SRCDIR/tests/bench/symbolize_workload.cpp
CXXFLAGS=(-O2 -g -fno-omit-frame-pointer -std=gnu++17)
per=$((TYPES / PARTS))
for p in main $(seq 0 $((PARTS - 1))); do
	while (($(jobs -rp | wc -l) >= NCPU)); do
		wait -n || true
	done
	if [[ $p == main ]]; then
		defs=(-DPART_MAIN)
	else
		defs=(-DPART="$p" -DFIRST=$((p * per)) -DCOUNT="$per")
	fi
	"$CXX" "${CXXFLAGS[@]}" "${defs[@]}" -c "$WSRC" -o "$W/part-$p.o" 2>>"$W/build.err" &
done
wait || true
for p in main $(seq 0 $((PARTS - 1))); do
	[[ -f $W/part-$p.o ]] || die "the workload does not build: $(tail -n 5 "$W/build.err")"
done
"$CXX" -o "$W/symbolize_workload" "$W"/part-*.o 2>>"$W/build.err" ||
	die "the workload does not link: $(tail -n 5 "$W/build.err")"
WL=$W/symbolize_workload
text_mib=$(size -A "$WL" | awk '$1 == ".text" { printf "%.1f", $2 / 1048576 }')

# 2. Recording it; it stays alive afterwards.
say "recording the workload at $HZ Hz for $DURATION s"
setsid "$WL" "$THREADS" </dev/null >"$W/workload.txt" 2>"$W/workload.err" &
WPID=$!
sleep 1
timed "$W/times.record" perf record -N -e cpu-clock:u -F "$HZ" -g -p "$WPID" -o "$W/perf.data" \
	-- sleep "$DURATION" 2>"$W/record.err" || die "perf record failed: $(tail -n 3 "$W/record.err")"
kill -USR1 "$WPID"
for _ in $(seq 100); do
	grep -qx "done" "$W/workload.txt" && break
	sleep 0.1
done
grep -qx "done" "$W/workload.txt" || die "the workload did not stop working: $(cat "$W/workload.err")"
kill -0 "$WPID" || die "the workload exited: $(cat "$W/workload.err")"

# 3. The distinct addresses, with perf's names (untimed; this also warms the page cache).
# Frames are "HEX NAME (DSO)", HEX relative to the module's mapping when
# perf found one: map_ip = ip - start + pgoff, undone with /proc/PID/maps.
# Written in a random (seeded) order: neither tool gains from the
# recording's order, and a partial pass (INLINE_BUDGET) is a fair sample.
cat >"$W/addrs.py" <<'EOF'
import os, random, re, sys
maps_path, pid, out = sys.argv[1:4]
maps = {}
for line in open(maps_path):
    f = line.split(maxsplit=5)
    if len(f) == 6:
        start, end = (int(x, 16) for x in f[0].split("-"))
        maps.setdefault(f[5].strip(), []).append((start, end, int(f[2], 16), "x" in f[1]))
frame = re.compile(r"^\s+([0-9a-f]+) (.*) \((.*)\)$")
addrs, samples, in_sample, unconverted = {}, 0, False, 0
for line in sys.stdin:
    m = frame.match(line)
    if not m:
        in_sample = False
        continue
    if not in_sample:
        samples += 1
        in_sample = True
    ip, sym, dso = int(m.group(1), 16), m.group(2), m.group(3)
    if dso in maps:
        # The executable mapping first: perf synthesizes only those.
        for start, end, pgoff, x in sorted(maps[dso], key=lambda t: not t[3]):
            if pgoff <= ip < pgoff + (end - start):
                ip = ip - pgoff + start
                break
        else:
            unconverted += 1
            continue
    name = "[unknown]" if sym.startswith("[unknown]") else sym
    addrs.setdefault(ip, (os.path.basename(dso) if dso != "[unknown]" else dso, name))
order = list(addrs)
random.Random(1).shuffle(order)
with open(out, "w") as f:
    f.write(f"pid {pid}\n")
    for ip in order:
        f.write(f"{ip:x}\t{addrs[ip][0]}\t{addrs[ip][1]}\n")
count, named = {}, {}
for dso, name in addrs.values():
    count[dso] = count.get(dso, 0) + 1
    named[dso] = named.get(dso, 0) + (name != "[unknown]")
print(f"samples {samples}")
print(f"unconverted {unconverted}")
for dso in sorted(count, key=lambda d: -count[d]):
    print(f"module {dso} {count[dso]} {named[dso]}")
EOF
say "listing the distinct addresses (perf script -F ip,sym,dso)"
perf script -i "$W/perf.data" --no-inline -F ip,sym,dso 2>"$W/frames.err" |
	"$PYTHON" "$W/addrs.py" "/proc/$WPID/maps" "$WPID" "$W/addrs.txt" >"$W/modules.txt" ||
	die "perf script -F ip,sym,dso failed: $(tail -n 3 "$W/frames.err")"
read -r _ SAMPLES < <(grep '^samples ' "$W/modules.txt")
read -r _ UNCONV < <(grep '^unconverted ' "$W/modules.txt")
NADDR=$(($(wc -l <"$W/addrs.txt") - 1))
((NADDR > 0)) || die "no user addresses in the recording"

say "perf script on $SAMPLES samples ($NADDR distinct user addresses)"
for how in default no-inline; do
	args=()
	[[ $how == default ]] || args=(--no-inline)
	timed "$W/times.perf-$how" perf script "${args[@]}" -i "$W/perf.data" >/dev/null \
		2>"$W/script-$how.err" || die "perf script ${args[*]} failed: $(tail -n 3 "$W/script-$how.err")"
done

# Untimed: whether perf script's default output has inlined frames at all.
INLINED=$(perf script -i "$W/perf.data" 2>/dev/null | grep -c '(inlined)' || true)

# 4. flamed's symbolizer on the same addresses.
say "symbolize_bench on the same addresses, inlined functions off"
timed "$W/times.flamed-noinline" "$TOOL" -b 127 "$W/addrs.txt" >"$W/flamed-noinline.txt" \
	2>"$W/flamed-noinline.err" || die "symbolize_bench failed: $(tail -n 3 "$W/flamed-noinline.err")"
say "symbolize_bench on the same addresses, inlined functions on (at most $INLINE_BUDGET CPU s)"
timed "$W/times.flamed-inline" "$TOOL" -i -b 1 -t "$INLINE_BUDGET" "$W/addrs.txt" >"$W/flamed-inline.txt" \
	2>"$W/flamed-inline.err" || die "symbolize_bench -i failed: $(tail -n 3 "$W/flamed-inline.err")"
stop_workload

# key FILE NAME: the value of "NAME value" in FILE.
key() { awk -v k="$2" '$1 == k { print $2; exit }' "$1"; }
# cpu_of FILE: CPU (user + system) and wall seconds, and peak RSS in MiB, of treetime's line.
cpu_of() { awk '{ printf "%.3f %.3f %.1f\n", $2 + $3, $1, $4 / 1024 }' "$1"; }
# flamed_of HOW: CPU, wall, peak RSS, named, done of a symbolize_bench run; a cold
# pass cut short by its budget is extrapolated to all addresses (its rate
# over the addresses it did, the rest of the process as measured).
flamed_of() {
	local f=$W/flamed-$1.txt
	read -r c w r < <(cpu_of "$W/times.flamed-$1")
	awk -v c="$c" -v w="$w" -v r="$r" -v n="$NADDR" -v done="$(key "$f" cold_done)" \
		-v cc="$(key "$f" cold_cpu_s)" -v cw="$(key "$f" cold_wall_s)" -v ok="$(key "$f" reason_ok)" 'BEGIN {
		if (done > 0 && done < n) {
			c += cc * (n / done - 1)
			w += cw * (n / done - 1)
		}
		printf "%.3f %.3f %.1f %d %d\n", c, w, r, ok, done
	}'
}

read -r _ _ _ _ INL_DONE < <(flamed_of inline)
partial=
((INL_DONE >= NADDR)) || partial=" (*)"

echo
echo "Workload: $(basename "$WSRC"), $TYPES types, .text $text_mib MiB, $THREADS threads,"
echo "recorded with perf record -e cpu-clock:u -F $HZ -g -p PID for $DURATION s: $SAMPLES samples,"
echo "$NADDR distinct user addresses over all their frames ($UNCONV frames not converted back)."
echo "perf script's default output has $INLINED inlined frames (with --no-inline: none)."

echo
echo "Distinct addresses per module; named by perf, by flamed (inlines off), and how many of"
echo "them flamed gives inlined frames (inlines on$partial):"
echo
echo "| module | addresses | perf named | flamed named | with inlined frames$partial |"
echo "|---|---:|---:|---:|---:|"
while read -r _ mod n pn; do
	fn=$(awk -v m="$mod" '$1 == "module" && $2 == m { print $4 }' "$W/flamed-noinline.txt")
	fi=$(awk -v m="$mod" '$1 == "module" && $2 == m { printf "%d of %d", $5, $3 }' "$W/flamed-inline.txt")
	echo "| $mod | $n | $pn | ${fn:--} | ${fi:--} |"
done < <(grep '^module ' "$W/modules.txt")

echo
echo "CPU = user + system of the whole process tree (addr2line children too), from start to exit;"
echo "flamed = symbolize_bench: reading the address list, tracker (/proc/PID/maps), symbolizer from"
echo "cold caches, every address named and demangled. µs / address: CPU over the $NADDR addresses."
if [[ -n $partial ]]; then
	echo "(*) inlines on: the cold pass stopped after $INLINE_BUDGET CPU s, $INL_DONE of $NADDR addresses"
	echo "    done (a random sample); its CPU and wall time are extrapolated to all of them."
fi
echo
echo "| tool | CPU s | wall s | peak RSS MiB | named | µs / address | perf script CPU / this |"
echo "|---|---:|---:|---:|---:|---:|---:|"
read -r pd_cpu pd_wall pd_rss < <(cpu_of "$W/times.perf-default")
read -r pn_cpu pn_wall pn_rss < <(cpu_of "$W/times.perf-no-inline")
perf_named=$(awk '$1 == "module" { n += $4 } END { print n + 0 }' "$W/modules.txt")
row() { # label cpu wall rss named of ref_cpu
	awk -v l="$1" -v c="$2" -v w="$3" -v r="$4" -v nm="$5" -v of="$6" -v ref="$7" -v n="$NADDR" 'BEGIN {
		printf "| %s | %.3f | %.3f | %.1f | %.1f%% | %.2f | %s |\n", l, c, w, r,
			100 * nm / of, c * 1e6 / n, (c > 0 ? sprintf("%.1fx", ref / c) : "-")
	}'
}
row "perf script" "$pd_cpu" "$pd_wall" "$pd_rss" "$perf_named" "$NADDR" "$pd_cpu"
row "perf script --no-inline" "$pn_cpu" "$pn_wall" "$pn_rss" "$perf_named" "$NADDR" "$pd_cpu"
read -r fi_cpu fi_wall fi_rss fi_ok fi_done < <(flamed_of inline)
row "flamed, inlines on$partial" "$fi_cpu" "$fi_wall" "$fi_rss" "$fi_ok" "$fi_done" "$pd_cpu"
read -r fn_cpu fn_wall fn_rss fn_ok fn_done < <(flamed_of noinline)
row "flamed, inlines off" "$fn_cpu" "$fn_wall" "$fn_rss" "$fn_ok" "$fn_done" "$pd_cpu"

echo
echo "flamed's parts (CPU s): tracker start; cold pass = symbolizer creation + fl_symbolizer__user"
echo "+ demangling (names and inlined frames' names); a warm pass (same symbolizer, all cached)."
echo
echo "| flamed | tracker | cold pass | of which symbolize | of which demangle | warm pass | addresses / CPU s (cold) | symbolizer RSS MiB | same name as perf |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for how in inline noinline; do
	f=$W/flamed-$how.txt
	label="inlines off"
	[[ $how == noinline ]] || label="inlines on$partial"
	awk -v l="$label" -v done="$(key "$f" cold_done)" \
		-v tr="$(key "$f" tracker_cpu_s)" -v cold="$(key "$f" cold_cpu_s)" \
		-v sy="$(key "$f" cold_symbolize_cpu_s)" -v dm="$(key "$f" cold_demangle_cpu_s)" \
		-v warm="$(key "$f" warm1_cpu_s)" -v rss="$(key "$f" symbolizer_rss_kb)" \
		-v both="$(key "$f" both_named)" -v same="$(key "$f" same_name)" 'BEGIN {
		printf "| %s | %.3f | %.3f | %.3f | %.3f | %s | %.0f | %.1f | %.1f%% of %d |\n", l, tr, cold,
			sy, dm, (warm == "" ? "-" : sprintf("%.3f", warm)), (cold > 0 ? done / cold : 0),
			rss / 1024, (both ? 100 * same / both : 0), both
	}'
done

echo
echo "Goal: flamed at least ${GOAL_RATIO}x faster than perf script (CPU, same recording; in brackets,"
echo "against flamed's cold pass alone, without start-up and reading the address list):"
fi_cold=$(awk -v c="$(key "$W/flamed-inline.txt" cold_cpu_s)" -v d="$INL_DONE" -v n="$NADDR" \
	'BEGIN { printf "%.3f", (d > 0 ? c * n / d : c) }')
for pair in "perf script|$pd_cpu|flamed, inlines on$partial|$fi_cpu|$fi_cold" \
	"perf script --no-inline|$pn_cpu|flamed, inlines off|$fn_cpu|$(key "$W/flamed-noinline.txt" cold_cpu_s)"; do
	IFS='|' read -r pl pc fl fc fcold <<<"$pair"
	awk -v pl="$pl" -v pc="$pc" -v fl="$fl" -v fc="$fc" -v fcold="$fcold" -v goal="$GOAL_RATIO" 'BEGIN {
		r = fc > 0 ? pc / fc : 0
		printf "%s vs %s: %.1fx [%.1fx] (%s)\n", pl, fl, r, (fcold > 0 ? pc / fcold : 0),
			(r >= goal ? "met" : "NOT met")
	}'
done
exit 0
