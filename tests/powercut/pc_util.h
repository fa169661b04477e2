/*
 * What the power-cut programs share (restore_cut.c, dlq_cut.c): the log
 * outside the mount, the items, and a count by id of what a directory of
 * dump files holds.
 *
 * Why a log outside the mount: it is the scenario's memory of what the
 * processes under test were told (an item processed, a dead record
 * acknowledged), and it must survive the cut that the mount does not. Each
 * line is appended with O_APPEND (one write: lines of two threads never
 * mix) and fdatasync'd before the process goes on, so what a line says
 * happened before anything the process did after it.
 *
 * Why the dump files are counted by parsing them here rather than through
 * a restorer: a restorer consumes what it reads and writes checkpoints;
 * the check must look at what the cut left without changing it. The parser
 * is the library's own (dlq/dump_format.h), so a record counts exactly
 * when a restorer would take it; a damaged file is reported, not counted.
 */
#ifndef BLQ_TEST_PC_UTIL_H
#define BLQ_TEST_PC_UTIL_H

#include "../dump_util.h"
#include "../../dlq/dump_format.h"

/* Ids at this bit and above are not records of a scenario. */
#define PC_ID_MAX (UINT64_C(1) << 40)

static inline int pc_log_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		perror(path);
		exit(2);
	}
	return fd;
}

static inline __attribute__((format(printf, 2, 3))) void pc_log(int fd, const char *fmt, ...)
{
	char line[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n <= 0 || n >= (int)sizeof line || write(fd, line, (size_t)n) != n ||
	    fdatasync(fd) != 0) {
		perror("power cut log");
		_exit(2);
	}
}

/* The payload of id: 8 to 64 bytes, the id first (du_item). */
static inline blq_bytes *pc_item(uint64_t id, uint32_t restores)
{
	blq_bytes *b = du_item(id, 8 + (size_t)(id * 7 % 57));
	if (b != NULL)
		b->restores = restores;
	return b;
}

/* The id of a record's data, or UINT64_MAX when it is not a payload of
 * pc_item (wrong length or bytes): a damaged or foreign record. */
static inline uint64_t pc_rec_id(const void *data, size_t len)
{
	uint64_t id;
	if (len < 8)
		return UINT64_MAX;
	memcpy(&id, data, 8);
	if (id >= PC_ID_MAX || len != 8 + (size_t)(id * 7 % 57))
		return UINT64_MAX;
	blq_bytes *want = pc_item(id, 0);
	bool same = want != NULL && memcmp(want->data, data, len) == 0;
	free(want);
	return same ? id : UINT64_MAX;
}

/* Adds 1 to counts[id] (ids below n) for every record of every file of
 * dir matching pattern (and its restore count's maximum into *restores,
 * when not NULL). Returns the number of files that did not parse whole;
 * *foreign gets the records that are no pc_item or beyond n. */
static inline size_t pc_count_dir(const char *dir, const char *pattern, unsigned *counts,
				  uint64_t n, uint64_t *foreign)
{
	char p[1024];
	glob_t g;
	size_t bad = 0;

	snprintf(p, sizeof p, "%s/%s", dir, pattern);
	if (glob(p, 0, NULL, &g) != 0)
		return 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		FILE *f = fopen(g.gl_pathv[i], "rb");
		unsigned char *buf = malloc(1 << 24);
		size_t len = f && buf ? fread(buf, 1, 1 << 24, f) : 0;
		unsigned format;
		uint64_t version;
		if (f)
			fclose(f);
		if (buf == NULL || blq__dump_header_check(buf, len, &format, &version) != BLQ__DUMP_OK) {
			bad++;
			free(buf);
			continue;
		}
		size_t off = BLQ__DUMP_HEADER;
		blq_dump_record rec;
		int rc;
		while ((rc = blq__dump_rec_parse(buf, len, format, &off, &rec)) == BLQ__DUMP_OK) {
			uint64_t id = pc_rec_id(rec.data, rec.len);
			if (id < n)
				counts[id]++;
			else
				++*foreign;
		}
		bad += rc != BLQ__DUMP_END;
		free(buf);
	}
	globfree(&g);
	return bad;
}

#endif
