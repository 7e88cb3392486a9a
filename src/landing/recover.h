/*-------------------------------------------------------------------------
 *
 * recover.h
 *	  Making the catalog match the disk (recover.c).
 *
 * IDENTIFICATION
 *	  src/landing/recover.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_RECOVER_H
#define KAFKA_LAKE_RECOVER_H

#include "access/tupdesc.h"
#include "utils/tuplestore.h"

#include "format/batch_format.h"
#include "kl_catalog/catalog.h"

/* What a batch directory the catalog does not know is (kl_classify_unknown) */
typedef enum KlUnknownBatch
{
	KL_UNKNOWN_ADOPTABLE,		/* adopted (or refused) as any batch */
	KL_UNKNOWN_PENDING,			/* this transaction removes it at commit */
	KL_UNKNOWN_REPLACED,		/* a committed compaction replaced it */
	KL_UNKNOWN_ORPHANED,		/* ... and the batch replacing it is missing */
	KL_UNKNOWN_UNCOMMITTED,		/* a compacted batch that never committed */
	KL_UNKNOWN_COMPLETE			/* a compacted batch to complete the swap of */
} KlUnknownBatch;

extern int	kl_recover_partition(KlSource *src, int32 partition, Tuplestorestate *out,
								 TupleDesc desc);
extern KlUnknownBatch kl_classify_unknown(const char *part_dir, const char *name, List *replaced,
										  char **other, KlBatch *compacted);
extern char *kl_stray_reason(const char *part_dir, const char *name);
extern void kl_check_adoptable(KlSource *src, int32 partition, const char *dir, const char *name,
							   KlBatch *b, KlRecord **recs, int *n);

#endif							/* KAFKA_LAKE_RECOVER_H */
