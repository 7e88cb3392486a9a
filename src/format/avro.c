/*-------------------------------------------------------------------------
 *
 * avro.c
 *	  Avro: schemas compiled from their JSON text, a writer schema resolved
 *	  against a reader schema into a program, and the decoder that runs
 *	  the program over one binary datum and writes the reader's datum as
 *	  JSON text; Confluent's wire format; kafka_lake.avro_decode() and
 *	  kafka_lake.avro_frame().
 *
 * WHAT RUNS WHERE
 *
 * Schemas and resolution run on the backend: they palloc, and a bad schema
 * is an ERROR 42P17 naming the place as a JSON path ($.fields[2].type).
 * What they make is read-only afterwards.  The decoder (kl_avro_decode and
 * everything below it, the section "the decoder") calls nothing of
 * PostgreSQL that allocates, reports or reads global state, so it may run
 * on the landing's helper thread (landing/land_worker.c): it writes into a
 * KlAvroOut, a malloc'd buffer of its caller's, and reports an error as a
 * result: a static message, the byte offset where it happened and the
 * field path (built on the way back up the recursion, so a datum that
 * decodes pays nothing for it).  What it calls is pure: json.c's escaper
 * and PostgreSQL's UTF-8 verifier, pg_b64_encode, j2date, the shortest
 * float formatting of common/shortest_dec.h (Ryu), libc.
 *
 * THE PROGRAM
 *
 * kl_avro_resolve walks the two schemas once, as the specification's
 * "Schema Resolution" says, and makes a tree of KlAvroProg nodes: for each
 * value, how to read it (the writer's type) and how to write it (the
 * reader's type and logical type); for a record, the writer's fields in
 * the writer's order, each decoded into a reader field or skipped, and the
 * reader fields the writer lacks with their default already written as
 * JSON text (the default is encoded by the reader schema and decoded by the
 * decoder itself, so it reads exactly as a datum would); for an enum, the
 * reader's symbol of each writer symbol; for a writer union, a program per
 * branch, or the reason the branch cannot be read (an error only when a
 * datum takes it, as the specification says).  Named types may be
 * recursive: a (writer, reader) pair of records is resolved once, and its
 * program refers to itself.  A record whose fields the writer and the
 * reader order alike is written as it is read; otherwise its fields are
 * decoded in the writer's order and moved into the reader's (one copy).
 *
 * THE JSON WRITTEN
 *
 * The reader's datum, in json.dumps's layout (", " and ": ", non-ASCII as
 * \u escapes, as everything kafka_lake writes): records as objects with
 * the reader's fields in the reader's order, maps as objects, arrays,
 * enums as their symbol, a union of null and one type as null or that
 * type's value, any other union as {"<branch>": value} (the branch's full
 * name, or its type: "int", "array", "map"), bytes and fixed as base64,
 * decimal as an exact JSON number with the schema's scale (12.30), uuid as
 * its text, date as "YYYY-MM-DD", time-millis and time-micros as
 * "HH:MM:SS.fff" and "HH:MM:SS.ffffff", timestamp-millis and -micros as
 * "YYYY-MM-DDTHH:MM:SS.fffZ" and ".ffffffZ" (the local- ones without the Z),
 * floats in the shortest form that reads back as the same float (a float
 * 0.1 is 0.1, not 0.10000000149011612), and NaN and the infinities, which
 * JSON has no number for, as the strings "NaN", "Infinity", "-Infinity".
 * Dates and timestamps outside the years 1 to 9999 are an error (no ISO
 * text and no PostgreSQL date is both).
 *
 * HOSTILE BYTES
 *
 * Every length and count is checked against the bytes left before it is
 * used: a varint has at most 10 bytes (5 for an int, which must fit 32
 * bits), a length is not negative and not beyond the end, a block count of
 * items that take a byte or more is not larger than the bytes left (a
 * negative count brings its block's byte size, checked the same way),
 * nesting is bounded (KL_AVRO_MAX_DEPTH), and the text written is bounded
 * (KlAvroOut.limit): an array of a billion empty records costs a few bytes
 * of input, never more than the limit of output text (the buffer holds at
 * most KL_AVRO_OUT_SLACK bytes more while a value is written).  Bytes left after the
 * datum are an error, and so is a string that is not UTF-8.
 *
 * IDENTIFICATION
 *	  src/format/avro.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "common/base64.h"
#include "common/shortest_dec.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/memutils.h"
#include "utils/uuid.h"

#include "base/json.h"
#include "format/avro.h"

PG_FUNCTION_INFO_V1(kafka_lake_avro_decode);
PG_FUNCTION_INFO_V1(kafka_lake_avro_frame);

typedef enum KlAvroType
{
	KL_AVRO_NULL,
	KL_AVRO_BOOLEAN,
	KL_AVRO_INT,
	KL_AVRO_LONG,
	KL_AVRO_FLOAT,
	KL_AVRO_DOUBLE,
	KL_AVRO_BYTES,
	KL_AVRO_STRING,
	KL_AVRO_RECORD,
	KL_AVRO_ENUM,
	KL_AVRO_ARRAY,
	KL_AVRO_MAP,
	KL_AVRO_UNION,
	KL_AVRO_FIXED
} KlAvroType;

static const char *const kl_avro_type_names[] = {
	"null", "boolean", "int", "long", "float", "double", "bytes", "string",
	"record", "enum", "array", "map", "union", "fixed"
};

typedef enum KlAvroLogical
{
	KL_AVRO_LT_NONE,
	KL_AVRO_LT_DECIMAL,
	KL_AVRO_LT_UUID,
	KL_AVRO_LT_DATE,
	KL_AVRO_LT_TIME_MILLIS,
	KL_AVRO_LT_TIME_MICROS,
	KL_AVRO_LT_TIMESTAMP_MILLIS,
	KL_AVRO_LT_TIMESTAMP_MICROS,
	KL_AVRO_LT_LOCAL_TIMESTAMP_MILLIS,
	KL_AVRO_LT_LOCAL_TIMESTAMP_MICROS
} KlAvroLogical;

/* A schema's JSON text as a tree (only while a schema is parsed) */
typedef struct KlAvroJson
{
	KlJsonType	type;
	const char *start;			/* the value's span in the schema text */
	size_t		len;
	char	   *str;			/* strings: decoded, NUL-terminated */
	size_t		strlen;			/* its length (it may hold NUL) */
	int			n;				/* members or elements */
	char	  **keys;			/* objects: the decoded names */
	struct KlAvroJson **vals;
	char	   *path;			/* where it is: $.fields[2].type */
} KlAvroJson;

typedef struct KlAvroField
{
	char	   *name;
	char	  **aliases;
	int			naliases;
	struct KlAvroNode *type;
	KlAvroJson *default_value;	/* NULL when the field has none */
	char	   *path;			/* its place in the schema text */
} KlAvroField;

/* A compiled schema (a node of one): read-only once parsed */
typedef struct KlAvroNode
{
	KlAvroType	type;
	KlAvroLogical logical;		/* KL_AVRO_LT_NONE when none or invalid */
	int			precision;		/* decimal */
	int			scale;			/* decimal */
	char	   *fullname;		/* record, enum, fixed */
	char	   *name;			/* the unqualified name */
	char	  **aliases;		/* full names */
	int			naliases;
	int			nfields;		/* record */
	KlAvroField *fields;
	int			nsymbols;		/* enum */
	char	  **symbols;
	int			default_symbol; /* enum: index, or -1 */
	struct KlAvroNode *items;	/* array items, map values */
	int			nbranches;		/* union */
	struct KlAvroNode **branches;
	int			size;			/* fixed */
	int			min_bytes;		/* the fewest bytes a datum takes; -1 unknown */
} KlAvroNode;

struct KlAvroSchema
{
	KlAvroNode *root;
};

/* What the decoder writes for a value: the reader's presentation */
typedef enum KlAvroEmit
{
	KL_EMIT_NULL,
	KL_EMIT_BOOLEAN,
	KL_EMIT_INTEGER,
	KL_EMIT_FLOAT,
	KL_EMIT_DOUBLE,
	KL_EMIT_BASE64,
	KL_EMIT_STRING,
	KL_EMIT_UUID_FIXED,
	KL_EMIT_DECIMAL,
	KL_EMIT_DATE,
	KL_EMIT_TIME_MILLIS,
	KL_EMIT_TIME_MICROS,
	KL_EMIT_TIMESTAMP_MILLIS,
	KL_EMIT_TIMESTAMP_MICROS,
	KL_EMIT_LOCAL_TIMESTAMP_MILLIS,
	KL_EMIT_LOCAL_TIMESTAMP_MICROS,
	KL_EMIT_RECORD,
	KL_EMIT_ENUM,
	KL_EMIT_ARRAY,
	KL_EMIT_MAP,
	KL_EMIT_UNION,				/* the writer's union: a program per branch */
	KL_EMIT_WRAP,				/* a branch of the reader's union: {"name": v} */
	KL_EMIT_FAIL				/* a writer union's branch the reader cannot read */
} KlAvroEmit;

typedef enum KlAvroStepKind
{
	KL_STEP_VALUE,				/* a writer field into a reader field */
	KL_STEP_SKIP,				/* a writer field the reader lacks */
	KL_STEP_DEFAULT				/* a reader field the writer lacks */
} KlAvroStepKind;

typedef struct KlAvroStep
{
	KlAvroStepKind kind;
	const struct KlAvroProg *prog;	/* VALUE */
	const KlAvroNode *skip;		/* SKIP: the writer field's type */
	int			reader_index;	/* VALUE, DEFAULT */
	const char *name;			/* the writer field's name (path), ".name" */
	size_t		namelen;
} KlAvroStep;

/* A node of a resolution program: read-only once resolved */
typedef struct KlAvroProg
{
	KlAvroEmit	emit;			/* how to write */
	KlAvroType	read;			/* how to read: the writer's type */
	int			precision;		/* decimal */
	int			scale;			/* decimal */
	int			size;			/* fixed (the writer's) */
	/* record */
	bool		ordered;		/* steps are in the reader's order */
	int			nsteps;
	KlAvroStep *steps;
	int			nreader;		/* the reader's fields */
	char	  **keys;			/* "name": of each reader field, escaped */
	size_t	   *keylens;
	char	  **defaults;		/* each reader field's default, JSON, or NULL */
	size_t	   *defaultlens;
	/* enum: the reader's symbol (escaped JSON) of each writer symbol */
	int			nsymbols;
	char	  **symbols;
	size_t	   *symlens;
	/* array items, map values, the wrapped value */
	const struct KlAvroProg *items;
	int			item_min_bytes; /* the writer's item's fewest bytes */
	/* writer union */
	int			nbranches;
	const struct KlAvroProg **branches;
	/* WRAP: {"name": */
	char	   *wrap;
	size_t		wraplen;
	/* FAIL */
	const char *fail;
} KlAvroProg;

struct KlAvroProgram
{
	const KlAvroProg *root;
};

/* ----------------------------------------------------------------
 * the decoder (any thread: no palloc, no ereport)
 * ----------------------------------------------------------------
 */

typedef struct KlAvroReader
{
	const uint8 *start;			/* the datum */
	const uint8 *p;				/* next byte */
	const uint8 *end;
	KlAvroOut  *out;
	KlAvroError *err;
	int			depth;			/* records, arrays, maps, wrapped unions open */
} KlAvroReader;

static bool kl_avro_value(KlAvroReader *r, const KlAvroProg *prog);
static bool kl_avro_skip(KlAvroReader *r, const KlAvroNode *w);

/*
 * kl_avro_fail_at
 *		Record the first error: what, at byte offset at; returns false.
 */
static bool
kl_avro_fail_at(KlAvroReader *r, const uint8 *at, const char *what)
{
	if (r->err->what == NULL)
	{
		r->err->what = what;
		r->err->offset = at - r->start;
	}
	return false;
}

#define kl_avro_fail(r, what)	kl_avro_fail_at((r), (r)->p, (what))

/*
 * kl_avro_path_push
 *		Put a segment (".name", "[3]") in front of the error's field path.
 */
static void
kl_avro_path_push(KlAvroError *err, const char *seg, size_t len)
{
	if (err->path_start < 0)
		return;					/* already cut short */
	if ((int) len + 3 > err->path_start)
	{
		if (err->path_start >= 3)
		{
			memcpy(err->path + err->path_start - 3, "...", 3);
			err->path_start -= 3;
		}
		err->path_start = -err->path_start - 1;
		return;
	}
	err->path_start -= len;
	memcpy(err->path + err->path_start, seg, len);
}

/*
 * kl_avro_path_index
 *		Put "[i]" in front of the error's field path.
 */
static void
kl_avro_path_index(KlAvroError *err, int64 i)
{
	char		buf[32];
	int			n;

	buf[0] = '[';
	n = 1 + kl_json_format_int64(buf + 1, i);
	buf[n++] = ']';
	kl_avro_path_push(err, buf, n);
}

/*
 * kl_avro_grow
 *		Make room for n more bytes (and a NUL) in the output.
 *
 * n may be a worst case (a string's escaping, an integer's digits), so the
 * buffer may hold up to KL_AVRO_OUT_SLACK bytes past the limit: the limit
 * is on the text written, which kl_avro_decode checks at the end; here it
 * only bounds the memory (and so the work) of a datum that would exceed
 * it.  What is in the buffer is never more than the text the datum
 * decodes to (record fields decoded in the writer's order are moved, not
 * copied: kl_avro_record), so a datum whose text fits the limit never
 * fails here.
 */
static pg_noinline bool
kl_avro_grow(KlAvroReader *r, size_t n)
{
	KlAvroOut  *o = r->out;
	size_t		most = o->limit + 1 + KL_AVRO_OUT_SLACK;
	size_t		need;
	size_t		cap;
	char	   *data;

	if (n > most || o->len > most - n - 1)
		return kl_avro_fail(r, "the decoded value exceeds the size limit");
	need = o->len + n + 1;
	cap = Max(o->cap * 2, 1024);
	cap = Max(cap, need);
	cap = Min(cap, most);
	data = realloc(o->data, cap);
	if (data == NULL)
		return kl_avro_fail(r, "out of memory");
	o->data = data;
	o->cap = cap;
	return true;
}

static inline bool
kl_avro_reserve(KlAvroReader *r, size_t n)
{
	if (likely(r->out->cap - r->out->len > n))
		return true;
	return kl_avro_grow(r, n);
}

