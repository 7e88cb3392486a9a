/*-------------------------------------------------------------------------
 *
 * contract.c
 *	  The event contract machine_event_v1: validation and normalisation of
 *	  one record value, the normalised event's JSON form, and the one ISO
 *	  timestamp parser that the contract, the bridge and the foreign table
 *	  share.
 *
 * The contract: a JSON object with exactly these fields,
 *
 *	event_id		non-empty string
 *	schema_version	the integer 1
 *	event_time		a timestamp with a zone, as below
 *	business_date	ISO date (YYYY-MM-DD), a real calendar day
 *	plant_id, line_id, work_order_id, machine_id, product_code, operation
 *					non-empty strings; operation one of assembly, inspection,
 *					packaging, welding, machining, calibration
 *	units_produced	integer >= 0
 *	defect_count	integer, 0 <= defect_count <= units_produced
 *	cycle_time_ms	integer > 0
 *
 * THE SEED'S RULES, EXACTLY
 *
 * The reference implementation is a Python 3.11 pipeline, and kafka_lake
 * must accept, refuse and normalise what it does, or the two disagree on
 * the accepted set and on every source_hash built from it.  Its rules are
 * Python's standard library, so each is reproduced here as Python has it:
 *
 *	- field names are JSON strings: they compare after unescaping
 *	  ("event\u005fid" is event_id), for duplicates too;
 *	- every string is trimmed as str.strip() trims: of every character for
 *	  which str.isspace() is true, which Python defines as Unicode bidi
 *	  class WS, B or S, or general category Zs (NBSP, U+001C..U+001F,
 *	  U+0085, U+2028, the ideographic space, ...);
 *	- the six identifiers are lower-cased as str.lower() does: the full
 *	  Unicode lower-case mapping ("İ" becomes "i" and a combining dot),
 *	  and a capital sigma becomes final "ς" exactly where Python's
 *	  Final_Sigma test says (preceded by a cased character and not followed
 *	  by one, case-ignorable characters skipped both ways);
 *	- event_time is read by datetime.fromisoformat after every "Z" is
 *	  replaced by "+00:00", and must carry a zone (below).
 * Case mapping and character properties come from ICU, which PostgreSQL
 * itself links on Debian: not from a table written here, and not from the
 * database's locale, so the result does not depend on lc_ctype.  ICU 72
 * implements Unicode 15.0 while Python 3.11 has Unicode 14.0; a character
 * first assigned after 14.0 is, for Python, unassigned: not whitespace, not
 * cased, not case-ignorable, its own lower case.  It is treated so here
 * (u_charAge), which keeps the two equal on every code point.
 *
 * Values that are ASCII, nearly all of them, never reach ICU: trimming
 * looks at the ends through a 128-entry table and lower-casing is the
 * ASCII loop it always was, until the first byte above 0x7F.
 *
 * kafka_lake is stricter where the seed loses or cannot use data, and
 * where the product is silent it keeps its own behaviour; README ("The
 * contract and the seed's pipeline") lists every such difference: a
 * duplicate field name (Python keeps the last), integers beyond int64,
 * values over KL_CONTRACT_MAX_VALUE_BYTES (refused before they are parsed:
 * a machine event is a few hundred bytes), NUL characters and unpaired
 * surrogates in strings, a business_date not written YYYY-MM-DD, and an
 * event_time whose offset is 16 hours or more (PostgreSQL's timestamptz
 * reads offsets up to 15:59:59; Python's go to 23:59:59.999999).
 * Booleans and numbers with a fraction or an exponent are not integers, in
 * both.
 *
 * Every violation yields one short, stable reason (the first one found, in
 * a fixed order), which is what quarantine.jsonl and the manifest record as
 * validation_error.
 *
 * THE TIMESTAMP PARSER
 *
 * kl_parse_iso_timestamp reads exactly the strings Python 3.11's
 * datetime.fromisoformat reads once "Z" became "+00:00", with their quirks
 * (checked against Python on thousands of strings by the test suite):
 * dates YYYY-MM-DD, YYYYMMDD, YYYY-Www[-D] and YYYYWww[D] (ISO weeks);
 * any one character between date and time; times hh, hh:mm, hhmm,
 * hh:mm:ss, hhmmss, each optionally followed by a fraction after "." or
 * "," of any length (digits beyond six are dropped by Python); offsets
 * +hh, +hhmm, +hh:mm, +hhmmss, +hh:mm:ss with their own fraction.  Its
 * result is the instant and the date as written.  For the instant,
 * fraction digits beyond microseconds are rounded as timestamptz_in
 * rounds them (Python truncates), so that wherever a cast of the text
 * reads the string too, the two agree; the cast reads fewer forms (no ISO
 * weeks, no hour alone, no comma fraction), which is why the bridge and
 * the foreign table never cast.  Reading what was landed (landed = true)
 * also takes the trailing lower-case "z" that kafka_lake 1.0 accepted, so
 * its landings still read and bridge the same.
 *
 * IDENTIFICATION
 *	  src/contract.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include <unicode/uchar.h>
#include <unicode/ucasemap.h>
#include <unicode/utf8.h>

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "utils/date.h"
#include "utils/datetime.h"

#include "contract.h"
#include "json.h"

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

#define KL_LEN(name)	(sizeof(name) - 1)
static const size_t kl_field_name_lens[F_COUNT] = {
	KL_LEN("event_id"), KL_LEN("schema_version"), KL_LEN("event_time"),
	KL_LEN("business_date"), KL_LEN("plant_id"), KL_LEN("line_id"),
	KL_LEN("work_order_id"), KL_LEN("machine_id"), KL_LEN("product_code"),
	KL_LEN("operation"), KL_LEN("units_produced"), KL_LEN("defect_count"),
	KL_LEN("cycle_time_ms")
};

/*
 * kl_field_number
 *		Which contract field a key names (after unescaping), or -1.
 */
