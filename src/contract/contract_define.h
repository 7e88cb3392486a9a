/*-------------------------------------------------------------------------
 *
 * contract_define.h
 *	  The definition language of contracts: checking a definition,
 *	  compiling it, the built-in definitions, create_contract()
 *	  (contract_define.c).
 *
 * IDENTIFICATION
 *	  src/contract/contract_define.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_CONTRACT_DEFINE_H
#define KAFKA_LAKE_CONTRACT_DEFINE_H

#include "contract/contract.h"

#define KL_BUILTIN_MACHINE_EVENT_V1	KL_MACHINE_EVENT_V1

extern KlContract *kl_contract_compile(const char *name, int32 version, const char *definition,
									   size_t len, bool builtin, MemoryContext cxt);
extern void kl_contract_check(const char *name, const char *definition, MemoryContext cxt);
extern void kl_contract_check_sql_types(const KlContract *c);
extern void kl_contract_judgeable(const KlContract *c);
extern char *kl_contract_normalize(const char *definition, size_t len);
extern const char *kl_builtin_definition(const char *name);
extern void kl_check_contract_name(const char *name);
extern bool kl_contract_is_machine_event_v1(const KlContract *c);

#endif							/* KAFKA_LAKE_CONTRACT_DEFINE_H */
