#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon's Prometheus endpoint (metrics_listen), scraped by a real
# Prometheus every second: the exposition parses (Prometheus marks the target
# up), the flamed_* and process_* series are there, and their values agree
# with what the daemon did: snapshots written = snapshot files, samples in a
# profile >= the samples in those files, start time = the daemon's. Only GET
# /metrics is served (404, 405). A port in use at start: exit 1, one line.
# SIGHUP keeps the endpoint; SIGTERM closes it.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PROMETHEUS=$(command -v prometheus || true)
[[ -n $PROMETHEUS ]] || skip "prometheus is not installed (Debian: apt-get install prometheus)"
need_root_and_perf
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib_daemon.sh"

# --- helpers -----------------------------------------------------------------
# http METHOD PORT PATH: one HTTP/1.0 request to 127.0.0.1:PORT with bash's
# /dev/tcp (no curl needed); the response, headers and body, on stdout.
http() {
	local method=$1 port=$2 path=$3
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf '%s %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n' "$method" "$path" "$port" >&3
	timeout 10 cat <&3 || true
	exec 3<&-
}

# status RESPONSE_FILE: the HTTP status code of a response http() wrote.
status() {
	head -n 1 "$1" | awk '{ print $2 }'
}

# free_port: a loopback TCP port nobody listens on (from a random start).
free_port() {
	local p i
	for ((i = 0; i < 200; i++)); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || {
			echo "$p"
			return 0
		}
	done
	fail "no free loopback port found"
}

# urlencode STRING: STRING for a query string, every byte but [A-Za-z0-9._~-] as %XX.
urlencode() {
	local s=$1 out='' c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[A-Za-z0-9._~-]) out+=$c ;;
		*) out+=$(printf '%%%02X' "'$c") ;;
		esac
	done
	echo "$out"
}

# promql EXPR: the values of Prometheus's instant query EXPR, one per line
# (none when the result is empty); fails when the API says anything but success.
promql() {
	local body
	body=$(http GET "$PPORT" "/api/v1/query?query=$(urlencode "$1")" | sed '1,/^\r\{0,1\}$/d')
	[[ $body == *'"status":"success"'* ]] || fail "Prometheus query '$1' failed: $body"
	grep -o '"value":\[[^]]*\]' <<<"$body" | sed 's/.*,"\(.*\)"\]$/\1/' || true
}

# value EXPR: the one value of EXPR; empty when there is none. A scrape that
# failed (the daemon slower than scrape_timeout on a busy machine) leaves the
# target's series stale, so none, until the next one: asked again for up to 10 s.
value() {
	local v i
	for ((i = 0; i < 20; i++)); do
		v=$(promql "$1" | head -n 1)
		[[ -z $v ]] || break
		sleep 0.5
	done
	echo "$v"
}

# value_is EXPR WANT: EXPR has exactly one value, numerically WANT.
# shellcheck disable=SC2317 # called by wait_until
value_is() {
	local v
	v=$(value "$1")
	[[ -n $v ]] && awk -v a="$v" -v b="$2" 'BEGIN { exit !(a + 0 == b + 0) }'
}

# has_series EXPR: EXPR has a value.
# shellcheck disable=SC2317 # called by wait_until
has_series() {
	[[ -n $(value "$1") ]]
}

# folded_samples DIR: the samples of every folded snapshot in DIR.
folded_samples() {
	local s n=0
	for s in $(snapshots "$1"); do
		n=$((n + $(awk '{ n += $NF } END { printf "%.0f\n", n }' "$1/$s.folded")))
	done
	echo "$n"
}

# shellcheck disable=SC2317 # called by wait_until
serving() {
	http GET "$MPORT" /metrics >"$T/probe.http" 2>/dev/null && [[ $(status "$T/probe.http") == 200 ]]
}

# shellcheck disable=SC2317 # called by wait_until
prometheus_ready() {
	http GET "$PPORT" /-/ready >"$T/ready.http" 2>/dev/null && [[ $(status "$T/ready.http") == 200 ]]
}

# Something to sample: one busy thread.
bg "$FIXTURES/chains" 120
BURNER=$BG_PID
wait_comm "$BURNER" chains

