/*-------------------------------------------------------------------------
 *
 * export.h
 *	  A published date's tables as Parquet files (export.c, export_table.c).
 *
 * IDENTIFICATION
 *	  src/export/export.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_EXPORT_H
#define KAFKA_LAKE_EXPORT_H

#include "utils/date.h"

#include "base/digest.h"

/* One table of a date's export and the file it got */
typedef struct KlExportTable
{
	char	   *relation;		/* kafka_lake.<relation> */
	const char *kind;			/* "silver" or "gold" */
	const char *id_column;		/* run_id (silver) or snapshot_id (gold) */
	char	   *id_value;		/* its value for the date's snapshot, as text */
	Oid			relid;
	char	   *file;			/* <relation>/business_date=<date>/part-00000.parquet */
	int64		rows;
	int64		bytes;
	char		sha256[KL_SHA256_LEN * 2 + 1];
} KlExportTable;

/* rows in a row group unless export() is told otherwise */
#define KL_EXPORT_ROW_GROUP_ROWS	122880

/* in export.c */
extern void kl_export_published(const char *source, DateADT date);

/* in export_table.c */
extern void kl_export_table_file(KlExportTable *t, const char *path, int64 row_group_rows,
								 const char *snapshot_id);

#endif							/* KAFKA_LAKE_EXPORT_H */
