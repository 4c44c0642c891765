// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lib/unwinding/ktables.c against real BPF maps shaped as bpf/unwind.bpf.h's:
 * a process's mappings go to procs_few when they are at most
 * FL_UW_FEW_MAPS, else to procs, never to both once set (a process moving
 * between the two, a fork's copy left by the kernel in the other), and
 * out of both when it exits. Needs root (or CAP_BPF): exits 77 without.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <cmocka.h>

#include "flamed/common/cleanup.h"
#include "flamed/unwind_abi.h"
#include "flamed/unwinding/cfitable.h"
#include "unwinding/ktables.h"

static struct {
	int procs, few, tables, table_loc, asked, win_loc, file_ids;
} fds;

static int hash_map(const char *name, size_t key, size_t val, unsigned int flags)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = flags);

	return bpf_map_create(BPF_MAP_TYPE_HASH, name, (uint32_t)key, (uint32_t)val, 4096, &o);
}

static int setup(void **state)
{
	LIBBPF_OPTS(bpf_map_create_opts, io, .map_flags = BPF_F_INNER_MAP);
	LIBBPF_OPTS(bpf_map_create_opts, oo);
	int inner;

	(void)state;
	fds.procs = hash_map("t_procs", 4, sizeof(struct fl_uw_proc), BPF_F_NO_PREALLOC);
	if (fds.procs < 0) {
		fprintf(stderr, "test_ktables: cannot make BPF maps (%s): needs root or CAP_BPF\n",
			strerror(errno));
		exit(77);
	}
	fds.few = hash_map("t_procs_few", 4, sizeof(struct fl_uw_proc_few), BPF_F_NO_PREALLOC);
	fds.asked = hash_map("t_asked", 8, 1, 0);
	fds.win_loc = hash_map("t_win_loc", 8, 8, 0);
	fds.file_ids = hash_map("t_file_ids", 16, 4, 0);
	fds.table_loc = bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_table_loc", 4, 8, FL_UW_MAX_FILES, NULL);
	inner = bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_rows", 4, sizeof(union fl_uw_page), 1, &io);
	assert_true(inner >= 0);
	oo.inner_map_fd = inner;
	fds.tables = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "t_tables", 4, 4, FL_UW_MAX_CHUNKS,
				    &oo);
	close(inner);
	assert_true(fds.few >= 0 && fds.asked >= 0 && fds.win_loc >= 0 && fds.file_ids >= 0 &&
		    fds.table_loc >= 0 && fds.tables >= 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	close(fds.procs);
	close(fds.few);
	close(fds.asked);
	close(fds.win_loc);
	close(fds.file_ids);
	close(fds.table_loc);
	close(fds.tables);
	return 0;
}

/* n anonymous mappings (no table to build), 64 KiB apart. */
static struct fl_tmap *anon_maps(size_t n, uint64_t base)
{
	struct fl_tmap *m = calloc(n, sizeof(*m));

	assert_non_null(m);
	for (size_t i = 0; i < n; i++) {
		m[i].start = base + i * 0x10000;
		m[i].end = m[i].start + 0x1000;
		m[i].path = "//anon";
	}
	return m;
}

/* Which map holds pid (and checks its mappings are n from base): 'f', 'b' or 0; 2 if both. */
static int where(uint32_t pid, size_t n, uint64_t base)
{
	struct fl_uw_proc v;
	int in = 0, fd[2] = {fds.few, fds.procs};
	const char which[2] = {'f', 'b'};

	for (int k = 0; k < 2; k++) {
		memset(&v, 0, sizeof(v));
		if (bpf_map_lookup_elem(fd[k], &pid, &v))
			continue;
		if (in)
			return 2;
		in = which[k];
		assert_int_equal(v.nr, n);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(v.maps[i].start, base + i * 0x10000);
	}
	return in;
}

/* Options for the maps of setup(). */
static struct fl_ktables_opts maps_opts(void)
{
	return (struct fl_ktables_opts){
		.sz = sizeof(struct fl_ktables_opts),
		.tables_fd = fds.tables,
		.table_loc_fd = fds.table_loc,
		.procs_fd = fds.procs,
		.procs_few_fd = fds.few,
		.asked_fd = fds.asked,
		.file_ids_fd = fds.file_ids,
		.win_loc_fd = fds.win_loc,
	};
}

