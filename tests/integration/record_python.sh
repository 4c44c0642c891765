#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Python frames (issue 18): Debian's CPython 3.11 running tests/fixtures/py_work.py,
# whose functions, their def lines and the 2:1 split of hot_two and hot_one are
# known (the script measures the split's CPU time too). In every part the Python
# functions replace the interpreter loop's native frames: the samples with
# Python frames and the named leaves are counted, the split and the main-to-leaf
# Python chains checked (tests/integration/py_check.py):
#   (a) -- python3 script: the split, and the chains whole;
#   (b) deep recursion (64 Python frames), two threads, an asyncio loop,
#       a subinterpreter's function;
#   (c) -p PID and -a, attached to a python3 already running;
#   (d) Python started after the recording did: by exec, and by a program that
#       loads libpython (the embedding fixture);
#   (e) the other call graphs: frame pointers, which Debian's python3 does
#       not keep (the Python frames still whole); --call-graph dwarf and
#       --no-bpf (the ring buffer: a BPF program on its events reads the
#       Python frames, joined with the samples in user space);
#   (f) --no-python, and a CPython of a version flamed has no offsets for (a
#       copy of python3.11 saying it is 3.15): native frames and one line;
#   (g) pprof: go tool pprof reads the Python functions with their files;
#   (h) the daemon: its snapshots have them, and none with python = no;
#   (i) CPython 3.12 and 3.13 where present (not Debian 12's: pyenv's, say,
#       or FLAMED_TEST_PYTHONS="path ..."): the split and the chains.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
need_bpf

PY=/usr/bin/python3
[[ -x $PY && $("$PY" -c "import sys; print(sys.version_info[:2] == (3, 11))") == True ]] ||
	skip "needs Debian 12's python3, CPython 3.11 (apt-get install python3)"
WORK=$SRCDIR/tests/fixtures/py_work.py
CHECK=(python3 "$SRCDIR/tests/integration/py_check.py")
# The functions' def lines, as the script itself says them.
"$PY" "$WORK" defs >"$T/defs" || fail "py_work.py defs: its table is out of date"
line_of() { awk -v f="$1" '$1 == f { print $2 }' "$T/defs"; }

# check NAME FOLDED ARGS...: py_check.py's metrics into the log, its verdict into ours.
check() {
	local name=$1 folded=$2
	shift 2
	"${CHECK[@]}" "$folded" "$@" >"$T/$name.check" 2>&1 || {
		cat "$T/$name.check" >&2
		fail "$name: $(tail -n 1 "$T/$name.check")"
	}
	note "$name: $(grep -E '^(samples|py_share|named_leaf_share|split|chain|evalframe_left) ' "$T/$name.check" | tr '\n' ' ')"
}

# A process's first samples, before flamed has read its mappings (every 100 ms
# at most), have no Python frames yet: at most 60 of them.
COMMON=(--min-samples 300 --min-py-share 95 --min-named-leaf 95 --max-evalframe-left 60)

