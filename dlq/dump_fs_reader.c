/*
 * The file system reader: hands out dump files one at a time.
 *
 * Design
 * - next() globs directory/match (sorted: with the default mask, oldest
 *   first), opens each candidate and takes an exclusive flock without
 *   waiting; a file locked by another restorer, gone meanwhile (unlinked or
 *   moved: the path no longer names the open file) or not a regular file is
 *   skipped. The lock lives as long as the descriptor, so a crashed
 *   restorer leaves no stale claim.
 * - The file is read whole, into a buffer sized by fstat: memory is bounded
 *   by what the file really holds (and FILE_MAX), never by a length field.
 *   Records are parsed in place (dump_format.c), each checked against the
 *   end of the buffer, BLQ_DUMP_RECORD_MAX and its CRC before use.
 * - Damage to the file as a whole (bad magic, unknown format, another
 *   version, an oversized file) leaves its records unread. Damage to a
 *   record (a bad checksum, a truncated tail, an absurd length, a
 *   format-2 record whose metadata does not fit it) does not end the
 *   file: the reader resynchronises on the next offset where a whole
 *   record parses with a valid CRC (blq__dump_resync, the one place every
 *   reader does it) and goes on, so every intact record, before and after
 *   the damage, is handed out. Either way commit() then moves the file
 *   into the quarantine directory instead of deleting it, with a warn log
 *   line (the first damage, the damaged spans, the bytes skipped), the
 *   quarantined metric and the restorer's count (blq_dump_reader.host).
 *   Nothing is deleted that was not restored; nothing crashes on a bad
 *   file.
 * - Record indices count the intact records in file order, resyncs
 *   included. The resync is deterministic, so the same file gives the
 *   same indices at every claim: the checkpoint's bits stay right after
 *   a crash (a checkpoint names the file's inode, size and mtime: other
 *   bytes, another checkpoint). An older reader, which stopped at the
 *   damage, gave the records before it the same indices.
 * - Progress: done() marks a record in memory (a done prefix plus a
 *   bitmap past it); sync() writes the checkpoint (dump_fs_checkpoint.h),
 *   fsync'd and renamed over the last one, the directory fsync'd. At
 *   claim the reader applies a valid checkpoint (skips the records it
 *   marks done), counts the claim
 *   in it at once (durable: fsync'd and renamed, its directory fsync'd,
 *   so a process crash or a power cut keeps it, which is what marks the
 *   records that follow as redeliveries), and hands out
 *   the other records with deliveries = the earlier claims.
 * - commit() (every record done) unlinks the file, or with an archive
 *   renames it there (move_into, as the quarantine: never over a file, the
 *   archive fsync'd), or hands it to the finished hook (the directory
 *   fsync'd either way:
 *   a power cut must not bring it back), then its checkpoint; a
 *   checkpoint left by a crash in between is ignored by a file that reuses
 *   the name (it names the inode, size and mtime of its own), and removed
 *   by the next reader made (or an idle next()): a checkpoint whose file is
 *   gone is swept under an exclusive flock on the directory, while a claim
 *   writes its first checkpoint under a shared one, so a file that appears
 *   meanwhile never loses one. A half-written checkpoint (killed between
 *   its write and its rename) is swept too, once nobody holds its file.
 *   release() syncs the marks and closes the
 *   file (a later next() hands it out again: at least once).
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errorf.h"
#include "dump_format.h"
#include "dump_fs.h"
#include "dump_fs_checkpoint.h"
#include "dump_util.h"

#define FILE_MAX BLQ__FS_FILE_MAX
#define DAMAGE_VERSION -100
#define DAMAGE_SIZE -101

typedef struct fs_reader {
	blq_dump_reader r; /* first */
	char dir[PATH_MAX];
	char match[256];
	char quarantine[PATH_MAX];
	char archive[PATH_MAX]; /* "" : no archive */
	int (*finished)(void *ctx, const char *path, blq_error *err);
	void *finished_ctx;
	int dirfd;
	uint64_t version;
	char name[BLQ__DUMP_NAME_MAX + 1];
	bool named; /* name configured: else its restorer's (host) */
	const blq_dump_metrics *metrics;
	blq_logger logger;
} fs_reader;

