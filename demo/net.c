/* demo_listen: our own socket, so a bind error can say why (libmicrohttpd
 * only says it failed). */
#include "net.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int demo_listen(const char *addr, char *bound, size_t boundlen, bool *ipv6, char *err,
		size_t errlen)
{
	char host[256];
	const char *port;
	const char *colon = strrchr(addr, ':');
	size_t hl;
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (close == NULL || close[1] != ':') {
			snprintf(err, errlen, "\"%s\": expected [v6address]:port", addr);
			return -1;
		}
		hl = (size_t)(close - addr - 1);
		if (hl >= sizeof host) {
			snprintf(err, errlen, "\"%s\": host too long", addr);
			return -1;
		}
		memcpy(host, addr + 1, hl);
		port = close + 2;
	} else {
		if (colon == NULL || colon == addr) {
			snprintf(err, errlen, "\"%s\": expected host:port", addr);
			return -1;
		}
		hl = (size_t)(colon - addr);
		if (hl >= sizeof host) {
			snprintf(err, errlen, "\"%s\": host too long", addr);
			return -1;
		}
		memcpy(host, addr, hl);
		port = colon + 1;
	}
	host[hl] = '\0';
	char *end;
	long p = strtol(port, &end, 10);
	if (*port == '\0' || *end != '\0' || p < 0 || p > 65535) {
		snprintf(err, errlen, "\"%s\": port must be 0..65535", addr);
		return -1;
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *res;
	int gai = getaddrinfo(host, port, &hints, &res);
	if (gai != 0) {
		snprintf(err, errlen, "\"%s\": %s", addr, gai_strerror(gai));
		return -1;
	}
	int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 128) != 0) {
		snprintf(err, errlen, "%s: %s", addr, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return -1;
	}
	*ipv6 = res->ai_family == AF_INET6;
	freeaddrinfo(res);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char h[128] = "?", sv[16] = "?";
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		getnameinfo((struct sockaddr *)&ss, sl, h, sizeof h, sv, sizeof sv,
			    NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(bound, boundlen, *ipv6 ? "[%s]:%s" : "%s:%s", h, sv);
	return fd;
}

bool demo_split_hostport(const char *addr, char *host, size_t hostlen, int *port)
{
	const char *colon = strrchr(addr, ':');
	if (colon == NULL || colon == addr || (size_t)(colon - addr) >= hostlen)
		return false;
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || p < 1 || p > 65535)
		return false;
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	*port = (int)p;
	return true;
}
