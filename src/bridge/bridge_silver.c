/*-------------------------------------------------------------------------
 *
 * bridge_silver.c
 *	  Step 6 of the bridge, pass 2: silver from the CSV that was hashed, and
 *	  the declared metrics of each gold computed in C per group of its grain.
 *
 * The CSV is read back the way the seed's pipeline reads its input file,
 * so the transform sees exactly the bytes that source_hash names; each
 * event pass 1 marked first of its natural key becomes a silver row, the
 * others are counted and skipped.
 *
 * The CSV is read and split into records one block ahead, on a thread
 * (csv.c, kl_csv_ahead_start), while the backend builds and inserts the rows
 * of the block before: the same records and errors as reading it on the
 * backend, the thread joined before an ERROR goes on.
 *
 * No SQL per row: the rows go straight into the table and its indexes
 * (bulk_insert.c: heap multi-insert, then index inserts, a BRIN index given
 * a value once per heap block), in chunks of KL_SILVER_CHUNK.  Silver is
 * appended (no free-space-map search: silver is append-only, and a run's
 * rows stay together).  The tuples are built for the installed layout of
 * the silver table (silver_machine_events, or the source's own), which is
 * checked first (kl_bridge_check_silver_layout); each CSV column goes to
 * the column of its name, read by its type: text, integers, dates and
 * timestamps directly, other types (numeric, jsonb, boolean, ...) by their
 * input function.  A declared gold's groups are kept in C (keyset.c) and
 * its metrics summed as the rows go by: integers in int64 (an overflow is
 * an ERROR), other numbers as numeric, read as silver stores them.
 *
 * IDENTIFICATION
 *	  src/bridge/bridge_silver.c
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
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "parser/parse_type.h"
#include "utils/timestamp.h"

#include "base/bulk_insert.h"
#include "base/fault.h"
#include "base/json.h"
#include "base/keyset.h"
#include "bridge/bridge.h"
#include "bridge/csv.h"
#include "contract/contract.h"
#include "kl_catalog/catalog.h"

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
 * kl_silver_layout_error
 *		The direct insert below builds tuples for the installed layout of
 *		the silver table; a table that differs is refused.
 */
static void
kl_silver_layout_error(const char *relname, bool machine)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("table kafka_lake.%s does not have the columns the bridge writes", relname),
			 errdetail(machine ? "Its columns or their types were changed after the extension was installed." :
					   "Its columns or their types were changed, or the source's contract changed its fields since the table was created."),
			 machine ? errhint("Restore the table's definition from the kafka_lake install script.") :
			 errhint("Rename or drop kafka_lake.%s; the next bridge() creates it again from the contract.",
					 relname)));
}

/*
 * kl_bridge_check_silver_layout
 *		machine_event_v1's silver_machine_events has the seed's columns; a
 *		source's own silver table has those its contract gives.
 */
static void
kl_bridge_check_silver_layout(Relation rel, const KlLayout *lay)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (lay->machine)
	{
		bool		ok = (desc->natts == KL_SILVER_NATTS);

		for (int i = 0; ok && i < KL_SILVER_NATTS; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (att->attisdropped || att->atttypid != kl_silver_columns[i].type ||
				strcmp(NameStr(att->attname), kl_silver_columns[i].name) != 0)
				ok = false;
		}
		if (!ok)
			kl_silver_layout_error(lay->silver, true);
		return;
	}
	/*
	 * A source's own silver follows its contract (kl_silver_follow): it has
	 * run_id and business_date, a column of each field of the date's layout
	 * and the provenance, and may have more (fields of other versions).
	 */
	for (int c = -2; c < lay->ncolumns; c++)
	{
		const char *name;
		Oid			type = InvalidOid;
		bool		found = false;

		if (c == -2)
		{
			name = "run_id";
			type = TEXTOID;
		}
		else if (c == -1)
		{
			if (!lay->silver_date)
				continue;
			name = "business_date";
			type = DATEOID;
		}
		else
		{
			name = lay->column_names[c];
			if (c >= lay->nfields)
				type = kl_silver_columns[14 + (c - lay->nfields)].type;
		}
		for (int i = 0; i < desc->natts && !found; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (att->attisdropped || strcmp(NameStr(att->attname), name) != 0)
				continue;
			found = true;
			if (OidIsValid(type) && att->atttypid != type)
				kl_silver_layout_error(lay->silver, false);
		}
		if (!found)
			kl_silver_layout_error(lay->silver, false);
	}
}

