/*-------------------------------------------------------------------------
 *
 * bridge_gold.c
 *	  Steps 5 and 8 of the bridge: an earlier processed run of the same
 *	  input (the call is then "skipped"), and the run's record with, when
 *	  every check passed, a new gold snapshot of the date.
 *
 * A processed run of the same (source, date, source_hash) is looked for with
 * a snapshot taken now, so a bridge that waited for the lock sees the run
 * of the one it waited for.  When all checks pass the run is "processed",
 * the date's current snapshot stops being current and a new one
 * (replaces_snapshot_id pointing to it) gets the gold rows; otherwise the
 * run is "failed_quality", its check results are kept, and gold stays as it
 * was.
 *
 * GOLD NUMBERS
 *
 * defect_rate and avg_cycle_time_ms are the seed's to the last digit: the
 * quotient of two integers as a double (Python's int / int, correctly
 * rounded), then Python's round(x, 6) / round(x, 2) of that double, which
 * rounds its exact binary value with exact ties to even.  Decimal
 * arithmetic on the exact quotient differs on exact ties (1 / 128 is
 * 0.0078125: 0.007812 in the seed, not 0.007813) and where the double lies
 * just below a tie (107 / 40 is 2.675, whose double rounds to 2.67).
 *
 * IDENTIFICATION
 *	  src/bridge_gold.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "bridge.h"

/*
 * kl_current_snapshot
 *		The current snapshot of the date, if any (inside a catalog section).
 */
static bool
kl_current_snapshot(KlBridge *b, int64 *snapshot_id)
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
 * kl_bridge_find_processed_run
 *		A processed run of this (source, date, source_hash), if any.  Read
 *		with a snapshot taken now, so a bridge that waited for the lock sees
 *		the run of the one it waited for.
 */
bool
kl_bridge_find_processed_run(KlBridge *b, KlPriorRun *prior)
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
		prior->has_snapshot = kl_current_snapshot(b, &prior->snapshot_id);
	}
	kl_catalog_end(cs);
	return found;
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
 * kl_bridge_record_run
 *		The run row and its check results (inside a catalog section).
 */
