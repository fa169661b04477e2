/*
 * CRC-32C (polynomial 0x1EDC6F41, reflected 0x82F63B78), as iSCSI and ext4
 * use it: check value crc32c("123456789") == 0xE3069283.
 *
 * Two paths with one result: the x86 crc32 instruction (SSE4.2, picked at
 * run time) and a portable slicing-by-8 table, built once on first use.
 */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

static uint32_t crc_table(uint32_t crc, const unsigned char *p, size_t n)
{
	pthread_once(&table_once, table_init);
	while (n >= 8) {
		uint32_t lo, hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo ^= crc; /* little-endian hosts only: x86-64, aarch64 */
		crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
		      table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
		      table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
		p += 8;
		n -= 8;
	}
	while (n-- > 0)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p,
							  size_t n)
{
	uint64_t c = crc;

	while (n >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		n -= 8;
	}
	crc = (uint32_t)c;
	while (n-- > 0)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}

static int have_hw(void)
{
	/* 0 unknown, 1 yes, 2 no; racing first calls compute the same. */
	static int known;
	int k = __atomic_load_n(&known, __ATOMIC_RELAXED);

	if (k == 0) {
		__builtin_cpu_init();
		k = __builtin_cpu_supports("sse4.2") ? 1 : 2;
		__atomic_store_n(&known, k, __ATOMIC_RELAXED);
	}
	return k == 1;
}
#endif

uint32_t blq__crc32c(uint32_t crc, const void *p, size_t n)
{
	crc = ~crc;
#if defined(__x86_64__)
	if (have_hw())
		return ~crc_hw(crc, p, n);
#endif
	return ~crc_table(crc, p, n);
}
