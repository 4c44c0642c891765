#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs what building and testing flamed needs (apt on Debian/Ubuntu, dnf on
# Fedora), then configures and builds it in build/. Installs nothing when
# everything is there already, so running it again is quick.
#
#   packaging/bootstrap.sh          from any directory; uses sudo when not root
#   packaging/bootstrap.sh --test   also what the test suite needs: xmllint,
#                                   Chromium and Node.js (the SVG's browser tests)
#
# Warnings are errors (-DFLAMED_WERROR=ON) when CI is set or FLAMED_WERROR=1.
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

want_tests=0
for arg; do
	case $arg in
	--test) want_tests=1 ;;
	-h | --help)
		sed -n '3,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		printf 'bootstrap: error: unknown argument %s (use --test or nothing)\n' "$arg" >&2
		exit 2
		;;
	esac
done

step() { printf 'bootstrap: %s\n' "$*" >&2; }
warn() { printf 'bootstrap: warning: %s\n' "$*" >&2; }
die() {
	printf 'bootstrap: error: %s\n' "$*" >&2
	exit 1
}

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
	SUDO=(sudo)
fi

as_root() {
	if [[ ${#SUDO[@]} -gt 0 ]] && ! command -v sudo >/dev/null; then
		die "not root and no sudo: run this as root to install: $*"
	fi
	"${SUDO[@]}" "$@"
}

# --- which distribution ------------------------------------------------------
ID=unknown ID_LIKE=
if [[ -r /etc/os-release ]]; then
	# shellcheck disable=SC1091
	. /etc/os-release
fi
case " $ID $ID_LIKE " in
*" ubuntu "*) family=ubuntu ;;
*" debian "*) family=debian ;;
*" fedora "* | *" rhel "*) family=fedora ;;
*) family=other ;;
esac

# REQUIRED must be there after installing; OPTIONAL (the benchmark's perf and
# GNU time) only earns a warning when it cannot be had.
case $family in
debian | ubuntu)
	# libcap2-bin: setcap, to let a user record without root (README, Privileges).
	REQUIRED=(build-essential cmake pkg-config clang llvm libbpf-dev libelf-dev libdw-dev
		libdeflate-dev liblzma-dev libiberty-dev libcap2-bin libprotobuf-c-dev protobuf-c-compiler zlib1g-dev
		libmicrohttpd-dev libcurl4-openssl-dev libdebuginfod-dev)
	OPTIONAL=(time)
	if [[ $family == debian ]]; then
		REQUIRED+=(bpftool)
		OPTIONAL+=(linux-perf)
	fi
	if [[ $want_tests -eq 1 ]]; then
		# cmocka runs the unit tests; systemd-analyze checks the unit file; groff
		# and man render the man pages.
		REQUIRED+=(libcmocka-dev libxml2-utils chromium systemd groff-base man-db)
		# The packages: dpkg-buildpackage and dh build the .deb, rpmbuild the .rpm.
		REQUIRED+=(dpkg-dev debhelper rpm)
		# strace shows that flamed runs no program (hostile.sh) and opens no
		# FIFO or tty (hostile_files.sh); dwz makes test_srcinfo's fixtures.
		REQUIRED+=(strace dwz)
		# unshare makes pid namespaces, pgrep finds processes in them (record_pidns.sh).
		REQUIRED+=(util-linux procps)
		# go tool pprof reads the pprof files flamed writes; go builds the Go
		# program whose own CPU profile flamed reads (pprof.sh).
		REQUIRED+=(golang-go)
		# A real Prometheus scrapes the daemon's metrics endpoint (daemon_metrics.sh).
		REQUIRED+=(prometheus)
		# A real debuginfod server hands debug files to the debuginfod client;
		# python3 runs test_debuginfod's stub server (hanging, truncating).
		# test_pyruntime checks CPython's offsets against its internal headers.
		REQUIRED+=(debuginfod python3 python3-dev)
		# Any Node.js will do (Debian's, or one from NodeSource already there).
		command -v node >/dev/null || REQUIRED+=(nodejs)
	fi
	is_installed() { [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) == installed ]]; }
	;;
fedora)
	REQUIRED=(gcc make cmake pkgconf-pkg-config clang llvm libbpf-devel elfutils-libelf-devel
		elfutils-devel libdeflate-devel xz-devel binutils-devel bpftool libcap protobuf-c-devel protobuf-c-compiler
		zlib-devel libmicrohttpd-devel libcurl-devel elfutils-debuginfod-client-devel)
	OPTIONAL=(time perf)
	if [[ $want_tests -eq 1 ]]; then
		REQUIRED+=(libcmocka-devel libxml2 chromium rpm-build systemd-rpm-macros strace dwz
			util-linux procps-ng golang elfutils-debuginfod python3 python3-devel)
		command -v node >/dev/null || REQUIRED+=(nodejs)
	fi
	is_installed() { rpm -q "$1" >/dev/null 2>&1; }
	;;
*)
	REQUIRED=() OPTIONAL=()
	is_installed() { return 0; }
	;;
esac

missing_of() {
	local p
	for p; do
		is_installed "$p" || printf '%s\n' "$p"
	done
}

