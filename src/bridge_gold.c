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

#include "bridge.h"
#include "catalog_bridge.h"
#include "kafka_lake.h"

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
 * kl_bridge_publish
 *		All checks passed: the run is processed, the date gets a new current
 *		snapshot holding the gold rows.  Returns the new snapshot's id.
 */
int64
kl_bridge_publish(KlBridge *b)
{
	int64		snapshot_id;
	char	  **rates = palloc(sizeof(char *) * Max(b->ngroups, 1));
	char	  **averages = palloc(sizeof(char *) * Max(b->ngroups, 1));

	snapshot_id = kl_catalog_next_snapshot_id();
	kl_catalog_record_run(b, "processed", b->ngroups, true, snapshot_id);

	kl_fault_point("bridge_before_gold");

	kl_catalog_publish_snapshot(b, snapshot_id);
	for (int i = 0; i < b->ngroups; i++)
	{
		KlGoldGroup *g = &b->groups[i];

		/* the seed: round(defects / units, 6) if units else 0, round(cycle_sum / events, 2) */
		rates[i] = (g->units == 0) ? "0" : kl_py_round(kl_true_divide(g->defects, g->units), 6);
		averages[i] = kl_py_round(kl_true_divide(g->cycle_sum, g->events), 2);
	}
	kl_catalog_insert_gold(b, snapshot_id, rates, averages);
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
