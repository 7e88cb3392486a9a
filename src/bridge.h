/*-------------------------------------------------------------------------
 *
 * bridge.h
 *	  The state of one bridge() call, shared by its phases: bridge.c runs
 *	  the steps, bridge_select.c, bridge_adapter.c, bridge_silver.c,
 *	  bridge_checks.c, bridge_gold.c and bridge_closing.c each do one of
 *	  them.
 *
 * IDENTIFICATION
 *	  src/bridge.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_BRIDGE_H
#define KAFKA_LAKE_BRIDGE_H

#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/date.h"

#include "catalog.h"
#include "digest.h"
#include "keyset.h"

#define KL_NCHECKS				8
#define KL_NEVENT_FIELDS		13	/* the first 13 CSV columns */
#define KL_BRIDGE_WRITE_CHUNK	(1024 * 1024)
#define KL_SILVER_NATTS			20
#define KL_RUN_ID_LEN			36

/* A batch that gave events to this date (for provenance.json) */
typedef struct KlUsedBatch
{
	char		batch_id[KL_BATCH_ID_LEN + 1];
	int32		partition;
	int64		first_offset;	/* of its selected events */
	int64		last_offset;
	int64		events;
} KlUsedBatch;

/* One gold row being summed */
typedef struct KlGoldGroup
{
	char	   *plant_id;
	char	   *line_id;
	char	   *product_code;
	int64		units;
	int64		defects;
	int64		cycle_sum;
	int64		events;
} KlGoldGroup;

/* One quality check's outcome */
typedef struct KlCheck
{
	const char *name;			/* as quality_results records it */
	bool		passed;
	char	   *expected;
	char	   *observed;
	char	   *detail;
} KlCheck;

/* Everything one bridge() call knows */
typedef struct KlBridge
{
	KlSource   *src;
	DateADT		date;
	char		date_text[11];	/* YYYY-MM-DD */
	TimestampTz started_at;
	MemoryContext cxt;			/* lives for the call */
	int64		total_batches;	/* of the source, for messages */

	/* closing a date (close.c); NULL for a plain bridge */
	const int64 *through;		/* per partition: select offsets below it only */
	int			nthrough;		/* partitions it covers; others give nothing */
	const char *closing_status; /* of the published gold rows and snapshot:
								 * NULL is 'provisional' */
	bool		reopening;		/* a closed date gets a correction snapshot */

	/* pass 1: selection, the adapter file, the source-side checks */
	List	   *used_batches;	/* KlUsedBatch */
	int64		selected;		/* events selected */
	int64		distinct_keys;	/* natural keys among them */
	uint8	   *first_seen;		/* bit i: selected event i is the first of
								 * its natural key */
	int64		first_seen_cap; /* bytes */
	int64		stale_events;	/* freshness violations */
	char	   *stale_example;	/* the first one, described */
	int32		first_partition;
	int64		first_offset;
	int32		last_partition;
	int64		last_offset;
	char	   *tmp_path;		/* the CSV being written, until placed */
	int			tmp_fd;
	int64		csv_bytes;
	char		source_hash[KL_SHA256_HEX_LEN + 1];

	/* the adapter version */
	char	   *adapter_dir;
	char	   *csv_path;
	char	   *csv_relpath;	/* as recorded: relative to landing_dir */
	char	   *transform_path; /* the file pass 2 reads */
	bool		adapter_created;

	/* the run */
	char		run_id[KL_RUN_ID_LEN + 1];
	int64		silver_inserted;
	int64		silver_duplicates;
	KlGoldGroup *groups;
	int			ngroups;
	int			groups_cap;
	char	   *header_seen;	/* the CSV header as read back */

	/* timing of the steps, reported at DEBUG1 */
	TimestampTz step_start;

	/* the checks */
	KlCheck		checks[KL_NCHECKS];
	int			passed;
	int64		silver_rows;	/* observed in SQL */
} KlBridge;

/* What a skipped call reports */
typedef struct KlPriorRun
{
	char	   *run_id;
	int32		quality_passed;
	int32		quality_total;
	int32		silver_rows;
	int32		gold_rows;
	bool		has_snapshot;
	int64		snapshot_id;	/* the date's current one */
} KlPriorRun;

/* silver_machine_events, column by column, as the bridge writes it */
typedef struct KlSilverColumn
{
	const char *name;
	Oid			type;
	const char *sql;			/* as format_type() and NOT NULL show it */
} KlSilverColumn;

/* in bridge.c */
extern void kl_bridge_step_done(KlBridge *b, const char *step);
extern KlBridge *kl_bridge_create(const char *source, DateADT date);
extern void kl_bridge_gather(KlBridge *b);
extern void kl_bridge_adapter(KlBridge *b);
extern bool kl_bridge_process(KlBridge *b, int64 *snapshot_id, bool *has_snapshot);

/* in bridge_select.c */
extern List *kl_bridge_scan(KlBridge *b);
extern void kl_bridge_select(KlBridge *b, List *batches);

/* in bridge_adapter.c */
extern void kl_bridge_open_csv(KlBridge *b);
extern void kl_bridge_write(KlBridge *b, KlSha256 *sha, StringInfo buf);
extern void kl_bridge_close_csv(KlBridge *b);
extern void kl_bridge_place_adapter(KlBridge *b);
extern void kl_bridge_record_adapter(KlBridge *b);
extern void kl_bridge_drop_temp(KlBridge *b);

/* in bridge_silver.c */
extern const KlSilverColumn kl_silver_columns[KL_SILVER_NATTS];
extern void kl_bridge_load_silver(KlBridge *b);

/* in bridge_checks.c */
extern void kl_bridge_check(KlBridge *b);

/* in bridge_closing.c */
extern void kl_bridge_closing_check(KlBridge *b, bool reopen);
extern int64 kl_bridge_republish(KlBridge *b, const char *run_id);
extern void kl_bridge_reopened(KlBridge *b, int64 snapshot_id);

/* in bridge_gold.c */
extern bool kl_bridge_find_processed_run(KlBridge *b, KlPriorRun *prior);
extern int64 kl_bridge_publish(KlBridge *b);
extern bool kl_bridge_reject(KlBridge *b, int64 *snapshot_id);

#endif							/* KAFKA_LAKE_BRIDGE_H */
