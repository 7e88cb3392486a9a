/*-------------------------------------------------------------------------
 *
 * fdw.c
 *	  The foreign table over landed JSONL: planning (pruning, estimates),
 *	  the scan, EXPLAIN and ANALYZE.
 *
 * A kafka_lake foreign table names a source (and optionally one status);
 * its columns are either the envelope columns of SPEC section 5 (topic,
 * partition, "offset", key, timestamp_ms, fingerprint, status, event_id,
 * business_date, event, raw_value, validation_error, batch_id) or, under
 * any other name, a field of the event, read with the column's type (the
 * column option "field" names a field of another name).
 *
 * Planning.  Quals of the form <column> <op> <constant or parameter> on
 * partition, "offset", business_date, status, batch_id and topic become
 * bounds (reader.c, KlBounds) that prune whole batches (in the catalog
 * query) and whole files (by status) before anything is opened.  The quals
 * stay in the plan as ordinary filters too: pruning only ever skips what
 * cannot match.  Row estimates come from the catalog's per-batch counts, so
 * joins see sane numbers without ANALYZE; ANALYZE samples the rows.
 *
 * Execution.  The batch list is read at the start of the scan with the
 * statement's snapshot, each needed file is read and checked (size, lines,
 * CRC-32C) before its first row, and each line is parsed only as far as the
 * columns asked for need.  Values are built straight from the JSON spans,
 * with fast paths for integers, text and dates; other types go through the
 * column type's input function, and an error there names column, file and
 * line.  CHECK_FOR_INTERRUPTS runs for every row.
 *
 * IDENTIFICATION
 *	  src/fdw.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "access/stratnum.h"
#include "access/nbtree.h"
#include "catalog/pg_am.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/explain.h"
#include "commands/vacuum.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/sampling.h"
#include "utils/syscache.h"

#include "kafka_lake.h"

PG_FUNCTION_INFO_V1(kafka_lake_fdw_handler);

/* What a column of a kafka_lake foreign table reads */
typedef enum KlColumnKind
{
	KL_COL_TOPIC,
	KL_COL_PARTITION,
	KL_COL_OFFSET,
	KL_COL_KEY,
	KL_COL_TIMESTAMP_MS,
	KL_COL_FINGERPRINT,
	KL_COL_STATUS,
	KL_COL_EVENT_ID,
	KL_COL_BUSINESS_DATE,
	KL_COL_EVENT,
	KL_COL_RAW_VALUE,
	KL_COL_VALIDATION_ERROR,
	KL_COL_BATCH_ID,
	KL_COL_FIELD				/* any other name: an event field */
} KlColumnKind;

static const char *const kl_column_names[] = {
	"topic", "partition", "offset", "key", "timestamp_ms", "fingerprint",
	"status", "event_id", "business_date", "event", "raw_value",
	"validation_error", "batch_id", NULL
};

/* One qual that can prune: <column> <strategy> <value expression> */
typedef struct KlPruneQual
{
	KlColumnKind column;
	int			strategy;		/* BTLessStrategyNumber ... */
	Expr	   *value;			/* Const or external Param */
} KlPruneQual;

/* Planning state (baserel->fdw_private) */
typedef struct KlPlanState
{
	char	   *source;			/* the table's source option */
	int			status_file;	/* the table's status option, or -1 */
	List	   *prune_quals;	/* KlPruneQual */
	int64		nbatches;		/* batches left after pruning (constants) */
	int64		total_batches;
	double		rows;			/* records in the remaining files */
	double		bytes;
} KlPlanState;

/* How to produce one attribute */
typedef struct KlAttr
{
	AttrNumber	attnum;
	KlColumnKind kind;
	int			field;			/* index into the line's fields */
	Oid			typid;
	FmgrInfo	infunc;
	Oid			typioparam;
	int32		typmod;
	const char *name;
} KlAttr;

/* Execution state */
typedef struct KlScanState
{
	KlSource   *src;
	KlBounds	bounds;
	List	   *batches;		/* KlBatchRef, pruned */
	int64		total_batches;
	ListCell   *next_batch;
	KlBatchRef *batch;			/* current */
	int			file;			/* current file, or -1 before the first */
	bool		file_open;
	KlFileReader reader;
	KlLine		line;
	int			want;			/* KL_WANT_* */
	int			nattrs;
	KlAttr	   *attrs;
	const char *current_column; /* for the error context */
	MemoryContext file_cxt;		/* holds the current file */
	/* for EXPLAIN */
	int64		files_read;
	int64		files_pruned;
	int64		bytes_planned;
	int64		lines_read;
	bool		explain_only;
} KlScanState;

static void kafkaLakeGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid);
static void kafkaLakeGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid);
static ForeignScan *kafkaLakeGetForeignPlan(PlannerInfo *root, RelOptInfo *baserel,
											Oid foreigntableid, ForeignPath *best_path,
											List *tlist, List *scan_clauses, Plan *outer_plan);
