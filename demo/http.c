/* The API and metrics servers on libmicrohttpd. */
#include "http.h"

#include "dashboard.h"
#include "deadline.h"
#include "dlq_api.h"
#include "log.h"
#include "origin.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct demo_http {
	struct MHD_Daemon *d;
	demo_registry *reg;
	blq_prom *prom;
	const blq_logger *logger;
	demo_deadlines *deadlines; /* a whole request within DEMO_REQUEST_TIME_S */
	bool loopback; /* listening on loopback: Host is checked (origin.h) */
};

/* One request's state across libmicrohttpd's calls. */
typedef struct request {
	char *body;
	size_t len, cap;
	bool too_large;
} request;

/* The connection's deadline record (deadline.h), or NULL. */
static demo_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci != NULL ? ci->socket_context : NULL;
}

/* Sends @text (malloc'd, consumed) as @type; @allow, when not NULL, is the
 * Allow header of a 405. */
static enum MHD_Result send_text_allow(struct MHD_Connection *c, unsigned status, char *text,
				       const char *type, const char *allow, const char *attachment)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (allow != NULL)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	if (attachment != NULL && attachment[0] != '\0') {
		char cd[160];
		snprintf(cd, sizeof cd, "attachment; filename=\"%s\"", attachment);
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION, cd);
	}
	/* The original allows any origin to read; changes from another site
	 * are refused (origin.h). */
	MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
	MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
	MHD_add_response_header(r, "Access-Control-Allow-Headers", "Origin, Content-Type");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, char *text,
				 const char *type)
{
	return send_text_allow(c, status, text, type, NULL, NULL);
}

/* A dashboard file (dashboard.h). The page may load only its own files
 * and call only this server (Content-Security-Policy), so nothing is
 * fetched from elsewhere even by mistake. */
static enum MHD_Result send_asset(struct MHD_Connection *c, const demo_asset *a)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->type);
	MHD_add_response_header(r, "Content-Security-Policy",
				"default-src 'self'; img-src 'self' data:; object-src 'none'; "
				"base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Cache-Control", "no-cache");
	enum MHD_Result ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* The original's reply: {"status":N,"error":"...","message":"..."}, empty
 * members left out; @final (JSON text, consumed) adds the stop's accounting.
 * Return: malloc'd text, or NULL. */
static char *reply_text(unsigned status, const char *error, const char *message, char *final)
{
	json_t *o = json_pack("{s:i}", "status", (int)status);
	if (o != NULL && error != NULL && error[0] != '\0')
		json_object_set_new(o, "error", json_string(error));
	if (o != NULL && message != NULL && message[0] != '\0')
		json_object_set_new(o, "message", json_string(message));
	if (o != NULL && final != NULL) {
		json_t *f = json_loads(final, 0, NULL);
		if (f != NULL)
			json_object_set_new(o, "final", f);
	}
	free(final);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *error,
			     const char *message, char *final)
{
	char *text = reply_text(status, error, message, final);
	return text != NULL ? send_text(c, status, text, "application/json") : MHD_NO;
}

/* A query argument, or NULL when absent. *cut is set when the decoded
 * value holds a NUL byte (%00): as a C string it would be cut short and
 * read as another value ("a%00b" as key "a"). */
static const char *query_arg(struct MHD_Connection *c, const char *name, bool *cut)
{
	const char *v = NULL;
	size_t n = 0;
	*cut = false;
	if (MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND, name, strlen(name), &v, &n) !=
		    MHD_YES ||
	    v == NULL)
		return NULL;
	*cut = strlen(v) != n;
	return v;
}

/* ?delta=N: absent or 0 means 1, as in the original. */
static bool parse_delta(const char *d, unsigned *out)
{
	*out = 1;
	if (d == NULL || d[0] == '\0')
		return true;
	unsigned long v = 0;
	for (const char *p = d; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || v > DEMO_PRODUCERS_MAX)
			return false;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v > DEMO_PRODUCERS_MAX)
		return false;
	*out = v ? (unsigned)v : 1;
	return true;
}

