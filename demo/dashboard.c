/* The dashboard's embedded files by URL. */
#include "dashboard.h"

#include <string.h>

const demo_asset *demo_asset_find(const char *url)
{
	for (size_t i = 0; i < demo_assets_count; i++)
		if (strcmp(demo_assets[i].url, url) == 0)
			return &demo_assets[i];
	return NULL;
}
