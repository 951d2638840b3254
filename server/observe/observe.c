/*
 * observe/'s state for the whole server: set up before the workers start,
 * taken down after they stop (observe.h).
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "observe.h"

int observe_init(struct observe *obs, const struct config *cfg,
		 struct cache *cache, unsigned int nthreads)
{
	*obs = (struct observe){ .cfg = cfg,
				 .cache = cache,
				 .started = cache_now(),
				 .nthreads = nthreads };
	pthread_mutex_init(&obs->stats_lock, NULL);
	watch_hub_init(&obs->watch);
	hotkeys_params_init(&obs->hotkeys, cfg->hotkeys_sample,
			    cfg->hotkeys_window);
	/* Cache-line aligned (struct observe_thread is): calloc gives 16. */
	obs->threads = aligned_alloc(64, nthreads * sizeof(*obs->threads));
	if (!obs->threads) {
		observe_destroy(obs);
		return -1;
	}
	memset(obs->threads, 0, nthreads * sizeof(*obs->threads));
	for (unsigned int i = 0; i < nthreads; i++) {
		struct observe_thread *t = &obs->threads[i];

		t->lat = calloc(LAT_NCLASSES, sizeof(*t->lat));
		if (!t->lat || hotkeys_worker_init(&t->hot, &obs->hotkeys, i)) {
			obs->nthreads = i + 1;
			observe_destroy(obs);
			return -1;
		}
	}
	return 0;
}

void observe_destroy(struct observe *obs)
{
	for (unsigned int i = 0; obs->threads && i < obs->nthreads; i++) {
		free(obs->threads[i].lat);
		hotkeys_worker_free(&obs->threads[i].hot);
	}
	free(obs->threads);
	obs->threads = NULL;
	stats_detail_free(obs);
	watch_hub_destroy(&obs->watch);
	pthread_mutex_destroy(&obs->stats_lock);
}
