// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Measurement tool (not part of the build) of tests/bench/symtab_load.sh:
 * what reading the function symbols of one ELF file costs libflamed, from
 * a fresh process, as the symbolizer reads a file the first time a
 * profile names an address in it.
 *
 *   symtab_load FILE
 *
 * Prints one line: "cpu_ms MS syms N maxrss_kib KIB": the CPU (user +
 * system) of fl_elfsyms__open() and fl_elfsyms__free(), the symbols kept,
 * and the process's peak RSS at the end.
 */
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "flamed/symbols/elfsyms.h"

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	struct fl_elfsyms *e = NULL;
	struct rusage ru;
	double t0, t1;
	size_t n;
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: symtab_load FILE\n");
		return 2;
	}
	t0 = cpu_ms();
	err = fl_elfsyms__open(argv[1], &e);
	if (err) {
		fprintf(stderr, "symtab_load: %s: cannot read its symbols (error %d)\n", argv[1], err);
		return 1;
	}
	n = fl_elfsyms__count(e);
	fl_elfsyms__free(e);
	t1 = cpu_ms();
	getrusage(RUSAGE_SELF, &ru);
	printf("cpu_ms %.2f syms %zu maxrss_kib %ld\n", t1 - t0, n, ru.ru_maxrss);
	return 0;
}
