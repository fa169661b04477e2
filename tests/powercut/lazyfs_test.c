/*
 * lazyfs_test MOUNT: lazyfs's own cases, on a mounted lazyfs (lazyfs_test.sh
 * mounts it). Each case works in its own directory (made and synced), does
 * some operations, cuts the power (MOUNT/.lazyfs-ctl) and checks what is
 * left: unsynced data and names are gone, synced ones are whole.
 * lazyfs_test MOUNT CASE...: only those cases (write name synced rename
 * unlink noreplace flock stale).
 * lazyfs_test MOUNT syncdir DIR...: fsync of each DIR, in order (for the
 * shell scripts: one process for a whole setup, which counts on a busy
 * host).
 * Prints one line per check; exits 1 if any failed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *g_mnt;
static int g_failed;

static void check(int ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s: ", ok ? "ok" : "FAIL");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	if (!ok)
		g_failed = 1;
}

static void must(int ok, const char *what)
{
	if (!ok) {
		printf("FAIL: %s: %s\n", what, strerror(errno));
		exit(1);
	}
}

static char *P(const char *fmt, ...)
{
	static char buf[4][4096];
	static int i;
	char *b = buf[i++ % 4];
	int n = snprintf(b, sizeof buf[0], "%s/", g_mnt);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b + n, sizeof buf[0] - (size_t)n, fmt, ap);
	va_end(ap);
	return b;
}

static void syncdir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	must(fd >= 0, path);
	must(fsync(fd) == 0, "fsync dir");
	close(fd);
}

static void cut(void)
{
	int fd = open(P(".lazyfs-ctl"), O_WRONLY | O_CLOEXEC);
	must(fd >= 0, "open .lazyfs-ctl");
	must(write(fd, "cut\n", 4) == 4, "cut");
	close(fd);
}

/* Writes len bytes to path (created or truncated); fsync'd when sync. */
static void put(const char *path, const void *data, size_t len, int sync)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	must(fd >= 0, path);
	must(write(fd, data, len) == (ssize_t)len, "write");
	if (sync)
		must(fsync(fd) == 0, "fsync");
	close(fd);
}

/* The contents of path into buf (NUL-terminated), or -1 with errno. */
static ssize_t get(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = 0, r;
	while ((r = read(fd, buf + n, cap - 1 - (size_t)n)) > 0)
		n += r;
	close(fd);
	buf[n] = 0;
	return n;
}

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* A case's own directory, made and synced (name in the root, and itself). */
static void mkcase(const char *name)
{
	must(mkdir(P("%s", name), 0755) == 0, name);
	syncdir(g_mnt);
	syncdir(P("%s", name));
}

static void case_unsynced_write(void)
{
	char b[64];
	mkcase("w");
	put(P("w/f"), "durable", 7, 1);
	syncdir(P("w"));
	int fd = open(P("w/f"), O_WRONLY | O_CLOEXEC);
	must(fd >= 0, "open");
	must(pwrite(fd, "LOST", 4, 0) == 4 && pwrite(fd, "+more", 5, 7) == 5, "pwrite");
	close(fd);
	check(get(P("w/f"), b, sizeof b) == 12 && strcmp(b, "LOSTble+more") == 0,
	      "before the cut, reads see the unsynced write (\"%s\")", b);
	cut();
	check(get(P("w/f"), b, sizeof b) == 7 && strcmp(b, "durable") == 0,
	      "unsynced write dropped at a cut: the file is its fsync'd 7 bytes (\"%s\")", b);
	/* an unsynced truncate likewise */
	must(truncate(P("w/f"), 2) == 0, "truncate");
	cut();
	check(get(P("w/f"), b, sizeof b) == 7, "unsynced truncate dropped at a cut");
}

static void case_name_unsynced(void)
{
	mkcase("n");
	put(P("n/f"), "data", 4, 1); /* data fsync'd, directory not */
	check(exists(P("n/f")), "before the cut, the new name is there");
	cut();
	check(!exists(P("n/f")) && errno == ENOENT,
	      "fsync'd data of a file whose name was never dir-synced: the name is gone after a cut");
	must(mkdir(P("n/sub"), 0755) == 0, "mkdir");
	cut();
	check(!exists(P("n/sub")), "a mkdir not dir-synced is gone after a cut");
}

