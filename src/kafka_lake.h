/*-------------------------------------------------------------------------
 *
 * kafka_lake.h
 *	  Internal declarations of kafka_lake, grouped by the file that defines
 *	  them.
 *
 * IDENTIFICATION
 *	  src/kafka_lake.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_H
#define KAFKA_LAKE_H

#include "postgres.h"

#include <librdkafka/rdkafka.h>

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/date.h"
#include "utils/resowner.h"
#include "utils/uuid.h"

#include "compat.h"

/* Statuses of a landed coordinate, as one letter in the catalog */
#define KL_STATUS_ACCEPTED		'a'
#define KL_STATUS_DUPLICATE		'd'
#define KL_STATUS_QUARANTINED	'q'
#define KL_STATUS_REUSED		'r'	/* polled again; never stored */
#define KL_STATUS_DEMOTED		'D'	/* accepted on disk, a duplicate for readers
									 * (see recover.c) */

/* The three JSONL files of a batch, in catalog order */
#define KL_NFILES				3
#define KL_FILE_ACCEPTED		0
#define KL_FILE_DUPLICATES		1
#define KL_FILE_QUARANTINE		2

#define KL_SHA256_LEN			32
#define KL_SHA256_HEX_LEN		64
#define KL_BATCH_ID_LEN			54	/* 20 + 1 + 20 + 1 + 12 */

#define KL_JSON_MAX_DEPTH		64
#define KL_CONTRACT_MAX_VALUE_BYTES	65536

/* ---------- in kafka_lake.c ---------- */
extern char *kl_landing_dir;
extern int	kl_batch_max_records;
extern int	kl_batch_max_bytes;
extern char *kl_fault_injection;
extern void kl_fault_point(const char *point);
extern void kl_check_not_null(FunctionCallInfo fcinfo, int argno, const char *argname,
							  const char *hint);

/* ---------- in options.c ---------- */
extern bool kl_is_secret_property(const char *name);
extern rd_kafka_conf_t *kl_build_conf(ForeignServer *server, Oid userid, List **secrets);
extern char *kl_scrub_secrets(const char *text, List *secrets);
extern bool kl_text_may_hold_secret(const char *text);
extern char *kl_scrub_sql_secrets(const char *text, bool statement, List **values);
extern void kl_foreign_table_options(Oid relid, char **source, char **status);
extern ForeignServer *kl_get_server(const char *name);
extern void kl_check_server_usage(ForeignServer *server);
extern void kl_check_source_read(const char *source, Oid relid, Oid userid);

/* ---------- in kafka.c ---------- */
#define KL_LOG_RING		16
#define KL_LOG_LINE		512

typedef enum KlKafkaRole
{
	KL_CONSUMER,
	KL_PRODUCER
} KlKafkaRole;

/* What kind of failure a librdkafka error is (kl_kafka_error_class) */
typedef enum KlKafkaErrorClass
{
	KL_KERR_UNAVAILABLE,		/* the cluster did not answer: HV00N, retried */
	KL_KERR_AUTHENTICATION,		/* credentials refused: 28000 */
	KL_KERR_AUTHORIZATION,		/* permission denied: 42501 */
	KL_KERR_UNKNOWN_TOPIC,		/* HV00R */
	KL_KERR_OTHER				/* HV000 */
} KlKafkaErrorClass;

typedef struct KlKafka
{
	rd_kafka_t *rk;				/* NULL once destroyed */
	rd_kafka_queue_t *queue;	/* results of asynchronous commits, or NULL */
	bool		commit_pending; /* a commit was sent and not answered */
	bool		assigned;		/* a consumer reading a partition */
	rd_kafka_resp_err_t last_error; /* from the error callback */
	struct KlKafka **owner_slot;	/* librdkafka's opaque (malloc'd, two
									 * pointers): [0] points here until the
									 * handle is destroyed */
	KlKafkaRole role;
	const char *server_name;
	List	   *secrets;		/* values scrubbed from librdkafka text */
	ResourceOwner owner;		/* destroyed when this owner is released */
	struct KlKafka *next;		/* list of live handles */
	/* log ring, filled by the log callback, emptied by kl_kafka_flush_log */
	int			log_count;
	int			log_flushed;
	int			log_level[KL_LOG_RING];
	char		log_lines[KL_LOG_RING][KL_LOG_LINE];
	/* consumer messages held by the current window, destroyed with it */
	rd_kafka_message_t **held;
	int			nheld;
	int			held_cap;
	/* producer delivery report */
	bool		delivered;
	rd_kafka_resp_err_t delivery_err;
	int64		delivery_offset;
} KlKafka;

