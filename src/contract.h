/*-------------------------------------------------------------------------
 *
 * contract.h
 *	  The event contract machine_event_v1 and the ISO-8601 dates and
 *	  timestamps it reads (contract.c).
 *
 * IDENTIFICATION
 *	  src/contract.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_CONTRACT_H
#define KAFKA_LAKE_CONTRACT_H

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "utils/date.h"

#include "json.h"

#define KL_CONTRACT_MAX_VALUE_BYTES	65536

/* A valid, normalised machine_event_v1 event (strings NUL-terminated) */
typedef struct KlEvent
{
	char	   *event_id;
	int			event_id_len;
	int32		schema_version;
	char	   *event_time;
	char	   *business_date_text;
	DateADT		business_date;
	char	   *plant_id;
	char	   *line_id;
	char	   *work_order_id;
	char	   *machine_id;
	char	   *product_code;
	char	   *operation;
	int64		units_produced;
	int64		defect_count;
	int64		cycle_time_ms;
} KlEvent;

/* What kl_parse_iso_timestamp makes of an event_time */
typedef enum KlIsoVerdict
{
	KL_ISO_VALID,
	KL_ISO_INVALID,				/* not what datetime.fromisoformat reads */
	KL_ISO_NO_ZONE,				/* a timestamp without a zone */
	KL_ISO_OFFSET_RANGE			/* a zone of 16 hours or more */
} KlIsoVerdict;

extern const char *kl_contract_validate(const char *value, size_t len, KlEvent *ev);
extern void kl_event_append_json(StringInfo out, const KlEvent *ev);
extern bool kl_parse_iso_date(const char *s, int len, DateADT *result);
extern KlIsoVerdict kl_parse_iso_timestamp(const char *s, int len, bool landed,
										   TimestampTz *instant, DateADT *written_day);
extern bool kl_parse_event_time(const char *s, int len, TimestampTz *result);
extern bool kl_json_event_time(const KlJsonValue *v, TimestampTz *result);

#endif							/* KAFKA_LAKE_CONTRACT_H */
