// SPDX-License-Identifier: GPL-2.0-or-later
/* The in-kernel unwinder's tables: files' unwind tables and processes' mappings in BPF maps. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/hash.h"
#include "common/u32map.h"
#include "files/mapped_file.h"
#include "flamed/common/log.h"
#include "flamed/sampling/procmaps.h"
#include "flamed/unwind_abi.h"
#include "flamed/unwinding/cfitable.h"
#include "unwinding/ktables.h"

enum kt_state {
	KT_DEFERRED, /* lazy: not needed by a sample yet (fd open) */
	KT_QUEUED,   /* waiting for the thread (fd open) */
	KT_BUILDING, /* the thread has it */
	KT_LOADED,   /* its table is in the kernel */
	KT_NONE,     /* no table for good: no usable CFI, unreadable */
	KT_OVER,     /* no table: it did not fit in the budget */
};

struct kt_file {
	uint32_t dev_major, dev_minor;
	uint64_t ino;
	bool vdso;
	uint32_t id; /* in the BPF maps; 0: none could be given (every id taken) */
	enum kt_state state;
	int fd;		     /* KT_QUEUED: the file, for the thread */
	struct fl_tmap map;  /* KT_DEFERRED: a mapping of it (path: ours)... */
	uint32_t map_pid;    /* ... in this process, to open it from when needed */
	uint32_t refs;	     /* processes whose mappings in the kernel name it */
	unsigned idle;	     /* trims passed with refs == 0 */
	uint32_t chunk;	     /* KT_LOADED: where its rows are */
	uint64_t loc;	     /* KT_LOADED, not windowed: its location (FL_UW_LOC()) */
	uint64_t rows, code; /* KT_LOADED (windowed: of its windows loaded) */
	char *path;	     /* for messages */
	/*
	 * A windowed file (KT_LOADED, its location FL_UW_LOC_WINDOWED): its
	 * CFI, held for the windows samples ask for (the thread's alone), the
	 * windows asked for (bits), and those with rows in a chunk.
	 */
	struct fl_cfitable_src *src;
	uint64_t src_bytes;
	uint64_t *asked; /* a bit per window */
	uint32_t nr_windows;
	struct kt_win *wins;
	size_t nr_wins, cap_wins;
	uint32_t jobs;	     /* windows queued or being built (the lock) */
	uint32_t first_win;  /* the window the first sample needing the file was in (or none) */
};

/* A window of a windowed file with rows loaded. */
struct kt_win {
	uint32_t win;
	uint32_t chunk;
	uint64_t rows;
	uint64_t loc; /* FL_UW_LOC() */
};

/* The thread's work: a file's table, or a window of a windowed file (win < NO_WIN). */
struct kt_job {
	struct kt_file *f;
	uint32_t win;
};

#define NO_WIN UINT32_MAX

/* Unmapped files never needed kept, at most (about: they are let go together). */
#define KT_IDLE_DEFERRED_MAX 1024

/* Files with this much code or more are windowed (their tables built where samples reach). */
#define KT_WINDOWED_MIN_CODE ((uint64_t)4 << 20)

/* Pages of the first chunk (1 MiB), and of the largest (each new chunk is twice the last). */
#define KT_CHUNK_MIN_PAGES 256u
#define KT_CHUNK_MAX_PAGES 16384u
/* Pages of the tables kept in user space for fl_ktables__row() (64 KiB). */
#define KT_PCACHE 16u

/*
 * A BPF array of pages holding the tables of many files; pages are given
 * out in order, written once, and never reused within the chunk. They are
 * written and read through the map's fd, not a mapping of it: the kernel
 * maps a BPF array's pages whole, so a mapping would count every page of
 * every chunk in flamed's RSS a second time, used or not.
 */
enum kt_chunk_state { KT_CHUNK_FREE, KT_CHUNK_MAKING, KT_CHUNK_LIVE };

struct kt_chunk {
	enum kt_chunk_state state;
	int fd;		/* KT_CHUNK_LIVE */
	uint32_t gen;	/* tells a chunk from the one before it in the same slot */
	uint32_t cap;	/* pages */
	uint32_t used;	/* pages given out */
	uint32_t live;	/* tables in it now */
	uint64_t bytes; /* kernel memory */
};

/* What the kernel was last told of one process: the files its mappings name. */
struct kt_proc {
	uint32_t pid;
	uint32_t nr;
	uint32_t *ids;
	bool few; /* in procs_few, not procs */
};

struct fl_ktables {
	struct fl_ktables_opts o;

	pthread_mutex_t lock; /* the queue, file states, stats; the rest is the caller's thread's */
	pthread_cond_t work;  /* something queued, or stop */
	pthread_cond_t idle;  /* the queue emptied */
	pthread_t thread;
	bool thread_running, stop;
	bool busy;     /* work queued or under way: settle() waits */
	bool building; /* the thread is compiling a table */
	struct kt_job *queue;
	size_t q_head, q_len, q_cap; /* a ring over queue[q_cap] */

	struct kt_file **by_id; /* [FL_UW_MAX_FILES] */
	uint32_t next_id;
	struct kt_file **files; /* open addressing by (dev, ino) */
	size_t cap_files, nr_files;
	struct kt_file *vdso;
	size_t nr_deferred; /* files KT_DEFERRED */
	size_t idle_deferred; /* ... that became unmapped since the last sweep (some may be again) */

	struct kt_proc *procs;
	size_t nr_procs, cap_procs;
	struct fl_u32map proc_idx; /* pid -> index into procs */
	/*
	 * The pids the walker asked for (a want read) and set_proc() has not
	 * answered since: only theirs are taken out of the asked map, not a
	 * delete per answer (most processes are never asked for).
	 */
	struct fl_u32map asked_pids;
	struct fl_uw_proc *val;	   /* scratch for an update of procs */

	/* The chunks (the lock): cur is the one being filled, or -1. */
	struct kt_chunk chunks[FL_UW_MAX_CHUNKS];
	int cur;
	uint32_t next_chunk_pages;
	uint32_t chunk_gen;
	/*
	 * Pages read back for fl_ktables__row() (the lock), by chunk, its gen
	 * and page: a page's content never changes once given out.
	 */
	struct kt_pcache {
		bool valid;
		uint32_t chunk, gen, page;
		union fl_uw_page pg;
	} pcache[KT_PCACHE];
	/*
	 * fl_cfitable_src__range() on a windowed file's CFI: by the thread,
	 * and by the caller's for fl_ktables__row(now), which keeps the last
	 * window it built (now_f's window now_win: now_t, or none: now_err).
	 */
	pthread_mutex_t range_lock;
	const struct kt_file *now_f;
	uint32_t now_win;
	int now_err;
	struct fl_cfitable now_t;
	union fl_uw_page *lay; /* the thread's: a table laid out before it is written */
	uint32_t *lay_keys;

	struct fl_ktables_stats st;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* --- the thread -------------------------------------------------------------------- */

/* Kernel memory of an array of n table pages (page-sized values): whole pages. */
static uint64_t table_bytes(size_t n)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t b = (uint64_t)n * sizeof(union fl_uw_page);

	if (page <= 0)
		page = 4096;
	return (b + (uint64_t)page - 1) / (uint64_t)page * (uint64_t)page;
}

/* Tells the walker where the table of id is (FL_UW_LOC(), 0 or FL_UW_LOC_NONE). */
static void set_loc(struct fl_ktables *kt, uint32_t id, uint64_t loc)
{
	uint64_t key = FL_UW_ASKED_FILE | id;

	if (!id)
		return;
	bpf_map_update_elem(kt->o.table_loc_fd, &id, &loc, BPF_ANY);
	/* Answered (or taken back): should the walker miss it again, it asks again. */
	if (kt->o.asked_fd >= 0)
		bpf_map_delete_elem(kt->o.asked_fd, &key);
}

