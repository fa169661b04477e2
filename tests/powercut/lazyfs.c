/*
 * lazyfs: a FUSE 3 test filesystem that forgets what was not synced.
 *
 * Usage: lazyfs BACKING MOUNT [-f] [-d]
 *   mounts MOUNT (single-threaded); without -f it returns once mounted.
 *   echo cut > MOUNT/.lazyfs-ctl   drops everything not synced (a power cut)
 *   fusermount3 -u MOUNT           stops it (what was not synced is lost)
 *
 * The idea is Jepsen's LazyFS (keep writes in memory until they are
 * synced, drop them on command); no code of it is used here.
 *
 * DESIGN
 *
 * BACKING holds the DURABLE state and nothing else:
 *   BACKING/ino-N   the data of file inode N as of its last fsync/fdatasync
 *   BACKING/dir-N   the names of directory inode N as of its last fsyncdir:
 *                   one line per entry, "TYPE MODE INO NAME\n" (f or d)
 *   inode 1 is the root. Each of these files is replaced atomically
 *   (written to a .tmp, fsync'd, renamed), so lazyfs itself dying leaves
 *   the last durable state whole.
 *
 * The CURRENT state, which processes see, lives in memory: every inode
 * with its whole contents (a full copy, loaded at mount), and every
 * directory's current name -> inode map. create, write, truncate, rename,
 * link, unlink, mkdir, rmdir, chmod and utimens change only memory.
 *   - fsync/fdatasync(file) writes the file's current contents to ino-N;
 *   - fsync of a directory (open O_DIRECTORY, fsync: FUSE's fsyncdir)
 *     writes that directory's current map to dir-N. It makes the names
 *     durable, not the inodes they point at: a file whose data was never
 *     fsync'd comes back empty, a directory never fsync'd itself empty.
 * A power cut (and a mount) throws memory away and loads the durable
 * state again: the tree reachable from dir-1. Inode files nothing
 * durable names are removed then (as fsck removes orphans).
 *
 * So the model, POSIX's minimum rather than what ext4 happens to do:
 *   (a) data written and not fsync'd is lost at a cut (the file keeps the
 *       contents of its last fsync; no partial write survives: a file's
 *       data is durable all at once, at its fsync);
 *   (b) a name created, renamed or linked is durable only once its
 *       directory is fsync'd: until then a cut takes it away (the old
 *       target of a rename over it comes back), even if the file's data
 *       was fsync'd; fsync of a file never makes its name durable;
 *   (c) an unlink or rmdir likewise: undone by a cut until the directory
 *       is fsync'd;
 *   (d) a rename between two directories is durable in each directory at
 *       that directory's fsync: with only the target synced, the file is
 *       in both after a cut (as a hard link), with only the source
 *       synced, in neither;
 *   (e) what was fsync'd (data) and whose directory was fsync'd (name)
 *       survives byte for byte, and so does its mode.
 * A file's mtime is kept with its data (as of its last fsync); its mode
 * is kept with its name (in the directory's listing, at that fsync).
 * Memory: every file's contents and every inode stay in memory until a
 * cut or unmount, unlinked ones too (a test filesystem: small files).
 * Not modelled: partial or reordered writes within a file (no torn
 * pages: data is all or nothing per fsync), other timestamps and
 * ownership (a directory's mtime comes back as the time of the cut,
 * atime is mtime, every file is the daemon's user's), xattrs, symlinks, special files, mmap (files are direct_io),
 * O_DIRECT, sizes beyond memory.
 *
 * The kernel keeps no cache of its own: entry, attribute and negative
 * timeouts are 0 and every file is direct_io, so after a cut every
 * lookup and read comes here. flock is left to the kernel, which applies
 * it locally on the mount (so two processes' locks conflict as on any
 * local filesystem); locks do not survive a cut.
 *
 * Open files at a cut: a cut is meant to happen with no process holding
 * files (the power-cut runs SIGKILL theirs first). A file handle opened
 * before a cut is stale after it: every operation on it fails with EIO
 * (a handle carries the cut generation it was opened in).
 *
 * The control file MOUNT/.lazyfs-ctl (not listed by readdir) takes
 * commands written to it: "cut" performs a power cut; the write returns
 * once it is done. A cut runs between two requests: lazyfs is
 * single-threaded, so no operation is ever half applied.
 *
 * Names may not contain '\n' (EINVAL): they are stored one per line.
 *
 * LAZYFS_FAULT=nofsync|nofsyncdir|nocut in the environment breaks one of
 * the three on purpose, to show that the tests can fail (docs/testing.md).
 */
