/*-------------------------------------------------------------------------
 *
 * close.c
 *	  kafka_lake.close_date(source, business_date, cutoff, timeout): a
 *	  completeness certificate for one business date.
 *
 * WHAT A CERTIFICATE SAYS
 *
 * "Every record of the topic below these offsets (one per partition) is
 * landed, and the date's gold counts exactly the date's accepted events
 * among them."  The offsets are the marks, taken once at the call:
 *	- without cutoff, each partition's high watermark at the moment of the
 *	  call (one ListOffsets round trip for all partitions, as land() reads
 *	  them);
 *	- with cutoff, each partition's first offset whose record is timestamped
 *	  at or after the cutoff (offsets-for-times, kafka.c; a partition with
 *	  no such record: its high watermark).  Record timestamps are assumed
 *	  not to decrease along a partition, as the broker's time index assumes.
 *
 * THE STEPS
 *
 *	1. land up to the marks (land.c, kl_land_to_marks): the landing
 *	   protocol of land(), nothing at or past a mark, each partition waited
 *	   for (until the timeout) when another session is landing it;
 *	2. completeness: every partition must have been landed below its mark.
 *	   Landed means durable and in the catalog (the bridge reads the
 *	   catalog); the group's commit follows in the same step of the
 *	   protocol, but the date does not depend on it.  A partition that is
 *	   behind (the broker down, records expired before they landed, another
 *	   session landing it until the timeout, the timeout) is an ERROR naming
 *	   it, how far it got, its mark and why: nothing is closed or recorded
 *	   (what landed stays landed, as after any failed land());
 *	3. bridge the date (bridge.c, the same steps as bridge()), selecting
 *	   only what lies below the marks: events at or past a mark are late by
 *	   definition, whether or not they have landed yet;
 *	4. the certificate (catalog_close.c): when the selection is the one the
 *	   date's current snapshot already closed, and the source owns the
 *	   partitions the certificate says it owned (set_partitions), nothing
 *	   changes and the existing certificate is returned ("already_closed").
 *	   Otherwise the date gets a 'closed' snapshot: a new run when the input is new, or,
 *	   when a run processed that input already (the current provisional or
 *	   reopened snapshot, or an earlier one), a copy of that run's gold under
 *	   the status 'closed', because gold rows never change once written.
 *	   The new certificate supersedes the date's earlier one.
 * A selection that fails a quality check cannot be certified: ERROR, and
 * bridge() shows the failed checks.
 *
 * CONCURRENCY
 *
 * close_date() takes the partitions in ascending order (waiting), then the
 * date's bridge lock (waiting), so a concurrent bridge() of the date either
 * finishes first (its snapshot is then closed as it is, or replaced) or
 * runs after the close and finds a closed date (skipped, or refused when it
 * selects late events).  A concurrent land() finds the partitions locked and
 * skips them; two close_date() of one date serialise, the second finding
 * the date closed.  Each wait is bounded by the timeout.
 *
 * IDENTIFICATION
 *	  src/close/close.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "bridge/bridge.h"
#include "bridge/catalog_close.h"
#include "contract/iso8601.h"
#include "export/export.h"
#include "kafka/kafka.h"
#include "kl_catalog/catalog.h"
#include "landing/batch_read.h"
#include "landing/land.h"
#include "landing/landing_files.h"

PG_FUNCTION_INFO_V1(kafka_lake_close_date);
PG_FUNCTION_INFO_V1(kafka_lake_close_date_1_10);

static Datum kl_close_date_call(FunctionCallInfo fcinfo);

/* One call of close_date() */
typedef struct KlCloseCall
{
	const char *source;
	DateADT		date;
	char		date_text[KL_DATE_TEXT_LEN];
	bool		has_cutoff;
	TimestampTz cutoff;
	int			timeout_ms;
	char	   *closed_by;		/* the calling role */
	KlLandMarks marks;
} KlCloseCall;

/*
 * kl_unix_ms_ceil
 *		The record timestamp (Unix milliseconds) at or after which a record
 *		is not before t.
 */
