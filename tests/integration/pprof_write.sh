#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# pprof out: what `flamed record -o x.pb.gz` and `flamed convert` write is read
# by Debian's `go tool pprof` (the reference reader) with the same samples as
# the folded stacks: totals equal, the same function names, inlined frames as
# inline lines of one location, build-ids on the mappings, the mangled names
# beside the demangled ones, comm/pid/tid labels. And folded -> pprof ->
# folded gives back the very same bytes.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
command -v go >/dev/null || skip "no go (Debian: apt-get install golang-go): go tool pprof reads what flamed writes"
export FIXTURE_CLOCK=cpu
# go tool pprof wants a home for its cache; none of it is kept.
export HOME=$T/home GOCACHE=$T/gocache GOPATH=$T/gopath GOTOOLCHAIN=local PPROF_TMPDIR=$T/pprof
mkdir -p "$HOME" "$PPROF_TMPDIR"

# pprof FILE ARGS...: go tool pprof, with no symbolization of its own (what
# flamed named is what is checked) and its output in $T/pprof.out.
pprof() {
	local f=$1
	shift
	go tool pprof -symbolize=none "$@" "$f" >"$T/pprof.out" 2>"$T/pprof.err" ||
		fail "go tool pprof $* $f failed: $(tail -n 3 "$T/pprof.err")"
}

# pprof_total: the sum of the first value of every sample in `-raw` output.
pprof_total() {
	awk '/^Samples:/ { on = 1; next } /^Locations/ { on = 0 }
		on && $0 ~ /^ +[0-9]+[ 0-9]*:/ { n += $1 + 0 } END { printf "%.0f\n", n }' "$T/pprof.out"
}

# --- record -o x.pb.gz: inlined frames, build-id, labels ---------------------
run_flamed inl record -F 999 -o "$T/inl.pb.gz" -- "$FIXTURES/inline_chain" 1
expect_rc 0
[[ $(head -c 2 "$T/inl.pb.gz" | od -An -tx1 | tr -d ' ') == 1f8b ]] || fail "inl.pb.gz is not gzipped"
samples=$(summary_samples "$T/inl.err")
pprof "$T/inl.pb.gz" -raw
total=$(pprof_total)
[[ $total -eq $samples ]] || fail "go tool pprof counts $total samples, flamed recorded $samples"
grep -q '^samples/count\[dflt\] cpu/nanoseconds' "$T/pprof.out" || fail "sample types are not samples/count and cpu/nanoseconds: $(grep -A1 '^Samples' "$T/pprof.out")"
grep -q '^Period: 1001001$' "$T/pprof.out" || fail "the period is not 1e9/999 ns: $(grep '^Period' "$T/pprof.out")"
grep -q '^Duration: ' "$T/pprof.out" || fail "no duration"
grep -q 'comm:\[inline_chain\]' "$T/pprof.out" || fail "no comm label"
bid=$(readelf -n "$FIXTURES/inline_chain" | awk '/Build ID/ { print $3 }')
[[ -n $bid ]] || fail "the fixture has no build-id"
grep -q "$FIXTURES/inline_chain .*$bid\|$bid.*inline_chain" "$T/pprof.out" ||
	grep -A20 '^Mappings' "$T/pprof.out" | grep -q "$bid" || fail "the mapping of inline_chain has no build-id $bid"
grep -A3 '^Mappings' "$T/pprof.out" | grep -q '\[kernel.kallsyms\]' ||
	grep -q '\[kernel.kallsyms\]' "$T/pprof.out" || fail "no kernel mapping"
# Functions have their files and start lines from DWARF (DW_AT_decl_line).
src=$SRCDIR/tests/fixtures/progs/inline_chain.c
# decl FN: the line of FN's definition (a line that starts, not a comment or a call).
decl() { grep -nE "^[^ /*].*[ *]$1\(" "$src" | head -1 | cut -d: -f1; }
for fn in inline_a inline_outer; do
	want=$(decl "$fn")
	[[ -n $want ]] || fail "no definition of $fn in $src"
	grep -Eq " $fn [^ ]*inline_chain\.c:[0-9]+ s=$want\$" "$T/pprof.out" ||
		fail "$fn does not start at inline_chain.c:$want: $(grep -m 1 " $fn " "$T/pprof.out")"
done
# Inlined frames: lines of one location, shown "(inline)" by -traces.
pprof "$T/inl.pb.gz" -traces
awk '/inline_c \(inline\)/ { c = NR } /inline_b \(inline\)/ && c && NR == c + 1 { b = NR }
	/inline_a \(inline\)/ && b && NR == b + 1 { a = NR } /inline_outer$/ && a && NR == a + 1 { ok = 1 }
	END { exit !ok }' "$T/pprof.out" || fail "inline_c, inline_b, inline_a are not inline frames of inline_outer: $(grep -m 5 inline "$T/pprof.out")"
