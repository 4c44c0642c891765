#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon pushing its pprof snapshots to a Pyroscope ingest endpoint (a
# stand-in: push_receiver.py) that misbehaves in every way in turn: refuses
# connections, hangs, answers 500 and 429 with Retry-After (503 the unit test), resets the
# connection mid-body; then stays down while a small spool overflows and the
# daemon restarts. Throughout: local snapshots keep coming every second, the
# spool (OUTPUT_DIR/spool) stays within push_spool_bytes, and once the
# receiver is back every snapshot still spooled arrives, none twice, each a
# pprof profile `go tool pprof -raw` reads.
#
# What it expects of the daemon (config keys push_url, push_auth_file,
# push_name, push_labels, push_timeout, push_spool_bytes, push_tls_verify,
# metrics_listen; formats = pprof):
#  - the spool is OUTPUT_DIR/spool/, holding only fl_push's files;
#  - each snapshot is enqueued with from = the start of its interval (the
#    UTC time its name gives), until = its end, sampleRate = frequency;
#  - the app name is "push_name{push_labels}" and the token from
#    push_auth_file goes as "Authorization: Bearer TOKEN";
#  - the metrics endpoint, when it answers, has flamed_push_total{result="ok"}.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
command -v python3 >/dev/null || skip "python3 is not installed (the stand-in receiver is a Python script)"
command -v go >/dev/null || skip "go is not installed (Debian: golang-go): the bodies are checked with go tool pprof -raw"
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib_daemon.sh"

RECEIVER=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/push_receiver.py
[[ -r $RECEIVER ]] || fail "no $RECEIVER"
# Loopback only: no proxy in between.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
export GOFLAGS=-mod=mod GOTOOLCHAIN=local

HOLD=${PUSH_HOLD:-5} # seconds of each misbehaviour
TOKEN=tok-$$-$RANDOM
RECV=$T/recv
CONTROL=$T/control
OUT=$T/out
SPOOL=$OUT/spool
echo ok >"$CONTROL"
printf '%s\n' "$TOKEN" >"$T/token"
chmod 600 "$T/token"

bg python3 "$RECEIVER" --port 0 --port-file "$T/port" --dir "$RECV" --control "$CONTROL" \
	--auth "Bearer $TOKEN" --name 'flamed-test{env=ci,run=outage}' --rate 99 --quiet
RPID=$BG_PID
wait_until 15 "push_receiver.py listening" test -s "$T/port"
PORT=$(cat "$T/port")
MPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
note "receiver on 127.0.0.1:$PORT (pid $RPID), metrics on 127.0.0.1:$MPORT"

# --- helpers -------------------------------------------------------------------
# mode LINE: what the receiver does now (push_receiver.py's control file).
mode() {
	echo "$1" >"$CONTROL.new"
	mv "$CONTROL.new" "$CONTROL"
	wait_until 3 "the receiver in mode '$1'" grep -qx "$1" "$RECV/mode"
	note "receiver: $1"
}

# spool_bytes: the bytes of the regular files in the spool now.
spool_bytes() {
	find "$SPOOL" -maxdepth 1 -type f -printf '%s\n' 2>/dev/null | awk '{ n += $1 } END { print n + 0 }'
}

# spool_files: how many snapshots wait in the spool.
spool_files() {
	find "$SPOOL" -maxdepth 1 -type f -name 'push-*' 2>/dev/null | wc -l
}

# A watcher records the largest spool it sees (every 0.1 s) in $T/spool.max.
# The file is the maximum: a phase resets it by writing 0 there.
echo 0 >"$T/spool.max"
(
	while sleep 0.1; do
		b=$(spool_bytes)
		max=$(cat "$T/spool.max" 2>/dev/null || echo 0)
		if [[ $b -gt ${max:-0} ]]; then
			echo "$b" >"$T/spool.max.new" && mv "$T/spool.max.new" "$T/spool.max"
		fi
	done
) &
BG_PIDS+=($!)

# received_froms: the from of every body received, one a line, sorted.
received_froms() {
	[[ -s $RECV/params.jsonl ]] || return 0
	python3 -c 'import json, sys
for l in open(sys.argv[1]): print(json.loads(l)["from"])' "$RECV/params.jsonl" | LC_ALL=C sort
}

# local_froms: the start of every local pprof snapshot, sorted.
# shellcheck disable=SC2317 # called by drained
local_froms() {
	local s
	for s in $(snapshots "$OUT" pb.gz); do
		snap_time "$s"
	done | LC_ALL=C sort
}

# missing_froms: local snapshots not received (but the newest, maybe being spooled).
# shellcheck disable=SC2317 # called by drained
missing_froms() {
	comm -23 <(local_froms | sed '$d') <(received_froms)
}

# drained: the spool is empty and every local snapshot but the newest arrived.
# shellcheck disable=SC2317 # called by wait_until
drained() {
	[[ $(spool_files) -eq 0 && -z $(missing_froms) ]]
}