static int64
kl_unix_ms_ceil(TimestampTz t)
{
	int64		us = t + (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;

	return (us >= 0) ? (us + 999) / 1000 : us / 1000;
}

/*
 * kl_close_landing_failed
 *		In a PG_CATCH block of the landing: raise the error again as the
 *		reason the date was not closed, keeping its SQLSTATE.  Errors that
 *		say nothing of the landing (an unknown source, a cancel) are raised
 *		as they are.
 */
static void
kl_close_landing_failed(KlCloseCall *cc, MemoryContext cxt)
{
	KlLandMarks *m = &cc->marks;
	ErrorData  *edata;
	char	   *why;
	int32		p = m->partition;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	if (m->src == NULL || edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
		PG_RE_THROW();
	FlushErrorState();

	why = edata->detail ? psprintf("%s: %s", edata->message, edata->detail) :
		pstrdup(edata->message);
	if (p >= 0 && p < m->nparts && m->marks != NULL)
	{
		int64		committed = m->call_committed[p] >= 0 ? m->call_committed[p] :
			m->committed[p];

		ereport(ERROR,
				(errcode(edata->sqlerrcode),
				 errmsg("business date %s of source \"%s\" was not closed: partition %d of topic \"%s\" could not be landed up to its mark %lld",
						cc->date_text, m->src->source, m->slot_partition[p],
						m->src->topics[m->slot_topic[p]], (long long) m->marks[p]),
				 committed >= 0 ?
				 errdetail("The consumer group is at offset %lld of the partition. Landing it failed with: %s",
						   (long long) committed, why) :
				 errdetail("Landing it failed with: %s", why),
				 edata->hint ? errhint("%s", edata->hint) :
				 errhint("Call kafka_lake.close_date('%s', '%s') again once the partition can be landed.",
						 m->src->source, cc->date_text)));
	}
	ereport(ERROR,
			(errcode(edata->sqlerrcode),
			 errmsg("business date %s of source \"%s\" was not closed: the marks of its partitions could not be read",
					cc->date_text, m->src->source),
			 errdetail("Reading them failed with: %s", why),
			 edata->hint ? errhint("%s", edata->hint) :
			 errhint("Call kafka_lake.close_date('%s', '%s') again once the Kafka cluster answers.",
					 m->src->source, cc->date_text)));
}

/*
 * kl_close_check_complete
 *		Step 2: every partition landed below its mark, or an ERROR naming the
 *		first one that is not.
 */
static void
kl_close_check_complete(KlCloseCall *cc)
{
	KlLandMarks *m = &cc->marks;

	for (int slot = 0; slot < m->nparts; slot++)
	{
		KlPartitionState st;
		KlSource   *src;
		int32		p = m->slot_partition[slot];

		if (m->reached[slot] >= m->marks[slot])
			continue;
		src = kl_source_topic(m->src, m->slot_topic[slot]);
		kl_catalog_partition_state(src, p, &st);
		if (m->behind[slot] == KL_BEHIND_LOCKED)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("business date %s of source \"%s\" was not closed: partition %d of topic \"%s\" is landed up to offset %lld, short of its mark %lld",
							cc->date_text, src->source, p, src->topic,
							(long long) Max(st.last_commit, 0), (long long) m->marks[slot]),
					 errdetail("Another session was landing the partition until the timeout of %d ms ended. Nothing was closed; what this call landed stays landed.",
							   cc->timeout_ms),
					 errhint("Call close_date again once that session's transaction ends, or with a longer timeout. pg_locks shows its lock: locktype advisory, classid %d, objid %u, objsubid 19276.",
							 src->source_id, (uint32) p + ((uint32) src->topic_index << 24))));
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("business date %s of source \"%s\" was not closed: partition %d of topic \"%s\" is landed up to offset %lld, short of its mark %lld",
						cc->date_text, src->source, p, src->topic,
						(long long) Max(st.last_commit, 0), (long long) m->marks[slot]),
				 errdetail("The timeout of %d ms ended before the landing reached the mark. Nothing was closed; what this call landed stays landed.",
						   cc->timeout_ms),
				 errhint("Call close_date again with a longer timeout.")));
	}
}

/*
 * kl_close_through_timestamp
 *		The record timestamp of the last landed record of a partition below
 *		its mark: the last record this call polled there (records come in
 *		offset order, up to the mark), else from the manifest of the batch
 *		that holds it (checked against the catalog first; a manifest is
 *		parsed whole, about 100 ms per 40,000 records here); -1 when there
 *		is none, or the broker gave none.
 */
