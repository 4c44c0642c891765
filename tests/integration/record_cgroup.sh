#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# flamed record --per-cgroup and --cgroup, with the BPF and the ring backends:
# two transient services (cgroup v2 directories) run CPU burners, one in
# a.service and two in b.service. --per-cgroup must give each service the
# share of samples that the cgroups' own cpu.stat usage_usec says it had over
# the same time (within 3 points); --cgroup must keep only the samples of the
# cgroup (and its descendants); a cgroup that is not there is one line and a
# usage error. The cgroups are removed however the test ends.
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$SCRIPT_DIR/lib_restore.sh"
source "$SCRIPT_DIR/lib.sh"

need_root_and_perf

CGROOT=
for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	if [[ $(stat -f -c %T "$d" 2>/dev/null) == cgroup2fs ]]; then
		CGROOT=$d
		break
	fi
done
[[ -n $CGROOT ]] || skip "no cgroup v2 file system at /sys/fs/cgroup or /sys/fs/cgroup/unified"

SLICE=flamed-test-$$.slice
CG=$CGROOT/$SLICE
# Every task in them goes first (cgroup.kill where the kernel has it), then
# the children before the parent. Run from the EXIT trap, or by the guard
# should the test be killed.
restore_on_exit "for c in '$CG'/a.service '$CG'/b.service; do
	[[ -e \$c/cgroup.kill ]] && echo 1 >\$c/cgroup.kill
	for p in \$(cat \$c/cgroup.procs 2>/dev/null); do kill -KILL \$p; done
done
for i in 1 2 3 4 5 6 7 8 9 10; do
	rmdir '$CG'/a.service '$CG'/b.service 2>/dev/null
	rmdir '$CG' 2>/dev/null && break
	sleep 0.2
done"
mkdir "$CG" "$CG/a.service" "$CG/b.service" || skip "cannot create cgroups under $CGROOT"

# A burner joins its cgroup before it burns, under a name of its own.
burner() {
	bg bash -c "echo \$\$ >'$CG/$1/cgroup.procs' && printf '%s' '$2' >/proc/self/comm && while :; do :; done"
}
burner a.service burner_a
burner b.service burner_b1
burner b.service burner_b2
wait_until 5 "the burners in their cgroups" \
	bash -c "[[ \$(wc -l <'$CG/a.service/cgroup.procs') -eq 1 && \$(wc -l <'$CG/b.service/cgroup.procs') -eq 2 ]]"

usage_usec() {
	awk '$1 == "usage_usec" { print $2 }' "$CG/$1/cpu.stat"
}

# sum_by_root FILE: "COUNT ROOT" per root frame of a folded file.
sum_by_root() {
	awk '{ n = $NF; split($1, f, ";"); c[f[1]] += n } END { for (k in c) print c[k], k }' "$1"
}

# shares NAME ARGS...: --per-cgroup over 3 s; a.service's share of the two
# services' samples against its share of their CPU time by cpu.stat.
shares() {
	local name=$1 a0 b0 a1 b1
	shift
	bg_flamed "$name" record -a --per-cgroup -F 999 -d 3 -v -o "$T/$name.folded" "$@"
	wait_sampling "$name"
	a0=$(usage_usec a.service)
	b0=$(usage_usec b.service)
	wait_flamed "$name"
	a1=$(usage_usec a.service)
	b1=$(usage_usec b.service)
	sum_by_root "$T/$name.folded" >"$T/$name.roots"
	awk -v da=$((a1 - a0)) -v db=$((b1 - b0)) -v who="$name" '
		$2 == "a.service" { sa = $1 } $2 == "b.service" { sb = $1 }
		END {
			if (sa + sb < 500) { printf "%s: only %d samples of the services\n", who, sa + sb; exit 1 }
			want = da / (da + db); got = sa / (sa + sb)
			printf "-- %s: a.service %.1f%% of the samples (%d of %d), %.1f%% of the CPU time by cpu.stat\n", who, 100 * got, sa, sa + sb, 100 * want
			d = got - want; if (d < 0) d = -d
			if (d > 0.03) { printf "%s: shares differ by %.1f points\n", who, 100 * d; exit 1 }
		}' "$T/$name.roots" || fail "$name: --per-cgroup shares: $(cat "$T/$name.roots")"
	# The service frame comes before the comm frame.
	grep -q '^a\.service;burner_a;' "$T/$name.folded" || fail "$name: no a.service;burner_a stacks"
	grep -q '^b\.service;burner_b[12];' "$T/$name.folded" || fail "$name: no b.service;burner_b stacks"
	! grep -q '^a\.service;burner_b\|^b\.service;burner_a' "$T/$name.folded" ||
		fail "$name: a burner attributed to the other service"
}

# only NAME WANT ARGS...: every sample's root frame (with --per-cgroup) is WANT.
only() {
	local name=$1 want=$2
	shift 2
	run_cmd "$name" "$FLAMED" record -a -d 2 -o "$T/$name.folded" "$@"
	[[ $RC -eq 0 ]] || fail "$name: exit $RC"
	sum_by_root "$T/$name.folded" >"$T/$name.roots"
	note "$name: $(tr '\n' ' ' <"$T/$name.roots")"
	[[ -s $T/$name.roots ]] || fail "$name: no samples"
	awk -v want="$want" '$2 !~ want { exit 1 }' "$T/$name.roots" ||
		fail "$name: samples outside $want: $(cat "$T/$name.roots")"
}

