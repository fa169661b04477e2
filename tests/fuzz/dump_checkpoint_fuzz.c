/*
 * Fuzz target for the checkpoint of a dump file (dlq/dump_fs_checkpoint.c,
 * blq__ckpt_load) and for what trusts it: the fs reader (which records it
 * skips, what deliveries it reports) and the inspector (done marks). A
 * checkpoint sits beside its dump file and may be torn or damaged on disk,
 * so any bytes may be read as one.
 *
 * Setup, once: four dump files made by the real fs writer (1 record of
 * format 1; 9 of format 2; 40 of format 1; 9 of format 2 then a torn
 * tail), kept in memory; a reader and an inspector on a scratch directory
 * (/dev/shm when there is one: the reader fsyncs at release).
 *
 * Input: byte 0 picks the dump file (bits 0-1) and what to do:
 *   bit 2  write the dump file's identity (inode, size, mtime) into the
 *          checkpoint bytes 8..31, so the fuzzer gets past the guard;
 *   bit 3  write a correct crc32c where the layout puts it (after nbits'
 *          bitmap), so it gets past the checksum;
 *   bit 4  drive the reader too (two claims, see below);
 *   bit 5  first claim: stop after two records;
 *   bit 6  write no checkpoint file at all (the reader's first claim);
 * byte 1: record i is marked done in the first claim when bit (i % 8) is
 * set. The rest is the checkpoint file, written as ".input.bin.ckpt".
 *
 * What must hold, against an oracle parsing the layout of the header:
 *   - blq__ckpt_load is true exactly when the bytes hold magic "BLQK",
 *     format 1, this file's identity, and a crc32c over all before it
 *     that holds (bytes after the crc are not looked at); then every
 *     field is the stored one, bits is NULL for nbits 0 and else holds
 *     the (nbits + 7) / 8 bytes stored (all read back: ASan checks the
 *     block's size). When false the struct is all zero (bits NULL): the
 *     callers rely on it (the reader then starts afresh, the inspector
 *     reports "none"). Another file's identity (inode, size or mtime one
 *     off) is never applied.
 *   - blq__ckpt_store of what was loaded writes the same bytes back.
 *   - The inspector (ck_done in inspect_fs.c): each good record's done
 *     flag is the oracle's (record i done when i < prefix, or when
 *     i - prefix < nbits and bit i - prefix is set: the padding bits of
 *     the last byte are not part of the bitmap), the
 *     part's done count is their number, deliveries the claims.
 *   - The reader: the first claim hands out, once each and in order, the
 *     records the checkpoint does not mark done, with deliveries = its
 *     claims; the second claim (after release) exactly those of them not
 *     marked done by the first, with deliveries one more (saturated); a
 *     commit then removes the file (a damaged one to the quarantine) and
 *     its checkpoint. Nothing is lost, nothing comes twice in a claim.
 * Anything else aborts (CHECK), so libFuzzer reports it.
 *
 * Built with clang -fsanitize=fuzzer,address as a libFuzzer binary (seeds
 * in corpus/dump_checkpoint: checkpoints the reader itself stored, then
 * torn and damaged ones; dictionary dump_checkpoint.dict), and as a
 * normal test with fuzz_main.c replaying the seeds.
 */
#include <fcntl.h>
#include <glob.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <blq/dlqdump.h>
#include <blq/dlqinspect.h>

#include "../../dlq/crc32c.h"
#include "../../dlq/dump_format.h"
#include "../../dlq/dump_fs_checkpoint.h"
#include "../dump_util.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define VERSION 7u
#define FIXED 48u /* magic .. nbits, as the header's layout */
#define MAX_RECORDS 40u

/* A dump file made by the real writer: its bytes, and its good records. */
typedef struct dumpfile {
	unsigned char *bytes;
	size_t len;
	unsigned records; /* good records (before the damage, if any) */
	bool damaged;
} dumpfile;

static dumpfile dumps[4];
static char dir[160], file[256], ckpt[256], copy[256], quarantined[300];
static blq_dump_reader *rd;
static blq_inspect *in;
static char top[128];

