/* Replays files (or every file of directories) through the fuzz target:
 * the seed corpus as a normal test, in builds without libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return -1;
	static uint8_t buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned runs = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "fuzz_main: %s: not found\n", argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			runs += run_file(argv[i]) == 0;
			continue;
		}
		DIR *d = opendir(argv[i]);
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			char p[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
			runs += run_file(p) == 0;
		}
		closedir(d);
	}
	printf("fuzz_main: %u inputs replayed\n", runs);
	return runs > 0 ? 0 : 1;
}
