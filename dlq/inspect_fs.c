/*
 * The inspector's directory back end: dump files as parts, their records.
 *
 * Design
 * - Reading. A file is opened read-only and read whole into a buffer sized
 *   by fstat (as the fs reader does: blq__fs_read_all), then parsed in
 *   place by dump_format.c, so the inspector and the restorer agree on
 *   every byte: the same records are good, the same damage is found at the
 *   same offset, and both resynchronise after it on the same next intact
 *   record (blq__dump_resync), so a record after the damage has the same
 *   index for both (its location, the checkpoint's bit). A file of another
 *   version than the dump's is damage (its
 *   reader would quarantine it). Nothing is written or locked: the file's
 *   checkpoint is only read (blq__ckpt_load) to say which records are done
 *   and how many claims the file had; whether a restorer holds the file is
 *   read from /proc/locks (its flock, by device and inode) rather than by
 *   trying the lock, which would make a restorer's claim skip the file.
 *   A file that a restorer removes or moves between the listing and the
 *   open is reported gone; one removed while read is read all the same
 *   (the open descriptor keeps its data).
 * - Writing goes through the fs writer (blq_dump_fs_writer_new): salvage
 *   and append publish a new file under the dump's mask, written to a
 *   hidden temporary name, fsync'd, renamed, the directory fsync'd.
 * - Deleting works under the restorer's own lock, the file's exclusive
 *   flock, taken without waiting: a file a restorer holds is skipped and
 *   reported, never changed under it, and while the inspector holds it no
 *   restorer claims it (they skip locked files). A file left with no
 *   record to restore is unlinked, then its checkpoint (the order of
 *   fs_commit). Otherwise the kept records (not selected, not done by the
 *   checkpoint) are written by the fs writer into a hidden directory of
 *   the dump's directory, that new file is locked too, renamed over the
 *   old one, the directory fsync'd, and a checkpoint carrying the old
 *   claim count is stored for the new inode before the lock is let go: a
 *   restorer sees the old file or the new one, never both or half, and a
 *   redelivery is still marked as one. A crash in between leaves either
 *   the old file (and a hidden directory, which no reader looks into) or
 *   the new one without its checkpoint (its records then come with
 *   deliveries 0: a duplicate is possible, no loss).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dump_fs.h"
#include "dump_fs_checkpoint.h"
#include "errorf.h"
#include "inspect.h"

/* An open dump file, read whole. */
typedef struct ifile {
	char path[PATH_MAX + 256];
	const char *name;
	int fd;
	struct stat st;
	unsigned char *buf;
	size_t len;
	int hdr; /* BLQ__DUMP_OK or the header's damage; 0: not read (too large) */
	unsigned format;
	uint64_t version;
	blq__ckpt ck; /* zero when the file has no valid checkpoint */
	char bad[128]; /* file_open's 2: why it cannot be read */
} ifile;

static void file_close(ifile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->buf);
	free(f->ck.bits);
	f->fd = -1;
	f->buf = NULL;
	f->ck.bits = NULL;
}

/* Opens and reads a->path/name: 1 read, 0 gone (no such file: a restorer
 * took it), 2 unreadable (f->bad says why: not a regular file, a symbolic
 * link, no permission; nothing else of f is set), negative error. The
 * fs reader opens its files the same way (O_NOFOLLOW, regular files
 * only), so what is unreadable here is never restored either. */
static int file_open(const blq__iarea *a, const char *name, ifile *f, blq_error *err)
{
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	int n = snprintf(f->path, sizeof(f->path), "%s/%s", a->path, name);
	if (n < 0 || (size_t)n >= sizeof(f->path))
		return blq__error_set(err, BLQ_EINVAL, "\"%s/%s\": path too long", a->path, name);
	f->name = strrchr(f->path, '/') + 1;
	f->fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (f->fd < 0 && errno == ENOENT)
		return 0;
	if (f->fd < 0) {
		struct stat l;
		bool link = errno == ELOOP && lstat(f->path, &l) == 0 && S_ISLNK(l.st_mode);
		if (link)
			snprintf(f->bad, sizeof(f->bad), "a symbolic link (dump files are "
				 "never followed through links)");
		else
			snprintf(f->bad, sizeof(f->bad), "cannot open: %s", strerror(errno));
		return 2;
	}
	if (fstat(f->fd, &f->st) != 0 || !S_ISREG(f->st.st_mode)) {
		snprintf(f->bad, sizeof(f->bad), "not a regular file (%s)",
			 S_ISDIR(f->st.st_mode) ? "a directory"
			 : S_ISFIFO(f->st.st_mode) ? "a FIFO"
			 : S_ISSOCK(f->st.st_mode) ? "a socket"
			 : S_ISCHR(f->st.st_mode) || S_ISBLK(f->st.st_mode) ? "a device"
									    : "of another type");
		close(f->fd);
		f->fd = -1;
		return 2;
	}
	if ((uint64_t)f->st.st_size <= BLQ__FS_FILE_MAX) {
		int rc = blq__fs_read_all(f->fd, (size_t)f->st.st_size, &f->buf, &f->len);
		if (rc != 0) {
			int e = errno;
			file_close(f);
			return rc == BLQ_ENOMEM
				       ? blq__error_set(err, rc, "inspect: out of memory")
				       : blq__error_set(err, rc, "cannot read \"%s\": %s", f->path,
							strerror(e));
		}
		f->hdr = blq__dump_header_check(f->buf, f->len, &f->format, &f->version);
	}
	char ckpt[PATH_MAX + 300];
	if (blq__ckpt_path(f->path, ckpt, sizeof(ckpt)))
		blq__ckpt_load(ckpt, &f->st, &f->ck); /* read only; zero when none */
	return 1;
}

