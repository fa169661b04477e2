/*
 * JSON string escaping. Byte by byte: `"` and `\` get a backslash, control
 * bytes (< 0x20) become \u00XX, everything else (UTF-8 included) passes
 * through as it is. The length is counted past the end of the buffer, so a
 * caller can size its buffer the way it would with snprintf.
 */
#include "json_escape.h"

#include <stdio.h>

size_t blq__json_escape(char *dst, size_t cap, const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;
		char tmp[8];
		int k;

		if (ch == '"' || ch == '\\')
			k = snprintf(tmp, sizeof(tmp), "\\%c", ch);
		else if (ch < 0x20)
			k = snprintf(tmp, sizeof(tmp), "\\u%04x", ch);
		else
			k = snprintf(tmp, sizeof(tmp), "%c", ch);
		for (int i = 0; i < k; i++, n++)
			if (n + 1 < cap)
				dst[n] = tmp[i];
	}
	if (cap > 0)
		dst[n < cap ? n : cap - 1] = '\0';
	return n;
}
