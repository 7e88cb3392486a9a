/*-------------------------------------------------------------------------
 *
 * thread_job.h
 *	  A job on a helper thread of the backend (thread_job.c, whose header
 *	  has the rules every job follows).
 *
 * IDENTIFICATION
 *	  src/base/thread_job.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_THREAD_JOB_H
#define KAFKA_LAKE_THREAD_JOB_H

/*
 * A job: runs on the helper thread, calls nothing of PostgreSQL's that
 * allocates, reports or looks at interrupts, and stops soon once *cancel
 * is set.
 */
typedef void (*KlJobFn) (void *arg, const volatile bool *cancel);

/* The handle of a job out: kl_no_job when there is none */
typedef struct KlJob
{
	int			slot;
	uint32		gen;
} KlJob;

extern const KlJob kl_no_job;

extern KlJob kl_job_start(KlJobFn fn, void *arg);
extern bool kl_job_detach(KlJobFn fn, void *arg);
extern bool kl_job_out(const KlJob *job);
extern void kl_job_wait(KlJob *job, bool interruptible);
extern void kl_job_stop(KlJob *job);

#endif							/* KAFKA_LAKE_THREAD_JOB_H */