static void test_proc_maps_by_size(void **state)
{
	struct fl_ktables_opts o = maps_opts();
	struct fl_tmap *few = anon_maps(FL_UW_FEW_MAPS, 0x400000),
		       *many = anon_maps(FL_UW_FEW_MAPS + 1, 0x800000),
		       *most = anon_maps(FL_UW_MAX_MAPS + 10, 0x10000000);
	struct fl_uw_proc fork_copy = {.nr = 1};
	struct fl_ktables *kt;
	struct fl_ktables_stats st;
	uint32_t pid = 1000, child = 1001;

	(void)state;
	o.lazy = true;
	assert_int_equal(fl_ktables__new(&o, &kt), 0);

	/* A few mappings: procs_few. */
	assert_int_equal(fl_ktables__set_proc(kt, pid, few, 3), 0);
	assert_int_equal(where(pid, 3, 0x400000), 'f');
	assert_int_equal(fl_ktables__set_proc(kt, pid, few, FL_UW_FEW_MAPS), 0);
	assert_int_equal(where(pid, FL_UW_FEW_MAPS, 0x400000), 'f');
	/* One more than a few: procs, and out of procs_few. */
	assert_int_equal(fl_ktables__set_proc(kt, pid, many, FL_UW_FEW_MAPS + 1), 0);
	assert_int_equal(where(pid, FL_UW_FEW_MAPS + 1, 0x800000), 'b');
	/* Back to a few. */
	assert_int_equal(fl_ktables__set_proc(kt, pid, few, 2), 0);
	assert_int_equal(where(pid, 2, 0x400000), 'f');
	/* More than a process can have: the first FL_UW_MAX_MAPS, counted. */
	assert_int_equal(fl_ktables__set_proc(kt, pid, most, FL_UW_MAX_MAPS + 10), 0);
	assert_int_equal(where(pid, FL_UW_MAX_MAPS, 0x10000000), 'b');
	fl_ktables__stats(kt, &st);
	assert_int_equal(st.maps_dropped, 10);

	/* A child the kernel copied into procs at its fork, first told with a few: procs_few only. */
	fork_copy.maps[0].start = 0x10000000;
	assert_int_equal(bpf_map_update_elem(fds.procs, &child, &fork_copy, BPF_ANY), 0);
	assert_int_equal(fl_ktables__set_proc(kt, child, few, 4), 0);
	assert_int_equal(where(child, 4, 0x400000), 'f');

	/* Gone: out of both. */
	assert_int_equal(fl_ktables__set_proc(kt, pid, NULL, 0), 0);
	assert_int_equal(fl_ktables__set_proc(kt, child, NULL, 0), 0);
	assert_int_equal(where(pid, 0, 0), 0);
	assert_int_equal(where(child, 0, 0), 0);

	fl_ktables__free(kt);
	free(few);
	free(many);
	free(most);
}

/* Whether the walker's asked map holds pid's key (it asks for a process once until answered). */
static bool asked(uint32_t pid)
{
	uint64_t key = pid;
	uint8_t v;

	return !bpf_map_lookup_elem(fds.asked, &key, &v);
}

/* The walker's key for pid, as it puts it before it sends its want. */
static void ask(uint32_t pid)
{
	uint64_t key = pid;
	uint8_t one = 1;

	assert_int_equal(bpf_map_update_elem(fds.asked, &key, &one, BPF_NOEXIST), 0);
}

/*
 * A process the walker asked for has its key taken back by the answer, so
 * that it asks again after an exec; one it never asked for costs no delete
 * (a key put there behind ktables' back stays). A want read after its
 * answer keeps the key until the next answer, or the exit.
 */
