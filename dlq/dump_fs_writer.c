/*
 * The file system writer: one file per batch.
 *
 * Design
 * - A batch is written to a hidden temporary file in the dump directory
 *   (".blqdump-XXXXXX.tmp", mkostemps: unique across threads and processes,
 *   and no glob without a leading dot matches it), fsync'd, closed, then
 *   renamed to its final name with RENAME_NOREPLACE (link + unlink where
 *   the file system lacks it), and the directory is fsync'd. A reader sees
 *   either no file or a whole one; a crash leaves at most a hidden
 *   temporary file, whose items were never reported as written.
 * - The header says the batch's format (1, or 2 with each record's
 *   metadata): the records are written as the dump framed them.
 * - Writes: with write_buffer 0 the header and the whole batch go to one
 *   writev (the loop goes on after a short write); otherwise each write(2)
 *   carries at most write_buffer bytes (the original's fs.Writer Buffer).
 *   The batch is one block of memory already, so nothing is copied: the
 *   header goes with the first slice of records, then the batch follows a
 *   slice at a time. That bounds one system call's size, not memory.
 * - Final names: the strftime mask in local time with %i replaced by a
 *   per-writer counter (zero-padded to 6 digits, so names sort in write
 *   order within a second). A name already taken (another process, a
 *   restart within the same second) moves the counter on.
 * - Any failure (ENOSPC, EACCES, EROFS, a directory gone) removes the
 *   temporary file and returns BLQ_EIO with the path and the system's
 *   words; the dump retries or falls back. Nothing is half-renamed.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "errorf.h"
#include "dump_format.h"
#include "dump_fs.h"

#define TMP_NAME "/.blqdump-XXXXXX.tmp"
#define TMP_SUFFIX 4 /* ".tmp" */
#define NAME_TRIES 1000

typedef struct fs_writer {
	blq_dump_writer w; /* first: the dump calls through it */
	char dir[PATH_MAX];
	char mask[256];
	int dirfd;
	uint64_t counter;
	size_t write_max; /* bytes per write(2); SIZE_MAX: no limit (write_buffer 0) */
} fs_writer;

/* Expands %i, then strftime. Returns the name's length, 0 when it does not
 * fit or is empty. */
static size_t make_name(const char *mask, uint64_t counter, time_t when, char *out, size_t cap)
{
	char fmt[512];
	size_t n = 0;

	for (const char *m = mask; *m != '\0'; m++) {
		if (m[0] == '%' && m[1] == 'i') {
			int k = snprintf(fmt + n, sizeof(fmt) - n, "%06llu", (unsigned long long)counter);
			if (k < 0 || (size_t)k >= sizeof(fmt) - n)
				return 0;
			n += (size_t)k;
			m++;
			continue;
		}
		if (n + 3 >= sizeof(fmt))
			return 0;
		fmt[n++] = m[0];
		if (m[0] == '%' && m[1] != '\0') /* keep %% and %X pairs whole */
			fmt[n++] = *++m;
	}
	fmt[n] = '\0';
	struct tm tm;
	localtime_r(&when, &tm);
	return strftime(out, cap, fmt, &tm);
}

/* True when the mask has a %i conversion: "%%i" is a literal "%i". */
static bool has_counter(const char *mask)
{
	for (const char *m = mask; *m != '\0'; m++)
		if (m[0] == '%') {
			if (m[1] == 'i')
				return true;
			if (m[1] == '\0')
				break;
			m++; /* skip the pair: %% or another conversion */
		}
	return false;
}

static int fail(blq_error *err, const char *what, const char *path)
{
	return blq__error_set(err, BLQ_EIO, "%s \"%s\": %s", what, path, strerror(errno));
}

/* Writes the n (<= 2) buffers, at most max bytes per writev call, on
 * after short writes and EINTR. -1 with errno on failure. */
static int write_all(int fd, const struct iovec *iov, int n, size_t max)
{
	struct iovec v[2];

	memcpy(v, iov, sizeof(struct iovec) * (size_t)n);
	for (int i = 0; i < n;) {
		/* This call's slices: from v[i] on, max bytes in all. */
		struct iovec s[2];
		int k = 0;
		size_t room = max;
		for (int j = i; j < n && room > 0; j++, k++) {
			s[k] = v[j];
			if (s[k].iov_len > room)
				s[k].iov_len = room;
			room -= s[k].iov_len;
		}
		ssize_t w = writev(fd, s, k);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		while (i < n && (size_t)w >= v[i].iov_len)
			w -= (ssize_t)v[i++].iov_len;
		if (i < n) {
			v[i].iov_base = (char *)v[i].iov_base + w;
			v[i].iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Renames tmp to a fresh final name, never over an existing file. */
static int publish(fs_writer *f, const char *tmp, blq_error *err)
{
	char name[256], path[PATH_MAX + 256];
	time_t now = time(NULL);

	for (int t = 0; t < NAME_TRIES; t++) {
		if (make_name(f->mask, f->counter++, now, name, sizeof(name)) == 0) {
			errno = ENAMETOOLONG;
			return fail(err, "file_mask", f->mask);
		}
		snprintf(path, sizeof(path), "%s/%s", f->dir, name);
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
			return 0;
		if (errno == EINVAL || errno == ENOSYS) { /* no RENAME_NOREPLACE here */
			if (link(tmp, path) == 0) {
				unlink(tmp);
				return 0;
			}
		}
		if (errno != EEXIST)
			return fail(err, "rename to", path);
	}
	errno = EEXIST;
	return fail(err, "no free file name for mask", f->mask);
}

static int fs_write(blq_dump_writer *w, const blq_dump_batch *b, size_t *done, blq_error *err)
{
	fs_writer *f = (fs_writer *)w;
	unsigned char hdr[BLQ__DUMP_HEADER];
	char tmp[PATH_MAX + sizeof(TMP_NAME)];

	*done = 0;
	unsigned format = blq__dump_batch_format(b, err);
	if (format == 0)
		return BLQ_EINVAL;
	snprintf(tmp, sizeof(tmp), "%s" TMP_NAME, f->dir);
	int fd = mkostemps(tmp, TMP_SUFFIX, O_CLOEXEC);
	if (fd < 0)
		return fail(err, "cannot create a file in directory", f->dir);
	blq__dump_header_put(hdr, format, b->version);
	struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)b->data, b->len}};
	if (write_all(fd, iov, 2, f->write_max) != 0 || fsync(fd) != 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
		return fail(err, "cannot write", tmp);
	}
	if (close(fd) != 0) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return fail(err, "cannot close", tmp);
	}
	int rc = publish(f, tmp, err);
	if (rc != 0) {
		unlink(tmp);
		return rc;
	}
	/* The rename is durable once the directory is. */
	if (fsync(f->dirfd) != 0)
		return fail(err, "cannot fsync directory", f->dir);
	*done = b->count;
	return 0;
}

