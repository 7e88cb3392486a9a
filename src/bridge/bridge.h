/*-------------------------------------------------------------------------
 *
 * bridge.h
 *	  The state of one bridge() call, shared by its phases: bridge.c runs
 *	  the steps, bridge_select.c, bridge_adapter.c, bridge_silver.c,
 *	  bridge_checks.c, bridge_gold.c and bridge_closing.c each do one of
 *	  them.
 *
 * IDENTIFICATION
 *	  src/bridge/bridge.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_BRIDGE_H
#define KAFKA_LAKE_BRIDGE_H

#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/date.h"

#include "base/digest.h"
#include "base/keyset.h"
#include "contract/contract.h"
#include "contract/iso8601.h"
#include "kl_catalog/catalog.h"

#define KL_NCHECKS				8	/* the built-in checks of machine_event_v1 */
#define KL_BRIDGE_WRITE_CHUNK	(1024 * 1024)
#define KL_SILVER_NATTS			20
#define KL_RUN_ID_LEN			36
#define KL_NPROVENANCE			6	/* kafka_topic ... kafka_record_fingerprint */

/* How an event field is written in the canonical CSV */
typedef enum KlFieldKind
{
	KL_FIELD_STRING,			/* decoded text */
	KL_FIELD_INTEGER,			/* decimal */
	KL_FIELD_NUMBER,			/* as landed */
	KL_FIELD_BOOLEAN,			/* true / false */
	KL_FIELD_JSON				/* objects, arrays, several types: the JSON text */
} KlFieldKind;

/* One event field of the canonical CSV (and a silver column) */
typedef struct KlBridgeField
{
	const char *name;			/* the contract's field, the CSV column */
	const char *column;			/* its silver column (kl_layout_for) */
	KlFieldKind kind;
	bool		required;		/* required, and null is not a type of it */
	bool		date_time;		/* format date-time */
	bool		mixed;			/* versions of the date write it as different
								 * kinds: a value of another kind is written
								 * as its landed JSON text */
	int			kinds;			/* KL_READS_* its versions need */
	bool		silver_cast;	/* its silver column is of a wider type (it
								 * followed a later version): SQL over the
								 * run's rows casts it to sql_type */
	const char *sql_type;		/* its silver column's type, and ... */
	Oid			sql_typid;		/* ... resolved (a built-in type) */
	int32		sql_typmod;
	const KlSchema *schema;
} KlBridgeField;

/*
 * What a contract makes of the bridge (bridge_define.c): the CSV's columns,
 * the silver table, the natural key and the field freshness reads.
 */
typedef struct KlLayout
{
	const KlContract *contract;
	bool		machine;		/* machine_event_v1: silver_machine_events and
								 * the seed's checks */
	int			nfields;		/* event fields, in CSV order */
	KlBridgeField *fields;
	int			ncolumns;		/* nfields + KL_NPROVENANCE */
	const char **column_names;	/* silver's columns after run_id and
								 * business_date: the fields' (clipped to
								 * NAMEDATALEN, renamed where they meet
								 * another), then the provenance */
	char	   *header;			/* the CSV header line, LF included: the
								 * fields' names, quoted as CSV quotes */
	int			bd_field;		/* CSV column whose value is the business date
								 * when the line has no business_date of its
								 * own; -1 */
	int			nnk;			/* natural key: CSV columns; 0: the coordinate */
	int		   *nk;
	bool		entity;			/* an entity stream: each key's latest version
								 * wins, not its first */
	int			norder;			/* ... ordered by these CSV columns, then the
								 * coordinate */
	int		   *order;
	int			deleted_field;	/* CSV column whose value deleted_text marks
								 * a deletion; -1 */
	int			fresh_field;	/* first date-time field, -1: none */
	int			id_field;		/* the event_id field, -1: none */
	const char *date_versions;	/* a date's layout: the versions of its
								 * events ("1, 2"), for messages; NULL */
	char	   *silver;			/* relname of the silver table */
	char	   *state;			/* an entity stream's state view, or NULL */
	bool		silver_date;	/* silver has a business_date column of its own */
} KlLayout;

