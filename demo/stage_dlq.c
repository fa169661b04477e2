/*
 * A stage's DLQ as the dlq API sees it: where its dump is (for
 * blq_inspect_open) and its redrive, at most one at a time and never
 * beside a purge of the dead store (both under s->rmu: the two at once
 * could both take one record), none once the stage stops (demo_stage_stop
 * cancels and joins a running one).
 * The last redrive is kept, finished, so its outcome stays visible until
 * the next starts.
 */
#include "stage_internal.h"

#include <stdio.h>

bool demo_stage_inspect_config(demo_stage *s, blq_inspect_config *c, bool *has_dead)
{
	const demo_dump_where *w = &s->where;
	*c = (blq_inspect_config){.version = 1, .version_set = true};
	*has_dead = w->has_dead;
	if (s->dump == NULL)
		return false;
	if (w->redis) {
		c->key = w->key;
		c->host = w->host;
		c->port = w->port;
		c->dead_key = w->has_dead ? w->dead_key : NULL;
	} else {
		c->directory = w->dir;
		c->match = w->match;
		c->file_mask = w->mask;
		c->dead_directory = w->has_dead ? w->dead_dir : NULL;
		c->dead_match = w->match;
	}
	return true;
}

int demo_stage_redrive(demo_stage *s, blq_inspect *in, const demo_redrive_spec *sp, char *err,
		       size_t errlen)
{
	int status = 409;
	pthread_mutex_lock(&s->rmu);
	if (s->redrive_closed) {
		snprintf(err, errlen, "queue \"%s\" is stopping", s->key);
	} else if (s->purging) {
		snprintf(err, errlen, "queue \"%s\": a purge of its dead store runs; redrive "
			 "once it is done", s->key);
	} else if (s->redrive != NULL && demo_redrive_running(s->redrive)) {
		snprintf(err, errlen, "queue \"%s\": a redrive runs already (see its progress in "
			 "/api/v1/dlq; stop the key to cancel it)", s->key);
	} else {
		demo_redrive *r = demo_redrive_start(in, s->restorer, sp, err, errlen, &status);
		in = NULL; /* taken over */
		if (r != NULL) {
			demo_redrive_free(s->redrive); /* the last one, finished */
			s->redrive = r;
			status = 200;
		}
	}
	pthread_mutex_unlock(&s->rmu);
	blq_inspect_close(in);
	return status;
}

bool demo_stage_purge_begin(demo_stage *s)
{
	pthread_mutex_lock(&s->rmu);
	bool free_ = !s->purging && (s->redrive == NULL || !demo_redrive_running(s->redrive));
	s->purging = s->purging || free_;
	pthread_mutex_unlock(&s->rmu);
	return free_;
}

void demo_stage_purge_end(demo_stage *s)
{
	pthread_mutex_lock(&s->rmu);
	s->purging = false;
	pthread_mutex_unlock(&s->rmu);
}

json_t *demo_stage_redrive_json(demo_stage *s)
{
	pthread_mutex_lock(&s->rmu);
	json_t *o = s->redrive != NULL ? demo_redrive_json(s->redrive) : json_null();
	pthread_mutex_unlock(&s->rmu);
	return o;
}
