/*-------------------------------------------------------------------------
 *
 * source.h
 *	  Sources: create_source(), drop_source() and the lock of a source's
 *	  writers (source.c).
 *
 * IDENTIFICATION
 *	  src/source.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_SOURCE_H
#define KAFKA_LAKE_SOURCE_H

#include "catalog.h"

extern void kl_source_lock(KlSource *src);

#endif							/* KAFKA_LAKE_SOURCE_H */
