/*-------------------------------------------------------------------------
 *
 * parquet.c
 *	  A minimal Apache Parquet file writer, in C with nothing but libzstd:
 *	  a flat schema of REQUIRED and OPTIONAL leaves, dictionary encoding
 *	  with a PLAIN fallback, data pages v1, every page ZSTD-compressed, and
 *	  column chunk statistics, laid out as parquet-mr and Arrow lay out
 *	  theirs so that any reader takes them.
 *
 * THE FILE
 *
 * "PAR1", the row groups, the footer, its length (4 bytes little-endian)
 * and "PAR1" again.  A row group holds one column chunk per column, in
 * schema order; a chunk is its dictionary page (when it has one) and its
 * data pages.  The footer is the FileMetaData in Thrift's compact protocol:
 * version 1, the schema (the root "schema" and one leaf per column, each
 * with its field_id when it has one), the row groups, TYPE_ORDER as every
 * column's order, the key/value metadata and created_by.  The field ids
 * and enum values are parquet-format's src/main/thrift/parquet.thrift.
 *
 * Each leaf carries its LogicalType and, where one exists, the legacy
 * ConvertedType that older readers know (UTF8, JSON, DATE, DECIMAL with
 * the SchemaElement's scale and precision, INT_16, TIMESTAMP_MICROS; the
 * specification asks for TIMESTAMP_MICROS on local timestamps too).
 *
 * PAGES
 *
 * A data page (v1) is the definition levels of its values, for a nullable
 * column only (the RLE/bit-packed hybrid of bit width 1, after its length
 * in 4 bytes little-endian), then the non-null values; no repetition
 * levels, the schema being flat.  A page is cut when the values buffered
 * for it (one byte per level, four per dictionary index, the PLAIN bytes
 * otherwise) reach KL_PQ_PAGE_BYTES; a value larger than that gets a page
 * of its own.  Every page is compressed whole (ZSTD_compress, level 3):
 * the page header, left uncompressed, gives both sizes.
 *
 * The hybrid encoding of levels and indices writes a run of eight or more
 * equal values as one RLE run (a constant column, a business date, costs a
 * few bytes a page) and the rest in bit-packed groups of eight, a group
 * being padded with zeros only at the end of the data.
 *
 * THE DICTIONARY
 *
 * Every type but BOOLEAN (PLAIN, bit-packed) is dictionary-encoded: a
 * chunk's distinct values go to a dictionary (PLAIN, found again through
 * an open-addressing hash of their bytes), and its data pages hold
 * RLE_DICTIONARY indices: a bit-width byte, then the hybrid encoding of
 * the indices.  The dictionary page is written first in the chunk, when the
 * row group is flushed, since its entries are known only then.
 *
 * Two things make the rest of a chunk PLAIN, as in parquet-mr.  When a new
 * value would take the dictionary past KL_PQ_DICT_BYTES of PLAIN bytes, the
 * page being filled is cut as it is: the pages already cut keep their
 * indices, and the dictionary stays for them.  And the chunk's first page
 * with values decides whether the dictionary pays at all: when its indices
 * and the dictionary are no smaller than its values PLAIN (mostly distinct
 * values: event ids, timestamps, amounts), that page is written PLAIN and
 * the dictionary is dropped.  The next chunk starts with a dictionary
 * again.  A page without any value before the dictionary has an entry is
 * PLAIN (it holds levels only): an all-null chunk has no dictionary page.
 * A chunk's encodings list PLAIN, RLE (the levels) and RLE_DICTIONARY as
 * used, and its encoding_stats count the pages of each.
 *
 * STATISTICS
 *
 * Each chunk has null_count and min_value/max_value in its type's order:
 * signed for INT32 and INT64 (DATE, TIMESTAMP, INT16 and DECIMAL on them
 * too), IEEE for FLOAT and DOUBLE (NaN left out and counted in nan_count,
 * which is always written; a zero minimum written -0.0 and a zero maximum
 * +0.0, as the specification says; no min/max when every value is NaN),
 * false < true for BOOLEAN, unsigned bytewise for BYTE_ARRAY and
 * FIXED_LEN_BYTE_ARRAY, but two's complement for a DECIMAL on
 * FIXED_LEN_BYTE_ARRAY.  The legacy
 * min/max are written too where the order is signed (the numbers and
 * BOOLEAN), as parquet-mr does.  Values are PLAIN, without a length prefix,
 * and exact (is_min_value_exact, is_max_value_exact).  A byte array min or
 * max longer than KL_PQ_STAT_MAX_BYTES leaves the chunk without min/max,
 * which is always correct, where a truncated max would have to be rounded
 * up; to know it, only the first KL_PQ_STAT_MAX_BYTES + 1 bytes of each
 * are kept.
 *
 * MEMORY
 *
 * A writer holds the row group being filled: each column's compressed data
 * pages, its page being filled, its dictionary and the dictionary's hash.
 * The row group is flushed at row_group_rows rows or when those reach
 * KL_PQ_ROW_GROUP_BYTES.  Past row groups leave their footer entry only
 * (already serialized).  Compression needs no state kept between pages, so
 * nothing is allocated outside PostgreSQL's memory context: an ERROR
 * (including one raised by the sink) leaks nothing.
 *
 * IDENTIFICATION
 *	  src/format/parquet.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
#include <zstd.h>

#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"

#include "format/parquet.h"

#define KL_PQ_ZSTD_LEVEL		3
#define KL_PQ_MAGIC				"PAR1"

/* parquet.thrift: enum Type */
#define PQ_TYPE_BOOLEAN			0
#define PQ_TYPE_INT32			1
#define PQ_TYPE_INT64			2
#define PQ_TYPE_FLOAT			4
#define PQ_TYPE_DOUBLE			5
#define PQ_TYPE_BYTE_ARRAY		6
#define PQ_TYPE_FIXED_LEN_BYTE_ARRAY 7

/* enum ConvertedType */
#define PQ_CONVERTED_UTF8		0
#define PQ_CONVERTED_DECIMAL	5
#define PQ_CONVERTED_DATE		6
#define PQ_CONVERTED_TIMESTAMP_MICROS 10
#define PQ_CONVERTED_INT_16		16
#define PQ_CONVERTED_JSON		19

/* enum FieldRepetitionType */
#define PQ_REQUIRED				0
#define PQ_OPTIONAL				1

/* enum Encoding */
#define PQ_ENC_PLAIN			0
#define PQ_ENC_RLE				3
#define PQ_ENC_RLE_DICTIONARY	8

/* enum CompressionCodec */
#define PQ_CODEC_ZSTD			6

/* enum PageType */
#define PQ_PAGE_DATA			0
#define PQ_PAGE_DICTIONARY		2

/* union LogicalType */
#define PQ_LOGICAL_STRING		1
#define PQ_LOGICAL_DECIMAL		5
#define PQ_LOGICAL_DATE			6
#define PQ_LOGICAL_TIMESTAMP	8
#define PQ_LOGICAL_INTEGER		10
#define PQ_LOGICAL_JSON			12
#define PQ_LOGICAL_UUID			14

/* union TimeUnit */
#define PQ_TIMEUNIT_MICROS		2

/* union ColumnOrder */
#define PQ_ORDER_TYPE_ORDER		1

/* Thrift compact protocol: the types of fields and list elements */
#define TC_BOOLEAN_TRUE			1
#define TC_BOOLEAN_FALSE		2
#define TC_BYTE					3
#define TC_I16					4
#define TC_I32					5
#define TC_I64					6
#define TC_BINARY				8
#define TC_LIST					9
#define TC_STRUCT				12

#define TC_MAX_DEPTH			8

/* a growable byte buffer in the writer's context, past 1 GB if need be */
typedef struct KlPqBuf
{
	uint8	   *data;
	size_t		len;
	size_t		cap;
} KlPqBuf;

/* one slot of a dictionary's hash */
typedef struct KlPqDictSlot
{
	uint32		hash;
	uint32		entry;			/* dictionary index + 1; 0: an empty slot */
} KlPqDictSlot;

/* a value of a fixed-size type, for statistics */
typedef union KlPqScalar
{
	bool		b;
	int32		i32;
	int64		i64;
	float4		f4;
	float8		f8;
} KlPqScalar;

/* the statistics of a column chunk */
typedef struct KlPqStats
{
	int64		null_count;
	int64		nan_count;		/* FLOAT and DOUBLE */
	bool		has_minmax;		/* min and max hold a value */
	KlPqScalar	min;			/* BOOLEAN, INT32, INT64, FLOAT, DOUBLE */
	KlPqScalar	max;
	uint8		min_bytes[KL_PQ_STAT_MAX_BYTES + 1];	/* byte arrays: the first
														 * bytes */
	uint8		max_bytes[KL_PQ_STAT_MAX_BYTES + 1];
	int			min_len;		/* bytes held */
	int			max_len;
	bool		min_cut;		/* the value is longer than the bytes held */
	bool		max_cut;
} KlPqStats;

