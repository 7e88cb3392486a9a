/*-------------------------------------------------------------------------
 *
 * reader.c
 *	  Reading landed batches back: which batches (from the catalog, under
 *	  the caller's snapshot), and their JSONL files, checked before use.
 *	  Shared by the foreign table (fdw.c) and the bridge (bridge.c).
 *
 * Which batches: the catalog is read with the statement's snapshot, so a
 * batch appears to a reader all at once or not at all, and only once the
 * land() that wrote it has committed.  Bounds on partition, offset,
 * business_date and batch_id are applied in that catalog query, before any
 * file is opened.
 *
 * Checking a batch before it is used: its manifest.json must be the file the
 * catalog recorded when the batch landed (size and CRC-32C, or the SHA-256
 * for a batch landed by 1.0: kl_check_manifest), once per batch, before any
 * of its files.  A batch that disagrees with its manifest is refused whole
 * (I5), even though the rows come from the data files: a manifest that is
 * gone or edited means the batch was tampered with, and recover() could no
 * longer adopt it.
 *
 * Checking a file before its rows are used: the file is read whole into
 * memory (a batch is bounded by kafka_lake.batch_max_bytes), its size, line
 * count and CRC-32C are compared with the catalog's copy of the manifest,
 * and only then are lines handed out.  A missing, truncated, extended or
 * edited file is an ERROR with SQLSTATE XX001 that names the batch and the
 * file; nothing of it is returned.  So is anything in its place that is not
 * a regular file: files are opened by kl_open_landed (recover.c), which
 * never follows a symbolic link and never blocks in open(2).  (SHA-256, ten times slower, is
 * verify()'s job; see digest.c.)  A caller that reads many files passes a
 * buffer of its own (kl_reader_open_buffer), which is reused from file to
 * file instead of being allocated, faulted in and freed for each.
 *
 * Lines are parsed only as far as the caller needs: kl_line_parse stops
 * once it has the members asked for.  The file's CRC already vouches for
 * the bytes, and every line was written by landing.c as valid JSON, so the
 * members a caller does not ask for are skipped by a fast structural scan
 * (strings, nesting, nothing else) that never reads past the line; each
 * member it does hand out is then parsed and validated by the strict reader
 * of json.c, so a value is never half-understood.  Anything unexpected on
 * the way sends the line to the strict reader from its start, which either
 * reads it after all or reports exactly what is wrong with it.
 *
 * IDENTIFICATION
 *	  src/reader.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "storage/fd.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "kafka_lake.h"

#define KL_READ_CHUNK	(16 * 1024 * 1024)
#define KL_MANIFEST_CHUNK	(256 * 1024)

/*
 * kl_bounds_init
 *		No bounds: every batch of the source.
 */
void
kl_bounds_init(KlBounds *bounds)
{
	memset(bounds, 0, sizeof(*bounds));
	bounds->partition_lo = 0;
	bounds->partition_hi = PG_INT32_MAX;
	bounds->offset_lo = 0;
	bounds->offset_hi = PG_INT64_MAX;
	bounds->date_lo = DATEVAL_NOBEGIN;
	bounds->date_hi = DATEVAL_NOEND;
	for (int i = 0; i < KL_NFILES; i++)
		bounds->files[i] = true;
}

/*
 * kl_bounds_empty
 *		Do the bounds exclude everything?
 */
bool
kl_bounds_empty(const KlBounds *bounds)
{
	bool		any_file = false;

	for (int i = 0; i < KL_NFILES; i++)
		any_file |= bounds->files[i];
	return bounds->contradiction || !any_file ||
		bounds->partition_lo > bounds->partition_hi ||
		bounds->offset_lo > bounds->offset_hi ||
		bounds->date_lo > bounds->date_hi;
}

/*
 * kl_int8_array3
 *		The three elements of a bigint[3] datum (one per file).
 */
static void
kl_int8_array3(Datum d, int64 *out)
{
	ArrayType  *a = DatumGetArrayTypeP(d);
	int64	   *v = (int64 *) ARR_DATA_PTR(a);

	if (ARR_NDIM(a) != 1 || ARR_DIMS(a)[0] != KL_NFILES || ARR_HASNULL(a))
		elog(ERROR, "unexpected file checks in kafka_lake.batches");
	for (int i = 0; i < KL_NFILES; i++)
		out[i] = v[i];
}

/*
 * kl_catalog_scan_batches
 *		The batches of a source within bounds, ascending by partition and
 *		offset, as seen by the current snapshot.  *total gets the number of
 *		batches of the source (to report how many were pruned).  When
 *		want_fingerprints, each batch carries its coordinates' fingerprints.
 */
