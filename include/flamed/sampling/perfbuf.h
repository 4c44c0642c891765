/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One mmap'd perf_event ring buffer and a reader for its records. */
#ifndef FLAMED_PERFBUF_H
#define FLAMED_PERFBUF_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

struct fl_perfbuf;

/*
 * Maps the ring of the perf event fd: one metadata page plus data_pages
 * (a power of two) pages. The fd stays the caller's: close it after
 * fl_perfbuf__free(). Returns 0, -EINVAL (data_pages not a power of two)
 * or -errno from mmap (-EPERM: over perf_event_mlock_kb).
 */
int fl_perfbuf__new(int fd, size_t data_pages, struct fl_perfbuf **ret);
/* Accepts NULL. Unmaps the ring. */
void fl_perfbuf__free(struct fl_perfbuf *b);

/*
 * Calls fn for every record written since the last call, oldest first, and
 * then releases the space to the kernel. A record that wraps around the end
 * of the ring is copied so fn always sees it whole; hdr is valid during the
 * call only. Records with a size below sizeof(*hdr) or above the ring are
 * treated as corruption: the ring is reset and -EBADMSG returned. A non-zero
 * return from fn stops early (the rest stays for the next call) and is
 * returned; otherwise the number of records consumed. FL_PERFBUF_LATER
 * stops before the record: it stays too, and is the next call's first.
 */
#define FL_PERFBUF_LATER 1
typedef int (*fl_perfbuf_fn)(const struct perf_event_header *hdr, void *ctx);
int fl_perfbuf__consume(struct fl_perfbuf *b, fl_perfbuf_fn fn, void *ctx);

/*
 * The same walk as fl_perfbuf__consume() without releasing anything: the
 * next consume (or peek) sees the same records again, and more. A corrupt
 * ring is left for consume to reset; -EBADMSG. fn must not consume.
 */
int fl_perfbuf__peek(struct fl_perfbuf *b, fl_perfbuf_fn fn, void *ctx);

/*
 * The bytes that were free in the ring when the last consume began (all of
 * it before the first). A record longer than that may have been dropped:
 * the kernel counts the records it drops, but says so (PERF_RECORD_LOST)
 * only with the next record it can write, after a read made room.
 */
uint64_t fl_perfbuf__room(const struct fl_perfbuf *b);

/* The fd given to fl_perfbuf__new(). */
int fl_perfbuf__fd(const struct fl_perfbuf *b);

/* perf_event_open(2), which glibc does not wrap. Returns an fd or -errno. */
int fl_perf_event_open(struct perf_event_attr *attr, int pid, int cpu, int group_fd,
		       unsigned long flags);

/*
 * Online CPUs from /sys/devices/system/cpu/online, into a malloc'd array the
 * caller frees. Returns the number of CPUs (> 0) or -errno.
 */
int fl_online_cpus(int **cpus);
/* The same of /sys/devices/system/cpu/present: the CPUs there, online or not. */
int fl_present_cpus(int **cpus);

/*
 * Parses a kernel CPU list ("0-3,5", ascending and disjoint, an optional
 * trailing newline) into a malloc'd array the caller frees; *cpus is written
 * only on success. Returns the number of CPUs (> 0), -EINVAL for anything
 * else, -ERANGE for a CPU number above 65535, or -ENOMEM.
 */
int fl_cpu_list__parse(const char *s, int **cpus);

/*
 * One perf event per possible CPU, all opened from one attr, each with its
 * own ring if asked for: what the samplers and the tracker each need. A
 * CPU offline at open has no event (fd -1, no ring) until
 * fl_cpu_events__revive() finds it online.
 */
struct fl_cpu_events;

/*
 * Opens attr for every task (pid -1) on every CPU online now, close-on-exec;
 * the other possible CPUs (/sys/devices/system/cpu/possible) get a slot
 * without an event. With ring_pages (a power of two) each event also gets
 * a ring of that many data pages; with 0, no ring. Returns 0 or -errno from
 * reading the CPU list, perf_event_open(2) or mmap (the first CPU that
 * failed; nothing stays open), -ENODEV when no CPU could be opened.
 */
int fl_cpu_events__open(struct perf_event_attr *attr, size_t ring_pages,
			struct fl_cpu_events **ret);
/* Accepts NULL. Unmaps the rings, then closes the events. */
void fl_cpu_events__free(struct fl_cpu_events *ev);
/* The number of slots: one per possible CPU. */
size_t fl_cpu_events__nr(const struct fl_cpu_events *ev);
/* The number of events opened by fl_cpu_events__open(): the CPUs online then. */
size_t fl_cpu_events__nr_opened(const struct fl_cpu_events *ev);
/*
 * The fd of event i (-1: none, its CPU offline), or -EINVAL past the last.
 * It stays the object's: do not close it.
 */
