// SPDX-License-Identifier: GPL-2.0-or-later
/* Frame colours: hue families, name classification, the --cp colour map, diff and background. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/cleanup.h"
#include "flamed/palette.h"
#include "parse.h"

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
};

#define PAL_ANNOT_LEN 4 /* "_[k]" */
static const char pal_annot_suffix[][PAL_ANNOT_LEN + 1] = {
	[PA_NONE] = "",	      [PA_KERNEL] = "_[k]", [PA_JIT] = "_[j]",
	[PA_INLINE] = "_[i]", [PA_WAKER] = "_[w]",
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
#define PAL_MAP_MIN_SLOTS 64
#define PAL_MAP_MAX_ENTRIES (UINT32_MAX - 1) /* slots store index + 1 */
#define PAL_CHUNK_SIZE (64 * 1024)

/* Fixed, so the default (non --hash) colours of a graph are the same in every run. */
#define PAL_RNG_SEED 0x6a09e667f3bcc909ULL

/*
 * A name as stored in the map: its full text (the annotation included) and
 * the split the colour code works with. A waker frame of the chain palette
 * without an annotation is stored as NAME "_[w]": that is how a collapser
 * would have annotated it, and it keeps its two colours (on- and off-CPU
 * side) apart in the file.
 */
struct pal_entry {
	const char *s; /* len bytes, not NUL-terminated; in an arena chunk */
	uint32_t len;
	uint8_t annot; /* enum pal_annot: the last PAL_ANNOT_LEN bytes of s unless PA_NONE */
	struct fl_rgb rgb;
};

/* The hash beside the index lets a probe skip most entries without touching them. */
struct pal_slot {
	uint32_t idx1; /* entry index + 1, 0 when empty */
	uint32_t hash;
};

struct fl_palette {
	enum fl_palette_kind kind;
	bool hash;
	uint64_t rng;

	bool map; /* a colour map was loaded: remember every colour handed out */
	struct pal_entry *entries;
	size_t nr_entries, cap_entries;
	/* Sort scratch for save_map, as long as entries, so that saving needs no memory. */
	const struct pal_entry **order;
	struct pal_slot *slots; /* power-of-two sized, linear probing */
	size_t nr_slots;

	char **chunks; /* name bytes: chunks are never moved, so entry names never dangle */
	size_t nr_chunks, cap_chunks;
	char *cur;
	size_t cur_left;
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
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nr_chunks; i++)
		free(p->chunks[i]);
	free(p->chunks);
	free(p->slots);
	free(p->order);
	free(p->entries);
	free(p);
}

/*
 * The --hash variation. FNV-1a reads the name byte by byte, so the result
 * does not depend on the machine's endianness or word size; its low bits
 * are weak (bit 0 is the parity of the bytes' bit 0), hence the final
 * avalanche. This function is part of the output format: changing it
 * changes the colours of every --hash graph and of every map lookup.
 */
static uint64_t pal_name_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
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

/* The index's hash of a (name without annotation, annotation) key. */
static uint32_t pal_slot_hash(uint64_t name_hash, enum pal_annot annot)
{
	return (uint32_t)(name_hash >> 32) ^ ((uint32_t)annot * 0x9e3779b9u);
}

static struct pal_slot *pal_map_find(const struct fl_palette *p, const char *stem, size_t stem_len,
				     enum pal_annot annot, uint32_t hash)
{
	size_t mask = p->nr_slots - 1;
	size_t i = hash & mask;

	for (;; i = (i + 1) & mask) {
		struct pal_slot *slot = &p->slots[i];
		const struct pal_entry *e;

		if (!slot->idx1)
			return slot;
		if (slot->hash != hash)
			continue;
		e = &p->entries[slot->idx1 - 1];
		if (e->annot == annot && e->len - (annot ? PAL_ANNOT_LEN : 0) == stem_len &&
		    (!stem_len || memcmp(e->s, stem, stem_len) == 0))
			return slot;
	}
}

