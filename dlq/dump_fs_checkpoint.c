/*
 * The dump file checkpoint: see dump_fs_checkpoint.h for its layout and
 * why it is safe to lose or to find damaged.
 */
#include "dump_fs_checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "dump_format.h"

#define MAGIC "BLQK"
#define FORMAT 1u
#define FIXED 48u   /* magic .. nbits */
#define MAX_BITS (1u << 30)

static void put64(unsigned char *p, uint64_t v)
{
	blq__put32(p, (uint32_t)v);
	blq__put32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)blq__get32(p) | (uint64_t)blq__get32(p + 4) << 32;
}

bool blq__ckpt_path(const char *path, char *out, size_t cap)
{
	const char *base = strrchr(path, '/');
	int n = base != NULL ? snprintf(out, cap, "%.*s.%s.ckpt", (int)(base + 1 - path), path,
					base + 1)
			     : snprintf(out, cap, ".%s.ckpt", path);

	return n > 0 && (size_t)n < cap;
}

void blq__ckpt_identify(blq__ckpt *c, const struct stat *st)
{
	c->ino = (uint64_t)st->st_ino;
	c->size = (uint64_t)st->st_size;
	c->mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec;
}

bool blq__ckpt_load(const char *ckpt_path, const struct stat *st, blq__ckpt *c)
{
	unsigned char fixed[FIXED];
	int fd = open(ckpt_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	bool ok = false;

	memset(c, 0, sizeof(*c));
	if (fd < 0)
		return false;
	if (pread(fd, fixed, FIXED, 0) != (ssize_t)FIXED || memcmp(fixed, MAGIC, 4) != 0 ||
	    blq__get32(fixed + 4) != FORMAT)
		goto out;
	blq__ckpt want;
	blq__ckpt_identify(&want, st);
	if (get64(fixed + 8) != want.ino || get64(fixed + 16) != want.size ||
	    get64(fixed + 24) != want.mtime_ns)
		goto out; /* another file's: ignore it */
	uint32_t nbits = blq__get32(fixed + 44);
	if (nbits > MAX_BITS)
		goto out;
	size_t nb = (nbits + 7u) / 8u;
	unsigned char *bits = nb ? malloc(nb) : NULL;
	unsigned char crc[4];
	if ((nb && bits == NULL) || (nb && pread(fd, bits, nb, FIXED) != (ssize_t)nb) ||
	    pread(fd, crc, 4, (off_t)(FIXED + nb)) != 4) {
		free(bits);
		goto out;
	}
	uint32_t sum = blq__crc32c(blq__crc32c(0, fixed, FIXED), bits, nb);
	if (sum != blq__get32(crc)) {
		free(bits);
		goto out;
	}
	/* The bits past nbits in the last byte are no record's: clear them.
	 * The reader takes every bit past nbits for 0 when it lets the map
	 * grow, so a stored 1 there (never written by blq, but a CRC-valid
	 * file can hold one) would mark records done that were not, and
	 * they would be skipped and lost. */
	if (nbits % 8 != 0)
		bits[nb - 1] &= (unsigned char)((1u << (nbits % 8)) - 1u);
	c->ino = want.ino;
	c->size = want.size;
	c->mtime_ns = want.mtime_ns;
	c->prefix = get64(fixed + 32);
	c->claims = blq__get32(fixed + 40);
	c->nbits = nbits;
	c->bits = bits;
	ok = true;
out:
	close(fd);
	return ok;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int blq__sync_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4200];

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if ((size_t)(slash - path) >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	} else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

int blq__ckpt_store(const char *ckpt_path, const blq__ckpt *c, bool durable)
{
	size_t nb = (c->nbits + 7u) / 8u;
	unsigned char fixed[FIXED], crc[4];
	char tmp[4200];

	memcpy(fixed, MAGIC, 4);
	blq__put32(fixed + 4, FORMAT);
	put64(fixed + 8, c->ino);
	put64(fixed + 16, c->size);
	put64(fixed + 24, c->mtime_ns);
	put64(fixed + 32, c->prefix);
	blq__put32(fixed + 40, c->claims);
	blq__put32(fixed + 44, c->nbits);
	blq__put32(crc, blq__crc32c(blq__crc32c(0, fixed, FIXED), c->bits, nb));
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", ckpt_path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -1;
	if (write_all(fd, fixed, FIXED) != 0 || (nb && write_all(fd, c->bits, nb) != 0) ||
	    write_all(fd, crc, 4) != 0 || (durable && fdatasync(fd) != 0)) {
		int e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
		return -1;
	}
	close(fd);
	if (rename(tmp, ckpt_path) != 0) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	/* The rename is durable once the directory is: without this a power
	 * cut brings back the old checkpoint (or none), and every record
	 * marked done since comes again (powercut_restore found it). */
	return durable ? blq__sync_parent(ckpt_path) : 0;
}
