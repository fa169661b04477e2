/*
 * The ring of queue items: util/ring.h instantiated for blq__item. The one
 * place that tells the generic ring what it holds; include this, never
 * util/ring.h directly. Not installed.
 */
#ifndef BLQ_QUEUE_ITEM_RING_H
#define BLQ_QUEUE_ITEM_RING_H

#include "item.h"

#define BLQ__RING_ITEM blq__item
#include "ring.h"

#endif
