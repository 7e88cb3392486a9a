/*-------------------------------------------------------------------------
 *
 * export_manifest.h
 *	  The per-date JSON of an export, written and read (export_manifest.c).
 *
 * IDENTIFICATION
 *	  src/format/export_manifest.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_EXPORT_MANIFEST_H
#define KAFKA_LAKE_EXPORT_MANIFEST_H

#include "base/digest.h"

/* One file of a date's export */
typedef struct KlExportFile
{
	char	   *relation;		/* kafka_lake.<relation>: [a-z0-9_]+ */
	char	   *kind;			/* "silver" or "gold" */
	char	   *path;			/* relative to <export_dir>/<source> */
	int64		rows;
	int64		bytes;
	char		sha256[KL_SHA256_LEN * 2 + 1];	/* hex */
} KlExportFile;

/* What a date's export holds: _snapshots/business_date=<date>.json */
typedef struct KlExportManifest
{
	char	   *source;
	char	   *business_date;	/* YYYY-MM-DD */
	int64		snapshot_id;
	char	   *run_id;
	char	   *source_hash;
	char	   *closing_status;
	int			nfiles;
	KlExportFile *files;
} KlExportManifest;

extern char *kl_export_manifest_text(const KlExportManifest *m);
extern bool kl_export_manifest_parse(const char *json, size_t len, KlExportManifest *m);

#endif							/* KAFKA_LAKE_EXPORT_MANIFEST_H */
