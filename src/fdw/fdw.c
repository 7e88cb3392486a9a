/*-------------------------------------------------------------------------
 *
 * fdw.c
 *	  The foreign table over landed JSONL: planning (pruning, estimates),
 *	  the scan, EXPLAIN and ANALYZE.
 *
 * A kafka_lake foreign table names a source (and optionally one status);
 * its columns are either the envelope columns of kafka_lake.<source>_records
 * (topic, partition, "offset", key, timestamp_ms, fingerprint, status,
 * event_id, business_date, event, raw_value, validation_error, batch_id,
 * headers, contract, contract_version) or, under any other name, a field of
 * the event, read with the column's type.  event_id and business_date come
 * from the line's own members when it has them (a contract whose event does
 * not hold them under those names, batch_format.c), else from the event's
 * fields of those names; contract and contract_version are the batch's.
 * The typed table <source>_events (contract_catalog.c) is such a table.
 * The column option "field" makes any column an event field of that name.  A
 * table reads only a source of its own server: USAGE on a server is what
 * lets a role declare foreign tables there, so it must not open another
 * server's landing.
 *
 * Privileges.  The catalog is read as the extension's owner (catalog.c), so
 * the source's own table kafka_lake.<source>_records is governed by GRANT
 * SELECT on it alone (table or column privileges, checked by PostgreSQL).
 * USAGE on the server would otherwise open every source to any role that
 * declares a table of its own with OPTIONS (source ...): so reading a source
 * through any other foreign table also needs SELECT on the source's own
 * table (on the whole table: a privilege on some of its columns does not let
 * a role read the others through a table of its own), for the role the scan
 * runs as (the owner of a view the table is read through, else the current
 * user; the table's owner for ANALYZE).  It is checked when the scan starts
 * (EXPLAIN included) and, for the declaring role, by the validator when the
 * table is created or its source changed (kl_check_source_read,
 * options.c).  A view owned by a role that may read the source is how a
 * narrower window is granted.
 *
 * Planning.  Restriction clauses of the form <column> <op> <value> and
 * <column> = ANY (<array>) (hence IN lists) on partition, "offset",
 * business_date, status, batch_id and topic become bounds (catalog.c,
 * KlBounds) plus value sets (KlPrune, below) that prune whole batches (in
 * the catalog query and right after it) and whole files (by status) before
 * anything is opened.  <value> is anything the executor can compute once
 * per scan: a constant, a parameter, a stable expression of those.  A text
 * comparison prunes only under a deterministic collation.  The clauses stay
 * in the plan as ordinary filters: pruning only ever skips what cannot
 * match.  Row estimates come from the catalog's per-batch counts of the
 * batches and files left after pruning by the clauses known at plan time
 * (with the share of each batch's offset and date range that the bounds
 * keep), times the ordinary selectivity of the other clauses, so the
 * planner sees the landed count without ANALYZE; ANALYZE samples the rows
 * for column statistics.
 *
 * Which columns.  As file_fdw does, the columns to produce are those the
 * query needs (the relation's target list and its restriction clauses), not
 * those of the plan's target list, which may be the whole physical row; the
 * others are returned as NULL, and an event field nobody needs is never
 * looked for.
 *
 * Execution.  The batch list is read at the start of the scan with the
 * statement's snapshot (a cursor keeps the list it started with), each
 * needed file is read whole into one of two buffers reused from file to
 * file, the next file by a job on a helper thread while the current one's
 * rows are returned (kl_next_file), and checked (size, lines, CRC-32C)
 * before its first row (batch_read.c); each
 * line is parsed only as far as the columns asked for need, by the fast
 * path of the batch format (batch_format.c, which EXPLAIN (ANALYZE,
 * VERBOSE) shows at work).  Values are built straight from the JSON spans,
 * with fast paths for integers, booleans, text, dates and ISO-8601
 * timestamps with a zone; other types go through the column type's input
 * function, and an error there names column, batch, file and line (error
 * context) and says what to do (hint).  Constant columns (topic, status,
 * batch_id) are built once per scan.  A coordinate that recover() demoted
 * (an accepted line whose event_id was accepted first elsewhere; 'D' in the
 * catalog) reads as a duplicate, as recover() reports: the accepted file of
 * its batch is read for duplicate_event_id too.  A quarantined coordinate
 * that a readmit unit re-admitted ('R', readmit.c) is skipped in the
 * quarantine file of its batch: the unit, an ordinary batch to the scan,
 * holds it now.  A json or jsonb column reads a value's JSON text (a string
 * with its quotes).  CHECK_FOR_INTERRUPTS runs
 * for every line, so cancel and statement_timeout stop a scan promptly.
 *
 * Expired batches (expire.c) are never read: a scan whose pruned batches
 * include one that it would read a file of is refused when it starts,
 * naming the expired dates (kl_refuse_expired), rather than returning what
 * is left; EXPLAIN counts them, and ANALYZE samples the others.
 *
 * IDENTIFICATION
 *	  src/fdw/fdw.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/reloptions.h"
#include "access/stratnum.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "catalog/namespace.h"
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
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/sampling.h"
#include "utils/timestamp.h"

#include "base/builtin_types.h"
#include "base/compat.h"
#include "base/digest.h"
#include "base/json.h"
#include "contract/contract.h"
#include "format/batch_format.h"
#include "kafka/options.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/catalog_exclusions.h"
#include "landing/batch_read.h"

PG_FUNCTION_INFO_V1(kafka_lake_fdw_handler);

/* EXPLAIN (GENERIC_PLAN) runs no query: its parameters have no values (16+) */
#ifndef EXEC_FLAG_EXPLAIN_GENERIC
#define EXEC_FLAG_EXPLAIN_GENERIC 0
#endif

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
	KL_COL_HEADERS,
	KL_COL_CONTRACT,
	KL_COL_CONTRACT_VERSION,
	KL_COL_FIELD				/* any other name: an event field */
} KlColumnKind;

static const char *const kl_column_names[] = {
	"topic", "partition", "offset", "key", "timestamp_ms", "fingerprint",
	"status", "event_id", "business_date", "event", "raw_value",
	"validation_error", "batch_id", "headers", "contract", "contract_version", NULL
};

/* ... and their types in kafka_lake.<source>_records */
static const char *const kl_column_types[] = {
	"text", "integer", "bigint", "text", "bigint", "text",
	"text", "text", "date", "jsonb", "text",
	"text", "text", "jsonb", "text", "integer", NULL
};

/* One clause that can prune: <column> <strategy> <value>, or = ANY (<array>) */
typedef struct KlPruneQual
{
	KlColumnKind column;
	int			strategy;		/* BTLessStrategyNumber ... */
	bool		is_array;		/* column = ANY (value) */
	Expr	   *value;			/* computable once per scan */
	RestrictInfo *rinfo;		/* planning only */
} KlPruneQual;

/* A set of allowed values of one column, from = ANY clauses (sorted) */
typedef struct KlValueSet
{
	bool		active;			/* false: no set, anything within bounds */
	int			n;
	int64	   *values;			/* partitions, offsets or dates */
} KlValueSet;

/* Everything that prunes: the catalog query's bounds, and sets applied after it */
typedef struct KlPrune
{
	KlBounds	bounds;
	KlValueSet	partitions;
	KlValueSet	offsets;
	KlValueSet	dates;
	bool		batch_ids_active;
	List	   *batch_ids;		/* C strings */
	uint64		topics;			/* bit i: the source's i-th topic may match */
} KlPrune;

/* Indexes of the ForeignScan's fdw_private list */
enum KlFdwPrivate
{
	KL_PRIV_SOURCE,				/* String: the source */
	KL_PRIV_STATUS_FILE,		/* Integer: the status option's file, or -1 */
	KL_PRIV_COLUMNS,			/* int List: KlColumnKind of each prune qual */
	KL_PRIV_STRATEGIES,			/* int List: its strategy */
	KL_PRIV_IS_ARRAY,			/* int List: 1 for = ANY */
	KL_PRIV_ATTRS,				/* int List: attnums the query needs */
	KL_PRIV_ALL_ATTRS			/* Integer: 1 when every column is needed */
};

/* Planning state (baserel->fdw_private) */
typedef struct KlPlanState
{
	char	   *source;			/* the table's source option */
	int			status_file;	/* the table's status option, or -1 */
	List	   *prune_quals;	/* KlPruneQual */
	List	   *attrs;			/* attnums the query needs */
	bool		all_attrs;		/* a whole-row reference: all of them */
	int			nfields;		/* event fields among them */
	int64		nbatches;		/* batches left after pruning (constants) */
	double		rows;			/* records in the remaining files */
	double		bytes;			/* bytes of the remaining files */
} KlPlanState;

/* How to produce one attribute */
typedef struct KlAttr
{
	AttrNumber	attnum;
	KlColumnKind kind;
	int			field;			/* event fields: index into the line's fields */
	const char *field_name;		/* event fields: the field's name */
	Oid			typid;
	int32		typmod;
	FmgrInfo	infunc;
	Oid			typioparam;
	const char *name;			/* the column's name */
} KlAttr;

