/* Shared by the fs writer and reader. Not installed. */
#ifndef BLQ_DLQ_DUMP_FS_H
#define BLQ_DLQ_DUMP_FS_H

#include <blq/dlqdump.h>

#define BLQ__FS_DEFAULT_MASK "%Y-%m-%d--%H-%M-%S--%i.bin"
#define BLQ__FS_DEFAULT_MATCH "*.bin"

/* Opens directory (O_DIRECTORY) into *fd; BLQ_EINVAL naming the field and
 * the path when it is missing, not a directory or unreadable. */
int blq__fs_open_dir(const char *dir, int *fd, blq_error *err);

#endif
