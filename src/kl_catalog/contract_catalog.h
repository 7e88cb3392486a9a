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

/* what a column of a type reads (kl_type_reads), what a field needs (kl_field_kinds) */
#define KL_READS_INTEGER	0x01
#define KL_READS_NUMBER		0x02
#define KL_READS_STRING		0x04
#define KL_READS_DATE		0x08
#define KL_READS_DATE_TIME	0x10
#define KL_READS_BOOLEAN	0x20
#define KL_READS_JSON		0x40
#define KL_READS_ALL		0x7F

extern bool kl_catalog_has_contracts(void);
extern int32 kl_catalog_create_contract(const char *name, const char *definition);
extern const KlContract *kl_contract_get(const char *name, int32 version);
extern const KlContract *kl_source_contract(const KlSource *src);
extern void kl_create_events_table(const char *source, const char *server, const KlContract *c);
extern void kl_catalog_mark_readmitted(KlSource *src, const char *batch_id, const int64 *offsets,
									   int n, bool mark);
extern int	kl_field_kinds(const KlSchema *s);
extern int	kl_type_reads(const char *type);
extern void kl_catalog_forget_readmit(KlSource *src, const KlBatch *u);

#endif							/* KAFKA_LAKE_CONTRACT_CATALOG_H */