/* Execution state (also used by ANALYZE) */
typedef struct KlScanState
{
	KlSource   *src;
	KlPrune		prune;			/* bounds and value sets */
	List	   *batches;		/* KlBatch, after pruning */
	List	   *expired;		/* KlBatch it would read, but expired */
	int64		total_batches;	/* batches of the source */
	ListCell   *batch_cell;		/* of the current batch; NULL before the first */
	KlBatch *batch;			/* current batch */
	int			file;			/* current file, or -1 before the first */
	bool		at_end;			/* every file has been read */
	bool		manifest_checked;	/* the current batch's manifest is */
	bool		file_open;
	KlFileReader reader;
	/* the file after the current one, read by a job meanwhile (kl_next_file) */
	bool		ahead_out;
	ListCell   *ahead_cell;
	int			ahead_file;
	KlFileReader ahead;
	KlReadAhead *ra;
	char	   *buffers[2];		/* the current file's and the next one's,
								 * reused from file to file */
	size_t		buffer_sizes[2];
	int			cur;			/* which of them is the current file's */
	KlLine		line;
	int			want;			/* KL_WANT_* the columns need */
	int			file_want;		/* ... plus the offset where demoted */
	bool		check_demoted;	/* current file has coordinates whose letter
								 * changes their status: demoted ('D'),
								 * excluded ('X') or promoted ('P') */
	bool		check_readmitted;	/* current file has re-admitted ones */
	int			row_status;		/* KL_FILE_* of the status of the current row,
								 * or KL_ROW_EXCLUDED */
	List	   *exclusions;		/* KlExclusion of the source, for the reasons
								 * of excluded rows; loaded when first needed */
	bool		exclusions_loaded;
	int			nattrs;
	KlAttr	   *attrs;
	Datum	   *topic_datums;	/* constant columns, as text: per topic */
	Datum		status_datums[KL_NFILES + 1];	/* and "excluded" */
	Datum	   *batch_id_datums;	/* per batch, built when first needed */
	int			batch_index;	/* of the current batch */
	KlAttr	   *current_attr;	/* for the error context */
	const KlJsonValue *current_value;
	MemoryContext scan_cxt;		/* lives as long as the scan */
	/* what EXPLAIN shows */
	int64		files_planned;
	int64		files_pruned;
	int64		bytes_planned;
	int64		files_checked;
	int64		lines_read;
} KlScanState;

static const char *kl_exclusion_reason(KlScanState *st);
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

/* ----------------------------------------------------------------
 *		Columns
 * ----------------------------------------------------------------
 */

/*
 * kl_column_field_option
 *		The column's "field" option, or NULL.
 */
static char *
kl_column_field_option(Oid relid, AttrNumber attnum)
{
	ListCell   *cell;

	foreach(cell, GetForeignColumnOptions(relid, attnum))
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, "field") == 0)
			return defGetString(def);
	}
	return NULL;
}

/*
 * kl_column_kind
 *		What a column reads: an event field when it has the "field" option
 *		or a name that is not an envelope column's; *field_name gets the
 *		event field's name.
 */
static KlColumnKind
kl_column_kind(Oid relid, AttrNumber attnum, const char *attname, const char **field_name)
{
	char	   *field = kl_column_field_option(relid, attnum);

	if (field != NULL)
	{
		if (field_name)
			*field_name = field;
		return KL_COL_FIELD;
	}
	for (int i = 0; kl_column_names[i]; i++)
	{
		if (strcmp(kl_column_names[i], attname) == 0)
		{
			if (field_name)
				*field_name = (i == KL_COL_EVENT_ID) ? "event_id" :
					(i == KL_COL_BUSINESS_DATE) ? "business_date" : NULL;
			return (KlColumnKind) i;
		}
	}
	if (field_name)
		*field_name = pstrdup(attname);
	return KL_COL_FIELD;
}

/*
 * kl_table_source
 *		The source a foreign table reads (its options "source" and "status"),
 *		which must land from the table's own server: USAGE on a server is
 *		what lets a role declare foreign tables over it, so a table on one
 *		server never reads the landing of another server's sources.
 */
static KlSource *
kl_table_source(Oid relid, char **source, char **status)
{
	ForeignServer *server = GetForeignServer(GetForeignTable(relid)->serverid);
	KlSource   *src;

	kl_foreign_table_options(relid, source, status);
	src = kl_source_lookup(*source);
	if (strcmp(src->server, server->servername) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("foreign table \"%s\" is on server \"%s\", but source \"%s\" lands from server \"%s\"",
						get_rel_name(relid), server->servername, src->source, src->server),
				 errhint("Declare the foreign table on server \"%s\".", src->server)));
	return src;
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

/* ----------------------------------------------------------------
 *		Pruning
 * ----------------------------------------------------------------
 */

/*
 * kl_prune_column_type
 *		The column type a pruning clause needs, per column.
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
 * kl_prune_value_type_ok
 *		Can kl_prune_apply read a value of this type for this column?
 */
static bool
kl_prune_value_type_ok(KlColumnKind kind, Oid type)
{
	switch (kind)
	{
		case KL_COL_PARTITION:
		case KL_COL_OFFSET:
			return type == INT2OID || type == INT4OID || type == INT8OID;
		case KL_COL_BUSINESS_DATE:
			return type == DATEOID;
		case KL_COL_STATUS:
		case KL_COL_BATCH_ID:
		case KL_COL_TOPIC:
			return type == TEXTOID || type == VARCHAROID;
		default:
			return false;
	}
}

/*
 * kl_contains_exec_param_walker
 *		Does an expression use a parameter set during execution (a join's or
 *		a subplan's)?  Those change from rescan to rescan; we prune only by
 *		values fixed for the whole scan.
 */
static bool
kl_contains_exec_param_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return ((Param *) node)->paramkind != PARAM_EXTERN;
	return expression_tree_walker(node, kl_contains_exec_param_walker, context);
}

/*
 * kl_prune_value_ok
 *		Is this expression computable once, at the start of the scan?
 */
static bool
kl_prune_value_ok(Node *value)
{
	return !contain_var_clause(value) &&
		!contain_volatile_functions(value) &&
		!contain_subplans(value) &&
		!kl_contains_exec_param_walker(value, NULL);
}

/*
 * kl_strip_relabel
 *		Look through binary-compatible relabelings.
 */
static Node *
kl_strip_relabel(Node *node)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return node;
}

/*
 * kl_collation_ok
 *		Text equality prunes only where it means byte equality.
 */
static bool
kl_collation_ok(KlColumnKind kind, Oid collid)
{
	if (kind != KL_COL_STATUS && kind != KL_COL_BATCH_ID && kind != KL_COL_TOPIC)
		return true;
	return !OidIsValid(collid) || get_collation_isdeterministic(collid);
}

/*
 * kl_prune_var_kind
 *		If node is a column of this relation that pruning understands (with
 *		its own type), its kind; else -1.
 */
static int
kl_prune_var_kind(Node *node, RelOptInfo *baserel, Oid relid)
{
	Var		   *var;
	KlColumnKind kind;

	node = kl_strip_relabel(node);
	if (node == NULL || !IsA(node, Var))
		return -1;
	var = (Var *) node;
	if (var->varno != baserel->relid || var->varattno <= 0 || var->varlevelsup != 0)
		return -1;
	kind = kl_column_kind(relid, var->varattno, get_attname(relid, var->varattno, false), NULL);
	if (!OidIsValid(kl_prune_column_type(kind)) || var->vartype != kl_prune_column_type(kind))
		return -1;
	return (int) kind;
}

/*
 * kl_extract_prune_quals
 *		Pick the restriction clauses that can prune batches or files.
 */
static List *
kl_extract_prune_quals(RelOptInfo *baserel, Oid relid)
{
	List	   *result = NIL;
	ListCell   *cell;

	foreach(cell, baserel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, cell);
		Node	   *clause = (Node *) ri->clause;
		KlPruneQual *q;
		int			kind;
		Oid			opno;
		int			strategy;
		Expr	   *value;
		bool		is_array = false;

		if (IsA(clause, OpExpr) && list_length(((OpExpr *) clause)->args) == 2)
		{
			OpExpr	   *op = (OpExpr *) clause;
			Node	   *left = linitial(op->args);
			Node	   *right = lsecond(op->args);
			bool		var_on_left;

			if ((kind = kl_prune_var_kind(left, baserel, relid)) >= 0 && kl_prune_value_ok(right))
			{
				var_on_left = true;
				value = (Expr *) right;
			}
			else if ((kind = kl_prune_var_kind(right, baserel, relid)) >= 0 && kl_prune_value_ok(left))
			{
				var_on_left = false;
				value = (Expr *) left;
			}
			else
				continue;
			if (!kl_collation_ok(kind, op->inputcollid))
				continue;
			opno = op->opno;
			strategy = get_op_opfamily_strategy(opno,
												get_opclass_family(GetDefaultOpClass(kl_prune_column_type(kind),
																					 BTREE_AM_OID)));
			if (strategy == 0)
				continue;
			if (!var_on_left)
				strategy = BTCommuteStrategyNumber(strategy);
			if (!kl_prune_value_type_ok(kind, exprType((Node *) value)))
				continue;
		}
		else if (IsA(clause, ScalarArrayOpExpr))
		{
			ScalarArrayOpExpr *saop = (ScalarArrayOpExpr *) clause;
			Oid			elemtype;

			if (!saop->useOr || list_length(saop->args) != 2)
				continue;
			kind = kl_prune_var_kind(linitial(saop->args), baserel, relid);
			value = (Expr *) lsecond(saop->args);
			if (kind < 0 || !kl_prune_value_ok((Node *) value) ||
				!kl_collation_ok(kind, saop->inputcollid))
				continue;
			strategy = get_op_opfamily_strategy(saop->opno,
												get_opclass_family(GetDefaultOpClass(kl_prune_column_type(kind),
																					 BTREE_AM_OID)));
			if (strategy != BTEqualStrategyNumber)
				continue;
			elemtype = get_element_type(exprType((Node *) value));
			if (!OidIsValid(elemtype) || !kl_prune_value_type_ok(kind, elemtype))
				continue;
			is_array = true;
		}
		else
			continue;

		q = palloc0(sizeof(KlPruneQual));
		q->column = (KlColumnKind) kind;
		q->strategy = strategy;
		q->is_array = is_array;
		q->value = value;
		q->rinfo = ri;
		result = lappend(result, q);
	}
	return result;
}

