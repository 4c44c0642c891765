/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One ELF file's call frame information, read for both unwinders (unwind.c, cfitable.c). Private to lib/. */
#ifndef FLAMED_CFI_FILE_H
#define FLAMED_CFI_FILE_H

#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/elfimage.h"

/*
 * A CFI section larger than this is not read (nor is a file without section
 * headers larger than this): the biggest binaries have some tens of MB of
 * .eh_frame, and what a user's file makes flamed read into memory is bounded.
 */
#define FL_CFI_MAX_BYTES ((uint64_t)256 << 20)

/* Code sections remembered per file; binaries have about five. */
#define FL_CFI_MAX_CODE_SECTIONS 16

/* A PT_LOAD segment: where its bytes are in the file and the address the file's CFI gives them. */
struct fl_cfi_seg {
	uint64_t offset, vaddr, filesz;
	bool exec; /* PF_X */
};

/*
 * The Elf handle of a file, its .eh_frame CFI and, lazily, its .debug_frame
 * CFI, and its PT_LOAD segments. libdw caches what it parses inside each
 * Dwarf_CFI, so a file's FDE table is built once however often it is asked.
 *
 * Files are read, never mapped: the owner of a library may truncate it
 * while flamed holds it, and a mapping of it would then raise SIGBUS in
 * flamed. What unwinding needs (the headers, .eh_frame_hdr, .eh_frame,
 * .debug_frame) is read by fl_cfi_file__read(), after which the fd may go.
 *
 * A zeroed struct is empty; fl_cfi_file__fini() empties it again. The
 * fields are for reading.
 */
struct fl_cfi_file {
	Elf *elf;
	Dwarf_CFI *eh; /* .eh_frame's (with .eh_frame_hdr's search table), or NULL */
	/* .debug_frame alone, in an ELF image of its own (see fl_cfi_file__read()), or empty. */
	struct fl_elfimage dbg_image;
	Dwarf_CFI *dbg; /* borrowed from dbg_image's Dwarf */
	bool dbg_tried;
	struct fl_cfi_seg *segs;
	size_t nr_segs;
	uint64_t entry; /* e_entry: where the program (or ld.so) starts */
	/* Where the code sections start (.init, .plt, .text, .fini...): function entries. */
	uint64_t code_starts[FL_CFI_MAX_CODE_SECTIONS];
	size_t nr_code_starts;
};

/*
 * Opens the ELF file at fd (ELF_C_READ: pread, as asked) or the image in
 * memory (which must outlive f), after fl_elfsize's checks of the counts
 * its header claims, and notes its segments and code sections. Nothing of
 * the CFI is read yet. Returns 0, -EFBIG (fl_elfsize refused it), -EINVAL
 * (not an ELF file) or -ENOMEM; f is empty on failure.
 */
int fl_cfi_file__begin_fd(struct fl_cfi_file *f, int fd);
int fl_cfi_file__begin_memory(struct fl_cfi_file *f, const void *image, size_t size);

/*
 * Whether the CFI sections may be read: each of .eh_frame and .eh_frame_hdr
 * within FL_CFI_MAX_BYTES. Without an .eh_frame section libdw finds them
 * through PT_GNU_EH_FRAME, somewhere in the file: then the whole file
 * (file_size bytes) must be within it.
 */
bool fl_cfi_file__size_ok(const struct fl_cfi_file *f, uint64_t file_size);

/*
 * What fl_cfi_file__read() will hold, known from the headers before it is
 * read: .eh_frame and .eh_frame_hdr (the whole file when libdw must find
 * them through PT_GNU_EH_FRAME), and the copy of .debug_frame, plus what
 * libdw inflates it to when it is compressed (its header read from fd).
 */
uint64_t fl_cfi_file__bytes(const struct fl_cfi_file *f, int fd, uint64_t file_size);

/*
 * Reads the CFI, whole: .eh_frame and .eh_frame_hdr through libdw now, and
 * .debug_frame (at most FL_CFI_MAX_BYTES) into an image of its own, given
 * to libdw by fl_cfi_file__debug_frame() if ever asked: dwarf_begin_elf()
 * on the file would read every debug section (.debug_info may be a GB).
 * fd is the one of fl_cfi_file__begin_fd(), or -1 for an image in memory
 * (whose compressed .debug_frame is left alone: its inflated size is not
 * checked). Files of the host's class and byte order only get their
 * .debug_frame read, as the registers are. What cannot be read is left
 * out: the CFI is then what could be.
 */
void fl_cfi_file__read(struct fl_cfi_file *f, int fd);

/* Reads nothing more from the fd (which the caller may close), whatever is asked after. */
void fl_cfi_file__fd_done(struct fl_cfi_file *f);

/* The .debug_frame CFI, made on the first call; NULL if there is none. Lives as long as f. */
Dwarf_CFI *fl_cfi_file__debug_frame(struct fl_cfi_file *f);

/*
 * The frame state at vaddr: .eh_frame first, then .debug_frame. NULL if
 * neither covers it; else the caller frees it.
 */
Dwarf_Frame *fl_cfi_file__frame(struct fl_cfi_file *f, uint64_t vaddr);

/* The address in the file's own terms (what its CFI and symbols use) of a file offset. */
bool fl_cfi_file__vaddr(const struct fl_cfi_file *f, uint64_t off, uint64_t *vaddr);

/* Whether vaddr is where a code section starts. */
bool fl_cfi_file__is_code_start(const struct fl_cfi_file *f, uint64_t vaddr);

/* The section called name with data in the file, or NULL; its header in *sh. */
Elf_Scn *fl_cfi_file__section(Elf *elf, const char *name, GElf_Shdr *sh);

/*
 * This process's vdso image (the same in every process), its size in
 * *size: the end of its section headers, which come last in the image.
 * NULL when there is none.
 */
const void *fl_cfi_file__vdso_image(size_t *size);

/* Ends what f holds; f is empty again. */
void fl_cfi_file__fini(struct fl_cfi_file *f);

#endif