/* A declared metric of a gold */
typedef enum KlMetricOp
{
	KL_METRIC_SUM,
	KL_METRIC_COUNT,
	KL_METRIC_MIN,
	KL_METRIC_MAX,
	KL_METRIC_AVG,
	KL_METRIC_RATIO
} KlMetricOp;

typedef struct KlMetric
{
	char	   *name;
	KlMetricOp	op;
	int			field;			/* CSV column; -1: count(*) */
	bool		integer;		/* the field is an integer */
	int			num;			/* ratio: metric indexes */
	int			den;
	int			round;			/* decimals; -1: not rounded */
	bool		python;			/* Python's round() of the double quotient */
	const char *sql_type;
} KlMetric;

/* One metric's running value in one group */
typedef struct KlAcc
{
	int64		ival;			/* integer sums, min, max */
	int64		count;			/* values seen */
	Datum		num;			/* numeric sums, min, max of numbers */
	bool		has;
} KlAcc;

/* A gold of a source (bridge_define.c), and what one run computed of it */
typedef struct KlGoldDef
{
	char	   *gold;			/* the table kafka_lake.<gold> */
	bool		builtin;		/* gold_daily_line_metrics */
	char	   *owner;			/* the role that defined it */
	int			ngrain;			/* grain fields but business_date */
	char	  **grain;
	int		   *grain_field;	/* CSV columns */
	int			nmetrics;
	KlMetric   *metrics;
	char	   *compute;		/* SQL gold: its function, else NULL */
	int			version;		/* of its definition (gold_definitions) */
	/* one run */
	KlKeySet	keys;
	int			ngroups;
	int			groups_cap;
	char	  **values;			/* ngrain per group */
	KlAcc	   *acc;			/* nmetrics per group */
	int			nrows;			/* the gold rows, as text */
	int			ncols;			/* grain then metrics */
	char	  **cells;			/* nrows * ncols, NULL for a null */
} KlGoldDef;

/* An owner's check: SQL whose rows are the violations */
typedef struct KlOwnerCheck
{
	char	   *name;
	char	   *function;
	char	   *owner;			/* the role that added it */
	int			version;		/* of its definition (check_definitions) */
} KlOwnerCheck;

/* A batch that gave events to this date (for provenance.json) */
typedef struct KlUsedBatch
{
	char		batch_id[KL_BATCH_ID_LEN + 1];
	const char *topic;
	int32		partition;
	int64		first_offset;	/* of its selected events */
	int64		last_offset;
	int64		events;
} KlUsedBatch;

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
	char		date_text[KL_DATE_TEXT_LEN];	/* YYYY-MM-DD */
	TimestampTz started_at;
	MemoryContext cxt;			/* lives for the call */
	int64		total_batches;	/* of the source, for messages */

	/* closing a date (close.c); NULL for a plain bridge */
	const int64 *through;		/* per slot: select offsets below it only */
	const int  *through_base;	/* per topic index: its partition 0's slot */
	int			nthrough;		/* slots it covers; others give nothing */
	const char *closing_status; /* of the published gold rows and snapshot:
								 * NULL is 'provisional' */
	bool		reopening;		/* a closed date gets a correction snapshot */
	bool		allow_empty;	/* close_date() of a share of the topic's
								 * partitions: no event below the marks is a
								 * certificate of none, not P0002 */

	/* pass 1: selection, the adapter file, the source-side checks */
	List	   *used_batches;	/* KlUsedBatch */
	int64		selected;		/* events selected */
	int64		distinct_keys;	/* natural keys among them */
	uint8	   *first_seen;		/* bit i: selected event i is the first of
								 * its natural key */
	int64		first_seen_cap; /* bytes */
	int64		stale_events;	/* freshness violations */
	char	   *stale_example;	/* the first one, described */
	const char *first_topic;
	int32		first_partition;
	int64		first_offset;
	const char *last_topic;
	int32		last_partition;
	int64		last_offset;
	char	   *tmp_path;		/* the CSV being written, until placed */
	int			tmp_fd;
	struct KlCsvWriter *writer;	/* its writing thread (bridge_adapter.c) */
	int64		csv_bytes;
	char		source_hash[KL_SHA256_HEX_LEN + 1];

	/* the adapter version */
	char	   *adapter_dir;
	char	   *csv_path;
	char	   *csv_relpath;	/* as recorded: relative to landing_dir */
	char	   *transform_path; /* the file pass 2 reads */
	bool		adapter_created;

	/* what the contract makes of it (bridge_define.c) */
	KlLayout   *layout;
	List	   *golds;			/* KlGoldDef */
	List	   *owner_checks;	/* KlOwnerCheck */

	/* the run */
	char		run_id[KL_RUN_ID_LEN + 1];
	int64		silver_inserted;
	int64		silver_duplicates;
	int			gold_rows;		/* of every gold */
	char	   *header_seen;	/* the CSV header as read back */

	/* timing of the steps, reported at DEBUG1 */
	TimestampTz step_start;

	/* the checks */
	KlCheck    *checks;
	int			nchecks;
	int			checks_cap;
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
extern KlLayout *kl_bridge_date_layout(KlBridge *b, List *batches);

