/*-------------------------------------------------------------------------
 *
 * locks.h
 *	  kafka_lake's advisory locks (locks.c).
 *
 * IDENTIFICATION
 *	  src/kl_catalog/locks.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_LOCKS_H
#define KAFKA_LAKE_LOCKS_H

#include "datatype/timestamp.h"
#include "utils/date.h"

#include "kl_catalog/catalog.h"

extern bool kl_try_lock_partition(KlSource *src, int32 partition);
extern bool kl_lock_partition_wait(KlSource *src, int32 partition, TimestampTz deadline);
extern void kl_unlock_partition(KlSource *src, int32 partition);
extern void kl_lock_bridge_date(int32 source_id, DateADT date);
extern void kl_lock_group_id(const char *group_id);
extern void kl_lock_source_dir(const char *source);
extern void kl_lock_exclusions(KlSource *src);
extern void kl_lock_export(int32 source_id);

#endif							/* KAFKA_LAKE_LOCKS_H */