/* The data of record i: its index and a tail of varying length. */
static size_t record_data(unsigned i, unsigned char *out)
{
	size_t n = (size_t)snprintf((char *)out, 64, "record %u;", i);

	for (unsigned k = 0; k < i % 13; k++)
		out[n++] = (unsigned char)(i * 31 + k);
	return n;
}

static void cleanup(void)
{
	blq_inspect_close(in);
	blq_dump_reader_free(rd);
	for (size_t i = 0; i < sizeof(dumps) / sizeof(dumps[0]); i++)
		free(dumps[i].bytes);
	du_rmrf(top);
}

static void read_whole(const char *path, unsigned char **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	CHECK(f != NULL);
	CHECK(fseek(f, 0, SEEK_END) == 0);
	long n = ftell(f);
	CHECK(n >= 0);
	rewind(f);
	*out = malloc((size_t)n + 1);
	CHECK(*out != NULL);
	CHECK(fread(*out, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	*len = (size_t)n;
}

/* A dump file of n records in format fmt, through the fs writer. */
static void make_dump(dumpfile *d, const char *src, unsigned n, unsigned fmt)
{
	blq_dump_fs_config fc = {.directory = src};
	blq_error err;
	blq_dump_writer *w = blq_dump_fs_writer_new(&fc, &err);
	blq__buf b = {0};
	unsigned char data[128];
	char path[512];

	CHECK(w != NULL);
	for (unsigned i = 0; i < n; i++) {
		blq_dlq_why why = {.reason = BLQ_DLQ_FAILED, .attempts = i, .rc = -(int32_t)i,
				   .time_ns = 1700000000000000000ull + i};
		snprintf(why.queue, sizeof(why.queue), "q%u", i);
		size_t len = record_data(i, data);
		CHECK(blq__dump_rec_append(&b, fmt, data, len, i % 3, &why) == 0);
	}
	blq_dump_batch batch = {.version = VERSION, .data = b.p, .len = b.len, .count = n,
				.format = fmt};
	size_t done = 0;
	CHECK(w->write(w, &batch, &done, &err) == 0 && done == n);
	blq__buf_free(&b);
	blq_dump_writer_free(w);
	CHECK(du_first(src, "*.bin", path));
	read_whole(path, &d->bytes, &d->len);
	CHECK(unlink(path) == 0);
	d->records = n;
}

static void setup(void)
{
	blq_error err;
	char src[256];

	snprintf(top, sizeof(top), "%s/blq-ckptfuzz-XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	CHECK(mkdtemp(top) != NULL);
	snprintf(src, sizeof(src), "%s/src", top);
	snprintf(dir, sizeof(dir), "%s/d", top);
	CHECK(mkdir(src, 0755) == 0 && mkdir(dir, 0755) == 0);
	make_dump(&dumps[0], src, 1, 1);
	make_dump(&dumps[1], src, 9, 2);
	make_dump(&dumps[2], src, MAX_RECORDS, 1);
	make_dump(&dumps[3], src, 9, 2);
	/* A torn tail: a record header promising more than follows. */
	static const unsigned char tail[] = {0xff, 0x00, 0x00, 0x00, 1, 0, 0};
	dumps[3].bytes = realloc(dumps[3].bytes, dumps[3].len + sizeof(tail));
	CHECK(dumps[3].bytes != NULL);
	memcpy(dumps[3].bytes + dumps[3].len, tail, sizeof(tail));
	dumps[3].len += sizeof(tail);
	dumps[3].damaged = true;
	snprintf(file, sizeof(file), "%s/input.bin", dir);
	snprintf(ckpt, sizeof(ckpt), "%s/.input.bin.ckpt", dir);
	snprintf(copy, sizeof(copy), "%s/copy.ckpt", top);
	snprintf(quarantined, sizeof(quarantined), "%s/quarantine/input.bin", dir);
	char p[300];
	CHECK(blq__ckpt_path(file, p, sizeof(p)) && strcmp(p, ckpt) == 0);
	blq_dump_fs_config fc = {.directory = dir, .version = VERSION};
	rd = blq_dump_fs_reader_new(&fc, &err);
	CHECK(rd != NULL);
	/* The inspector wants a dump file to call the directory a dump's. */
	int fd = open(file, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	CHECK(fd >= 0 && write(fd, dumps[0].bytes, dumps[0].len) == (ssize_t)dumps[0].len);
	close(fd);
	blq_inspect_config ic = {.directory = dir, .version = VERSION};
	in = blq_inspect_open(&ic, &err);
	if (in == NULL)
		fprintf(stderr, "dump_checkpoint_fuzz: inspector: %s\n", err.msg);
	CHECK(in != NULL);
	atexit(cleanup);
}

static void write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	CHECK(fd >= 0 && write(fd, p, n) == (ssize_t)n);
	close(fd);
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)blq__get32(p) | (uint64_t)blq__get32(p + 4) << 32;
}

static void put64(unsigned char *p, uint64_t v)
{
	blq__put32(p, (uint32_t)v);
	blq__put32(p + 4, (uint32_t)(v >> 32));
}

/* ---- the oracle: the header's layout ----------------------------------- */

typedef struct oracle {
	bool valid;
	uint64_t prefix;
	uint32_t claims, nbits;
	const unsigned char *bits; /* into the input */
	size_t nb;                 /* (nbits + 7) / 8 */
} oracle;

static void identity_of(const struct stat *st, uint64_t id[3])
{
	id[0] = (uint64_t)st->st_ino;
	id[1] = (uint64_t)st->st_size;
	id[2] = (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec;
}

static oracle oracle_parse(const unsigned char *p, size_t n, const struct stat *st)
{
	oracle o = {0};
	uint64_t id[3];

	identity_of(st, id);
	if (n < FIXED || memcmp(p, "BLQK", 4) != 0 || blq__get32(p + 4) != 1)
		return o;
	if (get64(p + 8) != id[0] || get64(p + 16) != id[1] || get64(p + 24) != id[2])
		return o;
	uint64_t nb = ((uint64_t)blq__get32(p + 44) + 7) / 8;
	if (n < FIXED + nb + 4)
		return o; /* torn */
	if (blq__crc32c(0, p, FIXED + nb) != blq__get32(p + FIXED + nb))
		return o;
	o.valid = true;
	o.prefix = get64(p + 32);
	o.claims = blq__get32(p + 40);
	o.nbits = blq__get32(p + 44);
	o.nb = (size_t)nb;
	o.bits = p + FIXED;
	return o;
}

/* Record i done, as the header says: [0, prefix), then bit i - prefix of
 * the nbits. */
static bool oracle_done(const oracle *o, uint64_t i)
{
	if (!o->valid)
		return false;
	if (i < o->prefix)
		return true;
	uint64_t k = i - o->prefix;
	return k < o->nbits && (o->bits[k / 8] >> (k % 8) & 1u);
}

/* ---- blq__ckpt_load and blq__ckpt_store -------------------------------- */

static bool all_zero(const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (((const unsigned char *)p)[i] != 0)
			return false;
	return true;
}

static volatile unsigned char sink;

static void check_load(const unsigned char *p, size_t n, const struct stat *st, const oracle *o)
{
	blq__ckpt c;
	uint64_t id[3];

	identity_of(st, id);
	memset(&c, 0xa5, sizeof(c));
	bool ok = blq__ckpt_load(ckpt, st, &c);
	if (ok != o->valid)
		fprintf(stderr, "dump_checkpoint_fuzz: load says %d, the layout %d\n", ok, o->valid);
	CHECK(ok == o->valid);
	if (!ok) {
		CHECK(all_zero(&c, sizeof(c)));
		return;
	}
	CHECK(c.ino == id[0] && c.size == id[1] && c.mtime_ns == id[2]);
	CHECK(c.prefix == o->prefix && c.claims == o->claims && c.nbits == o->nbits);
	CHECK((c.bits == NULL) == (o->nb == 0));
	for (size_t i = 0; i < o->nb; i++) /* every byte: ASan checks the block */
		sink += c.bits[i];
	/* The map as stored, but the bits past nbits in its last byte are
	 * no record's: loaded as 0 (a 1 there once marked records done). */
	unsigned keep = o->nbits % 8 ? (1u << (o->nbits % 8)) - 1u : 0xffu;
	bool padded = o->nb != 0 && (o->bits[o->nb - 1] & ~keep) != 0;
	CHECK(o->nb == 0 || (memcmp(c.bits, o->bits, o->nb - 1) == 0 &&
			     c.bits[o->nb - 1] == (o->bits[o->nb - 1] & keep)));
	/* Stored again, it is the same bytes (nothing after the crc), but
	 * for those bits (and so the crc). */
	CHECK(blq__ckpt_store(copy, &c, false) == 0);
	unsigned char *back;
	size_t blen;
	read_whole(copy, &back, &blen);
	CHECK(blen == FIXED + o->nb + 4 && blen <= n);
	CHECK(memcmp(back, p, padded ? FIXED + o->nb - 1 : blen) == 0);
	free(back);
	free(c.bits);
	/* Another file's checkpoint is never applied. */
	struct stat other = *st;
	other.st_ino++;
	CHECK(!blq__ckpt_load(ckpt, &other, &c) && c.bits == NULL);
	other = *st;
	other.st_size++;
	CHECK(!blq__ckpt_load(ckpt, &other, &c) && c.bits == NULL);
	other = *st;
	other.st_mtim.tv_nsec ^= 1;
	CHECK(!blq__ckpt_load(ckpt, &other, &c) && c.bits == NULL);
}

/* ---- the inspector ------------------------------------------------------ */

typedef struct iscan {
	const oracle *o;
	const dumpfile *d;
	unsigned records, done, damage;
	uint32_t deliveries;
} iscan;

static int on_record(void *ctx, const blq_inspect_record *rec)
{
	iscan *s = ctx;
	unsigned char want[128];

	if (rec->state != BLQ_INSPECT_OK) {
		CHECK(rec->state == BLQ_INSPECT_DAMAGED);
		s->damage++;
		return 0;
	}
	CHECK(rec->index == s->records && rec->index < s->d->records);
	size_t len = record_data((unsigned)rec->index, want);
	CHECK(rec->len == len && memcmp(rec->data, want, len) == 0);
	CHECK(rec->done == oracle_done(s->o, rec->index));
	CHECK(rec->deliveries == s->deliveries);
	s->records++;
	s->done += rec->done;
	return 0;
}

static int on_part(void *ctx, const blq_inspect_part *part)
{
	iscan *s = ctx;

	if (strcmp(part->loc, "dump/input.bin") != 0)
		return 0;
	CHECK(part->records == s->d->records);
	CHECK(part->done == s->done);
	CHECK((part->damaged != 0) == s->d->damaged);
	s->records = UINT32_MAX; /* seen */
	return 0;
}

static void check_inspector(const dumpfile *d, const oracle *o)
{
	iscan s = {.o = o, .d = d, .deliveries = o->valid ? o->claims : 0};
	blq_inspect_filter f = {.part = "dump/input.bin"};
	blq_error err;

	CHECK(blq_inspect_scan(in, &f, on_record, &s, &err) == 0);
	CHECK(s.records == d->records && s.damage == (d->damaged ? 1u : 0u));
	CHECK(blq_inspect_list(in, on_part, &s, &err) == 0);
	CHECK(s.records == UINT32_MAX);
}

/* ---- the reader ---------------------------------------------------------- */

/* One claim of input.bin: hands out the records, checks each against
 * expect (the records that must come, in order) and deliveries, marks
 * those in mark done; stops after stop records (0: none). Returns whether
 * it read to the end and marked all it got; *got the records it got. */
static void *claim(bool expect[MAX_RECORDS], const dumpfile *d, uint32_t deliveries,
		   const bool mark[MAX_RECORDS], unsigned stop, bool *whole)
{
	blq_error err;
	blq_dump_record rec;
	void *dump = NULL;
	unsigned char want[128];
	unsigned got = 0;
	uint64_t next = 0; /* every index below it was either handed out or skipped */
	int rc = 0;

	*whole = true;
	CHECK(rd->next(rd, &dump, &err) == 1 && dump != NULL);
	while ((stop == 0 || got < stop) && (rc = rd->record(rd, dump, &rec, &err)) == 1) {
		CHECK(rec.index < d->records && rec.index >= next);
		for (uint64_t i = next; i < rec.index; i++) {
			if (expect[i])
				fprintf(stderr, "dump_checkpoint_fuzz: record %llu skipped; "
					"it is not done\n", (unsigned long long)i);
			CHECK(!expect[i]); /* skipped: must be one done before */
		}
		if (!expect[rec.index])
			fprintf(stderr, "dump_checkpoint_fuzz: record %llu handed out; it is done\n",
				(unsigned long long)rec.index);
		CHECK(expect[rec.index]);
		next = rec.index + 1;
		size_t len = record_data((unsigned)rec.index, want);
		CHECK(rec.len == len && memcmp(rec.data, want, len) == 0);
		CHECK(rec.version == VERSION && rec.deliveries == deliveries);
		CHECK(rec.restores == rec.index % 3);
		if (mark[rec.index]) {
			CHECK(rd->done(rd, dump, rec.index, &err) == 0);
			expect[rec.index] = false; /* not to come again */
		} else {
			*whole = false;
		}
		got++;
	}
	if (stop == 0 || got < stop) {
		CHECK(rc == 0);
		for (uint64_t i = next; i < d->records; i++)
			if (expect[i])
				fprintf(stderr, "dump_checkpoint_fuzz: record %llu never came\n",
					(unsigned long long)i);
		for (uint64_t i = next; i < d->records; i++)
			CHECK(!expect[i]); /* nothing not done is left out */
	} else {
		*whole = false;
	}
	return dump;
}

static void commit(void *dump, const dumpfile *d)
{
	blq_error err;

	int rc = rd->commit(rd, dump, &err);
	if (rc != 0)
		fprintf(stderr, "dump_checkpoint_fuzz: commit: %s\n", err.msg);
	CHECK(rc == 0);
	CHECK(access(file, F_OK) != 0 && access(ckpt, F_OK) != 0);
	CHECK((access(quarantined, F_OK) == 0) == d->damaged);
	unlink(quarantined);
}

static void check_reader(const dumpfile *d, const oracle *o, unsigned char mask, bool stop)
{
	bool expect[MAX_RECORDS] = {false}, mark[MAX_RECORDS], all[MAX_RECORDS];
	uint32_t claims = o->valid ? o->claims : 0;
	bool whole;

	for (unsigned i = 0; i < d->records; i++) {
		expect[i] = !oracle_done(o, i);
		mark[i] = mask >> (i % 8) & 1u;
		all[i] = true;
	}
	void *dump = claim(expect, d, claims, mark, stop ? 2 : 0, &whole);
	if (whole) {
		commit(dump, d);
		return;
	}
	rd->release(rd, dump);
	/* The second claim: what was not done comes again, once. */
	claims = claims < UINT32_MAX ? claims + 1 : UINT32_MAX;
	dump = claim(expect, d, claims, all, 0, &whole);
	CHECK(whole);
	commit(dump, d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (rd == NULL)
		setup();
	if (size < 2)
		return 0;
	unsigned ctl = data[0];
	unsigned char mask = data[1];
	const dumpfile *d = &dumps[ctl & 3u];
	size_t n = size - 2;
	unsigned char *ck = malloc(n ? n : 1);
	struct stat st;

	CHECK(ck != NULL);
	memcpy(ck, data + 2, n);
	unlink(ckpt);
	write_file(file, d->bytes, d->len);
	CHECK(stat(file, &st) == 0);
	if ((ctl & 4u) && n >= 32) {
		uint64_t id[3];
		identity_of(&st, id);
		put64(ck + 8, id[0]);
		put64(ck + 16, id[1]);
		put64(ck + 24, id[2]);
	}
	if ((ctl & 8u) && n >= FIXED) {
		uint64_t nb = ((uint64_t)blq__get32(ck + 44) + 7) / 8;
		if (FIXED + nb + 4 <= n)
			blq__put32(ck + FIXED + nb, blq__crc32c(0, ck, FIXED + nb));
	}
	oracle o = {0};
	if (!(ctl & 64u)) {
		write_file(ckpt, ck, n);
		o = oracle_parse(ck, n, &st);
	}
	check_load(ck, n, &st, &o);
	check_inspector(d, &o);
	if (ctl & 16u) {
		check_reader(d, &o, mask, ctl & 32u);
	} else {
		unlink(file);
		unlink(ckpt);
	}
	free(ck);
	return 0;
}
