/* blq version: the single source of truth, read by CMakeLists.txt. */
#ifndef BLQ_VERSION_H
#define BLQ_VERSION_H

#define BLQ_VERSION_MAJOR 0
#define BLQ_VERSION_MINOR 2
#define BLQ_VERSION_PATCH 0

#endif
