// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tests for pyruntime: the offsets table against CPython's own internal
 * headers, and a live CPython process (two interpreters, two threads) read
 * through the offsets from /proc/PID/mem, as the BPF program will: the
 * configured CPython's, and a 3.12's and a 3.13's where they are installed
 * (their live walk is their check; a 3.13's offsets come from its own
 * _Py_DebugOffsets).
 */
#ifdef FL_TEST_PYTHON_HEADERS
/* Python.h first: it sets the feature macros. The internal headers want Py_BUILD_CORE. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#endif

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <glob.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/sampling/procmaps.h"
#include "flamed/symbols/pyruntime.h"

/* Why a test was skipped: main() then exits 77 with it, unless another test failed. */
static const char *skip_reason;

static void skip_because(const char *why)
{
	if (!skip_reason)
		skip_reason = why;
	skip();
}

/* --- the table against the headers ------------------------------------------------ */

static void test_offsets_match_headers(void **state)
{
	(void)state;
#ifndef FL_TEST_PYTHON_HEADERS
	skip_because(FL_TEST_PYTHON_SKIP);
#else
	struct fl_py_offsets off;
	PyASCIIObject s;
	uint32_t word;

#if PY_VERSION_HEX >= 0x030d0000
	/*
	 * No table (pyruntime.h): 3.13's offsets are the file's, checked by
	 * the live walk. What pyruntime.c adds to them is checked here.
	 */
	assert_int_equal(fl_pyruntime__offsets(PY_VERSION_HEX, &off), -EOPNOTSUPP);
	assert_int_equal(FRAME_OWNED_BY_CSTACK, 3);
	assert_int_equal(sizeof(PyCompactUnicodeObject), sizeof(PyASCIIObject) + 16);
	assert_int_equal(sizeof(_Py_DebugOffsets), 584);
	memset(&s, 0, sizeof(s));
	s.state.kind = PyUnicode_1BYTE_KIND;
	s.state.compact = 1;
	s.state.ascii = 1;
	memcpy(&word, &s.state, sizeof(word));
	assert_int_equal(word, 1u << 2 | 1u << 5 | 1u << 6);
#else
	assert_int_equal(fl_pyruntime__offsets(PY_VERSION_HEX, &off), 0);

	assert_int_equal(off.runtime_interp_head, offsetof(_PyRuntimeState, interpreters.head));
#if PY_VERSION_HEX < 0x030c0000
	assert_int_equal(off.runtime_tstate_current,
			 offsetof(_PyRuntimeState, gilstate.tstate_current));
#else
	/* 3.12 keeps the current thread state in a thread-local only. */
	assert_int_equal(off.runtime_tstate_current, FL_PY_NONE);
#endif
	assert_int_equal(off.interp_next, offsetof(PyInterpreterState, next));
	assert_int_equal(off.interp_threads_head, offsetof(PyInterpreterState, threads.head));
	assert_int_equal(off.tstate_next, offsetof(PyThreadState, next));
	assert_int_equal(off.tstate_thread_id, offsetof(PyThreadState, thread_id));
	assert_int_equal(off.tstate_cframe, offsetof(PyThreadState, cframe));
	assert_int_equal(off.tstate_frame, offsetof(_PyCFrame, current_frame));
	assert_int_equal(off.frame_code, offsetof(_PyInterpreterFrame, f_code));
	assert_int_equal(off.frame_previous, offsetof(_PyInterpreterFrame, previous));
#if PY_VERSION_HEX < 0x030c0000
	assert_int_equal(off.frame_is_entry, offsetof(_PyInterpreterFrame, is_entry));
#else
	assert_int_equal(off.frame_is_entry, FL_PY_NONE);
#endif
	assert_int_equal(off.frame_owner, offsetof(_PyInterpreterFrame, owner));
	assert_int_equal(off.code_filename, offsetof(PyCodeObject, co_filename));
	assert_int_equal(off.code_qualname, offsetof(PyCodeObject, co_qualname));
	assert_int_equal(off.code_firstlineno, offsetof(PyCodeObject, co_firstlineno));
	assert_int_equal(off.str_length, offsetof(PyASCIIObject, length));
	assert_int_equal(off.str_state, offsetof(PyASCIIObject, state));
	assert_int_equal(off.str_ascii_data, sizeof(PyASCIIObject));
	assert_int_equal(off.str_compact_data, sizeof(PyCompactUnicodeObject));
#if PY_VERSION_HEX < 0x030c0000
	/* 3.11 has no FRAME_OWNED_BY_CSTACK (3.12's shim frames). */
	assert_int_equal(off.owner_cstack, 0xff);
	assert_int_equal(sizeof(((_PyInterpreterFrame *)0)->is_entry), 1);
#else
	assert_int_equal(off.owner_cstack, FRAME_OWNED_BY_CSTACK);
#endif
	/* What the program reads of a frame, a code object, a str (bpf/python.bpf.h). */
	assert_true(off.frame_owner + 1 <= 72 && off.frame_code + 8 <= 72 &&
		    off.frame_previous + 8 <= 72);
	assert_true(off.code_filename + 8 <= 192 && off.code_qualname + 8 <= 192 &&
		    off.code_firstlineno + 4 <= 192);
	assert_true(off.str_state + 4 <= 80 && off.str_length + 8 <= 80);

	/* The widths the program reads the fields with. */
	assert_int_equal(sizeof(((PyThreadState *)0)->thread_id), 8);
	assert_int_equal(sizeof(((_PyInterpreterFrame *)0)->owner), 1);
	assert_int_equal(sizeof(((PyCodeObject *)0)->co_firstlineno), 4);
	assert_int_equal(sizeof(((PyASCIIObject *)0)->length), 8);
	assert_int_equal(sizeof(s.state), sizeof(word));
	assert_int_equal(FRAME_OWNED_BY_THREAD, 0);

	/* The state bit-field's layout is the compiler's: set each field, read the word back. */
	memset(&s, 0, sizeof(s));
	s.state.kind = PyUnicode_1BYTE_KIND;
	memcpy(&word, &s.state, sizeof(word));
	assert_int_equal(word, 1u << off.state_kind_shift);
	memset(&s, 0, sizeof(s));
	s.state.kind = PyUnicode_4BYTE_KIND;
	memcpy(&word, &s.state, sizeof(word));
	assert_int_equal(word, 4u << off.state_kind_shift);
	memset(&s, 0, sizeof(s));
	s.state.compact = 1;
	memcpy(&word, &s.state, sizeof(word));
	assert_int_equal(word, 1u << off.state_compact_bit);
	memset(&s, 0, sizeof(s));
	s.state.ascii = 1;
	memcpy(&word, &s.state, sizeof(word));
	assert_int_equal(word, 1u << off.state_ascii_bit);
	memset(&s, 0, sizeof(s));
	s.state.kind = PyUnicode_2BYTE_KIND;
	s.state.compact = 1;
	s.state.ascii = 1;
	memcpy(&word, &s.state, sizeof(word));
	assert_int_equal(word, 2u << off.state_kind_shift | 1u << off.state_compact_bit |
				       1u << off.state_ascii_bit);
#endif
#endif
}

