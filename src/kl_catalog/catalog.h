/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  The catalog tables of schema kafka_lake (catalog.c).
 *
 * IDENTIFICATION
 *	  src/kl_catalog/catalog.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_CATALOG_H
#define KAFKA_LAKE_CATALOG_H

#include "fmgr.h"
#include "nodes/pg_list.h"
#include "utils/date.h"

#include "format/batch_format.h"

/* A source, as recorded in kafka_lake.sources */
typedef struct KlSource
{
	int32		source_id;
	char	   *source;
	char	   *server;
	/*
	 * The topic an operation is on: topics[topic_index].  A source lands one
	 * topic or several (sources.topic holds them separated by commas); what
	 * works per partition works on one topic at a time, on the copy
	 * kl_source_topic() makes, and what works on the whole source loops
	 * over topics.
	 */
	char	   *topic;
	char	  **topics;
	int			ntopics;
	int			topic_index;
	char	   *group_id;
	char	   *contract;
	int32		contract_version;	/* 1 in a catalog without contracts */
	char	   *cluster_id;		/* NULL until the first land() */
	char	   *dir;			/* <landing root>/<source> */
	int			compression;	/* KL_COMPRESS_* of new batches (none in a
								 * catalog without sources.compression) */
	bool		ordered_keys;	/* sources.event_keys is 'ordered' (false in a
								 * catalog without it): digest.c */
	/*
	 * The partitions this server lands of each topic (sources.partitions,
	 * ascending), npartitions of them; 0: every partition (NULL in the
	 * catalog, and a catalog without the column).  See kl_source_owns.
	 */
	int32	   *partitions;
	int			npartitions;
} KlSource;

/* Bounds on the batches and files a reader needs */
typedef struct KlBounds
{
	int32		partition_lo;
	int32		partition_hi;
	int64		offset_lo;		/* batches whose range meets [lo, hi] */
	int64		offset_hi;
	DateADT		date_lo;		/* batches whose business dates meet [lo, hi] */
	DateADT		date_hi;
	char	   *batch_id;		/* NULL: any */
	const char *topic;			/* NULL: every topic of the source */
	bool		files[KL_NFILES];	/* which status files */
	bool		excluded;		/* and the batches with excluded records
								 * ('X', exclude.c) */
	bool		contradiction;	/* nothing can match */
} KlBounds;

/* The coordinates already durable in some range of a partition */
typedef struct KlDurable
{
	int			count;
	int64	   *offsets;		/* ascending */
	uint8	   *fingerprints;	/* KL_SHA256_LEN each */
	bool	   *on_disk;		/* its fingerprint is in its batch's manifest
								 * only (an expired batch): zeros here */
	List	   *disk_batches;	/* the batch_ids of those */
	bool	   *prefix_only;	/* (the caller's) known by the first
								 * KL_FINGERPRINT_PREFIX_LEN bytes only: a
								 * reduced manifest's; NULL: none is */
} KlDurable;

/* What the catalog remembers of a partition of a source */
typedef struct KlPartitionState
{
	bool		has_history;	/* some batch or commit is recorded */
	int64		last_commit;	/* highest committed offset recorded, -1: none */
	int64		remembered;		/* max of last_commit and the end of the last
								 * batch; 0 when nothing is recorded */
} KlPartitionState;

extern KlSource *kl_source_lookup(const char *name);
extern KlSource *kl_source_arg(FunctionCallInfo fcinfo, int argno);
typedef struct KlCatalogSave
{
	Oid			userid;			/* the caller's user id and security context */
	int			sec_context;
	int			guc_nestlevel;	/* undoes the pinned search_path */
} KlCatalogSave;

extern Oid	kl_catalog_relid(const char *relname);
extern bool kl_catalog_has_contracts(void);
extern KlCatalogSave kl_catalog_begin(void);
extern void kl_catalog_end(KlCatalogSave save);
extern void kl_catalog_set_cluster_id(KlSource *src, const char *cluster_id);
extern int64 kl_catalog_remembered_offset(KlSource *src, int32 partition);
extern KlDurable *kl_catalog_durable(KlSource *src, int32 partition, int64 first, int64 last);
extern void kl_catalog_reserve_events(KlSource *src, int32 partition, KlRecord *recs, int n);

/* What the reservation of event_ids reads and decides of a record */
typedef struct KlIdentity
{
	pg_uuid_t	event_key;
	int64		offset;
	int64		dup_offset;		/* duplicates: where the event was accepted */
	int32		dup_partition;
	const char *dup_topic;		/* NULL: the candidate's own topic */
	char		status;			/* KL_STATUS_* */
	bool		reserved;
	bool		has_event_id;
} KlIdentity;