/* ?after=N: a sample number, absent or empty meaning 0 (all). */
static bool parse_after(const char *a, uint64_t *out)
{
	*out = 0;
	if (a == NULL || a[0] == '\0')
		return true;
	uint64_t v = 0;
	for (const char *p = a; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*out = v;
	return true;
}

static enum MHD_Result api_init(demo_http *h, struct MHD_Connection *c, const char *key,
				const request *rq)
{
	demo_spec *spec = malloc(sizeof *spec); /* ~20 KiB: not on a thread's stack */
	char err[512];
	if (spec == NULL)
		return reply(c, 500, "out of memory", NULL, NULL);
	int status = 400;
	if (rq->len == 0)
		snprintf(err, sizeof err, "body: empty; send the queue's config as JSON");
	else if (demo_spec_parse(rq->body, rq->len, spec, err, sizeof err) == 0)
		status = demo_registry_init(h->reg, key, spec, err, sizeof err);
	free(spec);
	if (status != 200) {
		demo_log(h->logger, BLQ_LOG_WARN, "init %s: %d %s", key, status, err);
		return reply(c, (unsigned)status, err, NULL, NULL);
	}
	demo_log(h->logger, BLQ_LOG_INFO, "init %s: started", key);
	return reply(c, 200, NULL, "success", NULL);
}

/* Requests on a live key: status, stats, history, producer-up, producer-down. */
static enum MHD_Result api_stage(demo_http *h, struct MHD_Connection *c, const char *what,
				 const char *key)
{
	unsigned delta = 1;
	uint64_t after = 0;
	bool up = strcmp(what, "producer-up") == 0, down = strcmp(what, "producer-down") == 0;
	bool history = strcmp(what, "history") == 0;
	bool cut = false;
	if ((up || down) &&
	    (!parse_delta(query_arg(c, "delta", &cut), &delta) || cut)) {
		char err[128];
		snprintf(err, sizeof err, "delta: expected an integer 0..%u", DEMO_PRODUCERS_MAX);
		return reply(c, 400, err, NULL, NULL);
	}
	if (history && (!parse_after(query_arg(c, "after", &cut), &after) || cut))
		return reply(c, 400, "after: expected a sample number (a non-negative integer, the "
				     "\"seq\" of the last sample you have)", NULL, NULL);
	bool stopping = false;
	demo_stage *s = demo_registry_get(h->reg, key, &stopping);
	char err[256];
	if (s == NULL) {
		snprintf(err, sizeof err, "queue \"%s\" not found", key);
		return reply(c, 404, err, NULL, NULL);
	}
	enum MHD_Result ret;
	if (strcmp(what, "stats") == 0 || history) {
		/* The dashboard's numbers: the object itself, not the envelope. */
		char *st = history ? demo_stage_history_json(s, after)
				   : demo_stage_stats_json(s, stopping);
		ret = st ? send_text(c, 200, st, "application/json")
			 : reply(c, 500, "out of memory", NULL, NULL);
	} else if (!up && !down) {
		char *st = demo_stage_status_json(s);
		ret = st ? reply(c, 200, NULL, st, NULL) : reply(c, 500, "out of memory", NULL, NULL);
		free(st);
	} else if (stopping) {
		snprintf(err, sizeof err, "queue \"%s\" is stopping", key);
		ret = reply(c, 409, err, NULL, NULL);
	} else if ((up ? demo_stage_producers_up : demo_stage_producers_down)(s, delta, err,
									    sizeof err) != 0) {
		ret = reply(c, 409, err, NULL, NULL);
	} else {
		ret = reply(c, 200, NULL, "success", NULL);
	}
	demo_registry_put(h->reg, key);
	return ret;
}

static const char *dlq_arg(void *ctx, const char *name, bool *cut)
{
	return query_arg(ctx, name, cut);
}

/* The DLQ's endpoints (dlq_api.h); a download is an attachment. */
static enum MHD_Result api_dlq(demo_http *h, struct MHD_Connection *c, const char *what,
			       const char *method, const char *key, const request *rq)
{
	demo_dlq_reply out;
	demo_dlq_handle(h->reg, what, method, key, dlq_arg, c, rq->body, rq->len, &out);
	if (out.body == NULL) {
		if (out.status >= 500)
			demo_log(h->logger, BLQ_LOG_WARN, "%s %s: %u %s", what, key, out.status,
				 out.error);
		return reply(c, out.status, out.error, NULL, NULL);
	}
	if (strcmp(what, "dlq/redrive") == 0 || strcmp(what, "dlq/purge") == 0)
		demo_log(h->logger, BLQ_LOG_INFO, "%s %s: %.300s", what, key, out.body);
	return send_text_allow(c, out.status, out.body, out.type, NULL, out.filename);
}

static enum MHD_Result api_route(demo_http *h, struct MHD_Connection *c, const char *url,
				 const char *method, const request *rq)
{
	static const char *const paths[] = {"ping", "list", "init", "status", "stats", "history",
					    "producer-up", "producer-down", "stop", "force-stop"};
	const char *what = NULL;
	char err[256];
	const demo_asset *asset = strncmp(url, "/api/", 5) != 0 ? demo_asset_find(url) : NULL;
	if (strncmp(url, "/api/v1/", 8) == 0)
		for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
			if (strcmp(url + 8, paths[i]) == 0)
				what = paths[i];
	/* Everything but ping, list, status, stats and history changes a queue;
	 * of the DLQ's endpoints, redrive and purge (dlq_api.h). */
	bool changes = what != NULL && strcmp(what, "ping") != 0 && strcmp(what, "list") != 0 &&
		       strncmp(what, "stat", 4) != 0 && strcmp(what, "history") != 0;
	if (what == NULL && strncmp(url, "/api/v1/", 8) == 0 && demo_dlq_path(url + 8, &changes))
		what = url + 8;
	if (demo_origin_refusal(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host"),
				MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin"),
				MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-Fetch-Site"),
				h->loopback, changes, err, sizeof err)) {
		demo_log(h->logger, BLQ_LOG_WARN, "%s %.200s: 403 %s", method, url, err);
		return reply(c, 403, err, NULL, NULL);
	}
	if (asset != NULL) {
		if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
			return send_asset(c, asset);
		snprintf(err, sizeof err, "method %.16s not allowed; use GET", method);
		char *text = reply_text(405, err, NULL, NULL);
		return text != NULL ? send_text_allow(c, 405, text, "application/json", "GET, HEAD", NULL)
				    : MHD_NO;
	}
	if (what == NULL) {
		snprintf(err, sizeof err, "unknown path %.200s", url);
		return reply(c, 404, err, NULL, NULL);
	}
	bool is_init = strcmp(what, "init") == 0;
	if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0 && strcmp(method, "PUT") != 0) {
		snprintf(err, sizeof err, "method %.16s not allowed; use %s", method,
			 is_init ? "POST" : "GET or POST");
		return reply(c, 405, err, NULL, NULL);
	}
	if (strcmp(what, "ping") == 0)
		return reply(c, 200, NULL, "pong", NULL);
	if (strcmp(what, "list") == 0) {
		char *list = demo_registry_list_json(h->reg);
		enum MHD_Result ret = list ? reply(c, 200, NULL, list, NULL)
					   : reply(c, 500, "out of memory", NULL, NULL);
		free(list);
		return ret;
	}
	bool cut = false;
	const char *key = query_arg(c, "key", &cut);
	if ((key == NULL || key[0] == '\0') && !cut)
		return reply(c, 400, "key: missing; add ?key=<name>", NULL, NULL);
	if (cut || !demo_key_valid(key))
		return reply(c, 400, "key: must be 1 to 63 characters of A-Z, a-z, 0-9, _ and -",
			     NULL, NULL);
	if (is_init) {
		if (strcmp(method, "GET") == 0)
			return reply(c, 405, "init: use POST with the config as the body", NULL, NULL);
		return api_init(h, c, key, rq);
	}
	if (strncmp(what, "dlq", 3) == 0)
		return api_dlq(h, c, what, method, key, rq);
	if (strcmp(what, "stop") == 0 || strcmp(what, "force-stop") == 0) {
		bool force = what[0] == 'f';
		char *final = NULL;
		int status = demo_registry_stop(h->reg, key, force, &final, err, sizeof err);
		if (status != 200)
			return reply(c, (unsigned)status, err, NULL, NULL);
		demo_log(h->logger, BLQ_LOG_INFO, "%s %s: done", what, key);
		return reply(c, 200, NULL, "success", final);
	}
	return api_stage(h, c, what, key);
}