static void
kl_bridge_record_run(KlBridge *b, const char *status, int gold_rows, bool has_snapshot,
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
	if (SPI_execute_with_args("INSERT INTO kafka_lake.runs (run_id, source_id, business_date,"
							  " source_hash, status, selected_events, quality_passed, quality_total,"
							  " silver_rows, gold_rows, snapshot_id, started_at)"
							  " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
							  12, rtypes, rvalues, rnulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the run");

	for (int i = 0; i < KL_NCHECKS; i++)
	{
		names[i] = (char *) kl_check_names[i];
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
}

/*
 * kl_true_divide
 *		num / den as Python's int / int computes it: the double nearest the
 *		exact quotient, ties to even (den > 0).  Converting both to double
 *		first would round twice once they pass 2^53.
 */
static double
kl_true_divide(int64 num, int64 den)
{
	uint64		n = (num < 0) ? -(uint64) num : (uint64) num;
	uint64		q = n / (uint64) den;
	uint64		r = n % (uint64) den;
	int			exp = 0;
	double		x;

	Assert(den > 0);
	if (n == 0)
		return 0.0;

	/*
	 * Long division to at least 56 significant bits: bit 0 then lies below
	 * the bit that decides the rounding to 53, and one set bit there stands
	 * for any nonzero remainder.  The conversion of the result rounds to
	 * nearest, ties to even, as IEEE arithmetic does.
	 */
	while (q < (UINT64CONST(1) << 55))
	{
		r <<= 1;
		q <<= 1;
		if (r >= (uint64) den)
		{
			r -= den;
			q |= 1;
		}
		exp--;
	}
	if (r != 0)
		q |= 1;
	x = ldexp((double) (int64) q, exp);
	return (num < 0) ? -x : x;
}

/*
 * kl_py_round
 *		Python's round(x, ndigits), as decimal text: the exact binary value
 *		of x rounded to ndigits decimals, exact ties to even (round(0.0078125,
 *		6) is 0.007812, round(2.675, 2) is 2.67 because the double is a little
 *		below 2.675).  printf's %f converts the exact binary value and rounds
 *		in the current rounding mode, to nearest with ties to even (glibc;
 *		the test suite compares the results with Python's own round()).
 */
static char *
kl_py_round(double x, int ndigits)
{
	return psprintf("%.*f", ndigits, x);
}

/*
 * kl_bridge_publish
 *		All checks passed: the run is processed, the date gets a new current
 *		snapshot holding the gold rows.  Returns the new snapshot's id.
 */
int64
kl_bridge_publish(KlBridge *b)
{
	KlCatalogSave cs;
	int64		snapshot_id;
	int64		previous = 0;
	bool		has_previous = false;
	Oid			stypes[7] = {INT8OID, INT4OID, DATEOID, TEXTOID, TEXTOID, INT4OID, INT8OID};
	Datum		svalues[7];
	char		snulls[7] = "       ";
	Oid			gtypes[9] = {INT8OID, DATEOID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
	INT8ARRAYOID, INT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID};
	Datum		gvalues[9];
	char	  **plants = palloc(sizeof(char *) * Max(b->ngroups, 1));
	char	  **lines = palloc(sizeof(char *) * Max(b->ngroups, 1));
	char	  **products = palloc(sizeof(char *) * Max(b->ngroups, 1));
	char	  **rates = palloc(sizeof(char *) * Max(b->ngroups, 1));
	char	  **averages = palloc(sizeof(char *) * Max(b->ngroups, 1));

	cs = kl_catalog_begin();
	if (SPI_execute("SELECT nextval(pg_catalog.pg_get_serial_sequence('kafka_lake.snapshots', 'snapshot_id'))",
					false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not allocate a snapshot_id");
	snapshot_id = kl_spi_int8(1);

	kl_bridge_record_run(b, "processed", b->ngroups, true, snapshot_id);

	kl_fault_point("bridge_before_gold");

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

	/* ... and the new one replaces it */
	if (SPI_execute_with_args("INSERT INTO kafka_lake.snapshots (snapshot_id, source_id,"
							  " business_date, run_id, source_hash, gold_rows, replaces_snapshot_id)"
							  " VALUES ($1, $2, $3, $4, $5, $6, $7)",
							  7, stypes, svalues, snulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the snapshot");

	for (int i = 0; i < b->ngroups; i++)
	{
		KlGoldGroup *g = &b->groups[i];

		plants[i] = g->plant_id;
		lines[i] = g->line_id;
		products[i] = g->product_code;
		/* the seed: round(defects / units, 6) if units else 0, round(cycle_sum / events, 2) */
		rates[i] = (g->units == 0) ? "0" : kl_py_round(kl_true_divide(g->defects, g->units), 6);
		averages[i] = kl_py_round(kl_true_divide(g->cycle_sum, g->events), 2);
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
	if (SPI_execute_with_args("INSERT INTO kafka_lake.gold_daily_line_metrics (snapshot_id,"
							  " business_date, plant_id, line_id, product_code, units_produced,"
							  " defect_count, defect_rate, avg_cycle_time_ms, closing_status)"
							  " SELECT $1, $2, g.plant_id, g.line_id, g.product_code, g.units, g.defects,"
							  "   g.defect_rate::pg_catalog.numeric, g.average::pg_catalog.numeric, 'provisional'"
							  " FROM unnest($3, $4, $5, $6, $7, $8, $9)"
							  "   AS g(plant_id, line_id, product_code, units, defects, defect_rate, average)",
							  9, gtypes, gvalues, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the gold rows");
	kl_catalog_end(cs);
	return snapshot_id;
}

/*
 * kl_bridge_reject
 *		A check failed: the run is failed_quality, its results are kept, gold
 *		and the current snapshot stay as they were.  Returns whether the date
 *		has a current snapshot (and which).
 */
bool
kl_bridge_reject(KlBridge *b, int64 *snapshot_id)
{
	KlCatalogSave cs = kl_catalog_begin();
	bool		has_snapshot;

	kl_bridge_record_run(b, "failed_quality", 0, false, 0);
	has_snapshot = kl_current_snapshot(b, snapshot_id);
	kl_catalog_end(cs);
	return has_snapshot;
}