static inline bool
kl_avro_put(KlAvroReader *r, const char *s, size_t n)
{
	if (!kl_avro_reserve(r, n))
		return false;
	memcpy(r->out->data + r->out->len, s, n);
	r->out->len += n;
	return true;
}

#define kl_avro_put_lit(r, s)	kl_avro_put((r), (s), sizeof(s) - 1)

/*
 * kl_avro_read_long
 *		A zigzag varint of at most 10 bytes.
 */
static inline bool
kl_avro_read_long(KlAvroReader *r, int64 *v)
{
	const uint8 *p = r->p;
	uint64		u = 0;
	int			shift = 0;

	if (likely(p < r->end && *p < 0x80))
	{
		u = *p;
		r->p = p + 1;
		*v = (int64) ((u >> 1) ^ (~(u & 1) + 1));
		return true;
	}
	for (;;)
	{
		uint8		b;

		if (p >= r->end)
			return kl_avro_fail(r, "the data ends inside a number");
		b = *p++;
		if (shift == 63 && (b & 0xFE))
			return kl_avro_fail(r, "a variable-length number longer than 10 bytes or 64 bits");
		u |= (uint64) (b & 0x7F) << shift;
		if (!(b & 0x80))
			break;
		shift += 7;
	}
	r->p = p;
	*v = (int64) ((u >> 1) ^ (~(u & 1) + 1));
	return true;
}

/*
 * kl_avro_read_integer
 *		An int or a long, as the writer's type says.
 */
static inline bool
kl_avro_read_integer(KlAvroReader *r, KlAvroType type, int64 *v)
{
	const uint8 *at = r->p;

	if (!kl_avro_read_long(r, v))
		return false;
	if (type == KL_AVRO_INT && (*v < PG_INT32_MIN || *v > PG_INT32_MAX))
		return kl_avro_fail_at(r, at, "an int beyond 32 bits");
	return true;
}

/*
 * kl_avro_read_length
 *		The length of bytes or a string, checked against the bytes left.
 */
static inline bool
kl_avro_read_length(KlAvroReader *r, size_t *len)
{
	const uint8 *at = r->p;
	int64		v;

	if (!kl_avro_read_long(r, &v))
		return false;
	if (v < 0)
		return kl_avro_fail_at(r, at, "a negative length");
	if ((uint64) v > (uint64) (r->end - r->p))
		return kl_avro_fail_at(r, at, "a length beyond the end of the data");
	*len = (size_t) v;
	return true;
}

/*
 * kl_avro_read_span
 *		The bytes of bytes or a string (type BYTES, STRING) or of a fixed.
 */
static inline bool
kl_avro_read_span(KlAvroReader *r, const KlAvroProg *prog, const uint8 **s, size_t *len)
{
	if (prog->read == KL_AVRO_FIXED)
	{
		if ((size_t) (r->end - r->p) < (size_t) prog->size)
			return kl_avro_fail(r, "the data ends inside a fixed");
		*len = prog->size;
	}
	else if (!kl_avro_read_length(r, len))
		return false;
	*s = r->p;
	r->p += *len;
	return true;
}

/*
 * kl_avro_read_real
 *		A number as a double, as the writer wrote it (int, long, float,
 *		double).
 */
static inline bool
kl_avro_read_real(KlAvroReader *r, KlAvroType type, double *d)
{
	if (type == KL_AVRO_FLOAT)
	{
		uint32		u;
		float		f;

		if (r->end - r->p < 4)
			return kl_avro_fail(r, "the data ends inside a float");
		u = (uint32) r->p[0] | ((uint32) r->p[1] << 8) | ((uint32) r->p[2] << 16) |
			((uint32) r->p[3] << 24);
		memcpy(&f, &u, 4);
		r->p += 4;
		*d = f;
	}
	else if (type == KL_AVRO_DOUBLE)
	{
		uint64		u = 0;

		if (r->end - r->p < 8)
			return kl_avro_fail(r, "the data ends inside a double");
		for (int i = 7; i >= 0; i--)
			u = (u << 8) | r->p[i];
		memcpy(d, &u, 8);
		r->p += 8;
	}
	else
	{
		int64		v;

		if (!kl_avro_read_integer(r, type, &v))
			return false;
		*d = (double) v;
	}
	return true;
}

/*
 * kl_avro_put_real
 *		A float or a double in the shortest form that reads back as it;
 *		NaN and the infinities as strings.
 */
static bool
kl_avro_put_real(KlAvroReader *r, double d, bool is_float)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN + 1];
	int			n;

	if (isnan(d))
		return kl_avro_put_lit(r, "\"NaN\"");
	if (isinf(d))
		return d > 0 ? kl_avro_put_lit(r, "\"Infinity\"") : kl_avro_put_lit(r, "\"-Infinity\"");
	if (is_float)
		n = float_to_shortest_decimal_bufn((float) d, buf);
	else
		n = double_to_shortest_decimal_bufn(d, buf);
	return kl_avro_put(r, buf, n);
}

/*
 * kl_avro_put_2, kl_avro_put_digits
 *		Fixed-width decimal digits into a buffer.
 */
static inline char *
kl_avro_digits(char *p, int64 v, int width)
{
	for (int i = width - 1; i >= 0; i--)
	{
		p[i] = '0' + (v % 10);
		v /= 10;
	}
	return p + width;
}

/*
 * kl_avro_put_date_text
 *		"YYYY-MM-DD" of days since 1970-01-01 into p; NULL when the year is
 *		not 1 to 9999.
 */
static char *
kl_avro_date_text(char *p, int64 days)
{
	int			y,
				m,
				d;

	/* date2j(1, 1, 1) and date2j(10000, 1, 1), less UNIX_EPOCH_JDATE */
	if (days < -719162 || days >= 2932897)
		return NULL;
	j2date((int) (days + UNIX_EPOCH_JDATE), &y, &m, &d);
	p = kl_avro_digits(p, y, 4);
	*p++ = '-';
	p = kl_avro_digits(p, m, 2);
	*p++ = '-';
	return kl_avro_digits(p, d, 2);
}

/*
 * kl_avro_time_text
 *		"HH:MM:SS.f..." of a time of day in units per second, digits the
 *		fraction's width.
 */
static char *
kl_avro_time_text(char *p, int64 v, int64 units, int digits)
{
	int64		secs = v / units;

	p = kl_avro_digits(p, secs / 3600, 2);
	*p++ = ':';
	p = kl_avro_digits(p, (secs / 60) % 60, 2);
	*p++ = ':';
	p = kl_avro_digits(p, secs % 60, 2);
	*p++ = '.';
	return kl_avro_digits(p, v % units, digits);
}

/*
 * kl_avro_put_temporal
 *		A date, a time or a timestamp (emit says which) as ISO-8601 text.
 */
static bool
kl_avro_put_temporal(KlAvroReader *r, const uint8 *at, KlAvroEmit emit, int64 v)
{
	char		buf[48];
	char	   *p = buf;
	int64		units = 1000;
	int			digits = 3;

	*p++ = '"';
	switch (emit)
	{
		case KL_EMIT_DATE:
			p = kl_avro_date_text(p, v);
			if (p == NULL)
				return kl_avro_fail_at(r, at, "a date outside the years 1 to 9999");
			break;
		case KL_EMIT_TIME_MICROS:
			units = 1000000;
			digits = 6;
			/* FALLTHROUGH */
		case KL_EMIT_TIME_MILLIS:
			if (v < 0 || v >= 86400 * units)
				return kl_avro_fail_at(r, at, "a time of day outside 00:00 to 24:00");
			p = kl_avro_time_text(p, v, units, digits);
			break;
		default:
			{
				int64		per_day;
				int64		days;
				int64		rest;

				if (emit == KL_EMIT_TIMESTAMP_MICROS || emit == KL_EMIT_LOCAL_TIMESTAMP_MICROS)
				{
					units = 1000000;
					digits = 6;
				}
				per_day = 86400 * units;
				days = v / per_day;
				rest = v % per_day;
				if (rest < 0)
				{
					days--;
					rest += per_day;
				}
				p = kl_avro_date_text(p, days);
				if (p == NULL)
					return kl_avro_fail_at(r, at, "a timestamp outside the years 1 to 9999");
				*p++ = 'T';
				p = kl_avro_time_text(p, rest, units, digits);
				if (emit == KL_EMIT_TIMESTAMP_MILLIS || emit == KL_EMIT_TIMESTAMP_MICROS)
					*p++ = 'Z';
			}
	}
	*p++ = '"';
	return kl_avro_put(r, buf, p - buf);
}

#define KL_AVRO_MAX_DECIMAL_BYTES	512

/*
 * kl_avro_put_decimal
 *		An unscaled two's-complement big-endian integer with the schema's
 *		scale, as an exact JSON number ("-12.30").
 */
static pg_noinline bool
kl_avro_put_decimal(KlAvroReader *r, const uint8 *at, const KlAvroProg *prog,
					const uint8 *b, size_t n)
{
	uint32		limbs[KL_AVRO_MAX_DECIMAL_BYTES / 4 + 1];
	char		digits[KL_AVRO_MAX_DECIMAL_BYTES * 3 + 16];
	char		text[KL_AVRO_MAX_DECIMAL_BYTES * 3 + 32];
	int			nlimbs = 0;
	int			ndigits = 0;
	bool		negative;
	char	   *o = text;
	int			scale = prog->scale;

	if (n == 0)
		return kl_avro_fail_at(r, at, "a decimal of no bytes");
	if (n > KL_AVRO_MAX_DECIMAL_BYTES)
		return kl_avro_fail_at(r, at, "a decimal of more than 512 bytes");
	negative = (b[0] & 0x80) != 0;

	/* the magnitude as little-endian 32-bit limbs */
	{
		uint32		carry = negative ? 1 : 0;

		for (size_t i = 0; i < n; i += 4)
		{
			uint32		limb = 0;

			for (size_t k = 0; k < 4; k++)
			{
				uint8		byte;

				if (i + k < n)
					byte = b[n - 1 - i - k];
				else
					byte = negative ? 0xFF : 0;
				limb |= (uint32) byte << (8 * k);
			}
			if (negative)
			{
				uint64		t = (uint64) (uint32) ~limb + carry;

				limb = (uint32) t;
				carry = (uint32) (t >> 32);
			}
			limbs[nlimbs++] = limb;
		}
	}
	while (nlimbs > 0 && limbs[nlimbs - 1] == 0)
		nlimbs--;

	/* nine decimal digits at a time, least significant first */
	while (nlimbs > 0)
	{
		uint64		rem = 0;

		for (int i = nlimbs - 1; i >= 0; i--)
		{
			uint64		cur = (rem << 32) | limbs[i];

			limbs[i] = (uint32) (cur / 1000000000);
			rem = cur % 1000000000;
		}
		while (nlimbs > 0 && limbs[nlimbs - 1] == 0)
			nlimbs--;
		for (int k = 0; k < 9; k++)
		{
			digits[ndigits++] = '0' + (rem % 10);
			rem /= 10;
			if (nlimbs == 0 && rem == 0)
				break;
		}
	}
	if (ndigits == 0)
		digits[ndigits++] = '0';
	if (prog->precision > 0 && ndigits > prog->precision &&
		!(ndigits == 1 && digits[0] == '0'))
		return kl_avro_fail_at(r, at, "a decimal with more digits than its precision");

	if (negative)
		*o++ = '-';
	if (ndigits <= scale)
	{
		*o++ = '0';
		*o++ = '.';
		for (int i = 0; i < scale - ndigits; i++)
			*o++ = '0';
		for (int i = ndigits - 1; i >= 0; i--)
			*o++ = digits[i];
	}
	else
	{
		for (int i = ndigits - 1; i >= 0; i--)
		{
			*o++ = digits[i];
			if (i == scale && scale > 0)
				*o++ = '.';
		}
	}
	return kl_avro_put(r, text, o - text);
}

/*
 * kl_avro_put_base64
 *		Bytes as a base64 JSON string.
 */
static bool
kl_avro_put_base64(KlAvroReader *r, const uint8 *s, size_t len)
{
	int			enc;
	int			n;

	if (len > (size_t) (PG_INT32_MAX / 2))
		return kl_avro_fail(r, "bytes too long");
	enc = pg_b64_enc_len((int) len);
	if (!kl_avro_reserve(r, enc + 2))
		return false;
	r->out->data[r->out->len++] = '"';
	n = pg_b64_encode((const char *) s, (int) len, r->out->data + r->out->len, enc);
	if (n < 0)
		return kl_avro_fail(r, "bytes too long");
	r->out->len += n;
	r->out->data[r->out->len++] = '"';
	return true;
}

/*
 * kl_avro_put_string
 *		UTF-8 text as a JSON string; anything else is an error at at.
 */
static inline bool
kl_avro_put_string(KlAvroReader *r, const uint8 *at, const uint8 *s, size_t len)
{
	KlAvroOut  *o = r->out;
	bool		first = true;

	if (!kl_utf8_valid((const char *) s, len))
		return kl_avro_fail_at(r, at, "a string that is not valid UTF-8");

	/*
	 * Escaped in pieces of at most KL_AVRO_STRING_PIECE bytes, cut between
	 * characters, so that what is reserved past the text (the worst case of
	 * escaping) stays within KL_AVRO_OUT_SLACK: a long string whose escaped
	 * text fits the limit is never refused for its worst case.  Each piece
	 * after the first is written over the closing quote before it, and its
	 * own opening quote removed.
	 */
	do
	{
		size_t		n = Min(len, KL_AVRO_STRING_PIECE);
		size_t		at_out;
		size_t		w;

		while (n < len && (s[n] & 0xC0) == 0x80)
			n--;
		if (!kl_avro_reserve(r, KL_JSON_ESCAPED_MAX(n)))
			return false;
		at_out = first ? o->len : o->len - 1;
		w = kl_json_escape_to(o->data + at_out, (const char *) s, n);
		if (!first)
		{
			memmove(o->data + at_out, o->data + at_out + 1, w - 1);
			w--;
		}
		o->len = at_out + w;
		s += n;
		len -= n;
		first = false;
	} while (len > 0);
	return true;
}

/*
 * kl_avro_put_uuid
 *		16 bytes as a UUID's text.
 */
static bool
kl_avro_put_uuid(KlAvroReader *r, const uint8 *s)
{
	static const char hex[] = "0123456789abcdef";
	char		buf[38];
	char	   *p = buf;

	*p++ = '"';
	for (int i = 0; i < 16; i++)
	{
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[s[i] >> 4];
		*p++ = hex[s[i] & 0xF];
	}
	*p++ = '"';
	return kl_avro_put(r, buf, p - buf);
}

