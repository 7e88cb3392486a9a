/*-------------------------------------------------------------------------
 *
 * export_table.c
 *	  One table's rows of a snapshot as one Parquet file: the Parquet type of
 *	  each column, read from the table's own column types, and the rows read
 *	  through a cursor into the writer (format/parquet.c).
 *
 * Types.  A column's Parquet type follows its PostgreSQL type, so that every
 * contract's silver and every declared or SQL gold exports without a mapping
 * of its own:
 *
 *	boolean						BOOLEAN
 *	smallint					INT32, INT(16, signed)
 *	integer, bigint				INT32, INT64
 *	real, double precision		FLOAT, DOUBLE
 *	numeric(p,s), p <= 38		DECIMAL(p,s) on INT32 (p <= 9), INT64 (p <= 18)
 *								or FIXED_LEN_BYTE_ARRAY (p <= 38)
 *	numeric						DECIMAL(p,s) with s the largest scale of the
 *								exported values and p their largest number of
 *								integer digits plus s (a first pass over the
 *								rows), when p <= 38
 *	date						INT32 DATE
 *	timestamptz					INT64 TIMESTAMP(UTC, MICROS)
 *	timestamp					INT64 TIMESTAMP(local, MICROS)
 *	bytea						BYTE_ARRAY
 *	every other built-in type	BYTE_ARRAY STRING, PostgreSQL's text form
 *								(text, json, jsonb, uuid, interval, arrays...)
 *
 * business_date is not a column of the files: every row of a file has the
 * date its directory names (business_date=YYYY-MM-DD), and Spark, Trino and
 * Hive take a partition column from the path, warning about or refusing a
 * file that holds it too.
 *
 * uuid and json go as strings because Spark reads neither Parquet's UUID nor
 * its JSON annotation; a numeric wider than 38 digits, or holding NaN or an
 * infinity, goes as its text, whole.  An infinite date or timestamp has no
 * Parquet value and is refused (22008), naming the column.  A type that is
 * not built in (a domain, an enum, a user's base type) is refused (0A000):
 * its output function is user code, which an export running as the
 * extension's owner never calls; silver and golds are made of built-in types
 * anyway (contracts.md, "built-in types only").
 *
 * The rows are read with the catalog's pinned search_path and the owner's
 * rights (export.c has begun the catalog), by a query built from quoted
 * names and pg_catalog's operators only.
 *
 * IDENTIFICATION
 *	  src/export/export_table.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/transam.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"

#include "base/digest.h"
#include "export/export.h"
#include "format/parquet.h"

/* rows fetched from the cursor at a time */
#define KL_EXPORT_FETCH		8192

/* days and microseconds from 1970-01-01 to PostgreSQL's epoch, 2000-01-01 */
#define KL_UNIX_TO_PG_DAYS	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE))
#define KL_UNIX_TO_PG_USECS (KL_UNIX_TO_PG_DAYS * USECS_PER_DAY)

typedef enum KlExportKind
{
	KL_X_BOOL,
	KL_X_INT2,
	KL_X_INT4,
	KL_X_INT8,
	KL_X_FLOAT4,
	KL_X_FLOAT8,
	KL_X_NUMERIC,				/* as DECIMAL */
	KL_X_DATE,
	KL_X_TIMESTAMPTZ,
	KL_X_TIMESTAMP,
	KL_X_BYTEA,
	KL_X_TEXT,					/* text, varchar, bpchar: the datum's bytes */
	KL_X_OUTPUT					/* the output function's text */
} KlExportKind;

/* How one column goes into the file */
typedef struct KlExportColumn
{
	char	   *name;			/* the column's name */
	Oid			type;
	int32		typmod;
	KlExportKind kind;
	int			precision;		/* KL_X_NUMERIC */
	int			scale;
	AttrNumber	attnum;			/* its position: the Parquet field id */
	bool		notnull;		/* NOT NULL: a REQUIRED column */
	FmgrInfo	out;			/* KL_X_OUTPUT: the type's output function */
	bool		unconstrained;	/* numeric without a typmod: sized by a pass */
} KlExportColumn;

/* Where the writer's bytes go: the file, its SHA-256 and length */
typedef struct KlExportSink
{
	int			fd;
	const char *path;
	KlSha256   *sha;
	int64		bytes;
} KlExportSink;

/*
 * kl_export_sink
 *		Write one chunk of the file (the writer's sink).
 */