static int64
kl_close_through_timestamp(KlLandMarks *m, int slot)
{
	KlSource   *src = kl_source_topic(m->src, m->slot_topic[slot]);
	int32		partition = m->slot_partition[slot];
	int64		mark = m->marks[slot];
	char		batch_id[KL_BATCH_ID_LEN + 1];
	KlBounds	bounds;
	List	   *batches;
	int64		total;
	KlBatch		scratch;
	KlRecord   *recs;
	int			n;
	int64		best_offset = -1;
	int64		result = -1;

	if (m->last_offset[slot] >= 0)
		return m->last_timestamp_ms[slot];
	if (mark <= 0 || !kl_catalog_last_batch_below(src, partition, mark, batch_id))
		return -1;
	kl_bounds_init(&bounds);
	bounds.topic = src->topic;
	bounds.partition_lo = bounds.partition_hi = partition;
	bounds.batch_id = batch_id;
	/* a snapshot that sees the batches this call landed */
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
	batches = kl_catalog_scan_batches(src, &bounds, 0, &total);
	PopActiveSnapshot();
	if (batches == NIL)
		return -1;
	kl_check_manifest(src, linitial(batches));
	memset(&scratch, 0, sizeof(scratch));
	kl_read_manifest(psprintf("%s/batch=%s", kl_partition_dir(src, partition), batch_id),
					 &scratch, &recs, &n);
	for (int i = 0; i < n; i++)
	{
		if (recs[i].offset < mark && recs[i].offset > best_offset)
		{
			best_offset = recs[i].offset;
			result = recs[i].timestamp_ms;
		}
	}
	return result;
}

/*
 * kl_close_bridge
 *		Step 3: bridge the date, selecting below the marks.  No event there
 *		is P0002 with a closing's own words, but on a server that owns some
 *		of the topic's partitions (set_partitions): its share of a date may
 *		be empty, and is certified as such.
 */
static KlBridge *
kl_close_bridge(KlCloseCall *cc)
{
	KlBridge   *b = kl_bridge_create(cc->source, cc->date);
	MemoryContext cxt = CurrentMemoryContext;

	b->through = cc->marks.marks;
	b->through_base = cc->marks.topic_base;
	b->nthrough = cc->marks.nparts;
	/* a server owning some partitions certifies an empty share too */
	b->allow_empty = cc->marks.src->npartitions > 0 && kl_catalog_closes_empty_shares();
	PG_TRY();
	{
		kl_bridge_gather(b);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_NO_DATA_FOUND)
			PG_RE_THROW();
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("business date %s of source \"%s\" has no accepted event below the marks",
						cc->date_text, b->src->source),
				 cc->has_cutoff ?
				 errdetail("The marks are the first offsets timestamped at or after the cutoff %s; nothing was closed.",
						   timestamptz_to_str(cc->cutoff)) :
				 errdetail("The marks are the partitions' high watermarks at the call; nothing was closed."),
				 errhint("Check the date (kafka_lake.%s_records shows the business_date of every landed record)%s.",
						 b->src->source, cc->has_cutoff ? ", or give a later cutoff" : "")));
	}
	PG_END_TRY();
	return b;
}

/*
 * kl_close_result
 *		The row close_date() returns; with export (close_date(..., export =>
 *		true)), the date's closed snapshot is exported as Parquet first
 *		(export/export.c), in place when the transaction commits.
 */
