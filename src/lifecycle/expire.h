/*-------------------------------------------------------------------------
 *
 * expire.h
 *	  expire(): retention of record files (expire.c).
 *
 * IDENTIFICATION
 *	  src/lifecycle/expire.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_EXPIRE_H
#define KAFKA_LAKE_EXPIRE_H

#include "fmgr.h"

extern Datum kafka_lake_expire(PG_FUNCTION_ARGS);

#endif							/* KAFKA_LAKE_EXPIRE_H */
