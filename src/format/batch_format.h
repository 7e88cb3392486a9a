/*-------------------------------------------------------------------------
 *
 * batch_format.h
 *	  The landed batch format: statuses, files, the batch and its lines
 *	  (batch_format.c).
 *
 * IDENTIFICATION
 *	  src/format/batch_format.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_BATCH_FORMAT_H
#define KAFKA_LAKE_BATCH_FORMAT_H

#include "lib/stringinfo.h"
#include "utils/date.h"
#include "utils/uuid.h"

#include "base/digest.h"
#include "base/json.h"
#include "contract/contract.h"

/* Statuses of a landed coordinate, as one letter in the catalog */
#define KL_STATUS_ACCEPTED		'a'
#define KL_STATUS_DUPLICATE		'd'
#define KL_STATUS_QUARANTINED	'q'
#define KL_STATUS_REUSED		'r'	/* polled again; never stored */
#define KL_STATUS_DEMOTED		'D'	/* accepted on disk, a duplicate for readers
									 * (see recover.c) */
#define KL_STATUS_READMITTED	'R'	/* quarantined on disk, re-admitted by a
									 * readmit unit (see readmit.c) */
#define KL_STATUS_EXCLUDED		'X'	/* accepted on disk, set aside by exclude()
									 * (see exclude.c); a promoted record set
									 * aside is a duplicate again ('d') */
#define KL_STATUS_PROMOTED		'P'	/* a duplicate on disk, the accepted one of
									 * its event_id since exclude() set the
									 * first aside (see exclude.c) */

/* The three JSONL files of a batch, in catalog order */
#define KL_NFILES				3
#define KL_FILE_ACCEPTED		0
#define KL_FILE_DUPLICATES		1
#define KL_FILE_QUARANTINE		2

/* a row's status that is no file's: an accepted line exclude() set aside */
#define KL_ROW_EXCLUDED			KL_NFILES
#define KL_STATUS_NAME_EXCLUDED	"excluded"

#define KL_BATCH_ID_LEN			54	/* 20 + 1 + 20 + 1 + 12 */

/* the bytes of each fingerprint a reduced manifest keeps (expire.c) */
#define KL_FINGERPRINT_PREFIX_LEN	8

/* One record of a landing window */
typedef struct KlRecord
{
	int64		offset;
	int64		timestamp_ms;	/* -1 when the broker gave none */
	const char *key;			/* NULL for a null key */
	size_t		key_len;
	const char *value;			/* NULL for a null value (tombstone) */
	size_t		value_len;
	const KlHeader *headers;	/* the record's Kafka headers */
	int			nheaders;
	uint8		fingerprint[KL_SHA256_LEN];
	char		status;			/* KL_STATUS_* */
	bool		reserved;		/* accepted, and accepted_events already holds
								 * its event_id at this very coordinate */
	bool		writes_ids;		/* its line carries business_date and event_id
								 * of its own (the contract's choice) */
	KlEvent		event;			/* valid for accepted and duplicates; no
								 * event_id: deduped by coordinate only */
	pg_uuid_t	event_key;		/* ditto */
	const char *validation_error;	/* quarantined */
	int32		dup_partition;	/* duplicates: where the event was accepted */
	int64		dup_offset;
	const char *dup_topic;		/* and its topic, NULL: the record's own */
	/*
	 * an Avro contract's (landing/avro_land.c), set before judging; or, with
	 * framed, a JSON contract's in Confluent's wire format (kl_record_framing)
	 */
	int64		schema_id;		/* the writer's schema id, -1: none */
	bool		framed;			/* a JSON value of Confluent's wire format */
	const struct KlAvroProgram *avro_program;	/* the writer resolved, or NULL */
	const char *avro_error;		/* or why the value cannot be decoded */
	const char *avro_payload;	/* the datum after the framing */
	size_t		avro_payload_len;
} KlRecord;

/* How a batch's files are stored (the source's compression when it landed) */
#define KL_COMPRESS_NONE		0	/* plain JSONL and JSON */
#define KL_COMPRESS_ZSTD		1	/* each file one zstd frame, named *.zst */