/*
 * kl_avro_open
 *		One more level of nesting, within KL_AVRO_MAX_DEPTH.
 */
static inline bool
kl_avro_open(KlAvroReader *r)
{
	if (++r->depth > KL_AVRO_MAX_DEPTH)
		return kl_avro_fail(r, "nested deeper than 32 levels");
	return true;
}

/*
 * kl_avro_block_count
 *		The item count of an array's or a map's next block, checked against
 *		the bytes left (items of min_bytes each); a negative count brings
 *		the block's byte size, which is checked too.
 */
static bool
kl_avro_block_count(KlAvroReader *r, int min_bytes, int64 *count, int64 *size)
{
	const uint8 *at = r->p;

	*size = -1;
	if (!kl_avro_read_long(r, count))
		return false;
	if (*count < 0)
	{
		const uint8 *size_at = r->p;

		if (*count == PG_INT64_MIN)
			return kl_avro_fail_at(r, at, "a block count out of range");
		*count = -*count;
		if (!kl_avro_read_long(r, size))
			return false;
		if (*size < 0)
			return kl_avro_fail_at(r, size_at, "a negative block size");
		if ((uint64) *size > (uint64) (r->end - r->p))
			return kl_avro_fail_at(r, size_at, "a block size beyond the end of the data");
	}
	if (min_bytes > 0 && (uint64) *count > (uint64) (r->end - r->p) / min_bytes)
		return kl_avro_fail_at(r, at, "a block count larger than the bytes left");
	return true;
}

/*
 * kl_avro_record
 *		A record: the writer's fields in the writer's order, written as the
 *		reader's fields in the reader's order.
 */
static bool
kl_avro_record(KlAvroReader *r, const KlAvroProg *prog)
{
	KlAvroOut  *o = r->out;

	if (!kl_avro_open(r) || !kl_avro_put_lit(r, "{"))
		return false;
	if (prog->ordered)
	{
		bool		first = true;

		for (int i = 0; i < prog->nsteps; i++)
		{
			const KlAvroStep *st = &prog->steps[i];
			int			k = st->reader_index;

			if (st->kind == KL_STEP_SKIP)
			{
				if (!kl_avro_skip(r, st->skip))
				{
					kl_avro_path_push(r->err, st->name, st->namelen);
					return false;
				}
				continue;
			}
			if (!first && !kl_avro_put_lit(r, ", "))
				return false;
			first = false;
			if (!kl_avro_put(r, prog->keys[k], prog->keylens[k]))
				return false;
			if (st->kind == KL_STEP_DEFAULT)
			{
				if (!kl_avro_put(r, prog->defaults[k], prog->defaultlens[k]))
					return false;
			}
			else if (!kl_avro_value(r, st->prog))
			{
				kl_avro_path_push(r->err, st->name, st->namelen);
				return false;
			}
		}
	}
	else
	{
		/* decode in the writer's order, then move into the reader's */
		size_t		start = o->len - 1;
		size_t		base = o->nspans;
		size_t		total;
		char	   *p;

		if (o->spans_cap - o->nspans < (size_t) prog->nreader * 2)
		{
			size_t		cap = Max(o->spans_cap * 2, o->nspans + prog->nreader * 2 + 64);
			size_t	   *spans = realloc(o->spans, cap * sizeof(size_t));

			if (spans == NULL)
				return kl_avro_fail(r, "out of memory");
			o->spans = spans;
			o->spans_cap = cap;
		}
		o->nspans += prog->nreader * 2;
		for (int i = 0; i < prog->nsteps; i++)
		{
			const KlAvroStep *st = &prog->steps[i];
			size_t		s = o->len;

			if (st->kind == KL_STEP_SKIP ? !kl_avro_skip(r, st->skip) : !kl_avro_value(r, st->prog))
			{
				kl_avro_path_push(r->err, st->name, st->namelen);
				return false;
			}
			if (st->kind == KL_STEP_VALUE)
			{
				o->spans[base + 2 * st->reader_index] = s;
				o->spans[base + 2 * st->reader_index + 1] = o->len - s;
			}
		}
		total = 2;
		for (int k = 0; k < prog->nreader; k++)
			total += (k > 0 ? 2 : 0) + prog->keylens[k] +
				(prog->defaults[k] ? prog->defaultlens[k] : o->spans[base + 2 * k + 1]);
		/*
		 * The reader's order is built in the scratch buffer and moved back
		 * over the writer's: the output buffer never holds a record twice
		 * (see kl_avro_grow).
		 */
		if (o->scratch_cap < total)
		{
			size_t		cap = Max(o->scratch_cap * 2, Max(total, 1024));
			char	   *scratch = realloc(o->scratch, cap);

			if (scratch == NULL)
				return kl_avro_fail(r, "out of memory");
			o->scratch = scratch;
			o->scratch_cap = cap;
		}
		p = o->scratch;
		*p++ = '{';
		for (int k = 0; k < prog->nreader; k++)
		{
			if (k > 0)
			{
				*p++ = ',';
				*p++ = ' ';
			}
			memcpy(p, prog->keys[k], prog->keylens[k]);
			p += prog->keylens[k];
			if (prog->defaults[k])
			{
				memcpy(p, prog->defaults[k], prog->defaultlens[k]);
				p += prog->defaultlens[k];
			}
			else
			{
				memcpy(p, o->data + o->spans[base + 2 * k], o->spans[base + 2 * k + 1]);
				p += o->spans[base + 2 * k + 1];
			}
		}
		*p++ = '}';
		o->len = start;
		o->nspans = base;
		if (!kl_avro_put(r, o->scratch, total))
			return false;
		r->depth--;
		return true;
	}
	r->depth--;
	return kl_avro_put_lit(r, "}");
}

/*
 * kl_avro_array
 *		An array's blocks.
 */
static bool
kl_avro_array(KlAvroReader *r, const KlAvroProg *prog)
{
	int64		i = 0;

	if (!kl_avro_open(r) || !kl_avro_put_lit(r, "["))
		return false;
	for (;;)
	{
		int64		count;
		int64		size;

		if (!kl_avro_block_count(r, prog->item_min_bytes, &count, &size))
		{
			kl_avro_path_index(r->err, i);
			return false;
		}
		if (count == 0)
			break;
		for (int64 k = 0; k < count; k++, i++)
		{
			if (i > 0 && !kl_avro_put_lit(r, ", "))
				return false;
			if (!kl_avro_value(r, prog->items))
			{
				kl_avro_path_index(r->err, i);
				return false;
			}
		}
	}
	r->depth--;
	return kl_avro_put_lit(r, "]");
}

/*
 * kl_avro_map_key_path
 *		Put ["key"] (a short ASCII key) or [*] in front of the error's path.
 */
static void
kl_avro_map_key_path(KlAvroError *err, const uint8 *key, size_t len)
{
	char		buf[48];
	bool		plain = len <= 40;

	for (size_t i = 0; plain && i < len; i++)
		plain = key[i] >= 0x20 && key[i] < 0x7F && key[i] != '"' && key[i] != '\\';
	if (!plain)
	{
		kl_avro_path_push(err, "[*]", 3);
		return;
	}
	buf[0] = '[';
	buf[1] = '"';
	memcpy(buf + 2, key, len);
	buf[len + 2] = '"';
	buf[len + 3] = ']';
	kl_avro_path_push(err, buf, len + 4);
}

/*
 * kl_avro_map
 *		A map's blocks, as an object.
 */
static bool
kl_avro_map(KlAvroReader *r, const KlAvroProg *prog)
{
	bool		first = true;

	if (!kl_avro_open(r) || !kl_avro_put_lit(r, "{"))
		return false;
	for (;;)
	{
		int64		count;
		int64		size;

		/* a key takes a byte at least */
		if (!kl_avro_block_count(r, 1 + prog->item_min_bytes, &count, &size))
			return false;
		if (count == 0)
			break;
		for (int64 k = 0; k < count; k++)
		{
			const uint8 *at = r->p;
			const uint8 *key;
			size_t		len;

			if (!first && !kl_avro_put_lit(r, ", "))
				return false;
			first = false;
			if (!kl_avro_read_length(r, &len))
				return false;
			key = r->p;
			r->p += len;
			if (!kl_avro_put_string(r, at, key, len) || !kl_avro_put_lit(r, ": "))
				return false;
			if (!kl_avro_value(r, prog->items))
			{
				kl_avro_map_key_path(r->err, key, len);
				return false;
			}
		}
	}
	r->depth--;
	return kl_avro_put_lit(r, "}");
}

/*
 * kl_avro_value
 *		One value by its program.
 */
static bool
kl_avro_value(KlAvroReader *r, const KlAvroProg *prog)
{
	const uint8 *at = r->p;

	switch (prog->emit)
	{
		case KL_EMIT_NULL:
			return kl_avro_put_lit(r, "null");
		case KL_EMIT_BOOLEAN:
			if (r->p >= r->end)
				return kl_avro_fail(r, "the data ends before a boolean");
			if (*r->p > 1)
				return kl_avro_fail(r, "a boolean byte other than 0 and 1");
			return *r->p++ ? kl_avro_put_lit(r, "true") : kl_avro_put_lit(r, "false");
		case KL_EMIT_INTEGER:
			{
				int64		v;

				if (!kl_avro_read_integer(r, prog->read, &v) || !kl_avro_reserve(r, 24))
					return false;
				r->out->len += kl_json_format_int64(r->out->data + r->out->len, v);
				return true;
			}
		case KL_EMIT_FLOAT:
		case KL_EMIT_DOUBLE:
			{
				double		d;

				if (!kl_avro_read_real(r, prog->read, &d))
					return false;
				return kl_avro_put_real(r, d, prog->emit == KL_EMIT_FLOAT);
			}
		case KL_EMIT_BASE64:
		case KL_EMIT_STRING:
		case KL_EMIT_DECIMAL:
		case KL_EMIT_UUID_FIXED:
			{
				const uint8 *s;
				size_t		len;

				if (!kl_avro_read_span(r, prog, &s, &len))
					return false;
				if (prog->emit == KL_EMIT_STRING)
					return kl_avro_put_string(r, at, s, len);
				if (prog->emit == KL_EMIT_BASE64)
					return kl_avro_put_base64(r, s, len);
				if (prog->emit == KL_EMIT_DECIMAL)
					return kl_avro_put_decimal(r, at, prog, s, len);
				return kl_avro_put_uuid(r, s);
			}
		case KL_EMIT_DATE:
		case KL_EMIT_TIME_MILLIS:
		case KL_EMIT_TIME_MICROS:
		case KL_EMIT_TIMESTAMP_MILLIS:
		case KL_EMIT_TIMESTAMP_MICROS:
		case KL_EMIT_LOCAL_TIMESTAMP_MILLIS:
		case KL_EMIT_LOCAL_TIMESTAMP_MICROS:
			{
				int64		v;

				if (!kl_avro_read_integer(r, prog->read, &v))
					return false;
				return kl_avro_put_temporal(r, at, prog->emit, v);
			}
		case KL_EMIT_RECORD:
			return kl_avro_record(r, prog);
		case KL_EMIT_ENUM:
			{
				int64		v;

				if (!kl_avro_read_integer(r, KL_AVRO_INT, &v))
					return false;
				if (v < 0 || v >= prog->nsymbols)
					return kl_avro_fail_at(r, at, "an enum index out of range");
				if (prog->symbols[v] == NULL)
					return kl_avro_fail_at(r, at, "a symbol the reader's enum lacks, which has no default");
				return kl_avro_put(r, prog->symbols[v], prog->symlens[v]);
			}
		case KL_EMIT_ARRAY:
			return kl_avro_array(r, prog);
		case KL_EMIT_MAP:
			return kl_avro_map(r, prog);
		case KL_EMIT_UNION:
			{
				int64		v;

				if (!kl_avro_read_long(r, &v))
					return false;
				if (v < 0 || v >= prog->nbranches)
					return kl_avro_fail_at(r, at, "a union branch index out of range");
				return kl_avro_value(r, prog->branches[v]);
			}
		case KL_EMIT_WRAP:
			if (!kl_avro_open(r) || !kl_avro_put(r, prog->wrap, prog->wraplen) ||
				!kl_avro_value(r, prog->items))
				return false;
			r->depth--;
			return kl_avro_put_lit(r, "}");
		case KL_EMIT_FAIL:
			return kl_avro_fail_at(r, at, prog->fail);
	}
	return kl_avro_fail(r, "unknown program step");
}

/*
 * kl_avro_skip
 *		Pass over a value of the writer's type w, checking it as a decode
 *		would (lengths, counts, union branches, enum indexes), writing
 *		nothing.
 */
static bool
kl_avro_skip(KlAvroReader *r, const KlAvroNode *w)
{
	const uint8 *at = r->p;
	int64		v;
	size_t		len;

	switch (w->type)
	{
		case KL_AVRO_NULL:
			return true;
		case KL_AVRO_BOOLEAN:
			if (r->p >= r->end)
				return kl_avro_fail(r, "the data ends before a boolean");
			if (*r->p > 1)
				return kl_avro_fail(r, "a boolean byte other than 0 and 1");
			r->p++;
			return true;
		case KL_AVRO_INT:
		case KL_AVRO_LONG:
			return kl_avro_read_integer(r, w->type, &v);
		case KL_AVRO_FLOAT:
		case KL_AVRO_DOUBLE:
			if (r->end - r->p < (w->type == KL_AVRO_FLOAT ? 4 : 8))
				return kl_avro_fail(r, w->type == KL_AVRO_FLOAT ? "the data ends inside a float" : "the data ends inside a double");
			r->p += w->type == KL_AVRO_FLOAT ? 4 : 8;
			return true;
		case KL_AVRO_BYTES:
		case KL_AVRO_STRING:
			if (!kl_avro_read_length(r, &len))
				return false;
			r->p += len;
			return true;
		case KL_AVRO_FIXED:
			if ((size_t) (r->end - r->p) < (size_t) w->size)
				return kl_avro_fail(r, "the data ends inside a fixed");
			r->p += w->size;
			return true;
		case KL_AVRO_ENUM:
			if (!kl_avro_read_integer(r, KL_AVRO_INT, &v))
				return false;
			if (v < 0 || v >= w->nsymbols)
				return kl_avro_fail_at(r, at, "an enum index out of range");
			return true;
		case KL_AVRO_UNION:
			if (!kl_avro_read_long(r, &v))
				return false;
			if (v < 0 || v >= w->nbranches)
				return kl_avro_fail_at(r, at, "a union branch index out of range");
			return kl_avro_skip(r, w->branches[v]);
		case KL_AVRO_RECORD:
			if (!kl_avro_open(r))
				return false;
			for (int i = 0; i < w->nfields; i++)
			{
				if (!kl_avro_skip(r, w->fields[i].type))
					return false;
			}
			r->depth--;
			return true;
		case KL_AVRO_ARRAY:
		case KL_AVRO_MAP:
			if (!kl_avro_open(r))
				return false;
			for (;;)
			{
				int64		count;
				int64		size;
				int			min = Max(w->items->min_bytes, 0) + (w->type == KL_AVRO_MAP ? 1 : 0);


				if (!kl_avro_block_count(r, min, &count, &size))
					return false;
				if (count == 0)
					break;
				if (size >= 0)
				{
					r->p += size;
					continue;
				}
				for (int64 k = 0; k < count; k++)
				{
					if (w->type == KL_AVRO_MAP)
					{
						if (!kl_avro_read_length(r, &len))
							return false;
						r->p += len;
					}
					if (!kl_avro_skip(r, w->items))
						return false;
				}
			}
			r->depth--;
			return true;
	}
	return kl_avro_fail(r, "unknown type");
}

