/*-------------------------------------------------------------------------
 *
 * bulk_insert.c
 *	  Rows straight into a table and its indexes, without SQL: the one
 *	  writer of the rows kafka_lake writes by the thousand, the accepted
 *	  event_ids of a landing (catalog.c) and the silver rows of a bridge
 *	  (bridge_silver.c).
 *
 * An INSERT statement costs several times more per row than the table
 * access method, and both writers know their rows exactly.  So rows are
 * gathered in slots, capacity at a time, and inserted with one heap
 * multi-insert, then each row's index entries with index_insert, which
 * does the unique checks itself (a concurrent session's uncommitted key
 * makes us wait, a committed one raises the unique violation).  Partial
 * indexes get their predicate evaluated; an exclusion constraint is refused,
 * since index_insert alone cannot check it.  No trigger fires: the tables
 * are the extension's own and have none.
 *
 * A BRIN index is given a value once per heap block, not once per row: its
 * summary is the union of the values of its block range, so giving it a
 * value again for a heap block it was given that value for changes nothing
 * (KlBrinLast).  For silver's index on run_id that is all but one call per
 * heap block.
 *
 * IDENTIFICATION
 *	  src/base/bulk_insert.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/datum.h"
#include "utils/memutils.h"

#include "base/bulk_insert.h"

/*
 * What a BRIN index was last given.  A BRIN summary is the union
 * of the values of its block range, so giving it a value again for a heap
 * block it was given that value for changes nothing: the writer skips such
 * calls, which for the run_id index are all but one per heap block.
 */
struct KlBrinLast
{
	bool		valid;
	BlockNumber block;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	MemoryContext cxt;			/* holds copies of the values */
};
typedef struct KlBrinLast KlBrinLast;

/*
 * kl_bulk_open
 *		Get ready to insert rows into rel (opened by the caller with
 *		RowExclusiveLock), capacity at a time: open every index on it.
 *		Memory comes from cxt.
 */
void
kl_bulk_open(KlBulkInsert *w, Relation rel, int capacity, int options, MemoryContext cxt)
{
	List	   *index_oids;
	ListCell   *cell;
	int			i = 0;

	MemoryContext old = MemoryContextSwitchTo(cxt);

	memset(w, 0, sizeof(*w));
	w->rel = rel;
	w->options = options;
	w->capacity = capacity;
	w->estate = CreateExecutorState();
	index_oids = RelationGetIndexList(w->rel);
	w->nindexes = list_length(index_oids);
	w->indexes = palloc0(sizeof(Relation) * Max(w->nindexes, 1));
	w->index_info = palloc0(sizeof(IndexInfo *) * Max(w->nindexes, 1));
	w->predicates = palloc0(sizeof(ExprState *) * Max(w->nindexes, 1));
	w->brin_last = palloc0(sizeof(KlBrinLast *) * Max(w->nindexes, 1));
	foreach(cell, index_oids)
	{
		Relation	idx = index_open(lfirst_oid(cell), RowExclusiveLock);
		IndexInfo  *ii = BuildIndexInfo(idx);

		if (ii->ii_ExclusionOps != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("kafka_lake cannot maintain exclusion constraint index \"%s\" on kafka_lake.%s",
							RelationGetRelationName(idx), RelationGetRelationName(rel)),
					 errhint("Drop that constraint; kafka_lake deduplicates the rows it writes there itself.")));
		w->indexes[i] = idx;
		w->index_info[i] = ii;
		if (ii->ii_Predicate != NIL)
			w->predicates[i] = ExecPrepareQual(ii->ii_Predicate, w->estate);
		if (idx->rd_rel->relam == BRIN_AM_OID)
		{
			w->brin_last[i] = palloc0(sizeof(KlBrinLast));
			w->brin_last[i]->cxt = AllocSetContextCreate(cxt, "kafka_lake bulk insert brin",
														 ALLOCSET_SMALL_SIZES);
		}
		i++;
	}
	w->bistate = GetBulkInsertState();
	w->cid = GetCurrentCommandId(true);
	w->desc = CreateTupleDescCopy(RelationGetDescr(w->rel));
	w->slots = palloc(sizeof(TupleTableSlot *) * capacity);
	w->cxt = cxt;
	w->rows_cxt = AllocSetContextCreate(cxt, "kafka_lake bulk insert rows", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(old);
}