# The split is checked against the CPU time py_work.py measured of its two
# functions itself ($PY_WORK_TIMES), within 3 points: their work is 2:1, but
# not their time to the point on a busy machine.
# split_of NAME: sets SPLIT, py_check.py's arguments for the split of run NAME.
split_of() {
	local times=$T/$1.times pct
	[[ -s $times ]] || fail "$1: py_work.py wrote no CPU times to $times"
	pct=$(awk '$1 == "hot_two" { a = $2 } $1 == "hot_one" { b = $2 }
		END { if (a + b == 0) exit 1; printf "%.2f\n", 100 * a / (a + b) }' "$times") ||
		fail "$1: no CPU times of hot_two and hot_one in $times"
	note "$1: hot_two took $pct% of the two's CPU time, by its own clock"
	SPLIT=(--split "hot_two,hot_one" --expect-split "$pct" --tolerance 3)
}

# (a) The split and the chains, each Python frame named with its def line.
PY_WORK_TIMES=$T/split.times run_flamed split record -F 999 -o "$T/split.folded" -- \
	"$PY" "$WORK" split 4
expect_rc 0
check_folded "$T/split.folded"
split_of split
check split "$T/split.folded" "${COMMON[@]}" "${SPLIT[@]}" --chain 'main;hot_two' --min-chain 99
grep -qF ";hot_two ($WORK:$(line_of hot_two))_[p]" "$T/split.folded" ||
	fail "no frame 'hot_two ($WORK:$(line_of hot_two))_[p]' in the profile"
grep -q 'samples with Python frames (100.0% with their leaf named)' "$T/split.err" ||
	fail "no summary line of the Python frames"
grep -m 1 'samples with Python frames' "$T/split.err"

# (b) Recursion, threads, asyncio, a subinterpreter.
run_flamed recurse record -F 499 -o "$T/recurse.folded" -- "$PY" "$WORK" recurse 3
expect_rc 0
check recurse "$T/recurse.folded" "${COMMON[@]}" --chain 'recurse_main;recurse*60;leaf_burn' \
	--min-chain 99
run_flamed threads record -F 499 -o "$T/threads.folded" -- "$PY" "$WORK" threads 3
expect_rc 0
check threads "$T/threads.folded" "${COMMON[@]}" --require thread_a_loop --require thread_b_loop \
	--chain 'Thread.run;thread_a_loop' --min-chain 99
check threads-b "$T/threads.folded" --chain 'Thread.run;thread_b_loop' --min-chain 99
run_flamed asyncio record -F 499 -o "$T/asyncio.folded" -- "$PY" "$WORK" asyncio 3
expect_rc 0
# Both tasks' coroutines under the loop, each awaiting async_burn: the two chains are every sample of it.
check asyncio "$T/asyncio.folded" "${COMMON[@]}" \
	--chain 'Handle._run;coro_a;async_burn'
check asyncio-b "$T/asyncio.folded" --chain 'Handle._run;coro_b;async_burn'
a=$(awk '$1 == "chain" { print $2 }' "$T/asyncio.check")
b=$(awk '$1 == "chain" { print $2 }' "$T/asyncio-b.check")
expect_between "$(awk -v a="$a" -v b="$b" 'BEGIN { print a + b }')" 99 100.01 \
	"asyncio: samples of async_burn under coro_a or coro_b, under the loop (%)"
expect_between "$a" 25 75 "asyncio: of them under coro_a (%)"
cat >"$T/subinterp.py" <<'EOF'
import _xxsubinterpreters as interpreters
import time

CODE = """
import time
def in_subinterpreter():
    x = 0
    end = time.monotonic() + 2
    while time.monotonic() < end:
        for i in range(20000):
            x = (x * 31 + i) & 0xffff
in_subinterpreter()
"""

def main_side():
    interpreters.run_string(interpreters.create(), CODE)

main_side()
EOF
run_flamed subinterp record -F 499 -o "$T/subinterp.folded" -- "$PY" "$T/subinterp.py"
expect_rc 0
# The subinterpreter's thread state is the GIL holder's: its frames take the
# place of its own loop frame (under PyRun_StringFlags); the main
# interpreter's (main_side) are another thread state of the same thread,
# not shown, and not mistaken for the subinterpreter's.
check subinterp "$T/subinterp.folded" --min-samples 300 --min-py-share 95 --min-named-leaf 95 \
	--chain '<module>;in_subinterpreter' --min-chain 95
in_sub=$(count_matching "$T/subinterp.folded" 'PyEval_EvalCode;<module> (<string>:1)_[p];in_subinterpreter (<string>:3)_[p]')
expect_between "$(percent "$in_sub" "$(total_count "$T/subinterp.folded")")" 90 100 \
	"subinterpreter: samples in its function, under the call that runs it (%)"

# (c) Attached to a process already running: -p, and the whole machine.
# Its CPU times come when it is killed (SIGTERM), the recordings done.
PY_WORK_TIMES=$T/attached.times bg "$PY" "$WORK" split 12
PYPID=$BG_PID
wait_comm "$PYPID" python3
sleep 0.5
run_flamed pid record -F 999 -d 3 -p "$PYPID" -o "$T/pid.folded"
expect_rc 0
run_flamed all record -a -F 999 -d 3 -o "$T/all.folded"
expect_rc 0
kill "$PYPID" 2>/dev/null || true
wait "$PYPID" 2>/dev/null || true
split_of attached
check pid "$T/pid.folded" "${COMMON[@]}" "${SPLIT[@]}" --chain 'main;hot_two' --min-chain 99
check all "$T/all.folded" "${COMMON[@]}" "${SPLIT[@]}" --chain 'main;hot_two' --min-chain 99

# (d) Python after the recording started: an exec, and libpython loaded by a C program.
PY_WORK_TIMES=$T/exec.times run_flamed exec record -F 999 -o "$T/exec.folded" -- bash -c \
	"$FIXTURES/chains 0.5 >/dev/null; exec $PY $WORK split 3"
expect_rc 0
split_of exec
check exec "$T/exec.folded" --min-samples 300 --min-py-share 95 --min-named-leaf 95 \
	"${SPLIT[@]}" --chain 'main;hot_two' --min-chain 99
LIBPY=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR") + "/" + sysconfig.get_config_var("INSTSONAME"))')
if [[ -r $LIBPY ]]; then
	PY_WORK_TIMES=$T/embed.times run_flamed embed record -F 999 -o "$T/embed.folded" -- \
		"$FIXTURES/py_embed" "$LIBPY" 1 "$WORK" split 3
	expect_rc 0
	split_of embed
	# A third of its time is native work before Python is loaded.
	check embed "$T/embed.folded" --comm py_embed --min-samples 300 --min-named-leaf 95 \
		"${SPLIT[@]}" --chain 'main;hot_two' --min-chain 99 --require hot_two
	native=$(count_matching "$T/embed.folded" ';main;spin_until')
	[[ $native -gt 100 ]] || fail "embed: $native samples of its native start (spin_until)"
	# Frame pointers: nothing but Python's own ask tells flamed that the
	# process it was asked about before now maps libpython (no table is
	# wanted). Past the native start, samples without Python frames are few.
	run_flamed embed-fp record --call-graph fp -F 999 -o "$T/embed-fp.folded" -- \
		"$FIXTURES/py_embed" "$LIBPY" 1 "$WORK" split 3
	expect_rc 0
	grep '^py_embed;' "$T/embed-fp.folded" >"$T/embed-fp.own" || true
	rest=$(($(total_count "$T/embed-fp.own") - $(count_matching "$T/embed-fp.own" ';main;spin_until')))
	py=$(count_matching "$T/embed-fp.own" '_[p]')
	[[ $rest -gt 300 && $((py * 100)) -ge $((rest * 95)) ]] ||
		fail "embed, fp: Python frames in $py of the $rest samples past the native start (want 95%): libpython loaded after the first ask was not seen"
else
	note "no $LIBPY (libpython3.11, in python3.11-dev): the embedding part skipped"
fi

# (e) Frame pointers: Debian builds python3.11 without them. The Python frames
# come from the interpreter's memory, whole all the same.
PY_WORK_TIMES=$T/fp.times run_flamed fp record --call-graph fp -F 999 -o "$T/fp.folded" -- \
	"$PY" "$WORK" split 3
expect_rc 0
split_of fp
check fp "$T/fp.folded" --min-samples 300 --min-py-share 95 --min-named-leaf 95 \
	"${SPLIT[@]}" --chain 'main;hot_two' --min-chain 99

for mode in dwarf no-bpf; do
	opt=(--call-graph dwarf)
	[[ $mode == dwarf ]] || opt=(--no-bpf --call-graph fp)
	PY_WORK_TIMES=$T/$mode.times run_flamed "$mode" record "${opt[@]}" -F 999 \
		-o "$T/$mode.folded" -- "$PY" "$WORK" split 4
	expect_rc 0
	split_of "$mode"
	check "$mode" "$T/$mode.folded" "${COMMON[@]}" "${SPLIT[@]}" --chain 'main;hot_two' \
		--min-chain 99
	grep -q 'samples with Python frames' "$T/$mode.err" || fail "$mode: no Python summary line"
done
run_flamed dwarf-recurse record --call-graph dwarf -F 499 -o "$T/dwarf-recurse.folded" -- \
	"$PY" "$WORK" recurse 3
expect_rc 0
check dwarf-recurse "$T/dwarf-recurse.folded" "${COMMON[@]}" \
	--chain 'recurse_main;recurse*60;leaf_burn' --min-chain 99
bg "$PY" "$WORK" threads 10
PYPID=$BG_PID
wait_comm "$PYPID" python3
sleep 0.5
run_flamed dwarf-pid record --call-graph dwarf -F 499 -d 3 -p "$PYPID" -o "$T/dwarf-pid.folded"
expect_rc 0
check dwarf-pid "$T/dwarf-pid.folded" "${COMMON[@]}" --require thread_a_loop \
	--require thread_b_loop --chain 'Thread.run;thread_a_loop' --min-chain 99
kill "$PYPID" 2>/dev/null || true

# (f) Off, and a version flamed does not know.
run_flamed off record --no-python -F 499 -o "$T/off.folded" -- "$PY" "$WORK" split 2
expect_rc 0
! grep -q '_\[p\]' "$T/off.folded" || fail "--no-python: Python frames in the profile"
grep -q '_PyEval_EvalFrameDefault' "$T/off.folded" || fail "--no-python: no interpreter loop frame"
# A copy whose Py_Version says 3.15.0: flamed reads the version from the file.
cp "$PY" "$T/python3.15"
python3 - "$T/python3.15" <<'EOF' || fail "could not patch Py_Version in the copy"
import struct, sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
# ELF64 little-endian: section headers, then .dynsym/.dynstr for Py_Version.
shoff, = struct.unpack_from("<Q", data, 0x28)
shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
dynsym = next(s for s in secs if s[1] == 11)
strtab = secs[dynsym[6]]
for off in range(dynsym[4], dynsym[4] + dynsym[5], 24):
    name, info, other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, off)
    end = data.index(0, strtab[4] + name)
    if data[strtab[4] + name:end] == b"Py_Version":
        sec = secs[shndx]
        at = value - sec[3] + sec[4]
        struct.pack_into("<I", data, at, 0x030F00F0)
        open(path, "wb").write(data)
        sys.exit(0)