static void kafkaLakeBeginForeignScan(ForeignScanState *node, int eflags);
static TupleTableSlot *kafkaLakeIterateForeignScan(ForeignScanState *node);
static void kafkaLakeReScanForeignScan(ForeignScanState *node);
static void kafkaLakeEndForeignScan(ForeignScanState *node);
static void kafkaLakeExplainForeignScan(ForeignScanState *node, ExplainState *es);
static bool kafkaLakeAnalyzeForeignTable(Relation relation, AcquireSampleRowsFunc *func,
										 BlockNumber *totalpages);

/*
 * kafka_lake_fdw_handler
 *		The FDW's callbacks.
 */
Datum
kafka_lake_fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *routine = makeNode(FdwRoutine);

	routine->GetForeignRelSize = kafkaLakeGetForeignRelSize;
	routine->GetForeignPaths = kafkaLakeGetForeignPaths;
	routine->GetForeignPlan = kafkaLakeGetForeignPlan;
	routine->BeginForeignScan = kafkaLakeBeginForeignScan;
	routine->IterateForeignScan = kafkaLakeIterateForeignScan;
	routine->ReScanForeignScan = kafkaLakeReScanForeignScan;
	routine->EndForeignScan = kafkaLakeEndForeignScan;
	routine->ExplainForeignScan = kafkaLakeExplainForeignScan;
	routine->AnalyzeForeignTable = kafkaLakeAnalyzeForeignTable;
	PG_RETURN_POINTER(routine);
}

/*
 * kl_column_kind
 *		What a column of this name reads.
 */
static KlColumnKind
kl_column_kind(const char *name)
{
	for (int i = 0; kl_column_names[i]; i++)
	{
		if (strcmp(kl_column_names[i], name) == 0)
			return (KlColumnKind) i;
	}
	return KL_COL_FIELD;
}

/*
 * kl_column_field_name
 *		The event field a column reads: its "field" option or its name.
 */
static char *
kl_column_field_name(Oid relid, AttrNumber attnum, const char *attname)
{
	List	   *options = GetForeignColumnOptions(relid, attnum);
	ListCell   *cell;

	foreach(cell, options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, "field") == 0)
			return defGetString(def);
	}
	return pstrdup(attname);
}

/*
 * kl_table_status_file
 *		The file of the table's status option, or -1.
 */
static int
kl_table_status_file(const char *status)
{
	return status ? kl_status_file_index(status) : -1;
}

/*
 * kl_datum_to_int64
 *		An integer constant of any width.
 */
static bool
kl_datum_to_int64(Datum d, Oid type, int64 *out)
{
	switch (type)
	{
		case INT2OID:
			*out = DatumGetInt16(d);
			return true;
		case INT4OID:
			*out = DatumGetInt32(d);
			return true;
		case INT8OID:
			*out = DatumGetInt64(d);
			return true;
	}
	return false;
}

/*
 * kl_bounds_apply
 *		Narrow the bounds with one qual whose value is known.
 */
static void
kl_bounds_apply(KlBounds *b, KlColumnKind column, int strategy, Datum value, Oid type,
				bool isnull, const char *topic)
{
	int64		v;

	if (isnull)
	{
		/* a strict comparison with NULL matches nothing */
		b->contradiction = true;
		return;
	}
	switch (column)
	{
		case KL_COL_PARTITION:
		case KL_COL_OFFSET:
			{
				int64		lo,
							hi;

				if (!kl_datum_to_int64(value, type, &v))
					return;
				lo = (column == KL_COL_PARTITION) ? b->partition_lo : b->offset_lo;
				hi = (column == KL_COL_PARTITION) ? b->partition_hi : b->offset_hi;
				switch (strategy)
				{
					case BTLessStrategyNumber:
						hi = Min(hi, v - 1);
						break;
					case BTLessEqualStrategyNumber:
						hi = Min(hi, v);
						break;
					case BTEqualStrategyNumber:
						lo = Max(lo, v);
						hi = Min(hi, v);
						break;
					case BTGreaterEqualStrategyNumber:
						lo = Max(lo, v);
						break;
					case BTGreaterStrategyNumber:
						lo = Max(lo, v + 1);
						break;
				}
				if (column == KL_COL_PARTITION)
				{
					if (hi < 0 || lo > PG_INT32_MAX || lo > hi)
						b->contradiction = true;
					else
					{
						b->partition_lo = (int32) Max(lo, 0);
						b->partition_hi = (int32) Min(hi, PG_INT32_MAX);
					}
				}
				else
				{
					b->offset_lo = Max(lo, 0);
					b->offset_hi = hi;
				}
				break;
			}
		case KL_COL_BUSINESS_DATE:
			{
				DateADT		d;

				if (type != DATEOID)
					return;
				d = DatumGetDateADT(value);
				switch (strategy)
				{
					case BTLessStrategyNumber:
						b->date_hi = Min(b->date_hi, d - 1);
						break;
					case BTLessEqualStrategyNumber:
						b->date_hi = Min(b->date_hi, d);
						break;
					case BTEqualStrategyNumber:
						b->date_lo = Max(b->date_lo, d);
						b->date_hi = Min(b->date_hi, d);
						break;
					case BTGreaterEqualStrategyNumber:
						b->date_lo = Max(b->date_lo, d);
						break;
					case BTGreaterStrategyNumber:
						b->date_lo = Max(b->date_lo, d + 1);
						break;
				}
				/* quarantined records have no business date */
				b->files[KL_FILE_QUARANTINE] = false;
				break;
			}
		case KL_COL_STATUS:
		case KL_COL_BATCH_ID:
		case KL_COL_TOPIC:
			{
				char	   *s;

				if (strategy != BTEqualStrategyNumber ||
					(type != TEXTOID && type != VARCHAROID && type != BPCHAROID))
					return;
				s = TextDatumGetCString(value);
				if (column == KL_COL_STATUS)
				{
					int			f = kl_status_file_index(s);

					for (int i = 0; i < KL_NFILES; i++)
						b->files[i] = b->files[i] && (i == f);
				}
				else if (column == KL_COL_BATCH_ID)
				{
					if (b->batch_id && strcmp(b->batch_id, s) != 0)
						b->contradiction = true;
					b->batch_id = s;
				}
				else if (strcmp(s, topic) != 0)
					b->contradiction = true;
				break;
			}
		default:
			break;
	}
}

