/*-------------------------------------------------------------------------
 *
 * kafka_lake.h
 *	  What every part of kafka_lake shares (kafka_lake.c): the settings,
 *	  the fault injection points, the check of NULL arguments.  Every
 *	  other file declares what it offers in a header of its own name.
 *
 * IDENTIFICATION
 *	  src/kafka_lake.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_KAFKA_LAKE_H
#define KAFKA_LAKE_KAFKA_LAKE_H

#include "fmgr.h"

extern char *kl_landing_dir;
extern int	kl_batch_max_records;
extern int	kl_batch_max_bytes;
extern char *kl_fault_injection;
extern void kl_fault_point(const char *point);
extern bool kl_fault_take(const char *point);
extern bool kl_fault_pausing(const char *point);
extern void kl_fault_pause(const char *point);
extern char *kl_landing_dir_refusal(const char *path, char *resolved);
extern void kl_check_not_null(FunctionCallInfo fcinfo, int argno, const char *argname,
							  const char *hint);

#endif							/* KAFKA_LAKE_KAFKA_LAKE_H */
