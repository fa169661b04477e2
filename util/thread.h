/* Thread creation shared by the modules. Not installed. */
#ifndef BLQ_UTIL_THREAD_H
#define BLQ_UTIL_THREAD_H

#include <pthread.h>

/* pthread_create with the asynchronous signals (SIGTERM, SIGINT, ...)
 * blocked in the new thread, so they reach the application's own threads
 * (seed 004: the drain runs there); faults stay deliverable. Returns 0 or
 * the pthread_create error. */
int blq__thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