/*
 * kl_prune_column_type
 *		The column type a pruning qual needs, per column.
 */
static Oid
kl_prune_column_type(KlColumnKind kind)
{
	switch (kind)
	{
		case KL_COL_PARTITION:
			return INT4OID;
		case KL_COL_OFFSET:
			return INT8OID;
		case KL_COL_BUSINESS_DATE:
			return DATEOID;
		case KL_COL_STATUS:
		case KL_COL_BATCH_ID:
		case KL_COL_TOPIC:
			return TEXTOID;
		default:
			return InvalidOid;
	}
}

/*
 * kl_extract_prune_quals
 *		Pick the restriction clauses that can prune batches or files.
 */
static List *
kl_extract_prune_quals(PlannerInfo *root, RelOptInfo *baserel, Oid relid)
{
	List	   *result = NIL;
	ListCell   *cell;

	foreach(cell, baserel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, cell);
		OpExpr	   *op;
		Node	   *left;
		Node	   *right;
		Var		   *var;
		Expr	   *value;
		bool		var_on_left;
		KlColumnKind kind;
		Oid			coltype;
		Oid			opfamily;
		int			strategy;
		char	   *attname;

		if (!IsA(ri->clause, OpExpr))
			continue;
		op = (OpExpr *) ri->clause;
		if (list_length(op->args) != 2)
			continue;
		left = strip_implicit_coercions(linitial(op->args));
		right = strip_implicit_coercions(lsecond(op->args));
		if (IsA(left, Var) && (IsA(right, Const) || IsA(right, Param)))
		{
			var = (Var *) left;
			value = (Expr *) right;
			var_on_left = true;
		}
		else if (IsA(right, Var) && (IsA(left, Const) || IsA(left, Param)))
		{
			var = (Var *) right;
			value = (Expr *) left;
			var_on_left = false;
		}
		else
			continue;
		if (var->varno != baserel->relid || var->varattno <= 0)
			continue;
		if (IsA(value, Param) && ((Param *) value)->paramkind != PARAM_EXTERN)
			continue;

		attname = get_attname(relid, var->varattno, false);
		kind = kl_column_kind(attname);
		coltype = kl_prune_column_type(kind);
		if (!OidIsValid(coltype) || var->vartype != coltype)
			continue;
		opfamily = get_opclass_family(GetDefaultOpClass(coltype, BTREE_AM_OID));
		strategy = get_op_opfamily_strategy(op->opno, opfamily);
		if (strategy == 0)
			continue;
		if (!var_on_left)
			strategy = BTCommuteStrategyNumber(strategy);
		{
			KlPruneQual *q = palloc(sizeof(KlPruneQual));

			q->column = kind;
			q->strategy = strategy;
			q->value = value;
			result = lappend(result, q);
		}
	}
	return result;
}

/*
 * kl_bounds_from_quals
 *		Bounds from the table's status option and the pruning quals whose
 *		values are known now (constants; parameters at execution).
 */
static void
kl_bounds_from_quals(KlBounds *b, int status_file, List *quals, List *values,
					 const char *topic)
{
	ListCell   *qc;
	ListCell   *vc;

	kl_bounds_init(b);
	if (status_file >= 0)
	{
		for (int i = 0; i < KL_NFILES; i++)
			b->files[i] = (i == status_file);
	}
	forboth(qc, quals, vc, values)
	{
		KlPruneQual *q = lfirst(qc);
		Const	   *c = lfirst(vc);

		if (c == NULL)
			continue;
		kl_bounds_apply(b, q->column, q->strategy, c->constvalue, c->consttype,
						c->constisnull, topic);
	}
}

/*
 * kafkaLakeGetForeignRelSize
 *		Estimate the rows from the catalog counts of the batches and files
 *		left after pruning by constant quals.
 */
