// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tests for the Python frames of lib/profile/fold.c: where they go among the
 * native frames, their names (hostile ones too), pprof. The native frames
 * are this program's own functions, one of them named as CPython's loop,
 * found through a tracker of this process (perf events: root, else 77).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "flamed/formats/folded.h"
#include "flamed/profile/fold.h"
#include "flamed/profile/profile.h"
#include "flamed/python_abi.h"
#include "flamed/sampling/sampler.h"
#include "flamed/sampling/tracker.h"
#include "flamed/symbols/symbolizer.h"

/* The interpreter loop's native frame, and two other native functions. */
__attribute__((noinline, used)) int py_eval_loop(int x) __asm__("_PyEval_EvalFrameDefault");
__attribute__((noinline, used)) int py_eval_loop(int x)
{
	return x * 5 + 3;
}

__attribute__((noinline, used)) int fold_py_glue(int x);
__attribute__((noinline, used)) int fold_py_glue(int x)
{
	return x * 7 + 1;
}

__attribute__((noinline, used)) int fold_py_outer(int x);
__attribute__((noinline, used)) int fold_py_outer(int x)
{
	return x * 11 + 2;
}

#define EVAL ((uint64_t)(uintptr_t)&py_eval_loop + 2)
#define GLUE ((uint64_t)(uintptr_t)&fold_py_glue + 2)
#define OUTER ((uint64_t)(uintptr_t)&fold_py_outer + 2)

/* Code objects: addresses with a fingerprint in the top bits. */
#define CODE(n) (0x7f0000001000ULL + (uint64_t)(n) * 0x100)
#define FP(code, fp) ((code) | (uint64_t)(fp) << 48)

static struct fl_tracker *tracker;
static struct fl_symbolizer *sym;
static uint32_t self;

struct env {
	struct fl_profile *prof;
	struct fl_fold *fold;
	struct fl_pprof *pprof;
	unsigned calls; /* of py_code() */
};

static void put_ascii(char *dst, uint16_t *len, uint8_t *kind, const char *s)
{
	*len = (uint16_t)strlen(s);
	*kind = 1;
	memcpy(dst, s, *len);
}

/* The names the program would have read: by code object and fingerprint. */
static int py_code(void *ctx, uint32_t pid, uint64_t code, struct fl_py_code *out)
{
	struct env *e = ctx;
	static const char *const names[] = {"<module>", "main", "Worker.run", "leaf"};

	e->calls++;
	if (pid != self)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < 4; i++) {
		if (code != CODE(i))
			continue;
		put_ascii(out->name, &out->name_len, &out->name_kind, names[i]);
		put_ascii(out->file, &out->file_len, &out->file_kind, "/srv/app.py");
		out->firstlineno = 10 * (i + 1);
		return 0;
	}
	if (code == FP(CODE(3), 0xbeef)) {
		/* The same address later: another code object. */
		put_ascii(out->name, &out->name_len, &out->name_kind, "other");
		put_ascii(out->file, &out->file_len, &out->file_kind, "/srv/b.py");
		out->firstlineno = 7;
		return 0;
	}
	if (code == CODE(8)) {
		/* Hostile: UCS-2 with a frame separator, a newline, a lone surrogate, an accent. */
		static const uint16_t ucs2[] = {'a', ';', '\n', 0xd800, 0xe9, 'z'};

		memcpy(out->name, ucs2, sizeof(ucs2));
		out->name_len = sizeof(ucs2);
		out->name_kind = 2;
		/* UCS-4: a code point past U+10FFFF, and U+1F600. */
		static const uint32_t ucs4[] = {'f', 0x110000, 0x1f600};

		memcpy(out->file, ucs4, sizeof(ucs4));
		out->file_len = sizeof(ucs4);
		out->file_kind = 4;
		out->firstlineno = 1;
		return 0;
	}
	if (code == CODE(9)) {
		/* Cut names: a long name keeps its start, a long path its end. */
		put_ascii(out->name, &out->name_len, &out->name_kind, "very_long_name");
		out->name_cut = 1;
		put_ascii(out->file, &out->file_len, &out->file_kind, "pkg/mod.py");
		out->file_cut = 1;
		out->firstlineno = 5;
		return 0;
	}
	if (code == CODE(10)) {
		out->name_len = FL_PY_NAME_LEN + 1;
		out->name_kind = 1;
		return 0;
	}
	return -ENOENT;
}

