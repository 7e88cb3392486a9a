/*-------------------------------------------------------------------------
 *
 * contract.h
 *	  Contracts: the compiled form of a contract's definition, the engine
 *	  that judges one record value against it, the memory pool it writes into
 *	  (contract.c); the ISO-8601 dates and timestamps it reads are
 *	  iso8601.h's.  The
 *	  definition language and its compiler are contract_define.c's.
 *
 * IDENTIFICATION
 *	  src/contract/contract.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_CONTRACT_H
#define KAFKA_LAKE_CONTRACT_H

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "pgtime.h"
#include "utils/date.h"

#include "base/json.h"
#include "contract/iso8601.h"

/* the built-in contract of the seed's events */
#define KL_MACHINE_EVENT_V1				"machine_event_v1"

/* the value size limit of a contract that sets none, and its bounds */
#define KL_CONTRACT_MAX_VALUE_BYTES		65536
#define KL_CONTRACT_LIMIT_MAX			(16 * 1024 * 1024)

/* The JSON types a field may have, as a bit set */
#define KL_TYPE_NULL		0x01
#define KL_TYPE_BOOLEAN		0x02
#define KL_TYPE_INTEGER		0x04
#define KL_TYPE_NUMBER		0x08	/* any number, integers included */
#define KL_TYPE_STRING		0x10
#define KL_TYPE_OBJECT		0x20
#define KL_TYPE_ARRAY		0x40
#define KL_TYPE_ANY			0x7F

/* format of a string field */
typedef enum KlFormat
{
	KL_FORMAT_NONE,
	KL_FORMAT_DATE,				/* YYYY-MM-DD, a real day */
	KL_FORMAT_DATE_TIME			/* ISO-8601 with a zone, as the seed reads it */
} KlFormat;

/*
 * A JSON number as a definition writes it (a bound, a rule's constant, an
 * enum value): its canonical text, and its value when it is an int64.
 */
typedef struct KlNumber
{
	const char *text;
	int			len;
	bool		is_int64;
	int64		ival;
} KlNumber;

/* One value of an enum (or the const) */
typedef struct KlEnumValue
{
	int			type;			/* one KL_TYPE_* */
	const char *str;			/* strings: the value, decoded */
	int			str_len;
	KlNumber	num;			/* numbers */
	bool		bval;			/* booleans */
} KlEnumValue;

typedef struct KlObjectSchema KlObjectSchema;

/*
 * One step of a derived field's path: a member's name (decoded), or an
 * array's element (name NULL)
 */
typedef struct KlPathStep
{
	const char *name;
	int			name_len;
	int			index;
} KlPathStep;

/* One path inside the value: customer.country, items[0].sku */
typedef struct KlPath
{
	int			nsteps;
	KlPathStep *steps;
	const char *text;			/* as messages write it */
} KlPath;

