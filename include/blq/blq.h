/* blq: a balanced, leaky worker queue. The umbrella header. */
#ifndef BLQ_BLQ_H
#define BLQ_BLQ_H

#include <blq/version.h>
#include <blq/error.h>
#include <blq/queue.h>
#include <blq/retry.h>
#include <blq/qos.h>
#include <blq/schedule.h>
#include <blq/dlq.h>
#include <blq/dlqdump.h>
#include <blq/workers.h>
#include <blq/prometheus.h>

#endif
