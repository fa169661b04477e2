/* A stage's ring of samples: see history.h. */
#include "history.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct demo_history {
	pthread_mutex_t mu;
	unsigned capacity, nsubqs;
	size_t stride;     /* demo_sample_size(nsubqs) */
	uint64_t recorded; /* samples ever recorded: the newest's seq */
	unsigned next;     /* the slot the next sample goes to */
	unsigned char *slots; /* capacity x stride */
};

demo_history *demo_history_new(unsigned capacity, unsigned nsubqs)
{
	demo_history *h = calloc(1, sizeof *h);
	if (h == NULL || capacity == 0)
		goto fail;
	h->capacity = capacity;
	h->nsubqs = nsubqs;
	h->stride = demo_sample_size(nsubqs);
	h->slots = calloc(capacity, h->stride);
	if (h->slots == NULL)
		goto fail;
	pthread_mutex_init(&h->mu, NULL);
	return h;
fail:
	free(h);
	return NULL;
}

void demo_history_free(demo_history *h)
{
	if (h == NULL)
		return;
	pthread_mutex_destroy(&h->mu);
	free(h->slots);
	free(h);
}

void demo_history_record(demo_history *h, const demo_sample *s)
{
	pthread_mutex_lock(&h->mu);
	memcpy(h->slots + (size_t)h->next * h->stride, s, h->stride);
	h->next = h->next + 1 == h->capacity ? 0 : h->next + 1;
	h->recorded++;
	pthread_mutex_unlock(&h->mu);
}

void *demo_history_since(demo_history *h, uint64_t after, size_t *n, uint64_t *first_seq)
{
	pthread_mutex_lock(&h->mu);
	uint64_t held = h->recorded < h->capacity ? h->recorded : h->capacity;
	uint64_t oldest = h->recorded - held + 1; /* the seq of the oldest held */
	uint64_t first = after >= oldest ? after + 1 : oldest;
	*n = first <= h->recorded ? (size_t)(h->recorded - first + 1) : 0;
	*first_seq = first;
	unsigned char *out = *n > 0 ? malloc(*n * h->stride) : NULL;
	if (out != NULL) {
		/* The newest is in the slot before next; first is *n - 1 before it. */
		size_t slot = ((size_t)h->next + h->capacity - *n) % h->capacity;
		for (size_t i = 0; i < *n; i++) {
			memcpy(out + i * h->stride, h->slots + slot * h->stride, h->stride);
			slot = slot + 1 == h->capacity ? 0 : slot + 1;
		}
	}
	pthread_mutex_unlock(&h->mu);
	return out;
}

unsigned demo_history_capacity(const demo_history *h)
{
	return h->capacity;
}

unsigned demo_history_nsubqs(const demo_history *h)
{
	return h->nsubqs;
}