/* The logger and the name of reports: the reader's own, else its
 * restorer's (blq_dump_reader.host). */
static const blq_logger *log_to(const fs_reader *r)
{
	return blq__reader_logger(&r->r, &r->logger);
}

static const char *name_of(const fs_reader *r)
{
	return blq__reader_name(&r->r, r->named, r->name);
}

typedef struct fs_dump {
	int fd;
	char path[PATH_MAX + 256];
	char ckpt[PATH_MAX + 300];
	unsigned char *buf;
	size_t len, off;
	uint64_t version;
	int damage;      /* 0, or the first damage: a BLQ__DUMP_* code or DAMAGE_* */
	size_t damage_at;
	bool unread;     /* damage to the whole file: no record is read */
	uint64_t spans;  /* damaged spans skipped by a resync */
	uint64_t skipped; /* bytes in them (the whole file when unread) */
	uint64_t file_version;
	unsigned format;  /* the file's: 1 or 2 */
	size_t good;     /* records handed out */
	uint64_t next;   /* index of the next record parsed */
	/* Progress, as the checkpoint holds it: done = [0, ck.prefix) plus
	 * ck.bits past it. ck.claims counts this claim too. */
	blq__ckpt ck;
	uint32_t earlier_claims; /* deliveries of the records not done */
	size_t bits_cap;         /* bytes allocated at ck.bits */
	bool dirty;              /* marks not written yet */
} fs_dump;

static void dump_close(fs_dump *d)
{
	close(d->fd);
	free(d->buf);
	free(d->ck.bits);
	free(d);
}

static bool is_done(const fs_dump *d, uint64_t i)
{
	if (i < d->ck.prefix)
		return true;
	uint64_t k = i - d->ck.prefix;
	return k < d->ck.nbits && (d->ck.bits[k / 8] >> (k % 8) & 1u);
}

static bool bit_at(const unsigned char *bits, uint64_t i)
{
	return bits[i / 8] >> (i % 8) & 1u;
}

/* Moves the prefix over the done bits at its front. Never past
 * UINT64_MAX: a loaded prefix can be anything a CRC-valid file holds, and
 * a wrap would take done records for new ones. */
static void advance_prefix(fs_dump *d)
{
	uint64_t k = 0;

	while (k < d->ck.nbits && k < UINT64_MAX - d->ck.prefix && bit_at(d->ck.bits, k))
		k++;
	if (k == 0)
		return;
	/* Shift the bitmap down by k bits. */
	uint32_t n = d->ck.nbits - (uint32_t)k;
	for (uint32_t i = 0; i < n; i++) {
		if (bit_at(d->ck.bits, i + k))
			d->ck.bits[i / 8] |= (unsigned char)(1u << (i % 8));
		else
			d->ck.bits[i / 8] &= (unsigned char)~(1u << (i % 8));
	}
	for (uint32_t i = n; i < d->ck.nbits; i++)
		d->ck.bits[i / 8] &= (unsigned char)~(1u << (i % 8));
	d->ck.nbits = n;
	d->ck.prefix += k;
}

/* Writes the checkpoint; durable: fsync'd. 0 or BLQ_EIO. */
static int store_ckpt(fs_dump *d, bool durable, blq_error *err)
{
	if (blq__ckpt_store(d->ckpt, &d->ck, durable) != 0)
		return blq__error_set(err, BLQ_EIO, "checkpoint \"%s\": %s", d->ckpt,
				      strerror(errno));
	d->dirty = false;
	return 0;
}

