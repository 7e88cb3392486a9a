/*-------------------------------------------------------------------------
 *
 * avro_contract.h
 *	  Contracts over an Avro schema (avro_contract.c).
 *
 * IDENTIFICATION
 *	  src/kl_catalog/avro_contract.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_AVRO_CONTRACT_H
#define KAFKA_LAKE_AVRO_CONTRACT_H

#include "contract/contract.h"

extern bool kl_definition_is_avro(const char *definition);
extern bool kl_avro_definition_subject(const char *definition, char **server, char **subject,
									   int32 *version);
extern char *kl_avro_definition_subject_name(const char *definition);
extern void kl_avro_check_server(const KlContract *c, const char *server_name);
extern char *kl_avro_definition_embed(const char *definition, const char *schema,
									  int32 schema_id, int32 version);
extern KlContract *kl_avro_contract_compile(const char *name, int32 version,
											const char *definition, bool check,
											MemoryContext cxt);

#endif							/* KAFKA_LAKE_AVRO_CONTRACT_H */