extern void kl_catalog_reserve_identities(KlSource *src, int32 partition, KlIdentity *ids,
										  int n);
extern bool kl_catalog_try_reserve_identities(KlSource *src, int32 partition, KlIdentity *ids,
											  int n, bool may_skip);
extern void kl_identities_of(const KlRecord *recs, int n, KlIdentity *ids);
extern void kl_identities_apply(const KlIdentity *ids, int n, KlRecord *recs);
extern bool kl_catalog_has_manifest_checks(void);
extern bool kl_catalog_has_lifecycle(void);
extern bool kl_catalog_has_reduction(void);
extern bool kl_catalog_has_compression(void);
extern bool kl_catalog_has_event_keys(void);
extern bool kl_catalog_has_partitions(void);
extern bool kl_catalog_is_coordinated(const char *source);
extern int	kl_int32_cmp(const void *a, const void *b);
extern bool kl_source_owns(const KlSource *src, int32 partition);
extern char *kl_source_partitions_text(const KlSource *src);
extern void kl_catalog_set_partitions(KlSource *src, const int32 *partitions, int n);
extern Datum kl_int32_array(const int32 *values, int n);
extern void kl_catalog_set_compression(KlSource *src, int compression);
extern void kl_catalog_insert_batch(KlSource *src, const KlBatch *b,
									const KlRecord *recs, int n);
extern void kl_catalog_record_commit(KlSource *src, int32 partition, int64 offset,
									 const char *batch_id);
extern void kl_catalog_record_expired(KlSource *src, int32 partition, int64 first, int64 last);
extern void kl_catalog_record_replay(KlSource *src, int32 partition, int64 from, int64 to,
									 int records, int landed, int reused);
extern List *kl_catalog_batch_ids(KlSource *src, int32 partition);
extern List *kl_catalog_partitions(KlSource *src);
extern void kl_catalog_forget_batch(KlSource *src, const KlBatch *b);
extern void kl_catalog_record_manifest_checks(KlSource *src, const char *batch_id, int64 bytes,
											  uint32 crc32c);
extern void kl_catalog_partition_state(KlSource *src, int32 partition, KlPartitionState *state);
extern void kl_catalog_remembered_offsets(KlSource *src, int n, int64 *remembered);
extern char *kl_catalog_group_users(KlSource *src);
extern void kl_catalog_lock_source(KlSource *src);
extern bool kl_catalog_source_exists(int32 source_id, const char *source);
extern bool kl_catalog_partition_changed(KlSource *src, int32 partition);
extern int	kl_catalog_source_names(int32 **ids, char ***names);
extern List *kl_catalog_batch_dirs(KlSource *src);
extern void kl_catalog_move_source(KlSource *src, const char *root, const char *group_id);
extern void kl_catalog_insert_source(const char *source, const char *server, const char *topic,
									 const char *group_id, const char *contract,
									 int32 contract_version, const char *root,
									 const char *default_group);
extern void kl_catalog_create_records_table(const char *source, const char *server,
											const char *topic);
extern void kl_catalog_lock_source_for_drop(KlSource *src);
extern KlSource *kl_source_topic(const KlSource *src, int i);
extern int	kl_source_topic_index(const KlSource *src, const char *topic);
extern KlSource *kl_source_topic_arg(const KlSource *src, FunctionCallInfo fcinfo, int argno,
									 bool required);
extern int	kl_split_topics(const char *list, char ***topics);
extern const char *kl_topic_or_null(const KlSource *src);
extern char *kl_source_topics_text(const KlSource *src);
extern char *kl_replay_call(const KlSource *src, int32 partition, int64 from, int64 to);
extern bool kl_catalog_has_topic_lists(void);
extern char *kl_event_topic_qual(const char *alias, int param);
extern void kl_catalog_delete_source(KlSource *src);

extern void kl_bounds_init(KlBounds *bounds);
extern bool kl_bounds_empty(const KlBounds *bounds);
#define KL_BATCH_WANT_FINGERPRINTS	0x01	/* kl_catalog_scan_batches' want */
#define KL_BATCH_WANT_SHA256		0x02
extern List *kl_catalog_scan_batches(KlSource *src, const KlBounds *bounds, int want,
									 int64 *total);

#endif							/* KAFKA_LAKE_CATALOG_H */