# caught_up: the spool is empty and the snapshot before the newest arrived
# (after drops, older ones never will).
# shellcheck disable=SC2317 # called by wait_until
caught_up() {
	local prev
	prev=$(local_froms | tail -n 2 | head -n 1)
	[[ $(spool_files) -eq 0 && -n $prev ]] && received_froms | grep -qx "$prev"
}

# events MODE: how many requests the receiver took in MODE.
events() {
	[[ -s $RECV/events.jsonl ]] || {
		echo 0
		return
	}
	grep -c "\"mode\": \"$1\"" "$RECV/events.jsonl" || true
}

# check_no_duplicates: no (from, until) received twice.
check_no_duplicates() {
	local d
	[[ -s $RECV/params.jsonl ]] || return 0
	d=$(grep -c '"duplicate": true' "$RECV/params.jsonl" || true)
	[[ $d -eq 0 ]] || fail "$d snapshots delivered twice: $(grep '"duplicate": true' "$RECV/params.jsonl" | head -n 3)"
}

# Only the fixture is profiled: the snapshots' sizes are then those of its
# stacks, not of whatever else the machine runs (a build starting meanwhile
# made them five times the median once, larger than the whole small spool).
write_conf() { # write_conf SPOOL_BYTES
	cat >"$T/push.conf" <<EOF
interval = 1s
frequency = 99
targets = $CHAINS
formats = folded, pprof
push_url = http://127.0.0.1:$PORT/
push_auth_file = $T/token
push_name = flamed-test
push_labels = env=ci, run=outage
push_timeout = 2s
push_spool_bytes = $1
push_tls_verify = yes
metrics_listen = 127.0.0.1:$MPORT
EOF
}

# metrics: the daemon's push metrics, if its endpoint answers.
metrics() {
	python3 - "$MPORT" <<'EOF' || true
import sys, urllib.request
try:
    t = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=3).read().decode()
except Exception as e:
    sys.exit(1)
print("\n".join(l for l in t.splitlines() if l.startswith("flamed_push")))
EOF
}

# Something to sample.
bg "$FIXTURES/chains" 300
CHAINS=$BG_PID
wait_comm "$CHAINS" chains

# --- phase 1: each misbehaviour in turn, back to normal after each ---------------
write_conf 64M
start_daemon push --config "$T/push.conf" --output-dir "$OUT"
wait_until 20 "'started' in the log" grep -q started "$DLOG"
wait_until 10 "3 local pprof snapshots" nsnap_at_least "$OUT" 3
[[ -d $SPOOL ]] || fail "no spool directory $SPOOL"
[[ $(stat -c %a "$SPOOL") == 700 ]] || fail "$SPOOL has mode $(stat -c %a "$SPOOL"), not 700"
wait_until 15 "the first snapshots received" test -s "$RECV/params.jsonl"
wait_until 15 "drained at the start" drained

for m in refuse hang 500 "429 2" close; do
	n0=$(nsnap "$OUT" pb.gz)
	e0=$(events "${m%% *}")
	mode "$m"
	sleep "$HOLD"
	running || fail "the daemon is gone after $HOLD s of '$m'"
	n1=$(nsnap "$OUT" pb.gz)
	[[ $((n1 - n0)) -ge $((HOLD - 2)) ]] ||
		fail "'$m': $((n1 - n0)) local snapshots in $HOLD s: the daemon stopped writing them"
	if [[ $m != refuse ]]; then
		[[ $(($(events "${m%% *}") - e0)) -ge 1 ]] || fail "'$m': the daemon made no request in $HOLD s"
	fi
	[[ $(spool_files) -ge 1 ]] || fail "'$m': nothing spooled while the receiver fails"
	note "'$m': $((n1 - n0)) snapshots, $(($(events "${m%% *}") - e0)) requests, spool $(spool_files) files $(spool_bytes) bytes"
	mode ok
	t0=$(now)
	# The backoff (1 s doubling, with jitter, up to 5 min) may have reached 2*HOLD.
	wait_until $((4 * HOLD + 30)) "every snapshot delivered after '$m'" drained
	note "'$m': drained $(since "$t0") s after the receiver came back"
	check_no_duplicates
done
note "daemon log about pushes: $(grep -ci push "$DLOG" || true) lines, e.g.:"
grep -i push "$DLOG" | head -n 5 || true
m=$(metrics)
if [[ -n $m ]]; then
	note "metrics: $(tr '\n' ' ' <<<"$m")"
	grep -qE '^flamed_push_total\{result="ok"\} [1-9]' <<<"$m" || fail "no push counted in the metrics: $m"
else
	note "the metrics endpoint does not answer: not checked"
fi
stop_daemon TERM
[[ $DRC -eq 0 ]] || fail "exit status $DRC after SIGTERM"
# The largest snapshot so far.
big=$(find "$OUT" -maxdepth 1 -name '*.pb.gz' -type f -printf '%s\n' | sort -n | tail -n 1)
received1=$(received_froms | wc -l)