for backend in bpf ring; do
	args=()
	what="bpf backend"
	if [[ $backend == ring ]]; then
		args=(--no-bpf)
		what="ring buffer backend"
	fi
	shares "shares-$backend" "${args[@]}"
	grep -q "$what" "$T/shares-$backend.err" || fail "shares-$backend: not the $what"

	# Only a.service; without --per-cgroup the root frame is the comm.
	only "a-$backend" '^a\.service$' --per-cgroup --cgroup "$SLICE/a.service" "${args[@]}"
	grep -q "^a\.service;burner_a;" "$T/a-$backend.folded" || fail "a-$backend: no burner_a"
	only "a-comm-$backend" '^burner_a$' --cgroup "/$SLICE/a.service" "${args[@]}"
	# A slice holds its services: descendants are sampled too, the rest is not.
	only "slice-$backend" '^(a|b)\.service$' --per-cgroup --cgroup "$CG" "${args[@]}"
	grep -q "^b\.service;" "$T/slice-$backend.folded" || fail "slice-$backend: no b.service"
done

# --call-graph dwarf: the ring buffer with stack copies; the cgroup is the record's last word.
only a-dwarf '^a\.service$' --call-graph dwarf --per-cgroup --cgroup "$SLICE/a.service"
grep -q "^a\.service;burner_a;" "$T/a-dwarf.folded" || fail "a-dwarf: no burner_a"

# A cgroup that is not there: one line, and the usage error's exit code.
run_cmd bad "$FLAMED" record -a -d 1 --cgroup "$SLICE/nope.service" -o "$T/bad.folded"
[[ $RC -eq 2 ]] || fail "--cgroup of no cgroup: exit $RC, not 2"
[[ $(wc -l <"$T/bad.err") -eq 1 ]] || fail "--cgroup of no cgroup: not one line: $(cat "$T/bad.err")"
grep -q "no cgroup '$SLICE/nope.service' under $CGROOT" "$T/bad.err" ||
	fail "--cgroup of no cgroup: $(cat "$T/bad.err")"
run_cmd dotdot "$FLAMED" record -a -d 1 --cgroup "$SLICE/../.." -o "$T/dotdot.folded"
[[ $RC -eq 2 && $(wc -l <"$T/dotdot.err") -eq 1 ]] ||
	fail "--cgroup with '..': exit $RC: $(cat "$T/dotdot.err")"

# The daemon: per_cgroup and cgroup keys, and the cgroup a pprof label.
mkdir -p "$T/dstate"
printf 'interval = 1s\noutput_dir = %s\nformats = folded, pprof\nper_cgroup = yes\ncgroup = %s\n' \
	"$T/dstate" "$SLICE/a.service" >"$T/d.conf"
TIMEOUT=30 run_cmd daemon bash -c '"$0" daemon --config "$1" & p=$!; sleep 3.5; kill -TERM $p; wait $p' \
	"$FLAMED" "$T/d.conf"
[[ $RC -eq 0 ]] || fail "the daemon with per_cgroup and cgroup: exit $RC: $(tail -n 3 "$T/daemon.err")"
cat "$T"/dstate/*.folded >"$T/daemon.folded"
[[ $(total_count "$T/daemon.folded") -gt 0 ]] || fail "the daemon's snapshots hold no sample of a.service"
bad=$(root_frames "$T/daemon.folded" | sort -u | grep -vx 'a\.service' || true)
[[ -z $bad ]] || fail "the daemon's cgroup = a.service kept other root frames: $bad"
grep -q '^a\.service;burner_a;' "$T/daemon.folded" || fail "the daemon's snapshots: no a.service;burner_a"
latest=$(readlink "$T/dstate/latest.pb.gz")
gzip -dc "$T/dstate/$latest" | grep -qa 'cgroup' || fail "$latest: no cgroup label"
"$FLAMED" convert "$T/dstate/$latest" -o "$T/latest.folded" 2>"$T/conv.err" || fail "convert: $(cat "$T/conv.err")"
cmp -s "$T/latest.folded" "$T/dstate/${latest%.pb.gz}.folded" ||
	fail "the pprof snapshot read back differs from the folded one: $(diff "$T/latest.folded" "$T/dstate/${latest%.pb.gz}.folded" | head -n 4)"
# A cgroup that is not there: the daemon does not start, in one line.
printf 'output_dir = %s\ncgroup = %s\n' "$T/dstate" "$SLICE/nope.service" >"$T/dbad.conf"
run_cmd dbad "$FLAMED" daemon --config "$T/dbad.conf"
[[ $RC -ne 0 ]] && grep -q "no cgroup" "$T/dbad.err" || fail "the daemon with a missing cgroup: exit $RC: $(cat "$T/dbad.err")"

pass "--per-cgroup shares match cpu.stat and --cgroup keeps only its cgroup, BPF and ring backends, and in the daemon"
