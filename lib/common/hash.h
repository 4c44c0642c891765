/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The hash functions of every table in lib/. Private to lib/. */
#ifndef FLAMED_HASH_H
#define FLAMED_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Every table in lib/ is a power of two in size and probed linearly from
 * hash & (size - 1). The low bits must therefore depend on every bit of the
 * key: with a weak mix, sequential keys (pids, addresses, frame ids) fill
 * runs of neighbouring slots and every probe walks the run. So every hash
 * here ends in fl_hash_mix64(), a full avalanche made of xor-shifts and odd
 * multiplies, which is also a bijection: two distinct 64-bit keys never
 * share a hash.
 */
#define FL_HASH_SEED 0x243f6a8885a308d3ULL
#define FL_HASH_K1 0x9e3779b97f4a7c15ULL
#define FL_HASH_K2 0xc2b2ae3d27d4eb4fULL
#define FL_HASH_K3 0x165667b19e3779f9ULL

static inline uint64_t fl_hash_rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t fl_hash_mix64(uint64_t h)
{
	h ^= h >> 31;
	h *= 0x7fb5d329728ea185ULL;
	h ^= h >> 27;
	h *= 0x81dadef4bc2dd44dULL;
	h ^= h >> 33;
	return h;
}

/*
 * One word into a running state. For a fixed state it is a bijection of
 * the word, so keys that differ in one word only never collide.
 */
static inline uint64_t fl_hash_absorb(uint64_t h, uint64_t w)
{
	return fl_hash_rotl(h ^ (w * FL_HASH_K2), 27) * FL_HASH_K1;
}

/* An integer key: a pid, an address. */
static inline uint64_t fl_hash_u64(uint64_t x)
{
	return fl_hash_mix64(x);
}

/* A key of two integers: (address, pid), (inode, device). */
static inline uint64_t fl_hash_u64_pair(uint64_t a, uint64_t b)
{
	return fl_hash_mix64(fl_hash_absorb(fl_hash_absorb(FL_HASH_SEED, a), b));
}

static inline uint64_t fl_hash_load64(const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

/*
 * len bytes at p, 16 a step in two independent lanes so that the
 * multiplies of neighbouring words overlap. The length is hashed first, so
 * a key that is a prefix of another does not share its state. Keys of 8
 * bytes or more end with the last 8 bytes, overlapping what was read
 * already, rather than a byte-wise tail.
 */
static inline uint64_t fl_hash_bytes(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t a = FL_HASH_SEED ^ ((uint64_t)len * FL_HASH_K1);
	uint64_t b = 0x082efa98ec4e6c89ULL;
	size_t left = len;

	for (; left >= 16; p += 16, left -= 16) {
		a = fl_hash_absorb(a, fl_hash_load64(p));
		b = fl_hash_rotl(b ^ (fl_hash_load64(p + 8) * FL_HASH_K3), 31) * FL_HASH_K2;
	}
	if (left >= 8) {
		a = fl_hash_absorb(a, fl_hash_load64(p));
		p += 8;
		left -= 8;
	}
	if (left) {
		uint64_t w = 0;

		if (len >= 8)
			w = fl_hash_load64((const unsigned char *)key + len - 8);
		else
			memcpy(&w, p, left);
		a = fl_hash_absorb(a, w);
	}
	return fl_hash_mix64(a ^ fl_hash_rotl(b, 17));
}

#endif
