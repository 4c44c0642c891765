// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: the unwind table compiler on an ELF image, from memory (the
 * vdso's way) and from an fd (a memfd holding the input, as a mapped file
 * is read): an error it documents, or a table that keeps its promises.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "flamed/unwinding/cfitable.h"
#include "fuzz.h"

/*
 * elfutils 0.188's dwarf_getcfi_elf(), on an Elf read with ELF_C_READ
 * (flamed never maps the files it reads) whose section headers are
 * garbage, loses the section names it read through elf_strptr(): a leak of
 * libelf's own, which a program of nothing but elf_begin(),
 * dwarf_getcfi_elf(), dwarf_cfi_end() and elf_end() shows. Only memory
 * allocated under elf_strptr() is let go; an Elf never ended would still
 * show through what elf_begin() allocated. libelf has no frame pointers:
 * allocations are unwound the slow way, or elf_strptr() would not be seen.
 */
const char *__asan_default_options(void);
const char *__lsan_default_options(void);
const char *__lsan_default_suppressions(void);

const char *__asan_default_options(void)
{
	return "fast_unwind_on_malloc=0";
}

/* The suppression is expected: LeakSanitizer's list of those used would read as a report. */
const char *__lsan_default_options(void)
{
	return "print_suppressions=0";
}

const char *__lsan_default_suppressions(void)
{
	return "leak:elf_strptr\n";
}

static bool same_rule(const struct fl_uw_row *a, const struct fl_uw_row *b)
{
	return a->cfa_type == b->cfa_type && a->rbp_type == b->rbp_type && a->ra_off == b->ra_off &&
	       a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off && a->rbx_off == b->rbx_off;
}

/* Sorted, merged, closed by FL_CFA_NONE, counted, and found where it says. */
static void walk(const struct fl_cfitable *t)
{
	uint64_t h = 0, by_type[FL_CFITABLE_ROW_KINDS] = {0};

	FUZZ_CHECK(t->nr >= 2 && t->nr <= FL_UW_MAX_ROWS);
	FUZZ_CHECK(t->rows[t->nr - 1].cfa_type == FL_CFA_NONE);
	FUZZ_CHECK(!t->rows[0].pc || !fl_cfitable__find(t, t->rows[0].pc - 1));
	for (size_t i = 0; i < t->nr; i++) {
		const struct fl_uw_row *r = &t->rows[i];

		FUZZ_CHECK((r->cfa_type <= FL_CFA_UNSUPPORTED ||
			    (FL_CFA_REG_OF(r->cfa_type) >= 0 && FL_CFA_REG_OF(r->cfa_type) != 6 &&
			     FL_CFA_REG_OF(r->cfa_type) != 7)) &&
			   r->rbp_type <= FL_RBP_AT_RBP);
		FUZZ_CHECK(!i || (t->rows[i - 1].pc < r->pc && !same_rule(&t->rows[i - 1], r)));
		FUZZ_CHECK(fl_cfitable__find(t, r->pc) == r);
		by_type[fl_cfitable__row_kind(r->cfa_type)]++;
		h = fuzz_hash(h, r, sizeof(*r));
	}
	for (int k = 0; k < FL_CFITABLE_ROW_KINDS; k++)
		FUZZ_CHECK(by_type[k] == t->counts.rows[k]);
	fuzz_sink(h);
}

static void check(int err, struct fl_cfitable *t)
{
	FUZZ_CHECK(err == 0 || err == -EINVAL || err == -ENOENT || err == -EFBIG ||
		   err == -ENOTSUP);
	if (err)
		return;
	walk(t);
	fl_cfitable__fini(t);
}

/* The rule of t at off, or NONE where no row covers it. */
static struct fl_uw_row rule_at(const struct fl_cfitable *t, uint64_t off)
{
	const struct fl_uw_row *r = fl_cfitable__find(t, off);

	return r ? *r : (struct fl_uw_row){.cfa_type = FL_CFA_NONE};
}

