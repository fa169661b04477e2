/* JSON string escaping shared by the status views. Not installed. */
#ifndef BLQ_UTIL_JSON_ESCAPE_H
#define BLQ_UTIL_JSON_ESCAPE_H

#include <stddef.h>

/* Writes s into dst (cap bytes, NUL-terminated, truncated to fit) as the
 * body of a JSON string: quotes, backslashes and control bytes escaped,
 * bytes that are not well-formed UTF-8 replaced by '?', so any name gives
 * valid JSON. Returns the length the whole escaped text
 * needs, without the NUL, like snprintf. A buffer of 6 * strlen(s) + 1
 * always fits. Thread-safe (no state). */
size_t blq__json_escape(char *dst, size_t cap, const char *s);

#endif
