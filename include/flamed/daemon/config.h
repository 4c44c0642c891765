/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's configuration: defaults, the key = value file, and command-line overrides. */
#ifndef FLAMED_CONFIG_H
#define FLAMED_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flamed/daemon/hostport.h"

/*
 * The file (default FL_CONFIG_DEFAULT_PATH, documented key by key in
 * packaging/flamed.conf) is lines of "key = value":
 *
 *  - Blanks (spaces, tabs) around the key, the '=' and the value are
 *    ignored; blanks inside a value are kept ("targets = nginx, my app").
 *    There is no quoting.
 *  - '#' starts a comment at the start of a line or after a blank, so
 *    "frequency = 99  # per CPU" is 99, while "output_dir = /srv/a#b" keeps
 *    its '#'.
 *  - Blank and comment-only lines are fine; a file may be empty.
 *  - Lines end in "\n" or "\r\n" (a file saved by a DOS editor works); a
 *    UTF-8 byte-order mark at the start is skipped.
 *  - Errors, each reported as one line "FILE:LINE: KEY: what is wrong" (or
 *    "FILE:LINE: what is wrong" when there is no key): an unknown key, a bad
 *    value, a key given twice, a line without '=', a line longer than
 *    FL_CONFIG_MAX_LINE bytes, a NUL byte or another control character
 *    (other than tab) outside comments.
 *
 * Keys are the names below; fl_config__set() also takes them with '-' for
 * '_' ("call-graph"), so that a command line can pass its option names.
 * Value keywords (yes, dwarf, all, svg...) are case-insensitive.
 */
#ifndef FL_CONFIG_DEFAULT_PATH /* the build's FLAMED_CONFIG_FILE */
#define FL_CONFIG_DEFAULT_PATH "/etc/flamed/flamed.conf"
#endif
#define FL_CONFIG_MAX_LINE 4096u      /* bytes, without the line end */
#define FL_CONFIG_MAX_FILE (1u << 20) /* bytes: a bigger file is refused */
#define FL_CONFIG_PATH_MAX 1024u      /* output_dir: at most this - 1 bytes */
#define FL_CONFIG_NAME_MAX 15u	      /* process names: the kernel's comm limit */
#define FL_CONFIG_MAX_TARGETS 1024u   /* pids + names */
#define FL_CONFIG_DEFAULT_DWARF_STACK 16384u
#define FL_CONFIG_LISTEN_MAX 264u   /* metrics_listen: "[" 253 bytes "]:65535" and the NUL */
#define FL_CONFIG_URL_MAX 1024u	    /* push_url: at most this - 1 bytes */
#define FL_CONFIG_APP_NAME_MAX 128u /* push_name: bytes */
#define FL_CONFIG_MAX_LABELS 64u    /* push_labels: pairs */
#define FL_CONFIG_LABEL_MAX 256u    /* push_labels: bytes of a name or of a value */
#define FL_CONFIG_CGROUP_ROOT "/sys/fs/cgroup"

/* One push_labels pair. key and value share one allocation, freed through key. */
struct fl_config_label {
	char *key;   /* [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" */
	char *value; /* 1..FL_CONFIG_LABEL_MAX bytes, no '{', '}', ',', '=' or control character */
};

/*
 * A plain struct: read its fields directly. pids, names and push_labels are
 * owned by the config (freed by fl_config__fini()); a struct fl_config must
 * not be copied by assignment while both copies are used.
 *
 * The keys whose value may be empty, meaning off (metrics_listen, push_url,
 * push_auth_file, push_labels, cgroup), take "key =" with nothing after it.
 */
struct fl_config {
	uint32_t frequency;   /* frequency: samples per second per CPU, 1..100000 [99] */
	uint64_t interval_ns; /* interval: between snapshots, 1 s..7 d [60 s] */
	bool dwarf;	      /* call_graph: dwarf[,SIZE] */
	bool kdwarf;	      /* call_graph: kernel-dwarf [true]; fp: neither */
	uint32_t stack_size;  /* dwarf: user-stack bytes, 8..65528, multiple of 8; fp: 0 */
	bool all_targets;     /* targets = all [true]; then nr_pids = nr_names = 0 */
	int *pids;	      /* targets: the pids listed, in order, no duplicates */
	size_t nr_pids;
	char **names; /* targets: process names (/proc/PID/comm), 1..15 bytes each */
	size_t nr_names;
	bool idle;			     /* idle [no]: keep the idle task's samples */
	bool kernel;			     /* kernel [yes]: record kernel stacks */
	bool user;			     /* user [yes]: record user stacks */
	char output_dir[FL_CONFIG_PATH_MAX]; /* output_dir: absolute [/var/lib/flamed] */
	bool fmt_folded;		     /* formats [folded]: folded, svg, pprof */
	bool fmt_svg;
	bool fmt_html;
	bool fmt_pprof;
	uint64_t keep_files;	/* keep_files: newest snapshots kept, 0 = unlimited [0] */
	uint64_t keep_age_ns;	/* keep_age: 0 = unlimited [7 days] */
	uint64_t keep_bytes;	/* keep_bytes: total size of the snapshots, 0 = unlimited [1 GiB] */
	uint32_t max_stacks;	/* max_stacks: distinct stacks a second, 1..16777216, 0 auto [auto] */
	uint32_t max_processes; /* max_processes: processes tracked, 1..4194304 [32768] */
	uint64_t max_symbol_cache;  /* max_symbol_cache: bytes of files read, 1M..1024G [1G] */
	uint64_t max_unwind_tables; /* max_unwind_tables: kernel-dwarf tables, 1M..1024G [256M] */

