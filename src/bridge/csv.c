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
 *	- the bytes are UTF-8, as decoded from the landed JSON; no BOM, no NUL
 *	  byte (contracts refuse NUL characters, and the reader refuses the byte
 *	  rather than end a field at it);
 *
 * The columns and their order are the contract's (bridge_define.c says
 * which); KlCsvColumn in csv.h lists machine_event_v1's, in the order the
 * canonical CSV section of docs/bridge.md gives.
 *
 * Reading: the bridge loads silver from the CSV it just hashed, the way the
 * seed's pipeline loads its input file, so the transform sees exactly the
 * bytes that source_hash names.  The reader understands the dialect above
 * (and nothing more): records may span lines inside quotes, fields are
 * returned unquoted, in place, in a buffer that the next call reuses.  The
 * file is read in large chunks, so a record is found with one memchr for its
 * LF and one for a quote in the common case.
 *
 * Reading ahead (kl_csv_ahead_start, for silver): two blocks of 1 MB; while
 * the caller takes the records of one, a thread reads the next block of the
 * file and splits its records (at most KL_CSV_AHEAD_RECORDS) with the same
 * pure code kl_csv_next uses (kl_csv_record_end, kl_csv_split), so the
 * records and the errors are the same (the bytes kl_csv_next read but did
 * not return, after the header, are read again).  The bytes after a block's last
 * whole record are carried to the start of the other block before its job
 * starts; a record larger than a block grows the block (on the backend,
 * between jobs).  Each is a job of base/thread_job.c, with its rules (every
 * signal blocked, neither palloc nor ereport: a read error or a malformed
 * record is a result the backend reports when it gets there), and only one
 * is out at a time, joined before the block it fills is read;
 * kl_csv_ahead_stop joins it from the caller's PG_CATCH.
 *
 * IDENTIFICATION
 *	  src/bridge/csv.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "bridge/csv.h"
#include "landing/landing_files.h"

#define KL_CSV_READ_CHUNK	(4 * 1024 * 1024)
#define KL_CSV_AHEAD_BLOCK	(1024 * 1024)

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
 *		The LF that ends the record starting at p, honouring quotes; NULL
 *		when the bytes end first (pure: the read-ahead thread calls it).
 */
