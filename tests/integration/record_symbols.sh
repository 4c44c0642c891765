#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Names as the source has them: functions inlined by the compiler are
# frames of their own (_[i], from DWARF; --no-inline drops them, --srcline
# adds file:line), C++ templates in namespaces and Rust (v0 and legacy
# mangling) are demangled (--no-demangle keeps the raw names).
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root_and_perf
# The C and C++ fixtures burn their seconds of CPU however busy the machine
# (tests/fixtures/progs/work.h): their start-up stays a small share.
export FIXTURE_CLOCK=cpu

# share FILE CHAIN: percent of all samples whose stack has CHAIN.
share() {
	percent "$(count_matching "$1" "$2")" "$(total_count "$1")"
}

# Inlined functions: three always_inline levels in inline_chain.
readonly INL=';main;inline_outer;inline_a_[i];inline_b_[i];inline_c_[i]'
run_flamed inl record -F 999 -o "$T/inl.folded" -- "$FIXTURES/inline_chain" 1
expect_rc 0
check_folded "$T/inl.folded"
expect_between "$(share "$T/inl.folded" "$INL")" 90 100 "inline_chain samples with the three inlined frames"

run_flamed noinl record -F 999 --no-inline -o "$T/noinl.folded" -- "$FIXTURES/inline_chain" 1
expect_rc 0
[[ $(count_matching "$T/noinl.folded" "_[i]") -eq 0 ]] || fail "--no-inline still has inlined frames"
expect_between "$(share "$T/noinl.folded" ";main;inline_outer")" 90 100 "--no-inline: inline_outer is the leaf"

run_flamed src record -F 999 --srcline -o "$T/src.folded" -- "$FIXTURES/inline_chain" 1
expect_rc 0
# inline_outer stands at its call of inline_a; inline_a at its call of inline_b...
line_of() { grep -n "$1" "$SRCDIR/tests/fixtures/progs/inline_chain.c" | head -1 | cut -d: -f1; }
a_call=$(line_of 'inline_done(inline_a(')
b_call=$(line_of 'x = inline_b(x ^ 0xa, n);')
c_call=$(line_of 'x = inline_c(x ^ 0xb, n);')
want=";inline_outer (inline_chain.c:$a_call);inline_a (inline_chain.c:$b_call)_[i];inline_b (inline_chain.c:$c_call)_[i];inline_c (inline_chain.c:"
expect_between "$(share "$T/src.folded" "$want")" 90 100 "--srcline frames at their call sites"

# C++: templates in namespaces.
if [[ -x $FIXTURES/cxx_templates ]]; then
	run_flamed cxx record -F 999 -o "$T/cxx.folded" -- "$FIXTURES/cxx_templates" 1
	expect_rc 0
	expect_between "$(share "$T/cxx.folded" ";main;flamed::work::Runner<int>::run;flamed::work::spin<long>")" \
		90 100 "C++ samples with demangled template names"
	run_flamed cxxraw record -F 999 --no-demangle -o "$T/cxxraw.folded" -- "$FIXTURES/cxx_templates" 1
	expect_rc 0
	expect_between "$(share "$T/cxxraw.folded" ";main;_ZN6flamed4work6RunnerIiE3runEi;_ZN6flamed4work4spinIlEET_S2_")" \
		90 100 "--no-demangle: the mangled names"
else
	note "no C++ compiler at build time: the C++ part is skipped"
fi

# Rust, v0 and legacy mangling (when rustc was there at build time).
for v in v0 legacy; do
	if [[ ! -x $FIXTURES/rust_$v ]]; then
		note "no rustc at build time: rust_$v skipped"
		continue
	fi
	run_flamed "rust_$v" record -F 999 -o "$T/rust_$v.folded" -- "$FIXTURES/rust_$v" 1
	expect_rc 0
	if [[ $v == v0 ]]; then
		chain='rust_v0::main;<rust_v0::work::Runner<rust_v0::work::Spinner>>::run;<rust_v0::work::Spinner as rust_v0::work::Burn>::burn;rust_v0::work::spin::<u64>'
	else
		chain='rust_legacy::main;rust_legacy::work::Runner<B>::run;<rust_legacy::work::Spinner as rust_legacy::work::Burn>::burn;rust_legacy::work::spin'
	fi
	expect_between "$(share "$T/rust_$v.folded" "$chain")" 90 100 "rust_$v samples with demangled names"
done

pass "inlined frames, source lines and demangled C++ and Rust names"
