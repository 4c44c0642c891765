#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed record` refuses what it cannot do: one line on stderr that names the
# cause, a non-zero exit (2 for usage errors), and no output file.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# expect_error NAME EXPECTED_RC: the last run failed with EXPECTED_RC ("any"
# for any status from 1 to 125) and its stderr starts with "flamed: ".
expect_error() {
	if [[ $2 == any ]]; then
		[[ $RC -ge 1 && $RC -le 125 ]] || fail "$1: exit status $RC, expected a failure"
	else
		[[ $RC -eq $2 ]] || fail "$1: exit status $RC, expected $2"
	fi
	[[ -s $LAST_ERR ]] || fail "$1: nothing on stderr"
	[[ $(head -n 1 "$LAST_ERR") == "flamed: "* ]] || fail "$1: stderr does not start with 'flamed: '"
}

# expect_stderr NAME TEXT: the last run's stderr mentions TEXT (case ignored).
expect_stderr() {
	grep -qiF -- "$2" "$LAST_ERR" || fail "$1: stderr does not mention '$2'"
}

expect_no_file() {
	[[ ! -e $2 ]] || fail "$1: $2 was created"
}

# Usage errors need no privileges.
run_flamed bogus record --bogus-option
expect_error "--bogus-option" 2
expect_stderr "--bogus-option" usage

run_flamed subcmd frobnicate
expect_error "unknown subcommand" 2
expect_stderr "unknown subcommand" usage

run_flamed excl1 record -a -p 1 -d 1 -o "$T/excl1.folded"
expect_error "-a with -p" 2
expect_no_file "-a with -p" "$T/excl1.folded"

run_flamed excl2 record -a -d 1 --kernel-only --user-only -o "$T/excl2.folded"
expect_error "--kernel-only with --user-only" 2
expect_no_file "--kernel-only with --user-only" "$T/excl2.folded"

need_root_and_perf

# (a) No such process: one line naming the PID.
run_flamed nopid record -p 999999999 -o "$T/nopid.folded"
expect_error "-p 999999999" any
expect_stderr "-p 999999999" 999999999
[[ $(wc -l <"$LAST_ERR") -eq 1 ]] || fail "-p 999999999: more than one line on stderr"
expect_no_file "-p 999999999" "$T/nopid.folded"

# (a') A thread id instead of a process id: named, with the process to use.
bg "$FIXTURES/chains" 4 --late-thread
sleep 0.8
tid=$(ls "/proc/$BG_PID/task" | grep -v "^$BG_PID\$" | head -n 1)
[[ -n $tid ]] || fail "the chains fixture started no thread"
run_flamed thread record -p "$tid" -o "$T/thread.folded"
expect_error "-p TID" any
expect_stderr "-p TID" "use -p $BG_PID"
expect_no_file "-p TID" "$T/thread.folded"

# (b) A frequency of 0.
run_flamed freq0 record -a -F 0 -d 1 -o "$T/freq0.folded"
expect_error "-F 0" any
expect_stderr "-F 0" freq
expect_no_file "-F 0" "$T/freq0.folded"

# (c) A frequency above what the kernel allows.
max=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
hz=$((max >= 10000000 ? max + 1 : 10000000))
run_flamed freqmax record -a -F "$hz" -d 1 -o "$T/freqmax.folded"
expect_error "-F $hz" any
expect_stderr "-F $hz" perf_event_max_sample_rate
expect_no_file "-F $hz" "$T/freqmax.folded"

# (d) An output path that cannot be created: refused before sampling, so
# well before the 5 s of -d are up.
run_flamed badpath record -a -d 5 -o "$T/no-such-dir/x.folded"
expect_error "-o into a missing directory" any
expect_stderr "-o into a missing directory" "$T/no-such-dir/x.folded"
expect_elapsed_at_most 2 "-o into a missing directory"

# (e) Not permitted: an unprivileged user cannot sample every CPU while
# kernel.perf_event_paranoid >= 1 (BPF is refused to it as well).
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
if [[ $paranoid -lt 1 ]]; then
	note "kernel.perf_event_paranoid is $paranoid: unprivileged -a is allowed, not testing its refusal"
elif ! command -v setpriv >/dev/null; then
	note "no setpriv (util-linux): not testing the unprivileged refusal"
else
	nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
	# The user must be able to run the binary and write the output, so that
	# the only thing it lacks is the permission to sample.
	chmod 755 "$T"
	mkdir -m 1777 "$T/u"
	bin=$FLAMED
	if ! "${nobody[@]}" test -x "$bin"; then
		mkdir -m 755 "$T/bin"
		cp "$FLAMED" "$T/bin/flamed"
		chmod 755 "$T/bin/flamed"
		bin=$T/bin/flamed
	fi
	"${nobody[@]}" touch "$T/u/probe" || fail "uid 65534 cannot write into $T/u"
	rm -f "$T/u/probe"
	run_cmd unpriv "${nobody[@]}" "$bin" record -a -d 1 -o "$T/u/x.folded"
	expect_error "unprivileged -a" 1
	expect_stderr "unprivileged -a" perf_event_paranoid
	expect_stderr "unprivileged -a" CAP_PERFMON
	expect_no_file "unprivileged -a" "$T/u/x.folded"

	# kernel.perf_event_paranoid=3 (Debian's "no perf events for users"): even
	# the user's own command is refused, with the same way out.
	if [[ -w /proc/sys/kernel/perf_event_paranoid ]]; then
		restore_paranoid() { echo "$paranoid" >/proc/sys/kernel/perf_event_paranoid; }
		trap 'restore_paranoid; cleanup' EXIT
		echo 3 >/proc/sys/kernel/perf_event_paranoid
		run_cmd paranoid3 "${nobody[@]}" "$bin" record -o "$T/u/y.folded" -- /bin/true
		restore_paranoid
		expect_error "paranoid 3, own command" 1
		expect_stderr "paranoid 3, own command" "kernel.perf_event_paranoid, now 3"
		expect_stderr "paranoid 3, own command" CAP_PERFMON
		expect_no_file "paranoid 3, own command" "$T/u/y.folded"
		[[ $(grep -c '^flamed: ' "$LAST_ERR") -eq 1 ]] || fail "paranoid 3: more than one line on stderr: $(cat "$LAST_ERR")"
	else
		note "kernel.perf_event_paranoid is not writable: not testing paranoid 3"
	fi
fi

pass "record errors: usage, exclusive options, no such PID, a thread id, bad frequency, bad path, no permission"