static void test_asked_procs(void **state)
{
	struct fl_ktables_opts o = maps_opts();
	struct fl_tmap *m = anon_maps(2, 0x400000);
	struct fl_ktables *kt;
	uint32_t a = 2000, b = 2001, c = 2002;
	uint64_t key_b = b;

	(void)state;
	o.lazy = true;
	assert_int_equal(fl_ktables__new(&o, &kt), 0);

	/* Asked, the want read, then answered. */
	ask(a);
	fl_ktables__want_proc(kt, a);
	assert_true(asked(a));
	assert_int_equal(fl_ktables__set_proc(kt, a, m, 2), 0);
	assert_false(asked(a));
	/* Answered again (another change of mappings): nothing asked, nothing taken. */
	assert_int_equal(fl_ktables__set_proc(kt, a, m, 1), 0);
	assert_false(asked(a));

	/* Never asked for (the key is the test's): left alone by the answer. */
	ask(b);
	assert_int_equal(fl_ktables__set_proc(kt, b, m, 2), 0);
	assert_true(asked(b));

	/* The want read after the answer: the key stays until the next answer... */
	assert_int_equal(fl_ktables__set_proc(kt, c, m, 2), 0);
	ask(c);
	fl_ktables__want_proc(kt, c);
	assert_true(asked(c));
	assert_int_equal(fl_ktables__set_proc(kt, c, m, 1), 0);
	assert_false(asked(c));
	/* ...or the exit. */
	ask(c);
	fl_ktables__want_proc(kt, c);
	assert_int_equal(fl_ktables__set_proc(kt, c, NULL, 0), 0);
	assert_false(asked(c));

	assert_int_equal(fl_ktables__set_proc(kt, a, NULL, 0), 0);
	assert_int_equal(fl_ktables__set_proc(kt, b, NULL, 0), 0);
	assert_int_equal(bpf_map_delete_elem(fds.asked, &key_b), 0);
	fl_ktables__free(kt);
	free(m);
}

/* The executable mapping of this process whose path ends in suffix, into *m (path: a static copy). */
static void self_map(const char *suffix, struct fl_tmap *m)
{
	static char paths[2][4096];
	static int next;
	char line[4352], perms[8], path[4096];
	unsigned long long start, end, off, ino;
	unsigned int maj, min;
	FILE *f = fopen("/proc/self/maps", "r");
	bool found = false;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		size_t n, k = strlen(suffix);

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095s", &start, &end, perms, &off,
			   &maj, &min, &ino, path) != 8 ||
		    !strchr(perms, 'x'))
			continue;
		n = strlen(path);
		if (n < k || strcmp(path + n - k, suffix))
			continue;
		strcpy(paths[next], path);
		*m = (struct fl_tmap){.start = start, .end = end, .pgoff = off, .dev_major = maj,
				      .dev_minor = min, .ino = ino, .path = paths[next]};
		next = (next + 1) % 2;
		found = true;
	}
	fclose(f);
	if (!found)
		fail_msg("no executable mapping of *%s in /proc/self/maps", suffix);
}

/*
 * The walker caches rows by table location (chunk, first page, rows): a
 * chunk freed and its number used again by another holds other rows at the
 * same locations, so freeing one bumps the walker's epoch, and nothing
 * else does. libc's table gets a chunk of its own (the budget leaves no
 * room for a bigger one); unloaded, then ld.so's table loaded, that chunk
 * is freed for a new one.
 */
static void test_chunk_free_bumps_epoch(void **state)
{
	uint32_t epoch = 0, pid = (uint32_t)getpid();
	struct fl_ktables_opts o = maps_opts();
	struct fl_ktables_stats st;
	struct fl_ktables *kt;
	struct fl_tmap libc, ld;

	(void)state;
	o.epoch = &epoch;
	o.max_bytes = 768 << 10;
	self_map("/libc.so.6", &libc);
	self_map("/ld-linux-x86-64.so.2", &ld);
	assert_int_equal(fl_ktables__new(&o, &kt), 0);
	assert_int_equal(fl_ktables__set_proc(kt, pid, &libc, 1), 0);
	fl_ktables__settle(kt, 10000);
	fl_ktables__stats(kt, &st);
	assert_int_equal(st.loaded, 1);
	assert_int_equal(epoch, 0);
	/* Mapped by nobody for two trims: unloaded; its chunk stays, the one being filled. */
	assert_int_equal(fl_ktables__set_proc(kt, pid, NULL, 0), 0);
	fl_ktables__trim(kt);
	fl_ktables__trim(kt);
	fl_ktables__stats(kt, &st);
	assert_int_equal(st.loaded, 0);
	assert_int_equal(st.unloaded, 1);
	assert_int_equal(epoch, 0);
	/* ld.so's does not fit in it: a new chunk, and libc's goes. */
	assert_int_equal(fl_ktables__set_proc(kt, pid, &ld, 1), 0);
	fl_ktables__settle(kt, 10000);
	fl_ktables__stats(kt, &st);
	assert_int_equal(st.loaded, 1);
	assert_int_equal(epoch, 1);
	fl_ktables__free(kt);
}