static int
kl_field_number(const KlJsonValue *key)
{
	if (!key->has_escapes)
	{
		const char *name = key->start + 1;
		size_t		len = key->len - 2;

		for (int f = 0; f < F_COUNT; f++)
		{
			if (kl_field_name_lens[f] == len && memcmp(kl_field_names[f], name, len) == 0)
				return f;
		}
		return -1;
	}
	for (int f = 0; f < F_COUNT; f++)
	{
		if (kl_json_key_is(key, kl_field_names[f], kl_field_name_lens[f]))
			return f;
	}
	return -1;
}

/* ----------------------------------------------------------------
 *		str.strip() and str.lower(), as Python 3.11 has them
 * ----------------------------------------------------------------
 */

/* the Unicode version of Python 3.11's character database */
#define KL_PY_UNICODE_MAJOR		14
#define KL_PY_UNICODE_MINOR		0

/* str.isspace() of the ASCII characters: \t \n \v \f \r, U+001C..U+001F, space */
static const bool kl_ascii_space[128] = {
	[0x09] = true,[0x0A] = true,[0x0B] = true,[0x0C] = true,[0x0D] = true,
	[0x1C] = true,[0x1D] = true,[0x1E] = true,[0x1F] = true,[0x20] = true
};

/*
 * kl_py_unassigned
 *		Was c assigned after Python 3.11's Unicode version (so that Python
 *		knows nothing about it)?
 */
static bool
kl_py_unassigned(UChar32 c)
{
	UVersionInfo age;

	u_charAge(c, age);
	return age[0] > KL_PY_UNICODE_MAJOR ||
		(age[0] == KL_PY_UNICODE_MAJOR && age[1] > KL_PY_UNICODE_MINOR);
}

/*
 * kl_py_isspace
 *		str.isspace() of one character: bidi class WS, B or S, or general
 *		category Zs.
 */