/*
 * kl_avro_decode
 *		Decode one datum (the bytes after any framing) by a resolution
 *		program into out as the reader's datum in JSON; every byte must
 *		belong to the datum.  On an error returns false with err set
 *		(kl_avro_error_message says it in words); out's text is then
 *		undefined.  Safe on any thread: allocates with malloc only (out's
 *		buffers, which the caller frees with kl_avro_out_free).
 */
bool
kl_avro_decode(const KlAvroProgram *program, const uint8 *data, size_t len,
			   KlAvroOut *out, KlAvroError *err)
{
	KlAvroReader r;

	err->what = NULL;
	err->offset = 0;
	err->path_start = sizeof(err->path);
	err->message[0] = '\0';
	out->len = 0;
	out->nspans = 0;
	if (out->limit == 0)
		out->limit = KL_AVRO_DEFAULT_MAX_OUT;
	r.start = data;
	r.p = data;
	r.end = data + len;
	r.out = out;
	r.err = err;
	r.depth = 0;
	if (!kl_avro_value(&r, program->root))
		return false;
	if (r.p != r.end)
		return kl_avro_fail(&r, "bytes left after the end of the datum");
	if (out->len > out->limit)
		return kl_avro_fail(&r, "the decoded value exceeds the size limit");
	if (!kl_avro_reserve(&r, 0))
		return false;
	out->data[out->len] = '\0';
	return true;
}

/*
 * kl_avro_error_message
 *		The error of a failed decode in words: field "a.b[2]" at byte 17:
 *		a string that is not valid UTF-8.
 */
const char *
kl_avro_error_message(KlAvroError *err)
{
	int			start = err->path_start < 0 ? -err->path_start - 1 : err->path_start;
	const char *path = err->path + start;
	int			len = sizeof(err->path) - start;

	if (len > 0 && *path == '.')
	{
		path++;
		len--;
	}
	if (len > 0)
		snprintf(err->message, sizeof(err->message), "field \"%.*s\" at byte %zu: %s",
				 len, path, err->offset, err->what ? err->what : "unknown error");
	else
		snprintf(err->message, sizeof(err->message), "at byte %zu: %s",
				 err->offset, err->what ? err->what : "unknown error");
	return err->message;
}

/*
 * kl_avro_out_free
 *		Free what a KlAvroOut holds; it can be used again.
 */
void
kl_avro_out_free(KlAvroOut *out)
{
	free(out->data);
	free(out->spans);
	free(out->scratch);
	out->data = NULL;
	out->spans = NULL;
	out->scratch = NULL;
	out->scratch_cap = 0;
	out->len = out->cap = 0;
	out->nspans = out->spans_cap = 0;
}

/* ----------------------------------------------------------------
 * the wire format (any thread)
 * ----------------------------------------------------------------
 */

/*
 * kl_avro_wire_id
 *		The schema id or GUID after the magic byte at v (len bytes, at
 *		least the magic's); NULL, or why not.
 */
static const char *
kl_avro_wire_id(const uint8 *v, size_t len, KlAvroWire *wire, size_t *used)
{
	memset(wire, 0, sizeof(*wire));
	wire->schema_id = -1;
	if (len == 0)
		return "an empty value has no magic byte";
	wire->magic = v[0];
	if (v[0] == 0)
	{
		if (len < 5)
			return "the value ends inside its 4-byte schema id (magic byte 0)";
		wire->schema_id = ((uint32) v[1] << 24) | ((uint32) v[2] << 16) | ((uint32) v[3] << 8) | v[4];
		*used = 5;
		return NULL;
	}
	if (v[0] == 1)
	{
		if (len < 17)
			return "the value ends inside its 16-byte schema GUID (magic byte 1)";
		memcpy(wire->guid, v + 1, 16);
		*used = 17;
		return NULL;
	}
	return "unknown magic byte: a Confluent-framed value starts with 0 (schema id) or 1 (schema GUID)";
}

/*
 * kl_avro_wire_parse
 *		Split a Kafka value in Confluent's wire format: magic byte 0, a
 *		4-byte big-endian schema id and the datum, or magic byte 1, a
 *		16-byte schema GUID and the datum.  Returns NULL, or a static
 *		message saying why the value is not framed so (any other first byte
 *		is reported, never taken for a plain datum).
 */
const char *
kl_avro_wire_parse(const uint8 *v, size_t len, KlAvroWire *wire)
{
	size_t		used = 0;
	const char *why = kl_avro_wire_id(v, len, wire, &used);

	if (why)
		return why;
	wire->payload = v + used;
	wire->payload_len = len - used;
	return NULL;
}

/*
 * kl_avro_wire_parse_header
 *		The schema id of a __value_schema_id (or __key_schema_id) header's
 *		value, which carries the id as the framing does but without the
 *		datum: magic byte 0 and a 4-byte id, or magic byte 1 and a 16-byte
 *		GUID, nothing after.  The datum is then the whole Kafka value.
 */
const char *
kl_avro_wire_parse_header(const uint8 *v, size_t len, KlAvroWire *wire)
{
	size_t		used = 0;
	const char *why = kl_avro_wire_id(v, len, wire, &used);

	if (why)
		return why;
	if (used != len)
		return "bytes after the schema id in the schema id header";
	return NULL;
}

/* ----------------------------------------------------------------
 * schemas (backend)
 * ----------------------------------------------------------------
 */

typedef struct KlAvroParse
{
	List	   *named;			/* KlAvroNode *: every named type so far */
	List	   *records;		/* KlAvroNode *: records, for their defaults */
} KlAvroParse;

/*
 * kl_avro_append_va
 *		Append fmt with args to msg, growing it as needed.
 */
static void kl_avro_append_va(StringInfo msg, const char *fmt, va_list args) pg_attribute_printf(2, 0);

static void
kl_avro_append_va(StringInfo msg, const char *fmt, va_list args)
{
	for (;;)
	{
		va_list		copy;
		int			needed;

		va_copy(copy, args);
		needed = appendStringInfoVA(msg, fmt, copy);
		va_end(copy);
		if (needed == 0)
			break;
		enlargeStringInfo(msg, needed);
	}
}

/*
 * kl_avro_schema_fail
 *		ERROR 42P17 at a place of the schema.
 */
static void kl_avro_schema_fail(const char *path, const char *hint, const char *fmt,...) pg_attribute_printf(3, 4);

static void
kl_avro_schema_fail(const char *path, const char *hint, const char *fmt,...)
{
	StringInfoData msg;

	initStringInfo(&msg);
	{
		va_list		args;

		va_start(args, fmt);
		kl_avro_append_va(&msg, fmt, args);
		va_end(args);
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
			 errmsg("invalid Avro schema at %s: %s", path ? path : "$", msg.data),
			 hint ? errhint("%s", hint) : 0));
}

/*
 * kl_avro_is_name
 *		Is s an Avro name: [A-Za-z_][A-Za-z0-9_]*?
 */
