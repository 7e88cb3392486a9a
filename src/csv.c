/*-------------------------------------------------------------------------
 *
 * csv.c
 *	  The canonical CSV of the date bridge: writing it, and reading it
 *	  back.
 *
 * The bridge turns the accepted events of one business date into CSV bytes
 * whose SHA-256 is the date's source_hash.  Equal input
 * must give equal bytes, here and in the seed's reference implementation
 * (Python's csv module with lineterminator "\n" and QUOTE_MINIMAL), so the
 * rules are few and exact:
 *
 *	- a header line, then one line per event, each ended by LF (never CRLF);
 *	- fields separated by ",";
 *	- a field is quoted with '"' only when it contains ",", '"' or LF; a
 *	  quote inside a quoted field is doubled.  A CR alone is not a reason to
 *	  quote: it is copied as is;
 *	- integers in decimal, without sign for non-negative values, without
 *	  leading zeros;
 *	- a null (a record without key or without timestamp) is an empty field;
 *	- the bytes are UTF-8, as decoded from the landed JSON; no BOM.
 *
 * The columns and their order are the contract's (bridge_define.c says
 * which); KlCsvColumn in csv.h lists machine_event_v1's, in the order the
 * README's canonical CSV section gives.
 *
 * Reading: the bridge loads silver from the CSV it just hashed, the way the
 * seed's pipeline loads its input file, so the transform sees exactly the
 * bytes that source_hash names.  The reader understands the dialect above
 * (and nothing more): records may span lines inside quotes, fields are
 * returned unquoted, in place, in a buffer that the next call reuses.  The
 * file is read in large chunks, so a record is found with one memchr for its
 * LF and one for a quote in the common case.
 *
 * IDENTIFICATION
 *	  src/csv.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "csv.h"
#include "landing_files.h"

#define KL_CSV_READ_CHUNK	(4 * 1024 * 1024)

const char *const kl_csv_columns[KL_CSV_NCOLUMNS] = {
	"event_time", "plant_id", "line_id", "work_order_id", "machine_id",
	"product_code", "operation", "units_produced", "defect_count",
	"cycle_time_ms", "business_date", "event_id", "schema_version",
	"kafka_topic", "kafka_partition", "kafka_offset", "kafka_key",
	"kafka_timestamp_ms", "kafka_record_fingerprint"
};

const char kl_csv_header[] =
"event_time,plant_id,line_id,work_order_id,machine_id,product_code,operation,"
"units_produced,defect_count,cycle_time_ms,business_date,event_id,schema_version,"
"kafka_topic,kafka_partition,kafka_offset,kafka_key,kafka_timestamp_ms,"
"kafka_record_fingerprint\n";

/*
 * kl_csv_needs_quotes
 *		Does a field contain a comma, a quote or a line feed?
 */
static inline bool
kl_csv_needs_quotes(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
	{
		char		c = s[i];

		if (c == ',' || c == '"' || c == '\n')
			return true;
	}
	return false;
}

/*
 * kl_csv_put_field
 *		Write one text field at p, quoted only when it must be; returns the
 *		end.  There must be room for 2 * len + 2 bytes.
 */
static inline char *
kl_csv_put_field(char *p, const char *s, size_t len)
{
	if (!kl_csv_needs_quotes(s, len))
	{
		memcpy(p, s, len);
		return p + len;
	}
	*p++ = '"';
	for (size_t i = 0; i < len; i++)
	{
		if (s[i] == '"')
			*p++ = '"';
		*p++ = s[i];
	}
	*p++ = '"';
	return p;
}

/*
 * kl_csv_put_int64
 *		Write an integer in decimal at p (room for 20 bytes); returns the end.
 */
