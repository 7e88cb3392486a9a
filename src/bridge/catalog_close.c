/*-------------------------------------------------------------------------
 *
 * catalog_close.c
 *	  The closing of business dates in the catalog: the certificates
 *	  (date_closings, one row per close_date() that closed a date, and
 *	  date_closing_partitions, the offset and record timestamp through which
 *	  each partition is known complete), the state of a date (its current
 *	  snapshot and its certificate), and snapshots published again under
 *	  another closing status.
 *
 * A certificate is "closed" while the date's current snapshot is the one it
 * certified, "reopened" once bridge(..., reopen => true) published a
 * correction after it, and "superseded" once a later close_date() of the
 * date certified again (superseded_by).  At most one certificate of a date
 * is not superseded (a partial unique index).
 *
 * Gold rows are immutable per snapshot: a snapshot whose numbers stand but
 * whose closing status changes (a provisional date closed as it is, a
 * closed date reopened to an input processed before) is published again as
 * a new snapshot with a copy of the gold rows under the new status, which
 * replaces the date's current one.  The older snapshot stays readable
 * through gold_as_of() with the status it was published with.
 *
 * As in catalog.c, every statement runs in a catalog section
 * (kl_catalog_begin: as the extension's owner, search_path pinned).
 *
 * IDENTIFICATION
 *	  src/bridge/catalog_close.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "bridge/catalog_bridge.h"
#include "bridge/catalog_close.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/catalog_lifecycle.h"

/*
 * kl_spi_exec_or_fail
 *		Run a parameterised statement and check its result code.
 */
static void
kl_spi_exec_or_fail(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls,
					int expected, const char *what)
{
	if (SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0) != expected)
		elog(ERROR, "could not %s", what);
}

/*
 * kl_spi_col
 *		Column col of row row of the last SPI result, and whether it is null.
 */
static Datum
kl_spi_col(uint64 row, int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull);
}

/*
 * kl_spi_string
 *		A text column as a string in cxt (NULL for null).
 */
static char *
kl_spi_string(uint64 row, int col, MemoryContext cxt)
{
	char	   *v = SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);

	return v ? MemoryContextStrdup(cxt, v) : NULL;
}

/*
 * kl_catalog_date_state
 *		The date's current snapshot, if any, and its certificate not
 *		superseded, if any, under a snapshot taken now.
 */
void
kl_catalog_date_state(int32 source_id, DateADT date, KlDateState *st)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			types[2] = {INT4OID, DATEOID};
	Datum		values[2] = {Int32GetDatum(source_id), DateADTGetDatum(date)};
	KlCatalogSave cs;
	bool		isnull;

	memset(st, 0, sizeof(*st));
	cs = kl_catalog_begin();
	kl_spi_exec_or_fail("SELECT snapshot_id, source_hash, run_id, closing_status"
						" FROM kafka_lake.snapshots"
						" WHERE source_id = $1 AND business_date = $2 AND is_current",
						2, types, values, NULL, SPI_OK_SELECT, "read kafka_lake.snapshots");
	if (SPI_processed > 0)
	{
		st->has_current = true;
		st->snapshot_id = DatumGetInt64(kl_spi_col(0, 1, &isnull));
		st->source_hash = kl_spi_string(0, 2, caller);
		st->run_id = kl_spi_string(0, 3, caller);
		st->closing_status = kl_spi_string(0, 4, caller);
	}
	kl_spi_exec_or_fail(kl_catalog_has_horizon() ?
						"SELECT closing_id, status, event_ids_pruned_at IS NOT NULL FROM kafka_lake.date_closings"
						" WHERE source_id = $1 AND business_date = $2 AND status <> 'superseded'" :
						"SELECT closing_id, status, false FROM kafka_lake.date_closings"
						" WHERE source_id = $1 AND business_date = $2 AND status <> 'superseded'",
						2, types, values, NULL, SPI_OK_SELECT, "read kafka_lake.date_closings");
	if (SPI_processed > 0)
	{
		st->has_closing = true;
		st->closing_id = DatumGetInt64(kl_spi_col(0, 1, &isnull));
		st->closing_state = kl_spi_string(0, 2, caller);
		st->final = DatumGetBool(kl_spi_col(0, 3, &isnull));
	}
	kl_catalog_end(cs);
}

/*
 * kl_catalog_run_snapshot
 *		The snapshot a processed run published.
 */
