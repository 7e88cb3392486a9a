/*-------------------------------------------------------------------------
 *
 * bridge_gold.c
 *	  Steps 5 and 8 of the bridge: an earlier processed run of the same
 *	  input (the call is then "skipped"), the rows of each gold of the
 *	  source, and the run's record with, when every check passed, a new
 *	  snapshot of the date that publishes every gold at once.
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
 * A declared metric is a sum, count, min or max (exact: int64, numeric), or
 * an average or ratio rounded as its definition states: "half_up" is
 * PostgreSQL's round() of the numeric quotient, "python" Python's round()
 * of the double quotient.  A ratio whose denominator is 0 is 0.  The seed's
 * gold is the built-in definition of bridge_define.c, whose defect_rate
 * and avg_cycle_time_ms are "python" and so the seed's to the last digit: the
 * quotient of two integers as a double (Python's int / int, correctly
 * rounded), then Python's round(x, 6) / round(x, 2) of that double, which
 * rounds its exact binary value with exact ties to even.  Decimal
 * arithmetic on the exact quotient differs on exact ties (1 / 128 is
 * 0.0078125: 0.007812 in the seed, not 0.007813) and where the double lies
 * just below a tie (107 / 40 is 2.675, whose double rounds to 2.67).
 *
 * IDENTIFICATION
 *	  src/bridge/bridge_gold.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/numeric.h"

#include "base/fault.h"
#include "bridge/bridge.h"
#include "bridge/catalog_bridge.h"

/*
 * kl_bridge_find_processed_run
 *		Step 5: a processed run of this (source, date, source_hash), if any
 *		(kl_catalog_processed_run); this call then reports it as skipped.
 */