static void
kafkaLakeGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	KlPlanState *ps = palloc0(sizeof(KlPlanState));
	char	   *source;
	char	   *status;
	KlSource   *src;
	KlBounds	bounds;
	List	   *consts = NIL;
	ListCell   *cell;
	List	   *batches;
	double		records = 0;
	double		selectivity;

	kl_foreign_table_options(foreigntableid, &source, &status);
	ps->source = source;
	ps->status_file = kl_table_status_file(status);
	ps->prune_quals = kl_extract_prune_quals(root, baserel, foreigntableid);
	src = kl_source_lookup(source);

	foreach(cell, ps->prune_quals)
	{
		KlPruneQual *q = lfirst(cell);

		consts = lappend(consts, IsA(q->value, Const) ? q->value : NULL);
	}
	kl_bounds_from_quals(&bounds, ps->status_file, ps->prune_quals, consts, src->topic);

	if (kl_bounds_empty(&bounds))
		batches = NIL;
	else
		batches = kl_catalog_scan_batches(src, &bounds, false, &ps->total_batches);
	foreach(cell, batches)
	{
		KlBatchRef *b = lfirst(cell);

		for (int i = 0; i < KL_NFILES; i++)
		{
			if (bounds.files[i])
			{
				records += b->counts[i];
				ps->bytes += b->files[i].bytes;
			}
		}
	}
	ps->nbatches = list_length(batches);
	ps->rows = records;

	/*
	 * Pruning already removed whole batches; the remaining quals filter rows
	 * within them.  Apply the ordinary selectivity of all quals, but never
	 * estimate fewer rows than one per batch-wide equality would leave.
	 */
	selectivity = clauselist_selectivity(root, baserel->baserestrictinfo, 0, JOIN_INNER, NULL);
	baserel->rows = clamp_row_est(records * (ps->prune_quals != NIL ? Max(selectivity, 0.01) : selectivity));
	baserel->tuples = records;
	baserel->fdw_private = ps;
}

/*
 * kafkaLakeGetForeignPaths
 *		One path: a sequential read of the remaining files.
 */
static void
kafkaLakeGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	KlPlanState *ps = baserel->fdw_private;
	Cost		startup_cost = 10.0 + ps->nbatches * 0.5;
	Cost		run_cost;

	/* reading and checking the bytes, then parsing each record */
	run_cost = seq_page_cost * (ps->bytes / BLCKSZ) +
		(cpu_tuple_cost + 4 * cpu_operator_cost) * ps->rows;
	run_cost += baserel->baserestrictcost.per_tuple * ps->rows;

	add_path(baserel, (Path *)
			 create_foreignscan_path(root, baserel, NULL, baserel->rows,
									 startup_cost, startup_cost + run_cost,
									 NIL, NULL, NULL, NIL));
}

/*
 * kafkaLakeGetForeignPlan
 *		The plan keeps every qual as a filter; the pruning quals' values
 *		go into fdw_exprs so that parameters are evaluated at execution.
 */
static ForeignScan *
kafkaLakeGetForeignPlan(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
						ForeignPath *best_path, List *tlist, List *scan_clauses,
						Plan *outer_plan)
{
	KlPlanState *ps = baserel->fdw_private;
	List	   *columns = NIL;
	List	   *strategies = NIL;
	List	   *values = NIL;
	ListCell   *cell;

	scan_clauses = extract_actual_clauses(scan_clauses, false);
	foreach(cell, ps->prune_quals)
	{
		KlPruneQual *q = lfirst(cell);

		columns = lappend_int(columns, q->column);
		strategies = lappend_int(strategies, q->strategy);
		values = lappend(values, q->value);
	}
	return make_foreignscan(tlist, scan_clauses, baserel->relid, values,
							list_make5(makeString(ps->source),
									   makeInteger(ps->status_file),
									   columns, strategies,
									   makeFloat(psprintf("%.0f", ps->bytes))),
							NIL, NIL, outer_plan);
}

/*
 * kl_scan_error_callback
 *		Error context of a scan: the file context plus the column.
 */
static void
kl_scan_error_callback(void *arg)
{
	KlScanState *st = (KlScanState *) arg;

	if (st->file_open && st->reader.lineno > 0)
	{
		if (st->current_column)
			errcontext("kafka_lake source \"%s\", batch %s, file %s, line %lld, column %s",
					   st->src->source, st->batch->batch_id, kl_file_names[st->file],
					   (long long) st->reader.lineno, st->current_column);
		else
			errcontext("kafka_lake source \"%s\", batch %s, file %s, line %lld",
					   st->src->source, st->batch->batch_id, kl_file_names[st->file],
					   (long long) st->reader.lineno);
	}
	else if (st->batch)
		errcontext("kafka_lake source \"%s\", batch %s", st->src->source, st->batch->batch_id);
}

/*
 * kl_scan_setup_attrs
 *		Decide how to produce each needed attribute.
 */