int fl_cpu_events__fd(const struct fl_cpu_events *ev, size_t i);
/*
 * Hands event i's fd over to another owner (a libbpf perf_event link, which
 * closes it when destroyed): fl_cpu_events__free() will not close it. The
 * fd stays usable through this object until the new owner closes it, so
 * destroy the owner last. Returns 0, or -EINVAL past the last event.
 */
int fl_cpu_events__disown(struct fl_cpu_events *ev, size_t i);
/* The CPU of event i, or -EINVAL past the last. */
int fl_cpu_events__cpu(const struct fl_cpu_events *ev, size_t i);
/*
 * An ioctl without argument (PERF_EVENT_IOC_ENABLE, _DISABLE) on every
 * event. Every event is tried; returns 0 or the first -errno.
 */
int fl_cpu_events__ioctl(const struct fl_cpu_events *ev, unsigned long req);
/*
 * CPU hotplug: an event whose CPU goes offline is dead for good, even once
 * the CPU is back; only its time enabled tells, by standing still. Reads
 * event i's time enabled: returns 1 if it did not move since the previous
 * call (call it only while the events are enabled, a second or so apart),
 * 0 if it did or there was no previous call since fl_cpu_events__ioctl(),
 * or -errno. An event closed (fl_cpu_events__gone()) counts as stalled.
 */
int fl_cpu_events__stalled(struct fl_cpu_events *ev, size_t i);
/*
 * Opens event i again on its CPU (from the same attr, so disabled if that
 * was; a new ring if it had one: read the old one first), then closes the
 * old one unless it was disowned. Returns 0, or -errno with event i as it
 * was (-ENODEV: the CPU is offline).
 */
int fl_cpu_events__reopen(struct fl_cpu_events *ev, size_t i);
/*
 * Every event stalled (fl_cpu_events__stalled()), and every CPU without
 * one that is online now, is opened again: before (if any) is called
 * first, then fl_cpu_events__reopen(), then after, or without one
 * PERF_EVENT_IOC_ENABLE. A CPU still offline is left for the next call.
 * The CPUs done go to cpus (the first max); returns their number, or the
 * first -errno of another failure (the others still tried).
 */
typedef int (*fl_cpu_events_fn)(void *ctx, size_t i);
int fl_cpu_events__revive(struct fl_cpu_events *ev, fl_cpu_events_fn before, fl_cpu_events_fn after,
			  void *ctx, int *cpus, size_t max);
/* What CPU hotplug cost the events: CPUs that were not sampled for a while. */
struct fl_cpu_hotplug {
	uint32_t cpus;	   /* CPUs offline at open, or whose event died, at some time */
	uint32_t dead_now; /* ... of them still without a live event */
	uint64_t dead_ns;  /* the time those CPUs had no live event, summed (at most
			     about a revive interval more than the truth per outage) */
};
void fl_cpu_events__hotplug(const struct fl_cpu_events *ev, struct fl_cpu_hotplug *st);
/* The new owner of disowned event i closed it: its fd is no more. -EINVAL if not disowned. */
int fl_cpu_events__gone(struct fl_cpu_events *ev, size_t i);
/*
 * fl_perfbuf__consume() on every ring, in CPU order. fn returns 0 to go on,
 * FL_PERFBUF_LATER to leave the rest of this ring (from that record on) for
 * the next call and go on with the next ring, or a negative errno to stop:
 * that is returned at once, and the record that failed is not read again.
 * A corrupt ring is reset and the others are still read; -EBADMSG is
 * returned then. Otherwise 0. -EINVAL without rings.
 */
int fl_cpu_events__consume(struct fl_cpu_events *ev, fl_perfbuf_fn fn, void *ctx);
/*
 * fl_perfbuf__peek() on every ring, in CPU order, with fn as for consume:
 * a look at what every ring holds before any is read for good. Corrupt
 * rings are skipped (consume resets them). Returns 0, fn's negative errno,
 * or -EINVAL without rings.
 */
int fl_cpu_events__peek(struct fl_cpu_events *ev, fl_perfbuf_fn fn, void *ctx);
/* The least fl_perfbuf__room() of the rings; UINT64_MAX without rings. */
uint64_t fl_cpu_events__least_room(const struct fl_cpu_events *ev);

#endif
