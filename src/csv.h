/*-------------------------------------------------------------------------
 *
 * csv.h
 *	  The canonical CSV of the bridge, written and read back (csv.c).
 *
 * IDENTIFICATION
 *	  src/csv.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_CSV_H
#define KAFKA_LAKE_CSV_H

#include "lib/stringinfo.h"

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

extern const char *const kl_csv_columns[KL_CSV_NCOLUMNS];
extern const char kl_csv_header[];
extern void kl_csv_append_field(StringInfo out, const char *s, size_t len);
extern void kl_csv_append_int64(StringInfo out, int64 v);
extern void kl_csv_append_values(StringInfo out, const KlCsvValue *values, int n);
extern void kl_csv_append_row(StringInfo out, const KlCsvValue *values);
extern void kl_csv_open(KlCsvReader *r, const char *path);
extern int	kl_csv_next(KlCsvReader *r, char **fields, int *lens, int maxfields);
extern void kl_csv_close(KlCsvReader *r);

#endif							/* KAFKA_LAKE_CSV_H */
