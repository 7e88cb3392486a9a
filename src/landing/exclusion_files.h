/*-------------------------------------------------------------------------
 *
 * exclusion_files.h
 *	  Exclusion units on disk: written, read, adopted (exclusion_files.c).
 *
 * IDENTIFICATION
 *	  src/landing/exclusion_files.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_EXCLUSION_FILES_H
#define KAFKA_LAKE_EXCLUSION_FILES_H

#include "access/tupdesc.h"
#include "utils/tuplestore.h"

#include "kl_catalog/catalog_exclusions.h"

#define KL_EXCLUSIONS_DIR		"exclusions"	/* in a source's directory */
#define KL_EXCLUSION_PREFIX		"exclusion="
#define KL_EXCLUSION_FILE		"exclusion.json"

extern char *kl_exclusions_dir(KlSource *src);
extern char *kl_exclusion_dir(KlSource *src, const char *exclusion_id);
extern void kl_write_exclusion_unit(KlSource *src, KlExclusion *x);
extern bool kl_read_exclusion_unit(const char *dir, KlExclusion *x, char **problem);
extern void kl_apply_exclusion(KlSource *src, const KlExclusion *x);
extern char *kl_exclusion_conflict(KlSource *src, const KlExclusion *x);
extern int	kl_recover_exclusions(KlSource *src, Tuplestorestate *out, TupleDesc desc);

#endif							/* KAFKA_LAKE_EXCLUSION_FILES_H */
