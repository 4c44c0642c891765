#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: what reading Python frames costs (issue 18), and what it gives.
#
#   tests/bench/python_cost.sh [-d SECONDS] [-f FREQS] [-r RUNS] [-k DIR]
#
# The workload is Debian's python3 running tests/fixtures/py_work.py split
# (two functions in a 2:1 split, pure Python). flamed records it with -p for
# SECONDS at each frequency, with Python frames (the default) and without
# (--no-python: what flamed and perf showed before), RUNS times each,
# alternating; the medians are printed. Measured:
#   py %       samples of the process with Python frames (py_check.py)
#   named %    of them, those whose leaf Python frame is named
#   leaf named %  samples whose leaf frame is named at all (a function,
#              Python or native, not "[python3.11]")
#   BPF ns     run time per run of flamed's perf_event program (its fdinfo,
#              with kernel.bpf_stats_enabled=1, restored on exit)
#   CPU s      user + system of flamed's process (tests/bench/treetime.py),
#              set-up and writing included
# and the ratios with/without of BPF ns and CPU s. Needs root and python3;
# exits 77 without them. Not part of ctest.
set -euo pipefail
export LC_ALL=C

SRCDIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
DURATION=${DURATION:-10}
FREQS=${FREQS:-99 999}
RUNS=${RUNS:-3}
KEEP=${KEEP:-}
FLAMED=${FLAMED:-$SRCDIR/build/flamed}
PYTHON=${PYTHON:-python3}
PY=${PY:-/usr/bin/python3}

# shellcheck source=tests/bench/lib.sh
source "$SRCDIR/tests/bench/lib.sh"

usage() {
	sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$SRCDIR/tests/bench/python_cost.sh"
}

while (($#)); do
	case $1 in
	-d | --duration) DURATION=${2?}; shift ;;
	-f | --freqs) FREQS=${2?}; shift ;;
	-r | --runs) RUNS=${2?}; shift ;;
	-k | --keep) KEEP=${2?}; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done

[[ $(id -u) -eq 0 ]] || skip "needs root (it samples with BPF and reads BPF statistics)"
[[ -x $PY ]] || skip "needs $PY (Debian: apt-get install python3)"
[[ -x $FLAMED ]] || die "no flamed binary at $FLAMED (cmake -S . -B build && cmake --build build)"
[[ -r /proc/sys/kernel/bpf_stats_enabled ]] || skip "no kernel.bpf_stats_enabled on this kernel"

bench_workdir
WPID=
BPF_STATS_WAS=
cleanup() {
	[[ -z $WPID ]] || kill "$WPID" 2>/dev/null || true
	if [[ -n $BPF_STATS_WAS ]]; then
		echo "$BPF_STATS_WAS" >/proc/sys/kernel/bpf_stats_enabled ||
			say "could not restore kernel.bpf_stats_enabled=$BPF_STATS_WAS"
	fi
	[[ -n $KEEP ]] || rm -rf "$W"
}
trap cleanup EXIT
BPF_STATS_WAS=$(</proc/sys/kernel/bpf_stats_enabled)
echo 1 >/proc/sys/kernel/bpf_stats_enabled

# One measurement: "py_share named_leaf leaf_named bpf_ns cpu_s".
measure() {
	local hz=$1 mode=$2 r=$3 extra=()
	[[ $mode == python ]] || extra=(--no-python)
	"$PY" "$SRCDIR/tests/fixtures/py_work.py" split $((DURATION + 4)) &
	WPID=$!
	sleep 1
	"$PYTHON" "$SRCDIR/tests/bench/progstats.py" "$r/pid" "$r/bpf" &
	local mon=$!
	# shellcheck disable=SC2016 # expanded by the inner bash
	timed "$r/times" bash -c 'echo $$ >"$1"; shift; exec "$@"' pidof "$r/pid" \
		"$FLAMED" record -p "$WPID" -F "$hz" -d "$DURATION" "${extra[@]}" -o "$r/out.folded" \
		2>"$r/record.err" || die "flamed record failed: $(tail -n 3 "$r/record.err")"
	wait "$mon" || die "progstats.py failed"
	kill "$WPID" 2>/dev/null || true
	wait "$WPID" 2>/dev/null || true
	WPID=
	"$PYTHON" "$SRCDIR/tests/integration/py_check.py" "$r/out.folded" >"$r/check" ||
		die "py_check.py failed on $r/out.folded"
	awk -v bpf="$(<"$r/bpf")" -v cpu="$(awk '{ c += $2 + $3 } END { print c }' "$r/times")" '
		$1 == "py_share" { py = $2 }
		$1 == "named_leaf_share" { named = $2 }
		END { split(bpf, b, " "); printf "%s %s %s %.0f %.3f\n", py, named, "-", (b[1] ? b[2] / b[1] : 0), cpu }' \
		"$r/check" >"$r/row"
	# Leaves named at all: the last frame is neither "[module]" nor "[unknown]".
	awk '{ c = $NF; sub(/ [0-9]+$/, ""); n = split($0, f, ";"); all += c
		if (f[n] !~ /^\[/) named += c } END { printf "%.2f\n", all ? 100 * named / all : 0 }' \
		"$r/out.folded" >"$r/leafnamed"
	awk -v ln="$(<"$r/leafnamed")" '{ $3 = ln; print }' "$r/row"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '%-6s %-7s %7s %8s %12s %8s %7s\n' Hz mode "py %" "named %" "leaf named %" "BPF ns" "CPU s"
for hz in $FREQS; do
	for mode in python off; do
		: >"$W/$mode-$hz.rows"
	done
	for ((i = 1; i <= RUNS; i++)); do
		for mode in python off; do
			r=$W/$mode-$hz-$i
			mkdir -p "$r"
			measure "$hz" "$mode" "$r" >>"$W/$mode-$hz.rows"
		done
	done
	for mode in python off; do
		rows=$W/$mode-$hz.rows
		for col in 1 2 3 4 5; do
			awk -v c="$col" '{ print $c }' "$rows" | median >"$W/$mode-$hz.c$col"
		done
		printf '%-6s %-7s %7s %8s %12s %8s %7s\n' "$hz" "$mode" "$(<"$W/$mode-$hz.c1")" \
			"$(<"$W/$mode-$hz.c2")" "$(<"$W/$mode-$hz.c3")" "$(<"$W/$mode-$hz.c4")" \
			"$(<"$W/$mode-$hz.c5")"
	done
	awk -v a="$(<"$W/python-$hz.c4")" -v b="$(<"$W/off-$hz.c4")" \
		-v c="$(<"$W/python-$hz.c5")" -v d="$(<"$W/off-$hz.c5")" -v hz="$hz" 'BEGIN {
		printf "%s Hz: Python frames cost %+.0f ns a sample in BPF (x%.2f), %+.3f s of CPU in %s runs'"'"' median (x%.2f)\n",
			hz, a - b, b ? a / b : 0, c - d, "'"$RUNS"'", d ? c / d : 0 }'
done
