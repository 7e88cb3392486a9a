/*-------------------------------------------------------------------------
 *
 * bridge.c
 *	  The date bridge, kafka_lake.bridge(source, business_date): the
 *	  accepted events of one business date become a content-addressed
 *	  canonical CSV (the adapter version), silver rows, quality checks and,
 *	  when every check passes, a new snapshot of that date publishing each
 *	  gold of the source.  What the CSV, silver, the checks and the golds
 *	  are comes from the source's contract and the golds its owners defined
 *	  (bridge_define.c); machine_event_v1's is the seed's pipeline, one
 *	  built-in definition run by the same code.  This file runs the steps,
 *	  in order; each has a file of its own.
 *
 * THE STEPS
 *
 *	0. the layout, golds and checks of the source (bridge_define.c);
 *	1. lock: one bridge per (source, date) at a time, with a
 *	   transaction-level advisory lock (locks.c).  A second caller waits,
 *	   then sees the first one's committed run and reports it as skipped;
 *	2. recover every partition on disk that no one else owns (recover.c),
 *	   so that a batch landed by a transaction that did not commit counts.
 *	   A partition whose recovery changed nothing is let go at once, so that
 *	   land() does not wait for the whole bridge;
 *	3. select, pass 1 (bridge_select.c): the catalog's batches of the date
 *	   under a fresh snapshot, each accepted.jsonl checked before use, the
 *	   accepted events of the date in (partition, offset) order, each one
 *	   canonical CSV line (csv.c) streamed to a temporary file and through
 *	   SHA-256: the digest is source_hash.  A bitmap marks the first event of
 *	   each natural key.  No event: ERROR P0002, and nothing was written.
 *	   close_date() (close.c) selects only what lies below its marks; a date
 *	   it closed is refused here when the selection changed since, unless
 *	   reopen (bridge_closing.c);
 *	4. adapter version (bridge_adapter.c): the CSV at its content address
 *	   adapter/business_date=<date>/source_hash=<hex>/events.csv with a
 *	   provenance.json, and its row in adapter_versions, created or reused;
 *	5. run (bridge_gold.c): a processed run of the same (source, date,
 *	   source_hash) makes this call report "skipped" with that run, and
 *	   write nothing more.  Otherwise a new run_id (a time-ordered UUID) and:
 *	6. silver, pass 2 (bridge_silver.c): the CSV that was hashed, read back;
 *	   each event first of its natural key goes straight into the table (no
 *	   SQL per row), while each declared gold is summed in C per group of
 *	   its grain; an owner's SQL gold then runs over the run's silver rows,
 *	   with its owner's rights (bridge_gold.c);
 *	7. the quality checks (bridge_checks.c);
 *	8. when all pass, the run is "processed" and every gold becomes part of
 *	   a new current snapshot of the date; otherwise the run is
 *	   "failed_quality" and gold stays as it was (bridge_gold.c).  Gold and
 *	   snapshot carry the closing status: provisional, or reopened for a
 *	   date that was closed.
 *
 * With recheck (RECHECK below), step 5 finding a processed run of the
 * same input runs steps 6 to 8 again with the source's current golds and
 * checks, and keeps the result only when it differs from the date's
 * current snapshot.
 *
 * close_date() runs the same steps through kl_bridge_create, kl_bridge_gather,
 * kl_bridge_adapter and kl_bridge_process, and decides itself what a
 * processed input becomes (close.c).
 *
 * ONE TRANSACTION, AND THE FILES
 *
 * Everything above runs in the caller's transaction: an ERROR anywhere (a
 * corrupt batch, no event, the fault point bridge_before_gold, a cancel)
 * rolls back every catalog row, silver and gold included.  Files are not
 * transactional: each file and directory the bridge creates is removed
 * again if the transaction aborts (bridge_adapter.c, through fileundo.c),
 * and a bridge cannot be part of a prepared transaction.
 *
 * SPEED AND MEMORY
 *
 * The bridge is meant to run at the speed of the disk: one pass over the
 * JSONL, one over the CSV (from the page cache), one SQL statement over
 * silver, no SQL per row.  Accepted lines are read by the fast path of the
 * batch format (batch_format.c), natural keys go into a set whose cache
 * misses overlap (keyset.c), silver is appended with its indexes maintained
 * directly (bridge_silver.c).  Pass 1 uses the second core: the next batch
 * file is read and CRC-checked on a read-ahead thread (batch_read.c) and
 * the CSV hashed and written on a writing thread (bridge_adapter.c), while
 * the backend parses lines and formats the CSV; in pass 2 the CSV is read
 * and split one block ahead on a thread (csv.c) while the backend builds
 * and inserts rows.  Every thread is joined before its pass ends, on every
 * path.  The checks' statement is one that PostgreSQL's parallel query can
 * split (bridge_checks.c).  Memory is bounded by two batch files (the one
 * parsed and the next; each at most kafka_lake.batch_max_bytes), two write
 * buffers, two read-back blocks (1 MB, grown for a larger record), the
 * natural-key set (the key bytes in one arena, a 24-byte slot and one bit
 * per event) and the gold groups; events are never held as structs.  How
 * long each step took is reported at DEBUG1.
 *
 * IDENTIFICATION
 *	  src/bridge/bridge.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "base/digest.h"
#include "bridge/bridge.h"
#include "bridge/catalog_bridge.h"
#include "bridge/catalog_close.h"
#include "export/export.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/locks.h"
#include "landing/landing_files.h"
#include "landing/recover.h"
#include "landing/source_lock.h"

PG_FUNCTION_INFO_V1(kafka_lake_bridge);
PG_FUNCTION_INFO_V1(kafka_lake_bridge_1_1);
PG_FUNCTION_INFO_V1(kafka_lake_bridge_1_3);
PG_FUNCTION_INFO_V1(kafka_lake_bridge_1_10);

/*
 * kl_bridge_step_done
 *		Report how long a step took (DEBUG1), for whoever tunes a bridge.
 */