/*
 * kl_datum_to_int64
 *		An integer of any width.
 */
static int64
kl_datum_to_int64(Datum d, Oid type)
{
	switch (type)
	{
		case INT2OID:
			return DatumGetInt16(d);
		case INT4OID:
			return DatumGetInt32(d);
		default:
			return DatumGetInt64(d);
	}
}

/*
 * kl_prune_init
 *		No pruning beyond the table's status option.
 */
static void
kl_prune_init(KlPrune *pr, int status_file)
{
	memset(pr, 0, sizeof(*pr));
	kl_bounds_init(&pr->bounds);
	pr->topics = ~UINT64CONST(0);
	if (status_file >= 0)
	{
		for (int i = 0; i < KL_NFILES; i++)
			pr->bounds.files[i] = (i == status_file);
		pr->bounds.excluded = false;
	}
}

/*
 * kl_narrow_int64
 *		Narrow [*lo, *hi] by "x <strategy> v", without overflowing.
 */
static void
kl_narrow_int64(int64 *lo, int64 *hi, int strategy, int64 v)
{
	switch (strategy)
	{
		case BTLessStrategyNumber:
			if (v == PG_INT64_MIN)
			{
				*lo = 1;
				*hi = 0;
			}
			else
				*hi = Min(*hi, v - 1);
			break;
		case BTLessEqualStrategyNumber:
			*hi = Min(*hi, v);
			break;
		case BTEqualStrategyNumber:
			*lo = Max(*lo, v);
			*hi = Min(*hi, v);
			break;
		case BTGreaterEqualStrategyNumber:
			*lo = Max(*lo, v);
			break;
		case BTGreaterStrategyNumber:
			if (v == PG_INT64_MAX)
			{
				*lo = 1;
				*hi = 0;
			}
			else
				*lo = Max(*lo, v + 1);
			break;
	}
}

/*
 * kl_int64_cmp
 *		qsort comparator.
 */
