/* The cache line size the library pads and aligns to. Not installed. */
#ifndef BLQ_UTIL_CACHELINE_H
#define BLQ_UTIL_CACHELINE_H

/* 64 bytes on x86-64 and most arm64 cores: fields written by different
 * threads go on lines of their own (alignas(BLQ__CACHELINE)). */
#define BLQ__CACHELINE 64

#endif
