/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What bpf/python.bpf.h and user space share to read CPython's frames at
 * sample time: where a process's interpreter state is, the offsets of the
 * fields followed for its version, and what a frame and a code object's
 * names look like once read.
 */
#ifndef FLAMED_PYTHON_ABI_H
#define FLAMED_PYTHON_ABI_H

#include <linux/types.h>

/* Python frames kept per sample, leaf first (the outermost are cut). */
#define FL_PY_MAX_FRAMES 127

/*
 * A Python frame in a stack: the address of its code object (bits 3-47),
 * a fingerprint of what the code object names (bits 48-63: a code object
 * freed and another made at its address, as a module's body after import,
 * is another frame), and FL_PY_ENTRY on the outermost frame of one run of
 * the interpreter's loop (_PyEval_EvalFrameDefault): the frames from one
 * entry frame (not included) to the next belong to the next native loop
 * frame outward. Code objects are at least 8-aligned: the low bits are free.
 */
#define FL_PY_ENTRY 1ULL
#define FL_PY_CODE(f) ((f) & 0x0000fffffffffff8ULL)
#define FL_PY_KEY(f) ((f) & ~FL_PY_ENTRY) /* the code object and its fingerprint */

/* An offset the version does not have. */
#define FL_PY_NONE 0xffff

/*
 * Byte offsets of the fields the program follows, per CPython version
 * (lib/symbols/pyruntime.c; checked against the version's own headers in
 * tests/unit/test_pyruntime.c).
 */
struct fl_py_offsets {
	/* _PyRuntimeState */
	__u16 runtime_interp_head;    /* .interpreters.head */
	__u16 runtime_tstate_current; /* .gilstate.tstate_current (the GIL's holder) */
	/* PyInterpreterState */
	__u16 interp_next;
	__u16 interp_threads_head; /* .threads.head */
	/* PyThreadState */
	__u16 tstate_next;
	__u16 tstate_thread_id; /* pthread_self() of its thread: the fs base on x86-64 */
	__u16 tstate_cframe;	/* _PyCFrame * (3.11, 3.12); FL_PY_NONE: frame directly */
	__u16 tstate_frame;	/* _PyCFrame.current_frame, or PyThreadState's own */
	/* _PyInterpreterFrame */
	__u16 frame_code;     /* f_code (f_executable in 3.13) */
	__u16 frame_previous;
	__u16 frame_is_entry; /* FL_PY_NONE: entries are told by owner */
	__u16 frame_owner;
	/* PyCodeObject */
	__u16 code_filename;
	__u16 code_qualname;
	__u16 code_firstlineno;
	/* PyASCIIObject / PyCompactUnicodeObject */
	__u16 str_length;
	__u16 str_state;
	__u16 str_ascii_data;	/* sizeof(PyASCIIObject): the characters of an ASCII string */
	__u16 str_compact_data; /* sizeof(PyCompactUnicodeObject): those of the others */
	__u8 state_kind_shift;	/* bit of state where kind (1, 2, 4 bytes a character) starts */
	__u8 state_compact_bit;
	__u8 state_ascii_bit;
	__u8 owner_cstack; /* owner of C-stack shim frames (skipped, 3.12+); 0xff: none */
	__u8 pad[6];
};

/* Value of the program's pyprocs map, keyed by tgid (of flamed's pid namespace). */
struct fl_py_proc {
	__u64 runtime; /* address of _PyRuntime in the process */
	__u32 version; /* PY_VERSION_HEX */
	__u32 pad;
	struct fl_py_offsets off;
};

/* Names of a code object, read by the program the first time it meets it. */
#define FL_PY_NAME_LEN 96
#define FL_PY_FILE_LEN 128

struct fl_py_code_key {
	__u32 tgid;
	__u32 pad;
	__u64 code; /* FL_PY_KEY() of its frames */
};

/*
 * The strings are the characters as CPython holds them: kind 1 (ASCII or
 * Latin-1), 2 (UCS-2) or 4 (UCS-4) bytes each, *_len bytes of them. A name
 * longer than its room keeps its start, a file its end (the last
 * components of the path): *_cut says so. Hostile: a process writes them.
 */
struct fl_py_code {
	__u32 firstlineno;
	__u8 name_kind, file_kind;
	__u8 name_cut, file_cut;
	__u16 name_len, file_len;
	__u32 pad;
	char name[FL_PY_NAME_LEN];
	char file[FL_PY_FILE_LEN];
};

#endif
