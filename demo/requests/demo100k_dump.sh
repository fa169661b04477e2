#!/usr/bin/env bash
# demo100k_dump: producers (up to 60) outrun 2..20 workers, the queue leaks into a file dump and the restorer feeds it back.
# Usage: demo100k_dump.sh init|up [N]|down [N]|status|stop|force-stop|run [SECONDS]
set -euo pipefail
BLQ_KEY=demo100k_dump
BLQ_STEP=4      # producers per up/down: the original's delta
BLQ_RUN_STEPS=14 # run: 4 -> 60 producers (producers_max), enough to overflow, and back so restore can drain
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
blq_main "$@"
