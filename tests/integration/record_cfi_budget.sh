#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The call frame information --call-graph dwarf reads is memory spent on
# what other users wrote: it comes out of --max-symbol-cache, like symbol
# tables. An unprivileged user (nobody) runs eight copies of a library
# whose .eh_frame headers claim 96 MiB each, in a hole
# (tests/fixtures/progs/cfi_bloat.c: sparse files, nothing on disk). Root's
# flamed records it with --call-graph dwarf and --max-symbol-cache 64M: its
# peak RSS stays far below the 768 MiB the headers claim (it read them all
# before), and it says that CFI was left unread and why.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
command -v setpriv >/dev/null || skip "setpriv is not installed (Debian: util-linux)"
id nobody >/dev/null 2>&1 || skip "no user nobody to play the attacker"

chmod 755 "$T"
mkdir -m 755 "$T/bin"
mkdir -m 777 "$T/libs"
cp "$FIXTURES/cfi_bloat" "$FIXTURES/libnofp_cb.so" "$T/bin/"
setpriv --reuid=65534 --regid=65534 --clear-groups -- "$T/bin/cfi_bloat" "$T/libs" 8 96 30 \
	>"$T/bloat.out" 2>"$T/bloat.err" &
BLOAT=$!
BG_PIDS+=("$BLOAT")
for ((i = 0; i < 200; i++)); do
	grep -q ready "$T/bloat.out" 2>/dev/null && break
	kill -0 "$BLOAT" 2>/dev/null || fail "cfi_bloat exited: $(cat "$T/bloat.err")"
	sleep 0.05
done
grep -q ready "$T/bloat.out" || fail "cfi_bloat not ready within 10 s"
note "libraries: $(du -sh "$T/libs" | cut -f1) on disk, $(du -sh --apparent-size "$T/libs" | cut -f1) as their sizes say"

run_flamed rec record --call-graph dwarf --max-symbol-cache 64M -p "$BLOAT" -d 2 -o "$T/out.folded"
expect_rc 0
rss=$(sed -n 's/.*own cost: .*, \([0-9.]*\) MiB peak RSS.*/\1/p' "$T/rec.err")
[[ -n $rss ]] || fail "no peak RSS in the summary: $(cat "$T/rec.err")"
note "peak RSS ${rss} MiB with --max-symbol-cache 64M"
awk -v r="$rss" 'BEGIN { exit !(r < 250) }' ||
	fail "flamed held ${rss} MiB for CFI that other users' files claim, past --max-symbol-cache 64M"
grep -q 'call frame information of .* not read: --max-symbol-cache' "$T/rec.err" ||
	fail "no line saying that CFI was left unread at --max-symbol-cache: $(cat "$T/rec.err")"

pass "CFI of other users' files stays within --max-symbol-cache (peak RSS ${rss} MiB)"