/* Frees chunk c: no table is in it (the lock held). */
static void chunk_free(struct fl_ktables *kt, uint32_t c)
{
	struct kt_chunk *ch = &kt->chunks[c];

	/* Taken out of the array of maps first: the kernel waits for the programs using it. */
	bpf_map_delete_elem(kt->o.tables_fd, &c);
	/* Rows the walker cached from it are of no table now: they must not match a new chunk c's. */
	if (kt->o.epoch)
		__atomic_add_fetch(kt->o.epoch, 1, __ATOMIC_SEQ_CST);
	close(ch->fd);
	kt->st.bytes -= ch->bytes;
	memset(ch, 0, sizeof(*ch));
	if (kt->cur == (int)c)
		kt->cur = -1;
}

/*
 * Room for n pages: in the chunk being filled, else in a new one (twice
 * the size of the last, within KT_CHUNK_MIN_PAGES..KT_CHUNK_MAX_PAGES and
 * the budget). The lock held. Returns the chunk, with *start, or -ENOSPC
 * (the budget) or -errno.
 */
static int chunk_alloc(struct fl_ktables *kt, uint32_t n, uint32_t *start)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_INNER_MAP);
	struct kt_chunk *ch;
	uint32_t c, cap;
	uint64_t bytes;
	int fd, err;

	if (kt->cur >= 0 && kt->chunks[kt->cur].cap - kt->chunks[kt->cur].used >= n) {
		ch = &kt->chunks[kt->cur];
		*start = ch->used;
		ch->used += n;
		ch->live++;
		return kt->cur;
	}
	for (c = 0; c < FL_UW_MAX_CHUNKS && kt->chunks[c].state != KT_CHUNK_FREE; c++)
		;
	if (c == FL_UW_MAX_CHUNKS)
		return -ENOSPC;
	cap = kt->next_chunk_pages;
	if (cap < n)
		cap = n;
	bytes = table_bytes(cap);
	if (kt->st.bytes + kt->st.src_bytes + bytes > kt->o.max_bytes) {
		/* A chunk of just this table, if that fits. */
		cap = n;
		bytes = table_bytes(cap);
		if (kt->st.bytes + kt->st.src_bytes + bytes > kt->o.max_bytes)
			return -ENOSPC;
	}
	/*
	 * Made without the lock: putting it in the array of maps waits for a
	 * synchronize_rcu() (milliseconds), which the caller's thread must
	 * not wait for. Only this thread makes chunks; the slot is reserved.
	 */
	kt->chunks[c].state = KT_CHUNK_MAKING;
	pthread_mutex_unlock(&kt->lock);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fl_uw_rows", sizeof(uint32_t),
			    sizeof(union fl_uw_page), cap, &mo);
	err = fd < 0 ? -errno : 0;
	if (!err && bpf_map_update_elem(kt->o.tables_fd, &c, &fd, BPF_ANY))
		err = -errno;
	pthread_mutex_lock(&kt->lock);
	if (err) {
		if (fd >= 0)
			close(fd);
		kt->chunks[c].state = KT_CHUNK_FREE;
		return err;
	}
	ch = &kt->chunks[c];
	*ch = (struct kt_chunk){.state = KT_CHUNK_LIVE,
				.fd = fd,
				.gen = ++kt->chunk_gen,
				.cap = cap,
				.used = n,
				.live = 1,
				.bytes = bytes};
	/* The chunk before stays until its last table goes. */
	if (kt->cur >= 0 && !kt->chunks[kt->cur].live)
		chunk_free(kt, (uint32_t)kt->cur);
	kt->cur = (int)c;
	kt->st.bytes += bytes;
	if (kt->st.bytes > kt->st.peak_bytes)
		kt->st.peak_bytes = kt->st.bytes;
	if (kt->next_chunk_pages < KT_CHUNK_MAX_PAGES)
		kt->next_chunk_pages *= 2;
	*start = 0;
	return (int)c;
}

void fl_ktables_layout(const struct fl_uw_row *rows, uint32_t n, union fl_uw_page *pages)
{
	uint32_t np = FL_UW_ROW_PAGES(n);

	memcpy(pages, rows, (size_t)n * sizeof(*rows));
	/* The rest of the last row page: never searched, but not left as it was. */
	memset(&pages[np - 1].rows[n - (np - 1) * FL_UW_PAGE_ROWS], 0,
	       (size_t)(np * FL_UW_PAGE_ROWS - n) * sizeof(*rows));
	if (np < 2)
		return;
	memset(&pages[np], 0, sizeof(pages[np]));
	for (uint32_t i = 0; i < np; i++)
		pages[np].pcs[i] = pages[i].rows[0].pc;
}