	/*
	 * metrics_listen: where the Prometheus endpoint listens, as written
	 * ("127.0.0.1:9464", "[::1]:9464", "localhost:9464"), to pass to
	 * fl_metrics__new(); "" = no endpoint [""]. metrics_addr is its parsed
	 * form (port 1..65535), meaningful only when metrics_listen is set.
	 */
	char metrics_listen[FL_CONFIG_LISTEN_MAX];
	struct fl_hostport metrics_addr;

	/* push_url: http:// or https:// URL of the ingest API, no user:password@; "" = no push [""] */
	char push_url[FL_CONFIG_URL_MAX];
	/*
	 * push_auth_file: absolute path of the credential, "" = none [""]. Only
	 * the path: the daemon reads it with fl_authfile__read() (authfile.h)
	 * when it loads the configuration.
	 */
	char push_auth_file[FL_CONFIG_PATH_MAX];
	char push_name[FL_CONFIG_APP_NAME_MAX + 1]; /* push_name: [A-Za-z0-9._-]+ [flamed] */
	struct fl_config_label *push_labels; /* push_labels: in the file's order, distinct keys */
	size_t nr_push_labels;		     /* 0..FL_CONFIG_MAX_LABELS [0] */
	uint64_t push_timeout_ns;	     /* push_timeout: per push, 1 s..1 h [10 s] */
	uint64_t push_spool_bytes;	     /* push_spool_bytes: 0 = no spool, ..1024G [64M] */
	bool push_tls_verify; /* push_tls_verify [yes]; no: the daemon warns at load */

	/* per_cgroup [no]: one profile per cgroup (wired by the daemon) */
	bool per_cgroup;
	/* python [yes]: Python functions in place of CPython's interpreter loop */
	bool python;
	/*
	 * cgroup: the cgroup v2 to profile, as an absolute path under
	 * FL_CONFIG_CGROUP_ROOT without "." or ".." components, repeated or
	 * trailing '/' ("/sys/fs/cgroup/system.slice/nginx.service"; the file
	 * may say "system.slice/nginx.service"); "" = no cgroup filter [""].
	 */
	char cgroup[FL_CONFIG_PATH_MAX];
};

/* Sets every field to its default. Allocates nothing: it cannot fail. */
void fl_config__init(struct fl_config *c);

/* Frees what c owns and leaves c at the defaults. Accepts NULL. */
void fl_config__fini(struct fl_config *c);

/*
 * Parses value for key (either spelling, see above) into c, replacing what
 * was there (a targets list is replaced, not extended). Returns 0, or -EINVAL
 * with c unchanged and a one-line message in err that names neither the key
 * nor a place (the caller prefixes "--frequency: " or "FILE:LINE: key: "),
 * e.g. `"abc" is not a number (1-100000)` or "unknown key". err may be NULL.
 */
int fl_config__set(struct fl_config *c, const char *key, const char *value, char *err,
		   size_t errlen);

/*
 * Checks the rules that span keys (kernel and user not both off). Load does
 * it; a caller that applies overrides after loading calls it again.
 * Returns 0 or -EINVAL with a message in err.
 */
int fl_config__check(const struct fl_config *c, char *err, size_t errlen);

/*
 * A size as the keys take it (bytes, or a number with K, M or G, powers of
 * 1024), for options that take one among other things: 0, or -EINVAL with
 * the reason in err.
 */
int fl_config__parse_size(const char *v, uint64_t *n, char *err, size_t errlen);

/*
 * Reads the file at path over the defaults: keys the file does not set get
 * their default, not what c held (a reload forgets a removed key). c must be
 * initialized. On success the old contents of c are freed and replaced; on
 * any error c is unchanged and err holds one line naming path: -EINVAL for
 * the contents ("FILE:LINE: KEY: ..."), -EFBIG for a file over
 * FL_CONFIG_MAX_FILE, -ENOMEM, or the -errno of open/read ("cannot open
 * FILE: No such file or directory"; the caller decides whether a missing
 * file means the defaults).
 */
int fl_config__load(struct fl_config *c, const char *path, char *err, size_t errlen);

/* The i-th key the parser knows, from 0 ("frequency"), or NULL past the last. */
const char *fl_config__key(size_t i);

#endif