static void
kl_scan_setup_attrs(KlScanState *st, Relation rel, Bitmapset *needed)
{
	TupleDesc	desc = RelationGetDescr(rel);
	const char **field_names = palloc(sizeof(char *) * (desc->natts + 2));
	int			nfields = 0;
	int			event_id_field = -1;
	int			date_field = -1;

	st->attrs = palloc0(sizeof(KlAttr) * desc->natts);
	st->nattrs = 0;
	st->want = 0;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		KlAttr	   *a;
		Oid			infunc;

		if (att->attisdropped)
			continue;
		if (needed != NULL && !bms_is_member(att->attnum - FirstLowInvalidHeapAttributeNumber, needed))
			continue;
		a = &st->attrs[st->nattrs++];
		a->attnum = att->attnum;
		a->name = pstrdup(NameStr(att->attname));
		a->kind = kl_column_kind(a->name);
		a->typid = att->atttypid;
		a->typmod = att->atttypmod;
		getTypeInputInfo(att->atttypid, &infunc, &a->typioparam);
		fmgr_info(infunc, &a->infunc);

		switch (a->kind)
		{
			case KL_COL_KEY:
			case KL_COL_OFFSET:
			case KL_COL_PARTITION:
			case KL_COL_TIMESTAMP_MS:
			case KL_COL_TOPIC:
				st->want |= KL_WANT_KAFKA;
				break;
			case KL_COL_FINGERPRINT:
				st->want |= KL_WANT_KAFKA;
				break;
			case KL_COL_EVENT:
				st->want |= KL_WANT_EVENT;
				break;
			case KL_COL_RAW_VALUE:
			case KL_COL_VALIDATION_ERROR:
				st->want |= KL_WANT_QUARANTINE;
				break;
			case KL_COL_EVENT_ID:
				if (event_id_field < 0)
				{
					event_id_field = nfields;
					field_names[nfields++] = "event_id";
				}
				a->field = event_id_field;
				break;
			case KL_COL_BUSINESS_DATE:
				if (date_field < 0)
				{
					date_field = nfields;
					field_names[nfields++] = "business_date";
				}
				a->field = date_field;
				break;
			case KL_COL_FIELD:
				a->field = nfields;
				field_names[nfields++] = kl_column_field_name(RelationGetRelid(rel), att->attnum,
															  a->name);
				break;
			default:
				break;
		}
	}
	/* demoted coordinates are found by offset */
	st->want |= KL_WANT_KAFKA;
	kl_line_set_fields(&st->line, nfields, field_names);
}

/*
 * kafkaLakeBeginForeignScan
 *		Evaluate the pruning values, read the batch list under the
 *		statement's snapshot.
 */
static void
kafkaLakeBeginForeignScan(ForeignScanState *node, int eflags)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	EState	   *estate = node->ss.ps.state;
	List	   *priv = plan->fdw_private;
	KlScanState *st = palloc0(sizeof(KlScanState));
	List	   *columns = lthird(priv);
	List	   *strategies = lfourth(priv);
	List	   *quals = NIL;
	List	   *values = NIL;
	ListCell   *vc;
	ListCell   *cc;
	ListCell   *sc;
	Bitmapset  *needed = NULL;
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	Relation	rel = node->ss.ss_currentRelation;

	node->fdw_state = st;
	st->explain_only = (eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0;
	st->src = kl_source_lookup(strVal(linitial(priv)));
	st->file = -1;
	st->bytes_planned = (int64) strtod(strVal(list_nth(priv, 4)), NULL);
	st->file_cxt = AllocSetContextCreate(estate->es_query_cxt, "kafka_lake file",
										 ALLOCSET_DEFAULT_SIZES);

	/* the pruning values, now that parameters are known */
	forthree(cc, columns, sc, strategies, vc, plan->fdw_exprs)
	{
		KlPruneQual *q = palloc(sizeof(KlPruneQual));
		ExprState  *es = ExecInitExpr((Expr *) lfirst(vc), &node->ss.ps);
		bool		isnull;
		Datum		d = ExecEvalExpr(es, econtext, &isnull);

		q->column = lfirst_int(cc);
		q->strategy = lfirst_int(sc);
		q->value = NULL;
		quals = lappend(quals, q);
		{
			Oid			type = exprType(lfirst(vc));
			int16		typlen;
			bool		typbyval;

			get_typlenbyval(type, &typlen, &typbyval);
			values = lappend(values, makeConst(type, -1, InvalidOid, typlen,
											   d, isnull, typbyval));
		}
	}
	kl_bounds_from_quals(&st->bounds, intVal(lsecond(priv)), quals, values, st->src->topic);

	/* the attributes the plan needs: its target list and its filters */
	pull_varattnos((Node *) plan->scan.plan.targetlist, plan->scan.scanrelid, &needed);
	pull_varattnos((Node *) plan->scan.plan.qual, plan->scan.scanrelid, &needed);
	if (bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, needed))
		needed = NULL;			/* whole-row reference: everything */
	kl_scan_setup_attrs(st, rel, needed);

	if (kl_bounds_empty(&st->bounds))
	{
		st->batches = NIL;
		st->total_batches = -1;
	}
	else
	{
		bool		want_fp = false;

		for (int i = 0; i < st->nattrs; i++)
			want_fp |= (st->attrs[i].kind == KL_COL_FINGERPRINT);
		st->batches = kl_catalog_scan_batches(st->src, &st->bounds, want_fp, &st->total_batches);
	}
	st->next_batch = list_head(st->batches);
}

/*
 * kl_next_file
 *		Open the next file that can hold rows; false at the end.
 */