/* The compiled schema of one field (a property, or an array's items) */
typedef struct KlSchema
{
	const char *name;			/* the member name, decoded (NULL for items) */
	int			name_len;
	const char *name_json;		/* the name as the landed event writes it */
	int			name_json_len;
	const char *path;			/* how messages name it: a.b.c */
	int			types;			/* KL_TYPE_* allowed */
	const char *type_words;		/* "a string or null" */
	/* strings */
	bool		trim;			/* normalize: trim, as str.strip() */
	bool		lower;			/* normalize: lower, as str.lower() */
	int			min_length;		/* characters, after normalisation; -1 */
	int			max_length;
	KlFormat	format;
	void	   *pattern;		/* compiled regex (contract.c), or NULL */
	const char *pattern_text;
	bool		pattern_unbounded;	/* back references or lookaround: a
									 * version stored before 1.2, never
									 * judged with (kl_contract_judgeable) */
	/* enum and const */
	int			nenum;
	KlEnumValue *enums;
	bool		is_schema_version;	/* enum violations say "unsupported ..." */
	/* numbers */
	bool		has_minimum,
				has_maximum,
				has_xminimum,
				has_xmaximum;
	KlNumber	minimum,
				maximum,
				xminimum,
				xmaximum;
	/* objects and arrays */
	KlObjectSchema *object;		/* properties of an object field, or NULL */
	struct KlSchema *items;		/* schema of an array's items, or NULL */
	/* kafka_lake's own */
	const char *header;			/* filled from this Kafka header when absent */
	int			header_len;
	int			npaths;			/* derived from the first of these paths */
	KlPath	   *paths;			/* that leads to a value, or 0 and NULL */
	const char *paths_text;		/* "after.id", or "after.id or before.id" */
	const char *sql_type;		/* its column type in <source>_events and
								 * silver, spelt canonically */
	Oid			sql_typid;		/* ... resolved under pg_catalog, pg_temp */
	int32		sql_typmod;
	const char *sql_type_problem;	/* why that type may not be used (a
									 * version stored before 1.2), or NULL */
	int			first_rule;		/* rules whose left side it is */
	int			nrules;
} KlSchema;

/* The compiled schema of an object: its properties */
struct KlObjectSchema
{
	int			nprops;
	KlSchema   *props;			/* in check order (the definition's) */
	int		   *sorted;			/* property indexes by name: the event's order */
	int			nrequired;
	int		   *required;		/* property indexes, in the definition's order */
	bool		additional;		/* additionalProperties */
	int			hash_size;		/* power of two */
	int16	   *hash;			/* name hash -> property index, -1 empty */
	int			nheaders;		/* properties with "header" */
	int			nderived;		/* properties with "path" */
};

/* One cross-field rule: left op right */
typedef enum KlRuleOp
{
	KL_OP_LT,
	KL_OP_LE,
	KL_OP_EQ,
	KL_OP_NE,
	KL_OP_GE,
	KL_OP_GT
} KlRuleOp;

typedef struct KlRule
{
	int			left;			/* top-level property index */
	KlRuleOp	op;
	int			right;			/* property index, or -1: right_num */
	KlNumber	right_num;
	const char *message;		/* the whole validation_error */
} KlRule;

/* How the business date of an event is found */
typedef enum KlBusinessDateKind
{
	KL_BD_NONE,
	KL_BD_DATE_FIELD,			/* a format: date field */
	KL_BD_TIMESTAMP_FIELD,		/* a format: date-time field, read in a zone */
	KL_BD_KAFKA_TIMESTAMP		/* the record's timestamp, read in a zone */
} KlBusinessDateKind;

/* A compiled contract: read-only once built (contract_define.c) */
typedef struct KlContract
{
	const char *name;
	int32		version;
	bool		raw;			/* any bytes, accepted as they are */
	bool		builtin;
	bool		writes_ids;		/* lines carry "business_date" and
								 * "event_id" (all but machine_event_v1) */
	bool		accept_tombstones;	/* raw: a null value is accepted */
	int			max_value_bytes;
	KlObjectSchema top;
	int			event_id_prop;	/* the one field of the event_id, or -1 */
	int			nevent_id;		/* fields of the event_id: 0 (dedupe by
								 * coordinate only), 1, or several */
	int		   *event_id_props;	/* ... their property indexes */
	int			schema_version_prop;	/* -1: none */
	KlBusinessDateKind bd_kind;
	int			bd_prop;		/* the field, for the field kinds */
	const pg_tz *bd_tz;			/* the zone, for the timestamp kinds */
	const char *bd_zone;
	int			nrules;
	KlRule	   *rules;
	int			ncolumns;
	int		   *columns;		/* top-level property indexes */
	int			nnatural_key;
	int		   *natural_key;
	/*
	 * An entity stream ("entity"): records are versions of an entity, whose
	 * key is the natural key; silver holds each key's latest version per
	 * date, by order_by and then the coordinate, a deletion included
	 */
	bool		entity;
	int			norder_by;
	int		   *order_by;		/* top-level property indexes */
	int			deleted_prop;	/* a version whose field equals deleted_value
								 * is a deletion; -1: none */
	KlEnumValue deleted_value;
	const char *deleted_text;	/* ... as the canonical CSV writes it */
	const char *deleted_json;	/* ... as the event writes it */
	bool		tombstones;		/* a Kafka tombstone is its key's deletion:
								 * an event of the key's fields and the
								 * deleted field's value (no order_by: the
								 * coordinate orders versions) */
	const pg_tz *tombstone_tz;	/* the zone of a tombstone's business date,
								 * read from its Kafka timestamp */
	const char *definition;		/* the definition's text, as stored */
	const KlSchema *unbounded_pattern;	/* the first pattern whose matching
										 * time has no bound, or NULL */
	const KlSchema *bad_sql_type;	/* the first field whose sql_type may not
									 * be used, or NULL */
	bool		confluent_framing;	/* "framing": "confluent": values start
									 * with Confluent's 5-byte prefix */
	const struct KlAvroSchema *avro;	/* an Avro contract: its reader schema
										 * (format/avro.h), else NULL */
} KlContract;

