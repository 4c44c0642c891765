#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What flamed says when it lacks a privilege names the privilege that is
# missing, not "run as root" to root:
#  - root under a seccomp filter that refuses perf_event_open and bpf (a
#    container runtime's default profile): one line that names seccomp;
#  - root without CAP_PERFMON and CAP_SYS_ADMIN (a container's root):
#    one line that names them;
#  - root without CAP_SYSLOG and CAP_SYS_PTRACE: warnings that name them
#    (kernel addresses hidden, other users' processes unnamed);
#  - a copy of the binary with file capabilities (setcap, as the README
#    shows) run by another user: svg and collapse read only what that user
#    may read (the capabilities are for recording).
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"

# --- seccomp ------------------------------------------------------------------
run_cmd seccomp "$FIXTURES/nobpf" --perf "$FLAMED" record -a -d 0.3 -o "$T/seccomp.folded"
expect_rc 1
[[ $(wc -l <"$T/seccomp.err") -eq 1 ]] || fail "seccomp: want one line: $(cat "$T/seccomp.err")"
grep -q '^flamed: cannot open perf events: Operation not permitted, although flamed has CAP_PERFMON (root): the seccomp filter' "$T/seccomp.err" ||
	fail "seccomp: the message does not say a seccomp filter refuses perf_event_open: $(cat "$T/seccomp.err")"
grep -q 'run as root' "$T/seccomp.err" && fail "seccomp: root is told to run as root: $(cat "$T/seccomp.err")"
note "seccomp: $(cat "$T/seccomp.err")"

# --- root without the capabilities perf needs -----------------------------------
run_cmd nocaps setpriv --bounding-set -perfmon,-sys_admin,-bpf --inh-caps -perfmon,-sys_admin,-bpf \
	"$FLAMED" record -a -d 0.3 -o "$T/nocaps.folded"
expect_rc 1
grep -q 'flamed runs as root but without CAP_PERFMON or CAP_SYS_ADMIN' "$T/nocaps.err" ||
	fail "root without CAP_PERFMON: the message does not name it: $(cat "$T/nocaps.err")"
note "no CAP_PERFMON: $(cat "$T/nocaps.err")"

# --- root without CAP_SYSLOG and CAP_SYS_PTRACE ---------------------------------
run_cmd nosyslog setpriv --bounding-set -syslog,-sys_ptrace --inh-caps -syslog,-sys_ptrace \
	"$FLAMED" record -a -d 0.3 -o "$T/nosyslog.folded"
expect_rc 0
grep -q 'without CAP_SYS_PTRACE the mappings of other users.* processes cannot be read.*cap_sys_ptrace' "$T/nosyslog.err" ||
	fail "no CAP_SYS_PTRACE: no warning naming it: $(cat "$T/nosyslog.err")"
if grep -q 'kernel addresses are hidden' "$T/nosyslog.err"; then
	# Hidden from a process without CAP_SYSLOG unless kptr_restrict=0 and
	# perf_event_paranoid <= 1: then that is the fix to name.
	grep -q 'kernel addresses are hidden from flamed (kernel.kptr_restrict=[01] and no CAP_SYSLOG).*cap_syslog' "$T/nosyslog.err" ||
		fail "no CAP_SYSLOG: the warning does not name it: $(grep 'kernel addresses' "$T/nosyslog.err")"
	note "no CAP_SYSLOG: $(grep 'kernel addresses' "$T/nosyslog.err")"
else
	note "kernel addresses are visible without CAP_SYSLOG here (kptr_restrict=$(cat /proc/sys/kernel/kptr_restrict), perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid))"
fi

# --- file capabilities: svg and collapse read as the user ----------------------
command -v setcap >/dev/null || skip "needs setcap (Debian: libcap2-bin): the rest is checked"
chmod 755 "$T"
cp "$FLAMED" "$T/flamed-caps"
setcap cap_perfmon,cap_bpf,cap_dac_read_search+ep "$T/flamed-caps" ||
	skip "cannot set file capabilities on $T (its file system has no xattrs?)"
printf 'secret;stack 1\n' >"$T/private.folded"
chmod 600 "$T/private.folded"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
run_cmd caps-svg "${NOBODY[@]}" "$T/flamed-caps" svg "$T/private.folded"
[[ $RC -ne 0 ]] && grep -q 'Permission denied' "$T/caps-svg.err" ||
	fail "flamed svg with CAP_DAC_READ_SEARCH from setcap read a file its user may not (exit $RC): $(head -c 300 "$T/caps-svg.out")"
run_cmd caps-collapse "${NOBODY[@]}" "$T/flamed-caps" collapse "$T/private.folded"
[[ $RC -ne 0 ]] && grep -q 'Permission denied' "$T/caps-collapse.err" ||
	fail "flamed collapse with CAP_DAC_READ_SEARCH from setcap read a file its user may not (exit $RC)"
# Recording keeps them: the whole machine, as that user.
run_cmd caps-record "${NOBODY[@]}" "$T/flamed-caps" record -a -d 0.3 -o /dev/null
expect_rc 0

pass "missing privileges are named: seccomp, CAP_PERFMON, CAP_SYS_PTRACE, CAP_SYSLOG; svg and collapse drop file capabilities"
