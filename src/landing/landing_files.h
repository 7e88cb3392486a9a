/*-------------------------------------------------------------------------
 *
 * landing_files.h
 *	  The landing directory on disk (landing_files.c).
 *
 * IDENTIFICATION
 *	  src/landing/landing_files.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_LANDING_FILES_H
#define KAFKA_LAKE_LANDING_FILES_H

#include <sys/types.h>

#include "nodes/pg_list.h"

#include "format/batch_format.h"
#include "kl_catalog/catalog.h"

#define KL_SOURCE_MARKER		".kafka_lake_source"	/* in a source's directory */
#define KL_EXPIRED_MARKER		"EXPIRED"	/* in an expired batch's directory */

/* What the marker of a source directory says (kl_read_source_marker) */
typedef enum KlMarkerState
{
	KL_MARKER_NO_DIR,			/* no directory */
	KL_MARKER_ABSENT,			/* a directory without a marker */
	KL_MARKER_NOT_REGULAR,		/* the marker is not a regular file */
	KL_MARKER_OURS,				/* this database's marker of the source */
	KL_MARKER_OTHER				/* another database's, or another source's */
} KlMarkerState;

/* A batch written from lines already made (compaction) */
typedef struct KlBatchWriter KlBatchWriter;

extern char *kl_landing_root(void);
extern char *kl_partition_dir(KlSource *src, int32 partition);
extern char *kl_batch_partition_dir(KlSource *src, const KlBatch *b);
extern char *kl_staging_marker(const KlSource *src, int32 partition);
extern void kl_make_dirs(const char *path);
extern bool kl_source_dir_is_ours(const char *dir);
extern void kl_claim_source_dir(const char *dir, const char *source);
extern char *kl_read_source_marker(const char *dir, const char *source, KlMarkerState *state,
								   Oid *dbid);
extern void kl_write_source_marker(const char *dir, const char *source);
extern void kl_check_landing_owned(KlSource *src);
extern bool kl_landing_present(KlSource *src);
extern void kl_remove_tree(const char *path);
extern const char *kl_file_kind(mode_t mode);
extern int	kl_open_landed(const char *path, const char **not_regular);
extern int	kl_open_landed_owned(const char *path, const char **not_regular);
extern char *kl_landed_open_problem(const char *not_regular);
extern char *kl_read_whole_file(const char *path, size_t *len, const char **not_regular);
extern int	kl_name_cmp(const ListCell *a, const ListCell *b);
extern List *kl_list_dir(const char *path, const char *prefix);
extern List *kl_disk_partitions(KlSource *src);
extern void kl_write_batch(KlSource *src, int32 partition, KlRecord *recs, int n,
						   KlBatch *out);
/* One file of a unit being written (landing_files.c) */
typedef struct KlOutFile
{
	char	   *path;
	int			fd;				/* -1: not open */
	StringInfo	buf;			/* pending bytes (a reused buffer) */
	size_t		room;			/* the unit's longest line (kl_line_bound) */
	void	   *sha;			/* EVP_MD_CTX */
	uint32		crc;
	void	   *zstd;			/* ZSTD_CCtx, when the file is compressed */
	char	   *zout;			/* ... and its output buffer */
	size_t		zout_size;
	KlFileInfo	info;
} KlOutFile;

/* What the writer of a unit failed at */
typedef enum KlWriteOp
{
	KL_WOP_NONE,
	KL_WOP_CREATE,
	KL_WOP_WRITE,
	KL_WOP_FSYNC,
	KL_WOP_CLOSE,
	KL_WOP_NOMEM,
	KL_WOP_COMPRESS,
	KL_WOP_CANCELLED
} KlWriteOp;

/* A unit (a batch, or a readmit unit) being written: kl_unit_* */
typedef struct KlUnitWrite
{
	KlSource   *src;
	int32		partition;
	KlRecord   *recs;
	int			n;
	KlBatch    *out;
	char	   *topic_json;
	size_t		topic_json_len;
	char	   *staging_root;
	char	   *staging;
	char	   *part_dir;
	char	   *final;
	KlOutFile	files[KL_NFILES + 1];	/* the JSONL files, then manifest.json */
	/* the writer's result */
	bool		written;
	KlWriteOp	failed_op;
	int			failed_errno;
	const char *failed_detail;	/* ... zstd's words for a compression failure */
	const char *failed_path;
} KlUnitWrite;

extern KlUnitWrite *kl_unit_begin(KlSource *src, int32 partition, KlRecord *recs, int n,
								  const char *contract, int32 contract_version,
								  const char *readmit_of, KlBatch *out);
extern void kl_unit_write(KlUnitWrite *u, const volatile bool *cancel);
extern void kl_unit_finish(KlUnitWrite *u);
extern void kl_unit_abandon(KlUnitWrite *u);
extern KlBatchWriter *kl_batch_writer_new(KlSource *src, int32 partition, const char *batch_id);
extern const char *kl_batch_writer_staging(KlBatchWriter *w);
extern const char *kl_batch_writer_final(KlBatchWriter *w);
extern void kl_batch_writer_open(KlBatchWriter *w);
extern void kl_batch_writer_append(KlBatchWriter *w, int file, const char *data, size_t len,
								   int64 lines);
extern void kl_batch_writer_close_records(KlBatchWriter *w, KlBatch *b);
extern void kl_batch_writer_close(KlBatchWriter *w, KlBatch *b);
extern void kl_batch_writer_publish(KlBatchWriter *w, KlBatch *b);
extern char *kl_expired_marker_path(const char *batch_dir);
extern void kl_check_expired_marker_slot(const char *batch_dir);
extern void kl_write_expired_marker(const char *batch_dir, const char *batch_id,
									TimestampTz expired_at);
extern bool kl_has_expired_marker(const char *batch_dir);
extern void kl_write_batch_dir_file(const char *batch_dir, const char *name, const char *data,
									size_t len);
extern char *kl_zstd_frame(const char *data, size_t len, size_t *frame_len);
extern void kl_write_unit(KlSource *src, int32 partition, KlRecord *recs, int n,
						  const char *contract, int32 contract_version, const char *readmit_of,
						  KlBatch *out);

#endif							/* KAFKA_LAKE_LANDING_FILES_H */