List *
kl_catalog_scan_batches(KlSource *src, const KlBounds *bounds, bool want_fingerprints,
						int64 *total)
{
	MemoryContext caller = CurrentMemoryContext;
	List	   *result = NIL;
	StringInfoData sql;
	Oid			types[8] = {INT4OID, INT4OID, INT4OID, INT8OID, INT8OID, DATEOID, DATEOID, TEXTOID};
	Datum		values[8];
	char		nulls[8] = "        ";
	KlCatalogSave cs;

	values[0] = Int32GetDatum(src->source_id);
	values[1] = Int32GetDatum(bounds->partition_lo);
	values[2] = Int32GetDatum(bounds->partition_hi);
	values[3] = Int64GetDatum(bounds->offset_lo);
	values[4] = Int64GetDatum(bounds->offset_hi);
	values[5] = DateADTGetDatum(bounds->date_lo);
	values[6] = DateADTGetDatum(bounds->date_hi);
	if (bounds->batch_id)
		values[7] = CStringGetTextDatum(bounds->batch_id);
	else
	{
		values[7] = (Datum) 0;
		nulls[7] = 'n';
	}

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT b.batch_id, b.partition, b.first_offset, b.last_offset,"
					 " b.file_bytes, b.file_lines, b.file_crc32c,"
					 " b.accepted_count, b.duplicate_count, b.quarantine_count,"
					 " CASE WHEN pg_catalog.strpos(c.statuses, 'D') > 0 THEN c.statuses END,"
					 " CASE WHEN pg_catalog.strpos(c.statuses, 'D') > 0 OR %s THEN c.offset_list END,"
					 " %s,"
					 " (SELECT pg_catalog.count(*) FROM kafka_lake.batches t WHERE t.source_id = $1),"
					 " b.min_business_date, b.max_business_date, b.manifest_sha256, %s"
					 " FROM kafka_lake.batches b"
					 " LEFT JOIN kafka_lake.coordinates c USING (source_id, batch_id)"
					 " WHERE b.source_id = $1"
					 " AND b.partition BETWEEN $2 AND $3"
					 " AND b.last_offset >= $4 AND b.first_offset <= $5"
					 " AND ($6 = '-infinity'::date OR b.max_business_date >= $6)"
					 " AND ($7 = 'infinity'::date OR b.min_business_date <= $7)"
					 " AND ($8 IS NULL OR b.batch_id = $8)"
					 " AND (%s OR %s OR %s)"
					 " ORDER BY b.partition, b.first_offset",
					 want_fingerprints ? "true" : "false",
					 want_fingerprints ? "c.fingerprints" : "NULL::bytea",
					 kl_catalog_has_manifest_checks() ?
					 "b.manifest_bytes, b.manifest_crc32c" : "NULL::bigint, NULL::bigint",
					 bounds->files[KL_FILE_ACCEPTED] ? "b.accepted_count > 0" : "false",
					 bounds->files[KL_FILE_DUPLICATES] ?
					 "b.duplicate_count > 0 OR pg_catalog.strpos(c.statuses, 'D') > 0" : "false",
					 bounds->files[KL_FILE_QUARANTINE] ? "b.quarantine_count > 0" : "false");

	cs = kl_catalog_begin();
	if (SPI_execute_with_args(sql.data, 8, types, values, nulls, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.batches");
	*total = 0;
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tup = SPI_tuptable->vals[row];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(caller);
		KlBatchRef *b = palloc0(sizeof(KlBatchRef));
		bool		isnull;
		int64		v[KL_NFILES];
		Datum		d;

		strlcpy(b->batch_id, TextDatumGetCString(SPI_getbinval(tup, desc, 1, &isnull)),
				sizeof(b->batch_id));
		b->partition = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		b->first_offset = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		b->last_offset = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
		kl_int8_array3(SPI_getbinval(tup, desc, 5, &isnull), v);
		for (int i = 0; i < KL_NFILES; i++)
			b->files[i].bytes = v[i];
		kl_int8_array3(SPI_getbinval(tup, desc, 6, &isnull), v);
		for (int i = 0; i < KL_NFILES; i++)
			b->files[i].lines = v[i];
		kl_int8_array3(SPI_getbinval(tup, desc, 7, &isnull), v);
		for (int i = 0; i < KL_NFILES; i++)
			b->files[i].crc32c = (uint32) v[i];
		b->counts[0] = DatumGetInt32(SPI_getbinval(tup, desc, 8, &isnull));
		b->counts[1] = DatumGetInt32(SPI_getbinval(tup, desc, 9, &isnull));
		b->counts[2] = DatumGetInt32(SPI_getbinval(tup, desc, 10, &isnull));

		d = SPI_getbinval(tup, desc, 11, &isnull);
		if (!isnull)
			b->demoted_statuses = TextDatumGetCString(d);
		d = SPI_getbinval(tup, desc, 12, &isnull);
		if (!isnull)
		{
			Datum	   *elems;
			int			nelems;

			deconstruct_array(DatumGetArrayTypeP(d), INT8OID, 8, true, TYPALIGN_DOUBLE,
							  &elems, NULL, &nelems);
			b->offset_list = palloc(sizeof(int64) * nelems);
			for (int i = 0; i < nelems; i++)
				b->offset_list[i] = DatumGetInt64(elems[i]);
		}
		d = SPI_getbinval(tup, desc, 13, &isnull);
		if (!isnull)
		{
			bytea	   *fp = DatumGetByteaPCopy(d);

			b->fingerprints = (uint8 *) VARDATA(fp);
			b->nfingerprints = VARSIZE(fp) / KL_SHA256_LEN;
		}
		*total = DatumGetInt64(SPI_getbinval(tup, desc, 14, &isnull));
		d = SPI_getbinval(tup, desc, 15, &isnull);
		if (!isnull)
		{
			b->has_dates = true;
			b->min_date = DatumGetDateADT(d);
			d = SPI_getbinval(tup, desc, 16, &isnull);
			b->max_date = isnull ? b->min_date : DatumGetDateADT(d);
		}
		strlcpy(b->manifest_sha256, TextDatumGetCString(SPI_getbinval(tup, desc, 17, &isnull)),
				sizeof(b->manifest_sha256));
		d = SPI_getbinval(tup, desc, 18, &isnull);
		b->manifest_bytes = isnull ? -1 : DatumGetInt64(d);
		d = SPI_getbinval(tup, desc, 19, &isnull);
		if (isnull)
			b->manifest_bytes = -1;
		else
			b->manifest_crc32c = (uint32) DatumGetInt64(d);
		result = lappend(result, b);
		MemoryContextSwitchTo(old);
	}
	if (SPI_processed == 0)
	{
		/* still say how many there are */
		Oid			t1[1] = {INT4OID};

		if (SPI_execute_with_args("SELECT pg_catalog.count(*) FROM kafka_lake.batches WHERE source_id = $1",
								  1, t1, values, NULL, true, 0) == SPI_OK_SELECT)
		{
			bool		isnull;

			*total = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
												 SPI_tuptable->tupdesc, 1, &isnull));
		}
	}
	kl_catalog_end(cs);
	return result;
}

