// SPDX-License-Identifier: GPL-2.0-or-later
/* Frame colours: hue families, name classification, the --cp colour map, diff and background. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/common/cleanup.h"
#include "flamed/formats/palette.h"
#include "flamed/common/strpool.h"
#include "common/parse.h"

/*
 * A colour is a hue family (chosen by the palette and the frame's name)
 * plus a variation of three 16-bit values taken from one 64-bit word: a
 * hash of the name (--hash) or the next number of a fixed-seed sequence.
 * All arithmetic is integer so that the same input gives the same bytes
 * on every machine.
 */
enum pal_family {
	PF_HOT,
	PF_MEM,
	PF_IO,
	PF_RED,
	PF_GREEN,
	PF_BLUE,
	PF_AQUA,
	PF_YELLOW,
	PF_PURPLE,
	PF_ORANGE,
};

/*
 * Component i is base[i] + span[i] * v[src[i]] with v in [0, 1). Two
 * components that share a source move together, which keeps a family's hue
 * (yellow needs r == g, aqua g == b) while the variation changes its
 * lightness. base + span never exceeds 256, so nothing wraps.
 */
struct pal_family_def {
	uint8_t base[3];
	uint8_t span[3];
	uint8_t src[3];
};

static const struct pal_family_def pal_families[] = {
	/* Red through orange to yellow: only green moves far. */
	[PF_HOT] = {{215, 45, 0}, {40, 165, 55}, {0, 1, 2}},
	/* Greens leaning to sea green. */
	[PF_MEM] = {{0, 180, 50}, {55, 65, 90}, {2, 0, 1}},
	/* Steel blues: red and green rise together. */
	[PF_IO] = {{55, 85, 200}, {55, 55, 55}, {0, 0, 1}},
	[PF_RED] = {{200, 35, 35}, {55, 60, 60}, {0, 1, 1}},
	[PF_GREEN] = {{45, 190, 45}, {70, 65, 70}, {1, 0, 1}},
	[PF_BLUE] = {{65, 65, 200}, {65, 65, 55}, {1, 1, 0}},
	[PF_AQUA] = {{40, 170, 170}, {70, 65, 65}, {1, 0, 0}},
	[PF_YELLOW] = {{180, 180, 25}, {65, 65, 55}, {0, 0, 1}},
	[PF_PURPLE] = {{175, 70, 175}, {70, 65, 70}, {0, 1, 0}},
	/* Hue stays between about 19 and 43 degrees: never yellow, never red. */
	[PF_ORANGE] = {{215, 105, 0}, {40, 50, 35}, {0, 1, 2}},
};

/* The annotations FlameGraph's collapsers append to a frame name. */
enum pal_annot {
	PA_NONE,
	PA_KERNEL,
	PA_JIT,
	PA_INLINE,
	PA_WAKER,
	PA_PYTHON, /* flamed's own: a Python function (lib/profile/fold.c) */
};

#define PAL_ANNOT_LEN 4 /* "_[k]" */
static const char pal_annot_suffix[][PAL_ANNOT_LEN + 1] = {
	[PA_NONE] = "",	      [PA_KERNEL] = "_[k]", [PA_JIT] = "_[j]",
	[PA_INLINE] = "_[i]", [PA_WAKER] = "_[w]", [PA_PYTHON] = "_[p]",
};

static const char *const pal_kind_names[] = {
	[FL_PALETTE_HOT] = "hot",	[FL_PALETTE_MEM] = "mem",
	[FL_PALETTE_IO] = "io",		[FL_PALETTE_WAKEUP] = "wakeup",
	[FL_PALETTE_CHAIN] = "chain",	[FL_PALETTE_JAVA] = "java",
	[FL_PALETTE_JS] = "js",		[FL_PALETTE_PERL] = "perl",
	[FL_PALETTE_RED] = "red",	[FL_PALETTE_GREEN] = "green",
	[FL_PALETTE_BLUE] = "blue",	[FL_PALETTE_AQUA] = "aqua",
	[FL_PALETTE_YELLOW] = "yellow", [FL_PALETTE_PURPLE] = "purple",
	[FL_PALETTE_ORANGE] = "orange",
};

/*
 * --cp files are read line by line into a buffer of this size; a longer
 * line is skipped, so memory stays bounded whatever the file holds. A name
 * is stored in the map only if its saved line fits, so that everything
 * saved loads again.
 */
