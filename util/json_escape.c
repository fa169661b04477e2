/*
 * JSON string escaping. Byte by byte: `"` and `\` get a backslash, control
 * bytes (< 0x20) become \u00XX, well-formed UTF-8 passes through as it
 * is, and each byte that is not part of a well-formed sequence becomes '?'
 * (names from dumps and configs are bytes; JSON text must be UTF-8, or a
 * reader refuses the whole document). The length is counted past the end of the buffer, so a
 * caller can size its buffer the way it would with snprintf.
 */
#include "json_escape.h"

#include <stdio.h>
#include <string.h>

/* The length of the well-formed UTF-8 sequence at s (lead byte >= 0x80),
 * or 0 when it is not one (a stray continuation byte, a cut sequence, an
 * overlong form, a surrogate, past U+10FFFF). */
static int utf8_len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int k = p[0] >= 0xC2 && p[0] <= 0xDF ? 2 : p[0] >= 0xE0 && p[0] <= 0xEF ? 3
		: p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : 0;
	for (int i = 1; i < k; i++)
		if ((p[i] & 0xC0) != 0x80)
			return 0;
	if ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] > 0x9F) ||
	    (p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] > 0x8F))
		return 0;
	return k;
}

size_t blq__json_escape(char *dst, size_t cap, const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;
		char tmp[8];
		int k;

		if (ch == '"' || ch == '\\') {
			k = snprintf(tmp, sizeof(tmp), "\\%c", ch);
		} else if (ch < 0x20) {
			k = snprintf(tmp, sizeof(tmp), "\\u%04x", ch);
		} else if (ch < 0x80) {
			k = snprintf(tmp, sizeof(tmp), "%c", ch);
		} else if ((k = utf8_len(s)) > 0) {
			memcpy(tmp, s, (size_t)k);
			s += k - 1;
		} else {
			tmp[0] = '?'; /* not UTF-8: JSON text must be */
			k = 1;
		}
		for (int i = 0; i < k; i++, n++)
			if (n + 1 < cap)
				dst[n] = tmp[i];
	}
	if (cap > 0)
		dst[n < cap ? n : cap - 1] = '\0';
	return n;
}
