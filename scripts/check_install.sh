#!/usr/bin/env bash
# Installs blq into a scratch prefix and builds a small consumer twice: with
# CMake's find_package(blq) and with pkg-config. Used by scripts/test.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mkdir -p "$1" && cd "$1" && pwd)
rm -rf "$work"/{build,prefix,consumer}
cmake -S "$root" -B "$work/build" -DBLQ_BUILD_TESTS=OFF -DBLQ_BUILD_BENCH=OFF \
	-DBLQ_BUILD_EXAMPLES=OFF -DCMAKE_INSTALL_PREFIX="$work/prefix"
cmake --build "$work/build" -j "$(nproc)"
cmake --install "$work/build"
# The operator's tool is installed with the library, and runs.
"$work/prefix/bin/blq-dlq" --help | grep -q "usage: blq-dlq" || { echo "blq-dlq not installed" >&2; exit 1; }

mkdir -p "$work/consumer"
cat >"$work/consumer/main.c" <<'C'
#include <blq/blq.h>
#include <stdio.h>
static int work(void *ctx, void *p, blq_task *t) { (void)ctx, (void)p, (void)t; return 0; }
int main(void)
{
	blq_config c = {.capacity = 4, .workers = 1, .worker = work};
	blq_error err;
	blq *q = blq_new(&c, &err);
	if (q == NULL) { fprintf(stderr, "%s\n", err.msg); return 1; }
	for (int i = 0; i < 100; i++) blq_enqueue(q, NULL);
	blq_close(q);
	struct blq_stats s;
	blq_stats(q, &s);
	blq_free(q);
	/* dlqdump's Redis writer links hiredis in (port 1: refused at once). */
	blq_dump_redis_config rc = {.port = 1, .key = "k"};
	if (blq_dump_redis_writer_new(&rc, &err) != NULL ||
	    (err.code != BLQ_EINVAL && err.code != BLQ_ENOTSUP)) return 1;
	return s.processed == 100 ? 0 : 1;
}
C
cat >"$work/consumer/CMakeLists.txt" <<'C'
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(blq 0.3 REQUIRED)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE blq::blq)
C
cmake -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_PREFIX_PATH="$work/prefix"
cmake --build "$work/consumer/build"
"$work/consumer/build/consumer"

PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig" \
	sh -c 'cc -o "$1/consumer/pc" "$1/consumer/main.c" $(pkg-config --cflags --libs --static blq)' _ "$work"
LD_LIBRARY_PATH="$work/prefix/lib:$work/prefix/lib/x86_64-linux-gnu" "$work/consumer/pc"
echo "install check passed"