static void test_offsets_versions(void **state)
{
	struct fl_py_offsets off, untouched;
	static const uint32_t refused[] = {
		0,	    0x030a0ff0, /* 3.10.15: no table (and no Py_Version) */
		0x030b00a1,		/* 3.11.0a1 */
		0x030b00b4,		/* 3.11.0b4 */
		0x030b00c1,		/* 3.11.0rc1 */
		0x030c00b1,		/* 3.12.0b1 */
		0x030d01f0,		/* 3.13.1: its offsets are the file's */
		0x030e00f0,		/* 3.14.0 */
		0x040000f0, 0x020700f0,
	};
	size_t i;

	(void)state;
	memset(&untouched, 0xa5, sizeof(untouched));
	for (i = 0; i < ARRAY_SIZE(refused); i++) {
		off = untouched;
		assert_int_equal(fl_pyruntime__offsets(refused[i], &off), -EOPNOTSUPP);
		assert_memory_equal(&off, &untouched, sizeof(off));
	}
	assert_int_equal(fl_pyruntime__offsets(0x030b00f0, NULL), -EINVAL);
	/* Every 3.11 micro release shares the table. */
	assert_int_equal(fl_pyruntime__offsets(0x030b00f0, &off), 0);
	assert_int_equal(off.owner_cstack, 0xff);
	untouched = off;
	assert_int_equal(fl_pyruntime__offsets(0x030b07f0, &off), 0);
	assert_memory_equal(&off, &untouched, sizeof(off));
	assert_int_equal(fl_pyruntime__offsets(0x030b0ff0, &off), 0);
	assert_memory_equal(&off, &untouched, sizeof(off));

	/* 3.12: another table, every micro release; no is_entry, no GIL holder, shims. */
	assert_int_equal(fl_pyruntime__offsets(0x030c00f0, &off), 0);
	assert_int_equal(off.frame_is_entry, FL_PY_NONE);
	assert_int_equal(off.runtime_tstate_current, FL_PY_NONE);
	assert_int_equal(off.owner_cstack, 3);
	untouched = off;
	assert_int_equal(fl_pyruntime__offsets(0x030c07f0, &off), 0);
	assert_memory_equal(&off, &untouched, sizeof(off));

	/* offsets_of(): a probe's own offsets (3.13's), else the version's table. */
	{
		struct fl_pyruntime r = {.version = 0x030b07f0};

		assert_int_equal(fl_pyruntime__offsets_of(NULL, &off), -EINVAL);
		assert_int_equal(fl_pyruntime__offsets_of(&r, NULL), -EINVAL);
		assert_int_equal(fl_pyruntime__offsets_of(&r, &off), 0);
		assert_int_equal(off.owner_cstack, 0xff);
		r.version = 0x030d00f0;
		memset(&off, 0xa5, sizeof(off));
		untouched = off;
		assert_int_equal(fl_pyruntime__offsets_of(&r, &off), -EOPNOTSUPP);
		assert_memory_equal(&off, &untouched, sizeof(off));
		r.has_offsets = true;
		r.offsets.tstate_frame = 1234;
		assert_int_equal(fl_pyruntime__offsets_of(&r, &off), 0);
		assert_memory_equal(&off, &r.offsets, sizeof(off));
	}
}

/* --- names and addresses ----------------------------------------------------------- */

static void test_candidate(void **state)
{
	static const char *const yes[] = {
		"/usr/bin/python3",
		"/usr/bin/python3.11",
		"python3.11",
		"/opt/py/bin/python3.11d",
		"/usr/bin/python3.13t",
		"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
		"/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0",
		"libpython3.11d.so.1.0",
		"/usr/lib64/libpython3.12.so",
	};
	static const char *const no[] = {
		"",
		"/",
		"/usr/bin/python",
		"/usr/bin/python2.7",
		"/usr/bin/python3-config",
		"/usr/bin/python3.11-config",
		"/usr/bin/python3.",
		"/usr/bin/python3.x",
		"/usr/bin/python3.11.so",
		"/usr/bin/mypython3.11",
		"/usr/bin/python3.1111",
		"/usr/bin/python3.11abcd",
		"/usr/lib/libpython3.so",
		"/usr/lib/libpython2.7.so.1.0",
		"/usr/lib/libpython3.11.a",
		"/usr/lib/libpython3.11.sox",
		"/usr/lib/python3.11/lib-dynload/_ssl.cpython-311-x86_64-linux-gnu.so",
		"/opt/python3.11/bin/true",
		"[vdso]",
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(yes); i++)
		if (!fl_pyruntime__candidate(yes[i]))
			fail_msg("not a candidate: %s", yes[i]);
	for (i = 0; i < ARRAY_SIZE(no); i++)
		if (fl_pyruntime__candidate(no[i]))
			fail_msg("a candidate: %s", no[i]);
	assert_false(fl_pyruntime__candidate(NULL));
}

