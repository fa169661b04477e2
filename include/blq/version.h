/**
 * \file
 * blq version: the single source of truth, read by CMakeLists.txt (the
 * project's version, the shared library's soname, blq.pc).
 */
#ifndef BLQ_VERSION_H
#define BLQ_VERSION_H

/** Major version; before 1.0 every minor version may change the ABI. */
#define BLQ_VERSION_MAJOR 0
/** Minor version. */
#define BLQ_VERSION_MINOR 6
/** Patch version. */
#define BLQ_VERSION_PATCH 1

#endif