static void
kl_export_sink(void *arg, const void *data, size_t len)
{
	KlExportSink *s = arg;
	const char *p = data;

	kl_sha256_update(s->sha, data, len);
	s->bytes += len;
	while (len > 0)
	{
		ssize_t		n = write(s->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write \"%s\": %m", s->path)));
		p += n;
		len -= n;
	}
}

/*
 * kl_numeric_typmod_ps
 *		Precision and scale of a numeric typmod, as a Parquet DECIMAL can
 *		hold them (a negative scale as scale 0 with more digits, a scale
 *		above the precision with the precision raised to it).
 */
static void
kl_numeric_typmod_ps(int32 typmod, int *precision, int *scale)
{
	int32		tm = typmod - VARHDRSZ;
	int			p = (tm >> 16) & 0xffff;
	int			s = ((tm & 0x7ff) ^ 1024) - 1024;

	if (s < 0)
	{
		p -= s;
		s = 0;
	}
	if (s > p)
		p = s;
	*precision = p;
	*scale = s;
}

/*
 * kl_export_columns
 *		The columns of relation, with their Parquet types.
 */
static KlExportColumn *
kl_export_columns(Oid relid, const char *relname, int *ncolumns)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	KlExportColumn *cols = palloc0(sizeof(KlExportColumn) * desc->natts);
	int			n = 0;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		KlExportColumn *c = &cols[n];

		/* the date is the directory's key=value, as engines expect */
		if (att->attisdropped || strcmp(NameStr(att->attname), "business_date") == 0)
			continue;
		c->name = pstrdup(NameStr(att->attname));
		c->attnum = att->attnum;
		c->notnull = att->attnotnull;
		c->type = att->atttypid;
		c->typmod = att->atttypmod;
		if (c->type >= FirstNormalObjectId)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("column \"%s\" of kafka_lake.%s is of type %s, which is not built in",
							c->name, relname, format_type_be(c->type)),
					 errdetail("An export reads built-in types only: the output function of another type is user code."),
					 errhint("Make the column of a built-in type (ALTER TABLE ... ALTER COLUMN ... TYPE), or cast to the type where the gold is read.")));
		switch (c->type)
		{
			case BOOLOID:
				c->kind = KL_X_BOOL;
				break;
			case INT2OID:
				c->kind = KL_X_INT2;
				break;
			case INT4OID:
				c->kind = KL_X_INT4;
				break;
			case INT8OID:
				c->kind = KL_X_INT8;
				break;
			case FLOAT4OID:
				c->kind = KL_X_FLOAT4;
				break;
			case FLOAT8OID:
				c->kind = KL_X_FLOAT8;
				break;
			case NUMERICOID:
				c->kind = KL_X_NUMERIC;
				c->unconstrained = (c->typmod < (int32) VARHDRSZ);
				if (!c->unconstrained)
					kl_numeric_typmod_ps(c->typmod, &c->precision, &c->scale);
				break;
			case DATEOID:
				c->kind = KL_X_DATE;
				break;
			case TIMESTAMPTZOID:
				c->kind = KL_X_TIMESTAMPTZ;
				break;
			case TIMESTAMPOID:
				c->kind = KL_X_TIMESTAMP;
				break;
			case BYTEAOID:
				c->kind = KL_X_BYTEA;
				break;
			case TEXTOID:
			case VARCHAROID:
			case BPCHAROID:
				c->kind = KL_X_TEXT;
				break;
			default:
				c->kind = KL_X_OUTPUT;
				break;
		}
		if (c->kind == KL_X_OUTPUT)
		{
			Oid			outfunc;
			bool		varlena;

			getTypeOutputInfo(c->type, &outfunc, &varlena);
			fmgr_info(outfunc, &c->out);
		}
		n++;
	}
	relation_close(rel, AccessShareLock);
	*ncolumns = n;
	return cols;
}

/*
 * kl_export_from
 *		" FROM kafka_lake.<relation> WHERE <id_column> = $1": the snapshot's
 *		rows, $1 its id as text.
 */
static char *
kl_export_from(const KlExportTable *t)
{
	return psprintf(" FROM kafka_lake.%s WHERE %s OPERATOR(pg_catalog.=) $1::pg_catalog.text::%s",
					quote_identifier(t->relation), quote_identifier(t->id_column),
					strcmp(t->id_column, "snapshot_id") == 0 ? "pg_catalog.int8" : "pg_catalog.text");
}

