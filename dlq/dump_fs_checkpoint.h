/*
 * A dump file's checkpoint: which of its records are done, and how many
 * restorers claimed it. Not installed.
 *
 * It lives beside the file as ".<file name>.ckpt" (a dot name: the
 * reader's glob never matches it). Layout, little-endian:
 *   "BLQK" u32 format(=1) u64 ino u64 size u64 mtime_ns   the file it is for
 *   u64 prefix u32 claims u32 nbits bits[(nbits + 7) / 8]  progress
 *   u32 crc32c                                            over all before
 * Records [0, prefix) are done; record prefix + i is done when bit i is set.
 * The file's identity (inode, size, mtime) guards against a new file that
 * reuses the name of one whose checkpoint was left behind by a crash: such
 * a checkpoint is ignored, never applied. A checkpoint that does not parse
 * is ignored too: at worst records come again (duplicates), never lost.
 */
#ifndef BLQ_DLQ_DUMP_FS_CHECKPOINT_H
#define BLQ_DLQ_DUMP_FS_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

typedef struct blq__ckpt {
	uint64_t ino, size, mtime_ns;
	uint64_t prefix;
	uint32_t claims;
	/* Done records past prefix: bit i for record prefix + i. */
	unsigned char *bits;
	uint32_t nbits;
} blq__ckpt;

/* The checkpoint's path for the dump file at path, into out (cap bytes).
 * False when it does not fit. */
bool blq__ckpt_path(const char *path, char *out, size_t cap);

/* Reads the checkpoint at ckpt_path for the file described by st. True
 * with *c filled (c->bits malloc'd, or NULL) when there is a valid one for
 * that very file; false otherwise (none, damaged, or another file's). */
bool blq__ckpt_load(const char *ckpt_path, const struct stat *st, blq__ckpt *c);

/* Writes *c to ckpt_path through a temporary name and a rename, so a
 * reader sees the old checkpoint or the new one, whole. With durable, the
 * data is fsync'd before the rename and the directory after it, so the new
 * checkpoint survives a power cut (without, only a process's death). 0, or
 * -1 with errno set. */
int blq__ckpt_store(const char *ckpt_path, const blq__ckpt *c, bool durable);

/* fsync of the directory holding path ("." for a bare name, "/" for a
 * name at the root): what makes a rename, a new name or an unlink in it
 * survive a power cut. 0, or -1 with errno set. */
int blq__sync_parent(const char *path);

/* Identity fields of c from st. */
void blq__ckpt_identify(blq__ckpt *c, const struct stat *st);

#endif
