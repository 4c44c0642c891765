#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The distribution packages: packaging/debian builds a .deb with
# dpkg-buildpackage that holds the binary, the unit, the default config (a
# conffile) and the man pages, installs (unit enabled) and purges without a
# trace; packaging/rpm/flamed.spec builds an .rpm with rpmbuild that holds
# the same. Both compile a copy of the tree, with the build dependencies of
# this machine (dpkg-checkbuilddeps must be satisfied).
#
# Installing needs root and a machine without flamed installed (by dpkg or
# by hand): otherwise that part is skipped, and so is the part whose tools
# are missing; the test then exits 77 with the reason, after the rest.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRCDIR=$(readlink -f "${SRCDIR:-$(dirname "${BASH_SOURCE[0]}")/../..}")
JOBS=$(nproc 2>/dev/null || echo 2)
BUILD_TIMEOUT=240 # seconds per package build
SKIPPED=()        # why a part did not run: the test ends in SKIP

t_start=$(now)
since() {
	awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'
}

# --- versions -----------------------------------------------------------------
# The packages' versions follow the project's: the binary says the CMake one.
version=$(sed -nE 's/^project\(flamed VERSION ([0-9][0-9A-Za-z.~+]*).*/\1/p' "$SRCDIR/CMakeLists.txt")
[[ -n $version ]] || fail "no 'project(flamed VERSION ...)' in $SRCDIR/CMakeLists.txt"
deb_version=$(sed -nE '1s/^flamed \(([^)]+)\).*/\1/p' "$SRCDIR/packaging/debian/changelog")
rpm_version=$(sed -nE 's/^Version:[[:space:]]+([^[:space:]]+)[[:space:]]*$/\1/p' "$SRCDIR/packaging/rpm/flamed.spec")
[[ $deb_version == "$version" ]] ||
	fail "packaging/debian/changelog is at version '$deb_version', CMakeLists.txt at $version (add a changelog entry: dch -v $version)"
[[ $rpm_version == "$version" ]] ||
	fail "packaging/rpm/flamed.spec is at Version '$rpm_version', CMakeLists.txt at $version (and add a %changelog entry)"
note "version $version in CMakeLists.txt, debian/changelog and flamed.spec"

# --- a copy of the tree -------------------------------------------------------
# What git has or would add (the working tree as it is, without build/ and
# other ignored files); without git, all but .git and CMake build trees.
# Never a debian/ or obj-*/ left by a package build in the tree itself.
copy_tree() {
	local dest=$1 f
	mkdir -p "$dest"
	if git -C "$SRCDIR" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$SRCDIR" ls-files -z --cached --others --exclude-standard |
			while IFS= read -r -d '' f; do
				case $f in debian | debian/* | obj-*/*) continue ;; esac
				# Deleted in the working tree but still in the index: gone.
				[[ -e $SRCDIR/$f || -L $SRCDIR/$f ]] && printf '%s\0' "$f"
			done |
			tar -C "$SRCDIR" --null --no-recursion -T - -cf - | tar -C "$dest" -xf -
	else
		tar -C "$SRCDIR" --exclude=./.git --exclude=./debian --exclude='./obj-*' \
			--exclude-tag-all=CMakeCache.txt -cf - . | tar -C "$dest" -xf -
	fi
	[[ -f $dest/CMakeLists.txt && -d $dest/packaging/debian ]] || fail "copying $SRCDIR to $dest left no CMakeLists.txt or packaging/debian"
}

# The RPM's source tarball, flamed-VERSION/ inside, from a pristine copy.
if command -v rpmbuild >/dev/null; then
	copy_tree "$T/flamed-$version"
	mkdir -p "$T/rpm/SOURCES" "$T/rpm/tmp" "$T/rpm/db"
	tar -C "$T" -czf "$T/rpm/SOURCES/flamed-$version.tar.gz" "flamed-$version"
	rm -rf "${T:?}/flamed-$version"
