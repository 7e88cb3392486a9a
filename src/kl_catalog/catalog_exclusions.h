/*-------------------------------------------------------------------------
 *
 * catalog_exclusions.h
 *	  The catalog of exclusions: kafka_lake.exclusions, the status letters
 *	  'X' and 'P' of kafka_lake.coordinates and the accepted event_ids that
 *	  exclude() and unexclude() move (catalog_exclusions.c).
 *
 * IDENTIFICATION
 *	  src/kl_catalog/catalog_exclusions.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_CATALOG_EXCLUSIONS_H
#define KAFKA_LAKE_CATALOG_EXCLUSIONS_H

#include "nodes/pg_list.h"

#include "format/batch_format.h"
#include "kl_catalog/catalog.h"

#define KL_EXCLUSION_ID_LEN		33	/* 20 + 1 + 12 */

/* One coordinate whose letter an exclusion unit changes */
typedef struct KlExclusionChange
{
	int32		partition;
	int64		offset;
	char		batch_id[KL_BATCH_ID_LEN + 1];	/* the batch (or readmit unit)
												 * whose coordinates row holds it */
	uint8		fingerprint[KL_SHA256_LEN];
	char		from;			/* its letter before */
	char		to;				/* and after */
} KlExclusionChange;

/*
 * One exclusion unit: what exclude() or unexclude() did, as its
 * exclusion.json says and as kafka_lake.exclusions records it.
 */
typedef struct KlExclusion
{
	char		exclusion_id[KL_EXCLUSION_ID_LEN + 1];	/* <seq:020d>-<hash12> */
	int64		seq;			/* order of the source's units */
	bool		undo;			/* unexclude(): undoes exclusion undoes */
	char	   *topic;
	char	   *event_id;		/* NULL: a record without event_id */
	int			nchanges;		/* 1 or 2 */
	KlExclusionChange changes[2];	/* [0] the record named; [1] the
									 * duplicate promoted (exclude) or made
									 * a duplicate again (unexclude) */
	bool		has_before;		/* event_id: accepted_events held it at */
	int32		before_partition;
	int64		before_offset;
	bool		has_after;		/* ... and holds it at, after the unit */
	int32		after_partition;
	int64		after_offset;
	char	   *undoes;			/* unexclude: the exclusion_id it undoes */
	char	   *reason;
	char	   *created_by;
	char	   *created_at;		/* ISO-8601 */
	char		manifest_sha256[KL_SHA256_HEX_LEN + 1];
	int64		manifest_bytes;
	const char *landed_by;		/* exclude, unexclude or recover */
	bool		undone;			/* from the catalog: an unexclude undid it */
} KlExclusion;

extern bool kl_catalog_has_exclusions(void);
extern Datum kl_event_key_datum(KlSource *src, const char *event_id);
extern List *kl_catalog_exclusions(KlSource *src);
extern int64 kl_catalog_next_exclusion_seq(KlSource *src);
extern void kl_catalog_insert_exclusion(KlSource *src, const KlExclusion *x);
extern char kl_catalog_letter(KlSource *src, const char *batch_id, int64 offset, bool for_update);
extern void kl_catalog_set_letter(KlSource *src, const char *batch_id, int64 offset, char from,
								  char to);
extern bool kl_catalog_event_holder(KlSource *src, const char *event_id, int *topic_index,
									int32 *partition, int64 *offset);
extern void kl_catalog_move_event(KlSource *src, const char *event_id, bool has_at,
								  int32 partition, int64 offset);

#endif							/* KAFKA_LAKE_CATALOG_EXCLUSIONS_H */