/*
 * kl_batch_coordinate_index
 *		Index of an offset among a batch's coordinates, or -1.
 */
int
kl_batch_coordinate_index(const KlBatchRef *b, int64 offset)
{
	if (offset < b->first_offset || offset > b->last_offset)
		return -1;
	if (b->offset_list == NULL)
		return (int) (offset - b->first_offset);
	{
		int			lo = 0;
		int			hi = b->counts[0] + b->counts[1] + b->counts[2] - 1;

		while (lo <= hi)
		{
			int			mid = (lo + hi) / 2;

			if (b->offset_list[mid] == offset)
				return mid;
			if (b->offset_list[mid] < offset)
				lo = mid + 1;
			else
				hi = mid - 1;
		}
	}
	return -1;
}

/*
 * kl_file_error_callback
 *		Error context: which batch, file and line.
 */
static void
kl_file_error_callback(void *arg)
{
	KlFileReader *r = (KlFileReader *) arg;

	if (r->lineno > 0)
		errcontext("kafka_lake source \"%s\", batch %s, file %s, line %lld",
				   r->source, r->batch->batch_id, kl_file_names[r->file], (long long) r->lineno);
	else
		errcontext("kafka_lake source \"%s\", batch %s, file %s",
				   r->source, r->batch->batch_id, kl_file_names[r->file]);
}

/*
 * kl_corrupt_hint
 *		The hint of every integrity error: what to do about a bad batch.
 */
static int
kl_corrupt_hint(const char *source)
{
	return errhint("Landed files never change. Run kafka_lake.verify('%s'): it lists every damaged batch with what to do (restore it from a backup, or move it out of the landing directory, run kafka_lake.recover('%s') and land its offsets again with kafka_lake.replay()).",
				   source, source);
}

/*
 * kl_reader_open_buffer
 *		Read one file of a batch into *buffer (grown as needed, in the
 *		current memory context, and kept by the caller for the next file)
 *		and check it against the catalog's copy of its manifest before
 *		anything of it is used.
 */