/*
 * A stack copy's frame in a file whose table no sample of the walker asked
 * for yet (lazy): the row lookup asks for it and says to wait (-EAGAIN),
 * rather than -ENOENT, which sent the copy's unwinder to libdw, reading the
 * file's CFI a second time. Once built, the row is there.
 */
static void test_row_wants_a_table_not_built(void **state)
{
	struct fl_ktables_opts o = maps_opts();
	uint32_t pid = (uint32_t)getpid();
	uint64_t off;
	struct fl_uw_row row;
	struct fl_ktables_stats st;
	struct fl_ktables *kt;
	struct fl_tmap libc;

	(void)state;
	o.lazy = true;
	self_map("/libc.so.6", &libc);
	/* getpid's code, in libc's executable mapping. */
	off = (uint64_t)(uintptr_t)&getpid - libc.start + libc.pgoff;
	assert_true((uint64_t)(uintptr_t)&getpid >= libc.start &&
		    (uint64_t)(uintptr_t)&getpid < libc.end);
	assert_int_equal(fl_ktables__new(&o, &kt), 0);
	assert_int_equal(fl_ktables__set_proc(kt, pid, &libc, 1), 0);
	fl_ktables__stats(kt, &st);
	assert_int_equal(st.deferred, 1);
	assert_int_equal(fl_ktables__row(kt, &libc, off, false, &row), -EAGAIN);
	fl_ktables__settle(kt, 10000);
	fl_ktables__stats(kt, &st);
	assert_int_equal(st.loaded, 1);
	assert_int_equal(fl_ktables__row(kt, &libc, off, false, &row), 0);
	assert_true(row.cfa_type != FL_CFA_NONE && row.pc <= off);
	fl_ktables__free(kt);
}

/* libc as this process maps it, and its whole table as the compiler makes it. */
static void libc_and_table(struct fl_tmap *libc, struct fl_cfitable *ref)
{
	int fd;

	self_map("/libc.so.6", libc);
	fd = open(libc->path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fl_cfitable__from_fd(fd, ref), 0);
	close(fd);
}

/*
 * fl_ktables__row()'s answer (err, *got) at libc's offset at must be the
 * row want of libc's own table: -ENODATA where it has no rule, -ENOENT
 * where its rule is not one the walker follows.
 */
static void expect_row(const struct fl_uw_row *want, int err, const struct fl_uw_row *got,
		       uint64_t at)
{
	if (!want || want->cfa_type == FL_CFA_NONE)
		assert_int_equal(err, -ENODATA);
	else if (want->cfa_type == FL_CFA_UNSUPPORTED)
		assert_int_equal(err, -ENOENT);
	else if (err || memcmp(want, got, sizeof(*got)))
		fail_msg("libc at 0x%llx: %d, row pc 0x%x; the table's pc 0x%x",
			 (unsigned long long)at, err, err ? 0 : got->pc, want->pc);
}

/*
 * A stack copy that waited long enough for a window of a big file asks for
 * its row with now: the window is built at once, here, from the CFI held
 * for it (not waited for, nor left to libdw, which would read the file's
 * CFI whole), with the rows the whole file's table has there, and those the
 * thread then loads for the same window. libc stands in for a big file
 * (windowed_min_code 1).
 */
