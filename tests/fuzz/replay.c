// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Replays inputs through a fuzz target without libFuzzer: each file given,
 * and each regular file of each directory given (in name order), is passed
 * once to LLVMFuzzerTestOneInput(). For ctest, which replays the checked-in
 * corpora in every build. A bug aborts (FUZZ_CHECK, a sanitizer); inputs
 * that cannot be read, or no inputs at all, exit 1.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Reads the regular file at path whole into *buf (malloc'd, at least 1 byte). */
static int read_all(const char *path, uint8_t **buf, size_t *len)
{
	struct stat st;
	uint8_t *b;
	size_t have = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	b = malloc((size_t)st.st_size + 1);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	while (have < (size_t)st.st_size) {
		ssize_t n = read(fd, b + have, (size_t)st.st_size - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	close(fd);
	*buf = b;
	*len = have;
	return 0;
}

static int run_file(const char *path)
{
	uint8_t *buf;
	size_t len;
	int err = read_all(path, &buf, &len);

	if (err) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(-err));
		return err;
	}
	/* Named before it runs: a crash leaves the culprit as the last line. */
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int not_dot(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Returns how many files ran, or -errno. */
static int run_dir(const char *dir)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, not_dot, by_name), ran = 0, err = 0;

	if (n < 0) {
		err = -errno;
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return err;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		if (!err) {
			err = run_file(path);
			ran++;
		}
		free(ents[i]);
	}
	free(ents);
	return err ? err : ran;
}

int main(int argc, char **argv)
{
	int total = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;
		int r;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (S_ISDIR(st.st_mode))
			r = run_dir(argv[i]);
		else
			r = run_file(argv[i]) ? -1 : 1;
		if (r < 0)
			return 1;
		total += r;
	}
	if (!total) {
		fprintf(stderr, "replay: no inputs in %s...\n", argv[1]);
		return 1;
	}
	fprintf(stderr, "replay: %d inputs, no crash\n", total);
	return 0;
}
