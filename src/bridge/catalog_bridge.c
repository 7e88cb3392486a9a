/*-------------------------------------------------------------------------
 *
 * catalog_bridge.c
 *	  The bridge's own tables of the catalog: adapter_versions, runs,
 *	  quality_results, snapshots and the gold tables, and what the quality
 *	  checks ask SQL about silver.
 *
 * As in catalog.c, every statement runs in a catalog section
 * (kl_catalog_begin: as the extension's owner, search_path pinned) and the
 * bridge's phases get C values, never SQL.  Rows go in with one statement
 * each, several rows as arrays through unnest(): a run has a few check
 * results and a date's gold few rows, so no per-row SQL is worth avoiding
 * here (silver is written by bridge_silver.c, straight to the table).
 *
 * IDENTIFICATION
 *	  src/bridge/catalog_bridge.c
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
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/syscache.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "base/builtin_types.h"
#include "bridge/bridge.h"
#include "bridge/catalog_bridge.h"
#include "kl_catalog/catalog.h"

static char *kl_grain_words(const KlLayout *lay, const KlGoldDef *g);

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
 * kl_catalog_current_is_input
 *		Was the date's current snapshot made from this input (source_hash)?
 *		True when the date has none.
 */
bool
kl_catalog_current_is_input(KlBridge *b)
{
	KlCatalogSave cs = kl_catalog_begin();
	Oid			types[3] = {INT4OID, DATEOID, TEXTOID};
	Datum		values[3] = {Int32GetDatum(b->src->source_id), DateADTGetDatum(b->date),
	CStringGetTextDatum(b->source_hash)};
	bool		same;

	if (SPI_execute_with_args("SELECT source_hash = $3 FROM kafka_lake.snapshots"
							  " WHERE source_id = $1 AND business_date = $2 AND is_current",
							  3, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.snapshots");
	if (SPI_processed == 0)
		same = true;
	else
	{
		bool		isnull;

		same = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	kl_catalog_end(cs);
	return same;
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
 * kl_catalog_check_query
 *		Run one query of the quality checks over a run's silver rows ($1 is
 *		the run_id) and return its one row as text (ncols values, NULL for a
 *		null).  The planner cannot know that the new run has a million rows
 *		(the statistics predate them) and would pick its plan for a few; so
 *		work_mem is large enough to keep them in memory, and what is grouped
 *		is grouped as the query needs: sort_distinct sorts (a DISTINCT of
 *		the key hashes, sorted by each parallel worker and merged, then
 *		counted), otherwise hashing (grouping the rare duplicates).
 */
char **
kl_catalog_check_query(const char *sql, const char *run_id, bool sort_distinct, int *ncols)
{
	MemoryContext caller = CurrentMemoryContext;
	KlCatalogSave cs;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(run_id)};
	int			gucs;
	char	  **out;

	gucs = NewGUCNestLevel();
	(void) set_config_option("work_mem", "262144", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option(sort_distinct ? "enable_hashagg" : "enable_sort", "off",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	cs = kl_catalog_begin();
	if (SPI_execute_with_args(sql, 1, types, values, NULL, false, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not check the silver rows of run %s", run_id);
	*ncols = SPI_tuptable->tupdesc->natts;
	out = MemoryContextAlloc(caller, sizeof(char *) * *ncols);
	for (int i = 0; i < *ncols; i++)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, i + 1);

		out[i] = v ? MemoryContextStrdup(caller, v) : NULL;
	}
	kl_catalog_end(cs);
	AtEOXact_GUC(true, gucs);
	return out;
}

/*
 * kl_catalog_silver_columns
 *		A table's columns as pg_attribute has them: "name type[ not null]",
 *		comma-separated (the schema_drift check).
 */
char *
kl_catalog_silver_columns(const char *relname)
{
	MemoryContext caller = CurrentMemoryContext;
	KlCatalogSave cs;
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(kl_catalog_relid(relname))};
	char	   *columns;

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("SELECT string_agg(format('%s %s%s', a.attname,"
							  "   pg_catalog.format_type(a.atttypid, a.atttypmod),"
							  "   CASE WHEN a.attnotnull THEN ' not null' ELSE '' END), ', ' ORDER BY a.attnum)"
							  " FROM pg_catalog.pg_attribute a"
							  " WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped",
							  1, types, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the columns of kafka_lake.%s", relname);
	columns = MemoryContextStrdup(caller, kl_spi_text(1));
	kl_catalog_end(cs);
	return columns;
}

/*
 * kl_catalog_definer_begin
 *		Enter a catalog section that runs an owner's function (a SQL gold's
 *		or an owner's check) with the rights of the role that defined it.
 *
 *		The role owns its function, so it may have made it SECURITY INVOKER,
 *		given it to another role or changed its settings since: run as it
 *		then is, its SQL would have the rights of whoever bridges (a
 *		superuser's pg_cron job).  So the function must still be what
 *		define_gold() or add_check() made of it (SECURITY DEFINER, owned by
 *		the role the catalog names, search_path pinned), else the bridge
 *		refuses; and the call itself runs as that role, security-restricted,
 *		whatever the function says.  kl_catalog_end leaves the section.
 */
KlCatalogSave
kl_catalog_definer_begin(const char *function, const char *owner)
{
	Oid			argtypes[1] = {TEXTOID};
	Oid			role = get_role_oid(owner, true);
	Oid			fn;
	const char *wrong = NULL;
	KlCatalogSave cs;

	fn = LookupFuncName(list_make2(makeString("kafka_lake"), makeString(pstrdup(function))),
						1, argtypes, true);
	if (!OidIsValid(role))
		wrong = "the role that defined it no longer exists";
	else if (!OidIsValid(fn))
		wrong = "it no longer exists";
	else
	{
		HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
		Form_pg_proc proc;
		bool		isnull;
		Datum		config;

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for function %u", fn);
		proc = (Form_pg_proc) GETSTRUCT(tup);
		config = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_proconfig, &isnull);
		if (!proc->prosecdef)
			wrong = "it is no longer SECURITY DEFINER";
		else if (proc->proowner != role)
			wrong = "its owner is no longer the role that defined it";
		else
		{
			Datum	   *elems = NULL;
			int			nelems = 0;

			if (!isnull)
				deconstruct_array(DatumGetArrayTypeP(config), TEXTOID, -1, false,
								  TYPALIGN_INT, &elems, NULL, &nelems);
			if (nelems != 1 ||
				strcmp(TextDatumGetCString(elems[0]), "search_path=pg_catalog, pg_temp") != 0)
				wrong = "its settings are no longer search_path = pg_catalog, pg_temp alone";
		}
		ReleaseSysCache(tup);
	}
	if (wrong)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("function kafka_lake.%s(text) is not as role \"%s\" defined it: %s",
						function, owner, wrong),
				 errdetail("kafka_lake runs an owner's SQL only through the SECURITY DEFINER function define_gold(), add_check() or attach_shards() made, owned by the role that defined it, with search_path = pg_catalog, pg_temp; nothing was run or published."),
				 errhint("A superuser can restore it: ALTER FUNCTION kafka_lake.%s(text) SECURITY DEFINER RESET ALL SET search_path = pg_catalog, pg_temp; ALTER FUNCTION kafka_lake.%s(text) OWNER TO %s;",
						 function, function, quote_identifier(owner))));

	cs = kl_catalog_begin();
	SetUserIdAndSecContext(role, cs.sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	return cs;
}

/*
 * kl_catalog_owner_check
 *		Run an owner's check function over the run (with the rights of the
 *		role that defined it): the number of rows it returns, and the first
 *		few as text.
 */
int64
kl_catalog_owner_check(const char *function, const char *owner, const char *run_id, char **first)
{
	MemoryContext caller = CurrentMemoryContext;
	KlCatalogSave cs;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(run_id)};
	StringInfoData rows;
	int64		n;

	cs = kl_catalog_definer_begin(function, owner);
	if (SPI_execute_with_args(psprintf("SELECT r FROM kafka_lake.%s($1) r", quote_identifier(function)),
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not run check function kafka_lake.%s", function);
	n = (int64) SPI_processed;
	MemoryContextSwitchTo(caller);
	initStringInfo(&rows);
	for (uint64 i = 0; i < SPI_processed && i < 3; i++)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);

		appendStringInfo(&rows, "%s%s", i ? "; " : "", v ? v : "NULL");
	}
	*first = rows.data;
	kl_catalog_end(cs);
	return n;
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
	int			nchecks = b->nchecks;
	char	  **names = palloc(sizeof(char *) * Max(nchecks, 1));
	char	  **expected = palloc(sizeof(char *) * Max(nchecks, 1));
	char	  **observed = palloc(sizeof(char *) * Max(nchecks, 1));
	char	  **detail = palloc(sizeof(char *) * Max(nchecks, 1));
	Datum	   *passed = palloc(sizeof(Datum) * Max(nchecks, 1));
	KlCatalogSave cs;

	memset(rnulls, ' ', sizeof(rnulls));
	rvalues[0] = CStringGetTextDatum(b->run_id);
	rvalues[1] = Int32GetDatum(b->src->source_id);
	rvalues[2] = DateADTGetDatum(b->date);
	rvalues[3] = CStringGetTextDatum(b->source_hash);
	rvalues[4] = CStringGetTextDatum(status);
	rvalues[5] = Int32GetDatum((int32) Min(b->selected, PG_INT32_MAX));
	rvalues[6] = Int32GetDatum(b->passed);
	rvalues[7] = Int32GetDatum(nchecks);
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

	for (int i = 0; i < nchecks; i++)
	{
		names[i] = (char *) b->checks[i].name;
		expected[i] = b->checks[i].expected;
		observed[i] = b->checks[i].observed;
		detail[i] = b->checks[i].detail;
		passed[i] = BoolGetDatum(b->checks[i].passed);
	}
	qvalues[0] = CStringGetTextDatum(b->run_id);
	qvalues[1] = kl_text_array(names, nchecks);
	qvalues[2] = PointerGetDatum(construct_array(passed, nchecks, BOOLOID, 1, true,
												 TYPALIGN_CHAR));
	qvalues[3] = kl_text_array(expected, nchecks);
	qvalues[4] = kl_text_array(observed, nchecks);
	qvalues[5] = kl_text_array(detail, nchecks);
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
	svalues[5] = Int32GetDatum(b->gold_rows);
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
 * kl_catalog_check_gold_grain
 *		A gold has one row per grain value (its primary key says so when
 *		every grain field is required): a SQL gold whose query returns
 *		several for one is refused (21000) with the value and what to do,
 *		before anything is written, whether or not the table has the key.
 *		types and values are kl_catalog_insert_gold's arguments ($4 on: one
 *		text array per column, grain first), desc_types the table's column
 *		types (the casts are to built-in types: kl_catalog_insert_gold has
 *		checked them).
 */
static void
kl_catalog_check_gold_grain(const KlLayout *lay, KlGoldDef *g, Oid *types, Datum *values,
							char **desc_types)
{
	StringInfoData sql;
	StringInfoData cols;
	StringInfoData keys;
	KlCatalogSave cs;
	char	   *value = NULL;
	int64		rows = 0;

	if (g->nrows < 2)
		return;
	if (g->ngrain == 0)
	{
		value = pstrdup("business_date alone");
		rows = g->nrows;
	}
	else
	{
		initStringInfo(&sql);
		initStringInfo(&cols);
		initStringInfo(&keys);
		for (int c = 0; c < g->ngrain; c++)
		{
			appendStringInfo(&cols, "%s$%d", c ? ", " : "", 1 + c);
			appendStringInfo(&keys, "%su.c%d::%s", c ? ", " : "", c, desc_types[2 + c]);
		}
		appendStringInfo(&sql, "SELECT pg_catalog.concat_ws(', ', %s), pg_catalog.count(*)"
						 " FROM unnest(%s) AS u(", keys.data, cols.data);
		for (int c = 0; c < g->ngrain; c++)
			appendStringInfo(&sql, "%sc%d", c ? ", " : "", c);
		appendStringInfo(&sql, ") GROUP BY %s HAVING pg_catalog.count(*) > 1 LIMIT 1", keys.data);
		cs = kl_catalog_begin();
		if (SPI_execute_with_args(sql.data, g->ngrain, types + 3, values + 3, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not check the grain of gold %s", g->gold);
		if (SPI_processed > 0)
		{
			value = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
			rows = pg_strtoint64(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2));
			value = value ? pstrdup(value) : pstrdup("null");
		}
		kl_catalog_end(cs);
	}
	if (value == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_CARDINALITY_VIOLATION),
			 errmsg("the SQL of gold \"%s\" returns %lld rows for one grain value (%s) of %s",
					g->gold, (long long) rows, value, g->ngrain ? kl_grain_words(lay, g) : "business_date"),
			 errdetail("A gold has one row per business_date and grain value; nothing was published."),
			 g->ngrain ?
			 errhint("Group the query by its grain fields, in grain order: ... GROUP BY %s.", kl_grain_words(lay, g)) :
			 errhint("The gold's grain is business_date alone: its query returns one row, an aggregate over silver, or the gold needs a grain.")));
}

