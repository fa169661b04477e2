/* Which browser requests the API takes (origin.h). */
#include "origin.h"

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

bool demo_fd_is_loopback(int fd)
{
	struct sockaddr_storage ss;
	socklen_t n = sizeof ss;
	if (getsockname(fd, (struct sockaddr *)&ss, &n) != 0)
		return false;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
		return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	if (ss.ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)&ss)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* The host part of a Host header ("[::1]:8080" -> "[::1]", "a:1" -> "a"). */
static size_t host_len(const char *host)
{
	if (host[0] == '[') {
		const char *end = strchr(host, ']');
		return end != NULL ? (size_t)(end - host) + 1 : strlen(host);
	}
	return strcspn(host, ":");
}

static bool is_loopback_name(const char *host)
{
	size_t n = host_len(host);
	if ((n == 9 && strncasecmp(host, "localhost", 9) == 0) || (n == 5 && strncmp(host, "[::1]", 5) == 0))
		return true;
	/* 127.d.d.d, digits and dots only */
	if (n < 9 || strncmp(host, "127.", 4) != 0)
		return false;
	int dots = 0;
	for (size_t i = 4; i < n; i++) {
		if (host[i] == '.')
			dots++;
		else if (host[i] < '0' || host[i] > '9')
			return false;
	}
	return dots == 2;
}

/* Origin "http://HOST" (or https) where HOST equals the Host header. */
static bool same_origin(const char *origin, const char *host)
{
	const char *rest = NULL;
	if (strncmp(origin, "http://", 7) == 0)
		rest = origin + 7;
	else if (strncmp(origin, "https://", 8) == 0)
		rest = origin + 8;
	return rest != NULL && host != NULL && strcasecmp(rest, host) == 0;
}

bool demo_origin_refusal(const char *host, const char *origin, const char *fetch_site,
			 bool loopback, bool changes_state, char *why, size_t len)
{
	if (loopback && host != NULL && !is_loopback_name(host)) {
		snprintf(why, len,
			 "Host \"%.100s\" refused: blq-demo listens on loopback and answers only "
			 "localhost, 127.x.x.x or [::1] (a guard against DNS rebinding)",
			 host);
		return true;
	}
	if (!changes_state)
		return false;
	if (fetch_site != NULL && strcmp(fetch_site, "same-origin") != 0 &&
	    strcmp(fetch_site, "none") != 0) {
		snprintf(why, len,
			 "Sec-Fetch-Site \"%.32s\" refused: a page from another site may not change "
			 "queues; use the dashboard at / or a client such as curl",
			 fetch_site);
		return true;
	}
	if (origin != NULL && !same_origin(origin, host)) {
		snprintf(why, len,
			 "Origin \"%.100s\" refused: a page from another origin may not change queues; "
			 "use the dashboard at / or a client such as curl",
			 origin);
		return true;
	}
	return false;
}