static void test_row_now_builds_a_window(void **state)
{
	struct fl_ktables_opts o = maps_opts();
	uint32_t pid = (uint32_t)getpid();
	struct fl_ktables_stats st;
	struct fl_ktables *kt;
	struct fl_cfitable ref = {0};
	struct fl_tmap libc;
	uint64_t off, lo, hi;
	struct fl_uw_row row;
	/* libc functions, one of them in another window than getpid's. */
	const uintptr_t other[] = {(uintptr_t)&qsort, (uintptr_t)&strtod, (uintptr_t)&fopen,
				   (uintptr_t)&setvbuf, (uintptr_t)&getenv};
	uint64_t other_off = 0;
	size_t checked = 0;

	(void)state;
	o.windowed_min_code = 1;
	libc_and_table(&libc, &ref);
	off = (uint64_t)(uintptr_t)&getpid - libc.start + libc.pgoff;
	lo = off >> FL_UW_WIN_SHIFT << FL_UW_WIN_SHIFT;
	hi = lo + FL_UW_WIN_BYTES;
	assert_int_equal(fl_ktables__new(&o, &kt), 0);
	assert_int_equal(fl_ktables__set_proc(kt, pid, &libc, 1), 0);
	fl_ktables__settle(kt, 10000);
	fl_ktables__stats(kt, &st);
	assert_int_equal(st.windowed, 1);
	assert_int_equal(st.windows, 0);
	/* Without now, another window: asked for, and to wait. */
	for (size_t i = 0; i < ARRAY_SIZE(other) && !other_off; i++) {
		uint64_t o2 = (uint64_t)other[i] - libc.start + libc.pgoff;

		if (other[i] >= libc.start && other[i] < libc.end &&
		    o2 >> FL_UW_WIN_SHIFT != off >> FL_UW_WIN_SHIFT)
			other_off = o2;
	}
	assert_true(other_off != 0);
	assert_int_equal(fl_ktables__row(kt, &libc, other_off, false, &row), -EAGAIN);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < ref.nr; i++) {
			uint64_t pc = ref.rows[i].pc;

			if (pc < lo || pc >= hi)
				continue;
			for (uint64_t at = pc > lo ? pc - 1 : pc; at <= pc; at++) {
				struct fl_uw_row want = *fl_cfitable__find(&ref, at), got;
				int err = fl_ktables__row(kt, &libc, at, pass == 0, &got);

				/* The window's first row starts at its start. */
				if (want.pc < lo)
					want.pc = (uint32_t)lo;
				expect_row(&want, err, &got, at);
				checked++;
			}
		}
		/* Built once at once; then by the thread, which the second pass reads back. */
		fl_ktables__stats(kt, &st);
		assert_int_equal(st.windows_now, 1);
		fl_ktables__settle(kt, 10000);
		fl_ktables__stats(kt, &st);
		assert_int_equal(st.windows, 2);
	}
	assert_true(checked > 100);
	fl_cfitable__fini(&ref);
	fl_ktables__free(kt);
}

/* Mappings of BPF maps in this process (/proc/self/maps). */
static int bpf_map_mappings(void)
{
	char line[4352];
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "bpf-map") != NULL;
	fclose(f);
	return n;
}

/*
 * libc's table, loaded, gives back through fl_ktables__row() the row of
 * libc's own table at each rule's first byte and the byte before it: the
 * index page and the row pages read back from the kernel, one at a time,
 * through the chunk's fd. No chunk is mapped into this process: the kernel
 * maps a BPF array's pages whole, and a mapping would count all of them
 * in flamed's RSS, as well as in the kernel's memory.
 */
static void test_rows_read_back(void **state)
{
	struct fl_ktables_opts o = maps_opts();
	uint32_t pid = (uint32_t)getpid();
	struct fl_ktables_stats st;
	struct fl_ktables *kt;
	struct fl_cfitable ref = {0};
	struct fl_tmap libc;
	size_t checked = 0;

	(void)state;
	libc_and_table(&libc, &ref);
	assert_true(ref.nr > 2 * FL_UW_PAGE_ROWS); /* pages of rows, and their index */
	assert_int_equal(fl_ktables__new(&o, &kt), 0);
	assert_int_equal(fl_ktables__set_proc(kt, pid, &libc, 1), 0);
	fl_ktables__settle(kt, 10000);
	fl_ktables__stats(kt, &st);
	assert_int_equal(st.loaded, 1);
	assert_int_equal(bpf_map_mappings(), 0);
	for (size_t i = 0; i < ref.nr; i++) {
		uint64_t pc = ref.rows[i].pc;

		for (uint64_t off = pc ? pc - 1 : pc; off <= pc; off++) {
			const struct fl_uw_row *want = fl_cfitable__find(&ref, off);
			struct fl_uw_row got;
			int err = fl_ktables__row(kt, &libc, off, false, &got);

			expect_row(want, err, &got, off);
			checked++;
		}
	}
	assert_true(checked >= 2 * ref.nr - 1);
	fl_cfitable__fini(&ref);
	fl_ktables__free(kt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_maps_by_size),
		cmocka_unit_test(test_asked_procs),
		cmocka_unit_test(test_chunk_free_bumps_epoch),
		cmocka_unit_test(test_row_wants_a_table_not_built),
		cmocka_unit_test(test_rows_read_back),
		cmocka_unit_test(test_row_now_builds_a_window),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