static void case_synced_survives(void)
{
	static char data[100000], back[100001];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (char)(i * 7 + i / 251);
	mkcase("s");
	put(P("s/f"), data, sizeof data, 1);
	syncdir(P("s"));
	struct stat a, b;
	must(stat(P("s/f"), &a) == 0, "stat");
	cut();
	ssize_t n = get(P("s/f"), back, sizeof back);
	check(n == (ssize_t)sizeof data && memcmp(back, data, sizeof data) == 0,
	      "fsync'd data + dir-synced name: survives byte for byte (%zd bytes)", n);
	must(stat(P("s/f"), &b) == 0, "stat");
	check(a.st_ino == b.st_ino && (a.st_mode & 07777) == 0640 && a.st_mode == b.st_mode,
	      "and keeps its inode number and mode (%o)", (unsigned)(b.st_mode & 07777));
	/* a name dir-synced whose data was never fsync'd: there, empty */
	put(P("s/e"), "never synced", 12, 0);
	syncdir(P("s"));
	cut();
	must(stat(P("s/e"), &b) == 0, "stat s/e");
	check(b.st_size == 0, "a dir-synced name whose data was never fsync'd: there, empty");
}

static void case_rename(void)
{
	char b[64];
	mkcase("r");
	put(P("r/old"), "OLD", 3, 1);
	put(P("r/tmp"), "NEW", 3, 1);
	syncdir(P("r"));
	must(rename(P("r/tmp"), P("r/old")) == 0, "rename");
	get(P("r/old"), b, sizeof b);
	check(strcmp(b, "NEW") == 0 && !exists(P("r/tmp")), "before the cut, the rename is seen");
	cut();
	check(get(P("r/old"), b, sizeof b) == 3 && strcmp(b, "OLD") == 0 && exists(P("r/tmp")),
	      "a rename over a file, not dir-synced: the old file comes back (\"%s\"), "
	      "the source name too",
	      b);
	must(rename(P("r/tmp"), P("r/old")) == 0, "rename");
	syncdir(P("r"));
	cut();
	check(get(P("r/old"), b, sizeof b) == 3 && strcmp(b, "NEW") == 0 && !exists(P("r/tmp")),
	      "a dir-synced rename survives a cut (\"%s\")", b);
	/* across directories: each side durable at its own fsync */
	must(mkdir(P("r/q"), 0755) == 0, "mkdir");
	syncdir(P("r"));
	syncdir(P("r/q"));
	must(rename(P("r/old"), P("r/q/moved")) == 0, "rename");
	syncdir(P("r/q"));
	cut();
	check(exists(P("r/q/moved")) && exists(P("r/old")),
	      "a rename into another directory with only the target synced: in both after a cut");
}

static void case_unlink(void)
{
	mkcase("u");
	put(P("u/f"), "x", 1, 1);
	syncdir(P("u"));
	must(unlink(P("u/f")) == 0, "unlink");
	check(!exists(P("u/f")), "before the cut, the unlinked file is gone");
	cut();
	check(exists(P("u/f")), "an unlink not dir-synced: the file comes back after a cut");
	must(unlink(P("u/f")) == 0, "unlink");
	syncdir(P("u"));
	cut();
	check(!exists(P("u/f")), "a dir-synced unlink survives a cut");
	/* link, as the fs writer's fallback for RENAME_NOREPLACE does */
	put(P("u/a"), "A", 1, 1);
	syncdir(P("u"));
	must(link(P("u/a"), P("u/b")) == 0, "link");
	struct stat st;
	must(stat(P("u/a"), &st) == 0, "stat");
	check(st.st_nlink == 2, "link: two names, st_nlink 2");
	cut();
	check(exists(P("u/a")) && !exists(P("u/b")), "a link not dir-synced is gone after a cut");
}