/* /metrics: the registry's exposition plus the producers gauges. */
static enum MHD_Result metrics_route(demo_http *h, struct MHD_Connection *c, const char *url,
				     const char *method)
{
	if (strcmp(url, "/metrics") != 0)
		return send_text(c, 404, strdup("not found; the exposition is at /metrics\n"),
				 "text/plain; charset=utf-8");
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return send_text(c, 405, strdup("use GET\n"), "text/plain; charset=utf-8");
	size_t cap = 64 << 10, len;
	char *buf = malloc(cap);
	for (;;) {
		if (buf == NULL)
			return MHD_NO;
		int n = blq_prom_render(h->prom, buf, cap);
		if (n < 0) {
			free(buf);
			return MHD_NO;
		}
		if ((size_t)n < cap) {
			len = (size_t)n;
			break;
		}
		cap = (size_t)n + 4096; /* grown meanwhile: render again */
		free(buf);
		buf = malloc(cap);
	}
	if (demo_registry_render_producers(h->reg, &buf, &len, &cap) != 0) {
		free(buf);
		return MHD_NO;
	}
	return send_text(c, 200, buf, "text/plain; version=0.0.4; charset=utf-8");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls, bool metrics)
{
	(void)version;
	demo_http *h = cls;
	request *rq = *con_cls;
	if (rq == NULL) {
		rq = calloc(1, sizeof *rq);
		if (rq == NULL)
			return MHD_NO;
		*con_cls = rq;
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl != NULL && strtoull(cl, NULL, 10) > DEMO_BODY_MAX) {
			rq->too_large = true; /* answered now; the body is never read */
			demo_deadlines_pause(h->deadlines, conn_of(c));
			return reply(c, 413, "body: larger than 1 MiB", NULL, NULL);
		}
		return MHD_YES;
	}
	if (*upload_size > 0) {
		if (!rq->too_large && rq->len + *upload_size > DEMO_BODY_MAX)
			rq->too_large = true; /* chunked, no length: keep reading, then 413 */
		if (!rq->too_large && !metrics) {
			if (rq->len + *upload_size > rq->cap) {
				size_t ncap = (rq->len + *upload_size) * 2;
				ncap = ncap > DEMO_BODY_MAX ? DEMO_BODY_MAX : ncap;
				char *nb = realloc(rq->body, ncap);
				if (nb == NULL)
					return MHD_NO;
				rq->body = nb;
				rq->cap = ncap;
			}
			memcpy(rq->body + rq->len, upload, *upload_size);
			rq->len += *upload_size;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	/* The whole request is in: the handler may take long (a draining stop). */
	demo_deadlines_pause(h->deadlines, conn_of(c));
	if (rq->too_large)
		return reply(c, 413, "body: larger than 1 MiB", NULL, NULL);
	if (strcmp(method, "OPTIONS") == 0) /* CORS preflight */
		return send_text(c, 204, strdup(""), "text/plain");
	return metrics ? metrics_route(h, c, url, method) : api_route(h, c, url, method, rq);
}

static enum MHD_Result on_api(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	return on_request(cls, c, url, method, version, upload, upload_size, con_cls, false);
}

static enum MHD_Result on_metrics(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	return on_request(cls, c, url, method, version, upload, upload_size, con_cls, true);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode code)
{
	demo_http *h = cls;
	(void)code;
	/* A kept-alive connection's next request gets its own time. */
	demo_deadlines_restart(h->deadlines, conn_of(c));
	request *rq = *con_cls;
	if (rq != NULL) {
		free(rq->body);
		free(rq);
		*con_cls = NULL;
	}
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	demo_http *h = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		*socket_context = ci ? demo_deadlines_open(h->deadlines, ci->connect_fd) : NULL;
	} else {
		demo_deadlines_close(h->deadlines, *socket_context);
		*socket_context = NULL;
	}
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	const demo_http *h = cls;
	demo_vlog(h->logger, BLQ_LOG_DEBUG, fmt, ap);
}