static void test_address(void **state)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), addr, bias = 0x7f0000000000;
	/*
	 * A shared library laid out as linkers do: the data segment starts in
	 * the page where the read-only one ends, one page further in memory.
	 */
	struct fl_pyruntime r = {
		.runtime_vaddr = 4 * page + 0x100,
		.nr_loads = 2,
		.loads = {{.offset = 0, .vaddr = 0, .filesz = 3 * page + 0x78},
			  {.offset = 3 * page + 0xed0,
			   .vaddr = 4 * page + 0xed0,
			   .filesz = 0x1000}},
	};

	(void)state;
	/* The first mapping, and the data segment's, which starts in the shared page. */
	assert_int_equal(fl_pyruntime__address(&r, bias, 0, &addr), 0);
	assert_int_equal(addr, bias + r.runtime_vaddr);
	assert_int_equal(fl_pyruntime__address(&r, bias + 4 * page, 3 * page, &addr), 0);
	assert_int_equal(addr, bias + r.runtime_vaddr);
	/* A mapping that starts inside a segment (an mprotect split it). */
	assert_int_equal(fl_pyruntime__address(&r, bias + page, page, &addr), 0);
	assert_int_equal(addr, bias + r.runtime_vaddr);
	/* Past every segment's file data: not a mapping of the file's PT_LOADs. */
	assert_int_equal(fl_pyruntime__address(&r, bias, 3 * page + 0xed0 + 0x1000 + page, &addr),
			 -ENOENT);
	assert_int_equal(fl_pyruntime__address(&r, bias, 1ull << 40, &addr), -ENOENT);

	/* A non-PIE executable: no bias. */
	r = (struct fl_pyruntime){
		.runtime_vaddr = 0xa5b740,
		.nr_loads = 2,
		.loads = {{.offset = 0, .vaddr = 0x400000, .filesz = 0x1e3e8},
			  {.offset = 0x544dc8, .vaddr = 0x945dc8, .filesz = 0x13e4b0}},
	};
	assert_int_equal(fl_pyruntime__address(&r, 0x400000, 0, &addr), 0);
	assert_int_equal(addr, 0xa5b740);
	assert_int_equal(
		fl_pyruntime__address(&r, 0x945dc8 & ~(page - 1), 0x544dc8 & ~(page - 1), &addr),
		0);
	assert_int_equal(addr, 0xa5b740);

	r.nr_loads = 0;
	assert_int_equal(fl_pyruntime__address(&r, 0x400000, 0, &addr), -ENOENT);
	r.nr_loads = FL_PYRUNTIME_MAX_LOADS + 1;
	assert_int_equal(fl_pyruntime__address(&r, 0x400000, 0, &addr), -ENOENT);
	assert_int_equal(fl_pyruntime__address(NULL, 0x400000, 0, &addr), -ENOENT);
}

/* --- files that are no CPython ----------------------------------------------------- */

static int memfd_with(const void *data, size_t size)
{
	int fd = memfd_create("pyrt", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, size), (ssize_t)size);
	return fd;
}

/* probe() fails with err and leaves *out as it was. */
static void assert_probe_fails(int fd, int err)
{
	struct fl_pyruntime r, untouched;

	memset(&untouched, 0xa5, sizeof(untouched));
	r = untouched;
	assert_int_equal(fl_pyruntime__probe(fd, &r), err);
	assert_memory_equal(&r, &untouched, sizeof(r));
}

static void test_not_python(void **state)
{
	_cleanup_close_ int fd = -1, dir = -1, text = -1, empty = -1, devnull = -1;
	int pipefd[2];

	(void)state;
	/* An ELF file with symbols, none of CPython's. */
	fd = open("/bin/true", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_probe_fails(fd, -ENOENT);

	text = memfd_with("#!/bin/sh\necho python3.11\n", 26);
	assert_probe_fails(text, -EINVAL);
	empty = memfd_with("", 0);
	assert_probe_fails(empty, -EINVAL);

	/* Not regular files: never read. */
	dir = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dir >= 0);
	assert_probe_fails(dir, -EINVAL);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(devnull >= 0);
	assert_probe_fails(devnull, -EINVAL);
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	assert_probe_fails(pipefd[0], -EINVAL);
	close(pipefd[0]);
	close(pipefd[1]);

	assert_probe_fails(-1, -EINVAL);
	assert_int_equal(fl_pyruntime__probe(fd, NULL), -EINVAL);
}

/* --- a live CPython ---------------------------------------------------------------- */

/* The CPython the build found (tests/CMakeLists.txt), or none. */
#ifdef FL_TEST_PYTHON
static const char *const test_python = FL_TEST_PYTHON;
#else
static const char *const test_python = NULL;
#endif

/*
 * Starts a subinterpreter (where the build has _xxsubinterpreters) and a
 * thread that sleeps in a function whose qualified name is not ASCII (UCS-2:
 * PyCompactUnicodeObject), then spins in <module> holding the GIL, after
 * printing its version and both threads' idents (pthread_self()).
 */
static const char pyscript[] =
	"import sys, threading, time\n"
	"ev = threading.Event()\n"
	"def sleeper():\n" /* line 3 */
	"    ev.set()\n"
	"    time.sleep(60)\n"
	"sleeper.__code__ = sleeper.__code__.replace(co_qualname='sl\\u00e9eper\\u7761')\n"
	"try:\n"
	"    import _xxsubinterpreters as si\n"
	"except ImportError:\n"
	"    try:\n"
	"        import _interpreters as si\n" /* 3.13's name */
	"    except ImportError:\n"
	"        si = None\n"
	"sub = 0\n"
	"if si:\n"
	"    interp = si.create()\n" /* kept: it ends with its last id */
	"    sub = 1\n"
	"t = threading.Thread(target=sleeper, daemon=True)\n"
	"t.start()\n"
	"ev.wait()\n"
	"time.sleep(0.2)\n"
	"sys.stdout.write('%d %d %d %d\\n' % (sys.hexversion, sub, threading.get_ident(), "
	"t.ident))\n"
	"sys.stdout.flush()\n"
	"while True:\n"
	"    pass\n";
#define SLEEPER_LINE 3
/* What the qualified name of sleeper is made. */
static const uint32_t sleeper_name[] = {'s', 'l', 0xe9, 'e', 'p', 'e', 'r', 0x7761};

#define MAX_MAPS 64

