/*-------------------------------------------------------------------------
 *
 * source_lock.h
 *	  The lock every function that writes a source's files holds
 *	  (source_lock.c).
 *
 * IDENTIFICATION
 *	  src/landing/source_lock.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_SOURCE_LOCK_H
#define KAFKA_LAKE_SOURCE_LOCK_H

#include "kl_catalog/catalog.h"

extern void kl_source_lock(KlSource *src);

#endif							/* KAFKA_LAKE_SOURCE_LOCK_H */
