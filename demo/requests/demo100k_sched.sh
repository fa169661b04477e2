#!/usr/bin/env bash
# demo100k_sched: workers and producers follow the config's time schedules (30s..4m), so run only watches; use 'run 240' to see the whole schedule.
# Usage: demo100k_sched.sh init|up [N]|down [N]|status|stop|force-stop|run [SECONDS]
set -euo pipefail
BLQ_KEY=demo100k_sched
BLQ_STEP=4      # producers per up/down: the original's delta
BLQ_RUN_STEPS=0 # run: none, the producers_schedule drives the load
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
blq_main "$@"