int blq__fs_read_all(int fd, size_t size, unsigned char **buf, size_t *len)
{
	*len = 0;
	*buf = malloc(size ? size : 1);
	if (*buf == NULL)
		return BLQ_ENOMEM;
	while (*len < size) {
		ssize_t k = pread(fd, *buf + *len, size - *len, (off_t)*len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return BLQ_EIO;
		if (k == 0)
			break;
		*len += (size_t)k;
	}
	return 0;
}

/* A half-written checkpoint (".<name>.ckpt.tmp", blq__ckpt_store) is
 * stale when nobody holds its dump file: every checkpoint store runs
 * under the claim's exclusive flock on that file, and a claim taken by a
 * process that died is released with it. Removed while we hold that lock
 * ourselves, so nobody claims the file meanwhile; kept while a claimant
 * holds it (it may be writing the tmp now). */
static void sweep_tmp(const char *tmp, const char *data)
{
	int fd = open(data, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (fd < 0) {
		if (errno == ENOENT)
			unlink(tmp);
		return;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		unlink(tmp);
	close(fd);
}

/* Removes what a killed process left beside the dump files: checkpoints
 * whose dump file is gone (a kill in fs_commit between its two unlinks),
 * and half-written checkpoints (a kill in blq__ckpt_store between its
 * write and its rename: sweep_tmp). Under an exclusive lock on the
 * directory (load_progress takes a shared one), so a checkpoint just
 * written for a new file of that name is never removed. */
static void sweep_orphans(fs_reader *r, bool wait)
{
	static const struct {
		const char *suffix;
		bool tmp; /* half-written: sweep_tmp */
	} kinds[] = {{".ckpt", false}, {".ckpt.tmp", true}};
	char pattern[PATH_MAX + 16], data[PATH_MAX + 256], name[256];
	struct stat st;
	glob_t g;

	if (flock(r->dirfd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0)
		return;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		size_t suffix = strlen(kinds[k].suffix);

		snprintf(pattern, sizeof(pattern), "%s/.*%s", r->dir, kinds[k].suffix);
		if (glob(pattern, 0, NULL, &g) != 0)
			continue;
		for (size_t i = 0; i < g.gl_pathc; i++) {
			const char *p = g.gl_pathv[i], *base = strrchr(p, '/') + 1;
			size_t n = strlen(base); /* "." <name> <suffix> */
			if (n <= 1 + suffix || n - 1 - suffix >= sizeof(name))
				continue;
			snprintf(name, sizeof(name), "%.*s", (int)(n - 1 - suffix), base + 1);
			if (fnmatch(r->match, name, FNM_PERIOD) != 0)
				continue;
			snprintf(data, sizeof(data), "%.*s%s", (int)(base - p), p, name);
			if (kinds[k].tmp)
				sweep_tmp(p, data);
			else if (lstat(data, &st) != 0 && errno == ENOENT)
				unlink(p);
		}
		globfree(&g);
	}
	flock(r->dirfd, LOCK_UN);
}

/* Applies the file's checkpoint, if any, and counts this claim in it.
 * Under a shared lock on the directory: see sweep_orphans. */
static int load_progress(fs_reader *r, fs_dump *d, const struct stat *st, blq_error *err)
{
	if (!blq__ckpt_path(d->path, d->ckpt, sizeof(d->ckpt)))
		return blq__error_set(err, BLQ_EIO, "checkpoint path too long for \"%s\"", d->path);
	while (flock(r->dirfd, LOCK_SH) != 0 && errno == EINTR)
		;
	if (!blq__ckpt_load(d->ckpt, st, &d->ck))
		blq__ckpt_identify(&d->ck, st);
	/* Done bits at the front belong in the prefix (fs_done keeps them
	 * there; a stored file may not): commit needs prefix >= next, and
	 * a file whose remaining records were all marked done could never
	 * be committed otherwise. */
	advance_prefix(d);
	d->bits_cap = (d->ck.nbits + 7u) / 8u;
	d->earlier_claims = d->ck.claims;
	d->ck.claims = d->ck.claims < UINT32_MAX ? d->ck.claims + 1 : UINT32_MAX;
	/* Durable (data and directory fsync'd) before any record is handed
	 * out: it is what says that the records that follow may have been
	 * processed (deliveries > 0) after a power cut too. Not fsync'd, a
	 * cut lost the count, and worse: another file's sync made its name
	 * durable over empty data, so a cut also dropped the done marks it
	 * replaced (powercut_restore found both). One fsync pair per claim. */
	int rc = store_ckpt(d, true, err);
	flock(r->dirfd, LOCK_UN);
	return rc;
}

/* Opens and claims path; 1 claimed, 0 skip, negative error. */
static int claim(fs_reader *r, const char *path, fs_dump **out, blq_error *err)
{
	struct stat st, now;
	fs_dump *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return blq__error_set(err, BLQ_ENOMEM, "fs reader: out of memory");
	snprintf(d->path, sizeof(d->path), "%s", path);
	d->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (d->fd < 0) {
		free(d);
		return 0; /* gone, a symlink, unreadable: not ours */
	}
	if (flock(d->fd, LOCK_EX | LOCK_NB) != 0 || fstat(d->fd, &st) != 0 ||
	    !S_ISREG(st.st_mode) || st.st_nlink == 0 || stat(path, &now) != 0 ||
	    now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
		close(d->fd);
		free(d);
		return 0;
	}
	if ((uint64_t)st.st_size > FILE_MAX) {
		d->damage = DAMAGE_SIZE;
		d->unread = true;
		d->skipped = (uint64_t)st.st_size;
		int rc = load_progress(r, d, &st, err);
		if (rc != 0) {
			dump_close(d);
			return rc;
		}
		*out = d;
		return 1;
	}
	int rc = blq__fs_read_all(d->fd, (size_t)st.st_size, &d->buf, &d->len);
	if (rc != 0) {
		int e = errno;
		dump_close(d);
		return rc == BLQ_ENOMEM
			       ? blq__error_set(err, rc, "fs reader: out of memory")
			       : blq__error_set(err, rc, "cannot read \"%s\": %s", path, strerror(e));
	}
	rc = blq__dump_header_check(d->buf, d->len, &d->format, &d->file_version);
	if (rc != BLQ__DUMP_OK)
		d->damage = rc;
	else if (d->file_version != r->version)
		d->damage = DAMAGE_VERSION;
	if (d->damage != 0) {
		d->unread = true;
		d->skipped = d->len;
	}
	d->off = BLQ__DUMP_HEADER;
	d->version = d->file_version;
	if ((rc = load_progress(r, d, &st, err)) != 0) {
		dump_close(d);
		return rc;
	}
	*out = d;
	return 1;
}

static int fs_next(blq_dump_reader *rd, void **dump, blq_error *err)
{
	fs_reader *r = (fs_reader *)rd;
	char pattern[PATH_MAX + 260];
	glob_t g;
	int rc = 0;

	snprintf(pattern, sizeof(pattern), "%s/%s", r->dir, r->match);
	int e = glob(pattern, GLOB_ERR, NULL, &g);
	if (e == GLOB_NOMATCH) {
		sweep_orphans(r, false);
		return 0;
	}
	if (e != 0)
		return blq__error_set(err, BLQ_EIO, "directory \"%s\": cannot list (glob error %d)",
				      r->dir, e);
	for (size_t i = 0; i < g.gl_pathc && rc == 0; i++) {
		fs_dump *d = NULL;

		rc = claim(r, g.gl_pathv[i], &d, err);
		if (rc == 1)
			*dump = d;
	}
	globfree(&g);
	return rc;
}

static int fs_record(blq_dump_reader *rd, void *dump, blq_dump_record *rec, blq_error *err)
{
	fs_dump *d = dump;

	(void)rd, (void)err;
	for (;;) {
		if (d->unread)
			return 0;
		size_t at = d->off;
		int rc = blq__dump_rec_parse(d->buf, d->len, d->format, &d->off, rec);
		if (rc != BLQ__DUMP_OK && rc != BLQ__DUMP_END) {
			/* Damage: note the first, skip to the next intact
			 * record (or the end) and go on from there. */
			if (d->damage == 0) {
				d->damage = rc;
				d->damage_at = at;
			}
			d->off = blq__dump_resync(d->buf, d->len, d->format, at);
			d->spans++;
			d->skipped += d->off - at;
			continue;
		}
		if (rc == BLQ__DUMP_OK) {
			uint64_t i = d->next++;
			if (is_done(d, i))
				continue; /* done in an earlier claim */
			rec->version = d->version;
			rec->index = i;
			rec->deliveries = d->earlier_claims;
			d->good++;
			return 1;
		}
		return 0;
	}
}

static int fs_done(blq_dump_reader *rd, void *dump, uint64_t index, blq_error *err)
{
	fs_dump *d = dump;

	(void)rd;
	if (index >= d->next)
		return blq__error_set(err, BLQ_EINVAL, "done: record %llu was not handed out",
				      (unsigned long long)index);
	if (is_done(d, index))
		return 0;
	uint64_t k = index - d->ck.prefix;
	if (k >= UINT32_MAX)
		return blq__error_set(err, BLQ_EINVAL, "done: record %llu is too far ahead",
				      (unsigned long long)index);
	if (k >= d->ck.nbits) {
		size_t need = (size_t)(k / 8 + 1);
		if (need > d->bits_cap) {
			size_t cap = d->bits_cap ? d->bits_cap : 16;
			while (cap < need)
				cap *= 2;
			unsigned char *p = realloc(d->ck.bits, cap);
			if (p == NULL)
				return blq__error_set(err, BLQ_ENOMEM, "fs reader: out of memory");
			memset(p + d->bits_cap, 0, cap - d->bits_cap);
			d->ck.bits = p;
			d->bits_cap = cap;
		}
		d->ck.nbits = (uint32_t)k + 1;
	}
	d->ck.bits[k / 8] |= (unsigned char)(1u << (k % 8));
	advance_prefix(d);
	d->dirty = true;
	return 0;
}

static int fs_sync(blq_dump_reader *rd, void *dump, blq_error *err)
{
	fs_dump *d = dump;

	(void)rd;
	return d->dirty ? store_ckpt(d, true, err) : 0;
}

static void describe(const fs_reader *r, const fs_dump *d, char *out, size_t cap)
{
	if (d->damage == DAMAGE_VERSION)
		snprintf(out, cap, "version %llu, this reader takes %llu",
			 (unsigned long long)d->file_version, (unsigned long long)r->version);
	else if (d->damage == DAMAGE_SIZE)
		snprintf(out, cap, "file larger than %llu bytes", (unsigned long long)FILE_MAX);
	else if (d->damage == BLQ__DUMP_BAD_FORMAT)
		snprintf(out, cap, "%s %u (flags %#x), this reader reads 1..%u",
			 blq__dump_parse_str(d->damage), (unsigned)d->buf[4] | (unsigned)d->buf[5] << 8,
			 (unsigned)d->buf[6] | (unsigned)d->buf[7] << 8, BLQ__DUMP_FORMAT);
	else if (d->damage == BLQ__DUMP_SHORT_HEADER || d->damage == BLQ__DUMP_BAD_MAGIC)
		snprintf(out, cap, "%s", blq__dump_parse_str(d->damage));
	else
		snprintf(out, cap, "%s at offset %zu, %llu damaged span%s, %llu bytes skipped",
			 blq__dump_parse_str(d->damage), d->damage_at, (unsigned long long)d->spans,
			 d->spans == 1 ? "" : "s", (unsigned long long)d->skipped);
}

/* Moves the file at path into directory `into` (`what` names it in the
 * messages: "quarantine", "archive"), under its own name, or NAME.1,
 * NAME.2, ... when that is taken: never over another file. Then fsyncs
 * `into`, so the new name is durable before the caller fsyncs the old
 * directory. The new path goes to `to`. 0, or BLQ_EIO with the reason
 * (EXDEV: `into` is on another file system). */
static int move_into(const char *what, const char *into, const char *path, char *to, size_t cap,
		     blq_error *err)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	/* It may have been removed since the reader was made: without it the
	 * file would be restored again at every poll. */
	if (mkdir(into, 0755) != 0 && errno != EEXIST)
		return blq__error_set(err, BLQ_EIO, "%s \"%s\": %s", what, into, strerror(errno));
	for (unsigned k = 0;; k++) {
		int n = k == 0 ? snprintf(to, cap, "%s/%s", into, base)
			       : snprintf(to, cap, "%s/%s.%u", into, base, k);
		if (n < 0 || (size_t)n >= cap)
			return blq__error_set(err, BLQ_EIO, "%s path too long for \"%s\"", what, path);
		if (renameat2(AT_FDCWD, path, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
			break;
		if (errno == EINVAL || errno == ENOSYS) {
			if (link(path, to) == 0) {
				unlink(path);
				break;
			}
		}
		if (errno != EEXIST || k == 1000)
			return blq__error_set(err, BLQ_EIO, "cannot move \"%s\" to the %s \"%s\": %s",
					      path, what, to, strerror(errno));
	}
	/* Its new name first made durable (`into` fsync'd; fs_commit then
	 * fsyncs the dump's directory, the old name's): with only the dump's
	 * synced a power cut would leave the file in neither, with neither
	 * synced back in the dump, restored again (powercut_redrive's setup
	 * found that). */
	int qfd = open(into, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool qsynced = qfd >= 0 && fsync(qfd) == 0;
	if (qfd >= 0)
		close(qfd);
	if (!qsynced)
		return blq__error_set(err, BLQ_EIO, "cannot fsync %s \"%s\": %s", what, into,
				      strerror(errno));
	return 0;
}

/* Moves a damaged file aside, never over another one. */
static int quarantine(fs_reader *r, fs_dump *d, blq_error *err)
{
	char to[PATH_MAX + 300], why[192];

	describe(r, d, why, sizeof(why));
	int rc = move_into("quarantine", r->quarantine, d->path, to, sizeof(to), err);
	if (rc != 0)
		return rc;
	/* Its done marks go with it (a rename keeps the inode the checkpoint
	 * names): its intact records were restored, and a redrive of the
	 * quarantine (blq_inspect_redrive) or a salvage leaves done records
	 * out, where without them each would deliver them again. Best
	 * effort: a file quarantined without them (a crash right here) has
	 * its records come again, duplicates and never a loss. */
	char qck[sizeof(to) + 16];
	if (blq__ckpt_path(to, qck, sizeof(qck)) && blq__ckpt_store(qck, &d->ck, true) != 0)
		blq__dlog(&r->logger, BLQ_LOG_WARN,
			  "dump %s: %s: cannot keep its done marks (%s): a redrive of it "
			  "delivers its restored records again", r->name, to, strerror(errno));
	if (d->unread)
		blq__dlog(log_to(r), BLQ_LOG_WARN,
			  "dump %s: %s: %s; moved to %s (%llu bytes, no record read)", name_of(r),
			  d->path, why, to, (unsigned long long)d->skipped);
	else
		blq__dlog(log_to(r), BLQ_LOG_WARN,
			  "dump %s: %s: %s; moved to %s after its %llu intact records were restored",
			  name_of(r), d->path, why, to, (unsigned long long)d->next);
	if (r->metrics != NULL && r->metrics->quarantined != NULL)
		r->metrics->quarantined(r->metrics->ctx, r->name, 1);
	if (r->r.host != NULL && r->r.host->quarantined != NULL)
		r->r.host->quarantined(r->r.host->ctx, 1, d->skipped);
	return 0;
}

/* A finished file (every record done, no damage) when an archive or a
 * finished hook is configured: into the archive, then the hook with
 * where it is now (blq_dump_fs_config.archive and .finished). */
static int finish(fs_reader *r, fs_dump *d, blq_error *err)
{
	char to[PATH_MAX + 300];
	const char *at = d->path;

	/* Removed meanwhile (by hand, blq-dlq): nothing to keep, as the
	 * delete finds nothing to remove. */
	if (access(d->path, F_OK) != 0 && errno == ENOENT)
		return 0;
	if (r->archive[0] != '\0') {
		int rc = move_into("archive", r->archive, d->path, to, sizeof(to), err);
		if (rc != 0)
			return rc;
		at = to;
		blq__dlog(log_to(r), BLQ_LOG_DEBUG, "dump %s: %s: restored; archived as %s",
			  name_of(r), d->path, to);
	}
	if (r->finished == NULL)
		return 0;
	blq_error herr = {0, ""};
	int rc = r->finished(r->finished_ctx, at, &herr);
	if (rc == BLQ_DUMP_FS_DELETE) {
		if (unlink(at) != 0 && errno != ENOENT)
			return blq__error_set(err, BLQ_EIO, "cannot remove \"%s\": %s", at,
					      strerror(errno));
		return 0;
	}
	if (rc != 0) {
		const char *why = herr.msg[0] != '\0' ? herr.msg : blq_strerror(rc);
		if (at != d->path) { /* archived already: the commit stands */
			blq__dlog(log_to(r), BLQ_LOG_WARN, "dump %s: finished hook on %s: %s",
				  name_of(r), at, why);
			return 0;
		}
		return blq__error_set(err, rc < 0 ? rc : BLQ_EIO, "finished hook on \"%s\": %s", at,
				      why);
	}
	/* The hook took it: it must have left the directory (same inode
	 * still there: restored again at the next claim, so refuse). */
	struct stat now, mine;
	if (at == d->path && stat(d->path, &now) == 0 && fstat(d->fd, &mine) == 0 &&
	    now.st_ino == mine.st_ino && now.st_dev == mine.st_dev)
		return blq__error_set(err, BLQ_EINVAL,
				      "finished hook returned 0 and left \"%s\" in the directory "
				      "(move it away, delete it, or return BLQ_DUMP_FS_DELETE)",
				      d->path);
	return 0;
}

static int fs_commit(blq_dump_reader *rd, void *dump, blq_error *err)
{
	fs_reader *r = (fs_reader *)rd;
	fs_dump *d = dump;
	int rc = 0;

	/* Records not read or not done yet would be lost: commit only a
	 * file read to its end (or its damage) with every record done. */
	if ((!d->unread && d->off < d->len) || d->ck.prefix < d->next)
		return blq__error_set(err, BLQ_EINVAL,
				      "commit of \"%s\" before its last record was done", d->path);
	if (d->damage != 0)
		rc = quarantine(r, d, err);
	else if (r->archive[0] != '\0' || r->finished != NULL)
		rc = finish(r, d, err);
	else if (unlink(d->path) != 0 && errno != ENOENT)
		rc = blq__error_set(err, BLQ_EIO, "cannot remove \"%s\": %s", d->path,
				    strerror(errno));
	/* The commit is what makes the file's last marks count (the restorer
	 * drops them from its window): the unlink (or the move into the
	 * quarantine) must survive a power cut, or the file comes back whole
	 * with its last durable checkpoint and all its records since come
	 * again (powercut_restore found it). */
	if (rc == 0 && fsync(r->dirfd) != 0)
		rc = blq__error_set(err, BLQ_EIO, "cannot fsync directory \"%s\": %s", r->dir,
				    strerror(errno));
	if (rc != 0)
		return rc; /* still open: commit or release it again */
	/* The data file first: a crash in between leaves a checkpoint naming
	 * a file that is gone (a new file of that name ignores it), which the
	 * next reader made, or an idle next(), sweeps (sweep_orphans). */
	unlink(d->ckpt);
	dump_close(d);
	return 0;
}

static void fs_release(blq_dump_reader *rd, void *dump)
{
	fs_reader *r = (fs_reader *)rd;
	blq_error err;

	if (fs_sync(rd, dump, &err) != 0)
		blq__dlog(log_to(r), BLQ_LOG_WARN, "dump %s: %s; its done records will come again",
			  name_of(r), err.msg);
	dump_close(dump);
}

static void fs_destroy(blq_dump_reader *rd)
{
	fs_reader *r = (fs_reader *)rd;

	close(r->dirfd);
	free(r);
}

/* blq_dump_fs_config.archive and .finished: the archive created when
 * missing, a directory other than the dump's, on its file system (a
 * rename cannot cross to another). */
static int open_archive(fs_reader *r, const blq_dump_fs_config *cfg, blq_error *err)
{
	struct stat a, d;

	if (cfg->finished == NULL && cfg->finished_ctx != NULL)
		return blq__error_set(err, BLQ_EINVAL, "finished_ctx: set without finished");
	r->finished = cfg->finished;
	r->finished_ctx = cfg->finished_ctx;
	if (cfg->archive == NULL)
		return 0;
	int n = snprintf(r->archive, sizeof(r->archive), "%s", cfg->archive);
	if (n <= 0 || (size_t)n >= sizeof(r->archive) - 64)
		return blq__error_set(err, BLQ_EINVAL, "archive: must be 1..%d bytes",
				      PATH_MAX - 65);
	errno = 0;
	if ((mkdir(r->archive, 0755) != 0 && errno != EEXIST) || stat(r->archive, &a) != 0 ||
	    !S_ISDIR(a.st_mode))
		return blq__error_set(err, BLQ_EINVAL, "archive: \"%s\": %s", r->archive,
				      errno ? strerror(errno) : "not a directory");
	if (fstat(r->dirfd, &d) != 0)
		return blq__error_set(err, BLQ_EINVAL, "directory: \"%s\": %s", r->dir,
				      strerror(errno));
	if (a.st_dev != d.st_dev)
		return blq__error_set(err, BLQ_EINVAL,
				      "archive: \"%s\" is on another file system than directory "
				      "\"%s\": finished files are renamed into it",
				      r->archive, r->dir);
	if (a.st_ino == d.st_ino)
		return blq__error_set(err, BLQ_EINVAL,
				      "archive: \"%s\" is the dump directory itself (its files "
				      "would be restored again)", r->archive);
	return 0;
}

blq_dump_reader *blq_dump_fs_reader_new(const blq_dump_fs_config *cfg, blq_error *err)
{
	if (cfg == NULL) {
		blq__error_set(err, BLQ_EINVAL, "config: NULL");
		return NULL;
	}
	const char *match = cfg->match ? cfg->match : BLQ__FS_DEFAULT_MATCH;
	if (match[0] == '\0' || strlen(match) >= 250 || strchr(match, '/') != NULL) {
		blq__error_set(err, BLQ_EINVAL, "match: \"%s\": must be 1..249 bytes without '/'",
			       match);
		return NULL;
	}
	if (blq__dump_check_logger(&cfg->logger, "logger", err) != 0)
		return NULL;
	fs_reader *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		blq__error_set(err, BLQ_ENOMEM, "fs reader: out of memory");
		return NULL;
	}
	r->named = cfg->name != NULL;
	if (blq__dump_name(r->name, cfg->name, "restorer", err) != 0 ||
	    blq__fs_open_dir(cfg->directory, &r->dirfd, err) != 0) {
		free(r);
		return NULL;
	}
	snprintf(r->dir, sizeof(r->dir), "%s", cfg->directory);
	snprintf(r->match, sizeof(r->match), "%s", match);
	int qn = cfg->quarantine != NULL
			 ? snprintf(r->quarantine, sizeof(r->quarantine), "%s", cfg->quarantine)
			 : snprintf(r->quarantine, sizeof(r->quarantine), "%s/quarantine", r->dir);
	struct stat st;
	errno = 0;
	if (qn <= 0 || (size_t)qn >= sizeof(r->quarantine) ||
	    (mkdir(r->quarantine, 0755) != 0 && errno != EEXIST) ||
	    stat(r->quarantine, &st) != 0 || !S_ISDIR(st.st_mode)) {
		blq__error_set(err, BLQ_EINVAL, "quarantine: \"%s\": %s", r->quarantine,
			       errno ? strerror(errno) : "not a directory");
		close(r->dirfd);
		free(r);
		return NULL;
	}
	if (open_archive(r, cfg, err) != 0) {
		close(r->dirfd);
		free(r);
		return NULL;
	}
	r->version = cfg->version;
	r->metrics = cfg->metrics;
	r->logger = cfg->logger;
	r->r.next = fs_next;
	r->r.record = fs_record;
	r->r.done = fs_done;
	r->r.sync = fs_sync;
	r->r.commit = fs_commit;
	r->r.release = fs_release;
	r->r.destroy = fs_destroy;
	sweep_orphans(r, true); /* what a killed reader left */
	return &r->r;
}