# A bpftool that runs: Debian's is in /usr/sbin (not in a user's PATH); on
# Ubuntu /usr/sbin/bpftool is a wrapper that wants linux-tools for the running
# kernel, and the real binary may sit under /usr/lib/linux-tools*/ instead.
find_bpftool() {
	local b
	for b in "$(command -v bpftool || true)" /usr/sbin/bpftool /sbin/bpftool \
		/usr/lib/linux-tools/*/bpftool /usr/lib/linux-tools-*/bpftool; do
		[[ -n $b && -x $b ]] && "$b" version >/dev/null 2>&1 && {
			echo "$b"
			return 0
		}
	done
	return 1
}

# --- install what is missing ---------------------------------------------------
step "checking build dependencies ($family)"
mapfile -t missing < <(missing_of "${REQUIRED[@]}")
mapfile -t missing_opt < <(missing_of "${OPTIONAL[@]}")
need_ubuntu_tools=0
if [[ $family == ubuntu ]] && ! find_bpftool >/dev/null; then
	need_ubuntu_tools=1
fi

if [[ ${#missing[@]} -gt 0 || ${#missing_opt[@]} -gt 0 || $need_ubuntu_tools -eq 1 ]]; then
	case $family in
	debian | ubuntu)
		export DEBIAN_FRONTEND=noninteractive
		step "apt-get update"
		as_root apt-get -q update >/dev/null || die "apt-get update failed"
		if [[ ${#missing[@]} -gt 0 ]]; then
			step "apt-get install ${missing[*]}"
			as_root apt-get -q -y install --no-install-recommends "${missing[@]}" >/dev/null ||
				die "apt-get install ${missing[*]} failed"
		fi
		if [[ $need_ubuntu_tools -eq 1 ]]; then
			# bpftool (and perf) ship in linux-tools; for the running kernel if
			# it has a package (not so in containers), else the generic ones.
			step "apt-get install linux-tools (bpftool) for $(uname -r)"
			as_root apt-get -q -y install --no-install-recommends linux-tools-common \
				"linux-tools-$(uname -r)" >/dev/null 2>&1 ||
				as_root apt-get -q -y install --no-install-recommends linux-tools-common \
					linux-tools-generic >/dev/null ||
				true
		fi
		if [[ ${#missing_opt[@]} -gt 0 ]]; then
			step "apt-get install ${missing_opt[*]} (optional: for the benchmark)"
			as_root apt-get -q -y install --no-install-recommends "${missing_opt[@]}" >/dev/null ||
				warn "could not install ${missing_opt[*]}: tests/bench will skip"
		fi
		;;
	fedora)
		if [[ ${#missing[@]} -gt 0 ]]; then
			step "dnf install ${missing[*]}"
			as_root dnf -q -y install "${missing[@]}" || die "dnf install ${missing[*]} failed"
		fi
		if [[ ${#missing_opt[@]} -gt 0 ]]; then
			step "dnf install ${missing_opt[*]} (optional: for the benchmark)"
			as_root dnf -q -y install "${missing_opt[@]}" ||
				warn "could not install ${missing_opt[*]}: tests/bench will skip"
		fi
		;;
	esac
fi

# --- check that it all worked, whatever the package manager said ------------------
mapfile -t still < <(missing_of "${REQUIRED[@]}")
[[ ${#still[@]} -eq 0 ]] || die "packages still missing after installing: ${still[*]}"
mapfile -t still < <(missing_of "${OPTIONAL[@]}")
[[ ${#still[@]} -eq 0 ]] || warn "optional packages missing: ${still[*]} (tests/bench will skip)"

for tool in cmake cc clang pkg-config; do
	command -v "$tool" >/dev/null || die "$tool not found in PATH"
done
BPFTOOL=$(find_bpftool) || die "no working bpftool (Debian: apt-get install bpftool; Ubuntu: linux-tools-\$(uname -r))"
modules=(libbpf libelf libdw liblzma libprotobuf-c zlib libmicrohttpd libcurl libdebuginfod)
[[ $want_tests -eq 1 ]] && modules+=(cmocka)
for module in "${modules[@]}"; do
	pkg-config --exists "$module" || die "pkg-config cannot find $module"
done
command -v protoc-c >/dev/null || die "no protoc-c (Debian: apt-get install protobuf-c-compiler)"

# --- configure and build ----------------------------------------------------------
werror=OFF
case ${CI:-} in '' | 0 | false) ;; *) werror=ON ;; esac
[[ ${FLAMED_WERROR:-0} == 1 ]] && werror=ON

# The tests (their fixture programs, fuzz targets and unit tests are most of
# the build) only with --test: the first line of the README stays quick.
tests=OFF
[[ $want_tests -eq 1 ]] && tests=ON
step "configuring build/ (FLAMED_WERROR=$werror, FLAMED_TESTS=$tests)"
mkdir -p build
if ! cmake -S . -B build -DFLAMED_WERROR="$werror" -DFLAMED_TESTS="$tests" -DBPFTOOL="$BPFTOOL" \
	>build/bootstrap-configure.log 2>&1; then
	cat build/bootstrap-configure.log >&2
	die "cmake configure failed (log: build/bootstrap-configure.log)"
fi
step "building with $(nproc) jobs"
cmake --build build -j"$(nproc)"
step "built build/flamed"
