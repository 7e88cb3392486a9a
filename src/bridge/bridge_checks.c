/*-------------------------------------------------------------------------
 *
 * bridge_checks.c
 *	  Step 7 of the bridge: the quality checks of a run, derived from the
 *	  source's contract and golds, then the owners' own.
 *
 * THE CHECKS, AND WHY THEY ARE INDEPENDENT
 *
 * A check that reuses the numbers of the step it checks proves nothing, so
 * each compares two numbers that different code computed.  For
 * machine_event_v1 they are the seed's eight, under their names; for
 * another contract the same eight derived from it (the conservation check
 * once per declared gold with sums or counts, conservation_silver_to_<gold>;
 * the accepted values once per string field with an enum,
 * accepted_values_<field>; the bounds are its minimum, maximum, exclusive
 * bounds, numeric enums and rules; freshness reads its first date-time
 * field):
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
 * An owner's check (add_check) is its function's rows: none expected.
 * The SQL ones are one statement over the run's rows; uniqueness is proved
 * by distinct 64-bit hashes of the keys (kl_column_hash), and only when two
 * hashes meet are the keys themselves grouped, so the count is exact either
 * way.  The statement is two scans that PostgreSQL's parallel query can
 * split: every count and sum is a partial aggregate in each worker, and the
 * key hashes are computed and sorted in each worker, then merged and
 * counted as DISTINCT.  One scan with count(DISTINCT ...) beside the other
 * aggregates cannot be split: its workers only read, and every row (all
 * its columns) crosses to the leader, which does the rest alone.
 *
 * IDENTIFICATION
 *	  src/bridge/bridge_checks.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "parser/parse_type.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "bridge/bridge.h"
#include "bridge/catalog_bridge.h"
#include "bridge/csv.h"

/*
 * kl_add_check
 *		Record one check's outcome.
 */
static void
kl_add_check(KlBridge *b, const char *name, bool passed, char *expected, char *observed,
			 char *detail)
{
	KlCheck    *c;

	if (b->nchecks == b->checks_cap)
	{
		b->checks_cap = Max(b->checks_cap * 2, 16);
		b->checks = b->checks ?
			repalloc(b->checks, sizeof(KlCheck) * b->checks_cap) :
			MemoryContextAlloc(b->cxt, sizeof(KlCheck) * b->checks_cap);
	}
	c = &b->checks[b->nchecks++];
	c->name = MemoryContextStrdup(b->cxt, name);
	c->passed = passed;
	c->expected = MemoryContextStrdup(b->cxt, expected);
	c->observed = MemoryContextStrdup(b->cxt, observed);
	c->detail = MemoryContextStrdup(b->cxt, detail);
	if (passed)
		b->passed++;
}

static const char *const kl_rule_ops[] = {"<", "<=", "=", "<>", ">=", ">"};

/*
 * kl_field_sql
 *		A field's silver column in SQL: cast to the field's type when silver
 *		widened the column for a later contract version (its rows of this
 *		run hold values of the field's type).
 */
static const char *
kl_field_sql(const KlBridgeField *f)
{
	if (!f->silver_cast)
		return quote_identifier(f->column);
	return psprintf("(%s)::%s", quote_identifier(f->column), f->sql_type);
}

/*
 * kl_is_numeric_field
 *		An integer or number field.
 */
static bool
kl_is_numeric_field(const KlBridgeField *f)
{
	return f->kind == KL_FIELD_INTEGER || f->kind == KL_FIELD_NUMBER;
}

/*
 * kl_conserved
 *		Is metric m summed (or counted) over silver, so that gold must hold
 *		the same total?
 */
static bool
kl_conserved(const KlMetric *m)
{
	return m->op == KL_METRIC_SUM || m->op == KL_METRIC_COUNT;
}

/*
 * kl_column_hash
 *		SQL for a 64-bit hash of a natural-key column, seeded by its place
 *		in the key; the key's hash is the XOR of its columns'.  Equal keys
 *		give equal hashes, whatever the hash, so distinct hashes prove
 *		distinct keys; two keys that meet (or a null) make the check count
 *		the duplicates exactly instead.  Hashing the columns one by one costs
 *		a fraction of hashing a ROW() of them, which forms a record per row.
 */