static int
kl_int64_cmp(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

/*
 * kl_set_intersect
 *		Restrict a value set to values[0..n) (sorted, distinct).
 */
static void
kl_set_intersect(KlValueSet *set, int64 *values, int n)
{
	int			k = 0;

	if (!set->active)
	{
		set->active = true;
		set->values = values;
		set->n = n;
		return;
	}
	for (int i = 0, j = 0; i < set->n && j < n;)
	{
		if (set->values[i] < values[j])
			i++;
		else if (set->values[i] > values[j])
			j++;
		else
		{
			set->values[k++] = set->values[i];
			i++;
			j++;
		}
	}
	set->n = k;
}

/*
 * kl_set_meets
 *		Does the set hold a value within [lo, hi]?  (true without a set)
 */
static bool
kl_set_meets(const KlValueSet *set, int64 lo, int64 hi)
{
	int			a = 0;
	int			b;

	if (!set->active)
		return true;
	b = set->n;
	while (a < b)
	{
		int			mid = (a + b) / 2;

		if (set->values[mid] < lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < set->n && set->values[a] <= hi;
}

/*
 * kl_set_count
 *		How many values of the set lie within [lo, hi]?
 */
static int64
kl_set_count(const KlValueSet *set, int64 lo, int64 hi)
{
	int64		n = 0;

	for (int i = 0; i < set->n; i++)
		n += (set->values[i] >= lo && set->values[i] <= hi);
	return n;
}

/*
 * kl_topic_bit
 *		The bit of a topic among the source's (kl_prune.topics); 0 for a
 *		topic that is not the source's.
 */
static uint64
kl_topic_bit(const KlSource *src, const char *topic)
{
	int			i = kl_source_topic_index(src, topic);

	return (i < 0 || i >= 64) ? 0 : UINT64CONST(1) << i;
}

/*
 * kl_prune_topics
 *		Narrow to the topics of a mask; with exactly one topic left, the
 *		catalog reads that topic's batches only.
 */
static void
kl_prune_topics(KlPrune *pr, const KlSource *src, uint64 mask)
{
	/* a source has at most 64 topics (create_source) */
	pr->topics &= mask & ((src->ntopics >= 64) ? ~UINT64CONST(0) :
						  (UINT64CONST(1) << src->ntopics) - 1);
	if (pr->topics == 0)
		pr->bounds.contradiction = true;
	else if ((pr->topics & (pr->topics - 1)) == 0)
	{
		for (int i = 0; i < src->ntopics && i < 64; i++)
			if (pr->topics == UINT64CONST(1) << i)
				pr->bounds.topic = src->topics[i];
	}
}

/*
 * kl_prune_apply_array
 *		Narrow by "column = ANY (array)".
 */
static void
kl_prune_apply_array(KlPrune *pr, KlColumnKind column, Datum value, Oid arraytype,
					 const KlSource *src)
{
	ArrayType  *arr = DatumGetArrayTypeP(value);
	Oid			elemtype = get_element_type(arraytype);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *elemnulls;
	int			nelems;
	int64	   *ints;
	int			n = 0;
	bool		files[KL_NFILES] = {false, false, false};
	bool		excluded = false;
	uint64		topics = 0;
	List	   *ids = NIL;

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, elemtype, typlen, typbyval, typalign, &elems, &elemnulls, &nelems);
	ints = palloc(sizeof(int64) * Max(nelems, 1));
	for (int i = 0; i < nelems; i++)
	{
		if (elemnulls[i])
			continue;			/* matches nothing */
		switch (column)
		{
			case KL_COL_PARTITION:
			case KL_COL_OFFSET:
				ints[n++] = kl_datum_to_int64(elems[i], elemtype);
				break;
			case KL_COL_BUSINESS_DATE:
				ints[n++] = DatumGetDateADT(elems[i]);
				break;
			case KL_COL_STATUS:
				{
					char	   *s = TextDatumGetCString(elems[i]);
					int			f = kl_status_file_index(s);

					if (f >= 0)
						files[f] = true;
					excluded |= (strcmp(s, KL_STATUS_NAME_EXCLUDED) == 0);
					break;
				}
			case KL_COL_TOPIC:
				topics |= kl_topic_bit(src, TextDatumGetCString(elems[i]));
				break;
			case KL_COL_BATCH_ID:
				ids = lappend(ids, TextDatumGetCString(elems[i]));
				break;
			default:
				break;
		}
	}

	switch (column)
	{
		case KL_COL_PARTITION:
		case KL_COL_OFFSET:
		case KL_COL_BUSINESS_DATE:
			{
				int			k = 0;

				qsort(ints, n, sizeof(int64), kl_int64_cmp);
				for (int i = 0; i < n; i++)
				{
					if (k == 0 || ints[k - 1] != ints[i])
						ints[k++] = ints[i];
				}
				if (column == KL_COL_PARTITION)
					kl_set_intersect(&pr->partitions, ints, k);
				else if (column == KL_COL_OFFSET)
					kl_set_intersect(&pr->offsets, ints, k);
				else
				{
					kl_set_intersect(&pr->dates, ints, k);
					/* quarantined records have no business date */
					pr->bounds.files[KL_FILE_QUARANTINE] = false;
				}
				break;
			}
		case KL_COL_STATUS:
			for (int i = 0; i < KL_NFILES; i++)
				pr->bounds.files[i] = pr->bounds.files[i] && files[i];
			pr->bounds.excluded = pr->bounds.excluded && excluded;
			break;
		case KL_COL_TOPIC:
			kl_prune_topics(pr, src, topics);
			break;
		case KL_COL_BATCH_ID:
			if (pr->batch_ids_active)
			{
				List	   *both = NIL;
				ListCell   *a;
				ListCell   *b;

				foreach(a, pr->batch_ids)
				{
					foreach(b, ids)
					{
						if (strcmp(lfirst(a), lfirst(b)) == 0)
						{
							both = lappend(both, lfirst(a));
							break;
						}
					}
				}
				pr->batch_ids = both;
			}
			else
				pr->batch_ids = ids;
			pr->batch_ids_active = true;
			break;
		default:
			break;
	}
}

/*
 * kl_prune_apply
 *		Narrow the pruning by one clause whose value is known.
 */
static void
kl_prune_apply(KlPrune *pr, const KlPruneQual *q, Datum value, bool isnull, Oid type,
			   const KlSource *src)
{
	KlBounds   *b = &pr->bounds;

	if (isnull)
	{
		/* a strict comparison with NULL matches nothing */
		b->contradiction = true;
		return;
	}
	if (q->is_array)
	{
		kl_prune_apply_array(pr, q->column, value, type, src);
		return;
	}
	switch (q->column)
	{
		case KL_COL_PARTITION:
			{
				int64		lo = b->partition_lo;
				int64		hi = b->partition_hi;

				kl_narrow_int64(&lo, &hi, q->strategy, kl_datum_to_int64(value, type));
				if (hi < 0 || lo > PG_INT32_MAX || lo > hi)
					b->contradiction = true;
				else
				{
					b->partition_lo = (int32) Max(lo, 0);
					b->partition_hi = (int32) Min(hi, PG_INT32_MAX);
				}
				break;
			}
		case KL_COL_OFFSET:
			{
				int64		lo = b->offset_lo;
				int64		hi = b->offset_hi;

				kl_narrow_int64(&lo, &hi, q->strategy, kl_datum_to_int64(value, type));
				if (hi < 0 || lo > hi)
					b->contradiction = true;
				else
				{
					b->offset_lo = Max(lo, 0);
					b->offset_hi = hi;
				}
				break;
			}
		case KL_COL_BUSINESS_DATE:
			{
				int64		lo = b->date_lo;
				int64		hi = b->date_hi;
				DateADT		d = DatumGetDateADT(value);

				/* infinities compare like any other date */
				kl_narrow_int64(&lo, &hi, q->strategy, d);
				if (lo > hi)
					b->contradiction = true;
				else
				{
					b->date_lo = (DateADT) Max(lo, DATEVAL_NOBEGIN);
					b->date_hi = (DateADT) Min(hi, DATEVAL_NOEND);
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

				if (q->strategy != BTEqualStrategyNumber)
					return;
				s = TextDatumGetCString(value);
				if (q->column == KL_COL_STATUS)
				{
					int			f = kl_status_file_index(s);

					for (int i = 0; i < KL_NFILES; i++)
						b->files[i] = b->files[i] && (i == f);
					b->excluded = b->excluded && strcmp(s, KL_STATUS_NAME_EXCLUDED) == 0;
				}
				else if (q->column == KL_COL_BATCH_ID)
				{
					if (b->batch_id && strcmp(b->batch_id, s) != 0)
						b->contradiction = true;
					b->batch_id = s;
				}
				else
					kl_prune_topics(pr, src, kl_topic_bit(src, s));
				break;
			}
		default:
			break;
	}
}

/*
 * kl_prune_keeps_batch
 *		After the catalog query: do the value sets keep this batch?
 */
static bool
kl_prune_keeps_batch(const KlPrune *pr, const KlBatch *b)
{
	if (b->topic_index >= 0 && b->topic_index < 64 &&
		(pr->topics & (UINT64CONST(1) << b->topic_index)) == 0)
		return false;
	if (!kl_set_meets(&pr->partitions, b->partition, b->partition))
		return false;
	if (!kl_set_meets(&pr->offsets, b->first_offset, b->last_offset))
		return false;
	if (pr->dates.active &&
		(!b->has_dates || !kl_set_meets(&pr->dates, b->min_date, b->max_date)))
		return false;
	if (pr->batch_ids_active)
	{
		ListCell   *cell;

		foreach(cell, pr->batch_ids)
		{
			if (strcmp(lfirst(cell), b->batch_id) == 0)
				return true;
		}
		return false;
	}
	return true;
}

/*
 * kl_prune_batches
 *		The batches of a source that the pruning keeps, under the current
 *		snapshot; *total gets the number of batches of the source.
 */
static List *
kl_prune_batches(KlSource *src, KlPrune *pr, bool want_fingerprints, int64 *total)
{
	List	   *batches;
	List	   *kept = NIL;
	ListCell   *cell;
	KlBounds	bounds = pr->bounds;

	if (pr->partitions.active && pr->partitions.n > 0)
	{
		int64		lo = Max(bounds.partition_lo, pr->partitions.values[0]);
		int64		hi = Min(bounds.partition_hi, pr->partitions.values[pr->partitions.n - 1]);

		if (lo > hi || hi < 0 || lo > PG_INT32_MAX)
			bounds.contradiction = true;
		else
		{
			bounds.partition_lo = (int32) lo;
			bounds.partition_hi = (int32) hi;
		}
	}
	if (pr->offsets.active && pr->offsets.n > 0)
	{
		bounds.offset_lo = Max(bounds.offset_lo, pr->offsets.values[0]);
		bounds.offset_hi = Min(bounds.offset_hi, pr->offsets.values[pr->offsets.n - 1]);
	}
	if (pr->dates.active && pr->dates.n > 0)
	{
		bounds.date_lo = Max(bounds.date_lo, pr->dates.values[0]);
		bounds.date_hi = Min(bounds.date_hi, pr->dates.values[pr->dates.n - 1]);
	}
	if (pr->batch_ids_active && list_length(pr->batch_ids) == 1 && bounds.batch_id == NULL)
		bounds.batch_id = linitial(pr->batch_ids);
	if ((pr->partitions.active && pr->partitions.n == 0) ||
		(pr->offsets.active && pr->offsets.n == 0) ||
		(pr->dates.active && pr->dates.n == 0) ||
		(pr->batch_ids_active && pr->batch_ids == NIL))
		bounds.contradiction = true;

	if (kl_bounds_empty(&bounds))
	{
		/* nothing can match: ask only how many batches there are */
		kl_bounds_init(&bounds);
		bounds.partition_lo = 1;
		bounds.partition_hi = 0;
		(void) kl_catalog_scan_batches(src, &bounds, 0, total);
		pr->bounds.contradiction = true;
		return NIL;
	}
	batches = kl_catalog_scan_batches(src, &bounds,
									  want_fingerprints ? KL_BATCH_WANT_FINGERPRINTS : 0,
									  total);
	foreach(cell, batches)
	{
		KlBatch *b = lfirst(cell);

		if (kl_prune_keeps_batch(pr, b))
			kept = lappend(kept, b);
	}
	return kept;
}

/*
 * kl_prune_fraction
 *		The share of a batch's records that the offset and date bounds (and
 *		sets) keep, assuming records spread evenly over its offsets and
 *		dates.
 */
static double
kl_prune_fraction(const KlPrune *pr, const KlBatch *b)
{
	double		fraction = 1.0;
	double		span = (double) (b->last_offset - b->first_offset) + 1;
	int64		lo = Max(pr->bounds.offset_lo, b->first_offset);
	int64		hi = Min(pr->bounds.offset_hi, b->last_offset);

	if (pr->offsets.active)
		fraction *= Min(1.0, kl_set_count(&pr->offsets, lo, hi) / span);
	else if (hi >= lo)
		fraction *= ((double) (hi - lo) + 1) / span;
	if (b->has_dates && b->max_date > b->min_date)
	{
		double		days = (double) (b->max_date - b->min_date) + 1;
		int64		dlo = Max((int64) pr->bounds.date_lo, (int64) b->min_date);
		int64		dhi = Min((int64) pr->bounds.date_hi, (int64) b->max_date);

		if (pr->dates.active)
			fraction *= Min(1.0, kl_set_count(&pr->dates, dlo, dhi) / days);
		else if (dhi >= dlo)
			fraction *= ((double) (dhi - dlo) + 1) / days;
	}
	return fraction;
}

/* ----------------------------------------------------------------
 *		Planning
 * ----------------------------------------------------------------
 */

/*
 * kl_needed_attrs
 *		The columns the query needs from this relation: its target list
 *		(output and joins) and its restriction clauses.  Sets *all on a
 *		whole-row reference.
 */
static List *
kl_needed_attrs(RelOptInfo *baserel, Oid relid, bool *all, int *nfields)
{
	Bitmapset  *attrs = NULL;
	List	   *result = NIL;
	ListCell   *cell;
	int			k = -1;

	*all = false;
	*nfields = 0;
	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid, &attrs);
	foreach(cell, baserel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, cell);

		pull_varattnos((Node *) ri->clause, baserel->relid, &attrs);
	}
	while ((k = bms_next_member(attrs, k)) >= 0)
	{
		AttrNumber	attnum = k + FirstLowInvalidHeapAttributeNumber;

		if (attnum == 0)
		{
			*all = true;
			return NIL;
		}
		if (attnum < 0)
			continue;			/* system columns are the executor's */
		result = lappend_int(result, attnum);
	}
	foreach(cell, result)
	{
		AttrNumber	attnum = lfirst_int(cell);
		const char *field;

		if (kl_column_kind(relid, attnum, get_attname(relid, attnum, false), &field) == KL_COL_FIELD)
			(*nfields)++;
	}
	return result;
}

/*
 * kafkaLakeGetForeignRelSize
 *		Estimate the rows from the catalog counts of the batches and files
 *		left after pruning by the clauses whose values are known now.
 */
static void
kafkaLakeGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	KlPlanState *ps = palloc0(sizeof(KlPlanState));
	char	   *source;
	char	   *status;
	KlSource   *src;
	KlPrune		prune;
	List	   *other_quals = NIL;
	ListCell   *cell;
	List	   *batches;
	double		records = 0;
	double		kept = 0;
	int64		total;

	src = kl_table_source(foreigntableid, &source, &status);
	ps->source = source;
	ps->status_file = kl_table_status_file(status);
	ps->prune_quals = kl_extract_prune_quals(baserel, foreigntableid);
	ps->attrs = kl_needed_attrs(baserel, foreigntableid, &ps->all_attrs, &ps->nfields);

	/* prune by the clauses known now; the others count by selectivity */
	kl_prune_init(&prune, ps->status_file);
	foreach(cell, baserel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, cell);
		KlPruneQual *applied = NULL;
		ListCell   *qc;

		foreach(qc, ps->prune_quals)
		{
			KlPruneQual *q = lfirst(qc);

			if (q->rinfo == ri && IsA(q->value, Const))
				applied = q;
		}
		if (applied)
		{
			Const	   *c = (Const *) applied->value;

			kl_prune_apply(&prune, applied, c->constvalue, c->constisnull, c->consttype, src);
		}
		else
			other_quals = lappend(other_quals, ri);
	}

	batches = kl_prune_batches(src, &prune, false, &total);
	foreach(cell, batches)
	{
		KlBatch *b = lfirst(cell);
		double		fraction = kl_prune_fraction(&prune, b);

		for (int i = 0; i < KL_NFILES; i++)
		{
			if (prune.bounds.files[i])
			{
				records += b->counts[i];
				kept += b->counts[i] * fraction;
				ps->bytes += b->files[i].bytes;
			}
		}
	}
	ps->nbatches = list_length(batches);
	ps->rows = records;

	baserel->tuples = records;
	baserel->rows = clamp_row_est(kept * clauselist_selectivity(root, other_quals, 0,
																 JOIN_INNER, NULL));
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
	Cost		startup_cost;
	Cost		run_cost;
	double		per_line;

	/* the catalog query, then reading and checking the first file */
	startup_cost = 10.0 + ps->nbatches * 0.01;
	/* reading and checking the bytes, then parsing what each line needs */
	per_line = cpu_tuple_cost + cpu_operator_cost * (1 + ps->nfields);
	if (ps->all_attrs)
		per_line += cpu_operator_cost * 20;
	run_cost = seq_page_cost * (ps->bytes / BLCKSZ) + per_line * ps->rows;
	run_cost += baserel->baserestrictcost.per_tuple * ps->rows;

	add_path(baserel, (Path *)
			 create_foreignscan_path(root, baserel, NULL, baserel->rows,
									 startup_cost, startup_cost + run_cost,
									 NIL, NULL, NULL, NIL));
}