void
kl_bridge_step_done(KlBridge *b, const char *step)
{
	TimestampTz now = GetCurrentTimestamp();

	ereport(DEBUG1,
			(errmsg_internal("kafka_lake bridge of \"%s\" %s: %s took %.3f s",
							 b->src->source, b->date_text, step,
							 (double) (now - b->step_start) / USECS_PER_SEC)));
	b->step_start = now;
}

/*
 * kl_new_run_id
 *		A time-ordered UUID (version 7: 48 bits of Unix milliseconds, then
 *		random bits), so that each run's silver rows go to the right edge of
 *		the run_id index.
 */
static void
kl_new_run_id(char *out)
{
	uint8		b[16];
	TimestampTz now = GetCurrentTimestamp();
	uint64		ms = (uint64) (now / 1000) +
		(uint64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;
	char		hex[33];

	if (!pg_strong_random(b, sizeof(b)))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate a random run_id")));
	for (int i = 0; i < 6; i++)
		b[i] = (uint8) (ms >> (8 * (5 - i)));
	b[6] = (b[6] & 0x0F) | 0x70;
	b[8] = (b[8] & 0x3F) | 0x80;
	kl_hex(b, 16, hex);
	snprintf(out, KL_RUN_ID_LEN + 1, "%.8s-%.4s-%.4s-%.4s-%.12s",
			 hex, hex + 8, hex + 12, hex + 16, hex + 20);
}

/*
 * kl_bridge_recover
 *		Recover every partition on disk that no one else owns.  A busy
 *		partition is being landed: its owner recovers it, and what it lands
 *		becomes visible when it commits.
 */
static void
kl_bridge_recover(KlBridge *b)
{
	for (int t = 0; t < b->src->ntopics; t++)
	{
		KlSource   *src = kl_source_topic(b->src, t);
		ListCell   *cell;

		foreach(cell, kl_disk_partitions(src))
		{
			int32		p = lfirst_int(cell);

			if (!kl_try_lock_partition(src, p))
				continue;
			if (kl_recover_partition(src, p, NULL, NULL) == 0)
				kl_unlock_partition(src, p);
		}
	}
}

/*
 * kl_bridge_create
 *		The state of a bridge of one (source, date).
 */
KlBridge *
kl_bridge_create(const char *source, DateADT date)
{
	KlBridge   *b = palloc0(sizeof(KlBridge));
	MemoryContext old;

	b->cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_lake bridge",
								   ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(b->cxt);
	b->src = kl_source_lookup(source);
	b->date = date;
	kl_date_text(b->date, b->date_text);
	b->started_at = GetCurrentTimestamp();
	b->step_start = b->started_at;
	b->tmp_fd = -1;
	MemoryContextSwitchTo(old);
	return b;
}

/*
 * kl_bridge_gather
 *		Steps 1 to 3: the lock of the date (the source is not dropped under
 *		us), recovery, the batches of the date, the selection (source_hash).
 */
void
kl_bridge_gather(KlBridge *b)
{
	List	   *batches;

	kl_source_lock(b->src);
	kl_lock_bridge_date(b->src->source_id, b->date);
	kl_bridge_step_done(b, "lock");
	kl_bridge_recover(b);
	batches = kl_bridge_scan(b);
	kl_bridge_define(b, kl_bridge_date_layout(b, batches));
	kl_bridge_step_done(b, "recovery and batch list");
	kl_bridge_select(b, batches);
	kl_bridge_step_done(b, "selection and CSV");
}

/*
 * kl_bridge_adapter
 *		Step 4: the adapter version, created or reused.
 */
void
kl_bridge_adapter(KlBridge *b)
{
	kl_bridge_place_adapter(b);
	kl_bridge_record_adapter(b);
	kl_bridge_step_done(b, "adapter version");
}

/*
 * kl_bridge_process
 *		Steps 6 to 8, for an input no run processed yet: a new run, silver,
 *		the checks and, when all pass, a new snapshot.  Returns whether it
 *		was published; *snapshot_id is the date's current snapshot after it
 *		(*has_snapshot false when the date has none).
 */
bool
kl_bridge_process(KlBridge *b, int64 *snapshot_id, bool *has_snapshot)
{
	bool		published;

	kl_new_run_id(b->run_id);
	kl_bridge_load_silver(b);
	kl_bridge_drop_temp(b);
	kl_bridge_step_done(b, "silver");
	kl_bridge_compute_golds(b);
	kl_bridge_step_done(b, "gold");
	kl_bridge_check(b);
	kl_bridge_step_done(b, "quality checks");
	published = (b->passed == b->nchecks);
	if (published)
	{
		*snapshot_id = kl_bridge_publish(b);
		*has_snapshot = true;
	}
	else
		*has_snapshot = kl_bridge_reject(b, snapshot_id);
	kl_bridge_step_done(b, published ? "run and gold snapshot" : "run");
	return published;
}

/*
 * RECHECK
 *
 * bridge(..., recheck => true): a date whose accepted events did not
 * change since a run processed them (the same source_hash, which a
 * plain bridge reports as "skipped") is run again with the golds and
 * checks the source has now, and published only when that changes its
 * result.
 *
 * The run goes through the ordinary steps 6 to 8 (silver, golds, checks,
 * snapshot) inside an internal subtransaction, the earlier run of the input
 * 'superseded' meanwhile (an input has one processed run).  Then:
 *	- a check failed: the run is kept as "failed_quality", nothing is
 * published, the date's current snapshot stays current (as any bridge
 * whose checks fail) and the earlier run stays the processed one;
 *	- it published, and the new snapshot says the same as the date's
 * current one (source_hash, each check's name, outcome, expected and
 * observed, the set of golds, each gold's rows but for snapshot_id and
 * closing_status; kl_catalog_snapshots_differ): the subtransaction is
 * rolled back, so that nothing was written (a snapshot_id of the
 * sequence is lost), and the call reports "skipped" as a plain bridge
 * does;
 *	- it published something else: the subtransaction is kept.  A date
 * that close_date() closed changes so only with reopen => true (55000
 * otherwise, and nothing is published); its certificate then says
 * 'reopened', as for any correction (bridge_closing.c).
 * A redefined gold or check takes effect from the next snapshot: on a date
 * whose events did not change, that is the next recheck.
 *
 */

/*
 * kl_bridge_recheck
 *		Run an already processed input again with the current golds and
 *		checks.  Returns whether the result was kept (published, or a
 *		failed_quality run); false: it said what the current snapshot says,
 *		and nothing was written.  *published, *snapshot_id and
 *		*has_snapshot as kl_bridge_process gives them.
 */
static bool
kl_bridge_recheck(KlBridge *b, const char *prior_run, bool reopen, int64 *snapshot_id,
				  bool *has_snapshot, bool *published)
{
	MemoryContext caller = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	KlDateState st;
	volatile bool changed = true;

	kl_catalog_date_state(b->src->source_id, b->date, &st);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller);
	PG_TRY();
	{
		kl_catalog_supersede_run(prior_run, false);
		*published = kl_bridge_process(b, snapshot_id, has_snapshot);
		if (!*published)
			kl_catalog_supersede_run(prior_run, true);
		else if (st.has_current)
			changed = kl_catalog_snapshots_differ(b, st.snapshot_id, *snapshot_id);
	}
	PG_CATCH();
	{
		ErrorData  *e;

		MemoryContextSwitchTo(caller);
		e = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller);
		CurrentResourceOwner = owner;
		ReThrowError(e);
	}
	PG_END_TRY();

	if (!changed)
	{
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller);
		CurrentResourceOwner = owner;
		*published = false;
		return false;
	}
	ReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(caller);
	CurrentResourceOwner = owner;

	if (*published && st.has_current && strcmp(st.closing_status, "closed") == 0)
	{
		if (!reopen)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("business date %s of source \"%s\" is closed, and its golds and checks now give another result",
							b->date_text, b->src->source),
					 errdetail("Certificate %lld closed it with snapshot %lld; its accepted events are the same, but the golds or checks defined since change what it publishes. Nothing was published.",
							   (long long) st.closing_id, (long long) st.snapshot_id),
					 errhint("To publish the correction, call kafka_lake.bridge('%s', '%s', reopen => true, recheck => true); to certify the date again, call kafka_lake.close_date('%s', '%s') after it.",
							 b->src->source, b->date_text, b->src->source, b->date_text)));
		kl_bridge_reopened(b, *snapshot_id);
	}
	else if (*published && b->reopening)
		kl_bridge_reopened(b, *snapshot_id);
	return true;
}

