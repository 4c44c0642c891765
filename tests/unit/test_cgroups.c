// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests for lib/sampling/cgroups.c: service names, path resolution, the id cache, the root frame. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "flamed/formats/folded.h"
#include "flamed/profile/fold.h"
#include "flamed/profile/profile.h"
#include "flamed/sampling/cgroups.h"
#include "flamed/symbols/symbolizer.h"

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void expect_name(const char *path, const char *want)
{
	char buf[FL_CGROUP_NAME_MAX];
	size_t n = fl_cgroup__service_name(path, buf, sizeof(buf));

	assert_string_equal(buf, want);
	assert_int_equal(n, strlen(want));
}

static void test_units(void **state)
{
	(void)state;
	expect_name("/system.slice/nginx.service", "nginx.service");
	expect_name("system.slice/nginx.service/", "nginx.service");
	expect_name("/user.slice/user-1000.slice/session-2.scope", "session-2.scope");
	expect_name("/user.slice/user-1000.slice", "user-1000.slice");
	expect_name("/system.slice/sshd.socket", "sshd.socket");
	expect_name("/system.slice", "system.slice");
}

static void test_root_and_others(void **state)
{
	(void)state;
	expect_name("", "/");
	expect_name("/", "/");
	expect_name(NULL, "/");
	expect_name("/machine/qemu-1", "machine/qemu-1");
	expect_name("a//b", "a//b");
	/* A unit's suffix alone is not enough to be in the middle of a name. */
	expect_name("/x/nginx.servicex", "x/nginx.servicex");
}

static void test_containers(void **state)
{
	(void)state;
	expect_name("/system.slice/docker-" HEX64 ".scope", "docker-0123456789ab");
	expect_name("/docker/" HEX64, "docker-0123456789ab");
	expect_name("/system.slice/docker//" HEX64, "docker-0123456789ab");
	expect_name("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/"
		    "cri-containerd-" HEX64 ".scope",
		    "containerd-0123456789ab");
	expect_name("/machine.slice/libpod-" HEX64 ".scope", "podman-0123456789ab");
	/* Not container ids: kept as units, or as paths. */
	expect_name("/system.slice/docker-abc.scope", "docker-abc.scope");
	expect_name("/system.slice/docker-" HEX64 "0.scope", "docker-" HEX64 "0.scope");
	expect_name("/system.slice/libpod-XYZ0123456789abc.scope", "libpod-XYZ0123456789abc.scope");
	expect_name("/docker/" HEX64 "/inner", "docker/" HEX64 "/inner");
	expect_name("/docker/0123", "docker/0123");
	/* The engine scope takes any id length from 12 hex digits. */
	expect_name("/cri-containerd-0123456789abcdef.scope", "containerd-0123456789ab");
}

/* Names others choose: nothing a folded line or XML cannot carry, and bounded. */
static void test_hostile_names(void **state)
{
	char long_path[600], buf[FL_CGROUP_NAME_MAX], small[8];
	size_t n;

	(void)state;
	expect_name("/user.slice/a;b c\n\t\x7f\xff.scope", "a_b_c____.scope");
	expect_name("/evil/x;y", "evil/x_y");
	memset(long_path, 'z', sizeof(long_path) - 1);
	long_path[sizeof(long_path) - 1] = '\0';
	memcpy(long_path + sizeof(long_path) - 9, ".service", 8);
	n = fl_cgroup__service_name(long_path, buf, sizeof(buf));
	assert_int_equal(n, sizeof(buf) - 1);
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
	assert_memory_equal(buf, "...", 3);
	assert_string_equal(buf + n - 8, ".service");
	n = fl_cgroup__service_name("/system.slice/nginx.service", small, sizeof(small));
	assert_string_equal(small, "...vice");
	assert_int_equal(n, 7);
	assert_int_equal(fl_cgroup__service_name("/x", small, 4), 0);
}

/* A directory tree standing in for the cgroup mount (ids are inode numbers there too). */
struct tree {
	char root[64];
};

