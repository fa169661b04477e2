/*
 * The --decoder hook: a user's own command turns a payload into text.
 *
 * Design
 * - An external command, not a shared-object plugin: `sh -c CMD` per
 *   record, the payload on its stdin, its stdout shown as the record's
 *   text. Any language will do (jq, protoc --decode, a script), a
 *   crashing or hostile decoder cannot corrupt the tool's memory or the
 *   dump (it runs in its own process and sees only the payload's bytes),
 *   and there is no ABI to keep. The price, a process per record, is
 *   fine for an operator looking at records (show bounds it with
 *   --limit); a plugin would only pay off for bulk conversion, which
 *   export (JSON lines) serves instead.
 * - The contract: exit 0 and print the text; anything else (cannot be
 *   run, "command not found" = 127, another status, a signal) is an
 *   error naming the decoder, and show stops with exit 3 instead of
 *   printing a half-decoded listing.
 * - stdin and stdout are served together through poll, so a decoder that
 *   writes before it has read everything cannot deadlock against us.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int cli_decode(const char *cmd, const void *data, size_t len, char *out, size_t cap,
	       size_t *outlen)
{
	int in[2], outp[2];
	if (pipe2(in, O_CLOEXEC) != 0)
		return cli_fail(-1, "decoder '%s': %s", cmd, strerror(errno));
	if (pipe2(outp, O_CLOEXEC) != 0) {
		close(in[0]), close(in[1]);
		return cli_fail(-1, "decoder '%s': %s", cmd, strerror(errno));
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
	char *argv[] = {"sh", "-c", (char *)cmd, NULL};
	pid_t pid;
	int rc = posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(outp[1]);
	if (rc != 0) {
		close(in[1]), close(outp[0]);
		return cli_fail(-1, "decoder '%s': cannot run /bin/sh: %s", cmd, strerror(rc));
	}
	/* A decoder that exits without reading must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	const unsigned char *p = data;
	size_t sent = 0, got = 0;
	int wfd = in[1];
	if (len == 0) {
		close(wfd);
		wfd = -1;
	}
	for (;;) {
		struct pollfd pf[2] = {{outp[0], POLLIN, 0}, {wfd, POLLOUT, 0}};
		if (poll(pf, wfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (wfd >= 0 && pf[1].revents != 0) {
			ssize_t k = write(wfd, p + sent, len - sent);
			if (k > 0)
				sent += (size_t)k;
			if (k < 0 || sent == len) { /* done, or the decoder stopped reading */
				close(wfd);
				wfd = -1;
			}
		}
		if (pf[0].revents != 0) {
			char buf[4096];
			ssize_t k = read(outp[0], buf, sizeof(buf));
			if (k <= 0)
				break;
			for (ssize_t i = 0; i < k; i++, got++)
				if (got + 1 < cap)
					out[got] = buf[i];
		}
	}
	if (wfd >= 0)
		close(wfd);
	close(outp[0]);
	if (cap > 0)
		out[got < cap ? got : cap - 1] = '\0';
	*outlen = got;
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(st))
		return cli_fail(-1, "decoder '%s': killed by signal %d", cmd, WTERMSIG(st));
	if (WEXITSTATUS(st) == 127)
		return cli_fail(-1, "decoder '%s': exit status 127 (command not found?)", cmd);
	if (WEXITSTATUS(st) != 0)
		return cli_fail(-1, "decoder '%s': exit status %d", cmd, WEXITSTATUS(st));
	return 0;
}
