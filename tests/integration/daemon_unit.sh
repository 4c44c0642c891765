#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon's packaging: the systemd unit passes `systemd-analyze verify` and
# scores 4.0 or better in `systemd-analyze security`, the man pages render
# without warnings and document every option and key, and `cmake --install`
# puts the binary, unit, default config and man pages in place.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed (Debian: systemd)"

SRCDIR=$(readlink -f "${SRCDIR:-$(dirname "${BASH_SOURCE[0]}")/../..}")
UNIT=$SRCDIR/packaging/systemd/flamed.service
MAN1=$SRCDIR/packaging/man/flamed.1
MAN5=$SRCDIR/packaging/man/flamed.conf.5
CONF=$SRCDIR/packaging/flamed.conf
BUILD=$(dirname "$FLAMED") # the flamed target is built at the top of the build tree
MAX_EXPOSURE=4.0
for f in "$UNIT" "$MAN1" "$MAN5"; do
	[[ -f $f ]] || fail "$f is missing"
done
[[ -f $BUILD/CMakeCache.txt ]] || fail "$FLAMED is not in a CMake build tree (no $BUILD/CMakeCache.txt)"
export SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat

# --- cmake --install --------------------------------------------------------
# Into a fresh prefix, under DESTDIR as well: a build configured for /usr puts
# the config in /etc/flamed (an absolute destination), which must land in the
# scratch directory too, not on this machine.
DEST=$T/root
PREFIX=$T/prefix
run_cmd install env DESTDIR="$DEST" cmake --install "$BUILD" --prefix "$PREFIX"
expect_rc 0
# installed BASENAME: the one path that cmake --install reported for BASENAME.
installed() {
	local paths
	paths=$(sed -nE 's/^-- (Installing|Up-to-date): (.*)$/\2/p' "$T/install.out" |
		awk -v b="$1" '{ n = split($0, p, "/"); if (p[n] == b) print }')
	[[ -n $paths ]] || fail "cmake --install did not install $1: $(cat "$T/install.out")"
	[[ $(wc -l <<<"$paths") -eq 1 ]] || fail "cmake --install installed $1 more than once: $paths"
	[[ -f $paths && $paths == "$DEST"/* ]] || fail "$1 was installed to $paths, outside $DEST"
	echo "$paths"
}
bin=$(installed flamed)
unit=$(installed flamed.service)
man1=$(installed flamed.1)
man5=$(installed flamed.conf.5)
[[ -x $bin ]] || fail "the installed $bin is not executable"
[[ $unit == */systemd/system/flamed.service ]] || fail "the unit was installed to $unit, not a systemd/system directory"
[[ $man1 == */man1/flamed.1 ]] || fail "flamed.1 was installed to $man1, not a man1 directory"
[[ $man5 == */man5/flamed.conf.5 ]] || fail "flamed.conf.5 was installed to $man5, not a man5 directory"
cmp -s "$man1" "$MAN1" || fail "the installed $man1 differs from $MAN1"
cmp -s "$man5" "$MAN5" || fail "the installed $man5 differs from $MAN5"
if [[ -f $CONF ]]; then
	conf=$(installed flamed.conf)
	# Where the installed daemon reads it by default, whatever the prefix.
	default=$("$bin" daemon --help | sed -n 's/.*configuration file (default \(.*\))$/\1/p')
	[[ -n $default ]] || fail "flamed daemon --help names no default configuration file"
	[[ ${conf#"$DEST"} == "$default" ]] ||
		fail "flamed.conf was installed to ${conf#"$DEST"}, but the daemon reads $default by default"
	cmp -s "$conf" "$CONF" || fail "the installed $conf differs from $CONF"
else
	note "no $CONF yet: not checking its installation"
fi
# The installed unit runs the installed binary (as the system will see it,
# without DESTDIR), also to check a configuration before a reload; the rest
# of it is the unit of the repository.
want="ExecStart=${bin#"$DEST"} daemon"
[[ $(grep '^ExecStart=' "$unit") == "$want" ]] ||
	fail "installed unit: '$(grep '^ExecStart=' "$unit")', want '$want'"
want="ExecReload=${bin#"$DEST"} daemon --check-config"
grep -qxF "$want" "$unit" || fail "installed unit: no line '$want': $(grep '^ExecReload=' "$unit")"
diff <(grep -v '^ExecStart=\|^ExecReload=/' "$UNIT") <(grep -v '^ExecStart=\|^ExecReload=/' "$unit") >"$T/unit.diff" ||
	fail "the installed unit differs from $UNIT beyond ExecStart and ExecReload: $(cat "$T/unit.diff")"
note "installed: ${bin#"$DEST"}, ${unit#"$DEST"}, ${man1#"$DEST"}, ${man5#"$DEST"}"

# --- systemd-analyze verify ---------------------------------------------------
# verify wants ExecStart's binary to exist: a copy of the unit runs the built
# one. Documentation=man:... pages are looked up with man(1), in the ones just
# installed.
mkdir "$T/unit"
sed -E "s|^(ExecStart\|ExecReload)=/usr/bin/flamed |\1=$FLAMED |" "$UNIT" >"$T/unit/flamed.service"
grep -qx "ExecStart=$FLAMED daemon" "$T/unit/flamed.service" || fail "no 'ExecStart=/usr/bin/flamed daemon' line in $UNIT"
man_check=--man=yes
command -v man >/dev/null || {
	man_check=--man=no
	note "man is not installed: verify does not check Documentation="
}
run_cmd verify env MANPATH="${man1%/man1/flamed.1}" systemd-analyze verify "$man_check" "$T/unit/flamed.service"
[[ $RC -eq 0 ]] || fail "systemd-analyze verify failed (exit $RC): $(cat "$T/verify.out" "$T/verify.err")"
[[ ! -s $T/verify.out && ! -s $T/verify.err ]] ||
	fail "systemd-analyze verify warns: $(cat "$T/verify.out" "$T/verify.err")"

# --- systemctl reload: a configuration the daemon would refuse fails it --------
# systemd runs the ExecReload= lines in order and stops at the first that
# fails: the check must come before the signal.
reloads=$(grep '^ExecReload=' "$UNIT")
[[ $(head -n 1 <<<"$reloads") == "ExecReload=/usr/bin/flamed daemon --check-config" &&
	$(sed -n 2p <<<"$reloads") == 'ExecReload=/bin/kill -HUP $MAINPID' ]] ||
	fail "the unit does not check the configuration before it sends SIGHUP: $reloads"
printf 'frequency = 99\ninterval = 30s\n' >"$T/good.conf"
printf 'frequency = 99\nintervall = 30s\n' >"$T/bad.conf"
run_flamed check-good daemon --check-config --config "$T/good.conf"
expect_rc 0
run_flamed check-bad daemon --check-config --config "$T/bad.conf"
expect_rc 1
[[ $(wc -l <"$T/check-bad.err") -eq 1 ]] && grep -q "bad.conf:2: .*intervall" "$T/check-bad.err" ||
	fail "flamed daemon --check-config on a bad file: want one line naming the file, line and key: $(cat "$T/check-bad.err")"
note "--check-config: $(cat "$T/check-bad.err")"

# --- systemd-analyze security ------------------------------------------------
# Exposure from 0.0 (locked down) to 10.0 (unconfined); lower is better.
run_cmd security systemd-analyze security --no-pager --offline=true "$T/unit/flamed.service"
if [[ $RC -ne 0 ]] && grep -q -- '--offline' "$T/security.err"; then
	skip "this systemd-analyze ($(systemd-analyze --version | head -n 1)) has no 'security --offline' (systemd 250 or later)"
fi
expect_rc 0
exposure=$(sed -nE 's/.*Overall exposure level for flamed\.service: ([0-9]+\.[0-9]+).*/\1/p' "$T/security.out")
[[ -n $exposure ]] || fail "no 'Overall exposure level' in: $(tail -n 3 "$T/security.out")"
note "exposure $exposure (at most $MAX_EXPOSURE); still open:"
grep '✗' "$T/security.out" | sed -E 's/ {2,}/  /g; s/^/   /' || true
awk -v e="$exposure" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(e <= m) }' ||
	fail "systemd-analyze security: exposure $exposure, more than $MAX_EXPOSURE"

# --- man pages ---------------------------------------------------------------
checked=0
if command -v groff >/dev/null; then
	for page in "$MAN1" "$MAN5"; do
		run_cmd groff-"$(basename "$page")" groff -man -Tutf8 -ww -z "$page"
		[[ $RC -eq 0 && ! -s $LAST_ERR ]] || fail "groff warns about $page: $(cat "$LAST_ERR")"
	done
	checked=1
fi
if command -v mandoc >/dev/null; then
	for page in "$MAN1" "$MAN5"; do
		run_cmd mandoc-"$(basename "$page")" mandoc -Tlint -Wwarning "$page"
		[[ ! -s $T/mandoc-$(basename "$page").out && ! -s $LAST_ERR ]] ||
			fail "mandoc -Tlint warns about $page: $(cat "$T/mandoc-$(basename "$page").out" "$LAST_ERR")"
	done
	checked=1
fi
if command -v lexgrog >/dev/null; then
	# The NAME line that apropos and whatis index.
	for page in "$MAN1" "$MAN5"; do
		run_cmd lexgrog-"$(basename "$page")" lexgrog "$page"
		[[ $RC -eq 0 ]] || fail "lexgrog cannot parse the NAME section of $page: $(cat "$T/lexgrog-$(basename "$page").out")"
	done
fi
[[ $checked -eq 1 ]] || note "neither groff nor mandoc is installed: man pages not rendered"

# Every option that --help lists is in flamed(1), every key of the shipped
# config in flamed.conf(5).
man1_text=$(sed 's/\\-/-/g' "$MAN1")
for cmd in record svg diff collapse daemon; do
	run_flamed help-$cmd "$cmd" --help
	expect_rc 0
	while read -r opt; do
		grep -qF -- "$opt" <<<"$man1_text" || fail "flamed.1 does not document '$opt' of flamed $cmd"
	done < <(grep -oE -- '--[a-z][a-z0-9-]*' "$T/help-$cmd.out" | sort -u)
done
if [[ -f $CONF ]]; then
	while read -r key; do
		grep -qE "^\.BR? $key( |$)" "$MAN5" || fail "flamed.conf.5 does not document the key '$key' of $CONF"
	done < <(sed -nE 's/^#? *([a-z_]+) = .*/\1/p' "$CONF" | sort -u)
fi

pass "unit verified, exposure $exposure <= $MAX_EXPOSURE, man pages render, install complete"