extern KlKafka *kl_kafka_open(const char *server_name, KlKafkaRole role, const char *group_id);
extern void kl_kafka_close(KlKafka *kk);
extern void kl_kafka_flush_log(KlKafka *kk);
extern KlKafkaErrorClass kl_kafka_error_class(rd_kafka_resp_err_t err);
extern void kl_kafka_error(KlKafka *kk, const char *what, rd_kafka_resp_err_t err) pg_attribute_noreturn();
extern int	kl_kafka_partition_count(KlKafka *kk, const char *topic, TimestampTz deadline);
extern char *kl_kafka_cluster_id(KlKafka *kk, TimestampTz deadline);
extern void kl_kafka_watermarks(KlKafka *kk, const char *topic, int32 partition,
								int64 *low, int64 *high, TimestampTz deadline);
extern void kl_kafka_all_watermarks(KlKafka *kk, const char *topic, int n, int64 *low,
									int64 *high, TimestampTz deadline);
extern void kl_kafka_committed(KlKafka *kk, const char *topic, int n, int64 *offsets,
							   TimestampTz deadline);
extern int64 kl_kafka_committed_one(KlKafka *kk, const char *topic, int32 partition,
									TimestampTz deadline);
extern void kl_kafka_commit(KlKafka *kk, const char *topic, int32 partition, int64 next_offset,
							TimestampTz deadline);
extern void kl_kafka_assign(KlKafka *kk, const char *topic, int32 partition, int64 offset);
extern void kl_kafka_unassign(KlKafka *kk);
extern rd_kafka_message_t *kl_kafka_poll(KlKafka *kk, int timeout_ms);
extern void kl_kafka_hold(KlKafka *kk, rd_kafka_message_t *msg);
extern void kl_kafka_release_held(KlKafka *kk);
extern int	kl_timeout_ms(Interval *iv, const char *argname);

/* ---------- in digest.c (and inline) ---------- */

/*
 * kl_hex_digit
 *		The value of one hex digit (either case), or -1: the one hex decoder
 *		(kl_unhex, JSON \u escapes).
 */
static inline int
kl_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* ---------- in json.c (and inline) ---------- */
typedef enum KlJsonType
{
	KL_JSON_NULL,
	KL_JSON_FALSE,
	KL_JSON_TRUE,
	KL_JSON_NUMBER,
	KL_JSON_STRING,
	KL_JSON_ARRAY,
	KL_JSON_OBJECT
} KlJsonType;

/* A value as a span of the input; strings include their quotes */
typedef struct KlJsonValue
{
	KlJsonType	type;
	const char *start;
	size_t		len;
	bool		has_escapes;	/* string: content differs from the raw bytes */
	bool		is_integer;		/* number: no fraction, no exponent */
} KlJsonValue;

typedef enum KlJsonIterState
{
	KL_JSON_ITER_FIRST,
	KL_JSON_ITER_NEXT,
	KL_JSON_ITER_CLOSED
} KlJsonIterState;

typedef struct KlJsonReader
{
	const char *p;				/* next byte */
	const char *end;			/* end of input */
	const char *error;			/* first error, or NULL */
	int			max_depth;
	bool		has_nul_escape; /* saw \u0000 in some string */
	KlJsonIterState state;		/* object iterators only */
} KlJsonReader;

extern int	kl_utf8_sequence_length(const unsigned char *p, size_t avail);
extern bool kl_utf8_valid(const char *s, size_t len);
extern bool kl_utf8_text_valid(const char *s, size_t len);
extern void kl_json_init(KlJsonReader *r, const char *buf, size_t len, int max_depth);
extern bool kl_json_parse_document(KlJsonReader *r, KlJsonValue *out);
extern void kl_json_object_open(KlJsonReader *iter, const char *start, const char *end,
								int max_depth);
extern bool kl_json_object_next(KlJsonReader *iter, KlJsonValue *key, KlJsonValue *value);
extern bool kl_json_object_finish(KlJsonReader *iter);
extern void kl_json_array_open(KlJsonReader *iter, const char *start, const char *end,
							   int max_depth);
