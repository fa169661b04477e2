/*
 * blq-demo: the demo daemon. An HTTP API creates queues with producers and
 * emulated workers (the original koykov/demo stage), /metrics serves them
 * to Prometheus. SIGTERM or SIGINT drains every queue and exits 0; a
 * second signal forces the close (exit 2); with --drain-timeout, a drain
 * still running at that deadline turns into a Hard close (exit 3).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <blq/blq.h>

#include "http.h"
#include "net.h"
#include "registry.h"

static void usage(FILE *to)
{
	fprintf(to,
		"usage: blq-demo [options]\n"
		"  -l, --listen HOST:PORT          API address (default 127.0.0.1:8080)\n"
		"  -m, --metrics-listen HOST:PORT  /metrics address (default 127.0.0.1:8081)\n"
		"  -d, --dump-dir DIR              where disk dumps go (default ./dump; created)\n"
		"  -r, --redis HOST:PORT           Redis server for \"writer\": \"redis\" dumps\n"
		"  -L, --log-level LEVEL           error, warn, info (default) or debug\n"
		"  -t, --request-time SECONDS      time a client has to send a whole request\n"
		"                                  (default 30; then its connection is cut)\n"
		"  -T, --drain-timeout DURATION    after SIGTERM/SIGINT, how long the drain may\n"
		"                                  take (\"30s\", \"1m30s\", \"500ms\"; at most 24h);\n"
		"                                  then what is left is closed Hard (exit 3).\n"
		"                                  0 or absent: no deadline\n"
		"  -h, --help                      this text\n"
		"  -hport PORT, -pport PORT        the original koykov/demo daemon's flags (also\n"
		"                                  -hport=PORT, --hport): the port of --listen and\n"
		"                                  of --metrics-listen; their host stays\n"
		"                                  (127.0.0.1 unless given). -pfport is refused:\n"
		"                                  blq-demo has no pprof server\n"
		"API: POST /api/v1/init?key=K (JSON config), GET /api/v1/{producer-up,producer-down}"
		"?key=K&delta=N,\n     /api/v1/{stop,force-stop,status,stats,history}?key=K,\n     /api/v1/list, "
		"/api/v1/ping. See docs/demo-daemon.md and docs/reference-http-api.md.\n"
		"Dashboard: open http://HOST:PORT/ (the API address) in a browser.\n"
		"SIGTERM/SIGINT: drain every queue, exit 0; a second signal forces (exit 2);\n"
		"the --drain-timeout deadline forces (exit 3). Exit 64: bad usage; 1: cannot start.\n");
}

static int parse_level(const char *s)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0)
			return i + 1;
	return 0;
}

/*
 * The original daemon's flags (koykov/demo queue/main.go, Go's flag
 * package): -hport N and -pport N, also -hport=N, --hport N, --hport=N,
 * set the port of the API and the metrics address. They are taken out of
 * argv here, before getopt_long sees it. getopt_long_only would take
 * them too, but it reads every single-dash word as a long option first,
 * which changes today's short options ("-lo" would become --log-level
 * instead of -l with "o"); this way the rest of argv goes to the same
 * getopt_long call as before. The scan skips the value
 * of every option that takes one ("-d -hport" keeps "-hport" as the dump
 * directory) and stops at "--". Single-dash words that no option of ours
 * spells ("-hprot", "-x") are refused by name here: getopt_long would read
 * "-hprot" as -h and print the help with exit 0.
 */
typedef struct go_flags {
	long hport, pport; /* -1: not given */
} go_flags;

static int go_flag_port(const char *flag, const char *v, long *out)
{
	char *end;
	long p = (*v >= '0' && *v <= '9') ? strtol(v, &end, 10) : -1;
	if (p < 0 || *end != '\0' || p > 65535) {
		fprintf(stderr, "blq-demo: -%s: expected a port number 0..65535, got \"%s\"\n", flag, v);
		return -1;
	}
	*out = p;
	return 0;
}

