/*-------------------------------------------------------------------------
 *
 * source_status.h
 *	  The state of every source at a glance: the last error of a failed
 *	  land() per partition, kept in shared memory, and the privilege check
 *	  of the functions behind kafka_lake's views (source_status.c).
 *
 * IDENTIFICATION
 *	  src/landing/source_status.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_SOURCE_STATUS_H
#define KAFKA_LAKE_SOURCE_STATUS_H

#include "utils/palloc.h"

extern void kl_status_shmem_init(void);
extern void kl_status_record_error(int32 source_id, int32 topic_index, int32 partition,
								   MemoryContext cxt);
extern void kl_check_view_reader(const char *view);

#endif							/* KAFKA_LAKE_SOURCE_STATUS_H */