static char *
kl_column_hash(const char *col, Oid typid, int seed)
{
	switch (typid)
	{
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
			return psprintf("pg_catalog.hashtextextended(%s::pg_catalog.text, %d)", col, seed);
		case INT8OID:
			return psprintf("pg_catalog.hashint8extended(%s, %d)", col, seed);
		case INT4OID:
			return psprintf("pg_catalog.hashint4extended(%s, %d)", col, seed);
		case DATEOID:
			return psprintf("pg_catalog.hashint4extended(%s - DATE '2000-01-01', %d)", col, seed);
		case TIMESTAMPTZOID:
			/* the local time of the instant: one instant, one value */
			return psprintf("pg_catalog.timestamp_hash_extended(%s::pg_catalog.timestamp, %d)",
							col, seed);
		case NUMERICOID:
			return psprintf("pg_catalog.hash_numeric_extended(%s, %d)", col, seed);
		default:
			return psprintf("pg_catalog.hash_record_extended(ROW(%s), %d)", col, seed);
	}
}

/* The one statement of the SQL checks, and what it reports, in its order */
typedef struct KlChecksQuery
{
	StringInfoData sql;			/* the statement ($1: the run_id) */
	StringInfoData nk;			/* the natural key's columns, for messages */
	StringInfoData nk_hash;		/* the key's hash, for the DISTINCT count */
	StringInfoData nn;			/* the required columns */
	StringInfoData ranges;		/* the bounds and rules, in SQL */
	StringInfoData range_words; /* ... and in words */
	List	   *enums;			/* (field, its values in words) per enum */
} KlChecksQuery;

/*
 * kl_checks_metrics
 *		The statement's first columns: count(*), then the sum or count over
 *		silver of each conserved metric of each declared gold.
 */
static void
kl_checks_metrics(KlBridge *b, KlChecksQuery *q)
{
	const KlLayout *lay = b->layout;
	StringInfo	sql = &q->sql;
	ListCell   *cell;

	const char *live = kl_layout_live_sql(lay);
	const char *filter = live ? psprintf(" FILTER (WHERE %s)", live) : "";

	appendStringInfoString(sql, "SELECT count(*)");
	foreach(cell, b->golds)
	{
		KlGoldDef  *g = lfirst(cell);

		if (g->compute)
			continue;
		/* declared golds leave an entity's deletions out */
		for (int m = 0; m < g->nmetrics; m++)
		{
			const KlMetric *mt = &g->metrics[m];

			if (mt->op == KL_METRIC_SUM)
				appendStringInfo(sql, ", coalesce(sum(%s)%s, 0)::text",
								 kl_field_sql(&lay->fields[mt->field]), filter);
			else if (mt->op == KL_METRIC_COUNT)
				appendStringInfo(sql, ", count(%s)%s::text",
								 mt->field >= 0 ? kl_field_sql(&lay->fields[mt->field]) : "*", filter);
		}
	}

}

/*
 * kl_checks_required
 *		Rows with a null in a required column.
 */
static void
kl_checks_required(KlBridge *b, KlChecksQuery *q)
{
	const KlLayout *lay = b->layout;
	StringInfo	sql = &q->sql;
	StringInfo	nn = &q->nn;

	for (int i = 0; i < lay->nfields; i++)
		if (lay->fields[i].required)
			appendStringInfo(nn, "%s%s", nn->len ? ", " : "", kl_field_sql(&lay->fields[i]));
	if (lay->silver_date)
		appendStringInfo(nn, "%sbusiness_date", nn->len ? ", " : "");
	appendStringInfo(nn, "%skafka_topic, kafka_partition, kafka_offset, kafka_record_fingerprint",
					 nn->len ? ", " : "");
	appendStringInfo(sql, ", count(*) FILTER (WHERE num_nulls(%s) > 0)", nn->data);

}