/*
 * kl_grain_words
 *		The grain fields of a gold as "a, b".
 */
static char *
kl_grain_words(const KlLayout *lay, const KlGoldDef *g)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < g->ngrain; i++)
		appendStringInfo(&buf, "%s%s", i ? ", " : "",
						 quote_identifier(lay->fields[g->grain_field[i]].column));
	return buf.data;
}

/*
 * kl_catalog_insert_gold
 *		The rows of gold g (as text, bridge_gold.c) under snapshot_id, with
 *		the closing status of b (provisional unless the date was ever
 *		closed, see bridge_closing.c): one statement, each column an array
 *		cast to the column's type.
 */
void
kl_catalog_insert_gold(KlBridge *b, KlGoldDef *g, int64 snapshot_id)
{
	KlCatalogSave cs;
	int			nargs = 3 + g->ncols;
	Oid		   *types = palloc(sizeof(Oid) * nargs);
	Datum	   *values = palloc(sizeof(Datum) * nargs);
	StringInfoData sql;
	StringInfoData sel;
	StringInfoData from;
	Oid			relid = kl_catalog_relid(g->gold);
	Relation	rel;
	TupleDesc	desc;
	char	  **desc_types;

	types[0] = INT8OID;
	types[1] = DATEOID;
	types[2] = TEXTOID;
	values[0] = Int64GetDatum(snapshot_id);
	values[1] = DateADTGetDatum(b->date);
	values[2] = CStringGetTextDatum(b->closing_status ? b->closing_status : "provisional");
	initStringInfo(&sql);
	initStringInfo(&sel);
	initStringInfo(&from);
	rel = table_open(relid, AccessShareLock);
	desc = RelationGetDescr(rel);
	desc_types = palloc(sizeof(char *) * Max(desc->natts, 1));
	if (desc->natts != g->ncols + 3)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table kafka_lake.%s does not have the columns of gold %s", g->gold, g->gold),
				 errdetail("It has %d columns; its definition gives %d.", desc->natts, g->ncols + 3),
				 errhint("Restore the table's definition.")));
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);
		char	   *type = kl_type_name(a->atttypid, a->atttypmod);

		desc_types[i] = type;

		/* the cast below runs the type's input function as the owner */
		if (!kl_type_is_builtin(a->atttypid))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("column \"%s\" of gold kafka_lake.%s is of type %s, which is %s: a gold's columns are of PostgreSQL's built-in types only",
							NameStr(a->attname), g->gold, type, kl_builtin_type_problem(a->atttypid)),
					 errdetail("Another type's functions would run with the extension owner's rights when the gold is published; nothing was published."),
					 errhint("Drop the gold (its table, view kafka_lake.%s_current, functions kafka_lake.%s_as_of and kafka_lake.%s_compute, and its row of kafka_lake.golds) and define it again with built-in types.",
							 g->gold, g->gold, g->gold)));
		if (i == 0)
			appendStringInfoString(&sel, "$1");
		else if (i == 1)
			appendStringInfoString(&sel, ", $2");
		else if (i == desc->natts - 1)
			appendStringInfoString(&sel, ", $3");
		else
		{
			int			c = i - 2;
			char	  **col = palloc(sizeof(char *) * Max(g->nrows, 1));
			Datum	   *d = palloc(sizeof(Datum) * Max(g->nrows, 1));
			bool	   *nulls = palloc(sizeof(bool) * Max(g->nrows, 1));
			int			dims[1] = {g->nrows};
			int			lbs[1] = {1};

			for (int r = 0; r < g->nrows; r++)
			{
				col[r] = g->cells[r * g->ncols + c];
				nulls[r] = (col[r] == NULL);
				d[r] = nulls[r] ? (Datum) 0 : CStringGetTextDatum(col[r]);
			}
			types[3 + c] = TEXTARRAYOID;
			values[3 + c] = PointerGetDatum(construct_md_array(d, nulls, 1, dims, lbs, TEXTOID,
															   -1, false, TYPALIGN_INT));
			appendStringInfo(&sel, ", u.c%d::%s", c, type);
			appendStringInfo(&from, "%s$%d", c ? ", " : "", 4 + c);
		}
	}
	table_close(rel, AccessShareLock);
	if (g->compute != NULL)
		kl_catalog_check_gold_grain(b->layout, g, types, values, desc_types);
	appendStringInfo(&sql, "INSERT INTO kafka_lake.%s SELECT %s", quote_identifier(g->gold), sel.data);
	if (g->ncols > 0)
	{
		appendStringInfo(&sql, " FROM unnest(%s) AS u(", from.data);
		for (int c = 0; c < g->ncols; c++)
			appendStringInfo(&sql, "%sc%d", c ? ", " : "", c);
		appendStringInfoString(&sql, ")");
	}
	cs = kl_catalog_begin();
	if (SPI_execute_with_args(sql.data, nargs, types, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the rows of gold %s", g->gold);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_record_definitions
 *		Which version of each gold and owner's check made snapshot_id
 *		(kafka_lake.snapshot_definitions; a catalog before 1.3 has none).
 */
void
kl_catalog_record_definitions(KlBridge *b, int64 snapshot_id)
{
	int			n = list_length(b->golds) + list_length(b->owner_checks);
	char	  **kinds;
	char	  **names;
	Datum	   *versions;
	Oid			types[4] = {INT8OID, TEXTARRAYOID, TEXTARRAYOID, INT4ARRAYOID};
	Datum		values[4];
	KlCatalogSave cs;
	ListCell   *cell;
	int			i = 0;

	if (n == 0 || !kl_catalog_has_definitions())
		return;
	kinds = palloc(sizeof(char *) * n);
	names = palloc(sizeof(char *) * n);
	versions = palloc(sizeof(Datum) * n);
	foreach(cell, b->golds)
	{
		KlGoldDef  *g = lfirst(cell);

		kinds[i] = "gold";
		names[i] = g->gold;
		versions[i++] = Int32GetDatum(Max(g->version, 1));
	}
	foreach(cell, b->owner_checks)
	{
		KlOwnerCheck *oc = lfirst(cell);

		kinds[i] = "check";
		names[i] = oc->name;
		versions[i++] = Int32GetDatum(Max(oc->version, 1));
	}
	values[0] = Int64GetDatum(snapshot_id);
	values[1] = kl_text_array(kinds, n);
	values[2] = kl_text_array(names, n);
	values[3] = PointerGetDatum(construct_array(versions, n, INT4OID, 4, true, TYPALIGN_INT));
	cs = kl_catalog_begin();
	if (SPI_execute_with_args("INSERT INTO kafka_lake.snapshot_definitions (snapshot_id, kind, name, version)"
							  " SELECT $1, d.kind, d.name, d.version FROM unnest($2, $3, $4) AS d(kind, name, version)",
							  4, types, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the definitions of snapshot " INT64_FORMAT, snapshot_id);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_supersede_run
 *		A recheck replaces the processed run of its input (status
 *		'superseded', so that one run of an input is processed), or, back:
 *		its checks failed, the run is processed again.
 */
void
kl_catalog_supersede_run(const char *run_id, bool back)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(run_id)};
	KlCatalogSave cs;

	cs = kl_catalog_begin();
	if (SPI_execute_with_args(back ?
							  "UPDATE kafka_lake.runs SET status = 'processed' WHERE run_id = $1 AND status = 'superseded'" :
							  "UPDATE kafka_lake.runs SET status = 'superseded' WHERE run_id = $1 AND status = 'processed'",
							  1, types, values, NULL, false, 0) != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "could not update run %s", run_id);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_snapshots_differ
 *		Does snapshot after (just published by a recheck) say something that
 *		snapshot before does not: another source_hash, other check outcomes
 *		(name, passed, expected, observed), another set of golds, or other
 *		rows of a gold (every column but snapshot_id and closing_status,
 *		compared as text, so that a column of a type without equality
 *		compares too)?
 */
bool
kl_catalog_snapshots_differ(KlBridge *b, int64 before, int64 after)
{
	Oid			types[2] = {INT8OID, INT8OID};
	Datum		values[2] = {Int64GetDatum(before), Int64GetDatum(after)};
	KlCatalogSave cs;
	bool		differ;
	bool		isnull;
	ListCell   *cell;

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("SELECT (SELECT s.source_hash FROM kafka_lake.snapshots s WHERE s.snapshot_id = $1)"
							  "   IS DISTINCT FROM (SELECT s.source_hash FROM kafka_lake.snapshots s WHERE s.snapshot_id = $2)"
							  " OR EXISTS (SELECT q.check_name, q.passed, q.expected, q.observed"
							  "              FROM kafka_lake.quality_results q JOIN kafka_lake.snapshots s ON s.run_id = q.run_id"
							  "             WHERE s.snapshot_id = $1"
							  "            EXCEPT"
							  "            SELECT q.check_name, q.passed, q.expected, q.observed"
							  "              FROM kafka_lake.quality_results q JOIN kafka_lake.snapshots s ON s.run_id = q.run_id"
							  "             WHERE s.snapshot_id = $2)"
							  " OR EXISTS (SELECT q.check_name, q.passed, q.expected, q.observed"
							  "              FROM kafka_lake.quality_results q JOIN kafka_lake.snapshots s ON s.run_id = q.run_id"
							  "             WHERE s.snapshot_id = $2"
							  "            EXCEPT"
							  "            SELECT q.check_name, q.passed, q.expected, q.observed"
							  "              FROM kafka_lake.quality_results q JOIN kafka_lake.snapshots s ON s.run_id = q.run_id"
							  "             WHERE s.snapshot_id = $1)"
							  " OR EXISTS (SELECT d.name FROM kafka_lake.snapshot_definitions d"
							  "             WHERE d.snapshot_id = $1 AND d.kind = 'gold'"
							  "            EXCEPT"
							  "            SELECT d.name FROM kafka_lake.snapshot_definitions d"
							  "             WHERE d.snapshot_id = $2 AND d.kind = 'gold')"
							  " OR EXISTS (SELECT d.name FROM kafka_lake.snapshot_definitions d"
							  "             WHERE d.snapshot_id = $2 AND d.kind = 'gold'"
							  "            EXCEPT"
							  "            SELECT d.name FROM kafka_lake.snapshot_definitions d"
							  "             WHERE d.snapshot_id = $1 AND d.kind = 'gold')",
							  2, types, values, NULL, false, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not compare snapshots");
	differ = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	foreach(cell, b->golds)
	{
		KlGoldDef  *g = lfirst(cell);
		Oid			ctypes[1] = {OIDOID};
		Datum		cvalues[1] = {ObjectIdGetDatum(kl_catalog_relid(g->gold))};
		char	   *cols;
		const char *rel;

		if (differ)
			break;
		if (SPI_execute_with_args("SELECT pg_catalog.string_agg(pg_catalog.format('g.%I', a.attname), ', ' ORDER BY a.attnum)"
								  "  FROM pg_catalog.pg_attribute a"
								  " WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped"
								  "   AND a.attname NOT IN ('snapshot_id', 'closing_status')",
								  1, ctypes, cvalues, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read the columns of gold %s", g->gold);
		cols = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		rel = quote_identifier(g->gold);
		if (SPI_execute_with_args(psprintf("SELECT EXISTS (SELECT ROW(%s)::text FROM kafka_lake.%s g WHERE g.snapshot_id = $1"
										   "               EXCEPT ALL"
										   "               SELECT ROW(%s)::text FROM kafka_lake.%s g WHERE g.snapshot_id = $2)"
										   "    OR EXISTS (SELECT ROW(%s)::text FROM kafka_lake.%s g WHERE g.snapshot_id = $2"
										   "               EXCEPT ALL"
										   "               SELECT ROW(%s)::text FROM kafka_lake.%s g WHERE g.snapshot_id = $1)",
										   cols, rel, cols, rel, cols, rel, cols, rel),
								  2, types, values, NULL, false, 0) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "could not compare the rows of gold %s", g->gold);
		differ = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	kl_catalog_end(cs);
	return differ;
}

/*
 * kl_catalog_copy_golds
 *		The rows of every gold of the source under snapshot from, copied
 *		under snapshot to with another closing status (a date closed or
 *		reopened as it is, catalog_close.c).  gold_daily_line_metrics is
 *		copied by the caller.
 */
void
kl_catalog_copy_golds(int32 source_id, int64 from, int64 to, const char *closing_status)
{
	KlCatalogSave cs;
	Oid			types[3] = {INT8OID, INT8OID, TEXTOID};
	Datum		values[3] = {Int64GetDatum(to), Int64GetDatum(from), CStringGetTextDatum(closing_status)};
	Oid			stypes[1] = {INT4OID};
	Datum		svalues[1] = {Int32GetDatum(source_id)};
	List	   *stmts = NIL;
	ListCell   *cell;
	Oid			nsp = get_namespace_oid("kafka_lake", true);

	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("golds", nsp)))
		return;
	cs = kl_catalog_begin();
	if (SPI_execute_with_args("SELECT pg_catalog.format('INSERT INTO kafka_lake.%I SELECT $1, %s, $3"
							  " FROM kafka_lake.%I g WHERE g.snapshot_id = $2', g.gold,"
							  " (SELECT pg_catalog.string_agg(pg_catalog.format('g.%I', a.attname), ', ' ORDER BY a.attnum)"
							  "    FROM pg_catalog.pg_attribute a"
							  "   WHERE a.attrelid = pg_catalog.format('kafka_lake.%I', g.gold)::pg_catalog.regclass"
							  "     AND a.attnum > 1 AND NOT a.attisdropped AND a.attname <> 'closing_status'),"
							  " g.gold)"
							  " FROM kafka_lake.golds g WHERE g.source_id = $1 AND NOT g.builtin",
							  1, stypes, svalues, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.golds");
	for (uint64 i = 0; i < SPI_processed; i++)
		stmts = lappend(stmts, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
	foreach(cell, stmts)
		if (SPI_execute_with_args(lfirst(cell), 3, types, values, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not copy gold rows");

	/*
	 * what made the copied rows: the definitions of from, but of a gold
	 * dropped since (whose rows are not copied)
	 */
	if (OidIsValid(get_relname_relid("snapshot_definitions", nsp)))
	{
		Oid			dtypes[3] = {INT8OID, INT8OID, INT4OID};
		Datum		dvalues[3] = {Int64GetDatum(to), Int64GetDatum(from), Int32GetDatum(source_id)};

		if (SPI_execute_with_args("INSERT INTO kafka_lake.snapshot_definitions (snapshot_id, kind, name, version)"
								  " SELECT $1, d.kind, d.name, d.version FROM kafka_lake.snapshot_definitions d"
								  "  WHERE d.snapshot_id = $2"
								  "    AND (d.kind = 'check' OR d.name = 'gold_daily_line_metrics'"
								  "         OR d.name IN (SELECT g.gold FROM kafka_lake.golds g WHERE g.source_id = $3))",
								  3, dtypes, dvalues, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not copy the definitions of snapshot " INT64_FORMAT, from);
	}
	kl_catalog_end(cs);
}
