#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Processes that live for a moment and are gone when the recording ends:
# during `record -a`, a script runs short_burn 200 times (40 ms in short_hot
# each); at least 95% of short_burn's samples name short_hot, with frame
# pointers and with --call-graph dwarf. And a machine that starts thousands
# of processes: what flamed keeps of those that exited is dropped once
# their samples are named, so what it tracks follows the processes alive.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

# record_during NAME SECONDS COMMAND [FLAMED ARGS...]: records -a for SECONDS
# (-v) while bash runs COMMAND, started once the recording runs.
record_during() {
	local name=$1 secs=$2 cmd=$3 fpid rc
	shift 3
	LAST_ERR=$T/$name.err
	"$FLAMED" record -a -F 999 -v -d "$secs" "$@" -o "$T/$name.folded" >"$T/$name.out" 2>"$LAST_ERR" &
	fpid=$!
	BG_PIDS+=("$fpid")
	for ((i = 0; i < 100; i++)); do
		grep -q "debug: tracker start" "$LAST_ERR" && break
		sleep 0.05
	done
	((i < 100)) || fail "$name: no 'debug: tracker start' line within 5 s: flamed did not start, or -v says it otherwise"
	bash -c "$cmd"
	set +e
	wait "$fpid"
	rc=$?
	set -e
	note "$name: flamed exit $rc"
	[[ $rc -eq 0 ]] || fail "$name: flamed exited $rc: $(grep -v debug: "$LAST_ERR")"
	check_folded "$T/$name.folded"
}

for mode in fp dwarf; do
	args=()
	[[ $mode == dwarf ]] && args=(--call-graph dwarf)
	record_during "short-$mode" 14 "for i in \$(seq 200); do '$FIXTURES/short_burn' 0.04; done" "${args[@]}"
	grep '^short_burn;' "$T/short-$mode.folded" >"$T/short-$mode.mine" || true
	all=$(total_count "$T/short-$mode.mine")
	hot=$(count_matching "$T/short-$mode.mine" ";short_hot")
	# 200 x 40 ms at 999 Hz: about 8000 samples on an idle machine.
	[[ $all -ge 2000 ]] || fail "$mode: only $all samples of short_burn"
	s=$(percent "$hot" "$all")
	note "$mode: $hot of $all short_burn samples name short_hot ($s%)"
	expect_between "$s" 95 100 "the share of short_burn samples in short_hot ($mode)"
	# They were named as the recording went, and their processes dropped.
	grep -Eq "process tracker: .* [1-9][0-9]+ dropped once their samples were named" "$T/short-$mode.err" ||
		fail "$mode: no processes dropped: $(grep 'process tracker' "$T/short-$mode.err")"
done

# Thousands of processes: what is tracked at once stays a fraction of them.
record_during churn 6 "end=\$((SECONDS + 5)); while ((SECONDS < end)); do /bin/true; done"
line=$(grep "process tracker:" "$T/churn.err") || fail "no process tracker line in -v output"
note "$line"
read -r forks exits peak dropped < <(sed -E 's/.* ([0-9]+) forks, [0-9]+ execs, ([0-9]+) exits; [0-9]+ processes tracked at the end, at most ([0-9]+) at once, ([0-9]+) dropped.*/\1 \2 \3 \4/' <<<"$line")
[[ $forks -ge 1000 ]] || fail "only $forks forks: the churn did not run"
expect_between "$(percent "$dropped" "$exits")" 80 100 "the share of exited processes dropped during the recording"
expect_between "$(percent "$peak" "$forks")" 0 70 "the most processes tracked at once, as a share of those started"

pass "short-lived processes are named (fp and dwarf) and dropped once named"
