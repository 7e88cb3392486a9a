/*-------------------------------------------------------------------------
 *
 * contract_catalog.h
 *	  Contracts in the catalog: kafka_lake.contracts, the compiled
 *	  contracts of a backend, create_contract(), alter_source() and the
 *	  typed foreign table <source>_events (contract_catalog.c).
 *
 * IDENTIFICATION
 *	  src/kl_catalog/contract_catalog.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_CONTRACT_CATALOG_H
#define KAFKA_LAKE_CONTRACT_CATALOG_H

#include "contract/contract.h"
#include "kl_catalog/catalog.h"

extern bool kl_catalog_has_contracts(void);
extern const KlContract *kl_contract_get(const char *name, int32 version);
extern const KlContract *kl_source_contract(const KlSource *src);
extern void kl_create_events_table(const char *source, const char *server, const KlContract *c);
extern void kl_catalog_mark_readmitted(KlSource *src, const char *batch_id, const int64 *offsets,
									   int n, bool mark);
extern void kl_catalog_forget_readmit(KlSource *src, const KlBatch *u);

#endif							/* KAFKA_LAKE_CONTRACT_CATALOG_H */
