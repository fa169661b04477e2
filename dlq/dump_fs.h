/* Shared by the fs writer and reader. Not installed. */
#ifndef BLQ_DLQ_DUMP_FS_H
#define BLQ_DLQ_DUMP_FS_H

#include <blq/dlqdump.h>

#define BLQ__FS_DEFAULT_MASK "%Y-%m-%d--%H-%M-%S--%i.bin"
#define BLQ__FS_DEFAULT_MATCH "*.bin"
/* Larger dump files are quarantined (reader) or reported (inspector)
 * unread. */
#define BLQ__FS_FILE_MAX (((uint64_t)1 << 30) + 2u * BLQ_DUMP_RECORD_MAX)

/* Opens directory (O_DIRECTORY) into *fd; BLQ_EINVAL naming the field and
 * the path when it is missing, not a directory or unreadable. */
int blq__fs_open_dir(const char *dir, int *fd, blq_error *err);

/* Reads size bytes of fd from offset 0 into *buf (malloc'd, the caller
 * frees it, also on error), *len the bytes read: fewer on a short file.
 * 0, BLQ_ENOMEM or BLQ_EIO (errno set). */
int blq__fs_read_all(int fd, size_t size, unsigned char **buf, size_t *len);

#endif