static void mkdirs(struct tree *t, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", t->root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static uint64_t ino_of(struct tree *t, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", t->root, rel);
	assert_int_equal(lstat(path, &st), 0);
	return (uint64_t)st.st_ino;
}

static int tree_setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	char path[PATH_MAX];

	assert_non_null(t);
	snprintf(t->root, sizeof(t->root), "/tmp/flamed-cgtest.XXXXXX");
	assert_non_null(mkdtemp(t->root));
	mkdirs(t, "system.slice");
	mkdirs(t, "system.slice/nginx.service");
	mkdirs(t, "system.slice/nginx.service/worker");
	mkdirs(t, "user.slice");
	mkdirs(t, "other");
	/* A symlink to a directory outside: never followed. */
	snprintf(path, sizeof(path), "%s/link.service", t->root);
	assert_int_equal(symlink("/etc", path), 0);
	*state = t;
	return 0;
}

static int tree_teardown(void **state)
{
	struct tree *t = *state;
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->root);
	assert_int_equal(system(cmd), 0);
	free(t);
	return 0;
}

static void test_resolve(void **state)
{
	struct tree *t = *state;
	struct fl_cgroup_target tg;
	char abs[PATH_MAX];

	assert_int_equal(fl_cgroup__resolve(t->root, "system.slice/nginx.service", &tg), 0);
	assert_int_equal(tg.id, ino_of(t, "system.slice/nginx.service"));
	assert_int_equal(tg.level, 2);
	/* As /proc/PID/cgroup writes it, and absolute under the mount. */
	assert_int_equal(fl_cgroup__resolve(t->root, "/system.slice/./nginx.service/", &tg), 0);
	assert_int_equal(tg.level, 2);
	snprintf(abs, sizeof(abs), "%s/system.slice", t->root);
	assert_int_equal(fl_cgroup__resolve(t->root, abs, &tg), 0);
	assert_int_equal(tg.id, ino_of(t, "system.slice"));
	assert_int_equal(tg.level, 1);
	assert_int_equal(fl_cgroup__resolve(t->root, t->root, &tg), 0);
	assert_int_equal(tg.level, 0);
	assert_int_equal(fl_cgroup__resolve(t->root, "/", &tg), 0);
	assert_int_equal(tg.level, 0);

	assert_int_equal(fl_cgroup__resolve(t->root, "nope.service", &tg), -ENOENT);
	assert_int_equal(fl_cgroup__resolve(t->root, "system.slice/../other", &tg), -EINVAL);
	assert_int_equal(fl_cgroup__resolve(t->root, "link.service", &tg), -ENOTDIR);
	assert_int_equal(fl_cgroup__resolve(t->root, "/sys/fs/cgroup/cpu", &tg), -EXDEV);
}

