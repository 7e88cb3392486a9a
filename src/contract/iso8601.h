/*-------------------------------------------------------------------------
 *
 * iso8601.h
 *	  ISO-8601 dates and timestamps, as Python 3.11 reads them (iso8601.c).
 *
 * IDENTIFICATION
 *	  src/contract/iso8601.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_ISO8601_H
#define KAFKA_LAKE_ISO8601_H

#include "datatype/timestamp.h"
#include "pgtime.h"
#include "utils/date.h"

#include "base/json.h"

/* What kl_parse_iso_timestamp makes of an event_time */
typedef enum KlIsoVerdict
{
	KL_ISO_VALID,
	KL_ISO_INVALID,				/* not what datetime.fromisoformat reads */
	KL_ISO_NO_ZONE,				/* a timestamp without a zone */
	KL_ISO_OFFSET_RANGE			/* a zone of 16 hours or more */
} KlIsoVerdict;

/* room for any date as text: "YYYY-MM-DD", and years beyond 9999 */
#define KL_DATE_TEXT_LEN	16

extern bool kl_parse_iso_date(const char *s, int len, DateADT *result);
extern void kl_date_text(DateADT date, char *out);
extern size_t kl_iso_buffer_size(const char *s, int len);
extern KlIsoVerdict kl_parse_iso_timestamp_buf(const char *s, int len, bool landed,
											   TimestampTz *instant, DateADT *written_day,
											   char *buf);
extern KlIsoVerdict kl_parse_iso_timestamp(const char *s, int len, bool landed,
										   TimestampTz *instant, DateADT *written_day);
extern bool kl_parse_event_time(const char *s, int len, TimestampTz *result);
extern bool kl_json_event_time(const KlJsonValue *v, TimestampTz *result);
extern bool kl_date_in_zone(TimestampTz t, const pg_tz *tz, DateADT *day);

#endif							/* KAFKA_LAKE_ISO8601_H */
