/**
 * \file
 * blq: a balanced, leaky worker queue. The umbrella header: it includes
 * every public header (blq/log.h, blq/metrics.h, blq/clock.h and
 * blq/enqueuer.h through blq/queue.h). Each function's thread-safety and
 * ownership rules are in the header that declares it.
 */
#ifndef BLQ_BLQ_H
#define BLQ_BLQ_H

#include <blq/version.h>
#include <blq/error.h>
#include <blq/queue.h>
#include <blq/group.h>
#include <blq/retry.h>
#include <blq/qos.h>
#include <blq/schedule.h>
#include <blq/dlq.h>
#include <blq/dlqdump.h>
#include <blq/dlqinspect.h>
#include <blq/workers.h>
#include <blq/prometheus.h>

#endif