static bool ck_done(const blq__ckpt *c, uint64_t i)
{
	if (i < c->prefix)
		return true;
	uint64_t k = i - c->prefix;
	return k < c->nbits && (c->bits[k / 8] >> (k % 8) & 1u);
}

static uint64_t mtime_ns(const struct stat *st)
{
	return (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec;
}

/* Called for each good record; nonzero stops the walk. */
typedef int (*rec_fn)(void *ctx, const ifile *f, uint64_t index, size_t off,
		      const blq_dump_record *rec);

/* Where and how a file is damaged (walk). */
typedef struct damage {
	size_t at;         /* offset of the first damage */
	uint64_t spans;    /* damaged spans skipped by a resync */
	uint64_t skipped;  /* their bytes; the whole file when no record is read */
	char why[128];     /* the first damage's kind, in words */
} damage;

/* Hands out f's intact records: a damaged record does not end the walk,
 * which resynchronises on the next intact one (blq__dump_resync, as the
 * fs reader does, so both give the same records the same indices).
 * Returns 0 when the file is whole, else the first damage's code with
 * dm filled. A version other than the dump's is no damage: each record
 * carries the file's. *stopped when fn stopped it. */
static int walk(const ifile *f, rec_fn fn, void *ctx, damage *dm,
		bool *stopped)
{
	blq_dump_record rec;
	size_t off = BLQ__DUMP_HEADER, cap = sizeof(dm->why);
	char *why = dm->why;
	int first = 0;

	memset(dm, 0, sizeof(*dm));
	*stopped = false;
	if (f->hdr == 0) {
		snprintf(why, cap, "file larger than %llu bytes",
			 (unsigned long long)BLQ__FS_FILE_MAX);
		dm->skipped = (uint64_t)f->st.st_size;
		return BLQ__DUMP_TOO_LONG;
	}
	size_t *at = &dm->at;
	dm->skipped = f->len; /* until a record is read */
	if (f->hdr != BLQ__DUMP_OK) {
		if (f->hdr == BLQ__DUMP_BAD_FORMAT) {
			*at = 4;
			snprintf(why, cap, "unknown format %u (flags %#x)", f->buf[4] | f->buf[5] << 8,
				 (unsigned)(f->buf[6] | f->buf[7] << 8));
		} else {
			snprintf(why, cap, "%s", blq__dump_parse_str(f->hdr));
		}
		return f->hdr;
	}
	dm->skipped = 0;
	for (uint64_t i = 0;;) {
		size_t start = off;
		int rc = blq__dump_rec_parse(f->buf, f->len, f->format, &off, &rec);
		if (rc == BLQ__DUMP_END)
			return first;
		if (rc != BLQ__DUMP_OK) {
			if (first == 0) {
				first = rc;
				*at = start;
				snprintf(why, cap, "%s", blq__dump_parse_str(rc));
			}
			off = blq__dump_resync(f->buf, f->len, f->format, start);
			dm->spans++;
			dm->skipped += off - start;
			continue;
		}
		rec.version = f->version;
		rec.index = i;
		if (fn != NULL && fn(ctx, f, i, start, &rec) != 0) {
			*stopped = true;
			return first;
		}
		i++;
	}
}

/* The area's files matching its glob, sorted by name; globfree(g) after,
 * whatever it returned. */
static int list_files(const blq__iarea *a, glob_t *g, blq_error *err)
{
	char pattern[PATH_MAX + 260];

	memset(g, 0, sizeof(*g)); /* so globfree is right whatever happens */
	snprintf(pattern, sizeof(pattern), "%s/%s", a->path, a->match);
	int e = glob(pattern, GLOB_ERR, NULL, g);
	if (e == GLOB_NOMATCH || (e == GLOB_ABORTED && errno == ENOENT))
		return 0;
	if (e != 0)
		return blq__error_set(err, BLQ_EIO, "directory \"%s\": cannot list (glob error %d)",
				      a->path, e);
	return 0;
}

static const char *base_of(const char *path)
{
	return strrchr(path, '/') + 1;
}

int blq__ifs_check(const blq__iarea *a, const char *field, blq_error *err)
{
	struct stat st;
	glob_t g;

	if (stat(a->path, &st) != 0) {
		if (errno == ENOENT && a->area == BLQ_INSPECT_QUARANTINE)
			return 0; /* no file was quarantined yet */
		return blq__error_set(err, BLQ_EINVAL, "%s: \"%s\": %s", field, a->path,
				      strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		return blq__error_set(err, BLQ_EINVAL, "%s: \"%s\": not a directory", field, a->path);
	if (access(a->path, R_OK | X_OK) != 0)
		return blq__error_set(err, BLQ_EINVAL, "%s: \"%s\": %s", field, a->path,
				      strerror(errno));
	if (a->area == BLQ_INSPECT_QUARANTINE)
		return 0; /* damaged files are what it is for */
	int rc = list_files(a, &g, err);
	size_t dumps = 0, foreign = 0;
	if (rc != 0 || g.gl_pathc == 0) {
		globfree(&g);
		return rc;
	}
	for (size_t i = 0; i < g.gl_pathc && dumps == 0; i++) {
		char magic[4];
		int fd = open(g.gl_pathv[i], O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd < 0 && errno == ENOENT)
			continue; /* consumed since the listing (a restorer): no evidence */
		if (fd >= 0 && pread(fd, magic, 4, 0) == 4 && memcmp(magic, BLQ__DUMP_MAGIC, 4) == 0)
			dumps++;
		else
			foreign++;
		if (fd >= 0)
			close(fd);
	}
	/* Refused only on evidence: a file that is there and is not a dump's.
	 * Files that all went away are a dump being emptied. */
	if (dumps == 0 && foreign > 0)
		rc = blq__error_set(err, BLQ_EINVAL,
				    "%s: \"%s\": not a dump directory: none of its %zu files "
				    "matching \"%s\" starts with \"" BLQ__DUMP_MAGIC "\"",
				    field, a->path, g.gl_pathc, a->match);
	globfree(&g);
	return rc;
}

/* ---- list ---- */

/* True when /proc/locks shows a flock on the file (a restorer holds it). */
static bool held(const struct stat *st)
{
	char line[256], want[64];
	FILE *p = fopen("/proc/locks", "re");
	bool found = false;

	if (p == NULL)
		return false;
	snprintf(want, sizeof(want), " %02x:%02x:%llu ", major(st->st_dev), minor(st->st_dev),
		 (unsigned long long)st->st_ino);
	while (!found && fgets(line, sizeof(line), p) != NULL)
		found = strstr(line, "FLOCK") != NULL && strstr(line, want) != NULL;
	fclose(p);
	return found;
}

typedef struct list_acc {
	blq_inspect_part *p;
	const blq__ckpt *ck;
	uint64_t mtime;
} list_acc;

static int list_rec(void *ctx, const ifile *f, uint64_t index, size_t off,
		    const blq_dump_record *rec)
{
	list_acc *a = ctx;
	uint64_t t = blq__itime(&rec->why, a->mtime);

	(void)f, (void)off;
	a->p->records++;
	a->p->done += ck_done(a->ck, index);
	if (a->p->oldest_ns == 0 || t < a->p->oldest_ns)
		a->p->oldest_ns = t;
	if (t > a->p->newest_ns)
		a->p->newest_ns = t;
	return 0;
}

int blq__ifs_list(blq_inspect *in, const blq__iarea *a, blq_inspect_part_fn fn, void *ctx,
		  bool *stop, blq_error *err)
{
	glob_t g;
	int rc = list_files(a, &g, err);

	for (size_t i = 0; rc == 0 && i < g.gl_pathc && !*stop; i++) {
		ifile f;
		char loc[BLQ_INSPECT_LOC_MAX];
		damage dm;
		bool stopped;
		int k = file_open(a, base_of(g.gl_pathv[i]), &f, err);
		if (k < 0)
			rc = k;
		if (k <= 0)
			continue; /* gone meanwhile: not a part any more */
		snprintf(loc, sizeof(loc), "%s/%s", blq_inspect_area_name(a->area), f.name);
		blq_inspect_part p = {.loc = loc, .area = a->area, .name = f.name};
		if (k == 2) {
			p.unreadable = f.bad;
		} else {
			p.bytes = (uint64_t)f.st.st_size;
			p.held = held(&f.st);
			list_acc acc = {&p, &f.ck, mtime_ns(&f.st)};
			p.damaged = walk(&f, list_rec, &acc, &dm, &stopped) != 0;
		}
		if (f.hdr == BLQ__DUMP_OK) {
			p.format = f.format;
			p.version = f.version;
			p.other_version = in->version_set && f.version != in->version;
		}
		*stop = fn(ctx, &p) != 0;
		file_close(&f);
	}
	globfree(&g);
	return rc;
}

/* ---- scan ---- */

/* Record offsets, gathered in order. */
typedef struct offs_acc {
	size_t *offs;
	size_t n, cap;
	bool nomem;
} offs_acc;

/* Appends off; 1 (stop the walk) when out of memory. */
static int offs_push(offs_acc *o, size_t off)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		size_t *p = realloc(o->offs, cap * sizeof(*p));
		if (p == NULL) {
			o->nomem = true;
			return 1;
		}
		o->offs = p;
		o->cap = cap;
	}
	o->offs[o->n++] = off;
	return 0;
}

typedef struct scan_acc {
	const blq__iarea *a;
	blq__iemit *e;
	char part[280]; /* "quarantine/" and a name: room for "#INDEX@OFFSET" */
	bool collect; /* newest first: offsets gathered, handed out after */
	offs_acc o;
} scan_acc;

static int emit_rec(scan_acc *s, const ifile *f, uint64_t index, size_t off,
		    const blq_dump_record *rec)
{
	char loc[BLQ_INSPECT_LOC_MAX];
	snprintf(loc, sizeof(loc), "%s#%llu@%zu", s->part, (unsigned long long)index, off);
	blq_inspect_record r = {.loc = loc, .part = s->part, .state = BLQ_INSPECT_OK,
				.damage = "", .index = index, .offset = off, .data = rec->data,
				.len = rec->len, .size = BLQ__DUMP_REC_HEADER + blq__get32(f->buf + off),
				.restores = rec->restores, .deliveries = f->ck.claims,
				.version = rec->version, .time_ns = blq__itime(&rec->why, mtime_ns(&f->st)),
				.done = ck_done(&f->ck, index), .consumer = "", .why = rec->why};
	return blq__iemit_one(s->e, &r);
}

static int scan_rec(void *ctx, const ifile *f, uint64_t index, size_t off,
		    const blq_dump_record *rec)
{
	scan_acc *s = ctx;

	return s->collect ? offs_push(&s->o, off) : emit_rec(s, f, index, off, rec);
}

static void emit_report(scan_acc *s, enum blq_inspect_state state, const char *why, size_t at,
			const damage *dm)
{
	blq_inspect_record r = {.loc = s->part, .part = s->part, .state = state, .damage = why,
				.offset = at, .consumer = ""};
	if (dm != NULL) {
		r.skipped = dm->skipped;
		r.spans = dm->spans;
	}
	blq__iemit_one(s->e, &r);
}

static int scan_file(blq_inspect *in, const blq__iarea *a, const char *name, bool reverse,
		     blq__iemit *e, blq_error *err)
{
	scan_acc s = {.a = a, .e = e, .collect = reverse};
	damage dm;
	bool stopped;
	ifile f;

	snprintf(s.part, sizeof(s.part), "%s/%s", blq_inspect_area_name(a->area), name);
	int k = file_open(a, name, &f, err);
	if (k == 0 || k == 2)
		emit_report(&s, k == 0 ? BLQ_INSPECT_GONE : BLQ_INSPECT_UNREADABLE,
			    k == 0 ? "gone (restored, moved or deleted)" : f.bad, 0, NULL);
	if (k != 1)
		return k < 0 ? k : 0;
	int damaged = walk(&f, scan_rec, &s, &dm, &stopped);
	if (s.o.nomem) {
		file_close(&f);
		free(s.o.offs);
		return blq__error_set(err, BLQ_ENOMEM, "inspect: out of memory");
	}
	if (!reverse) {
		if (damaged != 0 && !e->stop)
			emit_report(&s, BLQ_INSPECT_DAMAGED, dm.why, dm.at, &dm);
	} else {
		if (damaged != 0)
			emit_report(&s, BLQ_INSPECT_DAMAGED, dm.why, dm.at, &dm);
		for (size_t i = s.o.n; i-- > 0 && !e->stop;) {
			blq_dump_record rec;
			size_t off = s.o.offs[i];
			blq__dump_rec_parse(f.buf, f.len, f.format, &off, &rec);
			rec.version = f.version;
			emit_rec(&s, &f, i, s.o.offs[i], &rec);
		}
	}
	free(s.o.offs);
	file_close(&f);
	return 0;
}

int blq__ifs_scan(blq_inspect *in, const blq__iarea *a, const char *file, bool reverse,
		  blq__iemit *e, blq_error *err)
{
	if (file != NULL)
		return scan_file(in, a, file, reverse, e, err);
	glob_t g;
	int rc = list_files(a, &g, err);
	for (size_t k = 0; rc == 0 && k < g.gl_pathc && !e->stop; k++) {
		size_t i = reverse ? g.gl_pathc - 1 - k : k;
		rc = scan_file(in, a, base_of(g.gl_pathv[i]), reverse, e, err);
	}
	globfree(&g);
	return rc;
}

/* ---- writing through the fs writer ---- */

static int write_batch(const char *dir, const char *mask, const char *match, const blq__buf *b,
		       size_t count, unsigned format, uint64_t version, blq_error *err)
{
	blq_dump_fs_config c = {.directory = dir, .file_mask = mask[0] ? mask : NULL,
				.match = match};
	blq_dump_writer *w = blq_dump_fs_writer_new(&c, err);
	size_t done;

	if (w == NULL)
		return BLQ_EINVAL;
	blq_dump_batch batch = {.version = version, .data = b->p, .len = b->len, .count = count,
				.format = format};
	int rc = w->write(w, &batch, &done, err);
	blq_dump_writer_free(w);
	return rc;
}

static const char *dump_match(const blq_inspect *in)
{
	const blq__iarea *d = &in->areas[BLQ_INSPECT_DUMP];
	return d->kind == BLQ__IAREA_DIR ? d->match : NULL;
}

int blq__ifs_append(blq_inspect *in, const blq__buf *b, size_t count, unsigned format,
		    uint64_t version, blq_error *err)
{
	char mask[256];
	int rc = blq__ifs_mask(in, mask, err);
	if (rc != 0)
		return rc;
	return write_batch(in->areas[BLQ_INSPECT_DUMP].path, mask, dump_match(in), b, count,
			   format, version, err);
}

/* n digits at p. */
static bool digits(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	return true;
}

/* Where the default mask's stem ("%Y-%m-%d--%H-%M-%S--%i": 2026-11-27--
 * 13-11-42--000071) starts in name, and its length; false when absent. */
static bool find_stem(const char *name, size_t *at, size_t *len)
{
	size_t n = strlen(name);
	for (size_t i = 0; i + 28 <= n; i++) {
		const char *p = name + i;
		if (!digits(p, 4) || p[4] != '-' || !digits(p + 5, 2) || p[7] != '-' ||
		    !digits(p + 8, 2) || memcmp(p + 10, "--", 2) != 0 || !digits(p + 12, 2) ||
		    p[14] != '-' || !digits(p + 15, 2) || p[17] != '-' || !digits(p + 18, 2) ||
		    memcmp(p + 20, "--", 2) != 0 || !digits(p + 22, 6))
			continue;
		size_t k = 28;
		while (p[k] >= '0' && p[k] <= '9')
			k++;
		*at = i;
		*len = k;
		return true;
	}
	return false;
}

/* "%" doubled: a literal part of a strftime mask. */
static size_t put_literal(char *out, size_t cap, const char *s, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k + 2 < cap; i++) {
		if (s[i] == '%')
			out[k++] = '%';
		out[k++] = s[i];
	}
	out[k] = '\0';
	return k;
}