static inline char *
kl_csv_put_int64(char *p, int64 v)
{
	char		buf[24];
	char	   *q = buf + sizeof(buf);
	uint64		u = (v < 0) ? -(uint64) v : (uint64) v;
	size_t		n;

	do
	{
		*--q = '0' + (u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--q = '-';
	n = buf + sizeof(buf) - q;
	memcpy(p, q, n);
	return p + n;
}

/*
 * kl_csv_append_field
 *		Append one text field, quoted only when it must be.
 */
void
kl_csv_append_field(StringInfo out, const char *s, size_t len)
{
	enlargeStringInfo(out, len * 2 + 2);
	out->len = kl_csv_put_field(out->data + out->len, s, len) - out->data;
	out->data[out->len] = '\0';
}

/*
 * kl_csv_append_int64
 *		Append an integer field in decimal.
 */
void
kl_csv_append_int64(StringInfo out, int64 v)
{
	enlargeStringInfo(out, 24);
	out->len = kl_csv_put_int64(out->data + out->len, v) - out->data;
	out->data[out->len] = '\0';
}

/*
 * kl_csv_append_values
 *		Append one record of n values in column order, separated by commas,
 *		ended by LF.  Room for the longest form of the record is reserved
 *		once, then the bytes are put in place.
 */
void
kl_csv_append_values(StringInfo out, const KlCsvValue *values, int n)
{
	size_t		room = n + 1;
	char	   *p;

	for (int i = 0; i < n; i++)
		room += values[i].is_int ? 21 : values[i].len * 2 + 2;
	enlargeStringInfo(out, room);
	p = out->data + out->len;
	for (int i = 0; i < n; i++)
	{
		const KlCsvValue *v = &values[i];

		if (i > 0)
			*p++ = ',';
		if (v->is_null)
			continue;
		if (v->is_int)
			p = kl_csv_put_int64(p, v->ival);
		else
			p = kl_csv_put_field(p, v->str, v->len);
	}
	*p++ = '\n';
	*p = '\0';
	out->len = p - out->data;
}

/*
 * kl_csv_append_row
 *		Append one record of machine_event_v1's KL_CSV_NCOLUMNS columns.
 */
void
kl_csv_append_row(StringInfo out, const KlCsvValue *values)
{
	kl_csv_append_values(out, values, KL_CSV_NCOLUMNS);
}

/*
 * kl_csv_open
 *		Start reading a CSV file from its beginning.
 */
void
kl_csv_open(KlCsvReader *r, const char *path)
{
	const char *not_regular;

	memset(r, 0, sizeof(*r));
	r->path = pstrdup(path);
	/* a file of the landing: a regular file, never blocking (landing_files.c) */
	r->fd = kl_open_landed(path, &not_regular);
	if (r->fd < 0 && not_regular != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("\"%s\" is not a regular file", path),
				 errdetail("It is %s.", not_regular),
				 errhint("Remove it; the next bridge() of its date writes it again.")));
	if (r->fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	r->cap = KL_CSV_READ_CHUNK;
	r->buf = palloc(r->cap + 1);
}

/*
 * kl_csv_fill
 *		Keep the unread bytes, read more after them.  False at end of file.
 */
static bool
kl_csv_fill(KlCsvReader *r)
{
	ssize_t		n;

	if (r->eof)
		return false;
	if (r->pos > 0)
	{
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->len -= r->pos;
		r->pos = 0;
	}
	if (r->len == r->cap)
	{
		/* one record larger than the buffer: grow it */
		r->cap *= 2;
		r->buf = repalloc_huge(r->buf, r->cap + 1);
	}
	n = read(r->fd, r->buf + r->len, r->cap - r->len);
	if (n < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", r->path)));
	if (n == 0)
	{
		r->eof = true;
		return false;
	}
	r->len += n;
	return true;
}

/*
 * kl_csv_malformed
 *		The file is not in the canonical dialect.
 */
static void
kl_csv_malformed(KlCsvReader *r, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("CSV file \"%s\" is malformed at record %lld: %s",
					r->path, (long long) r->records + 1, what),
			 errdetail("The bridge reads back only the canonical CSV it wrote itself."),
			 errhint("Remove the file; the next bridge() of its date writes it again.")));
}

/*
 * kl_csv_record_end
 *		The LF that ends the record starting at r->pos, honouring quotes;
 *		NULL when the buffer ends first.
 */
static char *
kl_csv_record_end(KlCsvReader *r)
{
	char	   *p = r->buf + r->pos;
	char	   *end = r->buf + r->len;
	char	   *lf = memchr(p, '\n', end - p);
	bool		quoted = false;

	if (lf == NULL)
		return NULL;
	if (memchr(p, '"', lf - p) == NULL)
		return lf;				/* the common case: no quote at all */

	for (; p < end; p++)
	{
		if (*p == '"')
			quoted = !quoted;	/* a doubled quote toggles twice */
		else if (*p == '\n' && !quoted)
			return p;
	}
	return NULL;
}

/*
 * kl_csv_next
 *		The next record's fields (unquoted, NUL-terminated, valid until the
 *		next call); returns the number of fields, or -1 at end of file.
 *		At most maxfields are returned; more is an ERROR.
 */
int
kl_csv_next(KlCsvReader *r, char **fields, int *lens, int maxfields)
{
	char	   *lf;
	char	   *p;
	int			n = 0;

	while ((lf = kl_csv_record_end(r)) == NULL)
	{
		if (!kl_csv_fill(r))
		{
			if (r->pos < r->len)
				kl_csv_malformed(r, "the last record has no line feed");
			return -1;
		}
	}

	p = r->buf + r->pos;
	*lf = '\0';
	for (;;)
	{
		char	   *start;
		char	   *out;

		if (n == maxfields)
			kl_csv_malformed(r, "too many fields");
		if (*p == '"')
		{
			/* quoted: unquote in place */
			start = out = ++p;
			for (;;)
			{
				if (p >= lf)
					kl_csv_malformed(r, "unterminated quoted field");
				if (*p == '"')
				{
					if (p[1] == '"')
					{
						*out++ = '"';
						p += 2;
						continue;
					}
					p++;
					break;
				}
				*out++ = *p++;
			}
			if (*p != ',' && *p != '\0')
				kl_csv_malformed(r, "text after a closing quote");
		}
		else
		{
			start = p;
			while (*p != ',' && *p != '\0')
			{
				if (*p == '"')
					kl_csv_malformed(r, "quote inside an unquoted field");
				p++;
			}
			out = p;
		}
		fields[n] = start;
		lens[n] = out - start;
		n++;
		if (*p == '\0')
		{
			*out = '\0';
			break;
		}
		*out = '\0';
		p++;
	}
	r->pos = lf + 1 - r->buf;
	r->records++;
	return n;
}

/*
 * kl_csv_close
 *		Close the file and free the buffer.
 */
void
kl_csv_close(KlCsvReader *r)
{
	if (r->fd >= 0)
		CloseTransientFile(r->fd);
	r->fd = -1;
	if (r->buf)
		pfree(r->buf);
	r->buf = NULL;
}
