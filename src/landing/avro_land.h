/*-------------------------------------------------------------------------
 *
 * avro_land.h
 *	  Landing and re-admitting records of an Avro contract: each record's
 *	  writer schema found and resolved (backend), its datum decoded into the
 *	  JSON the contract judges (any thread) (avro_land.c).
 *
 * IDENTIFICATION
 *	  src/landing/avro_land.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_AVRO_LAND_H
#define KAFKA_LAKE_AVRO_LAND_H

#include "datatype/timestamp.h"

#include "contract/contract.h"
#include "format/avro.h"
#include "format/batch_format.h"

typedef struct KlAvroLanding KlAvroLanding;

/* backend */
extern KlAvroLanding *kl_avro_landing_begin(const KlContract *c, const char *server,
											MemoryContext cxt);
extern void kl_avro_landing_prepare(KlAvroLanding *al, KlRecord *recs, int n,
									TimestampTz deadline);
extern const char *kl_avro_judge_record(KlAvroLanding *al, KlRecord *r, KlPool *events,
										KlPool *scratch, TimestampTz deadline);

/* any thread */
extern const char *kl_avro_record_value(const KlContract *c, const KlRecord *r, KlAvroOut *out,
										KlPool *events, const char **value, size_t *len);

#endif							/* KAFKA_LAKE_AVRO_LAND_H */