/* One checked file of a batch */
typedef struct KlFileInfo
{
	int64		bytes;			/* on disk (compressed, if the batch is) */
	int64		raw_bytes;		/* of its lines: bytes when not compressed */
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
	char	   *topic;			/* landed, manifest, catalog */
	int			topic_index;	/* which of the source's topics (catalog) */
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
	int			compression;	/* KL_COMPRESS_*: landed, manifest, catalog */
	/* from the catalog */
	char	   *demoted_statuses;	/* statuses, only when one is 'D', 'R',
									 * 'X' or 'P' */
	bool		has_demoted;	/* ... 'D': accepted lines read as duplicates */
	bool		has_readmitted; /* ... 'R': quarantine lines a readmit unit
								 * replaces */
	bool		has_excluded;	/* ... 'X': accepted lines set aside by
								 * exclude() (read as excluded) */
	bool		has_promoted;	/* ... 'P': duplicates.jsonl lines accepted
								 * since their event_id's first record was
								 * set aside */
	int64	   *offset_list;	/* when the range has gaps and it is needed */
	uint8	   *fingerprints;	/* when asked for */
	int			nfingerprints;
	/* landed */
	char	   *path;			/* final directory */
	const char *landed_by;		/* land, replay, recover, readmit or compact */
	/* the contract that judged it (NULL: machine_event_v1 version 1) */
	const char *contract;
	int32		contract_version;
	/* a readmit unit (readmit.c): re-judged records of batch readmit_of */
	bool		readmit;
	char		readmit_of[KL_BATCH_ID_LEN + 1];
	/* the landing's life cycle (compact.c, expire.c) */
	char	  **compacted_from; /* manifest, compact(): the batches a compacted
								 * batch replaced */
	int			ncompacted_from;
	bool		expired;		/* from the catalog: its record files are gone */
	TimestampTz expired_at;
	bool		reduced;		/* manifest, catalog: its manifest is the
								 * reduced one of an expired batch whose
								 * event_ids are gone (expire.c); its
								 * fingerprints are known by their first
								 * KL_FINGERPRINT_PREFIX_LEN bytes only */
	TimestampTz landed_at;		/* from the catalog: when its row was made */
} KlBatch;

/* the directory name of a batch: "batch=<id>", or "readmit=<id>" */
#define KL_BATCH_DIR_PREFIX(b)	((b)->readmit ? "readmit=" : "batch=")

/*
 * kl_batch_is_machine_event_v1
 *		Was the batch judged by machine_event_v1 (version 1, the only one)?
 *		A batch landed before contracts were data was.
 */
static inline bool
kl_batch_is_machine_event_v1(const KlBatch *b)
{
	return b->contract == NULL ||
		(strcmp(b->contract, KL_MACHINE_EVENT_V1) == 0 && b->contract_version == 1);
}

#define KL_WANT_EVENT		0x01	/* the "event" object */
#define KL_WANT_KAFKA		0x02	/* the "kafka" envelope */
#define KL_WANT_QUARANTINE	0x04	/* raw value and validation error */
#define KL_WANT_IDS			0x08	/* the line's own business_date and
									 * event_id, when it has them */

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
	KlJsonValue headers;		/* in the kafka envelope, when the record had some */
	bool		has_ids;		/* the line has its own business_date and
								 * event_id (a contract whose event does not
								 * hold them under those names) */
	KlJsonValue business_date;	/* ... those members */
	KlJsonValue event_id;
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
extern const char *kl_batch_file(const KlBatch *b, int file);
extern const char *kl_reduced_manifest_name(int compression);
extern const char *kl_file_name(int compression, int file);
extern const char *kl_compression_name(int compression);
extern int	kl_compression_of(const char *name);
struct KlAvroWire;
extern void kl_record_framing(const KlContract *c, KlRecord *r);
extern const char *kl_record_wire(const KlRecord *r, struct KlAvroWire *wire, bool *in_header);
extern const char *kl_judge_record(const KlContract *c, KlRecord *r, KlPool *events,
								   KlPool *scratch);
extern const char *const kl_status_names[KL_NFILES];
extern int	kl_status_file_index(const char *status);
extern int	kl_record_file(char status);
extern void kl_batch_describe(const char *topic, int32 partition, const KlRecord *recs, int n,
							  const char *salt, KlBatch *out);
extern bool kl_parse_batch_name(const char *name, int64 *first, int64 *last);
extern bool kl_parse_readmit_name(const char *name, int64 *first, int64 *last);
extern int	kl_batch_coordinate_index(const KlBatch *b, int64 offset);
extern size_t kl_line_bound(const KlRecord *r, size_t topic_json_len);
extern void kl_batch_append_line(StringInfo buf, const KlRecord *r, const char *topic_json,
								 int32 partition);
extern char *kl_iso_now(void);
extern void kl_manifest_append_head(StringInfo doc, const KlBatch *b);
extern void kl_manifest_append_entry(StringInfo out, const KlRecord *r, const char *topic_json,
									 int32 partition, bool last);
extern void kl_manifest_append_tail(StringInfo doc, const KlBatch *b, const char *topic_json);
extern char *kl_manifest_reduced(const KlBatch *b, const KlRecord *recs, int n,
								 const char *reduced_from);
extern void kl_manifest_parse(const char *path, const char *text, size_t len, KlBatch *b,
							  KlRecord **recs, int *n);
extern void kl_manifest_parse_text(const char *path, const char *text, size_t len, KlBatch *b,
								   KlRecord **recs, int *n);
extern void kl_manifest_checks(const char *bytes, size_t len, KlBatch *b);
extern void kl_line_set_fields(KlLine *line, int nfields, const char **names);
extern void kl_line_parse(KlLine *line, const char *text, size_t len, int want);

#endif							/* KAFKA_LAKE_BATCH_FORMAT_H */
