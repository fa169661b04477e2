#!/usr/bin/env bash
# demo100k: a 100k leaky queue, 2..32 fast workers, 4..20 producers; the plain balancing demo.
# Usage: demo100k.sh init|up [N]|down [N]|status|stop|force-stop|run [SECONDS]
set -euo pipefail
BLQ_KEY=demo100k
BLQ_STEP=4      # producers per up/down: the original's delta
BLQ_RUN_STEPS=4 # run: 4 -> 20 producers (producers_max) and back
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
blq_main "$@"