static bool
kl_next_file(KlScanState *st)
{
	for (;;)
	{
		if (st->file_open)
		{
			kl_reader_close(&st->reader);
			st->file_open = false;
			MemoryContextReset(st->file_cxt);
		}
		if (st->batch == NULL || st->file + 1 >= KL_NFILES)
		{
			if (st->next_batch == NULL)
				return false;
			st->batch = lfirst(st->next_batch);
			st->next_batch = lnext(st->batches, st->next_batch);
			st->file = -1;
		}
		st->file++;
		if (!st->bounds.files[st->file] || st->batch->files[st->file].lines == 0)
		{
			st->files_pruned++;
			continue;
		}
		{
			MemoryContext old = MemoryContextSwitchTo(st->file_cxt);

			kl_reader_open(&st->reader, st->src, st->batch, st->file);
			MemoryContextSwitchTo(old);
		}
		st->file_open = true;
		st->files_read++;
		return true;
	}
}

/*
 * kl_text_datum
 *		A text datum from a JSON value: decoded string, or the literal.
 */
static Datum
kl_text_datum(const KlJsonValue *v)
{
	if (v->type == KL_JSON_STRING)
	{
		if (!v->has_escapes)
			return PointerGetDatum(cstring_to_text_with_len(v->start + 1, v->len - 2));
		else
		{
			StringInfoData buf;

			initStringInfo(&buf);
			kl_json_decode_string(v, &buf);
			return PointerGetDatum(cstring_to_text_with_len(buf.data, buf.len));
		}
	}
	return PointerGetDatum(cstring_to_text_with_len(v->start, v->len));
}

/*
 * kl_value_cstring
 *		A JSON value as the text an input function reads.
 */
static char *
kl_value_cstring(const KlJsonValue *v)
{
	if (v->type == KL_JSON_STRING)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		kl_json_decode_string(v, &buf);
		return buf.data;
	}
	return pnstrdup(v->start, v->len);
}

/*
 * kl_field_datum
 *		An event field (or any JSON value) as a datum of the column's type.
 */
static Datum
kl_field_datum(KlAttr *a, const KlJsonValue *v, bool *isnull)
{
	*isnull = false;
	if (v->type == KL_JSON_NULL)
	{
		*isnull = true;
		return (Datum) 0;
	}
	switch (a->typid)
	{
		case INT4OID:
		case INT8OID:
			if (v->type == KL_JSON_NUMBER && v->is_integer)
			{
				int64		n;

				if (kl_json_parse_int64(v->start, v->len, &n))
				{
					if (a->typid == INT8OID)
						return Int64GetDatum(n);
					if (n >= PG_INT32_MIN && n <= PG_INT32_MAX)
						return Int32GetDatum((int32) n);
				}
			}
			break;
		case TEXTOID:
			return kl_text_datum(v);
		case DATEOID:
			if (v->type == KL_JSON_STRING && !v->has_escapes)
			{
				DateADT		d;

				if (kl_parse_iso_date(v->start + 1, v->len - 2, &d))
					return DateADTGetDatum(d);
			}
			break;
	}
	return InputFunctionCall(&a->infunc, kl_value_cstring(v), a->typioparam, a->typmod);
}

/*
 * kl_fill_row
 *		Build the row of the current line into the slot.
 */