/*
 * kafkaLakeGetForeignPlan
 *		The plan keeps every clause as a filter; the pruning clauses'
 *		values go into fdw_exprs so that the executor computes them (and
 *		parameters) at the start of the scan.
 */
static ForeignScan *
kafkaLakeGetForeignPlan(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
						ForeignPath *best_path, List *tlist, List *scan_clauses,
						Plan *outer_plan)
{
	KlPlanState *ps = baserel->fdw_private;
	List	   *columns = NIL;
	List	   *strategies = NIL;
	List	   *is_array = NIL;
	List	   *values = NIL;
	List	   *priv;
	ListCell   *cell;

	scan_clauses = extract_actual_clauses(scan_clauses, false);
	foreach(cell, ps->prune_quals)
	{
		KlPruneQual *q = lfirst(cell);

		columns = lappend_int(columns, q->column);
		strategies = lappend_int(strategies, q->strategy);
		is_array = lappend_int(is_array, q->is_array ? 1 : 0);
		values = lappend(values, q->value);
	}
	priv = list_make5(makeString(ps->source), makeInteger(ps->status_file),
					  columns, strategies, is_array);
	priv = lappend(priv, ps->attrs);
	priv = lappend(priv, makeInteger(ps->all_attrs ? 1 : 0));
	return make_foreignscan(tlist, scan_clauses, baserel->relid, values, priv,
							NIL, NIL, outer_plan);
}

/* ----------------------------------------------------------------
 *		Execution
 * ----------------------------------------------------------------
 */

/*
 * kl_value_excerpt
 *		At most 100 bytes of a JSON value, for an error context.
 */
static char *
kl_value_excerpt(const KlJsonValue *v)
{
	if (v->len <= 100)
		return pnstrdup(v->start, v->len);
	return psprintf("%s...", pnstrdup(v->start, 100));
}

/*
 * kl_scan_error_callback
 *		Error context of a scan: batch, file, line, and the column.
 */
static void
kl_scan_error_callback(void *arg)
{
	KlScanState *st = (KlScanState *) arg;

	if (st->file_open && st->reader.lineno > 0)
	{
		if (st->current_attr && st->current_value)
			errcontext("kafka_lake source \"%s\", batch %s, file %s, line %lld, column %s: %s",
					   st->src->source, st->batch->batch_id, kl_batch_file(st->batch, st->file),
					   (long long) st->reader.lineno, st->current_attr->name,
					   kl_value_excerpt(st->current_value));
		else if (st->current_attr)
			errcontext("kafka_lake source \"%s\", batch %s, file %s, line %lld, column %s",
					   st->src->source, st->batch->batch_id, kl_batch_file(st->batch, st->file),
					   (long long) st->reader.lineno, st->current_attr->name);
		else
			errcontext("kafka_lake source \"%s\", batch %s, file %s, line %lld",
					   st->src->source, st->batch->batch_id, kl_batch_file(st->batch, st->file),
					   (long long) st->reader.lineno);
	}
	else if (st->batch && st->file >= 0)
		errcontext("kafka_lake source \"%s\", batch %s, file %s",
				   st->src->source, st->batch->batch_id, kl_batch_file(st->batch, st->file));
	else if (st->batch)
		errcontext("kafka_lake source \"%s\", batch %s", st->src->source, st->batch->batch_id);
}

/*
 * kl_scan_check_type
 *		A column is read into its type by the type's input function, as
 *		whoever reads the table: so only a built-in type is read
 *		(builtin_types.c says why).  ERROR 0A000 for any other, with the
 *		type to declare instead.
 */
static void
kl_scan_check_type(Relation rel, Form_pg_attribute att)
{
	const char *problem = kl_builtin_type_problem(att->atttypid);
	const char *base;

	if (problem == NULL)
		return;
	base = kl_builtin_base(att->atttypid);
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("column \"%s\" of foreign table \"%s\" is of type %s, which is %s: kafka_lake reads values into built-in types only",
					NameStr(att->attname), RelationGetRelationName(rel),
					kl_type_name(att->atttypid, att->atttypmod), problem),
			 errdetail("Another type's input function (a domain's CHECK, say) would run with the rights of whoever reads the table."),
			 base ?
			 errhint("Declare the column as %s and cast it to %s in the query or view that needs it.",
					 base, kl_type_name(att->atttypid, att->atttypmod)) :
			 errhint("Declare the column with a built-in type, for example text or jsonb, and cast it in the query or view that needs it.")));
}

/*
 * kl_scan_setup_attrs
 *		Decide how to produce each needed attribute (all of them when all).
 */
static void
kl_scan_setup_attrs(KlScanState *st, Relation rel, List *needed, bool all)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Oid			relid = RelationGetRelid(rel);
	const char **field_names = palloc(sizeof(char *) * (desc->natts + 1));
	int			nfields = 0;

	st->attrs = palloc0(sizeof(KlAttr) * Max(desc->natts, 1));
	st->nattrs = 0;
	st->want = 0;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		KlAttr	   *a;
		Oid			infunc;

		if (att->attisdropped)
			continue;
		if (!all && !list_member_int(needed, att->attnum))
			continue;
		a = &st->attrs[st->nattrs++];
		a->attnum = att->attnum;
		a->name = pstrdup(NameStr(att->attname));
		a->kind = kl_column_kind(relid, att->attnum, a->name, &a->field_name);
		a->typid = att->atttypid;
		a->typmod = att->atttypmod;
		kl_scan_check_type(rel, att);
		getTypeInputInfo(att->atttypid, &infunc, &a->typioparam);
		fmgr_info(infunc, &a->infunc);

		switch (a->kind)
		{
			case KL_COL_KEY:
			case KL_COL_OFFSET:
			case KL_COL_TIMESTAMP_MS:
			case KL_COL_FINGERPRINT:
			case KL_COL_HEADERS:
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
			case KL_COL_BUSINESS_DATE:
			case KL_COL_FIELD:
				/* lines of most contracts carry their ids; the seed's have them in the event */
				if (a->kind != KL_COL_FIELD)
					st->want |= KL_WANT_IDS;
				/* one lookup per distinct field name */
				a->field = -1;
				for (int f = 0; f < nfields; f++)
				{
					if (strcmp(field_names[f], a->field_name) == 0)
						a->field = f;
				}
				if (a->field < 0)
				{
					a->field = nfields;
					field_names[nfields++] = a->field_name;
				}
				break;
			default:
				break;
		}
	}
	kl_line_set_fields(&st->line, nfields, field_names);
}

/*
 * kl_scan_memory_gone
 *		The scan's memory is about to be freed: the read-ahead job, if one
 *		is out, is stopped and joined first.  EndForeignScan does it in the
 *		ordinary course; this is for an abort, which frees the executor
 *		memory of a cursor that is not running (AtAbort_Portals) before the
 *		abort's own callbacks stop the jobs (thread_job.c), and would
 *		otherwise leave a thread writing into freed memory.
 */
static void
kl_scan_memory_gone(void *arg)
{
	KlReadAhead *ra = (KlReadAhead *) arg;

	kl_job_stop(&ra->job);
}

/*
 * kl_scan_begin
 *		Set up a scan (or an ANALYZE) in the current memory context.
 */
static void
kl_scan_begin(KlScanState *st, Relation rel, const char *source, List *needed, bool all)
{
	st->src = kl_source_lookup(source);
	st->file = -1;
	st->scan_cxt = CurrentMemoryContext;
	st->ra = palloc0(sizeof(KlReadAhead));
	st->ra->job = kl_no_job;
	{
		MemoryContextCallback *cb = palloc0(sizeof(MemoryContextCallback));

		cb->func = kl_scan_memory_gone;
		cb->arg = st->ra;
		MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);
	}
	st->topic_datums = palloc(sizeof(Datum) * st->src->ntopics);
	for (int i = 0; i < st->src->ntopics; i++)
		st->topic_datums[i] = CStringGetTextDatum(st->src->topics[i]);
	for (int i = 0; i < KL_NFILES; i++)
		st->status_datums[i] = CStringGetTextDatum(kl_status_names[i]);
	st->status_datums[KL_ROW_EXCLUDED] = CStringGetTextDatum(KL_STATUS_NAME_EXCLUDED);
	kl_scan_setup_attrs(st, rel, needed, all);
}

/*
 * kl_scan_reads_file
 *		Does the scan read this file of this batch?  An accepted file is
 *		also read for its demoted lines, which are duplicates to readers.
 */
static bool
kl_scan_reads_file(const KlScanState *st, const KlBatch *b, int file)
{
	const bool *files = st->prune.bounds.files;

	if (b->files[file].lines == 0)
		return false;
	return files[file] ||
		(file == KL_FILE_ACCEPTED && files[KL_FILE_DUPLICATES] && b->has_demoted) ||
		(file == KL_FILE_ACCEPTED && st->prune.bounds.excluded && b->has_excluded) ||
		(file == KL_FILE_DUPLICATES && files[KL_FILE_ACCEPTED] && b->has_promoted);
}

