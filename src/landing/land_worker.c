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
 * The mechanism is base/thread_job.c's, whose header has the rules every
 * job of kafka_lake follows; this file is the landing's use of it.  A
 * thread is created for each job and joined when it ends (about 200 jobs
 * per million records: creating a thread costs some 30 microseconds), so
 * no thread exists between jobs, none survives the call, and the helper
 * never holds state across windows.
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
 * helper before any memory it reads is freed.  As a last line of defence
 * the transaction and subtransaction abort callbacks of thread_job.c do
 * the same, should an error escape a path that lacks the PG_TRY (the
 * abort of a subtransaction inside the one that started the job is no
 * reason: the reservation catches a unique violation in a subtransaction
 * of its own while the job writes).  A FATAL (terminate) exits the process,
 * helper included.
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

#include "base/thread_job.h"
#include "landing/land_worker.h"

/* The one job of the landing (static: it outlives any frame an ERROR unwinds) */
static KlJob kl_worker = {-1, 0};

/*
 * kl_worker_start
 *		Run fn(arg) on a new helper thread.  Should the system refuse a
 *		thread, the job runs here and now instead (it is the same work).
 */
void
kl_worker_start(KlJobFn fn, void *arg)
{
	/* one job at a time: a job still out (never the case) is stopped first */
	kl_job_stop(&kl_worker);
	kl_worker = kl_job_start(fn, arg);
}

/*
 * kl_worker_busy
 *		Is a job out?
 */
bool
kl_worker_busy(void)
{
	return kl_job_out(&kl_worker);
}

/*
 * kl_worker_wait
 *		Wait for the job to end, checking for interrupts (an interrupt that
 *		raises leaves the job to the caller's PG_CATCH, kl_worker_stop).
 */
void
kl_worker_wait(void)
{
	kl_job_wait(&kl_worker, true);
}

/*
 * kl_worker_stop
 *		Cancel the job, if one is out, and join its thread.  Never raises:
 *		this is what error paths call.
 */
void
kl_worker_stop(void)
{
	kl_job_stop(&kl_worker);
}