/*
 * kl_csv_int
 *		An integer field of the CSV read back.
 */
static int64
kl_csv_int(KlCsvReader *r, const char *s, int len, const char *column)
{
	int64		v;

	if (!kl_json_parse_int64(s, len, &v))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("CSV file \"%s\" has an invalid %s at record %lld",
						r->path, column, (long long) r->records)));
	return v;
}

/* How a CSV field becomes a silver column */
typedef enum KlConv
{
	KL_CONV_TEXT,
	KL_CONV_INT8,
	KL_CONV_INT4,
	KL_CONV_DATE,
	KL_CONV_TIMESTAMPTZ,
	KL_CONV_INPUT				/* the type's input function */
} KlConv;

typedef struct KlSilverMap
{
	int			att;			/* silver column (0-based); -1: none */
	KlConv		conv;
	bool		empty_is_text;	/* a required string: empty is '' */
	FmgrInfo	in;
	Oid			ioparam;
	int32		typmod;
} KlSilverMap;

/*
 * kl_gold_add
 *		Add one silver row to its group of each declared gold.
 */
static void
kl_gold_add(KlBridge *b, KlGoldDef *g, StringInfo key, char **f, int *lens,
			const int64 *ivals, const Datum *nums)
{
	int32	   *group;
	KlAcc	   *acc;
	bool		is_new;

	resetStringInfo(key);
	for (int i = 0; i < g->ngrain; i++)
	{
		int			c = g->grain_field[i];
		const KlBridgeField *fd = &b->layout->fields[c];

		if (lens[c] == 0 && !fd->required)
		{
			uint32		l = PG_UINT32_MAX;

			appendBinaryStringInfo(key, (const char *) &l, sizeof(l));
		}
		else if (fd->date_time)
		{
			/* one instant, one group, however it is written */
			TimestampTz t;

			if (!kl_parse_event_time(f[c], lens[c], &t))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("CSV field %s is not an ISO-8601 timestamp with a time zone", fd->name)));
			appendBinaryStringInfo(key, (const char *) &t, sizeof(t));
		}
		else if (fd->kind == KL_FIELD_NUMBER)
		{
			/* one value, one group: 5 and 5.0 are one number, as silver has it */
			char	   *n = numeric_normalize(DatumGetNumeric(nums[c]));

			kl_keyset_append_part(key, n, strlen(n));
		}
		else
			kl_keyset_append_part(key, f[c], lens[c]);
	}
	group = kl_keyset_add(&g->keys, key->data, key->len, &is_new);
	if (is_new)
	{
		MemoryContext old = MemoryContextSwitchTo(b->cxt);

		if (g->ngroups == g->groups_cap)
		{
			g->groups_cap = Max(g->groups_cap * 2, 16);
			if (g->acc)
			{
				g->values = repalloc_huge(g->values, sizeof(char *) * Max(g->ngrain, 1) * g->groups_cap);
				g->acc = repalloc_huge(g->acc, sizeof(KlAcc) * g->nmetrics * g->groups_cap);
			}
			else
			{
				g->values = palloc_extended(sizeof(char *) * Max(g->ngrain, 1) * g->groups_cap,
											MCXT_ALLOC_HUGE);
				g->acc = palloc_extended(sizeof(KlAcc) * g->nmetrics * g->groups_cap,
										 MCXT_ALLOC_HUGE);
			}
		}
		for (int i = 0; i < g->ngrain; i++)
		{
			int			c = g->grain_field[i];
			char	   *v;

			if (lens[c] == 0 && !b->layout->fields[c].required)
				v = NULL;
			else if (b->layout->fields[c].kind == KL_FIELD_NUMBER)
				v = DatumGetCString(DirectFunctionCall1(numeric_out, nums[c]));
			else
				v = pnstrdup(f[c], lens[c]);
			g->values[g->ngroups * Max(g->ngrain, 1) + i] = v;
		}
		memset(&g->acc[g->ngroups * g->nmetrics], 0, sizeof(KlAcc) * g->nmetrics);
		*group = g->ngroups++;
		MemoryContextSwitchTo(old);
	}
	acc = &g->acc[*group * g->nmetrics];
	for (int m = 0; m < g->nmetrics; m++)
	{
		const KlMetric *mt = &g->metrics[m];
		KlAcc	   *a = &acc[m];
		int			c = mt->field;

		if (mt->op == KL_METRIC_RATIO)
			continue;
		if (c >= 0 && lens[c] == 0)
			continue;			/* a null counts nowhere */
		a->count++;
		if (mt->op == KL_METRIC_COUNT)
			continue;
		if (mt->integer)
		{
			int64		v = ivals[c];

			if (mt->op == KL_METRIC_SUM || mt->op == KL_METRIC_AVG)
			{
				if (pg_add_s64_overflow(a->ival, v, &a->ival))
					ereport(ERROR,
							(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
							 errmsg("metric \"%s\" of gold \"%s\" on %s is out of range for bigint",
									mt->name, g->gold, b->date_text),
							 errhint("Check the %s of that day's events.", b->layout->fields[c].name)));
			}
			else if (!a->has || (mt->op == KL_METRIC_MIN ? v < a->ival : v > a->ival))
				a->ival = v;
		}
		else
		{
			MemoryContext old = MemoryContextSwitchTo(b->cxt);
			Datum		v = nums[c];
			Datum		prev = a->num;

			if (mt->op == KL_METRIC_SUM || mt->op == KL_METRIC_AVG)
				a->num = a->has ? DirectFunctionCall2(numeric_add, a->num, v) : datumCopy(v, false, -1);
			else if (!a->has ||
					 (mt->op == KL_METRIC_MIN ?
					  DatumGetInt32(DirectFunctionCall2(numeric_cmp, v, a->num)) < 0 :
					  DatumGetInt32(DirectFunctionCall2(numeric_cmp, v, a->num)) > 0))
				a->num = datumCopy(v, false, -1);
			if (a->has && a->num != prev)
				pfree(DatumGetPointer(prev));
			MemoryContextSwitchTo(old);
		}
		a->has = true;
	}
}

