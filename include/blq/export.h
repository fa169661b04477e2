/**
 * \file
 * Symbol visibility: the library is built with -fvisibility=hidden and
 * exports only what is marked BLQ_API. Nothing here to call.
 */
#ifndef BLQ_EXPORT_H
#define BLQ_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
/** Marks a declaration as part of the library's ABI (default visibility);
 * empty for compilers without the attribute. */
#define BLQ_API __attribute__((visibility("default")))
#else
#define BLQ_API
#endif

#endif