/* one column: its page being filled, its chunk, its dictionary */
typedef struct KlPqColumnState
{
	KlPqColumn	spec;			/* as given, name copied */
	int			width;			/* PLAIN bytes of a value; 0: BYTE_ARRAY or
								 * BOOLEAN */
	bool		signed_bytes;	/* DECIMAL on FIXED_LEN_BYTE_ARRAY: statistics
								 * in two's complement order */
	bool		byte_stats;		/* min/max compared as bytes */
	int64		nvalues;		/* values given in the file, the row check */

	/* the page being filled */
	int64		page_values;	/* values, nulls included */
	int64		page_nonnull;
	size_t		page_plain;		/* the PLAIN bytes of its values */
	KlPqBuf		levels;			/* nullable: a definition level per value */
	KlPqBuf		plain;			/* PLAIN values (BOOLEAN: bit-packed) */
	KlPqBuf		indices;		/* dictionary indices, a uint32 each */

	/* the dictionary of the chunk */
	bool		dict_on;		/* values go to the dictionary */
	KlPqBuf		dict;			/* its entries, PLAIN */
	KlPqBuf		dict_offsets;	/* BYTE_ARRAY: each entry's offset in dict, a
								 * uint32 each */
	uint32		ndict;
	KlPqDictSlot *slots;
	uint32		nslots;			/* a power of two; 0: none allocated */

	/* the chunk */
	KlPqBuf		chunk;			/* data pages, compressed, with headers */
	int64		chunk_uncompressed; /* their bytes before compression */
	int			dict_data_pages;	/* RLE_DICTIONARY data pages */
	int			plain_data_pages;	/* PLAIN data pages */
	KlPqStats	stats;

	/* where the chunk went, once flushed (for its ColumnMetaData) */
	int64		dict_page_offset;	/* -1: no dictionary page */
	int64		data_page_offset;
	int64		total_uncompressed;
	int64		total_compressed;
} KlPqColumnState;

struct KlPqWriter
{
	MemoryContext cxt;			/* where everything is */
	KlPqColumnState *cols;
	int			ncols;
	KlPqSink	sink;
	void	   *sink_arg;
	int64		row_group_rows; /* 0: rows do not end a row group */
	int64		offset;			/* bytes handed to the sink */
	int64		rows;			/* rows ended */
	int64		group_rows;		/* of which in the row group being filled */
	int			row_filled;		/* columns given a value in this row */
	KlPqBuf		page;			/* a page before compression */
	KlPqBuf		zpage;			/* a page compressed */
	size_t		raw_len;		/* its bytes before compression */
	KlPqBuf		header;			/* a page header */
	KlPqBuf		row_groups;		/* the footer's RowGroup structs */
	int			nrow_groups;
	char	  **kv_keys;		/* key_value_metadata */
	char	  **kv_values;		/* NULL: no value */
	int			nkv;
	int			kv_cap;
	char	   *created_by;
};

/* a Thrift compact protocol writer on a buffer */
typedef struct KlPqThrift
{
	KlPqWriter *w;
	KlPqBuf    *out;
	int			depth;			/* structs open */
	int			last[TC_MAX_DEPTH + 1]; /* the last field id of each */
} KlPqThrift;

static void kl_pq_dict_drop(KlPqColumnState *c, bool keep_entries);
static const uint8 *kl_pq_dict_entry(const KlPqColumnState *c, uint32 index, size_t *len);


/* the names of KlPqPhysical and KlPqLogical, for messages */
static const char *const kl_pq_physical_names[] = {
	"BOOLEAN", "INT32", "INT64", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"
};
static const char *const kl_pq_logical_names[] = {
	"NONE", "STRING", "JSON", "DATE", "TIMESTAMP (UTC)", "TIMESTAMP (local)", "DECIMAL",
	"INT(16)", "UUID"
};

/* ----------------------------------------------------------------
 *		Buffers
 * ----------------------------------------------------------------
 */

/*
 * kl_pq_reserve
 *		Room for more bytes in a buffer.
 */
static inline void
kl_pq_reserve(KlPqWriter *w, KlPqBuf *b, size_t more)
{
	size_t		cap;

	if (b->cap - b->len >= more)
		return;
	cap = Max(b->cap, 256);
	while (cap - b->len < more)
		cap *= 2;
	if (b->data == NULL)
		b->data = MemoryContextAllocHuge(w->cxt, cap);
	else
		b->data = repalloc_huge(b->data, cap);
	b->cap = cap;
}

/*
 * kl_pq_append, kl_pq_append_byte
 *		Bytes at the end of a buffer.
 */
static inline void
kl_pq_append(KlPqWriter *w, KlPqBuf *b, const void *data, size_t len)
{
	kl_pq_reserve(w, b, len);
	if (len > 0)
		memcpy(b->data + b->len, data, len);
	b->len += len;
}

static inline void
kl_pq_append_byte(KlPqWriter *w, KlPqBuf *b, uint8 v)
{
	kl_pq_reserve(w, b, 1);
	b->data[b->len++] = v;
}

/*
 * kl_pq_free_buf
 *		Give a buffer's memory back.
 */
