/* CRC-32C (Castagnoli), the checksum of dump records. Not installed. */
#ifndef BLQ_DLQ_CRC32C_H
#define BLQ_DLQ_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extends crc (0 to start) over n bytes at p. Uses SSE4.2's crc32
 * instruction when the CPU has it, else slicing-by-8 tables. */
uint32_t blq__crc32c(uint32_t crc, const void *p, size_t n);

#endif
