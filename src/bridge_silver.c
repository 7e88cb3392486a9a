/*-------------------------------------------------------------------------
 *
 * bridge_silver.c
 *	  Step 6 of the bridge, pass 2: silver from the CSV that was hashed, and
 *	  gold summed in C per (plant, line, product).
 *
 * The CSV is read back the way the seed's pipeline reads its input file,
 * so the transform sees exactly the bytes that source_hash names; each
 * event pass 1 marked first of its natural key becomes a silver row, the
 * others are counted and skipped.
 *
 * No SQL per row: the rows go straight into the table and its indexes
 * (bulk_insert.c: heap multi-insert, then index inserts, a BRIN index given
 * a value once per heap block), in chunks of KL_SILVER_CHUNK.  Silver is
 * appended (no free-space-map search: silver is append-only, and a run's
 * rows stay together).  The tuples are built for the installed layout of
 * silver_machine_events, which is checked first
 * (kl_bridge_check_silver_layout).
 *
 * IDENTIFICATION
 *	  src/bridge_silver.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "bridge.h"
#include "bulk_insert.h"
#include "catalog.h"
#include "contract.h"
#include "csv.h"
#include "json.h"
#include "keyset.h"

#define KL_SILVER_CHUNK			1000

const KlSilverColumn kl_silver_columns[KL_SILVER_NATTS] = {
	{"run_id", TEXTOID, "run_id text not null"},
	{"event_id", TEXTOID, "event_id text not null"},
	{"event_time", TIMESTAMPTZOID, "event_time timestamp with time zone not null"},
	{"business_date", DATEOID, "business_date date not null"},
	{"plant_id", TEXTOID, "plant_id text not null"},
	{"line_id", TEXTOID, "line_id text not null"},
	{"work_order_id", TEXTOID, "work_order_id text not null"},
	{"machine_id", TEXTOID, "machine_id text not null"},
	{"product_code", TEXTOID, "product_code text not null"},
	{"operation", TEXTOID, "operation text not null"},
	{"units_produced", INT8OID, "units_produced bigint not null"},
	{"defect_count", INT8OID, "defect_count bigint not null"},
	{"cycle_time_ms", INT8OID, "cycle_time_ms bigint not null"},
	{"schema_version", INT4OID, "schema_version integer not null"},
	{"kafka_topic", TEXTOID, "kafka_topic text not null"},
	{"kafka_partition", INT4OID, "kafka_partition integer not null"},
	{"kafka_offset", INT8OID, "kafka_offset bigint not null"},
	{"kafka_key", TEXTOID, "kafka_key text"},
	{"kafka_timestamp_ms", INT8OID, "kafka_timestamp_ms bigint"},
	{"kafka_record_fingerprint", TEXTOID, "kafka_record_fingerprint text not null"}
};

/*
 * kl_bridge_check_silver_layout
 *		The direct insert below builds tuples for the installed layout of
 *		silver_machine_events; refuse a table that differs.
 */
static void
kl_bridge_check_silver_layout(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	bool		ok = (desc->natts == KL_SILVER_NATTS);

	for (int i = 0; ok && i < KL_SILVER_NATTS; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || att->atttypid != kl_silver_columns[i].type ||
			strcmp(NameStr(att->attname), kl_silver_columns[i].name) != 0)
			ok = false;
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table kafka_lake.silver_machine_events does not have the columns the bridge writes"),
				 errdetail("Its columns or their types were changed after the extension was installed."),
				 errhint("Restore the table's definition from the kafka_lake install script.")));
}

/*
 * kl_csv_int
 *		An integer field of the CSV read back.
 */
static int64
kl_csv_int(KlCsvReader *r, const char *s, int len, int column)
{
	int64		v;

	if (!kl_json_parse_int64(s, len, &v))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("CSV file \"%s\" has an invalid %s at record %lld",
						r->path, kl_csv_columns[column], (long long) r->records)));
	return v;
}

/*
 * kl_text_datum
 *		A text datum of a CSV field.
 */
static inline Datum
kl_text_datum(const char *s, int len)
{
	return PointerGetDatum(cstring_to_text_with_len(s, len));
}

/*
 * kl_gold_add
 *		Add one silver row to its gold group.
 */