static bool
kl_py_isspace(UChar32 c)
{
	UCharDirection dir;

	if (c < 0x80)
		return kl_ascii_space[c];
	if (kl_py_unassigned(c))
		return false;
	dir = u_charDirection(c);
	return dir == U_WHITE_SPACE_NEUTRAL || dir == U_BLOCK_SEPARATOR ||
		dir == U_SEGMENT_SEPARATOR || u_charType(c) == U_SPACE_SEPARATOR;
}

/*
 * kl_py_strip
 *		Narrow [*start, *end) of valid UTF-8 as str.strip() does.
 */
static void
kl_py_strip(char **start, char **end)
{
	char	   *s = *start;
	char	   *e = *end;

	while (s < e)
	{
		unsigned char c = *s;

		if (c < 0x80)
		{
			if (!kl_ascii_space[c])
				break;
			s++;
		}
		else
		{
			int32_t		i = 0;
			UChar32		cp;

			U8_NEXT(s, i, e - s, cp);
			if (!kl_py_isspace(cp))
				break;
			s += i;
		}
	}
	while (e > s)
	{
		unsigned char c = e[-1];

		if (c < 0x80)
		{
			if (!kl_ascii_space[c])
				break;
			e--;
		}
		else
		{
			int32_t		i = e - s;
			UChar32		cp;

			U8_PREV(s, 0, i, cp);
			if (!kl_py_isspace(cp))
				break;
			e = s + i;
		}
	}
	*start = s;
	*end = e;
}

/*
 * kl_py_case_class
 *		What Python's Final_Sigma test sees in a character: 'i' for
 *		case-ignorable (skipped), 'c' for cased, 'o' for anything else.
 */
static char
kl_py_case_class(UChar32 c)
{
	if (kl_py_unassigned(c))
		return 'o';
	if (u_hasBinaryProperty(c, UCHAR_CASE_IGNORABLE))
		return 'i';
	return u_hasBinaryProperty(c, UCHAR_CASED) ? 'c' : 'o';
}

/*
 * kl_py_final_sigma
 *		Is the capital sigma at s[at..after) final, as str.lower() decides:
 *		preceded by a cased character and not followed by one, skipping
 *		case-ignorable characters both ways?
 */
static bool
kl_py_final_sigma(const char *s, int32_t len, int32_t at, int32_t after)
{
	int32_t		i = at;
	UChar32		c;
	char		cls = 'o';

	while (i > 0)
	{
		U8_PREV(s, 0, i, c);
		if ((cls = kl_py_case_class(c)) != 'i')
			break;
	}
	if (cls != 'c')
		return false;
	i = after;
	while (i < len)
	{
		U8_NEXT(s, i, len, c);
		if ((cls = kl_py_case_class(c)) != 'i')
			return cls != 'c';
	}
	return true;
}

/*
 * kl_icu_lower
 *		Append ICU's full lower-case mapping (root locale) of s[0..len).
 */
static void
kl_icu_lower(StringInfo out, const char *s, int32_t len)
{
	static UCaseMap *casemap = NULL;
	UErrorCode	status = U_ZERO_ERROR;
	int32_t		n;

	if (casemap == NULL)
	{
		casemap = ucasemap_open("", 0, &status);
		if (U_FAILURE(status))
		{
			casemap = NULL;
			elog(ERROR, "could not open an ICU case map: %s", u_errorName(status));
		}
	}
	/* a lower case is at most 3 bytes for 2 (İ); leave room for more */
	enlargeStringInfo(out, len * 2 + 1);
	n = ucasemap_utf8ToLower(casemap, out->data + out->len, out->maxlen - out->len - 1,
							 s, len, &status);
	if (status == U_BUFFER_OVERFLOW_ERROR)
	{
		status = U_ZERO_ERROR;
		enlargeStringInfo(out, n + 1);
		n = ucasemap_utf8ToLower(casemap, out->data + out->len, out->maxlen - out->len - 1,
								 s, len, &status);
	}
	if (U_FAILURE(status))
		elog(ERROR, "could not lower-case with ICU: %s", u_errorName(status));
	out->len += n;
	out->data[out->len] = '\0';
}

