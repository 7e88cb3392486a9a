/*-------------------------------------------------------------------------
 *
 * contract.c
 *	  The event contract machine_event_v1: validation and normalisation of
 *	  one record value, and the normalised event's JSON form.
 *
 * The contract (SPEC section 7): a JSON object with exactly these fields,
 *
 *	event_id		non-empty string
 *	schema_version	the integer 1
 *	event_time		ISO-8601 timestamp with a zone (Z or +hh:mm)
 *	business_date	ISO date (YYYY-MM-DD), a real calendar day
 *	plant_id, line_id, work_order_id, machine_id, product_code, operation
 *					non-empty strings; operation one of assembly, inspection,
 *					packaging, welding, machining, calibration
 *	units_produced	integer >= 0
 *	defect_count	integer, 0 <= defect_count <= units_produced
 *	cycle_time_ms	integer > 0
 *
 * Strings are trimmed of ASCII whitespace; the six identifiers are
 * lower-cased (ASCII).  Booleans and numbers with a fraction or an exponent
 * are not integers.  A value larger than KL_CONTRACT_MAX_VALUE_BYTES is
 * refused before it is parsed: a machine event is a few hundred bytes, and a
 * megabyte value is a producer bug that must not bloat the accepted set.
 *
 * Every violation yields one short, stable reason (the first one found, in
 * a fixed order), which is what quarantine.jsonl and the manifest record as
 * validation_error.
 *
 * IDENTIFICATION
 *	  src/contract.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "utils/date.h"
#include "utils/datetime.h"

#include "kafka_lake.h"

/* field numbers, in the order the checks report missing fields */
enum
{
	F_EVENT_ID,
	F_SCHEMA_VERSION,
	F_EVENT_TIME,
	F_BUSINESS_DATE,
	F_PLANT_ID,
	F_LINE_ID,
	F_WORK_ORDER_ID,
	F_MACHINE_ID,
	F_PRODUCT_CODE,
	F_OPERATION,
	F_UNITS_PRODUCED,
	F_DEFECT_COUNT,
	F_CYCLE_TIME_MS,
	F_COUNT
};

static const char *const kl_field_names[F_COUNT] = {
	"event_id", "schema_version", "event_time", "business_date",
	"plant_id", "line_id", "work_order_id", "machine_id", "product_code",
	"operation", "units_produced", "defect_count", "cycle_time_ms"
};

static const char *const kl_operations[] = {
	"assembly", "inspection", "packaging", "welding", "machining",
	"calibration", NULL
};

/*
 * kl_field_number
 *		Which contract field a key names, or -1.
 */
static int
kl_field_number(const KlJsonValue *key)
{
	const char *name;
	size_t		len;

	if (key->has_escapes)
		return -1;
	name = key->start + 1;
	len = key->len - 2;
	for (int f = 0; f < F_COUNT; f++)
	{
		if (strlen(kl_field_names[f]) == len && memcmp(kl_field_names[f], name, len) == 0)
			return f;
	}
	return -1;
}

/*
 * kl_copy_trimmed
 *		Decode a string value, trim ASCII whitespace, optionally lower-case,
 *		and return a palloc'd NUL-terminated copy (its length in *len).
 */
static char *
kl_copy_trimmed(const KlJsonValue *v, bool lower, int *len)
{
	char	   *s;
	char	   *e;

	/* a decoded string is never longer than its JSON spelling */
	if (v->has_escapes)
	{
		StringInfoData buf;

		buf.data = palloc(v->len);
		buf.maxlen = v->len;
		buf.len = 0;
		buf.cursor = 0;
		kl_json_decode_string(v, &buf);
		buf.data[buf.len] = '\0';
		s = buf.data;
		e = buf.data + buf.len;
	}
	else
	{
		s = palloc(v->len - 1);
		memcpy(s, v->start + 1, v->len - 2);
		e = s + v->len - 2;
	}
	while (s < e && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' ||
					 *s == '\f' || *s == '\v'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' ||
					 e[-1] == '\r' || e[-1] == '\f' || e[-1] == '\v'))
		e--;
	*e = '\0';
	if (lower)
	{
		for (char *c = s; c < e; c++)
		{
			if (*c >= 'A' && *c <= 'Z')
				*c += 'a' - 'A';
		}
	}
	*len = e - s;
	return s;
}

/*
 * kl_digits
 *		Value of n decimal digits at p, or -1.
 */
