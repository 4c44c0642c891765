#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# kernel-dwarf: a process's mappings leave the walker's maps (procs,
# procs_few) when it exits, deleted by the BPF program (uw_on_exit), and
# flamed deletes from user space only what it pushed. Before, every exit
# cost two bpf calls (BPF_MAP_DELETE_ELEM on both maps), also for the many
# processes that fork, exec and exit between two reads of the tracker and
# were never pushed. Load: a shell loop running /bin/true (fork, exec,
# exit) and a subshell (fork, exit: the fork's copy of the shell's
# mappings, which only the exit deletes). Checked: the deletes per exit
# (perf on the bpf syscall's tracepoint, by command), and that the maps
# hold no more entries mid-recording than there are processes (a copy not
# deleted at its exit would stay: thousands).
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
need_bpf
BPFTOOL=$(PATH=$PATH:/usr/sbin:/sbin command -v bpftool) || skip "bpftool is not installed (Debian: bpftool)"

need_bpf_calls

CMD_DELETE=3

bg bash -c 'while :; do /bin/true; ( : ); done'
# Started once the shell runs the loop (its children live too briefly to wait for).
wait_until 5 "the loop started" grep -qa while "/proc/$BG_PID/cmdline"

# map_entries PID NAME: entries of PID's BPF map called NAME (its fds' fdinfo give the map ids).
map_entries() {
	local id sum=0 fd
	for fd in /proc/"$1"/fdinfo/*; do
		id=$(sed -n 's/^map_id:[[:space:]]*//p' "$fd" 2>/dev/null) || continue
		[[ -n $id ]] || continue
		"$BPFTOOL" -j map show id "$id" 2>/dev/null | grep -q "\"name\":\"$2\"" || continue
		sum=$((sum + $("$BPFTOOL" -j map dump id "$id" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')))
	done
	echo "$sum"
}

RC=0
perf stat -x, -o "$T/stat.csv" -e syscalls:sys_enter_bpf --filter "cmd == $CMD_DELETE" \
	-- "$FLAMED" record -v -a -d 6 -o "$T/out.folded" 2>"$T/record.err" &
PERF=$!
BG_PIDS+=("$PERF")
wait_until 10 "flamed started under perf" pgrep -P "$PERF" >/dev/null
FL=$(pgrep -P "$PERF")
wait_until 30 "flamed sampling" grep -q '^flamed: debug: tracker start .* and sampler start' "$T/record.err"
sleep 3
procs=$(map_entries "$FL" procs)
few=$(map_entries "$FL" procs_few)
pids=(/proc/[0-9]*)
alive=${#pids[@]}
wait "$PERF" || RC=$?
expect_rc 0
grep -q 'call graph kernel-dwarf' "$T/record.err" ||
	skip "no kernel-dwarf here: $(grep -m 1 'samples,' "$T/record.err")"
exits=$(sed -nE 's/.*process tracker: [0-9]+ forks, [0-9]+ execs, ([0-9]+) exits.*/\1/p' "$T/record.err")
deletes=$(stat_count "$T/stat.csv" 1)
[[ -n $exits && -n $deletes ]] || fail "cannot read the counts: exits '$exits', deletes '$deletes'"
note "$exits exits, $deletes BPF_MAP_DELETE_ELEM calls; mid-recording $procs + $few entries in procs + procs_few, $alive processes alive"
[[ $exits -ge 500 ]] || fail "only $exits exits in 6 s: the loop barely ran"
# Two a process before; what is left: those pushed, asked keys, windows.
[[ $((deletes * 2)) -lt $exits ]] ||
	fail "$deletes deletes for $exits exits: flamed still deletes every exited process's mappings itself"
[[ $((procs + few)) -le $((alive + 50)) ]] ||
	fail "$procs + $few entries in procs + procs_few with $alive processes alive: exited processes' entries stay"
pass "$exits exits cost $deletes deletes; $((procs + few)) entries in the walker's maps, $alive processes alive"