static void test_cache(void **state)
{
	struct tree *t = *state;
	struct fl_cgroups_opts o = {.sz = sizeof(o), .root = t->root};
	struct fl_cgroups *c = NULL;
	struct fl_cgroup_target tg[2];
	uint64_t walks, worker, late;
	size_t known;
	char name[64];

	assert_int_equal(fl_cgroups__new(&o, &c), 0);
	fl_cgroups__stats(c, &walks, &known);
	assert_int_equal(walks, 1);
	assert_int_equal(known, 6); /* the root and five directories, not the symlink */
	assert_string_equal(fl_cgroups__name(c, ino_of(t, "")), "/");
	assert_string_equal(fl_cgroups__name(c, ino_of(t, "system.slice/nginx.service")),
			    "nginx.service");
	worker = ino_of(t, "system.slice/nginx.service/worker");
	assert_string_equal(fl_cgroups__name(c, worker), "system.slice/nginx.service/worker");
	assert_string_equal(fl_cgroups__name(c, ino_of(t, "other")), "other");

	/* Ancestry, for the ring backend's --cgroup. */
	assert_int_equal(fl_cgroup__resolve(t->root, "system.slice/nginx.service", &tg[0]), 0);
	assert_int_equal(fl_cgroup__resolve(t->root, "user.slice", &tg[1]), 0);
	assert_int_equal(fl_cgroups__under(c, worker, tg, 2), 1);
	assert_int_equal(fl_cgroups__under(c, tg[0].id, tg, 1), 1);
	assert_int_equal(fl_cgroups__under(c, ino_of(t, "user.slice"), tg, 2), 1);
	assert_int_equal(fl_cgroups__under(c, ino_of(t, "user.slice"), tg, 1), 0);
	assert_int_equal(fl_cgroups__under(c, ino_of(t, "system.slice"), tg, 2), 0);
	assert_int_equal(fl_cgroups__under(c, ino_of(t, ""), tg, 2), 0);

	/* A cgroup made after the walk is found by the next one (at most every 100 ms). */
	mkdirs(t, "late.scope");
	late = ino_of(t, "late.scope");
	usleep(120 * 1000);
	assert_string_equal(fl_cgroups__name(c, late), "late.scope");
	fl_cgroups__stats(c, &walks, &known);
	assert_int_equal(walks, 2);

	/* An id never seen: named by number, walked for once, then remembered as gone. */
	usleep(120 * 1000);
	snprintf(name, sizeof(name), "[cgroup %" PRIu64 "]", (uint64_t)987654321987ULL);
	assert_string_equal(fl_cgroups__name(c, 987654321987ULL), name);
	assert_string_equal(fl_cgroups__name(c, 987654321987ULL), name);
	usleep(120 * 1000);
	assert_int_equal(fl_cgroups__under(c, 987654321987ULL, tg, 2), 0);
	fl_cgroups__stats(c, &walks, &known);
	assert_int_equal(walks, 3);
	fl_cgroups__free(c);

	/* A cap on cgroups remembered: the others are unnamed, never a failure. */
	o.max_cgroups = 2;
	assert_int_equal(fl_cgroups__new(&o, &c), 0);
	fl_cgroups__stats(c, &walks, &known);
	assert_int_equal(known, 2);
	fl_cgroups__free(c);
	fl_cgroups__free(NULL);
}

/* The fold's root frames with per_cgroup: the service, then the comm (";" made safe by the profile). */
static const char *fake_name(void *ctx, uint64_t id)
{
	(void)ctx;
	return id == 7 ? "nginx.service" : id == 8 ? "bad;name here" : NULL;
}

static void test_fold_root(void **state)
{
	struct fl_symbolizer_opts so = {.sz = sizeof(so),
					.kallsyms_path = FIXTURE_SRC_DIR "/data/kallsyms.fold"};
	struct fl_symbolizer *sym = NULL;
	struct fl_profile *prof = NULL;
	struct fl_fold *fold = NULL;
	struct fl_raw_stack st = {.pid = 42, .comm = "nginx", .kerr = -ENOENT, .uerr = -ENOENT};
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(fl_symbolizer__new(&so, &sym), 0);
	assert_int_equal(fl_profile__new(&prof), 0);
	struct fl_fold_opts fo = {.sz = sizeof(fo),
				  .symbolizer = sym,
				  .profile = prof,
				  .per_process = true,
				  .per_cgroup = true,
				  .cgroup_name = fake_name};
	assert_int_equal(fl_fold__new(&fo, &fold), 0);
	st.cgroup_id = 7;
	st.count = 3;
	assert_int_equal(fl_fold__add(fold, &st), 0);
	st.cgroup_id = 8;
	st.count = 2;
	assert_int_equal(fl_fold__add(fold, &st), 0);
	st.cgroup_id = 9;
	st.count = 1;
	assert_int_equal(fl_fold__add(fold, &st), 0);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(fl_folded__write(prof, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "nginx.service;nginx-42 3\n"));
	assert_non_null(strstr(buf, "bad:name here;nginx-42 2\n"));
	assert_non_null(strstr(buf, "[cgroup 9];nginx-42 1\n"));
	free(buf);
	fl_fold__free(fold);
	fl_profile__free(prof);
	fl_symbolizer__free(sym);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_root_and_others),
		cmocka_unit_test(test_containers),
		cmocka_unit_test(test_hostile_names),
		cmocka_unit_test_setup_teardown(test_resolve, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_cache, tree_setup, tree_teardown),
		cmocka_unit_test(test_fold_root),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
