/*-------------------------------------------------------------------------
 *
 * bridge_checks.c
 *	  Step 7 of the bridge: the eight quality checks of a run.
 *
 * THE CHECKS, AND WHY THEY ARE INDEPENDENT
 *
 * A check that reuses the numbers of the step it checks proves nothing, so
 * each compares two numbers that different code computed:
 *	row_count_source_to_silver		expected: natural keys among the selected
 *									events (pass 1, from the JSON); observed:
 *									count(*) of the run's silver rows, in SQL;
 *	unit_conservation_silver_to_gold	expected: units and defects summed
 *									over silver in SQL; observed: the same
 *									sums over the gold rows built in C;
 *	not_null_required_columns,
 *	unique_natural_key,
 *	accepted_values_operation,
 *	numeric_range_within_bounds		SQL over the run's silver rows, against
 *									the contract's rules (expected: 0 rows);
 *	freshness_business_date			pass 1: the date written in every
 *									event_time is within one day of the
 *									business date (expected: 0 that are not);
 *	schema_drift					silver's columns, types and NOT NULLs in
 *									pg_attribute equal the installed ones,
 *									and the header read back from the CSV
 *									file is the canonical one.
 * The SQL ones read the rows in one scan; uniqueness is proved by distinct
 * 64-bit hashes of the keys, and only when two hashes meet are the keys
 * themselves grouped, so the count is exact either way.
 *
 * IDENTIFICATION
 *	  src/bridge_checks.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/memutils.h"

#include "bridge.h"
#include "catalog_bridge.h"
#include "csv.h"

static const char *const kl_check_names[KL_NCHECKS] = {
	"row_count_source_to_silver",
	"unit_conservation_silver_to_gold",
	"not_null_required_columns",
	"unique_natural_key",
	"accepted_values_operation",
	"numeric_range_within_bounds",
	"freshness_business_date",
	"schema_drift"
};

/*
 * kl_set_check
 *		Record one check's outcome.
 */
static void
kl_set_check(KlBridge *b, int i, bool passed, char *expected, char *observed, char *detail)
{
	KlCheck    *c = &b->checks[i];

	c->name = kl_check_names[i];
	c->passed = passed;
	c->expected = MemoryContextStrdup(b->cxt, expected);
	c->observed = MemoryContextStrdup(b->cxt, observed);
	c->detail = MemoryContextStrdup(b->cxt, detail);
	if (passed)
		b->passed++;
}

/*
 * kl_bridge_check
 *		The eight quality checks, each comparing numbers that two
 *		different paths computed (see the file header).
 */
void
kl_bridge_check(KlBridge *b)
{
	KlSilverNumbers n;
	int64		silver_rows,
				bad_nulls,
				bad_operations,
				bad_ranges,
				duplicate_rows;
	char	   *silver_units;
	char	   *silver_defects;
	char	   *silver_columns;
	int64		gold_units = 0;
	int64		gold_defects = 0;
	StringInfoData expected_columns;

	for (int i = 0; i < b->ngroups; i++)
	{
		gold_units += b->groups[i].units;
		gold_defects += b->groups[i].defects;
	}

	kl_catalog_silver_numbers(b->run_id, &n);
	silver_rows = n.rows;
	silver_units = n.units;
	silver_defects = n.defects;
	bad_nulls = n.bad_nulls;
	bad_operations = n.bad_operations;
	bad_ranges = n.bad_ranges;
	duplicate_rows = n.duplicate_rows;
	silver_columns = n.columns;

	b->silver_rows = silver_rows;
	b->passed = 0;

	kl_set_check(b, 0, silver_rows == b->distinct_keys,
				 psprintf("%lld", (long long) b->distinct_keys),
				 psprintf("%lld", (long long) silver_rows),
				 psprintf("%lld accepted events selected; %lld of them repeat the natural key (work_order_id, machine_id, event_time) of an earlier one and are not silver rows",
						  (long long) b->selected, (long long) (b->selected - b->distinct_keys)));
	{
		char	   *expected = psprintf("units_produced=%s defect_count=%s",
										silver_units, silver_defects);
		char	   *observed = psprintf("units_produced=%lld defect_count=%lld",
										(long long) gold_units, (long long) gold_defects);

		kl_set_check(b, 1, strcmp(expected, observed) == 0, expected, observed,
					 psprintf("sums over %lld silver rows (expected) and %d gold rows (observed)",
							  (long long) silver_rows, b->ngroups));
	}
	kl_set_check(b, 2, bad_nulls == 0, "0", psprintf("%lld", (long long) bad_nulls),
				 "silver rows with a null in a required column (every column but kafka_key and kafka_timestamp_ms)");
	kl_set_check(b, 3, duplicate_rows == 0, "0", psprintf("%lld", (long long) duplicate_rows),
				 "silver rows beyond the first of their natural key (work_order_id, machine_id, event_time)");
	kl_set_check(b, 4, bad_operations == 0, "0", psprintf("%lld", (long long) bad_operations),
				 "silver rows whose operation is not one of assembly, inspection, packaging, welding, machining, calibration");
	kl_set_check(b, 5, bad_ranges == 0, "0", psprintf("%lld", (long long) bad_ranges),
				 "silver rows outside units_produced >= 0, 0 <= defect_count <= units_produced, cycle_time_ms > 0, schema_version = 1");
	kl_set_check(b, 6, b->stale_events == 0, "0", psprintf("%lld", (long long) b->stale_events),
				 b->stale_events == 0 ?
				 psprintf("selected events whose event_time is not written within one day of %s",
						  b->date_text) :
				 psprintf("selected events whose event_time is not written within one day of %s; the first: %s",
						  b->date_text, b->stale_example));

	initStringInfo(&expected_columns);
	for (int i = 0; i < KL_SILVER_NATTS; i++)
		appendStringInfo(&expected_columns, "%s%s", i > 0 ? ", " : "", kl_silver_columns[i].sql);
	{
		bool		columns_ok = strcmp(expected_columns.data, silver_columns) == 0;
		bool		header_ok = b->header_seen && strcmp(b->header_seen, kl_csv_header) == 0;
		char	   *canonical = pnstrdup(kl_csv_header, strlen(kl_csv_header) - 1);
		char	   *seen = b->header_seen ? pnstrdup(b->header_seen, strlen(b->header_seen) - 1) : "";

		kl_set_check(b, 7, columns_ok && header_ok,
					 psprintf("silver (%s); csv header %s", expected_columns.data, canonical),
					 psprintf("silver (%s); csv header %s", silver_columns, seen),
					 psprintf("silver columns %s; CSV header %s",
							  columns_ok ? "match" : "differ", header_ok ? "matches" : "differs"));
	}
}
