/*-------------------------------------------------------------------------
 *
 * catalog_lifecycle.c
 *	  The catalog's part of the landing's life cycle: the swap of a
 *	  compaction, the expiry of a batch, what recovery and readers ask about
 *	  batches that a compaction replaced or an expiry emptied.
 *
 * As in catalog.c, every statement runs in a catalog section
 * (kl_catalog_begin: as the extension's owner, search_path pinned, tables
 * named with their schema), and callers get C values.
 *
 * The swap of a compaction is one set of statements in the caller's
 * transaction: the rows of the replaced batches go first (their
 * coordinates by cascade), so that the exclusion constraint on coordinates
 * admits the new batch's offset ranges, then the new batch is recorded as
 * any batch is (kl_catalog_insert_batch), with the ids it replaced in
 * compacted_from.  accepted_events names coordinates, not batches: it does
 * not change.
 *
 * A reader whose snapshot lists a batch that a compaction or an expiry
 * committed after it removes the batch's files at commit, and finds them
 * gone.  kl_catalog_batch_fate asks the latest snapshot what became of it,
 * so that the reader can say so (batch_read.c) rather than call the batch
 * damaged.
 *
 * IDENTIFICATION
 *	  src/kl_catalog/catalog_lifecycle.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "format/batch_format.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/catalog_lifecycle.h"

static char *kl_final_batch_sql(const char *now);

/*
 * kl_text_array
 *		A text[] datum of C strings.
 */
static Datum
kl_text_array(List *strings)
{
	int			n = list_length(strings);
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	int			i = 0;
	ListCell   *cell;

	foreach(cell, strings)
		elems[i++] = CStringGetTextDatum((const char *) lfirst(cell));
	return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * kl_catalog_swap_batches
 *		The catalog step of a compaction: forget the replaced batches (their
 *		coordinates go by cascade), record the new one and the ids it
 *		replaced.  ERROR if a replaced batch is not there (cannot happen
 *		while the caller owns the partition).
 */
void
kl_catalog_swap_batches(KlSource *src, List *old_ids, const KlBatch *nb,
						const KlRecord *recs, int n)
{
	KlCatalogSave cs;
	Oid			types[3] = {INT4OID, TEXTARRAYOID, TEXTOID};
	Datum		values[3];

	values[0] = Int32GetDatum(src->source_id);
	values[1] = kl_text_array(old_ids);
	values[2] = CStringGetTextDatum(nb->batch_id);

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("DELETE FROM kafka_lake.batches"
							  " WHERE source_id = $1 AND batch_id = ANY ($2)",
							  2, types, values, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete the compacted batches of source \"%s\"", src->source);
	if (SPI_processed != (uint64) list_length(old_ids))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("compaction of source \"%s\" found %llu of its %d batches in the catalog",
						src->source, (unsigned long long) SPI_processed, list_length(old_ids)),
				 errdetail("Nothing was compacted."),
				 errhint("The catalog changed under the compaction: run kafka_lake.verify('%s'), which says what to do.", src->source)));
	kl_catalog_end(cs);

	kl_catalog_insert_batch(src, nb, recs, n);

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("UPDATE kafka_lake.batches SET compacted_from = $2"
							  " WHERE source_id = $1 AND batch_id = $3",
							  3, types, values, NULL, false, 0) != SPI_OK_UPDATE ||
		SPI_processed != 1)
		elog(ERROR, "could not record the compaction of batch %s", nb->batch_id);
	kl_catalog_end(cs);
}

/*
 * kl_replaced_cmp
 *		list_sort comparator of KlReplaced by old id.
 */
static int
kl_replaced_cmp(const ListCell *a, const ListCell *b)
{
	return strcmp(((KlReplaced *) lfirst(a))->old_id, ((KlReplaced *) lfirst(b))->old_id);
}

/*
 * kl_catalog_replaced_batches
 *		The batches of a partition that committed compactions replaced, each
 *		with the batch that holds its records now, sorted by the replaced
 *		id.  Recovery removes a directory of such a batch that a crash left
 *		behind, unless the compaction is this transaction's own (mine): a
 *		rollback would bring the replaced batch's rows back.
 */
