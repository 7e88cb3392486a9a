/*-------------------------------------------------------------------------
 *
 * catalog_lifecycle.h
 *	  The catalog's part of compaction, expiry and their recovery
 *	  (catalog_lifecycle.c).
 *
 * IDENTIFICATION
 *	  src/kl_catalog/catalog_lifecycle.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_CATALOG_LIFECYCLE_H
#define KAFKA_LAKE_CATALOG_LIFECYCLE_H

#include "nodes/pg_list.h"
#include "utils/date.h"

#include "format/batch_format.h"
#include "kl_catalog/catalog.h"

/* A batch a committed compaction replaced, and the batch that holds it now */
typedef struct KlReplaced
{
	char	   *old_id;
	char	   *new_id;
	bool		mine;			/* the compaction is this transaction's, not
								 * committed yet */
} KlReplaced;

/* What became of a batch the current snapshot still lists (kl_catalog_batch_fate) */
typedef enum KlBatchFate
{
	KL_FATE_UNCHANGED,			/* still there as it was, or unknown */
	KL_FATE_COMPACTED,			/* replaced by a compacted batch */
	KL_FATE_EXPIRED				/* its record files were removed */
} KlBatchFate;

extern void kl_catalog_swap_batches(KlSource *src, List *old_ids, const KlBatch *nb,
									const KlRecord *recs, int n);
extern List *kl_catalog_replaced_batches(KlSource *src, int32 partition);
extern void kl_catalog_mark_expired(KlSource *src, const char *batch_id, TimestampTz at);
extern KlBatchFate kl_catalog_batch_fate(KlSource *src, const char *batch_id, char **into,
										 TimestampTz *expired_at);
extern bool kl_catalog_has_horizon(void);
extern bool kl_catalog_has_lean_expiry(void);
extern List *kl_catalog_reducible(KlSource *src, int32 partition, TimestampTz now);
extern void kl_catalog_mark_reduced(KlSource *src, const char *batch_id, TimestampTz at,
									const KlBatch *checks);
extern int64 kl_catalog_prune_event_ids(KlSource *src, TimestampTz now, DateADT *lo, DateADT *hi);
extern void kl_catalog_set_dedupe_horizon(KlSource *src, Interval *horizon);
extern List *kl_catalog_expirable(KlSource *src, int32 partition, DateADT limit,
								  bool closed_only);

#endif							/* KAFKA_LAKE_CATALOG_LIFECYCLE_H */