static Datum
kl_close_result(FunctionCallInfo fcinfo, const KlClosing *c, const char *status)
{
	TupleDesc	tupdesc;
	Datum		values[10];
	bool		nulls[10] = {0};

	if (PG_NARGS() > 4 && !PG_ARGISNULL(4) && PG_GETARG_BOOL(4))
		kl_export_published(text_to_cstring(PG_GETARG_TEXT_PP(0)), c->business_date);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = DateADTGetDatum(c->business_date);
	values[1] = Int64GetDatum(c->closing_id);
	values[2] = CStringGetTextDatum(status);
	values[3] = Int64GetDatum(c->snapshot_id);
	values[4] = CStringGetTextDatum(c->source_hash);
	values[5] = Int32GetDatum(c->selected_events);
	values[6] = Int32GetDatum(c->nparts);
	values[7] = TimestampTzGetDatum(c->cutoff);
	nulls[7] = !c->has_cutoff;
	values[8] = CStringGetTextDatum(c->closed_by);
	values[9] = TimestampTzGetDatum(c->closed_at);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/*
 * kafka_lake_close_date
 *		close_date(source, business_date, cutoff, timeout), as 1.1 defined
 *		it: one row
 *		(business_date, closing_id, status 'closed' or 'already_closed',
 *		snapshot_id, source_hash, selected_events, partitions, cutoff,
 *		closed_by, closed_at).
 */
Datum
kafka_lake_close_date(PG_FUNCTION_ARGS)
{
	return kl_close_date_call(fcinfo);
}

/*
 * kafka_lake_close_date_1_10
 *		close_date(source, business_date, cutoff, timeout, export): with
 *		export, the closed snapshot is exported as Parquet too.
 */
Datum
kafka_lake_close_date_1_10(PG_FUNCTION_ARGS)
{
	return kl_close_date_call(fcinfo);
}

/*
 * kl_close_coordinated
 *		close_date() on a coordinator, of a source it reads from its shards
 *		(attach_shards): the date certified across every shard by
 *		certify_shards(), run with the caller's rights (its EXECUTE, and the
 *		caller's user mappings to the shards), as close_date's row:
 *		closing_id the certificate's id, status closed or already_closed, no
 *		snapshot of its own, the combined source_hash, the events and owned
 *		partitions of every shard.  Each shard closed the date with its own
 *		cutoff, so none is taken here, and nothing is exported.
 */
static Datum
kl_close_coordinated(FunctionCallInfo fcinfo, const char *source, DateADT date)
{
	Oid			types[2] = {TEXTOID, DATEOID};
	Datum		args[2] = {CStringGetTextDatum(source), DateADTGetDatum(date)};
	TupleDesc	tupdesc;
	Datum		values[10];
	bool		nulls[10] = {0};
	int			rc;

	if (!PG_ARGISNULL(2) || (PG_NARGS() > 4 && !PG_ARGISNULL(4) && PG_GETARG_BOOL(4)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("close_date of coordinated source \"%s\" takes no cutoff and no export", source),
				 errdetail("Each shard closes the date with its own cutoff and exports its own snapshot; the coordinator certifies what they closed."),
				 errhint("Close the date on each shard, then call kafka_lake.close_date('%s', date) here.", source)));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	SPI_connect();
	rc = SPI_execute_with_args("SELECT x.certificate_id, CASE x.status WHEN 'certified' THEN 'closed' ELSE 'already_closed' END,"
							   "       x.combined_hash, x.events::integer, x.partitions::integer,"
							   "       c.certified_by::text, c.certified_at"
							   "  FROM (SELECT pg_catalog.min(r.certificate_id) AS certificate_id, pg_catalog.min(r.status) AS status,"
							   "               pg_catalog.min(r.combined_hash) AS combined_hash,"
							   "               pg_catalog.sum(r.selected_events) AS events,"
							   "               pg_catalog.sum(pg_catalog.cardinality(r.partitions)) AS partitions"
							   "          FROM kafka_lake.certify_shards($1, $2) r) x"
							   "  JOIN kafka_lake.shard_certificates c ON c.certificate_id = x.certificate_id",
							   2, types, args, NULL, false, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "certify_shards returned no certificate");
	{
		HeapTuple	row = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		HeapTuple	tuple;

		/* (business_date, closing_id, status, snapshot_id, source_hash, selected_events,
		 *  partitions, cutoff, closed_by, closed_at) */
		values[0] = DateADTGetDatum(date);
		values[1] = SPI_getbinval(row, desc, 1, &nulls[1]);
		values[2] = SPI_getbinval(row, desc, 2, &nulls[2]);
		nulls[3] = true;		/* no snapshot of its own */
		values[4] = SPI_getbinval(row, desc, 3, &nulls[4]);
		values[5] = SPI_getbinval(row, desc, 4, &nulls[5]);
		values[6] = SPI_getbinval(row, desc, 5, &nulls[6]);
		nulls[7] = true;		/* no cutoff */
		values[8] = SPI_getbinval(row, desc, 6, &nulls[8]);
		values[9] = SPI_getbinval(row, desc, 7, &nulls[9]);
		/* formed in SPI's memory, copied out before it goes */
		tuple = SPI_copytuple(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
		SPI_finish();
		PG_RETURN_DATUM(HeapTupleGetDatum(tuple));
	}
}

/*
 * kl_close_date_call
 *		Both versions of close_date(): the fifth argument, export, is 1.10's
 *		(kl_close_result).
 */
static Datum
kl_close_date_call(FunctionCallInfo fcinfo)
{
	KlCloseCall cc;
	KlLandMarks *m = &cc.marks;
	MemoryContext cxt = CurrentMemoryContext;
	KlBridge   *b;
	KlDateState st;
	KlClosing	c;
	int64		snapshot_id;

	memset(&cc, 0, sizeof(cc));
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("source and business_date must not be null"),
				 errhint("Name a source and the business date to close, for example kafka_lake.close_date('machine_events', '2026-06-29').")));
	cc.source = text_to_cstring(PG_GETARG_TEXT_PP(0));
	cc.date = PG_GETARG_DATEADT(1);
	if (DATE_NOT_FINITE(cc.date))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("business_date must be a finite date"),
				 errhint("Pass the calendar day to close, for example '2026-06-29'.")));
	if (kl_catalog_is_coordinated(cc.source))
		return kl_close_coordinated(fcinfo, cc.source, cc.date);
	kl_date_text(cc.date, cc.date_text);
	cc.has_cutoff = !PG_ARGISNULL(2);
	if (cc.has_cutoff)
	{
		cc.cutoff = PG_GETARG_TIMESTAMPTZ(2);
		if (TIMESTAMP_NOT_FINITE(cc.cutoff) || cc.cutoff > GetCurrentTimestamp())
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("cutoff %s is not a time in the past", timestamptz_to_str(cc.cutoff)),
					 errhint("A cutoff certifies the records timestamped before it; leave it out to close at the partitions' current ends.")));
		m->by_time = true;
		m->cutoff_ms = kl_unix_ms_ceil(cc.cutoff);
	}
	cc.timeout_ms = PG_ARGISNULL(3) ? 30000 : kl_timeout_ms(PG_GETARG_INTERVAL_P(3), "timeout");
	cc.closed_by = GetUserNameFromId(GetUserId(), false);
	m->src = kl_source_lookup(cc.source);

	/* steps 1 and 2 */
	PG_TRY();
	{
		kl_land_to_marks(cc.source, cc.timeout_ms, m);
	}
	PG_CATCH();
	{
		kl_close_landing_failed(&cc, cxt);
	}
	PG_END_TRY();
	kl_close_check_complete(&cc);

	/* step 3 */
	b = kl_close_bridge(&cc);

	/* step 4 */
	kl_catalog_date_state(b->src->source_id, cc.date, &st);
	if (st.has_current && st.has_closing && strcmp(st.closing_status, "closed") == 0 &&
		strcmp(st.source_hash, b->source_hash) == 0 &&
		kl_catalog_closing_owned_matches(st.closing_id, m->src))
	{
		kl_bridge_drop_temp(b);
		return kl_close_result(fcinfo, kl_catalog_closing(st.closing_id), "already_closed");
	}
	if (st.has_closing && st.final)
		kl_refuse_final_date(b->src->source, cc.date_text, st.closing_id);
	kl_bridge_adapter(b);
	if (st.has_current && strcmp(st.source_hash, b->source_hash) == 0)
	{
		kl_bridge_drop_temp(b);
		snapshot_id = kl_catalog_republish_snapshot(b->src->source_id, cc.date, st.snapshot_id,
													"closed");
	}
	else
	{
		KlPriorRun	prior;

		if (kl_bridge_find_processed_run(b, &prior))
		{
			kl_bridge_drop_temp(b);
			snapshot_id = kl_catalog_republish_snapshot(b->src->source_id, cc.date,
														kl_catalog_run_snapshot(prior.run_id),
														"closed");
		}
		else
		{
			bool		has_snapshot;

			b->closing_status = "closed";
			if (!kl_bridge_process(b, &snapshot_id, &has_snapshot))
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("business date %s of source \"%s\" was not closed: %d of %d quality checks failed",
								cc.date_text, b->src->source, b->nchecks - b->passed, b->nchecks),
						 errdetail("A date is closed only with gold that passed every check. Nothing was closed or recorded."),
						 errhint("kafka_lake.bridge('%s', '%s') runs the checks and keeps their results in kafka_lake.quality_results.",
								 b->src->source, cc.date_text)));
		}
	}

	/* the certificate */
	memset(&c, 0, sizeof(c));
	c.source_id = b->src->source_id;
	c.business_date = cc.date;
	c.snapshot_id = snapshot_id;
	c.source_hash = b->source_hash;
	c.selected_events = (int32) Min(b->selected, PG_INT32_MAX);
	c.has_cutoff = cc.has_cutoff;
	c.cutoff = cc.cutoff;
	c.closed_by = cc.closed_by;
	c.nparts = m->nparts;
	c.through_offset = m->marks;
	c.slot_partition = m->slot_partition;
	c.slot_topic = palloc(sizeof(char *) * Max(m->nparts, 1));
	c.slot_owned = palloc(sizeof(bool) * Max(m->nparts, 1));
	c.through_timestamp_ms = palloc(sizeof(int64) * Max(m->nparts, 1));
	for (int slot = 0; slot < m->nparts; slot++)
	{
		CHECK_FOR_INTERRUPTS();
		c.slot_topic[slot] = m->src->topics[m->slot_topic[slot]];
		c.slot_owned[slot] = kl_source_owns(m->src, m->slot_partition[slot]);
		c.through_timestamp_ms[slot] = kl_close_through_timestamp(m, slot);
	}
	return kl_close_result(fcinfo, kl_catalog_closing(kl_catalog_record_closing(&c)), "closed");
}
