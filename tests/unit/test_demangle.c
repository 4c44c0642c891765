// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of demangling: C++ and Rust (legacy and v0) names as compilers
 * write them, hostile names, caps and truncation, and the symbols of the
 * C++ and Rust fixture programs.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "flamed/common/cleanup.h"
#include "flamed/symbols/demangle.h"
#include "flamed/symbols/elfsyms.h"

#define BUF_SIZE (FL_DEMANGLE_MAX_NAME + 64) /* every name fits */

/* fn grüße (punycode in Rust v0), in UTF-8: 13 bytes. */
#define GRUSSE "demo::gr\u00fc\u00dfe"

struct case_ {
	const char *mangled;
	const char *shown;	  /* fl_demangle() */
	const char *shown_params; /* FL_DEMANGLE_PARAMS */
};

/* Checks one name both ways, with a buffer big enough. */
static void check(const char *mangled, const char *shown, const char *shown_params)
{
	int want = strcmp(mangled, shown) == 0 ? FL_DEMANGLE_RAW : FL_DEMANGLE_DONE;
	char buf[BUF_SIZE];
	int ret;

	ret = fl_demangle(mangled, buf, sizeof(buf));
	if (ret != want || strcmp(buf, shown) != 0)
		fail_msg("%s: got %d '%s', want %d '%s'", mangled, ret, buf, want, shown);
	want = strcmp(mangled, shown_params) == 0 ? FL_DEMANGLE_RAW : FL_DEMANGLE_DONE;
	ret = fl_demangle_flags(mangled, FL_DEMANGLE_PARAMS, buf, sizeof(buf));
	if (ret != want || strcmp(buf, shown_params) != 0)
		fail_msg("%s (params): got %d '%s', want %d '%s'", mangled, ret, buf, want,
			 shown_params);
}

static void check_cases(const struct case_ *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		check(c[i].mangled, c[i].shown, c[i].shown_params);
}

static void check_raw(const char *name)
{
	check(name, name, name);
}

static void test_not_mangled(void **state)
{
	static const char *const names[] = {
		"main",
		"",
		"_",
		"Z",
		"_start",
		"burn_cpu",
		"update_active.constprop.0", /* a C clone: shown as it is */
		"__libc_start_call_main",
		"__Z3foov",		/* Mach-O's extra underscore: not in ELF files */
		"_GLOBAL__sub_I__Z1fi", /* gcc's static constructor, as perf and c++filt */
		"_D3foo3barFZv",	/* D: not handled */
		"caf\xc3\xa9\xff",	/* bytes are bytes */
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		assert_false(fl_demangle__is_mangled(names[i]));
		check_raw(names[i]);
	}
	assert_false(fl_demangle__is_mangled(NULL));
	assert_true(fl_demangle__is_mangled("_Z"));
	assert_true(fl_demangle__is_mangled("_R"));
	assert_true(fl_demangle__is_mangled("_ZN3foo3barEv"));
	assert_true(fl_demangle__is_mangled("_RNvC7mycrate4main"));
}

