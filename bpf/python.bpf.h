/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CPython's frames at sample time, included by profile.bpf.c (the BPF
 * sampler) and filter.bpf.c (the ring sampler's program). The interpreter keeps its call stack in memory, not on the
 * native stack: per thread, a chain of _PyInterpreterFrame from the thread
 * state's current frame outward. User space finds the interpreter of a
 * process (_PyRuntime) and gives the offsets of its version (pyprocs);
 * here the sampled thread's state is found and its chain read, as code
 * object addresses, leaf first. A code object's names are copied the first
 * time it is met (pycodes): user space names the frames when it drains,
 * maybe after the process is gone.
 *
 * Everything read is the process's memory, written by the process: a
 * wrong offset or a hostile process gives wrong frames, never more than
 * FL_PY_MAX_FRAMES of them, and strings of at most their room.
 *
 * The including program defines child_pidns and pidns_ino and includes
 * pidns.bpf.h first (py_on_exec names processes as its samples do).
 */
#ifndef FLAMED_PYTHON_BPF_H
#define FLAMED_PYTHON_BPF_H

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "flamed/python_abi.h"

/* Set by user space: read Python frames. */
const volatile bool want_python = false;

/* A sample's Python frames, leaf first, zero-terminated when fewer. */
struct py_frames {
	__u64 ips[FL_PY_MAX_FRAMES];
};

#define PY_HASH_SEED 0x243f6a8885a308d3ULL

/* One frame into the hash of the frames. */
static __always_inline __u64 py_mix(__u64 h, __u64 f)
{
	h = (h ^ f) * 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

/* tgid (flamed's namespace) -> where its interpreter is and how to read it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct fl_py_proc);
} pyprocs SEC(".maps");

/* Thread (the kernel's tid) -> its thread state, as last found: checked against the thread at each use. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u64);
} py_tstates SEC(".maps");

/* (tgid, code object) -> its names. Sized by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct fl_py_code_key);
	__type(value, struct fl_py_code);
} pycodes SEC(".maps");

/*
 * Processes sampled that are not in pyprocs ask user space to look at
 * their mappings (py_asked, py_wants): the record wakes it at once, and it
 * tells whether each is a Python it can read before the next samples
 * rather than at its next periodic read of the mappings, a second later.
 * A process asks once, and again only when its executable mappings have
 * changed since (libpython loaded by ld.so or dlopen() after the first
 * ask), at most every PY_ASK_AGAIN_NS. Keys are tgids; an exec takes its
 * key out (py_on_exec); a pid used again before the LRU dropped the key
 * asks when its mappings differ, as they mostly do.
 */
struct py_ask {
	__u64 exec_vm; /* the process's pages of executable mappings when it asked */
	__u64 when;    /* bpf_ktime_get_ns() then */
};

#define PY_ASK_AGAIN_NS (20ULL * 1000 * 1000)

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} py_wants SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct py_ask);
} py_asked SEC(".maps");

/* Per CPU: the frames being read, a frame's first bytes, a code object's names being read. */
#define PY_FRAME_READ 72 /* 3.11's _PyInterpreterFrame up to its locals */
#define PY_CODE_READ 192
#define PY_STR_READ 80

/* Each buffer has room for an 8-byte field at any offset below 256 (masks for the verifier). */
struct py_scratch {
	struct py_frames frames;
	__u64 hash; /* of frames (py_mix()) */
	__u8 frame[264];
	__u8 code[264];
	__u8 str[264];
	struct fl_py_code names;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_scratch);
} py_scratch SEC(".maps");

/* Threads and interpreters looked at to find a thread's state. */
#define PY_MAX_TSTATES 64

/* A field of a block read into buf: offsets past the read (a bad table) read zeros. */
static __always_inline __u64 py_u64(const __u8 *buf, __u32 read, __u16 off)
{
	__u64 v = 0;

	if (off + 8 <= read)
		__builtin_memcpy(&v, buf + (off & 255), 8);
	return v;
}

static __always_inline __u64 py_ptr(__u64 addr, __u16 off)
{
	__u64 v = 0;

	if (!addr || off == FL_PY_NONE || bpf_probe_read_user(&v, sizeof(v), (void *)(addr + off)))
		return 0;
	return v;
}

