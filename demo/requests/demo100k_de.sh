#!/usr/bin/env bash
# demo100k_de: demo100k with delayed execution (delay_ns 1s) and 6..500 workers, so items wait before they run.
# Usage: demo100k_de.sh init|up [N]|down [N]|status|stop|force-stop|run [SECONDS]
set -euo pipefail
BLQ_KEY=demo100k_de
BLQ_STEP=4      # producers per up/down: the original's delta
BLQ_RUN_STEPS=4 # run: 4 -> 20 producers (producers_max) and back
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
blq_main "$@"