void
kl_reader_open_buffer(KlFileReader *r, KlSource *src, const KlBatchRef *b, int file,
					  char **buffer, size_t *buffer_size)
{
	char	   *dir = kl_partition_dir(src, b->partition);
	char	   *path = psprintf("%s/batch=%s/%s", dir, b->batch_id, kl_file_names[file]);
	const KlFileInfo *expect = &b->files[file];
	int			fd;
	const char *not_regular;
	struct stat st;
	size_t		done = 0;
	int64		lines = 0;
	uint32		crc;

	pfree(dir);
	memset(r, 0, sizeof(*r));
	r->source = src->source;
	r->batch = b;
	r->file = file;
	r->path = path;

	fd = kl_open_landed(path, &not_regular);
	if (fd < 0 && not_regular != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file %s of batch %s of source \"%s\" is not a regular file",
						kl_file_names[file], b->batch_id, src->source),
				 errdetail("\"%s\" is %s.", path, not_regular),
				 kl_corrupt_hint(src->source)));
	if (fd < 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file %s of batch %s of source \"%s\" is missing",
						kl_file_names[file], b->batch_id, src->source),
				 errdetail("Could not open \"%s\": %m.", path),
				 kl_corrupt_hint(src->source)));
	if (fstat(fd, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", path),
				 errhint("Check the permissions of kafka_lake.landing_dir.")));
	if (st.st_size != expect->bytes)
	{
		CloseTransientFile(fd);
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file %s of batch %s of source \"%s\" has %lld bytes, its manifest says %lld",
						kl_file_names[file], b->batch_id, src->source,
						(long long) st.st_size, (long long) expect->bytes),
				 errdetail("The file was %s after it was landed.",
						   st.st_size < expect->bytes ? "truncated" : "extended"),
				 kl_corrupt_hint(src->source)));
	}

	if (*buffer == NULL || *buffer_size < (size_t) expect->bytes + 1)
	{
		if (*buffer)
			pfree(*buffer);
		*buffer = NULL;
		*buffer_size = Max((size_t) expect->bytes + 1, 64 * 1024);
		*buffer = MemoryContextAllocHuge(CurrentMemoryContext, *buffer_size);
	}
	r->data = *buffer;
	r->own_data = false;
	while (done < (size_t) expect->bytes)
	{
		ssize_t		n = read(fd, r->data + done, Min(expect->bytes - done, KL_READ_CHUNK));

		if (n < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read file \"%s\": %m", path),
					 errhint("Check the file system of kafka_lake.landing_dir.")));
		if (n == 0)
			break;
		done += n;
		CHECK_FOR_INTERRUPTS();
	}
	CloseTransientFile(fd);
	r->len = done;
	r->data[done] = '\0';

	for (const char *p = r->data; (p = memchr(p, '\n', r->data + r->len - p)) != NULL; p++)
		lines++;
	crc = kl_crc32c_final(kl_crc32c(KL_CRC32C_INIT, r->data, r->len));
	if (done != (size_t) expect->bytes || lines != expect->lines || crc != expect->crc32c ||
		(r->len > 0 && r->data[r->len - 1] != '\n'))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file %s of batch %s of source \"%s\" does not match its manifest",
						kl_file_names[file], b->batch_id, src->source),
				 done != (size_t) expect->bytes ?
				 errdetail("Only %zu of its %lld bytes could be read.",
						   done, (long long) expect->bytes) :
				 lines != expect->lines ?
				 errdetail("It has %lld lines, its manifest says %lld.",
						   (long long) lines, (long long) expect->lines) :
				 errdetail("Its CRC-32C differs from its manifest's: its bytes were edited."),
				 kl_corrupt_hint(src->source)));

	r->pos = r->data;
	r->errcallback.callback = kl_file_error_callback;
	r->errcallback.arg = r;
}

/*
 * kl_check_manifest
 *		A batch agrees with its manifest, or ERROR (XX001): manifest.json is
 *		there, a regular file, and it is the file the catalog recorded when
 *		the batch landed: its size and CRC-32C (what the data files are
 *		checked by, too), or its SHA-256 for a batch recorded without them
 *		(landed by kafka_lake 1.0).  The foreign table and the bridge call it
 *		once per batch before they use any of its files.  The manifest is
 *		read in chunks, never held whole.
 */
void
kl_check_manifest(KlSource *src, const KlBatchRef *b)
{
	char	   *dir = kl_partition_dir(src, b->partition);
	char	   *path = psprintf("%s/batch=%s/manifest.json", dir, b->batch_id);
	const char *not_regular;
	int			fd = kl_open_landed(path, &not_regular);
	struct stat st;
	bool		by_crc = (b->manifest_bytes >= 0);
	KlSha256   *sha = by_crc ? NULL : kl_sha256_create();
	uint32		crc = KL_CRC32C_INIT;
	char	   *buf;
	int64		done = 0;
	bool		same;

	pfree(dir);
	if (fd < 0 && not_regular != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest.json of batch %s of source \"%s\" is not a regular file",
						b->batch_id, src->source),
				 errdetail("\"%s\" is %s.", path, not_regular),
				 kl_corrupt_hint(src->source)));
	if (fd < 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest.json of batch %s of source \"%s\" is missing",
						b->batch_id, src->source),
				 errdetail("Could not open \"%s\": %m.", path),
				 kl_corrupt_hint(src->source)));
	if (fstat(fd, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", path),
				 errhint("Check the permissions of kafka_lake.landing_dir.")));
	if (by_crc && st.st_size != b->manifest_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest.json of batch %s of source \"%s\" does not match the catalog",
						b->batch_id, src->source),
				 errdetail("It has %lld bytes; the catalog recorded %lld when the batch landed.",
						   (long long) st.st_size, (long long) b->manifest_bytes),
				 kl_corrupt_hint(src->source)));

	buf = palloc(KL_MANIFEST_CHUNK);
	for (;;)
	{
		ssize_t		n = read(fd, buf, KL_MANIFEST_CHUNK);

		if (n < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read file \"%s\": %m", path),
					 errhint("Check the file system of kafka_lake.landing_dir.")));
		if (n == 0)
			break;
		if (by_crc)
			crc = kl_crc32c(crc, buf, n);
		else
			kl_sha256_update(sha, buf, n);
		done += n;
		CHECK_FOR_INTERRUPTS();
	}
	CloseTransientFile(fd);
	pfree(buf);
	if (by_crc)
		same = (done == b->manifest_bytes && kl_crc32c_final(crc) == b->manifest_crc32c);
	else
	{
		uint8		digest[KL_SHA256_LEN];
		char		hex[KL_SHA256_HEX_LEN + 1];

		kl_sha256_final(sha, digest);
		kl_hex(digest, KL_SHA256_LEN, hex);
		same = (strcmp(hex, b->manifest_sha256) == 0);
	}
	if (!same)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest.json of batch %s of source \"%s\" does not match the catalog",
						b->batch_id, src->source),
				 errdetail(by_crc ?
						   "Its CRC-32C differs from the one the catalog recorded when the batch landed: it was edited." :
						   "Its SHA-256 differs from the one the catalog recorded when the batch landed: it was edited."),
				 kl_corrupt_hint(src->source)));
	pfree(path);
}