/*
 * kl_py_lower
 *		str.lower() of valid UTF-8 s[0..len): a palloc'd NUL-terminated
 *		copy, its length in *outlen.  Runs without a capital sigma or a
 *		character Python does not know go to ICU whole (the root locale's
 *		full mapping is context-free there); a sigma is decided by Python's
 *		Final_Sigma rule, and an unknown character is copied.
 */
static char *
kl_py_lower(const char *s, int32_t len, int *outlen)
{
	StringInfoData out;
	int32_t		i = 0;
	int32_t		run = 0;

	initStringInfo(&out);
	while (i < len)
	{
		int32_t		at = i;
		UChar32		c;

		if ((unsigned char) s[i] < 0x80)
		{
			i++;
			continue;
		}
		U8_NEXT(s, i, len, c);
		if (c != 0x03A3 && !kl_py_unassigned(c))
			continue;
		if (at > run)
			kl_icu_lower(&out, s + run, at - run);
		if (c == 0x03A3)
			/* U+03C2 final small sigma, U+03C3 small sigma */
			appendStringInfoString(&out, kl_py_final_sigma(s, len, at, i) ? "\xcf\x82" : "\xcf\x83");
		else
			appendBinaryStringInfo(&out, s + at, i - at);
		run = i;
	}
	if (len > run)
		kl_icu_lower(&out, s + run, len - run);
	*outlen = out.len;
	return out.data;
}

/*
 * kl_copy_trimmed
 *		Decode a string value, trim it as str.strip() does, optionally
 *		lower-case it as str.lower() does, and return a palloc'd
 *		NUL-terminated copy (its length in *len).
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
	kl_py_strip(&s, &e);
	*e = '\0';
	if (lower)
	{
		char	   *c;

		for (c = s; c < e; c++)
		{
			if ((unsigned char) *c >= 0x80)
				break;
			if (*c >= 'A' && *c <= 'Z')
				*c += 'a' - 'A';
		}
		/* not ASCII: the whole value through Python's rules (ASCII is done) */
		if (c < e)
			return kl_py_lower(s, e - s, len);
	}
	*len = e - s;
	return s;
}

/*
 * kl_utf8_clip
 *		The length of the longest prefix of s (valid UTF-8) of at most max
 *		bytes that ends on a character boundary.
 */
