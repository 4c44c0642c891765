// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Workload of tests/bench/symbolize_vs_perf.sh: a large C++ program that
 * spreads its time over as much distinct code as it can, in itself (one set
 * of template instantiations per type Rec<N>: sorts, trees, hash tables,
 * std::regex), in libstdc++.so (iostreams, locale facets, std::string,
 * tree and hash-table helpers, to_chars) and in libc (the printf and scanf
 * families, strtod, qsort, POSIX regex, time conversions, malloc), so that
 * sampling it gives many distinct addresses in the three modules.
 *
 * Built from several translation units: -DPART=K -DFIRST=F -DCOUNT=C makes
 * one with the instantiations for N in [F, F+C); -DPART_MAIN the one with
 * main(). Run as `symbolize_workload`: it works until SIGUSR1, prints
 * "done" on stdout, then waits (mapped, for a symbolizer to read its
 * /proc/PID/maps) until it is killed.
 */
#include <algorithm>
#include <argz.h>
#include <arpa/inet.h>
#include <charconv>
#include <envz.h>
#include <filesystem>
#include <getopt.h>
#include <glob.h>
#include <libgen.h>
#include <malloc.h>
#include <monetary.h>
#include <netinet/ether.h>
#include <search.h>
#include <cwchar>
#include <stdexcept>
#include <system_error>
#include <mutex>
#include <thread>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <fnmatch.h>
#include <iomanip>
#include <list>
#include <map>
#include <random>
#include <regex.h>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>
#include <vector>

using work_fn = void (*)(unsigned);
std::vector<work_fn> &registry();
extern thread_local volatile unsigned long sink;
const regex_t *posix_regex(unsigned i);
const std::regex &cxx_regex(unsigned i);
void libs(unsigned k);