sys.exit(1)
EOF
chmod +x "$T/python3.15"
run_flamed unknown record -F 499 -o "$T/unknown.folded" -- "$T/python3.15" "$WORK" split 2
expect_rc 0
! grep -q '_\[p\]' "$T/unknown.folded" || fail "a CPython 3.15 read with 3.11's offsets"
grep -q '_PyEval_EvalFrameDefault' "$T/unknown.folded" || fail "3.15: no interpreter loop frame"
[[ $(grep -c 'is CPython 3.15.0, whose frames flamed cannot read' "$T/unknown.err") -eq 1 ]] ||
	fail "3.15: not one line saying the version is not known"
grep -m 1 'is CPython 3.15.0' "$T/unknown.err"

# (g) pprof, read by Debian's go tool pprof: Python functions are functions
# with their file and first line, in their place in the stack.
if command -v go >/dev/null; then
	export HOME=$T/home GOCACHE=$T/gocache GOPATH=$T/gopath GOTOOLCHAIN=local PPROF_TMPDIR=$T/pprof
	mkdir -p "$HOME" "$PPROF_TMPDIR"
	run_flamed pprof record -F 499 -o "$T/py.pb.gz" -- "$PY" "$WORK" split 2
	expect_rc 0
	go tool pprof -symbolize=none -traces "$T/py.pb.gz" >"$T/traces" 2>"$T/pprof.err" ||
		fail "go tool pprof -traces failed: $(tail -n 3 "$T/pprof.err")"
	# -traces lists each stack leaf first, one function a line (the first after its count).
	awk '{ f = $NF } prev == "hot_two" && f == "main" { n++ } { prev = f }
		END { exit !(n > 0) }' "$T/traces" || fail "pprof: no stack with hot_two called by main"
	go tool pprof -symbolize=none -raw "$T/py.pb.gz" >"$T/raw" 2>"$T/pprof.err" ||
		fail "go tool pprof -raw failed: $(tail -n 3 "$T/pprof.err")"
	grep -qF " hot_two $WORK:$(line_of hot_two) s=$(line_of hot_two)" "$T/raw" ||
		fail "pprof: no location of hot_two at $WORK:$(line_of hot_two)"
	note "pprof: hot_two under main, with its file"
