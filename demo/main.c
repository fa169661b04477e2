/*
 * blq-demo: the demo daemon. An HTTP API creates queues with producers and
 * emulated workers (the original koykov/demo stage), /metrics serves them
 * to Prometheus. SIGTERM or SIGINT drains every queue and exits 0; a
 * second signal forces the close (exit 2).
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
		"  -h, --help                      this text\n"
		"API: POST /api/v1/init?key=K (JSON config), GET /api/v1/{producer-up,producer-down}"
		"?key=K&delta=N,\n     /api/v1/{stop,force-stop,status,stats}?key=K, /api/v1/list, "
		"/api/v1/ping. See README.md, \"Demo daemon\".\n"
		"Dashboard: open http://HOST:PORT/ (the API address) in a browser.\n"
		"SIGTERM/SIGINT: drain every queue, exit 0; a second signal forces (exit 2).\n");
}

static int parse_level(const char *s)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0)
			return i + 1;
	return 0;
}

/* The drain runs on its own thread so the main thread keeps listening
 * for a second signal. */
typedef struct drain {
	demo_registry *reg;
	atomic_bool done;
	bool balanced;
} drain;

static void *drain_main(void *arg)
{
	drain *d = arg;
	d->balanced = demo_registry_stop_all(d->reg, false);
	atomic_store(&d->done, true);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *listen = "127.0.0.1:8080", *mlisten = "127.0.0.1:8081", *dump_dir = "dump";
	const char *redis = NULL;
	int level = BLQ_LOG_INFO;
	unsigned request_s = DEMO_REQUEST_TIME_S;
	static const struct option opts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"metrics-listen", required_argument, NULL, 'm'},
		{"dump-dir", required_argument, NULL, 'd'},
		{"redis", required_argument, NULL, 'r'},
		{"log-level", required_argument, NULL, 'L'},
		{"request-time", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "l:m:d:r:L:t:h", opts, NULL)) != -1) {
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
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 64;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "blq-demo: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return 64;
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
	fprintf(stderr, "blq-demo: %s: draining every queue (send it again to force)\n",
		strsignal(sig));
	drain d = {.reg = reg};
	pthread_t t;
	bool forced = false;
	if (pthread_create(&t, NULL, drain_main, &d) != 0) {
		d.balanced = demo_registry_stop_all(reg, true);
		forced = true;
	} else {
		/* Listen for a second signal until the drain is done; once
		 * forced, only the join is left to wait for. */
		struct timespec tick = {.tv_sec = 0, .tv_nsec = 50000000};
		while (!forced && !atomic_load(&d.done)) {
			if (sigtimedwait(&sigs, NULL, &tick) > 0) {
				fprintf(stderr, "blq-demo: second signal: forcing the close\n");
				demo_registry_force_all(reg);
				forced = true;
			}
		}
		pthread_join(t, NULL);
	}
	demo_http_stop(api);
	demo_http_stop(met);
	demo_registry_free(reg);
	blq_prom_free(env.prom);
	fprintf(stderr, "blq-demo: stopped%s; accounting %s\n", forced ? " (forced)" : "",
		d.balanced ? "balanced for every queue" : "NOT balanced (see the lines above)");
	return forced ? 2 : 0;
}