/*
 * kl_checks_enums
 *		Rows whose string field is not one of its enum's values.
 */
static void
kl_checks_enums(KlBridge *b, KlChecksQuery *q)
{
	const KlLayout *lay = b->layout;
	StringInfo	sql = &q->sql;

	for (int i = 0; i < lay->nfields; i++)
	{
		const KlBridgeField *f = &lay->fields[i];
		StringInfoData vals;
		StringInfoData words;

		if (f->kind != KL_FIELD_STRING || f->schema->nenum == 0)
			continue;
		initStringInfo(&vals);
		initStringInfo(&words);
		for (int e = 0; e < f->schema->nenum; e++)
		{
			const KlEnumValue *ev = &f->schema->enums[e];
			char	   *v;

			if (ev->type != KL_TYPE_STRING)
				continue;
			v = pnstrdup(ev->str, ev->str_len);
			appendStringInfo(&vals, "%s%s", vals.len ? ", " : "", quote_literal_cstr(v));
			appendStringInfo(&words, "%s%s", words.len ? ", " : "", v);
		}
		if (vals.len == 0)
			continue;
		appendStringInfo(sql, ", count(*) FILTER (WHERE %s%s NOT IN (%s))",
						 f->required ? psprintf("%s IS NULL OR ", kl_field_sql(f)) : "",
						 kl_field_sql(f), vals.data);
		q->enums = lappend(q->enums, list_make2((void *) f->name, words.data));
	}

}

/*
 * kl_checks_ranges
 *		Rows outside the numeric bounds, numeric enums and rules.
 */
static void
kl_checks_ranges(KlBridge *b, KlChecksQuery *q)
{
	const KlLayout *lay = b->layout;
	const KlContract *c = lay->contract;
	StringInfo	sql = &q->sql;
	StringInfo	ranges = &q->ranges;
	StringInfo	range_words = &q->range_words;

	for (int i = 0; i < lay->nfields; i++)
	{
		const KlBridgeField *f = &lay->fields[i];
		const KlSchema *sc = f->schema;
		const char *column = kl_field_sql(f);
		struct
		{
			bool		has;
			const char *op;
			const KlNumber *n;
		}			b4[4] = {
			{sc->has_minimum, ">=", &sc->minimum},
			{sc->has_xminimum, ">", &sc->xminimum},
			{sc->has_maximum, "<=", &sc->maximum},
			{sc->has_xmaximum, "<", &sc->xmaximum}
		};

		if (!kl_is_numeric_field(f))
			continue;
		for (int k = 0; k < 4; k++)
		{
			if (!b4[k].has)
				continue;
			appendStringInfo(ranges, "%s%s %s %.*s", ranges->len ? " AND " : "", column, b4[k].op,
							 b4[k].n->len, b4[k].n->text);
			appendStringInfo(range_words, "%s%s %s %.*s", range_words->len ? ", " : "",
							 f->name, b4[k].op, b4[k].n->len, b4[k].n->text);
		}
		if (sc->nenum > 0)
		{
			StringInfoData vals;

			initStringInfo(&vals);
			for (int e = 0; e < sc->nenum; e++)
				if (sc->enums[e].type & (KL_TYPE_INTEGER | KL_TYPE_NUMBER))
					appendStringInfo(&vals, "%s%.*s", vals.len ? ", " : "",
									 sc->enums[e].num.len, sc->enums[e].num.text);
			if (vals.len > 0)
			{
				bool		one = (strchr(vals.data, ',') == NULL);

				appendStringInfo(ranges, "%s%s %s%s%s", ranges->len ? " AND " : "", column,
								 one ? "= " : "IN (", vals.data, one ? "" : ")");
				appendStringInfo(range_words, "%s%s %s%s%s", range_words->len ? ", " : "",
								 f->name, one ? "= " : "in (", vals.data, one ? "" : ")");
			}
		}
	}
	for (int r = 0; r < c->nrules; r++)
	{
		const KlRule *rule = &c->rules[r];
		const char *left = c->top.props[rule->left].name;
		char	   *right = rule->right >= 0 ? (char *) c->top.props[rule->right].name :
			pnstrdup(rule->right_num.text, rule->right_num.len);
		int			lf = kl_layout_prop_field(lay, rule->left);
		int			rf = rule->right >= 0 ? kl_layout_prop_field(lay, rule->right) : -1;

		/* a rule names top-level fields, which are all columns */
		if (lf < 0 || (rule->right >= 0 && rf < 0))
			elog(ERROR, "rule of contract \"%s\" names a field that is no column", c->name);
		appendStringInfo(ranges, "%s%s %s %s", ranges->len ? " AND " : "",
						 kl_field_sql(&lay->fields[lf]), kl_rule_ops[rule->op],
						 rule->right >= 0 ? kl_field_sql(&lay->fields[rf]) : right);
		appendStringInfo(range_words, "%s%s %s %s", range_words->len ? ", " : "", left,
						 kl_rule_ops[rule->op], right);
	}
	appendStringInfo(sql, ", count(*) FILTER (WHERE NOT (%s))", ranges->len ? ranges->data : "true");

}