List *
kl_catalog_replaced_batches(KlSource *src, int32 partition)
{
	KlCatalogSave cs;
	Oid			types[3] = {INT4OID, TEXTOID, INT4OID};
	Datum		values[3] = {Int32GetDatum(src->source_id), CStringGetTextDatum(src->topic),
	Int32GetDatum(partition)};
	MemoryContext caller = CurrentMemoryContext;
	List	   *result = NIL;

	if (!kl_catalog_has_lifecycle())
		return NIL;
	cs = kl_catalog_begin();
	if (SPI_execute_with_args("SELECT pg_catalog.unnest(compacted_from), batch_id, xmin"
							  " FROM kafka_lake.batches"
							  " WHERE source_id = $1 AND topic = $2 AND partition = $3"
							  "   AND compacted_from IS NOT NULL",
							  3, types, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.batches");
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tup = SPI_tuptable->vals[row];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *old_id = SPI_getvalue(tup, desc, 1);
		char	   *new_id = SPI_getvalue(tup, desc, 2);
		bool		isnull;
		TransactionId xmin = DatumGetTransactionId(SPI_getbinval(tup, desc, 3, &isnull));
		MemoryContext old = MemoryContextSwitchTo(caller);
		KlReplaced *r = palloc(sizeof(KlReplaced));

		r->old_id = pstrdup(old_id);
		r->new_id = pstrdup(new_id);
		r->mine = TransactionIdIsCurrentTransactionId(xmin);
		result = lappend(result, r);
		MemoryContextSwitchTo(old);
	}
	kl_catalog_end(cs);
	list_sort(result, kl_replaced_cmp);
	return result;
}

/*
 * kl_catalog_mark_expired
 *		Record that a batch's record files are (about to be) removed.
 */
void
kl_catalog_mark_expired(KlSource *src, const char *batch_id, TimestampTz at)
{
	KlCatalogSave cs;
	Oid			types[3] = {INT4OID, TEXTOID, TIMESTAMPTZOID};
	Datum		values[3] = {Int32GetDatum(src->source_id), CStringGetTextDatum(batch_id),
	TimestampTzGetDatum(at)};

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("UPDATE kafka_lake.batches SET expired_at = $3"
							  " WHERE source_id = $1 AND batch_id = $2",
							  3, types, values, NULL, false, 0) != SPI_OK_UPDATE ||
		SPI_processed != 1)
		elog(ERROR, "could not record the expiry of batch %s", batch_id);
	/* from 1.9 the fingerprints of an expired batch live in its manifest only */
	if (kl_catalog_has_lean_expiry() &&
		SPI_execute_with_args("UPDATE kafka_lake.coordinates SET fingerprints = NULL"
							  " WHERE source_id = $1 AND batch_id = $2 AND fingerprints IS NOT NULL",
							  2, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record the expiry of batch %s", batch_id);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_reducible
 *		The batch_ids of a partition's expired batches whose manifests
 *		expire() reduces (1.9): not reduced yet, a batch of the landing (not
 *		a readmit unit) that no readmit unit and no exclusion names, none of
 *		whose statuses says another record's fate ('D', 'R', 'X', 'P'), and
 *		without event_ids in accepted_events: it accepted none, or they are
 *		past the dedupe horizon (kl_final_batch_sql, the rule by which
 *		kl_catalog_prune_event_ids removed them).  Ascending by offset.  Not
 *		read-only: it sees the expiries and the pruning of the caller's own
 *		call.
 */
List *
kl_catalog_reducible(KlSource *src, int32 partition, TimestampTz now)
{
	KlCatalogSave cs;
	Oid			types[4] = {INT4OID, TEXTOID, INT4OID, TIMESTAMPTZOID};
	Datum		values[4] = {Int32GetDatum(src->source_id), CStringGetTextDatum(src->topic),
		Int32GetDatum(partition), TimestampTzGetDatum(now)};
	MemoryContext caller = CurrentMemoryContext;
	List	   *result = NIL;

	if (!kl_catalog_has_reduction())
		return NIL;
	cs = kl_catalog_begin();
	if (SPI_execute_with_args(psprintf(
							  "SELECT b.batch_id FROM kafka_lake.batches b"
							  "  JOIN kafka_lake.sources s USING (source_id)"
							  "  JOIN kafka_lake.coordinates c USING (source_id, batch_id)"
							  " WHERE b.source_id = $1 AND b.topic = $2 AND b.partition = $3"
							  "   AND b.expired_at IS NOT NULL AND b.reduced_at IS NULL AND b.kind = 'landing'"
							  "   AND c.statuses !~ '[DRXP]'"
							  "   AND NOT EXISTS (SELECT 1 FROM kafka_lake.batches u"
							  "                    WHERE u.source_id = $1 AND u.readmit_of = b.batch_id)"
							  "   AND NOT EXISTS (SELECT 1 FROM kafka_lake.exclusions x"
							  "                    WHERE x.source_id = $1"
							  "                      AND (x.batch_id = b.batch_id OR x.promoted_batch_id = b.batch_id))"
							  "   AND (b.accepted_count = 0 OR %s)"
							  " ORDER BY b.first_offset", kl_final_batch_sql("$4")),
							  4, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.batches");
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, 1, &isnull);
		MemoryContext old = MemoryContextSwitchTo(caller);

		result = lappend(result, TextDatumGetCString(d));
		MemoryContextSwitchTo(old);
	}
	kl_catalog_end(cs);
	return result;
}

/*
 * kl_catalog_mark_reduced
 *		Record that an expired batch's manifest is (about to be) its reduced
 *		one, whose size, CRC-32C and SHA-256 *checks holds.
 */
void
kl_catalog_mark_reduced(KlSource *src, const char *batch_id, TimestampTz at, const KlBatch *checks)
{
	KlCatalogSave cs;
	Oid			types[6] = {INT4OID, TEXTOID, TIMESTAMPTZOID, TEXTOID, INT8OID, INT8OID};
	Datum		values[6] = {Int32GetDatum(src->source_id), CStringGetTextDatum(batch_id),
		TimestampTzGetDatum(at), CStringGetTextDatum(checks->manifest_sha256),
		Int64GetDatum(checks->manifest_bytes), Int64GetDatum((int64) checks->manifest_crc32c)};

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("UPDATE kafka_lake.batches SET reduced_at = $3, manifest_sha256 = $4,"
							  "       manifest_bytes = $5, manifest_crc32c = $6"
							  " WHERE source_id = $1 AND batch_id = $2 AND expired_at IS NOT NULL",
							  6, types, values, NULL, false, 0) != SPI_OK_UPDATE ||
		SPI_processed != 1)
		elog(ERROR, "could not record the reduction of batch %s", batch_id);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_has_lean_expiry
 *		May an expired batch's coordinates go without their fingerprints
 *		(1.9 and later: coordinates.fingerprints is nullable)?
 */
bool
kl_catalog_has_lean_expiry(void)
{
	HeapTuple	tup = SearchSysCacheAttName(kl_catalog_relid("coordinates"), "fingerprints");
	bool		lean;

	if (!HeapTupleIsValid(tup))
		return false;
	lean = !((Form_pg_attribute) GETSTRUCT(tup))->attnotnull;
	ReleaseSysCache(tup);
	return lean;
}

/*
 * kl_catalog_batch_fate
 *		What the latest snapshot says became of a batch that the caller's
 *		snapshot lists: replaced by a compacted batch (*into gets its id), or
 *		expired (*expired_at gets when), or neither.
 */
KlBatchFate
kl_catalog_batch_fate(KlSource *src, const char *batch_id, char **into, TimestampTz *expired_at)
{
	KlCatalogSave cs;
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2] = {Int32GetDatum(src->source_id), CStringGetTextDatum(batch_id)};
	MemoryContext caller = CurrentMemoryContext;
	KlBatchFate fate = KL_FATE_UNCHANGED;
	SPIPlanPtr	plan;

	if (!kl_catalog_has_lifecycle())
		return KL_FATE_UNCHANGED;
	cs = kl_catalog_begin();
	plan = SPI_prepare("SELECT 'c', batch_id, NULL::timestamptz FROM kafka_lake.batches"
					   " WHERE source_id = $1 AND $2 = ANY (compacted_from)"
					   " UNION ALL"
					   " SELECT 'e', batch_id, expired_at FROM kafka_lake.batches"
					   " WHERE source_id = $1 AND batch_id = $2 AND expired_at IS NOT NULL",
					   2, types);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for the fate of batch %s", batch_id);
	CommandCounterIncrement();
	if (SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(), InvalidSnapshot,
							 true, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.batches");
	if (SPI_processed > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *kind = SPI_getvalue(tup, desc, 1);
		bool		isnull;

		if (kind[0] == 'c')
		{
			*into = MemoryContextStrdup(caller, SPI_getvalue(tup, desc, 2));
			fate = KL_FATE_COMPACTED;
		}
		else
		{
			*expired_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 3, &isnull));
			fate = KL_FATE_EXPIRED;
		}
	}
	SPI_freeplan(plan);
	kl_catalog_end(cs);
	return fate;
}

/*
 * kl_catalog_expirable
 *		The batches of a partition that expire() removes the record files of,
 *		ascending by offset, each followed by its readmit units: a batch and
 *		its units expire together, by the business dates of them all (a
 *		unit holds records of its batch, and readmit() judges the batch's
 *		quarantine lines again, so neither outlives the other).  Not expired
 *		yet, and every business date older than limit, or, when none of them
 *		has dates (only quarantined records), the batch landed on a day (in
 *		the session's time zone) older than limit.  With closed_only, only
 *		batches with dates, each of whose days from the first to the last
 *		has a closing certificate in effect (kafka_lake.date_closings,
 *		status 'closed': a reopened date is not closed).  Each KlBatch has
 *		its id, kind (readmit, readmit_of), offsets, record count, its own
 *		dates and file sizes.  (A unit left unexpired beside an expired
 *		batch, which only a recovery can leave, expires by the same rule.)
 */
List *
kl_catalog_expirable(KlSource *src, int32 partition, DateADT limit, bool closed_only)
{
	KlCatalogSave cs;
	Oid			types[4] = {INT4OID, TEXTOID, INT4OID, DATEOID};
	Datum		values[4] = {Int32GetDatum(src->source_id), CStringGetTextDatum(src->topic),
	Int32GetDatum(partition), DateADTGetDatum(limit)};
	MemoryContext caller = CurrentMemoryContext;
	List	   *result = NIL;
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfoString(&sql,
						   "WITH u AS ("
						   "  SELECT readmit_of, pg_catalog.min(min_business_date) AS lo,"
						   "         pg_catalog.max(max_business_date) AS hi"
						   "  FROM kafka_lake.batches"
						   "  WHERE source_id = $1 AND topic = $2 AND partition = $3"
						   "    AND kind = 'readmit' AND expired_at IS NULL"
						   "  GROUP BY readmit_of),"
						   " e AS ("
						   "  SELECT b.batch_id, b.first_offset,"
						   "         LEAST(b.min_business_date, u.lo) AS lo,"
						   "         GREATEST(b.max_business_date, u.hi) AS hi, b.created_at"
						   "  FROM kafka_lake.batches b LEFT JOIN u ON u.readmit_of = b.batch_id"
						   "  WHERE b.source_id = $1 AND b.topic = $2 AND b.partition = $3"
						   "    AND b.kind = 'landing'"
						   "    AND (b.expired_at IS NULL OR u.readmit_of IS NOT NULL))"
						   " SELECT b.batch_id, b.first_offset, b.last_offset, b.record_count,"
						   " b.min_business_date, b.max_business_date,"
						   " b.file_bytes[1], b.file_bytes[2], b.file_bytes[3],"
						   " b.kind = 'readmit', b.readmit_of, ");
	appendStringInfoString(&sql, kl_catalog_has_compression() ? "b.compression" : "NULL::text");
	appendStringInfoString(&sql,
						   " FROM e JOIN kafka_lake.batches b"
						   "   ON b.source_id = $1 AND b.expired_at IS NULL"
						   "  AND (b.batch_id = e.batch_id"
						   "       OR (b.kind = 'readmit' AND b.readmit_of = e.batch_id))");
	if (closed_only)
		appendStringInfoString(&sql,
							   " WHERE e.hi < $4"
							   "   AND (SELECT pg_catalog.count(DISTINCT c.business_date)"
							   "        FROM kafka_lake.date_closings c"
							   "        WHERE c.source_id = $1 AND c.status = 'closed'"
							   "          AND c.business_date BETWEEN e.lo AND e.hi)"
							   "       = e.hi - e.lo + 1");
	else
		appendStringInfoString(&sql,
							   " WHERE (e.hi < $4"
							   "        OR (e.hi IS NULL AND e.created_at::pg_catalog.date < $4))");
	appendStringInfoString(&sql, " ORDER BY e.first_offset, b.kind, b.first_offset, b.batch_id");

	cs = kl_catalog_begin();
	if (SPI_execute_with_args(sql.data, 4, types, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.batches");
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tup = SPI_tuptable->vals[row];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(caller);
		KlBatch    *b = palloc0(sizeof(KlBatch));
		bool		isnull;
		Datum		d;

		strlcpy(b->batch_id, TextDatumGetCString(SPI_getbinval(tup, desc, 1, &isnull)),
				sizeof(b->batch_id));
		b->partition = partition;
		b->first_offset = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
		b->last_offset = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		b->record_count = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
		d = SPI_getbinval(tup, desc, 5, &isnull);
		if (!isnull)
		{
			b->has_dates = true;
			b->min_date = DatumGetDateADT(d);
			b->max_date = DatumGetDateADT(SPI_getbinval(tup, desc, 6, &isnull));
		}
		for (int i = 0; i < KL_NFILES; i++)
			b->files[i].bytes = DatumGetInt64(SPI_getbinval(tup, desc, 7 + i, &isnull));
		b->readmit = DatumGetBool(SPI_getbinval(tup, desc, 10, &isnull));
		d = SPI_getbinval(tup, desc, 11, &isnull);
		if (!isnull)
			text_to_cstring_buffer(DatumGetTextPP(d), b->readmit_of, sizeof(b->readmit_of));
		d = SPI_getbinval(tup, desc, 12, &isnull);
		b->compression = isnull ? KL_COMPRESS_NONE : kl_compression_of(TextDatumGetCString(d));
		result = lappend(result, b);
		MemoryContextSwitchTo(old);
	}
	kl_catalog_end(cs);
	return result;
}

/*
 * kl_catalog_has_horizon
 *		Does the catalog keep dedupe horizons (1.5 and later)?
 */
bool
kl_catalog_has_horizon(void)
{
	return get_attnum(kl_catalog_relid("sources"), "dedupe_horizon") != InvalidAttrNumber;
}

/*
 * kl_final_batch_sql
 *		The condition on a batch b of a source s (with the source_id in $1)
 *		that its event_ids are past the source's dedupe horizon at the
 *		timestamptz parameter now: every business date of it older than the
 *		horizon, and closed.  One rule for the pruning of event_ids and for
 *		the reduction of manifests that follows it.
 */
static char *
kl_final_batch_sql(const char *now)
{
	return psprintf("(s.dedupe_horizon IS NOT NULL"
					" AND b.max_business_date < (%s - s.dedupe_horizon)::pg_catalog.date"
					" AND NOT EXISTS (SELECT 1 FROM pg_catalog.generate_series(b.min_business_date::timestamp,"
					"                                 b.max_business_date::timestamp, interval '1 day') d"
					"                  WHERE NOT EXISTS (SELECT 1 FROM kafka_lake.date_closings c"
					"                                     WHERE c.source_id = $1 AND c.business_date = d::pg_catalog.date"
					"                                       AND c.status = 'closed')))", now);
}

/*
 * kl_catalog_prune_event_ids
 *		The source's dedupe horizon, applied: the accepted event_ids of the
 *		batches whose business dates are all older than the horizon (by the
 *		current date) and all closed (a certificate in effect, 'closed') leave
 *		kafka_lake.accepted_events, and those dates' certificates say so
 *		(event_ids_pruned_at).  Only closed dates lose them: a redelivery is
 *		then a late event of a date that is never reopened or closed again
 *		(KlDateState.final, bridge_closing.c and close.c), so no published
 *		gold can change.  Returns
 *		the event_ids removed, and the dates they were of (*lo, *hi).
 */
int64
kl_catalog_prune_event_ids(KlSource *src, TimestampTz now, DateADT *lo, DateADT *hi)
{
	Oid			types[2] = {INT4OID, TIMESTAMPTZOID};
	Datum		values[2] = {Int32GetDatum(src->source_id), TimestampTzGetDatum(now)};
	KlCatalogSave cs;
	int64		pruned = 0;
	bool		topics = kl_catalog_has_topic_lists();

	*lo = *hi = DATEVAL_NOEND;
	cs = kl_catalog_begin();
	if (SPI_execute_with_args(psprintf(
							  "WITH cand AS ("
							  "  SELECT CASE WHEN b.topic <> pg_catalog.split_part(s.topic, ',', 1) THEN b.topic END AS etopic,"
							  "         b.partition, b.first_offset, b.last_offset, b.min_business_date, b.max_business_date,"
							  "         %s AS final"
							  "    FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)"
							  "   WHERE b.source_id = $1 AND s.dedupe_horizon IS NOT NULL AND b.accepted_count > 0),"
							  " final AS (SELECT * FROM cand WHERE final),"
							  /* a coordinate a readmit unit re-judged into an open date stays */
							  " gone AS ("
							  "  DELETE FROM kafka_lake.accepted_events a USING final f"
							  "   WHERE a.source_id = $1 AND a.partition = f.partition AND %s"
							  "     AND a.\"offset\" BETWEEN f.first_offset AND f.last_offset"
							  "     AND NOT EXISTS (SELECT 1 FROM cand o WHERE NOT o.final AND o.partition = a.partition"
							  "                        AND %s AND a.\"offset\" BETWEEN o.first_offset AND o.last_offset)"
							  "  RETURNING 1),"
							  " marked AS ("
							  "  UPDATE kafka_lake.date_closings c SET event_ids_pruned_at = $2"
							  "    FROM final f"
							  "   WHERE c.source_id = $1 AND c.status = 'closed' AND c.event_ids_pruned_at IS NULL"
							  "     AND c.business_date BETWEEN f.min_business_date AND f.max_business_date)"
							  " SELECT (SELECT pg_catalog.count(*) FROM gone),"
							  "        (SELECT pg_catalog.min(min_business_date) FROM final),"
							  "        (SELECT pg_catalog.max(max_business_date) FROM final)",
							  kl_final_batch_sql("$2"),
							  topics ? "a.topic IS NOT DISTINCT FROM f.etopic" : "true",
							  topics ? "a.topic IS NOT DISTINCT FROM o.etopic" : "true"),
							  2, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not apply the dedupe horizon of source \"%s\"", src->source);
	{
		bool		isnull;
		Datum		d;

		pruned = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
		if (!isnull)
		{
			*lo = DatumGetDateADT(d);
			*hi = DatumGetDateADT(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
		}
	}
	kl_catalog_end(cs);
	return pruned;
}

/*
 * kl_catalog_set_dedupe_horizon
 *		A source's dedupe horizon (NULL: event_ids kept for good).
 */
void
kl_catalog_set_dedupe_horizon(KlSource *src, Interval *horizon)
{
	Oid			types[2] = {INT4OID, INTERVALOID};
	Datum		values[2] = {Int32GetDatum(src->source_id), IntervalPGetDatum(horizon)};
	KlCatalogSave cs;

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("UPDATE kafka_lake.sources SET dedupe_horizon = $2 WHERE source_id = $1",
							  2, types, values, horizon ? NULL : " n", false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not set the dedupe horizon of source \"%s\"", src->source);
	kl_catalog_end(cs);
}