/* Makes room for one more entry in the index; on failure the old index is kept. */
static int pal_map_reserve_slots(struct fl_palette *p)
{
	struct pal_slot *slots;
	size_t nr, i;

	/* Load factor under 3/4: probes stay short and an empty slot always exists. */
	if (p->nr_slots && (p->nr_entries + 1) * 4 <= p->nr_slots * 3)
		return 0;
	nr = p->nr_slots ? p->nr_slots * 2 : PAL_MAP_MIN_SLOTS;
	if (nr > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(nr, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < p->nr_slots; i++) {
		const struct pal_slot *old = &p->slots[i];
		size_t j;

		if (!old->idx1)
			continue;
		for (j = old->hash & (nr - 1); slots[j].idx1; j = (j + 1) & (nr - 1))
			;
		slots[j] = *old;
	}
	free(p->slots);
	p->slots = slots;
	p->nr_slots = nr;
	return 0;
}

/* Grows entries and the save scratch together, so that they always have the same capacity. */
static int pal_map_reserve_entry(struct fl_palette *p)
{
	const struct pal_entry **order;
	struct pal_entry *entries;
	size_t cap;

	if (p->nr_entries < p->cap_entries)
		return 0;
	if (p->nr_entries >= PAL_MAP_MAX_ENTRIES)
		return -ENOMEM;
	cap = p->cap_entries ? p->cap_entries * 2 : 256;
	if (cap > SIZE_MAX / sizeof(*entries))
		return -ENOMEM;
	order = realloc(p->order, cap * sizeof(*order));
	if (!order)
		return -ENOMEM;
	p->order = order;
	entries = realloc(p->entries, cap * sizeof(*entries));
	if (!entries)
		return -ENOMEM;
	p->entries = entries;
	p->cap_entries = cap;
	return 0;
}

static int pal_push_chunk(struct fl_palette *p, char *chunk)
{
	if (p->nr_chunks == p->cap_chunks) {
		size_t cap = p->cap_chunks ? p->cap_chunks * 2 : 16;
		char **chunks = realloc(p->chunks, cap * sizeof(*chunks));

		if (!chunks)
			return -ENOMEM;
		p->chunks = chunks;
		p->cap_chunks = cap;
	}
	p->chunks[p->nr_chunks++] = chunk;
	return 0;
}

/* size bytes that never move; NULL when out of memory or above a chunk (no name is). */
static char *pal_alloc(struct fl_palette *p, size_t size)
{
	_cleanup_free_ char *chunk = NULL;
	char *mem;

	if (size > PAL_CHUNK_SIZE)
		return NULL;
	if (size > p->cur_left) {
		/* The tail of the old chunk is wasted: less than one maximal name. */
		chunk = malloc(PAL_CHUNK_SIZE);
		if (!chunk || pal_push_chunk(p, chunk) < 0)
			return NULL;
		p->cur = TAKE_PTR(chunk);
		p->cur_left = PAL_CHUNK_SIZE;
	}
	mem = p->cur;
	p->cur += size;
	p->cur_left -= size;
	return mem;
}

/*
 * Sets the colour of the key (stem, annot), adding it if new. Its text is
 * stem followed by annot's suffix. Returns 0 or -ENOMEM (the map is
 * unchanged).
 */
static int pal_map_set(struct fl_palette *p, const char *stem, size_t stem_len,
		       enum pal_annot annot, uint64_t name_hash, struct fl_rgb rgb)
{
	uint32_t hash = pal_slot_hash(name_hash, annot);
	size_t len = stem_len + (annot ? PAL_ANNOT_LEN : 0);
	struct pal_entry *e;
	struct pal_slot *slot;
	char *mem;
	int err;

	if (p->nr_slots) {
		slot = pal_map_find(p, stem, stem_len, annot, hash);
		if (slot->idx1) {
			p->entries[slot->idx1 - 1].rgb = rgb;
			return 0;
		}
	}
	/* Every allocation before the first change. */
	err = pal_map_reserve_entry(p);
	if (err)
		return err;
	err = pal_map_reserve_slots(p);
	if (err)
		return err;
	mem = pal_alloc(p, len);
	if (!mem && len)
		return -ENOMEM;
	if (stem_len)
		memcpy(mem, stem, stem_len);
	if (annot)
		memcpy(mem + stem_len, pal_annot_suffix[annot], PAL_ANNOT_LEN);

	slot = pal_map_find(p, stem, stem_len, annot, hash);
	slot->idx1 = (uint32_t)p->nr_entries + 1;
	slot->hash = hash;
	e = &p->entries[p->nr_entries++];
	e->s = mem;
	e->len = (uint32_t)len;
	e->annot = (uint8_t)annot;
	e->rgb = rgb;
	return 0;
}

/* Whether a name's map line would load again: one line, within the length limit. */
static bool pal_map_storable(const char *stem, size_t stem_len, enum pal_annot annot)
{
	size_t len = stem_len + (annot ? PAL_ANNOT_LEN : 0);

	return len <= PAL_MAP_MAX_NAME && !(stem_len && memchr(stem, '\n', stem_len));
}

struct fl_rgb fl_palette__color(struct fl_palette *p, const char *name, size_t len, unsigned flags)
{
	enum pal_annot annot;
	uint64_t h = 0;
	struct fl_rgb rgb;
	size_t stem_len;

	if (!p || (!name && len))
		return pal_grey;
	if (len == 1 && name[0] == '-')
		return pal_grey;
	annot = pal_split_annot(name, len, &stem_len);
	/* Honoured by chain only: the other palettes colour both sides of a chain alike. */
	if (annot == PA_NONE && p->kind == FL_PALETTE_CHAIN && (flags & FL_COLOR_WAKER))
		annot = PA_WAKER;
	if (p->hash || p->map)
		h = pal_name_hash(name, stem_len);
	if (p->map && p->nr_slots) {
		const struct pal_slot *slot =
			pal_map_find(p, name, stem_len, annot, pal_slot_hash(h, annot));

		if (slot->idx1)
			return p->entries[slot->idx1 - 1].rgb;
	}
	rgb = pal_family_color(pal_family_of(p->kind, name, stem_len, annot),
			       p->hash ? h : pal_next_random(p));
	if (p->map && pal_map_storable(name, stem_len, annot) &&
	    pal_map_set(p, name, stem_len, annot, h, rgb) < 0)
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

/* A well-formed line is added (a later line for the same name wins). Returns 0, -EINVAL, -ENOMEM. */
static int pal_map_load_line(struct fl_palette *p, const char *line, size_t len)
{
	struct fl_rgb rgb;
	size_t name_len, stem_len;
	enum pal_annot annot;
	int err;

	err = pal_parse_map_line(line, len, &name_len, &rgb);
	if (err)
		return err;
	annot = pal_split_annot(line, name_len, &stem_len);
	return pal_map_set(p, line, stem_len, annot, pal_name_hash(line, stem_len), rgb);
}

int fl_palette__load_map(struct fl_palette *p, FILE *f, size_t *nr_bad)
{
	_cleanup_free_ char *line = NULL;
	size_t n = 0, bad = 0;
	bool too_long = false;
	int c, err = 0;

	if (nr_bad)
		*nr_bad = 0;
	if (!p || !f)
		return -EINVAL;
	line = malloc(PAL_MAP_MAX_LINE);
	if (!line)
		return -ENOMEM;
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

/* Bytewise, a prefix first: the order of sort(1) under LC_ALL=C. */
static int pal_entry_cmp(const void *a, const void *b)
{
	const struct pal_entry *x = *(const struct pal_entry *const *)a;
	const struct pal_entry *y = *(const struct pal_entry *const *)b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = n ? memcmp(x->s, y->s, n) : 0;

	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

int fl_palette__save_map(const struct fl_palette *p, FILE *f)
{
	size_t i;

	if (!p || !f)
		return -EINVAL;
	for (i = 0; i < p->nr_entries; i++)
		p->order[i] = &p->entries[i];
	if (p->nr_entries)
		qsort(p->order, p->nr_entries, sizeof(*p->order), pal_entry_cmp);
	for (i = 0; i < p->nr_entries; i++) {
		const struct pal_entry *e = p->order[i];

		if ((e->len && fwrite(e->s, 1, e->len, f) != e->len) ||
		    fprintf(f, "->rgb(%u,%u,%u)\n", (unsigned)e->rgb.r, (unsigned)e->rgb.g,
			    (unsigned)e->rgb.b) < 0)
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
 * on them. "yellow" is the gradient lib/svg.c draws when no --bgcolors is
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
