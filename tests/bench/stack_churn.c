// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Workload of tests/bench/cost_scaling.sh (not part of the build): a program
 * that keeps making stacks it has not made before, for as long as it runs.
 *
 *   stack_churn SECONDS [SEED]
 *
 * One thread walks call chains 5 to 40 deep through eight small functions
 * (churn_a ... churn_h), each step's function picked by a xorshift PRNG
 * seeded with SEED (default 1; give two instances different seeds), with a
 * little work before and after every call so that samples land at every
 * depth. Eight functions to a depth of up to 40 give 8^depth possible chains:
 * past the first few levels nearly every deep sample is a stack no earlier
 * sample had, so the number of distinct stacks grows with the run, minutes
 * on, instead of levelling off as a real program's would. Exits after
 * SECONDS (a safety net: the benchmark kills it sooner).
 *
 * Built by the benchmark with frame pointers and without inlining or tail
 * calls (cc -O1 -fno-omit-frame-pointer -fno-inline
 * -fno-optimize-sibling-calls), so every frame is on the stack under its name.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime() under -std=c11 too */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHURN_FUNCS 8
#define CHURN_MIN_DEPTH 5
#define CHURN_MAX_DEPTH 40

typedef uint64_t churn_fn(uint64_t *rng, int depth);

/* Written after every call so that no call is the last thing a frame does. */
static volatile uint64_t churn_sink;

static uint64_t churn_next(uint64_t *rng)
{
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	return *rng;
}

/* A few hundred dependent multiply-adds: the time a sample can land in a frame. */
static uint64_t churn_work(uint64_t x, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		x = x * 6364136223846793005u + 1442695040888963407u;
	return x;
}

static churn_fn churn_a, churn_b, churn_c, churn_d, churn_e, churn_f, churn_g, churn_h;
static churn_fn *const churn_table[CHURN_FUNCS] = {
	churn_a, churn_b, churn_c, churn_d, churn_e, churn_f, churn_g, churn_h,
};

/* One level of a chain: work, the next level (picked at random), more work. */
static uint64_t churn_step(uint64_t *rng, int depth, unsigned int before, unsigned int after)
{
	uint64_t x = churn_work(*rng, before);

	if (depth > 0)
		x ^= churn_table[churn_next(rng) % CHURN_FUNCS](rng, depth - 1);
	x = churn_work(x, after);
	churn_sink = x;
	return x;
}

/*
 * Eight frames with names of their own and slightly different work, so that
 * no two merge: one macro, eight functions.
 */
#define CHURN_FRAME(name, before, after, tag)                                                      \
	static uint64_t name(uint64_t *rng, int depth)                                             \
	{                                                                                          \
		uint64_t x = churn_step(rng, depth, before, after);                                \
                                                                                                   \
		churn_sink = x + (tag);                                                            \
		return x;                                                                          \
	}

CHURN_FRAME(churn_a, 100, 60, 1)
CHURN_FRAME(churn_b, 80, 90, 2)
CHURN_FRAME(churn_c, 120, 40, 3)
CHURN_FRAME(churn_d, 60, 110, 4)
CHURN_FRAME(churn_e, 90, 70, 5)
CHURN_FRAME(churn_f, 70, 100, 6)
CHURN_FRAME(churn_g, 110, 50, 7)
CHURN_FRAME(churn_h, 50, 120, 8)

static double churn_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	char *end;
	double seconds, deadline;
	uint64_t rng = 1;

	if (argc < 2 || argc > 3 || (seconds = strtod(argv[1], &end)) <= 0 || *end) {
		fprintf(stderr, "usage: stack_churn SECONDS [SEED]\n");
		return 2;
	}
	if (argc == 3)
		rng = strtoull(argv[2], NULL, 0);
	/* xorshift stays at 0 forever; any other seed is as good as another */
	rng = rng * 0x9e3779b97f4a7c15u + 0x2545f4914f6cdd1du;
	if (!rng)
		rng = 1;
	deadline = churn_now() + seconds;
	while (churn_now() < deadline) {
		/* a few hundred chains between clock reads: the clock stays off the profile */
		for (int i = 0; i < 256; i++) {
			int depth =
				CHURN_MIN_DEPTH +
				(int)(churn_next(&rng) % (CHURN_MAX_DEPTH - CHURN_MIN_DEPTH + 1));

			churn_table[churn_next(&rng) % CHURN_FUNCS](&rng, depth - 1);
		}
	}
	return 0;
}
