/*-------------------------------------------------------------------------
 *
 * catalog_bridge.h
 *	  The bridge's own tables of the catalog (catalog_bridge.c).
 *
 * IDENTIFICATION
 *	  src/catalog_bridge.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_CATALOG_BRIDGE_H
#define KAFKA_LAKE_CATALOG_BRIDGE_H

#include "bridge.h"

/* What SQL says of a run's silver rows (kl_catalog_silver_numbers) */
typedef struct KlSilverNumbers
{
	int64		rows;
	char	   *units;			/* sum(units_produced), as text */
	char	   *defects;		/* sum(defect_count), as text */
	int64		bad_nulls;		/* rows with a null in a required column */
	int64		bad_operations; /* operation not among the accepted values */
	int64		bad_ranges;		/* numbers out of their ranges */
	int64		duplicate_rows; /* rows beyond the first of their natural key */
	char	   *columns;		/* silver's columns in pg_attribute */
} KlSilverNumbers;

extern bool kl_catalog_record_adapter(KlBridge *b);
extern char *kl_catalog_extension_version(void);
extern bool kl_catalog_processed_run(KlBridge *b, KlPriorRun *prior);
extern bool kl_catalog_current_snapshot(KlBridge *b, int64 *snapshot_id);
extern void kl_catalog_silver_numbers(const char *run_id, KlSilverNumbers *out);
extern void kl_catalog_record_run(KlBridge *b, const char *status, int gold_rows,
								  bool has_snapshot, int64 snapshot_id);
extern int64 kl_catalog_next_snapshot_id(void);
extern void kl_catalog_publish_snapshot(KlBridge *b, int64 snapshot_id);
extern void kl_catalog_insert_gold(KlBridge *b, int64 snapshot_id, char **rates,
								   char **averages);

#endif							/* KAFKA_LAKE_CATALOG_BRIDGE_H */