static void
kl_gold_add(KlBridge *b, KlKeySet *groups, StringInfo key, char **f, int *lens,
			int64 units, int64 defects, int64 cycle_ms)
{
	int32	   *group;
	KlGoldGroup *g;
	bool		is_new;

	resetStringInfo(key);
	kl_keyset_append_part(key, f[KL_CSV_PLANT_ID], lens[KL_CSV_PLANT_ID]);
	kl_keyset_append_part(key, f[KL_CSV_LINE_ID], lens[KL_CSV_LINE_ID]);
	kl_keyset_append_part(key, f[KL_CSV_PRODUCT_CODE], lens[KL_CSV_PRODUCT_CODE]);
	group = kl_keyset_add(groups, key->data, key->len, &is_new);
	if (is_new)
	{
		MemoryContext old = MemoryContextSwitchTo(b->cxt);

		if (b->ngroups == b->groups_cap)
		{
			b->groups_cap = Max(b->groups_cap * 2, 16);
			b->groups = b->groups ? repalloc_huge(b->groups, sizeof(KlGoldGroup) * b->groups_cap) :
				palloc_extended(sizeof(KlGoldGroup) * b->groups_cap, MCXT_ALLOC_HUGE);
		}
		g = &b->groups[b->ngroups];
		memset(g, 0, sizeof(*g));
		g->plant_id = pnstrdup(f[KL_CSV_PLANT_ID], lens[KL_CSV_PLANT_ID]);
		g->line_id = pnstrdup(f[KL_CSV_LINE_ID], lens[KL_CSV_LINE_ID]);
		g->product_code = pnstrdup(f[KL_CSV_PRODUCT_CODE], lens[KL_CSV_PRODUCT_CODE]);
		*group = b->ngroups++;
		MemoryContextSwitchTo(old);
	}
	g = &b->groups[*group];
	if (pg_add_s64_overflow(g->units, units, &g->units) ||
		pg_add_s64_overflow(g->defects, defects, &g->defects) ||
		pg_add_s64_overflow(g->cycle_sum, cycle_ms, &g->cycle_sum))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("gold sums of plant \"%s\", line \"%s\", product \"%s\" on %s are out of range for bigint",
						g->plant_id, g->line_id, g->product_code, b->date_text),
				 errhint("Check the units_produced, defect_count and cycle_time_ms of that day's events.")));
	g->events++;
}

/*
 * kl_bridge_load_silver
 *		Pass 2: read the CSV back; insert each event that pass 1 found first
 *		of its natural key into silver, and add it to its gold group (plant,
 *		line, product).
 */