static void
kl_fill_row(KlScanState *st, TupleTableSlot *slot)
{
	Datum	   *values = slot->tts_values;
	bool	   *nulls = slot->tts_isnull;
	KlLine	   *line = &st->line;

	memset(nulls, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	for (int i = 0; i < st->nattrs; i++)
	{
		KlAttr	   *a = &st->attrs[i];
		int			col = a->attnum - 1;
		bool		isnull = false;
		Datum		d = (Datum) 0;
		char	   *text = NULL;

		st->current_column = a->name;
		switch (a->kind)
		{
			case KL_COL_TOPIC:
				text = st->src->topic;
				break;
			case KL_COL_PARTITION:
				if (a->typid == INT4OID)
					d = Int32GetDatum(st->batch->partition);
				else
					text = psprintf("%d", st->batch->partition);
				break;
			case KL_COL_OFFSET:
				if (a->typid == INT8OID)
					d = Int64GetDatum(line->offset);
				else
					text = psprintf("%lld", (long long) line->offset);
				break;
			case KL_COL_KEY:
				if (line->key.type == KL_JSON_STRING)
					d = kl_field_datum(a, &line->key, &isnull);
				else if (line->key_base64.type == KL_JSON_STRING)
					d = kl_field_datum(a, &line->key_base64, &isnull);
				else
					isnull = true;
				break;
			case KL_COL_TIMESTAMP_MS:
				if (line->timestamp_ms < 0)
					isnull = true;
				else if (a->typid == INT8OID)
					d = Int64GetDatum(line->timestamp_ms);
				else
					text = psprintf("%lld", (long long) line->timestamp_ms);
				break;
			case KL_COL_FINGERPRINT:
				{
					int			idx = kl_batch_coordinate_index(st->batch, line->offset);

					if (idx < 0 || idx >= st->batch->nfingerprints)
						isnull = true;
					else
					{
						char		hex[KL_SHA256_HEX_LEN + 1];

						kl_hex(st->batch->fingerprints + idx * KL_SHA256_LEN, KL_SHA256_LEN, hex);
						text = pstrdup(hex);
					}
					break;
				}
			case KL_COL_STATUS:
				text = (char *) kl_status_names[st->file];
				break;
			case KL_COL_EVENT_ID:
			case KL_COL_BUSINESS_DATE:
			case KL_COL_FIELD:
				d = kl_field_datum(a, &line->fields[a->field], &isnull);
				break;
			case KL_COL_EVENT:
				d = kl_field_datum(a, &line->event, &isnull);
				break;
			case KL_COL_RAW_VALUE:
				if (line->raw_value.type == KL_JSON_STRING)
					d = kl_field_datum(a, &line->raw_value, &isnull);
				else if (line->raw_value_base64.type == KL_JSON_STRING)
					d = kl_field_datum(a, &line->raw_value_base64, &isnull);
				else
					isnull = true;
				break;
			case KL_COL_VALIDATION_ERROR:
				d = kl_field_datum(a, &line->validation_error, &isnull);
				break;
			case KL_COL_BATCH_ID:
				text = st->batch->batch_id;
				break;
		}
		if (text != NULL)
		{
			if (a->typid == TEXTOID)
				d = CStringGetTextDatum(text);
			else
				d = InputFunctionCall(&a->infunc, text, a->typioparam, a->typmod);
		}
		values[col] = d;
		nulls[col] = isnull;
	}
	st->current_column = NULL;
}

/*
 * kl_line_demoted
 *		Is this accepted line's coordinate one that recover() demoted?
 */
static bool
kl_line_demoted(KlScanState *st)
{
	int			idx;

	if (st->batch->demoted_statuses == NULL || st->file != KL_FILE_ACCEPTED)
		return false;
	idx = kl_batch_coordinate_index(st->batch, st->line.offset);
	return idx >= 0 && st->batch->demoted_statuses[idx] == KL_STATUS_DEMOTED;
}

/*
 * kafkaLakeIterateForeignScan
 *		The next row.
 */
static TupleTableSlot *
kafkaLakeIterateForeignScan(ForeignScanState *node)
{
	KlScanState *st = node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	ErrorContextCallback errcallback;
	const char *text;
	size_t		len;

	ExecClearTuple(slot);
	errcallback.callback = kl_scan_error_callback;
	errcallback.arg = st;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (!st->file_open || !kl_reader_next(&st->reader, &text, &len))
		{
			if (!kl_next_file(st))
				break;
			continue;
		}
		st->lines_read++;
		kl_line_parse(&st->line, text, len, st->want);
		if (kl_line_demoted(st))
			continue;
		kl_fill_row(st, slot);
		ExecStoreVirtualTuple(slot);
		break;
	}

	error_context_stack = errcallback.previous;
	return slot;
}

/*
 * kafkaLakeReScanForeignScan
 *		Start again from the first batch.
 */
static void
kafkaLakeReScanForeignScan(ForeignScanState *node)
{
	KlScanState *st = node->fdw_state;

	if (st->file_open)
	{
		kl_reader_close(&st->reader);
		st->file_open = false;
	}
	MemoryContextReset(st->file_cxt);
	st->batch = NULL;
	st->file = -1;
	st->next_batch = list_head(st->batches);
}

/*
 * kafkaLakeEndForeignScan
 *		Release the current file.
 */
static void
kafkaLakeEndForeignScan(ForeignScanState *node)
{
	KlScanState *st = node->fdw_state;

	if (st == NULL)
		return;
	if (st->file_open)
		kl_reader_close(&st->reader);
	st->file_open = false;
}

/*
 * kafkaLakeExplainForeignScan
 *		Source, statuses, batches and files read and pruned, bytes.
 */
static void
kafkaLakeExplainForeignScan(ForeignScanState *node, ExplainState *es)
{
	KlScanState *st = node->fdw_state;
	StringInfoData statuses;
	int64		nbatches = list_length(st->batches);
	int64		pruned = st->total_batches >= 0 ? st->total_batches - nbatches : 0;
	int64		files = 0;
	int64		bytes = 0;
	ListCell   *cell;

	initStringInfo(&statuses);
	for (int i = 0; i < KL_NFILES; i++)
	{
		if (st->bounds.files[i])
			appendStringInfo(&statuses, "%s%s", statuses.len ? ", " : "", kl_status_names[i]);
	}
	foreach(cell, st->batches)
	{
		KlBatchRef *b = lfirst(cell);

		for (int i = 0; i < KL_NFILES; i++)
		{
			if (st->bounds.files[i] && b->files[i].lines > 0)
			{
				files++;
				bytes += b->files[i].bytes;
			}
		}
	}

	ExplainPropertyText("Kafka Lake Source", psprintf("%s (topic %s)", st->src->source, st->src->topic), es);
	ExplainPropertyText("Statuses", statuses.len ? statuses.data : "none", es);
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		ExplainPropertyText("Batches", psprintf("%lld read, %lld pruned",
												(long long) nbatches, (long long) pruned), es);
		ExplainPropertyText("Files", psprintf("%lld read, %lld pruned",
											  (long long) files,
											  (long long) (nbatches * KL_NFILES - files + pruned * KL_NFILES)), es);
	}
	else
	{
		ExplainPropertyInteger("Batches Read", NULL, nbatches, es);
		ExplainPropertyInteger("Batches Pruned", NULL, pruned, es);
		ExplainPropertyInteger("Files Read", NULL, files, es);
		ExplainPropertyInteger("Files Pruned", NULL, nbatches * KL_NFILES - files + pruned * KL_NFILES, es);
	}
	if (es->costs)
		ExplainPropertyInteger("File Bytes", NULL, bytes, es);
	if (es->analyze)
		ExplainPropertyInteger("Lines Read", NULL, st->lines_read, es);
}

