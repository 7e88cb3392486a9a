/*-------------------------------------------------------------------------
 *
 * parquet.h
 *	  A minimal Apache Parquet file writer: flat schema, dictionary and
 *	  PLAIN encodings, ZSTD pages, statistics (parquet.c).
 *
 * A writer is fed one row at a time: one call per column (kl_pq_null or
 * the setter of the column's physical type), then kl_pq_end_row.  The
 * file's bytes go to a sink as they are made; kl_pq_finish writes the
 * footer.  Everything is allocated in the memory context current at
 * kl_pq_begin, and nothing else is held: after an ERROR the writer is
 * unusable, and its memory goes with that context (kl_pq_abort frees it
 * sooner).
 *
 * IDENTIFICATION
 *	  src/format/parquet.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_PARQUET_H
#define KAFKA_LAKE_PARQUET_H

/* a row group is flushed when its buffered pages reach this many bytes */
#define KL_PQ_ROW_GROUP_BYTES	(64 * 1024 * 1024)
/* a data page is cut when its buffered values reach this many bytes */
#define KL_PQ_PAGE_BYTES		(1024 * 1024)
/* a column chunk falls back to PLAIN when its dictionary would pass this */
#define KL_PQ_DICT_BYTES		(1024 * 1024)
/* values after which the first page of a chunk may decide against its dictionary */
#define KL_PQ_DICT_PROBE_VALUES	8192
/* a BYTE_ARRAY min or max longer than this leaves the chunk without min/max */
#define KL_PQ_STAT_MAX_BYTES	64
/* the longest value a page can hold with its levels (a page's size is an i32) */
#define KL_PQ_MAX_VALUE_BYTES	((size_t) PG_INT32_MAX - 64)
/* FileMetaData.created_by unless kl_pq_created_by says otherwise */
#define KL_PQ_CREATED_BY		"kafka_lake"

/* Parquet's physical types */
typedef enum KlPqPhysical
{
	KL_PQ_BOOLEAN,
	KL_PQ_INT32,
	KL_PQ_INT64,
	KL_PQ_FLOAT,
	KL_PQ_DOUBLE,
	KL_PQ_BYTE_ARRAY,
	KL_PQ_FIXED_LEN_BYTE_ARRAY
} KlPqPhysical;

/* the logical types written (LogicalType, and the ConvertedType if any) */
typedef enum KlPqLogical
{
	KL_PQ_NONE,
	KL_PQ_STRING,				/* BYTE_ARRAY, UTF-8 */
	KL_PQ_JSON,					/* BYTE_ARRAY, UTF-8 */
	KL_PQ_DATE,					/* INT32, days since 1970-01-01 */
	KL_PQ_TIMESTAMP_UTC_MICROS, /* INT64, microseconds since the epoch */
	KL_PQ_TIMESTAMP_LOCAL_MICROS,	/* INT64, local microseconds */
	KL_PQ_DECIMAL,				/* INT32, INT64 or FIXED_LEN_BYTE_ARRAY */
	KL_PQ_INT16,				/* INT32 holding an int2 */
	KL_PQ_UUID					/* FIXED_LEN_BYTE_ARRAY(16) */
} KlPqLogical;

/* One column of the file: a leaf of the flat schema */
typedef struct KlPqColumn
{
	const char *name;			/* column name (UTF-8) */
	KlPqPhysical physical;
	KlPqLogical logical;
	int			precision;		/* DECIMAL */
	int			scale;			/* DECIMAL */
	int			type_length;	/* FIXED_LEN_BYTE_ARRAY: bytes (16 for UUID;
								 * DECIMAL: kl_pq_decimal_bytes(precision)) */
	bool		nullable;		/* OPTIONAL (definition levels) or REQUIRED */
	int			field_id;		/* written as SchemaElement.field_id (Iceberg
								 * selects columns by it); 0 = none */
} KlPqColumn;

/*
 * Where the file's bytes go: called with consecutive chunks; the caller
 * writes them to a file and hashes them.  It may ereport.
 */
typedef void (*KlPqSink) (void *arg, const void *data, size_t len);

typedef struct KlPqWriter KlPqWriter;

extern KlPqWriter *kl_pq_begin(const KlPqColumn *columns, int ncolumns,
							   KlPqSink sink, void *sink_arg, int64 row_group_rows);
extern void kl_pq_created_by(KlPqWriter *w, const char *created_by);
extern void kl_pq_key_value(KlPqWriter *w, const char *key, const char *value);
extern void kl_pq_null(KlPqWriter *w, int col);
extern void kl_pq_bool(KlPqWriter *w, int col, bool v);
extern void kl_pq_int32(KlPqWriter *w, int col, int32 v);
extern void kl_pq_int64(KlPqWriter *w, int col, int64 v);
extern void kl_pq_float(KlPqWriter *w, int col, float4 v);
extern void kl_pq_double(KlPqWriter *w, int col, float8 v);
extern void kl_pq_bytes(KlPqWriter *w, int col, const void *data, size_t len);
extern void kl_pq_end_row(KlPqWriter *w);
extern int64 kl_pq_rows(const KlPqWriter *w);
extern int64 kl_pq_finish(KlPqWriter *w);
extern void kl_pq_abort(KlPqWriter *w);
extern int	kl_pq_decimal_bytes(int precision);

#endif							/* KAFKA_LAKE_PARQUET_H */