/* g++ 12's names; the default form is perf's (no -v): no parameters, no return types. */
static void test_cxx(void **state)
{
	static const struct case_ cases[] = {
		{"_Z3foov", "foo", "foo()"},
		{"_ZN3foo3barIiE3bazEv", "foo::bar<int>::baz", "foo::bar<int>::baz()"},
		{"_ZN6flamed4work4spinIlEET_S2_", "flamed::work::spin<long>",
		 "long flamed::work::spin<long>(long)"},
		{"_ZN6flamed4work6RunnerIiE3runEi", "flamed::work::Runner<int>::run",
		 "flamed::work::Runner<int>::run(int)"},
		{"_ZNSt6vectorIiSaIiEE9push_backERKi",
		 "std::vector<int, std::allocator<int> >::push_back",
		 "std::vector<int, std::allocator<int> >::push_back(int const&)"},
		/* Constructors and destructors (complete, base, deleting). */
		{"_ZN6flamed4work6RunnerIiEC1Em", "flamed::work::Runner<int>::Runner",
		 "flamed::work::Runner<int>::Runner(unsigned long)"},
		{"_ZN1AC2Ev", "A::A", "A::A()"},
		{"_ZN1AD0Ev", "A::~A", "A::~A()"},
		{"_ZN2ns5inner5TableINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEiED2Ev",
		 "ns::inner::Table<std::__cxx11::basic_string<char, std::char_traits<char>, "
		 "std::allocator<char> >, int>::~Table",
		 "ns::inner::Table<std::__cxx11::basic_string<char, std::char_traits<char>, "
		 "std::allocator<char> >, int>::~Table()"},
		/* Operators. */
		{"_ZN1AplERKS_", "A::operator+", "A::operator+(A const&)"},
		{"_ZNK1AplERKS_", "A::operator+", "A::operator+(A const&) const"},
		{"_ZN1AcvbEv", "A::operator bool", "A::operator bool()"},
		{"_ZNKSt8functionIFviEEclEi", "std::function<void (int)>::operator()",
		 "std::function<void (int)>::operator()(int) const"},
		{"_ZN2ns5inner5TableINSt7__cxx1112basic_stringIcSt11char_"
		 "traitsIcESaIcEEEiEixERKS7_",
		 "ns::inner::Table<std::__cxx11::basic_string<char, std::char_traits<char>, "
		 "std::allocator<char> >, int>::operator[]",
		 "ns::inner::Table<std::__cxx11::basic_string<char, std::char_traits<char>, "
		 "std::allocator<char> >, int>::operator[](std::__cxx11::basic_string<char, "
		 "std::char_traits<char>, std::allocator<char> > const&)"},
		/* Lambdas: their own parameters stay, they name the type. */
		{"_ZZ4mainENKUlvE_clEv", "main::{lambda()#1}::operator()",
		 "main::{lambda()#1}::operator()() const"},
		{"_ZZ4mainENKUliE0_clEi", "main::{lambda(int)#2}::operator()",
		 "main::{lambda(int)#2}::operator()(int) const"},
		/* Internal linkage, anonymous namespaces, special names. */
		{"_ZL3barv", "bar", "bar()"},
		{"_ZN12_GLOBAL__N_13bazEv", "(anonymous namespace)::baz",
		 "(anonymous namespace)::baz()"},
		{"_ZThn8_N1B1fEv", "non-virtual thunk to B::f()", "non-virtual thunk to B::f()"},
		{"_ZTV1A", "vtable for A", "vtable for A"},
		/* A variable's name has no type. */
		{"_Z3foo", "foo", "foo"},
	};

	(void)state;
	check_cases(cases, ARRAY_SIZE(cases));
}

/*
 * gcc's clones (.cold, .isra.0, .constprop.0, .part.0; clang's .llvm.N):
 * libiberty drops the suffix without parameters, and would merge foo.cold
 * into foo. The raw suffix is kept, as it is on C functions' clones.
 */
static void test_cxx_clones(void **state)
{
	static const struct case_ cases[] = {
		{"_Z3foov.cold", "foo.cold", "foo() [clone .cold]"},
		{"_Z3foov.isra.0", "foo.isra.0", "foo() [clone .isra.0]"},
		{"_Z3fooi.constprop.0.isra.0", "foo.constprop.0.isra.0",
		 "foo(int) [clone .constprop.0] [clone .isra.0]"},
		{"_ZN1A1fEv.part.0.cold", "A::f.part.0.cold",
		 "A::f() [clone .part.0] [clone .cold]"},
		{"_ZN1A1fEv.lto_priv.0", "A::f.lto_priv.0", "A::f() [clone .lto_priv.0]"},
		{"_ZN1A1fEv.llvm.123456", "A::f.llvm.123456", "A::f() [clone .llvm.123456]"},
		{"_Z3foov.cold.1", "foo.cold.1", "foo() [clone .cold.1]"},
		{"_ZnwmPv.isra.0", "operator new.isra.0",
		 "operator new(unsigned long, void*) [clone .isra.0]"},
		{"_ZZ3useRN2ns5inner5TableINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEiEEE"
		 "NKUliE0_clEi.constprop.0",
		 "use(ns::inner::Table<std::__cxx11::basic_string<char, std::char_traits<char>, "
		 "std::allocator<char> >, int>&)::{lambda(int)#2}::operator().constprop.0",
		 "use(ns::inner::Table<std::__cxx11::basic_string<char, std::char_traits<char>, "
		 "std::allocator<char> >, int>&)::{lambda(int)#2}::operator()(int) const "
		 "[clone .constprop.0]"},
	};

	(void)state;
	check_cases(cases, ARRAY_SIZE(cases));
	/* Not clone suffixes: the name does not parse, it stays raw. */
	check_raw("_Z3foov.COLD");
	check_raw("_Z3foov.");
	check_raw("_Z3foov.cold-1");
}

