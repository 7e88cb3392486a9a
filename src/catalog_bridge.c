/*-------------------------------------------------------------------------
 *
 * catalog_bridge.c
 *	  The bridge's own tables of the catalog: adapter_versions, runs,
 *	  quality_results, snapshots and gold_daily_line_metrics, and what the
 *	  quality checks ask SQL about silver_machine_events.
 *
 * As in catalog.c, every statement runs in a catalog section
 * (kl_catalog_begin: as the extension's owner, search_path pinned) and the
 * bridge's phases get C values, never SQL.  Rows go in with one statement
 * each, several rows as arrays through unnest(): a run has eight check
 * results and a date a few gold rows, so no per-row SQL is worth avoiding
 * here (silver is written by bridge_silver.c, straight to the table).
 *
 * IDENTIFICATION
 *	  src/catalog_bridge.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "bridge.h"
#include "catalog.h"
#include "catalog_bridge.h"

/*
 * kl_spi_int8 / kl_spi_text
 *		A column of the first row of the last SPI result.
 */
static int64
kl_spi_int8(int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

static char *
kl_spi_text(int col)
{
	char	   *s = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col);

	return s ? s : "";
}

/*
 * kl_text_array
 *		A text[] of C strings.
 */
static Datum
kl_text_array(char **items, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		d[i] = CStringGetTextDatum(items[i]);
	return PointerGetDatum(construct_array(d, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * kl_int8_array
 *		An int8[] of a member of the gold groups.
 */
static Datum
kl_int8_array(KlBridge *b, size_t member_offset)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(b->ngroups, 1));

	for (int i = 0; i < b->ngroups; i++)
		d[i] = Int64GetDatum(*(int64 *) ((char *) &b->groups[i] + member_offset));
	return PointerGetDatum(construct_array(d, b->ngroups, INT8OID, 8, FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

/*
 * kl_catalog_record_adapter
 *		The adapter_versions row of b: true when this call created it, false
 *		when it existed (reused).
 */
bool
kl_catalog_record_adapter(KlBridge *b)
{
	KlCatalogSave cs;
	Oid			types[6] = {INT4OID, DATEOID, TEXTOID, INT4OID, INT8OID, TEXTOID};
	Datum		values[6];
	bool		created;

	values[0] = Int32GetDatum(b->src->source_id);
	values[1] = DateADTGetDatum(b->date);
	values[2] = CStringGetTextDatum(b->source_hash);
	values[3] = Int32GetDatum((int32) Min(b->selected, PG_INT32_MAX));
	values[4] = Int64GetDatum(b->csv_bytes);
	values[5] = CStringGetTextDatum(b->csv_relpath);

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("INSERT INTO kafka_lake.adapter_versions (source_id, business_date,"
							  " source_hash, event_count, csv_bytes, path)"
							  " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
							  6, types, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the adapter version");
	created = (SPI_processed == 1);
	kl_catalog_end(cs);
	return created;
}

/*
 * kl_catalog_extension_version
 *		The installed version of kafka_lake.
 */
char *
kl_catalog_extension_version(void)
{
	MemoryContext caller = CurrentMemoryContext;
	KlCatalogSave cs = kl_catalog_begin();
	char	   *version = NULL;

	if (SPI_execute("SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'kafka_lake'",
					true, 1) == SPI_OK_SELECT && SPI_processed == 1)
		version = MemoryContextStrdup(caller,
									  SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	kl_catalog_end(cs);
	return version ? version : pstrdup("unknown");
}

/*
 * kl_current_snapshot_now
 *		The current snapshot of the date, if any (inside a catalog section).
 */
static bool
kl_current_snapshot_now(KlBridge *b, int64 *snapshot_id)
{
	Oid			types[2] = {INT4OID, DATEOID};
	Datum		values[2] = {Int32GetDatum(b->src->source_id), DateADTGetDatum(b->date)};
	bool		isnull;

	if (SPI_execute_with_args("SELECT snapshot_id FROM kafka_lake.snapshots"
							  " WHERE source_id = $1 AND business_date = $2 AND is_current",
							  2, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.snapshots");
	if (SPI_processed == 0)
		return false;
	*snapshot_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											   1, &isnull));
	return true;
}

/*
 * kl_catalog_current_snapshot
 *		The current snapshot of the date, if any.
 */
bool
kl_catalog_current_snapshot(KlBridge *b, int64 *snapshot_id)
{
	KlCatalogSave cs = kl_catalog_begin();
	bool		has_snapshot = kl_current_snapshot_now(b, snapshot_id);

	kl_catalog_end(cs);
	return has_snapshot;
}

/*
 * kl_catalog_processed_run
 *		A processed run of this (source, date, source_hash), if any, with
 *		the date's current snapshot.  Read with a snapshot taken now, so a
 *		bridge that waited for the lock sees the run of the one it waited
 *		for.
 */
bool
kl_catalog_processed_run(KlBridge *b, KlPriorRun *prior)
{
	MemoryContext caller = CurrentMemoryContext;
	KlCatalogSave cs;
	Oid			types[3] = {INT4OID, DATEOID, TEXTOID};
	Datum		values[3];
	bool		found = false;

	values[0] = Int32GetDatum(b->src->source_id);
	values[1] = DateADTGetDatum(b->date);
	values[2] = CStringGetTextDatum(b->source_hash);

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("SELECT run_id, quality_passed, quality_total, silver_rows, gold_rows"
							  " FROM kafka_lake.runs"
							  " WHERE source_id = $1 AND business_date = $2 AND source_hash = $3"
							  " AND status = 'processed'",
							  3, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.runs");
	if (SPI_processed > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		found = true;
		prior->run_id = MemoryContextStrdup(caller, SPI_getvalue(tup, desc, 1));
		prior->quality_passed = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		prior->quality_total = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
		prior->silver_rows = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
		prior->gold_rows = DatumGetInt32(SPI_getbinval(tup, desc, 5, &isnull));
		prior->has_snapshot = kl_current_snapshot_now(b, &prior->snapshot_id);
	}
	kl_catalog_end(cs);
	return found;
}

/*
 * kl_catalog_silver_numbers
 *		What SQL says of a run's silver rows, for the quality checks
 *		(bridge_checks.c): one scan gives every number but the exact count
 *		of duplicate natural keys, and the installed columns of silver from
 *		pg_attribute.
 */
void
kl_catalog_silver_numbers(const char *run_id, KlSilverNumbers *out)
{
	KlCatalogSave cs;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(run_id)};
	int			gucs;

	/*
	 * One scan of the run's silver rows gives every number but the exact
	 * count of duplicate natural keys.  For that one, distinct 64-bit hashes
	 * of the keys prove that the keys are distinct (sorting a million
	 * integers is cheap); only when two hashes meet, which duplicates or a
	 * rare collision cause, are the keys themselves grouped.  The planner
	 * cannot know that the new run has a million rows (the statistics
	 * predate them) and would sort them to group: hash them instead, in
	 * memory.
	 */
	gucs = NewGUCNestLevel();
	(void) set_config_option("work_mem", "262144", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("enable_sort", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("SELECT count(*),"
							  " coalesce(sum(units_produced), 0)::text,"
							  " coalesce(sum(defect_count), 0)::text,"
							  " count(*) FILTER (WHERE num_nulls(event_id, event_time, business_date,"
							  "   plant_id, line_id, work_order_id, machine_id, product_code, operation,"
							  "   units_produced, defect_count, cycle_time_ms, schema_version, kafka_topic,"
							  "   kafka_partition, kafka_offset, kafka_record_fingerprint) > 0),"
							  " count(*) FILTER (WHERE operation IS NULL OR operation NOT IN"
							  "   ('assembly', 'inspection', 'packaging', 'welding', 'machining', 'calibration')),"
							  " count(*) FILTER (WHERE NOT (units_produced >= 0 AND defect_count >= 0"
							  "   AND defect_count <= units_produced AND cycle_time_ms > 0"
							  "   AND schema_version = 1)),"
							  " count(DISTINCT pg_catalog.hash_record_extended("
							  "   ROW(work_order_id, machine_id, event_time), 0))"
							  " FROM kafka_lake.silver_machine_events WHERE run_id = $1",
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not check kafka_lake.silver_machine_events");
	out->rows = kl_spi_int8(1);
	out->units = pstrdup(kl_spi_text(2));
	out->defects = pstrdup(kl_spi_text(3));
	out->bad_nulls = kl_spi_int8(4);
	out->bad_operations = kl_spi_int8(5);
	out->bad_ranges = kl_spi_int8(6);
	out->duplicate_rows = 0;
	if (kl_spi_int8(7) != out->rows)
	{
		if (SPI_execute_with_args("SELECT coalesce(sum(n - 1), 0)::bigint FROM"
								  " (SELECT count(*) AS n FROM kafka_lake.silver_machine_events"
								  "   WHERE run_id = $1"
								  "   GROUP BY work_order_id, machine_id, event_time"
								  "   HAVING count(*) > 1) d",
								  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not check kafka_lake.silver_machine_events");
		out->duplicate_rows = kl_spi_int8(1);
	}

	if (SPI_execute("SELECT string_agg(format('%s %s%s', a.attname,"
					"   pg_catalog.format_type(a.atttypid, a.atttypmod),"
					"   CASE WHEN a.attnotnull THEN ' not null' ELSE '' END), ', ' ORDER BY a.attnum)"
					" FROM pg_catalog.pg_attribute a"
					" WHERE a.attrelid = 'kafka_lake.silver_machine_events'::pg_catalog.regclass"
					" AND a.attnum > 0 AND NOT a.attisdropped",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the columns of kafka_lake.silver_machine_events");
	out->columns = pstrdup(kl_spi_text(1));
	kl_catalog_end(cs);
	AtEOXact_GUC(true, gucs);

}

/*
 * kl_catalog_record_run
 *		The run row and its check results.
 */
void
kl_catalog_record_run(KlBridge *b, const char *status, int gold_rows, bool has_snapshot,
					 int64 snapshot_id)
{
	Oid			rtypes[12] = {TEXTOID, INT4OID, DATEOID, TEXTOID, TEXTOID, INT4OID, INT4OID,
	INT4OID, INT4OID, INT4OID, INT8OID, TIMESTAMPTZOID};
	Datum		rvalues[12];
	char		rnulls[12];
	Oid			qtypes[6] = {TEXTOID, TEXTARRAYOID, BOOLARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
	TEXTARRAYOID};
	Datum		qvalues[6];
	char	   *names[KL_NCHECKS];
	char	   *expected[KL_NCHECKS];
	char	   *observed[KL_NCHECKS];
	char	   *detail[KL_NCHECKS];
	Datum		passed[KL_NCHECKS];
	KlCatalogSave cs;

	memset(rnulls, ' ', sizeof(rnulls));
	rvalues[0] = CStringGetTextDatum(b->run_id);
	rvalues[1] = Int32GetDatum(b->src->source_id);
	rvalues[2] = DateADTGetDatum(b->date);
	rvalues[3] = CStringGetTextDatum(b->source_hash);
	rvalues[4] = CStringGetTextDatum(status);
	rvalues[5] = Int32GetDatum((int32) Min(b->selected, PG_INT32_MAX));
	rvalues[6] = Int32GetDatum(b->passed);
	rvalues[7] = Int32GetDatum(KL_NCHECKS);
	rvalues[8] = Int32GetDatum((int32) Min(b->silver_rows, PG_INT32_MAX));
	rvalues[9] = Int32GetDatum(gold_rows);
	rvalues[10] = Int64GetDatum(snapshot_id);
	if (!has_snapshot)
		rnulls[10] = 'n';
	rvalues[11] = TimestampTzGetDatum(b->started_at);
	cs = kl_catalog_begin();
	if (SPI_execute_with_args("INSERT INTO kafka_lake.runs (run_id, source_id, business_date,"
							  " source_hash, status, selected_events, quality_passed, quality_total,"
							  " silver_rows, gold_rows, snapshot_id, started_at)"
							  " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
							  12, rtypes, rvalues, rnulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the run");

	for (int i = 0; i < KL_NCHECKS; i++)
	{
		names[i] = (char *) b->checks[i].name;
		expected[i] = b->checks[i].expected;
		observed[i] = b->checks[i].observed;
		detail[i] = b->checks[i].detail;
		passed[i] = BoolGetDatum(b->checks[i].passed);
	}
	qvalues[0] = CStringGetTextDatum(b->run_id);
	qvalues[1] = kl_text_array(names, KL_NCHECKS);
	qvalues[2] = PointerGetDatum(construct_array(passed, KL_NCHECKS, BOOLOID, 1, true,
												 TYPALIGN_CHAR));
	qvalues[3] = kl_text_array(expected, KL_NCHECKS);
	qvalues[4] = kl_text_array(observed, KL_NCHECKS);
	qvalues[5] = kl_text_array(detail, KL_NCHECKS);
	if (SPI_execute_with_args("INSERT INTO kafka_lake.quality_results (run_id, check_name, passed,"
							  " expected, observed, detail)"
							  " SELECT $1, q.check_name, q.passed, q.expected, q.observed, q.detail"
							  " FROM unnest($2, $3, $4, $5, $6)"
							  "   AS q(check_name, passed, expected, observed, detail)",
							  6, qtypes, qvalues, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the quality results");
	kl_catalog_end(cs);
}

/*
 * kl_catalog_next_snapshot_id
 *		A new snapshot_id.
 */
int64
kl_catalog_next_snapshot_id(void)
{
	KlCatalogSave cs = kl_catalog_begin();
	int64		snapshot_id;

	if (SPI_execute("SELECT nextval(pg_catalog.pg_get_serial_sequence('kafka_lake.snapshots', 'snapshot_id'))",
					false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not allocate a snapshot_id");
	snapshot_id = kl_spi_int8(1);
	kl_catalog_end(cs);
	return snapshot_id;
}

/*
 * kl_catalog_publish_snapshot
 *		The date's current snapshot stops being current, and snapshot_id
 *		(new, of the run) replaces it.
 */
void
kl_catalog_publish_snapshot(KlBridge *b, int64 snapshot_id)
{
	KlCatalogSave cs;
	int64		previous = 0;
	bool		has_previous = false;
	Oid			stypes[8] = {INT8OID, INT4OID, DATEOID, TEXTOID, TEXTOID, INT4OID, INT8OID,
	TEXTOID};
	Datum		svalues[8];
	char		snulls[8] = "        ";

	cs = kl_catalog_begin();
	/* the date's current snapshot stops being current ... */
	svalues[0] = Int64GetDatum(snapshot_id);
	svalues[1] = Int32GetDatum(b->src->source_id);
	svalues[2] = DateADTGetDatum(b->date);
	svalues[3] = CStringGetTextDatum(b->run_id);
	svalues[4] = CStringGetTextDatum(b->source_hash);
	svalues[5] = Int32GetDatum(b->ngroups);
	if (SPI_execute_with_args("UPDATE kafka_lake.snapshots SET is_current = false"
							  " WHERE source_id = $2 AND business_date = $3 AND is_current"
							  " RETURNING snapshot_id",
							  3, stypes, svalues, NULL, false, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not update kafka_lake.snapshots");
	if (SPI_processed > 0)
	{
		has_previous = true;
		previous = kl_spi_int8(1);
	}
	svalues[6] = Int64GetDatum(previous);
	if (!has_previous)
		snulls[6] = 'n';

	/*
	 * ... and the new one replaces it, with the closing status of a date
	 * that was ever closed (the column's default, 'provisional', otherwise:
	 * a database at 1.0 has no such column)
	 */
	svalues[7] = b->closing_status ? CStringGetTextDatum(b->closing_status) : (Datum) 0;
	if (SPI_execute_with_args(b->closing_status ?
							  "INSERT INTO kafka_lake.snapshots (snapshot_id, source_id,"
							  " business_date, run_id, source_hash, gold_rows, replaces_snapshot_id,"
							  " closing_status)"
							  " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)" :
							  "INSERT INTO kafka_lake.snapshots (snapshot_id, source_id,"
							  " business_date, run_id, source_hash, gold_rows, replaces_snapshot_id)"
							  " VALUES ($1, $2, $3, $4, $5, $6, $7)",
							  b->closing_status ? 8 : 7, stypes, svalues, snulls,
							  false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the snapshot");

	kl_catalog_end(cs);
}

/*
 * kl_catalog_insert_gold
 *		The gold rows of snapshot_id, one per group of b (rates[i] and
 *		averages[i]: the group's defect_rate and avg_cycle_time_ms as
 *		decimal text), with the closing status of b (provisional unless
 *		the date was ever closed, see bridge_closing.c).
 */
void
kl_catalog_insert_gold(KlBridge *b, int64 snapshot_id, char **rates, char **averages)
{
	KlCatalogSave cs;
	Oid			gtypes[10] = {INT8OID, DATEOID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
	INT8ARRAYOID, INT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID, TEXTOID};
	Datum		gvalues[10];
	char	  **plants = palloc(sizeof(char *) * Max(b->ngroups, 1));
	char	  **lines = palloc(sizeof(char *) * Max(b->ngroups, 1));
	char	  **products = palloc(sizeof(char *) * Max(b->ngroups, 1));

	for (int i = 0; i < b->ngroups; i++)
	{
		plants[i] = b->groups[i].plant_id;
		lines[i] = b->groups[i].line_id;
		products[i] = b->groups[i].product_code;
	}
	gvalues[0] = Int64GetDatum(snapshot_id);
	gvalues[1] = DateADTGetDatum(b->date);
	gvalues[2] = kl_text_array(plants, b->ngroups);
	gvalues[3] = kl_text_array(lines, b->ngroups);
	gvalues[4] = kl_text_array(products, b->ngroups);
	gvalues[5] = kl_int8_array(b, offsetof(KlGoldGroup, units));
	gvalues[6] = kl_int8_array(b, offsetof(KlGoldGroup, defects));
	gvalues[7] = kl_text_array(rates, b->ngroups);
	gvalues[8] = kl_text_array(averages, b->ngroups);
	gvalues[9] = CStringGetTextDatum(b->closing_status ? b->closing_status : "provisional");
	cs = kl_catalog_begin();
	if (SPI_execute_with_args("INSERT INTO kafka_lake.gold_daily_line_metrics (snapshot_id,"
							  " business_date, plant_id, line_id, product_code, units_produced,"
							  " defect_count, defect_rate, avg_cycle_time_ms, closing_status)"
							  " SELECT $1, $2, g.plant_id, g.line_id, g.product_code, g.units, g.defects,"
							  "   g.defect_rate::pg_catalog.numeric, g.average::pg_catalog.numeric, $10"
							  " FROM unnest($3, $4, $5, $6, $7, $8, $9)"
							  "   AS g(plant_id, line_id, product_code, units, defects, defect_rate, average)",
							  10, gtypes, gvalues, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the gold rows");
	kl_catalog_end(cs);
}