/*
 * kl_acquire_sample_rows
 *		ANALYZE: read every row once, keep a reservoir sample.
 */
static int
kl_acquire_sample_rows(Relation onerel, int elevel, HeapTuple *rows, int targrows,
					   double *totalrows, double *totaldeadrows)
{
	KlScanState st = {0};
	char	   *source;
	char	   *status;
	TupleDesc	desc = RelationGetDescr(onerel);
	Datum	   *values = palloc(sizeof(Datum) * desc->natts);
	bool	   *nulls = palloc(sizeof(bool) * desc->natts);
	TupleTableSlot *slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	ReservoirStateData rstate;
	int			numrows = 0;
	double		rowstoskip = -1;
	MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_lake analyze",
												  ALLOCSET_DEFAULT_SIZES);
	const char *text;
	size_t		len;
	int			status_file;

	kl_foreign_table_options(RelationGetRelid(onerel), &source, &status);
	status_file = kl_table_status_file(status);
	st.src = kl_source_lookup(source);
	st.file = -1;
	st.file_cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_lake file",
										ALLOCSET_DEFAULT_SIZES);
	kl_bounds_from_quals(&st.bounds, status_file, NIL, NIL, st.src->topic);
	kl_scan_setup_attrs(&st, onerel, NULL);
	st.batches = kl_catalog_scan_batches(st.src, &st.bounds, true, &st.total_batches);
	st.next_batch = list_head(st.batches);

	*totalrows = 0;
	*totaldeadrows = 0;
	reservoir_init_selection_state(&rstate, targrows);

	for (;;)
	{
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		vacuum_delay_point();
		if (!st.file_open || !kl_reader_next(&st.reader, &text, &len))
		{
			if (!kl_next_file(&st))
				break;
			continue;
		}
		kl_line_parse(&st.line, text, len, st.want);
		if (kl_line_demoted(&st))
			continue;

		MemoryContextReset(row_cxt);
		old = MemoryContextSwitchTo(row_cxt);
		ExecClearTuple(slot);
		kl_fill_row(&st, slot);
		memcpy(values, slot->tts_values, sizeof(Datum) * desc->natts);
		memcpy(nulls, slot->tts_isnull, sizeof(bool) * desc->natts);
		MemoryContextSwitchTo(old);

		if (numrows < targrows)
			rows[numrows++] = heap_form_tuple(desc, values, nulls);
		else
		{
			if (rowstoskip < 0)
				rowstoskip = reservoir_get_next_S(&rstate, *totalrows, targrows);
			if (rowstoskip <= 0)
			{
				int			k = (int) (targrows * sampler_random_fract(&rstate.randstate));

				heap_freetuple(rows[k]);
				rows[k] = heap_form_tuple(desc, values, nulls);
			}
			rowstoskip -= 1;
		}
		*totalrows += 1;
	}
	if (st.file_open)
		kl_reader_close(&st.reader);
	ExecDropSingleTupleTableSlot(slot);

	ereport(elevel,
			(errmsg("\"%s\": kafka_lake source \"%s\", %lld batches, %.0f rows; %d rows in sample",
					RelationGetRelationName(onerel), st.src->source,
					(long long) list_length(st.batches), *totalrows, numrows)));
	return numrows;
}

/*
 * kafkaLakeAnalyzeForeignTable
 *		ANALYZE is supported: sample every landed row.
 */
static bool
kafkaLakeAnalyzeForeignTable(Relation relation, AcquireSampleRowsFunc *func,
							 BlockNumber *totalpages)
{
	char	   *source;
	char	   *status;
	KlSource   *src;
	KlBounds	bounds;
	int64		total;
	double		bytes = 0;
	ListCell   *cell;
	List	   *batches;

	kl_foreign_table_options(RelationGetRelid(relation), &source, &status);
	src = kl_source_lookup(source);
	kl_bounds_from_quals(&bounds, kl_table_status_file(status), NIL, NIL, src->topic);
	batches = kl_catalog_scan_batches(src, &bounds, false, &total);
	foreach(cell, batches)
	{
		KlBatchRef *b = lfirst(cell);

		for (int i = 0; i < KL_NFILES; i++)
			bytes += bounds.files[i] ? b->files[i].bytes : 0;
	}
	*totalpages = (BlockNumber) Max(1, bytes / BLCKSZ);
	*func = kl_acquire_sample_rows;
	return true;
}
