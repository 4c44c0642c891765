/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The in-kernel user-stack walker (--call-graph kernel-dwarf), included by
 * profile.bpf.c. Per frame it takes the rule of the frame's pc: the row of
 * its file's unwind table (compiled from .eh_frame by user space,
 * lib/unwinding/cfitable.c), frame pointers where there is no row (JIT and
 * hand-written code without CFI, a file whose table is not loaded yet).
 * What it finds goes into a stack map of its own (ustacks), keyed like
 * bpf_get_stackid()'s so that identical stacks are counted in the kernel.
 *
 * x86-64 only: registers are rip, rsp and rbp; a return address is at
 * CFA - 8 and calls are at least one byte long.
 */
#ifndef FLAMED_UNWIND_BPF_H
#define FLAMED_UNWIND_BPF_H

#include "flamed/unwind_abi.h"

/* A chunk of pages (tables of files, one after the other): user space makes them, sized as it needs. */
struct uw_rows {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(union fl_uw_page));
	__uint(max_entries, 1);
};

/* chunk number -> its rows. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, FL_UW_MAX_CHUNKS);
	__type(key, __u32);
	__array(values, struct uw_rows);
} tables SEC(".maps");

/* file id -> where its table is (FL_UW_LOC()), 0 not loaded yet, FL_UW_LOC_NONE none. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FL_UW_MAX_FILES);
	__type(key, __u32);
	__type(value, __u64);
} table_loc SEC(".maps");

/*
 * tgid (flamed's namespace) -> its executable mappings, as the tracker
 * knows them: in procs_few when they are at most FL_UW_FEW_MAPS, else in
 * procs (unwind_abi.h).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct fl_uw_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct fl_uw_proc_few);
} procs_few SEC(".maps");

/* FL_UW_WIN_KEY(file id, window) -> where the window's table is (windowed files, unwind_abi.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} win_loc SEC(".maps");

/*
 * (device, inode) of every file with an id -> the id: the walker names the
 * file of a mapping it finds itself (bpf_find_vma()) in a process whose
 * mappings user space has not given yet. Devices in the kernel's encoding
 * (major << 20 | minor).
 */
struct uw_file_key {
	__u64 dev;
	__u64 ino;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FL_UW_MAX_FILES);
	__type(key, struct uw_file_key);
	__type(value, __u32);
} file_ids SEC(".maps");

/*
 * Mappings the walker found itself (bpf_find_vma()) in a process whose
 * mappings user space has not given yet, a few per process: bpf_find_vma()
 * answers once per sample (it unlocks the mm from an irq_work, busy until
 * the program is done), so a process is learnt over its first samples.
 */
#define UW_KMAPS 16

struct uw_kmaps {
	__u32 next; /* the slot the next mapping found goes to (round robin) */
	__u32 pad;
	struct fl_uw_map maps[UW_KMAPS];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct uw_kmaps);
} uw_kmaps SEC(".maps");

/* An empty struct uw_kmaps to insert (too big for the BPF stack); never written. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uw_kmaps);
} uw_kmaps_empty SEC(".maps");

/* A walked user stack: zero-terminated when shorter than the map's depth, as a stack map's. */
struct uw_stack {
	__u64 ips[FL_MAX_STACK_DEPTH];
};

/* id (a slot named by the stack's hash, below ustack_slots: four per entry) -> the stack. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct uw_stack);
} ustacks SEC(".maps"), ustacks1 SEC(".maps");

/* Per CPU: the stack being walked (a perf_event program does not nest on one CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uw_stack);
} uw_scratch SEC(".maps");

/*
 * What the walker lacked, for user space to see to at once rather than at
 * its next periodic read: a process whose mappings it does not have
 * (tgid), a file whose table is not loaded (file_id). Each is asked for
 * once (uw_asked) until user space has answered.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 10);
} uw_wants SEC(".maps");

/* Keys asked for and not answered yet (unwind_abi.h): a tgid, a file, a window. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, __u8);
} uw_asked SEC(".maps");

/* Set by user space: slots of ustacks (a power of two) for the ids. */
const volatile __u32 ustack_slots = 16384;

/* How a walk used frame pointers, and how it ended. */
#define UW_FP_NOTABLE 1 /* a file with no table loaded yet (or the process not known yet) */
#define UW_FP_NOCFI 2	/* code with no CFI: anonymous memory, JIT, a rule not evaluated */