/* Removes the original's flags from argv (kept in order otherwise);
 * returns the new argc, or -1 after a message naming the bad flag. */
static int take_go_flags(int argc, char **argv, const struct option *opts, go_flags *g)
{
	int n = 1, i = 1;
	for (; i < argc; i++) {
		char *a = argv[i];
		if (strcmp(a, "--") == 0)
			break;
		if (a[0] != '-' || a[1] == '\0') { /* an operand, or "-" */
			argv[n++] = a;
			continue;
		}
		bool dash2 = a[1] == '-';
		const char *name = a + (dash2 ? 2 : 1), *eq = strchr(name, '=');
		size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
		long *port = len == 5 && strncmp(name, "hport", 5) == 0   ? &g->hport
			     : len == 5 && strncmp(name, "pport", 5) == 0 ? &g->pport
									   : NULL;
		if (port != NULL || (len == 6 && strncmp(name, "pfport", 6) == 0)) {
			const char *flag = port == &g->hport ? "hport" : port ? "pport" : "pfport";
			const char *v = eq != NULL ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
			if (port == NULL) {
				fprintf(stderr, "blq-demo: -pfport: the original's pprof port has no "
						"equivalent (blq-demo serves no pprof); drop the flag\n");
				return -1;
			}
			if (v == NULL) {
				fprintf(stderr, "blq-demo: -%s: needs a port number\n", flag);
				return -1;
			}
			if (go_flag_port(flag, v, port) != 0)
				return -1;
			continue;
		}
		argv[n++] = a;
		if (dash2) { /* ours; skip its separate value, matching abbreviations as getopt_long */
			for (const struct option *o = opts; o->name != NULL && eq == NULL; o++)
				if (strncmp(o->name, name, len) == 0) {
					if (o->has_arg == required_argument && i + 1 < argc)
						argv[n++] = argv[++i];
					break;
				}
			continue;
		}
		if (strchr("lmdrLtT", name[0]) != NULL) { /* -l ADDR or -lADDR */
			if (name[1] == '\0' && i + 1 < argc)
				argv[n++] = argv[++i];
			continue;
		}
		if (strcmp(name, "h") != 0 && strcmp(name, "help") != 0) {
			fprintf(stderr, "blq-demo: unknown option \"%s\"\n", a);
			return -1;
		}
	}
	while (i < argc)
		argv[n++] = argv[i++];
	argv[n] = NULL;
	return n;
}

/* "HOST:PORT" with @addr's host and @port, into @buf. */
static int with_port(const char *what, const char *addr, long port, char *buf, size_t len)
{
	const char *colon = strrchr(addr, ':');
	if (colon == NULL || colon == addr) {
		fprintf(stderr, "blq-demo: %s %s: expected host:port\n", what, addr);
		return -1;
	}
	if (snprintf(buf, len, "%.*s:%ld", (int)(colon - addr), addr, port) >= (int)len) {
		fprintf(stderr, "blq-demo: %s %s: host too long\n", what, addr);
		return -1;
	}
	return 0;
}

#define DRAIN_TIMEOUT_MAX_NS (24ull * 3600 * 1000000000)
/* After the deadline, how long the queues' own timed closes have before
 * the main thread forces whatever still runs. */
#define DRAIN_BACKSTOP_NS 100000000ull

/* --drain-timeout: "0" or a blq_parse_duration text up to 24 h, into
 * *ns (0: no deadline). Returns -1 after a message naming the flag. */
static int parse_drain_timeout(const char *s, uint64_t *ns)
{
	blq_error e = {0};
	if (strcmp(s, "0") == 0) {
		*ns = 0;
		return 0;
	}
	if (blq_parse_duration(s, ns, &e) != 0 || *ns > DRAIN_TIMEOUT_MAX_NS) {
		fprintf(stderr, "blq-demo: --drain-timeout: expected a duration up to 24h such as "
				"\"30s\", \"1m30s\" or \"500ms\", or 0 for no deadline; got \"%s\"%s%s\n",
			s, e.msg[0] != '\0' ? ": " : "", e.msg);
		return -1;
	}
	return 0;
}