static bool
kl_avro_is_name(const char *s, size_t len)
{
	if (len == 0 || !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return false;
	for (size_t i = 1; i < len; i++)
	{
		char		c = s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
			return false;
	}
	return true;
}

/*
 * kl_avro_is_fullname
 *		Is s names separated by dots (a namespace, or a full name)?
 */
static bool
kl_avro_is_fullname(const char *s)
{
	const char *p = s;

	for (;;)
	{
		const char *dot = strchr(p, '.');
		size_t		len = dot ? (size_t) (dot - p) : strlen(p);

		if (!kl_avro_is_name(p, len))
			return false;
		if (!dot)
			return true;
		p = dot + 1;
	}
}

/*
 * kl_avro_json_tree
 *		The JSON value at v as a tree.
 */
static KlAvroJson *
kl_avro_json_tree(const KlJsonValue *v, const char *path)
{
	KlAvroJson *j = palloc0(sizeof(KlAvroJson));

	check_stack_depth();
	j->type = v->type;
	j->start = v->start;
	j->len = v->len;
	j->path = pstrdup(path);
	if (v->type == KL_JSON_STRING)
	{
		StringInfoData s;

		initStringInfo(&s);
		kl_json_decode_string(v, &s);
		j->str = s.data;
		j->strlen = s.len;
	}
	else if (v->type == KL_JSON_OBJECT || v->type == KL_JSON_ARRAY)
	{
		KlJsonReader it;
		KlJsonValue k;
		KlJsonValue m;
		int			cap = 8;

		j->keys = palloc(sizeof(char *) * cap);
		j->vals = palloc(sizeof(KlAvroJson *) * cap);
		if (v->type == KL_JSON_OBJECT)
			kl_json_object_open(&it, v->start, v->start + v->len, KL_JSON_MAX_DEPTH);
		else
			kl_json_array_open(&it, v->start, v->start + v->len, KL_JSON_MAX_DEPTH);
		while (v->type == KL_JSON_OBJECT ? kl_json_object_next(&it, &k, &m) : kl_json_array_next(&it, &m))
		{
			char	   *child;

			if (j->n == cap)
			{
				cap *= 2;
				j->keys = repalloc(j->keys, sizeof(char *) * cap);
				j->vals = repalloc(j->vals, sizeof(KlAvroJson *) * cap);
			}
			if (v->type == KL_JSON_OBJECT)
			{
				StringInfoData name;

				initStringInfo(&name);
				kl_json_decode_string(&k, &name);
				for (int i = 0; i < j->n; i++)
				{
					if (strcmp(j->keys[i], name.data) == 0)
						kl_avro_schema_fail(path, "Give each attribute once.",
											"attribute \"%s\" appears twice", name.data);
				}
				j->keys[j->n] = name.data;
				child = kl_avro_is_name(name.data, name.len) ? psprintf("%s.%s", path, name.data) :
					psprintf("%s[%s]", path, quote_literal_cstr(name.data));
			}
			else
				child = psprintf("%s[%d]", path, j->n);
			j->vals[j->n] = kl_avro_json_tree(&m, child);
			j->n++;
		}
	}
	return j;
}

/*
 * kl_avro_get
 *		A member of an object, or NULL.
 */
static KlAvroJson *
kl_avro_get(const KlAvroJson *obj, const char *key)
{
	for (int i = 0; i < obj->n; i++)
	{
		if (strcmp(obj->keys[i], key) == 0)
			return obj->vals[i];
	}
	return NULL;
}

/*
 * kl_avro_get_string
 *		A member that must be a string (NULL when absent and optional).
 */
static char *
kl_avro_get_string(const KlAvroJson *obj, const char *key, bool required, const char *hint)
{
	KlAvroJson *v = kl_avro_get(obj, key);

	if (v == NULL)
	{
		if (required)
			kl_avro_schema_fail(obj->path, hint, "\"%s\" is missing", key);
		return NULL;
	}
	if (v->type != KL_JSON_STRING || strlen(v->str) != v->strlen)
		kl_avro_schema_fail(v->path, hint, "\"%s\" must be a string", key);
	return v->str;
}

/*
 * kl_avro_get_int
 *		A member that must be an integer from min to max; dflt when absent.
 */
static int
kl_avro_get_int(const KlAvroJson *obj, const char *key, int64 min, int64 max, int dflt,
				bool *present)
{
	KlAvroJson *v = kl_avro_get(obj, key);
	KlJsonValue jv;
	int64		n;

	*present = v != NULL;
	if (v == NULL)
		return dflt;
	jv.start = v->start;
	jv.len = v->len;
	if (v->type != KL_JSON_NUMBER || !kl_json_parse_int64(jv.start, jv.len, &n) || n < min || n > max)
		return INT_MIN;
	return (int) n;
}

/*
 * kl_avro_qualify
 *		The full name of a name in a namespace.
 */
static char *
kl_avro_qualify(const char *name, const char *ns)
{
	if (strchr(name, '.') || ns == NULL || *ns == '\0')
		return pstrdup(name);
	return psprintf("%s.%s", ns, name);
}

/*
 * kl_avro_primitive
 *		The type of a primitive type's name, or -1.
 */
static int
kl_avro_primitive(const char *name)
{
	for (int t = KL_AVRO_NULL; t <= KL_AVRO_STRING; t++)
	{
		if (strcmp(name, kl_avro_type_names[t]) == 0)
			return t;
	}
	return -1;
}

/*
 * kl_avro_lookup
 *		A named type defined so far, by full name.
 */
static KlAvroNode *
kl_avro_lookup(KlAvroParse *cx, const char *fullname)
{
	ListCell   *lc;

	foreach(lc, cx->named)
	{
		KlAvroNode *n = lfirst(lc);

		if (strcmp(n->fullname, fullname) == 0)
			return n;
	}
	return NULL;
}

static KlAvroNode *kl_avro_parse_node(KlAvroParse *cx, const KlAvroJson *j, const char *ns);

/*
 * kl_avro_reference
 *		A type named by a string: a primitive, or a named type defined
 *		before (in the namespace around it, or by its full name).
 */
static KlAvroNode *
kl_avro_reference(KlAvroParse *cx, const KlAvroJson *j, const char *name, const char *ns)
{
	int			t = kl_avro_primitive(name);
	KlAvroNode *n;

	if (t >= 0)
	{
		n = palloc0(sizeof(KlAvroNode));
		n->type = t;
		n->default_symbol = -1;
		return n;
	}
	n = kl_avro_lookup(cx, kl_avro_qualify(name, ns));
	if (n == NULL && strchr(name, '.') == NULL)
		n = kl_avro_lookup(cx, name);
	if (n == NULL)
		kl_avro_schema_fail(j->path,
							"A type is a primitive (null, boolean, int, long, float, double, bytes, string), a record, enum, array, map or fixed, a union (a JSON array), or the name of a type defined before.",
							"unknown type \"%s\"", name);
	return n;
}

/*
 * kl_avro_name_node
 *		Name a record, enum or fixed: its full name, its aliases; registers
 *		it (a name defined twice is an error).  Returns its namespace.
 */
static char *
kl_avro_name_node(KlAvroParse *cx, KlAvroNode *n, const KlAvroJson *j, const char *ns)
{
	char	   *name = kl_avro_get_string(j, "name", true, "A record, an enum and a fixed have a \"name\".");
	char	   *space = kl_avro_get_string(j, "namespace", false, "A namespace is names separated by dots.");
	KlAvroJson *aliases = kl_avro_get(j, "aliases");
	char	   *dot;

	if (!kl_avro_is_fullname(name))
		kl_avro_schema_fail(kl_avro_get(j, "name")->path,
							"A name starts with a letter or an underscore, followed by letters, digits or underscores.",
							"invalid name \"%s\"", name);
	if (space && *space && !kl_avro_is_fullname(space))
		kl_avro_schema_fail(kl_avro_get(j, "namespace")->path, "A namespace is names separated by dots.",
							"invalid namespace \"%s\"", space);
	if (space)
		ns = space;
	n->fullname = kl_avro_qualify(name, ns);
	dot = strrchr(n->fullname, '.');
	n->name = pstrdup(dot ? dot + 1 : n->fullname);
	if (kl_avro_primitive(n->name) >= 0)
		kl_avro_schema_fail(kl_avro_get(j, "name")->path, "Name the type otherwise.",
							"\"%s\" is a primitive type's name", n->name);
	if (kl_avro_lookup(cx, n->fullname))
		kl_avro_schema_fail(kl_avro_get(j, "name")->path, "Define a named type once and refer to it by its name afterwards.",
							"type \"%s\" is defined twice", n->fullname);
	if (aliases)
	{
		if (aliases->type != KL_JSON_ARRAY)
			kl_avro_schema_fail(aliases->path, "Write the aliases as a JSON array of names.", "\"aliases\" must be an array");
		n->aliases = palloc(sizeof(char *) * (aliases->n + 1));
		for (int i = 0; i < aliases->n; i++)
		{
			if (aliases->vals[i]->type != KL_JSON_STRING || !kl_avro_is_fullname(aliases->vals[i]->str))
				kl_avro_schema_fail(aliases->vals[i]->path, "An alias is a name.", "invalid alias");
			n->aliases[n->naliases++] = kl_avro_qualify(aliases->vals[i]->str, dot ? pnstrdup(n->fullname, dot - n->fullname) : NULL);
		}
	}
	cx->named = lappend(cx->named, n);
	return dot ? pnstrdup(n->fullname, dot - n->fullname) : pstrdup("");
}

/*
 * kl_avro_logical
 *		A primitive's or a fixed's logicalType; an unknown or invalid one is
 *		ignored, as the specification says (the underlying type stays).
 */
static void
kl_avro_logical(KlAvroNode *n, const KlAvroJson *j)
{
	KlAvroJson *lt = kl_avro_get(j, "logicalType");
	const char *s;

	if (lt == NULL || lt->type != KL_JSON_STRING)
		return;
	s = lt->str;
	if (strcmp(s, "decimal") == 0 && (n->type == KL_AVRO_BYTES || n->type == KL_AVRO_FIXED))
	{
		bool		has_p,
					has_s;
		int			p = kl_avro_get_int(j, "precision", 1, 100000, 0, &has_p);
		int			sc = kl_avro_get_int(j, "scale", 0, 100000, 0, &has_s);

		if (!has_p || p == INT_MIN || sc == INT_MIN || sc > p)
			return;
		if (n->type == KL_AVRO_FIXED && n->size < 1000 &&
			p > (int) floor((8.0 * n->size - 1) * log10(2.0)))
			return;
		n->logical = KL_AVRO_LT_DECIMAL;
		n->precision = p;
		n->scale = sc;
	}
	else if (strcmp(s, "uuid") == 0 && (n->type == KL_AVRO_STRING || (n->type == KL_AVRO_FIXED && n->size == 16)))
		n->logical = KL_AVRO_LT_UUID;
	else if (strcmp(s, "date") == 0 && n->type == KL_AVRO_INT)
		n->logical = KL_AVRO_LT_DATE;
	else if (strcmp(s, "time-millis") == 0 && n->type == KL_AVRO_INT)
		n->logical = KL_AVRO_LT_TIME_MILLIS;
	else if (strcmp(s, "time-micros") == 0 && n->type == KL_AVRO_LONG)
		n->logical = KL_AVRO_LT_TIME_MICROS;
	else if (strcmp(s, "timestamp-millis") == 0 && n->type == KL_AVRO_LONG)
		n->logical = KL_AVRO_LT_TIMESTAMP_MILLIS;
	else if (strcmp(s, "timestamp-micros") == 0 && n->type == KL_AVRO_LONG)
		n->logical = KL_AVRO_LT_TIMESTAMP_MICROS;
	else if (strcmp(s, "local-timestamp-millis") == 0 && n->type == KL_AVRO_LONG)
		n->logical = KL_AVRO_LT_LOCAL_TIMESTAMP_MILLIS;
	else if (strcmp(s, "local-timestamp-micros") == 0 && n->type == KL_AVRO_LONG)
		n->logical = KL_AVRO_LT_LOCAL_TIMESTAMP_MICROS;
}

/*
 * kl_avro_parse_fields
 *		A record's "fields".
 */
static void
kl_avro_parse_fields(KlAvroParse *cx, KlAvroNode *n, const KlAvroJson *j, const char *ns)
{
	KlAvroJson *fields = kl_avro_get(j, "fields");
	const char *hint = "A record's \"fields\" is a JSON array of objects, each with a \"name\" and a \"type\", for example [{\"name\": \"id\", \"type\": \"long\"}].";

	if (fields == NULL)
		kl_avro_schema_fail(j->path, hint, "a record needs \"fields\"");
	if (fields->type != KL_JSON_ARRAY)
		kl_avro_schema_fail(fields->path, hint, "\"fields\" must be an array");
	n->fields = palloc0(sizeof(KlAvroField) * Max(fields->n, 1));
	for (int i = 0; i < fields->n; i++)
	{
		KlAvroJson *f = fields->vals[i];
		KlAvroField *field = &n->fields[i];
		KlAvroJson *type;
		KlAvroJson *aliases;
		char	   *order;

		if (f->type != KL_JSON_OBJECT)
			kl_avro_schema_fail(f->path, hint, "a field must be an object");
		field->name = kl_avro_get_string(f, "name", true, hint);
		field->path = f->path;
		if (!kl_avro_is_name(field->name, strlen(field->name)))
			kl_avro_schema_fail(kl_avro_get(f, "name")->path,
								"A name starts with a letter or an underscore, followed by letters, digits or underscores.",
								"invalid field name \"%s\"", field->name);
		for (int k = 0; k < i; k++)
		{
			if (strcmp(n->fields[k].name, field->name) == 0)
				kl_avro_schema_fail(kl_avro_get(f, "name")->path, "Give each field of a record its own name.",
									"field \"%s\" appears twice", field->name);
		}
		type = kl_avro_get(f, "type");
		if (type == NULL)
			kl_avro_schema_fail(f->path, hint, "field \"%s\" has no \"type\"", field->name);
		field->type = kl_avro_parse_node(cx, type, ns);
		field->default_value = kl_avro_get(f, "default");
		order = kl_avro_get_string(f, "order", false, "\"order\" is ascending, descending or ignore.");
		if (order && strcmp(order, "ascending") != 0 && strcmp(order, "descending") != 0 && strcmp(order, "ignore") != 0)
			kl_avro_schema_fail(kl_avro_get(f, "order")->path, "\"order\" is ascending, descending or ignore.",
								"invalid order \"%s\"", order);
		aliases = kl_avro_get(f, "aliases");
		if (aliases)
		{
			if (aliases->type != KL_JSON_ARRAY)
				kl_avro_schema_fail(aliases->path, "Write the aliases as a JSON array of names.", "\"aliases\" must be an array");
			field->aliases = palloc(sizeof(char *) * (aliases->n + 1));
			for (int k = 0; k < aliases->n; k++)
			{
				KlAvroJson *a = aliases->vals[k];

				if (a->type != KL_JSON_STRING || !kl_avro_is_name(a->str, a->strlen))
					kl_avro_schema_fail(a->path, "A field's alias is a name.", "invalid alias");
				field->aliases[field->naliases++] = a->str;
			}
		}
		n->nfields++;
	}
}

/*
 * kl_avro_parse_enum
 *		An enum's symbols and default.
 */
static void
kl_avro_parse_enum(KlAvroNode *n, const KlAvroJson *j)
{
	KlAvroJson *symbols = kl_avro_get(j, "symbols");
	const char *hint = "An enum's \"symbols\" is a JSON array of distinct names, for example [\"RED\", \"GREEN\"].";
	char	   *dflt;

	if (symbols == NULL)
		kl_avro_schema_fail(j->path, hint, "an enum needs \"symbols\"");
	if (symbols->type != KL_JSON_ARRAY)
		kl_avro_schema_fail(symbols->path, hint, "\"symbols\" must be an array");
	n->symbols = palloc(sizeof(char *) * Max(symbols->n, 1));
	for (int i = 0; i < symbols->n; i++)
	{
		KlAvroJson *s = symbols->vals[i];

		if (s->type != KL_JSON_STRING || !kl_avro_is_name(s->str, s->strlen))
			kl_avro_schema_fail(s->path, hint, "a symbol must be a name");
		for (int k = 0; k < i; k++)
		{
			if (strcmp(n->symbols[k], s->str) == 0)
				kl_avro_schema_fail(s->path, hint, "symbol \"%s\" appears twice", s->str);
		}
		n->symbols[n->nsymbols++] = s->str;
	}
	n->default_symbol = -1;
	dflt = kl_avro_get_string(j, "default", false, "An enum's default is one of its symbols.");
	if (dflt)
	{
		for (int i = 0; i < n->nsymbols; i++)
		{
			if (strcmp(n->symbols[i], dflt) == 0)
				n->default_symbol = i;
		}
		if (n->default_symbol < 0)
			kl_avro_schema_fail(kl_avro_get(j, "default")->path, "An enum's default is one of its symbols.",
								"default \"%s\" is not a symbol of the enum", dflt);
	}
}

/*
 * kl_avro_branch_key
 *		What two branches of one union may not share: a named type's full
 *		name, any other type's name.
 */
static const char *
kl_avro_branch_key(const KlAvroNode *n)
{
	if (n->type == KL_AVRO_RECORD || n->type == KL_AVRO_ENUM || n->type == KL_AVRO_FIXED)
		return n->fullname;
	return kl_avro_type_names[n->type];
}

/*
 * kl_avro_parse_node
 *		One schema: a JSON string (a type's name), an array (a union) or an
 *		object.
 */
static KlAvroNode *
kl_avro_parse_node(KlAvroParse *cx, const KlAvroJson *j, const char *ns)
{
	KlAvroNode *n;
	KlAvroJson *type;
	const char *t;

	check_stack_depth();
	if (j->type == KL_JSON_STRING)
		return kl_avro_reference(cx, j, j->str, ns);
	if (j->type == KL_JSON_ARRAY)
	{
		/* a union without a branch holds no value: no datum could be read */
		if (j->n == 0)
			kl_avro_schema_fail(j->path, "List the union's types, for example [\"null\", \"string\"].",
								"a union needs at least one type");
		n = palloc0(sizeof(KlAvroNode));
		n->type = KL_AVRO_UNION;
		n->default_symbol = -1;
		n->branches = palloc(sizeof(KlAvroNode *) * Max(j->n, 1));
		for (int i = 0; i < j->n; i++)
		{
			KlAvroNode *b = kl_avro_parse_node(cx, j->vals[i], ns);

			if (b->type == KL_AVRO_UNION)
				kl_avro_schema_fail(j->vals[i]->path, "List the branches of the inner union in the outer one.",
									"a union cannot hold a union");
			for (int k = 0; k < i; k++)
			{
				if (strcmp(kl_avro_branch_key(n->branches[k]), kl_avro_branch_key(b)) == 0)
					kl_avro_schema_fail(j->vals[i]->path, "A union holds each type once (named types once per name).",
										"the union holds \"%s\" twice", kl_avro_branch_key(b));
			}
			n->branches[n->nbranches++] = b;
		}
		return n;
	}
	if (j->type != KL_JSON_OBJECT)
		kl_avro_schema_fail(j->path, "A schema is a type's name (\"long\"), an object ({\"type\": \"record\", ...}) or a union ([\"null\", \"string\"]).",
							"a schema must be a string, an object or an array");
	type = kl_avro_get(j, "type");
	if (type == NULL)
		kl_avro_schema_fail(j->path, "For example {\"type\": \"long\", \"logicalType\": \"timestamp-millis\"}.",
							"\"type\" is missing");
	if (type->type != KL_JSON_STRING)
		return kl_avro_parse_node(cx, type, ns);
	t = type->str;
	if (kl_avro_primitive(t) >= 0)
	{
		n = kl_avro_reference(cx, type, t, ns);
		kl_avro_logical(n, j);
		return n;
	}
	n = palloc0(sizeof(KlAvroNode));
	n->default_symbol = -1;
	if (strcmp(t, "record") == 0 || strcmp(t, "error") == 0)
	{
		char	   *inner;

		n->type = KL_AVRO_RECORD;
		inner = kl_avro_name_node(cx, n, j, ns);
		kl_avro_parse_fields(cx, n, j, inner);
		cx->records = lappend(cx->records, n);
	}
	else if (strcmp(t, "enum") == 0)
	{
		n->type = KL_AVRO_ENUM;
		kl_avro_name_node(cx, n, j, ns);
		kl_avro_parse_enum(n, j);
	}
	else if (strcmp(t, "fixed") == 0)
	{
		bool		present;

		n->type = KL_AVRO_FIXED;
		n->size = kl_avro_get_int(j, "size", 0, PG_INT32_MAX / 2, 0, &present);
		if (!present || n->size == INT_MIN)
			kl_avro_schema_fail(j->path, "For example {\"type\": \"fixed\", \"name\": \"md5\", \"size\": 16}.",
								"a fixed needs a \"size\": an integer of 0 or more");
		kl_avro_name_node(cx, n, j, ns);
		kl_avro_logical(n, j);
	}
	else if (strcmp(t, "array") == 0 || strcmp(t, "map") == 0)
	{
		const char *what = (t[0] == 'a') ? "items" : "values";
		KlAvroJson *items = kl_avro_get(j, what);

		n->type = (t[0] == 'a') ? KL_AVRO_ARRAY : KL_AVRO_MAP;
		if (items == NULL)
			kl_avro_schema_fail(j->path, "For example {\"type\": \"array\", \"items\": \"string\"} or {\"type\": \"map\", \"values\": \"long\"}.",
								"%s needs \"%s\"", t[0] == 'a' ? "an array" : "a map", what);
		n->items = kl_avro_parse_node(cx, items, ns);
	}
	else
		return kl_avro_reference(cx, type, t, ns);
	return n;
}

/*
 * kl_avro_min_bytes
 *		The fewest bytes a datum of n takes, kept in every node below n (a
 *		record still being computed counts as 0: a lower bound is what the
 *		block checks need).
 */
static int
kl_avro_min_bytes(KlAvroNode *n)
{
	int			m;

	if (n->min_bytes > 0 || n->min_bytes == -2)
		return Max(n->min_bytes, 0);
	n->min_bytes = -2;			/* in progress */
	switch (n->type)
	{
		case KL_AVRO_NULL:
			m = 0;
			break;
		case KL_AVRO_FLOAT:
			m = 4;
			break;
		case KL_AVRO_DOUBLE:
			m = 8;
			break;
		case KL_AVRO_FIXED:
			m = Min(n->size, 1 << 20);
			break;
		case KL_AVRO_RECORD:
			m = 0;
			for (int i = 0; i < n->nfields; i++)
				m = Min(m + kl_avro_min_bytes(n->fields[i].type), 1 << 20);
			break;
		case KL_AVRO_ARRAY:
		case KL_AVRO_MAP:
			kl_avro_min_bytes(n->items);
			m = 1;
			break;
		case KL_AVRO_UNION:
			for (int i = 0; i < n->nbranches; i++)
				kl_avro_min_bytes(n->branches[i]);
			m = 1;
			break;
		default:
			m = 1;
			break;
	}
	n->min_bytes = m;
	return m;
}

static bool kl_avro_encode(const KlAvroNode *n, const KlAvroJson *j, StringInfo out);

/*
 * kl_avro_encode_long
 *		A zigzag varint.
 */
static void
kl_avro_encode_long(StringInfo out, int64 v)
{
	uint64		u = ((uint64) v << 1) ^ (uint64) (v >> 63);

	while (u >= 0x80)
	{
		appendStringInfoChar(out, (char) ((u & 0x7F) | 0x80));
		u >>= 7;
	}
	appendStringInfoChar(out, (char) u);
}

/*
 * kl_avro_encode_latin1
 *		A JSON string of bytes (each code point 0 to 255 one byte), as the
 *		specification writes defaults of bytes and fixed.
 */
static bool
kl_avro_encode_latin1(const KlAvroJson *j, StringInfo bytes)
{
	const unsigned char *p = (const unsigned char *) j->str;
	const unsigned char *end = p + j->strlen;

	while (p < end)
	{
		int			n = kl_utf8_sequence_length(p, end - p);
		unsigned int cp;

		if (n == 1)
			cp = p[0];
		else if (n == 2)
			cp = ((p[0] & 0x1F) << 6) | (p[1] & 0x3F);
		else
			return false;
		if (cp > 255)
			return false;
		appendStringInfoChar(bytes, (char) cp);
		p += n;
	}
	return true;
}

/*
 * kl_avro_encode
 *		A default value (JSON, as the specification writes it) in Avro's
 *		binary encoding of n; false when it is no value of n.
 */
static bool
kl_avro_encode(const KlAvroNode *n, const KlAvroJson *j, StringInfo out)
{
	check_stack_depth();
	switch (n->type)
	{
		case KL_AVRO_NULL:
			return j->type == KL_JSON_NULL;
		case KL_AVRO_BOOLEAN:
			if (j->type != KL_JSON_TRUE && j->type != KL_JSON_FALSE)
				return false;
			appendStringInfoChar(out, j->type == KL_JSON_TRUE ? 1 : 0);
			return true;
		case KL_AVRO_INT:
		case KL_AVRO_LONG:
			{
				int64		v;

				if (j->type != KL_JSON_NUMBER || !kl_json_parse_int64(j->start, j->len, &v))
					return false;
				if (n->type == KL_AVRO_INT && (v < PG_INT32_MIN || v > PG_INT32_MAX))
					return false;
				kl_avro_encode_long(out, v);
				return true;
			}
		case KL_AVRO_FLOAT:
		case KL_AVRO_DOUBLE:
			{
				char	   *text;
				double		d;
				uint8		b[8];

				if (j->type != KL_JSON_NUMBER)
					return false;
				text = pnstrdup(j->start, j->len);
				d = strtod(text, NULL);
				if (n->type == KL_AVRO_FLOAT)
				{
					float		f = (float) d;
					uint32		u;

					memcpy(&u, &f, 4);
					for (int i = 0; i < 4; i++)
						b[i] = (uint8) (u >> (8 * i));
					appendBinaryStringInfo(out, (char *) b, 4);
				}
				else
				{
					uint64		u;

					memcpy(&u, &d, 8);
					for (int i = 0; i < 8; i++)
						b[i] = (uint8) (u >> (8 * i));
					appendBinaryStringInfo(out, (char *) b, 8);
				}
				return true;
			}
		case KL_AVRO_BYTES:
		case KL_AVRO_FIXED:
			{
				StringInfoData bytes;

				if (j->type != KL_JSON_STRING)
					return false;
				initStringInfo(&bytes);
				if (!kl_avro_encode_latin1(j, &bytes))
					return false;
				if (n->type == KL_AVRO_FIXED && bytes.len != n->size)
					return false;
				if (n->type == KL_AVRO_BYTES)
					kl_avro_encode_long(out, bytes.len);
				appendBinaryStringInfo(out, bytes.data, bytes.len);
				return true;
			}
		case KL_AVRO_STRING:
			if (j->type != KL_JSON_STRING)
				return false;
			kl_avro_encode_long(out, j->strlen);
			appendBinaryStringInfo(out, j->str, j->strlen);
			return true;
		case KL_AVRO_ENUM:
			if (j->type != KL_JSON_STRING)
				return false;
			for (int i = 0; i < n->nsymbols; i++)
			{
				if (strcmp(n->symbols[i], j->str) == 0)
				{
					kl_avro_encode_long(out, i);
					return true;
				}
			}
			return false;
		case KL_AVRO_ARRAY:
			if (j->type != KL_JSON_ARRAY)
				return false;
			if (j->n > 0)
				kl_avro_encode_long(out, j->n);
			for (int i = 0; i < j->n; i++)
			{
				if (!kl_avro_encode(n->items, j->vals[i], out))
					return false;
			}
			kl_avro_encode_long(out, 0);
			return true;
		case KL_AVRO_MAP:
			if (j->type != KL_JSON_OBJECT)
				return false;
			if (j->n > 0)
				kl_avro_encode_long(out, j->n);
			for (int i = 0; i < j->n; i++)
			{
				kl_avro_encode_long(out, strlen(j->keys[i]));
				appendStringInfoString(out, j->keys[i]);
				if (!kl_avro_encode(n->items, j->vals[i], out))
					return false;
			}
			kl_avro_encode_long(out, 0);
			return true;
		case KL_AVRO_RECORD:
			if (j->type != KL_JSON_OBJECT)
				return false;
			for (int i = 0; i < n->nfields; i++)
			{
				KlAvroJson *v = kl_avro_get(j, n->fields[i].name);

				if (v == NULL)
					v = n->fields[i].default_value;
				if (v == NULL || !kl_avro_encode(n->fields[i].type, v, out))
					return false;
			}
			return true;
		case KL_AVRO_UNION:
			/* the first branch the value is one of (the specification: the first) */
			for (int i = 0; i < n->nbranches; i++)
			{
				StringInfoData branch;

				initStringInfo(&branch);
				if (kl_avro_encode(n->branches[i], j, &branch))
				{
					kl_avro_encode_long(out, i);
					appendBinaryStringInfo(out, branch.data, branch.len);
					return true;
				}
			}
			return false;
	}
	return false;
}

/*
 * kl_avro_schema_parse
 *		Compile an Avro schema from its JSON text, in the current memory
 *		context.  ERROR 42P17 with the place (a JSON path) and a hint when
 *		the text is no valid schema: invalid JSON, an unknown type, a name
 *		defined twice or referred to before its definition, a bad field,
 *		symbol or size, a union that holds a type twice or a union, a
 *		default that is no value of its field's type.
 */
KlAvroSchema *
kl_avro_schema_parse(const char *json, size_t len)
{
	KlJsonReader r;
	KlJsonValue v;
	KlAvroParse cx = {NIL, NIL};
	KlAvroSchema *s;
	char	   *text = pnstrdup(json, len);
	ListCell   *lc;

	kl_json_init(&r, text, len, KL_JSON_MAX_DEPTH);
	if (!kl_json_parse_document(&r, &v))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("invalid Avro schema: invalid JSON: %s at byte %d", r.error, (int) (r.p - text)),
				 errhint("A schema is JSON text, for example {\"type\": \"record\", \"name\": \"r\", \"fields\": [{\"name\": \"id\", \"type\": \"long\"}]}.")));
	s = palloc0(sizeof(KlAvroSchema));
	s->root = kl_avro_parse_node(&cx, kl_avro_json_tree(&v, "$"), "");
	kl_avro_min_bytes(s->root);
	foreach(lc, cx.named)
		kl_avro_min_bytes(lfirst(lc));

	/* every default is a value of its field's type */
	foreach(lc, cx.records)
	{
		KlAvroNode *rec = lfirst(lc);

		for (int i = 0; i < rec->nfields; i++)
		{
			KlAvroField *f = &rec->fields[i];
			StringInfoData bytes;

			if (f->default_value == NULL)
				continue;
			initStringInfo(&bytes);
			if (!kl_avro_encode(f->type, f->default_value, &bytes))
				kl_avro_schema_fail(f->default_value->path,
									"A default is written as the type's JSON: null, true, a number, a string (bytes and fixed: one character per byte, \\u0000 to \\u00ff), an array, an object; a union's default is a value of its first type.",
									"the default of field \"%s\" is no value of its type", f->name);
			pfree(bytes.data);
		}
	}
	return s;
}

