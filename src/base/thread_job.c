/*-------------------------------------------------------------------------
 *
 * thread_job.c
 *	  A job on a helper thread of the backend: the one mechanism behind the
 *	  landing's helper (landing/land_worker.c), the bridge's CSV writer
 *	  (bridge/bridge_adapter.c), the read-ahead of a batch's file
 *	  (landing/batch_read.c) and of silver's CSV (bridge/csv.c), and the
 *	  background destroy of a Kafka handle (kafka/kafka.c, kl_job_detach).
 *	  Nothing else of kafka_lake creates a thread.
 *
 * THE RULES, FOR EVERY JOB
 *
 *	- The thread is created with every signal blocked, so PostgreSQL's
 *	  signal handlers (cancel, timeouts, die) run on the backend's thread
 *	  only.
 *	- A job calls nothing of PostgreSQL's that allocates, reports, looks at
 *	  interrupts or keeps state: it works on memory the backend gave it and
 *	  does not touch until the job is joined, and its errors are results
 *	  (an errno, a flag) that the backend turns into an ereport after the
 *	  join.  What a job may call is pure code: libc, OpenSSL, CRC-32C,
 *	  PostgreSQL's UTF-8 verifier, snprintf, the appenders of a StringInfo
 *	  sized beforehand.
 *	- It looks at *cancel often (per record, per chunk) and returns soon
 *	  once it is set; a read(2), write(2) or fsync(2) in progress finishes
 *	  first, nothing else blocks.
 *	- Every piece of backend code that runs while a job is out is inside a
 *	  PG_TRY whose PG_CATCH stops the job (kl_job_stop: sets *cancel and
 *	  joins) before the error goes on, so that no thread outlives the
 *	  memory or the files it uses.  A job that stays out between calls
 *	  (the foreign table's read-ahead, from one row to the next) has no
 *	  PG_TRY around it: a reset callback of the memory it uses stops it
 *	  before that memory is freed, and the files it reads are its own
 *	  (closed by the job, never by an abort).
 *	- As a last line of defence, the abort of the transaction, of the
 *	  subtransaction that started a job or of one around it stops and joins
 *	  the job too (not the abort of a subtransaction inside: the landing
 *	  catches a unique violation in one while its helper writes).  A FATAL
 *	  exits the process, threads included.
 *
 * The threads' state lives here, in a few static slots, not in the
 * callers' memory: an abort callback may run after the caller's frames are
 * gone, and finds every job still out here.  A caller holds a handle (slot
 * and generation), so a handle whose job a callback already stopped is
 * recognised and left alone.  When no thread can be made, or all slots are
 * taken, the job runs at once on the backend, inside kl_job_start: the same
 * work, the same results.  A detached job (kl_job_detach) is the one kind
 * nobody joins: it owns its memory and ends on its own.
 *
 * IDENTIFICATION
 *	  src/base/thread_job.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "access/xact.h"
#include "miscadmin.h"

#include "base/thread_job.h"

#define KL_JOB_SLOTS	8		/* the most jobs out at once (the bridge has two) */

/* One job out */
typedef struct KlJobSlot
{
	bool		in_use;			/* a thread runs the job, not yet joined */
	uint32		gen;			/* bumped at each start: handles of older jobs */
	pthread_t	thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool		done;			/* the job returned (under lock) */
	volatile bool cancel;
	SubTransactionId subid;		/* the subtransaction that started it */
	KlJobFn		fn;
	void	   *arg;
} KlJobSlot;

static KlJobSlot kl_job_slots[KL_JOB_SLOTS];
static bool kl_job_initialized = false;

/* what a job that runs on the backend is given: it is never cancelled */
static const volatile bool kl_job_not_cancelled = false;

const KlJob kl_no_job = {-1, 0};

/*
 * kl_job_main
 *		The helper thread: run the job, say it is done.
 */
static void *
kl_job_main(void *arg)
{
	KlJobSlot  *s = (KlJobSlot *) arg;

	s->fn(s->arg, &s->cancel);
	pthread_mutex_lock(&s->lock);
	s->done = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/*
 * kl_job_detached_main
 *		A detached thread (kl_job_detach): run the job, free its slot.
 */
static void *
kl_job_detached_main(void *arg)
{
	KlJobSlot  *s = (KlJobSlot *) arg;

	s->fn(s->arg, &kl_job_not_cancelled);
	free(s);
	return NULL;
}

/*
 * kl_job_stop_slot
 *		Cancel the job of slot i and join its thread.  Never raises.
 */
static void
kl_job_stop_slot(int i)
{
	KlJobSlot  *s = &kl_job_slots[i];

	if (!s->in_use)
		return;
	s->cancel = true;
	pthread_join(s->thread, NULL);
	s->in_use = false;
}

/*
 * kl_job_xact_callback, kl_job_subxact_callback
 *		The last line of defence: an abort never leaves a job running.
 */
static void
kl_job_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		for (int i = 0; i < KL_JOB_SLOTS; i++)
			kl_job_stop_slot(i);
}

