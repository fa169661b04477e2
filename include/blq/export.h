/* Symbol visibility: the library is built with -fvisibility=hidden and
 * exports only what is marked BLQ_API. */
#ifndef BLQ_EXPORT_H
#define BLQ_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define BLQ_API __attribute__((visibility("default")))
#else
#define BLQ_API
#endif

#endif