/*
 * kl_export_size_numerics
 *		The first pass: the scale and integer digits of every numeric
 *		column's exported values, and whether one holds NaN or an infinity
 *		(then the column goes as text).  A constrained numeric is only
 *		checked for those.
 */
static void
kl_export_size_numerics(KlExportColumn *cols, int n, const KlExportTable *t)
{
	StringInfoData q;
	int			k = 0;
	Oid			argtype = TEXTOID;
	Datum		arg = CStringGetTextDatum(t->id_value);

	initStringInfo(&q);
	appendStringInfoString(&q, "SELECT ");
	for (int i = 0; i < n; i++)
	{
		const char *col;

		if (cols[i].kind != KL_X_NUMERIC)
			continue;
		col = quote_identifier(cols[i].name);
		appendStringInfo(&q, "%spg_catalog.max(pg_catalog.scale(%s)),"
						 " pg_catalog.max(pg_catalog.length(pg_catalog.trunc(pg_catalog.abs(%s))::pg_catalog.text)),"
						 " pg_catalog.bool_or(%s OPERATOR(pg_catalog.=) ANY ('{NaN,Infinity,-Infinity}'::pg_catalog.numeric[]))",
						 k++ ? ", " : "", col, col, col);
	}
	if (k == 0)
		return;
	appendStringInfoString(&q, kl_export_from(t));
	if (SPI_execute_with_args(q.data, 1, &argtype, &arg, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not size the numeric columns of kafka_lake.%s", t->relation);
	k = 0;
	for (int i = 0; i < n; i++)
	{
		bool		null_scale,
					null_digits,
					null_special;
		Datum		scale,
					digits,
					special;
		KlExportColumn *c = &cols[i];

		if (c->kind != KL_X_NUMERIC)
			continue;
		scale = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, k * 3 + 1, &null_scale);
		digits = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, k * 3 + 2, &null_digits);
		special = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, k * 3 + 3, &null_special);
		k++;
		if (!null_special && DatumGetBool(special))
		{
			c->kind = KL_X_OUTPUT;
			fmgr_info(F_NUMERIC_OUT, &c->out);
			continue;
		}
		if (!c->unconstrained)
			continue;
		c->scale = null_scale ? 0 : DatumGetInt32(scale);
		c->precision = (null_digits ? 1 : DatumGetInt32(digits)) + c->scale;
	}
	SPI_freetuptable(SPI_tuptable);

	/* wider than a Parquet DECIMAL: the exact text */
	for (int i = 0; i < n; i++)
		if (cols[i].kind == KL_X_NUMERIC && cols[i].precision > 38)
		{
			cols[i].kind = KL_X_OUTPUT;
			fmgr_info(F_NUMERIC_OUT, &cols[i].out);
		}
}

/*
 * kl_export_parquet_columns
 *		The writer's columns for ours; field ids are the columns' positions
 *		(1, 2, ...), stable for a table whose columns are only added to.
 */
static KlPqColumn *
kl_export_parquet_columns(const KlExportColumn *cols, int n)
{
	KlPqColumn *pq = palloc0(sizeof(KlPqColumn) * n);

	for (int i = 0; i < n; i++)
	{
		const KlExportColumn *c = &cols[i];
		KlPqColumn *p = &pq[i];

		p->name = c->name;
		p->field_id = c->attnum;
		p->nullable = !c->notnull;
		switch (c->kind)
		{
			case KL_X_BOOL:
				p->physical = KL_PQ_BOOLEAN;
				break;
			case KL_X_INT2:
				p->physical = KL_PQ_INT32;
				p->logical = KL_PQ_INT16;
				break;
			case KL_X_INT4:
				p->physical = KL_PQ_INT32;
				break;
			case KL_X_INT8:
				p->physical = KL_PQ_INT64;
				break;
			case KL_X_FLOAT4:
				p->physical = KL_PQ_FLOAT;
				break;
			case KL_X_FLOAT8:
				p->physical = KL_PQ_DOUBLE;
				break;
			case KL_X_NUMERIC:
				p->logical = KL_PQ_DECIMAL;
				p->precision = Max(c->precision, 1);
				p->scale = c->scale;
				if (p->precision <= 9)
					p->physical = KL_PQ_INT32;
				else if (p->precision <= 18)
					p->physical = KL_PQ_INT64;
				else
				{
					p->physical = KL_PQ_FIXED_LEN_BYTE_ARRAY;
					p->type_length = kl_pq_decimal_bytes(p->precision);
				}
				break;
			case KL_X_DATE:
				p->physical = KL_PQ_INT32;
				p->logical = KL_PQ_DATE;
				break;
			case KL_X_TIMESTAMPTZ:
				p->physical = KL_PQ_INT64;
				p->logical = KL_PQ_TIMESTAMP_UTC_MICROS;
				break;
			case KL_X_TIMESTAMP:
				p->physical = KL_PQ_INT64;
				p->logical = KL_PQ_TIMESTAMP_LOCAL_MICROS;
				break;
			case KL_X_BYTEA:
				p->physical = KL_PQ_BYTE_ARRAY;
				break;
			case KL_X_TEXT:
			case KL_X_OUTPUT:
				p->physical = KL_PQ_BYTE_ARRAY;
				p->logical = KL_PQ_STRING;
				break;
		}
	}
	return pq;
}