/* rustc 1.95's legacy names: the ::h<16 hex> hash goes, so does .llvm.N. */
static void test_rust_legacy(void **state)
{
	static const struct case_ cases[] = {
		{"_ZN7mycrate4main17h0123456789abcdefE", "mycrate::main", "mycrate::main"},
		{"_ZN11rust_legacy4work4spin17hd8dc88c747ed8154E", "rust_legacy::work::spin",
		 "rust_legacy::work::spin"},
		{"_ZN11rust_legacy4work15Runner$LT$B$GT$3run17h1ac852e95dd399b8E",
		 "rust_legacy::work::Runner<B>::run", "rust_legacy::work::Runner<B>::run"},
		{"_ZN70_$LT$rust_legacy..work..Spinner$u20$as$u20$rust_legacy..work..Burn$GT$"
		 "4burn17h6df77c588cb93eeaE",
		 "<rust_legacy::work::Spinner as rust_legacy::work::Burn>::burn",
		 "<rust_legacy::work::Spinner as rust_legacy::work::Burn>::burn"},
		{"_ZN50_$LT$demo..Wrap$LT$T$GT$$u20$as$u20$demo..Show$GT$4show17h725b1919f19ddf29E",
		 "<demo::Wrap<T> as demo::Show>::show", "<demo::Wrap<T> as demo::Show>::show"},
		{"_ZN4demo4main28_$u7b$$u7b$closure$u7d$$u7d$17hc35740be8ed5034eE",
		 "demo::main::{{closure}}", "demo::main::{{closure}}"},
		{"_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$"
		 "closure$u7d$$u7d$$GT$17h0123456789abcdefE",
		 "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>",
		 "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>"},
		{"_ZN11rust_legacy4work4spin17hd8dc88c747ed8154E.llvm.1234567890",
		 "rust_legacy::work::spin", "rust_legacy::work::spin"},
	};

	(void)state;
	check_cases(cases, ARRAY_SIZE(cases));
}

/* rustc 1.95's v0 names: no crate disambiguators. */
static void test_rust_v0(void **state)
{
	static const struct case_ cases[] = {
		{"_RNvCs15kBYyAo9fc_7mycrate4main", "mycrate::main", "mycrate::main"},
		{"_RNvC7mycrate4main", "mycrate::main", "mycrate::main"},
		/* Generics. */
		{"_RINvNtCs1zG5boeDNqh_7rust_v04work4spinyEB4_", "rust_v0::work::spin::<u64>",
		 "rust_v0::work::spin::<u64>"},
		{"_RNvMs_NtCs1zG5boeDNqh_7rust_v04workINtB4_6RunnerNtB4_7SpinnerE3runB6_",
		 "<rust_v0::work::Runner<rust_v0::work::Spinner>>::run",
		 "<rust_v0::work::Runner<rust_v0::work::Spinner>>::run"},
		{"_RINvNtNtCsjrHSEGnQ3l9_3std3sys9backtrace28___rust_begin_short_backtrace"
		 "FEuuECs1zG5boeDNqh_7rust_v0",
		 "std::sys::backtrace::__rust_begin_short_backtrace::<fn(), ()>",
		 "std::sys::backtrace::__rust_begin_short_backtrace::<fn(), ()>"},
		/* Trait impls. */
		{"_RNvXNtCs1zG5boeDNqh_7rust_v04workNtB2_7SpinnerNtB2_4Burn4burn",
		 "<rust_v0::work::Spinner as rust_v0::work::Burn>::burn",
		 "<rust_v0::work::Spinner as rust_v0::work::Burn>::burn"},
		{"_RNvXCs2ndz2m94zur_4demoINtB2_4WrapmENtB2_4Show4showB2_",
		 "<demo::Wrap<u32> as demo::Show>::show", "<demo::Wrap<u32> as demo::Show>::show"},
		/* Closures and shims. */
		{"_RNCNvCs2ndz2m94zur_4demo4main0", "demo::main::{closure#0}",
		 "demo::main::{closure#0}"},
		{"_RINvCs2ndz2m94zur_4demo5applyNCNvB2_4mains_0EB2_",
		 "demo::apply::<demo::main::{closure#1}>",
		 "demo::apply::<demo::main::{closure#1}>"},
		{"_RNCINvNtCsjrHSEGnQ3l9_3std2rt10lang_startuE0Cs1zG5boeDNqh_7rust_v0",
		 "std::rt::lang_start::<()>::{closure#0}",
		 "std::rt::lang_start::<()>::{closure#0}"},
		{"_RNSNvYNCINvNtCsjrHSEGnQ3l9_3std2rt10lang_startuE0INtNtNtCsgEmfK2I1SDS_4core3ops"
		 "8function6FnOnceuE9call_once6vtableCs1zG5boeDNqh_7rust_v0",
		 "<std::rt::lang_start<()>::{closure#0} as core::ops::function::FnOnce<()>>"
		 "::call_once::{shim:vtable#0}",
		 "<std::rt::lang_start<()>::{closure#0} as core::ops::function::FnOnce<()>>"
		 "::call_once::{shim:vtable#0}"},
		/* Punycode: fn grüße. */
		{"_RNvCs2ndz2m94zur_4demou9gre_6ka8l", GRUSSE, GRUSSE},
		{"_RNvCs2ndz2m94zur_4demo4main.llvm.123", "demo::main", "demo::main"},
	};

	(void)state;
	check_cases(cases, ARRAY_SIZE(cases));
}

