/*-------------------------------------------------------------------------
 *
 * compact.h
 *	  compact(): merging runs of small batches (compact.c).
 *
 * IDENTIFICATION
 *	  src/lifecycle/compact.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_COMPACT_H
#define KAFKA_LAKE_COMPACT_H

#include "fmgr.h"

extern Datum kafka_lake_compact(PG_FUNCTION_ARGS);

#endif							/* KAFKA_LAKE_COMPACT_H */
