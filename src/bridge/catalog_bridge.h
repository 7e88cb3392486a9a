/*-------------------------------------------------------------------------
 *
 * catalog_bridge.h
 *	  The bridge's own tables of the catalog (catalog_bridge.c).
 *
 * IDENTIFICATION
 *	  src/bridge/catalog_bridge.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_CATALOG_BRIDGE_H
#define KAFKA_LAKE_CATALOG_BRIDGE_H

#include "bridge/bridge.h"

extern bool kl_catalog_record_adapter(KlBridge *b);
extern char *kl_catalog_extension_version(void);
extern bool kl_catalog_processed_run(KlBridge *b, KlPriorRun *prior);
extern bool kl_catalog_current_is_input(KlBridge *b);
extern bool kl_catalog_current_snapshot(KlBridge *b, int64 *snapshot_id);
extern char **kl_catalog_check_query(const char *sql, const char *run_id, bool sort_distinct,
									 int *ncols);
extern char *kl_catalog_silver_columns(const char *relname);
extern KlCatalogSave kl_catalog_definer_begin(const char *function, const char *owner);
extern int64 kl_catalog_owner_check(const char *function, const char *owner, const char *run_id,
									 char **first);
extern void kl_catalog_record_run(KlBridge *b, const char *status, int gold_rows,
								  bool has_snapshot, int64 snapshot_id);
extern int64 kl_catalog_next_snapshot_id(void);
extern void kl_catalog_publish_snapshot(KlBridge *b, int64 snapshot_id);
extern void kl_catalog_insert_gold(KlBridge *b, KlGoldDef *g, int64 snapshot_id);
extern void kl_catalog_record_definitions(KlBridge *b, int64 snapshot_id);
extern void kl_catalog_supersede_run(const char *run_id, bool back);
extern bool kl_catalog_snapshots_differ(KlBridge *b, int64 before, int64 after);
extern void kl_catalog_copy_golds(int32 source_id, int64 from, int64 to,
								  const char *closing_status);

#endif							/* KAFKA_LAKE_CATALOG_BRIDGE_H */