else
	note "no go (golang-go): the pprof part skipped"
fi

# (h) The daemon, on a 1 s interval, with its configuration's default and with python = no.
bg "$PY" "$WORK" split 20
PYPID=$BG_PID
wait_comm "$PYPID" python3
for conf in default off; do
	: >"$T/daemon-$conf.conf"
	[[ $conf == default ]] || echo 'python = no' >"$T/daemon-$conf.conf"
	mkdir -p "$T/snaps-$conf"
	"$FLAMED" daemon --config "$T/daemon-$conf.conf" --interval 1s --output-dir "$T/snaps-$conf" \
		--formats folded >"$T/daemon-$conf.out" 2>"$T/daemon-$conf.err" &
	DPID=$!
	BG_PIDS+=("$DPID")
	LAST_ERR=$T/daemon-$conf.err
	wait_until 20 "3 snapshots" bash -c '[[ $(ls "$1" | grep -c "\.folded$") -ge 3 ]]' - "$T/snaps-$conf"
	signal_and_wait "$DPID" TERM "the daemon"
	[[ $WAIT_RC -eq 0 ]] || fail "daemon ($conf): exit $WAIT_RC"
	cat "$T/snaps-$conf"/*.folded >"$T/daemon-$conf.folded"
done
kill "$PYPID" 2>/dev/null || true
check daemon "$T/daemon-default.folded" --min-samples 100 --min-py-share 95 --min-named-leaf 95 \
	--chain 'main;hot_two' --min-chain 99
! grep -q '_\[p\]' "$T/daemon-off.folded" || fail "daemon with python = no: Python frames"
grep -q '^python3;.*_PyEval_EvalFrameDefault' "$T/daemon-off.folded" ||
	fail "daemon with python = no: no interpreter loop frame"

# (i) Other versions, where this machine has them.
others=()
for v in 3.12 3.13; do
	found=
	for p in ${FLAMED_TEST_PYTHONS:-} "$(command -v "python$v" || true)" /usr/bin/python$v \
		/usr/local/bin/python$v /root/.pyenv/versions/$v.*/bin/python$v; do
		# The interpreter itself, not a wrapper script (pyenv's shims are scripts).
		[[ -n $p && -x $p && $(basename "$p") == python$v &&
			$(head -c 4 "$p" | od -An -c | tr -d ' ') == '177ELF' ]] && { found=$p; break; }
	done
	if [[ -z $found ]]; then
		note "CPython $v is not present here: its part skipped"
		continue
	fi
	PY_WORK_TIMES=$T/py$v.times run_flamed "py$v" record -F 999 -o "$T/py$v.folded" -- \
		"$found" "$WORK" split 4
	expect_rc 0
	split_of "py$v"
	check "py$v" "$T/py$v.folded" --comm "python$v" "${COMMON[@]}" "${SPLIT[@]}" \
		--chain 'main;hot_two' --min-chain 99
	run_flamed "py$v-recurse" record -F 499 -o "$T/py$v-recurse.folded" -- "$found" "$WORK" recurse 3
	expect_rc 0
	check "py$v-recurse" "$T/py$v-recurse.folded" --comm "python$v" "${COMMON[@]}" \
		--chain 'recurse_main;recurse*60;leaf_burn' --min-chain 99
	others+=("$v")
done

pass "Python frames: split, chains, recursion, threads, asyncio, subinterpreters, -p, -a, exec, embedding, fp, dwarf, --no-bpf, pprof, the daemon, --no-python, an unknown version; other versions: ${others[*]:-none here}"
