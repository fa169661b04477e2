/*
 * The dashboard page's files (demo/dashboard/), embedded in the binary at
 * build time (cmake/embed_assets.cmake), served at GET / on the API port.
 * Nothing is fetched from anywhere else.
 */
#ifndef BLQ_DEMO_DASHBOARD_H
#define BLQ_DEMO_DASHBOARD_H

#include <stddef.h>

typedef struct demo_asset {
	const char *url;  /* "/", "/dashboard.js", "/presets.json", ... */
	const char *type; /* its Content-Type */
	const unsigned char *data;
	size_t len;
} demo_asset;

extern const demo_asset demo_assets[];
extern const size_t demo_assets_count;

/** demo_asset_find() - the file served at @url, or NULL. */
const demo_asset *demo_asset_find(const char *url);

#endif