static int setup(void **state)
{
	int pid = getpid();
	struct fl_tracker_opts to = {.sz = sizeof(to), .pids = &pid, .nr_pids = 1};
	struct fl_symbolizer_opts so = {.sz = sizeof(so), .no_kernel = true};
	int err;

	(void)state;
	self = (uint32_t)pid;
	err = fl_tracker__new(&to, &tracker);
	if (err == -EACCES || err == -EPERM || err == -ENOSYS || err == -ENOENT) {
		fprintf(stderr, "SKIP: perf events unavailable (%s): run as root\n",
			strerror(-err));
		exit(77);
	}
	assert_int_equal(err, 0);
	assert_int_equal(fl_tracker__start(tracker), 0);
	so.tracker = tracker;
	assert_int_equal(fl_symbolizer__new(&so, &sym), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fl_symbolizer__free(sym);
	fl_tracker__free(tracker);
	return 0;
}

static struct env *env_new(bool with_names)
{
	struct env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	assert_int_equal(fl_profile__new(&e->prof), 0);
	struct fl_fold_opts fo = {.sz = sizeof(fo),
				  .symbolizer = sym,
				  .tracker = tracker,
				  .profile = e->prof,
				  .py_code = with_names ? py_code : NULL,
				  .py_ctx = e};
	assert_int_equal(fl_fold__new(&fo, &e->fold), 0);
	return e;
}

static void env_free(struct env *e)
{
	fl_fold__free(e->fold);
	fl_profile__free(e->prof);
	free(e);
}

static char *folded(struct env *e)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fl_folded__write(e->prof, f), 0);
	fclose(f);
	return buf;
}

static void add(struct env *e, const uint64_t *uips, size_t nu, const uint64_t *py, size_t np)
{
	struct fl_raw_stack st = {.pid = self,
				  .comm = "python3",
				  .uips = uips,
				  .nr_uips = nu,
				  .pyips = py,
				  .nr_pyips = np,
				  .kerr = -ENOENT,
				  .count = 2};

	assert_int_equal(fl_fold__add(e->fold, &st), 0);
}

#define F(name, line) name " (/srv/app.py:" #line ")_[p]"

/*
 * Two runs of the loop: each loop frame is replaced by its run's Python
 * frames, outermost first; the native frames between them stay.
 */
static void test_each_loop_frame_its_run(void **state)
{
	struct env *e = env_new(true);
	/* Leaf first: the inner loop, glue, the outer loop, the outermost function. */
	uint64_t uips[] = {EVAL, GLUE, EVAL, OUTER};
	/* Leaf first: the inner run (leaf, Worker.run), the outer run (main, <module>). */
	uint64_t py[] = {CODE(3), CODE(2) | FL_PY_ENTRY, CODE(1), CODE(0) | FL_PY_ENTRY};
	struct fl_fold_stats fs;
	char *out;

	(void)state;
	add(e, uips, 4, py, 4);
	out = folded(e);
	assert_string_equal(out, "python3;fold_py_outer;" F("<module>", 10) ";" F("main", 20)
				 ";fold_py_glue;" F("Worker.run", 30) ";" F("leaf", 40) " 2\n");
	fl_fold__stats(e->fold, &fs);
	assert_int_equal(fs.frames, 2 * 6);
	assert_int_equal(fs.unsymbolized, 0);
	free(out);
	/* Named once per code object, whatever the samples. */
	add(e, uips, 4, py, 4);
	assert_int_equal(e->calls, 4);
	env_free(e);
}

/*
 * Native stacks are cut at their outer end: runs without their loop frame
 * go with the outermost loop frame left, or before every native frame when
 * there is none; a loop frame without a run keeps its name.
 */
static void test_runs_and_loop_frames_that_do_not_pair(void **state)
{
	struct env *e = env_new(true);
	uint64_t one_eval[] = {GLUE, EVAL};
	uint64_t no_eval[] = {GLUE, OUTER};
	uint64_t two_evals[] = {EVAL, GLUE, EVAL};
	uint64_t py3[] = {CODE(3) | FL_PY_ENTRY, CODE(2) | FL_PY_ENTRY, CODE(1), CODE(0)};
	uint64_t py1[] = {CODE(3) | FL_PY_ENTRY};
	char *out;

	(void)state;
	add(e, one_eval, 2, py3, 4);
	add(e, no_eval, 2, py1, 1);
	add(e, two_evals, 3, py1, 1);
	out = folded(e);
	assert_non_null(strstr(out, "python3;" F("<module>", 10) ";" F("main", 20) ";" F(
					    "Worker.run", 30) ";" F("leaf", 40) ";fold_py_glue 2\n"));
	assert_non_null(
		strstr(out, "python3;" F("leaf", 40) ";fold_py_outer;fold_py_glue 2\n"));
	assert_non_null(strstr(out, "python3;_PyEval_EvalFrameDefault;fold_py_glue;" F("leaf", 40)
					    " 2\n"));
	free(out);
	env_free(e);
}