/*
 * kl_avro_node_type_name
 *		A type's name as errors and union branches say it.
 */
static const char *
kl_avro_node_type_name(const KlAvroNode *n)
{
	if (n->fullname)
		return n->fullname;
	return kl_avro_type_names[n->type];
}

/*
 * kl_avro_schema_type_name
 *		The type of a schema's top: a named type's full name, or "int",
 *		"array", "union", ...
 */
const char *
kl_avro_schema_type_name(const KlAvroSchema *schema)
{
	return kl_avro_node_type_name(schema->root);
}

/* ----------------------------------------------------------------
 * a reader schema as a contract's properties (backend)
 * ----------------------------------------------------------------
 */

/*
 * kl_avro_property
 *		The JSON contract property that admits what the decoder writes for
 *		a value of type n: its JSON type (and null when nullable), and the
 *		format, enum and sql_type that make its column the SQL type the
 *		Avro type means (docs/contracts.md, "Avro").
 */
static void
kl_avro_property(StringInfo out, const KlAvroNode *n, bool nullable)
{
	const char *type = NULL;
	const char *format = NULL;
	const char *sql_type = NULL;
	char		decimal[64];

	/* ["null", T] and [T, "null"] are T, nullable */
	if (n->type == KL_AVRO_UNION && n->nbranches == 2 &&
		(n->branches[0]->type == KL_AVRO_NULL) != (n->branches[1]->type == KL_AVRO_NULL))
	{
		kl_avro_property(out, n->branches[n->branches[0]->type == KL_AVRO_NULL ? 1 : 0], true);
		return;
	}
	switch (n->type)
	{
		case KL_AVRO_NULL:
			appendStringInfoString(out, "{\"type\": \"null\", \"sql_type\": \"text\"}");
			return;
		case KL_AVRO_BOOLEAN:
			type = "boolean";
			break;
		case KL_AVRO_INT:
		case KL_AVRO_LONG:
			if (n->logical == KL_AVRO_LT_DATE)
				type = "string", format = "date";
			else if (n->logical == KL_AVRO_LT_TIME_MILLIS || n->logical == KL_AVRO_LT_TIME_MICROS)
				type = "string", sql_type = "time without time zone";
			else if (n->logical == KL_AVRO_LT_TIMESTAMP_MILLIS ||
					 n->logical == KL_AVRO_LT_TIMESTAMP_MICROS)
				type = "string", format = "date-time";
			else if (n->logical == KL_AVRO_LT_LOCAL_TIMESTAMP_MILLIS ||
					 n->logical == KL_AVRO_LT_LOCAL_TIMESTAMP_MICROS)
				type = "string", sql_type = "timestamp without time zone";
			else
				type = "integer", sql_type = n->type == KL_AVRO_INT ? "integer" : "bigint";
			break;
		case KL_AVRO_FLOAT:
		case KL_AVRO_DOUBLE:
			type = "number", sql_type = "double precision";
			break;
		case KL_AVRO_BYTES:
		case KL_AVRO_FIXED:
			if (n->logical == KL_AVRO_LT_DECIMAL)
			{
				snprintf(decimal, sizeof(decimal), "numeric(%d,%d)", n->precision, n->scale);
				type = "number", sql_type = n->precision <= 1000 ? decimal : "numeric";
			}
			else if (n->logical == KL_AVRO_LT_UUID)
				type = "string", sql_type = "uuid";
			else
				type = "string";
			break;
		case KL_AVRO_STRING:
			type = "string";
			if (n->logical == KL_AVRO_LT_UUID)
				sql_type = "uuid";
			break;
		case KL_AVRO_ENUM:
			appendStringInfoString(out, "{\"type\": ");
			appendStringInfoString(out, nullable ? "[\"string\", \"null\"]" : "\"string\"");
			appendStringInfoString(out, ", \"enum\": [");
			for (int i = 0; i < n->nsymbols; i++)
			{
				if (i > 0)
					appendStringInfoString(out, ", ");
				kl_json_append_string(out, n->symbols[i], strlen(n->symbols[i]));
			}
			if (nullable)
				appendStringInfoString(out, ", null");
			appendStringInfoString(out, "]}");
			return;
		case KL_AVRO_ARRAY:
			type = "array", sql_type = "jsonb";
			break;
		case KL_AVRO_RECORD:
		case KL_AVRO_MAP:
		case KL_AVRO_UNION:
			type = "object", sql_type = "jsonb";
			/* a union's null branch is written as null */
			if (n->type == KL_AVRO_UNION)
			{
				for (int i = 0; i < n->nbranches; i++)
					if (n->branches[i]->type == KL_AVRO_NULL)
						nullable = true;
			}
			break;
	}
	if (nullable)
		appendStringInfo(out, "{\"type\": [\"%s\", \"null\"]", type);
	else
		appendStringInfo(out, "{\"type\": \"%s\"", type);
	if (format)
		appendStringInfo(out, ", \"format\": \"%s\"", format);
	if (sql_type)
		appendStringInfo(out, ", \"sql_type\": \"%s\"", sql_type);
	appendStringInfoChar(out, '}');
}