#ifndef PART_MAIN
#ifndef FEW
#define FEW 12
#endif
#ifndef LIBS
#define LIBS 4
#endif
namespace {

template <int N> struct Rec {
	long a;
	double b;
	unsigned c;
	char s[20];
	bool operator==(const Rec &o) const { return a == o.a && c == o.c && b == o.b; }
};

/* A different order for every N: the instantiations differ, none are folded together. */
template <int N> struct Less {
	bool operator()(const Rec<N> &x, const Rec<N> &y) const
	{
		switch (N % 5) {
		case 0:
			if (x.a != y.a)
				return x.a % (N + 3) < y.a % (N + 3);
			return x.c < y.c;
		case 1:
			if (x.b != y.b)
				return x.b * (N + 1) < y.b * (N + 1);
			return x.c < y.c;
		case 2:
			return std::tie(x.c, x.a) < std::tie(y.c, y.a);
		case 3:
			return (x.c ^ N) < (y.c ^ N);
		default:
			return std::lexicographical_compare(x.s, x.s + 8, y.s, y.s + 8);
		}
	}
};

template <int N> struct Hash {
	size_t operator()(const Rec<N> &r) const
	{
		return std::hash<std::string_view>()(r.s) * (N * 2 + 1) ^ (size_t)r.a;
	}
};

template <int N> int cmp_c(const void *pa, const void *pb)
{
	long a = *(const long *)pa % (N + 7), b = *(const long *)pb % (N + 7);
	return a < b ? -1 : a > b;
}

const char *const fmts[] = {
	"%ld/%.3f/%x/%s",  "%08lx:%g:%u:%.5s", "%+ld %e %o %s",	 "%-12ld|%10.4f|%#x|%s",
	"%ld,%a,%u,%10s",  "[%ld] %.12g %X %s", "%5ld %G %c %s",	 "%'ld %.1f %lu %s",
};
const char *const words[] = {"alpha", "beta-2", "Gamma_3", "delta.4", "eps/5", "zeta:6",
			     "eta7",  "theta", "iota-10", "kappa", "lambda", "mu-12"};

template <int N> void fill(std::vector<Rec<N>> &v, std::mt19937 &rng)
{
	for (size_t i = 0; i < v.size(); i++) {
		Rec<N> &r = v[i];

		r.a = (long)(rng() % (1000u + N));
		r.b = (double)rng() / (N + 3.0);
		r.c = (unsigned)rng();
		if (i % 16 == 0)
			snprintf(r.s, sizeof(r.s), fmts[(N + i) % 8], r.a, r.b, r.c,
				 words[(N * 7 + i) % 12]);
		else
			memcpy(r.s, words[(N + i + r.c) % 12], 8);
		r.s[sizeof(r.s) - 1] = 0;
	}
}

/* In this binary: algorithms, trees, heaps and hash tables of Rec<N>. */
template <int N> void containers(std::vector<Rec<N>> &v)
{
	Less<N> less;
	auto by_c = [](const Rec<N> &x, const Rec<N> &y) { return x.c % (N + 11) < y.c % (N + 11); };

	std::sort(v.begin(), v.end(), less);
	auto lo = std::lower_bound(v.begin(), v.end(), v[v.size() / 3], less);
	auto hi = std::upper_bound(v.begin(), v.end(), v[v.size() / 2], less);
	sink += (unsigned long)(hi - lo);
	if (N % 2)
		std::stable_sort(v.begin(), v.end(), by_c);
	else
		std::nth_element(v.begin(), v.begin() + (long)v.size() / 2, v.end(), by_c);
	std::vector<Rec<N>> w(v.rbegin(), v.rend());
	std::make_heap(w.begin(), w.end(), less);
	for (size_t i = 0; i < w.size() / 2; i++)
		std::pop_heap(w.begin(), w.end() - (long)i, less);
	std::sort_heap(w.begin(), w.begin() + (long)w.size() / 2, less);
	std::rotate(w.begin(), w.begin() + N % (long)w.size(), w.end());
	auto mid = std::partition(w.begin(), w.end(), [](const Rec<N> &r) { return r.a % (N + 2) < N / 2; });
	std::sort(w.begin(), mid, by_c);
	std::sort(mid, w.end(), by_c);
	std::inplace_merge(w.begin(), mid, w.end(), by_c);
	std::set<Rec<N>, Less<N>> s(v.begin(), v.end());
	for (const auto &r : w)
		if (r.c & 1)
			s.erase(r);
	std::unordered_map<Rec<N>, int, Hash<N>> h;
	for (size_t i = 0; i < v.size(); i++)
		h[v[i]] += (int)i;
	for (size_t i = 0; i < w.size(); i += 3)
		h.erase(w[i]);
	sink += s.size() + h.size() + (unsigned long)std::count_if(w.begin(), w.end(), [](const Rec<N> &r) {
			return r.b > N;
		});
}

/* In libstdc++.so: streams, locale facets, std::string out of line, to_chars/from_chars. */
template <int N> void streams(const std::vector<Rec<N>> &v)
{
	std::ostringstream os;

	os << std::setprecision(N % 15 + 1);
	for (const auto &r : v) {
		switch ((N + r.c) % 4) {
		case 0:
			os << r.a << ' ' << r.b << ' ' << std::hex << r.c << std::dec << ' ';
			break;
		case 1:
			os << std::scientific << r.b << std::defaultfloat << ' ' << r.s << ' ';
			break;
		case 2:
			os << std::setw(N % 20) << std::left << r.s << std::right << (float)r.b << ' ';
			break;
		default:
			os << std::fixed << r.b / 3 << std::defaultfloat << ' ' << (unsigned long)r.a * N
			   << ' ';
		}
	}
	std::istringstream is(os.str());
	std::string w, all;
	while (is >> w) {
		all.append(w).push_back(',');
		if (w.find('.') != std::string::npos)
			all.replace(0, std::min<size_t>(2, all.size()), "x");
	}
	char cbuf[64];
	for (const auto &r : v) {
		auto res = std::to_chars(cbuf, cbuf + sizeof(cbuf), r.b * (N + 1));
		double back = 0;
		std::from_chars(cbuf, res.ptr, back);
		sink += (unsigned long)back;
	}
	sink += all.size() + all.rfind('1') + std::stoul(std::to_string(N + 1));
}

/* In libc: qsort, the scanf family, strtod, POSIX regex, time conversions, string functions. */
template <int N> void clib(const std::vector<Rec<N>> &v)
{
	std::vector<long> a(v.size());
	regmatch_t mt[4];
	char buf[256];

	for (size_t i = 0; i < v.size(); i++)
		a[i] = v[i].a * 7919 + (long)i;
	qsort(a.data(), a.size(), sizeof(long), cmp_c<N>);
	for (size_t i = 0; i < v.size(); i++) {
		const Rec<N> &r = v[i];
		long x = 0;
		double y = 0;
		unsigned z = 0;

		switch ((N + i) % 6) {
		case 0:
			sscanf(r.s, "%ld%*[^0-9]%lf", &x, &y);
			break;
		case 1:
			y = strtod(r.s + (strlen(r.s) > 3 ? 3 : 0), nullptr);
			x = strtol(r.s, nullptr, 16);
			break;
		case 2:
			x = regexec(posix_regex(N + (unsigned)i), r.s, 4, mt, 0);
			break;
		case 3: {
			time_t t = (time_t)(r.c % 2000000000u);
			struct tm tm;

			gmtime_r(&t, &tm);
			strftime(buf, sizeof(buf), N % 2 ? "%c %j %U" : "%Y-%m-%dT%H:%M:%S %a %b", &tm);
			x = (long)mktime(&tm) + (long)strlen(buf);
			break;
		}
		case 4:
			x = fnmatch(N % 2 ? "*[0-9]*.?" : "[a-z]*/*", r.s, 0) +
			    strverscmp(r.s, v[(i + 1) % v.size()].s);
			z = (unsigned)strcspn(r.s, ":/|,");
			break;
		default: {
			char *p = strdup(r.s);
			char *save, *tok = strtok_r(p, "/:|, []", &save);

			while (tok) {
				x += (long)strspn(tok, "0123456789abcdef");
				tok = strtok_r(nullptr, "/:|, []", &save);
			}
			void *q = malloc(r.c % 4096 + 1);
			memset(q, (int)x, r.c % 4096 + 1);
			q = realloc(q, r.c % 65536 + 1);
			free(q);
			free(p);
		}
		}
		sink += (unsigned long)x + (unsigned long)y + z + (unsigned)a[i];
	}
}

/* In this binary: std::regex compiled and run (its compiler and executors). */
template <int N> void cxx_regex_work(const std::vector<Rec<N>> &v)
{
	std::cmatch m;
	for (size_t i = 0; i < v.size(); i += 4)
		sink += std::regex_search(v[i].s, m, cxx_regex(N + (unsigned)i)) ? m.size() : 0;
}

template <int N> void work(unsigned seed)
{
	std::mt19937 rng(seed * 131 + N);
	std::vector<Rec<N>> v(96 + N % 64);

	fill(v, rng);
	containers(v);
	/* Fewer elements through the libraries: most of the time goes to this binary. */
	std::vector<Rec<N>> few(v.begin(), v.begin() + FEW);
	streams(few);
	clib(few);
	if (N % 4 == 0)
		cxx_regex_work(few);
	for (unsigned k = 0; k < LIBS; k++)
		libs(seed * 7919 + N * LIBS + k);
}

template <size_t... I> void register_all(std::index_sequence<I...>)
{
	static const work_fn table[] = {&work<FIRST + (int)I>...};
	for (work_fn f : table)
		registry().push_back(f);
}

struct Registrar {
	Registrar() { register_all(std::make_index_sequence<COUNT>()); }
} registrar;

} // namespace