static void
kl_pq_free_buf(KlPqBuf *b)
{
	if (b->data != NULL)
		pfree(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

/*
 * kl_pq_put32, kl_pq_put64
 *		Little-endian integers, whatever the machine's order.
 */
static inline void
kl_pq_put32(uint8 *p, uint32 v)
{
	p[0] = (uint8) v;
	p[1] = (uint8) (v >> 8);
	p[2] = (uint8) (v >> 16);
	p[3] = (uint8) (v >> 24);
}

static inline void
kl_pq_put64(uint8 *p, uint64 v)
{
	kl_pq_put32(p, (uint32) v);
	kl_pq_put32(p + 4, (uint32) (v >> 32));
}

/*
 * kl_pq_varint
 *		An unsigned ULEB-128 varint: Thrift's compact protocol and the
 *		hybrid encoding's run headers.
 */
static void
kl_pq_varint(KlPqWriter *w, KlPqBuf *b, uint64 v)
{
	uint8		bytes[10];
	int			n = 0;

	while (v >= 0x80)
	{
		bytes[n++] = (uint8) (v | 0x80);
		v >>= 7;
	}
	bytes[n++] = (uint8) v;
	kl_pq_append(w, b, bytes, n);
}

/*
 * kl_pq_emit
 *		Bytes to the sink, counted.
 */
static void
kl_pq_emit(KlPqWriter *w, const void *data, size_t len)
{
	if (len == 0)
		return;
	w->sink(w->sink_arg, data, len);
	w->offset += len;
}


/* ----------------------------------------------------------------
 *		Thrift compact protocol
 * ----------------------------------------------------------------
 */

/*
 * tc_begin
 *		Start writing at the end of out, outside any struct.
 */
static void
tc_begin(KlPqThrift *t, KlPqWriter *w, KlPqBuf *out)
{
	t->w = w;
	t->out = out;
	t->depth = 0;
	t->last[0] = 0;
}

/*
 * tc_varint, tc_zigzag
 *		An unsigned varint; a signed integer (i16, i32, i64) zigzag-encoded
 *		into one.
 */
static void
tc_varint(KlPqThrift *t, uint64 v)
{
	kl_pq_varint(t->w, t->out, v);
}

static void
tc_zigzag(KlPqThrift *t, int64 v)
{
	tc_varint(t, ((uint64) v << 1) ^ (uint64) (v >> 63));
}

/*
 * tc_field
 *		A field header: the id as a delta from the previous field's when it
 *		is 1 to 15, else in full.
 */
static void
tc_field(KlPqThrift *t, int id, int type)
{
	int			delta = id - t->last[t->depth];

	if (delta > 0 && delta <= 15)
		kl_pq_append_byte(t->w, t->out, (uint8) ((delta << 4) | type));
	else
	{
		kl_pq_append_byte(t->w, t->out, (uint8) type);
		tc_zigzag(t, id);
	}
	t->last[t->depth] = id;
}

/*
 * tc_push, tc_struct, tc_end
 *		Open a struct (a list element, or the outermost one), open a struct
 *		field, close the innermost struct.
 */
static void
tc_push(KlPqThrift *t)
{
	if (t->depth >= TC_MAX_DEPTH)
		elog(ERROR, "parquet metadata nested too deep");
	t->last[++t->depth] = 0;
}

static void
tc_struct(KlPqThrift *t, int id)
{
	tc_field(t, id, TC_STRUCT);
	tc_push(t);
}

static void
tc_end(KlPqThrift *t)
{
	Assert(t->depth > 0);
	kl_pq_append_byte(t->w, t->out, 0);
	t->depth--;
}

/*
 * tc_empty_struct
 *		A struct field of a struct without fields (StringType, MicroSeconds,
 *		TypeDefinedOrder...).
 */
static void
tc_empty_struct(KlPqThrift *t, int id)
{
	tc_struct(t, id);
	tc_end(t);
}

/*
 * tc_i32, tc_i64, tc_i16, tc_i8, tc_bool, tc_binary, tc_string
 *		A field and its value (a bool's value is its field's type).
 */
static void
tc_i32(KlPqThrift *t, int id, int32 v)
{
	tc_field(t, id, TC_I32);
	tc_zigzag(t, v);
}

static void
tc_i64(KlPqThrift *t, int id, int64 v)
{
	tc_field(t, id, TC_I64);
	tc_zigzag(t, v);
}

static void
tc_i16(KlPqThrift *t, int id, int16 v)
{
	tc_field(t, id, TC_I16);
	tc_zigzag(t, v);
}

static void
tc_i8(KlPqThrift *t, int id, int8 v)
{
	tc_field(t, id, TC_BYTE);
	kl_pq_append_byte(t->w, t->out, (uint8) v);
}

static void
tc_bool(KlPqThrift *t, int id, bool v)
{
	tc_field(t, id, v ? TC_BOOLEAN_TRUE : TC_BOOLEAN_FALSE);
}

static void
tc_binary(KlPqThrift *t, int id, const void *data, size_t len)
{
	tc_field(t, id, TC_BINARY);
	tc_varint(t, len);
	kl_pq_append(t->w, t->out, data, len);
}

static void
tc_string(KlPqThrift *t, int id, const char *s)
{
	tc_binary(t, id, s, strlen(s));
}

/*
 * tc_list
 *		A list field's header: its element type and count.
 */
static void
tc_list(KlPqThrift *t, int id, int elem_type, int64 n)
{
	tc_field(t, id, TC_LIST);
	if (n < 15)
		kl_pq_append_byte(t->w, t->out, (uint8) ((n << 4) | elem_type));
	else
	{
		kl_pq_append_byte(t->w, t->out, (uint8) (0xF0 | elem_type));
		tc_varint(t, n);
	}
}

/*
 * tc_elem_i32, tc_elem_string
 *		An element of a list.
 */
static void
tc_elem_i32(KlPqThrift *t, int32 v)
{
	tc_zigzag(t, v);
}

static void
tc_elem_string(KlPqThrift *t, const char *s)
{
	size_t		len = strlen(s);

	tc_varint(t, len);
	kl_pq_append(t->w, t->out, s, len);
}


/* ----------------------------------------------------------------
 *		The RLE/bit-packed hybrid
 * ----------------------------------------------------------------
 */

/*
 * kl_pq_hybrid_get
 *		Value i of levels (one byte each) or indices (a uint32 each).
 */
static inline uint32
kl_pq_hybrid_get(const uint8 *v, bool wide, size_t i)
{
	if (wide)
		return ((const uint32 *) v)[i];
	return v[i];
}

/*
 * kl_pq_run_length
 *		How many values from i on equal value i, counting up to limit.
 */
static inline size_t
kl_pq_run_length(const uint8 *v, bool wide, size_t n, size_t i, size_t limit)
{
	uint32		first = kl_pq_hybrid_get(v, wide, i);
	size_t		j = i + 1;

	while (j < n && j - i < limit && kl_pq_hybrid_get(v, wide, j) == first)
		j++;
	return j - i;
}

/*
 * kl_pq_hybrid
 *		The RLE/bit-packed hybrid encoding of n values of bit width bw
 *		(1 to 32) at the end of out, without a length prefix.
 *
 * Eight or more equal values make an RLE run (the value in (bw + 7) / 8
 * bytes, little-endian); others go into a bit-packed run of groups of eight
 * (values packed from the least significant bit), which ends where a run of
 * eight equal values begins.  Only the last group of the data is padded.
 */
static void
kl_pq_hybrid(KlPqWriter *w, KlPqBuf *out, const uint8 *v, bool wide,
			 size_t n, int bw)
{
	size_t		i = 0;
	int			value_bytes = (bw + 7) / 8;

	Assert(bw >= 1 && bw <= 32);
	while (i < n)
	{
		size_t		run = kl_pq_run_length(v, wide, n, i, SIZE_MAX);

		if (run >= 8)
		{
			uint32		value = kl_pq_hybrid_get(v, wide, i);
			uint8		b[4];

			kl_pq_varint(w, out, (uint64) run << 1);
			kl_pq_put32(b, value);
			kl_pq_append(w, out, b, value_bytes);
			i += run;
		}
		else
		{
			size_t		start = i;
			size_t		groups = 0;
			uint64		acc = 0;
			int			nbits = 0;
			uint8	   *p;

			/* how many groups: up to a run of eight, or the end */
			do
			{
				groups++;
				i += 8;
			} while (i < n && kl_pq_run_length(v, wide, n, i, 8) < 8);
			i = Min(i, n);

			kl_pq_varint(w, out, ((uint64) groups << 1) | 1);
			kl_pq_reserve(w, out, groups * bw);
			p = out->data + out->len;
			for (size_t k = 0; k < groups * 8; k++)
			{
				uint64		value = start + k < i ? kl_pq_hybrid_get(v, wide, start + k) : 0;

				acc |= value << nbits;
				nbits += bw;
				while (nbits >= 8)
				{
					*p++ = (uint8) acc;
					acc >>= 8;
					nbits -= 8;
				}
			}
			Assert(nbits == 0);
			out->len += groups * bw;
		}
	}
}


/* ----------------------------------------------------------------
 *		Pages
 * ----------------------------------------------------------------
 */

/*
 * kl_pq_compress
 *		A page's bytes compressed into w->zpage.
 */
static void
kl_pq_compress(KlPqWriter *w, const uint8 *data, size_t len)
{
	size_t		bound = ZSTD_compressBound(len);
	size_t		n;

	w->zpage.len = 0;
	kl_pq_reserve(w, &w->zpage, bound);
	n = ZSTD_compress(w->zpage.data, bound, data, len, KL_PQ_ZSTD_LEVEL);
	if (ZSTD_isError(n))
		elog(ERROR, "could not compress a parquet page: %s", ZSTD_getErrorName(n));
	if (n > PG_INT32_MAX || len > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("parquet page too large"),
				 errdetail("A page of %zu bytes (%zu compressed) exceeds the limit of %d bytes.",
						   len, n, PG_INT32_MAX)));
	w->zpage.len = n;
	w->raw_len = len;
}

/*
 * kl_pq_page_header
 *		The PageHeader of the page just compressed into w->header:
 *		a data page of num_values values and an encoding, or the dictionary
 *		page of num_values entries.
 */
static void
kl_pq_page_header(KlPqWriter *w, bool dictionary, int64 num_values, int encoding)
{
	KlPqThrift	t;

	w->header.len = 0;
	tc_begin(&t, w, &w->header);
	tc_push(&t);
	tc_i32(&t, 1, dictionary ? PQ_PAGE_DICTIONARY : PQ_PAGE_DATA);
	tc_i32(&t, 2, (int32) w->raw_len);
	tc_i32(&t, 3, (int32) w->zpage.len);
	if (dictionary)
	{
		tc_struct(&t, 7);		/* dictionary_page_header */
		tc_i32(&t, 1, (int32) num_values);
		tc_i32(&t, 2, encoding);
		tc_end(&t);
	}
	else
	{
		tc_struct(&t, 5);		/* data_page_header */
		tc_i32(&t, 1, (int32) num_values);
		tc_i32(&t, 2, encoding);
		tc_i32(&t, 3, PQ_ENC_RLE);	/* definition_level_encoding */
		tc_i32(&t, 4, PQ_ENC_RLE);	/* repetition_level_encoding */
		tc_end(&t);
	}
	tc_end(&t);
}

/*
 * kl_pq_index_width
 *		The bit width of a dictionary's indices (at least 1).
 */
static int
kl_pq_index_width(uint32 ndict)
{
	if (ndict <= 2)
		return 1;
	return pg_leftmost_one_pos32(ndict - 1) + 1;
}

/*
 * kl_pq_indices_to_plain
 *		The values of a column's page, held as dictionary indices, PLAIN at
 *		the end of out.
 */
static void
kl_pq_indices_to_plain(KlPqWriter *w, KlPqColumnState *c, KlPqBuf *out)
{
	const uint32 *indices = (const uint32 *) c->indices.data;
	size_t		n = c->indices.len / sizeof(uint32);

	kl_pq_reserve(w, out, c->page_plain);
	for (size_t i = 0; i < n; i++)
	{
		size_t		len;
		const uint8 *e = kl_pq_dict_entry(c, indices[i], &len);

		/* a BYTE_ARRAY entry is PLAIN with its length, just before it */
		if (c->width == 0)
		{
			e -= 4;
			len += 4;
		}
		kl_pq_append(w, out, e, len);
	}
}

/*
 * kl_pq_cut_page
 *		Encode, compress and append to its chunk the page a column is
 *		filling, and start the next.
 *
 * The first page of a chunk that has values decides whether the
 * dictionary pays (cut early, at KL_PQ_DICT_PROBE_VALUES values, when it
 * already looks as if it does not: kl_pq_add): when its indices and the dictionary take as many bytes
 * as its values PLAIN (values mostly distinct: ids, timestamps), the page
 * is written PLAIN and so is the rest of the chunk, without a dictionary,
 * as parquet-mr decides.
 */
static void
kl_pq_cut_page(KlPqWriter *w, KlPqColumnState *c)
{
	bool		by_dict;
	size_t		levels_end;

	if (c->page_values == 0)
		return;
	CHECK_FOR_INTERRUPTS();

	/* a page before the dictionary's first entry has no value: PLAIN */
	by_dict = c->dict_on && c->ndict > 0;
	Assert(by_dict || c->indices.len == 0);

	w->page.len = 0;
	if (c->spec.nullable)
	{
		kl_pq_reserve(w, &w->page, 4);
		w->page.len += 4;
		kl_pq_hybrid(w, &w->page, c->levels.data, false, c->levels.len, 1);
		kl_pq_put32(w->page.data, (uint32) (w->page.len - 4));
	}
	levels_end = w->page.len;
	if (by_dict)
	{
		int			bw = kl_pq_index_width(c->ndict);

		kl_pq_append_byte(w, &w->page, (uint8) bw);
		kl_pq_hybrid(w, &w->page, c->indices.data, true,
					 c->indices.len / sizeof(uint32), bw);
		if (c->dict_data_pages == 0 &&
			w->page.len - levels_end + c->dict.len >= c->page_plain)
		{
			w->page.len = levels_end;
			kl_pq_indices_to_plain(w, c, &w->page);
			kl_pq_dict_drop(c, false);
			by_dict = false;
		}
	}
	else
		kl_pq_append(w, &w->page, c->plain.data, c->plain.len);

	kl_pq_compress(w, w->page.data, w->page.len);
	kl_pq_page_header(w, false, c->page_values,
					  by_dict ? PQ_ENC_RLE_DICTIONARY : PQ_ENC_PLAIN);
	kl_pq_append(w, &c->chunk, w->header.data, w->header.len);
	kl_pq_append(w, &c->chunk, w->zpage.data, w->zpage.len);
	c->chunk_uncompressed += w->header.len + w->page.len;
	if (by_dict)
		c->dict_data_pages++;
	else
		c->plain_data_pages++;

	c->page_values = 0;
	c->page_nonnull = 0;
	c->page_plain = 0;
	c->levels.len = 0;
	c->plain.len = 0;
	c->indices.len = 0;
}


/* ----------------------------------------------------------------
 *		The dictionary
 * ----------------------------------------------------------------
 */

/*
 * kl_pq_dict_entry
 *		The bytes of a dictionary entry (without a BYTE_ARRAY's length).
 */
static const uint8 *
kl_pq_dict_entry(const KlPqColumnState *c, uint32 index, size_t *len)
{
	if (c->width > 0)
	{
		*len = c->width;
		return c->dict.data + (size_t) index * c->width;
	}
	else
	{
		uint32		at = ((const uint32 *) c->dict_offsets.data)[index];

		*len = (uint32) c->dict.data[at] | ((uint32) c->dict.data[at + 1] << 8) |
			((uint32) c->dict.data[at + 2] << 16) | ((uint32) c->dict.data[at + 3] << 24);
		return c->dict.data + at + 4;
	}
}

/*
 * kl_pq_dict_grow
 *		A hash twice as large (or a first one), its entries placed again.
 */
static void
kl_pq_dict_grow(KlPqWriter *w, KlPqColumnState *c)
{
	uint32		nslots = c->nslots == 0 ? 1024 : c->nslots * 2;
	KlPqDictSlot *slots = MemoryContextAllocHuge(w->cxt, sizeof(KlPqDictSlot) * nslots);

	memset(slots, 0, sizeof(KlPqDictSlot) * nslots);
	for (uint32 i = 0; i < c->nslots; i++)
	{
		uint32		s;

		if (c->slots[i].entry == 0)
			continue;
		s = c->slots[i].hash & (nslots - 1);
		while (slots[s].entry != 0)
			s = (s + 1) & (nslots - 1);
		slots[s] = c->slots[i];
	}
	if (c->slots != NULL)
		pfree(c->slots);
	c->slots = slots;
	c->nslots = nslots;
}

/*
 * kl_pq_dict_drop
 *		The rest of the chunk is PLAIN: forget the hash, and the entries
 *		too unless pages already cut refer to them (keep_entries: they stay
 *		for the chunk's dictionary page).
 */
static void
kl_pq_dict_drop(KlPqColumnState *c, bool keep_entries)
{
	c->dict_on = false;
	if (c->slots != NULL)
		pfree(c->slots);
	c->slots = NULL;
	c->nslots = 0;
	kl_pq_free_buf(&c->dict_offsets);
	if (!keep_entries)
	{
		c->dict.len = 0;
		c->ndict = 0;
	}
}

/*
 * kl_pq_dict_fall_back
 *		The dictionary is full: cut the page as it is (its indices refer to
 *		the dictionary, which stays for the chunk's dictionary page) and
 *		write the rest of the chunk PLAIN.
 */
static void
kl_pq_dict_fall_back(KlPqWriter *w, KlPqColumnState *c)
{
	kl_pq_cut_page(w, c);
	if (c->dict_on)
		kl_pq_dict_drop(c, true);
}

/*
 * kl_pq_dict_add
 *		The index of a value (its PLAIN bytes, without a BYTE_ARRAY's
 *		length) in the dictionary, added if new: false when the dictionary
 *		has no room for it.
 */
static bool
kl_pq_dict_add(KlPqWriter *w, KlPqColumnState *c, const uint8 *data, size_t len,
			   uint32 *index)
{
	size_t		entry_bytes = c->width > 0 ? len : len + 4;
	uint32		hash;
	uint32		s;

	/* too large to be in it or to enter it */
	if (entry_bytes > KL_PQ_DICT_BYTES)
		return false;

	if (c->nslots == 0)
		kl_pq_dict_grow(w, c);
	hash = hash_bytes(data, (int) len);
	s = hash & (c->nslots - 1);
	while (c->slots[s].entry != 0)
	{
		if (c->slots[s].hash == hash)
		{
			size_t		elen;
			const uint8 *e = kl_pq_dict_entry(c, c->slots[s].entry - 1, &elen);

			if (elen == len && (len == 0 || memcmp(e, data, len) == 0))
			{
				*index = c->slots[s].entry - 1;
				return true;
			}
		}
		s = (s + 1) & (c->nslots - 1);
	}

	if (c->dict.len + entry_bytes > KL_PQ_DICT_BYTES)
		return false;

	/* a new entry, in the empty slot found */
	if (c->width == 0)
	{
		uint32		at = (uint32) c->dict.len;
		uint8		b[4];

		kl_pq_append(w, &c->dict_offsets, &at, sizeof(at));
		kl_pq_put32(b, (uint32) len);
		kl_pq_append(w, &c->dict, b, 4);
	}
	kl_pq_append(w, &c->dict, data, len);
	c->slots[s].hash = hash;
	c->slots[s].entry = c->ndict + 1;
	*index = c->ndict++;
	if ((uint64) c->ndict * 2 > c->nslots)
		kl_pq_dict_grow(w, c);
	return true;
}


/* ----------------------------------------------------------------
 *		Statistics
 * ----------------------------------------------------------------
 */

/*
 * kl_pq_bytes_cmp
 *		Compare a value with the bytes held of a min or max (its first
 *		held_len bytes; cut: it is longer): unsigned bytewise, or with the
 *		first byte signed (two's complement).  Two values that agree on all
 *		the bytes held are both too long for statistics: they compare
 *		equal.
 */
static int
kl_pq_bytes_cmp(const uint8 *v, size_t len, const uint8 *held, int held_len,
				bool cut, bool signed_first)
{
	size_t		n = Min(len, (size_t) held_len);
	int			r;

	if (n > 0 && signed_first && v[0] != held[0])
		return (int) (int8) v[0] - (int) (int8) held[0];
	r = n > 0 ? memcmp(v, held, n) : 0;
	if (r != 0)
		return r;
	if (len < (size_t) held_len)
		return -1;
	if (cut)
		return 0;
	return len > (size_t) held_len ? 1 : 0;
}

/*
 * kl_pq_hold
 *		Keep the first bytes of a new min or max.
 */
static void
kl_pq_hold(uint8 *held, int *held_len, bool *cut, const uint8 *v, size_t len)
{
	size_t		n = Min(len, (size_t) KL_PQ_STAT_MAX_BYTES + 1);

	if (n > 0)
		memcpy(held, v, n);
	*held_len = (int) n;
	*cut = len > n;
}

/*
 * kl_pq_stats_bytes
 *		A byte array or fixed-length value into a chunk's min and max.
 */
static void
kl_pq_stats_bytes(KlPqColumnState *c, const uint8 *v, size_t len)
{
	KlPqStats  *st = &c->stats;

	if (!st->has_minmax)
	{
		kl_pq_hold(st->min_bytes, &st->min_len, &st->min_cut, v, len);
		kl_pq_hold(st->max_bytes, &st->max_len, &st->max_cut, v, len);
		st->has_minmax = true;
		return;
	}
	if (kl_pq_bytes_cmp(v, len, st->min_bytes, st->min_len, st->min_cut, c->signed_bytes) < 0)
		kl_pq_hold(st->min_bytes, &st->min_len, &st->min_cut, v, len);
	if (kl_pq_bytes_cmp(v, len, st->max_bytes, st->max_len, st->max_cut, c->signed_bytes) > 0)
		kl_pq_hold(st->max_bytes, &st->max_len, &st->max_cut, v, len);
}

/*
 * kl_pq_stats_plain
 *		A chunk's min or max in PLAIN encoding (no length prefix) into out,
 *		or false when it has none to write.
 */
static bool
kl_pq_stats_plain(const KlPqColumnState *c, bool want_min, uint8 *out, size_t *len)
{
	const KlPqStats *st = &c->stats;
	const KlPqScalar *v = want_min ? &st->min : &st->max;

	if (!st->has_minmax)
		return false;
	switch (c->spec.physical)
	{
		case KL_PQ_BOOLEAN:
			out[0] = v->b ? 1 : 0;
			*len = 1;
			break;
		case KL_PQ_INT32:
			kl_pq_put32(out, (uint32) v->i32);
			*len = 4;
			break;
		case KL_PQ_INT64:
			kl_pq_put64(out, (uint64) v->i64);
			*len = 8;
			break;
		case KL_PQ_FLOAT:
			{
				/* a zero minimum is -0.0, a zero maximum +0.0 */
				float4		f = v->f4 == 0 ? (want_min ? -0.0f : 0.0f) : v->f4;
				uint32		bits;

				memcpy(&bits, &f, 4);
				kl_pq_put32(out, bits);
				*len = 4;
				break;
			}
		case KL_PQ_DOUBLE:
			{
				float8		f = v->f8 == 0 ? (want_min ? -0.0 : 0.0) : v->f8;
				uint64		bits;

				memcpy(&bits, &f, 8);
				kl_pq_put64(out, bits);
				*len = 8;
				break;
			}
		case KL_PQ_BYTE_ARRAY:
		case KL_PQ_FIXED_LEN_BYTE_ARRAY:
			if (st->min_len > KL_PQ_STAT_MAX_BYTES || st->max_len > KL_PQ_STAT_MAX_BYTES)
				return false;
			*len = want_min ? st->min_len : st->max_len;
			memcpy(out, want_min ? st->min_bytes : st->max_bytes, *len);
			break;
	}
	return true;
}

/*
 * kl_pq_write_stats
 *		A chunk's Statistics struct, as field id of the struct being written.
 */
static void
kl_pq_write_stats(KlPqThrift *t, int id, const KlPqColumnState *c)
{
	uint8		min[KL_PQ_STAT_MAX_BYTES];
	uint8		max[KL_PQ_STAT_MAX_BYTES];
	size_t		min_len = 0;
	size_t		max_len = 0;
	bool		has_minmax;
	bool		is_float = c->spec.physical == KL_PQ_FLOAT ||
		c->spec.physical == KL_PQ_DOUBLE;

	has_minmax = kl_pq_stats_plain(c, true, min, &min_len) &&
		kl_pq_stats_plain(c, false, max, &max_len);

	tc_struct(t, id);
	/* the legacy max and min (1, 2), where the order is signed */
	if (has_minmax && !c->byte_stats)
	{
		tc_binary(t, 1, max, max_len);
		tc_binary(t, 2, min, min_len);
	}
	tc_i64(t, 3, c->stats.null_count);
	if (has_minmax)
	{
		tc_binary(t, 5, max, max_len);	/* max_value */
		tc_binary(t, 6, min, min_len);	/* min_value */
		tc_bool(t, 7, true);	/* is_max_value_exact */
		tc_bool(t, 8, true);	/* is_min_value_exact */
	}
	if (is_float)
		tc_i64(t, 9, c->stats.nan_count);
	tc_end(t);
}


/* ----------------------------------------------------------------
 *		The footer
 * ----------------------------------------------------------------
 */

/*
 * kl_pq_physical_type
 *		A column's Type.
 */
static int
kl_pq_physical_type(KlPqPhysical physical)
{
	switch (physical)
	{
		case KL_PQ_BOOLEAN:
			return PQ_TYPE_BOOLEAN;
		case KL_PQ_INT32:
			return PQ_TYPE_INT32;
		case KL_PQ_INT64:
			return PQ_TYPE_INT64;
		case KL_PQ_FLOAT:
			return PQ_TYPE_FLOAT;
		case KL_PQ_DOUBLE:
			return PQ_TYPE_DOUBLE;
		case KL_PQ_BYTE_ARRAY:
			return PQ_TYPE_BYTE_ARRAY;
		case KL_PQ_FIXED_LEN_BYTE_ARRAY:
			return PQ_TYPE_FIXED_LEN_BYTE_ARRAY;
	}
	elog(ERROR, "unknown parquet physical type %d", (int) physical);
	return 0;					/* keep compiler quiet */
}

/*
 * kl_pq_write_schema_element
 *		The SchemaElement of a column: type, repetition, name, the legacy
 *		ConvertedType (with scale and precision for DECIMAL), field_id and
 *		LogicalType.
 */
static void
kl_pq_write_schema_element(KlPqThrift *t, const KlPqColumn *col)
{
	int			converted = -1;

	switch (col->logical)
	{
		case KL_PQ_NONE:
		case KL_PQ_UUID:
			break;
		case KL_PQ_STRING:
			converted = PQ_CONVERTED_UTF8;
			break;
		case KL_PQ_JSON:
			converted = PQ_CONVERTED_JSON;
			break;
		case KL_PQ_DATE:
			converted = PQ_CONVERTED_DATE;
			break;
		case KL_PQ_TIMESTAMP_UTC_MICROS:
		case KL_PQ_TIMESTAMP_LOCAL_MICROS:
			converted = PQ_CONVERTED_TIMESTAMP_MICROS;
			break;
		case KL_PQ_DECIMAL:
			converted = PQ_CONVERTED_DECIMAL;
			break;
		case KL_PQ_INT16:
			converted = PQ_CONVERTED_INT_16;
			break;
	}

	tc_push(t);
	tc_i32(t, 1, kl_pq_physical_type(col->physical));
	if (col->physical == KL_PQ_FIXED_LEN_BYTE_ARRAY)
		tc_i32(t, 2, col->type_length);
	tc_i32(t, 3, col->nullable ? PQ_OPTIONAL : PQ_REQUIRED);
	tc_string(t, 4, col->name);
	if (converted >= 0)
		tc_i32(t, 6, converted);
	if (col->logical == KL_PQ_DECIMAL)
	{
		tc_i32(t, 7, col->scale);
		tc_i32(t, 8, col->precision);
	}
	if (col->field_id != 0)
		tc_i32(t, 9, col->field_id);
	if (col->logical != KL_PQ_NONE)
	{
		tc_struct(t, 10);		/* logicalType */
		switch (col->logical)
		{
			case KL_PQ_NONE:
				break;
			case KL_PQ_STRING:
				tc_empty_struct(t, PQ_LOGICAL_STRING);
				break;
			case KL_PQ_JSON:
				tc_empty_struct(t, PQ_LOGICAL_JSON);
				break;
			case KL_PQ_DATE:
				tc_empty_struct(t, PQ_LOGICAL_DATE);
				break;
			case KL_PQ_TIMESTAMP_UTC_MICROS:
			case KL_PQ_TIMESTAMP_LOCAL_MICROS:
				tc_struct(t, PQ_LOGICAL_TIMESTAMP);
				tc_bool(t, 1, col->logical == KL_PQ_TIMESTAMP_UTC_MICROS);	/* isAdjustedToUTC */
				tc_struct(t, 2);	/* unit */
				tc_empty_struct(t, PQ_TIMEUNIT_MICROS);
				tc_end(t);
				tc_end(t);
				break;
			case KL_PQ_DECIMAL:
				tc_struct(t, PQ_LOGICAL_DECIMAL);
				tc_i32(t, 1, col->scale);
				tc_i32(t, 2, col->precision);
				tc_end(t);
				break;
			case KL_PQ_INT16:
				tc_struct(t, PQ_LOGICAL_INTEGER);
				tc_i8(t, 1, 16);	/* bitWidth */
				tc_bool(t, 2, true);	/* isSigned */
				tc_end(t);
				break;
			case KL_PQ_UUID:
				tc_empty_struct(t, PQ_LOGICAL_UUID);
				break;
		}
		tc_end(t);
	}
	tc_end(t);
}

/*
 * kl_pq_write_column_chunk
 *		The ColumnChunk of a column's chunk just flushed, of num_values
 *		values (nulls included).
 */
static void
kl_pq_write_column_chunk(KlPqThrift *t, const KlPqColumnState *c, int64 num_values)
{
	bool		has_dict = c->dict_page_offset >= 0;
	bool		has_plain = has_dict || c->plain_data_pages > 0;
	int			nenc = (has_plain ? 1 : 0) + 1 + (c->dict_data_pages > 0 ? 1 : 0);
	int			nstats = (has_dict ? 1 : 0) + (c->dict_data_pages > 0 ? 1 : 0) +
		(c->plain_data_pages > 0 ? 1 : 0);

	tc_push(t);
	tc_i64(t, 2, 0);			/* file_offset: no ColumnMetaData outside the
								 * footer */
	tc_struct(t, 3);			/* meta_data */
	tc_i32(t, 1, kl_pq_physical_type(c->spec.physical));
	tc_list(t, 2, TC_I32, nenc);	/* encodings */
	if (has_plain)
		tc_elem_i32(t, PQ_ENC_PLAIN);
	tc_elem_i32(t, PQ_ENC_RLE);
	if (c->dict_data_pages > 0)
		tc_elem_i32(t, PQ_ENC_RLE_DICTIONARY);
	tc_list(t, 3, TC_BINARY, 1);	/* path_in_schema */
	tc_elem_string(t, c->spec.name);
	tc_i32(t, 4, PQ_CODEC_ZSTD);
	tc_i64(t, 5, num_values);
	tc_i64(t, 6, c->total_uncompressed);
	tc_i64(t, 7, c->total_compressed);
	tc_i64(t, 9, c->data_page_offset);
	if (has_dict)
		tc_i64(t, 11, c->dict_page_offset);
	kl_pq_write_stats(t, 12, c);
	tc_list(t, 13, TC_STRUCT, nstats);	/* encoding_stats */
	if (has_dict)
	{
		tc_push(t);
		tc_i32(t, 1, PQ_PAGE_DICTIONARY);
		tc_i32(t, 2, PQ_ENC_PLAIN);
		tc_i32(t, 3, 1);
		tc_end(t);
	}
	if (c->dict_data_pages > 0)
	{
		tc_push(t);
		tc_i32(t, 1, PQ_PAGE_DATA);
		tc_i32(t, 2, PQ_ENC_RLE_DICTIONARY);
		tc_i32(t, 3, c->dict_data_pages);
		tc_end(t);
	}
	if (c->plain_data_pages > 0)
	{
		tc_push(t);
		tc_i32(t, 1, PQ_PAGE_DATA);
		tc_i32(t, 2, PQ_ENC_PLAIN);
		tc_i32(t, 3, c->plain_data_pages);
		tc_end(t);
	}
	tc_end(t);					/* meta_data */
	tc_end(t);
}


/* ----------------------------------------------------------------
 *		Row groups
 * ----------------------------------------------------------------
 */

/*
 * kl_pq_buffered
 *		The bytes the row group being filled holds.
 */
static size_t
kl_pq_buffered(const KlPqWriter *w)
{
	size_t		n = 0;

	for (int i = 0; i < w->ncols; i++)
	{
		const KlPqColumnState *c = &w->cols[i];

		n += c->chunk.len + c->dict.len + c->levels.len + c->plain.len + c->indices.len;
	}
	return n;
}

/*
 * kl_pq_reset_chunk
 *		A column ready for its next chunk, with a dictionary again; the
 *		buffers keep their memory.
 */
static void
kl_pq_reset_chunk(KlPqColumnState *c)
{
	c->chunk.len = 0;
	c->chunk_uncompressed = 0;
	c->dict_data_pages = 0;
	c->plain_data_pages = 0;
	memset(&c->stats, 0, sizeof(c->stats));
	c->dict.len = 0;
	c->dict_offsets.len = 0;
	c->ndict = 0;
	if (c->slots != NULL)
		memset(c->slots, 0, sizeof(KlPqDictSlot) * c->nslots);
	c->dict_on = c->spec.physical != KL_PQ_BOOLEAN;
}

/*
 * kl_pq_flush_row_group
 *		Write the row group being filled: each column's dictionary page and
 *		data pages, in schema order, then its RowGroup into the footer.
 */
static void
kl_pq_flush_row_group(KlPqWriter *w)
{
	int64		file_offset = w->offset;
	int64		total_uncompressed = 0;
	int64		total_compressed = 0;
	KlPqThrift	t;

	if (w->group_rows == 0)
		return;

	for (int i = 0; i < w->ncols; i++)
	{
		KlPqColumnState *c = &w->cols[i];
		int64		start;

		CHECK_FOR_INTERRUPTS();
		kl_pq_cut_page(w, c);
		start = w->offset;
		c->dict_page_offset = -1;
		c->total_uncompressed = 0;
		if (c->dict_data_pages > 0)
		{
			kl_pq_compress(w, c->dict.data, c->dict.len);
			kl_pq_page_header(w, true, c->ndict, PQ_ENC_PLAIN);
			c->dict_page_offset = w->offset;
			kl_pq_emit(w, w->header.data, w->header.len);
			kl_pq_emit(w, w->zpage.data, w->zpage.len);
			c->total_uncompressed += w->header.len + w->raw_len;
		}
		c->data_page_offset = w->offset;
		kl_pq_emit(w, c->chunk.data, c->chunk.len);
		c->total_uncompressed += c->chunk_uncompressed;
		c->total_compressed = w->offset - start;
		total_uncompressed += c->total_uncompressed;
		total_compressed += c->total_compressed;
	}

	tc_begin(&t, w, &w->row_groups);
	tc_push(&t);
	tc_list(&t, 1, TC_STRUCT, w->ncols);	/* columns */
	for (int i = 0; i < w->ncols; i++)
		kl_pq_write_column_chunk(&t, &w->cols[i], w->group_rows);
	tc_i64(&t, 2, total_uncompressed);	/* total_byte_size */
	tc_i64(&t, 3, w->group_rows);
	tc_i64(&t, 5, file_offset);
	tc_i64(&t, 6, total_compressed);
	if (w->nrow_groups <= PG_INT16_MAX)
		tc_i16(&t, 7, (int16) w->nrow_groups);	/* ordinal */
	tc_end(&t);
	w->nrow_groups++;

	for (int i = 0; i < w->ncols; i++)
		kl_pq_reset_chunk(&w->cols[i]);
	w->group_rows = 0;
}


/* ----------------------------------------------------------------
 *		The writer
 * ----------------------------------------------------------------
 */

/*
 * kl_pq_decimal_bytes
 *		The fewest bytes of a FIXED_LEN_BYTE_ARRAY that hold a DECIMAL of a
 *		precision: n bytes hold floor(log10(2^(8n - 1) - 1)) digits.
 */
int
kl_pq_decimal_bytes(int precision)
{
	int			n = 1;

	if (precision < 1)
		elog(ERROR, "invalid parquet DECIMAL precision %d", precision);
	while ((int) floor((8.0 * n - 1) * log10(2.0)) < precision)
		n++;
	return n;
}

/*
 * kl_pq_check_column
 *		Reject a column that no reader could read; a DECIMAL out of
 *		Parquet's range is the user's (a numeric column's typmod).
 */
static void
kl_pq_check_column(const KlPqColumn *col)
{
	if (col->name == NULL)
		elog(ERROR, "parquet column without a name");
	if ((int) col->physical < KL_PQ_BOOLEAN || col->physical > KL_PQ_FIXED_LEN_BYTE_ARRAY)
		elog(ERROR, "unknown parquet physical type %d", (int) col->physical);
	if (col->physical == KL_PQ_FIXED_LEN_BYTE_ARRAY && col->type_length < 1)
		elog(ERROR, "parquet column \"%s\" has FIXED_LEN_BYTE_ARRAY length %d",
			 col->name, col->type_length);
	if (col->field_id < 0)
		elog(ERROR, "parquet column \"%s\" has field id %d", col->name, col->field_id);
	if ((int) col->logical < KL_PQ_NONE || col->logical > KL_PQ_UUID)
		elog(ERROR, "unknown parquet logical type %d", (int) col->logical);

	switch (col->logical)
	{
		case KL_PQ_NONE:
			return;
		case KL_PQ_STRING:
		case KL_PQ_JSON:
			if (col->physical == KL_PQ_BYTE_ARRAY)
				return;
			break;
		case KL_PQ_DATE:
		case KL_PQ_INT16:
			if (col->physical == KL_PQ_INT32)
				return;
			break;
		case KL_PQ_TIMESTAMP_UTC_MICROS:
		case KL_PQ_TIMESTAMP_LOCAL_MICROS:
			if (col->physical == KL_PQ_INT64)
				return;
			break;
		case KL_PQ_UUID:
			if (col->physical == KL_PQ_FIXED_LEN_BYTE_ARRAY && col->type_length == 16)
				return;
			break;
		case KL_PQ_DECIMAL:
			if (col->precision < 1 || col->precision > 38)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("column \"%s\" cannot be written as a parquet DECIMAL", col->name),
						 errdetail("Its precision is %d; Parquet's DECIMAL precision is 1 to 38.",
								   col->precision),
						 errhint("Give the numeric column a precision of at most 38.")));
			if (col->scale < 0 || col->scale > col->precision)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("column \"%s\" cannot be written as a parquet DECIMAL", col->name),
						 errdetail("Its scale is %d; Parquet's DECIMAL scale is 0 to the precision (%d).",
								   col->scale, col->precision)));
			if ((col->physical == KL_PQ_INT32 && col->precision <= 9) ||
				(col->physical == KL_PQ_INT64 && col->precision <= 18) ||
				(col->physical == KL_PQ_FIXED_LEN_BYTE_ARRAY &&
				 col->type_length >= kl_pq_decimal_bytes(col->precision)))
				return;
			break;
	}
	elog(ERROR, "parquet column \"%s\": %s cannot annotate %s%s",
		 col->name, kl_pq_logical_names[col->logical], kl_pq_physical_names[col->physical],
		 col->physical == KL_PQ_FIXED_LEN_BYTE_ARRAY ? psprintf("(%d)", col->type_length) : "");
}