/*
 * kl_avro_schema_properties
 *		A record schema's fields as a JSON contract's members "properties"
 *		and "required" (every reader field is in every decoded datum, so
 *		each is required; a nullable one admits null), without the braces
 *		around them.  normalize_of(field) gives a field's "normalize" list
 *		as JSON text, or NULL.  ERROR 42P17 when the schema is no record.
 */
void
kl_avro_schema_properties(const KlAvroSchema *schema, StringInfo out,
						  const char *(*normalize_of) (const char *field, void *arg),
						  void *arg)
{
	const KlAvroNode *root = schema->root;

	if (root->type != KL_AVRO_RECORD)
		kl_avro_schema_fail("$", "An Avro contract reads records: {\"type\": \"record\", \"name\": \"order\", \"fields\": [...]}.",
							"a contract's schema must be a record, not %s",
							kl_avro_node_type_name(root));
	appendStringInfoString(out, "\"properties\": {");
	for (int i = 0; i < root->nfields; i++)
	{
		const KlAvroField *f = &root->fields[i];
		const char *norm = normalize_of ? normalize_of(f->name, arg) : NULL;

		if (i > 0)
			appendStringInfoString(out, ", ");
		kl_json_append_string(out, f->name, strlen(f->name));
		appendStringInfoString(out, ": ");
		if (norm != NULL)
		{
			/* splice "normalize" into the property's object */
			StringInfoData prop;

			initStringInfo(&prop);
			kl_avro_property(&prop, f->type, false);
			prop.data[--prop.len] = '\0';
			appendStringInfo(out, "%s, \"normalize\": %s}", prop.data, norm);
		}
		else
			kl_avro_property(out, f->type, false);
	}
	appendStringInfoString(out, "}, \"required\": [");
	for (int i = 0; i < root->nfields; i++)
	{
		if (i > 0)
			appendStringInfoString(out, ", ");
		kl_json_append_string(out, root->fields[i].name, strlen(root->fields[i].name));
	}
	appendStringInfoChar(out, ']');
}

/* ----------------------------------------------------------------
 * resolution (backend)
 * ----------------------------------------------------------------
 */

typedef struct KlAvroMemo
{
	const KlAvroNode *w;
	const KlAvroNode *r;
	KlAvroProg *prog;
} KlAvroMemo;

typedef struct KlAvroResolve
{
	List	   *memo;			/* KlAvroMemo *: named pairs resolved */
	char	   *error;			/* why the last pair could not be */
} KlAvroResolve;

static KlAvroProg *kl_avro_resolve_node(KlAvroResolve *cx, const KlAvroNode *w,
										const KlAvroNode *r, const char *path);

/*
 * kl_avro_unresolvable
 *		Set why a pair does not resolve; returns NULL.
 */
static KlAvroProg *kl_avro_unresolvable(KlAvroResolve *cx, const char *path, const char *fmt,...) pg_attribute_printf(3, 4);

static KlAvroProg *
kl_avro_unresolvable(KlAvroResolve *cx, const char *path, const char *fmt,...)
{
	StringInfoData msg;

	initStringInfo(&msg);
	if (path && *path)
		appendStringInfo(&msg, "field \"%s\": ", path);
	{
		va_list		args;

		va_start(args, fmt);
		kl_avro_append_va(&msg, fmt, args);
		va_end(args);
	}
	cx->error = msg.data;
	return NULL;
}

/*
 * kl_avro_escaped
 *		s as a JSON string (escaped), followed by suffix.
 */
static char *
kl_avro_escaped(const char *s, const char *suffix, size_t *len)
{
	StringInfoData buf;

	initStringInfo(&buf);
	kl_json_append_string(&buf, s, strlen(s));
	appendStringInfoString(&buf, suffix);
	*len = buf.len;
	return buf.data;
}

/*
 * kl_avro_names_match
 *		Do a writer's and a reader's named types match: the same full or
 *		unqualified name, or the writer's name among the reader's aliases?
 */
static bool
kl_avro_names_match(const KlAvroNode *w, const KlAvroNode *r)
{
	if (strcmp(w->fullname, r->fullname) == 0 || strcmp(w->name, r->name) == 0)
		return true;
	for (int i = 0; i < r->naliases; i++)
	{
		const char *dot = strrchr(r->aliases[i], '.');

		if (strcmp(r->aliases[i], w->fullname) == 0 || strcmp(dot ? dot + 1 : r->aliases[i], w->name) == 0)
			return true;
	}
	return false;
}

/*
 * kl_avro_emit_of
 *		How a value of the reader's primitive or fixed type is written.
 */
static KlAvroEmit
kl_avro_emit_of(const KlAvroNode *r)
{
	switch (r->logical)
	{
		case KL_AVRO_LT_DECIMAL:
			return KL_EMIT_DECIMAL;
		case KL_AVRO_LT_UUID:
			return r->type == KL_AVRO_FIXED ? KL_EMIT_UUID_FIXED : KL_EMIT_STRING;
		case KL_AVRO_LT_DATE:
			return KL_EMIT_DATE;
		case KL_AVRO_LT_TIME_MILLIS:
			return KL_EMIT_TIME_MILLIS;
		case KL_AVRO_LT_TIME_MICROS:
			return KL_EMIT_TIME_MICROS;
		case KL_AVRO_LT_TIMESTAMP_MILLIS:
			return KL_EMIT_TIMESTAMP_MILLIS;
		case KL_AVRO_LT_TIMESTAMP_MICROS:
			return KL_EMIT_TIMESTAMP_MICROS;
		case KL_AVRO_LT_LOCAL_TIMESTAMP_MILLIS:
			return KL_EMIT_LOCAL_TIMESTAMP_MILLIS;
		case KL_AVRO_LT_LOCAL_TIMESTAMP_MICROS:
			return KL_EMIT_LOCAL_TIMESTAMP_MICROS;
		case KL_AVRO_LT_NONE:
			break;
	}
	switch (r->type)
	{
		case KL_AVRO_NULL:
			return KL_EMIT_NULL;
		case KL_AVRO_BOOLEAN:
			return KL_EMIT_BOOLEAN;
		case KL_AVRO_INT:
		case KL_AVRO_LONG:
			return KL_EMIT_INTEGER;
		case KL_AVRO_FLOAT:
			return KL_EMIT_FLOAT;
		case KL_AVRO_DOUBLE:
			return KL_EMIT_DOUBLE;
		case KL_AVRO_STRING:
			return KL_EMIT_STRING;
		default:
			return KL_EMIT_BASE64;
	}
}

/*
 * kl_avro_promotes
 *		Can a value of the writer's primitive type be read as the reader's
 *		(the same type, or one of the specification's promotions)?
 */
static bool
kl_avro_promotes(KlAvroType w, KlAvroType r)
{
	if (w == r)
		return true;
	switch (w)
	{
		case KL_AVRO_INT:
			return r == KL_AVRO_LONG || r == KL_AVRO_FLOAT || r == KL_AVRO_DOUBLE;
		case KL_AVRO_LONG:
			return r == KL_AVRO_FLOAT || r == KL_AVRO_DOUBLE;
		case KL_AVRO_FLOAT:
			return r == KL_AVRO_DOUBLE;
		case KL_AVRO_STRING:
			return r == KL_AVRO_BYTES;
		case KL_AVRO_BYTES:
			return r == KL_AVRO_STRING;
		default:
			return false;
	}
}

/*
 * kl_avro_union_branch
 *		The reader union's branch a writer's (non-union) type resolves to:
 *		the first of the same type (and name), else the first the writer's
 *		type promotes to, else -1.
 */
static int
kl_avro_union_branch(const KlAvroNode *w, const KlAvroNode *r)
{
	for (int i = 0; i < r->nbranches; i++)
	{
		const KlAvroNode *b = r->branches[i];

		if (b->type != w->type)
			continue;
		if (w->fullname == NULL || kl_avro_names_match(w, b))
			return i;
	}
	for (int i = 0; i < r->nbranches; i++)
	{
		const KlAvroNode *b = r->branches[i];

		if (w->type <= KL_AVRO_STRING && b->type <= KL_AVRO_STRING && kl_avro_promotes(w->type, b->type))
			return i;
	}
	return -1;
}

/*
 * kl_avro_default_text
 *		A reader field's default as the decoder writes it: encoded by the
 *		field's type and decoded by the decoder.
 */
static char *
kl_avro_default_text(KlAvroResolve *cx, const KlAvroField *f, const char *path, size_t *len)
{
	StringInfoData bytes;
	KlAvroProgram program;
	KlAvroOut	out = {0};
	KlAvroError err;
	char	   *text;

	initStringInfo(&bytes);
	if (!kl_avro_encode(f->type, f->default_value, &bytes))
		elog(ERROR, "the default of Avro field \"%s\" does not encode", path);
	program.root = kl_avro_resolve_node(cx, f->type, f->type, path);
	if (program.root == NULL)
		elog(ERROR, "Avro field \"%s\" does not resolve with itself: %s", path, cx->error);
	if (!kl_avro_decode(&program, (const uint8 *) bytes.data, bytes.len, &out, &err))
	{
		kl_avro_out_free(&out);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("invalid Avro schema: the default of field \"%s\" does not decode: %s",
						path, kl_avro_error_message(&err))));
	}
	text = pnstrdup(out.data, out.len);
	*len = out.len;
	kl_avro_out_free(&out);
	return text;
}

/*
 * kl_avro_resolve_record
 *		A writer's record read as a reader's: fields by name (or the
 *		reader's aliases), the writer's others skipped, the reader's others
 *		from their defaults.
 */
static KlAvroProg *
kl_avro_resolve_record(KlAvroResolve *cx, KlAvroProg *prog, const KlAvroNode *w,
					   const KlAvroNode *r, const char *path)
{
	int		   *matched = palloc(sizeof(int) * Max(r->nfields, 1));
	KlAvroStep *wsteps = palloc0(sizeof(KlAvroStep) * Max(w->nfields, 1));
	int			last = -1;
	bool		ordered = true;

	prog->nreader = r->nfields;
	prog->keys = palloc(sizeof(char *) * Max(r->nfields, 1));
	prog->keylens = palloc(sizeof(size_t) * Max(r->nfields, 1));
	prog->defaults = palloc0(sizeof(char *) * Max(r->nfields, 1));
	prog->defaultlens = palloc0(sizeof(size_t) * Max(r->nfields, 1));
	for (int k = 0; k < r->nfields; k++)
	{
		prog->keys[k] = kl_avro_escaped(r->fields[k].name, ": ", &prog->keylens[k]);
		matched[k] = -1;
	}

	for (int i = 0; i < w->nfields; i++)
	{
		const KlAvroField *wf = &w->fields[i];
		KlAvroStep *st = &wsteps[i];
		int			found = -1;
		char	   *fpath = *path ? psprintf("%s.%s", path, wf->name) : pstrdup(wf->name);

		for (int k = 0; k < r->nfields && found < 0; k++)
		{
			if (strcmp(r->fields[k].name, wf->name) == 0)
				found = k;
		}
		for (int k = 0; k < r->nfields && found < 0; k++)
		{
			for (int a = 0; a < r->fields[k].naliases; a++)
			{
				if (strcmp(r->fields[k].aliases[a], wf->name) == 0 && matched[k] < 0)
					found = k;
			}
		}
		st->name = psprintf(".%s", wf->name);
		st->namelen = strlen(st->name);
		if (found < 0 || matched[found] >= 0)
		{
			st->kind = KL_STEP_SKIP;
			st->skip = wf->type;
			continue;
		}
		matched[found] = i;
		st->kind = KL_STEP_VALUE;
		st->reader_index = found;
		st->prog = kl_avro_resolve_node(cx, wf->type, r->fields[found].type, fpath);
		if (st->prog == NULL)
			return NULL;
		if (found < last)
			ordered = false;
		last = found;
	}
	for (int k = 0; k < r->nfields; k++)
	{
		const KlAvroField *rf = &r->fields[k];
		char	   *fpath = *path ? psprintf("%s.%s", path, rf->name) : pstrdup(rf->name);

		if (matched[k] >= 0)
			continue;
		if (rf->default_value == NULL)
			return kl_avro_unresolvable(cx, fpath, "the reader's field has no default and the writer's record \"%s\" has no field \"%s\"",
										w->fullname, rf->name);
		prog->defaults[k] = kl_avro_default_text(cx, rf, fpath, &prog->defaultlens[k]);
	}

	prog->ordered = ordered;
	if (!ordered)
	{
		prog->steps = wsteps;
		prog->nsteps = w->nfields;
	}
	else
	{
		/* the writer's steps with the defaults where the reader has them */
		int			next = 0;

		prog->steps = palloc0(sizeof(KlAvroStep) * (w->nfields + r->nfields + 1));
		for (int i = 0; i <= w->nfields; i++)
		{
			int			upto = (i < w->nfields && wsteps[i].kind == KL_STEP_VALUE) ?
				wsteps[i].reader_index : (i == w->nfields ? r->nfields : -1);

			for (; upto >= 0 && next < upto; next++)
			{
				if (prog->defaults[next])
				{
					KlAvroStep *d = &prog->steps[prog->nsteps++];

					d->kind = KL_STEP_DEFAULT;
					d->reader_index = next;
				}
			}
			if (i < w->nfields)
			{
				prog->steps[prog->nsteps++] = wsteps[i];
				if (wsteps[i].kind == KL_STEP_VALUE)
					next = wsteps[i].reader_index + 1;
			}
		}
	}
	return prog;
}

