/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  The variables of kafka_lake's settings (settings.c).
 *
 * IDENTIFICATION
 *	  src/base/settings.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_SETTINGS_H
#define KAFKA_LAKE_SETTINGS_H

#define KL_BATCH_MAX_RECORDS_DEFAULT	50000
#define KL_BATCH_MAX_BYTES_DEFAULT		(64 * 1024 * 1024)

extern char *kl_landing_dir;
extern char *kl_export_dir;
extern int	kl_batch_max_records;
extern int	kl_batch_max_bytes;

#endif							/* KAFKA_LAKE_SETTINGS_H */