/*
 * kl_scan_read_batches
 *		Read the batch list under the current snapshot; count what EXPLAIN
 *		shows.
 */
static void
kl_scan_read_batches(KlScanState *st)
{
	bool		want_fp = false;
	ListCell   *cell;

	for (int i = 0; i < st->nattrs; i++)
		want_fp |= (st->attrs[i].kind == KL_COL_FINGERPRINT);
	st->batches = kl_prune_batches(st->src, &st->prune, want_fp, &st->total_batches);

	/* expired batches are never read: the scan refuses them, ANALYZE skips them */
	foreach(cell, st->batches)
	{
		KlBatch    *b = lfirst(cell);
		bool		reads = false;

		if (!b->expired)
			continue;
		for (int i = 0; i < KL_NFILES; i++)
			reads |= kl_scan_reads_file(st, b, i);
		if (reads)
			st->expired = lappend(st->expired, b);
		st->batches = foreach_delete_current(st->batches, cell);
	}
	st->batch_id_datums = palloc0(sizeof(Datum) * Max(list_length(st->batches), 1));
	foreach(cell, st->batches)
	{
		KlBatch *b = lfirst(cell);

		for (int i = 0; i < KL_NFILES; i++)
		{
			if (kl_scan_reads_file(st, b, i))
			{
				st->files_planned++;
				st->bytes_planned += b->files[i].bytes;
			}
		}
	}
	st->files_pruned = st->total_batches * KL_NFILES - st->files_planned;
}

/*
 * kafkaLakeBeginForeignScan
 *		Compute the pruning values, read the batch list under the
 *		statement's snapshot.
 */
static void
kafkaLakeBeginForeignScan(ForeignScanState *node, int eflags)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	EState	   *estate = node->ss.ps.state;
	List	   *priv = plan->fdw_private;
	KlScanState *st = palloc0(sizeof(KlScanState));
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	ListCell   *cc;
	ListCell   *sc;
	ListCell   *ac;
	ListCell   *vc;
	MemoryContext old;

	node->fdw_state = st;
	kl_check_source_read(strVal(list_nth(priv, KL_PRIV_SOURCE)),
						 RelationGetRelid(node->ss.ss_currentRelation),
						 kl_scan_user(node));
	old = MemoryContextSwitchTo(AllocSetContextCreate(estate->es_query_cxt, "kafka_lake scan",
													  ALLOCSET_DEFAULT_SIZES));
	kl_scan_begin(st, node->ss.ss_currentRelation,
				  strVal(list_nth(priv, KL_PRIV_SOURCE)),
				  (List *) list_nth(priv, KL_PRIV_ATTRS),
				  intVal(list_nth(priv, KL_PRIV_ALL_ATTRS)) != 0);
	kl_prune_init(&st->prune, intVal(list_nth(priv, KL_PRIV_STATUS_FILE)));

	/* the pruning values, now that parameters are known */
	forfour(cc, (List *) list_nth(priv, KL_PRIV_COLUMNS),
			sc, (List *) list_nth(priv, KL_PRIV_STRATEGIES),
			ac, (List *) list_nth(priv, KL_PRIV_IS_ARRAY),
			vc, plan->fdw_exprs)
	{
		KlPruneQual q;
		Expr	   *expr = (Expr *) lfirst(vc);
		bool		isnull;
		Datum		d;

		if ((eflags & EXEC_FLAG_EXPLAIN_GENERIC) && !IsA(expr, Const))
			continue;			/* no values to prune by */
		d = ExecEvalExpr(ExecInitExpr(expr, &node->ss.ps), econtext, &isnull);
		q.column = lfirst_int(cc);
		q.strategy = lfirst_int(sc);
		q.is_array = lfirst_int(ac) != 0;
		q.value = expr;
		q.rinfo = NULL;
		kl_prune_apply(&st->prune, &q, d, isnull, exprType((Node *) expr), st->src);
	}
	kl_scan_read_batches(st);
	/* a query that needs an expired batch returns nothing rather than part */
	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
		kl_refuse_expired(st->src, st->expired, "query");
	MemoryContextSwitchTo(old);
}

/*
 * kl_scan_following
 *		The file the scan reads after file of the batch at *cell (NULL: from
 *		the first batch): *cell and *file get it; false when there is none.
 */
static bool
kl_scan_following(const KlScanState *st, ListCell **cell, int *file)
{
	ListCell   *c = *cell;
	int			f = *file;

	if (c == NULL)
	{
		c = list_head(st->batches);
		f = -1;
	}
	for (; c != NULL; c = lnext(st->batches, c), f = -1)
	{
		while (++f < KL_NFILES)
		{
			if (kl_scan_reads_file(st, lfirst(c), f))
			{
				*cell = c;
				*file = f;
				return true;
			}
		}
	}
	return false;
}

/*
 * kl_scan_stop_ahead
 *		Stop the read-ahead, if one is out, and forget it.
 */
static void
kl_scan_stop_ahead(KlScanState *st)
{
	if (st->ahead_out)
		kl_reader_discard(&st->ahead, st->ra);
	st->ahead_out = false;
}

/*
 * kl_next_file
 *		Open (read and check) the next file that can hold rows; false at the
 *		end.
 *
 *		While a file's rows are returned, the next one is read by a job
 *		(batch_read.c: read(2), CRC-32C, zstd, its lines counted), into the
 *		other of two buffers, so that on two cores the reading overlaps the
 *		parsing; it is judged (manifest, size, lines, CRC-32C) when it
 *		becomes the current file, before any of its lines is used, exactly
 *		as a file read here would be.  A next file that cannot be opened,
 *		or has another size than its manifest's, is not read ahead: it is
 *		opened here when its turn comes, so that its error comes then, as
 *		it would without the read-ahead (a query that stops before that
 *		file never sees it).  At most one file beyond the current one is
 *		read, so a LIMIT costs no more than one file of reading.  The job is
 *		stopped when the scan ends or starts again, and by an abort
 *		(thread_job.c); one that a subtransaction's abort stopped while a
 *		cursor lives on is read again here.
 */
static bool
kl_next_file(KlScanState *st)
{
	ListCell   *cell = st->batch_cell;
	int			file = st->file;
	bool		ready = false;
	MemoryContext old;

	if (st->file_open)
	{
		kl_reader_close(&st->reader);
		st->file_open = false;
	}
	if (st->at_end)
		return false;
	if (st->ahead_out)
	{
		cell = st->ahead_cell;
		file = st->ahead_file;
	}
	else if (!kl_scan_following(st, &cell, &file))
	{
		st->at_end = true;
		st->batch = NULL;
		return false;
	}

	old = MemoryContextSwitchTo(st->scan_cxt);
	if (cell != st->batch_cell)
	{
		st->batch_cell = cell;
		st->batch = lfirst(cell);
		st->batch_index = list_cell_number(st->batches, cell);
		st->manifest_checked = false;
	}
	st->file = file;
	/* a batch that disagrees with its manifest is refused whole */
	if (!st->manifest_checked)
	{
		kl_check_manifest(st->src, st->batch);
		st->manifest_checked = true;
	}
	if (st->ahead_out)
	{
		st->ahead_out = false;
		st->cur = 1 - st->cur;
		st->reader = st->ahead;
		ready = kl_reader_wait(&st->reader, st->ra);
	}
	if (!ready)
		kl_reader_open_buffer(&st->reader, st->src, st->batch, st->file,
							  &st->buffers[st->cur], &st->buffer_sizes[st->cur]);
	if (st->batch_id_datums[st->batch_index] == (Datum) 0)
		st->batch_id_datums[st->batch_index] = CStringGetTextDatum(st->batch->batch_id);

	/* the next file, read while this one's rows are returned */
	if (kl_scan_following(st, &cell, &file) &&
		kl_reader_open_ahead(&st->ahead, st->src, lfirst(cell), file,
							 &st->buffers[1 - st->cur], &st->buffer_sizes[1 - st->cur],
							 st->ra, true))
	{
		st->ahead_out = true;
		st->ahead_cell = cell;
		st->ahead_file = file;
	}
	MemoryContextSwitchTo(old);

	st->check_demoted =
		(st->file == KL_FILE_ACCEPTED && (st->batch->has_demoted || st->batch->has_excluded)) ||
		(st->file == KL_FILE_DUPLICATES && st->batch->has_promoted);
	st->check_readmitted = (st->batch->has_readmitted && st->file == KL_FILE_QUARANTINE);
	st->file_want = st->want |
		((st->check_demoted || st->check_readmitted) ? KL_WANT_KAFKA : 0);
	st->row_status = st->file;
	st->file_open = true;
	st->files_checked++;
	return true;
}

/*
 * kl_scan_release
 *		The end of a scan (or an ANALYZE): the read-ahead stopped, the
 *		current file and the buffers released.
 */
static void
kl_scan_release(KlScanState *st)
{
	kl_scan_stop_ahead(st);
	if (st->file_open)
		kl_reader_close(&st->reader);
	st->file_open = false;
	for (int i = 0; i < 2; i++)
	{
		if (st->buffers[i])
			pfree(st->buffers[i]);
		st->buffers[i] = NULL;
		st->buffer_sizes[i] = 0;
	}
}

/*
 * kl_json_text_datum
 *		A text datum from a JSON value: the decoded string, or the JSON text
 *		of any other value.
 */
static Datum
kl_json_text_datum(const KlJsonValue *v)
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
 * kl_json_cstring
 *		A JSON value as the text an input function reads.
 */