/*
 * kl_reader_open
 *		Read one file of a batch into memory of its own and check it
 *		against the catalog's copy of its manifest before anything of it is
 *		used.
 */
void
kl_reader_open(KlFileReader *r, KlSource *src, const KlBatchRef *b, int file)
{
	char	   *buffer = NULL;
	size_t		size = 0;

	kl_reader_open_buffer(r, src, b, file, &buffer, &size);
	r->own_data = true;
}

/*
 * kl_reader_next
 *		The next line (without its LF); false at the end of the file.
 */
bool
kl_reader_next(KlFileReader *r, const char **line, size_t *len)
{
	const char *end = r->data + r->len;
	const char *nl;

	if (r->pos >= end)
		return false;
	nl = memchr(r->pos, '\n', end - r->pos);
	*line = r->pos;
	*len = nl - r->pos;
	r->pos = nl + 1;
	r->lineno++;
	return true;
}

/*
 * kl_reader_close
 *		Release the file's memory (unless it is the caller's buffer).
 */
void
kl_reader_close(KlFileReader *r)
{
	if (r->data && r->own_data)
		pfree(r->data);
	r->data = NULL;
	if (r->path)
		pfree(r->path);
	r->path = NULL;
}

/*
 * kl_line_error
 *		A landed line does not have the shape we wrote: the file was altered
 *		in a way its CRC could not see, or written by something else.
 */
static void
kl_line_error(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("landed line is malformed: %s", what),
			 errdetail("Every line of a landed file is a JSON object written by land(); this one is not."),
			 errhint("Run kafka_lake.verify() on the source to check its files against their SHA-256.")));
}

#define KEY_IS(k, name) kl_json_key_is(&(k), (name), sizeof(name) - 1)

/*
 * kl_line_reset
 *		Forget what the previous line found.
 */
static inline void
kl_line_reset(KlLine *line)
{
	line->event.type = KL_JSON_NULL;
	line->raw_value.type = KL_JSON_NULL;
	line->raw_value_base64.type = KL_JSON_NULL;
	line->validation_error.type = KL_JSON_NULL;
	line->key.type = KL_JSON_NULL;
	line->key_base64.type = KL_JSON_NULL;
	line->offset = -1;
	line->partition = -1;
	line->timestamp_ms = -1;
	for (int i = 0; i < line->nfields; i++)
		line->fields[i].type = KL_JSON_NULL;
}

/*
 * kl_escaped_key_is
 *		Does a key written with escapes (the span of its string, quotes
 *		included) decode to name?  1 yes, 0 no, -1 when its escapes are not
 *		valid JSON.  Land() never escapes a field name, but a JSON writer
 *		may.
 */
static int
kl_escaped_key_is(const char *start, size_t len, const char *name, int namelen)
{
	KlJsonReader r;
	KlJsonValue key;
	StringInfoData buf;
	int			result;

	kl_json_init(&r, start, len, 1);
	if (!kl_json_parse_document(&r, &key) || key.type != KL_JSON_STRING)
		return -1;
	initStringInfo(&buf);
	kl_json_decode_string(&key, &buf);
	result = (buf.len == namelen && memcmp(buf.data, name, namelen) == 0) ? 1 : 0;
	pfree(buf.data);
	return result;
}

/*
 * kl_line_parse_strict
 *		kl_line_parse with the strict reader from the first byte: every
 *		member read on the way is validated.  The fallback of the fast scan,
 *		and the one place that reports what is wrong with a line.
 */