/* A range [lo, hi) of the file through s: its rows are whole's there. */
static void check_range(struct fl_cfitable_src *s, const struct fl_cfitable *whole, uint64_t lo,
			uint64_t hi)
{
	struct fl_cfitable t;
	int err = fl_cfitable_src__range(s, lo, hi, &t);

	FUZZ_CHECK(err == 0 || err == -ENOENT || err == -EFBIG);
	if (err)
		return;
	FUZZ_CHECK(t.nr >= 2 && t.rows[0].pc >= lo && t.rows[t.nr - 1].pc <= hi);
	FUZZ_CHECK(t.rows[t.nr - 1].cfa_type == FL_CFA_NONE);
	for (size_t i = 0; i < t.nr; i++) {
		struct fl_uw_row a = rule_at(whole, t.rows[i].pc);

		FUZZ_CHECK(!i || (t.rows[i - 1].pc < t.rows[i].pc && !same_rule(&t.rows[i - 1], &t.rows[i])));
		/* Past the range no rule of it holds; within, the whole table's. */
		if (t.rows[i].pc < hi)
			FUZZ_CHECK(same_rule(&t.rows[i], &a));
	}
	fl_cfitable__fini(&t);
}

/*
 * A range through a source indexed by .eh_frame_hdr, whose table the input
 * makes up: rows of the shape a range has, whatever they say (a made-up
 * table may point anywhere in .eh_frame, or at FDEs that overlap).
 */
static void check_hdr_range(struct fl_cfitable_src *s, uint64_t lo, uint64_t hi)
{
	struct fl_cfitable t;
	int err = fl_cfitable_src__range(s, lo, hi, &t);

	FUZZ_CHECK(err == 0 || err == -ENOENT || err == -EFBIG || err == -EINVAL);
	if (err)
		return;
	FUZZ_CHECK(t.nr >= 2 && t.rows[0].pc >= lo && t.rows[t.nr - 1].pc <= hi);
	FUZZ_CHECK(t.rows[t.nr - 1].cfa_type == FL_CFA_NONE);
	for (size_t i = 1; i < t.nr; i++)
		FUZZ_CHECK(t.rows[i - 1].pc < t.rows[i].pc);
	fl_cfitable__fini(&t);
}

/*
 * The table a range at a time (big files' windows): whole through the
 * source is fl_cfitable__from_fd()'s table (ok: err and t of that), and
 * ranges cut where the input says agree with it.
 */
static void check_source(int fd, int err, const struct fl_cfitable *t, const uint8_t *data,
			 size_t size)
{
	struct fl_cfitable_src *s;
	struct fl_cfitable all;
	uint64_t lo, len;

	lo = size >= 4 ? data[size - 1] | (uint64_t)data[size - 2] << 8 : 0;
	len = size >= 4 ? 1 + (data[size - 3] | (uint64_t)(data[size - 4] & 0xf) << 8) : 16;
	if (!fl_cfitable_src__open_hdr(fd, 0, &s)) {
		check_hdr_range(s, lo, lo + len);
		check_hdr_range(s, 0, (uint64_t)1 << 32);
		fl_cfitable_src__free(s);
	}
	if (fl_cfitable_src__open(fd, &s))
		return;
	FUZZ_CHECK(fl_cfitable_src__all(s, &all) == err);
	if (!err) {
		FUZZ_CHECK(all.nr == t->nr && !memcmp(all.rows, t->rows, t->nr * sizeof(*t->rows)));
		fl_cfitable__fini(&all);
		lo += t->rows[0].pc;
		check_range(s, t, lo, lo + len);
		check_range(s, t, t->rows[0].pc, (uint64_t)t->rows[0].pc + 1);
		check_range(s, t, 0, (uint64_t)1 << 32);
	}
	fl_cfitable_src__free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fl_cfitable t;
	int fd, err;

	check(fl_cfitable__from_memory(data, size, &t), &t);
	fd = fuzz_memfd(data, size);
	err = fl_cfitable__from_fd(fd, &t);
	check_source(fd, err, &t, data, size);
	check(err, &t);
	close(fd);
	return 0;
}