demo_http *demo_http_start(demo_registry *reg, blq_prom *prom, int fd, bool ipv6, bool metrics,
			   unsigned request_s, const blq_logger *logger, char *err, size_t errlen)
{
	demo_http *h = calloc(1, sizeof *h);
	if (h == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->reg = reg;
	h->prom = prom;
	h->logger = logger;
	h->loopback = demo_fd_is_loopback(fd);
	h->deadlines = demo_deadlines_new(DEMO_CONNECTIONS_MAX, (uint64_t)request_s * 1000000000u);
	if (h->deadlines == NULL) {
		snprintf(err, errlen, "out of memory or threads");
		free(h);
		return NULL;
	}
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_POLL | MHD_USE_ERROR_LOG | (ipv6 ? MHD_USE_IPv6 : 0);
	h->d = MHD_start_daemon(flags, 0, NULL, NULL, metrics ? on_metrics : on_api, h,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)DEMO_CONNECTIONS_MAX,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)DEMO_CONNECTIONS_PER_IP,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)DEMO_IDLE_TIMEOUT_S,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)DEMO_HEADER_MEMORY,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
				MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h, MHD_OPTION_END);
	if (h->d == NULL) {
		snprintf(err, errlen, "libmicrohttpd would not start on the socket");
		demo_deadlines_free(h->deadlines);
		free(h);
		return NULL;
	}
	return h;
}

void demo_http_stop(demo_http *h)
{
	if (h == NULL)
		return;
	MHD_stop_daemon(h->d);
	demo_deadlines_free(h->deadlines);
	free(h);
}
