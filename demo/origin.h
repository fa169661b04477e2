/*
 * Which browser requests the API takes. blq-demo listens on loopback by
 * default, and a page from any other site can send requests there (the
 * original allows every origin and GET for stop), so:
 *   - on a loopback listener, only Host localhost, 127.x.x.x or [::1] is
 *     answered: a DNS-rebinding page, whose Host is its own name, is not;
 *   - requests that change queues (init, producer-up/down, stop,
 *     force-stop) are refused when the browser says they come from another
 *     site (Sec-Fetch-Site other than same-origin or none) or names an
 *     Origin other than the daemon's own.
 * Clients that are not browsers (curl, the request scripts, Prometheus)
 * send neither header and are not affected; reads stay open to any origin.
 */
#ifndef BLQ_DEMO_ORIGIN_H
#define BLQ_DEMO_ORIGIN_H

#include <stdbool.h>
#include <stddef.h>

/** demo_fd_is_loopback() - whether the listening socket @fd is bound to a
 * loopback address (127.0.0.0/8, ::1, or ::ffff:127.x.x.x). */
bool demo_fd_is_loopback(int fd);

/**
 * demo_origin_refusal() - whether to refuse a request, from its headers.
 * @host, @origin, @fetch_site: the Host, Origin and Sec-Fetch-Site
 *   headers, NULL when absent.
 * @loopback: the listener is on loopback (demo_fd_is_loopback).
 * @changes_state: the request would change a queue.
 * @why: receives the reason, naming the header, when refused.
 * Return: true to refuse (403).
 */
bool demo_origin_refusal(const char *host, const char *origin, const char *fetch_site,
			 bool loopback, bool changes_state, char *why, size_t len);

#endif
