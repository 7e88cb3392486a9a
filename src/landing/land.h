/*-------------------------------------------------------------------------
 *
 * land.h
 *	  The landing protocol as other parts of kafka_lake use it: landing a
 *	  source up to per-partition marks, for close_date() (land.c).
 *
 * IDENTIFICATION
 *	  src/landing/land.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_LAND_H
#define KAFKA_LAKE_LAND_H

#include "datatype/timestamp.h"

#include "kl_catalog/catalog.h"

/* Why a partition did not reach its mark (KlLandMarks.behind) */
typedef enum KlBehindReason
{
	KL_BEHIND_NONE = 0,			/* it reached its mark */
	KL_BEHIND_LOCKED,			/* another session landed it until the deadline */
	KL_BEHIND_TIMEOUT			/* the call's timeout ended first */
} KlBehindReason;

/* A landing up to marks, and how far each partition got */
typedef struct KlLandMarks
{
	/* in */
	bool		by_time;		/* marks from offsets-for-times of cutoff_ms */
	int64		cutoff_ms;		/* a record timestamp, Unix milliseconds */
	/* out */
	KlSource   *src;			/* the source, looked up by the call */
	/*
	 * The arrays below have one slot per partition of every topic of the
	 * source at the call: topic t's partition p is slot topic_base[t] + p.
	 */
	int			nparts;			/* slots */
	int		   *topic_base;		/* per topic, and [ntopics] = nparts */
	int		   *slot_topic;		/* per slot: its topic's index */
	int32	   *slot_partition; /* per slot: its partition */
	int64	   *marks;			/* per partition: exclusive end of what must land */
	int64	   *low;			/* the watermarks read at the call */
	int64	   *high;
	int64	   *committed;		/* per partition: the group's offset at the
								 * call, -1: none */
	int64	   *call_committed; /* per partition: what the call committed,
								 * -1: nothing */
	int64	   *reached;		/* per partition: landed below this offset, -1
								 * when the landing did not get there */
	int64	   *last_offset;	/* per partition: the last record the call
								 * polled (below the mark), -1: none */
	int64	   *last_timestamp_ms;	/* its timestamp, -1: none */
	KlBehindReason *behind;		/* per partition */
	int32		partition;		/* slot being landed when an error came, -1:
								 * none */
} KlLandMarks;

extern void kl_land_to_marks(const char *source, int timeout_ms, KlLandMarks *m);

#endif							/* KAFKA_LAKE_LAND_H */
