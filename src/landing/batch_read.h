/*-------------------------------------------------------------------------
 *
 * batch_read.h
 *	  A landed batch's files read back, checked (batch_read.c).
 *
 * IDENTIFICATION
 *	  src/landing/batch_read.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_BATCH_READ_H
#define KAFKA_LAKE_BATCH_READ_H

#include "base/thread_job.h"
#include "format/batch_format.h"
#include "kl_catalog/catalog.h"

/* One file of a batch, read and checked */
typedef struct KlFileReader
{
	const char *source;
	const KlBatch *batch;
	int			file;			/* KL_FILE_* */
	char	   *path;
	char	   *data;			/* the whole file */
	size_t		len;
	const char *pos;			/* next line */
	int64		lineno;			/* of the last line returned */
	ErrorContextCallback errcallback;
	bool		own_data;		/* data is freed by kl_reader_close */
} KlFileReader;

/* a file being read by a thread of its own (kl_reader_open_ahead) */
typedef struct KlReadAhead
{
	KlJob		job;			/* joined by kl_reader_wait or kl_reader_stop */
	int			fd;
	bool		owned;			/* fd is the job's: it closes it (-1 after) */
	char	   *data;			/* the caller's buffer */
	size_t		want;			/* bytes, as the manifest says */
	size_t		done;			/* results, read after the join */
	int64		lines;
	uint32		crc;
	int			read_errno;
	/* a compressed file: its frame is read, checked, then uncompressed */
	bool		compressed;
	char	   *frame;			/* the bytes on disk */
	size_t		raw_want;		/* the bytes of its lines, as the manifest says */
	uint32		expect_crc;
	size_t		raw_done;		/* results: the bytes of lines in data */
	const char *zstd_error;		/* ... or why the frame could not be */
	bool		cancelled;		/* result: the job was stopped before the end */
} KlReadAhead;

extern void kl_check_manifest(KlSource *src, const KlBatch *b);
extern void kl_refuse_expired(KlSource *src, List *expired, const char *what);
extern void kl_reader_open(KlFileReader *r, KlSource *src, const KlBatch *b, int file);
extern void kl_reader_open_buffer(KlFileReader *r, KlSource *src, const KlBatch *b, int file,
								  char **buffer, size_t *buffer_size);
extern bool kl_reader_open_ahead(KlFileReader *r, KlSource *src, const KlBatch *b, int file,
								 char **buffer, size_t *buffer_size, KlReadAhead *ra,
								 bool quiet);
extern bool kl_reader_wait(KlFileReader *r, KlReadAhead *ra);
extern void kl_reader_stop(KlReadAhead *ra);
extern void kl_reader_discard(KlFileReader *r, KlReadAhead *ra);
extern bool kl_reader_next(KlFileReader *r, const char **line, size_t *len);
extern void kl_reader_close(KlFileReader *r);
extern char *kl_check_batch_files(const char *batch_dir, const KlBatch *b,
								  bool full, int *bad_file);
extern void kl_read_manifest(const char *batch_dir, KlBatch *b,
							 KlRecord **recs, int *n);
extern char *kl_read_checked_entries(const char *batch_dir, const KlBatch *b, KlBatch *mb,
									 KlRecord **recs, int *n, size_t *len);
extern void kl_batch_load_fingerprints(KlSource *src, KlBatch *b, bool prefixes_ok);
extern char *kl_read_checked_manifest(const char *batch_dir, const KlBatch *b,
									  size_t *len, char **problem);
extern char *kl_read_checked_file(const char *batch_dir, const KlBatch *b, int file,
								  bool full, size_t *len, char **problem);
extern const char *kl_unzstd(const char *frame, size_t len, char *out, size_t cap,
							 size_t *out_len);

#endif							/* KAFKA_LAKE_BATCH_READ_H */