enum uw_end {
	UW_GOING,
	UW_COMPLETE,  /* reached the outermost frame */
	UW_STOPPED,   /* a frame could not be unwound */
	UW_TRUNCATED, /* FL_MAX_STACK_DEPTH frames */
};

struct uw_walk {
	__u64 pc, sp, bp;
	/*
	 * rbx: in bx when bx_at is 0 (the sampled frame's, or read since);
	 * else saved at bx_at on the stack, read only when a CFA needs it;
	 * UW_BX_LOST: not known (a step by frame pointers or by a rule the
	 * rows do not hold).
	 */
	__u64 bx, bx_at;
	__u32 tgid;
	__u32 nr;	/* frames in the scratch stack */
	__u32 how;	/* UW_FP_* */
	__u32 end;	/* enum uw_end */
	__u64 hash;	/* of the frames so far (uw_mix()) */
	bool exact;	/* pc is the interrupted instruction, not a return address */
	bool vma_tried; /* bpf_find_vma() was called in this sample (it answers once) */
	/* The mapping of the frame before (end 0: none): callers are often in the same file. */
	struct fl_uw_map last;
	/*
	 * The frame whose table was missing first, when frames were walked
	 * before it (miss_nr of them; 0: none missing, or the first frame's):
	 * a stack copy starts there (FL_UCOPY_*, profile_abi.h).
	 */
	__u64 miss_pc, miss_sp, miss_bp, miss_bx;
	__u32 miss_nr;
	__u32 miss_flags;
};

#define UW_HASH_SEED 0x243f6a8885a308d3ULL
#define UW_BX_LOST 1