static void case_noreplace(void)
{
	char b[64];
	mkcase("x");
	put(P("x/a"), "A", 1, 1);
	put(P("x/b"), "B", 1, 1);
	errno = 0;
	int rc = renameat2(AT_FDCWD, P("x/a"), AT_FDCWD, P("x/b"), RENAME_NOREPLACE);
	int e = errno;
	check(rc == -1 && e == EEXIST, "RENAME_NOREPLACE refuses an existing name (%s)",
	      strerror(e));
	get(P("x/b"), b, sizeof b);
	check(strcmp(b, "B") == 0 && exists(P("x/a")), "and changes nothing");
	rc = renameat2(AT_FDCWD, P("x/a"), AT_FDCWD, P("x/c"), RENAME_NOREPLACE);
	check(rc == 0 && exists(P("x/c")) && !exists(P("x/a")), "RENAME_NOREPLACE to a free name");
	int fd = open(P("x/b"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	check(fd < 0 && errno == EEXIST, "O_CREAT|O_EXCL refuses an existing name");
}

static void case_flock(void)
{
	mkcase("l");
	put(P("l/f"), "x", 1, 1);
	int fd = open(P("l/f"), O_RDONLY | O_CLOEXEC);
	must(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0, "flock");
	int up[2], down[2]; /* child -> parent, parent -> child */
	must(pipe(up) == 0 && pipe(down) == 0, "pipe");
	pid_t pid = fork();
	must(pid >= 0, "fork");
	if (pid == 0) {
		int f = open(P("l/f"), O_RDONLY | O_CLOEXEC);
		int r1 = f >= 0 && flock(f, LOCK_EX | LOCK_NB) == -1 && errno == EWOULDBLOCK;
		char c;
		if (write(up[1], "1", 1) != 1 || read(down[0], &c, 1) != 1) /* the unlock */
			_exit(3);
		int r2 = flock(f, LOCK_EX | LOCK_NB) == 0;
		_exit(r1 && r2 ? 0 : (r1 ? 2 : 1));
	}
	char c;
	must(read(up[0], &c, 1) == 1, "read");
	flock(fd, LOCK_UN);
	close(fd);
	must(write(down[1], "2", 1) == 1, "write");
	int st;
	waitpid(pid, &st, 0);
	check(WIFEXITED(st) && WEXITSTATUS(st) != 1,
	      "flock LOCK_EX|LOCK_NB conflicts between two processes");
	check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "and is granted once the holder unlocks");
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
}

static void case_stale(void)
{
	mkcase("h");
	put(P("h/f"), "x", 1, 1);
	syncdir(P("h"));
	int fd = open(P("h/f"), O_RDWR | O_CLOEXEC);
	must(fd >= 0, "open");
	cut();
	errno = 0;
	ssize_t w = write(fd, "y", 1);
	int e = errno;
	check(w == -1 && e == EIO, "a file handle held across a cut fails with EIO (%s)",
	      strerror(e));
	close(fd);
	char b[8];
	check(get(P("h/f"), b, sizeof b) == 1 && b[0] == 'x', "and changed nothing");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: lazyfs_test MOUNT [syncdir DIR...]\n");
		return 2;
	}
	g_mnt = argv[1];
	if (argc >= 4 && strcmp(argv[2], "syncdir") == 0) {
		for (int a = 3; a < argc; a++)
			syncdir(argv[a]);
		return 0;
	}
	static const struct {
		const char *name;
		void (*fn)(void);
	} cases[] = {{"write", case_unsynced_write}, {"name", case_name_unsynced},
		     {"synced", case_synced_survives}, {"rename", case_rename},
		     {"unlink", case_unlink}, {"noreplace", case_noreplace},
		     {"flock", case_flock}, {"stale", case_stale}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int run = argc == 2;
		for (int a = 2; a < argc; a++)
			run |= strcmp(argv[a], cases[i].name) == 0;
		if (run)
			cases[i].fn();
	}
	return g_failed;
}