static void
kl_job_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid, void *arg)
{
	/* the subtransaction that started a job, or one around it */
	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	for (int i = 0; i < KL_JOB_SLOTS; i++)
		if (kl_job_slots[i].in_use && mySubid <= kl_job_slots[i].subid)
			kl_job_stop_slot(i);
}

/*
 * kl_job_slot_of
 *		The slot of a handle whose job is still out, or NULL.
 */
static KlJobSlot *
kl_job_slot_of(const KlJob *job)
{
	KlJobSlot  *s;

	if (job->slot < 0 || job->slot >= KL_JOB_SLOTS)
		return NULL;
	s = &kl_job_slots[job->slot];
	return (s->in_use && s->gen == job->gen) ? s : NULL;
}

/*
 * kl_job_start
 *		Run fn(arg, cancel) on a helper thread; the handle to wait for it or
 *		stop it.  Without a thread (the system refuses one, or every slot is
 *		taken) the job runs here and now, and the handle is kl_no_job.
 */
KlJob
kl_job_start(KlJobFn fn, void *arg)
{
	KlJob		job = kl_no_job;
	KlJobSlot  *s = NULL;
	sigset_t	all,
				old;
	int			rc;

	if (!kl_job_initialized)
	{
		for (int i = 0; i < KL_JOB_SLOTS; i++)
		{
			pthread_mutex_init(&kl_job_slots[i].lock, NULL);
			pthread_cond_init(&kl_job_slots[i].cond, NULL);
		}
		RegisterXactCallback(kl_job_xact_callback, NULL);
		RegisterSubXactCallback(kl_job_subxact_callback, NULL);
		kl_job_initialized = true;
	}
	for (int i = 0; i < KL_JOB_SLOTS && s == NULL; i++)
		if (!kl_job_slots[i].in_use)
		{
			s = &kl_job_slots[i];
			job.slot = i;
		}
	if (s == NULL)
	{
		fn(arg, &kl_job_not_cancelled);
		return kl_no_job;
	}
	s->fn = fn;
	s->arg = arg;
	s->done = false;
	s->cancel = false;
	s->subid = GetCurrentSubTransactionId();
	s->gen++;
	job.gen = s->gen;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&s->thread, NULL, kl_job_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
	{
		fn(arg, &kl_job_not_cancelled);
		return kl_no_job;
	}
	s->in_use = true;
	return job;
}

/*
 * kl_job_detach
 *		Run fn(arg, cancel) on a helper thread that nobody joins: for work
 *		that must outlive the call and may take long (librdkafka's destroy
 *		of a handle whose commit went unanswered, kafka/kafka.c).  The same
 *		rules hold (every signal blocked, nothing of PostgreSQL's called),
 *		and more: fn owns arg, which must not be the backend's memory, and
 *		it is never cancelled.  false when no thread could be made: the
 *		caller does the work itself.
 */
bool
kl_job_detach(KlJobFn fn, void *arg)
{
	KlJobSlot  *s;
	pthread_t	thread;			/* not s->thread: the job may free s at once */
	pthread_attr_t attr;
	sigset_t	all,
				old;
	int			rc;

	/* the thread's own slot, malloc'd: it outlives the call */
	s = malloc(sizeof(KlJobSlot));
	if (s == NULL)
		return false;
	s->fn = fn;
	s->arg = arg;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&thread, &attr, kl_job_detached_main, s);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		free(s);
	return rc == 0;
}

/*
 * kl_job_out
 *		Is the job of this handle out (started on a thread, not joined)?
 */
bool
kl_job_out(const KlJob *job)
{
	return kl_job_slot_of(job) != NULL;
}

/*
 * kl_job_wait
 *		Wait for the job to end and join it.  interruptible: wait 10 ms at a
 *		time, checking for interrupts in between (one that raises leaves the
 *		job to the caller's PG_CATCH); otherwise join at once, for jobs that
 *		cannot take long.  The handle is kl_no_job afterwards.
 */
void
kl_job_wait(KlJob *job, bool interruptible)
{
	KlJobSlot  *s = kl_job_slot_of(job);

	if (s == NULL)
	{
		*job = kl_no_job;
		return;
	}
	while (interruptible)
	{
		bool		done;

		pthread_mutex_lock(&s->lock);
		if (!s->done)
		{
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 10 * 1000 * 1000;
			if (ts.tv_nsec >= 1000 * 1000 * 1000)
			{
				ts.tv_sec++;
				ts.tv_nsec -= 1000 * 1000 * 1000;
			}
			pthread_cond_timedwait(&s->cond, &s->lock, &ts);
		}
		done = s->done;
		pthread_mutex_unlock(&s->lock);
		if (done)
			break;
		CHECK_FOR_INTERRUPTS();
	}
	pthread_join(s->thread, NULL);
	s->in_use = false;
	*job = kl_no_job;
}

/*
 * kl_job_stop
 *		Cancel the job, if it is out, and join its thread.  Never raises:
 *		this is what error paths call.  The handle is kl_no_job afterwards.
 */
void
kl_job_stop(KlJob *job)
{
	KlJobSlot  *s = kl_job_slot_of(job);

	if (s != NULL)
		kl_job_stop_slot(s - kl_job_slots);
	*job = kl_no_job;
}
