#!/usr/bin/env bash
# A new user's journey through README.md's "Build and install", with the
# real install: blq is configured for one prefix and installed into another
# (cmake --install --prefix P), then a small consumer is built and run
# exactly as the README says, each time without LD_LIBRARY_PATH:
#   - the installed tools (blq-dlq, blq-demo) run from P, and an installed
#     binary that links libblq.so has an $ORIGIN rpath;
#   - blq.pc and blq-static.pc point into P, and their Cflags carry no -D
#     (ck's and hiredis's stay private);
#   - every installed header compiles alone as C11 and C++17 with
#     pkg-config's flags and -Wpedantic -Werror (scripts/check_headers.sh),
#     and a C++17 program builds, links and runs against the library;
#   - pkg-config, shared: runs through its rpath, libblq.so in NEEDED;
#   - pkg-config, static (blq-static): no libblq.so in NEEDED, runs;
#     and `pkg-config --static --libs blq` links a fully static program;
#   - CMake, find_package(blq <major.minor>): blq::blq (static, no
#     libblq.so) and blq::blq_shared (runs from its build tree, and once
#     installed through CMAKE_INSTALL_RPATH_USE_LINK_PATH);
#   - find_package(blq <an older minor>) fails while the major is 0.
# Used by scripts/test.sh: scripts/check_install.sh build/test-install.
# Prints "install check passed" at the end; the first failed check stops it
# with "install check: <what>" on stderr.
# shellcheck disable=SC2016 # the README's commands, quoted to run as written
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mkdir -p "$1" && cd "$1" && pwd)
jobs=${BLQ_TEST_JOBS:-$(nproc)}
fail() { echo "install check: $*" >&2; exit 1; }
# Nothing below may lean on a library search path from outside.
unset LD_LIBRARY_PATH
rm -rf "$work"/{build,prefix,configured,consumer}

# --- install into a prefix other than the configured one ------------------
cmake -S "$root" -B "$work/build" -DBLQ_BUILD_TESTS=OFF -DBLQ_BUILD_BENCH=OFF \
	-DBLQ_BUILD_EXAMPLES=OFF -DBLQ_BUILD_DOCS=OFF -DCMAKE_INSTALL_PREFIX="$work/configured"
cmake --build "$work/build" -j "$jobs"
P=$work/prefix
cmake --install "$work/build" --prefix "$P"
[ ! -e "$work/configured" ] || fail "something was installed into the configured prefix"
[ -f "$P/lib/pkgconfig/blq.pc" ] || fail "no $P/lib/pkgconfig/blq.pc"

# --- the installed tools run from P ----------------------------------------
for exe in "$P"/bin/*; do
	if readelf -d "$exe" | grep -q 'NEEDED.*libblq\.so'; then
		readelf -d "$exe" | grep -Eq 'R(UN)?PATH.*\$ORIGIN/\.\./lib' ||
			fail "$exe links libblq.so without an \$ORIGIN/../lib rpath"
	fi
done
"$P/bin/blq-dlq" --help | grep -q "usage: blq-dlq" || fail "blq-dlq does not run from $P"
if [ -e "$P/bin/blq-demo" ]; then
	"$P/bin/blq-demo" --help | grep -q "usage: blq-demo" || fail "blq-demo does not run from $P"
fi

# --- the consumer ------------------------------------------------------------
mkdir -p "$work/consumer"
cd "$work/consumer"
cat >app.c <<'C'
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
	/* dlqdump's Redis writer links hiredis in: made without connecting,
	 * its first write (port 1) is refused at once. */
	blq_dump_redis_config rc = {.port = 1, .key = "k"};
	blq_dump_writer *w = blq_dump_redis_writer_new(&rc, &err);
	if (w == NULL && err.code != BLQ_ENOTSUP) return 1;
	if (w != NULL) {
		unsigned char none[1];
		blq_dump_batch b = {.data = none, .len = 0, .count = 0, .format = 1};
		size_t done;
		int wr = w->write(w, &b, &done, &err);
		blq_dump_writer_free(w);
		if (wr != BLQ_EIO) { fprintf(stderr, "redis write to port 1: %d\n", wr); return 1; }
	}
	return s.processed == 100 ? 0 : 1;
}
C
cat >app.cc <<'C'
// blq.h from C++17: declarations with C linkage, blq_bytes's data usable.
#include <blq/blq.h>
#include <cstdlib>
#include <cstring>
int main()
{
	blq_bytes *b = blq_bytes_new("abc", 3);
	if (b == nullptr || b->len != 3 || std::memcmp(b->data, "abc", 3) != 0) return 1;
	std::free(b);
	return std::strcmp(blq_errname(BLQ_EINVAL), "BLQ_EINVAL") == 0 ? 0 : 1;
}
C
needs_libblq() { readelf -d "$1" | grep -q 'NEEDED.*libblq\.so'; }
# Runs a command that README.md shows, word for word, and fails when the
# README no longer shows it: what the README says is what this runs.
readme_cmd() {
	grep -qF -- "$1" "$root/README.md" || fail "README.md no longer shows: $1"
	echo "+ $1"
	eval "$1" || fail "the README's command failed: $1"
}

