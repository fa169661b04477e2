/*
 * Fuzz target for the fs reader: each input is written as a dump file and
 * restored through the real reader (next, record until the end, commit).
 * Whatever the bytes, the reader must not crash, must not read out of
 * bounds or allocate from a length field (ASan), must hand out only
 * records whose checksum holds (format 2: with a well-formed metadata
 * block), and must leave no dump behind: a good file is deleted, a
 * damaged one moved to the quarantine directory. The seeds and the
 * dictionary (dump_fs_reader.dict) cover formats 1 and 2.
 *
 * Built two ways: with clang -fsanitize=fuzzer,address as a libFuzzer
 * binary (scripts/test.sh runs it for a few seconds), and as a normal test
 * with fuzz_main.c, replaying the seed corpus.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <blq/dlqdump.h>

#include "../dump_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *dir;
static blq_dump_reader *rd;
static char file[256], qdir[256], ckpt[256];

static void cleanup(void)
{
	blq_dump_reader_free(rd);
	du_rmrf(dir);
}

static void setup(void)
{
	blq_error err;

	dir = du_tmpdir("fuzz");
	if (dir == NULL)
		abort();
	blq_dump_fs_config fc = {.directory = dir, .version = 1};
	rd = blq_dump_fs_reader_new(&fc, &err);
	if (rd == NULL) {
		fprintf(stderr, "fuzz: %s\n", err.msg);
		abort();
	}
	snprintf(file, sizeof(file), "%s/input.bin", dir);
	snprintf(qdir, sizeof(qdir), "%s/quarantine", dir);
	snprintf(ckpt, sizeof(ckpt), "%s/.input.bin.ckpt", dir);
	atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	blq_error err;
	void *dump = NULL;

	if (rd == NULL)
		setup();
	int fd = open(file, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	if (rd->next(rd, &dump, &err) != 1)
		abort(); /* the file is there and unlocked: it must be handed out */
	blq_dump_record rec;
	size_t n = 0, bytes = 0;
	uint64_t last = 0;
	while (rd->record(rd, dump, &rec, &err) == 1) {
		if (rec.len > BLQ_DUMP_RECORD_MAX || rec.len > size)
			abort();
		/* Format 2's metadata: a name within its bound, NUL-terminated. */
		if (memchr(rec.why.queue, '\0', sizeof(rec.why.queue)) == NULL)
			abort();
		/* Touch every byte handed out: ASan checks the bounds. */
		for (size_t i = 0; i < rec.len; i++)
			bytes += ((const unsigned char *)rec.data)[i];
		/* Indexes increase; each record is done before the commit. */
		if (n > 0 && rec.index <= last)
			abort();
		last = rec.index;
		if (rd->done(rd, dump, rec.index, &err) != 0)
			abort();
		n++;
	}
	if (rd->commit(rd, dump, &err) != 0)
		abort();
	if (access(file, F_OK) == 0)
		abort(); /* neither deleted nor quarantined */
	if (access(ckpt, F_OK) == 0)
		abort(); /* the checkpoint outlived its file */
	/* Empty the quarantine for the next input. */
	char q[300];
	snprintf(q, sizeof(q), "%s/input.bin", qdir);
	unlink(q);
	(void)bytes;
	return 0;
}