/*
 * kl_export_infinite
 *		An infinite date or timestamp has no Parquet value: ERROR 22008.
 */
static void
kl_export_infinite(const KlExportColumn *c, const KlExportTable *t)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("column \"%s\" of kafka_lake.%s holds an infinite %s, which Parquet cannot hold",
					c->name, t->relation, format_type_be(c->type)),
			 errhint("Nothing was exported; correct the value where it comes from, or leave the column out of the gold.")));
}

/*
 * kl_export_decimal
 *		A numeric's unscaled value at the column's scale, into the writer.
 */
static void
kl_export_decimal(KlPqWriter *w, int col, const KlExportColumn *c, Datum d)
{
	char	   *text = DatumGetCString(DirectFunctionCall1(numeric_out, d));
	const char *p = text;
	bool		negative = false;
	int			frac = -1;
	int128		v = 0;

	if (*p == '-')
	{
		negative = true;
		p++;
	}
	for (; *p; p++)
	{
		if (*p == '.')
		{
			frac = 0;
			continue;
		}
		v = v * 10 + (*p - '0');
		if (frac >= 0)
			frac++;
	}
	for (int i = Max(frac, 0); i < c->scale; i++)
		v *= 10;
	if (negative)
		v = -v;
	pfree(text);
	if (c->precision <= 9)
		kl_pq_int32(w, col, (int32) v);
	else if (c->precision <= 18)
		kl_pq_int64(w, col, (int64) v);
	else
	{
		uint8		be[16];
		int			len = kl_pq_decimal_bytes(c->precision);

		for (int i = 0; i < len; i++)
			be[len - 1 - i] = (uint8) (v >> (8 * i));
		kl_pq_bytes(w, col, be, len);
	}
}

/*
 * kl_export_text
 *		A string in the database's encoding into the writer, as UTF-8 (a
 *		Parquet STRING is UTF-8).
 */
static void
kl_export_text(KlPqWriter *w, int col, const char *s, int len)
{
	char	   *utf8 = (char *) s;

	if (GetDatabaseEncoding() != PG_UTF8 && GetDatabaseEncoding() != PG_SQL_ASCII)
		utf8 = pg_server_to_any(s, len, PG_UTF8);
	if (utf8 != s)
		len = strlen(utf8);
	kl_pq_bytes(w, col, utf8, len);
	if (utf8 != s)
		pfree(utf8);
}

/*
 * kl_export_value
 *		One non-null value of column col into the writer.
 */