fi
copy_tree "$T/src"
note "copied $SRCDIR to $T/src ($(find "$T/src" -type f | wc -l) files)"

# The builds' own make must not join a make that runs ctest.
build_env=(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL)

# --- Debian: build --------------------------------------------------------------
# Only where dpkg manages the system: dpkg-checkbuilddeps looks the build
# dependencies up in its database.
deb=
if [[ $(dpkg-query -W -f='${db:Status-Status}' dpkg-dev 2>/dev/null || true) != installed ]] ||
	! command -v dpkg-buildpackage >/dev/null; then
	SKIPPED+=("dpkg-buildpackage is not installed, or dpkg does not manage this system (Debian: apt-get install dpkg-dev debhelper)")
elif ! command -v dh >/dev/null; then
	SKIPPED+=("dh is not installed (Debian: debhelper)")
else
	cp -a "$T/src/packaging/debian" "$T/src/debian"
	t0=$(now)
	cd "$T/src"
	TIMEOUT=$BUILD_TIMEOUT run_cmd deb-build "${build_env[@]}" DEB_BUILD_OPTIONS="parallel=$JOBS" \
		dpkg-buildpackage -us -uc -b
	cd "$T"
	if [[ $RC -ne 0 ]]; then
		if grep -q 'Unmet build dependencies' "$T/deb-build.err"; then
			fail "build dependencies missing: $(grep -h 'Unmet build dependencies' "$T/deb-build.err") (apt-get build-dep ./ in a tree with debian/, or packaging/bootstrap.sh --test)"
		fi
		tail -n 40 "$T/deb-build.out" >&2
		fail "dpkg-buildpackage -us -uc -b failed (exit $RC)"
	fi
	note "dpkg-buildpackage: $(since "$t0") s with parallel=$JOBS"
	shopt -s nullglob
	debs=("$T"/flamed_*.deb)
	shopt -u nullglob
	[[ ${#debs[@]} -eq 1 ]] || fail "expected one flamed_*.deb in $T, found ${#debs[@]}: $(ls "$T")"
	deb=${debs[0]}
	[[ $(dpkg-deb -f "$deb" Package) == flamed ]] || fail "$deb is not the package flamed"
	[[ $(dpkg-deb -f "$deb" Version) == "$version" ]] ||
		fail "$deb has version $(dpkg-deb -f "$deb" Version), not $version"
	depends=$(dpkg-deb -f "$deb" Depends)
	[[ $depends == *libbpf* ]] || fail "$deb does not depend on libbpf (\${shlibs:Depends} empty?): $depends"

	# --- Debian: contents ---------------------------------------------------------
	dpkg-deb -c "$deb" >"$T/deb-contents.txt" || fail "dpkg-deb -c $deb failed"
	# Paths without the leading '.', without ' -> TARGET' for links.
	awk '{ p = $6; sub(/^\./, "", p); print p }' "$T/deb-contents.txt" >"$T/deb-paths.txt"
	deb_has() {
		grep -qxE "$1" "$T/deb-paths.txt" || fail "$deb has no $2 (no path matching $1): $(cat "$T/deb-paths.txt")"
	}
	deb_has '/usr/bin/flamed' "binary"
	deb_has '/(usr/)?lib/systemd/system/flamed\.service' "systemd unit"
	deb_has '/etc/flamed/flamed\.conf' "default config"
	deb_has '/usr/share/man/man1/flamed\.1(\.gz)?' "flamed(1)"
	deb_has '/usr/share/man/man5/flamed\.conf\.5(\.gz)?' "flamed.conf(5)"
	deb_has '/usr/share/doc/flamed/copyright' "copyright file"
	grep -qE '^-rwxr-xr-x .* \./usr/bin/flamed$' "$T/deb-contents.txt" ||
		fail "/usr/bin/flamed in $deb is not a 0755 file: $(grep 'usr/bin/flamed' "$T/deb-contents.txt")"
	unit_path=$(grep -xE '/(usr/)?lib/systemd/system/flamed\.service' "$T/deb-paths.txt")

	dpkg-deb --info "$deb" conffiles >"$T/deb-conffiles.txt" 2>&1 ||
		fail "$deb has no conffiles: $(cat "$T/deb-conffiles.txt")"
	grep -qx '/etc/flamed/flamed.conf' "$T/deb-conffiles.txt" ||
		fail "/etc/flamed/flamed.conf is not a conffile of $deb: $(cat "$T/deb-conffiles.txt")"

	# What was installed into the package is the repository's config, and the
	# unit that runs the packaged binary.
	mkdir "$T/deb-x"
	dpkg-deb -x "$deb" "$T/deb-x"
	cmp -s "$T/deb-x/etc/flamed/flamed.conf" "$SRCDIR/packaging/flamed.conf" ||
		fail "the packaged /etc/flamed/flamed.conf differs from packaging/flamed.conf"
	[[ $(grep '^ExecStart=' "$T/deb-x$unit_path") == 'ExecStart=/usr/bin/flamed daemon' ]] ||
		fail "the packaged unit runs '$(grep '^ExecStart=' "$T/deb-x$unit_path")', not /usr/bin/flamed daemon"
	mkdir "$T/deb-ctl"
	dpkg-deb -e "$deb" "$T/deb-ctl"
	grep -q "deb-systemd-helper enable 'flamed.service'" "$T/deb-ctl/postinst" ||
		fail "the postinst of $deb does not enable flamed.service (dh_installsystemd?)"
	note "$(basename "$deb"): $(wc -l <"$T/deb-paths.txt") paths, unit $unit_path, conffile /etc/flamed/flamed.conf"
fi

# --- RPM: build -------------------------------------------------------------------
# Debian's rpm has neither the cmake nor the systemd macros: the spec falls
# back on its own where they are missing. --nodeps: the BuildRequires are
# Fedora's package names, not this machine's.
rpm_db=(--define "_dbpath $T/rpm/db")
if ! command -v rpmbuild >/dev/null || ! command -v rpmspec >/dev/null; then
	SKIPPED+=("rpmbuild or rpmspec is not installed (Debian: rpm; Fedora: rpm-build)")
else
	SPEC=$T/src/packaging/rpm/flamed.spec
	run_cmd rpmspec rpmspec "${rpm_db[@]}" -P "$SPEC"
	[[ $RC -eq 0 ]] || fail "rpmspec -P cannot parse $SPEC: $(cat "$T/rpmspec.err")"
	t0=$(now)
	TIMEOUT=$BUILD_TIMEOUT run_cmd rpm-build "${build_env[@]}" rpmbuild -bb --nodeps \
		--define "_topdir $T/rpm" --define "_tmppath $T/rpm/tmp" "${rpm_db[@]}" "$SPEC"
	if [[ $RC -ne 0 ]]; then
		tail -n 40 "$T/rpm-build.out" >&2
		fail "rpmbuild -bb failed (exit $RC)"
	fi
	note "rpmbuild: $(since "$t0") s"
	shopt -s nullglob
	rpms=("$T"/rpm/RPMS/*/flamed-"$version"-*.rpm)
	shopt -u nullglob
	[[ ${#rpms[@]} -eq 1 ]] || fail "expected one flamed-$version-*.rpm, found ${#rpms[@]}: $(find "$T/rpm/RPMS" -name '*.rpm')"
	rpm_file=${rpms[0]}
	rpm "${rpm_db[@]}" -qlp "$rpm_file" >"$T/rpm-paths.txt" 2>"$T/rpm-q.err" ||
		fail "rpm -qlp $rpm_file failed: $(cat "$T/rpm-q.err")"
	rpm_has() {
		grep -qxE "$1" "$T/rpm-paths.txt" || fail "$rpm_file has no $2 (no path matching $1): $(cat "$T/rpm-paths.txt")"
	}
	rpm_has '/usr/bin/flamed' "binary"
	rpm_has '/usr/lib/systemd/system/flamed\.service' "systemd unit"
	rpm_has '/etc/flamed/flamed\.conf' "default config"
	rpm_has '/usr/share/man/man1/flamed\.1(\.gz)?' "flamed(1)"
	rpm_has '/usr/share/man/man5/flamed\.conf\.5(\.gz)?' "flamed.conf(5)"
	config=$(rpm "${rpm_db[@]}" -qcp "$rpm_file")
	grep -qx '/etc/flamed/flamed.conf' <<<"$config" ||
		fail "/etc/flamed/flamed.conf is not a %config file of $rpm_file: $config"
	rpm "${rpm_db[@]}" -qp --scripts "$rpm_file" >"$T/rpm-scripts.txt"
	for scriptlet in postinstall preuninstall postuninstall; do
		body=$(awk -v s="$scriptlet" '$1 == s { on = 1; next } / scriptlet /{ on = 0 } on' "$T/rpm-scripts.txt")
		[[ $body == *flamed.service* ]] ||
			fail "the $scriptlet scriptlet of $rpm_file does not handle flamed.service: $(cat "$T/rpm-scripts.txt")"
	done
	note "$(basename "$rpm_file"): $(wc -l <"$T/rpm-paths.txt") paths, %config /etc/flamed/flamed.conf, systemd scriptlets"
fi

# --- Debian: install and purge ------------------------------------------------
# Only on a machine that has no flamed of its own: purging must not take
# anything away that the test did not bring.
WANTS=/etc/systemd/system/multi-user.target.wants/flamed.service
dpkg_status() {
	dpkg-query -W -f='${db:Status-Status}' flamed 2>/dev/null || true
}
deb_installed=0
# shellcheck disable=SC2317 # run by the EXIT trap
purge_on_exit() {
	if [[ $deb_installed -eq 1 ]]; then
		echo "-- purging flamed (the test installed it)" >&2
		dpkg --purge flamed >/dev/null 2>&1 || echo "-- dpkg --purge flamed failed: purge it by hand" >&2
	fi
	cleanup
}
trap purge_on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# What a flamed installed by hand (cmake --install --prefix /usr) or left
# behind would have.
leftovers=$(ls -d /usr/bin/flamed /lib/systemd/system/flamed.service /usr/lib/systemd/system/flamed.service \
	/etc/flamed /var/lib/flamed "$WANTS" 2>/dev/null || true)
daemon_err=
if [[ -z $deb ]]; then
	: # no .deb: the reason is in SKIPPED already
elif [[ $(id -u) -ne 0 ]]; then
	SKIPPED+=("installing the .deb needs root (running as uid $(id -u))")
elif [[ -n $(dpkg_status) && $(dpkg_status) != not-installed ]]; then
	note "a package flamed is on this machine ($(dpkg_status), $(dpkg-query -W -f='${Version}' flamed)): not installing the test's"
	SKIPPED+=("the package flamed is already installed: dpkg --purge flamed to test installing")
elif [[ -n $leftovers ]]; then
	note "flamed files that no package owns are on this machine: $(echo "$leftovers" | tr '\n' ' ')"
	SKIPPED+=("a flamed installed by hand or left behind is on this machine ($(echo "$leftovers" | tr '\n' ' ')): installing and purging the package would replace or delete it")
else
	t0=$(now)
	deb_installed=1
	TIMEOUT=120 run_cmd dpkg-install dpkg -i "$deb"
	[[ $RC -eq 0 ]] || fail "dpkg -i $deb failed (exit $RC): $(tail -n 5 "$T/dpkg-install.out")"
	[[ $(dpkg_status) == installed ]] || fail "after dpkg -i, flamed is '$(dpkg_status)', not installed"
	[[ -x /usr/bin/flamed ]] || fail "dpkg -i did not install /usr/bin/flamed"
	[[ -f $unit_path ]] || fail "dpkg -i did not install $unit_path"
	[[ -f /usr/share/man/man1/flamed.1.gz || -f /usr/share/man/man1/flamed.1 ]] || fail "dpkg -i did not install flamed(1)"
	conffiles=$(dpkg-query -W -f='${Conffiles}\n' flamed)
	grep -qE '^ /etc/flamed/flamed\.conf [0-9a-f]{32}$' <<<"$conffiles" ||
		fail "dpkg does not list /etc/flamed/flamed.conf as a conffile of flamed: $conffiles"
	run_cmd version /usr/bin/flamed --version
	expect_rc 0
	[[ $(cat "$T/version.out") == "flamed $version" ]] || fail "/usr/bin/flamed --version says '$(cat "$T/version.out")', not 'flamed $version'"

	# Enabled: the symlink deb-systemd-helper makes even where systemd does
	# not run, and what systemctl says of it (offline too, from unit files).
	[[ -L $WANTS ]] || fail "the unit is not enabled: no symlink $WANTS"
	[[ $(readlink "$WANTS") == "$unit_path" ]] || fail "$WANTS points to $(readlink "$WANTS"), not $unit_path"
	if command -v systemctl >/dev/null; then
		run_cmd is-enabled systemctl is-enabled flamed.service
		[[ $RC -eq 0 && $(cat "$T/is-enabled.out") == enabled ]] ||
			fail "systemctl is-enabled flamed.service: '$(cat "$T/is-enabled.out" "$T/is-enabled.err")' (exit $RC), not enabled"
	fi
	if [[ -d /run/systemd/system ]]; then
		note "systemd runs here: the postinst started flamed.service ($(systemctl is-active flamed.service 2>&1 || true))"
	else
		note "systemd is not PID 1 here: the unit is enabled, not started"
	fi

	# The daemon's usage, with its --config option. Checked after the purge
	# below, so that a failure here still tests removing the package.
	run_cmd daemon-help /usr/bin/flamed daemon --help
	if [[ $RC -ne 0 ]]; then
		daemon_err="/usr/bin/flamed daemon --help exits $RC: $(head -n 3 "$T/daemon-help.err")"
	elif ! grep -q -- '--config' "$T/daemon-help.out"; then
		daemon_err="the usage of 'flamed daemon --help' does not mention --config: $(head -n 5 "$T/daemon-help.out")"
	fi

	run_cmd dpkg-purge dpkg --purge flamed
	[[ $RC -eq 0 ]] || fail "dpkg --purge flamed failed (exit $RC): $(tail -n 5 "$T/dpkg-purge.out")"
	deb_installed=0
	[[ $(dpkg_status) == '' || $(dpkg_status) == not-installed ]] ||
		fail "after dpkg --purge, flamed is '$(dpkg_status)'"
	for p in /usr/bin/flamed "$unit_path" /etc/flamed /var/lib/flamed "$WANTS" \
		/usr/share/doc/flamed /usr/share/man/man1/flamed.1.gz /usr/share/man/man5/flamed.conf.5.gz; do
		[[ ! -e $p && ! -L $p ]] || fail "$p is still there after dpkg --purge flamed"
	done
	left=$(find /etc/systemd /var/lib/systemd -name 'flamed.service*' 2>/dev/null || true)
	[[ -z $left ]] || fail "systemd state of flamed.service left after dpkg --purge: $left"
	note "installed, enabled, purged without a trace in $(since "$t0") s"
fi
if [[ -n $daemon_err ]]; then
	LAST_ERR=$T/daemon-help.err
	fail "$daemon_err"
fi

total=$(since "$t_start")
if [[ ${#SKIPPED[@]} -gt 0 ]]; then
	reasons=$(printf '%s; ' "${SKIPPED[@]}")
	skip "${reasons%; } (the rest passed, ${total} s)"
fi
pass "the .deb and the .rpm build, hold and install what they should (${total} s)"