static int
kl_digits(const char *p, int n)
{
	int			v = 0;

	for (int i = 0; i < n; i++)
	{
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v;
}

/*
 * kl_parse_iso_date
 *		Parse YYYY-MM-DD into a DateADT; false when it is not a real day.
 */
bool
kl_parse_iso_date(const char *s, int len, DateADT *result)
{
	int			y,
				m,
				d;

	if (len != 10 || s[4] != '-' || s[7] != '-')
		return false;
	y = kl_digits(s, 4);
	m = kl_digits(s + 5, 2);
	d = kl_digits(s + 8, 2);
	if (y < 1 || m < 1 || m > 12 || d < 1)
		return false;
	if (d > day_tab[isleap(y)][m - 1])
		return false;
	*result = date2j(y, m, d) - POSTGRES_EPOCH_JDATE;
	return true;
}

/*
 * kl_two_digits
 *		Value of two decimal digits at p, or -1.
 */
static inline int
kl_two_digits(const char *p)
{
	if (p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9')
		return -1;
	return (p[0] - '0') * 10 + (p[1] - '0');
}

/*
 * kl_parse_event_time
 *		The instant an ISO-8601 timestamp with a zone names, or false when it
 *		is not one: YYYY-MM-DD(T|t| )hh:mm[:ss[.fraction]](Z|z|+hh|+hhmm|+hh:mm),
 *		a real date, an offset of at most 15:59 (what PostgreSQL's
 *		timestamptz reads; real zones span -12:00 to +14:00).  This is the
 *		contract's rule for event_time, the bridge's natural key and the
 *		foreign table's fast path to timestamptz.
 *		Fractions are rounded to microseconds the way timestamptz_in rounds
 *		them, so silver holds what a cast of the text would give.
 */
bool
kl_parse_event_time(const char *s, int len, TimestampTz *result)
{
	const char *p = s + 10;
	const char *end = s + len;
	DateADT		day;
	int			hh,
				mi,
				ss = 0;
	int64		usec = 0;
	int64		offset_sec = 0;
	int64		secs;

	if (len < 17 || !kl_parse_iso_date(s, 10, &day))
		return false;
	if (*p != 'T' && *p != 't' && *p != ' ')
		return false;
	p++;
	if (end - p < 5 || p[2] != ':')
		return false;
	hh = kl_two_digits(p);
	mi = kl_two_digits(p + 3);
	if (hh < 0 || hh > 23 || mi < 0 || mi > 59)
		return false;
	p += 5;
	if (p < end && *p == ':')
	{
		if (end - p < 3 || (ss = kl_two_digits(p + 1)) < 0 || ss > 59)
			return false;
		p += 3;
		if (p < end && *p == '.')
		{
			const char *f = ++p;
			int			ndigits;

			while (p < end && *p >= '0' && *p <= '9')
				p++;
			ndigits = p - f;
			if (ndigits == 0 || ndigits > 9)
				return false;
			if (ndigits <= 6)
			{
				for (int i = 0; i < 6; i++)
					usec = usec * 10 + (i < ndigits ? f[i] - '0' : 0);
			}
			else
			{
				char		buf[16];

				buf[0] = '0';
				buf[1] = '.';
				memcpy(buf + 2, f, ndigits);
				buf[2 + ndigits] = '\0';
				usec = (int64) rint(strtod(buf, NULL) * 1000000.0);
			}
		}
	}
	if (p >= end)
		return false;
	if ((*p == 'Z' || *p == 'z') && p + 1 == end)
		offset_sec = 0;
	else if (*p == '+' || *p == '-')
	{
		int			sign = (*p == '-') ? -1 : 1;
		int			oh,
					om = 0;

		p++;
		if (end - p == 2)
			oh = kl_two_digits(p);
		else if (end - p == 4)
		{
			oh = kl_two_digits(p);
			om = kl_two_digits(p + 2);
		}
		else if (end - p == 5 && p[2] == ':')
		{
			oh = kl_two_digits(p);
			om = kl_two_digits(p + 3);
		}
		else
			return false;
		/* PostgreSQL's timestamptz takes offsets up to 15:59 */
		if (oh < 0 || oh > 15 || om < 0 || om > 59)
			return false;
		offset_sec = sign * (oh * 3600 + om * 60);
	}
	else
		return false;

	secs = (int64) day * SECS_PER_DAY + hh * 3600 + mi * 60 + ss - offset_sec;
	*result = secs * USECS_PER_SEC + usec;
	return IS_VALID_TIMESTAMP(*result);
}

/*
 * kl_valid_iso_timestamptz
 *		Is s an ISO-8601 timestamp with a zone (see kl_parse_event_time)?
 */
bool
kl_valid_iso_timestamptz(const char *s, int len)
{
	TimestampTz t;

	return kl_parse_event_time(s, len, &t);
}

/*
 * kl_json_type_word
 *		How a violation names the JSON type that was found.
 */
static const char *
kl_json_type_word(const KlJsonValue *v)
{
	switch (v->type)
	{
		case KL_JSON_NULL:
			return "null";
		case KL_JSON_TRUE:
		case KL_JSON_FALSE:
			return "a boolean";
		case KL_JSON_NUMBER:
			return v->is_integer ? "an integer" : "a number with a fraction or exponent";
		case KL_JSON_STRING:
			return "a string";
		case KL_JSON_ARRAY:
			return "an array";
		case KL_JSON_OBJECT:
			return "an object";
	}
	return "a value";
}

/*
 * kl_invalid_json
 *		The reason for a value the JSON reader refused: a NUL byte or invalid
 *		UTF-8 said as such, anything else with the reader's message.
 */
static const char *
kl_invalid_json(const char *value, size_t len, const char *error, const char *at)
{
	if (memchr(value, '\0', len) != NULL)
		return "value contains a NUL byte";
	if (!kl_utf8_valid(value, len))
		return "value is not valid UTF-8";
	return psprintf("invalid JSON: %s at byte %d", error, (int) (at - value));
}

/*
 * kl_contract_validate
 *		Check one record value against machine_event_v1.  Returns NULL and
 *		fills *ev when the value is a valid event; otherwise returns the
 *		reason (palloc'd or static text).
 */
const char *
kl_contract_validate(const char *value, size_t len, KlEvent *ev)
{
	KlJsonReader it;
	KlJsonValue key;
	KlJsonValue val;
	KlJsonValue fields[F_COUNT];
	bool		seen[F_COUNT] = {0};
	int64		ints[F_COUNT] = {0};
	const char *deferred = NULL;

	if (value == NULL)
		return "null value (tombstone)";
	if (len == 0)
		return "empty value";
	if (len > KL_CONTRACT_MAX_VALUE_BYTES)
		return psprintf("value of %zu bytes exceeds the contract limit of %d bytes",
						len, KL_CONTRACT_MAX_VALUE_BYTES);
	/*
	 * NUL bytes and invalid UTF-8 are invalid JSON too (the reader checks
	 * every byte); they are looked for only once parsing failed, to say so.
	 */
	kl_json_object_open(&it, value, value + len, KL_JSON_MAX_DEPTH);
	if (it.error)
	{
		KlJsonReader doc;
		KlJsonValue top;

		/* say what it is, if it is JSON at all */
		kl_json_init(&doc, value, len, KL_JSON_MAX_DEPTH);
		if (!kl_json_parse_document(&doc, &top))
			return kl_invalid_json(value, len, doc.error, doc.p);
		return psprintf("value is %s, not a JSON object", kl_json_type_word(&top));
	}

	while (kl_json_object_next(&it, &key, &val))
	{
		int			f = kl_field_number(&key);

		if (f < 0)
		{
			StringInfoData name;

			initStringInfo(&name);
			kl_json_decode_string(&key, &name);
			/* keep going to report invalid JSON before an unknown field */
			if (deferred == NULL)
				deferred = psprintf("unknown field \"%s\"",
												kl_utf8_valid(name.data, name.len) ? name.data : "?");
			continue;
		}
		if (seen[f] && deferred == NULL)
			deferred = psprintf("duplicate field \"%s\"", kl_field_names[f]);
		seen[f] = true;
		fields[f] = val;
	}
	if (!kl_json_object_finish(&it))
		return kl_invalid_json(value, len, it.error, it.p);
	if (deferred)
		return deferred;

	for (int f = 0; f < F_COUNT; f++)
	{
		if (!seen[f])
			return psprintf("missing required field \"%s\"", kl_field_names[f]);
	}

	/* integers */
	for (int f = F_UNITS_PRODUCED; f <= F_CYCLE_TIME_MS; f++)
	{
		KlJsonValue *v = &fields[f];

		if (v->type != KL_JSON_NUMBER || !v->is_integer)
			return psprintf("field \"%s\" must be an integer, not %s",
							kl_field_names[f], kl_json_type_word(v));
		if (!kl_json_parse_int64(v->start, v->len, &ints[f]))
			return psprintf("field \"%s\" is out of range", kl_field_names[f]);
	}
	if (fields[F_SCHEMA_VERSION].type != KL_JSON_NUMBER ||
		!fields[F_SCHEMA_VERSION].is_integer)
		return psprintf("field \"schema_version\" must be the integer 1, not %s",
						kl_json_type_word(&fields[F_SCHEMA_VERSION]));
	if (!kl_json_parse_int64(fields[F_SCHEMA_VERSION].start,
							 fields[F_SCHEMA_VERSION].len, &ints[F_SCHEMA_VERSION]) ||
		ints[F_SCHEMA_VERSION] != 1)
		return psprintf("unsupported schema_version %.*s",
						(int) Min(fields[F_SCHEMA_VERSION].len, 20),
						fields[F_SCHEMA_VERSION].start);

	/* strings */
	for (int f = F_EVENT_ID; f <= F_OPERATION; f++)
	{
		KlJsonValue *v = &fields[f];
		bool		lower = (f >= F_PLANT_ID);
		char	   *s;
		int			slen;

		if (f == F_SCHEMA_VERSION)
			continue;
		if (v->type != KL_JSON_STRING)
			return psprintf("field \"%s\" must be a string, not %s",
							kl_field_names[f], kl_json_type_word(v));
		if (it.has_nul_escape && memmem(v->start, v->len, "\\u0000", 6) != NULL)
			return psprintf("field \"%s\" contains a NUL character", kl_field_names[f]);
		s = kl_copy_trimmed(v, lower, &slen);
		if (slen == 0)
			return psprintf("field \"%s\" must not be empty", kl_field_names[f]);
		switch (f)
		{
			case F_EVENT_ID:
				ev->event_id = s;
				ev->event_id_len = slen;
				break;
			case F_EVENT_TIME:
				if (!kl_valid_iso_timestamptz(s, slen))
					return "field \"event_time\" must be an ISO-8601 timestamp with a time zone";
				ev->event_time = s;
				break;
			case F_BUSINESS_DATE:
				if (!kl_parse_iso_date(s, slen, &ev->business_date))
					return "field \"business_date\" must be a real calendar date written YYYY-MM-DD";
				ev->business_date_text = s;
				break;
			case F_PLANT_ID:
				ev->plant_id = s;
				break;
			case F_LINE_ID:
				ev->line_id = s;
				break;
			case F_WORK_ORDER_ID:
				ev->work_order_id = s;
				break;
			case F_MACHINE_ID:
				ev->machine_id = s;
				break;
			case F_PRODUCT_CODE:
				ev->product_code = s;
				break;
			case F_OPERATION:
				{
					bool		known = false;

					for (int i = 0; kl_operations[i]; i++)
					{
						if (strcmp(kl_operations[i], s) == 0)
							known = true;
					}
					if (!known)
						return psprintf("field \"operation\" has unknown value \"%.64s\"", s);
					ev->operation = s;
					break;
				}
		}
	}

	if (ints[F_UNITS_PRODUCED] < 0)
		return "field \"units_produced\" must not be negative";
	if (ints[F_DEFECT_COUNT] < 0)
		return "field \"defect_count\" must not be negative";
	if (ints[F_DEFECT_COUNT] > ints[F_UNITS_PRODUCED])
		return "field \"defect_count\" must not exceed units_produced";
	if (ints[F_CYCLE_TIME_MS] <= 0)
		return "field \"cycle_time_ms\" must be positive";

	ev->schema_version = (int32) ints[F_SCHEMA_VERSION];
	ev->units_produced = ints[F_UNITS_PRODUCED];
	ev->defect_count = ints[F_DEFECT_COUNT];
	ev->cycle_time_ms = ints[F_CYCLE_TIME_MS];
	return NULL;
}

/*
 * kl_event_append_json
 *		Append the normalised event as a JSON object, keys sorted, in the
 *		json.dumps layout (", " and ": ").
 */
void
kl_event_append_json(StringInfo out, const KlEvent *ev)
{
	appendStringInfoString(out, "{\"business_date\": ");
	kl_json_append_string(out, ev->business_date_text, strlen(ev->business_date_text));
	appendStringInfoString(out, ", \"cycle_time_ms\": ");
	kl_json_append_int64(out, ev->cycle_time_ms);
	appendStringInfoString(out, ", \"defect_count\": ");
	kl_json_append_int64(out, ev->defect_count);
	appendStringInfoString(out, ", \"event_id\": ");
	kl_json_append_string(out, ev->event_id, ev->event_id_len);
	appendStringInfoString(out, ", \"event_time\": ");
	kl_json_append_string(out, ev->event_time, strlen(ev->event_time));
	appendStringInfoString(out, ", \"line_id\": ");
	kl_json_append_string(out, ev->line_id, strlen(ev->line_id));
	appendStringInfoString(out, ", \"machine_id\": ");
	kl_json_append_string(out, ev->machine_id, strlen(ev->machine_id));
	appendStringInfoString(out, ", \"operation\": ");
	kl_json_append_string(out, ev->operation, strlen(ev->operation));
	appendStringInfoString(out, ", \"plant_id\": ");
	kl_json_append_string(out, ev->plant_id, strlen(ev->plant_id));
	appendStringInfoString(out, ", \"product_code\": ");
	kl_json_append_string(out, ev->product_code, strlen(ev->product_code));
	appendStringInfoString(out, ", \"schema_version\": ");
	kl_json_append_int64(out, ev->schema_version);
	appendStringInfoString(out, ", \"units_produced\": ");
	kl_json_append_int64(out, ev->units_produced);
	appendStringInfoString(out, ", \"work_order_id\": ");
	kl_json_append_string(out, ev->work_order_id, strlen(ev->work_order_id));
	appendStringInfoChar(out, '}');
}