#else /* PART_MAIN */

thread_local volatile unsigned long sink;
static volatile sig_atomic_t stop;

std::vector<work_fn> &registry()
{
	static std::vector<work_fn> r;
	return r;
}

static const char *const posix_patterns[] = {
	"^([0-9]+)[/:,|]([0-9.e+-]+)",
	"([a-z]+)-?([0-9]*)$",
	"[[:alpha:]]+[_./:-][0-9]+",
	"^(\\[?[0-9a-f]+\\]?)[ ]+.*(alpha|beta|gamma|theta)",
	"([[:digit:]]{2,})\\.([[:digit:]]+)",
};
static const char *const cxx_patterns[] = {
	R"(^(\d+)[/:,|]([\d.e+-]+))",
	R"(([a-z]+)-?(\d*)$)",
	R"([[:alpha:]]+[_./:-]\d+)",
	R"((\w+)\s+(\w+)?)",
	R"(([0-9a-fA-F]{3,8})(:|/))",
	R"((?:eta|iota|kappa)\d*)",
};
#define NPOSIX (sizeof(posix_patterns) / sizeof(posix_patterns[0]))
#define NCXX (sizeof(cxx_patterns) / sizeof(cxx_patterns[0]))

static regex_t posix_res[NPOSIX];

const regex_t *posix_regex(unsigned i)
{
	return &posix_res[i % NPOSIX];
}