/* Looks mangled, is not: stays raw, whatever libiberty makes of its start. */
static void test_garbage(void **state)
{
	static const char *const names[] = {
		"_Z",
		"_R",
		"_ZN",
		"_Zzzzz",
		"_Zephyr",
		"_Rzzz",
		"_R0NvC1a1f",
		"_RNvC1a1fu1b",
		"_Z3fooXYZ", /* libiberty accepts it without DMGL_PARAMS */
		"_ZN3foo3barEv@@GLIBCXX_3.4",
		"_RNvCs1zG5boeDNqh_7rust_v04mainXYZ",
		"_ZN7mycrate4main17h0123456789abcdeE", /* a 15-digit hash */
		"_Z3foo\xff\xfe",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		check_raw(names[i]);
}

static char *xmalloc(size_t n)
{
	char *p = malloc(n);

	assert_non_null(p);
	return p;
}

/* A C++ substitution reference: S_, S0_, ..., S9_, SA_, ... (base 36). */
static void append_subst(char *p, unsigned int k)
{
	static const char digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
	char tmp[16];
	size_t n = 0;

	p += strlen(p);
	*p++ = 'S';
	if (k > 0) {
		k--;
		do
			tmp[n++] = digits[k % 36];
		while ((k /= 36) > 0);
		while (n)
			*p++ = tmp[--n];
	}
	*p++ = '_';
	*p = '\0';
}

/*
 * f<A<int, int>, A<A<int, int>, A<int, int> >, ...>(): each template argument
 * names the one before twice, so the text doubles at each of the levels.
 */
static char *cxx_doubling(unsigned int levels)
{
	char *s = xmalloc(16 + (size_t)levels * 16);
	unsigned int prev = 2, i;

	strcpy(s, "_Z1fI1AIiiE");
	for (i = 3; i < levels + 2; i++) {
		append_subst(s, 1);
		strcat(s, "I");
		append_subst(s, prev);
		append_subst(s, prev);
		strcat(s, "E");
		prev = i;
	}
	strcat(s, "Evv");
	return s;
}

/* A Rust v0 back-reference: B<base 62 number>_ to a position after "_R". */
static void append_backref(char *p, size_t pos)
{
	static const char digits[] =
		"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	char tmp[16];
	size_t n = 0;

	p += strlen(p);
	*p++ = 'B';
	if (pos > 0) {
		pos--;
		do
			tmp[n++] = digits[pos % 62];
		while ((pos /= 62) > 0);
		while (n)
			*p++ = tmp[--n];
	}
	*p++ = '_';
	*p = '\0';
}

/* a::f::<((), ()), (((), ()), ((), ())), ...>: tuples of the tuple before, twice. */
static char *rust_doubling(unsigned int levels)
{
	char *s = xmalloc(32 + (size_t)levels * 16);
	size_t prev, pos;

	strcpy(s, "_RINvC1a1f");
	prev = strlen(s) - 2;
	strcat(s, "TuuE");
	for (unsigned int i = 0; i < levels; i++) {
		pos = strlen(s) - 2;
		strcat(s, "T");
		append_backref(s, prev);
		append_backref(s, prev);
		strcat(s, "E");
		prev = pos;
	}
	strcat(s, "E");
	return s;
}

/*
 * A few hundred bytes that demangle to more text than there is memory:
 * stopped at FL_DEMANGLE_MAX_OUTPUT, raw. Small ones demangle as usual.
 */
static void test_exponential(void **state)
{
	char buf[BUF_SIZE];
	char *s;
	int ret;

	(void)state;
	s = cxx_doubling(2);
	check(s, "f<A<int, int>, A<A<int, int>, A<int, int> > >",
	      "void f<A<int, int>, A<A<int, int>, A<int, int> > >()");
	free(s);
	s = rust_doubling(1);
	check(s, "a::f::<((), ()), (((), ()), ((), ()))>",
	      "a::f::<((), ()), (((), ()), ((), ()))>");
	free(s);

	/* 2^300 bytes; also with a small buffer, which is not what stops it. */
	s = cxx_doubling(300);
	assert_true(strlen(s) <= FL_DEMANGLE_MAX_NAME);
	check_raw(s);
	ret = fl_demangle(s, buf, 8);
	assert_int_equal(ret, FL_DEMANGLE_RAW | FL_DEMANGLE_TRUNCATED);
	assert_string_equal(buf, "_Z1fI1A");
	free(s);

	s = rust_doubling(300);
	assert_true(strlen(s) <= FL_DEMANGLE_MAX_NAME);
	check_raw(s);
	free(s);

	/* Just over the output cap: 2^12 * 4 + ... bytes of "((), ())". */
	s = rust_doubling(12);
	ret = fl_demangle(s, buf, sizeof(buf));
	assert_int_equal(ret, FL_DEMANGLE_RAW);
	assert_string_equal(buf, s);
	free(s);
	s = rust_doubling(10);
	ret = fl_demangle(s, buf, sizeof(buf));
	assert_int_equal(ret, FL_DEMANGLE_DONE | FL_DEMANGLE_TRUNCATED);
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
	assert_memory_equal(buf, "a::f::<((), ()), (((), ())", 26);
	free(s);
}

/* Deep nesting, within FL_DEMANGLE_MAX_NAME. */
static char *deep_name(int kind)
{
	char *s = xmalloc(FL_DEMANGLE_MAX_NAME + 1);
	int i;

	switch (kind) {
	case 0: /* f(int****...*) */
		strcpy(s, "_Z1f");
		memset(s + 4, 'P', 4090);
		strcpy(s + 4094, "i");
		break;
	case 1: /* f<A<A<...<int>...>>>() */
		strcpy(s, "_Z1fI");
		for (i = 0; i < 1000; i++)
			strcat(s, "1AI");
		strcat(s, "i");
		for (i = 0; i < 1000; i++)
			strcat(s, "E");
		strcat(s, "EvT_");
		break;
	case 2: /* f(void (*(*...)())()) */
		strcpy(s, "_Z1f");
		for (i = 0; i < 1360; i++)
			strcat(s, "PF");
		strcat(s, "v");
		for (i = 0; i < 1360; i++)
			strcat(s, "E");
		break;
	default: /* a::b::c::...: 1000 nested Rust paths */
		strcpy(s, "_R");
		for (i = 0; i < 1000; i++)
			strcat(s, "Nv");
		strcat(s, "C1a1b");
		for (i = 0; i < 1000; i++)
			strcat(s, "1c");
		break;
	}
	assert_true(strlen(s) <= FL_DEMANGLE_MAX_NAME);
	return s;
}

#define NR_DEEP 4

/*
 * libiberty's recursion limits stay on: deep nesting is refused, raw. A
 * long chain of pointers parses, and prints without parameters.
 */
static void test_deep(void **state)
{
	char *s;

	(void)state;
	s = deep_name(0);
	check(s, "f", s);
	free(s);
	for (int kind = 1; kind < NR_DEEP; kind++) {
		s = deep_name(kind);
		check_raw(s);
		free(s);
	}
}

static void *demangle_deep(void *arg)
{
	static char buf[BUF_SIZE];

	(void)arg;
	for (int kind = 0; kind < NR_DEEP; kind++) {
		char *s = deep_name(kind);

		if (fl_demangle(s, buf, sizeof(buf)) < 0 ||
		    fl_demangle_flags(s, FL_DEMANGLE_PARAMS, buf, sizeof(buf)) < 0)
			return (void *)1;
		free(s);
	}
	return NULL;
}

/* The deepest names in a thread with 1 MiB of stack (they need about 400 KiB). */
static void test_deep_small_stack(void **state)
{
	pthread_attr_t attr;
	pthread_t thread;
	void *ret = (void *)1;

	(void)state;
	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(pthread_attr_setstacksize(&attr, 1 << 20), 0);
	assert_int_equal(pthread_create(&thread, &attr, demangle_deep, NULL), 0);
	assert_int_equal(pthread_join(thread, &ret), 0);
	assert_null(ret);
	pthread_attr_destroy(&attr);
}

/* _Z<len><len x's>v: a function x...x() of exactly total bytes. */
static char *long_name(size_t total)
{
	char *s = xmalloc(total + 1);
	size_t ident = total - 3, digits;

	/* total = 2 + digits(ident) + ident + 1 */
	for (;;) {
		digits = (size_t)snprintf(NULL, 0, "%zu", ident);
		if (2 + digits + ident + 1 == total)
			break;
		ident--;
	}
	sprintf(s, "_Z%zu", ident);
	memset(s + 2 + digits, 'x', ident);
	strcpy(s + 2 + digits + ident, "v");
	assert_int_equal(strlen(s), total);
	return s;
}

static void test_long_names(void **state)
{
	size_t size = FL_DEMANGLE_MAX_NAME + 16;
	char *buf = xmalloc(size);
	char *s;
	size_t ident;

	(void)state;
	/* At the cap: demangled. */
	s = long_name(FL_DEMANGLE_MAX_NAME);
	ident = FL_DEMANGLE_MAX_NAME - 7; /* "_Z" "4089" "v" */
	assert_int_equal(fl_demangle(s, buf, size), FL_DEMANGLE_DONE);
	assert_int_equal(strlen(buf), ident);
	assert_int_equal(strspn(buf, "x"), ident);
	assert_int_equal(fl_demangle_flags(s, FL_DEMANGLE_PARAMS, buf, size), FL_DEMANGLE_DONE);
	assert_int_equal(strlen(buf), ident + 2);
	assert_string_equal(buf + ident, "()");
	free(s);

	/* One byte over: raw. */
	s = long_name(FL_DEMANGLE_MAX_NAME + 1);
	assert_int_equal(fl_demangle(s, buf, size), FL_DEMANGLE_RAW);
	assert_string_equal(buf, s);
	free(s);

	/* Far over, and bigger than the buffer: raw, cut. */
	s = long_name(100000);
	assert_int_equal(fl_demangle(s, buf, size), FL_DEMANGLE_RAW | FL_DEMANGLE_TRUNCATED);
	assert_int_equal(strlen(buf), size - 1);
	assert_memory_equal(buf, s, size - 1);
	free(s);
	free(buf);
}

/* Cut at size - 1 bytes, never inside a UTF-8 sequence; DONE or RAW as it was. */
static void test_truncation(void **state)
{
	char buf[64];
	const char *grusse = "_RNvCs2ndz2m94zur_4demou9gre_6ka8l"; /* demo::grüße */

	(void)state;
	/* Exactly fits, one byte short, one byte. */
	memset(buf, '#', sizeof(buf));
	assert_int_equal(fl_demangle("_Z3foov.cold", buf, 9), FL_DEMANGLE_DONE);
	assert_string_equal(buf, "foo.cold");
	assert_int_equal(fl_demangle("_Z3foov.cold", buf, 8),
			 FL_DEMANGLE_DONE | FL_DEMANGLE_TRUNCATED);
	assert_string_equal(buf, "foo.col");
	assert_int_equal(fl_demangle("_Z3foov.cold", buf, 4),
			 FL_DEMANGLE_DONE | FL_DEMANGLE_TRUNCATED);
	assert_string_equal(buf, "foo");
	memset(buf, '#', sizeof(buf));
	assert_int_equal(fl_demangle("_Z3foov", buf, 1), FL_DEMANGLE_DONE | FL_DEMANGLE_TRUNCATED);
	assert_int_equal(buf[0], '\0');
	assert_int_equal(buf[1], '#');
	assert_int_equal(fl_demangle_flags("_ZN3foo3barIiE3bazEv", FL_DEMANGLE_PARAMS, buf, 14),
			 FL_DEMANGLE_DONE | FL_DEMANGLE_TRUNCATED);
	assert_string_equal(buf, "foo::bar<int>");

	/* Raw names too. */
	assert_int_equal(fl_demangle("main", buf, 5), FL_DEMANGLE_RAW);
	assert_string_equal(buf, "main");
	assert_int_equal(fl_demangle("main", buf, 4), FL_DEMANGLE_RAW | FL_DEMANGLE_TRUNCATED);
	assert_string_equal(buf, "mai");
	assert_int_equal(fl_demangle("", buf, 1), FL_DEMANGLE_RAW);
	assert_string_equal(buf, "");

	/* "demo::gr" "\xc3\xbc" "\xc3\x9f" "e": 8, 10, 12, 13 bytes. */
	assert_int_equal(fl_demangle(grusse, buf, 14), FL_DEMANGLE_DONE);
	assert_string_equal(buf, GRUSSE);
	assert_int_equal(fl_demangle(grusse, buf, 13), FL_DEMANGLE_DONE | FL_DEMANGLE_TRUNCATED);
	assert_string_equal(buf, "demo::gr\xc3\xbc\xc3\x9f");
	assert_int_equal(fl_demangle(grusse, buf, 12), FL_DEMANGLE_DONE | FL_DEMANGLE_TRUNCATED);
	assert_string_equal(buf, "demo::gr\xc3\xbc");
	assert_int_equal(fl_demangle(grusse, buf, 11), FL_DEMANGLE_DONE | FL_DEMANGLE_TRUNCATED);
	assert_string_equal(buf, "demo::gr\xc3\xbc");
	assert_int_equal(fl_demangle(grusse, buf, 10), FL_DEMANGLE_DONE | FL_DEMANGLE_TRUNCATED);
	assert_string_equal(buf, "demo::gr");

	/* A 4-byte sequence, cut after each of its bytes; and stray continuation bytes. */
	assert_int_equal(fl_demangle("ab\xf0\x9f\x98\x80", buf, 7), FL_DEMANGLE_RAW);
	for (size_t size = 3; size < 7; size++) {
		assert_int_equal(fl_demangle("ab\xf0\x9f\x98\x80", buf, size),
				 FL_DEMANGLE_RAW | FL_DEMANGLE_TRUNCATED);
		assert_string_equal(buf, "ab");
	}
	assert_int_equal(fl_demangle("a\x80\x80\x80\x80\x80", buf, 5),
			 FL_DEMANGLE_RAW | FL_DEMANGLE_TRUNCATED);
	assert_string_equal(buf, "a");
}

static void test_bad_args(void **state)
{
	char buf[8] = "keep";

	(void)state;
	assert_int_equal(fl_demangle(NULL, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(fl_demangle("_Z3foov", NULL, sizeof(buf)), -EINVAL);
	assert_int_equal(fl_demangle("_Z3foov", buf, 0), -EINVAL);
	assert_int_equal(fl_demangle_flags("_Z3foov", 1u << 7, buf, sizeof(buf)), -EINVAL);
	assert_string_equal(buf, "keep");
}

/*
 * The fixture programs: every frame of their hot chain is in .symtab under
 * the expected mangling, fl_elfsyms (what the symbolizer reads) gives that
 * name at its address, and it demangles to the expected frame name.
 */
enum mangling {
	MANGLING_NONE,
	MANGLING_CXX,
	MANGLING_RUST_LEGACY,
	MANGLING_RUST_V0,
};

struct frame {
	enum mangling mangling;
	const char *mangled; /* exact, or NULL where it holds a compiler-made hash */
	const char *shown;
	const char *shown_params;
};

/* _ZN...17h<16 hex digits>E */
static bool is_rust_legacy(const char *name)
{
	size_t n = strlen(name);

	if (strncmp(name, "_ZN", 3) != 0 || n < 3 + 20 || name[n - 1] != 'E' ||
	    strncmp(name + n - 20, "17h", 3) != 0)
		return false;
	return strspn(name + n - 17, "0123456789abcdef") == 16;
}

static bool has_mangling(const char *name, enum mangling m)
{
	switch (m) {
	case MANGLING_NONE:
		return !fl_demangle__is_mangled(name);
	case MANGLING_CXX:
		return strncmp(name, "_Z", 2) == 0 && !is_rust_legacy(name);
	case MANGLING_RUST_LEGACY:
		return is_rust_legacy(name);
	case MANGLING_RUST_V0:
		return strncmp(name, "_R", 2) == 0;
	}
	return false;
}

static void check_fixture(const char *prog, const struct frame *frames, size_t n)
{
	char path[4096], buf[BUF_SIZE];
	struct fl_elfsyms *es = NULL;
	size_t found[8] = {0};
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd;

	assert_true(n <= ARRAY_SIZE(found));
	snprintf(path, sizeof(path), "%s/%s", FIXTURE_DIR, prog);
	if (access(path, R_OK) != 0) {
		print_message("%s not built (no compiler for it), skipped\n", path);
		skip();
		return;
	}
	assert_int_equal(fl_elfsyms__open(path, &es), 0);
	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Shdr shdr;

		assert_non_null(gelf_getshdr(scn, &shdr));
		if (shdr.sh_type != SHT_SYMTAB || !shdr.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		assert_non_null(data);
		for (size_t i = 0; i < shdr.sh_size / shdr.sh_entsize; i++) {
			const struct fl_elfsym *s;
			const char *name;
			GElf_Sym sym;

			assert_non_null(gelf_getsym(data, (int)i, &sym));
			name = elf_strptr(elf, shdr.sh_link, sym.st_name);
			if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_value || !name)
				continue;
			assert_true(fl_demangle(name, buf, sizeof(buf)) >= 0);
			for (size_t j = 0; j < n; j++) {
				if (strcmp(buf, frames[j].shown) != 0)
					continue;
				found[j]++;
				if (!has_mangling(name, frames[j].mangling) ||
				    (frames[j].mangled && strcmp(name, frames[j].mangled) != 0))
					fail_msg("%s: %s is %s", prog, frames[j].shown, name);
				fl_demangle_flags(name, FL_DEMANGLE_PARAMS, buf, sizeof(buf));
				assert_string_equal(buf, frames[j].shown_params);
				s = fl_elfsyms__find(es, sym.st_value);
				assert_non_null(s);
				assert_string_equal(s->name, name);
				break;
			}
		}
	}
	for (size_t j = 0; j < n; j++)
		if (found[j] != 1)
			fail_msg("%s: %zu functions show as %s", prog, found[j], frames[j].shown);
	elf_end(elf);
	close(fd);
	fl_elfsyms__free(es);
}

static void test_fixture_cxx(void **state)
{
	/* The profile's frames, root first, then a frame it rarely shows. */
	static const struct frame frames[] = {
		{MANGLING_NONE, "main", "main", "main"},
		{MANGLING_CXX, "_ZN6flamed4work6RunnerIiE3runEi", "flamed::work::Runner<int>::run",
		 "flamed::work::Runner<int>::run(int)"},
		{MANGLING_CXX, "_ZN6flamed4work4spinIlEET_S2_", "flamed::work::spin<long>",
		 "long flamed::work::spin<long>(long)"},
		{MANGLING_CXX, "_ZN6flamed4work4doneEl", "flamed::work::done",
		 "flamed::work::done(long)"},
	};

	(void)state;
	check_fixture("cxx_templates", frames, ARRAY_SIZE(frames));
}

static void test_fixture_rust_v0(void **state)
{
	static const struct frame frames[] = {
		{MANGLING_RUST_V0, NULL, "rust_v0::main", "rust_v0::main"},
		{MANGLING_RUST_V0, NULL, "<rust_v0::work::Runner<rust_v0::work::Spinner>>::run",
		 "<rust_v0::work::Runner<rust_v0::work::Spinner>>::run"},
		{MANGLING_RUST_V0, NULL, "<rust_v0::work::Spinner as rust_v0::work::Burn>::burn",
		 "<rust_v0::work::Spinner as rust_v0::work::Burn>::burn"},
		{MANGLING_RUST_V0, NULL, "rust_v0::work::spin::<u64>",
		 "rust_v0::work::spin::<u64>"},
		{MANGLING_RUST_V0, NULL, "rust_v0::work::done", "rust_v0::work::done"},
	};

	(void)state;
	check_fixture("rust_v0", frames, ARRAY_SIZE(frames));
}

static void test_fixture_rust_legacy(void **state)
{
	static const struct frame frames[] = {
		{MANGLING_RUST_LEGACY, NULL, "rust_legacy::main", "rust_legacy::main"},
		{MANGLING_RUST_LEGACY, NULL, "rust_legacy::work::Runner<B>::run",
		 "rust_legacy::work::Runner<B>::run"},
		{MANGLING_RUST_LEGACY, NULL,
		 "<rust_legacy::work::Spinner as rust_legacy::work::Burn>::burn",
		 "<rust_legacy::work::Spinner as rust_legacy::work::Burn>::burn"},
		{MANGLING_RUST_LEGACY, NULL, "rust_legacy::work::spin", "rust_legacy::work::spin"},
		{MANGLING_RUST_LEGACY, NULL, "rust_legacy::work::done", "rust_legacy::work::done"},
	};

	(void)state;
	check_fixture("rust_legacy", frames, ARRAY_SIZE(frames));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_mangled),
		cmocka_unit_test(test_cxx),
		cmocka_unit_test(test_cxx_clones),
		cmocka_unit_test(test_rust_legacy),
		cmocka_unit_test(test_rust_v0),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_exponential),
		cmocka_unit_test(test_deep),
		cmocka_unit_test(test_deep_small_stack),
		cmocka_unit_test(test_long_names),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_fixture_cxx),
		cmocka_unit_test(test_fixture_rust_v0),
		cmocka_unit_test(test_fixture_rust_legacy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
