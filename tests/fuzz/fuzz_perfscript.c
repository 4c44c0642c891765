// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: `perf script` text, as `flamed collapse` reads it. The parser
 * promises that text cut anywhere parses the same, and that feeding may go
 * on after finish(): the input is parsed whole twice in a row and once in
 * small chunks, and all three must give the same samples.
 */
#include "flamed/formats/perfscript.h"
#include "fuzz.h"

static uint64_t hash_str(uint64_t h, struct fl_ps_str s)
{
	h = fuzz_hash_u64(h, s.len);
	return fuzz_hash(h, s.s, s.len);
}

static int on_sample(const struct fl_ps_sample *s, void *ctx)
{
	uint64_t *h = ctx;

	FUZZ_CHECK(s->tid.len > 0);
	*h = hash_str(*h, s->comm);
	*h = hash_str(*h, s->pid);
	*h = hash_str(*h, s->tid);
	*h = hash_str(*h, s->event);
	*h = fuzz_hash_u64(*h, s->period);
	*h = fuzz_hash_u64(*h, s->nr_frames);
	for (size_t i = 0; i < s->nr_frames; i++) {
		const struct fl_ps_frame *f = &s->frames[i];

		FUZZ_CHECK(f->addr.len > 0);
		FUZZ_CHECK(f->has_offset || f->offset == 0);
		*h = hash_str(*h, f->addr);
		*h = hash_str(*h, f->sym);
		*h = hash_str(*h, f->mod);
		*h = fuzz_hash_u64(*h, f->offset);
	}
	return 0;
}

static void stats_equal(const struct fl_ps_stats *a, const struct fl_ps_stats *b)
{
	FUZZ_CHECK(a->lines == b->lines);
	FUZZ_CHECK(a->samples == b->samples);
	FUZZ_CHECK(a->unrecognized == b->unrecognized);
	FUZZ_CHECK(a->too_long == b->too_long);
	FUZZ_CHECK(a->dropped == b->dropped);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct fl_perfscript *whole = NULL, *cut = NULL;
	uint64_t h_first = 0, h_second = 0, h_cut = 0;
	struct fl_ps_stats st_first, st_both, st_cut;
	uint32_t rnd = (uint32_t)size * 2654435761u + (size ? data[0] : 0) + 1;
	size_t off = 0;

	/* Whole, then the same text again after finish(): a second file. */
	FUZZ_CHECK(fl_perfscript__new(on_sample, &h_first, &whole) == 0);
	FUZZ_CHECK(fl_perfscript__feed(whole, text, size) == 0);
	FUZZ_CHECK(fl_perfscript__finish(whole) == 0);
	fl_perfscript__stats(whole, &st_first);
	fl_perfscript__free(whole);
	FUZZ_CHECK(fl_perfscript__new(on_sample, &h_second, &whole) == 0);
	FUZZ_CHECK(fl_perfscript__feed(whole, text, size) == 0);
	FUZZ_CHECK(fl_perfscript__finish(whole) == 0);
	FUZZ_CHECK(h_second == h_first);
	h_second = 0;
	FUZZ_CHECK(fl_perfscript__feed(whole, text, size) == 0);
	FUZZ_CHECK(fl_perfscript__finish(whole) == 0);
	FUZZ_CHECK(h_second == h_first);
	fl_perfscript__stats(whole, &st_both);
	fl_perfscript__free(whole);

	/* In chunks of 1 to 64 bytes, cut where a pseudo-random walk says. */
	FUZZ_CHECK(fl_perfscript__new(on_sample, &h_cut, &cut) == 0);
	while (off < size) {
		size_t n;

		rnd ^= rnd << 13;
		rnd ^= rnd >> 17;
		rnd ^= rnd << 5;
		n = 1 + rnd % 64;
		if (n > size - off)
			n = size - off;
		FUZZ_CHECK(fl_perfscript__feed(cut, text + off, n) == 0);
		off += n;
	}
	FUZZ_CHECK(fl_perfscript__finish(cut) == 0);
	fl_perfscript__stats(cut, &st_cut);
	fl_perfscript__free(cut);

	stats_equal(&st_first, &st_cut);
	FUZZ_CHECK(h_first == h_cut);
	FUZZ_CHECK(st_both.lines == 2 * st_first.lines);
	FUZZ_CHECK(st_both.samples == 2 * st_first.samples);
	FUZZ_CHECK(st_both.unrecognized == 2 * st_first.unrecognized);
	FUZZ_CHECK(st_both.dropped == 2 * st_first.dropped);
	FUZZ_CHECK(st_both.too_long == 2 * st_first.too_long);
	return 0;
}
