#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# pprof against folded stacks for the same profile: bytes on disk (pprof
# gzipped, folded plain and gzipped) and the time to write each, with the
# time go tool pprof takes to read the pprof file.
#
#   tests/bench/pprof_size.sh [-b BUILD_DIR] [FILE.folded]
#
# Without FILE, a profile the size of a busy machine's minute is generated
# (tests/bench/gen_folded.py: about 21,000 distinct stacks). Times are the
# best of 5 runs (CPU time of flamed convert, user + system).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$here/../../build
while getopts b: o; do
	case $o in
	b) build=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
flamed=$build/flamed
[[ -x $flamed ]] || { echo "no $flamed: build first (or give -b BUILD_DIR)" >&2; exit 2; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
if [[ $# -ge 1 ]]; then
	cp "$1" "$t/in.folded"
else
	python3 "$here/gen_folded.py" --mb 1 --stacks 21000 --seed 7 -o "$t/gen.folded" 2>/dev/null
	# Counts as a minute of a busy 2-CPU machine at 999 Hz has them: about 120,000 samples.
	awk '{ c = $NF; sub(/ [0-9]+$/, ""); c = c > 60 ? 60 : c; print $0 " " c }' "$t/gen.folded" >"$t/in.folded"
fi
# Folded as flamed writes it (sorted, merged): through pprof and back.
"$flamed" convert "$t/in.folded" -o "$t/a.pb.gz"
"$flamed" convert "$t/a.pb.gz" -o "$t/a.folded"

# best_cpu CMD...: the least user + system CPU seconds of 5 runs.
best_cpu() {
	local best=999 s
	for _ in 1 2 3 4 5; do
		s=$( { TIMEFORMAT='%U %S'; time "$@" >/dev/null 2>&1; } 2>&1 | awk '{ print $1 + $2 }')
		best=$(awk -v a="$best" -v b="$s" 'BEGIN { print (b < a) ? b : a }')
	done
	echo "$best"
}
stacks=$(wc -l <"$t/a.folded")
samples=$(awk '{ n += $NF } END { print n }' "$t/a.folded")
folded_bytes=$(stat -c %s "$t/a.folded")
gzip -6 -c "$t/a.folded" >"$t/a.folded.gz"
folded_gz=$(stat -c %s "$t/a.folded.gz")
pprof_bytes=$(stat -c %s "$t/a.pb.gz")
to_pprof=$(best_cpu "$flamed" convert "$t/a.folded" -o "$t/b.pb.gz")
to_folded=$(best_cpu "$flamed" convert "$t/a.pb.gz" -o "$t/b.folded")
# The same reading of folded stacks, written as folded: what writing pprof adds is the difference.
same=$(best_cpu "$flamed" convert --format folded "$t/a.folded" -o "$t/c.folded")
printf 'profile: %d stacks, %d samples\n' "$stacks" "$samples"
printf 'folded:            %9d bytes\n' "$folded_bytes"
printf 'folded, gzip -6:   %9d bytes\n' "$folded_gz"
printf 'pprof (.pb.gz):    %9d bytes  (%.2fx folded, %.2fx folded gzipped)\n' "$pprof_bytes" \
	"$(awk -v a="$pprof_bytes" -v b="$folded_bytes" 'BEGIN { print a / b }')" \
	"$(awk -v a="$pprof_bytes" -v b="$folded_gz" 'BEGIN { print a / b }')"
printf 'flamed convert folded -> pprof: %.3f s CPU (folded -> folded: %.3f s, so pprof costs %.3f s more to write); pprof -> folded: %.3f s CPU\n' \
	"$to_pprof" "$same" "$(awk -v a="$to_pprof" -v b="$same" 'BEGIN { print a - b }')" "$to_folded"
if command -v go >/dev/null; then
	export HOME=$t GOCACHE=$t/gocache GOTOOLCHAIN=local
	go tool pprof -raw "$t/a.pb.gz" >/dev/null 2>&1 # warm go's cache
	printf 'go tool pprof -raw reads it in %.3f s CPU\n' "$(best_cpu go tool pprof -symbolize=none -raw "$t/a.pb.gz")"
fi