/*
 * kl_checks_natural_key
 *		The natural key's columns and hash; the statement gets its FROM and
 *		the DISTINCT count of the hashes.
 */
static void
kl_checks_natural_key(KlBridge *b, KlChecksQuery *q)
{
	const KlLayout *lay = b->layout;
	const char *silver_ref = quote_identifier(lay->silver);
	StringInfo	nk = &q->nk;
	StringInfo	nk_hash = &q->nk_hash;

	if (lay->nnk > 0)
		for (int k = 0; k < lay->nnk; k++)
		{
			const KlBridgeField *f = &lay->fields[lay->nk[k]];

			appendStringInfo(nk, "%s%s", k ? ", " : "", kl_field_sql(f));
			appendStringInfo(nk_hash, "%s%s", k ? " # " : "",
							 kl_column_hash(kl_field_sql(f), f->sql_typid, k));
		}
	else
	{
		appendStringInfoString(nk, "kafka_topic, kafka_partition, kafka_offset");
		appendStringInfoString(nk_hash, "pg_catalog.hashtextextended(kafka_topic, 0)"
							   " # pg_catalog.hashint4extended(kafka_partition, 1)"
							   " # pg_catalog.hashint8extended(kafka_offset, 2)");
	}
	appendStringInfo(&q->sql, " FROM kafka_lake.%s WHERE run_id = $1", silver_ref);
	q->sql.data = psprintf("SELECT * FROM (%s) a,"
						" (SELECT count(h) FROM (SELECT DISTINCT %s AS h FROM kafka_lake.%s"
						"   WHERE run_id = $1) d) k",
						q->sql.data, nk_hash->data, silver_ref);
}

/*
 * kl_checks_conservation
 *		conservation_silver_to_<gold> (the seed's
 *		unit_conservation_silver_to_gold): each summed or counted metric of a
 *		declared gold, over silver in SQL (row, from column *col on) and over
 *		the gold rows built in C.
 */
static void
kl_checks_conservation(KlBridge *b, char **row, int *colp, int64 silver_rows)
{
	ListCell   *cell;
	int			col = *colp;

	foreach(cell, b->golds)
	{
		KlGoldDef  *g = lfirst(cell);
		StringInfoData expected;
		StringInfoData observed;

		if (g->compute)
			continue;
		initStringInfo(&expected);
		initStringInfo(&observed);
		for (int m = 0; m < g->nmetrics; m++)
		{
			const KlMetric *mt = &g->metrics[m];
			Datum		total = DirectFunctionCall1(int8_numeric, Int64GetDatum(0));

			if (!kl_conserved(mt))
				continue;
			for (int r = 0; r < g->nrows; r++)
			{
				const char *v = g->cells[r * g->ncols + g->ngrain + m];

				if (v)
					total = DirectFunctionCall2(numeric_add, total,
												DirectFunctionCall3(numeric_in, CStringGetDatum(v),
																	ObjectIdGetDatum(InvalidOid),
																	Int32GetDatum(-1)));
			}
			appendStringInfo(&expected, "%s%s=%s", expected.len ? " " : "", mt->name, row[col++]);
			appendStringInfo(&observed, "%s%s=%s", observed.len ? " " : "", mt->name,
							 DatumGetCString(DirectFunctionCall1(numeric_out, total)));
		}
		if (expected.len == 0)
			continue;
		kl_add_check(b, g->builtin ? "unit_conservation_silver_to_gold" :
					 psprintf("conservation_silver_to_%s", g->gold),
					 strcmp(expected.data, observed.data) == 0, expected.data, observed.data,
					 psprintf("sums over %lld silver rows (expected) and %d rows of gold %s (observed)",
							  (long long) silver_rows, g->nrows, g->gold));
	}

	*colp = col;
}