# pkg-config.
readme_cmd 'export PKG_CONFIG_PATH=$P/lib/pkgconfig'
cflags=$(pkg-config --cflags blq)
echo "pkg-config --cflags blq: $cflags"
echo "pkg-config --static --libs blq: $(pkg-config --static --libs blq)"
case " $cflags $(pkg-config --cflags blq-static) " in
*" -D"*) fail "pkg-config --cflags carries a -D: $cflags" ;;
esac
incdir=$(pkg-config --variable=includedir blq)
[ "$(cd "$incdir" && pwd -P)" = "$(cd "$P/include" && pwd -P)" ] ||
	fail "blq.pc's includedir $incdir is not $P/include"
# shellcheck disable=SC2046 # pkg-config's flags are words
"$root/scripts/check_headers.sh" "$incdir" $(pkg-config --cflags blq) ||
	fail "an installed header does not compile alone"

readme_cmd 'cc app.c -o app-shared $(pkg-config --cflags --libs blq) -Wl,-rpath,$(pkg-config --variable=libdir blq)'
./app-shared || fail "app-shared (pkg-config blq, rpath) does not run"
needs_libblq app-shared || fail "app-shared did not link libblq.so"

readme_cmd 'cc app.c -o app-static $(pkg-config --cflags --libs blq-static)'
! needs_libblq app-static || fail "app-static links libblq.so"
./app-static || fail "app-static (pkg-config blq-static) does not run"

readme_cmd 'cc -static app.c -o app-allstatic $(pkg-config --cflags --static --libs blq)' 2>allstatic.log ||
	{ cat allstatic.log >&2; fail "pkg-config --static --libs blq does not link a static program"; }
./app-allstatic || fail "app-allstatic (pkg-config --static blq, -static) does not run"

# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Wextra -Wpedantic -Werror app.cc -o app-cxx $(pkg-config --cflags --libs blq-static)
./app-cxx || fail "app-cxx (C++17, pkg-config blq-static) does not run"

# CMake: find_package with the installed version's major.minor.
IFS=. read -r major minor _ <<<"$(pkg-config --modversion blq)"
for line in 'set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)' "find_package(blq $major.$minor REQUIRED)" \
	'target_link_libraries(app PRIVATE blq::blq)' 'target_link_libraries(app PRIVATE blq::blq_shared)'; do
	grep -qF -- "$line" "$root/README.md" || fail "README.md no longer shows: $line"
done
cat >CMakeLists.txt <<C
cmake_minimum_required(VERSION 3.16)
project(consumer C)
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
find_package(blq $major.$minor REQUIRED)
add_executable(app-static app.c)
target_link_libraries(app-static PRIVATE blq::blq)
add_executable(app-shared app.c)
target_link_libraries(app-shared PRIVATE blq::blq_shared)
install(TARGETS app-static app-shared)
C
readme_cmd 'cmake -S . -B build -DCMAKE_PREFIX_PATH="$P"'
cmake -S . -B build -DCMAKE_INSTALL_PREFIX="$work/consumer/installed"
cmake --build build
cmake --install build
! needs_libblq build/app-static || fail "find_package: blq::blq links libblq.so"
build/app-static || fail "find_package: blq::blq program does not run"
build/app-shared || fail "find_package: blq::blq_shared program does not run from its build tree"
needs_libblq build/app-shared || fail "find_package: blq::blq_shared did not link libblq.so"
installed/bin/app-shared || fail "find_package: installed blq::blq_shared program does not run"

# An older minor is refused while the major is 0 (its ABI differs).
if [ "$major" -eq 0 ] && [ "$minor" -gt 0 ]; then
	old=0.$((minor - 1))
	mkdir -p old
	printf 'cmake_minimum_required(VERSION 3.16)\nproject(old C)\nfind_package(blq %s REQUIRED)\n' "$old" >old/CMakeLists.txt
	if cmake -S old -B old/build -DCMAKE_PREFIX_PATH="$P" >old.log 2>&1; then
		fail "find_package(blq $old) accepted $major.$minor"
	fi
	grep -q "version: $major\.$minor" old.log || { cat old.log >&2; fail "find_package(blq $old) failed, but not on the version"; }
	echo "find_package(blq $old): refused, as it should be"
fi
echo "install check passed"