static int
kl_utf8_clip(const char *s, int len, int max)
{
	if (len <= max)
		return len;
	while (max > 0 && ((unsigned char) s[max] & 0xC0) == 0x80)
		max--;
	return max;
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

/* ----------------------------------------------------------------
 *		datetime.fromisoformat, as Python 3.11 has it
 *
 * The functions below walk a NUL-terminated copy of the string (where
 * every "Z" became "+00:00") the way Python's C implementation walks its
 * UTF-8: a digit read stops at the first non-digit, the terminator
 * included, so nothing is read past the end.
 * ----------------------------------------------------------------
 */

/* one time of day, or one offset, as read */
typedef struct KlIsoClock
{
	int			hour;
	int			minute;
	int			second;
	int			usec;			/* Python's: the first six fraction digits */
	const char *frac;			/* every fraction digit, for rounding */
	int			nfrac;
} KlIsoClock;

/*
 * kl_iso_digits
 *		Read n digits at *p into *v and advance; false at a non-digit.
 */
static inline bool
kl_iso_digits(const char **p, int n, int *v)
{
	int			r = 0;

	for (int i = 0; i < n; i++)
	{
		unsigned int d = (unsigned char) (*p)[i] - '0';

		if (d > 9)
			return false;
		r = r * 10 + d;
	}
	*p += n;
	*v = r;
	return true;
}

#define kl_iso_isdigit(c)	((unsigned int) ((unsigned char) (c) - '0') < 10)

/*
 * kl_iso_separator
 *		Where the date ends and the one separator character stands, from
 *		the shape of the date (b has n >= 7 bytes); -1 when no date fits.
 *		As Python: "YYYY-MM-DD" 10, "YYYYMMDD" 8, "YYYY-Www" 8, "YYYY-Www-D"
 *		10 (8 when a digit follows at 10: "YYYY-Www-hh..."), "YYYYWww" 7 or
 *		"YYYYWwwD" 8 (by the parity of the digits that follow).
 */
static int
kl_iso_separator(const char *b, int n)
{
	if (n == 7)
		return 7;
	if (b[4] == '-')
	{
		if (b[5] != 'W')
			return 10;
		if (n > 8 && b[8] == '-')
		{
			if (n == 9)
				return -1;
			return (n > 10 && kl_iso_isdigit(b[10])) ? 8 : 10;
		}
		return 8;
	}
	if (b[4] == 'W')
	{
		int			i = 7;

		while (i < n && kl_iso_isdigit(b[i]))
			i++;
		if (i < 9)
			return i;
		return (i % 2 == 0) ? 7 : 8;
	}
	return 8;
}

/*
 * kl_iso_week_date
 *		The day of ISO week `week`, weekday `wday` (1 = Monday) of ISO year
 *		`year`, as a Julian day; false when there is no such week or day.
 */
static bool
kl_iso_week_date(int year, int week, int wday, int *jd)
{
	int			jan1;
	int			first;			/* weekday of 1 January, 0 = Monday */
	int			monday;

	if (year < 1)
		return false;
	jan1 = date2j(year, 1, 1);
	first = (j2day(jan1) + 6) % 7;
	/* 53 weeks when the year starts on a Thursday, or a Wednesday in a leap year */
	if (week < 1 || week > 53 ||
		(week == 53 && !(first == 3 || (first == 2 && isleap(year)))))
		return false;
	if (wday < 1 || wday > 7)
		return false;
	monday = jan1 - first + (first > 3 ? 7 : 0);
	*jd = monday + (week - 1) * 7 + wday - 1;
	return true;
}

/*
 * kl_iso_date
 *		Read the date b[0..sep) as a Julian day; false when it is not one.
 */
static bool
kl_iso_date(const char *b, int sep, int *jd)
{
	const char *p = b;
	int			year,
				month,
				day;
	bool		dash;

	if (!kl_iso_digits(&p, 4, &year))
		return false;
	dash = (*p == '-');
	if (dash)
		p++;
	if (*p == 'W')
	{
		int			week,
					wday = 1;

		p++;
		if (!kl_iso_digits(&p, 2, &week))
			return false;
		if (p - b < sep)
		{
			if (dash && *p++ != '-')
				return false;
			if (!kl_iso_digits(&p, 1, &wday))
				return false;
		}
		if (!kl_iso_week_date(year, week, wday, jd))
			return false;
		j2date(*jd, &year, &month, &day);
		return year >= 1 && year <= 9999;
	}
	if (!kl_iso_digits(&p, 2, &month))
		return false;
	if (dash && *p++ != '-')
		return false;
	if (!kl_iso_digits(&p, 2, &day))
		return false;
	if (year < 1 || month < 1 || month > 12 || day < 1 ||
		day > day_tab[isleap(year)][month - 1])
		return false;
	*jd = date2j(year, month, day);
	return true;
}

/*
 * kl_iso_clock
 *		Read hh[[:]mm[[:]ss]][(.|,)fraction] from p up to end (a zone sign
 *		or the terminator), as Python's parse_hh_mm_ss_ff does, quirks
 *		included: a fraction may follow any component, a colon may stand
 *		where the fraction's dot would, and digits after six are skipped.
 *		Returns -1 when it is not a time, 1 when something is left before
 *		end (Python accepts that only when a zone follows), 0 otherwise.
 */
static int
kl_iso_clock(const char *p, const char *end, KlIsoClock *clk)
{
	int		   *parts[3] = {&clk->hour, &clk->minute, &clk->second};
	bool		colons = true;
	const char *f;
	int			n;

	clk->hour = clk->minute = clk->second = clk->usec = 0;
	clk->frac = NULL;
	clk->nfrac = 0;
	for (int i = 0; i < 3; i++)
	{
		char		c;

		if (!kl_iso_digits(&p, 2, parts[i]))
			return -1;
		c = *p++;
		if (i == 0)
			colons = (c == ':');
		if (p >= end)
			return c != '\0';
		if (colons && c == ':')
			continue;
		if (c == '.' || c == ',')
			break;
		if (colons)
			return -1;
		p--;
	}
	/* the fraction: up to six digits count, more are skipped */
	n = Min(end - p, 6);
	f = p;
	if (!kl_iso_digits(&p, n, &clk->usec))
		return -1;
	for (int i = n; i < 6; i++)
		clk->usec *= 10;
	while (kl_iso_isdigit(*p))
		p++;
	clk->frac = f;
	clk->nfrac = p - f;
	return *p != '\0';
}

/*
 * kl_iso_fraction_usec
 *		Microseconds of a fraction's digits, rounded as timestamptz_in
 *		rounds them (strtod, then rint).
 */
static int64
kl_iso_fraction_usec(const char *digits, int n)
{
	char		small[64];
	char	   *buf = (n + 3 <= (int) sizeof(small)) ? small : palloc(n + 3);
	double		frac;

	buf[0] = '0';
	buf[1] = '.';
	memcpy(buf + 2, digits, n);
	buf[2 + n] = '\0';
	frac = strtod(buf, NULL);
	if (buf != small)
		pfree(buf);
	return (int64) rint(frac * 1000000.0);
}

/*
 * kl_parse_iso_timestamp
 *		Judge an event_time as the seed does: datetime.fromisoformat of s
 *		with every "Z" replaced by "+00:00", a zone required.  On
 *		KL_ISO_VALID, *instant is the instant it names and *written_day (if
 *		not NULL) the calendar day written in it.  A zone of 16 hours or
 *		more is KL_ISO_OFFSET_RANGE: Python reads it, timestamptz does not.
 *		landed: reading a value kafka_lake landed, which may end in the
 *		lower-case "z" that version 1.0 accepted as UTC.
 */
KlIsoVerdict
kl_parse_iso_timestamp(const char *s, int len, bool landed, TimestampTz *instant,
					   DateADT *written_day)
{
	char		small[96];
	char	   *b;
	const char *z;
	int			n = 0;
	int			nz = 0;
	int			sep;
	int			jd;
	const char *p;
	const char *end;
	const char *zone;
	KlIsoClock	clk;
	KlIsoClock	off;
	int			rv;
	int64		offset_usec = 0;
	int64		usec;
	KlIsoVerdict verdict = KL_ISO_INVALID;

	if (len < 7)
		return KL_ISO_INVALID;
	/* s with every "Z" (and a landed final "z") replaced, NUL-terminated */
	z = memchr(s, 'Z', len);
	if (z == NULL && landed && s[len - 1] == 'z')
		z = s + len - 1;
	if (z == NULL || z == s + len - 1)
	{
		/* no "Z", or only at the end: the common forms, copied at once */
		b = (len + 6 <= (int) sizeof(small)) ? small : palloc(len + 6);
		n = (z == NULL) ? len : len - 1;
		memcpy(b, s, n);
		if (z != NULL)
		{
			memcpy(b + n, "+00:00", 6);
			n += 6;
		}
	}
	else
	{
		for (int i = 0; i < len; i++)
			nz += (s[i] == 'Z');
		nz++;					/* a landed final "z", perhaps */
		b = (len + 5 * nz + 1 <= (int) sizeof(small)) ? small : palloc(len + 5 * nz + 1);
		for (int i = 0; i < len; i++)
		{
			if (s[i] == 'Z' || (landed && i == len - 1 && s[i] == 'z'))
			{
				memcpy(b + n, "+00:00", 6);
				n += 6;
			}
			else
				b[n++] = s[i];
		}
	}
	b[n] = '\0';

	/* the date, and one character of any kind after it */
	sep = kl_iso_separator(b, n);
	if (sep < 0 || !kl_iso_date(b, sep, &jd))
		goto done;
	if (n == sep)
	{
		verdict = KL_ISO_NO_ZONE;
		goto done;
	}
	p = b + sep;
	if (((unsigned char) *p & 0x80) == 0)
		p += 1;
	else if (((unsigned char) *p & 0xF0) == 0xE0)
		p += 3;
	else if (((unsigned char) *p & 0xF0) == 0xF0)
		p += 4;
	else
		p += 2;
	end = b + n;
	if (p >= end)
		goto done;

	/* the time, up to the first sign */
	for (zone = p; zone < end && *zone != '+' && *zone != '-'; zone++)
		;
	rv = kl_iso_clock(p, zone, &clk);
	if (rv < 0 || (zone == end && rv == 1))
		goto done;
	if (clk.hour > 23 || clk.minute > 59 || clk.second > 59)
		goto done;
	if (zone == end)
	{
		verdict = KL_ISO_NO_ZONE;
		goto done;
	}

	/* the zone: it must end the string; an offset of whole zero seconds is UTC */
	if (kl_iso_clock(zone + 1, end, &off) != 0)
		goto done;
	offset_usec = (int64) off.hour * 3600 + off.minute * 60 + off.second;
	if (offset_usec != 0)
		offset_usec = offset_usec * USECS_PER_SEC + off.usec;
	if (*zone == '-')
		offset_usec = -offset_usec;
	if (offset_usec <= -USECS_PER_DAY || offset_usec >= USECS_PER_DAY)
		goto done;
	if (offset_usec <= -16 * USECS_PER_HOUR || offset_usec >= 16 * USECS_PER_HOUR)
	{
		verdict = KL_ISO_OFFSET_RANGE;
		goto done;
	}

	usec = (clk.nfrac <= 6) ? clk.usec : kl_iso_fraction_usec(clk.frac, clk.nfrac);
	*instant = ((int64) (jd - POSTGRES_EPOCH_JDATE) * SECS_PER_DAY + clk.hour * 3600 +
				clk.minute * 60 + clk.second) * USECS_PER_SEC + usec - offset_usec;
	if (written_day)
		*written_day = jd - POSTGRES_EPOCH_JDATE;
	verdict = KL_ISO_VALID;

done:
	if (b != small)
		pfree(b);
	return verdict;
}

/*
 * kl_parse_event_time
 *		The instant a landed event_time names; false when it names none.
 *		The rule of the bridge's natural key and of the foreign table's
 *		fast path to timestamptz.
 */
bool
kl_parse_event_time(const char *s, int len, TimestampTz *result)
{
	return kl_parse_iso_timestamp(s, len, true, result, NULL) == KL_ISO_VALID;
}

/*
 * kl_json_event_time
 *		kl_parse_event_time of a JSON string, decoded first when it has
 *		escapes (a separator outside ASCII is landed as \uXXXX).
 */
bool
kl_json_event_time(const KlJsonValue *v, TimestampTz *result)
{
	StringInfoData buf;
	bool		ok;

	if (v->type != KL_JSON_STRING)
		return false;
	if (!v->has_escapes)
		return kl_parse_event_time(v->start + 1, v->len - 2, result);
	initStringInfo(&buf);
	kl_json_decode_string(v, &buf);
	ok = kl_parse_event_time(buf.data, buf.len, result);
	pfree(buf.data);
	return ok;
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
				{
					TimestampTz instant;

					switch (kl_parse_iso_timestamp(s, slen, false, &instant, NULL))
					{
						case KL_ISO_VALID:
							break;
						case KL_ISO_OFFSET_RANGE:
							return "field \"event_time\" has a UTC offset of 16 hours or more, beyond what timestamptz reads";
						case KL_ISO_INVALID:
						case KL_ISO_NO_ZONE:
							return "field \"event_time\" must be an ISO-8601 timestamp with a time zone";
					}
					ev->event_time = s;
					break;
				}
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
						return psprintf("field \"operation\" has unknown value \"%.*s\"",
										kl_utf8_clip(s, slen, 64), s);
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