static void
kl_line_parse_strict(KlLine *line, const char *text, size_t len, int want)
{
	KlJsonReader it;
	KlJsonValue k;
	KlJsonValue v;
	int			found_fields = 0;
	bool		need_event = (want & KL_WANT_EVENT) || line->nfields > 0;
	bool		need_kafka = (want & KL_WANT_KAFKA) != 0;
	bool		need_quarantine = (want & KL_WANT_QUARANTINE) != 0;

	kl_line_reset(line);
	kl_json_object_open(&it, text, text + len, KL_JSON_MAX_DEPTH);
	while ((need_event || need_kafka || need_quarantine) && kl_json_object_next(&it, &k, &v))
	{
		if (KEY_IS(k, "event"))
		{
			KlJsonReader eit;
			KlJsonValue ek;
			KlJsonValue evv;

			if (v.type != KL_JSON_OBJECT)
				kl_line_error("\"event\" is not an object");
			line->event = v;
			if (line->nfields > 0)
			{
				kl_json_object_open(&eit, v.start, v.start + v.len, KL_JSON_MAX_DEPTH);
				while (found_fields < line->nfields && kl_json_object_next(&eit, &ek, &evv))
				{
					for (int i = 0; i < line->nfields; i++)
					{
						if (line->fields[i].type == KL_JSON_NULL &&
							(ek.has_escapes ?
							 kl_escaped_key_is(ek.start, ek.len, line->field_names[i],
											   line->field_name_lens[i]) == 1 :
							 kl_json_key_is(&ek, line->field_names[i], line->field_name_lens[i])))
						{
							line->fields[i] = evv;
							if (evv.type != KL_JSON_NULL)
								found_fields++;
						}
					}
				}
				if (eit.error)
					kl_line_error(eit.error);
			}
			need_event = false;
		}
		else if (KEY_IS(k, "kafka"))
		{
			KlJsonReader kit;
			KlJsonValue kk;
			KlJsonValue kv;

			if (v.type != KL_JSON_OBJECT)
				kl_line_error("\"kafka\" is not an object");
			kl_json_object_open(&kit, v.start, v.start + v.len, KL_JSON_MAX_DEPTH);
			while (kl_json_object_next(&kit, &kk, &kv))
			{
				if (KEY_IS(kk, "offset"))
				{
					if (kv.type != KL_JSON_NUMBER || !kl_json_parse_int64(kv.start, kv.len, &line->offset))
						kl_line_error("invalid offset");
				}
				else if (KEY_IS(kk, "partition"))
				{
					int64		p;

					if (kv.type != KL_JSON_NUMBER || !kl_json_parse_int64(kv.start, kv.len, &p))
						kl_line_error("invalid partition");
					line->partition = (int32) p;
				}
				else if (KEY_IS(kk, "timestamp_ms"))
				{
					if (kv.type == KL_JSON_NUMBER &&
						!kl_json_parse_int64(kv.start, kv.len, &line->timestamp_ms))
						kl_line_error("invalid timestamp_ms");
				}
				else if (KEY_IS(kk, "key"))
					line->key = kv;
				else if (KEY_IS(kk, "key_base64"))
					line->key_base64 = kv;
			}
			if (kit.error)
				kl_line_error(kit.error);
			if (line->offset < 0)
				kl_line_error("no offset");
			need_kafka = false;
		}
		else if (KEY_IS(k, "raw_value"))
			line->raw_value = v;
		else if (KEY_IS(k, "raw_value_base64"))
			line->raw_value_base64 = v;
		else if (KEY_IS(k, "validation_error"))
		{
			line->validation_error = v;
			need_quarantine = false;
		}
	}
	if (it.error)
		kl_line_error(it.error);
}

/*
 * The fast scan.  Each function takes the position of a token and the end
 * of the line and returns the position after it, or NULL when the bytes
 * are not what valid JSON would have there; it never reads at or past end.
 */

/*
 * kl_scan_ws
 *		Skip JSON whitespace.
 */
static inline const char *
kl_scan_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

/*
 * kl_scan_string
 *		Skip a string; p is at its opening quote.  Sets *escapes when it
 *		holds a backslash.
 */
static inline const char *
kl_scan_string(const char *p, const char *end, bool *escapes)
{
	p++;
	for (;;)
	{
#ifdef __SSE2__
		/* 16 bytes at a time while a whole block lies within the line */
		const __m128i quote = _mm_set1_epi8('"');
		const __m128i backslash = _mm_set1_epi8('\\');

		while (end - p >= 16)
		{
			__m128i		block = _mm_loadu_si128((const __m128i *) p);
			int			mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(block, quote),
															  _mm_cmpeq_epi8(block, backslash)));

			if (mask != 0)
			{
				p += pg_rightmost_one_pos32(mask);
				break;
			}
			p += 16;
		}
#endif
		while (p < end && *p != '"' && *p != '\\')
			p++;
		if (p >= end)
			return NULL;
		if (*p == '"')
			return p + 1;
		*escapes = true;
		if (end - p < 2)
			return NULL;
		p += 2;
	}
}

/*
 * kl_scan_value
 *		Skip any value.  Containers are skipped by counting brackets outside
 *		strings, without checking what lies between them.
 */
static pg_attribute_always_inline const char *
kl_scan_value(const char *p, const char *end)
{
	bool		escapes = false;
	const char *start = p;

	if (p >= end)
		return NULL;
	switch (*p)
	{
		case '"':
			return kl_scan_string(p, end, &escapes);
		case '{':
		case '[':
			{
				int			depth = 0;

				while (p < end)
				{
					char		c = *p;

					if (c == '"')
					{
						p = kl_scan_string(p, end, &escapes);
						if (p == NULL)
							return NULL;
						continue;
					}
					if (c == '{' || c == '[')
						depth++;
					else if ((c == '}' || c == ']') && --depth == 0)
						return p + 1;
					p++;
				}
				return NULL;
			}
		default:
			while (p < end && *p != ',' && *p != '}' && *p != ']' &&
				   *p != ' ' && *p != '\n' && *p != '\r' && *p != '\t')
				p++;
			return p > start ? p : NULL;
	}
}