/* One frame into the hash of a stack. */
static __always_inline __u64 uw_mix(__u64 h, __u64 ip)
{
	h = (h ^ ip) * 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

/* Just enough of the kernel's types for CO-RE (the mapping of a pc, found by bpf_find_vma()). */
struct super_block {
	__u32 s_dev;
} __attribute__((preserve_access_index));

struct inode {
	unsigned long i_ino;
	struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct file {
	struct inode *f_inode;
} __attribute__((preserve_access_index));

struct mm_struct {
	unsigned long start_code;
} __attribute__((preserve_access_index));

struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_end;
	unsigned long vm_pgoff;
	struct file *vm_file;
} __attribute__((preserve_access_index));

/* fl_uw_map.flags of a mapping the walker found itself: anonymous memory. */
#define UW_MAP_ANON 1u

static long vma_of(struct task_struct *task, struct vm_area_struct *vma, struct fl_uw_map *m)
{
	struct uw_file_key key = {};
	struct file *file = vma->vm_file;
	__u32 *id;

	(void)task;
	if (!file) {
		/* Anonymous (JIT code): no CFI to wait for, frame pointers. */
		m->start = vma->vm_start;
		m->end = vma->vm_end;
		m->flags = UW_MAP_ANON;
		return 0;
	}
	key.ino = file->f_inode->i_ino;
	key.dev = file->f_inode->i_sb->s_dev;
	id = bpf_map_lookup_elem(&file_ids, &key);
	if (!id)
		return 0;
	m->start = vma->vm_start;
	m->end = vma->vm_end;
	m->pgoff = (__u64)vma->vm_pgoff << 12;
	m->file_id = *id;
	return 0;
}

static __always_inline void uw_ask(__u64 key, __u32 tgid, __u32 file_id, __u32 window,
				   __u32 flags)
{
	struct fl_uw_want *w;
	__u8 one = 1;

	if (bpf_map_update_elem(&uw_asked, &key, &one, BPF_NOEXIST))
		return; /* asked already */
	w = bpf_ringbuf_reserve(&uw_wants, sizeof(*w), 0);
	if (!w) {
		/* Not asked after all: the next sample asks again. */
		bpf_map_delete_elem(&uw_asked, &key);
		return;
	}
	w->tgid = tgid;
	w->file_id = file_id;
	w->window = window;
	w->flags = flags;
	bpf_ringbuf_submit(w, BPF_RB_FORCE_WAKEUP);
}

static __always_inline bool read_user_u64(__u64 addr, __u64 *val)
{
	return bpf_probe_read_user(val, sizeof(*val), (const void *)addr) == 0;
}

/*
 * All ones when a <= b, else 0: without a branch. The binary searches below
 * have no branch that both paths survive, so the verifier walks each once
 * instead of once per path (2^steps of them). Both are below 2^63.
 */
static __always_inline __u64 le_mask(__u64 a, __u64 b)
{
	__u64 d = b - a, m;

	/*
	 * Opaque to the compiler, both the difference and the mask: it would
	 * otherwise turn the arithmetic back into a compare and a branch.
	 */
	asm volatile("" : "+r"(d));
	m = ~(__u64)((__s64)d >> 63);
	asm volatile("" : "+r"(m));
	return m;
}

/*
 * The mapping holding pc among maps[0..n), of an array of cap (a power of
 * two, 2^(steps - 1)), or NULL.
 */
static __always_inline const struct fl_uw_map *find_map(const struct fl_uw_map *maps, __u32 n,
							__u32 cap, int steps, __u64 pc)
{
	__u32 base = 0, half, idx;
	const struct fl_uw_map *m;

	if (n == 0 || n > cap)
		return NULL;
	/* The last mapping starting at or below pc (or the first, when none does). */
	/*
	 * A fixed number of steps, no early exit (once n is 1, a step changes
	 * nothing): one path for the verifier. Indexes are masked, not
	 * checked: base + half < nr <= cap, a power of two.
	 */
	for (int i = 0; i < steps; i++) {
		half = n / 2;
		idx = base + half;
		/* Opaque: clang, knowing n <= cap, would drop the mask the verifier needs. */
		asm volatile("" : "+r"(idx));
		base += half & (__u32)le_mask(maps[idx & (cap - 1)].start, pc);
		n -= half;
	}
	asm volatile("" : "+r"(base));
	m = &maps[base & (cap - 1)];
	return m->start <= pc && pc < m->end ? m : NULL;
}

/*
 * The row of the table at loc covering file offset off, or NULL (before its
 * first row): the index page names the row page, whose rows are searched
 * (unwind_abi.h). Both searches as find_map()'s: a fixed number of
 * steps, without a branch (an early exit once one entry was left had the
 * verifier check five times as much of this function).
 */
static __always_inline const struct fl_uw_row *find_row(__u64 loc, __u64 off)
{
	__u32 chunk = FL_UW_LOC_CHUNK(loc), start = FL_UW_LOC_START(loc), n = FL_UW_LOC_LEN(loc);
	void *pages = bpf_map_lookup_elem(&tables, &chunk);
	__u32 np = FL_UW_ROW_PAGES(n), pg = 0, base = 0, cnt, half, idx;
	const union fl_uw_page *p;
	const struct fl_uw_row *r;

	if (!pages || !n || n > FL_UW_TABLE_MAX_ROWS || off > 0xffffffffULL)
		return NULL;
	if (np > 1) {
		/* The last row page whose first pc is at or below off (or the first). */
		idx = start + np;
		p = bpf_map_lookup_elem(pages, &idx);
		if (!p)
			return NULL;
		cnt = np;
		for (int i = 0; i < FL_UW_PCS_STEPS; i++) {
			half = cnt / 2;
			idx = pg + half;
			asm volatile("" : "+r"(idx));
			pg += half & (__u32)le_mask(p->pcs[idx & (FL_UW_PAGE_PCS - 1)], off);
			cnt -= half;
		}
	}
	/* Its last row at or below off. */
	idx = start + pg;
	p = bpf_map_lookup_elem(pages, &idx);
	if (!p)
		return NULL;
	cnt = n - pg * FL_UW_PAGE_ROWS;
	if (cnt > FL_UW_PAGE_ROWS)
		cnt = FL_UW_PAGE_ROWS;
	for (int i = 0; i < FL_UW_ROW_STEPS; i++) {
		half = cnt / 2;
		idx = base + half;
		asm volatile("" : "+r"(idx));
		base += half & (__u32)le_mask(p->rows[idx & (FL_UW_PAGE_ROWS - 1)].pc, off);
		cnt -= half;
	}
	r = &p->rows[base & (FL_UW_PAGE_ROWS - 1)];
	return r->pc <= off ? r : NULL;
}

/*
 * Rows found lately, per CPU (a perf_event program does not nest on one
 * CPU): most frames of a sample were frames of the samples before it (the
 * same callers, the same loops), and a hit costs one cache line where the
 * two searches cost some sixteen (a miss each, mostly: 445 ns per frame on
 * a busy build). Keyed by table location and
 * offset, so shared by every process mapping the file. A location names
 * other rows once its chunk is freed and the chunk's number used again:
 * user space then bumps uw_epoch (after the chunk left the array of maps,
 * which waited for the programs using it), and entries of older epochs
 * miss.
 */
struct uw_row_ent {
	__u64 loc;
	__u32 off;
	__u32 epoch;
	struct fl_uw_row row;
};

/*
 * FL_UW_ROW_CACHE entries for each possible CPU, CPU after CPU: a plain
 * array (one allocation; a per-CPU array allocates per entry, and its
 * 4096 allocations took a fifth of the maps' making).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FL_UW_ROW_CACHE);
	__type(key, __u32);
	__type(value, struct uw_row_ent);
} uw_rows SEC(".maps");

__u32 uw_epoch = 0;

/*
 * The row of the table at loc covering file offset off, copied into *out:
 * 1, else 0 (before its first row). A global function: the verifier checks
 * it once, not once for each state the walker's step reaches it in.
 */
__noinline int uw_find_row(__u64 loc, __u64 off, struct fl_uw_row *out)
{
	__u64 h = (loc ^ (off << 20) ^ off) * 0x9e3779b97f4a7c15ULL;
	__u32 slot = bpf_get_smp_processor_id() * FL_UW_ROW_CACHE +
		     (__u32)(h >> (64 - FL_UW_ROW_CACHE_BITS));
	__u32 epoch = *(volatile __u32 *)&uw_epoch;
	struct uw_row_ent *e = bpf_map_lookup_elem(&uw_rows, &slot);
	const struct fl_uw_row *r;

	if (!out)
		return 0;
	/* off is below 2^32 where a row is found (find_row()). */
	if (e && e->loc == loc && e->off == off && e->epoch == epoch) {
		*out = e->row;
		return 1;
	}
	r = find_row(loc, off);
	if (!r)
		return 0;
	*out = *r;
	if (e) {
		e->loc = loc;
		e->off = (__u32)off;
		e->epoch = epoch;
		e->row = *r;
	}
	return 1;
}

/* Ends the walk (a bpf_loop callback's 1): how. */
static __always_inline long uw_end(struct uw_walk *w, enum uw_end how)
{
	w->end = how;
	return 1;
}

/*
 * Moves the walk to the caller's frame. A pc of 0 ends it: the outermost
 * frame when it is a return address (zero_ends), a wrong turn when it is
 * an interrupted pc (exact: a signal frame's).
 */
static __always_inline long uw_caller(struct uw_walk *w, __u64 pc, __u64 sp, __u64 bp, bool exact)
{
	w->pc = pc;
	w->sp = sp;
	w->bp = bp;
	w->exact = exact;
	if (!pc)
		return uw_end(w, exact ? UW_STOPPED : UW_COMPLETE);
	return 0;
}

/* One frame by frame pointers: rbp points at the saved rbp, the return address above it. */
static __always_inline long fp_step(struct uw_walk *w)
{
	__u64 ra, bp;

	/* _start and thread entries clear rbp: the chain's end. */
	if (!w->bp)
		return uw_end(w, UW_COMPLETE);
	if (w->bp < w->sp || (w->bp & 7) || !read_user_u64(w->bp + 8, &ra) ||
	    !read_user_u64(w->bp, &bp))
		return uw_end(w, UW_STOPPED);
	return uw_caller(w, ra, w->bp + 16, bp, false);
}

/*
 * A mapping of pc the walker found itself in process tgid earlier, copied
 * into *out: true, else false. (A copy, not a pointer into the slot: the
 * verifier then sees one state after the loop whichever slot it was, not
 * one per slot for the rest of the step.)
 */
static __always_inline bool kmaps_find(__u32 tgid, __u64 pc, struct fl_uw_map *out)
{
	struct uw_kmaps *k = bpf_map_lookup_elem(&uw_kmaps, &tgid);
	__u64 hit = UW_KMAPS, in;

	if (!k)
		return false;
	/*
	 * Without a branch in the loop, as the binary searches: a branch per
	 * slot gave the verifier a path per slot to follow through the rest of
	 * the step (with uw_walk_stack() below: 574k instructions processed,
	 * against 60k without). The last slot holding pc wins; an empty slot
	 * (file_id 0) holds nothing.
	 */
	for (int i = 0; i < UW_KMAPS; i++) {
		/* All ones when the slot is used (file_id > 0), else 0. */
		in = k->maps[i].file_id;
		asm volatile("" : "+r"(in));
		in = le_mask(1, in) & le_mask(k->maps[i].start, pc) & ~le_mask(k->maps[i].end, pc);
		asm volatile("" : "+r"(in));
		hit = (hit & ~in) | ((__u64)i & in);
	}
	if (hit >= UW_KMAPS)
		return false;
	*out = k->maps[hit];
	return true;
}

static __always_inline void kmaps_add(__u32 tgid, const struct fl_uw_map *m)
{
	struct uw_kmaps *k = bpf_map_lookup_elem(&uw_kmaps, &tgid), *empty;
	__u32 zero = 0;

	if (!k) {
		empty = bpf_map_lookup_elem(&uw_kmaps_empty, &zero);
		if (!empty)
			return;
		bpf_map_update_elem(&uw_kmaps, &tgid, empty, BPF_NOEXIST);
		k = bpf_map_lookup_elem(&uw_kmaps, &tgid);
		if (!k)
			return;
	}
	/* CPUs racing on one process may overwrite a slot: a mapping is found again. */
	k->maps[k->next & (UW_KMAPS - 1)] = *m;
	k->next++;
}

/* What uw_find_map() is asked, and answers. */
struct uw_map_query {
	__u32 tgid;
	__u32 vma_tried; /* bpf_find_vma() was called in this sample (it answers once) */
	__u64 pc;
	/* Asked: the mapping of the frame before (end 0: none), kept if it holds pc. Answered: pc's. */
	struct fl_uw_map m;
};

/*
 * The mapping holding q->pc, copied into q->m: 1, else 0. A global
 * function, checked once by the verifier (not once for each state of the
 * walker's step that reaches it).
 *
 * A process not known yet (started a moment ago), or no mapping known
 * holding pc (one made a moment ago, ld.so mapping libc; or a wrong turn
 * before): user space is asked to read the mappings again. Meanwhile the
 * kernel's own mapping of pc, if its file has an id (a short-lived
 * program's libc, ld.so, its binary run before): a process gone before
 * user space reads its mappings is walked all the same. Else none (frame
 * pointers take the frame, as --call-graph fp would).
 */
__noinline int uw_find_map(struct uw_map_query *q)
{
	struct fl_uw_map found = {};
	const struct fl_uw_proc_few *pf;
	const struct fl_uw_proc *p;
	const struct fl_uw_map *m;

	if (!q)
		return 0;
	/*
	 * Callers are often in the file of their callee. (Checked here, in a
	 * function verified once: a branch in the step would have the verifier
	 * follow the rest of the step twice.)
	 */
	if (q->m.start <= q->pc && q->pc < q->m.end)
		return 1;
	pf = bpf_map_lookup_elem(&procs_few, &q->tgid);
	if (pf) {
		m = find_map(pf->maps, pf->nr, FL_UW_FEW_MAPS, FL_UW_FEW_STEPS, q->pc);
		if (m) {
			q->m = *m;
			return 1;
		}
	} else {
		p = bpf_map_lookup_elem(&procs, &q->tgid);
		m = p ? find_map(p->maps, p->nr, FL_UW_MAX_MAPS, FL_UW_MAP_STEPS, q->pc) : NULL;
		if (m) {
			q->m = *m;
			return 1;
		}
	}
	uw_ask(q->tgid, q->tgid, 0, 0, 0);
	if (kmaps_find(q->tgid, q->pc, &q->m))
		return 1;
	if (q->vma_tried)
		return 0;
	q->vma_tried = 1;
	/* bpf_find_vma() wants its context on this function's stack. */
	bpf_find_vma(bpf_get_current_task_btf(), q->pc, vma_of, &found, 0);
	if (found.flags & UW_MAP_ANON) {
		q->m = found;
		return 1;
	}
	if (!found.file_id)
		return 0;
	q->m = found;
	kmaps_add(q->tgid, &found);
	return 1;
}

/* The frame's rbx into *val, read from its save slot the first time: false if not known. */
static __always_inline bool uw_rbx(struct uw_walk *w, __u64 *val)
{
	if (w->bx_at == UW_BX_LOST)
		return false;
	if (w->bx_at) {
		if (!read_user_u64(w->bx_at, &w->bx)) {
			w->bx_at = UW_BX_LOST;
			return false;
		}
		w->bx_at = 0;
	}
	*val = w->bx;
	return true;
}

/*
 * This frame by frame pointers, for a reason (UW_FP_*). In code without
 * CFI, a frame whose rbp is 0 is the outermost (_start and thread entries
 * clear it; ld.so's _start has no CFI): the walk is complete, no frame
 * guessed. (Not so where a table is only missing: code without frame
 * pointers may hold 0 in rbp anywhere, and the stack copy tells.)
 */
static __always_inline long fp_for_inline(struct uw_walk *w, __u32 why)
{
	__u32 code = 0;
	__u64 ra, bp;

	if (!w->bp && why == UW_FP_NOCFI)
		return uw_end(w, UW_COMPLETE);
	/* The first table missing, frames walked before it: a copy would start here. */
	if (why == UW_FP_NOTABLE && !(w->how & UW_FP_NOTABLE) && w->nr > 1) {
		__u64 bx;

		w->miss_nr = w->nr - 1;
		w->miss_pc = w->pc;
		w->miss_sp = w->sp;
		w->miss_bp = w->bp;
		w->miss_flags = w->exact ? FL_UCOPY_EXACT : 0;
		if (uw_rbx(w, &bx)) {
			w->miss_bx = bx;
			w->miss_flags |= FL_UCOPY_RBX;
		}
	}
	w->how |= why;
	/* Code that may have saved rbx where no CFI says. */
	w->bx_at = UW_BX_LOST;
	/*
	 * An interrupted pc at the first instructions of a function without
	 * CFI (a JIT's): its frame is not made yet, and the frame pointer is
	 * still its caller's, whom a frame-pointer step would skip. Its code
	 * tells: at an endbr64 or the push of rbp, the return address is at
	 * rsp; at the mov of rsp to rbp that follows, at rsp + 8, rbp's at rsp.
	 * So at the ret of the epilogue, rbp popped.
	 */
	if (why == UW_FP_NOCFI && w->exact &&
	    !bpf_probe_read_user(&code, sizeof(code), (const void *)w->pc)) {
		if ((code & 0xff) == 0x55 || (code & 0xff) == 0xc3 || code == 0xfa1e0ff3) {
			if (!read_user_u64(w->sp, &ra))
				return uw_end(w, UW_STOPPED);
			return uw_caller(w, ra, w->sp + 8, w->bp, false);
		}
		if ((code & 0xffffff) == 0xe58948) {
			if (!read_user_u64(w->sp + 8, &ra) || !read_user_u64(w->sp, &bp))
				return uw_end(w, UW_STOPPED);
			return uw_caller(w, ra, w->sp + 16, bp, false);
		}
	}
	return fp_step(w);
}

/*
 * The same, a global function: the step reaches it from six places, and
 * the verifier checked each inlined copy in the states of its own place
 * (a fifth of what it checked of the walker).
 */
__noinline long uw_fp_for(struct uw_walk *w, __u32 why)
{
	if (!w)
		return 1;
	return fp_for_inline(w, why);
}

static __always_inline long fp_for(struct uw_walk *w, __u32 why)
{
	/* A bpf_loop() callback returns 0 or 1, which the verifier cannot tell of a global's result. */
	return uw_fp_for(w, why) ? 1 : 0;
}

static const unsigned char uw_ptregs_of_dwarf[] = FL_PTREGS_OF_DWARF;

/*
 * Register reg (DWARF's number, 0-15) of the sampled frame, at pc: from the
 * user registers the kernel saved for the task (on the interrupt from user
 * mode that the sample came with, or on the entry to the kernel it
 * interrupted), when their rip is pc. For FL_CFA_REG rows (the CFA in r11
 * in LLVM's stack-probe loops); past the sampled frame the walk knows no
 * register but rsp, rbp and rip, and rbx (struct uw_walk).
 */
__noinline int uw_leaf_reg(__u64 pc, int reg, __u64 *val)
{
	const __u64 *regs = (const __u64 *)bpf_task_pt_regs(bpf_get_current_task_btf());
	unsigned int i = (unsigned int)reg;
	__u64 rip;

	if (!val || !regs || i > 15)
		return 0;
	if (bpf_probe_read_kernel(&rip, sizeof(rip), &regs[uw_ptregs_of_dwarf[16]]) || rip != pc)
		return 0;
	/* The verifier loses the bound above (clang checks a copy): a mask it sees. */
	barrier_var(i);
	return !bpf_probe_read_kernel(val, sizeof(*val), &regs[uw_ptregs_of_dwarf[i & 15]]);
}

/*
 * *out, the row at file offset off of the table at loc, when it is the
 * sampled frame's (not_leaf 0, its pc exact) at the return of a system call
 * whose instruction ends its function's CFI, which then covers off - 2 no
 * more (*out is a gap's, starting there): glibc's clone and clone3 end
 * their FDE before the syscall, since the child's frame would not be what
 * it says. The parent is sampled there in the kernel's fork work, and
 * returns to it. The frame is what the row before the syscall says (the
 * instruction moves no stack): copied into *out, and 1 returned; else 0,
 * *out kept. The child's (rax 0) is the outermost frame. A global
 * function: the walker's step calls it for every frame without a branch of
 * its own, which would have the verifier check the rest of the step once
 * more.
 */
__noinline int uw_syscall_row(__u64 loc, __u64 pc, __u64 off, __u32 not_leaf,
			      struct fl_uw_row *out)
{
	struct fl_uw_row before;
	__u64 rax = 1;
	__u16 insn = 0;

	if (!out || not_leaf || out->cfa_type != FL_CFA_NONE || (__u64)out->pc + 2 != off ||
	    off < 3 || bpf_probe_read_user(&insn, sizeof(insn), (const void *)(pc - 2)) ||
	    insn != 0x050f || !uw_find_row(loc, off - 3, &before) ||
	    before.cfa_type == FL_CFA_NONE)
		return 0;
	/*
	 * The child, on its new stack, returns there too, with rax 0 (the
	 * parent's is the child's pid, or -ENOSYS while in the call): its
	 * first frame, outermost (clone's child calls its function and exits).
	 */
	if (uw_leaf_reg(pc, 0, &rax) && !rax) {
		*out = (struct fl_uw_row){.pc = before.pc, .cfa_type = FL_CFA_OUTERMOST};
		return 1;
	}
	*out = before;
	return 1;
}

static long uw_step(__u32 i, struct uw_walk *w)
{
	__u32 zero = 0, n = w->nr;
	struct uw_stack *out = bpf_map_lookup_elem(&uw_scratch, &zero);
	const struct fl_uw_map *m;
	struct fl_uw_row row, *r = &row;
	struct uw_map_query q = {};
	__u64 off, cfa, ra, bp, *loc, wkey;
	__u32 fid, win;

	(void)i;
	if (!out || n >= FL_MAX_STACK_DEPTH)
		return uw_end(w, UW_TRUNCATED);
	out->ips[n] = w->pc;
	w->nr = n + 1;
	w->hash = uw_mix(w->hash, w->pc);
	if (w->nr >= FL_MAX_STACK_DEPTH)
		return uw_end(w, UW_TRUNCATED);

	/*
	 * A process not known yet (started a moment ago), or no mapping known
	 * holding pc (one made a moment ago, ld.so mapping libc; or a wrong
	 * turn before): user space is asked to read the mappings again, and
	 * frame pointers take this frame, as --call-graph fp would.
	 */
	q.tgid = w->tgid;
	q.vma_tried = w->vma_tried;
	q.pc = w->pc;
	q.m = w->last;
	if (!uw_find_map(&q))
		return fp_for(w, UW_FP_NOTABLE);
	w->vma_tried = q.vma_tried;
	w->last = q.m;
	m = &q.m;
	if (!m->file_id)
		return fp_for(w, UW_FP_NOCFI);
	/* A return address is after its call: the call's row is the one of the byte before. */
	off = w->pc - m->start + m->pgoff - (w->exact ? 0 : 1);
	fid = m->file_id;
	win = (__u32)(off >> FL_UW_WIN_SHIFT);
	loc = bpf_map_lookup_elem(&table_loc, &fid);
	if (!loc || !*loc) {
		/* Not loaded yet: user space is asked to (once), frame pointers meanwhile. */
		uw_ask(FL_UW_ASKED_FILE | fid, 0, fid, win, 0);
		return fp_for(w, UW_FP_NOTABLE);
	}
	if (*loc == FL_UW_LOC_WINDOWED) {
		/* A big file: the table of pc's window, if loaded (else the same as above). */
		wkey = FL_UW_WIN_KEY(fid, win);
		loc = bpf_map_lookup_elem(&win_loc, &wkey);
		if (!loc) {
			uw_ask(FL_UW_ASKED_WIN | wkey, 0, fid, win, FL_UW_WANT_WINDOW);
			return fp_for(w, UW_FP_NOTABLE);
		}
	}
	/* No table for good, or no row for off: code without CFI. */
	if (*loc == FL_UW_LOC_NONE || !uw_find_row(*loc, off, &row))
		return fp_for(w, UW_FP_NOCFI);
	/* A system call ending its function's CFI (uw_syscall_row()): called always, no branch here. */
	uw_syscall_row(*loc, w->pc, off, n | !w->exact, &row);

	switch (r->cfa_type) {
	case FL_CFA_RSP:
		cfa = w->sp + r->cfa_off;
		break;
	case FL_CFA_RBP:
		cfa = w->bp + r->cfa_off;
		break;
	case FL_CFA_PLT:
		/* The frame's own pc (not off): PLT entries are 16-byte aligned in both. */
		cfa = w->sp + r->cfa_off + ((w->pc & 15) >= (__u64)r->rbp_off ? 8 : 0);
		break;
	case FL_CFA_DEREF_RBP:
		if (!read_user_u64(w->bp + r->cfa_off, &cfa))
			return uw_end(w, UW_STOPPED);
		break;
	case FL_CFA_SIGNAL:
		/* The interrupted context, saved in the signal frame: the next pc is exact. */
		if (!read_user_u64(w->sp + r->ra_off, &ra) ||
		    !read_user_u64(w->sp + r->rbp_off, &bp) ||
		    !read_user_u64(w->sp + r->cfa_off, &cfa))
			return uw_end(w, UW_STOPPED);
		w->bx_at = r->rbx_off == FL_RBX_UNKNOWN ? UW_BX_LOST : w->sp + r->rbx_off;
		return uw_caller(w, ra, cfa, bp, true);
	case FL_CFA_OUTERMOST:
		return uw_end(w, UW_COMPLETE);
	default:
		/* rbx + N: rbx is followed. Another register + N: known in the sampled frame only. */
		if (FL_CFA_REG_OF(r->cfa_type) == 3 && uw_rbx(w, &cfa)) {
			cfa += r->cfa_off;
			break;
		}
		if (!n && FL_CFA_REG_OF(r->cfa_type) >= 0 &&
		    uw_leaf_reg(w->pc, FL_CFA_REG_OF(r->cfa_type), &cfa)) {
			cfa += r->cfa_off;
			break;
		}
		/*
		 * A rule not evaluated: CFI that says where the caller is, so an
		 * rbp of 0 is no sign of the outermost frame (it is in code
		 * without CFI). A gap: frame pointers.
		 */
		if (r->cfa_type != FL_CFA_NONE && !w->bp)
			return uw_end(w, UW_STOPPED);
		return fp_for(w, UW_FP_NOCFI);
	}

	bp = w->bp;
	if (r->ra_off < FL_RA_REG + 16) {
		/*
		 * In a register (__vfork's rdi): the sampled frame's, which
		 * pushed nothing (its CFA may be rsp). Past it, unknown.
		 */
		if (n || cfa < w->sp || !uw_leaf_reg(w->pc, r->ra_off - FL_RA_REG, &ra))
			return uw_end(w, UW_STOPPED);
	} else if (!read_user_u64(cfa + r->ra_off, &ra) || cfa <= w->sp) {
		/* Callers' frames are above: a CFA at or below the stack pointer is a wrong turn. */
		return uw_end(w, UW_STOPPED);
	}
	if ((r->rbp_type == FL_RBP_AT_CFA && !read_user_u64(cfa + r->rbp_off, &bp)) ||
	    (r->rbp_type == FL_RBP_AT_RBP && !read_user_u64(w->bp + r->rbp_off, &bp)))
		return uw_end(w, UW_STOPPED);
	/* The caller's rbx: where this frame saved it, if it did (read if ever needed). */
	if (r->rbx_off == FL_RBX_UNKNOWN)
		w->bx_at = UW_BX_LOST;
	else if (r->rbx_off != FL_RBX_SAME)
		w->bx_at = cfa + r->rbx_off;
	return uw_caller(w, ra, cfa, bp, false);
}

/*
 * Walks the stack from w's registers into the scratch stack. A global
 * function: the verifier checks it once, on its own, instead of once for
 * every state in which the sampler reaches the walk (which multiplied the
 * work of checking uw_step by the paths before it: 241k instructions
 * processed and 0.43 s of loading; 13k and 0.02 s now, with kmaps_find()
 * and the searches branch-free and uw_find_map(), uw_find_row(),
 * uw_fp_for() and uw_same_stack() global as well).
 */
__noinline int uw_walk_stack(struct uw_walk *arg)
{
	struct uw_walk w;

	if (!arg)
		return 0;
	/* bpf_loop() wants its context on this function's stack. */
	w = *arg;
	bpf_loop(FL_MAX_STACK_DEPTH, uw_step, &w, 0);
	*arg = w;
	return 0;
}

#endif