#define FUSE_USE_VERSION 35
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

#define CTL_NAME "/.lazyfs-ctl"
#define CTL_FH UINT64_MAX

typedef struct ent {
	char *name;
	uint64_t ino;
} ent;

typedef struct node {
	uint64_t ino;
	int is_dir;
	mode_t mode;          /* permission bits */
	struct timespec mtime, ctime;
	/* file */
	char *data;
	size_t size, cap;
	/* directory: the current names */
	ent *ents;
	size_t nents, cents;
} node;

static char *g_backing;       /* absolute path of BACKING */
static node **g_nodes;        /* by inode number; NULL: none */
static size_t g_cnodes;
static uint64_t g_next_ino;
static uint64_t g_gen;        /* cut generation, carried by file handles */

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "lazyfs: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		die("out of memory");
	return q;
}

static node *get(uint64_t ino)
{
	return ino < g_cnodes ? g_nodes[ino] : NULL;
}

static node *node_new(uint64_t ino, int is_dir, mode_t mode)
{
	if (ino >= g_cnodes) {
		size_t n = g_cnodes ? g_cnodes : 64;
		while (n <= ino)
			n *= 2;
		g_nodes = xrealloc(g_nodes, n * sizeof *g_nodes);
		memset(g_nodes + g_cnodes, 0, (n - g_cnodes) * sizeof *g_nodes);
		g_cnodes = n;
	}
	node *n = calloc(1, sizeof *n);
	if (!n)
		die("out of memory");
	n->ino = ino;
	n->is_dir = is_dir;
	n->mode = mode & 07777;
	clock_gettime(CLOCK_REALTIME, &n->mtime);
	n->ctime = n->mtime;
	g_nodes[ino] = n;
	if (ino >= g_next_ino)
		g_next_ino = ino + 1;
	return n;
}

static void node_free(node *n)
{
	if (!n)
		return;
	free(n->data);
	for (size_t i = 0; i < n->nents; i++)
		free(n->ents[i].name);
	free(n->ents);
	free(n);
}

static void forget_all(void)
{
	for (size_t i = 0; i < g_cnodes; i++)
		node_free(g_nodes[i]);
	free(g_nodes);
	g_nodes = NULL;
	g_cnodes = 0;
	g_next_ino = 2;
}

static void touch(node *n)
{
	clock_gettime(CLOCK_REALTIME, &n->mtime);
	n->ctime = n->mtime;
}

/* ---- directories ---- */

static ent *dir_find(node *d, const char *name)
{
	for (size_t i = 0; i < d->nents; i++)
		if (strcmp(d->ents[i].name, name) == 0)
			return &d->ents[i];
	return NULL;
}

static void dir_add(node *d, const char *name, uint64_t ino)
{
	if (d->nents == d->cents) {
		d->cents = d->cents ? d->cents * 2 : 8;
		d->ents = xrealloc(d->ents, d->cents * sizeof *d->ents);
	}
	d->ents[d->nents].name = strdup(name);
	if (!d->ents[d->nents].name)
		die("out of memory");
	d->ents[d->nents++].ino = ino;
	touch(d);
}

static void dir_del(node *d, ent *e)
{
	free(e->name);
	*e = d->ents[--d->nents];
	touch(d);
}

/* Number of names (in current maps) that point at ino: its link count. */
static unsigned links_to(uint64_t ino)
{
	unsigned c = 0;
	for (size_t i = 0; i < g_cnodes; i++) {
		node *d = g_nodes[i];
		if (d && d->is_dir)
			for (size_t j = 0; j < d->nents; j++)
				c += d->ents[j].ino == ino;
	}
	return c;
}

/* Walks PATH from the root. On success *out is the node; with parent and
 * leaf given, they receive the last component's directory and name (the
 * node may then be missing: -ENOENT with *parent set). */
static int resolve(const char *path, node **out, node **parent, const char **leaf)
{
	node *cur = get(1), *par = NULL;
	const char *p = path, *name = NULL;
	static char comp[NAME_MAX + 1]; /* the last component; single-threaded */
	if (out)
		*out = NULL;
	if (parent)
		*parent = NULL;
	if (leaf)
		*leaf = NULL;
	while (*p == '/')
		p++;
	while (*p) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len > NAME_MAX)
			return -ENAMETOOLONG;
		if (!cur)
			return -ENOENT;
		if (!cur->is_dir)
			return -ENOTDIR;
		memcpy(comp, p, len);
		comp[len] = 0;
		par = cur;
		name = p;
		ent *en = dir_find(cur, comp);
		cur = en ? get(en->ino) : NULL;
		p += len;
		while (*p == '/')
			p++;
	}
	if (parent)
		*parent = par;
	if (leaf)
		*leaf = name ? comp : NULL;
	if (out)
		*out = cur;
	return cur ? 0 : -ENOENT;
}