/* An object being scanned member by member */
typedef struct KlScanObject
{
	const char *p;				/* next byte */
	const char *end;			/* end of the line */
	bool		first;			/* no member read yet */
} KlScanObject;

/*
 * kl_scan_object_open
 *		Start on the '{' at p.
 */
static inline bool
kl_scan_object_open(KlScanObject *o, const char *p, const char *end)
{
	p = kl_scan_ws(p, end);
	if (p >= end || *p != '{')
		return false;
	o->p = p + 1;
	o->end = end;
	o->first = true;
	return true;
}

/*
 * kl_scan_object_key
 *		The next member's key (without quotes; *key_escapes when it has a
 *		backslash), leaving o->p at the member's value, which the caller
 *		then skips (kl_scan_object_skip) or reads, setting o->p past it.
 *		1 for a member, 0 at the closing brace (o->p past it), -1 on bytes
 *		that are not JSON.
 */
static pg_attribute_always_inline int
kl_scan_object_key(KlScanObject *o, const char **key, int *keylen, bool *key_escapes)
{
	const char *p = kl_scan_ws(o->p, o->end);
	const char *end = o->end;
	const char *k;

	if (p >= end)
		return -1;
	if (*p == '}')
	{
		o->p = p + 1;
		return 0;
	}
	if (!o->first)
	{
		if (*p != ',')
			return -1;
		p = kl_scan_ws(p + 1, end);
		if (p >= end)
			return -1;
	}
	if (*p != '"')
		return -1;
	*key_escapes = false;
	k = p + 1;
	p = kl_scan_string(p, end, key_escapes);
	if (p == NULL)
		return -1;
	*key = k;
	*keylen = (int) (p - 1 - k);
	p = kl_scan_ws(p, end);
	if (p >= end || *p != ':')
		return -1;
	p = kl_scan_ws(p + 1, end);
	if (p >= end)
		return -1;
	o->p = p;
	o->first = false;
	return 1;
}

/*
 * kl_scan_object_skip
 *		Skip the value at o->p; false on bytes that are not JSON.
 */
static pg_attribute_always_inline bool
kl_scan_object_skip(KlScanObject *o)
{
	o->p = kl_scan_value(o->p, o->end);
	return o->p != NULL;
}

/*
 * kl_scan_object_take
 *		Read the value at o->p strictly into *out.
 */
static pg_attribute_always_inline bool
kl_scan_object_take(KlScanObject *o, KlJsonValue *out)
{
	const char *start = o->p;
	KlJsonReader r;

	o->p = kl_scan_value(start, o->end);
	if (o->p == NULL)
		return false;
	kl_json_init(&r, start, o->p - start, KL_JSON_MAX_DEPTH);
	return kl_json_parse_document(&r, out);
}

#define SCAN_KEY_IS(k, len, esc, name) \
	(!(esc) && (len) == sizeof(name) - 1 && memcmp((k), (name), sizeof(name) - 1) == 0)

/*
 * kl_scan_event
 *		Find the event fields asked for in the event object at o->p.  When
 *		more of the line is needed (more), read on to the object's end and
 *		leave o->p past it; otherwise stop at the last field found.
 */
static pg_attribute_always_inline bool
kl_scan_event(KlLine *line, KlScanObject *o, bool more)
{
	KlScanObject ev;
	const char *k;
	int			klen;
	bool		kesc;
	int			rc;
	int			found = 0;

	if (!kl_scan_object_open(&ev, o->p, o->end))
		return false;
	while ((rc = kl_scan_object_key(&ev, &k, &klen, &kesc)) > 0)
	{
		KlJsonValue value;
		bool		taken = false;

		if (found < line->nfields)
		{
			for (int i = 0; i < line->nfields; i++)
			{
				KlJsonValue *f = &line->fields[i];
				int			match;

				if (f->type != KL_JSON_NULL)
					continue;
				if (kesc)
				{
					match = kl_escaped_key_is(k - 1, klen + 2, line->field_names[i],
											  line->field_name_lens[i]);
					if (match < 0)
						return false;
				}
				else
					match = (klen == line->field_name_lens[i] &&
							 memcmp(k, line->field_names[i], klen) == 0);
				if (match)
				{
					if (!taken && !kl_scan_object_take(&ev, &value))
						return false;
					taken = true;
					*f = value;
					if (f->type != KL_JSON_NULL)
						found++;
				}
			}
		}
		if (!taken && !kl_scan_object_skip(&ev))
			return false;
		if (found == line->nfields && !more)
			return true;
	}
	if (rc < 0)
		return false;
	o->p = ev.p;
	return true;
}

/*
 * kl_scan_kafka
 *		The members of the kafka envelope at o->p; o->p ends past it.
 */
