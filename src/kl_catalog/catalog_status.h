/*-------------------------------------------------------------------------
 *
 * catalog_status.h
 *	  What land() records for source_status: kafka_lake.partition_state
 *	  (catalog_status.c).
 *
 * IDENTIFICATION
 *	  src/kl_catalog/catalog_status.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_CATALOG_STATUS_H
#define KAFKA_LAKE_CATALOG_STATUS_H

#include "kl_catalog/catalog.h"

extern void kl_catalog_record_partition_states(KlSource *src, int nparts, const bool *owned,
											   const char *const *status, const int64 *low,
											   const int64 *high);

#endif							/* KAFKA_LAKE_CATALOG_STATUS_H */