/* The mask the area's file names show: 1 found (mask set), 0 none has the
 * default stem, BLQ_EINVAL two disagree. */
static int names_mask(const blq__iarea *a, char *mask, blq_error *err)
{
	glob_t g;
	char first[256] = "";
	int rc = list_files(a, &g, err), found = 0;

	for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++) {
		const char *name = base_of(g.gl_pathv[i]);
		size_t at, len;
		if (!find_stem(name, &at, &len))
			continue;
		char m[256];
		size_t k = put_literal(m, sizeof(m) - 40, name, at);
		k += (size_t)snprintf(m + k, sizeof(m) - k, "%%Y-%%m-%%d--%%H-%%M-%%S--%%i");
		put_literal(m + k, sizeof(m) - k, name + at + len, strlen(name + at + len));
		if (found == 0) {
			snprintf(mask, 256, "%s", m);
			snprintf(first, sizeof(first), "%s", name);
			found = 1;
		} else if (strcmp(m, mask) != 0) {
			rc = blq__error_set(err, BLQ_EINVAL,
					    "cannot know the names to write into %s: its files are "
					    "named two ways (\"%s\", \"%s\"); give the dump's "
					    "match (blq-dlq --match 'KEY.*.bin') or a file mask",
					    a->path, first, name);
		}
	}
	globfree(&g);
	return rc != 0 ? rc : found;
}

