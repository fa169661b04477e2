#!/usr/bin/env bash
# The README's demo command: from nothing, install what the build needs,
# build blq and run leaky_burst, which pushes a burst of load through a
# leaky queue chained to an overflow queue, printing one status line a
# second and the final accounting. Usage: scripts/demo.sh [seconds] (default 5)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${1:-5}

missing=()
for p in build-essential cmake pkg-config libhiredis-dev; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "== installing ${missing[*]}"
	[ "$(id -u)" -eq 0 ] || { echo "scripts/demo.sh: run as root or install: ${missing[*]}" >&2; exit 1; }
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi

echo "== building"
mkdir -p build
cmake -S . -B build/demo -DCMAKE_BUILD_TYPE=Release -DBLQ_BUILD_TESTS=OFF \
	-DBLQ_BUILD_BENCH=OFF -DBLQ_BUILD_EXAMPLES=ON >build/demo.log 2>&1 ||
	{ cat build/demo.log; exit 1; }
cmake --build build/demo -j "$(nproc)" --target leaky_burst >>build/demo.log 2>&1 ||
	{ cat build/demo.log; exit 1; }

echo "== leaky_burst for ${seconds}s: queue 'main' (capacity 10000, 2 workers) leaks into 'overflow'"
exec build/demo/examples/leaky_burst "$seconds"
