/*-------------------------------------------------------------------------
 *
 * csv.h
 *	  The canonical CSV of the bridge, written and read back (csv.c).
 *
 * IDENTIFICATION
 *	  src/bridge/csv.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_CSV_H
#define KAFKA_LAKE_CSV_H

#include "lib/stringinfo.h"

#include "base/thread_job.h"

/* The columns of the canonical CSV, in their order */
typedef enum KlCsvColumn
{
	KL_CSV_EVENT_TIME,
	KL_CSV_PLANT_ID,
	KL_CSV_LINE_ID,
	KL_CSV_WORK_ORDER_ID,
	KL_CSV_MACHINE_ID,
	KL_CSV_PRODUCT_CODE,
	KL_CSV_OPERATION,
	KL_CSV_UNITS_PRODUCED,
	KL_CSV_DEFECT_COUNT,
	KL_CSV_CYCLE_TIME_MS,
	KL_CSV_BUSINESS_DATE,
	KL_CSV_EVENT_ID,
	KL_CSV_SCHEMA_VERSION,
	KL_CSV_KAFKA_TOPIC,
	KL_CSV_KAFKA_PARTITION,
	KL_CSV_KAFKA_OFFSET,
	KL_CSV_KAFKA_KEY,
	KL_CSV_KAFKA_TIMESTAMP_MS,
	KL_CSV_KAFKA_RECORD_FINGERPRINT,
	KL_CSV_NCOLUMNS
} KlCsvColumn;

/* One value of a CSV record */
typedef struct KlCsvValue
{
	const char *str;			/* text (not NUL-terminated) */
	size_t		len;
	int64		ival;			/* when is_int */
	bool		is_int;
	bool		is_null;		/* an empty field */
} KlCsvValue;

/* Reading a canonical CSV file back */
typedef struct KlCsvReader
{
	char	   *path;
	int			fd;
	char	   *buf;			/* unread bytes are buf[pos..len) */
	size_t		cap;
	size_t		len;
	size_t		pos;
	bool		eof;
	int64		records;		/* records returned so far */
} KlCsvReader;

/* Reading on with a read-ahead thread (kl_csv_ahead_start) */
#define KL_CSV_AHEAD_RECORDS	4096

typedef struct KlCsvBlock
{
	char	   *buf;			/* bytes buf[0..len) of the file */
	size_t		cap;
	size_t		len;
	bool		eof;			/* the file ends after them */
	char	  **fields;			/* per record, maxfields slots */
	int		   *lens;
	int		   *nfields;
	int			nrecords;		/* records split */
	size_t		consumed;		/* their bytes */
	const char *error;			/* the record after them is malformed */
	int			read_errno;
	bool		need_room;		/* no whole record fits: grow, read on */
	int			next;			/* the next record to hand out */
	bool		exhausted;		/* handed out, or not yet read */
	bool		last;			/* no block follows */
} KlCsvBlock;

typedef struct KlCsvAhead
{
	KlCsvReader *r;
	int			fd;
	int			maxfields;
	KlCsvBlock	blocks[2];
	int			cur;			/* the block records come from */
	KlCsvBlock *block;			/* the block of the job last started */
	KlJob		job;			/* that job, while it is out: join it */
} KlCsvAhead;

extern const char *const kl_csv_columns[KL_CSV_NCOLUMNS];
extern const char kl_csv_header[];
extern void kl_csv_append_field(StringInfo out, const char *s, size_t len);
extern void kl_csv_append_int64(StringInfo out, int64 v);
extern void kl_csv_append_values(StringInfo out, const KlCsvValue *values, int n);
extern void kl_csv_append_row(StringInfo out, const KlCsvValue *values);
extern void kl_csv_open(KlCsvReader *r, const char *path);
extern void kl_csv_ahead_start(KlCsvAhead *a, KlCsvReader *r, int maxfields);
extern int	kl_csv_ahead_next(KlCsvAhead *a, char ***fields, int **lens);
extern void kl_csv_ahead_stop(KlCsvAhead *a);
extern int	kl_csv_next(KlCsvReader *r, char **fields, int *lens, int maxfields);
extern void kl_csv_close(KlCsvReader *r);

#endif							/* KAFKA_LAKE_CSV_H */