void
kl_bridge_load_silver(KlBridge *b)
{
	MemoryContext groups_cxt = AllocSetContextCreate(b->cxt, "kafka_lake bridge gold groups",
													 ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(b->cxt);
	KlBulkInsert w;
	Relation	rel;
	KlCsvReader r;
	KlKeySet	groups;
	StringInfoData key;
	char	   *f[KL_CSV_NCOLUMNS];
	int			lens[KL_CSV_NCOLUMNS];
	int			n;
	int64		event = 0;
	Datum		run_id = CStringGetTextDatum(b->run_id);

	initStringInfo(&key);
	kl_keyset_create(&groups, groups_cxt, 64);
	rel = table_open(kl_catalog_relid("silver_machine_events"), RowExclusiveLock);
	kl_bridge_check_silver_layout(rel);
	kl_bulk_open(&w, rel, KL_SILVER_CHUNK, TABLE_INSERT_SKIP_FSM, b->cxt);
	kl_csv_open(&r, b->transform_path);

	/* the header, kept for the schema_drift check */
	n = kl_csv_next(&r, f, lens, KL_CSV_NCOLUMNS);
	if (n < 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("CSV file \"%s\" is empty", r.path)));
	{
		StringInfoData h;

		initStringInfo(&h);
		for (int i = 0; i < n; i++)
		{
			if (i > 0)
				appendStringInfoChar(&h, ',');
			appendBinaryStringInfo(&h, f[i], lens[i]);
		}
		appendStringInfoChar(&h, '\n');
		b->header_seen = h.data;
	}

	while ((n = kl_csv_next(&r, f, lens, KL_CSV_NCOLUMNS)) >= 0)
	{
		TupleTableSlot *slot;
		Datum	   *v;
		bool	   *isnull;
		TimestampTz event_time;
		DateADT		business_date;
		int64		units,
					defects,
					cycle_ms;

		if (n != KL_CSV_NCOLUMNS)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("CSV file \"%s\" has %d fields at record %lld, not %d",
							r.path, n, (long long) r.records, KL_CSV_NCOLUMNS)));
		/* the first occurrence of a natural key wins (decided in pass 1) */
		if (event >= b->selected)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("CSV file \"%s\" has more records than the %lld events selected",
							r.path, (long long) b->selected)));
		if ((b->first_seen[event / 8] & (1 << (event % 8))) == 0)
		{
			event++;
			b->silver_duplicates++;
			continue;
		}
		event++;

		if (!kl_parse_event_time(f[KL_CSV_EVENT_TIME], lens[KL_CSV_EVENT_TIME], &event_time) ||
			!kl_parse_iso_date(f[KL_CSV_BUSINESS_DATE], lens[KL_CSV_BUSINESS_DATE], &business_date))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("CSV file \"%s\" has an invalid event_time or business_date at record %lld",
							r.path, (long long) r.records)));

		units = kl_csv_int(&r, f[KL_CSV_UNITS_PRODUCED], lens[KL_CSV_UNITS_PRODUCED],
						   KL_CSV_UNITS_PRODUCED);
		defects = kl_csv_int(&r, f[KL_CSV_DEFECT_COUNT], lens[KL_CSV_DEFECT_COUNT],
							 KL_CSV_DEFECT_COUNT);
		cycle_ms = kl_csv_int(&r, f[KL_CSV_CYCLE_TIME_MS], lens[KL_CSV_CYCLE_TIME_MS],
							  KL_CSV_CYCLE_TIME_MS);
		kl_gold_add(b, &groups, &key, f, lens, units, defects, cycle_ms);

		/* the silver row */
		MemoryContextSwitchTo(w.rows_cxt);
		slot = kl_bulk_next_slot(&w);
		v = slot->tts_values;
		isnull = slot->tts_isnull;
		memset(isnull, false, sizeof(bool) * KL_SILVER_NATTS);
		v[0] = run_id;
		v[1] = kl_text_datum(f[KL_CSV_EVENT_ID], lens[KL_CSV_EVENT_ID]);
		v[2] = TimestampTzGetDatum(event_time);
		v[3] = DateADTGetDatum(business_date);
		v[4] = kl_text_datum(f[KL_CSV_PLANT_ID], lens[KL_CSV_PLANT_ID]);
		v[5] = kl_text_datum(f[KL_CSV_LINE_ID], lens[KL_CSV_LINE_ID]);
		v[6] = kl_text_datum(f[KL_CSV_WORK_ORDER_ID], lens[KL_CSV_WORK_ORDER_ID]);
		v[7] = kl_text_datum(f[KL_CSV_MACHINE_ID], lens[KL_CSV_MACHINE_ID]);
		v[8] = kl_text_datum(f[KL_CSV_PRODUCT_CODE], lens[KL_CSV_PRODUCT_CODE]);
		v[9] = kl_text_datum(f[KL_CSV_OPERATION], lens[KL_CSV_OPERATION]);
		v[10] = Int64GetDatum(units);
		v[11] = Int64GetDatum(defects);
		v[12] = Int64GetDatum(cycle_ms);
		v[13] = Int32GetDatum((int32) kl_csv_int(&r, f[KL_CSV_SCHEMA_VERSION],
												 lens[KL_CSV_SCHEMA_VERSION],
												 KL_CSV_SCHEMA_VERSION));
		v[14] = kl_text_datum(f[KL_CSV_KAFKA_TOPIC], lens[KL_CSV_KAFKA_TOPIC]);
		v[15] = Int32GetDatum((int32) kl_csv_int(&r, f[KL_CSV_KAFKA_PARTITION],
												 lens[KL_CSV_KAFKA_PARTITION],
												 KL_CSV_KAFKA_PARTITION));
		v[16] = Int64GetDatum(kl_csv_int(&r, f[KL_CSV_KAFKA_OFFSET], lens[KL_CSV_KAFKA_OFFSET],
										 KL_CSV_KAFKA_OFFSET));
		if (lens[KL_CSV_KAFKA_KEY] == 0)
			isnull[17] = true;
		else
			v[17] = kl_text_datum(f[KL_CSV_KAFKA_KEY], lens[KL_CSV_KAFKA_KEY]);
		if (lens[KL_CSV_KAFKA_TIMESTAMP_MS] == 0)
			isnull[18] = true;
		else
			v[18] = Int64GetDatum(kl_csv_int(&r, f[KL_CSV_KAFKA_TIMESTAMP_MS],
											 lens[KL_CSV_KAFKA_TIMESTAMP_MS],
											 KL_CSV_KAFKA_TIMESTAMP_MS));
		v[19] = kl_text_datum(f[KL_CSV_KAFKA_RECORD_FINGERPRINT],
							  lens[KL_CSV_KAFKA_RECORD_FINGERPRINT]);
		MemoryContextSwitchTo(b->cxt);
		kl_bulk_add(&w);
		b->silver_inserted++;
	}
	if (event != b->selected)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("CSV file \"%s\" has %lld records, not the %lld events selected",
						r.path, (long long) event, (long long) b->selected)));
	kl_bulk_close(&w);
	table_close(rel, RowExclusiveLock);
	kl_csv_close(&r);
	MemoryContextDelete(groups_cxt);
	ereport(DEBUG1,
			(errmsg_internal("kafka_lake bridge of \"%s\" %s: %lld silver rows, %lld events skipped as repeated natural keys, %d gold groups",
							 b->src->source, b->date_text, (long long) b->silver_inserted,
							 (long long) b->silver_duplicates, b->ngroups)));
	MemoryContextSwitchTo(old);
}
