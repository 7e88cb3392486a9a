/*-------------------------------------------------------------------------
 *
 * json.h
 *	  The strict JSON reader and the writer helpers (json.c).
 *
 * IDENTIFICATION
 *	  src/base/json.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_JSON_H
#define KAFKA_LAKE_JSON_H

#include "lib/stringinfo.h"

#include "base/digest.h"

#define KL_JSON_MAX_DEPTH		64

/* the most bytes kl_json_escape_to writes for len bytes (\u001f for each) */
#define KL_JSON_ESCAPED_MAX(len)	((len) * 6 + 2)

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
extern size_t kl_json_decode_to(const KlJsonValue *s, char *out);
extern size_t kl_json_escape_to(char *out, const char *s, size_t len);
extern void kl_json_append_string(StringInfo out, const char *s, size_t len);
extern void kl_json_append_int64(StringInfo out, int64 v);
extern int	kl_json_format_int64(char *buf, int64 v);
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

#endif							/* KAFKA_LAKE_JSON_H */
