/*-------------------------------------------------------------------------
 *
 * fuzz_iso8601.c
 *	  libFuzzer target: the ISO-8601 parser (src/contract/iso8601.c).
 *
 * Covers: kl_parse_iso_timestamp_buf on the input as it is, in a buffer of
 * exactly kl_iso_buffer_size bytes (so that a size it gets wrong is a heap
 * overflow), for a record value (landed = false) and for a landed line
 * (landed = true), against kl_parse_iso_timestamp (its own buffer) and
 * kl_parse_event_time; kl_json_event_time of the input as a JSON string
 * (escaped by json.c, so its escapes are decoded first); kl_parse_iso_date;
 * kl_date_in_zone in UTC and in a fixed-offset zone.
 *
 * Properties: the two buffers give the same verdict, instant and day; what
 * a record value may say, a landed line may say too, meaning the same
 * instant; the JSON string form reads as the raw form does; a valid
 * timestamp's instant, written back as YYYY-MM-DDTHH:MM:SS.ffffff+00:00,
 * reads as the same instant on the same UTC day; a valid date written back
 * as YYYY-MM-DD reads as the same date; the day of an instant in UTC is the
 * day of the canonical form.
 *
 * Cannot cover: time zones with rules (the shim knows only UTC and fixed
 * offsets: pg_shim.c); agreement with Python's datetime.fromisoformat,
 * which test/t/39_contract_golden.sh checks against Python itself.
 *
 * IDENTIFICATION
 *	  fuzz/fuzz_iso8601.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "datatype/timestamp.h"
#include "utils/datetime.h"

#include "base/json.h"
#include "contract/iso8601.h"
#include "pg_shim.h"

static const pg_tz *utc;
static const pg_tz *plus5;

/*
 * utc_text
 *		An instant as YYYY-MM-DDTHH:MM:SS.ffffff+00:00, and its UTC day;
 *		false outside years 1 to 9999.
 */
static bool
utc_text(TimestampTz t, char *buf, size_t size, DateADT *day)
{
	int64		days = t / USECS_PER_DAY;
	int64		rest = t % USECS_PER_DAY;
	int			y,
				m,
				d;

	if (rest < 0)
	{
		rest += USECS_PER_DAY;
		days--;
	}
	j2date((int) (days + POSTGRES_EPOCH_JDATE), &y, &m, &d);
	if (y < 1 || y > 9999)
		return false;
	snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06d+00:00", y, m, d,
			 (int) (rest / USECS_PER_HOUR), (int) (rest / USECS_PER_MINUTE % 60),
			 (int) (rest / USECS_PER_SEC % 60), (int) (rest % USECS_PER_SEC));
	*day = (DateADT) days;
	return true;
}

static void
check_timestamp(const char *s, int len, bool landed)
{
	size_t		need = kl_iso_buffer_size(s, len);
	char	   *b = malloc(need);
	TimestampTz t1 = 0,
				t2 = 0;
	DateADT		d1 = 0,
				d2 = 0;
	KlIsoVerdict v1 = kl_parse_iso_timestamp_buf(s, len, landed, &t1, &d1, b);
	KlIsoVerdict v2 = kl_parse_iso_timestamp(s, len, landed, &t2, &d2);

	free(b);
	if (v1 != v2 || (v1 == KL_ISO_VALID && (t1 != t2 || d1 != d2)))
		kl_fuzz_fail("kl_parse_iso_timestamp_buf and kl_parse_iso_timestamp differ");
	if (v1 == KL_ISO_VALID)
	{
		char		text[64];
		DateADT		day;
		TimestampTz t3;
		DateADT		d3;
		DateADT		zday;

		if (!landed)
		{
			TimestampTz tl;
			DateADT		dl;

			if (kl_parse_iso_timestamp(s, len, true, &tl, &dl) != KL_ISO_VALID ||
				tl != t1 || dl != d1)
				kl_fuzz_fail("a valid record value's timestamp reads otherwise when landed");
			if (!kl_parse_event_time(s, len, &tl) || tl != t1)
				kl_fuzz_fail("kl_parse_event_time disagrees");
		}
		if (utc_text(t1, text, sizeof(text), &day))
		{
			if (kl_parse_iso_timestamp(text, strlen(text), false, &t3, &d3) != KL_ISO_VALID)
				kl_fuzz_fail("the canonical form \"%s\" of a valid instant is not valid", text);
			if (t3 != t1 || d3 != day)
				kl_fuzz_fail("the canonical form \"%s\" names another instant", text);
			if (!kl_date_in_zone(t1, utc, &zday) || zday != day)
				kl_fuzz_fail("kl_date_in_zone(UTC) is not the UTC day of \"%s\"", text);
			if (!kl_date_in_zone(t1, plus5, &zday) || zday < day || zday > day + 1)
				kl_fuzz_fail("kl_date_in_zone(+05) is not the UTC day or the next");
		}
	}
}

static void
check_date(const char *s, int len)
{
	DateADT		d;

	if (kl_parse_iso_date(s, len, &d))
	{
		int			y,
					m,
					dd;
		char		text[32];
		DateADT		d2;

		j2date(d + POSTGRES_EPOCH_JDATE, &y, &m, &dd);
		snprintf(text, sizeof(text), "%04d-%02d-%02d", y, m, dd);
		if (!kl_parse_iso_date(text, strlen(text), &d2) || d2 != d)
			kl_fuzz_fail("the date \"%s\" does not read back", text);
	}
}

static void
check_json_string(const char *s, size_t len)
{
	StringInfoData js;
	KlJsonReader r;
	KlJsonValue v;
	TimestampTz t1,
				t2;
	bool		ok1,
				ok2;

	if (!kl_utf8_valid(s, len))
		return;
	initStringInfo(&js);
	kl_json_append_string(&js, s, len);
	kl_json_init(&r, js.data, js.len, 2);
	if (!kl_json_parse_document(&r, &v))
		kl_fuzz_fail("an escaped string is not JSON");
	ok1 = kl_json_event_time(&v, &t1);
	ok2 = kl_parse_event_time(s, len, &t2);
	if (ok1 != ok2 || (ok1 && t1 != t2))
		kl_fuzz_fail("kl_json_event_time and kl_parse_event_time differ");
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	kl_shim_init();
	utc = pg_tzset("UTC");
	plus5 = pg_tzset("Etc/GMT-5");
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	KL_FUZZ_RUN({
		const char *s = (const char *) data;

		check_timestamp(s, (int) size, false);
		check_timestamp(s, (int) size, true);
		check_date(s, (int) size);
		check_json_string(s, size);
	});
	return 0;
}
