#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# With kernel.kptr_restrict=2 even root reads zero addresses from
# /proc/kallsyms: kernel frames become [kernel]_[k], with one warning that
# names kptr_restrict, and the recording still succeeds.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib_restore.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

sysctl=/proc/sys/kernel/kptr_restrict
[[ -w $sysctl ]] || skip "cannot change $sysctl here (read-only /proc/sys)"
old=$(cat "$sysctl")
# Put back however the test ends (a timeout's SIGKILL included).
restore_on_exit "echo $old >$sysctl"
echo 2 >"$sysctl" || skip "cannot set kernel.kptr_restrict=2"

bg timeout 10 dd if=/dev/zero of=/dev/null bs=1M
run_flamed hidden record -a -F 499 -d 1 -o "$T/hidden.folded"
restore_now
expect_rc 0
check_folded "$T/hidden.folded"
grep -q '\[kernel\]_\[k\]' "$T/hidden.folded" || fail "no [kernel]_[k] frames with hidden kernel addresses"
bad=$(grep -oE '[^;]+_\[k\]' "$T/hidden.folded" | grep -v '^\[kernel\]_\[k\]$' | head -n 3 || true)
[[ -z $bad ]] || fail "kernel frames named although addresses were hidden: $bad"
[[ $(grep -c 'kptr_restrict' "$T/hidden.err") -eq 1 ]] || fail "expected one warning naming kptr_restrict"

pass "kptr_restrict=2: kernel frames are [kernel]_[k], one warning"