/*
 * kl_bulk_make_slot
 *		One more slot, for the next row.  Slots are made as rows come, not
 *		capacity of them at open: a landing opens a writer per batch, most
 *		of whose batches hold fewer rows.  They are of a copy of the table's
 *		descriptor, which is not reference-counted, so that no slot
 *		registers with the resource owner: a transaction that lands
 *		thousands of batches would otherwise make it hold thousands of
 *		references to one descriptor, which it looks up one by one.
 */
void
kl_bulk_make_slot(KlBulkInsert *w)
{
	MemoryContext old = MemoryContextSwitchTo(w->cxt);

	Assert(w->nmade < w->capacity);
	w->slots[w->nmade++] = MakeSingleTupleTableSlot(w->desc, table_slot_callbacks(w->rel));
	MemoryContextSwitchTo(old);
}

/*
 * kl_brin_seen
 *		Was this BRIN index just given these values for this heap block?
 *		If not, remember them as the last ones given.
 */
static bool
kl_brin_seen(KlBrinLast *last, Relation index, BlockNumber block, Datum *values,
			 bool *isnull)
{
	TupleDesc	desc = RelationGetDescr(index);
	int			natts = IndexRelationGetNumberOfKeyAttributes(index);
	MemoryContext old;

	if (last->valid && last->block == block)
	{
		bool		same = true;

		for (int k = 0; same && k < natts; k++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, k);

			if (isnull[k] != last->isnull[k])
				same = false;
			else if (!isnull[k] &&
					 !datumIsEqual(values[k], last->values[k], att->attbyval, att->attlen))
				same = false;
		}
		if (same)
			return true;
	}
	MemoryContextReset(last->cxt);
	old = MemoryContextSwitchTo(last->cxt);
	for (int k = 0; k < natts; k++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, k);

		last->isnull[k] = isnull[k];
		last->values[k] = isnull[k] ? (Datum) 0 :
			datumCopy(values[k], att->attbyval, att->attlen);
	}
	MemoryContextSwitchTo(old);
	last->block = block;
	last->valid = true;
	return false;
}

/*
 * kl_bulk_flush
 *		Insert the pending rows: one heap multi-insert, then their index
 *		entries.
 */
void
kl_bulk_flush(KlBulkInsert *w)
{
	ExprContext *econtext = GetPerTupleExprContext(w->estate);

	if (w->nslots == 0)
		return;
	table_multi_insert(w->rel, w->slots, w->nslots, w->cid, w->options, w->bistate);
	for (int j = 0; j < w->nslots; j++)
	{
		TupleTableSlot *slot = w->slots[j];

		econtext->ecxt_scantuple = slot;
		for (int i = 0; i < w->nindexes; i++)
		{
			IndexInfo  *ii = w->index_info[i];
			Datum		values[INDEX_MAX_KEYS];
			bool		isnull[INDEX_MAX_KEYS];

			if (w->predicates[i] && !ExecQual(w->predicates[i], econtext))
				continue;
			FormIndexDatum(ii, slot, w->estate, values, isnull);
			if (w->brin_last[i] &&
				kl_brin_seen(w->brin_last[i], w->indexes[i],
							 ItemPointerGetBlockNumber(&slot->tts_tid), values, isnull))
				continue;
			index_insert(w->indexes[i], values, isnull, &slot->tts_tid, w->rel,
						 ii->ii_Unique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO, false, ii);
		}
		ResetPerTupleExprContext(w->estate);
		ExecClearTuple(slot);
	}
	w->nslots = 0;
	MemoryContextReset(w->rows_cxt);
	CHECK_FOR_INTERRUPTS();
}

/*
 * kl_bulk_close
 *		Insert what is pending, release everything but the table (which the
 *		caller closes).
 */
void
kl_bulk_close(KlBulkInsert *w)
{
	kl_bulk_flush(w);
	for (int i = 0; i < w->nmade; i++)
		ExecDropSingleTupleTableSlot(w->slots[i]);
	FreeBulkInsertState(w->bistate);
	table_finish_bulk_insert(w->rel, w->options);
	for (int i = 0; i < w->nindexes; i++)
		index_close(w->indexes[i], RowExclusiveLock);
	FreeExecutorState(w->estate);
}