/* The part of the kernel's task we read here (a flavour: CO-RE matches it to task_struct). */
struct thread_struct___py {
	unsigned long fsbase;
} __attribute__((preserve_access_index));

struct mm_struct___py {
	unsigned long exec_vm;
} __attribute__((preserve_access_index));

struct task_struct___py {
	struct thread_struct___py thread;
	struct mm_struct___py *mm;
} __attribute__((preserve_access_index));

/* pthread_self() of the current thread: its fs base (x86-64), which CPython keeps as thread_id. */
static __always_inline __u64 py_thread_self(void)
{
	struct task_struct___py *task = (struct task_struct___py *)bpf_get_current_task();

	return BPF_CORE_READ(task, thread.fsbase);
}

struct py_tstate_ctx {
	__u32 tgid;
	__u32 pad;
	__u64 self;
	__u64 interp;
	__u64 ts; /* the one to look at next; the thread's once found */
	bool found;
};

/* One step of the search through the interpreters' lists of threads (bpf_loop()). */
static long py_tstate_step(__u32 i, struct py_tstate_ctx *c)
{
	const struct fl_py_proc *p = bpf_map_lookup_elem(&pyprocs, &c->tgid);

	if (!p)
		return 1;
	if (!c->ts) {
		/* The next interpreter's threads (subinterpreters). */
		c->interp = py_ptr(c->interp, p->off.interp_next);
		if (!c->interp)
			return 1;
		c->ts = py_ptr(c->interp, p->off.interp_threads_head);
		return 0;
	}
	if (py_ptr(c->ts, p->off.tstate_thread_id) == c->self) {
		c->found = true;
		return 1;
	}
	c->ts = py_ptr(c->ts, p->off.tstate_next);
	return 0;
}

/*
 * The thread state of the current thread: the GIL holder's if it is this
 * thread's (with subinterpreters a thread has one per interpreter it ran
 * in: the holder's is the one running), else the cached one if it is
 * still this thread's, else the one found in the interpreters' lists of
 * threads. 0: none (a thread Python does not know, or one past
 * PY_MAX_TSTATES).
 */
static __always_inline __u64 py_tstate(const struct fl_py_proc *p, __u32 tgid, __u32 host_tid)
{
	struct py_tstate_ctx c = {.tgid = tgid, .self = py_thread_self()};
	__u64 *cached = bpf_map_lookup_elem(&py_tstates, &host_tid), ts;

	if (!c.self)
		return 0;
	ts = py_ptr(p->runtime, p->off.runtime_tstate_current);
	if (ts && py_ptr(ts, p->off.tstate_thread_id) == c.self)
		return ts;
	if (cached && *cached && py_ptr(*cached, p->off.tstate_thread_id) == c.self)
		return *cached;
	c.interp = py_ptr(p->runtime, p->off.runtime_interp_head);
	c.ts = py_ptr(c.interp, p->off.interp_threads_head);
	bpf_loop(PY_MAX_TSTATES, py_tstate_step, &c, 0);
	if (!c.found)
		return 0;
	ts = c.ts;
	bpf_map_update_elem(&py_tstates, &host_tid, &ts, BPF_ANY);
	return ts;
}

/*
 * Copies the characters of the str object at addr into dst (room bytes):
 * its first room bytes (tail false) or its last (tail true). Sets *kind
 * (1, 2 or 4: bytes a character; 0: not a str read), *len and *cut.
 */
static __always_inline void py_str(const struct fl_py_proc *p, struct py_scratch *sc, __u64 addr,
				   char *dst, __u32 room, bool tail, __u8 *kind, __u16 *len,
				   __u8 *cut)
{
	__u64 length, bytes, data, from;
	__u32 state, k, n;

	*kind = 0;
	*len = 0;
	*cut = 0;
	if (!addr || p->off.str_state + 4 > PY_STR_READ ||
	    bpf_probe_read_user(sc->str, PY_STR_READ, (void *)addr))
		return;
	length = py_u64(sc->str, PY_STR_READ, p->off.str_length);
	__builtin_memcpy(&state, sc->str + (p->off.str_state & 255), 4);
	/* Only compact strings (every name and path the compiler makes) hold their characters inline. */
	if (!(state >> (p->off.state_compact_bit & 31) & 1))
		return;
	k = state >> (p->off.state_kind_shift & 31) & 7;
	if (k != 1 && k != 2 && k != 4)
		return;
	data = addr + (state >> (p->off.state_ascii_bit & 31) & 1 ? p->off.str_ascii_data
								  : p->off.str_compact_data);
	if (length > (1 << 20))
		return;
	bytes = length * k;
	n = bytes > room ? room : (__u32)bytes;
	/* Whole characters only. */
	n &= ~(k - 1);
	from = data;
	if (bytes > n) {
		*cut = 1;
		if (tail)
			from = data + bytes - n;
	}
	/* The bound again, where the verifier sees it on the size passed. */
	asm volatile("" : "+r"(n));
	if (n > room)
		return;
	if (n && bpf_probe_read_user(dst, n, (void *)from))
		return;
	*kind = (__u8)k;
	*len = (__u16)n;
}