MPORT=$(free_port)
PPORT=$(free_port)
[[ $PPORT != "$MPORT" ]] || PPORT=$(free_port)
OUT=$T/out
# Snapshots only when asked (SIGUSR1): the count is known when Prometheus is asked.
cat >"$T/flamed.conf" <<EOF
interval = 1h
formats = folded
metrics_listen = 127.0.0.1:$MPORT
EOF

# --- Prometheus, in the foreground of its own job, scraping every second ----
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: flamed
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
EOF
bg "$PROMETHEUS" --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
	--web.listen-address="127.0.0.1:$PPORT" --log.level=warn
PROM_PID=$BG_PID
PROM_LOG=$T/bg-$BG_N.log
wait_until 30 "Prometheus ready on 127.0.0.1:$PPORT ($(tail -n 3 "$PROM_LOG" 2>/dev/null))" prometheus_ready
note "prometheus (pid $PROM_PID) on 127.0.0.1:$PPORT, scraping 127.0.0.1:$MPORT"

# --- a port in use at start: exit 1, one line naming it ---------------------
cat >"$T/busy.conf" <<EOF
metrics_listen = 127.0.0.1:$PPORT
EOF
TIMEOUT=20 run_flamed busy daemon --config "$T/busy.conf" --output-dir "$T/busy-out"
expect_rc 1
[[ $(wc -l <"$LAST_ERR") -eq 1 ]] || fail "a port in use: expected one error line, got: $(cat "$LAST_ERR")"
grep -qF "127.0.0.1:$PPORT" "$LAST_ERR" || fail "the error does not name 127.0.0.1:$PPORT: $(cat "$LAST_ERR")"
grep -qi "in use" "$LAST_ERR" || fail "the error does not say the address is in use: $(cat "$LAST_ERR")"

# --- the daemon, serving /metrics --------------------------------------------
start_daemon main --config "$T/flamed.conf" --output-dir "$OUT"
wait_until 30 "the daemon serving GET /metrics on 127.0.0.1:$MPORT (is metrics_listen wired?)" serving
t_served=$(date +%s)

# The endpoint itself: the text format, and nothing but GET /metrics.
http GET "$MPORT" /metrics >"$T/metrics.http"
grep -qi '^content-type: text/plain; version=0.0.4' "$T/metrics.http" ||
	fail "GET /metrics: no 'Content-Type: text/plain; version=0.0.4': $(head -n 8 "$T/metrics.http")"
grep -q '^# TYPE flamed_samples_total counter' "$T/metrics.http" || fail "GET /metrics: no TYPE of flamed_samples_total"
http GET "$MPORT" / >"$T/root.http"
[[ $(status "$T/root.http") == 404 ]] || fail "GET /: status $(status "$T/root.http"), not 404"
http POST "$MPORT" /metrics >"$T/post.http"
[[ $(status "$T/post.http") == 405 ]] || fail "POST /metrics: status $(status "$T/post.http"), not 405"

# Prometheus scrapes it: up == 1 means the exposition parsed.
wait_until 20 "Prometheus scraping the daemon (up == 1)" value_is 'up{job="flamed"}' 1

# --- snapshots asked for, counted by Prometheus as in the directory ----------
for i in 1 2 3; do
	kill -USR1 "$DPID"
	wait_until 20 "snapshot $i after SIGUSR1" logged_at_least "$i"
done
N=$(nsnap "$OUT")
[[ $N -ge 3 ]] || fail "$N snapshots in $OUT after 3 SIGUSR1"
wait_until 20 "flamed_snapshots_total{result=\"written\"} == $N (the files in $OUT) in Prometheus" \
	value_is 'flamed_snapshots_total{result="written"}' "$N"
value_is 'flamed_snapshots_total{result="failed"}' 0 ||
	fail "flamed_snapshots_total{result=\"failed\"} is $(value 'flamed_snapshots_total{result="failed"}'), not 0"

# Samples: some in the profiles, at least those of the files.
in_files=$(folded_samples "$OUT")
[[ $in_files -gt 0 ]] || fail "no samples in the snapshots of $OUT, with chains burning CPU"
wait_until 10 "flamed_samples_total{outcome=\"profile\"} >= $in_files (the samples in the files)" \
	has_series "flamed_samples_total{outcome=\"profile\"} >= $in_files"