# The names go tool pprof shows are flamed's (less the _[k]/_[i] suffixes, and the root comm, a
# label); an address without a symbol it calls <unknown>, flamed [module] (the mapping's file).
pprof "$T/inl.pb.gz" -top -nodecount=100000 -nodefraction=0 -edgefraction=0
awk 'f { $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); print } / flat  flat%/ { f = 1 }' "$T/pprof.out" |
	sed 's/ (inline)$//' | grep -vxF '<unknown>' | sort -u >"$T/top.names"
"$FLAMED" convert "$T/inl.pb.gz" -o "$T/inl.folded" 2>"$T/conv.err" || fail "convert: $(cat "$T/conv.err")"
check_folded "$T/inl.folded"
[[ $(total_count "$T/inl.folded") -eq $samples ]] || fail "the pprof read back has $(total_count "$T/inl.folded") samples, not $samples"
grep -qF ';main;inline_outer;inline_a_[i];inline_b_[i];inline_c_[i] ' "$T/inl.folded" ||
	fail "read back, the inlined frames are not _[i] frames: $(head -n 3 "$T/inl.folded")"
sed -E 's/ [0-9]+$//' "$T/inl.folded" | tr ';' '\n' | awk 'NR > 0' | sed -E 's/_\[[kij]\]$//' | sort -u >"$T/folded.names"
missing=$(comm -23 "$T/top.names" "$T/folded.names" | head -n 5)
[[ -z $missing ]] || fail "go tool pprof shows names the folded stacks lack: $missing"
note "go tool pprof: $total samples, $(wc -l <"$T/top.names") functions, build-id $bid"

# --- C++: the demangled name shown, the mangled one kept -------------------
if [[ -x $FIXTURES/cxx_templates ]]; then
	run_flamed cxx record -F 999 --per-thread -o "$T/cxx.pb.gz" -- "$FIXTURES/cxx_templates" 1
	expect_rc 0
	pprof "$T/cxx.pb.gz" -traces
	grep -q 'flamed::work::spin<long>' "$T/pprof.out" || fail "no demangled flamed::work::spin<long>"
	grep -Eq 'pid: +[0-9]' "$T/pprof.out" && grep -Eq 'tid: +[0-9]' "$T/pprof.out" || fail "--per-thread: no pid and tid labels"
	gzip -dc "$T/cxx.pb.gz" | grep -qa '_ZN6flamed4work4spinIlEET_S2_' || fail "the mangled name is not kept as the system name"
	"$FLAMED" convert "$T/cxx.pb.gz" -o "$T/cxx.folded" 2>"$T/conv.err" || fail "convert: $(cat "$T/conv.err")"
	root=$(root_frames "$T/cxx.folded" | grep -m 1 '^cxx_templates-')
	[[ $root =~ ^cxx_templates-[0-9]+/[0-9]+$ ]] || fail "read back, the root frame is not comm-PID/TID: $root"
fi

# --- folded -> pprof -> folded: the same bytes --------------------------------
# Every process while two fixtures burn CPU: stacks of many programs and the kernel.
bg "$FIXTURES/cxx_templates" 4
bg "$FIXTURES/inline_chain" 4
run_flamed all record -a -F 499 -d 2 -o "$T/all.folded"
expect_rc 0
check_folded "$T/all.folded"
run_flamed conv1 convert "$T/all.folded" -o "$T/all.pb.gz"
expect_rc 0
run_flamed conv2 convert "$T/all.pb.gz" -o "$T/back.folded"
expect_rc 0
cmp -s "$T/all.folded" "$T/back.folded" || fail "folded -> pprof -> folded changed the stacks: $(diff "$T/all.folded" "$T/back.folded" | head -n 4)"
pprof "$T/all.pb.gz" -raw
[[ $(pprof_total) -eq $(total_count "$T/all.folded") ]] || fail "go tool pprof reads $(pprof_total) samples of $(total_count "$T/all.folded")"
# Frames of the folded file, inlined ones as inline lines: from the stdin, with -F.
"$FLAMED" convert -F 499 <"$T/all.folded" >"$T/stdin.pb.gz" 2>"$T/conv.err" || fail "convert from stdin: $(cat "$T/conv.err")"
pprof "$T/stdin.pb.gz" -raw
grep -q '^samples/count\[dflt\] cpu/nanoseconds' "$T/pprof.out" || fail "convert -F: no cpu/nanoseconds"
# A hostile name: ';' cannot split a frame, control bytes are replaced.
printf 'a;b\x01c;d 3\nx;<y>&"z" 2\n' >"$T/odd.folded"
run_flamed odd convert "$T/odd.folded" -o "$T/odd.pb.gz"
expect_rc 0
run_flamed oddback convert "$T/odd.pb.gz" --format folded
expect_rc 0
printf 'a;b?c;d 3\nx;<y>&"z" 2\n' | cmp -s - "$T/oddback.out" || fail "hostile names read back as: $(cat -A "$T/oddback.out")"

