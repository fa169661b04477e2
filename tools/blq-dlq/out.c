/*
 * blq-dlq's printing: times, sizes, payload previews, JSON values.
 *
 * Design
 * - For a terminal: times in local ISO 8601 (an operator reads the
 *   clock on the wall), sizes in binary units, a payload as text when
 *   every byte is printable (UTF-8 included) and as hex otherwise, and
 *   only its first 64 bytes unless --full, so one huge record does not
 *   flood the screen.
 * - For pipes (--json): exact values (ns since the epoch, bytes), one
 *   object per line; strings through the library's JSON escaping.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json_escape.h"

#define PREVIEW 64

const char *cli_time(uint64_t ns, char *buf, size_t cap)
{
	if (ns == 0) {
		snprintf(buf, cap, "-");
		return buf;
	}
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;
	char date[32], zone[8];
	localtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	strftime(zone, sizeof(zone), "%z", &tm); /* +0100: ISO 8601 wants +01:00 */
	snprintf(buf, cap, "%s.%03u%.3s:%.2s", date, (unsigned)(ns / 1000000 % 1000), zone,
		 zone + 3);
	return buf;
}

const char *cli_skipped(const blq_inspect_record *r, char *buf, size_t cap)
{
	if (r->skipped == 0 && r->spans == 0)
		snprintf(buf, cap, "%s", "");
	else if (r->spans == 0)
		snprintf(buf, cap, " (%" PRIu64 " bytes skipped, no record read)", r->skipped);
	else
		snprintf(buf, cap, " (%" PRIu64 " damaged span%s, %" PRIu64 " bytes skipped)", r->spans,
			 r->spans == 1 ? "" : "s", r->skipped);
	return buf;
}

const char *cli_size(uint64_t bytes, char *buf, size_t cap)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, cap, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, cap, "%.1f %s", v, units[u]);
	return buf;
}

void cli_json_str(FILE *f, const char *s)
{
	char small[256];
	size_t n = blq__json_escape(small, sizeof(small), s);
	if (n < sizeof(small)) {
		fprintf(f, "\"%s\"", small);
		return;
	}
	char *big = malloc(n + 1);
	if (big == NULL) {
		fputs("\"\"", f);
		return;
	}
	blq__json_escape(big, n + 1, s);
	fprintf(f, "\"%s\"", big);
	free(big);
}

/* Printable: no control bytes but tab and newline, and valid UTF-8. */
static bool printable(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len;) {
		unsigned char c = p[i];
		size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
				  : (c & 0xF8) == 0xF0 ? 4 : 0;
		if (k == 0 || (k == 1 && ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)))
			return false;
		if (i + k > len) /* a character cut by the end of the record */
			return false;
		for (size_t j = 1; j < k; j++)
			if ((p[i + j] & 0xC0) != 0x80)
				return false;
		i += k;
	}
	return true;
}

void cli_preview(FILE *f, const void *data, size_t len, bool full)
{
	const unsigned char *p = data;
	size_t n = full || len <= PREVIEW ? len : PREVIEW;
	if (printable(p, len)) {
		/* Cut on a character boundary. */
		while (n < len && n > 0 && (p[n] & 0xC0) == 0x80)
			n--;
		fputc('"', f);
		for (size_t i = 0; i < n; i++)
			if (p[i] == '\n')
				fputs("\\n", f);
			else if (p[i] == '\t')
				fputs("\\t", f);
			else if (p[i] == '"' || p[i] == '\\')
				fprintf(f, "\\%c", p[i]);
			else
				fputc(p[i], f);
		fputc('"', f);
	} else {
		fputs("hex", f);
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%s%02x", i % 4 == 0 ? " " : "", p[i]);
	}
	if (n < len)
		fprintf(f, " ... %zu more bytes (--full)", len - n);
}

bool cli_why_empty(const blq_dlq_why *w)
{
	return w->reason == BLQ_DLQ_UNKNOWN && w->attempts == 0 && w->rc == 0 &&
	       w->time_ns == 0 && w->queue[0] == '\0';
}

const char *cli_why(const blq_dlq_why *w, char *buf, size_t cap)
{
	if (cli_why_empty(w))
		snprintf(buf, cap, "%s", "");
	else
		snprintf(buf, cap, "%s (attempts %u, rc %d, queue %s)", blq_dlq_reason_name(w->reason),
			 (unsigned)w->attempts, (int)w->rc, w->queue[0] != '\0' ? w->queue : "-");
	return buf;
}

void cli_json_why(FILE *f, const blq_dlq_why *w)
{
	if (cli_why_empty(w)) {
		fputs("null", f);
		return;
	}
	fputs("{\"reason\":", f);
	cli_json_str(f, blq_dlq_reason_name(w->reason));
	fprintf(f, ",\"attempts\":%u,\"rc\":%d,\"queue\":", (unsigned)w->attempts, (int)w->rc);
	cli_json_str(f, w->queue);
	fprintf(f, ",\"time_ns\":%" PRIu64 "}", w->time_ns);
}