int64
kl_catalog_run_snapshot(const char *run_id)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(run_id)};
	KlCatalogSave cs;
	bool		isnull = true;
	int64		snapshot_id = 0;

	cs = kl_catalog_begin();
	kl_spi_exec_or_fail("SELECT snapshot_id FROM kafka_lake.runs WHERE run_id = $1",
						1, types, values, NULL, SPI_OK_SELECT, "read kafka_lake.runs");
	if (SPI_processed > 0)
		snapshot_id = DatumGetInt64(kl_spi_col(0, 1, &isnull));
	kl_catalog_end(cs);
	if (isnull)
		elog(ERROR, "processed run %s has no snapshot", run_id);
	return snapshot_id;
}

/*
 * kl_catalog_republish_snapshot
 *		A new snapshot of the date with the run, source_hash and gold rows of
 *		snapshot from_snapshot, under another closing status; it replaces the
 *		date's current snapshot.  Returns its id.
 */
int64
kl_catalog_republish_snapshot(int32 source_id, DateADT date, int64 from_snapshot,
							  const char *closing_status)
{
	Oid			types[6] = {INT8OID, INT4OID, DATEOID, INT8OID, TEXTOID, INT8OID};
	Datum		values[6];
	char		nulls[6] = "      ";
	KlCatalogSave cs;
	bool		isnull;
	int64		snapshot_id;

	cs = kl_catalog_begin();
	if (SPI_execute("SELECT pg_catalog.nextval(pg_catalog.pg_get_serial_sequence('kafka_lake.snapshots', 'snapshot_id'))",
					false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not allocate a snapshot_id");
	snapshot_id = DatumGetInt64(kl_spi_col(0, 1, &isnull));

	values[0] = Int64GetDatum(snapshot_id);
	values[1] = Int32GetDatum(source_id);
	values[2] = DateADTGetDatum(date);
	values[4] = CStringGetTextDatum(closing_status);
	values[5] = Int64GetDatum(from_snapshot);

	/* the date's current snapshot stops being current ... */
	kl_spi_exec_or_fail("UPDATE kafka_lake.snapshots SET is_current = false"
						" WHERE source_id = $2 AND business_date = $3 AND is_current"
						" RETURNING snapshot_id",
						3, types, values, NULL, SPI_OK_UPDATE_RETURNING,
						"update kafka_lake.snapshots");
	if (SPI_processed > 0)
		values[3] = Int64GetDatum(DatumGetInt64(kl_spi_col(0, 1, &isnull)));
	else
	{
		values[3] = (Datum) 0;
		nulls[3] = 'n';
	}

	/* ... and a copy of from_snapshot, under the new status, replaces it */
	kl_spi_exec_or_fail("INSERT INTO kafka_lake.snapshots (snapshot_id, source_id,"
						" business_date, run_id, source_hash, gold_rows, replaces_snapshot_id,"
						" closing_status)"
						" SELECT $1, $2, $3, f.run_id, f.source_hash, f.gold_rows, $4, $5"
						" FROM kafka_lake.snapshots f WHERE f.snapshot_id = $6",
						6, types, values, nulls, SPI_OK_INSERT, "record the snapshot");
	if (SPI_processed != 1)
		elog(ERROR, "snapshot " INT64_FORMAT " to publish again does not exist", from_snapshot);
	kl_spi_exec_or_fail("INSERT INTO kafka_lake.gold_daily_line_metrics (snapshot_id,"
						" business_date, plant_id, line_id, product_code, units_produced,"
						" defect_count, defect_rate, avg_cycle_time_ms, closing_status)"
						" SELECT $1, g.business_date, g.plant_id, g.line_id, g.product_code,"
						"   g.units_produced, g.defect_count, g.defect_rate, g.avg_cycle_time_ms, $5"
						" FROM kafka_lake.gold_daily_line_metrics g WHERE g.snapshot_id = $6",
						6, types, values, nulls, SPI_OK_INSERT, "record the gold rows");
	kl_catalog_end(cs);
	kl_catalog_copy_golds(source_id, from_snapshot, snapshot_id, closing_status);
	return snapshot_id;
}

/*
 * kl_catalog_mark_reopened
 *		A correction (snapshot_id) was published after a certificate.
 */
void
kl_catalog_mark_reopened(int64 closing_id, int64 snapshot_id)
{
	Oid			types[2] = {INT8OID, INT8OID};
	Datum		values[2] = {Int64GetDatum(closing_id), Int64GetDatum(snapshot_id)};
	KlCatalogSave cs;

	cs = kl_catalog_begin();
	kl_spi_exec_or_fail("UPDATE kafka_lake.date_closings"
						" SET status = 'reopened', reopened_by_snapshot_id = $2"
						" WHERE closing_id = $1",
						2, types, values, NULL, SPI_OK_UPDATE, "update kafka_lake.date_closings");
	kl_catalog_end(cs);
}

/*
 * kl_catalog_last_batch_below
 *		The batch of a partition that holds the highest landed offset below
 *		mark (batches never overlap: the one that starts last below it), into
 *		batch_id (KL_BATCH_ID_LEN + 1 bytes).  False when none does.  Readmit
 *		units are not taken: they repeat coordinates of their batch, whose
 *		manifest lists them all.
 */
bool
kl_catalog_last_batch_below(KlSource *src, int32 partition, int64 mark, char *batch_id)
{
	Oid			types[4] = {INT4OID, TEXTOID, INT4OID, INT8OID};
	Datum		values[4] = {Int32GetDatum(src->source_id), CStringGetTextDatum(src->topic),
	Int32GetDatum(partition), Int64GetDatum(mark)};
	KlCatalogSave cs;
	bool		found = false;

	cs = kl_catalog_begin();
	/* a landing batch: a readmit unit repeats coordinates of its batch */
	kl_spi_exec_or_fail("SELECT batch_id FROM kafka_lake.batches"
						" WHERE source_id = $1 AND topic = $2 AND partition = $3 AND first_offset < $4"
						"   AND kind = 'landing'"
						" ORDER BY first_offset DESC LIMIT 1",
						4, types, values, NULL, SPI_OK_SELECT, "read kafka_lake.batches");
	if (SPI_processed > 0)
	{
		strlcpy(batch_id, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
				KL_BATCH_ID_LEN + 1);
		found = true;
	}
	kl_catalog_end(cs);
	return found;
}

/*
 * kl_catalog_closing_owned_matches
 *		Does certificate closing_id say of each partition that the source
 *		owned it exactly as src owns it now (set_partitions)?  Always, in a
 *		catalog without owned partitions.
 */
bool
kl_catalog_closing_owned_matches(int64 closing_id, const KlSource *src)
{
	Oid			types[2] = {INT8OID, INT4ARRAYOID};
	Datum		values[2] = {Int64GetDatum(closing_id), (Datum) 0};
	char		nulls[2] = {' ', src->npartitions == 0 ? 'n' : ' '};
	KlCatalogSave cs;
	bool		isnull;
	bool		matches;

	if (!kl_catalog_has_partitions())
		return true;
	if (src->npartitions > 0)
		values[1] = kl_int32_array(src->partitions, src->npartitions);
	cs = kl_catalog_begin();
	kl_spi_exec_or_fail("SELECT NOT EXISTS (SELECT 1 FROM kafka_lake.date_closing_partitions"
						"  WHERE closing_id = $1"
						"    AND owned IS DISTINCT FROM ($2 IS NULL OR partition = ANY ($2)))",
						2, types, values, nulls, SPI_OK_SELECT, "read the certificate's partitions");
	matches = DatumGetBool(kl_spi_col(0, 1, &isnull));
	kl_catalog_end(cs);
	return matches;
}

/*
 * kl_catalog_closes_empty_shares
 *		May a certificate select no event (1.12: the empty share of a server
 *		that owns some of the topic's partitions)?  A 1.11 catalog's check
 *		refuses it.
 */
bool
kl_catalog_closes_empty_shares(void)
{
	KlCatalogSave cs = kl_catalog_begin();
	bool		isnull;
	bool		allowed;

	kl_spi_exec_or_fail("SELECT NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint"
						"  WHERE conrelid = 'kafka_lake.date_closings'::pg_catalog.regclass"
						"    AND conname = 'date_closings_selected_events_check')",
						0, NULL, NULL, NULL, SPI_OK_SELECT, "read the certificates' constraints");
	allowed = DatumGetBool(kl_spi_col(0, 1, &isnull));
	kl_catalog_end(cs);
	return allowed;
}

/*
 * kl_catalog_record_closing
 *		Record a certificate with its partitions, in place of the date's
 *		certificate in effect (superseded by it).  Returns its closing_id.
 */
int64
kl_catalog_record_closing(const KlClosing *c)
{
	Oid			types[13] = {INT8OID, INT4OID, DATEOID, INT8OID, TEXTOID, INT4OID,
	TIMESTAMPTZOID, TEXTOID, INT8ARRAYOID, INT8ARRAYOID, TEXTARRAYOID, INT4ARRAYOID, BOOLARRAYOID};
	Datum		values[13];
	char		nulls[13] = "             ";
	Datum	   *owned = palloc(sizeof(Datum) * Max(c->nparts, 1));
	bool		has_owned = kl_catalog_has_partitions();
	Datum	   *through = palloc(sizeof(Datum) * Max(c->nparts, 1));
	Datum	   *topics = palloc(sizeof(Datum) * Max(c->nparts, 1));
	Datum	   *parts = palloc(sizeof(Datum) * Max(c->nparts, 1));
	Datum	   *stamps = palloc(sizeof(Datum) * Max(c->nparts, 1));
	bool	   *stamp_nulls = palloc(sizeof(bool) * Max(c->nparts, 1));
	int			dims[1] = {c->nparts};
	int			lbs[1] = {1};
	KlCatalogSave cs;
	bool		isnull;
	int64		closing_id;
	int64		previous;

	for (int p = 0; p < c->nparts; p++)
	{
		through[p] = Int64GetDatum(c->through_offset[p]);
		stamps[p] = Int64GetDatum(c->through_timestamp_ms[p]);
		stamp_nulls[p] = (c->through_timestamp_ms[p] < 0);
		topics[p] = CStringGetTextDatum(c->slot_topic[p]);
		parts[p] = Int32GetDatum(c->slot_partition[p]);
		owned[p] = BoolGetDatum(c->slot_owned == NULL || c->slot_owned[p]);
	}

	cs = kl_catalog_begin();
	if (SPI_execute("SELECT pg_catalog.nextval(pg_catalog.pg_get_serial_sequence('kafka_lake.date_closings', 'closing_id'))",
					false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not allocate a closing_id");
	closing_id = DatumGetInt64(kl_spi_col(0, 1, &isnull));

	values[0] = Int64GetDatum(closing_id);
	values[1] = Int32GetDatum(c->source_id);
	values[2] = DateADTGetDatum(c->business_date);
	values[3] = Int64GetDatum(c->snapshot_id);
	values[4] = CStringGetTextDatum(c->source_hash);
	values[5] = Int32GetDatum(c->selected_events);
	values[6] = TimestampTzGetDatum(c->cutoff);
	if (!c->has_cutoff)
		nulls[6] = 'n';
	values[7] = CStringGetTextDatum(c->closed_by);
	values[8] = PointerGetDatum(construct_md_array(through, NULL, 1, dims, lbs, INT8OID, 8,
												   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[9] = PointerGetDatum(construct_md_array(stamps, stamp_nulls, 1, dims, lbs, INT8OID, 8,
												   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[10] = PointerGetDatum(construct_md_array(topics, NULL, 1, dims, lbs, TEXTOID, -1,
													false, TYPALIGN_INT));
	values[11] = PointerGetDatum(construct_md_array(parts, NULL, 1, dims, lbs, INT4OID, 4,
													true, TYPALIGN_INT));
	values[12] = PointerGetDatum(construct_md_array(owned, NULL, 1, dims, lbs, BOOLOID, 1,
													true, TYPALIGN_CHAR));

	/*
	 * The certificate in effect is superseded by the new one: it steps down
	 * first (one per date is in effect), and names its successor once that
	 * exists (a deferred foreign key cannot be checked in a catalog
	 * section, which is a security-restricted operation).
	 */
	kl_spi_exec_or_fail("UPDATE kafka_lake.date_closings SET status = 'superseded'"
						" WHERE source_id = $2 AND business_date = $3 AND status <> 'superseded'"
						" RETURNING closing_id",
						3, types, values, nulls, SPI_OK_UPDATE_RETURNING,
						"update kafka_lake.date_closings");
	previous = (SPI_processed > 0) ? DatumGetInt64(kl_spi_col(0, 1, &isnull)) : -1;
	kl_spi_exec_or_fail("INSERT INTO kafka_lake.date_closings (closing_id, source_id, business_date,"
						" snapshot_id, source_hash, selected_events, cutoff, closed_by, closed_at)"
						" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, pg_catalog.clock_timestamp())",
						8, types, values, nulls, SPI_OK_INSERT, "record the certificate");
	if (previous >= 0)
	{
		Oid			ptypes[2] = {INT8OID, INT8OID};
		Datum		pvalues[2] = {Int64GetDatum(closing_id), Int64GetDatum(previous)};

		kl_spi_exec_or_fail("UPDATE kafka_lake.date_closings SET superseded_by = $1 WHERE closing_id = $2",
							2, ptypes, pvalues, NULL, SPI_OK_UPDATE, "update kafka_lake.date_closings");
	}
	/*
	 * A catalog before 1.6 has no topic column (its sources have one topic),
	 * one before 1.11 no owned column (its sources own every partition).
	 */
	kl_spi_exec_or_fail(psprintf("INSERT INTO kafka_lake.date_closing_partitions (closing_id, %spartition,"
								 " through_offset, through_timestamp_ms%s)"
								 " SELECT $1, %su.partition, u.through, u.stamp%s"
								 " FROM ROWS FROM (pg_catalog.unnest($9), pg_catalog.unnest($10),"
								 "                 pg_catalog.unnest($11), pg_catalog.unnest($12),"
								 "                 pg_catalog.unnest($13))"
								 "   AS u(through, stamp, topic, partition, owned)",
								 kl_catalog_has_topic_lists() ? "topic, " : "",
								 has_owned ? ", owned" : "",
								 kl_catalog_has_topic_lists() ? "u.topic, " : "",
								 has_owned ? ", u.owned" : ""),
						13, types, values, nulls, SPI_OK_INSERT, "record the certificate's partitions");
	kl_catalog_end(cs);
	return closing_id;
}

/*
 * kl_closings_from_spi
 *		The certificates of the last SPI result: closing_id, source_id,
 *		source, business_date, snapshot_id, source_hash, selected_events,
 *		cutoff, closed_by, closed_at, status, through_offset[],
 *		through_timestamp_ms[] (by partition, from 0).
 */
static List *
kl_closings_from_spi(MemoryContext cxt)
{
	List	   *result = NIL;

	for (uint64 row = 0; row < SPI_processed; row++)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);
		KlClosing  *c = palloc0(sizeof(KlClosing));
		bool		isnull;
		Datum		d;
		Datum	   *elems;
		bool	   *elem_nulls;
		int			n;

		c->closing_id = DatumGetInt64(kl_spi_col(row, 1, &isnull));
		c->source_id = DatumGetInt32(kl_spi_col(row, 2, &isnull));
		c->source = kl_spi_string(row, 3, cxt);
		c->business_date = DatumGetDateADT(kl_spi_col(row, 4, &isnull));
		c->snapshot_id = DatumGetInt64(kl_spi_col(row, 5, &isnull));
		c->source_hash = kl_spi_string(row, 6, cxt);
		c->selected_events = DatumGetInt32(kl_spi_col(row, 7, &isnull));
		d = kl_spi_col(row, 8, &isnull);
		c->has_cutoff = !isnull;
		c->cutoff = isnull ? 0 : DatumGetTimestampTz(d);
		c->closed_by = kl_spi_string(row, 9, cxt);
		c->closed_at = DatumGetTimestampTz(kl_spi_col(row, 10, &isnull));
		c->status = kl_spi_string(row, 11, cxt);

		d = kl_spi_col(row, 14, &isnull);
		deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, &elem_nulls, &n);
		c->slot_topic = palloc(sizeof(char *) * Max(n, 1));
		c->slot_partition = palloc(sizeof(int32) * Max(n, 1));
		for (int i = 0; i < n; i++)
			c->slot_topic[i] = TextDatumGetCString(elems[i]);
		d = kl_spi_col(row, 15, &isnull);
		deconstruct_array(DatumGetArrayTypeP(d), INT4OID, 4, true, TYPALIGN_INT,
						  &elems, &elem_nulls, &n);
		for (int i = 0; i < n; i++)
			c->slot_partition[i] = DatumGetInt32(elems[i]);

		d = kl_spi_col(row, 12, &isnull);
		deconstruct_array(DatumGetArrayTypeP(d), INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
						  &elems, &elem_nulls, &n);
		c->nparts = n;
		c->through_offset = palloc(sizeof(int64) * Max(n, 1));
		for (int i = 0; i < n; i++)
			c->through_offset[i] = elem_nulls[i] ? -1 : DatumGetInt64(elems[i]);
		d = kl_spi_col(row, 13, &isnull);
		deconstruct_array(DatumGetArrayTypeP(d), INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
						  &elems, &elem_nulls, &n);
		c->through_timestamp_ms = palloc(sizeof(int64) * Max(c->nparts, 1));
		for (int i = 0; i < c->nparts; i++)
			c->through_timestamp_ms[i] = (i >= n || elem_nulls[i]) ? -1 : DatumGetInt64(elems[i]);
		result = lappend(result, c);
		MemoryContextSwitchTo(old);
	}
	return result;
}

/*
 * kl_closing_columns
 *		The query kl_closings_from_spi reads, for certificates c: closing_id
 *		to status, then per slot (every partition of each topic from 0 to
 *		the highest with a row, topics in the source's order) through_offset,
 *		through_timestamp_ms, topic and partition.  A catalog before 1.6 has
 *		no topic column: its rows are of the source's only topic.
 */
static const char *
kl_closing_columns(void)
{
	const char *topic = kl_catalog_has_topic_lists() ? "m.topic" :
		"pg_catalog.split_part(s.topic, ',', 1)";
	const char *same_topic = kl_catalog_has_topic_lists() ? "t.topic = g.topic" : "true";

	return psprintf("SELECT c.closing_id, c.source_id, s.source, c.business_date, c.snapshot_id,"
					" c.source_hash, c.selected_events, c.cutoff, c.closed_by, c.closed_at, c.status,"
					" coalesce(x.through, '{}'), coalesce(x.stamps, '{}'),"
					" coalesce(x.topics, '{}'), coalesce(x.parts, '{}')"
					" FROM kafka_lake.date_closings c JOIN kafka_lake.sources s USING (source_id)"
					" LEFT JOIN LATERAL ("
					"   SELECT pg_catalog.array_agg(t.through_offset ORDER BY g.ord, g.p) AS through,"
					"          pg_catalog.array_agg(t.through_timestamp_ms ORDER BY g.ord, g.p) AS stamps,"
					"          pg_catalog.array_agg(g.topic ORDER BY g.ord, g.p) AS topics,"
					"          pg_catalog.array_agg(g.p ORDER BY g.ord, g.p) AS parts"
					"   FROM (SELECT %s AS topic,"
					"                pg_catalog.array_position(pg_catalog.string_to_array(s.topic, ','), %s) AS ord,"
					"                pg_catalog.generate_series(0, pg_catalog.max(m.partition)) AS p"
					"           FROM kafka_lake.date_closing_partitions m"
					"          WHERE m.closing_id = c.closing_id GROUP BY 1, 2) AS g"
					"   LEFT JOIN kafka_lake.date_closing_partitions t"
					"     ON t.closing_id = c.closing_id AND %s AND t.partition = g.p) AS x ON true",
					topic, topic, same_topic);
}

/*
 * kl_closing_slot
 *		The slot of a certificate that is partition p of topic; -1: none.
 */
int
kl_closing_slot(const KlClosing *c, const char *topic, int32 partition)
{
	for (int i = 0; i < c->nparts; i++)
	{
		if (c->slot_partition[i] == partition && strcmp(c->slot_topic[i], topic) == 0)
			return i;
	}
	return -1;
}

/*
 * kl_catalog_closing
 *		One certificate.
 */
KlClosing *
kl_catalog_closing(int64 closing_id)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(closing_id)};
	KlCatalogSave cs;
	List	   *result;

	cs = kl_catalog_begin();
	kl_spi_exec_or_fail(psprintf("%s WHERE c.closing_id = $1", kl_closing_columns()),
						1, types, values, NULL, SPI_OK_SELECT, "read kafka_lake.date_closings");
	result = kl_closings_from_spi(caller);
	kl_catalog_end(cs);
	if (result == NIL)
		elog(ERROR, "certificate " INT64_FORMAT " does not exist", closing_id);
	return linitial(result);
}

/*
 * kl_catalog_closings_in_effect
 *		Every certificate not superseded, of every source, by source and
 *		date.
 */
List *
kl_catalog_closings_in_effect(void)
{
	MemoryContext caller = CurrentMemoryContext;
	KlCatalogSave cs;
	List	   *result;

	cs = kl_catalog_begin();
	if (SPI_execute(psprintf("%s WHERE c.status <> 'superseded' ORDER BY s.source, c.business_date",
							 kl_closing_columns()), true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.date_closings");
	result = kl_closings_from_spi(caller);
	kl_catalog_end(cs);
	return result;
}
