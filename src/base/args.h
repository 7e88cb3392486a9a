/*-------------------------------------------------------------------------
 *
 * args.h
 *	  The arguments of kafka_lake's SQL functions (args.c).
 *
 * IDENTIFICATION
 *	  src/base/args.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_ARGS_H
#define KAFKA_LAKE_ARGS_H

#include "fmgr.h"

extern void kl_check_not_null(FunctionCallInfo fcinfo, int argno, const char *argname,
							  const char *hint);

#endif							/* KAFKA_LAKE_ARGS_H */