/* ---- the durable state ---- */

static void bpath(char *buf, size_t len, char kind, uint64_t ino, const char *suffix)
{
	snprintf(buf, len, "%s/%s-%" PRIu64 "%s", g_backing, kind == 'f' ? "ino" : "dir", ino,
		 suffix);
}

/* Replaces BACKING's file for (kind, ino) with len bytes, atomically;
 * with mtime, the file's mtime (a file's fsync keeps its mtime too). */
static int put_durable(char kind, uint64_t ino, const char *data, size_t len,
		       const struct timespec *mtime)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	bpath(tmp, sizeof tmp, kind, ino, ".tmp");
	bpath(dst, sizeof dst, kind, ino, "");
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		off += (size_t)w;
	}
	if (mtime) {
		struct timespec ts[2] = {*mtime, *mtime};
		if (futimens(fd, ts) < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
	}
	if (fsync(fd) < 0 || close(fd) < 0)
		return -errno;
	if (rename(tmp, dst) < 0)
		return -errno;
	return 0;
}

/* LAZYFS_FAULT (tests of the tests only): "nofsync" makes fsync of a file,
 * "nofsyncdir" fsync of a directory, "nocut" a cut do nothing. */
static const char *g_fault = "";

static int sync_file(node *n)
{
	if (strcmp(g_fault, "nofsync") == 0)
		return 0;
	return put_durable('f', n->ino, n->data, n->size, &n->mtime);
}

static int sync_dir(node *d)
{
	if (strcmp(g_fault, "nofsyncdir") == 0)
		return 0;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < d->nents; i++) {
		node *n = get(d->ents[i].ino);
		if (!n)
			continue;
		fprintf(f, "%c %o %" PRIu64 " %s\n", n->is_dir ? 'd' : 'f', (unsigned)n->mode, n->ino,
			d->ents[i].name);
	}
	fclose(f);
	int rc = put_durable('d', d->ino, buf, len, NULL);
	free(buf);
	return rc;
}

static char *slurp(const char *path, size_t *len, struct timespec *mtime)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return NULL;
		die("%s: %s", path, strerror(errno));
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		die("%s: %s", path, strerror(errno));
	char *buf = xrealloc(NULL, (size_t)st.st_size + 1);
	size_t off = 0;
	for (;;) {
		ssize_t r = read(fd, buf + off, (size_t)st.st_size - off);
		if (r < 0)
			die("%s: %s", path, strerror(errno));
		if (r == 0)
			break;
		off += (size_t)r;
		if (off == (size_t)st.st_size)
			break;
	}
	close(fd);
	buf[off] = 0;
	*len = off;
	if (mtime)
		*mtime = st.st_mtim;
	return buf;
}

static void load_dir(node *d)
{
	char p[PATH_MAX];
	size_t len;
	bpath(p, sizeof p, 'd', d->ino, "");
	char *buf = slurp(p, &len, NULL);
	if (!buf)
		return; /* named but never synced itself: empty */
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char type;
		unsigned mode;
		uint64_t ino;
		int off = 0;
		if (sscanf(line, "%c %o %" SCNu64 " %n", &type, &mode, &ino, &off) != 3 || !off ||
		    ino < 2)
			die("%s: bad line \"%s\"", p, line);
		node *n = get(ino);
		if (!n) {
			n = node_new(ino, type == 'd', mode);
			if (n->is_dir) {
				load_dir(n);
			} else {
				char fp[PATH_MAX];
				bpath(fp, sizeof fp, 'f', ino, "");
				n->data = slurp(fp, &n->size, &n->mtime);
				n->cap = n->size;
			}
		}
		dir_add(d, line + off, ino);
	}
	free(buf);
}

/* Throws memory away and loads the durable state; removes what it does
 * not reach. */