/*
 * kl_checks_schema_drift
 *		silver's columns in pg_attribute, and the CSV header read back, are
 *		the ones the contract gives.
 */
static void
kl_checks_schema_drift(KlBridge *b)
{
	const KlLayout *lay = b->layout;

	{
		StringInfoData expected_columns;
		char	   *silver_columns = kl_catalog_silver_columns(lay->silver);
		bool		columns_ok;
		bool		header_ok = b->header_seen && strcmp(b->header_seen, lay->header) == 0;
		char	   *canonical = pnstrdup(lay->header, strlen(lay->header) - 1);
		char	   *seen = b->header_seen ? pnstrdup(b->header_seen, strlen(b->header_seen) - 1) : "";

		initStringInfo(&expected_columns);
		if (lay->machine)
			for (int i = 0; i < KL_SILVER_NATTS; i++)
				appendStringInfo(&expected_columns, "%s%s", i > 0 ? ", " : "", kl_silver_columns[i].sql);
		else
			appendStringInfoString(&expected_columns, kl_silver_expected(lay));
		columns_ok = strcmp(expected_columns.data, silver_columns) == 0;
		if (!columns_ok && !lay->machine && kl_silver_holds(lay))
		{
			/*
			 * Silver followed later contract versions (more columns, wider
			 * types) and holds this date's layout: observed as expected, so
			 * that the date's checks say the same as before silver followed.
			 */
			columns_ok = true;
			silver_columns = expected_columns.data;
		}
		kl_add_check(b, "schema_drift", columns_ok && header_ok,
					 psprintf("silver (%s); csv header %s", expected_columns.data, canonical),
					 psprintf("silver (%s); csv header %s", silver_columns, seen),
					 psprintf("silver columns %s; CSV header %s",
							  columns_ok ? "match" : "differ", header_ok ? "matches" : "differs"));
	}

}

/*
 * kl_checks_owners
 *		The owners' checks, each with the rights of the role that added it.
 */
static void
kl_checks_owners(KlBridge *b)
{
	ListCell   *cell;

	foreach(cell, b->owner_checks)
	{
		KlOwnerCheck *oc = lfirst(cell);
		char	   *first;
		int64		n = kl_catalog_owner_check(oc->function, oc->owner, b->run_id, &first);

		kl_add_check(b, oc->name, n == 0, "0", psprintf("%lld", (long long) n),
					 n == 0 ? psprintf("rows of kafka_lake.%s (none)", oc->function) :
					 psprintf("rows of kafka_lake.%s; the first: %s", oc->function, first));
	}
}

/*
 * kl_bridge_check
 *		The quality checks, each comparing numbers that two different paths
 *		computed (see the file header), then the owners' checks.  One
 *		statement over the run's silver rows gives every number but the
 *		duplicates' (counted only when two key hashes meet) and those of
 *		pass 1.
 */
