// SPDX-License-Identifier: GPL-2.0-or-later
/* Turns raw stacks into named frames in a profile, following the folded-stack conventions. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/fold.h"
#include "flamed/profile.h"
#include "flamed/profile_abi.h"
#include "flamed/symbolizer.h"
#include "flamed/tracker.h"

/* Room for the root, both halves at full depth, and one marker frame. */
#define MAX_FRAMES (2 * FL_MAX_STACK_DEPTH + 2)
#define NAME_MAX_LEN 1024

struct fl_fold {
	struct fl_fold_opts opts;
	struct fl_fold_stats stats;
	struct fl_sym syms[FL_MAX_STACK_DEPTH];
	uint32_t frames[MAX_FRAMES];
	char name[NAME_MAX_LEN];
};

int fl_fold__new(const struct fl_fold_opts *opts, struct fl_fold **ret)
{
	struct fl_fold *f;

	if (!opts || !opts->symbolizer || !opts->profile)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->opts = *opts;
	*ret = f;
	return 0;
}

void fl_fold__free(struct fl_fold *f)
{
	free(f);
}

void fl_fold__stats(const struct fl_fold *f, struct fl_fold_stats *st)
{
	*st = f->stats;
}

static int intern(struct fl_fold *f, const char *s, size_t len, uint32_t *id)
{
	return fl_profile__intern(f->opts.profile, s, len, id);
}

static int intern_fmt(struct fl_fold *f, uint32_t *id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int intern_fmt(struct fl_fold *f, uint32_t *id, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(f->name, sizeof(f->name), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= sizeof(f->name))
		n = sizeof(f->name) - 1;
	return intern(f, f->name, (size_t)n, id);
}

static int root_frame(struct fl_fold *f, const struct fl_raw_stack *st, uint32_t *id)
{
	char comm[64];
	size_t i;

	snprintf(comm, sizeof(comm), "%s", st->comm && st->comm[0] ? st->comm : "[unknown]");
	/* Folded lines end in " COUNT": a space in the root frame would be read as part of it by some tools. */
	for (i = 0; comm[i]; i++)
		if (comm[i] == ' ')
			comm[i] = '_';
	if (f->opts.per_thread)
		return intern_fmt(f, id, "%s-%u/%u", comm, st->pid, st->tid);
	if (f->opts.per_process)
		return intern_fmt(f, id, "%s-%u", comm, st->pid);
	return intern(f, comm, i, id);
}

static int sym_frame(struct fl_fold *f, const struct fl_sym *sym, bool kernel, uint32_t *id)
{
	const char *k = kernel ? "_[k]" : "";

	f->stats.frames++;
	if (sym->reason == FL_SYM_OK)
		return intern_fmt(f, id, "%s%s", sym->name, k);
	f->stats.unsymbolized++;
	switch (sym->reason) {
	case FL_SYM_UNMAPPED:
		return intern_fmt(f, id, "[unknown]%s", k);
	case FL_SYM_ANON:
		return intern_fmt(f, id, "[anon]%s", k);
	case FL_SYM_KERNEL_HIDDEN:
		return intern_fmt(f, id, "[kernel]%s", k);
	default:
		if (!sym->module)
			return intern_fmt(f, id, "[unknown]%s", k);
		if (sym->module[0] == '[')
			return intern_fmt(f, id, "%s%s", sym->module, k);
		return intern_fmt(f, id, "[%s]%s", sym->module, k);
	}
}

int fl_fold__add(struct fl_fold *f, const struct fl_raw_stack *st)
{
	size_t n = 0, nu = st->nr_uips, nk = st->nr_kips;
	bool kthread;
	int err;

	if (st->count == 0)
		return 0;
	if (nu > FL_MAX_STACK_DEPTH)
		nu = FL_MAX_STACK_DEPTH;
	if (nk > FL_MAX_STACK_DEPTH)
		nk = FL_MAX_STACK_DEPTH;
	kthread = st->pid == 0 || (f->opts.tracker && fl_tracker__is_kthread(f->opts.tracker, st->pid));
	if (kthread)
		f->stats.kthread_samples += st->count;
	else if (st->uerr && st->uerr != -ENOENT)
		f->stats.no_user_stack += st->count;

	err = root_frame(f, st, &f->frames[n++]);
	if (err)
		return err;
	if (nu) {
		err = fl_symbolizer__user(f->opts.symbolizer, st->pid, st->uips, nu, f->syms);
		if (err)
			return err;
		for (size_t i = nu; i-- > 0;) {
			err = sym_frame(f, &f->syms[i], false, &f->frames[n++]);
			if (err)
				return err;
		}
	}
	if (nk) {
		err = fl_symbolizer__kernel(f->opts.symbolizer, st->kips, nk, f->syms);
		if (err)
			return err;
		for (size_t i = nk; i-- > 0;) {
			err = sym_frame(f, &f->syms[i], true, &f->frames[n++]);
			if (err)
				return err;
		}
	}
	err = fl_profile__add(f->opts.profile, f->frames, n, st->count);
	if (err)
		return err;
	f->stats.samples += st->count;
	return 0;
}
