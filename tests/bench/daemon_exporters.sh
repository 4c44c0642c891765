#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What pushing and metrics cost the daemon: two daemons side by side on the
# same machine and the same workload for the same time, one writing folded
# snapshots only, the other also pprof, pushing each snapshot to a receiver
# (tests/integration/push_receiver.py, Pyroscope's ingest API) and serving
# /metrics, scraped every 5 s. Prints each one's CPU time (user + system) and
# peak RSS, and the ratio. Side by side, not one after the other, so that the
# machine's own ups and downs load both alike.
#
#   sudo tests/bench/daemon_exporters.sh [-b BUILD_DIR] [-d SECONDS] [-i INTERVAL]
#
# Default: 600 s at a 10 s interval, at the default 99 Hz.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$here/../../build
dur=600
interval=10s
while getopts b:d:i: o; do
	case $o in
	b) build=$OPTARG ;;
	d) dur=$OPTARG ;;
	i) interval=$OPTARG ;;
	*) exit 2 ;;
	esac
done
flamed=$build/flamed
[[ -x $flamed ]] || { echo "no $flamed: build first (or give -b BUILD_DIR)" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "run as root: the daemon samples every process" >&2; exit 2; }
t=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$t"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
rport=$(free_port)
mport=$(free_port)
mkdir -p "$t/recv" "$t/a" "$t/b"
python3 "$here/../integration/push_receiver.py" --port "$rport" --dir "$t/recv" >"$t/recv.log" 2>&1 &
pids+=($!)
printf 'interval = %s\noutput_dir = %s/a\nformats = folded\n' "$interval" "$t" >"$t/a.conf"
printf 'interval = %s\noutput_dir = %s/b\nformats = folded, pprof\npush_url = http://127.0.0.1:%s\npush_name = bench\nmetrics_listen = 127.0.0.1:%s\n' \
	"$interval" "$t" "$rport" "$mport" >"$t/b.conf"
"$flamed" daemon --config "$t/a.conf" 2>"$t/a.log" &
a=$!
pids+=("$a")
"$flamed" daemon --config "$t/b.conf" 2>"$t/b.log" &
b=$!
pids+=("$b")
# The scraper: what a Prometheus server would do, every 5 s.
(while sleep 5; do
	exec 3<>"/dev/tcp/127.0.0.1/$mport" || continue
	printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
	cat <&3 >/dev/null
	exec 3>&-
done) &
pids+=($!)
sleep "$dur"
cpu() { awk '{ printf "%.2f\n", ($14 + $15) / '"$(getconf CLK_TCK)"' }' "/proc/$1/stat"; }
hwm() { awk '/^VmHWM/ { printf "%.1f\n", $2 / 1024 }' "/proc/$1/status"; }
ca=$(cpu "$a") cb=$(cpu "$b") ra=$(hwm "$a") rb=$(hwm "$b")
kill -TERM "$a" "$b"
wait "$a" "$b" || true
pushed=$(find "$t/recv" -name '*.pprof' | wc -l)
snaps=$(find "$t/b" -maxdepth 1 -type f -name '*.pb.gz' | wc -l)
printf 'over %s s at a %s interval:\n' "$dur" "$interval"
printf '  folded only:                      %6.2f s CPU, %6.1f MiB peak RSS\n' "$ca" "$ra"
printf '  + pprof, push, metrics (scraped): %6.2f s CPU, %6.1f MiB peak RSS\n' "$cb" "$rb"
printf '  ratio: %.3f CPU, %.3f RSS; %d snapshots pushed of %d written\n' \
	"$(awk -v a="$ca" -v b="$cb" 'BEGIN { print b / a }')" \
	"$(awk -v a="$ra" -v b="$rb" 'BEGIN { print b / a }')" "$pushed" "$snaps"