static char *
kl_csv_record_end(char *p, char *end)
{
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
 * kl_csv_split
 *		Split the record p..lf into its fields (unquoted in place,
 *		NUL-terminated); the number of fields, or -1 with *error saying what
 *		is malformed (pure: the read-ahead thread calls it).
 */
static int
kl_csv_split(char *p, char *lf, char **fields, int *lens, int maxfields, const char **error)
{
	int			n = 0;

	*lf = '\0';
	for (;;)
	{
		char	   *start;
		char	   *out;

		if (n == maxfields)
		{
			*error = "too many fields";
			return -1;
		}
		if (*p == '"')
		{
			/* quoted: unquote in place */
			start = out = ++p;
			for (;;)
			{
				if (p >= lf)
				{
					*error = "unterminated quoted field";
					return -1;
				}
				if (*p == '\0')
				{
					*error = "a NUL byte";
					return -1;
				}
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
			{
				*error = "text after a closing quote";
				return -1;
			}
		}
		else
		{
			start = p;
			while (*p != ',' && *p != '\0')
			{
				if (*p == '"')
				{
					*error = "quote inside an unquoted field";
					return -1;
				}
				p++;
			}
			if (*p == '\0' && p != lf)
			{
				/* not the record's end: a NUL byte, never written */
				*error = "a NUL byte";
				return -1;
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
	return n;
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
	const char *error = NULL;
	int			n;

	while ((lf = kl_csv_record_end(r->buf + r->pos, r->buf + r->len)) == NULL)
	{
		if (!kl_csv_fill(r))
		{
			if (r->pos < r->len)
				kl_csv_malformed(r, "the last record has no line feed");
			return -1;
		}
	}

	n = kl_csv_split(r->buf + r->pos, lf, fields, lens, maxfields, &error);
	if (n < 0)
		kl_csv_malformed(r, error);
	r->pos = lf + 1 - r->buf;
	r->records++;
	return n;
}

/*
 * kl_csv_ahead_job
 *		The read-ahead thread's job on one block: read until the block is
 *		full or the file ends, then split the complete records in it, at
 *		most KL_CSV_AHEAD_RECORDS.  Only read(2) and the pure splitting: no
 *		palloc, no ereport; what goes wrong is a result.
 */
static void
kl_csv_ahead_job(void *arg, const volatile bool *cancel)
{
	KlCsvAhead *a = (KlCsvAhead *) arg;
	KlCsvBlock *k = a->block;
	char	   *p;
	char	   *end;

	while (k->len < k->cap && !k->eof && !*cancel)
	{
		ssize_t		n = read(a->fd, k->buf + k->len, k->cap - k->len);

		if (n < 0)
		{
			k->read_errno = errno;
			return;
		}
		if (n == 0)
			k->eof = true;
		k->len += n;
	}
	p = k->buf;
	end = k->buf + k->len;
	while (k->nrecords < KL_CSV_AHEAD_RECORDS && !*cancel)
	{
		char	   *lf = kl_csv_record_end(p, end);
		int			n;

		if (lf == NULL)
			break;
		n = kl_csv_split(p, lf, k->fields + (Size) k->nrecords * a->maxfields,
						 k->lens + (Size) k->nrecords * a->maxfields, a->maxfields, &k->error);
		if (n < 0)
			break;
		k->nfields[k->nrecords++] = n;
		p = lf + 1;
	}
	k->consumed = p - k->buf;
	if (k->nrecords == 0 && k->error == NULL && !k->eof && k->len == k->cap)
		k->need_room = true;
}

/*
 * kl_csv_ahead_submit
 *		Start the job of block k (its carried bytes already in place).
 */
static void
kl_csv_ahead_submit(KlCsvAhead *a, KlCsvBlock *k)
{
	k->nrecords = 0;
	k->next = 0;
	k->consumed = 0;
	k->error = NULL;
	k->read_errno = 0;
	k->need_room = false;
	a->block = k;
	a->job = kl_job_start(kl_csv_ahead_job, a);
}

/*
 * kl_csv_ahead_join
 *		Wait for the job out, and report a read error.
 */
static void
kl_csv_ahead_join(KlCsvAhead *a)
{
	kl_job_wait(&a->job, false);
	if (a->block && a->block->read_errno != 0)
	{
		errno = a->block->read_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", a->r->path)));
	}
}

/*
 * kl_csv_ahead_block_room
 *		Make block k hold at least cap bytes, keeping its bytes.
 */
static void
kl_csv_ahead_block_room(KlCsvBlock *k, size_t cap)
{
	if (k->cap >= cap)
		return;
	k->buf = repalloc_huge(k->buf, cap + 1);
	k->cap = cap;
}

/*
 * kl_csv_ahead_start
 *		Go on reading r (after its header, say) with a read-ahead thread:
 *		the next block of the file is read and split into records there
 *		while the caller uses the records of the current one.  Records come
 *		from kl_csv_ahead_next, exactly as kl_csv_next would give them, with
 *		the same errors.  The caller stops the thread with kl_csv_ahead_stop
 *		in its PG_CATCH, before an ERROR goes on (the abort closes the file
 *		it reads).
 */
void
kl_csv_ahead_start(KlCsvAhead *a, KlCsvReader *r, int maxfields)
{
	off_t		unread = (off_t) (r->len - r->pos);

	memset(a, 0, sizeof(*a));
	a->r = r;
	a->fd = r->fd;
	a->maxfields = maxfields;
	for (int i = 0; i < 2; i++)
	{
		KlCsvBlock *k = &a->blocks[i];

		k->cap = KL_CSV_AHEAD_BLOCK;
		k->buf = palloc(k->cap + 1);
		k->fields = palloc(sizeof(char *) * KL_CSV_AHEAD_RECORDS * maxfields);
		k->lens = palloc(sizeof(int) * KL_CSV_AHEAD_RECORDS * maxfields);
		k->nfields = palloc(sizeof(int) * KL_CSV_AHEAD_RECORDS);
	}

	/* the bytes r read but did not return are read again, by the blocks */
	if (lseek(r->fd, -unread, SEEK_CUR) < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not seek in file \"%s\": %m", r->path)));
	r->pos = r->len = 0;
	r->eof = false;
	a->blocks[1].exhausted = true;	/* the first block comes next */
	a->cur = 1;
	kl_csv_ahead_submit(a, &a->blocks[0]);
}

/*
 * kl_csv_ahead_next
 *		The next record: *fields and *lens point at its fields (valid until
 *		the next call); the number of fields, or -1 at end of file.
 */
int
kl_csv_ahead_next(KlCsvAhead *a, char ***fields, int **lens)
{
	KlCsvReader *r = a->r;

	for (;;)
	{
		KlCsvBlock *k = &a->blocks[a->cur];
		KlCsvBlock *o;
		size_t		tail;

		if (!k->exhausted && k->next < k->nrecords)
		{
			int			i = k->next++;

			*fields = k->fields + (Size) i * a->maxfields;
			*lens = k->lens + (Size) i * a->maxfields;
			r->records++;
			return k->nfields[i];
		}
		if (!k->exhausted && k->error)
			kl_csv_malformed(r, k->error);
		if (k->last)
			return -1;
		k->exhausted = true;

		/* the other block is out: it becomes the current one */
		a->cur = 1 - a->cur;
		k = &a->blocks[a->cur];
		kl_csv_ahead_join(a);
		while (k->need_room)
		{
			/* one record larger than the block: grow it, read on */
			kl_csv_ahead_block_room(k, k->cap * 2);
			kl_csv_ahead_submit(a, k);
			kl_csv_ahead_join(a);
		}
		k->exhausted = false;
		k->last = false;
		if (k->nrecords == 0 && k->error == NULL)
		{
			/* the file ended (read to its end, with no record left) */
			if (k->len > 0)
				kl_csv_malformed(r, "the last record has no line feed");
			k->last = true;
			continue;
		}
		if (k->error != NULL || (k->eof && k->consumed == k->len))
		{
			k->last = (k->error == NULL);
			continue;
		}

		/* what follows its records goes to the other block, read on there */
		o = &a->blocks[1 - a->cur];
		tail = k->len - k->consumed;
		kl_csv_ahead_block_room(o, Max(k->cap, tail * 2));
		memcpy(o->buf, k->buf + k->consumed, tail);
		o->len = tail;
		o->eof = k->eof;
		kl_csv_ahead_submit(a, o);
	}
}

/*
 * kl_csv_ahead_stop
 *		Stop and join the read-ahead thread, if out (for a PG_CATCH).
 */
void
kl_csv_ahead_stop(KlCsvAhead *a)
{
	if (a != NULL)
		kl_job_stop(&a->job);
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