/* Compiled anew now and then: the regex compiler's code runs too. */
const std::regex &cxx_regex(unsigned i)
{
	static thread_local std::regex res[NCXX];
	static thread_local unsigned uses;

	i %= NCXX;
	if (uses++ % 64 == 0 || res[i].mark_count() == 0)
		res[i] = std::regex(cxx_patterns[i], i % 2 ? std::regex::ECMAScript
							   : std::regex::ECMAScript | std::regex::icase);
	return res[i];
}

/*
 * A wide spread of libstdc++.so and libc code, one area per value of k: the
 * libraries' share of distinct addresses comes from how many different
 * functions run, not from how long.
 */
void libs(unsigned k)
{
	char buf[512];
	wchar_t wbuf[256];
	unsigned x = k * 2654435761u;
	double d = (double)(x % 100000) / 7.0 + 0.5;
	long l = (long)(x % 1000003) - 500000;

	switch (k % 36) {
	case 0: { /* wide streams: the wchar_t instantiations of the library */
		std::wostringstream os;
		os << l << L' ' << std::setprecision((int)(k % 17)) << d << L' ' << std::hex << x
		   << L' ' << std::scientific << d * 1e-9 << L" w";
		std::wistringstream is(os.str());
		long a;
		double b;
		is >> a >> b;
		sink += os.str().size() + (unsigned long)a;
		break;
	}
	case 1: {
		std::istringstream is(std::to_string(l) + " " + std::to_string(d) + " ff 017 1e-3 true");
		long a;
		long double b;
		unsigned h, o;
		double e;
		bool t;
		is >> a >> b >> std::hex >> h >> std::oct >> o >> std::dec >> e >> std::boolalpha >> t;
		sink += (unsigned long)a + h + o + t;
		break;
	}
	case 2: {
		static const std::chars_format f[] = {std::chars_format::scientific, std::chars_format::fixed,
						      std::chars_format::hex, std::chars_format::general};
		auto r = std::to_chars(buf, buf + sizeof(buf), d * (k % 1000), f[k % 4], (int)(k % 20));
		auto r2 = std::to_chars(r.ptr, buf + sizeof(buf), (float)d, f[(k + 1) % 4]);
		auto r3 = std::to_chars(r2.ptr, buf + sizeof(buf), (long double)d / 3, f[(k + 2) % 4]);
		float ff;
		double dd;
		std::from_chars(buf, r.ptr, dd, f[k % 4]);
		std::from_chars(r.ptr, r2.ptr, ff, f[(k + 1) % 4]);
		sink += (unsigned long)(r3.ptr - buf) + (unsigned long)dd + (unsigned long)ff;
		break;
	}
	case 3: {
		std::filesystem::path p("/usr/./lib/../share/doc/" + std::to_string(x % 977) + "/x.tar.gz");
		std::filesystem::path q = p.lexically_normal();
		std::filesystem::path r = q.lexically_relative("/usr/share");
		size_t n = 0;
		for (const auto &c : q)
			n += c.native().size();
		sink += n + q.filename().native().size() + q.extension().native().size() +
			r.native().size() + q.parent_path().compare(p) + q.has_stem() + q.stem().native().size();
		break;
	}
	case 4: {
		std::ostringstream os;
		std::tm tm{};
		time_t t = (time_t)(x % 2000000000u);
		gmtime_r(&t, &tm);
		os << std::put_time(&tm, k % 2 ? "%c %Z %j" : "%Y-%m-%d %H:%M:%S %A %B");
		std::istringstream is("2021-03-0" + std::to_string(k % 9 + 1) + " 10:2" + std::to_string(k % 10));
		std::tm tm2{};
		is >> std::get_time(&tm2, "%Y-%m-%d %H:%M");
		sink += os.str().size() + (unsigned long)tm2.tm_min;
		break;
	}
	case 5: {
		std::ostringstream os;
		os << std::showbase << std::put_money((long double)l) << ' ' << std::put_money(std::to_string(x));
		std::istringstream is(std::to_string(x % 100000));
		long double m;
		is >> std::get_money(m);
		sink += os.str().size() + (unsigned long)m;
		break;
	}
	case 6: {
		std::string a = "the quick brown fox " + std::to_string(x), b(a.rbegin(), a.rend());
		a.replace(4, 5, "slow");
		a.insert(0, b, 2, 6);
		a.erase(3, 2);
		b.append(a, 1, 7).resize(b.size() + 9, '*');
		sink += a.find_first_of("xyz") + a.rfind('o') + a.find("fox") + (unsigned long)a.compare(b) +
			b.find_last_not_of('*') + a.substr(2, 5).size() + a.find_first_not_of("eht ");
		break;
	}
	case 7: {
		std::wstring a = L"wide string " + std::to_wstring(x), b = a;
		b.replace(0, 4, L"WIDE");
		a.insert(a.begin() + 2, L'-');
		sink += a.find(L"str") + b.rfind(L'i') + (unsigned long)a.compare(b) + a.find_first_of(L"0123");
		break;
	}
	case 8: {
		std::locale loc = std::locale::classic();
		std::string s = "Mixed Case Text " + std::to_string(x);
		std::use_facet<std::ctype<char>>(loc).toupper(&s[0], &s[0] + s.size());
		const std::collate<char> &co = std::use_facet<std::collate<char>>(loc);
		sink += co.transform(s.data(), s.data() + s.size()).size() + (unsigned long)co.hash(s.data(), s.data() + s.size()) +
			(unsigned long)co.compare(s.data(), s.data() + 3, s.data() + 4, s.data() + 7) +
			(unsigned char)std::use_facet<std::numpunct<char>>(loc).decimal_point();
		break;
	}
	case 9: {
		std::error_code ec((int)(x % 130), k % 2 ? std::generic_category() : std::system_category());
		sink += ec.message().size() + (ec == std::errc::invalid_argument);
		break;
	}
	case 10: {
		std::ostringstream os;
		os << std::boolalpha << (bool)(x & 1) << std::showbase << std::uppercase << std::hex << x << std::oct
		   << ' ' << x << std::dec << std::setfill('_') << std::setw(12) << std::internal << l << ' '
		   << (const void *)&os << ' ' << std::showpoint << std::setprecision(3) << (float)d << ' '
		   << (long double)d;
		sink += os.str().size();
		break;
	}
	case 11: {
		std::string s = std::to_string(l) + " " + std::to_string(d);
		size_t pos;
		sink += (unsigned long)std::stoi(s, &pos) + (unsigned long)std::stod(s.substr(pos)) +
			(unsigned long)std::stof(s.substr(pos)) + std::stoull(std::to_string(x), nullptr, 16);
		break;
	}
	case 12: {
		std::istringstream is("line one\nsecond;line\nthird line " + std::to_string(x) + "\n\nlast");
		std::string line;
		unsigned n = 0;
		while (std::getline(is, line, k % 2 ? '\n' : ';'))
			n += (unsigned)line.size();
		std::stringstream ss;
		ss << "abc " << x;
		ss.seekg(2);
		char c;
		ss.get(c);
		ss.putback(c);
		sink += n + (unsigned long)ss.tellg();
		break;
	}
	case 13:
		try {
			if (k % 3 == 0)
				throw std::runtime_error("runtime " + std::to_string(x));
			std::vector<int> v(3);
			sink += (unsigned long)v.at(x % 5);
		} catch (const std::exception &e) {
			sink += strlen(e.what());
		}
		break;
	case 14: /* libc from here: wide printf and scanf */
		swprintf(wbuf, 256, L"%ld %ls %-8.3f %#x %lc %e|%10.4g", l, L"wide", d, x, L'Z', d * 1e7, d);
		{
			long a;
			double b;
			wchar_t w[32];
			swscanf(wbuf, L"%ld %31ls %lf", &a, w, &b);
			sink += wcslen(wbuf) + (unsigned long)a + wcslen(w);
		}
		break;
	case 15: {
		snprintf(buf, sizeof(buf), "%d 0x%x 017 %f word [abc] %c 42", (int)l, x, d, 'q');
		int a, n;
		unsigned h, o;
		float f;
		char w[32], br[16], c;
		int i;
		sscanf(buf, "%d %x %o %f %31s %*[[]%15[abc]] %c %i%n", &a, &h, &o, &f, w, br, &c, &i, &n);
		sink += (unsigned long)a + h + o + (unsigned long)n;
		break;
	}
	case 16: {
		int dec, sign;
		char *e;
		snprintf(buf, sizeof(buf), "%.17Lg %La", (long double)d / 3, (long double)d);
		long double ld = strtold(buf, &e);
		sink += (unsigned long)ld + (unsigned long)strtof(buf, nullptr) + strtoull("0x1fffe", nullptr, 0) +
			(unsigned long)atof("1.5e3");
		ecvt_r(d, (int)(k % 15 + 1), &dec, &sign, buf, sizeof(buf));
		fcvt_r(d, (int)(k % 6), &dec, &sign, buf + 100, sizeof(buf) - 100);
		gcvt(d, 8, buf + 200);
		sink += (unsigned long)dec + strlen(buf + 200);
		break;
	}
	case 17: {
		static const char *const pats[] = {"^a(b|c)+d$", "([0-9]+)\\.([0-9]+)", "[[:upper:]][[:lower:]]*",
						   "(x|y|z){2,5}q?", "^([^/]*)/(.*)$"};
		regex_t re;
		regmatch_t m[3];
		snprintf(buf, sizeof(buf), "Abc/%u.%u xyzq abccd", x % 100, x % 7);
		if (!regcomp(&re, pats[k % 5], REG_EXTENDED | (k % 2 ? REG_ICASE : 0))) {
			sink += (unsigned long)regexec(&re, buf, 3, m, 0);
			regfree(&re);
		}
		break;
	}
	case 18: {
		struct tm tm{};
		time_t t = (time_t)(x % 2000000000u);
		localtime_r(&t, &tm);
		strftime(buf, sizeof(buf), "%a %d %b %Y %T %z %G-W%V-%u", &tm);
		struct tm tm2{};
		strptime(buf, "%a %d %b %Y %T", &tm2);
		sink += (unsigned long)timegm(&tm2) + (unsigned long)mktime(&tm) + strlen(asctime_r(&tm, buf + 256));
		wcsftime(wbuf, 256, L"%c", &tm);
		break;
	}
	case 19: {
		void *root = nullptr;
		static thread_local long keys[64];
		auto cmp = [](const void *a, const void *b) {
			long x1 = *(const long *)a, y1 = *(const long *)b;
			return x1 < y1 ? -1 : x1 > y1;
		};
		for (int i = 0; i < 64; i++) {
			keys[i] = (long)((x + (unsigned)i * 40503u) % 1000);
			tsearch(&keys[i], &root, cmp);
		}
		sink += tfind(&keys[7], &root, cmp) != nullptr;
		for (int i = 0; i < 64; i += 2)
			tdelete(&keys[i], &root, cmp);
		tdestroy(root, [](void *) {});
		break;
	}
	case 20: {
		struct hsearch_data h{};
		ENTRY e, *r;
		static thread_local char keys[32][16];
		hcreate_r(64, &h);
		for (int i = 0; i < 32; i++) {
			snprintf(keys[i], sizeof(keys[i]), "k%u", x + (unsigned)i);
			e.key = keys[i];
			e.data = nullptr;
			hsearch_r(e, ENTER, &r, &h);
		}
		e.key = keys[x % 32];
		sink += hsearch_r(e, FIND, &r, &h);
		hdestroy_r(&h);
		break;
	}
	case 21: {
		long a[200];
		for (int i = 0; i < 200; i++)
			a[i] = (long)((x ^ (unsigned)i * 7919u) % 10007);
		auto cmp = [](const void *p, const void *q, void *arg) {
			long m = *(const long *)arg, x1 = *(const long *)p % m, y1 = *(const long *)q % m;
			return x1 < y1 ? -1 : x1 > y1;
		};
		long mod = (long)(k % 97 + 3);
		qsort_r(a, 200, sizeof(long), cmp, &mod);
		long key = a[x % 200];
		size_t n = 200;
		auto cmp2 = [](const void *p, const void *q) {
			long x1 = *(const long *)p, y1 = *(const long *)q;
			return x1 < y1 ? -1 : x1 > y1;
		};
		sink += lfind(&key, a, &n, sizeof(long), cmp2) != nullptr;
		qsort(a, 200, sizeof(long), cmp2);
		sink += bsearch(&key, a, 200, sizeof(long), cmp2) != nullptr;
		break;
	}
	case 22: {
		const char *src = "multibyte: \xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 end";
		mbstate_t st{};
		const char *p = src;
		size_t n = mbsrtowcs(wbuf, &p, 256, &st);
		sink += n + wcstombs(buf, wbuf, sizeof(buf)) + (unsigned long)wcstol(L"  12345xyz", nullptr, 10) +
			(unsigned long)wcstod(L"3.25e2", nullptr) + (wcsstr(wbuf, L"end") != nullptr) +
			(unsigned long)wcscmp(wbuf, L"multi");
		break;
	}
	case 23: {
		snprintf(buf, sizeof(buf), "Hello, World: the %u needles in the HAYSTACK, %ld", x, l);
		char *dup = strndup(buf, 40), *save = dup, *tok;
		unsigned n = 0;
		while ((tok = strsep(&save, " ,:")))
			n += (unsigned)strlen(tok);
		free(dup);
		sink += n + (memmem(buf, strlen(buf), "needle", 6) != nullptr) + (strcasestr(buf, "haystack") != nullptr) +
			(unsigned long)strncasecmp(buf, "HELLO", 5) + (strpbrk(buf, "0123456789") != nullptr) +
			(unsigned long)strcoll(buf, "Hello") + strxfrm(buf + 300, buf, 200) +
			(memrchr(buf, 'e', strlen(buf)) != nullptr) + (unsigned long)strverscmp("a10", "a9");
		break;
	}
	case 24: {
		char *mem;
		size_t sz;
		FILE *f = open_memstream(&mem, &sz);
		fprintf(f, "%s %d %08.3f\n", "stream", (int)x, d);
		fputs("line two\n", f);
		for (int i = 0; i < 10; i++)
			fputc('a' + i, f);
		fwrite(buf, 1, 10, f);
		fclose(f);
		FILE *g = fmemopen(mem, sz, "r");
		char w[32];
		int a;
		double b;
		if (fscanf(g, "%31s %d %lf", w, &a, &b) == 3)
			sink += (unsigned long)a;
		char *line = nullptr;
		size_t cap = 0;
		while (getline(&line, &cap, g) > 0)
			sink += cap;
		free(line);
		fclose(g);
		free(mem);
		break;
	}
	case 25: {
		char *s;
		if (asprintf(&s, "%s-%u-%.*f-%Lg", "asprintf", x, (int)(k % 9), d, (long double)l) > 0) {
			sink += strlen(s);
			free(s);
		}
		break;
	}
	case 26: {
		struct in_addr a4;
		struct in6_addr a6;
		snprintf(buf, sizeof(buf), "%u.%u.%u.%u", x & 255, (x >> 8) & 255, (x >> 16) & 255, x >> 24);
		inet_pton(AF_INET, buf, &a4);
		inet_ntop(AF_INET, &a4, buf + 100, 64);
		inet_pton(AF_INET6, "2001:db8::ff00:42:8329", &a6);
		a6.s6_addr[15] = (unsigned char)x;
		inet_ntop(AF_INET6, &a6, buf + 200, 64);
		struct ether_addr ea;
		ether_aton_r("01:23:45:67:89:ab", &ea);
		ether_ntoa_r(&ea, buf + 300);
		sink += strlen(buf + 100) + strlen(buf + 200) + inet_addr("10.1.2.3");
		break;
	}
	case 27: {
		char a0[] = "prog", a1[] = "--alpha=3", a2[] = "-b", a3[] = "x", a4[] = "--gamma", a5[] = "rest";
		char *argv[] = {a0, a1, a2, a3, a4, a5, nullptr};
		static const struct option opts[] = {{"alpha", required_argument, nullptr, 'a'},
						     {"beta", required_argument, nullptr, 'b'},
						     {"gamma", no_argument, nullptr, 'g'},
						     {nullptr, 0, nullptr, 0}};
		static std::mutex lock; /* getopt's state is global */
		std::lock_guard<std::mutex> guard(lock);
		int c;
		optind = 0;
		opterr = 0;
		while ((c = getopt_long(6, argv, "a:b:g", opts, nullptr)) != -1)
			sink += (unsigned)c;
		break;
	}
	case 28: {
		char *argz = nullptr, *envz = nullptr;
		size_t len = 0, elen = 0;
		argz_create_sep("one:two:three:four", ':', &argz, &len);
		argz_add(&argz, &len, "five");
		argz_insert(&argz, &len, argz, "zero");
		sink += argz_count(argz, len);
		envz_add(&envz, &elen, "HOME", "/root");
		envz_add(&envz, &elen, "PATH", "/bin");
		sink += strlen(envz_get(envz, elen, "PATH"));
		argz_stringify(argz, len, ' ');
		sink += strlen(argz);
		free(argz);
		free(envz);
		break;
	}
	case 29: {
		struct random_data rd{};
		static thread_local char state[128];
		int32_t r;
		initstate_r(x, state, sizeof(state), &rd);
		random_r(&rd, &r);
		struct drand48_data dd;
		double dr;
		srand48_r(x, &dd);
		drand48_r(&dd, &dr);
		unsigned short xs[3] = {(unsigned short)x, 1, 2};
		unsigned s = x;
		sink += (unsigned long)r + (unsigned long)(dr * 100) + (unsigned long)(erand48(xs) * 10) + (unsigned)rand_r(&s);
		break;
	}
	case 30:
		strfmon(buf, sizeof(buf), "%n %=*#10.2n %!i", d, d * 3, d / 2);
		sink += strlen(buf) + strlen(strsignal((int)(x % 31 + 1)));
		strerror_r((int)(x % 130), buf, sizeof(buf));
		sink += strlen(buf) + (strerrorname_np((int)(x % 130)) != nullptr);
		break;
	case 31: {
		void *a = calloc(x % 100 + 1, 16), *b = aligned_alloc(64, 256), *c = nullptr;
		if (posix_memalign(&c, 128, x % 5000 + 1) == 0)
			free(c);
		a = realloc(a, x % 20000 + 1);
		sink += malloc_usable_size(a) + malloc_usable_size(b);
		free(a);
		free(b);
		break;
	}
	case 32: {
		snprintf(buf, sizeof(buf), "/usr/lib/x86_64/%u/libfoo.so.%u", x % 100, x % 7);
		char *copy = strdup(buf);
		sink += strlen(basename(copy)) + (unsigned long)a64l(l64a(x % 1000000)) + (unsigned)ffsl(l) +
			(unsigned long)ldiv(l, 7).rem + (unsigned long)lldiv(l, 13).quot;
		free(copy);
		break;
	}
	case 33: {
		char opt[] = "ro,size=10k,mode=0755,uid=0", *p = opt, *val;
		static char ro[] = "ro", size[] = "size", mode[] = "mode";
		char *const toks[] = {ro, size, mode, nullptr};
		while (*p)
			sink += (unsigned)getsubopt(&p, toks, &val) + 1;
		break;
	}
	case 34:
		snprintf(buf, sizeof(buf), "%'.3f %'ld %Lf %5.1e %-+#12.4g %.0f %g", d * 1e6, l * 1000, (long double)d,
			 d, d, d * 1e15, d / 1e12);
		sink += strlen(buf);
		break;
	default: {
		const char *pats[] = {"*.c", "[a-m]*/?*", "**/x*", "\\*lit*", "*[!0-9]"};
		snprintf(buf, sizeof(buf), "src/x%u.c", x % 1000);
		sink += (unsigned)fnmatch(pats[k % 5], buf, k % 2 ? FNM_PATHNAME : FNM_CASEFOLD) +
			(unsigned)glob_pattern_p(pats[k % 5], 0);
	}
	}
}

static void on_usr1(int)
{
	stop = 1;
}

static void worker(unsigned t)
{
	std::vector<work_fn> r = registry();

	// Shuffled: neighbouring instantiations do not run back to back, nor in step across threads.
	std::shuffle(r.begin(), r.end(), std::mt19937(42 + t));
	for (unsigned seed = t << 20; !stop; seed++)
		for (size_t i = 0; i < r.size() && !stop; i++)
			r[i](seed);
}

int main(int argc, char **argv)
{
	unsigned nthreads = argc > 1 ? (unsigned)atoi(argv[1]) : 2;
	std::vector<std::thread> threads;

	signal(SIGUSR1, on_usr1);
	for (size_t i = 0; i < NPOSIX; i++)
		if (regcomp(&posix_res[i], posix_patterns[i], REG_EXTENDED))
			return 1;
	fprintf(stderr, "workload: %zu instantiations, %u threads\n", registry().size(), nthreads);
	for (unsigned t = 1; t < nthreads; t++)
		threads.emplace_back(worker, t);
	worker(0);
	for (auto &th : threads)
		th.join();
	printf("done\n");
	fflush(stdout);
	for (;;)
		pause();
}
#endif