void
kl_bridge_check(KlBridge *b)
{
	const KlLayout *lay = b->layout;
	const char *silver_ref = quote_identifier(lay->silver);
	KlChecksQuery q;
	char	  **row;
	int			ncols;
	int			col;
	int64		silver_rows;
	int64		duplicate_rows = 0;
	ListCell   *cell;

	b->passed = 0;
	b->nchecks = 0;

	memset(&q, 0, sizeof(q));
	initStringInfo(&q.sql);
	initStringInfo(&q.nk);
	initStringInfo(&q.nk_hash);
	initStringInfo(&q.nn);
	initStringInfo(&q.ranges);
	initStringInfo(&q.range_words);
	kl_checks_metrics(b, &q);
	kl_checks_required(b, &q);
	kl_checks_enums(b, &q);
	kl_checks_ranges(b, &q);
	kl_checks_natural_key(b, &q);

	row = kl_catalog_check_query(q.sql.data, b->run_id, true, &ncols);
	silver_rows = pg_strtoint64(row[0]);
	b->silver_rows = silver_rows;
	if (pg_strtoint64(row[ncols - 1]) != silver_rows)
	{
		char	  **d;
		int			nd;

		d = kl_catalog_check_query(psprintf("SELECT coalesce(sum(n - 1), 0)::bigint FROM"
											" (SELECT count(*) AS n FROM kafka_lake.%s"
											"   WHERE run_id = $1 GROUP BY %s HAVING count(*) > 1) d",
											silver_ref, q.nk.data),
								   b->run_id, false, &nd);
		duplicate_rows = pg_strtoint64(d[0]);
	}

	/* row_count_source_to_silver */
	kl_add_check(b, "row_count_source_to_silver", silver_rows == b->distinct_keys,
				 psprintf("%lld", (long long) b->distinct_keys),
				 psprintf("%lld", (long long) silver_rows),
				 lay->nnk > 0 ?
				 psprintf("%lld accepted events selected; %lld of them repeat the natural key (%s) of an earlier one and are not silver rows",
						  (long long) b->selected, (long long) (b->selected - b->distinct_keys),
						  q.nk.data) :
				 psprintf("%lld accepted events selected; the contract has no natural key, so each is a silver row",
						  (long long) b->selected));

	col = 1;
	kl_checks_conservation(b, row, &col, silver_rows);

	kl_add_check(b, "not_null_required_columns", pg_strtoint64(row[col]) == 0, "0", row[col],
				 lay->machine ?
				 "silver rows with a null in a required column (every column but kafka_key and kafka_timestamp_ms)" :
				 psprintf("silver rows with a null in a required column (%s)", q.nn.data));
	col++;
	kl_add_check(b, "unique_natural_key", duplicate_rows == 0, "0",
				 psprintf("%lld", (long long) duplicate_rows),
				 psprintf("silver rows beyond the first of their natural key (%s)", q.nk.data));
	foreach(cell, q.enums)
	{
		List	   *e = lfirst(cell);

		kl_add_check(b, psprintf("accepted_values_%s", (char *) linitial(e)),
					 pg_strtoint64(row[col]) == 0, "0", row[col],
					 psprintf("silver rows whose %s is not one of %s", (char *) linitial(e),
							  (char *) lsecond(e)));
		col++;
	}
	kl_add_check(b, "numeric_range_within_bounds", pg_strtoint64(row[col]) == 0, "0", row[col],
				 lay->machine ?
				 "silver rows outside units_produced >= 0, 0 <= defect_count <= units_produced, cycle_time_ms > 0, schema_version = 1" :
				 q.range_words.len ?
				 psprintf("silver rows outside %s", q.range_words.data) :
				 "the contract states no bounds or rules for numbers");
	col++;
	if (lay->fresh_field >= 0)
		kl_add_check(b, "freshness_business_date", b->stale_events == 0, "0",
					 psprintf("%lld", (long long) b->stale_events),
					 b->stale_events == 0 ?
					 psprintf("selected events whose %s is not written within one day of %s",
							  lay->fields[lay->fresh_field].name, b->date_text) :
					 psprintf("selected events whose %s is not written within one day of %s; the first: %s",
							  lay->fields[lay->fresh_field].name, b->date_text, b->stale_example));
	else
		kl_add_check(b, "freshness_business_date", true, "0", "0",
					 psprintf("the contract has no date-time field to compare with %s", b->date_text));


	kl_checks_schema_drift(b);
	kl_checks_owners(b);
}
