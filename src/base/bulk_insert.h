/*-------------------------------------------------------------------------
 *
 * bulk_insert.h
 *	  Rows straight into a table and its indexes (bulk_insert.c).
 *
 * IDENTIFICATION
 *	  src/base/bulk_insert.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_BULK_INSERT_H
#define KAFKA_LAKE_BULK_INSERT_H

#include "access/heapam.h"
#include "executor/tuptable.h"
#include "nodes/execnodes.h"
#include "utils/rel.h"

struct KlBrinLast;

/* An open table and its indexes, and the rows not yet inserted */
typedef struct KlBulkInsert
{
	Relation	rel;
	int			options;		/* table_multi_insert's, e.g. TABLE_INSERT_SKIP_FSM */
	int			nindexes;
	Relation   *indexes;
	IndexInfo **index_info;
	ExprState **predicates;		/* of partial indexes, else NULL */
	struct KlBrinLast **brin_last;	/* NULL for an index that is not BRIN */
	EState	   *estate;
	BulkInsertState bistate;
	CommandId	cid;
	TupleDesc	desc;			/* the table's, a copy no slot pins */
	TupleTableSlot **slots;
	int			capacity;		/* rows per multi-insert */
	int			nmade;			/* slots made so far (as rows come) */
	int			nslots;			/* rows pending */
	MemoryContext cxt;			/* the writer's */
	MemoryContext rows_cxt;		/* for the datums of pending rows */
} KlBulkInsert;

extern void kl_bulk_open(KlBulkInsert *w, Relation rel, int capacity, int options,
						 MemoryContext cxt);
extern void kl_bulk_flush(KlBulkInsert *w);
extern void kl_bulk_make_slot(KlBulkInsert *w);
extern void kl_bulk_close(KlBulkInsert *w);

/*
 * kl_bulk_next_slot
 *		The slot of the next row, empty: the caller fills tts_values and
 *		tts_isnull (datums that need memory in w->rows_cxt) and calls
 *		kl_bulk_add.
 */
static inline TupleTableSlot *
kl_bulk_next_slot(KlBulkInsert *w)
{
	TupleTableSlot *slot;

	if (w->nslots == w->nmade)
		kl_bulk_make_slot(w);
	slot = w->slots[w->nslots];
	ExecClearTuple(slot);
	return slot;
}

/*
 * kl_bulk_add
 *		The slot kl_bulk_next_slot gave is filled: the row is pending, and
 *		inserted with the others once capacity rows are.
 */
static inline void
kl_bulk_add(KlBulkInsert *w)
{
	ExecStoreVirtualTuple(w->slots[w->nslots]);
	if (++w->nslots == w->capacity)
		kl_bulk_flush(w);
}

#endif							/* KAFKA_LAKE_BULK_INSERT_H */