extern bool kl_json_array_next(KlJsonReader *iter, KlJsonValue *value);
extern bool kl_json_key_is(const KlJsonValue *key, const char *name, size_t namelen);
extern void kl_json_decode_string(const KlJsonValue *s, StringInfo out);
extern void kl_json_append_string(StringInfo out, const char *s, size_t len);
extern void kl_json_append_int64(StringInfo out, int64 v);
extern bool kl_json_parse_int64(const char *s, size_t len, int64 *result);
extern bool kl_json_read_member_value(KlJsonReader *r, KlJsonValue *out);

/*
 * kl_json_hex4
 *		The value of the four hex digits of a \u escape, or -1.
 */
static inline int
kl_json_hex4(const char *p)
{
	int			v = 0;

	for (int i = 0; i < 4; i++)
	{
		int			d = kl_hex_digit(p[i]);

		if (d < 0)
			return -1;
		v = (v << 4) | d;
	}
	return v;
}

/* ---------- in contract.c ---------- */

/* A valid, normalised machine_event_v1 event (strings NUL-terminated) */
typedef struct KlEvent
{
	char	   *event_id;
	int			event_id_len;
	int32		schema_version;
	char	   *event_time;
	char	   *business_date_text;
	DateADT		business_date;
	char	   *plant_id;
	char	   *line_id;
	char	   *work_order_id;
	char	   *machine_id;
	char	   *product_code;
	char	   *operation;
	int64		units_produced;
	int64		defect_count;
	int64		cycle_time_ms;
} KlEvent;

/* What kl_parse_iso_timestamp makes of an event_time */
typedef enum KlIsoVerdict
{
	KL_ISO_VALID,
	KL_ISO_INVALID,				/* not what datetime.fromisoformat reads */
	KL_ISO_NO_ZONE,				/* a timestamp without a zone */
	KL_ISO_OFFSET_RANGE			/* a zone of 16 hours or more */
} KlIsoVerdict;

extern const char *kl_contract_validate(const char *value, size_t len, KlEvent *ev);
extern void kl_event_append_json(StringInfo out, const KlEvent *ev);
extern bool kl_parse_iso_date(const char *s, int len, DateADT *result);
extern KlIsoVerdict kl_parse_iso_timestamp(const char *s, int len, bool landed,
										   TimestampTz *instant, DateADT *written_day);
extern bool kl_parse_event_time(const char *s, int len, TimestampTz *result);
extern bool kl_json_event_time(const KlJsonValue *v, TimestampTz *result);

/* ---------- in digest.c ---------- */
typedef struct KlSha256
{
	void	   *ctx;			/* EVP_MD_CTX */
	MemoryContextCallback callback;
} KlSha256;

#define KL_CRC32C_INIT	0xFFFFFFFF

extern KlSha256 *kl_sha256_create(void);
extern void kl_sha256_reset(KlSha256 *h);
extern void kl_sha256_update(KlSha256 *h, const void *data, size_t len);
extern void kl_sha256_final(KlSha256 *h, uint8 out[KL_SHA256_LEN]);
extern void kl_sha256(const void *data, size_t len, uint8 out[KL_SHA256_LEN]);
extern void kl_fingerprint(const char *topic, int32 partition, int64 offset,
						   const char *key, size_t key_len,
						   const char *value, size_t value_len,
						   uint8 out[KL_SHA256_LEN]);
extern void kl_event_key(int32 source_id, const char *event_id, size_t len, pg_uuid_t *key);
extern void kl_hex(const uint8 *in, int n, char *out);
extern bool kl_unhex(const char *in, int n, uint8 *out);
extern uint32 kl_crc32c(uint32 crc, const void *data, size_t len);
extern uint32 kl_crc32c_final(uint32 crc);

/* ---------- in catalog.c (its types; functions below) ---------- */

/* A source, as recorded in kafka_lake.sources */
typedef struct KlSource
{
	int32		source_id;
	char	   *source;
	char	   *server;
	char	   *topic;
	char	   *group_id;
	char	   *contract;
	char	   *cluster_id;		/* NULL until the first land() */
	char	   *dir;			/* <landing root>/<source> */
} KlSource;

/* ---------- in batch_format.c ---------- */