bool
kl_bridge_find_processed_run(KlBridge *b, KlPriorRun *prior)
{
	return kl_catalog_processed_run(b, prior);
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
 * kl_int_divide
 *		num / den of two integers as Python's int / int (den not 0).
 */
static double
kl_int_divide(int64 num, int64 den)
{
	if (den < 0)
	{
		if (num == PG_INT64_MIN || den == PG_INT64_MIN)
			return (double) num / (double) den;
		num = -num;
		den = -den;
	}
	return kl_true_divide(num, den);
}

/*
 * kl_metric_numeric
 *		A metric's value in one group as numeric (has: false when it has
 *		none).
 */
static Datum
kl_metric_numeric(const KlGoldDef *g, const KlAcc *acc, int m, bool *has)
{
	const KlMetric *mt = &g->metrics[m];
	const KlAcc *a = &acc[m];

	*has = true;
	if (mt->op == KL_METRIC_COUNT)
		return DirectFunctionCall1(int8_numeric, Int64GetDatum(a->count));
	if (!a->has)
	{
		*has = false;
		return (Datum) 0;
	}
	if (mt->integer)
		return DirectFunctionCall1(int8_numeric, Int64GetDatum(a->ival));
	return a->num;
}

/*
 * kl_metric_is_integer
 *		Is a (non-ratio) metric's value an integer?
 */
static bool
kl_metric_is_integer(const KlMetric *mt)
{
	return mt->op == KL_METRIC_COUNT || mt->integer;
}

/*
 * kl_round_numeric
 *		q rounded to r decimals, as text (PostgreSQL's round(): half away
 *		from zero).
 */
static char *
kl_round_numeric(Datum q, int r)
{
	return DatumGetCString(DirectFunctionCall1(numeric_out,
											   DirectFunctionCall2(numeric_round, q, Int32GetDatum(r))));
}

/*
 * kl_numeric_double
 *		A numeric as the double nearest it.
 */
static double
kl_numeric_double(Datum n)
{
	return DatumGetFloat8(DirectFunctionCall1(numeric_float8, n));
}

/*
 * kl_metric_text
 *		The value of metric m in one group, as text (NULL: null).
 */
static char *
kl_metric_text(const KlGoldDef *g, const KlAcc *acc, int m)
{
	const KlMetric *mt = &g->metrics[m];
	const KlAcc *a = &acc[m];

	switch (mt->op)
	{
		case KL_METRIC_COUNT:
			return psprintf(INT64_FORMAT, a->count);
		case KL_METRIC_SUM:
		case KL_METRIC_MIN:
		case KL_METRIC_MAX:
			if (!a->has)
				return NULL;
			if (mt->integer)
				return psprintf(INT64_FORMAT, a->ival);
			return DatumGetCString(DirectFunctionCall1(numeric_out, a->num));
		case KL_METRIC_AVG:
			if (a->count == 0)
				return NULL;
			if (mt->integer && mt->python)
				return kl_py_round(kl_true_divide(a->ival, a->count), mt->round);
			if (mt->python)
				return kl_py_round(kl_numeric_double(a->num) / (double) a->count, mt->round);
			return kl_round_numeric(DirectFunctionCall2(numeric_div,
														mt->integer ?
														DirectFunctionCall1(int8_numeric, Int64GetDatum(a->ival)) :
														a->num,
														DirectFunctionCall1(int8_numeric, Int64GetDatum(a->count))),
									mt->round);
		case KL_METRIC_RATIO:
			{
				const KlMetric *nm = &g->metrics[mt->num];
				const KlMetric *dm = &g->metrics[mt->den];
				bool		has_num,
							has_den;
				Datum		num = kl_metric_numeric(g, acc, mt->num, &has_num);
				Datum		den = kl_metric_numeric(g, acc, mt->den, &has_den);

				if (!has_num || !has_den)
					return NULL;
				/* a zero denominator gives 0, as the seed's defect_rate */
				if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, den,
													  DirectFunctionCall1(int8_numeric, Int64GetDatum(0)))) == 0)
					return pstrdup("0");
				if (mt->python && kl_metric_is_integer(nm) && kl_metric_is_integer(dm))
					return kl_py_round(kl_int_divide(nm->op == KL_METRIC_COUNT ? acc[mt->num].count : acc[mt->num].ival,
													 dm->op == KL_METRIC_COUNT ? acc[mt->den].count : acc[mt->den].ival),
									   mt->round);
				if (mt->python)
					return kl_py_round(kl_numeric_double(num) / kl_numeric_double(den), mt->round);
				return kl_round_numeric(DirectFunctionCall2(numeric_div, num, den), mt->round);
			}
	}
	return NULL;
}

/*
 * kafka_lake_metric_quotient
 *		metric_quotient(numerator, denominator, round, rounding, integers):
 *		an average or ratio of a declared gold from its parts, rounded as
 *		the bridge rounds it (kl_metric_text) — for a coordinator that
 *		combines the parts of several shards.  integers: both parts are
 *		integers (a count, or a sum, min or max of an integer field), which
 *		"python" divides as Python's int / int.  NULL for a zero denominator
 *		(an average of nothing; a ratio's 0 is the caller's).
 */
PG_FUNCTION_INFO_V1(kafka_lake_metric_quotient);