prof=$(value 'flamed_samples_total{outcome="profile"}')
note "samples in profiles: $prof; in the $N snapshot files: $in_files"

# Every family is there, with its labels.
for s in 'flamed_samples_total{outcome="idle"}' 'flamed_samples_total{outcome="other_process"}' \
	'flamed_samples_total{outcome="lost"}' 'flamed_samples_lost_total{cause="ring_full"}' \
	'flamed_snapshot_duration_seconds' 'flamed_last_snapshot_timestamp_seconds' \
	'flamed_push_total{result="ok"}' 'flamed_push_total{result="failed"}' \
	'flamed_push_spool_bytes' 'flamed_push_spool_dropped_total' \
	'flamed_unwind_stacks_total{outcome="complete"}' 'flamed_throttled_total' \
	'flamed_caps_hit_total{cap="max_stacks"}' 'flamed_caps_hit_total{cap="max_processes"}' \
	'process_cpu_seconds_total' 'process_resident_memory_bytes' 'process_virtual_memory_bytes' \
	'process_open_fds' 'process_max_fds' 'process_start_time_seconds'; do
	has_series "$s" || fail "no series $s in Prometheus"
done
# lost is the sum of its causes; no push configured: no push counted.
has_series 'flamed_samples_total{outcome="lost"} == scalar(sum(flamed_samples_lost_total))' ||
	fail "flamed_samples_total{outcome=\"lost\"} is not the sum of flamed_samples_lost_total"
value_is 'sum(flamed_push_total)' 0 ||
	fail "pushes counted, but push_url is not set"

# Values that match the process and the clock.
now_s=$(date +%s)
last=$(value flamed_last_snapshot_timestamp_seconds)
awk -v l="$last" -v a="$t_served" -v b="$now_s" 'BEGIN { exit !(l >= a - 1 && l <= b + 1) }' ||
	fail "flamed_last_snapshot_timestamp_seconds is $last, not between $t_served and $now_s"
dur=$(value flamed_snapshot_duration_seconds)
awk -v d="$dur" 'BEGIN { exit !(d > 0 && d < 60) }' || fail "flamed_snapshot_duration_seconds is $dur"
# The daemon's start, from /proc: field 22 of its stat, in clock ticks after boot.
ticks=$(awk '{ s = $0; sub(/.*\) /, "", s); split(s, f, " "); print f[20] }' "/proc/$DPID/stat")
btime=$(awk '/^btime/ { print $2 }' /proc/stat)
started=$(awk -v b="$btime" -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", b + t / hz }')
pst=$(value process_start_time_seconds)
awk -v a="$pst" -v b="$started" 'BEGIN { d = a - b; exit !(d > -2 && d < 2) }' ||
	fail "process_start_time_seconds is $pst, the daemon started at $started"
fds=$(find "/proc/$DPID/fd" -mindepth 1 -maxdepth 1 | wc -l)
ofd=$(value process_open_fds)
awk -v a="$ofd" -v b="$fds" 'BEGIN { exit !(a > 3 && a < b + 20 && a > b - 20) }' ||
	fail "process_open_fds is $ofd; /proc/$DPID/fd has $fds"
rss=$(value process_resident_memory_bytes)
awk -v r="$rss" 'BEGIN { exit !(r > 1048576) }' || fail "process_resident_memory_bytes is $rss"

# --- SIGHUP keeps the endpoint; SIGTERM closes it ------------------------------
kill -HUP "$DPID"
wait_until 10 "the reload logged" grep -q 'configuration reloaded' "$DLOG"
serving || fail "GET /metrics fails after SIGHUP: $(head -n 3 "$T/probe.http")"
n=$(nsnap "$OUT")
stop_daemon TERM
[[ $DRC -eq 0 ]] || fail "exit status $DRC after SIGTERM, expected 0"
if (exec 3<>"/dev/tcp/127.0.0.1/$MPORT") 2>/dev/null; then
	fail "127.0.0.1:$MPORT still accepts connections after the daemon exited"
fi
note "$(nsnap "$OUT") snapshots ($n before SIGTERM); Prometheus saw $(value 'flamed_snapshots_total{result="written"}')"
pass "metrics endpoint scraped by Prometheus: snapshots, samples, process metrics agree"
