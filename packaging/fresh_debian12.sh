#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The README's promise, checked as a newcomer meets it: README line 2 run
# exactly, N times in a row, in a fresh Debian 12 root (debootstrap) on this
# machine's kernel, with two busy loops beside it (a machine doing other work).
#
#   packaging/fresh_debian12.sh [RUNS] [BRANCH]      (as root; default 5 main)
#
# The root is a new directory under $FRESH_DIR (default: a new private
# directory made by mktemp under /var/tmp; one given must be root's own, not a
# symlink, and writable by nobody else: it is emptied as root);
# BRANCH of this clone is cloned into its /root/flamed, with ../shared copied
# beside it when there is one. Each run goes through unshare --mount and
# pivot_root (not chroot: a chrooted process may not create the user
# namespace a test needs) with /proc, /sys, /dev and a tmpfs /tmp of its
# own; same pid and network namespaces, same CPUs. Logs: $FRESH_DIR/run-K.log.
# Needs debootstrap and network access to deb.debian.org. Exits 0 only when
# every run passed. The tests inside change sysctls and CPU 1's online state
# and put them back, as README says.
set -euo pipefail

RUNS=${1:-5}
BRANCH=${2:-main}
FRESH_DIR=${FRESH_DIR:-$(mktemp -d /var/tmp/flamed-fresh.XXXXXX)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SRC=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
ROOT=$FRESH_DIR/root

[[ $(id -u) -eq 0 ]] || { echo "fresh_debian12.sh: run it as root (debootstrap, unshare, pivot_root)" >&2; exit 2; }
command -v debootstrap >/dev/null ||
	{ echo "fresh_debian12.sh: debootstrap is missing (apt-get install debootstrap)" >&2; exit 2; }

[[ -e $FRESH_DIR ]] || mkdir -m 0700 "$FRESH_DIR"
# Root empties it: not somebody else's link or directory (/var/tmp is everyone's).
if [[ -L $FRESH_DIR || $(stat -c '%u' "$FRESH_DIR") != 0 ]] || (($(stat -c '0%a' "$FRESH_DIR") & 022)); then
	echo "fresh_debian12.sh: $FRESH_DIR must be a directory of root's that others cannot write" >&2
	exit 2
fi
echo "fresh_debian12.sh: in $FRESH_DIR"
rm -rf "$ROOT"
debootstrap --variant=minbase --include=ca-certificates,git,sudo bookworm "$ROOT" "$MIRROR" \
	>"$FRESH_DIR/debootstrap.log" 2>&1 ||
	{ echo "fresh_debian12.sh: debootstrap failed, see $FRESH_DIR/debootstrap.log" >&2; exit 1; }
git clone -q -b "$BRANCH" "$SRC" "$ROOT/root/flamed"
[[ -d $SRC/../shared ]] && cp -r "$SRC/../shared" "$ROOT/root/shared"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"

# README line 2: the second line of its first sh block.
# shellcheck disable=SC2016 # sed's expressions
line2=$(sed -n '/^```sh$/,/^```$/p' "$ROOT/root/flamed/README.md" | sed -n 3p)
echo "fresh_debian12.sh: README line 2: $line2"

busy=()
for _ in 1 2; do
	(while :; do :; done) &
	busy+=($!)
done
trap 'kill "${busy[@]}" 2>/dev/null || true' EXIT

in_root() {
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare --mount --propagation private /bin/bash -c '
		R=$1; shift
		mount --bind "$R" "$R"
		mount -t proc proc "$R/proc"
		mount --rbind /sys "$R/sys"
		mount --rbind /dev "$R/dev"
		mount -t tmpfs -o mode=1777 tmp "$R/tmp"
		cd "$R" && mkdir -p .oldroot && pivot_root . .oldroot && umount -l /.oldroot || exit 111
		cd /
		exec /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
	' in_root "$ROOT" "$@"
}

failed=0
for r in $(seq "$RUNS"); do
	t0=$SECONDS
	rc=0
	in_root bash -c "cd /root/flamed && $line2" >"$FRESH_DIR/run-$r.log" 2>&1 || rc=$?
	echo "fresh_debian12.sh: run $r: exit $rc in $((SECONDS - t0)) s;" \
		"$(grep -E '^check:' "$FRESH_DIR/run-$r.log" | tr '\n' ' ')"
	if [[ $rc -ne 0 ]]; then
		failed=$((failed + 1))
		grep -E '\*\*\*Failed|^sanitize: .*Failed|^FAIL' "$FRESH_DIR/run-$r.log" | head -20 || true
	fi
done
echo "fresh_debian12.sh: $((RUNS - failed)) of $RUNS runs green"
[[ $failed -eq 0 ]]