/*
 * kl_pq_strdup
 *		A string copied into the writer's context.
 */
static char *
kl_pq_strdup(KlPqWriter *w, const char *s)
{
	size_t		len = strlen(s);
	char	   *p = MemoryContextAlloc(w->cxt, len + 1);

	memcpy(p, s, len + 1);
	return p;
}

/*
 * kl_pq_begin
 *		A writer of a file of these columns, in the current memory context,
 *		that hands its bytes to sink (the magic at once).  row_group_rows
 *		rows end a row group (0: only KL_PQ_ROW_GROUP_BYTES does).
 */
KlPqWriter *
kl_pq_begin(const KlPqColumn *columns, int ncolumns, KlPqSink sink, void *sink_arg,
			int64 row_group_rows)
{
	KlPqWriter *w;

	if (ncolumns < 1 || columns == NULL || sink == NULL || row_group_rows < 0)
		elog(ERROR, "invalid parquet writer arguments");
	for (int i = 0; i < ncolumns; i++)
		kl_pq_check_column(&columns[i]);

	w = MemoryContextAllocZero(CurrentMemoryContext, sizeof(KlPqWriter));
	w->cxt = CurrentMemoryContext;
	w->sink = sink;
	w->sink_arg = sink_arg;
	w->row_group_rows = row_group_rows;
	w->ncols = ncolumns;
	w->cols = MemoryContextAllocZero(w->cxt, sizeof(KlPqColumnState) * ncolumns);
	for (int i = 0; i < ncolumns; i++)
	{
		KlPqColumnState *c = &w->cols[i];

		c->spec = columns[i];
		c->spec.name = kl_pq_strdup(w, columns[i].name);
		switch (c->spec.physical)
		{
			case KL_PQ_INT32:
			case KL_PQ_FLOAT:
				c->width = 4;
				break;
			case KL_PQ_INT64:
			case KL_PQ_DOUBLE:
				c->width = 8;
				break;
			case KL_PQ_FIXED_LEN_BYTE_ARRAY:
				c->width = c->spec.type_length;
				break;
			case KL_PQ_BOOLEAN:
			case KL_PQ_BYTE_ARRAY:
				c->width = 0;
				break;
		}
		c->byte_stats = c->spec.physical == KL_PQ_BYTE_ARRAY ||
			c->spec.physical == KL_PQ_FIXED_LEN_BYTE_ARRAY;
		c->signed_bytes = c->spec.physical == KL_PQ_FIXED_LEN_BYTE_ARRAY &&
			c->spec.logical == KL_PQ_DECIMAL;
		c->dict_page_offset = -1;
		kl_pq_reset_chunk(c);
	}
	w->created_by = kl_pq_strdup(w, KL_PQ_CREATED_BY);
	kl_pq_emit(w, KL_PQ_MAGIC, 4);
	return w;
}