/*
 * Keeps the names of the code object read into the scratch's code, under
 * key word (FL_PY_KEY()) of process tgid (a global function: the verifier
 * checks it once, not per frame).
 */
__noinline int py_code_names(__u32 tgid, __u64 word)
{
	struct fl_py_code_key key = {.tgid = tgid, .code = word};
	__u32 zero = 0;
	struct py_scratch *sc = bpf_map_lookup_elem(&py_scratch, &zero);
	const struct fl_py_proc *p = bpf_map_lookup_elem(&pyprocs, &tgid);
	struct fl_py_code *names;
	__u32 line = 0;

	if (!sc || !p)
		return 0;
	names = &sc->names;
	__builtin_memset(names, 0, sizeof(*names));
	if (p->off.code_firstlineno + 4 <= PY_CODE_READ)
		__builtin_memcpy(&line, sc->code + (p->off.code_firstlineno & 255), 4);
	names->firstlineno = line;
	py_str(p, sc, py_u64(sc->code, PY_CODE_READ, p->off.code_qualname), names->name,
	       FL_PY_NAME_LEN, false, &names->name_kind, &names->name_len, &names->name_cut);
	py_str(p, sc, py_u64(sc->code, PY_CODE_READ, p->off.code_filename), names->file,
	       FL_PY_FILE_LEN, true, &names->file_kind, &names->file_len, &names->file_cut);
	bpf_map_update_elem(&pycodes, &key, names, BPF_NOEXIST);
	return 0;
}

/*
 * The fingerprint of the code object read into buf: of its names and
 * first line, in bits 48-63.
 */
static __always_inline __u64 py_fingerprint(const struct fl_py_proc *p, const __u8 *buf)
{
	__u32 line = 0;
	__u64 h;

	if (p->off.code_firstlineno + 4 <= PY_CODE_READ)
		__builtin_memcpy(&line, buf + (p->off.code_firstlineno & 255), 4);
	h = py_u64(buf, PY_CODE_READ, p->off.code_qualname) * 0x9e3779b97f4a7c15ULL;
	h ^= py_u64(buf, PY_CODE_READ, p->off.code_filename) + line;
	h *= 0xff51afd7ed558ccdULL;
	return h & 0xffff000000000000ULL;
}

struct py_walk_ctx {
	__u32 tgid;
	__u32 n;
	__u64 frame;
	__u64 hash;
};

/* One frame of the chain (bpf_loop()): its code object kept, its names read if new. */
static long py_frame_step(__u32 i, struct py_walk_ctx *c)
{
	__u32 zero = 0;
	struct py_scratch *sc = bpf_map_lookup_elem(&py_scratch, &zero);
	const struct fl_py_proc *p = bpf_map_lookup_elem(&pyprocs, &c->tgid);
	struct fl_py_code_key key = {.tgid = c->tgid};
	__u64 code, f;
	__u32 n = c->n;
	__u8 entry, owner;

	if (!sc || !p || !c->frame || bpf_probe_read_user(sc->frame, PY_FRAME_READ, (void *)c->frame))
		return 1;
	code = py_u64(sc->frame, PY_FRAME_READ, p->off.frame_code);
	owner = p->off.frame_owner < PY_FRAME_READ ? sc->frame[p->off.frame_owner & 255] : 0;
	entry = p->off.frame_is_entry < PY_FRAME_READ ? sc->frame[p->off.frame_is_entry & 255] : 0;
	c->frame = py_u64(sc->frame, PY_FRAME_READ, p->off.frame_previous);
	if (p->off.owner_cstack != 0xff && owner == p->off.owner_cstack) {
		/* 3.12+: a shim under an entry frame; the frame above it was the entry. */
		if (n > 0 && n <= FL_PY_MAX_FRAMES) {
			sc->frames.ips[n - 1] |= FL_PY_ENTRY;
			c->hash = py_mix(c->hash, FL_PY_ENTRY);
		}
		return 0;
	}
	if (!code || code & 7 || code > FL_PY_CODE(~0ULL) || n >= FL_PY_MAX_FRAMES)
		return 1;
	/* The code object's fields, for its fingerprint (and its names, the first time). */
	if (bpf_probe_read_user(sc->code, PY_CODE_READ, (void *)code))
		return 1;
	key.code = code | py_fingerprint(p, sc->code);
	f = key.code | (entry ? FL_PY_ENTRY : 0);
	sc->frames.ips[n] = f;
	c->n = n + 1;
	c->hash = py_mix(c->hash, f);
	if (!bpf_map_lookup_elem(&pycodes, &key))
		py_code_names(c->tgid, key.code);
	return 0;
}

