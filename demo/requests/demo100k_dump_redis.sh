#!/usr/bin/env bash
# demo100k_dump_redis: demo100k_dump with the dump written to a Redis stream (blq-demo:demo100k_dump_redis) instead of files; not in the original.
# Usage: demo100k_dump_redis.sh init|up [N]|down [N]|status|stop|force-stop|run [SECONDS]
set -euo pipefail
BLQ_KEY=demo100k_dump_redis
BLQ_STEP=4      # producers per up/down: as demo100k_dump
BLQ_RUN_STEPS=14 # run: as demo100k_dump
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
blq_main "$@"