struct pychild {
	pid_t pid;
	FILE *out;
	uint32_t hexversion;
	int sub; /* whether a subinterpreter was made */
	uint64_t main_ident, thread_ident;
	struct {
		uint64_t start, pgoff;
		char path[PATH_MAX];
	} maps[MAX_MAPS]; /* mappings of candidate files */
	size_t nr_maps;
};

static struct pychild child;

static int save_candidate(const struct fl_procmap *m, void *ctx)
{
	struct pychild *c = ctx;

	if (!fl_pyruntime__candidate(m->path))
		return 0;
	if (c->nr_maps == MAX_MAPS || strlen(m->path) >= PATH_MAX)
		return -ENOSPC;
	c->maps[c->nr_maps].start = m->start;
	c->maps[c->nr_maps].pgoff = m->pgoff;
	strcpy(c->maps[c->nr_maps].path, m->path);
	c->nr_maps++;
	return 0;
}

static void pychild_kill(struct pychild *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
	if (c->out)
		fclose(c->out);
	c->pid = 0;
	c->out = NULL;
}

/* Starts python as the child: running, its report read and its maps saved; killed on any failure. */
static int pychild_run(struct pychild *c, const char *python)
{
	char line[256];
	int out[2];

	memset(c, 0, sizeof(*c));
	if (pipe2(out, O_CLOEXEC))
		return -1;
	c->pid = fork();
	if (c->pid < 0) {
		close(out[0]);
		close(out[1]);
		return -1;
	}
	if (c->pid == 0) {
		/* Dies with the test, whatever kills it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(out[1], STDOUT_FILENO);
		execl(python, python, "-I", "-S", "-c", pyscript, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	c->out = fdopen(out[0], "r");
	if (!c->out) {
		close(out[0]);
		pychild_kill(c);
		return -1;
	}
	if (!fgets(line, sizeof(line), c->out) ||
	    sscanf(line, "%" SCNu32 " %d %" SCNu64 " %" SCNu64, &c->hexversion, &c->sub,
		   &c->main_ident, &c->thread_ident) != 4 ||
	    fl_procmaps__read(c->pid, save_candidate, c)) {
		fprintf(stderr, "%s did not start as expected\n", python);
		pychild_kill(c);
		return -1;
	}
	return 0;
}

/* Setup: the configured CPython as the child, or none. */
static int pychild_start(void **state)
{
	memset(&child, 0, sizeof(child));
	*state = &child;
	return test_python ? pychild_run(&child, test_python) : 0;
}

static int pychild_stop(void **state)
{
	pychild_kill(*state);
	return 0;
}

/* The child, or a skip when there is no CPython to run. */
static struct pychild *pychild_get(void **state)
{
	struct pychild *c = *state;

	if (!c->pid)
		skip_because("no CPython to run: " FL_TEST_PYTHON_SKIP);
	return c;
}

static void *read_file(const char *path, size_t *size)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	*size = (size_t)st.st_size;
	return buf;
}

/* A symbol as the test's own reading of the ELF file sees it, libelf aside. */
struct own_sym {
	uint64_t value, size;
	size_t entry; /* file offset of its Elf64_Sym */
	size_t data;  /* file offset of its bytes, through its section */
};

static bool own_lookup_in(const unsigned char *img, size_t size, uint32_t type, const char *name,
			  struct own_sym *out)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh, str, sec;
	size_t i, j;

	memcpy(&eh, img, sizeof(eh));
	assert_int_equal(eh.e_ident[EI_CLASS], ELFCLASS64);
	assert_true(eh.e_shoff + (uint64_t)eh.e_shnum * sizeof(sh) <= size);
	for (i = 1; i < eh.e_shnum; i++) {
		memcpy(&sh, img + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_type != type)
			continue;
		assert_true(sh.sh_link < eh.e_shnum && sh.sh_offset + sh.sh_size <= size);
		memcpy(&str, img + eh.e_shoff + sh.sh_link * sizeof(str), sizeof(str));
		for (j = 1; j < sh.sh_size / sizeof(Elf64_Sym); j++) {
			Elf64_Sym sym;

			memcpy(&sym, img + sh.sh_offset + j * sizeof(sym), sizeof(sym));
			if (sym.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym.st_info) != STT_OBJECT ||
			    sym.st_name >= str.sh_size ||
			    strncmp((const char *)img + str.sh_offset + sym.st_name, name,
				    str.sh_size - sym.st_name))
				continue;
			assert_true(sym.st_shndx < eh.e_shnum);
			memcpy(&sec, img + eh.e_shoff + sym.st_shndx * sizeof(sec), sizeof(sec));
			out->value = sym.st_value;
			out->size = sym.st_size;
			out->entry = sh.sh_offset + j * sizeof(sym);
			out->data = sec.sh_offset + (sym.st_value - sec.sh_addr);
			return true;
		}
	}
	return false;
}

static bool own_lookup(const unsigned char *img, size_t size, const char *name, struct own_sym *out)
{
	return own_lookup_in(img, size, SHT_DYNSYM, name, out) ||
	       own_lookup_in(img, size, SHT_SYMTAB, name, out);
}

/*
 * Probes every candidate file the child maps: exactly one holds CPython
 * (the executable, or libpython when the executable links it), whose
 * symbols and version must be what the test reads itself and what the
 * child printed. Every mapping of that file gives the same _PyRuntime
 * address. Returns that file's path in path.
 */