int blq__ifs_mask(blq_inspect *in, char *mask, blq_error *err)
{
	snprintf(mask, 256, "%s", in->mask);
	if (in->mask_set)
		return 0;
	/* The dump's own names first: they are what its reader takes. Then
	 * the dead store's (the restorer names them with the dump's mask
	 * when it is configured like blq-demo's). */
	static const enum blq_inspect_area order[] = {BLQ_INSPECT_DUMP, BLQ_INSPECT_DEAD};
	for (size_t i = 0; i < 2; i++) {
		const blq__iarea *a = &in->areas[order[i]];
		if (a->kind != BLQ__IAREA_DIR)
			continue;
		int rc = names_mask(a, mask, err);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	snprintf(mask, 256, "%s", in->mask);
	return 0;
}

int blq__ifs_version(const blq__iarea *a, blq__iversion *out, blq_error *err)
{
	glob_t g;
	int rc = list_files(a, &g, err);

	memset(out, 0, sizeof(*out));
	/* Newest (last by name) first: out->v is the newest file's. Only the
	 * header is read, so this stays cheap on a large dump. */
	for (size_t k = g.gl_pathc; rc == 0 && k-- > 0;) {
		unsigned char h[BLQ__DUMP_HEADER];
		unsigned format;
		uint64_t v;
		int fd = open(g.gl_pathv[k], O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd < 0)
			continue;
		bool ok = pread(fd, h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
			  blq__dump_header_check(h, sizeof(h), &format, &v) == BLQ__DUMP_OK;
		close(fd);
		if (!ok)
			continue; /* damage says nothing of the version */
		if (!out->found) {
			out->found = true;
			out->v = v;
			snprintf(out->where, sizeof(out->where), "%s/%s",
				 blq_inspect_area_name(a->area), base_of(g.gl_pathv[k]));
		} else if (v != out->v && !out->mixed) {
			out->mixed = true;
			out->other = v;
		}
	}
	globfree(&g);
	return rc;
}

typedef struct copy_acc {
	blq__buf b;
	size_t count;
	unsigned format; /* of the copy: 2 once a record says why */
	const blq__ckpt *skip; /* records done here are left out; NULL: none */
	const bool *drop;      /* records selected here are left out; NULL: none */
	bool nomem;
} copy_acc;

/* First pass: the copy's format. */
static int copy_format(void *ctx, const ifile *f, uint64_t index, size_t off,
		       const blq_dump_record *rec)
{
	copy_acc *c = ctx;

	(void)f, (void)index, (void)off;
	c->format = blq__iformat_for(&rec->why, c->format);
	return 0;
}

static int copy_rec(void *ctx, const ifile *f, uint64_t index, size_t off,
		    const blq_dump_record *rec)
{
	copy_acc *c = ctx;

	(void)f, (void)off;
	if ((c->skip != NULL && ck_done(c->skip, index)) || (c->drop != NULL && c->drop[index]))
		return 0;
	if (blq__dump_rec_append(&c->b, c->format, rec->data, rec->len, rec->restores,
				 &rec->why) != 0) {
		c->nomem = true;
		return 1;
	}
	c->count++;
	return 0;
}

/* mkdir -p dir: each missing component made with mode 0700 (the fs
 * writer's files are 0600), and the directory it was made in fsync'd:
 * the writer makes durable the names in dir, not dir's own name, and a
 * power cut took a salvage's whole output with a directory made here
 * (powercut_redrive found it). 0, or BLQ_EINVAL naming the path. */
static int make_dirs(const char *dir, blq_error *err)
{
	char p[PATH_MAX];
	struct stat st;
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof(p))
		return blq__error_set(err, BLQ_EINVAL, "out_dir: \"%s\": empty or too long", dir);
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char c = p[i];
		p[i] = '\0';
		if (mkdir(p, 0700) == 0) {
			if (blq__sync_parent(p) != 0)
				return blq__error_set(err, BLQ_EIO,
						      "out_dir: cannot fsync the directory of \"%s\": %s",
						      p, strerror(errno));
		} else if (errno != EEXIST) {
			return blq__error_set(err, BLQ_EINVAL, "out_dir: cannot make \"%s\": %s", p,
					      strerror(errno));
		}
		p[i] = c;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return blq__error_set(err, BLQ_EINVAL, "out_dir: \"%s\": not a directory", dir);
	return 0;
}

int blq__ifs_salvage(blq_inspect *in, const blq__iarea *a, const char *file, const char *out_dir,
		     const char *mask, const uint64_t *version, uint64_t *written, blq_error *err)
{
	ifile f;
	copy_acc c = {.format = 1};
	damage dm;
	bool stopped;
	int rc = file_open(a, file, &f, err);

	if (rc == 0)
		return blq__error_set(err, BLQ_EINVAL, "salvage: \"%s/%s\": no such file", a->path,
				      file);
	if (rc == 2)
		return blq__error_set(err, BLQ_EINVAL, "salvage: \"%s/%s\": %s", a->path, file,
				      f.bad);
	if (rc < 0)
		return rc;
	rc = 0;
	if (f.hdr != BLQ__DUMP_OK) {
		walk(&f, NULL, NULL, &dm, &stopped);
		rc = blq__error_set(err, BLQ_EINVAL, "salvage: \"%s\": not a dump file: %s", f.path,
				    dm.why);
	} else {
		/* Another version is no damage: the copy is written as the
		 * dump's version when known (its reader takes it), else the
		 * file's. Every intact record, after a damaged span too. */
		c.skip = &f.ck; /* records a restorer marked done: restored already */
		walk(&f, copy_format, &c, &dm, &stopped);
		walk(&f, copy_rec, &c, &dm, &stopped);
		if (c.nomem)
			rc = blq__error_set(err, BLQ_ENOMEM, "salvage: out of memory");
		else if (c.count > 0 && (rc = make_dirs(out_dir, err)) == 0)
			rc = write_batch(out_dir, mask, dump_match(in), &c.b, c.count, c.format,
					 version != NULL ? *version : f.version, err);
	}
	if (rc == 0 && written != NULL)
		*written = c.count;
	blq__buf_free(&c.b);
	file_close(&f);
	return rc;
}

/* ---- delete ---- */

static int note_off(void *ctx, const ifile *f, uint64_t index, size_t off,
		    const blq_dump_record *rec)
{
	(void)f, (void)index, (void)rec;
	return offs_push(ctx, off);
}

/* Removes the file (held under its lock), durably (its directory
 * fsync'd), then its checkpoint. Without the fsync a power cut brought
 * the file back after a redrive had reported it moved, so its records
 * came twice (powercut_redrive found it); the checkpoint, if it comes
 * back, names a file that is gone and is swept. */
static int remove_file(const ifile *f, blq_error *err)
{
	char ckpt[PATH_MAX + 300];

	if (unlink(f->path) != 0 && errno != ENOENT)
		return blq__error_set(err, BLQ_EIO, "cannot remove \"%s\": %s", f->path,
				      strerror(errno));
	if (blq__sync_parent(f->path) != 0)
		return blq__error_set(err, BLQ_EIO, "cannot fsync the directory of \"%s\": %s",
				      f->path, strerror(errno));
	if (blq__ckpt_path(f->path, ckpt, sizeof(ckpt)))
		unlink(ckpt);
	return 0;
}

/* Writes c's records as f's new content, renamed over f (see the design
 * note above), with f's claims carried into a checkpoint for it. */
static int rewrite(const blq__iarea *a, const ifile *f, const copy_acc *c, blq_error *err)
{
	char tmpdir[PATH_MAX + 64], tmp[PATH_MAX + 128], ckpt[PATH_MAX + 300];
	glob_t g = {0};
	int fd = -1, rc;

	snprintf(tmpdir, sizeof(tmpdir), "%s/.blqinspect-XXXXXX", a->path);
	if (mkdtemp(tmpdir) == NULL)
		return blq__error_set(err, BLQ_EIO, "cannot make a directory in \"%s\": %s", a->path,
				      strerror(errno));
	rc = write_batch(tmpdir, "rewrite-%i", "*", &c->b, c->count, f->format, f->version, err);
	if (rc == 0) {
		snprintf(tmp, sizeof(tmp), "%s/*", tmpdir);
		if (glob(tmp, 0, NULL, &g) != 0 || g.gl_pathc != 1)
			rc = blq__error_set(err, BLQ_EIO, "rewrite of \"%s\": no file written", f->path);
	}
	struct stat st;
	if (rc == 0) {
		snprintf(tmp, sizeof(tmp), "%s", g.gl_pathv[0]);
		fd = open(tmp, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0 || fstat(fd, &st) != 0 ||
		    rename(tmp, f->path) != 0)
			rc = blq__error_set(err, BLQ_EIO, "cannot rename \"%s\" over \"%s\": %s", tmp,
					    f->path, strerror(errno));
	}
	if (rc == 0) {
		int dfd = open(a->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 || fsync(dfd) != 0)
			rc = blq__error_set(err, BLQ_EIO, "cannot fsync directory \"%s\": %s",
					    a->path, strerror(errno));
		if (dfd >= 0)
			close(dfd);
	}
	if (rc == 0 && blq__ckpt_path(f->path, ckpt, sizeof(ckpt))) {
		blq__ckpt k = {.claims = f->ck.claims};
		blq__ckpt_identify(&k, &st);
		if (k.claims == 0)
			unlink(ckpt); /* none, or only done marks: all left out */
		else if (blq__ckpt_store(ckpt, &k, true) != 0)
			rc = blq__error_set(err, BLQ_EIO, "checkpoint \"%s\": %s", ckpt,
					    strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	if (g.gl_pathc > 0) {
		if (rc != 0)
			unlink(g.gl_pathv[0]);
		globfree(&g);
	}
	rmdir(tmpdir);
	return rc;
}

static int delete_file(blq_inspect *in, const blq__iarea *a, const char *name,
		       const blq_inspect_loc *const *locs, size_t n, blq__idel *d, blq_error *err)
{
	char part[BLQ_INSPECT_LOC_MAX], loc[BLQ_INSPECT_LOC_MAX];
	bool dry = d->flags & BLQ_INSPECT_DRY_RUN, stopped;
	offs_acc o = {0};
	copy_acc c = {0};
	damage dm;
	ifile f;
	struct stat now;
	int rc = file_open(a, name, &f, err);

	snprintf(part, sizeof(part), "%s/%s", blq_inspect_area_name(a->area), name);
	if (rc == 2)
		blq__idel_report(d, part, BLQ_INSPECT_REFUSED, true, 0, 0, NULL,
				 "%s: %s; left alone", part, f.bad);
	if (rc == 0)
		blq__idel_report(d, part, BLQ_INSPECT_NOT_FOUND, true, 0, 0, NULL,
				 "%s: no such file (restored, moved or deleted)", part);
	if (rc != 1)
		return rc < 0 ? rc : 0;
	rc = 0;
	/* The restorer's lock: held by one means skip; held by us means no
	 * restorer claims the file until we are done with it. */
	if (flock(f.fd, LOCK_EX | LOCK_NB) != 0) {
		blq__idel_report(d, part, BLQ_INSPECT_HELD, true, 0, 0, NULL,
				 "%s: a restorer holds it (locked); left alone, try again later",
				 part);
		goto out;
	}
	if (stat(f.path, &now) != 0 || now.st_ino != f.st.st_ino || now.st_dev != f.st.st_dev) {
		blq__idel_report(d, part, BLQ_INSPECT_NOT_FOUND, true, 0, 0, NULL,
				 "%s: replaced or removed meanwhile", part);
		goto out;
	}
	/* The checkpoint again, under the lock: one read before it may miss
	 * what a restorer marked done (and the claim it counted) before it
	 * let the file go, and those records would be kept as not done. */
	char ckpt[PATH_MAX + 300];
	free(f.ck.bits);
	if (!blq__ckpt_path(f.path, ckpt, sizeof(ckpt)) || !blq__ckpt_load(ckpt, &f.st, &f.ck))
		memset(&f.ck, 0, sizeof(f.ck));
	int damaged = walk(&f, note_off, &o, &dm, &stopped);
	if (o.nomem) {
		rc = blq__error_set(err, BLQ_ENOMEM, "delete: out of memory");
		goto out;
	}
	if (n == 0) { /* the whole file */
		if (!dry && (rc = remove_file(&f, err)) != 0)
			goto out;
		blq__idel_report(d, part, BLQ_INSPECT_DELETED, true, o.n, 0, NULL,
				 "%s: %s (%zu records%s)", part, dry ? "would be removed" : "removed",
				 o.n, damaged ? ", damaged" : "");
		goto out;
	}
	bool *drop = calloc(o.n ? o.n : 1, sizeof(*drop));
	if (drop == NULL) {
		rc = blq__error_set(err, BLQ_ENOMEM, "delete: out of memory");
		goto out;
	}
	size_t selected = 0, kept = 0;
	for (size_t i = 0; i < n; i++) {
		const blq_inspect_loc *l = locs[i];
		blq_inspect_loc_format(l, loc, sizeof(loc));
		if (l->index >= o.n || o.offs[l->index] != l->offset)
			blq__idel_report(d, loc, BLQ_INSPECT_NOT_FOUND, false, 0, 0, NULL,
					 "%s: no record %llu at offset %llu (stale location?)", loc,
					 (unsigned long long)l->index, (unsigned long long)l->offset);
		else if (!drop[l->index] && (drop[l->index] = true))
			selected++;
	}
	for (size_t i = 0; i < o.n; i++)
		kept += !drop[i] && !ck_done(&f.ck, i);
	if (selected == 0) {
		free(drop);
		goto out;
	}
	if (damaged != 0) {
		/* Its intact records after the damage have stable locations,
		 * but a rewrite would drop the damaged spans unseen: the file
		 * is the evidence. */
		blq__idel_report(d, part, BLQ_INSPECT_REFUSED, true, 0, 0, NULL,
				 "%s: damaged (%s at offset %zu): delete it whole, or salvage it "
				 "first; nothing changed",
				 part, dm.why, dm.at);
	} else if (kept == 0) {
		if (dry || (rc = remove_file(&f, err)) == 0)
			blq__idel_report(d, part, BLQ_INSPECT_DELETED, true, selected, 0, NULL,
					 "%s: %s (every record left was selected or done)", part,
					 dry ? "would be removed" : "removed");
	} else {
		c.format = f.format;
		c.skip = &f.ck;
		c.drop = drop;
		walk(&f, copy_rec, &c, &dm, &stopped);
		if (c.nomem)
			rc = blq__error_set(err, BLQ_ENOMEM, "delete: out of memory");
		else if (dry || (rc = rewrite(a, &f, &c, err)) == 0)
			blq__idel_report(d, part, BLQ_INSPECT_REWRITTEN, true, selected, kept, NULL,
					 "%s: %s without %zu records (%zu kept)", part,
					 dry ? "would be rewritten" : "rewritten", selected, kept);
	}
	free(drop);
out:
	blq__buf_free(&c.b);
	free(o.offs);
	file_close(&f); /* lets the lock go */
	return rc;
}

int blq__ifs_delete(blq_inspect *in, const blq__iarea *a, const char *file,
		    const blq_inspect_loc *const *locs, size_t n, blq__idel *d, blq_error *err)
{
	if (file != NULL)
		return delete_file(in, a, file, locs, n, d, err);
	glob_t g;
	int rc = list_files(a, &g, err);
	for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++)
		rc = delete_file(in, a, base_of(g.gl_pathv[i]), NULL, 0, d, err);
	globfree(&g);
	return rc;
}