/*
 * KlPool
 *		Memory for judging records, off PostgreSQL's allocator: chunks from
 *		malloc(), handed out by bumping a pointer, kept across resets.  A
 *		failed malloc() sets failed and returns NULL; the caller (on the
 *		backend thread) reports it.  kl_pool_free() releases everything;
 *		kl_pool_create registers it with a memory context, so that an ERROR
 *		that deletes the context frees the chunks too.
 */
typedef struct KlPoolChunk KlPoolChunk;

typedef struct KlPool
{
	KlPoolChunk *first;
	KlPoolChunk *current;
	char	   *top;			/* next free byte of current */
	char	   *end;			/* end of current */
	size_t		chunk_size;
	bool		failed;
} KlPool;

/* One Kafka header of a record, as librdkafka hands it */
typedef struct KlHeader
{
	const char *name;			/* NUL-terminated */
	const char *value;			/* NULL for a null value */
	size_t		value_len;
} KlHeader;

/* What a record offers the contract */
typedef struct KlJudgeInput
{
	const char *value;			/* NULL: a tombstone */
	size_t		value_len;
	int64		timestamp_ms;	/* -1: none */
	const KlHeader *headers;
	int			nheaders;
	const char *key;			/* the Kafka key, NULL: none (read only for a
								 * tombstone of an entity stream) */
	size_t		key_len;
} KlJudgeInput;

/* What the contract made of an accepted record (in the output pool) */
typedef struct KlEvent
{
	const char *json;			/* the normalised event; NULL: accepted raw */
	size_t		json_len;
	const char *event_id;		/* NULL: the contract has none */
	int			event_id_len;
	bool		has_business_date;
	DateADT		business_date;
} KlEvent;

/* the reason kl_contract_judge gives when a pool ran out of memory */
extern const char kl_judge_out_of_memory[];

/* in contract.c: the pool */
extern KlPool *kl_pool_create(MemoryContext owner, size_t chunk_size);
extern void kl_pool_reset(KlPool *a);
extern void *kl_pool_alloc(KlPool *a, size_t n);
extern char *kl_pool_strdup(KlPool *a, const char *s, size_t len);

/* in contract.c: judging a record */
extern void kl_contract_prepare(void);
extern const char *kl_contract_judge(const KlContract *c, const KlJudgeInput *in,
									 KlPool *out, KlPool *scratch, KlEvent *ev);
extern bool kl_pattern_compile(KlSchema *s, const char *pattern, int len, char **error);
extern int	kl_number_cmp(const char *a, size_t alen, const char *b, size_t blen);
extern uint32 kl_contract_name_hash(const char *s, int len);

#endif							/* KAFKA_LAKE_CONTRACT_H */
