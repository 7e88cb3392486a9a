/*-------------------------------------------------------------------------
 *
 * land_worker.c
 *	  The landing's helper thread: the second core of land() and replay().
 *
 * WHAT RUNS WHERE
 *
 * A landing window (land.c) costs, on one core, about as much in work that
 * needs no PostgreSQL (fingerprints, judging records against the contract,
 * event keys, serialising the JSONL lines and the manifest, SHA-256 and
 * CRC-32C of the files, write(2) and fsync(2)) as in work that does
 * (reserving event_ids in accepted_events, the catalog rows, the Kafka
 * commit).  The first kind runs here, on one helper thread, as a job; the
 * backend's thread keeps every PostgreSQL call: catalog access, palloc,
 * ereport, CHECK_FOR_INTERRUPTS, fault points, librdkafka.  Two jobs exist
 * (land.c):
 *	- judging: the second half of a window's records is fingerprinted,
 *	  judged and keyed here while the backend does the first half (a
 *	  contract with a "pattern" is judged on the backend alone: PostgreSQL's
 *	  regular expressions allocate with palloc and keep global state);
 *	- writing: the unit's four files are written into its staging directory
 *	  here (landing_files.c, kl_unit_write) while the backend reserves the
 *	  unit's event_ids; the backend renames the directory afterwards, or,
 *	  if the reservation changed a status the files were written with (an
 *	  event_id another window or session accepted first), removes it and
 *	  writes the unit again itself.
 * What a job does call of PostgreSQL's is pure code that neither
 * allocates nor reports: the StringInfo appenders into buffers sized
 * beforehand (so they never grow), pg_ltoa, j2date, pg_b64_encode, the
 * UTF-8 verifier, CRC-32C and PostgreSQL's snprintf; the rest is libc,
 * OpenSSL and ICU (contract.c says what judging calls).
 *
 * A job reads only memory the backend does not change until the job is
 * joined (the backend reserves on a copy of the unit's records), and
 * writes only its own results and its own malloc'd memory (its judging
 * arenas, OpenSSL's digest contexts).  Errors are results: an errno and
 * what failed, or "out of memory", which the backend turns into an
 * ereport after joining.
 *
 * ONE JOB, JOINED BEFORE THE BACKEND GOES ON
 *
 * A thread is created for each job and joined when it ends (about 200
 * jobs per million records: creating a thread costs some 30 microseconds),
 * so no thread exists between jobs, none survives the call, and the helper
 * never holds state across windows.  It is created with every signal
 * blocked, so PostgreSQL's signal handlers (cancel, timeouts, die) run on
 * the backend's thread only.
 *
 * HOW AN ERROR OR A CANCEL STOPS THE OTHER THREAD
 *
 * The backend waits for a job in kl_worker_wait, 10 ms at a time, checking
 * for interrupts in between.  Every piece of backend code that runs while
 * a job is out (its own half of the judging, the reservation, the wait) is
 * inside a PG_TRY whose PG_CATCH calls kl_worker_stop before re-throwing:
 * it sets the job's cancel flag, which the job checks every 1,024 records
 * and before each file, and joins the thread (a write(2) or fsync(2) in
 * progress finishes first; nothing else blocks).  So an ERROR, a cancel,
 * statement_timeout or a fault point on the backend stops and joins the
 * helper before any memory it reads is freed.  As a last line of defence a
 * transaction abort callback does the same, should an error escape a path
 * that lacks the PG_TRY, and so does the abort of the subtransaction that
 * started the job or of one around it (not of one inside: the reservation
 * catches a unique violation in a subtransaction of its own while the job
 * writes).  A FATAL (terminate) exits
 * the process, helper included.
 *
 * WHY NOTHING LEAKS
 *
 * The job's files are opened with open(2) and closed by the job itself on
 * every path (landing_files.c); its digest contexts are freed by the job;
 * its arenas are kl_pool's, whose malloc'd chunks belong to a memory
 * context of the call and are freed with it.  What a stopped write leaves
 * is a staging directory, exactly what an ERROR in the writing always
 * left: the next caller owning the partition removes it (recover.c).
 *
 * IDENTIFICATION
 *	  src/landing/land_worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "access/xact.h"
#include "miscadmin.h"

#include "landing/land_worker.h"

/* The one job of this backend (static: it outlives any frame an ERROR unwinds) */
typedef struct KlWorker
{
	bool		started;		/* a thread runs the job, not yet joined */
	pthread_t	thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool		done;			/* under lock */
	volatile bool cancel;
	SubTransactionId subid;		/* the subtransaction that started the job */
	KlJobFn		fn;
	void	   *arg;
} KlWorker;