#define KL_SOURCE_MARKER		".kafka_lake_source"	/* in a source's directory */

/* One record of a landing window */
typedef struct KlRecord
{
	int64		offset;
	int64		timestamp_ms;	/* -1 when the broker gave none */
	const char *key;			/* NULL for a null key */
	size_t		key_len;
	const char *value;			/* NULL for a null value (tombstone) */
	size_t		value_len;
	uint8		fingerprint[KL_SHA256_LEN];
	char		status;			/* KL_STATUS_* */
	bool		reserved;		/* accepted, and accepted_events already holds
								 * its event_id at this very coordinate */
	KlEvent		event;			/* valid for accepted and duplicates */
	pg_uuid_t	event_key;		/* ditto */
	const char *validation_error;	/* quarantined */
	int32		dup_partition;	/* duplicates: where the event was accepted */
	int64		dup_offset;
} KlRecord;

/* One checked file of a batch */
typedef struct KlFileInfo
{
	int64		bytes;
	int64		lines;
	uint32		crc32c;
	char		sha256[KL_SHA256_HEX_LEN + 1];
} KlFileInfo;

/*
 * A batch: what land() wrote (kl_batch_describe, kl_write_batch), what its
 * manifest says (kl_manifest_parse), and what the catalog records of it
 * (kl_catalog_scan_batches, the one decoder of kafka_lake.batches).  Which
 * members are set depends on where it comes from, as marked.
 */
typedef struct KlBatch
{
	char		batch_id[KL_BATCH_ID_LEN + 1];
	char	   *topic;			/* landed, manifest; NULL from the catalog */
	int32		partition;
	int64		first_offset;
	int64		last_offset;
	int			record_count;
	int			counts[KL_NFILES];	/* records per status, in file order */
	bool		has_dates;		/* min/max_date valid (not only quarantined) */
	DateADT		min_date;		/* business dates of its events */
	DateADT		max_date;
	KlFileInfo	files[KL_NFILES];	/* sha256: landed, manifest, or from the
									 * catalog when asked for */
	char		manifest_sha256[KL_SHA256_HEX_LEN + 1];
	int64		manifest_bytes; /* size and CRC-32C of manifest.json; -1 from
								 * a catalog that has not recorded them
								 * (landed by 1.0) */
	uint32		manifest_crc32c;
	/* from the catalog */
	char	   *demoted_statuses;	/* statuses, only when one is 'D' */
	int64	   *offset_list;	/* when the range has gaps and it is needed */
	uint8	   *fingerprints;	/* when asked for */
	int			nfingerprints;
	/* landed */
	char	   *path;			/* final directory */
	const char *landed_by;		/* land, replay or recover */
} KlBatch;

#define KL_WANT_EVENT		0x01	/* the "event" object */
#define KL_WANT_KAFKA		0x02	/* the "kafka" envelope */
#define KL_WANT_QUARANTINE	0x04	/* raw value and validation error */

/* The members of one landed line, as spans */
typedef struct KlLine
{
	KlJsonValue event;
	KlJsonValue key;
	KlJsonValue key_base64;
	int64		offset;
	int32		partition;
	int64		timestamp_ms;	/* -1: null */
	KlJsonValue raw_value;
	KlJsonValue raw_value_base64;
	KlJsonValue validation_error;
	int			nfields;		/* event fields asked for */
	const char **field_names;
	int		   *field_name_lens;
	int		   *field_order;	/* their indexes, sorted by name */
	const char **sorted_heads;	/* '"<name>": ' in that order */
	int		   *sorted_head_lens;	/* 0 for a name that needs escapes */
	KlJsonValue *fields;		/* type KL_JSON_NULL when absent */
	int64		parsed_strictly;	/* lines the fast path did not take */
} KlLine;

extern const char *const kl_file_names[KL_NFILES];
extern const char *const kl_status_names[KL_NFILES];
extern int	kl_status_file_index(const char *status);
extern int	kl_record_file(char status);
extern void kl_batch_describe(const char *topic, int32 partition, const KlRecord *recs, int n,
							  KlBatch *out);
extern bool kl_parse_batch_name(const char *name, int64 *first, int64 *last);
extern int	kl_batch_coordinate_index(const KlBatch *b, int64 offset);
extern void kl_batch_append_line(StringInfo buf, const KlRecord *r, const char *topic_json,
								 int32 partition);