static __always_inline void py_ask(__u32 tgid)
{
	struct task_struct___py *task = (struct task_struct___py *)bpf_get_current_task();
	struct mm_struct___py *mm = BPF_CORE_READ(task, mm);
	const struct py_ask *old;
	struct py_ask a = {};
	__u32 *w;

	if (!mm)
		return; /* a kernel thread */
	a.exec_vm = BPF_CORE_READ(mm, exec_vm);
	/* Looked up first: an LRU update takes a free node even for a key it has. */
	old = bpf_map_lookup_elem(&py_asked, &tgid);
	if (old && old->exec_vm == a.exec_vm)
		return;
	a.when = bpf_ktime_get_ns();
	if (old && a.when - old->when < PY_ASK_AGAIN_NS)
		return;
	/* Two CPUs may both ask: two records, one more wake-up. */
	if (bpf_map_update_elem(&py_asked, &tgid, &a, BPF_ANY))
		return;
	w = bpf_ringbuf_reserve(&py_wants, sizeof(*w), 0);
	if (!w) {
		/* Not asked after all: the next sample asks again. */
		bpf_map_delete_elem(&py_asked, &tgid);
		return;
	}
	*w = tgid;
	bpf_ringbuf_submit(w, BPF_RB_FORCE_WAKEUP);
}

/*
 * The Python frames of the current thread of process tgid into the
 * scratch's frames (leaf first, zero-terminated) and their hash into its
 * hash; their number returned. A global function: checked once by the
 * verifier.
 */
__noinline int py_walk(__u32 tgid, __u32 host_tid)
{
	__u32 zero = 0;
	struct py_scratch *sc = bpf_map_lookup_elem(&py_scratch, &zero);
	const struct fl_py_proc *p = bpf_map_lookup_elem(&pyprocs, &tgid);
	struct py_walk_ctx c = {.tgid = tgid, .hash = PY_HASH_SEED};
	__u64 ts, frame;

	if (!p)
		py_ask(tgid);
	if (!sc || !p)
		return 0;
	ts = py_tstate(p, tgid, host_tid);
	if (!ts)
		return 0;
	frame = p->off.tstate_cframe == FL_PY_NONE ? ts : py_ptr(ts, p->off.tstate_cframe);
	c.frame = py_ptr(frame, p->off.tstate_frame);
	if (!c.frame)
		return 0;
	/* Zero-terminated as a stack map's entries are: the frames not written stay 0. */
	__builtin_memset(&sc->frames, 0, sizeof(sc->frames));
	bpf_loop(FL_PY_MAX_FRAMES + 8, py_frame_step, &c, 0);
	sc->hash = c.hash;
	return (int)c.n;
}

/*
 * An exec replaces the interpreter (or ends it): its process is read
 * again when user space has its new mappings, not with the old offsets
 * meanwhile; its next sample asks for that at once.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(py_on_exec, struct task_struct *p)
{
	__u32 tgid = p->tgid;

	if (child_pidns) {
		tgid = pid_in_ns(BPF_CORE_READ(p, group_leader, thread_pid), pidns_ino);
		if (!tgid)
			return 0;
	}
	bpf_map_delete_elem(&pyprocs, &tgid);
	bpf_map_delete_elem(&py_asked, &tgid);
	return 0;
}

#endif
