// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Measurement tool (not part of the build) of tests/bench/symbolize_vs_perf.sh:
 * how fast libflamed's symbolizer names a set of distinct user addresses of
 * one live process, from cold caches.
 *
 *   symbolize_bench [-i] [-b BATCH] [-w PASSES] [-t SECONDS] [-d DIFFS] FILE
 *
 * FILE: a first line "pid PID", then one address per line: "HEX\tDSO\tNAME",
 * the address in PID's address space, then the module and the name perf
 * gave it ("[unknown]": none), to compare with.
 *
 * A tracker is made for PID (its /proc/PID/maps scanned: the process must
 * still run), then a symbolizer (kernel symbols off; -i: inlined functions
 * from DWARF too), and every address goes through fl_symbolizer__user() in
 * batches of BATCH (default 127), each name then demangled as flamed shows
 * it (fl_demangle(), inlined functions' names too; once per name, as
 * flamed's fold caches the frame of a name): the cold pass, timed
 * from the symbolizer's creation to the last name. PASSES warm passes
 * (default 1) do it again with the same symbolizer. -t: the cold pass stops
 * after SECONDS of CPU (checked after each batch; "cold_done" says how many
 * addresses it named) and no warm pass runs. -d: the first DIFFS addresses
 * that perf and flamed name differently (or that only perf names), on stderr.
 *
 * With -i, a batch's inlined frames (fl_sym.inl) are only readable for its
 * last address (they point into the symbolizer's scratch, overwritten by
 * the next address): use -b 1 to demangle them all.
 *
 * Prints "key value" lines: times in seconds (CPU: user + system of this
 * process, CLOCK_PROCESS_CPUTIME_ID), memory in KiB, counts.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flamed/symbols/demangle.h"
#include "flamed/symbols/srcinfo.h"
#include "flamed/symbols/symbolizer.h"
#include "flamed/sampling/tracker.h"

#define MAX_MODULES 64

struct addr {
	uint64_t ip;
	char *dso;  /* perf's module basename */
	char *name; /* perf's name, NULL for [unknown] */
};

struct module_count {
	char name[128];
	uint64_t n, ok, inl;
};

static void die(const char *what, int err)
{
	fprintf(stderr, "symbolize_bench: %s%s%s\n", what, err ? ": " : "", err ? strerror(-err) : "");
	exit(1);
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A "VmXXX:" line of /proc/self/status, in KiB. */
static long status_kb(const char *key)
{
	char line[256];
	size_t len = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ':') {
			v = strtol(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static struct addr *read_input(const char *path, int *pid, size_t *n)
{
	char *line = NULL;
	size_t cap = 0, nr = 0, alloc = 0;
	struct addr *a = NULL;
	FILE *f = fopen(path, "r");

	if (!f)
		die(path, -errno);
	if (getline(&line, &cap, f) < 0 || sscanf(line, "pid %d", pid) != 1)
		die("the first line must be \"pid PID\"", 0);
	while (getline(&line, &cap, f) > 0) {
		char *dso, *name, *end;

		line[strcspn(line, "\n")] = 0;
		dso = strchr(line, '\t');
		name = dso ? strchr(dso + 1, '\t') : NULL;
		if (!name)
			die("lines must be \"HEX\\tDSO\\tNAME\"", 0);
		*dso++ = 0;
		*name++ = 0;
		if (nr == alloc) {
			alloc = alloc ? alloc * 2 : 65536;
			a = realloc(a, alloc * sizeof(*a));
			if (!a)
				die("reading the input", -ENOMEM);
		}
		a[nr].ip = strtoull(line, &end, 16);
		if (*end)
			die("bad address in the input", 0);
		a[nr].dso = strdup(dso);
		a[nr].name = strcmp(name, "[unknown]") ? strdup(name) : NULL;
		nr++;
	}
	free(line);
	fclose(f);
	*n = nr;
	return a;
}

static unsigned long diffs_left;

struct pass {
	double cpu, wall, sym_cpu, demangle_cpu;
	size_t done;
	uint64_t reasons[FL_SYM_KERNEL_HIDDEN + 1];
	uint64_t with_inl, inl_frames, same, both_named, perf_named;
};

/*
 * Demangled names, once per symbol name (its pointer: the symbolizer's
 * names are stable), as flamed's fold caches the frame of each name.
 */
struct shown {
	const char *raw;
	char *name;
};
static struct shown *shown_tab;
static size_t shown_cap;

static const char *show(const char *raw)
{
	size_t i;
	char buf[8192];

	if (!shown_cap) {
		shown_cap = 1u << 20;
		shown_tab = calloc(shown_cap, sizeof(*shown_tab));
		if (!shown_tab)
			die("allocating the name cache", -ENOMEM);
	}
	i = ((uintptr_t)raw >> 3) * 0x9e3779b97f4a7c15ull >> 44 & (shown_cap - 1);
	while (shown_tab[i].raw && shown_tab[i].raw != raw)
		i = (i + 1) & (shown_cap - 1);
	if (!shown_tab[i].raw) {
		fl_demangle(raw, buf, sizeof(buf));
		shown_tab[i].raw = raw;
		shown_tab[i].name = strdup(buf);
		if (!shown_tab[i].name)
			die("allocating a name", -ENOMEM);
	}
	return shown_tab[i].name;
}

/* One pass over all addresses; out[] keeps each address's demangled name when names is set. */
static void run_pass(struct fl_symbolizer *s, int pid, const struct addr *a, const uint64_t *ips,
		     size_t n, size_t batch, double budget, struct pass *p, struct module_count *mods,
		     size_t *nr_mods, bool count)
{
	double start = cpu_now();

	struct fl_sym *out = calloc(batch, sizeof(*out));
	const char *buf = "";

	if (!out)
		die("allocating results", -ENOMEM);
	for (size_t i = 0; i < n; i += batch) {
		size_t k = n - i < batch ? n - i : batch;
		double t0 = cpu_now(), t1;
		int err = fl_symbolizer__user(s, (uint32_t)pid, ips + i, k, out);

		if (err)
			die("fl_symbolizer__user", err);
		t1 = cpu_now();
		p->sym_cpu += t1 - t0;
		for (size_t j = 0; j < k; j++) {
			const struct fl_sym *o = &out[j];
			const struct addr *ad = &a[i + j];

			p->reasons[o->reason]++;
			if (o->nr_inl) {
				p->with_inl++;
				p->inl_frames += o->nr_inl;
			}
			/* Inlined frames point into the symbolizer's scratch: the last address's. */
			if (o->inl && j == k - 1)
				for (size_t f = 0; f < o->nr_inl; f++)
					if (o->inl[f].name)
						show(o->inl[f].name);
			if (o->reason == FL_SYM_OK)
				buf = show(o->name);
			if (!count)
				continue;
			if (ad->name)
				p->perf_named++;
			if (ad->name && o->reason != FL_SYM_OK && diffs_left) {
				diffs_left--;
				fprintf(stderr, "%" PRIx64 " %s: perf '%s', flamed none (reason %d)\n",
					ad->ip, ad->dso, ad->name, (int)o->reason);
			}
			if (ad->name && o->reason == FL_SYM_OK) {
				p->both_named++;
				if (!strcmp(buf, ad->name))
					p->same++;
				else if (diffs_left) {
					diffs_left--;
					fprintf(stderr, "%" PRIx64 " %s: perf '%s', flamed '%s' (raw '%s')\n",
						ad->ip, ad->dso, ad->name, buf, o->name);
				}
			}
			size_t m;
			for (m = 0; m < *nr_mods; m++)
				if (!strcmp(mods[m].name, ad->dso))
					break;
			if (m == *nr_mods && m < MAX_MODULES) {
				snprintf(mods[m].name, sizeof(mods[m].name), "%s", ad->dso);
				(*nr_mods)++;
			}
			if (m < *nr_mods) {
				mods[m].n++;
				mods[m].ok += o->reason == FL_SYM_OK;
				mods[m].inl += o->nr_inl > 0;
			}
		}
		p->demangle_cpu += cpu_now() - t1;
		p->done = i + k;
		if (budget > 0 && cpu_now() - start > budget)
			break;
	}
	free(out);
}

int main(int argc, char **argv)
{
	static const char *const reason_names[] = {"ok", "unmapped", "no_symbol", "no_file", "anon",
						   "kernel_hidden"};
	struct module_count mods[MAX_MODULES];
	size_t n, nr_mods = 0, batch = 127;
	int c, pid, err, warm = 1;
	double budget = 0;
	bool inlines = false;
	struct fl_tracker *t;
	struct fl_symbolizer *s;
	struct addr *a;
	uint64_t *ips;
	double c0, w0;
	long rss0;

	while ((c = getopt(argc, argv, "ib:w:t:d:")) != -1) {
		switch (c) {
		case 'i':
			inlines = true;
			break;
		case 'b':
			batch = strtoul(optarg, NULL, 10);
			break;
		case 'w':
			warm = atoi(optarg);
			break;
		case 't':
			budget = strtod(optarg, NULL);
			break;
		case 'd':
			diffs_left = strtoul(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: symbolize_bench [-i] [-b BATCH] [-w PASSES] [-t SECONDS] [-d DIFFS] FILE\n");
			return 2;
		}
	}
	if (optind != argc - 1 || !batch)
		die("usage: symbolize_bench [-i] [-b BATCH] [-w PASSES] [-t SECONDS] [-d DIFFS] FILE", 0);
	a = read_input(argv[optind], &pid, &n);
	ips = malloc(n * sizeof(*ips));
	if (!ips)
		die("allocating addresses", -ENOMEM);
	for (size_t i = 0; i < n; i++)
		ips[i] = a[i].ip;

	c0 = cpu_now();
	w0 = wall_now();
	err = fl_tracker__new(&(struct fl_tracker_opts){.sz = sizeof(struct fl_tracker_opts),
							 .pids = &pid,
							 .nr_pids = 1},
			      &t);
	if (err)
		die("fl_tracker__new", err);
	err = fl_tracker__start(t);
	if (err)
		die("fl_tracker__start (is the process still running?)", err);
	printf("addresses %zu\n", n);
	printf("tracker_cpu_s %.4f\n", cpu_now() - c0);
	printf("tracker_wall_s %.4f\n", wall_now() - w0);

	rss0 = status_kb("VmRSS");
	for (int pass = 0; pass <= warm; pass++) {
		struct pass p = {0};

		c0 = cpu_now();
		w0 = wall_now();
		if (pass == 0) {
			err = fl_symbolizer__new(&(struct fl_symbolizer_opts){
							 .sz = sizeof(struct fl_symbolizer_opts),
							 .tracker = t,
							 .no_kernel = true,
							 .inlines = inlines},
						 &s);
			if (err)
				die("fl_symbolizer__new", err);
		}
		run_pass(s, pid, a, ips, n, batch, budget, &p, mods, &nr_mods, pass == 0);
		p.cpu = cpu_now() - c0;
		p.wall = wall_now() - w0;
		if (pass == 0) {
			printf("cold_done %zu\n", p.done);
			printf("cold_cpu_s %.4f\n", p.cpu);
			printf("cold_wall_s %.4f\n", p.wall);
			printf("cold_symbolize_cpu_s %.4f\n", p.sym_cpu);
			printf("cold_demangle_cpu_s %.4f\n", p.demangle_cpu);
			for (size_t r = 0; r <= FL_SYM_KERNEL_HIDDEN; r++)
				printf("reason_%s %" PRIu64 "\n", reason_names[r], p.reasons[r]);
			printf("with_inlines %" PRIu64 "\n", p.with_inl);
			printf("inline_frames %" PRIu64 "\n", p.inl_frames);
			printf("perf_named %" PRIu64 "\n", p.perf_named);
			printf("both_named %" PRIu64 "\n", p.both_named);
			printf("same_name %" PRIu64 "\n", p.same);
			for (size_t m = 0; m < nr_mods; m++)
				printf("module %s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", mods[m].name,
				       mods[m].n, mods[m].ok, mods[m].inl);
			printf("peak_rss_kb %ld\n", status_kb("VmHWM"));
			printf("symbolizer_rss_kb %ld\n", status_kb("VmRSS") - rss0);
			if (p.done < n)
				break;
		} else {
			printf("warm%d_cpu_s %.4f\n", pass, p.cpu);
			printf("warm%d_symbolize_cpu_s %.4f\n", pass, p.sym_cpu);
		}
	}
	fl_symbolizer__free(s);
	fl_tracker__free(t);
	for (size_t i = 0; i < n; i++) {
		free(a[i].dso);
		free(a[i].name);
	}
	free(a);
	free(ips);
	return 0;
}