static char *
kl_json_cstring(const KlJsonValue *v)
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
 * kl_input_function_call
 *		The column type's input function; a data error it raises gets a
 *		hint about the column's declaration (the error context names the
 *		column, batch, file and line).
 */
static Datum
kl_input_function_call(KlScanState *st, KlAttr *a, char *text)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile Datum result = (Datum) 0;

	PG_TRY();
	{
		result = InputFunctionCall(&a->infunc, text, a->typioparam, a->typmod);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) != ERRCODE_DATA_EXCEPTION ||
			edata->hint != NULL)
			PG_RE_THROW();
		FlushErrorState();
		if (a->kind == KL_COL_FIELD)
			edata->hint = psprintf("Column \"%s\" reads event field \"%s\" as type %s; declare it with a type that can hold the field's values (text reads any), or name another field with the column option \"field\".",
								   a->name, a->field_name, format_type_be(a->typid));
		else
			edata->hint = psprintf("Column \"%s\" of a kafka_lake foreign table is best declared as %s, its type in kafka_lake.<source>_records, not %s.",
								   a->name, kl_column_types[a->kind], format_type_be(a->typid));
		ReThrowError(edata);
	}
	PG_END_TRY();
	return result;
}

/*
 * kl_field_datum
 *		A JSON value (an event field, a key, ...) as a datum of the column's
 *		type.
 */
static Datum
kl_field_datum(KlScanState *st, KlAttr *a, const KlJsonValue *v, bool *isnull)
{
	*isnull = false;
	if (v->type == KL_JSON_NULL)
	{
		*isnull = true;
		return (Datum) 0;
	}
	switch (a->typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			if (v->type == KL_JSON_NUMBER && v->is_integer)
			{
				int64		n;

				if (kl_json_parse_int64(v->start, v->len, &n))
				{
					if (a->typid == INT8OID)
						return Int64GetDatum(n);
					if (a->typid == INT4OID && n >= PG_INT32_MIN && n <= PG_INT32_MAX)
						return Int32GetDatum((int32) n);
					if (a->typid == INT2OID && n >= PG_INT16_MIN && n <= PG_INT16_MAX)
						return Int16GetDatum((int16) n);
				}
			}
			break;
		case BOOLOID:
			if (v->type == KL_JSON_TRUE || v->type == KL_JSON_FALSE)
				return BoolGetDatum(v->type == KL_JSON_TRUE);
			break;
		case TEXTOID:
			return kl_json_text_datum(v);
		case DATEOID:
			if (v->type == KL_JSON_STRING && !v->has_escapes)
			{
				DateADT		d;

				if (kl_parse_iso_date(v->start + 1, v->len - 2, &d))
					return DateADTGetDatum(d);
			}
			break;
		case TIMESTAMPTZOID:
			if (v->type == KL_JSON_STRING && a->typmod < 0)
			{
				TimestampTz ts;

				if (kl_json_event_time(v, &ts))
					return TimestampTzGetDatum(ts);
			}
			break;
		case JSONBOID:
		case JSONOID:
			/* a JSON column reads the value's JSON text, strings included */
			st->current_value = v;
			return kl_input_function_call(st, a, pnstrdup(v->start, v->len));
	}
	st->current_value = v;
	return kl_input_function_call(st, a, kl_json_cstring(v));
}

/*
 * kl_text_column
 *		A value we hold as C text, as a datum of the column's type.
 */
static Datum
kl_text_column(KlScanState *st, KlAttr *a, Datum text_datum, const char *text)
{
	if (a->typid == TEXTOID)
		return text_datum ? text_datum : CStringGetTextDatum(text);
	return kl_input_function_call(st, a, pstrdup(text));
}

/*
 * kl_fill_row
 *		Build the row of the current line into values/nulls (every column
 *		the query does not need is NULL).
 */
static void
kl_fill_row(KlScanState *st, Datum *values, bool *nulls, int natts)
{
	KlLine	   *line = &st->line;

	memset(nulls, true, sizeof(bool) * natts);
	for (int i = 0; i < st->nattrs; i++)
	{
		KlAttr	   *a = &st->attrs[i];
		int			col = a->attnum - 1;
		bool		isnull = false;
		Datum		d = (Datum) 0;
		char		buf[32];

		st->current_attr = a;
		st->current_value = NULL;
		switch (a->kind)
		{
			case KL_COL_TOPIC:
				/* a batch read from the catalog is of one of the source's topics */
				d = kl_text_column(st, a, st->topic_datums[Max(st->batch->topic_index, 0)],
								   st->src->topics[Max(st->batch->topic_index, 0)]);
				break;
			case KL_COL_PARTITION:
				if (a->typid == INT4OID)
					d = Int32GetDatum(st->batch->partition);
				else
				{
					snprintf(buf, sizeof(buf), "%d", st->batch->partition);
					d = kl_text_column(st, a, (Datum) 0, buf);
				}
				break;
			case KL_COL_OFFSET:
				if (a->typid == INT8OID)
					d = Int64GetDatum(line->offset);
				else
				{
					snprintf(buf, sizeof(buf), "%lld", (long long) line->offset);
					d = kl_text_column(st, a, (Datum) 0, buf);
				}
				break;
			case KL_COL_KEY:
				if (line->key.type == KL_JSON_STRING)
					d = kl_field_datum(st, a, &line->key, &isnull);
				else if (line->key_base64.type == KL_JSON_STRING)
					d = kl_field_datum(st, a, &line->key_base64, &isnull);
				else
					isnull = true;
				break;
			case KL_COL_TIMESTAMP_MS:
				if (line->timestamp_ms < 0)
					isnull = true;
				else if (a->typid == INT8OID)
					d = Int64GetDatum(line->timestamp_ms);
				else
				{
					snprintf(buf, sizeof(buf), "%lld", (long long) line->timestamp_ms);
					d = kl_text_column(st, a, (Datum) 0, buf);
				}
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
						d = kl_text_column(st, a, (Datum) 0, hex);
					}
					break;
				}
			case KL_COL_STATUS:
				d = kl_text_column(st, a, st->status_datums[st->row_status],
								   st->row_status == KL_ROW_EXCLUDED ? KL_STATUS_NAME_EXCLUDED :
								   kl_status_names[st->row_status]);
				break;
			case KL_COL_EVENT_ID:
				d = kl_field_datum(st, a, line->has_ids ? &line->event_id : &line->fields[a->field],
								   &isnull);
				break;
			case KL_COL_BUSINESS_DATE:
				d = kl_field_datum(st, a,
								   line->has_ids ? &line->business_date : &line->fields[a->field],
								   &isnull);
				break;
			case KL_COL_FIELD:
				d = kl_field_datum(st, a, &line->fields[a->field], &isnull);
				break;
			case KL_COL_HEADERS:
				d = kl_field_datum(st, a, &line->headers, &isnull);
				break;
			case KL_COL_CONTRACT:
				d = kl_text_column(st, a, (Datum) 0, st->batch->contract);
				break;
			case KL_COL_CONTRACT_VERSION:
				if (a->typid == INT4OID)
					d = Int32GetDatum(st->batch->contract_version);
				else
				{
					snprintf(buf, sizeof(buf), "%d", st->batch->contract_version);
					d = kl_text_column(st, a, (Datum) 0, buf);
				}
				break;
			case KL_COL_EVENT:
				d = kl_field_datum(st, a, &line->event, &isnull);
				break;
			case KL_COL_RAW_VALUE:
				if (line->raw_value.type == KL_JSON_STRING)
					d = kl_field_datum(st, a, &line->raw_value, &isnull);
				else if (line->raw_value_base64.type == KL_JSON_STRING)
					d = kl_field_datum(st, a, &line->raw_value_base64, &isnull);
				else
					isnull = true;
				break;
			case KL_COL_VALIDATION_ERROR:
				if (st->row_status == KL_ROW_EXCLUDED)
				{
					/* an excluded record: why it was set aside */
					const char *reason = kl_exclusion_reason(st);

					isnull = (reason == NULL);
					if (reason)
						d = kl_text_column(st, a, (Datum) 0, reason);
				}
				else
					d = kl_field_datum(st, a, &line->validation_error, &isnull);
				break;
			case KL_COL_BATCH_ID:
				d = kl_text_column(st, a, st->batch_id_datums[st->batch_index], st->batch->batch_id);
				break;
		}
		values[col] = d;
		nulls[col] = isnull;
	}
	st->current_attr = NULL;
	st->current_value = NULL;
}

/*
 * kl_line_row_status
 *		The status of a line whose coordinate's letter may say otherwise
 *		than its file: an accepted line that recover() demoted ('D': an
 *		event_id accepted first elsewhere) reads as a duplicate, one that
 *		exclude() set aside ('X') as excluded, and a duplicate that
 *		exclude() promoted ('P') as accepted.
 */
static inline int
kl_line_row_status(KlScanState *st)
{
	int			idx = kl_batch_coordinate_index(st->batch, st->line.offset);

	if (idx < 0)
		return st->file;
	switch (st->batch->demoted_statuses[idx])
	{
		case KL_STATUS_DEMOTED:
			return KL_FILE_DUPLICATES;
		case KL_STATUS_EXCLUDED:
			return KL_ROW_EXCLUDED;
		case KL_STATUS_PROMOTED:
			return KL_FILE_ACCEPTED;
		default:
			return st->file;
	}
}

/*
 * kl_exclusion_reason
 *		The reason of the exclusion in effect of the current (excluded)
 *		row, from kafka_lake.exclusions (read once per scan).
 */
