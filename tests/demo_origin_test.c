/* blq-demo's browser-request guard (demo/origin.c): which Host, Origin and
 * Sec-Fetch-Site combinations the API refuses. */
#include <criterion/criterion.h>
#include <string.h>

#include "origin.h"

static bool refused(const char *host, const char *origin, const char *site, bool loopback,
		    bool changes, char *why)
{
	return demo_origin_refusal(host, origin, site, loopback, changes, why, 256);
}

Test(origin, loopback_names_pass_and_others_are_named)
{
	char why[256];
	static const char *const good[] = {"127.0.0.1:8080", "127.0.0.1", "localhost:8080",
					   "LOCALHOST", "[::1]:8080", "[::1]", "127.1.2.3:1"};
	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		cr_expect(!refused(good[i], NULL, NULL, true, true, why), "%s: %s", good[i], why);
	static const char *const bad[] = {"evil.example:8080", "127.0.0.1.evil.example",
					  "localhost.evil", "127.0.0.1x", "x", "[::2]:80", "127.0.1"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		cr_expect(refused(bad[i], NULL, NULL, true, false, why), "%s passed", bad[i]);
		cr_expect(strstr(why, "Host") != NULL && strstr(why, "DNS rebinding") != NULL, "%s",
			  why);
	}
	cr_expect(!refused("evil.example:8080", NULL, NULL, false, true, why),
		  "not on loopback: any Host (a server reached by its name)");
	cr_expect(!refused(NULL, NULL, NULL, true, true, why), "no Host (HTTP/1.0)");
}

Test(origin, changes_from_another_site_are_refused_reads_are_not)
{
	char why[256];
	cr_expect(refused("127.0.0.1:8080", NULL, "cross-site", true, true, why));
	cr_expect(strstr(why, "Sec-Fetch-Site \"cross-site\"") != NULL, "%s", why);
	cr_expect(refused("127.0.0.1:8080", NULL, "same-site", true, true, why));
	cr_expect(!refused("127.0.0.1:8080", NULL, "cross-site", true, false, why), "a read");
	cr_expect(!refused("127.0.0.1:8080", NULL, "same-origin", true, true, why), "%s", why);
	cr_expect(!refused("127.0.0.1:8080", NULL, "none", true, true, why), "typed URL: %s", why);

	cr_expect(!refused("127.0.0.1:8080", "http://127.0.0.1:8080", NULL, true, true, why), "%s",
		  why);
	cr_expect(refused("127.0.0.1:8080", "http://127.0.0.1:9999", NULL, true, true, why));
	cr_expect(strstr(why, "Origin \"http://127.0.0.1:9999\"") != NULL, "%s", why);
	cr_expect(refused("127.0.0.1:8080", "null", NULL, true, true, why), "a sandboxed page");
	cr_expect(refused("127.0.0.1:8080", "https://evil.example", NULL, true, true, why));
	cr_expect(!refused("127.0.0.1:8080", "https://evil.example", NULL, true, false, why),
		  "reads stay open to any origin, as in the original");
	cr_expect(!refused("127.0.0.1:8080", NULL, NULL, true, true, why), "curl: no headers");
}