static void probe_child(struct pychild *c, struct fl_pyruntime *found, uint64_t *runtime,
			char *path)
{
	size_t i, j, nr_found = 0;

	assert_true(c->nr_maps > 0);
	for (i = 0; i < c->nr_maps; i++) {
		_cleanup_close_ int fd = -1;
		_cleanup_free_ unsigned char *img = NULL;
		struct fl_pyruntime r;
		struct own_sym rt, ver;
		uint64_t want;
		size_t size;
		int err;

		for (j = 0; j < i; j++)
			if (!strcmp(c->maps[j].path, c->maps[i].path))
				break;
		if (j < i)
			continue; /* a file already probed */
		fd = open(c->maps[i].path, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		err = fl_pyruntime__probe(fd, &r);
		img = read_file(c->maps[i].path, &size);
		if (err) {
			/* A python3.11 that links libpython has neither symbol defined. */
			if (err != -ENOENT)
				fail_msg("%s: probe: %s", c->maps[i].path, strerror(-err));
			assert_false(own_lookup(img, size, "_PyRuntime", &rt) &&
				     own_lookup(img, size, "Py_Version", &ver));
			continue;
		}
		nr_found++;
		assert_true(own_lookup(img, size, "_PyRuntime", &rt));
		assert_true(own_lookup(img, size, "Py_Version", &ver));
		assert_int_equal(r.runtime_vaddr, rt.value);
		assert_int_equal(ver.size, 8);
		memcpy(&want, img + ver.data, sizeof(want));
		assert_int_equal(r.version, want);
		assert_int_equal(r.version, c->hexversion);
		assert_int_equal(r.version >> 24, 3);
		assert_true(r.nr_loads >= 2);

		*runtime = 0;
		for (j = 0; j < c->nr_maps; j++) {
			uint64_t addr;

			if (strcmp(c->maps[j].path, c->maps[i].path))
				continue;
			assert_int_equal(fl_pyruntime__address(&r, c->maps[j].start,
							       c->maps[j].pgoff, &addr),
					 0);
			if (!*runtime)
				*runtime = addr;
			if (addr != *runtime)
				fail_msg("%s mapped at %#" PRIx64 " (offset %#" PRIx64
					 "): _PyRuntime at %#" PRIx64 ", %#" PRIx64
					 " by another mapping",
					 c->maps[j].path, c->maps[j].start, c->maps[j].pgoff, addr,
					 *runtime);
		}
		*found = r;
		strcpy(path, c->maps[i].path);
	}
	assert_int_equal(nr_found, 1);
}

static void test_probe_live(void **state)
{
	struct pychild *c = pychild_get(state);
	struct fl_pyruntime r;
	char path[PATH_MAX];
	uint64_t runtime;

	probe_child(c, &r, &runtime, path);
#ifdef FL_TEST_PYTHON_HEADERS
	/* The headers the table was compared with are this interpreter's. */
	assert_int_equal(r.version >> 16, PY_VERSION_HEX >> 16);
#endif
}

/* Reads of the child's memory, as bpf_probe_read_user() will make them. */
static void rd(int mem, uint64_t addr, void *buf, size_t size)
{
	if (pread(mem, buf, size, (off_t)addr) != (ssize_t)size)
		fail_msg("cannot read %zu bytes at %#" PRIx64 " of the child: %s", size, addr,
			 strerror(errno));
}

static uint64_t rd64(int mem, uint64_t addr)
{
	uint64_t v;

	rd(mem, addr, &v, sizeof(v));
	return v;
}

static uint32_t rd32(int mem, uint64_t addr)
{
	uint32_t v;

	rd(mem, addr, &v, sizeof(v));
	return v;
}

static uint8_t rd8(int mem, uint64_t addr)
{
	uint8_t v;

	rd(mem, addr, &v, sizeof(v));
	return v;
}

/* A str's characters (at most max) into cp, through the table; its kind and ASCII flag. */
static size_t rd_str(int mem, const struct fl_py_offsets *o, uint64_t str, uint32_t *cp, size_t max,
		     unsigned *kind, bool *ascii)
{
	uint32_t st = rd32(mem, str + o->str_state);
	uint64_t len = rd64(mem, str + o->str_length), data;
	size_t i;

	assert_true(st >> o->state_compact_bit & 1);
	*kind = st >> o->state_kind_shift & 7;
	*ascii = st >> o->state_ascii_bit & 1;
	assert_true(*kind == 1 || *kind == 2 || *kind == 4);
	assert_true(len <= max);
	data = str + (*ascii ? o->str_ascii_data : o->str_compact_data);
	for (i = 0; i < len; i++) {
		cp[i] = 0;
		rd(mem, data + i * *kind, &cp[i], *kind); /* little-endian */
	}
	return (size_t)len;
}

/* An ASCII str's characters as a C string. */
static const char *rd_ascii(int mem, const struct fl_py_offsets *o, uint64_t str, char *buf,
			    size_t size)
{
	uint32_t cp[128];
	unsigned kind;
	bool ascii;
	size_t i, n = rd_str(mem, o, str, cp, ARRAY_SIZE(cp), &kind, &ascii);

	assert_true(ascii && kind == 1 && n < size);
	for (i = 0; i < n; i++)
		buf[i] = (char)cp[i];
	buf[n] = '\0';
	return buf;
}

/* The frame before f, past the C-stack shims (3.12+): 0 at the end of the chain. */
static uint64_t rd_previous(int mem, const struct fl_py_offsets *o, uint64_t f)
{
	uint64_t prev = rd64(mem, f + o->frame_previous);

	while (prev && o->owner_cstack != 0xff &&
	       rd8(mem, prev + o->frame_owner) == o->owner_cstack)
		prev = rd64(mem, prev + o->frame_previous);
	return prev;
}

/*
 * Whether f is an entry frame (the outermost of one run of the
 * interpreter's loop) as the program tells: its is_entry (3.11), or a
 * shim (owner_cstack) right before it.
 */
static bool rd_entry(int mem, const struct fl_py_offsets *o, uint64_t f)
{
	uint64_t prev;

	if (o->frame_is_entry != FL_PY_NONE)
		return rd8(mem, f + o->frame_is_entry);
	assert_int_not_equal(o->owner_cstack, 0xff);
	prev = rd64(mem, f + o->frame_previous);
	return prev && rd8(mem, prev + o->frame_owner) == o->owner_cstack;
}

/* The thread state's current frame, through its _PyCFrame (3.11, 3.12) or not (3.13). */
static uint64_t rd_frame(int mem, const struct fl_py_offsets *o, uint64_t ts)
{
	uint64_t cframe = ts;

	if (o->tstate_cframe != FL_PY_NONE)
		cframe = rd64(mem, ts + o->tstate_cframe);
	return cframe ? rd64(mem, cframe + o->tstate_frame) : 0;
}

/*
 * Follows the child's interpreters, threads and frames through the offsets
 * flamed has for it; false (and why) when it has none.
 */
static bool live_frames(struct pychild *c, char *why, size_t why_size)
{
	_cleanup_close_ int mem = -1;
	uint64_t runtime, interp, main_ts = 0, main_frame = 0, thr_frame = 0, main_interp = 0,
				  thr_interp = 0, code, f, cur = 0;
	struct fl_py_offsets o;
	struct fl_pyruntime r;
	char path[PATH_MAX], buf[128];
	uint32_t cp[128];
	unsigned kind, nr_interps = 0, i;
	static const uint32_t thread_run[] = {'T', 'h', 'r', 'e', 'a', 'd', '.', 'r', 'u', 'n'};
	bool ascii, saw_run = false;
	size_t n;

	probe_child(c, &r, &runtime, path);
	if (fl_pyruntime__offsets_of(&r, &o) == -EOPNOTSUPP) {
		snprintf(why, why_size, "%s is CPython %x, which flamed has no offsets for", path,
			 r.version);
		return false;
	}
	/* 3.13's come from the file: exactly then (pyruntime.h). */
	assert_int_equal(r.has_offsets, (r.version >> 16) == 0x030d);
	snprintf(buf, sizeof(buf), "/proc/%d/mem", (int)c->pid);
	mem = open(buf, O_RDONLY | O_CLOEXEC);
	if (mem < 0 && (errno == EACCES || errno == EPERM)) {
		snprintf(why, why_size, "cannot read the child's memory (ptrace access denied)");
		return false;
	}
	assert_true(mem >= 0);

	/* Every interpreter, every thread: the child's two threads, each with its frame. */
	interp = rd64(mem, runtime + o.runtime_interp_head);
	assert_int_not_equal(interp, 0);
	for (; interp && nr_interps < 16; interp = rd64(mem, interp + o.interp_next)) {
		uint64_t ts = rd64(mem, interp + o.interp_threads_head);
		unsigned nr_threads = 0;

		nr_interps++;
		for (; ts && nr_threads < 64; ts = rd64(mem, ts + o.tstate_next), nr_threads++) {
			uint64_t id = rd64(mem, ts + o.tstate_thread_id);
			uint64_t frame = rd_frame(mem, &o, ts);

			/* The subinterpreter's thread state is the main thread's too, with no frame. */
			if (!frame)
				continue;
			if (id == c->main_ident) {
				assert_int_equal(main_ts, 0);
				main_ts = ts;
				main_frame = frame;
				main_interp = interp;
			} else if (id == c->thread_ident) {
				assert_int_equal(thr_frame, 0);
				thr_frame = frame;
				thr_interp = interp;
			}
		}
		assert_true(nr_threads < 64);
	}
	assert_int_equal(interp, 0);
	assert_int_equal(nr_interps, 1 + c->sub);
	assert_int_not_equal(main_ts, 0);
	assert_int_not_equal(thr_frame, 0);
	assert_int_equal(main_interp, thr_interp);

	/*
	 * The main thread spins holding the GIL (the other sleeps): it is the
	 * current one, where the runtime says which (3.11; 3.12+ do not).
	 */
	for (i = 0; o.runtime_tstate_current != FL_PY_NONE && i < 40; i++) {
		cur = rd64(mem, runtime + o.runtime_tstate_current);
		if (cur == main_ts)
			break;
		usleep(50000);
	}
	if (o.runtime_tstate_current != FL_PY_NONE)
		assert_int_equal(cur, main_ts);

	/* The main thread is in <module> of "<string>" (-c), the interpreter's entry frame. */
	code = rd64(mem, main_frame + o.frame_code);
	assert_string_equal(rd_ascii(mem, &o, rd64(mem, code + o.code_qualname), buf, sizeof(buf)),
			    "<module>");
	assert_string_equal(rd_ascii(mem, &o, rd64(mem, code + o.code_filename), buf, sizeof(buf)),
			    "<string>");
	assert_int_equal(rd32(mem, code + o.code_firstlineno), 1);
	assert_true(rd_entry(mem, &o, main_frame));
	assert_int_equal(rd8(mem, main_frame + o.frame_owner), 0); /* FRAME_OWNED_BY_THREAD */
	assert_int_equal(rd_previous(mem, &o, main_frame), 0);

	/*
	 * The other thread sleeps in sleeper, which Thread.run called through
	 * CALL_FUNCTION_EX, a C call in 3.11: an entry frame (3.12 and later
	 * push a Python function's frame there too: none). run itself was called from Python (inlined: no
	 * entry), and the outermost frame (Thread._bootstrap, called by the
	 * thread's C start) is one again.
	 */
	code = rd64(mem, thr_frame + o.frame_code);
	n = rd_str(mem, &o, rd64(mem, code + o.code_qualname), cp, ARRAY_SIZE(cp), &kind, &ascii);
	assert_int_equal(n, ARRAY_SIZE(sleeper_name));
	assert_int_equal(kind, 2);
	assert_false(ascii);
	assert_memory_equal(cp, sleeper_name, sizeof(sleeper_name));
	assert_string_equal(rd_ascii(mem, &o, rd64(mem, code + o.code_filename), buf, sizeof(buf)),
			    "<string>");
	assert_int_equal(rd32(mem, code + o.code_firstlineno), SLEEPER_LINE);
	assert_int_equal(rd_entry(mem, &o, thr_frame), (r.version >> 16) < 0x030c);
	for (f = thr_frame, i = 0; i < 64; i++) {
		uint64_t prev = rd_previous(mem, &o, f);

		assert_int_equal(rd8(mem, f + o.frame_owner), 0);
		code = rd64(mem, f + o.frame_code);
		n = rd_str(mem, &o, rd64(mem, code + o.code_qualname), cp, ARRAY_SIZE(cp), &kind,
			   &ascii);
		if (ascii && n == ARRAY_SIZE(thread_run) &&
		    !memcmp(cp, thread_run, sizeof(thread_run))) {
			saw_run = true;
			assert_false(rd_entry(mem, &o, f));
			assert_non_null(strstr(rd_ascii(mem, &o, rd64(mem, code + o.code_filename),
							buf, sizeof(buf)),
					       "/threading.py"));
		}
		if (!prev)
			break;
		f = prev;
	}
	assert_true(i < 64);
	assert_true(saw_run);
	assert_true(rd_entry(mem, &o, f));
	return true;
}

static void test_live_frames(void **state)
{
	struct pychild *c = pychild_get(state);
	static char why[PATH_MAX + 128];

	if (!live_frames(c, why, sizeof(why)))
		skip_because(why);
}

/* --- hostile copies of the real file --------------------------------------------------- */

/* The child's CPython file, patched at off with size bytes of v, probed from a memfd. */
static int probe_patched(const unsigned char *img, size_t size, size_t off, uint64_t v,
			 size_t vsize)
{
	_cleanup_free_ unsigned char *copy = malloc(size);
	_cleanup_close_ int fd = -1;
	struct fl_pyruntime r;

	assert_non_null(copy);
	memcpy(copy, img, size);
	assert_true(off + vsize <= size);
	memcpy(copy + off, &v, vsize); /* little-endian, as the file */
	fd = memfd_with(copy, size);
	return fl_pyruntime__probe(fd, &r);
}

static void test_hostile_copies(void **state)
{
	struct pychild *c = pychild_get(state);
	_cleanup_free_ unsigned char *img = NULL;
	struct fl_pyruntime r;
	struct own_sym rt, ver;
	Elf64_Ehdr eh;
	Elf64_Shdr sec = {0};
	char path[PATH_MAX];
	uint64_t runtime;
	size_t size, at;
	int fd;

	probe_child(c, &r, &runtime, path);
	img = read_file(path, &size);
	assert_true(own_lookup_in(img, size, SHT_DYNSYM, "_PyRuntime", &rt));
	assert_true(own_lookup_in(img, size, SHT_DYNSYM, "Py_Version", &ver));
	memcpy(&eh, img, sizeof(eh));

	/* The copy as it is probes as the file does. */
	assert_int_equal(probe_patched(img, size, 0, eh.e_ident[0], 1), 0);

	/* Truncated: the section headers (at the end) are gone, or all but the ELF header is. */
	fd = memfd_with(img, 4096);
	assert_probe_fails(fd, -EPROTO);
	close(fd);
	fd = memfd_with(img, sizeof(Elf64_Ehdr));
	assert_probe_fails(fd, -EPROTO);
	close(fd);
	fd = memfd_with(img, 16);
	assert_probe_fails(fd, -EINVAL);
	close(fd);

	/* Py_Version outside its section, of a size no unsigned long has, not a version. */
	at = ver.entry + offsetof(Elf64_Sym, st_value);
	assert_int_equal(probe_patched(img, size, at, 0xffffffffffff0000, 8), -EPROTO);
	assert_int_equal(probe_patched(img, size, at, ver.value + 0x7fffffff, 8), -EPROTO);
	at = ver.entry + offsetof(Elf64_Sym, st_size);
	assert_int_equal(probe_patched(img, size, at, 3, 8), -EPROTO);
	assert_int_equal(probe_patched(img, size, at, 16, 8), -EPROTO);
	assert_int_equal(probe_patched(img, size, ver.data, 0x020700f0, 8), -EPROTO);
	assert_int_equal(probe_patched(img, size, ver.data, 0x030a0ff0, 8), -EPROTO);
	assert_int_equal(probe_patched(img, size, ver.data, 0x1030b07f0, 8), -EPROTO);
	/* A 3.12 still probes: that it has no table is fl_pyruntime__offsets()'s to say. */
	assert_int_equal(probe_patched(img, size, ver.data, 0x030c01f0, 8), 0);
	/* Py_Version's section claims file data past the end of the file (truncated under us). */
	at = eh.e_shoff;
	for (uint16_t k = 0; k < eh.e_shnum; k++) {
		memcpy(&sec, img + eh.e_shoff + k * sizeof(sec), sizeof(sec));
		if (sec.sh_type != SHT_NOBITS && sec.sh_addr && ver.value >= sec.sh_addr &&
		    ver.value < sec.sh_addr + sec.sh_size) {
			at = eh.e_shoff + k * sizeof(sec) + offsetof(Elf64_Shdr, sh_offset);
			break;
		}
	}
	assert_int_not_equal(at, eh.e_shoff);
	assert_int_equal(probe_patched(img, size, at, size - 4 - (ver.value - sec.sh_addr), 8),
			 -EPROTO);
	/* _PyRuntime outside every PT_LOAD, or undefined (when .dynsym has it, .symtab is not read). */
	at = rt.entry + offsetof(Elf64_Sym, st_value);
	assert_int_equal(probe_patched(img, size, at, 0xffffffff00000000, 8), -EPROTO);
	assert_int_equal(probe_patched(img, size, at, 0, 8), -EPROTO);
	/* The program headers out of the file. */
	assert_int_equal(probe_patched(img, size, offsetof(Elf64_Ehdr, e_phoff), size - 8, 8),
			 -EPROTO);
	/* Another machine's file: not the table's layouts. */
	assert_int_equal(probe_patched(img, size, offsetof(Elf64_Ehdr, e_machine), EM_S390, 2),
			 -ENOEXEC);
}

/* --- other versions, where installed ------------------------------------------------ */

/*
 * Whether path names an executable ELF file whose basename is name (not a
 * script, as pyenv's shims are, which may run another version or none).
 */
static bool is_python_at(const char *path, const char *name)
{
	const char *base = strrchr(path, '/');
	_cleanup_close_ int fd = -1;
	char magic[SELFMAG];

	base = base ? base + 1 : path;
	if (strcmp(base, name) || access(path, X_OK))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 && read(fd, magic, SELFMAG) == SELFMAG && !memcmp(magic, ELFMAG, SELFMAG);
}

/* Whether one of the colon-separated dir (or file, files true) entries of list holds name. */
static bool find_in_list(const char *list, const char *name, bool files, char *out, size_t size)
{
	char buf[4096];
	char *save = NULL, *e;

	if (!list || strlen(list) >= sizeof(buf))
		return false;
	strcpy(buf, list);
	for (e = strtok_r(buf, ":", &save); e; e = strtok_r(NULL, ":", &save)) {
		if (files)
			snprintf(out, size, "%s", e);
		else
			snprintf(out, size, "%s/%s", e, name);
		if (is_python_at(out, name))
			return true;
	}
	return false;
}

/*
 * A python3.<minor> to run: from FLAMED_TEST_PYTHONS (colon-separated
 * paths), PATH, pyenv's versions, /usr/bin, /usr/local/bin. false: none.
 */
static bool find_python(unsigned minor, char *out, size_t size)
{
	char name[32], pattern[128];
	glob_t g;
	bool found = false;

	snprintf(name, sizeof(name), "python3.%u", minor);
	if (find_in_list(getenv("FLAMED_TEST_PYTHONS"), name, true, out, size) ||
	    find_in_list(getenv("PATH"), name, false, out, size))
		return true;
	snprintf(pattern, sizeof(pattern), "/root/.pyenv/versions/3.%u.*/bin/%s", minor, name);
	if (!glob(pattern, 0, NULL, &g)) {
		for (size_t i = g.gl_pathc; i-- > 0 && !found;) {
			snprintf(out, size, "%s", g.gl_pathv[i]);
			found = is_python_at(out, name);
		}
		globfree(&g);
		if (found)
			return true;
	}
	return find_in_list("/usr/bin:/usr/local/bin", name, false, out, size);
}

static struct pychild other;

static int other_stop(void **state)
{
	(void)state;
	pychild_kill(&other);
	return 0;
}

/* Offsets inside 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h). */
#define DBG_VERSION 8
#define DBG_FREE_THREADED 16
#define DBG_INTERP_NEXT (48 + 2 * 8)
#define DBG_FRAME_OWNER (224 + 5 * 8)
#define DBG_CODE_QUALNAME (272 + 3 * 8)
#define DBG_UNICODE_ASCII_SIZE (536 + 3 * 8)

/* 3.13's debug offsets, damaged in copies of its file: each copy refused. */
static void hostile_debug_offsets(struct pychild *c)
{
	_cleanup_free_ unsigned char *img = NULL;
	struct fl_pyruntime r;
	struct own_sym rt;
	char path[PATH_MAX];
	uint64_t runtime;
	size_t size;

	probe_child(c, &r, &runtime, path);
	img = read_file(path, &size);
	assert_true(own_lookup(img, size, "_PyRuntime", &rt));
	assert_memory_equal(img + rt.data, "xdebugpy", 8);
	/* The copy as it is probes, with the file's offsets. */
	assert_int_equal(probe_patched(img, size, rt.data, 'x', 1), 0);
	assert_int_equal(probe_patched(img, size, rt.data, 'y', 1), -EPROTO);
	assert_int_equal(probe_patched(img, size, rt.data + DBG_VERSION, r.version + 0x100, 8),
			 -EPROTO);
	assert_int_equal(probe_patched(img, size, rt.data + DBG_FREE_THREADED, 1, 8), -EPROTO);
	/* Fields out of their structures, of __u16, or of what the program reads. */
	assert_int_equal(probe_patched(img, size, rt.data + DBG_INTERP_NEXT, 1ull << 40, 8),
			 -EPROTO);
	assert_int_equal(probe_patched(img, size, rt.data + DBG_INTERP_NEXT, FL_PY_NONE, 8),
			 -EPROTO);
	assert_int_equal(probe_patched(img, size, rt.data + DBG_FRAME_OWNER, 72, 8), -EPROTO);
	assert_int_equal(probe_patched(img, size, rt.data + DBG_CODE_QUALNAME, 185, 8), -EPROTO);
	assert_int_equal(
		probe_patched(img, size, rt.data + DBG_UNICODE_ASCII_SIZE, UINT64_MAX - 8, 8),
		-EPROTO);
	/* Not a final 3.13 (Py_Version and the debug offsets agree): not read, no offsets. */
	{
		_cleanup_free_ unsigned char *copy = malloc(size);
		_cleanup_close_ int fd = -1;
		struct own_sym ver;
		uint64_t v = 0x030e00f0;
		struct fl_py_offsets off;

		assert_non_null(copy);
		memcpy(copy, img, size);
		assert_true(own_lookup(img, size, "Py_Version", &ver));
		memcpy(copy + ver.data, &v, 8);
		memcpy(copy + rt.data + DBG_VERSION, &v, 8);
		fd = memfd_with(copy, size);
		assert_int_equal(fl_pyruntime__probe(fd, &r), 0);
		assert_false(r.has_offsets);
		assert_int_equal(fl_pyruntime__offsets_of(&r, &off), -EOPNOTSUPP);
	}
}

/* The live check of a python3.<minor> where one is installed; a line saying so where not. */
static void live_other(unsigned minor)
{
	char python[PATH_MAX], why[PATH_MAX + 128];

	if (!find_python(minor, python, sizeof(python))) {
		printf("3.%u not present here: its live check skipped\n", minor);
		return;
	}
	assert_int_equal(pychild_run(&other, python), 0);
	if (other.hexversion >> 16 != (0x0300u | minor)) {
		printf("%s is not 3.%u (%#x): its live check skipped\n", python, minor,
		       other.hexversion);
		return;
	}
	if (!live_frames(&other, why, sizeof(why))) {
		printf("3.%u live check skipped: %s\n", minor, why);
		return;
	}
	if (minor == 13)
		hostile_debug_offsets(&other);
	printf("3.%u live check done with %s\n", minor, python);
}

static void test_live_312(void **state)
{
	(void)state;
	live_other(12);
}

static void test_live_313(void **state)
{
	(void)state;
	live_other(13);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offsets_match_headers),
		cmocka_unit_test(test_offsets_versions),
		cmocka_unit_test(test_candidate),
		cmocka_unit_test(test_address),
		cmocka_unit_test(test_not_python),
		cmocka_unit_test_setup_teardown(test_probe_live, pychild_start, pychild_stop),
		cmocka_unit_test_setup_teardown(test_live_frames, pychild_start, pychild_stop),
		cmocka_unit_test_setup_teardown(test_hostile_copies, pychild_start, pychild_stop),
		cmocka_unit_test_teardown(test_live_312, other_stop),
		cmocka_unit_test_teardown(test_live_313, other_stop),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);

	if (!failed && skip_reason) {
		printf("test_pyruntime: skipped: %s\n", skip_reason);
		return 77;
	}
	return failed;
}