/*
 * kl_pq_created_by
 *		FileMetaData.created_by, instead of KL_PQ_CREATED_BY ("<application>
 *		version <version>" is what readers parse).
 */
void
kl_pq_created_by(KlPqWriter *w, const char *created_by)
{
	pfree(w->created_by);
	w->created_by = kl_pq_strdup(w, created_by);
}

/*
 * kl_pq_key_value
 *		One entry of FileMetaData.key_value_metadata (value NULL: none),
 *		any time before kl_pq_finish.
 */
void
kl_pq_key_value(KlPqWriter *w, const char *key, const char *value)
{
	if (key == NULL)
		elog(ERROR, "parquet key/value metadata without a key");
	if (w->nkv == w->kv_cap)
	{
		w->kv_cap = w->kv_cap == 0 ? 8 : w->kv_cap * 2;
		if (w->kv_keys == NULL)
		{
			w->kv_keys = MemoryContextAlloc(w->cxt, sizeof(char *) * w->kv_cap);
			w->kv_values = MemoryContextAlloc(w->cxt, sizeof(char *) * w->kv_cap);
		}
		else
		{
			w->kv_keys = repalloc(w->kv_keys, sizeof(char *) * w->kv_cap);
			w->kv_values = repalloc(w->kv_values, sizeof(char *) * w->kv_cap);
		}
	}
	w->kv_keys[w->nkv] = kl_pq_strdup(w, key);
	w->kv_values[w->nkv] = value != NULL ? kl_pq_strdup(w, value) : NULL;
	w->nkv++;
}