/* Without Python frames, or without names, nothing else changes; unnamed code says so. */
static void test_no_frames_and_no_names(void **state)
{
	struct env *e = env_new(false);
	uint64_t uips[] = {EVAL, OUTER};
	uint64_t py[] = {CODE(3) | FL_PY_ENTRY};
	struct fl_fold_stats fs;
	char *out;

	(void)state;
	add(e, uips, 2, NULL, 0);
	add(e, uips, 2, py, 1);
	out = folded(e);
	assert_non_null(strstr(out, "python3;fold_py_outer;_PyEval_EvalFrameDefault 2\n"));
	assert_non_null(strstr(out, "python3;fold_py_outer;[python code]_[p] 2\n"));
	fl_fold__stats(e->fold, &fs);
	assert_int_equal(fs.unsymbolized, 2);
	free(out);
	env_free(e);
}

/* A code object made at a freed one's address is another frame (its fingerprint). */
static void test_fingerprint_is_another_frame(void **state)
{
	struct env *e = env_new(true);
	uint64_t uips[] = {EVAL, OUTER};
	uint64_t a[] = {CODE(3) | FL_PY_ENTRY}, b[] = {FP(CODE(3), 0xbeef) | FL_PY_ENTRY};
	char *out;

	(void)state;
	add(e, uips, 2, a, 1);
	add(e, uips, 2, b, 1);
	out = folded(e);
	assert_non_null(strstr(out, "python3;fold_py_outer;" F("leaf", 40) " 2\n"));
	assert_non_null(strstr(out, "python3;fold_py_outer;other (/srv/b.py:7)_[p] 2\n"));
	free(out);
	env_free(e);
}

/*
 * The frame cache grows (a new table) while a stack's Python frames are
 * being added: the native frames of that stack, looked up before, must not
 * be read from the old table. Stacks of 100 new code objects each cross
 * the first growth (at 2048 entries) in the middle of one.
 */
static void test_cache_grows_among_python_frames(void **state)
{
	struct env *e = env_new(false);
	uint64_t uips[] = {EVAL, OUTER};
	uint64_t py[100];
	struct fl_fold_stats fs;
	char *out, *line;

	(void)state;
	for (unsigned k = 0; k < 30; k++) {
		for (unsigned i = 0; i < 100; i++)
			py[i] = CODE(1000 + k * 100 + i) | (i == 99 ? FL_PY_ENTRY : 0);
		add(e, uips, 2, py, 100);
	}
	fl_fold__stats(e->fold, &fs);
	assert_int_equal(fs.frames, 30 * 2 * 101);
	out = folded(e);
	/* One line: the outer function, then the run's 100 unnamed frames, 60 samples. */
	line = strstr(out, "python3;fold_py_outer;[python code]_[p];");
	assert_non_null(line);
	assert_ptr_equal(line, out);
	assert_non_null(strstr(out, "[python code]_[p] 60\n"));
	assert_int_equal(strchr(out, '\n')[1], '\0'); /* one line */
	free(out);
	env_free(e);
}

/* Names are the process's: any character becomes UTF-8 or U+FFFD, nothing splits a frame. */
static void test_hostile_and_cut_names(void **state)
{
	struct env *e = env_new(true);
	uint64_t uips[] = {EVAL, OUTER};
	uint64_t h[] = {CODE(8) | FL_PY_ENTRY}, c[] = {CODE(9) | FL_PY_ENTRY};
	uint64_t bad[] = {CODE(10) | FL_PY_ENTRY};
	char *out;

	(void)state;
	add(e, uips, 2, h, 1);
	add(e, uips, 2, c, 1);
	add(e, uips, 2, bad, 1);
	out = folded(e);
	/* ';' is made safe by the profile (as for any name); the rest by the fold. */
	assert_non_null(strstr(out, "python3;fold_py_outer;a:\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9z "
				    "(f\xef\xbf\xbd\xf0\x9f\x98\x80:1)_[p] 2\n"));
	assert_non_null(
		strstr(out, "python3;fold_py_outer;very_long_name... (...pkg/mod.py:5)_[p] 2\n"));
	/* A length past its room is not believed. */
	assert_non_null(strstr(out, "python3;fold_py_outer;[python code]_[p] 2\n"));
	free(out);
	env_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_loop_frame_its_run),
		cmocka_unit_test(test_runs_and_loop_frames_that_do_not_pair),
		cmocka_unit_test(test_no_frames_and_no_names),
		cmocka_unit_test(test_fingerprint_is_another_frame),
		cmocka_unit_test(test_cache_grows_among_python_frames),
		cmocka_unit_test(test_hostile_and_cut_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