static void load(void)
{
	forget_all();
	node *root = node_new(1, 1, 0755);
	load_dir(root);
	DIR *dp = opendir(g_backing);
	if (!dp)
		die("%s: %s", g_backing, strerror(errno));
	struct dirent *de;
	while ((de = readdir(dp))) {
		uint64_t ino;
		char kind[4];
		int off = 0;
		if (sscanf(de->d_name, "%3[a-z]-%" SCNu64 "%n", kind, &ino, &off) != 2)
			continue;
		int tmp = strcmp(de->d_name + off, ".tmp") == 0;
		if (de->d_name[off] && !tmp)
			continue;
		if (ino >= g_next_ino)
			g_next_ino = ino + 1; /* never reuse a number BACKING has seen */
		node *n = get(ino);
		if (tmp || !n || (strcmp(kind, "dir") == 0) != n->is_dir)
			unlinkat(dirfd(dp), de->d_name, 0);
	}
	closedir(dp);
	g_gen++;
}

/* ---- file handles ---- */

static uint64_t mkfh(uint64_t ino)
{
	return ((g_gen & ((1u << 24) - 1)) << 40) | ino;
}

/* The node of an open handle, or NULL when a cut made it stale. */
static node *fh_node(struct fuse_file_info *fi)
{
	if ((fi->fh >> 40) != (g_gen & ((1u << 24) - 1)))
		return NULL;
	return get(fi->fh & ((UINT64_C(1) << 40) - 1));
}

static int by(const char *path, struct fuse_file_info *fi, node **n)
{
	if (fi && fi->fh != CTL_FH && fi->fh) {
		*n = fh_node(fi);
		return *n ? 0 : -EIO;
	}
	if (!path)
		return -EIO;
	return resolve(path, n, NULL, NULL);
}

/* ---- operations ---- */

static void *lz_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->use_ino = 1;
	cfg->hard_remove = 1;
	cfg->nullpath_ok = 1;
	cfg->direct_io = 1;
	cfg->kernel_cache = 0;
	cfg->entry_timeout = 0;
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	return NULL;
}

static void fill_stat(node *n, struct stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_ino = n->ino;
	st->st_mode = (n->is_dir ? S_IFDIR : S_IFREG) | n->mode;
	st->st_nlink = n->is_dir ? 2 : links_to(n->ino);
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_size = n->is_dir ? 4096 : (off_t)n->size;
	st->st_blksize = 4096;
	st->st_blocks = (st->st_size + 511) / 512;
	st->st_mtim = n->mtime;
	st->st_ctim = n->ctime;
	st->st_atim = n->mtime;
}

static int lz_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	if ((fi && fi->fh == CTL_FH) || (path && strcmp(path, CTL_NAME) == 0)) {
		memset(st, 0, sizeof *st);
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		return 0;
	}
	node *n;
	int rc = by(path, fi, &n);
	if (rc)
		return rc;
	fill_stat(n, st);
	return 0;
}

static int lz_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off;
	(void)flags;
	node *d;
	int rc = by(path, fi, &d);
	if (rc)
		return rc;
	if (!d->is_dir)
		return -ENOTDIR;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	for (size_t i = 0; i < d->nents; i++)
		fill(buf, d->ents[i].name, NULL, 0, 0);
	return 0;
}

static int lz_opendir(const char *path, struct fuse_file_info *fi)
{
	node *d;
	int rc = resolve(path, &d, NULL, NULL);
	if (rc)
		return rc;
	if (!d->is_dir)
		return -ENOTDIR;
	fi->fh = mkfh(d->ino);
	return 0;
}

static int lz_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	node *d;
	int rc = by(path, fi, &d);
	if (rc)
		return rc;
	return sync_dir(d);
}

/* The parent and leaf for a new name at path; -EEXIST when taken. */
static int new_name(const char *path, node **parent, const char **leaf)
{
	node *n;
	int rc = resolve(path, &n, parent, leaf);
	if (rc == 0)
		return -EEXIST;
	if (rc != -ENOENT || !*parent || !*leaf)
		return rc;
	if (strchr(*leaf, '\n'))
		return -EINVAL;
	if (strcmp(path, CTL_NAME) == 0)
		return -EEXIST;
	return 0;
}

static int lz_mkdir(const char *path, mode_t mode)
{
	node *p;
	const char *leaf;
	int rc = new_name(path, &p, &leaf);
	if (rc)
		return rc;
	node *d = node_new(g_next_ino, 1, mode);
	dir_add(p, leaf, d->ino);
	return 0;
}

static int lz_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	node *p;
	const char *leaf;
	int rc = new_name(path, &p, &leaf);
	if (rc)
		return rc;
	node *n = node_new(g_next_ino, 0, mode);
	dir_add(p, leaf, n->ino);
	fi->fh = mkfh(n->ino);
	return 0;
}