/*
 * kl_pq_column
 *		The column a value of a row goes to, checked: it exists, has this
 *		physical type (any, for a null) and has no value in this row yet.
 */
static inline KlPqColumnState *
kl_pq_column(KlPqWriter *w, int col, KlPqPhysical physical, bool is_null)
{
	KlPqColumnState *c;

	if (col < 0 || col >= w->ncols)
		elog(ERROR, "parquet column %d does not exist", col);
	c = &w->cols[col];
	if (!is_null && c->spec.physical != physical)
		elog(ERROR, "parquet column \"%s\" of type %s given a value of type %s",
			 c->spec.name, kl_pq_physical_names[c->spec.physical],
			 kl_pq_physical_names[physical]);
	if (c->nvalues != w->rows)
		elog(ERROR, "parquet column \"%s\" given two values in row " INT64_FORMAT,
			 c->spec.name, w->rows);
	return c;
}

/*
 * kl_pq_value_done
 *		A value is in its column's page: count it, and cut the page when it
 *		is full.
 */
static inline void
kl_pq_value_done(KlPqWriter *w, KlPqColumnState *c)
{
	c->nvalues++;
	w->row_filled++;
	if (c->levels.len + c->plain.len + c->indices.len >= KL_PQ_PAGE_BYTES)
		kl_pq_cut_page(w, c);
}