static const char *
kl_exclusion_reason(KlScanState *st)
{
	const char *reason = NULL;
	ListCell   *cell;

	if (!st->exclusions_loaded)
	{
		MemoryContext old = MemoryContextSwitchTo(st->scan_cxt);

		st->exclusions = kl_catalog_exclusions(st->src);
		st->exclusions_loaded = true;
		MemoryContextSwitchTo(old);
	}
	foreach(cell, st->exclusions)
	{
		KlExclusion *x = lfirst(cell);

		if (!x->undo && !x->undone && x->changes[0].offset == st->line.offset &&
			x->changes[0].partition == st->batch->partition &&
			strcmp(x->changes[0].batch_id, st->batch->batch_id) == 0)
			reason = x->reason;
	}
	return reason;
}

/*
 * kl_scan_next_line
 *		Advance to the next line that is a row: *text and *len get it, and
 *		when parse, st->line gets what the columns need.  In an accepted
 *		file with demoted coordinates, each line's status is decided by its
 *		offset (st->row_status), and lines of a status the scan does not
 *		read are skipped.  false at the end.
 */
static inline bool
kl_scan_next_line(KlScanState *st, bool parse, const char **text, size_t *len)
{
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (!st->file_open || !kl_reader_next(&st->reader, text, len))
		{
			if (!kl_next_file(st))
				return false;
			continue;
		}
		st->lines_read++;
		if (parse)
			kl_line_parse(&st->line, *text, *len, st->file_want);
		else if (st->check_demoted || st->check_readmitted)
			kl_line_parse(&st->line, *text, *len, KL_WANT_KAFKA);
		if (st->check_readmitted)
		{
			/* a readmit unit holds this record now (it is read from there) */
			int			idx = kl_batch_coordinate_index(st->batch, st->line.offset);

			if (idx >= 0 && st->batch->demoted_statuses[idx] == KL_STATUS_READMITTED)
				continue;
		}
		if (st->check_demoted)
		{
			st->row_status = kl_line_row_status(st);
			if (st->row_status == KL_ROW_EXCLUDED ? !st->prune.bounds.excluded :
				!st->prune.bounds.files[st->row_status])
				continue;
		}
		return true;
	}
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

	if (kl_scan_next_line(st, true, &text, &len))
	{
		kl_fill_row(st, slot->tts_values, slot->tts_isnull,
					slot->tts_tupleDescriptor->natts);
		ExecStoreVirtualTuple(slot);
	}

	error_context_stack = errcallback.previous;
	return slot;
}

/*
 * kafkaLakeReScanForeignScan
 *		Start again from the first batch.  The pruning values are fixed for
 *		the scan, and so is the batch list (the statement's snapshot).
 */
static void
kafkaLakeReScanForeignScan(ForeignScanState *node)
{
	KlScanState *st = node->fdw_state;

	kl_scan_stop_ahead(st);
	if (st->file_open)
	{
		kl_reader_close(&st->reader);
		st->file_open = false;
	}
	st->batch_cell = NULL;
	st->batch = NULL;
	st->file = -1;
	st->at_end = false;
}

/*
 * kafkaLakeEndForeignScan
 *		Stop the read-ahead, release the current file and the buffers.
 */
static void
kafkaLakeEndForeignScan(ForeignScanState *node)
{
	KlScanState *st = node->fdw_state;

	if (st == NULL)
		return;
	kl_scan_release(st);
}

/*
 * kafkaLakeExplainForeignScan
 *		Source, statuses, batches and files read and pruned, bytes; with
 *		VERBOSE the event fields parsed; with ANALYZE files checked and
 *		lines read, and with both the lines read by the strict parser
 *		rather than the fast path (none, for a landing land() wrote).
 */
static void
kafkaLakeExplainForeignScan(ForeignScanState *node, ExplainState *es)
{
	KlScanState *st = node->fdw_state;
	StringInfoData statuses;
	int64		nbatches = list_length(st->batches);
	int64		pruned = st->total_batches - nbatches;

	initStringInfo(&statuses);
	for (int i = 0; i < KL_NFILES; i++)
	{
		if (st->prune.bounds.files[i] && !st->prune.bounds.contradiction)
			appendStringInfo(&statuses, "%s%s", statuses.len ? ", " : "", kl_status_names[i]);
	}
	/* a scan of excluded records only (they live in the accepted files) */
	if (statuses.len == 0 && st->prune.bounds.excluded && !st->prune.bounds.contradiction)
		appendStringInfoString(&statuses, KL_STATUS_NAME_EXCLUDED);

	ExplainPropertyText("Kafka Lake Source",
						psprintf("%s (%s %s)", st->src->source,
								 st->src->ntopics > 1 ? "topics" : "topic",
								 kl_source_topics_text(st->src)), es);
	ExplainPropertyText("Statuses", statuses.len ? statuses.data : "none", es);
	if (es->verbose)
	{
		List	   *fields = NIL;

		for (int i = 0; i < st->line.nfields; i++)
			fields = lappend(fields, (char *) st->line.field_names[i]);
		ExplainPropertyList("Event Fields", fields, es);
	}
	pruned -= list_length(st->expired);
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		ExplainPropertyText("Batches", st->expired == NIL ?
							psprintf("%lld read, %lld pruned",
									 (long long) nbatches, (long long) pruned) :
							psprintf("%lld read, %lld pruned, %d expired",
									 (long long) nbatches, (long long) pruned,
									 list_length(st->expired)), es);
		ExplainPropertyText("Files", psprintf("%lld read, %lld pruned",
											  (long long) st->files_planned,
											  (long long) st->files_pruned), es);
	}
	else
	{
		ExplainPropertyInteger("Batches Read", NULL, nbatches, es);
		ExplainPropertyInteger("Batches Pruned", NULL, pruned, es);
		if (st->expired != NIL)
			ExplainPropertyInteger("Batches Expired", NULL, list_length(st->expired), es);
		ExplainPropertyInteger("Files Read", NULL, st->files_planned, es);
		ExplainPropertyInteger("Files Pruned", NULL, st->files_pruned, es);
	}
	if (es->costs)
		ExplainPropertyInteger("File Bytes", NULL, st->bytes_planned, es);
	if (es->analyze)
	{
		ExplainPropertyInteger("Files Checked", NULL, st->files_checked, es);
		ExplainPropertyInteger("Lines Read", NULL, st->lines_read, es);
		/* lines the layout's fast path did not take (batch_format.c) */
		if (es->verbose)
			ExplainPropertyInteger("Lines Parsed Strictly", NULL, st->line.parsed_strictly, es);
	}
}

/* ----------------------------------------------------------------
 *		ANALYZE
 * ----------------------------------------------------------------
 */

/*
 * kl_acquire_sample_rows
 *		ANALYZE: count every row, keep a reservoir sample; only the rows
 *		that enter the sample are parsed and built.
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
	ReservoirStateData rstate;
	int			numrows = 0;
	double		rowstoskip = -1;
	MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_lake analyze row",
												  ALLOCSET_DEFAULT_SIZES);
	ErrorContextCallback errcallback;
	const char *text;
	size_t		len;

	kl_foreign_table_options(RelationGetRelid(onerel), &source, &status);
	kl_scan_begin(&st, onerel, source, NIL, true);
	kl_prune_init(&st.prune, kl_table_status_file(status));
	kl_scan_read_batches(&st);

	*totalrows = 0;
	*totaldeadrows = 0;
	reservoir_init_selection_state(&rstate, targrows);

	errcallback.callback = kl_scan_error_callback;
	errcallback.arg = &st;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	while (kl_scan_next_line(&st, false, &text, &len))
	{
		int			slot = -1;
		bool		replace = false;

		vacuum_delay_point();
		if (numrows < targrows)
			slot = numrows++;
		else
		{
			if (rowstoskip < 0)
				rowstoskip = reservoir_get_next_S(&rstate, *totalrows, targrows);
			if (rowstoskip <= 0)
			{
				slot = (int) (targrows * sampler_random_fract(&rstate.randstate));
				replace = true;
			}
			rowstoskip -= 1;
		}
		*totalrows += 1;
		if (slot < 0)
			continue;
		{
			MemoryContext old;

			MemoryContextReset(row_cxt);
			old = MemoryContextSwitchTo(row_cxt);
			kl_line_parse(&st.line, text, len, st.file_want);
			kl_fill_row(&st, values, nulls, desc->natts);
			MemoryContextSwitchTo(old);
			if (replace)
				heap_freetuple(rows[slot]);
			rows[slot] = heap_form_tuple(desc, values, nulls);
		}
	}
	error_context_stack = errcallback.previous;
	kl_scan_release(&st);
	MemoryContextDelete(row_cxt);

	ereport(elevel,
			(errmsg("\"%s\": kafka_lake source \"%s\", %d batches, %.0f rows; %d rows in sample",
					RelationGetRelationName(onerel), st.src->source,
					list_length(st.batches), *totalrows, numrows)));
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
	KlPrune		prune;
	int64		total;
	double		bytes = 0;
	ListCell   *cell;
	List	   *batches;

	src = kl_table_source(RelationGetRelid(relation), &source, &status);
	/* ANALYZE runs as the table's owner */
	kl_check_source_read(src->source, RelationGetRelid(relation), GetUserId());
	kl_prune_init(&prune, kl_table_status_file(status));
	batches = kl_prune_batches(src, &prune, false, &total);
	foreach(cell, batches)
	{
		KlBatch *b = lfirst(cell);

		for (int i = 0; i < KL_NFILES; i++)
			bytes += prune.bounds.files[i] ? b->files[i].bytes : 0;
	}
	*totalpages = (BlockNumber) Max(1, bytes / BLCKSZ);
	*func = kl_acquire_sample_rows;
	return true;
}