#define PAL_MAP_MAX_LINE (64 * 1024)
#define PAL_MAP_COLOUR_MAX "->rgb(255,255,255)"
#define PAL_MAP_MAX_NAME (PAL_MAP_MAX_LINE - (sizeof(PAL_MAP_COLOUR_MAX) - 1))

/* Fixed, so the default (non --hash) colours of a graph are the same in every run. */
#define PAL_RNG_SEED 0x6a09e667f3bcc909ULL

/*
 * The colour of a map name, by the name's id in the pool. A name can be in
 * the pool and not in the map (set false): a name looked up that cannot be
 * saved, or whose colour found no memory.
 */
struct pal_color {
	struct fl_rgb rgb;
	bool set;
};

struct fl_palette {
	enum fl_palette_kind kind;
	bool hash;
	uint64_t rng;

	bool map; /* a colour map was loaded: remember every colour handed out */
	/*
	 * The map's names, in full: the annotation included. A waker frame of
	 * the chain palette without an annotation is named NAME "_[w]": that is
	 * how a collapser would have annotated it, and it keeps its two colours
	 * (on- and off-CPU side) apart in the file. Names with a NUL cannot be
	 * pool strings; none can be saved as a line either.
	 */
	struct fl_strpool *names;
	struct pal_color *colors; /* by name id; cap_colors long, unset past the last set */
	/* Sort scratch for save_map, as long as colors, so that saving needs no memory. */
	uint32_t *order;
	size_t cap_colors;
	/* PAL_MAP_MAX_LINE bytes: the line being loaded, or a waker's name with its "_[w]". */
	char *scratch;
};

static const struct fl_rgb pal_grey = {168, 168, 168};

