/*
 * Helpers for the dlqdump tests: scratch directories, file counts, item
 * payloads with ids, the test Redis server's address, and a private
 * redis-server for the fault tests.
 */
#ifndef BLQ_TEST_DUMP_UTIL_H
#define BLQ_TEST_DUMP_UTIL_H

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <blq/blq.h>

#include "test_util.h"

extern char **environ;

/* A fresh directory under /tmp; the caller removes it with du_rmrf. */
static inline char *du_tmpdir(const char *tag)
{
	static char buf[8][64];
	static int k;
	char *d = buf[k++ % 8];

	snprintf(d, 64, "/tmp/blq-%s-XXXXXX", tag);
	return mkdtemp(d);
}

static inline int du_rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

static inline void du_rmrf(const char *dir)
{
	nftw(dir, du_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Creates each of the n files names[] in dir, empty. False when one could
 * not be made. */
static inline bool du_touch(const char *dir, const char *const *names, size_t n)
{
	char p[512];

	for (size_t i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		int fd = open(p, O_CREAT | O_WRONLY, 0644);
		if (fd < 0)
			return false;
		close(fd);
	}
	return true;
}

/* Files in dir matching pattern (glob, inside dir; hidden files only when
 * the pattern starts with a dot). */
static inline size_t du_count(const char *dir, const char *pattern)
{
	char p[512];
	glob_t g;
	size_t n = 0;

	snprintf(p, sizeof(p), "%s/%s", dir, pattern);
	if (glob(p, 0, NULL, &g) == 0)
		n = g.gl_pathc;
	globfree(&g);
	return n;
}

/* The first file matching pattern in dir, into out (size 512); false if none. */
static inline bool du_first(const char *dir, const char *pattern, char *out)
{
	char p[512];
	glob_t g;
	bool ok = false;

	snprintf(p, sizeof(p), "%s/%s", dir, pattern);
	if (glob(p, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
		snprintf(out, 512, "%s", g.gl_pathv[0]);
		ok = true;
	}
	globfree(&g);
	return ok;
}

/* Payloads: a blq_bytes whose first 8 bytes are the id, padded to size. */
static inline blq_bytes *du_item(uint64_t id, size_t size)
{
	unsigned char buf[1024] = {0};

	if (size < 8)
		size = 8;
	memcpy(buf, &id, 8);
	for (size_t i = 8; i < size; i++)
		buf[i] = (unsigned char)(id + i);
	return blq_bytes_new(buf, size);
}

static inline uint64_t du_id(const void *payload)
{
	uint64_t id;

	memcpy(&id, ((const blq_bytes *)payload)->data, 8);
	return id;
}

/* BLQ_TEST_REDIS=host:port, set by scripts/test.sh (which always starts a
 * server). Returns false when unset: Redis tests then skip; when set, the
 * tests fail if the server does not answer. */
static inline bool du_redis_env(char *host, size_t cap, int *port)
{
	const char *e = getenv("BLQ_TEST_REDIS");
	const char *colon = e ? strrchr(e, ':') : NULL;

	if (e == NULL || e[0] == '\0')
		return false;
	if (colon == NULL) {
		snprintf(host, cap, "%s", e);
		*port = 6379;
	} else {
		snprintf(host, cap, "%.*s", (int)(colon - e), e);
		*port = atoi(colon + 1);
	}
	return true;
}

/* A free loopback TCP port (bound, read, released). */
static inline int du_free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int port = -1;

	if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(s, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (s >= 0)
		close(s);
	return port;
}

/* True once something accepts TCP connections on 127.0.0.1:port. */
static inline bool du_port_up(int port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bool ok = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;

	if (s >= 0)
		close(s);
	return ok;
}

/* Starts redis-server on port with its files in dir, durable (AOF,
 * fsync always), so a SIGKILL loses nothing it acknowledged. Returns the
 * pid, or -1. Waits until it accepts connections (5 s at most). */
static inline pid_t du_redis_start(int port, const char *dir)
{
	char sport[16];
	pid_t pid;

	snprintf(sport, sizeof(sport), "%d", port);
	char *argv[] = {"redis-server", "--port", sport, "--bind", "127.0.0.1",
			"--dir", (char *)dir, "--appendonly", "yes", "--appendfsync",
			"always", "--save", "", "--logfile", "redis.log", NULL};
	if (posix_spawnp(&pid, "redis-server", NULL, NULL, argv, environ) != 0)
		return -1;
	if (!TU_WAIT_FOR(du_port_up(port), 5000)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

static inline void du_redis_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* For the test programs: checks that count failures instead of stopping,
 * and a worker that counts each id it processes (ids below du_n). */
static int du_failures;
/* A restorer's counters, by value. */
static inline struct blq_restorer_stats du_rstats(blq_restorer *r)
{
	struct blq_restorer_stats s;

	blq_restorer_stats(r, &s);
	return s;
}

/* The tests' usual restorer: rd into q with the bytes codec, polling
 * every 2 ms. NULL with err set on failure. */
static inline blq_restorer *du_restorer(blq_dump_reader *rd, blq *q, size_t in_flight,
					uint64_t close_timeout, blq_error *err)
{
	blq_restorer_config rc = {.reader = rd, .decoder = blq_dump_bytes_decoder(), .target = q,
				  .item_free = free, .check_interval_ns = 2000000,
				  .postpone_interval_ns = 500000, .max_in_flight = in_flight,
				  .close_timeout_ns = close_timeout};
	return blq_restorer_new(&rc, err);
}

/* A logger that keeps the lines it gets (du_keeper), for tests that look
 * for one (du_logged). du_log_text is the whole of it, for messages. */
static pthread_mutex_t du_log_mu __attribute__((unused)) = PTHREAD_MUTEX_INITIALIZER;
static char du_log_text[8192] __attribute__((unused));

static inline void du_log_keep(void *ctx, int level, const char *fmt, va_list ap)
{
	char line[512];

	(void)ctx, (void)level;
	vsnprintf(line, sizeof(line), fmt, ap);
	pthread_mutex_lock(&du_log_mu);
	size_t n = strlen(du_log_text);
	if (n + strlen(line) + 2 < sizeof(du_log_text))
		snprintf(du_log_text + n, sizeof(du_log_text) - n, "%s\n", line);
	pthread_mutex_unlock(&du_log_mu);
}

static inline bool du_logged(const char *needle)
{
	pthread_mutex_lock(&du_log_mu);
	bool ok = strstr(du_log_text, needle) != NULL;
	pthread_mutex_unlock(&du_log_mu);
	return ok;
}

#define du_keeper ((blq_logger){.log = du_log_keep, .level = BLQ_LOG_DEBUG})

static const char *du_prog = "test";
static _Atomic unsigned *du_seen;
static uint64_t du_n;

static inline __attribute__((format(printf, 2, 3))) void du_check(bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "%s: FAILED: ", du_prog);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	du_failures++;
}

static inline int du_sink(void *ctx, void *payload, blq_task *t)
{
	uint64_t id = du_id(payload);

	(void)ctx, (void)t;
	if (id < du_n)
		atomic_fetch_add(&du_seen[id], 1);
	free(payload);
	return 0;
}

#endif
