/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Layouts of the perf side-band records the tracker and the ring sampler read. Private to lib/. */
#ifndef FLAMED_PERF_RECORDS_H
#define FLAMED_PERF_RECORDS_H

#include <stdint.h>
#include <linux/perf_event.h>

/*
 * The fields below as the kernel writes them; then the padding to 8 bytes
 * and, with sample_id_all (the tracker's events), the sample_id (there: the
 * time alone) at the very end. A reader checks hdr.size before it reads a
 * field, and bounds names by it.
 */

/* PERF_RECORD_MMAP2. */
struct fl_mmap2_rec {
	struct perf_event_header hdr;
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
	char filename[];
};

/* PERF_RECORD_COMM. */
struct fl_comm_rec {
	struct perf_event_header hdr;
	uint32_t pid, tid;
	char comm[];
};

/* PERF_RECORD_FORK and PERF_RECORD_EXIT. */
struct fl_task_rec {
	struct perf_event_header hdr;
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

/* PERF_RECORD_LOST: records the ring had no room for. */
struct fl_lost_rec {
	struct perf_event_header hdr;
	uint64_t id, lost;
};

/* PERF_RECORD_LOST_SAMPLES: samples the kernel dropped before the ring. */
struct fl_lost_samples_rec {
	struct perf_event_header hdr;
	uint64_t lost;
};

#endif