static void
kl_export_value(KlPqWriter *w, int col, const KlExportColumn *c, Datum d,
				const KlExportTable *t)
{
	switch (c->kind)
	{
		case KL_X_BOOL:
			kl_pq_bool(w, col, DatumGetBool(d));
			break;
		case KL_X_INT2:
			kl_pq_int32(w, col, DatumGetInt16(d));
			break;
		case KL_X_INT4:
			kl_pq_int32(w, col, DatumGetInt32(d));
			break;
		case KL_X_INT8:
			kl_pq_int64(w, col, DatumGetInt64(d));
			break;
		case KL_X_FLOAT4:
			kl_pq_float(w, col, DatumGetFloat4(d));
			break;
		case KL_X_FLOAT8:
			kl_pq_double(w, col, DatumGetFloat8(d));
			break;
		case KL_X_NUMERIC:
			kl_export_decimal(w, col, c, d);
			break;
		case KL_X_DATE:
			{
				DateADT		date = DatumGetDateADT(d);

				if (DATE_NOT_FINITE(date))
					kl_export_infinite(c, t);
				kl_pq_int32(w, col, (int32) (date + KL_UNIX_TO_PG_DAYS));
				break;
			}
		case KL_X_TIMESTAMPTZ:
		case KL_X_TIMESTAMP:
			{
				int64		ts = DatumGetInt64(d);
				int64		unix_us;

				if (TIMESTAMP_NOT_FINITE(ts) ||
					pg_add_s64_overflow(ts, KL_UNIX_TO_PG_USECS, &unix_us))
					kl_export_infinite(c, t);
				kl_pq_int64(w, col, unix_us);
				break;
			}
		case KL_X_BYTEA:
		case KL_X_TEXT:
			{
				struct varlena *v = PG_DETOAST_DATUM_PACKED(d);

				if (c->kind == KL_X_TEXT)
					kl_export_text(w, col, VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
				else
					kl_pq_bytes(w, col, VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
				if ((Pointer) v != DatumGetPointer(d))
					pfree(v);
				break;
			}
		case KL_X_OUTPUT:
			{
				char	   *s = OutputFunctionCall((FmgrInfo *) &c->out, d);

				kl_export_text(w, col, s, strlen(s));
				pfree(s);
				break;
			}
	}
}

/*
 * kl_export_table_file
 *		Write t's rows of the snapshot (those whose id_column is id_value) to
 *		path as one Parquet file, fsynced; fill in t's rows, bytes and
 *		SHA-256.  SPI is connected, the catalog begun.
 */
void
kl_export_table_file(KlExportTable *t, const char *path, int64 row_group_rows,
					 const char *snapshot_id)
{
	int			ncols;
	KlExportColumn *cols = kl_export_columns(t->relid, t->relation, &ncols);
	KlPqColumn *pq;
	KlPqWriter *w;
	KlExportSink sink = {0};
	StringInfoData q;
	Portal		portal;
	Oid			argtype = TEXTOID;
	Datum		arg = CStringGetTextDatum(t->id_value);
	MemoryContext rows_cxt;
	uint8		digest[KL_SHA256_LEN];
	Datum	   *values = palloc(sizeof(Datum) * ncols);
	bool	   *isnull = palloc(sizeof(bool) * ncols);

	kl_export_size_numerics(cols, ncols, t);
	pq = kl_export_parquet_columns(cols, ncols);

	initStringInfo(&q);
	appendStringInfoString(&q, "SELECT ");
	for (int i = 0; i < ncols; i++)
		appendStringInfo(&q, "%s%s", i ? ", " : "", quote_identifier(cols[i].name));
	appendStringInfoString(&q, kl_export_from(t));

	sink.path = path;
	sink.sha = kl_sha256_create();
	sink.fd = OpenTransientFile(path, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (sink.fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create \"%s\": %m", path)));
	w = kl_pq_begin(pq, ncols, kl_export_sink, &sink, row_group_rows);
	kl_pq_key_value(w, "kafka_lake.relation", t->relation);
	kl_pq_key_value(w, "kafka_lake.snapshot_id", snapshot_id);

	portal = SPI_cursor_open_with_args(NULL, q.data, 1, &argtype, &arg, NULL, false,
									   CURSOR_OPT_NO_SCROLL);
	rows_cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_lake export rows",
									 ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, KL_EXPORT_FETCH);
		if (SPI_processed == 0)
			break;
		old = MemoryContextSwitchTo(rows_cxt);
		for (uint64 r = 0; r < SPI_processed; r++)
		{
			/* every column at once: attribute by attribute is quadratic */
			heap_deform_tuple(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, values, isnull);
			for (int i = 0; i < ncols; i++)
			{
				if (isnull[i])
					kl_pq_null(w, i);
				else
					kl_export_value(w, i, &cols[i], values[i], t);
			}
			kl_pq_end_row(w);
		}
		MemoryContextSwitchTo(old);
		MemoryContextReset(rows_cxt);
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	MemoryContextDelete(rows_cxt);
	t->rows = kl_pq_finish(w);

	if (pg_fsync(sink.fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync \"%s\": %m", path)));
	CloseTransientFile(sink.fd);
	kl_sha256_final(sink.sha, digest);
	kl_hex(digest, KL_SHA256_LEN, t->sha256);
	t->bytes = sink.bytes;
}