Datum
kafka_lake_metric_quotient(PG_FUNCTION_ARGS)
{
	Datum		num = PG_GETARG_DATUM(0);
	Datum		den = PG_GETARG_DATUM(1);
	int32		round = PG_GETARG_INT32(2);
	char	   *rounding = text_to_cstring(PG_GETARG_TEXT_PP(3));
	bool		integers = PG_GETARG_BOOL(4);
	char	   *text;

	if (round < 0 || round > 15)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("round must be between 0 and 15, not %d", round)));
	if (strcmp(rounding, "python") != 0 && strcmp(rounding, "half_up") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown rounding \"%s\"", rounding),
				 errhint("\"half_up\" or \"python\".")));
	if (numeric_is_nan(DatumGetNumeric(den)) ||
		DatumGetInt32(DirectFunctionCall2(numeric_cmp, den,
										  DirectFunctionCall1(int8_numeric, Int64GetDatum(0)))) == 0)
		PG_RETURN_NULL();
	if (strcmp(rounding, "python") == 0 && integers)
		text = kl_py_round(kl_int_divide(DatumGetInt64(DirectFunctionCall1(numeric_int8, num)),
										 DatumGetInt64(DirectFunctionCall1(numeric_int8, den))),
						   round);
	else if (strcmp(rounding, "python") == 0)
		text = kl_py_round(kl_numeric_double(num) / kl_numeric_double(den), round);
	else
		text = kl_round_numeric(DirectFunctionCall2(numeric_div, num, den), round);
	PG_RETURN_DATUM(DirectFunctionCall3(numeric_in, CStringGetDatum(text),
										ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
}

/*
 * kl_bridge_compute_golds
 *		The rows of each gold of the run, as text: a declared gold's from
 *		its groups (bridge_silver.c), an owner's SQL gold from its function,
 *		run with the rights of the role that defined it.
 */
void
kl_bridge_compute_golds(KlBridge *b)
{
	ListCell   *cell;

	b->gold_rows = 0;
	foreach(cell, b->golds)
	{
		KlGoldDef  *g = lfirst(cell);
		MemoryContext old = MemoryContextSwitchTo(b->cxt);

		if (g->compute == NULL)
		{
			g->ncols = g->ngrain + g->nmetrics;
			g->nrows = g->ngroups;
			g->cells = palloc_extended(sizeof(char *) * Max(g->ncols, 1) * Max(g->nrows, 1),
									   MCXT_ALLOC_HUGE);
			for (int r = 0; r < g->ngroups; r++)
			{
				char	  **row = &g->cells[r * g->ncols];
				KlAcc	   *acc = &g->acc[r * g->nmetrics];

				for (int i = 0; i < g->ngrain; i++)
					row[i] = g->values[r * Max(g->ngrain, 1) + i];
				for (int m = 0; m < g->nmetrics; m++)
					row[g->ngrain + m] = kl_metric_text(g, acc, m);
			}
		}
		else
		{
			KlCatalogSave cs;
			Oid			types[1] = {TEXTOID};
			Datum		values[1] = {CStringGetTextDatum(b->run_id)};

			cs = kl_catalog_definer_begin(g->compute, g->owner);
			if (SPI_execute_with_args(psprintf("SELECT * FROM kafka_lake.%s($1)",
											   quote_identifier(g->compute)),
									  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
				elog(ERROR, "could not compute gold %s", g->gold);
			MemoryContextSwitchTo(b->cxt);
			g->ncols = SPI_tuptable->tupdesc->natts;
			g->nrows = (int) SPI_processed;
			g->cells = palloc_extended(sizeof(char *) * Max(g->ncols, 1) * Max(g->nrows, 1),
									   MCXT_ALLOC_HUGE);
			for (int r = 0; r < g->nrows; r++)
				for (int i = 0; i < g->ncols; i++)
					g->cells[r * g->ncols + i] =
						SPI_getvalue(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, i + 1);
			kl_catalog_end(cs);
		}
		b->gold_rows += g->nrows;
		MemoryContextSwitchTo(old);
	}
}

/*
 * kl_bridge_publish
 *		All checks passed: the run is processed, the date gets a new current
 *		snapshot holding the rows of every gold.  Returns the new snapshot's
 *		id.
 */
int64
kl_bridge_publish(KlBridge *b)
{
	int64		snapshot_id;
	ListCell   *cell;

	snapshot_id = kl_catalog_next_snapshot_id();
	kl_catalog_record_run(b, "processed", b->gold_rows, true, snapshot_id);

	kl_fault_point("bridge_before_gold");

	kl_catalog_publish_snapshot(b, snapshot_id);
	foreach(cell, b->golds)
		kl_catalog_insert_gold(b, lfirst(cell), snapshot_id);
	kl_catalog_record_definitions(b, snapshot_id);
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
	kl_catalog_record_run(b, "failed_quality", 0, false, 0);
	return kl_catalog_current_snapshot(b, snapshot_id);
}