extern char *kl_iso_now(void);
extern void kl_manifest_append_head(StringInfo doc, const KlBatch *b);
extern void kl_manifest_append_entry(StringInfo out, const KlRecord *r, const char *topic_json,
									 int32 partition, bool last);
extern void kl_manifest_append_tail(StringInfo doc, const KlBatch *b, const char *topic_json);
extern void kl_manifest_parse(const char *path, const char *text, size_t len, KlBatch *b,
							  KlRecord **recs, int *n);
extern void kl_line_set_fields(KlLine *line, int nfields, const char **names);
extern void kl_line_parse(KlLine *line, const char *text, size_t len, int want);

/* ---------- in catalog.c ---------- */

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
	bool		files[KL_NFILES];	/* which status files */
	bool		contradiction;	/* nothing can match */
} KlBounds;

/* The coordinates already durable in some range of a partition */
typedef struct KlDurable
{
	int			count;
	int64	   *offsets;		/* ascending */
	uint8	   *fingerprints;	/* KL_SHA256_LEN each */
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
extern KlCatalogSave kl_catalog_begin(void);
extern void kl_catalog_end(KlCatalogSave save);
extern void kl_catalog_set_cluster_id(KlSource *src, const char *cluster_id);
extern int64 kl_catalog_remembered_offset(KlSource *src, int32 partition);
extern KlDurable *kl_catalog_durable(KlSource *src, int32 partition, int64 first, int64 last);
extern void kl_catalog_reserve_events(KlSource *src, int32 partition, KlRecord *recs, int n);
extern bool kl_catalog_has_manifest_checks(void);
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
extern char *kl_catalog_group_users(KlSource *src);
extern void kl_catalog_lock_source(KlSource *src);
extern bool kl_catalog_source_exists(int32 source_id, const char *source);
extern bool kl_catalog_partition_changed(KlSource *src, int32 partition);
extern void kl_catalog_insert_source(const char *source, const char *server, const char *topic,
									 const char *group_id, const char *contract, const char *root,
									 const char *default_group);
extern void kl_catalog_create_records_table(const char *source, const char *server,
											const char *topic);
extern void kl_catalog_lock_source_for_drop(KlSource *src);
extern void kl_catalog_delete_source(KlSource *src);

/* ---------- in names.c ---------- */
extern void kl_check_source_name(const char *name);
extern void kl_check_topic_name(const char *topic);
extern void kl_check_group_id(const char *group_id);

/* ---------- in locks.c ---------- */
extern bool kl_try_lock_partition(KlSource *src, int32 partition);
extern void kl_unlock_partition(KlSource *src, int32 partition);
extern void kl_lock_bridge_date(int32 source_id, DateADT date);
extern void kl_lock_group_id(const char *group_id);
extern void kl_lock_source_dir(const char *source);

/* ---------- in source.c ---------- */
extern void kl_source_lock(KlSource *src);

extern void kl_bounds_init(KlBounds *bounds);
extern bool kl_bounds_empty(const KlBounds *bounds);
#define KL_BATCH_WANT_FINGERPRINTS	0x01	/* kl_catalog_scan_batches' want */
#define KL_BATCH_WANT_SHA256		0x02
extern List *kl_catalog_scan_batches(KlSource *src, const KlBounds *bounds, int want,
									 int64 *total);

/* ---------- in landing_files.c ---------- */
extern char *kl_landing_root(void);
extern char *kl_partition_dir(KlSource *src, int32 partition);
extern void kl_make_dirs(const char *path);
extern bool kl_source_dir_is_ours(const char *dir);
extern void kl_claim_source_dir(const char *dir, const char *source);
extern bool kl_landing_present(KlSource *src);
extern void kl_remove_tree(const char *path);
extern const char *kl_file_kind(mode_t mode);
extern int	kl_open_landed(const char *path, const char **not_regular);
extern char *kl_landed_open_problem(const char *not_regular);
extern char *kl_read_whole_file(const char *path, size_t *len, const char **not_regular);
extern int	kl_name_cmp(const ListCell *a, const ListCell *b);
extern List *kl_list_dir(const char *path, const char *prefix);
extern List *kl_disk_partitions(KlSource *src);
extern void kl_write_batch(KlSource *src, int32 partition, KlRecord *recs, int n,
						   KlBatch *out);

/* ---------- in batch_read.c ---------- */
/* One file of a batch, read and checked */
typedef struct KlFileReader
{
	const char *source;
	const KlBatch *batch;
	int			file;			/* KL_FILE_* */
	char	   *path;
	char	   *data;			/* the whole file */
	size_t		len;
	const char *pos;			/* next line */
	int64		lineno;			/* of the last line returned */
	ErrorContextCallback errcallback;
	bool		own_data;		/* data is freed by kl_reader_close */
} KlFileReader;

extern void kl_check_manifest(KlSource *src, const KlBatch *b);
extern void kl_reader_open(KlFileReader *r, KlSource *src, const KlBatch *b, int file);
extern void kl_reader_open_buffer(KlFileReader *r, KlSource *src, const KlBatch *b, int file,
								  char **buffer, size_t *buffer_size);
extern bool kl_reader_next(KlFileReader *r, const char **line, size_t *len);
extern void kl_reader_close(KlFileReader *r);
extern char *kl_check_batch_files(const char *batch_dir, const KlBatch *b,
								  bool full, int *bad_file);
extern void kl_read_manifest(const char *batch_dir, KlBatch *b,
							 KlRecord **recs, int *n);

/* ---------- in fileundo.c ---------- */
extern void kl_undo_remove_at_abort(const char *path, bool is_dir, const char *origin);
extern void kl_undo_forget(const char *path);
extern void kl_undo_remove_tree_at_commit(const char *path, int32 source_id, const char *origin);
extern bool kl_undo_displace(const char *dir, const char *root, const char *source);
extern void kl_settle_displaced(const char *root, const char *source);

/* ---------- in recover.c ---------- */
extern int	kl_recover_partition(KlSource *src, int32 partition, Tuplestorestate *out,
								 TupleDesc desc);

/* ---------- in csv.c ---------- */

/* The columns of the canonical CSV, in their order */
typedef enum KlCsvColumn
{
	KL_CSV_EVENT_TIME,
	KL_CSV_PLANT_ID,
	KL_CSV_LINE_ID,
	KL_CSV_WORK_ORDER_ID,
	KL_CSV_MACHINE_ID,
	KL_CSV_PRODUCT_CODE,
	KL_CSV_OPERATION,
	KL_CSV_UNITS_PRODUCED,
	KL_CSV_DEFECT_COUNT,
	KL_CSV_CYCLE_TIME_MS,
	KL_CSV_BUSINESS_DATE,
	KL_CSV_EVENT_ID,
	KL_CSV_SCHEMA_VERSION,
	KL_CSV_KAFKA_TOPIC,
	KL_CSV_KAFKA_PARTITION,
	KL_CSV_KAFKA_OFFSET,
	KL_CSV_KAFKA_KEY,
	KL_CSV_KAFKA_TIMESTAMP_MS,
	KL_CSV_KAFKA_RECORD_FINGERPRINT,
	KL_CSV_NCOLUMNS
} KlCsvColumn;

/* One value of a CSV record */
typedef struct KlCsvValue
{
	const char *str;			/* text (not NUL-terminated) */
	size_t		len;
	int64		ival;			/* when is_int */
	bool		is_int;
	bool		is_null;		/* an empty field */
} KlCsvValue;

/* Reading a canonical CSV file back */
typedef struct KlCsvReader
{
	char	   *path;
	int			fd;
	char	   *buf;			/* unread bytes are buf[pos..len) */
	size_t		cap;
	size_t		len;
	size_t		pos;
	bool		eof;
	int64		records;		/* records returned so far */
} KlCsvReader;

extern const char *const kl_csv_columns[KL_CSV_NCOLUMNS];
extern const char kl_csv_header[];
extern void kl_csv_append_field(StringInfo out, const char *s, size_t len);
extern void kl_csv_append_int64(StringInfo out, int64 v);
extern void kl_csv_append_row(StringInfo out, const KlCsvValue *values);
extern void kl_csv_open(KlCsvReader *r, const char *path);
extern int	kl_csv_next(KlCsvReader *r, char **fields, int *lens, int maxfields);
extern void kl_csv_close(KlCsvReader *r);

/* ---------- in bridge.c ---------- */

#endif							/* KAFKA_LAKE_H */