# --- the daemon: formats = pprof, beside folded; retention keeps both --------
mkdir -p "$T/dstate"
printf 'interval = 1s\noutput_dir = %s\nformats = folded, pprof\nkeep_files = 2\n' "$T/dstate" >"$T/d.conf"
bg "$FIXTURES/cxx_templates" 5
# SIGTERM ends it as systemd would: a last snapshot, exit 0.
TIMEOUT=30 run_cmd daemon bash -c '"$0" daemon --config "$1" & p=$!; sleep 4.5; kill -TERM $p; wait $p' \
	"$FLAMED" "$T/d.conf"
expect_rc 0
grep -q '(folded, pprof)' "$T/daemon.err" || fail "no snapshot says it wrote folded and pprof: $(head -n 3 "$T/daemon.err")"
npb=$(find "$T/dstate" -maxdepth 1 -type f -name '*.pb.gz' | wc -l)
nfo=$(find "$T/dstate" -maxdepth 1 -type f -name '*.folded' | wc -l)
[[ $npb -eq 2 && $nfo -eq 2 ]] || fail "keep_files = 2 left $npb pprof and $nfo folded snapshots: $(ls "$T/dstate")"
[[ -L $T/dstate/latest.pb.gz ]] || fail "no latest.pb.gz link"
for f in $(find "$T/dstate" -maxdepth 1 -type f -name '*.pb.gz'); do
	base=${f%.pb.gz}
	pprof "$f" -raw
	[[ $(pprof_total) -eq $(total_count "$base.folded") ]] ||
		fail "$(basename "$f"): go tool pprof reads $(pprof_total) samples, the folded snapshot has $(total_count "$base.folded")"
	# The profile's time is the interval's start, the snapshot's name.
	stamp=$(basename "$base" | sed -E 's/^(....-..-..)T(..)-(..)-(..)Z.*/\1 \2:\3:\4/')
	grep -q "^Time: $stamp" "$T/pprof.out" || fail "$(basename "$f"): $(grep '^Time' "$T/pprof.out"), not $stamp"
	"$FLAMED" convert "$f" -o "$T/snap.folded" 2>"$T/conv.err" || fail "convert $f: $(cat "$T/conv.err")"
	cmp -s "$T/snap.folded" "$base.folded" || fail "$(basename "$f") does not hold the folded snapshot's stacks: $(diff "$T/snap.folded" "$base.folded" | head -n 4)"
done

# --- the other names of the format: .pprof, --format pprof to stdout ------------
run_flamed dotpprof record -F 999 -o "$T/x.pprof" -- "$FIXTURES/inline_chain" 0.3
expect_rc 0
[[ $(head -c 2 "$T/x.pprof" | od -An -tx1 | tr -d ' ') == 1f8b ]] || fail "-o x.pprof did not write gzipped pprof"
run_flamed stdout record -F 999 --format pprof -o - -- "$FIXTURES/inline_chain" 0.3
expect_rc 0
pprof "$T/stdout.out" -raw
[[ $(pprof_total) -eq $(summary_samples "$T/stdout.err") ]] || fail "--format pprof -o -: $(pprof_total) samples read, $(summary_samples "$T/stdout.err") recorded"

# --- errors: one line, non-zero ------------------------------------------------
run_flamed badfmt record -a -d 1 -o "$T/x.json"
[[ $RC -ne 0 && $(wc -l <"$T/badfmt.err") -eq 1 ]] || fail "-o x.json: exit $RC, $(cat "$T/badfmt.err")"
head -c 100 "$T/all.pb.gz" >"$T/cut.pb.gz"
run_flamed cut convert "$T/cut.pb.gz"
[[ $RC -ne 0 ]] && grep -q 'cut.pb.gz' "$T/cut.err" || fail "a cut pprof file: exit $RC, $(cat "$T/cut.err")"
run_flamed badtype convert --sample-type alloc_space "$T/all.pb.gz"
[[ $RC -ne 0 ]] && grep -q 'it has: samples' "$T/badtype.err" || fail "an unknown sample type: exit $RC, $(cat "$T/badtype.err")"

pass "pprof: go tool pprof reads record's, the daemon's and convert's output (totals, names, inline frames, build-ids, labels); folded round trip exact"
