#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A copy of flamed with file capabilities (setcap, as the README shows) run
# by an ordinary user: the capabilities are for sampling and for the files
# the profiled processes map, never for the files that user names. So with
# CAP_DAC_READ_SEARCH in the file:
#  - daemon --config of a root-only file says "Permission denied" and
#    shows none of its lines (it used to quote the first one);
#  - record --cp of a root-only colour map in the user's own directory is
#    not read (its entries used to be copied into the user's new map);
#  - record -o through a directory the user may not search is refused (it
#    used to write into a writable directory behind it);
#  - record -- CMD does not run a program behind such a directory (it used
#    to: the command was looked up and exec'd with the capabilities).
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
command -v setcap >/dev/null || skip "needs setcap (Debian: libcap2-bin)"
id nobody >/dev/null 2>&1 || skip "no user nobody to run the binary"

chmod 755 "$T"
cp "$FLAMED" "$T/flamed-caps"
setcap cap_perfmon,cap_bpf,cap_dac_read_search+ep "$T/flamed-caps" ||
	skip "cannot set file capabilities on $T (its file system has no xattrs?)"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --)

# --- daemon --config ------------------------------------------------------------
printf 'TOPSECRET-first-line\nsecret_key = TOPSECRET-value\n' >"$T/secret.conf"
chmod 600 "$T/secret.conf"
run_cmd config "${NOBODY[@]}" "$T/flamed-caps" daemon --config "$T/secret.conf" --check-config
[[ $RC -ne 0 ]] || fail "daemon --check-config of a file its user may not read passed"
grep -q TOPSECRET "$T/config.out" "$T/config.err" &&
	fail "daemon --config showed a line of a root-only file to its user: $(cat "$T/config.err")"
grep -q 'Permission denied' "$T/config.err" ||
	fail "daemon --config of a root-only file: no 'Permission denied': $(cat "$T/config.err")"
note "config: $(cat "$T/config.err")"

# --- record --cp ------------------------------------------------------------------
mkdir "$T/own"
chown 65534:65534 "$T/own"
chmod 700 "$T/own"
printf 'TOPSECRET_fn->rgb(1,2,3)\n' >"$T/own/palette.map"
chmod 600 "$T/own/palette.map"
run_cmd cp "${NOBODY[@]}" "$T/flamed-caps" record --cp="$T/own/palette.map" -o "$T/own/cp.svg" -- true
note "cp: $(tr '\n' ' ' <"$T/cp.err" | head -c 300)"
if grep -rq TOPSECRET --exclude=palette.map "$T/own"; then
	fail "record --cp copied a root-only colour map into its user's files"
fi
if [[ $(stat -c %U "$T/own/palette.map") != root ]] && grep -q TOPSECRET "$T/own/palette.map"; then
	fail "record --cp replaced a root-only colour map with one its user owns, holding its entries"
fi
grep -q 'palette.map: Permission denied' "$T/cp.err" ||
	fail "record --cp of a root-only map: no 'Permission denied' for it: $(cat "$T/cp.err")"

# --- record -o behind a directory the user may not search ---------------------
mkdir -p "$T/closed/open"
chmod 700 "$T/closed"
chmod 777 "$T/closed/open"
run_cmd out "${NOBODY[@]}" "$T/flamed-caps" record -o "$T/closed/open/out.folded" -- true
[[ -e $T/closed/open/out.folded ]] &&
	fail "record -o wrote through a directory its user may not search: $(stat -c '%U %a' "$T/closed/open/out.folded")"
grep -q 'Permission denied' "$T/out.err" ||
	fail "record -o behind a closed directory: no 'Permission denied': $(cat "$T/out.err")"
[[ $RC -ne 0 ]] || fail "record -o behind a closed directory exited 0"

# --- record -- CMD behind a directory the user may not search ------------------
cp "$(type -P true)" "$T/closed/true"
chmod 755 "$T/closed/true"
run_cmd cmd "${NOBODY[@]}" "$T/flamed-caps" record -o "$T/own/cmd.folded" -- "$T/closed/true"
[[ $RC -ne 0 ]] || fail "record -- CMD ran a program its user may not reach: $(cat "$T/cmd.err")"
grep -q 'Permission denied' "$T/cmd.err" ||
	fail "record -- CMD behind a closed directory: no 'Permission denied': $(cat "$T/cmd.err")"

# The capabilities still sample: the user's own command, named.
# A copy the user can reach: the build tree may be in root's 0700 home.
cp "$FIXTURES/chains" "$T/chains"
chmod 755 "$T/chains"
run_cmd rec "${NOBODY[@]}" "$T/flamed-caps" record -o "$T/own/rec.folded" -- "$T/chains" 0.5
expect_rc 0
check_folded "$T/own/rec.folded"

pass "with file capabilities, --config, --cp and -o are opened with the user's own rights"