int fl_palette__parse_kind(const char *name, enum fl_palette_kind *ret)
{
	size_t i;

	if (!name || !ret)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(pal_kind_names); i++) {
		if (strcmp(name, pal_kind_names[i]) == 0) {
			*ret = (enum fl_palette_kind)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *fl_palette__kind_name(enum fl_palette_kind kind)
{
	if ((unsigned)kind >= ARRAY_SIZE(pal_kind_names))
		return NULL;
	return pal_kind_names[kind];
}

int fl_palette__new(const struct fl_palette_opts *opts, struct fl_palette **ret)
{
	struct fl_palette *p;

	if (!ret)
		return -EINVAL;
	if (opts && (unsigned)opts->kind >= ARRAY_SIZE(pal_kind_names))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->kind = opts ? opts->kind : FL_PALETTE_HOT;
	p->hash = opts ? opts->hash : false;
	p->rng = PAL_RNG_SEED;
	*ret = p;
	return 0;
}

void fl_palette__free(struct fl_palette *p)
{
	if (!p)
		return;
	fl_strpool__free(p->names);
	free(p->colors);
	free(p->order);
	free(p->scratch);
	free(p);
}

/* splitmix64: one add and a mix per colour, and every seed gives a full-period sequence. */
static uint64_t pal_next_random(struct fl_palette *p)
{
	uint64_t z = (p->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static struct fl_rgb pal_family_color(enum pal_family fam, uint64_t vary)
{
	const struct pal_family_def *d = &pal_families[fam];
	uint32_t v[3], c[3];
	int i;

	v[0] = (uint32_t)(vary & 0xffff);
	v[1] = (uint32_t)((vary >> 16) & 0xffff);
	v[2] = (uint32_t)((vary >> 32) & 0xffff);
	for (i = 0; i < 3; i++)
		c[i] = d->base[i] + ((d->span[i] * v[d->src[i]]) >> 16);
	return (struct fl_rgb){(uint8_t)c[0], (uint8_t)c[1], (uint8_t)c[2]};
}

/* The annotation at the end of name, and the length of the name without it. */
static enum pal_annot pal_split_annot(const char *name, size_t len, size_t *stem_len)
{
	enum pal_annot a = PA_NONE;

	*stem_len = len;
	if (len < PAL_ANNOT_LEN || name[len - 4] != '_' || name[len - 3] != '[' ||
	    name[len - 1] != ']')
		return PA_NONE;
	switch (name[len - 2]) {
	case 'k':
		a = PA_KERNEL;
		break;
	case 'j':
		a = PA_JIT;
		break;
	case 'i':
		a = PA_INLINE;
		break;
	case 'w':
		a = PA_WAKER;
		break;
	case 'p':
		a = PA_PYTHON;
		break;
	default:
		return PA_NONE;
	}
	*stem_len = len - PAL_ANNOT_LEN;
	return a;
}

static bool pal_has(const char *s, size_t len, const char *needle)
{
	return len && memmem(s, len, needle, strlen(needle)) != NULL;
}

static bool pal_starts_with(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && memcmp(s, prefix, n) == 0;
}

/* ASCII only: the locale must not change a colour. */
static bool pal_is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool pal_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Length of the Java identifier at the start of s (letters, digits, '_', '$'), or 0. */
static size_t pal_java_ident_len(const char *s, size_t len)
{
	size_t i;

	if (!len || !(pal_is_alpha(s[0]) || s[0] == '_' || s[0] == '$'))
		return 0;
	for (i = 1; i < len; i++) {
		if (!(pal_is_alpha(s[i]) || pal_is_digit(s[i]) || s[i] == '_' || s[i] == '$'))
			break;
	}
	return i;
}

/*
 * A Java method: "java/lang/Thread.run" (async-profiler), "Ljava/lang/
 * Thread;::run" (perf-map-agent), or "java.util.HashMap.get". Both forms
 * must start with a package: identifier '/' identifier, or at least three
 * dotted identifiers. That leaves out what merely contains '/' or '.':
 * thread roots ("java-1234/1240", "kworker/0:1"), C++'s "operator/", gcc
 * clones of C functions ("memcpy.part.0", "foo.cold"), "[libc.so.6]".
 */
static bool pal_is_java_method(const char *s, size_t len)
{
	size_t n = pal_java_ident_len(s, len), i, idents;

	if (!n)
		return false;
	if (n < len && s[n] == '/')
		return pal_java_ident_len(s + n + 1, len - n - 1) > 0;
	for (i = n, idents = 1; i < len && s[i] == '.'; i += n, idents++) {
		n = pal_java_ident_len(s + i + 1, len - i - 1);
		if (!n)
			break;
		n++; /* the dot */
	}
	return idents >= 3;
}

/* flamegraph.pl's Java package test: "java/", "Ljavax/", ... at the start. */
static bool pal_is_java_pkg(const char *s, size_t len)
{
	static const char *const pkgs[] = {"java/", "javax/", "jdk/", "net/", "org/",
					   "com/",  "io/",    "sun/"};

	if (len && s[0] == 'L') {
		s++;
		len--;
	}
	for (size_t i = 0; i < ARRAY_SIZE(pkgs); i++)
		if (pal_starts_with(s, len, pkgs[i]))
			return true;
	return false;
}

/* flamegraph.pl's JavaScript test: a '/' and, after it, ".js". */
static bool pal_has_js_path(const char *s, size_t len)
{
	const char *slash = memchr(s, '/', len);

	return slash && pal_has(slash, len - (size_t)(slash - s), ".js");
}

/* C++ (or Rust): demangled, with "::", or still Itanium-mangled, as flamed's own symbols are. */
static bool pal_is_cxx(const char *s, size_t len)
{
	return pal_has(s, len, "::") || pal_starts_with(s, len, "_Z");
}

/*
 * V8's perf map names its code objects KIND ":" NAME: "LazyCompile:~foo
 * /app/x.js:3", "JS:*foo", "Builtin:ArrayMap", "Stub:CEntry",
 * "BytecodeHandler:Ldar". A C name has no ':' and a C++ one has "::".
 */
static bool pal_is_v8_code(const char *s, size_t len)
{
	size_t i;

	if (!len || !(s[0] >= 'A' && s[0] <= 'Z'))
		return false;
	for (i = 1; i < len && pal_is_alpha(s[i]); i++)
		;
	return i + 1 < len && s[i] == ':' && s[i + 1] != ':';
}

/*
 * A JavaScript frame names its source file. A bare '/' is not enough,
 * unlike flamegraph.pl: thread roots ("node-42/43") would turn green.
 */
static bool pal_is_js(const char *s, size_t len)
{
	return pal_is_v8_code(s, len) || pal_has(s, len, ".js") || pal_has(s, len, ".mjs") ||
	       pal_has(s, len, ".cjs");
}

/* ".pl" or ".pm" as a file extension: not followed by more of a word (".plt", ".plugin"). */
static bool pal_has_perl_file(const char *s, size_t len)
{
	static const char *const exts[] = {".pl", ".pm"};
	size_t e, i;

	for (e = 0; e < ARRAY_SIZE(exts); e++) {
		const char *at = s;
		size_t left = len;

		while (left >= 3 && (at = memmem(at, left, exts[e], 3))) {
			i = (size_t)(at - s) + 3;
			if (i == len || !(pal_is_alpha(s[i]) || pal_is_digit(s[i]) || s[i] == '_'))
				return true;
			at++;
			left = len - (size_t)(at - s);
		}
	}
	return false;
}

/*
 * "main::foo", "Foo::Bar::baz", "main::__ANON__": words joined by "::" and
 * nothing else. C++ names usually carry more ('(', '<', '~', spaces,
 * "operator"); a bare "ns::f" reads as Perl, the likelier author of a
 * frame in a profile coloured with --colors perl.
 */
static bool pal_is_perl_sub(const char *s, size_t len)
{
	bool sep = false;
	size_t i = 0;

	while (i < len) {
		size_t start = i;

		while (i < len && (pal_is_alpha(s[i]) || pal_is_digit(s[i]) || s[i] == '_'))
			i++;
		if (i == start)
			return false;
		if (i == len)
			break;
		if (i + 2 >= len || s[i] != ':' || s[i + 1] != ':')
			return false;
		sep = true;
		i += 2;
	}
	return sep;
}

/*
 * Perl: a named Perl file, a package-qualified sub, or the interpreter
 * itself (Perl_pp_entersub, perl_run) and XS glue (XS_Foo_bar), which is
 * where a native profile of perl spends the Perl code's time.
 */
static bool pal_is_perl(const char *s, size_t len)
{
	return pal_starts_with(s, len, "Perl_") || pal_starts_with(s, len, "perl_") ||
	       pal_starts_with(s, len, "XS_") || pal_has_perl_file(s, len) ||
	       pal_is_perl_sub(s, len);
}

/*
 * The hue family of a frame. Annotations win in every palette; the
 * language palettes then tell the language from the name's shape, the
 * most specific test first (a Java name may contain "::").
 */
static enum pal_family pal_family_of(enum fl_palette_kind kind, const char *s, size_t len,
				     enum pal_annot annot)
{
	switch (annot) {
	case PA_KERNEL:
		return PF_ORANGE;
	case PA_JIT:
		return PF_GREEN;
	case PA_INLINE:
	case PA_WAKER:
		return PF_AQUA;
	case PA_PYTHON:
		return PF_BLUE;
	case PA_NONE:
		break;
	}
	switch (kind) {
	case FL_PALETTE_HOT:
		return PF_HOT;
	case FL_PALETTE_MEM:
		return PF_MEM;
	case FL_PALETTE_IO:
		return PF_IO;
	case FL_PALETTE_WAKEUP:
	case FL_PALETTE_AQUA:
		return PF_AQUA;
	case FL_PALETTE_CHAIN: /* its waker frames arrive as PA_WAKER */
	case FL_PALETTE_BLUE:
		return PF_BLUE;
	case FL_PALETTE_JAVA:
		if (pal_is_java_method(s, len))
			return PF_GREEN;
		return pal_is_cxx(s, len) ? PF_YELLOW : PF_RED;
	case FL_PALETTE_JS:
		if (pal_is_cxx(s, len))
			return PF_YELLOW;
		return pal_is_js(s, len) ? PF_GREEN : PF_RED;
	case FL_PALETTE_PERL:
		if (pal_is_perl(s, len))
			return PF_GREEN;
		return pal_is_cxx(s, len) ? PF_YELLOW : PF_RED;
	case FL_PALETTE_RED:
		return PF_RED;
	case FL_PALETTE_GREEN:
		return PF_GREEN;
	case FL_PALETTE_YELLOW:
		return PF_YELLOW;
	case FL_PALETTE_PURPLE:
		return PF_PURPLE;
	case FL_PALETTE_ORANGE:
		return PF_ORANGE;
	}
	return PF_HOT;
}

/* Makes room for the colour of id, the new slots unset. On failure nothing changes. */
static int pal_map_reserve(struct fl_palette *p, uint32_t id)
{
	struct pal_color *colors;
	uint32_t *order;
	size_t cap;

	if (id < p->cap_colors)
		return 0;
	/* The pool also holds names without a colour, so an id may skip past a doubling. */
	if (p->cap_colors > SIZE_MAX / 2 / sizeof(*colors))
		return -ENOMEM;
	cap = p->cap_colors ? p->cap_colors * 2 : 256;
	if (cap <= id)
		cap = (size_t)id + 1;
	order = realloc(p->order, cap * sizeof(*order));
	if (!order)
		return -ENOMEM;
	p->order = order;
	colors = realloc(p->colors, cap * sizeof(*colors));
	if (!colors)
		return -ENOMEM;
	memset(colors + p->cap_colors, 0, (cap - p->cap_colors) * sizeof(*colors));
	p->colors = colors;
	p->cap_colors = cap;
	return 0;
}

/* Sets the colour of the name id (adding it to the map). Returns 0 or -ENOMEM (the map is unchanged). */
static int pal_map_set(struct fl_palette *p, uint32_t id, struct fl_rgb rgb)
{
	int err = pal_map_reserve(p, id);

	if (err)
		return err;
	p->colors[id] = (struct pal_color){rgb, true};
	return 0;
}

/*
 * The map name of a frame of len bytes: name itself, or for a waker without
 * an annotation NAME "_[w]" in the scratch buffer (*key_len bytes). NULL
 * when no such name can be in the map: no line loaded holds a NUL or a
 * newline, nor a name longer than the line buffer.
 */
static const char *pal_map_key(struct fl_palette *p, const char *name, size_t len, bool woken,
			       size_t *key_len)
{
	*key_len = len + (woken ? PAL_ANNOT_LEN : 0);
	if (*key_len > PAL_MAP_MAX_LINE || memchr(name, '\0', len) || memchr(name, '\n', len))
		return NULL;
	if (!woken)
		return name;
	memcpy(p->scratch, name, len);
	memcpy(p->scratch + len, pal_annot_suffix[PA_WAKER], PAL_ANNOT_LEN);
	return p->scratch;
}

/*
 * --hash colours are flamegraph.pl's, so that graphs made by both tools
 * compare: the variation is its "name hash" (the first three bytes,
 * weighted 1, 0.7, 0.49, each byte's value mod 10, 11, 12 over 9, 10, 11,
 * after everything up to a '`' (a module prefix) is dropped), of the name
 * for v1 and of the name reversed for v2 and v3; the family and the
 * formulas are its own too (hot: r 205 + 50 v3, g 230 v1, b 55 v2), with
 * annotations honoured only by the language palettes, as there.
 */
static double fg_namehash(const char *s, size_t len, bool reversed)
{
	double vector = 0, weight = 1, max = 1;
	int mod = 10;
	size_t from = 0;

	if (!len)
		return 1;
	if (!reversed) {
		/* The first "X...`", lazily: a module prefix ("libc.so.6`malloc"). */
		const char *tick = len > 1 ? memchr(s + 1, '`', len - 1) : NULL;

		if (tick)
			from = (size_t)(tick - s) + 1;
	} else {
		/* The same on the reversed name: its first '`' after its first byte. */
		for (size_t i = len - 1; i-- > 0;)
			if (s[i] == '`') {
				len = i;
				break;
			}
	}
	for (size_t k = 0; k < 3 && from + k < len; k++) {
		unsigned char c = (unsigned char)(reversed ? s[len - 1 - k] : s[from + k]);
		int i = c % mod;

		vector += ((double)i / (double)(mod++ - 1)) * weight;
		max += 1 * weight;
		weight *= 0.70;
	}
	return 1 - vector / max;
}

static struct fl_rgb fg_rgb(int r, int g, int b)
{
	return (struct fl_rgb){(uint8_t)r, (uint8_t)g, (uint8_t)b};
}

/* annot: the frame's annotation (pal_split_annot()), PA_WAKER for a chain's waker frames. */
static struct fl_rgb fg_hash_color(enum fl_palette_kind kind, const char *s, size_t len,
				   enum pal_annot annot)
{
	double v1 = fg_namehash(s, len, false), v2 = fg_namehash(s, len, true), v3 = v2;
	enum fl_palette_kind k = kind;

	switch (kind) {
	case FL_PALETTE_HOT:
		return fg_rgb(205 + (int)(50 * v3), (int)(230 * v1), (int)(55 * v2));
	case FL_PALETTE_MEM:
		return fg_rgb(0, 190 + (int)(50 * v2), (int)(210 * v1));
	case FL_PALETTE_IO: {
		int r = 80 + (int)(60 * v1);

		return fg_rgb(r, r, 190 + (int)(55 * v2));
	}
	case FL_PALETTE_JAVA:
		if (annot == PA_JIT)
			k = FL_PALETTE_GREEN;
		else if (annot == PA_INLINE)
			k = FL_PALETTE_AQUA;
		else if (pal_is_java_pkg(s, len) || pal_has(s, len, ":::"))
			k = FL_PALETTE_GREEN;
		else if (pal_has(s, len, "::"))
			k = FL_PALETTE_YELLOW;
		else if (annot == PA_KERNEL)
			k = FL_PALETTE_ORANGE;
		else
			k = FL_PALETTE_RED;
		break;
	case FL_PALETTE_JS:
		if (annot == PA_JIT)
			k = memchr(s, '/', len) ? FL_PALETTE_GREEN : FL_PALETTE_AQUA;
		else if (pal_has(s, len, "::"))
			k = FL_PALETTE_YELLOW;
		else if (pal_has_js_path(s, len))
			k = FL_PALETTE_GREEN;
		else if (memchr(s, ':', len))
			k = FL_PALETTE_AQUA;
		else if (len == 1 && s[0] == ' ')
			k = FL_PALETTE_GREEN;
		else if (pal_has(s, len, "_[k]"))
			k = FL_PALETTE_ORANGE;
		else
			k = FL_PALETTE_RED;
		break;
	case FL_PALETTE_PERL:
		if (pal_has(s, len, "::"))
			k = FL_PALETTE_YELLOW;
		else if (pal_has(s, len, "Perl") || pal_has(s, len, ".pl"))
			k = FL_PALETTE_GREEN;
		else if (annot == PA_KERNEL)
			k = FL_PALETTE_ORANGE;
		else
			k = FL_PALETTE_RED;
		break;
	case FL_PALETTE_WAKEUP:
		k = FL_PALETTE_AQUA;
		break;
	case FL_PALETTE_CHAIN:
		k = annot == PA_WAKER ? FL_PALETTE_AQUA : FL_PALETTE_BLUE;
		break;
	default:
		break;
	}
	switch (k) {
	case FL_PALETTE_RED: {
		int x = 50 + (int)(80 * v1);

		return fg_rgb(200 + (int)(55 * v1), x, x);
	}
	case FL_PALETTE_GREEN: {
		int x = 50 + (int)(60 * v1);

		return fg_rgb(x, 200 + (int)(55 * v1), x);
	}
	case FL_PALETTE_BLUE: {
		int x = 80 + (int)(60 * v1);

		return fg_rgb(x, x, 205 + (int)(50 * v1));
	}
	case FL_PALETTE_YELLOW: {
		int x = 175 + (int)(55 * v1);

		return fg_rgb(x, x, 50 + (int)(20 * v1));
	}
	case FL_PALETTE_PURPLE: {
		int x = 190 + (int)(65 * v1);

		return fg_rgb(x, 80 + (int)(60 * v1), x);
	}
	case FL_PALETTE_AQUA:
		return fg_rgb(50 + (int)(60 * v1), 165 + (int)(55 * v1), 165 + (int)(55 * v1));
	case FL_PALETTE_ORANGE:
		return fg_rgb(190 + (int)(65 * v1), 90 + (int)(65 * v1), 0);
	default:
		return fg_rgb(0, 0, 0);
	}
}

struct fl_rgb fl_palette__color(struct fl_palette *p, const char *name, size_t len, unsigned flags)
{
	const char *key = NULL;
	enum pal_annot annot;
	size_t stem_len, key_len = 0;
	struct fl_rgb rgb;
	uint32_t id = 0;
	bool woken;
	int err = 0;

	if (!p || (!name && len))
		return pal_grey;
	if (!len)
		name = "";
	if (len == 1 && name[0] == '-')
		return pal_grey;
	annot = pal_split_annot(name, len, &stem_len);
	/* Honoured by chain only: the other palettes colour both sides of a chain alike. */
	woken = annot == PA_NONE && p->kind == FL_PALETTE_CHAIN && (flags & FL_COLOR_WAKER);
	if (woken)
		annot = PA_WAKER;
	if (p->map) {
		/* Interning a name already in the pool finds it and allocates nothing. */
		key = pal_map_key(p, name, len, woken, &key_len);
		if (key)
			err = fl_strpool__intern(p->names, key, key_len, &id);
		if (key && !err && id < p->cap_colors && p->colors[id].set)
			return p->colors[id].rgb;
	}
	if (p->hash)
		rgb = fg_hash_color(p->kind, name, len, annot);
	else
		rgb = pal_family_color(pal_family_of(p->kind, name, stem_len, annot),
				       pal_next_random(p));
	/* A name whose line would not load again is coloured, not remembered. */
	if (!key || key_len > PAL_MAP_MAX_NAME)
		return rgb;
	if (err || pal_map_set(p, id, rgb) < 0)
		return pal_grey;
	return rgb;
}

/* One component of "rgb(R,G,B)": 1 to 3 digits, at most 255. Advances *i past it. */
static int pal_parse_component(const char *s, size_t len, size_t *i, uint8_t *v)
{
	unsigned int x = 0;
	size_t n = 0;

	while (*i < len && pal_is_digit(s[*i]) && n < 4) {
		x = x * 10 + (unsigned int)(s[*i] - '0');
		(*i)++;
		n++;
	}
	if (!n || n > 3 || x > 255)
		return -EINVAL;
	*v = (uint8_t)x;
	return 0;
}

static bool pal_expect(const char *s, size_t len, size_t *i, const char *lit)
{
	size_t n = strlen(lit);

	if (len - *i < n || memcmp(s + *i, lit, n) != 0)
		return false;
	*i += n;
	return true;
}

/*
 * Splits "NAME->rgb(R,G,B)" at its last "->". Exactly that text: no
 * spaces, no sign, nothing after ')' but a '\r' of a CRLF file.
 */
static int pal_parse_map_line(const char *line, size_t len, size_t *name_len, struct fl_rgb *rgb)
{
	size_t a, i;

	if (len && line[len - 1] == '\r')
		len--;
	if (len < 2)
		return -EINVAL;
	for (a = len - 2;; a--) {
		if (line[a] == '-' && line[a + 1] == '>')
			break;
		if (!a)
			return -EINVAL;
	}
	i = a + 2;
	if (!pal_expect(line, len, &i, "rgb(") || pal_parse_component(line, len, &i, &rgb->r) ||
	    !pal_expect(line, len, &i, ",") || pal_parse_component(line, len, &i, &rgb->g) ||
	    !pal_expect(line, len, &i, ",") || pal_parse_component(line, len, &i, &rgb->b) ||
	    !pal_expect(line, len, &i, ")") || i != len)
		return -EINVAL;
	*name_len = a;
	return 0;
}

/*
 * A well-formed line is added (a later line for the same name wins); one
 * with a NUL is not, as a pool string has none. Returns 0, -EINVAL, -ENOMEM.
 */
static int pal_map_load_line(struct fl_palette *p, const char *line, size_t len)
{
	struct fl_rgb rgb;
	size_t name_len;
	uint32_t id;
	int err;

	if (memchr(line, '\0', len))
		return -EINVAL;
	err = pal_parse_map_line(line, len, &name_len, &rgb);
	if (err)
		return err;
	err = fl_strpool__intern(p->names, line, name_len, &id);
	if (err)
		return err;
	return pal_map_set(p, id, rgb);
}

int fl_palette__load_map(struct fl_palette *p, FILE *f, size_t *nr_bad)
{
	size_t n = 0, bad = 0;
	bool too_long = false;
	int c, err = 0;
	char *line;

	if (nr_bad)
		*nr_bad = 0;
	if (!p || !f)
		return -EINVAL;
	if (!p->names) {
		err = fl_strpool__new(&p->names);
		if (err)
			return err;
	}
	if (!p->scratch) {
		p->scratch = malloc(PAL_MAP_MAX_LINE);
		if (!p->scratch)
			return -ENOMEM;
	}
	line = p->scratch;
	p->map = true;

	/* Byte by byte into a fixed buffer: NULs are data and no line can grow memory. */
	flockfile(f);
	for (;;) {
		c = getc_unlocked(f);
		if (c == EOF && ferror(f)) {
			err = -EIO;
			break;
		}
		if (c == EOF || c == '\n') {
			if (too_long) {
				bad++;
			} else if (n) {
				err = pal_map_load_line(p, line, n);
				if (err == -EINVAL) {
					bad++;
					err = 0;
				} else if (err) {
					break;
				}
			}
			if (c == EOF)
				break;
			n = 0;
			too_long = false;
			continue;
		}
		if (n < PAL_MAP_MAX_LINE)
			line[n++] = (char)c;
		else
			too_long = true;
	}
	funlockfile(f);
	if (nr_bad)
		*nr_bad = bad;
	return err;
}

/*
 * Bytewise, a prefix first: the order of sort(1) under LC_ALL=C, which is
 * strcmp's on strings without a NUL.
 */
static int pal_name_cmp(const void *a, const void *b, void *names)
{
	return strcmp(fl_strpool__str(names, *(const uint32_t *)a),
		      fl_strpool__str(names, *(const uint32_t *)b));
}

int fl_palette__save_map(const struct fl_palette *p, FILE *f)
{
	size_t nr = 0, i;

	if (!p || !f)
		return -EINVAL;
	for (i = 0; i < p->cap_colors; i++) {
		if (p->colors[i].set)
			p->order[nr++] = (uint32_t)i;
	}
	if (nr)
		qsort_r(p->order, nr, sizeof(*p->order), pal_name_cmp, p->names);
	for (i = 0; i < nr; i++) {
		const struct fl_rgb *c = &p->colors[p->order[i]].rgb;

		if (fputs(fl_strpool__str(p->names, p->order[i]), f) == EOF ||
		    fprintf(f, "->rgb(%u,%u,%u)\n", (unsigned)c->r, (unsigned)c->g,
			    (unsigned)c->b) < 0)
			return -EIO;
	}
	if (fflush(f) || ferror(f))
		return -EIO;
	return 0;
}

/*
 * Diff: the fade of the non-dominant components, linear in the change, from
 * PAL_DIFF_FADE (a change too small to see) to 0 (the largest change).
 */
#define PAL_DIFF_FADE 235.0
static const struct fl_rgb pal_unchanged = {245, 245, 245};
/* Gold: far from the diff's red and blue and from the search highlight's magenta. */
static const struct fl_rgb pal_new = {240, 190, 30};

struct fl_rgb fl_palette__diff_color(double before, double after, double max_abs_delta, bool negate)
{
	double delta = after - before, mag, t;
	bool grew;
	uint8_t fade;

	if (before == 0 && after > 0)
		return pal_new;
	if (!isfinite(delta) || delta == 0)
		return pal_unchanged;
	mag = delta < 0 ? -delta : delta;
	/* A caller without a sensible maximum still sees the direction at full strength. */
	if (!(max_abs_delta > 0))
		t = 1;
	else
		t = mag / max_abs_delta;
	if (t > 1)
		t = 1;
	fade = (uint8_t)(PAL_DIFF_FADE * (1 - t) + 0.5);
	grew = delta > 0;
	if (negate)
		grew = !grew;
	if (grew)
		return (struct fl_rgb){255, fade, fade};
	return (struct fl_rgb){fade, fade, 255};
}

struct fl_rgb fl_palette__fg_diff_color(double delta, double max_abs_delta, bool negate)
{
	uint8_t r = 255, g = 255, b = 255;

	if (negate)
		delta = -delta;
	if (!(max_abs_delta > 0) || !isfinite(delta))
		return (struct fl_rgb){r, g, b};
	if (delta > max_abs_delta)
		delta = max_abs_delta;
	if (delta < -max_abs_delta)
		delta = -max_abs_delta;
	if (delta > 0)
		g = b = (uint8_t)(int)(210 * (max_abs_delta - delta) / max_abs_delta);
	else if (delta < 0)
		r = g = (uint8_t)(int)(210 * (max_abs_delta + delta) / max_abs_delta);
	return (struct fl_rgb){r, g, b};
}

struct fl_rgb fl_palette__new_color(void)
{
	return pal_new;
}

struct fl_rgb fl_palette__grey(void)
{
	return pal_grey;
}

/*
 * Gradients top to bottom: pale enough that every frame colour stands out
 * on them. "yellow" is the gradient lib/formats/svg.c draws when no --bgcolors is
 * given, so naming the default changes nothing.
 */
static const struct {
	const char *name;
	struct fl_rgb top, bottom;
} pal_backgrounds[] = {
	{"yellow", {0xee, 0xee, 0xee}, {0xee, 0xee, 0xb0}},
	{"blue", {240, 240, 240}, {222, 226, 255}},
	{"green", {238, 244, 238}, {220, 252, 220}},
	{"grey", {248, 248, 248}, {230, 230, 230}},
};

int fl_palette__parse_bgcolors(const char *s, struct fl_rgb *top, struct fl_rgb *bottom)
{
	uint8_t c[3];
	size_t i;

	if (!s || !top || !bottom)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(pal_backgrounds); i++) {
		if (strcmp(s, pal_backgrounds[i].name) == 0) {
			*top = pal_backgrounds[i].top;
			*bottom = pal_backgrounds[i].bottom;
			return 0;
		}
	}
	/* "#rrggbb" and nothing else: the value reaches the SVG as an attribute. */
	if (s[0] != '#')
		return -EINVAL;
	for (i = 0; i < 3; i++) {
		int hi = fl_hexval(s[1 + 2 * i]), lo;

		if (hi < 0)
			return -EINVAL;
		lo = fl_hexval(s[2 + 2 * i]);
		if (lo < 0)
			return -EINVAL;
		c[i] = (uint8_t)(hi << 4 | lo);
	}
	if (s[7] != '\0')
		return -EINVAL;
	*top = *bottom = (struct fl_rgb){c[0], c[1], c[2]};
	return 0;
}