static int lz_open(const char *path, struct fuse_file_info *fi)
{
	if (strcmp(path, CTL_NAME) == 0) {
		fi->fh = CTL_FH;
		return 0;
	}
	node *n;
	int rc = resolve(path, &n, NULL, NULL);
	if (rc)
		return rc;
	if (n->is_dir)
		return -EISDIR;
	if (fi->flags & O_TRUNC) {
		n->size = 0;
		touch(n);
	}
	fi->fh = mkfh(n->ino);
	return 0;
}

static int lz_read(const char *path, char *buf, size_t len, off_t off, struct fuse_file_info *fi)
{
	if (fi->fh == CTL_FH)
		return 0;
	node *n;
	int rc = by(path, fi, &n);
	if (rc)
		return rc;
	if (off < 0)
		return -EINVAL;
	if ((size_t)off >= n->size)
		return 0;
	if (len > n->size - (size_t)off)
		len = n->size - (size_t)off;
	memcpy(buf, n->data + off, len);
	return (int)len;
}

static int resize(node *n, size_t size)
{
	if (size > n->cap) {
		size_t c = n->cap ? n->cap : 4096;
		while (c < size)
			c *= 2;
		char *d = realloc(n->data, c);
		if (!d)
			return -ENOSPC;
		n->data = d;
		n->cap = c;
	}
	if (size > n->size)
		memset(n->data + n->size, 0, size - n->size);
	n->size = size;
	touch(n);
	return 0;
}

static int lz_write(const char *path, const char *buf, size_t len, off_t off,
		    struct fuse_file_info *fi)
{
	if (fi->fh == CTL_FH) {
		if (len >= 3 && memcmp(buf, "cut", 3) == 0 && (len == 3 || buf[3] == '\n')) {
			if (strcmp(g_fault, "nocut") != 0)
				load();
			return (int)len;
		}
		return -EINVAL;
	}
	node *n;
	int rc = by(path, fi, &n);
	if (rc)
		return rc;
	if (off < 0)
		return -EINVAL;
	if (fi->flags & O_APPEND)
		off = (off_t)n->size;
	if ((size_t)off + len > n->size && (rc = resize(n, (size_t)off + len)))
		return rc;
	memcpy(n->data + off, buf, len);
	touch(n);
	return (int)len;
}

static int lz_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	if ((fi && fi->fh == CTL_FH) || (path && strcmp(path, CTL_NAME) == 0))
		return 0;
	node *n;
	int rc = by(path, fi, &n);
	if (rc)
		return rc;
	if (n->is_dir)
		return -EISDIR;
	if (size < 0)
		return -EINVAL;
	if ((size_t)size <= n->size) {
		n->size = (size_t)size;
		touch(n);
		return 0;
	}
	return resize(n, (size_t)size);
}

static int lz_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	if (fi->fh == CTL_FH)
		return 0;
	node *n;
	int rc = by(path, fi, &n);
	if (rc)
		return rc;
	return n->is_dir ? sync_dir(n) : sync_file(n);
}

static int lz_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	return 0;
}

static int lz_unlink(const char *path)
{
	node *n, *p;
	const char *leaf;
	int rc = resolve(path, &n, &p, &leaf);
	if (rc)
		return rc;
	if (n->is_dir)
		return -EISDIR;
	dir_del(p, dir_find(p, leaf));
	n->ctime = p->mtime;
	return 0;
}

static int lz_rmdir(const char *path)
{
	node *n, *p;
	const char *leaf;
	int rc = resolve(path, &n, &p, &leaf);
	if (rc)
		return rc;
	if (!n->is_dir)
		return -ENOTDIR;
	if (!p)
		return -EBUSY;
	if (n->nents)
		return -ENOTEMPTY;
	dir_del(p, dir_find(p, leaf));
	return 0;
}

static int is_under(node *d, uint64_t ino)
{
	/* whether directory ino is d or holds d (renaming a dir into itself) */
	if (d->ino == ino)
		return 1;
	node *a = get(ino);
	if (!a || !a->is_dir)
		return 0;
	for (size_t i = 0; i < a->nents; i++) {
		node *c = get(a->ents[i].ino);
		if (c && c->is_dir && is_under(d, c->ino))
			return 1;
	}
	return 0;
}