static KlWorker kl_worker = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
static bool kl_worker_callbacks = false;

/*
 * kl_worker_main
 *		The helper thread: run the job, say it is done.
 */
static void *
kl_worker_main(void *arg)
{
	KlWorker   *w = (KlWorker *) arg;

	w->fn(w->arg, &w->cancel);
	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/*
 * kl_worker_xact_callback, kl_worker_subxact_callback
 *		The last line of defence: an abort never leaves a job running.
 */
static void
kl_worker_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		kl_worker_stop();
}

static void
kl_worker_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						   SubTransactionId parentSubid, void *arg)
{
	/*
	 * Only the abort of the subtransaction that started the job, or of one
	 * around it: the reservation itself runs subtransactions while the job
	 * writes (a unique violation is caught in one), and their abort is no
	 * reason to stop anything.
	 */
	if (event == SUBXACT_EVENT_ABORT_SUB && kl_worker.started && mySubid <= kl_worker.subid)
		kl_worker_stop();
}

/*
 * kl_worker_start
 *		Run fn(arg) on a new helper thread.  Should the system refuse a
 *		thread, the job runs here and now instead (it is the same work).
 */
void
kl_worker_start(KlJobFn fn, void *arg)
{
	KlWorker   *w = &kl_worker;
	sigset_t	all,
				old;
	int			rc;

	/* one job at a time: a job still out (never the case) is stopped first */
	kl_worker_stop();
	if (!kl_worker_callbacks)
	{
		RegisterXactCallback(kl_worker_xact_callback, NULL);
		RegisterSubXactCallback(kl_worker_subxact_callback, NULL);
		kl_worker_callbacks = true;
	}
	w->fn = fn;
	w->arg = arg;
	w->done = false;
	w->cancel = false;
	w->subid = GetCurrentSubTransactionId();

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&w->thread, NULL, kl_worker_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
	{
		fn(arg, &w->cancel);
		return;
	}
	w->started = true;
}

/*
 * kl_worker_busy
 *		Is a job out?
 */
bool
kl_worker_busy(void)
{
	return kl_worker.started;
}

/*
 * kl_worker_wait
 *		Wait for the job to end, checking for interrupts (an interrupt that
 *		raises leaves the job to the caller's PG_CATCH, kl_worker_stop).
 */
void
kl_worker_wait(void)
{
	KlWorker   *w = &kl_worker;

	if (!w->started)
		return;
	for (;;)
	{
		bool		done;

		pthread_mutex_lock(&w->lock);
		if (!w->done)
		{
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 10 * 1000 * 1000;
			if (ts.tv_nsec >= 1000 * 1000 * 1000)
			{
				ts.tv_sec++;
				ts.tv_nsec -= 1000 * 1000 * 1000;
			}
			pthread_cond_timedwait(&w->cond, &w->lock, &ts);
		}
		done = w->done;
		pthread_mutex_unlock(&w->lock);
		if (done)
			break;
		CHECK_FOR_INTERRUPTS();
	}
	pthread_join(w->thread, NULL);
	w->started = false;
}

/*
 * kl_worker_stop
 *		Cancel the job, if one is out, and join its thread.  Never raises:
 *		this is what error paths call.
 */
void
kl_worker_stop(void)
{
	KlWorker   *w = &kl_worker;

	if (!w->started)
		return;
	w->cancel = true;
	pthread_join(w->thread, NULL);
	w->started = false;
}
