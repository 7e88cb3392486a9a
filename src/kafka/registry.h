/*-------------------------------------------------------------------------
 *
 * registry.h
 *	  A server's Confluent Schema Registry: schemas by id and by subject
 *	  version, fetched over HTTP and kept in kafka_lake.schemas (registry.c).
 *
 * IDENTIFICATION
 *	  src/kafka/registry.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_REGISTRY_H
#define KAFKA_LAKE_REGISTRY_H

#include "datatype/timestamp.h"
#include "foreign/foreign.h"

#include "base/digest.h"

/* a call's time when its caller gives none */
#define KL_REGISTRY_DEFAULT_TIMEOUT_MS	5000
/* the largest answer read from a registry */
#define KL_REGISTRY_MAX_ANSWER			(1024 * 1024)

/* A schema of a registry, as kafka_lake.schemas keeps it */
typedef struct KlRegistrySchema
{
	int32		id;				/* the registry's schema id */
	char	   *subject;		/* a subject it is registered under, or NULL */
	int32		version;		/* its version there, 0 when subject is NULL */
	char	   *schema_type;	/* AVRO, JSON or PROTOBUF */
	char	   *schema;			/* the schema's text, as the registry gave it */
	uint8		sha256[KL_SHA256_LEN];	/* of schema */
	bool		from_catalog;	/* served from kafka_lake.schemas */
} KlRegistrySchema;

extern KlRegistrySchema *kl_registry_schema_by_id(ForeignServer *server, int32 id,
												  TimestampTz deadline);
extern char *kl_registry_guid_text(const uint8 *guid);
extern KlRegistrySchema *kl_registry_schema_by_guid(ForeignServer *server, const uint8 *guid,
													const char *subject, TimestampTz deadline);
extern KlRegistrySchema *kl_registry_subject_version(ForeignServer *server,
													 const char *subject, int32 version,
													 TimestampTz deadline);

#endif							/* KAFKA_LAKE_REGISTRY_H */