/*
 * kl_avro_resolve_node
 *		The program that reads a value of the writer's type w as the
 *		reader's type r; NULL with cx->error when there is none.
 */
static KlAvroProg *
kl_avro_resolve_node(KlAvroResolve *cx, const KlAvroNode *w, const KlAvroNode *r, const char *path)
{
	KlAvroProg *prog;

	check_stack_depth();

	/* a writer's union: a program per branch, or why the branch cannot be read */
	if (w->type == KL_AVRO_UNION)
	{
		int			good = 0;
		char	   *first_error = NULL;

		prog = palloc0(sizeof(KlAvroProg));
		prog->emit = KL_EMIT_UNION;
		prog->read = KL_AVRO_UNION;
		prog->nbranches = w->nbranches;
		prog->branches = palloc0(sizeof(KlAvroProg *) * Max(w->nbranches, 1));
		for (int i = 0; i < w->nbranches; i++)
		{
			KlAvroProg *b;

			cx->error = NULL;
			b = kl_avro_resolve_node(cx, w->branches[i], r, path);
			if (b == NULL)
			{
				b = palloc0(sizeof(KlAvroProg));
				b->emit = KL_EMIT_FAIL;
				b->fail = psprintf("the writer's union branch \"%s\" cannot be read as the reader's type (%s)",
								   kl_avro_node_type_name(w->branches[i]), cx->error);
				if (first_error == NULL)
					first_error = cx->error;
			}
			else
				good++;
			prog->branches[i] = b;
		}
		cx->error = NULL;
		if (good == 0)
			return w->nbranches == 0 ?
				kl_avro_unresolvable(cx, path, "the writer's union has no branch") :
				kl_avro_unresolvable(cx, NULL, "no branch of the writer's union can be read as the reader's type: %s", first_error);
		return prog;
	}

	/* a reader's union: the branch the writer's type resolves to */
	if (r->type == KL_AVRO_UNION)
	{
		int			j = kl_avro_union_branch(w, r);
		const KlAvroNode *b;
		KlAvroProg *inner;
		bool		nullable;

		if (j < 0)
			return kl_avro_unresolvable(cx, path, "the reader's union has no branch for the writer's \"%s\"",
										kl_avro_node_type_name(w));
		b = r->branches[j];
		inner = kl_avro_resolve_node(cx, w, b, path);
		if (inner == NULL)
			return NULL;
		nullable = r->nbranches == 2 &&
			(r->branches[0]->type == KL_AVRO_NULL || r->branches[1]->type == KL_AVRO_NULL);
		if (nullable || b->type == KL_AVRO_NULL)
			return inner;
		prog = palloc0(sizeof(KlAvroProg));
		prog->emit = KL_EMIT_WRAP;
		prog->items = inner;
		prog->wrap = psprintf("{%s", kl_avro_escaped(kl_avro_node_type_name(b), ": ", &prog->wraplen));
		prog->wraplen++;
		return prog;
	}

	if (w->type <= KL_AVRO_STRING || r->type <= KL_AVRO_STRING)
	{
		if (w->type > KL_AVRO_STRING || r->type > KL_AVRO_STRING || !kl_avro_promotes(w->type, r->type))
			return kl_avro_unresolvable(cx, path, "the writer's \"%s\" cannot be read as the reader's \"%s\"",
										kl_avro_node_type_name(w), kl_avro_node_type_name(r));
		if (w->logical == KL_AVRO_LT_DECIMAL && r->logical == KL_AVRO_LT_DECIMAL && w->scale != r->scale)
			return kl_avro_unresolvable(cx, path, "the writer's decimal has scale %d and the reader's scale %d",
										w->scale, r->scale);
		prog = palloc0(sizeof(KlAvroProg));
		prog->read = w->type;
		prog->emit = kl_avro_emit_of(r);
		prog->precision = r->precision;
		prog->scale = r->scale;
		return prog;
	}

	if (w->type != r->type)
		return kl_avro_unresolvable(cx, path, "the writer's \"%s\" cannot be read as the reader's \"%s\"",
									kl_avro_node_type_name(w), kl_avro_node_type_name(r));

	if (w->type == KL_AVRO_ARRAY || w->type == KL_AVRO_MAP)
	{
		prog = palloc0(sizeof(KlAvroProg));
		prog->read = w->type;
		prog->emit = w->type == KL_AVRO_ARRAY ? KL_EMIT_ARRAY : KL_EMIT_MAP;
		prog->item_min_bytes = Max(w->items->min_bytes, 0);
		prog->items = kl_avro_resolve_node(cx, w->items, r->items, psprintf("%s[]", path));
		return prog->items ? prog : NULL;
	}

	/* named types */
	if (!kl_avro_names_match(w, r))
		return kl_avro_unresolvable(cx, path, "the writer's %s \"%s\" and the reader's \"%s\" have different names (and no alias of the reader's is the writer's name)",
									kl_avro_type_names[w->type], w->fullname, r->fullname);
	if (w->type == KL_AVRO_FIXED)
	{
		if (w->size != r->size)
			return kl_avro_unresolvable(cx, path, "the writer's fixed \"%s\" has %d bytes and the reader's %d",
										w->fullname, w->size, r->size);
		if (w->logical == KL_AVRO_LT_DECIMAL && r->logical == KL_AVRO_LT_DECIMAL && w->scale != r->scale)
			return kl_avro_unresolvable(cx, path, "the writer's decimal has scale %d and the reader's scale %d",
										w->scale, r->scale);
		prog = palloc0(sizeof(KlAvroProg));
		prog->read = KL_AVRO_FIXED;
		prog->size = w->size;
		prog->emit = kl_avro_emit_of(r);
		prog->precision = r->precision;
		prog->scale = r->scale;
		return prog;
	}
	if (w->type == KL_AVRO_ENUM)
	{
		prog = palloc0(sizeof(KlAvroProg));
		prog->read = KL_AVRO_ENUM;
		prog->emit = KL_EMIT_ENUM;
		prog->nsymbols = w->nsymbols;
		prog->symbols = palloc0(sizeof(char *) * Max(w->nsymbols, 1));
		prog->symlens = palloc0(sizeof(size_t) * Max(w->nsymbols, 1));
		for (int i = 0; i < w->nsymbols; i++)
		{
			int			found = r->default_symbol;

			for (int k = 0; k < r->nsymbols; k++)
			{
				if (strcmp(w->symbols[i], r->symbols[k]) == 0)
				{
					found = k;
					break;
				}
			}
			if (found >= 0)
				prog->symbols[i] = kl_avro_escaped(r->symbols[found], "", &prog->symlens[i]);
		}
		return prog;
	}

	/* a record: once per pair, so that recursive types end */
	{
		ListCell   *lc;
		KlAvroMemo *m;

		foreach(lc, cx->memo)
		{
			m = lfirst(lc);
			if (m->w == w && m->r == r)
			{
				if (m->prog->emit == KL_EMIT_FAIL)
					return kl_avro_unresolvable(cx, NULL, "%s", m->prog->fail);
				return m->prog;
			}
		}
		prog = palloc0(sizeof(KlAvroProg));
		prog->read = KL_AVRO_RECORD;
		prog->emit = KL_EMIT_RECORD;
		m = palloc(sizeof(KlAvroMemo));
		m->w = w;
		m->r = r;
		m->prog = prog;
		cx->memo = lappend(cx->memo, m);
		if (kl_avro_resolve_record(cx, prog, w, r, path) == NULL)
		{
			prog->emit = KL_EMIT_FAIL;
			prog->fail = cx->error;
			return NULL;
		}
		return prog;
	}
}

/*
 * kl_avro_resolve
 *		The program that decodes data written with the writer's schema as
 *		the reader's datum (the same schema twice: the writer's datum), in
 *		the current memory context.  Returns NULL and *error (palloc'd)
 *		when the pair is unresolvable, naming the field: a reader field
 *		without default that the writer lacks, types that neither match nor
 *		promote, named types of other names, fixed of other sizes.  A
 *		writer's union branch or enum symbol the reader cannot read is an
 *		error only when a datum has it (at decode).
 */
KlAvroProgram *
kl_avro_resolve(const KlAvroSchema *writer, const KlAvroSchema *reader, char **error)
{
	KlAvroResolve cx = {NIL, NULL};
	KlAvroProgram *program = palloc0(sizeof(KlAvroProgram));

	program->root = kl_avro_resolve_node(&cx, writer->root, reader->root, "");
	if (program->root == NULL)
	{
		*error = cx.error;
		return NULL;
	}
	*error = NULL;
	return program;
}

/* ----------------------------------------------------------------
 * SQL functions
 * ----------------------------------------------------------------
 */

/* kafka_lake.avro_decode's compiled pair, kept across calls in fn_extra */
typedef struct KlAvroCache
{
	MemoryContext cxt;			/* holds everything below */
	text	   *writer;			/* the schemas' texts */
	text	   *reader;			/* NULL: the writer's */
	KlAvroProgram *program;
} KlAvroCache;

/*
 * kl_avro_same_text
 *		Are two texts (either may be NULL) the same bytes?
 */
static bool
kl_avro_same_text(const text *a, const text *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

/*
 * kl_avro_cached_program
 *		The program of (writer, reader), compiled once per query for the
 *		schemas a call site keeps passing.
 */
static KlAvroProgram *
kl_avro_cached_program(FunctionCallInfo fcinfo, text *writer, text *reader)
{
	KlAvroCache *cache = fcinfo->flinfo->fn_extra;
	MemoryContext old;
	KlAvroSchema *ws;
	KlAvroSchema *rs;
	char	   *error;

	if (cache && kl_avro_same_text(cache->writer, writer) && kl_avro_same_text(cache->reader, reader))
		return cache->program;
	if (cache == NULL)
	{
		cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(KlAvroCache));
		cache->cxt = AllocSetContextCreate(fcinfo->flinfo->fn_mcxt, "kafka_lake avro_decode",
										   ALLOCSET_SMALL_SIZES);
		fcinfo->flinfo->fn_extra = cache;
	}
	MemoryContextReset(cache->cxt);
	cache->program = NULL;
	cache->writer = cache->reader = NULL;
	old = MemoryContextSwitchTo(cache->cxt);
	ws = kl_avro_schema_parse(VARDATA_ANY(writer), VARSIZE_ANY_EXHDR(writer));
	rs = reader ? kl_avro_schema_parse(VARDATA_ANY(reader), VARSIZE_ANY_EXHDR(reader)) : ws;
	cache->program = kl_avro_resolve(ws, rs, &error);
	if (cache->program == NULL)
	{
		MemoryContextSwitchTo(old);
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("data written with the Avro writer schema cannot be read with the reader schema"),
				 errdetail("%s.", error),
				 errhint("Schema resolution follows the Avro specification: a reader field the writer lacks needs a default, and types must match or promote (int to long, float or double; long to float or double; float to double; string and bytes).")));
	}
	cache->writer = (text *) PG_DETOAST_DATUM_COPY(PointerGetDatum(writer));
	cache->reader = reader ? (text *) PG_DETOAST_DATUM_COPY(PointerGetDatum(reader)) : NULL;
	MemoryContextSwitchTo(old);
	return cache->program;
}

/*
 * kafka_lake_avro_decode
 *		kafka_lake.avro_decode(value bytea, writer_schema json,
 *		reader_schema json DEFAULT NULL) RETURNS json: one Avro datum (no
 *		framing: see avro_frame) as the reader's datum in JSON.  A NULL
 *		value or writer schema gives NULL; a NULL reader schema means the
 *		writer's.  ERROR 22P02 when the bytes do not decode (the field and
 *		the byte offset in the detail), 42P17 for a bad schema, 42804 for
 *		an unresolvable pair.
 */
Datum
kafka_lake_avro_decode(PG_FUNCTION_ARGS)
{
	bytea	   *value;
	text	   *writer;
	text	   *reader;
	KlAvroProgram *program;
	KlAvroOut	out = {0};
	KlAvroError err;
	text	   *result;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_NULL();
	value = PG_GETARG_BYTEA_PP(0);
	writer = PG_GETARG_TEXT_PP(1);
	reader = PG_ARGISNULL(2) ? NULL : PG_GETARG_TEXT_PP(2);
	program = kl_avro_cached_program(fcinfo, writer, reader);
	if (!kl_avro_decode(program, (const uint8 *) VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value), &out, &err))
	{
		kl_avro_out_free(&out);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("Avro value does not decode with its writer schema"),
				 errdetail("%s.", kl_avro_error_message(&err)),
				 errhint("The value is one Avro datum without framing; a Confluent-framed Kafka value goes through kafka_lake.avro_frame() first.")));
	}
	result = cstring_to_text_with_len(out.data, out.len);
	kl_avro_out_free(&out);
	PG_RETURN_TEXT_P(result);
}

/*
 * kafka_lake_avro_frame
 *		kafka_lake.avro_frame(value bytea, OUT schema_id bigint, OUT
 *		schema_guid uuid, OUT payload bytea): a Kafka value in Confluent's
 *		wire format split into its schema id (magic byte 0) or GUID (magic
 *		byte 1) and its datum.  ERROR 22P02 for any other first byte.
 */
Datum
kafka_lake_avro_frame(PG_FUNCTION_ARGS)
{
	bytea	   *value = PG_GETARG_BYTEA_PP(0);
	KlAvroWire	wire;
	const char *why;
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	bytea	   *payload;

	why = kl_avro_wire_parse((const uint8 *) VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value), &wire);
	if (why)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("value is not in Confluent's wire format"),
				 errdetail("%s%s.", why,
						   VARSIZE_ANY_EXHDR(value) > 0 && wire.magic > 1 ?
						   psprintf(" (it starts with byte %d)", wire.magic) : ""),
				 errhint("A Confluent-framed value is magic byte 0, a 4-byte schema id and the Avro datum, or magic byte 1, a 16-byte schema GUID and the datum.")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	if (wire.magic == 0)
	{
		values[0] = Int64GetDatum(wire.schema_id);
		nulls[1] = true;
	}
	else
	{
		pg_uuid_t  *u = palloc(sizeof(pg_uuid_t));

		memcpy(u->data, wire.guid, 16);
		nulls[0] = true;
		values[1] = UUIDPGetDatum(u);
	}
	payload = palloc(VARHDRSZ + wire.payload_len);
	SET_VARSIZE(payload, VARHDRSZ + wire.payload_len);
	memcpy(VARDATA(payload), wire.payload, wire.payload_len);
	values[2] = PointerGetDatum(payload);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