# --- phase 2: a long outage, a small spool, a restart in the middle --------------
# Room for three snapshots of the largest size seen; 12 s down: most are dropped.
cap=$((3 * big + big / 2))
mode refuse
write_conf "$cap"
echo 0 >"$T/spool.max"
local0=$(nsnap "$OUT" pb.gz)
start_daemon capped --config "$T/push.conf" --output-dir "$OUT"
wait_until 20 "'started' in the log" grep -q started "$DLOG"
sleep 12
[[ $(spool_bytes) -le $cap ]] || fail "the spool holds $(spool_bytes) bytes, push_spool_bytes is $cap"
stop_daemon TERM
[[ $DRC -eq 0 ]] || fail "exit status $DRC after SIGTERM"
touch "$T/capped.stopped"
mapfile -t kept < <(find "$SPOOL" -maxdepth 1 -type f -name 'push-*' -printf '%f\n' | sort -t- -k2,2n)
[[ ${#kept[@]} -ge 1 ]] || fail "nothing left in the spool after the outage"
note "after 12 s down: ${#kept[@]} snapshots spooled ($(spool_bytes) bytes, cap $cap): ${kept[*]}"
# The restart picks them up; the receiver comes back 3 s later.
start_daemon resumed --config "$T/push.conf" --output-dir "$OUT"
wait_until 20 "'started' in the log" grep -q started "$DLOG"
mode "down 3"
wait_until 10 "the receiver back" grep -qx ok "$RECV/mode"
wait_until 60 "every spooled snapshot delivered after the restart" caught_up
# Snapshots taken while it was still down may push the oldest out of the spool
# (push_spool_bytes): those are dropped, oldest first, and counted; every other
# one is delivered.
gone=0
for f in "${kept[@]}"; do
	from=$(cut -d- -f3 <<<"$f")
	if received_froms | grep -qx "$from"; then
		delivered_kept=1
	else
		[[ -z ${delivered_kept:-} ]] || fail "$f was spooled at the restart, a newer one was delivered, and it never was"
		gone=$((gone + 1))
	fi
done
if [[ $gone -gt 0 ]]; then
	# The daemon counts what it dropped since it started: the metrics say so.
	ndrop=$(metrics | sed -nE 's/^flamed_push_spool_dropped_total ([0-9]+)$/\1/p')
	[[ -n $ndrop ]] || fail "$gone of the spooled snapshots were never delivered, and the metrics do not answer"
	[[ $ndrop -ge $gone ]] || fail "$gone of the spooled snapshots were never delivered, the daemon counted $ndrop dropped"
	note "after the restart: the $gone oldest spooled snapshots dropped for newer ones (counted: $ndrop)"
fi
check_no_duplicates
local_n=$(($(nsnap "$OUT" pb.gz) - local0))
recv_n=$(($(received_froms | wc -l) - received1))
dropped=$((local_n - recv_n))
m=$(metrics)
if [[ -n $m ]]; then
	note "metrics: $(tr '\n' ' ' <<<"$m")"
fi
stop_daemon TERM
[[ $DRC -eq 0 ]] || fail "exit status $DRC after SIGTERM"
max=$(cat "$T/spool.max")
note "spool: cap $cap bytes, the most seen $max bytes; phase 2: $local_n snapshots, $recv_n delivered, $dropped dropped"
[[ $max -le $cap ]] || fail "the spool reached $max bytes, push_spool_bytes is $cap"
# Dropped when what was taken while down did not fit (the snapshots'
# sizes are those of the machine's stacks meanwhile, not flamed's choice).
down_bytes=$(find "$OUT" -maxdepth 1 -name '*.pb.gz' -type f -newer "$T/push.conf" ! -newer "$T/capped.stopped" \
	-printf '%s\n' | awk '{ n += $1 } END { print n + 0 }')
note "phase 2: $down_bytes bytes of snapshots taken in the 12 s down"
if [[ $down_bytes -gt $cap ]]; then
	[[ $dropped -ge 1 ]] || fail "12 s down with room for 3 snapshots, $down_bytes bytes taken, yet nothing was dropped"
fi

# --- every body is a profile go tool pprof reads, with the fixture's frames ----
[[ ! -s $RECV/rejected.jsonl ]] || fail "the receiver refused requests: $(head -n 3 "$RECV/rejected.jsonl")"
bodies=0
chains=0
for f in "$RECV"/*.pprof; do
	HOME=$T go tool pprof -raw "$f" >"$T/raw.txt" 2>"$T/raw.err" ||
		fail "go tool pprof -raw $f: $(head -n 3 "$T/raw.err")"
	grep -q '^Samples:' "$T/raw.txt" || fail "go tool pprof -raw $f: no 'Samples:' section"
	grep -q burn_cpu "$T/raw.txt" && chains=$((chains + 1))
	bodies=$((bodies + 1))
done
[[ $chains -ge 1 ]] || fail "none of the $bodies bodies has a sample of chains' burn_cpu"
pass "push: $bodies snapshots delivered once each through refuse, hang, 500, 429, reset and a 12 s outage with a restart; spool at most $max of $cap bytes, $dropped dropped"
