/*-------------------------------------------------------------------------
 *
 * avro.h
 *	  Avro schemas, schema resolution and the datum decoder (avro.c).
 *
 * Three steps, the first two on the backend, the third anywhere:
 *
 *	KlAvroSchema  *s = kl_avro_schema_parse(json, len);	palloc, ERROR 42P17
 *	KlAvroProgram *p = kl_avro_resolve(writer, reader, &why);	palloc; NULL and
 *																why when the pair
 *																is unresolvable
 *	kl_avro_decode(p, payload, len, &out, &err)	no palloc, no ereport:
 *												out is malloc'd, err a
 *												fixed buffer
 *
 * The schemas and the program are read-only once made, so one program can
 * serve any number of decodes, on the landing's helper thread too; they
 * live in the memory context that was current when they were made.
 * A Confluent-framed Kafka value is split by kl_avro_wire_parse first.
 *
 * IDENTIFICATION
 *	  src/format/avro.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_AVRO_H
#define KAFKA_LAKE_AVRO_H

/* nesting of records, arrays, maps and wrapped unions a datum may have */
#define KL_AVRO_MAX_DEPTH		32

/* the decoded text a datum may grow to unless the caller says otherwise */
#define KL_AVRO_DEFAULT_MAX_OUT	((size_t) 64 * 1024 * 1024)

/*
 * The output buffer may exceed the limit by this much while a value is
 * written (what is reserved for the worst case of a string piece of
 * KL_AVRO_STRING_PIECE bytes, escaped, or of an integer's digits); the text
 * never does.
 */
#define KL_AVRO_STRING_PIECE	4096
#define KL_AVRO_OUT_SLACK		(KL_AVRO_STRING_PIECE * 6 + 64)

typedef struct KlAvroSchema KlAvroSchema;	/* a compiled schema */
typedef struct KlAvroProgram KlAvroProgram; /* a resolved (writer, reader) pair */

/*
 * The decoder's output: JSON text in a malloc'd buffer that grows up to
 * limit bytes.  Zero it (or set limit) before the first decode; one
 * KlAvroOut can serve many decodes (kl_avro_decode starts at len = 0
 * unless told to append); kl_avro_out_free releases it.
 */
typedef struct KlAvroOut
{
	char	   *data;			/* the text, NUL-terminated after a decode */
	size_t		len;			/* its length */
	size_t		cap;			/* allocated bytes */
	size_t		limit;			/* most bytes of text; 0 means the default */
	size_t	   *spans;			/* scratch: reordered record fields */
	size_t		nspans;			/* spans in use */
	size_t		spans_cap;		/* spans allocated */
	char	   *scratch;		/* scratch: a record in the reader's order */
	size_t		scratch_cap;	/* scratch allocated */
} KlAvroOut;

/* Why a decode failed: "field \"a.b[2]\" at byte 17: <what>" */
typedef struct KlAvroError
{
	const char *what;			/* a static message */
	size_t		offset;			/* byte offset of the datum where it failed */
	char		path[200];		/* the field path, built from its end */
	int			path_start;		/* where it starts in path[] */
	char		message[320];	/* the whole message (kl_avro_error_message) */
} KlAvroError;

/* A Kafka value split by its Confluent framing (kl_avro_wire_parse) */
typedef struct KlAvroWire
{
	int			magic;			/* 0: schema id, 1: schema GUID */
	int64		schema_id;		/* magic 0: the registry's id, else -1 */
	uint8		guid[16];		/* magic 1: the schema's GUID */
	const uint8 *payload;		/* the Avro datum */
	size_t		payload_len;
} KlAvroWire;

/* in avro.c: schemas and resolution (backend) */
extern KlAvroSchema *kl_avro_schema_parse(const char *json, size_t len);
extern const char *kl_avro_schema_type_name(const KlAvroSchema *schema);
extern void kl_avro_schema_properties(const KlAvroSchema *schema, struct StringInfoData *out,
									  const char *(*normalize_of) (const char *field, void *arg),
									  void *arg);
extern KlAvroProgram *kl_avro_resolve(const KlAvroSchema *writer,
									  const KlAvroSchema *reader,
									  char **error);

/* in avro.c: the decoder and the wire format (any thread) */
extern bool kl_avro_decode(const KlAvroProgram *program, const uint8 *data, size_t len,
						   KlAvroOut *out, KlAvroError *err);
extern const char *kl_avro_error_message(KlAvroError *err);
extern void kl_avro_out_free(KlAvroOut *out);
extern const char *kl_avro_wire_parse(const uint8 *v, size_t len, KlAvroWire *wire);
extern const char *kl_avro_wire_parse_header(const uint8 *v, size_t len,
											 KlAvroWire *wire);

#endif							/* KAFKA_LAKE_AVRO_H */
