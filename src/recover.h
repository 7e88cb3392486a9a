/*-------------------------------------------------------------------------
 *
 * recover.h
 *	  Making the catalog match the disk (recover.c).
 *
 * IDENTIFICATION
 *	  src/recover.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_RECOVER_H
#define KAFKA_LAKE_RECOVER_H

#include "access/tupdesc.h"
#include "utils/tuplestore.h"

#include "batch_format.h"
#include "catalog.h"

extern int	kl_recover_partition(KlSource *src, int32 partition, Tuplestorestate *out,
								 TupleDesc desc);
extern char *kl_stray_reason(const char *part_dir, const char *name);
extern void kl_check_adoptable(KlSource *src, int32 partition, const char *dir, const char *name,
							   KlBatch *b, KlRecord **recs, int *n);

#endif							/* KAFKA_LAKE_RECOVER_H */
