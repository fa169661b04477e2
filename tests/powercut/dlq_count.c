/*
 * dlq_count: what a power cut left of blq-dlq's source and target, by id
 * (tests/powercut/dlq_cut.sh runs it; docs/testing.md).
 *
 * dlq_count N [--none|--all] DIR ... : counts the records of ids 0 .. N-1
 * in the dump files (*.bin) of each DIR, as the library's parser reads
 * them, and checks that every id is in one of them at least once (none
 * lost), that every file parses whole (nothing torn) and that no record is
 * foreign. "--none DIR": DIR must hold no record at all (the source of a
 * move that reported done before the cut: its deletes were durable);
 * "--all DIR": DIR alone must hold every id (the target of an operation
 * that reported done: its writes were durable).
 * Prints one line (ids present, twice, per directory); exits 0, or 1 with
 * the reasons on stderr.
 *
 * Why a program and not blq-dlq export: export goes through the
 * inspector, which leaves out records a checkpoint marks done; here a
 * record counts when its bytes are there, which is what "not lost" means
 * for a source that no restorer consumes.
 */
#include "pc_util.h"

int main(int argc, char **argv)
{
	du_prog = "dlq_count";
	if (argc < 3) {
		fprintf(stderr, "usage: dlq_count N [--none|--all] DIR ...\n");
		return 2;
	}
	uint64_t n = strtoull(argv[1], NULL, 10), foreign = 0;
	unsigned *counts = calloc(n + 1, sizeof(unsigned));
	printf("dlq_count:");
	for (int i = 2; i < argc; i++) {
		bool none = strcmp(argv[i], "--none") == 0, all = strcmp(argv[i], "--all") == 0;
		if ((none || all) && ++i == argc)
			break;
		unsigned *here = calloc(n + 1, sizeof(unsigned));
		uint64_t f = 0, held = 0, absent = 0;
		size_t bad = pc_count_dir(argv[i], "*.bin", here, n, &f);
		for (uint64_t k = 0; k < n; k++) {
			counts[k] += here[k];
			held += here[k];
			absent += here[k] == 0;
		}
		foreign += f;
		printf(" %s %llu;", argv[i], (unsigned long long)held);
		du_check(bad == 0, "%zu files of %s do not parse whole", bad, argv[i]);
		du_check(!none || held == 0,
			 "%s holds %llu records after an operation that reported done",
			 argv[i], (unsigned long long)held);
		du_check(!all || absent == 0,
			 "%s lacks %llu ids after an operation that reported done", argv[i],
			 (unsigned long long)absent);
		free(here);
	}
	uint64_t missing = 0, first = 0, twice = 0;
	for (uint64_t k = 0; k < n; k++) {
		if (counts[k] == 0 && missing++ == 0)
			first = k;
		twice += counts[k] > 1;
	}
	printf(" %llu of %llu ids present, %llu twice\n", (unsigned long long)(n - missing),
	       (unsigned long long)n, (unsigned long long)twice);
	du_check(missing == 0, "%llu ids are in neither source nor target (the first: %llu)",
		 (unsigned long long)missing, (unsigned long long)first);
	du_check(foreign == 0, "%llu foreign records", (unsigned long long)foreign);
	free(counts);
	return du_failures ? 1 : 0;
}