/*
 * kl_pq_add
 *		A non-null value of any type but BOOLEAN (its PLAIN bytes, without
 *		a BYTE_ARRAY's length) into its column's page: its index in the
 *		dictionary, or the value itself once the chunk is PLAIN.
 */
static void
kl_pq_add(KlPqWriter *w, KlPqColumnState *c, const uint8 *data, size_t len)
{
	uint32		index = 0;

	/* a value larger than a page gets a page of its own */
	if (len > KL_PQ_PAGE_BYTES && c->page_values > 0)
		kl_pq_cut_page(w, c);
	if (c->dict_on && !kl_pq_dict_add(w, c, data, len, &index))
		kl_pq_dict_fall_back(w, c);

	if (c->spec.nullable)
		kl_pq_append_byte(w, &c->levels, 1);
	if (c->dict_on)
		kl_pq_append(w, &c->indices, &index, sizeof(index));
	else
	{
		if (c->width == 0)
		{
			uint8		b[4];

			kl_pq_put32(b, (uint32) len);
			kl_pq_append(w, &c->plain, b, 4);
		}
		kl_pq_append(w, &c->plain, data, len);
	}
	c->page_values++;
	c->page_nonnull++;
	c->page_plain += c->width > 0 ? len : len + 4;
	kl_pq_value_done(w, c);

	/*
	 * Mostly distinct values (ids, timestamps, amounts): the first page
	 * decides at KL_PQ_DICT_PROBE_VALUES values, not at its end, so that a
	 * dictionary that will be dropped is not kept for a whole page.
	 */
	if (c->dict_on && c->dict_data_pages == 0 && c->page_nonnull == KL_PQ_DICT_PROBE_VALUES &&
		c->dict.len + (size_t) c->page_nonnull * kl_pq_index_width(c->ndict) / 8 >= c->page_plain)
		kl_pq_cut_page(w, c);
}

/*
 * kl_pq_null
 *		A null into a column of the row (OPTIONAL columns only).
 */
void
kl_pq_null(KlPqWriter *w, int col)
{
	KlPqColumnState *c = kl_pq_column(w, col, KL_PQ_BOOLEAN, true);

	if (!c->spec.nullable)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("null value in parquet column \"%s\", which is required",
						c->spec.name)));
	kl_pq_append_byte(w, &c->levels, 0);
	c->page_values++;
	c->stats.null_count++;
	kl_pq_value_done(w, c);
}

/*
 * kl_pq_bool
 *		A BOOLEAN value: PLAIN, bit-packed, least significant bit first.
 */
void
kl_pq_bool(KlPqWriter *w, int col, bool v)
{
	KlPqColumnState *c = kl_pq_column(w, col, KL_PQ_BOOLEAN, false);
	KlPqStats  *st = &c->stats;
	int			bit = (int) (c->page_nonnull % 8);

	if (c->spec.nullable)
		kl_pq_append_byte(w, &c->levels, 1);
	if (bit == 0)
		kl_pq_append_byte(w, &c->plain, 0);
	if (v)
		c->plain.data[c->plain.len - 1] |= (uint8) (1 << bit);
	c->page_values++;
	c->page_nonnull++;

	if (!st->has_minmax)
	{
		st->min.b = st->max.b = v;
		st->has_minmax = true;
	}
	else
	{
		st->min.b = st->min.b && v;
		st->max.b = st->max.b || v;
	}
	kl_pq_value_done(w, c);
}

/*
 * kl_pq_int32
 *		An INT32 value (DATE: days since 1970-01-01; INT16; DECIMAL: the
 *		unscaled value).
 */
void
kl_pq_int32(KlPqWriter *w, int col, int32 v)
{
	KlPqColumnState *c = kl_pq_column(w, col, KL_PQ_INT32, false);
	KlPqStats  *st = &c->stats;
	uint8		b[4];

	if (c->spec.logical == KL_PQ_INT16 && (v < PG_INT16_MIN || v > PG_INT16_MAX))
		elog(ERROR, "value %d out of range for parquet INT(16) column \"%s\"",
			 v, c->spec.name);
	if (!st->has_minmax)
	{
		st->min.i32 = st->max.i32 = v;
		st->has_minmax = true;
	}
	else if (v < st->min.i32)
		st->min.i32 = v;
	else if (v > st->max.i32)
		st->max.i32 = v;
	kl_pq_put32(b, (uint32) v);
	kl_pq_add(w, c, b, 4);
}