static int lz_rename(const char *from, const char *to, unsigned int flags)
{
	if (flags & ~(unsigned)RENAME_NOREPLACE)
		return -EINVAL;
	if (strcmp(from, CTL_NAME) == 0 || strcmp(to, CTL_NAME) == 0)
		return -EPERM;
	node *n, *fp;
	const char *fleaf;
	int rc = resolve(from, &n, &fp, &fleaf);
	if (rc)
		return rc;
	char fname[NAME_MAX + 1];
	snprintf(fname, sizeof fname, "%s", fleaf);
	node *t, *tp;
	const char *tleaf;
	rc = resolve(to, &t, &tp, &tleaf);
	if (rc && rc != -ENOENT)
		return rc;
	if (!tp || !fp)
		return -EBUSY;
	if (strchr(tleaf, '\n'))
		return -EINVAL;
	if (t == n)
		return 0;
	if (t) {
		if (flags & RENAME_NOREPLACE)
			return -EEXIST;
		if (t->is_dir && !n->is_dir)
			return -EISDIR;
		if (!t->is_dir && n->is_dir)
			return -ENOTDIR;
		if (t->is_dir && t->nents)
			return -ENOTEMPTY;
	}
	if (n->is_dir && is_under(tp, n->ino))
		return -EINVAL;
	char tname[NAME_MAX + 1];
	snprintf(tname, sizeof tname, "%s", tleaf);
	if (t)
		dir_del(tp, dir_find(tp, tname));
	dir_del(fp, dir_find(fp, fname));
	dir_add(tp, tname, n->ino);
	n->ctime = tp->mtime;
	return 0;
}

static int lz_link(const char *from, const char *to)
{
	node *n;
	int rc = resolve(from, &n, NULL, NULL);
	if (rc)
		return rc;
	if (n->is_dir)
		return -EPERM;
	node *p;
	const char *leaf;
	if ((rc = new_name(to, &p, &leaf)))
		return rc;
	dir_add(p, leaf, n->ino);
	n->ctime = p->mtime;
	return 0;
}

static int lz_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	node *n;
	int rc = by(path, fi, &n);
	if (rc)
		return rc;
	n->mode = mode & 07777;
	clock_gettime(CLOCK_REALTIME, &n->ctime);
	return 0;
}

static int lz_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	(void)uid;
	(void)gid;
	node *n;
	return by(path, fi, &n);
}

static int lz_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	if (path && strcmp(path, CTL_NAME) == 0)
		return 0;
	node *n;
	int rc = by(path, fi, &n);
	if (rc)
		return rc;
	if (!tv || tv[1].tv_nsec == UTIME_NOW)
		clock_gettime(CLOCK_REALTIME, &n->mtime);
	else if (tv[1].tv_nsec != UTIME_OMIT)
		n->mtime = tv[1];
	return 0;
}

static int lz_statfs(const char *path, struct statvfs *st)
{
	(void)path;
	return statvfs(g_backing, st) < 0 ? -errno : 0;
}

static const struct fuse_operations ops = {
	.init = lz_init,
	.getattr = lz_getattr,
	.readdir = lz_readdir,
	.opendir = lz_opendir,
	.fsyncdir = lz_fsyncdir,
	.mkdir = lz_mkdir,
	.rmdir = lz_rmdir,
	.create = lz_create,
	.open = lz_open,
	.read = lz_read,
	.write = lz_write,
	.truncate = lz_truncate,
	.fsync = lz_fsync,
	.release = lz_release,
	.unlink = lz_unlink,
	.rename = lz_rename,
	.link = lz_link,
	.chmod = lz_chmod,
	.chown = lz_chown,
	.utimens = lz_utimens,
	.statfs = lz_statfs,
};

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: lazyfs BACKING MOUNT [-f] [-d]\n"
				"  echo cut > MOUNT/.lazyfs-ctl   drops what was not synced\n"
				"  fusermount3 -u MOUNT           unmounts\n");
		return 2;
	}
	g_backing = realpath(argv[1], NULL);
	if (!g_backing)
		die("%s: %s", argv[1], strerror(errno));
	if (getenv("LAZYFS_FAULT"))
		g_fault = getenv("LAZYFS_FAULT");
	load();
	char *fargv[16];
	int fargc = 0;
	fargv[fargc++] = argv[0];
	fargv[fargc++] = argv[2];
	fargv[fargc++] = "-s";
	fargv[fargc++] = "-o";
	fargv[fargc++] = "fsname=lazyfs,subtype=lazyfs";
	for (int i = 3; i < argc && fargc < 15; i++)
		fargv[fargc++] = argv[i];
	fargv[fargc] = NULL;
	int rc = fuse_main(fargc, fargv, &ops, NULL);
	forget_all();
	free(g_backing);
	return rc;
}
