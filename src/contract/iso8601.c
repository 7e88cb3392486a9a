/*-------------------------------------------------------------------------
 *
 * iso8601.c
 *	  ISO-8601 dates and timestamps, read as the seed's pipeline reads them:
 *	  Python 3.11's datetime.fromisoformat, and the day an instant falls on
 *	  in a time zone.
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
 * Like the rest of judging (contract.c), it calls nothing of PostgreSQL
 * that allocates, reports or keeps state: date2j, the time zone rules of a
 * pg_tz looked up beforehand (pg_next_dst_boundary reads them), and the
 * caller's buffer, so that it runs on the landing's helper thread too.
 *
 * IDENTIFICATION
 *	  src/contract/iso8601.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "datatype/timestamp.h"
#include "pgtime.h"
#include "utils/date.h"
#include "utils/datetime.h"

#include "base/json.h"
#include "contract/iso8601.h"

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
 *		rounds them (strtod, then rint).  The digits lie in the parser's own
 *		copy of the string, preceded by their separator: strtod reads them
 *		in place, the separator made a '.' and a terminator put after them
 *		for the time of the call (no allocation).
 */
static int64
kl_iso_fraction_usec(const char *digits, int n)
{
	char	   *start = (char *) digits - 1;
	char	   *stop = (char *) digits + n;
	char		sep = *start;
	char		after = *stop;
	double		frac;

	*start = '.';
	*stop = '\0';
	frac = strtod(start, NULL);
	*start = sep;
	*stop = after;
	return (int64) rint(frac * 1000000.0);
}

/*
 * kl_iso_buffer_size
 *		The bytes kl_parse_iso_timestamp_buf needs for s: s with every "Z"
 *		(and a landed final "z") made "+00:00", and a terminator.
 */
size_t
kl_iso_buffer_size(const char *s, int len)
{
	int			nz = 1;			/* a landed final "z", perhaps */
	const char *p = s;
	const char *end = s + len;

	while ((p = memchr(p, 'Z', end - p)) != NULL)
	{
		nz++;
		p++;
	}
	return (size_t) len + 5 * nz + 1;
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
kl_parse_iso_timestamp_buf(const char *s, int len, bool landed, TimestampTz *instant,
						   DateADT *written_day, char *b)
{
	const char *z;
	int			n = 0;
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
	return verdict;
}

/*
 * kl_parse_iso_timestamp
 *		kl_parse_iso_timestamp_buf with a buffer of its own (a small one on
 *		the stack, nearly always).  Backend only.
 */
KlIsoVerdict
kl_parse_iso_timestamp(const char *s, int len, bool landed, TimestampTz *instant,
					   DateADT *written_day)
{
	char		small[128];
	size_t		need;
	char	   *b;
	KlIsoVerdict verdict;

	if (len < 7)
		return KL_ISO_INVALID;
	need = kl_iso_buffer_size(s, len);
	b = (need <= sizeof(small)) ? small : palloc(need);
	verdict = kl_parse_iso_timestamp_buf(s, len, landed, instant, written_day, b);
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
 * kl_date_in_zone
 *		The calendar day of instant t in zone tz: the zone's offset at t,
 *		read from its rules without PostgreSQL's static struct pg_tm (so it
 *		is safe off the backend's thread).  false when the zone cannot say
 *		(t beyond its rules).
 */
bool
kl_date_in_zone(TimestampTz t, const pg_tz *tz, DateADT *day)
{
	int64		secs = t / USECS_PER_SEC - (t % USECS_PER_SEC < 0 ? 1 : 0);
	pg_time_t	tt = (pg_time_t) (secs + (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY);
	long int	before_gmtoff,
				after_gmtoff;
	int			before_isdst,
				after_isdst;
	pg_time_t	boundary;
	int64		local;

	if (pg_next_dst_boundary(&tt, &before_gmtoff, &before_isdst, &boundary,
							 &after_gmtoff, &after_isdst, tz) < 0)
		return false;
	local = (int64) tt + before_gmtoff;
	*day = (DateADT) ((local >= 0 ? local / SECS_PER_DAY : -((-local + SECS_PER_DAY - 1) / SECS_PER_DAY)) +
					  (UNIX_EPOCH_JDATE - POSTGRES_EPOCH_JDATE));
	return true;
}

/*
 * kl_date_text
 *		A finite date as YYYY-MM-DD, whatever the session's DateStyle, into
 *		out (KL_DATE_TEXT_LEN bytes).
 */
void
kl_date_text(DateADT date, char *out)
{
	int			y,
				m,
				d;

	j2date(date + POSTGRES_EPOCH_JDATE, &y, &m, &d);
	snprintf(out, KL_DATE_TEXT_LEN, "%04d-%02d-%02d", y, m, d);
}