/*
 * kl_pq_int64
 *		An INT64 value (TIMESTAMP: microseconds since 1970-01-01; DECIMAL:
 *		the unscaled value).
 */
void
kl_pq_int64(KlPqWriter *w, int col, int64 v)
{
	KlPqColumnState *c = kl_pq_column(w, col, KL_PQ_INT64, false);
	KlPqStats  *st = &c->stats;
	uint8		b[8];

	if (!st->has_minmax)
	{
		st->min.i64 = st->max.i64 = v;
		st->has_minmax = true;
	}
	else if (v < st->min.i64)
		st->min.i64 = v;
	else if (v > st->max.i64)
		st->max.i64 = v;
	kl_pq_put64(b, (uint64) v);
	kl_pq_add(w, c, b, 8);
}

/*
 * kl_pq_float
 *		A FLOAT value; its bits are kept as they are (NaN, -0.0).
 */
void
kl_pq_float(KlPqWriter *w, int col, float4 v)
{
	KlPqColumnState *c = kl_pq_column(w, col, KL_PQ_FLOAT, false);
	KlPqStats  *st = &c->stats;
	uint32		bits;
	uint8		b[4];

	if (isnan(v))
		st->nan_count++;
	else if (!st->has_minmax)
	{
		st->min.f4 = st->max.f4 = v;
		st->has_minmax = true;
	}
	else if (v < st->min.f4)
		st->min.f4 = v;
	else if (v > st->max.f4)
		st->max.f4 = v;
	memcpy(&bits, &v, 4);
	kl_pq_put32(b, bits);
	kl_pq_add(w, c, b, 4);
}

/*
 * kl_pq_double
 *		A DOUBLE value; its bits are kept as they are (NaN, -0.0).
 */
void
kl_pq_double(KlPqWriter *w, int col, float8 v)
{
	KlPqColumnState *c = kl_pq_column(w, col, KL_PQ_DOUBLE, false);
	KlPqStats  *st = &c->stats;
	uint64		bits;
	uint8		b[8];

	if (isnan(v))
		st->nan_count++;
	else if (!st->has_minmax)
	{
		st->min.f8 = st->max.f8 = v;
		st->has_minmax = true;
	}
	else if (v < st->min.f8)
		st->min.f8 = v;
	else if (v > st->max.f8)
		st->max.f8 = v;
	memcpy(&bits, &v, 8);
	kl_pq_put64(b, bits);
	kl_pq_add(w, c, b, 8);
}

/*
 * kl_pq_bytes
 *		A BYTE_ARRAY value, or a FIXED_LEN_BYTE_ARRAY one of exactly the
 *		column's type_length (DECIMAL: the unscaled value, big-endian two's
 *		complement; UUID: its 16 bytes).
 */
void
kl_pq_bytes(KlPqWriter *w, int col, const void *data, size_t len)
{
	KlPqColumnState *c;

	if (col >= 0 && col < w->ncols && w->cols[col].spec.physical == KL_PQ_FIXED_LEN_BYTE_ARRAY)
	{
		c = kl_pq_column(w, col, KL_PQ_FIXED_LEN_BYTE_ARRAY, false);
		if (len != (size_t) c->spec.type_length)
			elog(ERROR, "parquet column \"%s\" given %zu bytes instead of %d",
				 c->spec.name, len, c->spec.type_length);
	}
	else
	{
		c = kl_pq_column(w, col, KL_PQ_BYTE_ARRAY, false);
		if (len > KL_PQ_MAX_VALUE_BYTES)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("value too long for parquet column \"%s\"", c->spec.name),
					 errdetail("The value has %zu bytes; a parquet value has at most %zu.",
							   len, KL_PQ_MAX_VALUE_BYTES)));
	}
	kl_pq_stats_bytes(c, data, len);
	kl_pq_add(w, c, data, len);
}

/*
 * kl_pq_end_row
 *		End a row, every column of which has its value; flush the row group
 *		at row_group_rows rows or KL_PQ_ROW_GROUP_BYTES buffered.
 */
void
kl_pq_end_row(KlPqWriter *w)
{
	if (w->row_filled != w->ncols)
	{
		for (int i = 0; i < w->ncols; i++)
		{
			if (w->cols[i].nvalues == w->rows)
				elog(ERROR, "parquet column \"%s\" has no value in row " INT64_FORMAT,
					 w->cols[i].spec.name, w->rows);
		}
		elog(ERROR, "parquet row " INT64_FORMAT " is not whole", w->rows);
	}
	w->rows++;
	w->group_rows++;
	w->row_filled = 0;
	if ((w->row_group_rows > 0 && w->group_rows >= w->row_group_rows) ||
		kl_pq_buffered(w) >= KL_PQ_ROW_GROUP_BYTES)
		kl_pq_flush_row_group(w);
}

/*
 * kl_pq_rows
 *		The rows ended so far.
 */
int64
kl_pq_rows(const KlPqWriter *w)
{
	return w->rows;
}

/*
 * kl_pq_free
 *		Give back everything a writer holds.
 */
static void
kl_pq_free(KlPqWriter *w)
{
	for (int i = 0; i < w->ncols; i++)
	{
		KlPqColumnState *c = &w->cols[i];

		kl_pq_free_buf(&c->levels);
		kl_pq_free_buf(&c->plain);
		kl_pq_free_buf(&c->indices);
		kl_pq_free_buf(&c->dict);
		kl_pq_free_buf(&c->dict_offsets);
		kl_pq_free_buf(&c->chunk);
		if (c->slots != NULL)
			pfree(c->slots);
		pfree((char *) c->spec.name);
	}
	for (int i = 0; i < w->nkv; i++)
	{
		pfree(w->kv_keys[i]);
		if (w->kv_values[i] != NULL)
			pfree(w->kv_values[i]);
	}
	if (w->kv_keys != NULL)
	{
		pfree(w->kv_keys);
		pfree(w->kv_values);
	}
	kl_pq_free_buf(&w->page);
	kl_pq_free_buf(&w->zpage);
	kl_pq_free_buf(&w->header);
	kl_pq_free_buf(&w->row_groups);
	pfree(w->created_by);
	pfree(w->cols);
	pfree(w);
}

/*
 * kl_pq_finish
 *		Flush the last row group and write the footer; free the writer.
 *		Returns the rows written.
 */
int64
kl_pq_finish(KlPqWriter *w)
{
	KlPqThrift	t;
	KlPqBuf    *footer = &w->page;
	uint8		tail[8];
	int64		rows;

	if (w->row_filled != 0)
		elog(ERROR, "parquet file finished in the middle of a row");
	kl_pq_flush_row_group(w);

	footer->len = 0;
	tc_begin(&t, w, footer);
	tc_push(&t);
	tc_i32(&t, 1, 1);			/* version */
	tc_list(&t, 2, TC_STRUCT, w->ncols + 1);	/* schema */
	tc_push(&t);
	tc_string(&t, 4, "schema");
	tc_i32(&t, 5, w->ncols);	/* num_children */
	tc_end(&t);
	for (int i = 0; i < w->ncols; i++)
		kl_pq_write_schema_element(&t, &w->cols[i].spec);
	tc_i64(&t, 3, w->rows);
	tc_list(&t, 4, TC_STRUCT, w->nrow_groups);	/* row_groups, serialized */
	kl_pq_append(w, footer, w->row_groups.data, w->row_groups.len);
	if (w->nkv > 0)
	{
		tc_list(&t, 5, TC_STRUCT, w->nkv);	/* key_value_metadata */
		for (int i = 0; i < w->nkv; i++)
		{
			tc_push(&t);
			tc_string(&t, 1, w->kv_keys[i]);
			if (w->kv_values[i] != NULL)
				tc_string(&t, 2, w->kv_values[i]);
			tc_end(&t);
		}
	}
	tc_string(&t, 6, w->created_by);
	tc_list(&t, 7, TC_STRUCT, w->ncols);	/* column_orders */
	for (int i = 0; i < w->ncols; i++)
	{
		tc_push(&t);
		tc_empty_struct(&t, PQ_ORDER_TYPE_ORDER);
		tc_end(&t);
	}
	tc_end(&t);

	if (footer->len > PG_UINT32_MAX)
		elog(ERROR, "parquet footer of %zu bytes", footer->len);
	kl_pq_emit(w, footer->data, footer->len);
	kl_pq_put32(tail, (uint32) footer->len);
	memcpy(tail + 4, KL_PQ_MAGIC, 4);
	kl_pq_emit(w, tail, 8);

	rows = w->rows;
	kl_pq_free(w);
	return rows;
}

/*
 * kl_pq_abort
 *		Free a writer without writing anything more (the caller removes
 *		what the sink has written).
 */
void
kl_pq_abort(KlPqWriter *w)
{
	if (w != NULL)
		kl_pq_free(w);
}