/*
 * kl_bridge_call
 *		bridge(source, business_date [, reopen [, recheck]]): one row
 *		(business_date, source_hash, the adapter version, the run, the
 *		checks, silver, gold, the snapshot).  closing: the catalog has the
 *		closing of dates (1.1): a closed date whose input changed is refused
 *		unless reopen (bridge_closing.c).  recheck: an input processed
 *		before is run again with the current golds and checks, and published
 *		when its result changed (RECHECK above).  export: the date's current
 *		snapshot is exported as Parquet too (export/export.c), in place when
 *		the transaction commits.
 */
static Datum
kl_bridge_call(FunctionCallInfo fcinfo, bool closing, bool reopen, bool recheck, bool export)
{
	TupleDesc	tupdesc;
	KlBridge   *b;
	Datum		values[12];
	bool		nulls[12] = {0};
	KlPriorRun	prior;
	bool		skipped;
	bool		ran = false;
	int64		snapshot_id = 0;
	bool		has_snapshot = false;
	bool		published = false;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("source and business_date must not be null"),
				 errhint("Name a source and the business date to bridge, for example kafka_lake.bridge('machine_events', '2026-06-29').")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (DATE_NOT_FINITE(PG_GETARG_DATEADT(1)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("business_date must be a finite date"),
				 errhint("Pass the calendar day to bridge, for example '2026-06-29'.")));

	b = kl_bridge_create(text_to_cstring(PG_GETARG_TEXT_PP(0)), PG_GETARG_DATEADT(1));
	kl_bridge_gather(b);
	if (closing)
		kl_bridge_closing_check(b, reopen);
	kl_bridge_adapter(b);

	values[0] = DateADTGetDatum(b->date);
	values[1] = CStringGetTextDatum(b->source_hash);
	values[2] = Int32GetDatum((int32) Min(b->selected, PG_INT32_MAX));
	values[3] = CStringGetTextDatum(b->adapter_created ? "created" : "reused");

	skipped = kl_bridge_find_processed_run(b, &prior);
	if (skipped && (recheck ||
					(!b->reopening && kl_catalog_has_definitions() &&
					 !kl_catalog_current_is_input(b))))
	{
		/*
		 * The same input, with the golds and checks the source has now; also
		 * an input processed before that is not the current snapshot's (the
		 * accepted events went back to what they were: an exclusion undone),
		 * so that the current gold is always the current input's.
		 */
		ran = kl_bridge_recheck(b, prior.run_id, reopen, &snapshot_id, &has_snapshot, &published);
		skipped = !ran;
	}
	if (skipped)
	{
		/* step 5: this input was processed already */
		kl_bridge_drop_temp(b);
		values[4] = CStringGetTextDatum(prior.run_id);
		values[5] = CStringGetTextDatum("skipped");
		values[6] = Int32GetDatum(prior.quality_passed);
		values[7] = Int32GetDatum(prior.quality_total);
		values[8] = Int32GetDatum(prior.silver_rows);
		values[9] = Int32GetDatum(prior.gold_rows);
		values[11] = CStringGetTextDatum("skipped");
		if (b->reopening)
		{
			/* a closed date goes back to an input processed before it closed */
			prior.snapshot_id = kl_bridge_republish(b, prior.run_id);
			prior.has_snapshot = true;
			values[11] = CStringGetTextDatum("published");
		}
		values[10] = Int64GetDatum(prior.snapshot_id);
		nulls[10] = !prior.has_snapshot;
	}
	else
	{
		/* steps 6 to 8 (a recheck that changed the result ran them already) */
		if (!ran)
		{
			published = kl_bridge_process(b, &snapshot_id, &has_snapshot);
			if (published && b->reopening)
				kl_bridge_reopened(b, snapshot_id);
		}

		values[4] = CStringGetTextDatum(b->run_id);
		values[5] = CStringGetTextDatum(published ? "processed" : "failed_quality");
		values[6] = Int32GetDatum(b->passed);
		values[7] = Int32GetDatum(b->nchecks);
		values[8] = Int32GetDatum((int32) Min(b->silver_rows, PG_INT32_MAX));
		values[9] = Int32GetDatum(published ? b->gold_rows : 0);
		values[10] = Int64GetDatum(snapshot_id);
		nulls[10] = !has_snapshot;
		values[11] = CStringGetTextDatum(published ? "published" : "not_published");
	}

	/* the date's current snapshot as Parquet, put in place at commit */
	if (export && !nulls[10])
		kl_export_published(text_to_cstring(PG_GETARG_TEXT_PP(0)), b->date);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/*
 * kafka_lake_bridge
 *		bridge(source, business_date), as version 1.0 defined it (a database
 *		not yet updated has no closing of dates).
 */
Datum
kafka_lake_bridge(PG_FUNCTION_ARGS)
{
	return kl_bridge_call(fcinfo, false, false, false, false);
}

/*
 * kafka_lake_bridge_1_1
 *		bridge(source, business_date, reopen): a closed date whose accepted
 *		set changed is published again (a correction, 'reopened') only with
 *		reopen => true.
 */
Datum
kafka_lake_bridge_1_1(PG_FUNCTION_ARGS)
{
	return kl_bridge_call(fcinfo, true, PG_ARGISNULL(2) ? false : PG_GETARG_BOOL(2), false, false);
}

/*
 * kafka_lake_bridge_1_3
 *		bridge(source, business_date, reopen, recheck): with recheck, a date
 *		whose accepted set did not change runs the current golds and checks
 *		again, and is published when that changes its result.
 */
Datum
kafka_lake_bridge_1_3(PG_FUNCTION_ARGS)
{
	return kl_bridge_call(fcinfo, true, PG_ARGISNULL(2) ? false : PG_GETARG_BOOL(2),
						  PG_ARGISNULL(3) ? false : PG_GETARG_BOOL(3), false);
}

/*
 * kafka_lake_bridge_1_10
 *		bridge(source, business_date, reopen, recheck, export): with export,
 *		the date's current snapshot is also exported as Parquet
 *		(export/export.c), put in place when the transaction commits.
 */
Datum
kafka_lake_bridge_1_10(PG_FUNCTION_ARGS)
{
	return kl_bridge_call(fcinfo, true, PG_ARGISNULL(2) ? false : PG_GETARG_BOOL(2),
						  PG_ARGISNULL(3) ? false : PG_GETARG_BOOL(3),
						  PG_ARGISNULL(4) ? false : PG_GETARG_BOOL(4));
}
