#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `flamed record` output options: -o extensions, --format, -o -, -g,
# --user-only, --kernel-only.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf

# has_chain_a FILE WHAT
has_chain_a() {
	[[ $(count_matching "$1" "$CHAIN_A") -gt 0 ]] || fail "$2: no samples in $CHAIN_A"
}

# -o FILE.txt is folded.
run_flamed txt record -F 999 -o "$T/out.txt" -- "$FIXTURES/chains" 1
expect_rc 0
check_folded "$T/out.txt"
has_chain_a "$T/out.txt" "-o out.txt"

# --format folded whatever the extension.
run_flamed fmt record -F 999 --format folded -o "$T/out.anything" -- "$FIXTURES/chains" 1
expect_rc 0
check_folded "$T/out.anything"
has_chain_a "$T/out.anything" "--format folded"

# -o - writes the profile, and only the profile, to stdout.
run_flamed stdout record -F 999 -o - -- "$FIXTURES/chains" 1
expect_rc 0
check_folded "$T/stdout.out"
has_chain_a "$T/stdout.out" "-o -"
summary_samples "$T/stdout.err" >/dev/null
[[ ! -e ./- ]] || fail "-o - created a file named '-'"

# -g (frame-pointer call graphs, the default) is accepted.
run_flamed g record -g -F 999 -o "$T/g.folded" -- "$FIXTURES/chains" 1
expect_rc 0
check_folded "$T/g.folded"
has_chain_a "$T/g.folded" "-g"

# --user-only: no kernel frames.
run_flamed user record --user-only -F 999 -o "$T/user.folded" -- "$FIXTURES/chains" 1
expect_rc 0
check_folded "$T/user.folded"
has_chain_a "$T/user.folded" "--user-only"
! grep -q '_\[k\]' "$T/user.folded" || fail "--user-only: kernel frames in the output"

# --kernel-only: after the comm, kernel frames only. dd reading /dev/zero
# spends its time in the kernel, so there is something to see.
bg timeout 10 dd if=/dev/zero of=/dev/null bs=1M
sleep 0.2
run_flamed kernel record --kernel-only -a -F 999 -d 1 -o "$T/kernel.folded"
kill "$BG_PID" 2>/dev/null || true
expect_rc 0
check_folded "$T/kernel.folded"
bad=$(awk '{ s = $0; sub(/ [0-9]+$/, "", s); n = split(s, f, ";")
	for (i = 2; i <= n; i++) if (f[i] !~ /_\[k\]$/) { print; exit } }' "$T/kernel.folded")
[[ -z $bad ]] || fail "--kernel-only: a frame without _[k]: $bad"
grep -q '^dd;.*_\[k\]' "$T/kernel.folded" || fail "--kernel-only: no kernel stacks of dd"

# -o onto something that is not a regular file writes into it and leaves it
# what it is: a character device stays one (the recording goes nowhere).
mknod "$T/null" c 1 3
run_flamed dev record -F 99 -o "$T/null" -- "$FIXTURES/chains" 1
expect_rc 0
[[ -c $T/null ]] || fail "-o onto a character device replaced it with a file"

# -o through a symlink replaces the file it points to; the link stays a link.
echo old >"$T/target.folded"
ln -s target.folded "$T/link.folded"
run_flamed link record -F 999 -o "$T/link.folded" -- "$FIXTURES/chains" 1
expect_rc 0
[[ -L $T/link.folded ]] || fail "-o through a symlink replaced the link"
check_folded "$T/target.folded"
has_chain_a "$T/target.folded" "-o through a symlink"

# With the profile on stdout, the command's own stdout goes to stderr:
# nothing it prints can become a line of the profile.
run_flamed cmdout record -F 999 -- sh -c 'echo "INJECTED;frame 999"; exec "$0" 1' "$FIXTURES/chains"
expect_rc 0
check_folded "$T/cmdout.out"
! grep -q INJECTED "$T/cmdout.out" || fail "the command's stdout got into the profile"
grep -q 'INJECTED;frame 999' "$T/cmdout.err" || fail "the command's stdout was lost instead of going to stderr"

pass "record output: .txt, --format folded, -o -, -g, --user-only, --kernel-only, devices, symlinks, the command's stdout"