static void fs_destroy(blq_dump_writer *w)
{
	fs_writer *f = (fs_writer *)w;

	close(f->dirfd);
	free(f);
}

int blq__fs_open_dir(const char *dir, int *fd, blq_error *err)
{
	if (dir == NULL || dir[0] == '\0')
		return blq__error_set(err, BLQ_EINVAL, "directory: required");
	if (strlen(dir) >= PATH_MAX - 64)
		return blq__error_set(err, BLQ_EINVAL, "directory: longer than %d bytes",
				      PATH_MAX - 64);
	*fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0)
		return blq__error_set(err, BLQ_EINVAL, "directory: \"%s\": %s", dir,
				      strerror(errno));
	return 0;
}

blq_dump_writer *blq_dump_fs_writer_new(const blq_dump_fs_config *cfg, blq_error *err)
{
	if (cfg == NULL) {
		blq__error_set(err, BLQ_EINVAL, "config: NULL");
		return NULL;
	}
	const char *mask = cfg->file_mask ? cfg->file_mask : BLQ__FS_DEFAULT_MASK;
	const char *match = cfg->match ? cfg->match : BLQ__FS_DEFAULT_MATCH;
	char sample[256];

	if (mask[0] == '\0') {
		blq__error_set(err, BLQ_EINVAL, "file_mask: must not be empty");
		return NULL;
	}
	if (strlen(mask) >= 200 || strchr(mask, '/') != NULL || !has_counter(mask)) {
		blq__error_set(err, BLQ_EINVAL,
			       "file_mask: \"%s\": must be under 200 bytes, without '/', with %%i "
			       "(the counter that keeps names unique)",
			       mask);
		return NULL;
	}
	size_t n = make_name(mask, 0, time(NULL), sample, sizeof(sample));
	if (n == 0 || sample[0] == '.') {
		blq__error_set(err, BLQ_EINVAL,
			       "file_mask: \"%s\": gives an empty, hidden or too long name", mask);
		return NULL;
	}
	if (fnmatch(match, sample, FNM_PATHNAME | FNM_PERIOD) != 0) {
		blq__error_set(err, BLQ_EINVAL,
			       "file_mask: names like \"%s\" do not match match \"%s\" (readers "
			       "would never see them)",
			       sample, match);
		return NULL;
	}
	if (cfg->write_buffer != 0 && (cfg->write_buffer < BLQ_DUMP_FS_WRITE_BUFFER_MIN ||
					cfg->write_buffer > BLQ_DUMP_FS_WRITE_BUFFER_MAX)) {
		blq__error_set(err, BLQ_EINVAL,
			       "write_buffer: %zu: must be 0 (one write per file) or %u..%u bytes",
			       cfg->write_buffer, (unsigned)BLQ_DUMP_FS_WRITE_BUFFER_MIN,
			       (unsigned)BLQ_DUMP_FS_WRITE_BUFFER_MAX);
		return NULL;
	}
	fs_writer *f = calloc(1, sizeof(*f));
	if (f == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "fs writer: out of memory");
		return NULL;
	}
	if (blq__fs_open_dir(cfg->directory, &f->dirfd, err) != 0) {
		free(f);
		return NULL;
	}
	snprintf(f->dir, sizeof(f->dir), "%s", cfg->directory);
	snprintf(f->mask, sizeof(f->mask), "%s", mask);
	f->write_max = cfg->write_buffer != 0 ? cfg->write_buffer : SIZE_MAX;
	/* Probe: root ignores permission bits, so only a real create tells
	 * whether the directory takes files (read-only mounts, EACCES). */
	char tmp[PATH_MAX + sizeof(TMP_NAME)];
	snprintf(tmp, sizeof(tmp), "%s" TMP_NAME, f->dir);
	int fd = mkostemps(tmp, TMP_SUFFIX, O_CLOEXEC);
	if (fd < 0) {
		blq__error_set(err, BLQ_EINVAL, "directory: \"%s\": not writable: %s", f->dir,
			       strerror(errno));
		close(f->dirfd);
		free(f);
		return NULL;
	}
	close(fd);
	unlink(tmp);
	f->w.write = fs_write;
	f->w.destroy = fs_destroy;
	return &f->w;
}
