/*-------------------------------------------------------------------------
 *
 * land_worker.h
 *	  The landing's helper thread: one job at a time, started and joined
 *	  by the backend (land_worker.c).
 *
 * IDENTIFICATION
 *	  src/landing/land_worker.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_LAND_WORKER_H
#define KAFKA_LAKE_LAND_WORKER_H

#include "base/thread_job.h"

extern void kl_worker_start(KlJobFn fn, void *arg);
extern void kl_worker_wait(void);
extern void kl_worker_stop(void);
extern bool kl_worker_busy(void);

#endif							/* KAFKA_LAKE_LAND_WORKER_H */
