#!/usr/bin/env bash
# demoQoS: a 2000-item queue split by WRR into high/medium/low sub-queues (weights 5/20/75) with front leaks.
# Usage: demoQoS.sh init|up [N]|down [N]|status|stop|force-stop|run [SECONDS]
set -euo pipefail
BLQ_KEY=demoQoS
BLQ_STEP=5      # producers per up/down: the original's delta
BLQ_RUN_STEPS=12 # run: 0 -> 60 producers and back
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
blq_main "$@"
