/* Listening sockets for the daemon's two HTTP servers. */
#ifndef BLQ_DEMO_NET_H
#define BLQ_DEMO_NET_H

#include <stdbool.h>
#include <stddef.h>

/**
 * demo_listen() - bind and listen on "host:port" ("[v6addr]:port" for
 * IPv6; port 0 picks a free one).
 * @bound: receives "host:port" as bound (the real port).
 * @ipv6: set when the socket is IPv6 (libmicrohttpd needs to know).
 * Return: the socket, or -1 with a message naming the address in @err.
 */
int demo_listen(const char *addr, char *bound, size_t boundlen, bool *ipv6, char *err,
		size_t errlen);

/**
 * demo_split_hostport() - "host:port" (port 1..65535) into @host and @port.
 * Return: false when malformed or the host does not fit @hostlen.
 */
bool demo_split_hostport(const char *addr, char *host, size_t hostlen, int *port);

#endif