/* The drain runs on its own thread so the main thread keeps listening
 * for a second signal and watches the deadline. */
typedef struct drain {
	demo_registry *reg;
	uint64_t deadline_ns; /* demo_now_ns() time, 0: none */
	atomic_bool done;
	bool balanced;
	unsigned timed_out; /* stages whose drain the deadline cut */
} drain;

static void *drain_main(void *arg)
{
	drain *d = arg;
	d->balanced = demo_registry_stop_all(d->reg, false, d->deadline_ns, &d->timed_out);
	atomic_store(&d->done, true);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *listen = "127.0.0.1:8080", *mlisten = "127.0.0.1:8081", *dump_dir = "dump";
	const char *redis = NULL;
	int level = BLQ_LOG_INFO;
	unsigned request_s = DEMO_REQUEST_TIME_S;
	uint64_t drain_ns = 0;
	static const struct option opts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"metrics-listen", required_argument, NULL, 'm'},
		{"dump-dir", required_argument, NULL, 'd'},
		{"redis", required_argument, NULL, 'r'},
		{"log-level", required_argument, NULL, 'L'},
		{"request-time", required_argument, NULL, 't'},
		{"drain-timeout", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	go_flags gof = {.hport = -1, .pport = -1};
	if ((argc = take_go_flags(argc, argv, opts, &gof)) < 0) {
		usage(stderr);
		return 64;
	}
	int c;
	while ((c = getopt_long(argc, argv, "l:m:d:r:L:t:T:h", opts, NULL)) != -1) {
		switch (c) {
		case 'l': listen = optarg; break;
		case 'm': mlisten = optarg; break;
		case 'd': dump_dir = optarg; break;
		case 'r': redis = optarg; break;
		case 'L':
			if ((level = parse_level(optarg)) == 0) {
				fprintf(stderr, "blq-demo: --log-level: unknown level \"%s\" "
						"(error, warn, info, debug)\n", optarg);
				return 64;
			}
			break;
		case 't': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || v < 1 || v > 3600) {
				fprintf(stderr, "blq-demo: --request-time: expected 1..3600 seconds, "
						"got \"%s\"\n", optarg);
				return 64;
			}
			request_s = (unsigned)v;
			break;
		}
		case 'T':
			if (parse_drain_timeout(optarg, &drain_ns) != 0)
				return 64;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 64;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "blq-demo: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return 64;
	}

	char listen_buf[300], mlisten_buf[300];
	if (gof.hport >= 0) {
		if (with_port("--listen", listen, gof.hport, listen_buf, sizeof listen_buf) != 0)
			return 64;
		listen = listen_buf;
	}
	if (gof.pport >= 0) {
		if (with_port("--metrics-listen", mlisten, gof.pport, mlisten_buf,
			      sizeof mlisten_buf) != 0)
			return 64;
		mlisten = mlisten_buf;
	}

	demo_env env = {.dump_dir = dump_dir, .logger = blq_stderr_logger(level)};
	char redis_host[256];
	if (redis != NULL) {
		if (!demo_split_hostport(redis, redis_host, sizeof redis_host, &env.redis_port)) {
			fprintf(stderr, "blq-demo: --redis: expected host:port, got \"%s\"\n", redis);
			return 64;
		}
		env.redis_host = redis_host;
	}

	if (mkdir(dump_dir, 0750) != 0 && errno != EEXIST) {
		fprintf(stderr, "blq-demo: --dump-dir %s: %s\n", dump_dir, strerror(errno));
		return 1;
	}
	struct stat st;
	if (stat(dump_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "blq-demo: --dump-dir %s: not a directory\n", dump_dir);
		return 1;
	}

	/* Signals go to the main thread only: block them before any thread starts. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN); /* a client gone mid-reply is not fatal */

	blq_error be;
	env.prom = blq_prom_new(&be);
	demo_registry *reg = env.prom ? demo_registry_new(&env) : NULL;
	if (reg == NULL) {
		fprintf(stderr, "blq-demo: out of memory\n");
		return 1;
	}
	char err[256], api_at[160], metrics_at[160];
	bool v6a, v6m;
	int afd = demo_listen(listen, api_at, sizeof api_at, &v6a, err, sizeof err);
	if (afd < 0) {
		fprintf(stderr, "blq-demo: --listen %s\n", err);
		return 1;
	}
	int mfd = demo_listen(mlisten, metrics_at, sizeof metrics_at, &v6m, err, sizeof err);
	if (mfd < 0) {
		fprintf(stderr, "blq-demo: --metrics-listen %s\n", err);
		return 1;
	}
	demo_http *api = demo_http_start(reg, env.prom, afd, v6a, false, request_s, &env.logger, err,
					 sizeof err);
	demo_http *met = api ? demo_http_start(reg, env.prom, mfd, v6m, true, request_s, &env.logger,
					       err, sizeof err) : NULL;
	if (met == NULL) {
		fprintf(stderr, "blq-demo: %s\n", err);
		return 1;
	}
	fprintf(stderr, "blq-demo: dashboard on http://%s/, api on http://%s/api/v1/, metrics on "
		"http://%s/metrics\n",
		api_at, api_at, metrics_at);

	int sig;
	sigwait(&sigs, &sig);
	uint64_t deadline = drain_ns != 0 ? demo_now_ns() + drain_ns : 0;
	if (deadline != 0)
		fprintf(stderr, "blq-demo: %s: draining every queue for at most %.3f s, then a Hard "
				"close (send it again to force now)\n",
			strsignal(sig), (double)drain_ns / 1e9);
	else
		fprintf(stderr, "blq-demo: %s: draining every queue (send it again to force)\n",
			strsignal(sig));
	drain d = {.reg = reg, .deadline_ns = deadline};
	pthread_t t;
	bool forced = false, late = false;
	if (pthread_create(&t, NULL, drain_main, &d) != 0) {
		d.balanced = demo_registry_stop_all(reg, true, 0, &d.timed_out);
		forced = true;
	} else {
		/* Listen for a second signal and watch the deadline until the
		 * drain is done; once forced, only the join is left to wait
		 * for. Each queue's close has the deadline itself
		 * (blq_close_timeout turns Hard at it); forcing here, a little
		 * later so as not to race those closes, cuts what runs around
		 * them (a restorer waiting for its items in a queue). */
		struct timespec tick = {.tv_sec = 0, .tv_nsec = 50000000};
		while (!forced && !late && !atomic_load(&d.done)) {
			if (sigtimedwait(&sigs, NULL, &tick) > 0) {
				fprintf(stderr, "blq-demo: second signal: forcing the close\n");
				demo_registry_force_all(reg);
				forced = true;
			} else if (deadline != 0 && demo_now_ns() >= deadline + DRAIN_BACKSTOP_NS) {
				fprintf(stderr, "blq-demo: --drain-timeout passed: forcing the close\n");
				demo_registry_force_all(reg);
				late = true;
			}
		}
		pthread_join(t, NULL);
	}
	late = !forced && (late || d.timed_out > 0);
	demo_http_stop(api);
	demo_http_stop(met);
	demo_registry_free(reg);
	blq_prom_free(env.prom);
	fprintf(stderr, "blq-demo: stopped%s; accounting %s\n",
		forced ? " (forced)" : late ? " (drain deadline passed: forced)" : "",
		d.balanced ? "balanced for every queue" : "NOT balanced (see the lines above)");
	return forced ? 2 : late ? 3 : 0;
}