/* in bridge_adapter.c */
extern void kl_bridge_open_csv(KlBridge *b);
extern void kl_bridge_write(KlBridge *b, KlSha256 *sha, StringInfo buf);
extern void kl_bridge_write_wait(KlBridge *b);
extern void kl_bridge_write_stop(KlBridge *b);
extern void kl_bridge_close_csv(KlBridge *b);
extern void kl_bridge_place_adapter(KlBridge *b);
extern void kl_bridge_record_adapter(KlBridge *b);
extern void kl_bridge_drop_temp(KlBridge *b);

/* in bridge_define.c */
extern void kl_bridge_define(KlBridge *b, KlLayout *lay);
extern KlLayout *kl_layout_for(const KlSource *src, const KlContract *const *cs, int ncs);
extern int	kl_layout_prop_field(const KlLayout *lay, int prop);
extern const char *kl_layout_live_sql(const KlLayout *lay);
extern char *kl_csv_header_of(char **names, int *lens, int n);
extern void kl_silver_ensure(const KlSource *src, const KlContract *c);
extern void kl_silver_follow(const KlSource *src, KlLayout *lay);
extern bool kl_silver_holds(const KlLayout *lay);
extern char *kl_silver_expected(const KlLayout *lay);
extern void kl_bridge_drop_definitions(int32 source_id, const char *source);
extern bool kl_catalog_has_definitions(void);

/* in bridge_silver.c */
extern const KlSilverColumn kl_silver_columns[KL_SILVER_NATTS];
extern void kl_bridge_load_silver(KlBridge *b);

/* in bridge_checks.c */
extern void kl_bridge_check(KlBridge *b);

/* in bridge_closing.c */
extern void kl_refuse_final_date(const char *source, const char *date_text, int64 closing_id);
extern void kl_bridge_closing_check(KlBridge *b, bool reopen);
extern int64 kl_bridge_republish(KlBridge *b, const char *run_id);
extern void kl_bridge_reopened(KlBridge *b, int64 snapshot_id);

/* in bridge_gold.c */
extern bool kl_bridge_find_processed_run(KlBridge *b, KlPriorRun *prior);
extern int64 kl_bridge_publish(KlBridge *b);
extern bool kl_bridge_reject(KlBridge *b, int64 *snapshot_id);
extern void kl_bridge_compute_golds(KlBridge *b);

#endif							/* KAFKA_LAKE_BRIDGE_H */