/* The index of the last of pcs[0..n) at or below off, or 0 (n > 0). */
static uint32_t last_pc_at_or_below(const uint32_t *pcs, uint32_t n, uint64_t off)
{
	uint32_t lo = 0, hi = n;

	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (pcs[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The row page of a table of n rows (more than one page of them) where off is, by its index page. */
static uint32_t row_page_of(const union fl_uw_page *index, uint32_t n, uint64_t off)
{
	return last_pc_at_or_below(index->pcs, FL_UW_ROW_PAGES(n), off);
}

/* The row for off in row page pg of a table of n rows. */
static const struct fl_uw_row *find_in_page(const union fl_uw_page *page, uint32_t pg, uint32_t n,
					    uint64_t off)
{
	uint32_t cnt = n - pg * FL_UW_PAGE_ROWS;
	struct fl_cfitable t = {0};

	if (cnt > FL_UW_PAGE_ROWS)
		cnt = FL_UW_PAGE_ROWS;
	/* The row page's rows, sorted as the whole table's: searched as a table of their own. */
	t.rows = (struct fl_uw_row *)page->rows;
	t.nr = cnt;
	return fl_cfitable__find(&t, off);
}

const struct fl_uw_row *fl_ktables_find(const union fl_uw_page *pages, uint32_t n, uint64_t off)
{
	uint32_t np = FL_UW_ROW_PAGES(n), pg = 0;

	if (!n || n > FL_UW_TABLE_MAX_ROWS || off > UINT32_MAX)
		return NULL;
	if (np > 1)
		pg = row_page_of(&pages[np], n, off);
	return find_in_page(&pages[pg], pg, n, off);
}

static void chunk_unref(struct fl_ktables *kt, uint32_t c);

/*
 * Loads t as file f's table: laid out in a chunk's pages (through the
 * chunk's mapping), then its location made known, in one word: the walker
 * sees all of it or none. -EFBIG: more rows than a loaded table may have.
 */
static int copy_table(struct fl_ktables *kt, const struct fl_cfitable *t, uint64_t *loc)
{
	uint32_t start, np = FL_UW_TABLE_PAGES((uint32_t)t->nr), count = np;
	LIBBPF_OPTS(bpf_map_batch_opts, bo);
	int c, err = 0;

	if (!t->nr || t->nr > FL_UW_TABLE_MAX_ROWS)
		return -EFBIG;
	pthread_mutex_lock(&kt->lock);
	c = chunk_alloc(kt, np, &start);
	pthread_mutex_unlock(&kt->lock);
	if (c < 0)
		return c;
	/* The pages are ours until the location is published: the chunk stays while they are live. */
	fl_ktables_layout(t->rows, (uint32_t)t->nr, kt->lay);
	for (uint32_t i = 0; i < np; i++)
		kt->lay_keys[i] = start + i;
	if (bpf_map_update_batch(kt->chunks[c].fd, kt->lay_keys, kt->lay, &count, &bo))
		err = -errno;
	else if (count != np)
		err = -EIO;
	if (err) {
		pthread_mutex_lock(&kt->lock);
		chunk_unref(kt, (uint32_t)c);
		pthread_mutex_unlock(&kt->lock);
		return err;
	}
	*loc = FL_UW_LOC(c, start, t->nr);
	return c;
}

static int load_table(struct fl_ktables *kt, struct kt_file *f, const struct fl_cfitable *t)
{
	uint64_t loc;
	int c = copy_table(kt, t, &loc);

	if (c < 0)
		return c;
	pthread_mutex_lock(&kt->lock);
	f->chunk = (uint32_t)c;
	f->loc = loc;
	pthread_mutex_unlock(&kt->lock);
	set_loc(kt, f->id, loc);
	return 0;
}

/* Tells the walker where window win of f is (a location or FL_UW_LOC_NONE), and that it is answered. */
static void set_win_loc(struct fl_ktables *kt, const struct kt_file *f, uint32_t win, uint64_t loc)
{
	uint64_t key = FL_UW_WIN_KEY(f->id, win), asked = FL_UW_ASKED_WIN | key;

	if (kt->o.win_loc_fd >= 0)
		bpf_map_update_elem(kt->o.win_loc_fd, &key, &loc, BPF_ANY);
	if (kt->o.asked_fd >= 0)
		bpf_map_delete_elem(kt->o.asked_fd, &asked);
}

/* The rows of window win of windowed file f, from the CFI held for it (one caller at a time). */
static int window_rows(struct fl_ktables *kt, const struct kt_file *f, uint32_t win,
		       struct fl_cfitable *t)
{
	int err;

	pthread_mutex_lock(&kt->range_lock);
	err = fl_cfitable_src__range(f->src, (uint64_t)win << FL_UW_WIN_SHIFT,
				     (uint64_t)(win + 1) << FL_UW_WIN_SHIFT, t);
	pthread_mutex_unlock(&kt->range_lock);
	return err;
}

/* Builds and loads window win of windowed file f (the thread, the lock not held). */
static void build_window(struct fl_ktables *kt, struct kt_file *f, uint32_t win)
{
	struct fl_cfitable t = {0};
	struct kt_win *w;
	uint64_t loc = FL_UW_LOC_NONE;
	int err, c = -1;

	err = window_rows(kt, f, win, &t);
	if (!err) {
		c = copy_table(kt, &t, &loc);
		if (c < 0) {
			fl_pr_debug("ktables: %s: window %u: cannot load %zu rows: %s\n", f->path, win,
				    t.nr, strerror(-c));
			loc = FL_UW_LOC_NONE;
		}
	}
	pthread_mutex_lock(&kt->lock);
	if (c >= 0 && f->nr_wins == f->cap_wins) {
		size_t ncap = f->cap_wins ? f->cap_wins * 2 : 16;
		struct kt_win *nw = realloc(f->wins, ncap * sizeof(*nw));

		if (nw) {
			f->wins = nw;
			f->cap_wins = ncap;
		}
	}
	if (c >= 0 && f->nr_wins < f->cap_wins) {
		w = &f->wins[f->nr_wins++];
		*w = (struct kt_win){.win = win, .chunk = (uint32_t)c, .rows = t.nr, .loc = loc};
		f->rows += t.nr;
		f->code += t.code_bytes;
		kt->st.rows += t.nr;
		kt->st.code_bytes += t.code_bytes;
		kt->st.windows++;
		kt->st.last_load_ns = mono_ns();
	} else if (c >= 0) {
		/* No room to remember it: not used, its rows stay counted in the chunk until it goes. */
		loc = FL_UW_LOC_NONE;
	}
	pthread_mutex_unlock(&kt->lock);
	set_win_loc(kt, f, win, loc);
	fl_cfitable__fini(&t);
}

/*
 * A big file becomes windowed: the index of its FDEs held (within the
 * budget), its CFI let go (windows read what they need from fd again), the
 * walker told to look up windows, and the window the first sample needed
 * built. Returns 0, or -EFBIG when the file is small (its whole table then;
 * unless big_table: one with more rows than a loaded table may have)
 * or -ENOSPC.
 */
static int make_windowed(struct fl_ktables *kt, struct kt_file *f, struct fl_cfitable_src *src,
			 int fd, bool big_table)
{
	uint64_t code = fl_cfitable_src__code_bytes(src), bytes;
	uint32_t nr_windows;
	uint64_t *asked;
	int err;

	if (code < kt->o.windowed_min_code && !big_table)
		return -EFBIG;
	/* The index now, for the budget to count it (2 million FDEs of a hostile file: 40 MB). */
	err = fl_cfitable_src__index(src);
	if (err)
		return err;
	/* What cannot be let go (.debug_frame's CFI) is held, and counted. */
	err = fl_cfitable_src__release(src, fd);
	if (err && err != -ENOTSUP)
		fl_pr_debug("ktables: %s: its CFI is held: %s\n", f->path, strerror(-err));
	bytes = fl_cfitable_src__bytes(src);
	/* Windows of file offsets up to 4 GiB, the walker's limit. */
	nr_windows = (uint32_t)((1ULL << 32) >> FL_UW_WIN_SHIFT);
	asked = calloc(nr_windows / 64, sizeof(*asked));
	if (!asked)
		return -ENOMEM;
	bytes += nr_windows / 8;
	pthread_mutex_lock(&kt->lock);
	if (kt->st.bytes + kt->st.src_bytes + bytes > kt->o.max_bytes) {
		pthread_mutex_unlock(&kt->lock);
		free(asked);
		return -ENOSPC;
	}
	kt->st.src_bytes += bytes;
	kt->st.windowed++;
	f->src = src;
	f->src_bytes = bytes;
	f->asked = asked;
	f->nr_windows = nr_windows;
	pthread_mutex_unlock(&kt->lock);
	fl_pr_debug("ktables: %s: %.1f MiB of code, tables by windows of %llu KiB\n", f->path,
		    (double)code / (1 << 20), (unsigned long long)(FL_UW_WIN_BYTES >> 10));
	return 0;
}

/* f is windowed now (make_windowed()): loaded, and the window of its first sample built. */
static void load_windowed(struct fl_ktables *kt, struct kt_file *f, int fd)
{
	close(fd);
	pthread_mutex_lock(&kt->lock);
	f->state = KT_LOADED;
	kt->st.loaded++;
	if (!kt->st.first_load_ns)
		kt->st.first_load_ns = mono_ns();
	if (f->first_win < f->nr_windows) {
		f->asked[f->first_win / 64] |= 1ULL << (f->first_win % 64);
		f->jobs++;
	}
	pthread_mutex_unlock(&kt->lock);
	/* Windows are asked for once the walker knows; the first is built at once. */
	set_loc(kt, f->id, FL_UW_LOC_WINDOWED);
	if (f->first_win < f->nr_windows) {
		build_window(kt, f, f->first_win);
		pthread_mutex_lock(&kt->lock);
		f->jobs--;
		pthread_mutex_unlock(&kt->lock);
	}
}

/* Compiles and loads one file's table, the lock not held. */
static void build(struct fl_ktables *kt, struct kt_file *f, int fd)
{
	struct fl_cfitable t = {0};
	struct fl_cfitable_src *src = NULL;
	enum kt_state state = KT_NONE;
	int err;

	if (f->vdso) {
		err = fl_cfitable__vdso(&t);
	} else if (!fl_cfitable_src__open_hdr(fd, kt->o.windowed_min_code, &src)) {
		/* A big file indexed by its .eh_frame_hdr, its CFI not read: by windows. */
		err = make_windowed(kt, f, src, fd, false);
		if (!err) {
			load_windowed(kt, f, fd);
			return;
		}
		fl_cfitable_src__free(src);
	} else {
		/* Small, or no search table to trust: the CFI read, and indexed if big after all. */
		err = fl_cfitable_src__open(fd, &src);
		if (!err) {
			err = make_windowed(kt, f, src, fd, false);
			if (!err) {
				load_windowed(kt, f, fd);
				return;
			}
			if (err == -EFBIG)
				err = fl_cfitable_src__all(src, &t);
			/* More rows than a table in the kernel holds: by windows after all. */
			if (!err && t.nr > FL_UW_TABLE_MAX_ROWS) {
				fl_pr_debug("ktables: %s: %zu rows, loaded by windows\n", f->path, t.nr);
				fl_cfitable__fini(&t);
				err = make_windowed(kt, f, src, fd, true);
				if (!err) {
					load_windowed(kt, f, fd);
					return;
				}
			}
			fl_cfitable_src__free(src);
		}
	}
	if (fd >= 0)
		close(fd);
	if (err == -ENOSPC) {
		/* A big file whose CFI does not fit in the budget (make_windowed()). */
		fl_pr_debug("ktables: %s: its CFI is over the budget\n", f->path);
		state = KT_OVER;
	} else if (err) {
		fl_pr_debug("ktables: %s: no table: %s\n", f->path, strerror(-err));
	} else if ((err = load_table(kt, f, &t)) == -ENOSPC) {
		fl_pr_debug("ktables: %s: %zu rows over the budget\n", f->path, t.nr);
		state = KT_OVER;
	} else if (err) {
		fl_pr_debug("ktables: %s: cannot load its table: %s\n", f->path, strerror(-err));
	} else {
		state = KT_LOADED;
		fl_pr_debug("ktables: %s: %zu rows loaded\n", f->path, t.nr);
	}
	if (state != KT_LOADED)
		set_loc(kt, f->id, FL_UW_LOC_NONE);

	pthread_mutex_lock(&kt->lock);
	f->state = state;
	if (state == KT_LOADED) {
		f->rows = t.nr;
		f->code = t.code_bytes;
		kt->st.loaded++;
		kt->st.rows += t.nr;
		kt->st.code_bytes += t.code_bytes;
		kt->st.last_load_ns = mono_ns();
		if (!kt->st.first_load_ns)
			kt->st.first_load_ns = kt->st.last_load_ns;
	} else if (state == KT_OVER) {
		kt->st.over_budget++;
	} else {
		kt->st.no_cfi++;
	}
	pthread_mutex_unlock(&kt->lock);
	fl_cfitable__fini(&t);
}

static void *thread_main(void *arg)
{
	struct fl_ktables *kt = arg;
	uint32_t start;
	int c;

	pthread_mutex_lock(&kt->lock);
	/*
	 * The first chunk now, before any table needs it: the first tables are
	 * needed by the first samples of a program, and a chunk takes some
	 * milliseconds to make.
	 */
	c = chunk_alloc(kt, 0, &start);
	if (c >= 0)
		kt->chunks[c].live--;
	while (!kt->stop) {
		struct kt_job job;
		uint64_t t0;
		int fd = -1;

		if (!kt->q_len) {
			kt->busy = false;
			pthread_cond_broadcast(&kt->idle);
			pthread_cond_wait(&kt->work, &kt->lock);
			continue;
		}
		job = kt->queue[kt->q_head];
		kt->q_head = (kt->q_head + 1) % kt->q_cap;
		kt->q_len--;
		kt->busy = true;
		kt->building = true;
		if (job.win == NO_WIN) {
			job.f->state = KT_BUILDING;
			fd = job.f->fd;
			job.f->fd = -1;
		}
		pthread_mutex_unlock(&kt->lock);

		t0 = thread_ns();
		if (job.win == NO_WIN) {
			build(kt, job.f, fd);
		} else {
			build_window(kt, job.f, job.win);
			pthread_mutex_lock(&kt->lock);
			job.f->jobs--;
			pthread_mutex_unlock(&kt->lock);
		}

		pthread_mutex_lock(&kt->lock);
		kt->st.build_ns += thread_ns() - t0;
		kt->building = false;
	}
	kt->busy = false;
	pthread_cond_broadcast(&kt->idle);
	pthread_mutex_unlock(&kt->lock);
	return NULL;
}

/* --- files ------------------------------------------------------------------------- */

static uint64_t file_hash(uint32_t maj, uint32_t min, uint64_t ino)
{
	return fl_hash_u64_pair(ino, (uint64_t)maj << 32 | min);
}

static struct kt_file **file_slot(struct kt_file **tab, size_t cap, uint32_t maj, uint32_t min,
				  uint64_t ino)
{
	size_t i = file_hash(maj, min, ino) & (cap - 1);

	while (tab[i] &&
	       !(tab[i]->ino == ino && tab[i]->dev_major == maj && tab[i]->dev_minor == min))
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static int files_rehash(struct fl_ktables *kt, size_t cap)
{
	struct kt_file **tab = calloc(cap, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < kt->cap_files; i++) {
		struct kt_file *f = kt->files[i];

		if (f)
			*file_slot(tab, cap, f->dev_major, f->dev_minor, f->ino) = f;
	}
	free(kt->files);
	kt->files = tab;
	kt->cap_files = cap;
	return 0;
}

static uint32_t take_id(struct fl_ktables *kt)
{
	for (uint32_t tries = 1; tries < FL_UW_MAX_FILES; tries++) {
		uint32_t id = kt->next_id;

		kt->next_id = kt->next_id + 1 < FL_UW_MAX_FILES ? kt->next_id + 1 : 1;
		/* Ids go round: one given back waits a whole round before it names another file. */
		if (!kt->by_id[id])
			return id;
	}
	return 0;
}

/* Queues job for the thread (the lock held). */
static int enqueue_locked(struct fl_ktables *kt, struct kt_job job, bool first)
{
	if (kt->q_len == kt->q_cap) {
		size_t ncap = kt->q_cap ? kt->q_cap * 2 : 64;
		struct kt_job *nq = malloc(ncap * sizeof(*nq));

		if (!nq)
			return -ENOMEM;
		for (size_t i = 0; i < kt->q_len; i++)
			nq[i] = kt->queue[(kt->q_head + i) % kt->q_cap];
		free(kt->queue);
		kt->queue = nq;
		kt->q_head = 0;
		kt->q_cap = ncap;
	}
	if (first) {
		kt->q_head = (kt->q_head + kt->q_cap - 1) % kt->q_cap;
		kt->queue[kt->q_head] = job;
	} else {
		kt->queue[(kt->q_head + kt->q_len) % kt->q_cap] = job;
	}
	kt->q_len++;
	kt->busy = true;
	pthread_cond_signal(&kt->work);
	return 0;
}

/* Queues f for the thread (the lock not held). */
static int enqueue(struct fl_ktables *kt, struct kt_file *f)
{
	int err;

	pthread_mutex_lock(&kt->lock);
	err = enqueue_locked(kt, (struct kt_job){.f = f, .win = NO_WIN}, false);
	if (!err)
		f->state = KT_QUEUED;
	pthread_mutex_unlock(&kt->lock);
	return err;
}

static struct kt_file *file_new(struct fl_ktables *kt, const char *path)
{
	struct kt_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->fd = -1;
	f->first_win = NO_WIN;
	f->path = strndup(path, 4096);
	if (!f->path) {
		free(f);
		return NULL;
	}
	f->id = take_id(kt);
	if (f->id)
		kt->by_id[f->id] = f;
	kt->st.files++;
	return f;
}

/* A file the caller's thread has given up on before queueing it: no table, for good. */
static void file_none(struct fl_ktables *kt, struct kt_file *f)
{
	f->state = KT_NONE;
	set_loc(kt, f->id, FL_UW_LOC_NONE);
	pthread_mutex_lock(&kt->lock);
	kt->st.no_cfi++;
	pthread_mutex_unlock(&kt->lock);
}

/*
 * Tells the walker f's id by its device and inode (or takes it back): it
 * finds the file of a mapping itself in processes whose mappings it does
 * not have yet.
 */
static void file_id_publish(struct fl_ktables *kt, const struct kt_file *f, bool on)
{
	struct {
		uint64_t dev, ino;
	} key = {.dev = (uint64_t)f->dev_major << 20 | f->dev_minor, .ino = f->ino};

	if (kt->o.file_ids_fd < 0 || !f->id || (!f->ino && !f->dev_major && !f->dev_minor))
		return;
	if (on)
		bpf_map_update_elem(kt->o.file_ids_fd, &key, &f->id, BPF_ANY);
	else
		bpf_map_delete_elem(kt->o.file_ids_fd, &key);
}

/* Where a deferred file can be opened from: a mapping of it, and the process. */
static void file_remember(struct kt_file *f, const struct fl_tmap *m, uint32_t pid)
{
	f->map = *m;
	f->map.path = f->path;
	f->map_pid = pid;
}

/*
 * Opens f through m in process pid (through the process if the file was
 * replaced since; only the file that was mapped) and queues it, or gives
 * up on it.
 */
static void file_open_queue(struct fl_ktables *kt, struct kt_file *f, const struct fl_tmap *m,
			    uint32_t pid)
{
	f->fd = fl_open_mapped_file(m, pid);
	if (f->fd < 0) {
		fl_pr_debug("ktables: %s: %s\n", m->path, strerror(-f->fd));
		f->fd = -1;
		file_none(kt, f);
		return;
	}
	if (enqueue(kt, f)) {
		close(f->fd);
		f->fd = -1;
		file_none(kt, f);
	}
}

/* The file of mapping m of process pid: known, or new (queued, or deferred when lazy). */
static struct kt_file *file_get(struct fl_ktables *kt, const struct fl_tmap *m, uint32_t pid)
{
	struct kt_file **slot, *f;

	if (!strcmp(m->path, "[vdso]")) {
		if (kt->vdso)
			return kt->vdso;
		f = file_new(kt, m->path);
		if (!f)
			return NULL;
		f->vdso = true;
		kt->vdso = f;
		if (!f->id || enqueue(kt, f))
			file_none(kt, f);
		return f;
	}
	if (2 * (kt->nr_files + 1) > kt->cap_files &&
	    files_rehash(kt, kt->cap_files ? kt->cap_files * 2 : 256))
		return NULL;
	slot = file_slot(kt->files, kt->cap_files, m->dev_major, m->dev_minor, m->ino);
	if (*slot) {
		f = *slot;
		/* The latest process seen mapping it opens it when it is needed. */
		if (f->state == KT_DEFERRED)
			file_remember(f, m, pid);
		return f;
	}
	f = file_new(kt, m->path);
	if (!f)
		return NULL;
	f->dev_major = m->dev_major;
	f->dev_minor = m->dev_minor;
	f->ino = m->ino;
	*slot = f;
	kt->nr_files++;
	file_id_publish(kt, f, true);
	if (!f->id) {
		file_none(kt, f);
		return f;
	}
	/* Lazy: opened when a sample needs it, through a process mapping it then. */
	if (kt->o.lazy) {
		f->state = KT_DEFERRED;
		file_remember(f, m, pid);
		kt->nr_deferred++;
		return f;
	}
	file_open_queue(kt, f, m, pid);
	return f;
}

static struct kt_proc *proc_find(struct fl_ktables *kt, uint32_t pid);

void fl_ktables__want_proc(struct fl_ktables *kt, uint32_t pid)
{
	struct kt_proc *p = proc_find(kt, pid);
	uint64_t key = pid; /* the asked map's keys are 64-bit */

	/* No room to remember it: taken back now (the walker may ask again before the answer). */
	if (fl_u32map__put(&kt->asked_pids, pid, 0) && kt->o.asked_fd >= 0)
		bpf_map_delete_elem(kt->o.asked_fd, &key);
	/* Its files, all: the walker would otherwise ask for them one sample at a time. */
	for (uint32_t i = 0; p && i < p->nr; i++)
		fl_ktables__want(kt, p->ids[i], FL_KTABLES_NO_WINDOW);
}

void fl_ktables__want_window(struct fl_ktables *kt, uint32_t file_id, uint32_t win)
{
	struct kt_file *f = file_id && file_id < FL_UW_MAX_FILES ? kt->by_id[file_id] : NULL;
	uint64_t bit, asked = FL_UW_ASKED_WIN | FL_UW_WIN_KEY(file_id, win);

	if (f)
		pthread_mutex_lock(&kt->lock);
	if (!f || f->state != KT_LOADED || !f->src) {
		if (f)
			pthread_mutex_unlock(&kt->lock);
		/* Not (or no more) a windowed file: taken back, the walker asks again if it is. */
		if (kt->o.asked_fd >= 0)
			bpf_map_delete_elem(kt->o.asked_fd, &asked);
		return;
	}
	if (win >= f->nr_windows) {
		pthread_mutex_unlock(&kt->lock);
		set_win_loc(kt, f, win, FL_UW_LOC_NONE);
		return;
	}
	bit = 1ULL << (win % 64);
	/* Asked before: built, or queued (the walker asks again only once it was answered). */
	if (!(f->asked[win / 64] & bit)) {
		/* Ahead of files queued because they were mapped: a sample needs it now. */
		if (!enqueue_locked(kt, (struct kt_job){.f = f, .win = win}, true)) {
			f->asked[win / 64] |= bit;
			f->jobs++;
		}
	}
	pthread_mutex_unlock(&kt->lock);
}

void fl_ktables__want(struct fl_ktables *kt, uint32_t file_id, uint32_t win)
{
	struct kt_file *f = file_id && file_id < FL_UW_MAX_FILES ? kt->by_id[file_id] : NULL;

	if (!f)
		return;
	if (f->first_win == NO_WIN && win != FL_KTABLES_NO_WINDOW)
		f->first_win = win;
	if (f->state == KT_QUEUED) {
		/* A sample needs it now: ahead of those queued because they were mapped. */
		pthread_mutex_lock(&kt->lock);
		for (size_t i = 0; i < kt->q_len; i++) {
			size_t at = (kt->q_head + i) % kt->q_cap;

			struct kt_job job = kt->queue[at];

			if (job.f != f || job.win != NO_WIN)
				continue;
			for (; i > 0; i--) {
				size_t prev = (kt->q_head + i - 1) % kt->q_cap;

				kt->queue[(kt->q_head + i) % kt->q_cap] = kt->queue[prev];
			}
			kt->queue[kt->q_head] = job;
			break;
		}
		pthread_mutex_unlock(&kt->lock);
		return;
	}
	if (f->state != KT_DEFERRED)
		return;
	kt->nr_deferred--;
	file_open_queue(kt, f, &f->map, f->map_pid);
}

/*
 * The C library and the dynamic loader flamed itself runs on are those
 * nearly every program maps: their tables are built at once, so that a
 * program's first samples need not wait for them.
 */
static int prefetch_one(const struct fl_procmap *pm, void *ctx)
{
	struct fl_ktables *kt = ctx;
	const char *base = strrchr(pm->path, '/');
	struct fl_tmap m = {.start = pm->start,
			    .end = pm->end,
			    .pgoff = pm->pgoff,
			    .dev_major = pm->dev_major,
			    .dev_minor = pm->dev_minor,
			    .ino = pm->ino,
			    .path = pm->path};
	struct kt_file *f;

	if (!(pm->prot & FL_PROT_EXEC) || pm->deleted || !base)
		return 0;
	base++;
	if (strncmp(base, "libc.so.", 8) && strncmp(base, "ld-linux", 8) &&
	    strncmp(base, "libc-", 5) && strncmp(base, "ld-", 3))
		return 0;
	f = file_get(kt, &m, (uint32_t)getpid());
	if (f)
		fl_ktables__want(kt, f->id, FL_KTABLES_NO_WINDOW);
	return 0;
}

void fl_ktables__prefetch_self(struct fl_ktables *kt)
{
	fl_procmaps__read(getpid(), prefetch_one, kt);
}

/* --- processes --------------------------------------------------------------------- */

static struct kt_proc *proc_find(struct fl_ktables *kt, uint32_t pid)
{
	uint32_t idx;

	return fl_u32map__get(&kt->proc_idx, pid, &idx) ? &kt->procs[idx] : NULL;
}

static void unload(struct fl_ktables *kt, struct kt_file *f);

/*
 * Takes f out of the file table: the entries after it in its run move back
 * where a probe for them would stop first (no tombstones).
 */
static void file_remove(struct fl_ktables *kt, struct kt_file *f)
{
	size_t mask = kt->cap_files - 1, i, j;

	for (i = file_hash(f->dev_major, f->dev_minor, f->ino) & mask; kt->files[i] != f;
	     i = (i + 1) & mask)
		if (!kt->files[i])
			return; /* the vdso, or not there */
	kt->files[i] = NULL;
	kt->nr_files--;
	for (j = (i + 1) & mask; kt->files[j]; j = (j + 1) & mask) {
		struct kt_file *g = kt->files[j];
		size_t home = file_hash(g->dev_major, g->dev_minor, g->ino) & mask;

		/* g stays unless the hole lies between its home and it. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			kt->files[i] = g;
			kt->files[j] = NULL;
			i = j;
		}
	}
}

/* Lets go of the files never needed that no process maps now. */
static void sweep_idle_deferred(struct fl_ktables *kt)
{
	for (size_t i = 0; i < kt->cap_files; i++) {
		struct kt_file *f = kt->files[i];

		if (!f || f->refs || f->state != KT_DEFERRED)
			continue;
		file_remove(kt, f);
		unload(kt, f);
		/* What moved back into slot i is looked at again. */
		i--;
	}
	kt->idle_deferred = 0;
}

static void unref(struct fl_ktables *kt, const uint32_t *ids, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct kt_file *f = ids[i] < FL_UW_MAX_FILES ? kt->by_id[ids[i]] : NULL;

		if (!f || !f->refs || --f->refs)
			continue;
		/*
		 * Mapped by no process any more and never needed: it holds no
		 * fd, and stays for the next process to map it (a shell's
		 * libraries, run again and again, are not forgotten and told to
		 * the walker anew each time). Many of them (programs run once:
		 * a build's) are let go together, and the rest at a trim.
		 */
		if (f->state == KT_DEFERRED && f != kt->vdso)
			kt->idle_deferred++;
	}
	if (kt->idle_deferred >= KT_IDLE_DEFERRED_MAX)
		sweep_idle_deferred(kt);
}

static void proc_drop(struct fl_ktables *kt, uint32_t pid)
{
	uint32_t idx, last;

	if (!fl_u32map__get(&kt->proc_idx, pid, &idx))
		return;
	unref(kt, kt->procs[idx].ids, kt->procs[idx].nr);
	free(kt->procs[idx].ids);
	fl_u32map__del(&kt->proc_idx, pid);
	last = (uint32_t)kt->nr_procs - 1;
	if (idx != last) {
		kt->procs[idx] = kt->procs[last];
		fl_u32map__put(&kt->proc_idx, kt->procs[idx].pid, idx);
	}
	kt->nr_procs--;
}

/* Process pid's mappings out of the kernel, from either map. */
static void procs_delete(struct fl_ktables *kt, uint32_t pid)
{
	bpf_map_delete_elem(kt->o.procs_fd, &pid);
	bpf_map_delete_elem(kt->o.procs_few_fd, &pid);
}

/*
 * Answered: should the walker miss the process again (an exec), it asks
 * again. (A want read after the answer it was for keeps its key until the
 * next: the tracker pushes every change of mappings anyway, asked or not.)
 */
static void answered(struct fl_ktables *kt, uint32_t pid)
{
	uint64_t key = pid; /* the map's keys are 64-bit (unwind_abi.h) */

	if (fl_u32map__del(&kt->asked_pids, pid) && kt->o.asked_fd >= 0)
		bpf_map_delete_elem(kt->o.asked_fd, &key);
}

static bool has_id(const uint32_t *ids, uint32_t n, uint32_t id)
{
	for (uint32_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

int fl_ktables__set_proc(struct fl_ktables *kt, uint32_t pid, const struct fl_tmap *maps, size_t n)
{
	struct fl_uw_proc *v = kt->val;
	uint32_t *ids = NULL, nr_ids = 0;
	struct kt_proc *p;
	size_t nr = n < FL_UW_MAX_MAPS ? n : FL_UW_MAX_MAPS;
	bool few;
	int err = 0;

	if (!pid)
		return -EINVAL;
	if (!n) {
		/*
		 * Pushed: in the map it was pushed to only (the programs add
		 * a fork's child, a new pid, and delete at exec and exit).
		 * Else only its fork's copy of its parent's, in either map,
		 * unless the program deleted that at its exit.
		 */
		p = proc_find(kt, pid);
		if (p)
			bpf_map_delete_elem(p->few ? kt->o.procs_few_fd : kt->o.procs_fd, &pid);
		else if (!kt->o.exit_deletes)
			procs_delete(kt, pid);
		proc_drop(kt, pid);
		answered(kt, pid);
		return 0;
	}
	if (n > nr)
		kt->st.maps_dropped += n - nr;
	ids = malloc(nr * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	/* The few's map takes the start of v (unwind_abi.h): only that much is copied. */
	few = nr <= FL_UW_FEW_MAPS;
	memset(v, 0, few ? sizeof(struct fl_uw_proc_few) : sizeof(*v));
	for (size_t i = 0; i < nr; i++) {
		const struct fl_tmap *m = &maps[i];
		struct fl_uw_map *e = &v->maps[v->nr];
		struct kt_file *f = NULL;

		e->start = m->start;
		e->end = m->end;
		e->pgoff = m->pgoff;
		/* Anonymous code (JIT), [vsyscall] and the like: frame pointers. */
		if (!fl_tmap__is_anon(m) && (m->path[0] != '[' || !strcmp(m->path, "[vdso]")))
			f = file_get(kt, m, pid);
		e->file_id = f ? f->id : 0;
		if (e->file_id && !has_id(ids, nr_ids, e->file_id)) {
			ids[nr_ids++] = e->file_id;
			f->refs++;
			f->idle = 0;
		}
		v->nr++;
	}
	if (bpf_map_update_elem(few ? kt->o.procs_few_fd : kt->o.procs_fd, &pid, v, BPF_ANY)) {
		err = -errno;
		kt->st.procs_failed++;
		unref(kt, ids, nr_ids);
		free(ids);
		/* What the kernel had is stale now: better frame pointers than the wrong tables. */
		procs_delete(kt, pid);
		proc_drop(kt, pid);
		return err;
	}
	/*
	 * Not in the other map: it had more or fewer mappings before, or its
	 * parent's were copied there at its fork (not known to us then).
	 */
	p = proc_find(kt, pid);
	if (!p || p->few != few)
		bpf_map_delete_elem(few ? kt->o.procs_fd : kt->o.procs_few_fd, &pid);
	answered(kt, pid);
	if (p) {
		unref(kt, p->ids, p->nr);
		free(p->ids);
	} else {
		if (kt->nr_procs == kt->cap_procs) {
			size_t ncap = kt->cap_procs ? kt->cap_procs * 2 : 256;
			struct kt_proc *np = realloc(kt->procs, ncap * sizeof(*np));

			if (!np) {
				err = -ENOMEM;
				goto fail;
			}
			kt->procs = np;
			kt->cap_procs = ncap;
		}
		err = fl_u32map__put(&kt->proc_idx, pid, (uint32_t)kt->nr_procs);
		if (err)
			goto fail;
		p = &kt->procs[kt->nr_procs++];
		p->pid = pid;
	}
	p->ids = ids;
	p->nr = nr_ids;
	p->few = few;
	return 0;
fail:
	unref(kt, ids, nr_ids);
	free(ids);
	procs_delete(kt, pid);
	return err;
}

/* --- life -------------------------------------------------------------------------- */

int fl_ktables__new(const struct fl_ktables_opts *opts, struct fl_ktables **ret)
{
	struct fl_ktables *kt;
	int err;

	if (!opts || opts->sz < sizeof(*opts))
		return -EINVAL;
	kt = calloc(1, sizeof(*kt));
	if (!kt)
		return -ENOMEM;
	kt->o = *opts;
	if (!kt->o.max_bytes)
		kt->o.max_bytes = FL_KTABLES_DEFAULT_BYTES;
	if (!kt->o.windowed_min_code)
		kt->o.windowed_min_code = KT_WINDOWED_MIN_CODE;
	kt->next_id = 1;
	kt->cur = -1;
	kt->next_chunk_pages = KT_CHUNK_MIN_PAGES;
	kt->by_id = calloc(FL_UW_MAX_FILES, sizeof(*kt->by_id));
	kt->val = calloc(1, sizeof(*kt->val));
	/* Touched only as far as the largest table laid out. */
	kt->lay = malloc(FL_UW_TABLE_PAGES(FL_UW_TABLE_MAX_ROWS) * sizeof(*kt->lay));
	kt->lay_keys = malloc(FL_UW_TABLE_PAGES(FL_UW_TABLE_MAX_ROWS) * sizeof(*kt->lay_keys));
	if (!kt->by_id || !kt->val || !kt->lay || !kt->lay_keys) {
		free(kt->by_id);
		free(kt->val);
		free(kt->lay);
		free(kt->lay_keys);
		free(kt);
		return -ENOMEM;
	}
	pthread_mutex_init(&kt->lock, NULL);
	pthread_mutex_init(&kt->range_lock, NULL);
	pthread_cond_init(&kt->work, NULL);
	pthread_cond_init(&kt->idle, NULL);
	err = -pthread_create(&kt->thread, NULL, thread_main, kt);
	if (err) {
		kt->thread_running = false;
		fl_ktables__free(kt);
		return err;
	}
	kt->thread_running = true;
	*ret = kt;
	return 0;
}

static void file_free(struct kt_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	fl_cfitable_src__free(f->src);
	free(f->asked);
	free(f->wins);
	free(f->path);
	free(f);
}

void fl_ktables__free(struct fl_ktables *kt)
{
	if (!kt)
		return;
	if (kt->thread_running) {
		pthread_mutex_lock(&kt->lock);
		kt->stop = true;
		pthread_cond_signal(&kt->work);
		pthread_mutex_unlock(&kt->lock);
		pthread_join(kt->thread, NULL);
	}
	/* The chunks stay in the kernel with the program's maps; our fds go. */
	for (size_t c = 0; c < FL_UW_MAX_CHUNKS; c++)
		if (kt->chunks[c].state == KT_CHUNK_LIVE)
			close(kt->chunks[c].fd);
	free(kt->lay);
	free(kt->lay_keys);
	fl_cfitable__fini(&kt->now_t);
	/* Every file is in files[], or is the vdso. */
	for (size_t i = 0; i < kt->cap_files; i++)
		if (kt->files[i])
			file_free(kt->files[i]);
	if (kt->vdso)
		file_free(kt->vdso);
	for (size_t i = 0; i < kt->nr_procs; i++)
		free(kt->procs[i].ids);
	free(kt->procs);
	fl_u32map__fini(&kt->proc_idx);
	fl_u32map__fini(&kt->asked_pids);
	free(kt->files);
	free(kt->queue);
	free(kt->by_id);
	free(kt->val);
	pthread_mutex_destroy(&kt->lock);
	pthread_mutex_destroy(&kt->range_lock);
	pthread_cond_destroy(&kt->work);
	pthread_cond_destroy(&kt->idle);
	free(kt);
}

/* A table in chunk c goes: the chunk with its last one (the one being filled stays). The lock held. */
static void chunk_unref(struct fl_ktables *kt, uint32_t c)
{
	struct kt_chunk *ch = &kt->chunks[c];

	if (ch->live && !--ch->live && kt->cur != (int)c)
		chunk_free(kt, c);
}

/* Unloads f's table and forgets it (the caller's thread; f is neither queued nor building). */
static void unload(struct fl_ktables *kt, struct kt_file *f)
{
	if (f->id) {
		/* The walker stops using the table before its rows can go with their chunk. */
		file_id_publish(kt, f, false);
		/* (A file never needed has no location, nor was it asked for: else it would be queued.) */
		if (f->state != KT_DEFERRED)
			set_loc(kt, f->id, 0);
		/* Every window asked for was answered (loaded or none): the next file with this id must not find them. */
		for (uint32_t w = 0; f->asked && w < f->nr_windows; w++) {
			uint64_t key = FL_UW_WIN_KEY(f->id, w);

			if ((f->asked[w / 64] >> (w % 64)) & 1 && kt->o.win_loc_fd >= 0)
				bpf_map_delete_elem(kt->o.win_loc_fd, &key);
		}
		kt->by_id[f->id] = NULL;
	}
	pthread_mutex_lock(&kt->lock);
	if (f->state == KT_DEFERRED) {
		kt->nr_deferred--;
	} else if (f->state == KT_LOADED && f->src) {
		kt->st.loaded--;
		kt->st.rows -= f->rows;
		kt->st.code_bytes -= f->code;
		kt->st.unloaded++;
		kt->st.windowed--;
		kt->st.windows -= f->nr_wins;
		kt->st.src_bytes -= f->src_bytes;
		for (size_t i = 0; i < f->nr_wins; i++)
			chunk_unref(kt, f->wins[i].chunk);
	} else if (f->state == KT_LOADED) {
		kt->st.loaded--;
		kt->st.rows -= f->rows;
		kt->st.code_bytes -= f->code;
		kt->st.unloaded++;
		chunk_unref(kt, f->chunk);
	} else if (f->state == KT_OVER) {
		kt->st.over_budget--;
	} else {
		kt->st.no_cfi--;
	}
	kt->st.files--;
	pthread_mutex_unlock(&kt->lock);
	if (kt->now_f == f) {
		fl_cfitable__fini(&kt->now_t);
		kt->now_f = NULL;
	}
	file_free(f);
}

/* Whether the thread has f (queued or being built): not to be unloaded now. */
static bool busy(struct fl_ktables *kt, const struct kt_file *f)
{
	enum kt_state state;

	uint32_t jobs;

	pthread_mutex_lock(&kt->lock);
	state = f->state;
	jobs = f->jobs;
	pthread_mutex_unlock(&kt->lock);
	return state == KT_QUEUED || state == KT_BUILDING || jobs;
}

void fl_ktables__trim(struct fl_ktables *kt)
{
	for (size_t i = 0; i < kt->cap_files; i++) {
		struct kt_file *f = kt->files[i];

		if (!f || f->refs || busy(kt, f))
			continue;
		/* Unmapped for a whole interval: a program run again and again keeps its tables. */
		if (++f->idle < 2)
			continue;
		file_remove(kt, f);
		unload(kt, f);
		/* What moved back into slot i is looked at again. */
		i--;
	}
	/* The vdso too (not in files[]): the next process to map it has it built again. */
	if (kt->vdso && !kt->vdso->refs && !busy(kt, kt->vdso) && ++kt->vdso->idle >= 2) {
		unload(kt, kt->vdso);
		kt->vdso = NULL;
	}
}

bool fl_ktables__busy(struct fl_ktables *kt)
{
	bool busy;

	pthread_mutex_lock(&kt->lock);
	busy = kt->q_len || kt->building;
	pthread_mutex_unlock(&kt->lock);
	return busy;
}

/* Page idx of chunk c, from the cache or read from the kernel (the lock held); NULL if it cannot be. */
static const union fl_uw_page *read_page(struct fl_ktables *kt, uint32_t c, uint32_t idx)
{
	const struct kt_chunk *ch;
	struct kt_pcache *e;

	if (c >= FL_UW_MAX_CHUNKS)
		return NULL;
	ch = &kt->chunks[c];
	if (ch->state != KT_CHUNK_LIVE || idx >= ch->used)
		return NULL;
	e = &kt->pcache[(c * 131u + idx) % KT_PCACHE];
	if (e->valid && e->chunk == c && e->gen == ch->gen && e->page == idx)
		return &e->pg;
	e->valid = !bpf_map_lookup_elem(ch->fd, &idx, &e->pg);
	e->chunk = c;
	e->gen = ch->gen;
	e->page = idx;
	return e->valid ? &e->pg : NULL;
}

/* What fl_ktables__row() says of *r, a row found (NULL: none for off). */
static int row_found(const struct fl_uw_row *r, struct fl_uw_row *row)
{
	if (!r)
		return -ENODATA;
	*row = *r;
	if (row->cfa_type == FL_CFA_NONE)
		return -ENODATA;
	if (row->cfa_type == FL_CFA_UNSUPPORTED)
		return -ENOENT;
	return 0;
}

/*
 * The row for off of window win of windowed file f, built here from the
 * CFI held for it (the thread may be building it too: one at a time) and
 * kept for the next frames, which are often in the same window.
 */
static int row_now(struct fl_ktables *kt, const struct kt_file *f, uint32_t win, uint64_t off,
		   struct fl_uw_row *row)
{
	if (kt->now_f != f || kt->now_win != win) {
		fl_cfitable__fini(&kt->now_t);
		kt->now_err = window_rows(kt, f, win, &kt->now_t);
		kt->now_f = f;
		kt->now_win = win;
		pthread_mutex_lock(&kt->lock);
		kt->st.windows_now++;
		pthread_mutex_unlock(&kt->lock);
	}
	if (kt->now_err)
		return -ENOENT;
	return row_found(fl_cfitable__find(&kt->now_t, off), row);
}

int fl_ktables__row(struct fl_ktables *kt, const struct fl_tmap *m, uint64_t off, bool now,
		    struct fl_uw_row *row)
{
	const union fl_uw_page *page = NULL;
	const struct fl_uw_row *r;
	struct kt_file *f = NULL;
	uint64_t loc = 0;
	uint32_t n, c, start, pg = 0;
	int err;

	if (!m || off > UINT32_MAX)
		return -ENOENT;
	if (!strcmp(m->path, "[vdso]"))
		f = kt->vdso;
	else if (kt->cap_files)
		f = *file_slot(kt->files, kt->cap_files, m->dev_major, m->dev_minor, m->ino);
	if (!f)
		return -ENOENT;
	/* The thread sets the locations; rows of a table in use are never moved nor freed. */
	pthread_mutex_lock(&kt->lock);
	if (f->state == KT_DEFERRED || f->state == KT_QUEUED || f->state == KT_BUILDING) {
		bool deferred = f->state == KT_DEFERRED;

		pthread_mutex_unlock(&kt->lock);
		/*
		 * Not built yet: wanted now, as the walker would have asked had
		 * it got that far (a copy's deeper frames), rather than libdw
		 * reading the file's CFI again for one frame.
		 */
		if (deferred)
			fl_ktables__want(kt, f->id, (uint32_t)(off >> FL_UW_WIN_SHIFT));
		return -EAGAIN;
	}
	if (f->state == KT_LOADED && !f->src) {
		loc = f->loc;
	} else if (f->state == KT_LOADED) {
		uint32_t win = (uint32_t)(off >> FL_UW_WIN_SHIFT);
		bool asked = win < f->nr_windows && (f->asked[win / 64] >> (win % 64)) & 1;

		for (size_t i = 0; i < f->nr_wins; i++)
			if (f->wins[i].win == win)
				loc = f->wins[i].loc;
		/* Not built: asked for now (or being built), as the walker would. */
		if (!loc && win < f->nr_windows) {
			/*
			 * Read with the search, under one hold of the lock: a window
			 * the thread finished since would be taken for none.
			 */
			bool building = f->jobs != 0;

			pthread_mutex_unlock(&kt->lock);
			if (!asked)
				fl_ktables__want_window(kt, f->id, win);
			/* Asked before and not loaded: built as no table (no CFI there, no room). */
			if (asked && !building)
				return -ENOENT;
			return now ? row_now(kt, f, win, off, row) : -EAGAIN;
		}
	}
	n = FL_UW_LOC_LEN(loc);
	if (!loc || loc == FL_UW_LOC_NONE || !n || n > FL_UW_TABLE_MAX_ROWS) {
		pthread_mutex_unlock(&kt->lock);
		return -ENOENT;
	}
	/* As the walker finds it, one page read at a time; under the lock, which keeps the chunk. */
	c = FL_UW_LOC_CHUNK(loc);
	start = FL_UW_LOC_START(loc);
	if (FL_UW_ROW_PAGES(n) > 1) {
		page = read_page(kt, c, start + FL_UW_ROW_PAGES(n));
		pg = page ? row_page_of(page, n, off) : 0;
	}
	page = page || FL_UW_ROW_PAGES(n) == 1 ? read_page(kt, c, start + pg) : NULL;
	r = page ? find_in_page(page, pg, n, off) : NULL;
	err = page ? row_found(r, row) : -ENOENT;
	pthread_mutex_unlock(&kt->lock);
	return err;
}

void fl_ktables__settle(struct fl_ktables *kt, unsigned int ms)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&kt->lock);
	while (kt->q_len || kt->busy)
		if (pthread_cond_timedwait(&kt->idle, &kt->lock, &until))
			break;
	pthread_mutex_unlock(&kt->lock);
}

void fl_ktables__stats(struct fl_ktables *kt, struct fl_ktables_stats *st)
{
	pthread_mutex_lock(&kt->lock);
	*st = kt->st;
	/* Queued, and the one being built. */
	st->pending = kt->q_len + kt->building;
	st->deferred = kt->nr_deferred;
	pthread_mutex_unlock(&kt->lock);
	st->procs = kt->nr_procs;
}
