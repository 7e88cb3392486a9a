/*-------------------------------------------------------------------------
 *
 * catalog_close.h
 *	  The closing of business dates in the catalog: date_closings,
 *	  date_closing_partitions and the closing status of snapshots
 *	  (catalog_close.c).
 *
 * IDENTIFICATION
 *	  src/bridge/catalog_close.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_CATALOG_CLOSE_H
#define KAFKA_LAKE_CATALOG_CLOSE_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/date.h"

#include "kl_catalog/catalog.h"

/* Where a business date stands: its current snapshot and its certificate */
typedef struct KlDateState
{
	bool		has_current;	/* the date has a current snapshot */
	int64		snapshot_id;	/* of it */
	char	   *source_hash;
	char	   *run_id;
	char	   *closing_status; /* provisional, closed or reopened */
	bool		has_closing;	/* a certificate not superseded */
	int64		closing_id;
	char	   *closing_state;	/* closed or reopened */
	bool		final;			/* its event_ids went (the dedupe horizon): it
								 * is never reopened or closed again */
} KlDateState;

/* A certificate: one row of date_closings with its partitions */
typedef struct KlClosing
{
	int64		closing_id;
	int32		source_id;
	char	   *source;
	DateADT		business_date;
	int64		snapshot_id;
	char	   *source_hash;
	int32		selected_events;
	bool		has_cutoff;
	TimestampTz cutoff;
	char	   *closed_by;
	TimestampTz closed_at;
	char	   *status;			/* closed, reopened or superseded */
	int			nparts;			/* slots: every partition of every topic */
	char	  **slot_topic;		/* per slot: its topic, in the source's order */
	int32	   *slot_partition; /* per slot: its partition, from 0 per topic */
	int64	   *through_offset; /* per slot; -1 where it has no row */
	int64	   *through_timestamp_ms;	/* per slot; -1: none */
	bool	   *slot_owned;		/* per slot: the source owned the partition
								 * at the closing (NULL: every slot) */
} KlClosing;

extern int	kl_closing_slot(const KlClosing *c, const char *topic, int32 partition);
extern void kl_catalog_date_state(int32 source_id, DateADT date, KlDateState *st);
extern int64 kl_catalog_run_snapshot(const char *run_id);
extern int64 kl_catalog_republish_snapshot(int32 source_id, DateADT date, int64 from_snapshot,
										   const char *closing_status);
extern void kl_catalog_mark_reopened(int64 closing_id, int64 snapshot_id);
extern bool kl_catalog_last_batch_below(KlSource *src, int32 partition, int64 mark,
										char *batch_id);
extern bool kl_catalog_closes_empty_shares(void);
extern int64 kl_catalog_record_closing(const KlClosing *c);
extern bool kl_catalog_closing_owned_matches(int64 closing_id, const KlSource *src);
extern KlClosing *kl_catalog_closing(int64 closing_id);
extern List *kl_catalog_closings_in_effect(void);

#endif							/* KAFKA_LAKE_CATALOG_CLOSE_H */