static bool
kl_scan_kafka(KlLine *line, KlScanObject *o)
{
	KlScanObject ko;
	const char *k;
	int			klen;
	bool		kesc;
	int			rc;
	KlJsonValue n;

	if (!kl_scan_object_open(&ko, o->p, o->end))
		return false;
	while ((rc = kl_scan_object_key(&ko, &k, &klen, &kesc)) > 0)
	{
		if (SCAN_KEY_IS(k, klen, kesc, "offset"))
		{
			if (!kl_scan_object_take(&ko, &n) || n.type != KL_JSON_NUMBER ||
				!kl_json_parse_int64(n.start, n.len, &line->offset))
				return false;
		}
		else if (SCAN_KEY_IS(k, klen, kesc, "partition"))
		{
			int64		p;

			if (!kl_scan_object_take(&ko, &n) || n.type != KL_JSON_NUMBER ||
				!kl_json_parse_int64(n.start, n.len, &p))
				return false;
			line->partition = (int32) p;
		}
		else if (SCAN_KEY_IS(k, klen, kesc, "timestamp_ms"))
		{
			if (!kl_scan_object_take(&ko, &n))
				return false;
			if (n.type == KL_JSON_NUMBER &&
				!kl_json_parse_int64(n.start, n.len, &line->timestamp_ms))
				return false;
		}
		else if (SCAN_KEY_IS(k, klen, kesc, "key"))
		{
			if (!kl_scan_object_take(&ko, &line->key))
				return false;
		}
		else if (SCAN_KEY_IS(k, klen, kesc, "key_base64"))
		{
			if (!kl_scan_object_take(&ko, &line->key_base64))
				return false;
		}
		else if (!kl_scan_object_skip(&ko))
			return false;
	}
	if (rc < 0 || line->offset < 0)
		return false;
	o->p = ko.p;
	return true;
}

/*
 * kl_line_parse_fast
 *		kl_line_parse over the structure of the line, handing out only what
 *		was asked for; false when anything looks wrong (the caller then
 *		parses the line strictly).
 */
static bool
kl_line_parse_fast(KlLine *line, const char *text, size_t len, int want)
{
	KlScanObject top;
	const char *k;
	int			klen;
	bool		kesc;
	int			rc;
	bool		need_event = (want & KL_WANT_EVENT) || line->nfields > 0;
	bool		need_kafka = (want & KL_WANT_KAFKA) != 0;
	bool		need_quarantine = (want & KL_WANT_QUARANTINE) != 0;

	kl_line_reset(line);
	if (!kl_scan_object_open(&top, text, text + len))
		return false;
	while (need_event || need_kafka || need_quarantine)
	{
		rc = kl_scan_object_key(&top, &k, &klen, &kesc);
		if (rc < 0)
			return false;
		if (rc == 0)
			break;
		if (SCAN_KEY_IS(k, klen, kesc, "event"))
		{
			const char *start = top.p;

			if (*start != '{')
				return false;
			if (want & KL_WANT_EVENT)
			{
				if (!kl_scan_object_take(&top, &line->event))
					return false;
				top.p = start;
			}
			if (line->nfields > 0)
			{
				if (!kl_scan_event(line, &top, need_kafka || need_quarantine))
					return false;
				if (!need_kafka && !need_quarantine)
					return true;	/* stopped at the last field */
			}
			else if (!kl_scan_object_skip(&top))
				return false;
			need_event = false;
		}
		else if (need_kafka && SCAN_KEY_IS(k, klen, kesc, "kafka"))
		{
			if (!kl_scan_kafka(line, &top))
				return false;
			need_kafka = false;
		}
		else if (need_quarantine && SCAN_KEY_IS(k, klen, kesc, "raw_value"))
		{
			if (!kl_scan_object_take(&top, &line->raw_value))
				return false;
		}
		else if (need_quarantine && SCAN_KEY_IS(k, klen, kesc, "raw_value_base64"))
		{
			if (!kl_scan_object_take(&top, &line->raw_value_base64))
				return false;
		}
		else if (need_quarantine && SCAN_KEY_IS(k, klen, kesc, "validation_error"))
		{
			if (!kl_scan_object_take(&top, &line->validation_error))
				return false;
			need_quarantine = false;
		}
		else if (!kl_scan_object_skip(&top))
			return false;
	}
	return true;
}

/*
 * kl_line_parse
 *		Find the members of one landed line that the caller asks for (flags
 *		in want, event field names in line->field_names).  Stops as soon as
 *		everything asked for was found.  Every value handed out is valid
 *		JSON; a line that is not what land() writes is an ERROR (XX001).
 *
 *		line->event is the event object, validated, when KL_WANT_EVENT
 *		asks for it (KL_JSON_NULL for a line without one).
 */
void
kl_line_parse(KlLine *line, const char *text, size_t len, int want)
{
	if (!kl_line_parse_fast(line, text, len, want))
		kl_line_parse_strict(line, text, len, want);
}

/*
 * kl_line_set_fields
 *		Name the event fields kl_line_parse should find.
 */
void
kl_line_set_fields(KlLine *line, int nfields, const char **names)
{
	line->nfields = nfields;
	line->field_names = names;
	line->field_name_lens = palloc(sizeof(int) * Max(nfields, 1));
	line->fields = palloc0(sizeof(KlJsonValue) * Max(nfields, 1));
	for (int i = 0; i < nfields; i++)
		line->field_name_lens[i] = strlen(names[i]);
}
