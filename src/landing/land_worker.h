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

/*
 * A job: runs on the helper thread, calls nothing of PostgreSQL's that
 * allocates, reports or looks at interrupts, and stops soon once *cancel
 * is set.
 */
typedef void (*KlJobFn) (void *arg, const volatile bool *cancel);

extern void kl_worker_start(KlJobFn fn, void *arg);
extern void kl_worker_wait(void);
extern void kl_worker_stop(void);
extern bool kl_worker_busy(void);

#endif							/* KAFKA_LAKE_LAND_WORKER_H */