/*
 * kl_bridge_load_silver_rows
 *		Pass 2: read the CSV back; insert each event that pass 1 found first
 *		of its natural key into silver, and add it to its group of each
 *		declared gold.
 */
static void
kl_bridge_load_silver_rows(KlBridge *b, KlCsvAhead *ahead)
{
	MemoryContext groups_cxt = AllocSetContextCreate(b->cxt, "kafka_lake bridge gold groups",
													 ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(b->cxt);
	const KlLayout *lay = b->layout;
	int			ncol = lay->ncolumns;
	KlBulkInsert w;
	Relation	rel;
	TupleDesc	desc;
	KlCsvReader r;
	StringInfoData key;
	char	  **f = palloc(sizeof(char *) * (ncol + 1));
	int		   *lens = palloc(sizeof(int) * (ncol + 1));
	int64	   *ivals = palloc0(sizeof(int64) * ncol);
	Datum	   *nums = palloc0(sizeof(Datum) * ncol);
	bool	   *need_num = palloc0(sizeof(bool) * ncol);
	KlSilverMap *map = palloc0(sizeof(KlSilverMap) * ncol);
	int			n;
	int			natts;
	int			date_att = -1;
	int64		event = 0;
	bool		started = false;
	Datum		run_id = CStringGetTextDatum(b->run_id);
	ListCell   *cell;
	List	   *declared = NIL;

	initStringInfo(&key);
	foreach(cell, b->golds)
	{
		KlGoldDef  *g = lfirst(cell);

		if (g->compute != NULL)
			continue;
		kl_keyset_create(&g->keys, groups_cxt, 64);
		declared = lappend(declared, g);
		for (int m = 0; m < g->nmetrics; m++)
			if (g->metrics[m].field >= 0 && !g->metrics[m].integer &&
				g->metrics[m].op != KL_METRIC_COUNT)
				need_num[g->metrics[m].field] = true;
		for (int i = 0; i < g->ngrain; i++)
			if (lay->fields[g->grain_field[i]].kind == KL_FIELD_NUMBER)
				need_num[g->grain_field[i]] = true;
	}
	rel = table_open(kl_catalog_relid(lay->silver), RowExclusiveLock);
	kl_bridge_check_silver_layout(rel, lay);
	desc = RelationGetDescr(rel);
	natts = desc->natts;
	for (int c = 0; c < ncol; c++)
	{
		map[c].att = -1;
		for (int a = 0; a < natts; a++)
			if (strcmp(NameStr(TupleDescAttr(desc, a)->attname), lay->column_names[c]) == 0)
				map[c].att = a;
		if (map[c].att >= 0)
		{
			Form_pg_attribute att = TupleDescAttr(desc, map[c].att);
			Oid			infunc;

			switch (att->atttypid)
			{
				case TEXTOID:
					map[c].conv = KL_CONV_TEXT;
					break;
				case INT8OID:
					map[c].conv = KL_CONV_INT8;
					break;
				case INT4OID:
					map[c].conv = KL_CONV_INT4;
					break;
				case DATEOID:
					map[c].conv = KL_CONV_DATE;
					break;
				case TIMESTAMPTZOID:
					map[c].conv = KL_CONV_TIMESTAMPTZ;
					break;
				default:
					map[c].conv = KL_CONV_INPUT;
					getTypeInputInfo(att->atttypid, &infunc, &map[c].ioparam);
					fmgr_info_cxt(infunc, &map[c].in, b->cxt);
					map[c].typmod = att->atttypmod;
					break;
			}
			map[c].empty_is_text = (c < lay->nfields && lay->fields[c].required &&
									map[c].conv == KL_CONV_TEXT);
		}
	}
	if (lay->silver_date)
		date_att = 1;
	kl_bulk_open(&w, rel, KL_SILVER_CHUNK, TABLE_INSERT_SKIP_FSM, b->cxt);
	kl_csv_open(&r, b->transform_path);

	/* the header, kept for the schema_drift check */
	n = kl_csv_next(&r, f, lens, ncol + 1);
	if (n < 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("CSV file \"%s\" is empty", r.path)));
	b->header_seen = kl_csv_header_of(f, lens, n);

	/* the records: the next block read and split on a thread meanwhile */
	kl_csv_ahead_start(ahead, &r, ncol);
	started = false;
	while ((n = kl_csv_ahead_next(ahead, &f, &lens)) >= 0)
	{
		TupleTableSlot *slot;
		Datum	   *v;
		bool	   *isnull;
		Size		text_room;
		char	   *texts;

		if ((r.records & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!started)
		{
			started = true;
			/* the tests stop silver here, the next block read ahead */
			kl_fault_point("silver_while_reading_ahead");
			kl_fault_point("cancel_silver_while_reading_ahead");
		}
		if (n != ncol)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("CSV file \"%s\" has %d fields at record %lld, not %d",
							r.path, n, (long long) r.records, ncol)));
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

		/* the silver row */
		MemoryContextSwitchTo(w.rows_cxt);
		slot = kl_bulk_next_slot(&w);
		v = slot->tts_values;
		isnull = slot->tts_isnull;
		memset(isnull, true, sizeof(bool) * natts);
		v[0] = run_id;
		isnull[0] = false;
		if (date_att >= 0)
		{
			v[date_att] = DateADTGetDatum(b->date);
			isnull[date_att] = false;
		}
		/* the text values of the row, in one allocation */
		text_room = 0;
		for (int c = 0; c < ncol; c++)
			if (map[c].conv == KL_CONV_TEXT && (lens[c] > 0 || map[c].empty_is_text))
				text_room += INTALIGN(VARHDRSZ + lens[c]);
		texts = text_room ? palloc(text_room) : NULL;
		for (int c = 0; c < ncol; c++)
		{
			const KlSilverMap *m = &map[c];
			const char *s = f[c];
			int			len = lens[c];
			int			a = m->att;
			Datum		d = (Datum) 0;

			if (len == 0 && !m->empty_is_text)
				continue;
			switch (m->conv)
			{
				case KL_CONV_TEXT:
					SET_VARSIZE(texts, VARHDRSZ + len);
					memcpy(VARDATA(texts), s, len);
					d = PointerGetDatum(texts);
					texts += INTALIGN(VARHDRSZ + len);
					break;
				case KL_CONV_INT8:
					ivals[c] = kl_csv_int(&r, s, len, lay->column_names[c]);
					d = Int64GetDatum(ivals[c]);
					break;
				case KL_CONV_INT4:
					ivals[c] = kl_csv_int(&r, s, len, lay->column_names[c]);
					if (ivals[c] < PG_INT32_MIN || ivals[c] > PG_INT32_MAX)
						ereport(ERROR,
								(errcode(ERRCODE_DATA_CORRUPTED),
								 errmsg("CSV file \"%s\" has an invalid %s at record %lld",
										r.path, lay->column_names[c], (long long) r.records)));
					d = Int32GetDatum((int32) ivals[c]);
					break;
				case KL_CONV_DATE:
					{
						DateADT		day;

						if (!kl_parse_iso_date(s, len, &day))
							ereport(ERROR,
									(errcode(ERRCODE_DATA_CORRUPTED),
									 errmsg("CSV file \"%s\" has an invalid %s at record %lld",
											r.path, lay->column_names[c], (long long) r.records)));
						d = DateADTGetDatum(day);
					}
					break;
				case KL_CONV_TIMESTAMPTZ:
					{
						TimestampTz t;

						if (!kl_parse_event_time(s, len, &t))
							ereport(ERROR,
									(errcode(ERRCODE_DATA_CORRUPTED),
									 errmsg("CSV file \"%s\" has an invalid %s at record %lld",
											r.path, lay->column_names[c], (long long) r.records)));
						d = TimestampTzGetDatum(t);
					}
					break;
				case KL_CONV_INPUT:
					d = InputFunctionCall((FmgrInfo *) &m->in, (char *) s, m->ioparam, m->typmod);
					break;
			}
			if (c < lay->nfields && lay->fields[c].kind == KL_FIELD_INTEGER &&
				m->conv != KL_CONV_INT8 && m->conv != KL_CONV_INT4)
				ivals[c] = kl_csv_int(&r, s, len, lay->column_names[c]);
			if (need_num[c])
				nums[c] = (a >= 0 && TupleDescAttr(desc, a)->atttypid == NUMERICOID) ? d :
					DirectFunctionCall3(numeric_in, CStringGetDatum(s), ObjectIdGetDatum(InvalidOid),
										Int32GetDatum(-1));
			if (a >= 0)
			{
				v[a] = d;
				isnull[a] = false;
			}
		}
		/* an entity's deletion is in silver, and in no declared gold */
		if (!(lay->deleted_field >= 0 &&
			  lens[lay->deleted_field] == (int) strlen(lay->contract->deleted_text) &&
			  memcmp(f[lay->deleted_field], lay->contract->deleted_text, lens[lay->deleted_field]) == 0))
			foreach(cell, declared)
				kl_gold_add(b, lfirst(cell), &key, f, lens, ivals, nums);
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
	foreach(cell, declared)
	{
		KlGoldDef  *g = lfirst(cell);

		ereport(DEBUG1,
				(errmsg_internal("kafka_lake bridge of \"%s\" %s: %d groups of gold %s",
								 b->src->source, b->date_text, g->ngroups, g->gold)));
	}
	MemoryContextDelete(groups_cxt);
	ereport(DEBUG1,
			(errmsg_internal("kafka_lake bridge of \"%s\" %s: %lld silver rows, %lld events skipped as repeated natural keys",
							 b->src->source, b->date_text, (long long) b->silver_inserted,
							 (long long) b->silver_duplicates)));
	MemoryContextSwitchTo(old);
}

/*
 * kl_bridge_load_silver
 *		Step 6 (kl_bridge_load_silver_rows), with the CSV's read-ahead
 *		thread stopped and joined before any error goes on.
 */
void
kl_bridge_load_silver(KlBridge *b)
{
	KlCsvAhead *ahead = MemoryContextAllocZero(b->cxt, sizeof(KlCsvAhead));

	PG_TRY();
	{
		kl_bridge_load_silver_rows(b, ahead);
	}
	PG_CATCH();
	{
		kl_csv_ahead_stop(ahead);
		PG_RE_THROW();
	}
	PG_END_TRY();
}
