/*-------------------------------------------------------------------------
 *
 * batch_read.c
 *	  Reading a landed batch's files back, checked against the catalog's
 *	  copy of their manifest before anything of them is used.  Shared by
 *	  the foreign table (fdw.c), the bridge (bridge_select.c), verify() and
 *	  recovery (recover.c).
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
 * and only then are lines handed out (to kl_line_parse, batch_format.c).  A
 * missing, truncated, extended or edited file is an ERROR with SQLSTATE
 * XX001 that names the batch and the file; nothing of it is returned.  So
 * is anything in its place that is not a regular file: files are opened by
 * kl_open_landed (landing_files.c), which never follows a symbolic link and
 * never blocks in open(2).  (SHA-256, ten times slower, is verify()'s job,
 * kl_check_batch_files; see digest.c.)  A caller that reads many files
 * passes a buffer of its own (kl_reader_open_buffer), which is reused from
 * file to file instead of being allocated, faulted in and freed for each.
 *
 * A compressed batch (batches.compression zstd: landing_files.c) is checked
 * the same way, on the bytes on disk: its size and CRC-32C first, and only a
 * frame that passes is uncompressed (kl_unzstd, into the buffer a plain file
 * would be read into, sized by the catalog's raw_bytes: a frame that holds
 * more is refused, never grown into), then its lines are counted.  So an
 * edited frame never reaches zstd, and what zstd gives is bounded.  A
 * manifest, whose uncompressed size the catalog does not keep, is
 * uncompressed by streaming into memory that grows (kl_unzstd_grow), after
 * the same checks where the catalog has them (not for a batch recover()
 * adopts, whose manifest is what is being checked).
 *
 * Reading ahead.  The bridge and the foreign table read the next file
 * while they parse the current one (kl_reader_open_ahead): the file is
 * opened and its size checked on the backend, then read, uncompressed, its
 * lines counted and its CRC-32C computed by a job of base/thread_job.c, and
 * kl_reader_wait joins it and gives the same verdict as
 * kl_reader_open_buffer before any line is used.  The job calls nothing of
 * PostgreSQL but the CRC-32C (pure code); a read error is a result the
 * backend reports.  Its descriptor is its own (kl_open_landed_owned, not a
 * transient file an abort closes): the job closes it when it ends, however
 * it ends, so a subtransaction's abort, which stops the job
 * (thread_job.c), can never leave a closed or reused descriptor under it.
 * The bridge stops and joins it in its PG_CATCH (kl_reader_stop) before an
 * ERROR goes on; the foreign table, which has no PG_CATCH around the
 * executor, relies on the abort stopping it, before the memory it reads
 * into is freed.  A job an abort stopped says so (kl_reader_wait returns
 * false), and the file is read again.
 *
 * Batches that are gone on purpose.  The foreign table and the bridge read
 * no batch whose record files expire() removed: a set of batches that holds
 * one is refused whole, naming the expired dates (kl_refuse_expired).  A
 * file that is missing because a compaction or an expiry committed after
 * the statement's snapshot listed the batch is not damage either: the
 * latest catalog says which it was (kl_explain_gone).
 *
 * IDENTIFICATION
 *	  src/landing/batch_read.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/datetime.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/digest.h"
#include "contract/iso8601.h"
#include "format/batch_format.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/catalog_lifecycle.h"
#include "landing/batch_read.h"
#include "landing/landing_files.h"

#define KL_READ_CHUNK	(16 * 1024 * 1024)
#define KL_MANIFEST_CHUNK	(256 * 1024)

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
				   r->source, r->batch->batch_id, kl_batch_file(r->batch, r->file), (long long) r->lineno);
	else
		errcontext("kafka_lake source \"%s\", batch %s, file %s",
				   r->source, r->batch->batch_id, kl_batch_file(r->batch, r->file));
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
 * kl_iso_date
 *		A date as YYYY-MM-DD, whatever the session's DateStyle.
 */
static char *
kl_iso_date(DateADT date)
{
	char	   *out = palloc(KL_DATE_TEXT_LEN);

	kl_date_text(date, out);
	return out;
}

/*
 * kl_refuse_expired
 *		The foreign table and the bridge read no batch whose record files
 *		expire() removed: a query or a bridge whose batches include one is
 *		refused whole (55000), naming the dates, rather than answered with
 *		what is left.  what says who asks ("query", "bridge").  Does nothing
 *		for an empty list.
 */
void
kl_refuse_expired(KlSource *src, List *expired, const char *what)
{
	const KlBatch *first;
	bool		dated = false;
	DateADT		lo = 0;
	DateADT		hi = 0;
	TimestampTz when = 0;
	ListCell   *cell;

	if (expired == NIL)
		return;
	first = linitial(expired);
	foreach(cell, expired)
	{
		const KlBatch *b = lfirst(cell);

		when = Max(when, b->expired_at);
		if (!b->has_dates)
			continue;
		lo = dated ? Min(lo, b->min_date) : b->min_date;
		hi = dated ? Max(hi, b->max_date) : b->max_date;
		dated = true;
	}
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 !dated ?
			 errmsg("quarantined records of source \"%s\" have expired", src->source) :
			 lo == hi ?
			 errmsg("business date %s of source \"%s\" has expired", kl_iso_date(lo), src->source) :
			 errmsg("business dates %s to %s of source \"%s\" have expired",
					kl_iso_date(lo), kl_iso_date(hi), src->source),
			 errdetail("kafka_lake.expire() removed the record files of %d %s this %s needs "
					   "(the first: batch %s of partition %d, offsets %lld to %lld), the last at %s; "
					   "their manifests and coordinates are kept, and nothing is returned rather than part of the data.",
					   list_length(expired), list_length(expired) == 1 ? "batch" : "batches", what,
					   first->batch_id, first->partition, (long long) first->first_offset,
					   (long long) first->last_offset, timestamptz_to_str(when)),
			 strcmp(what, "bridge") == 0 ?
			 errhint("The gold of an expired date stays readable with kafka_lake.gold_as_of() (kafka_lake.snapshots lists its snapshots); it cannot be bridged again.") :
			 dated ?
			 errhint("Restrict the query to business dates after %s (business_date > '%s'), or read the gold of an expired date with kafka_lake.gold_as_of() (kafka_lake.snapshots lists its snapshots).",
					 kl_iso_date(hi), kl_iso_date(hi)) :
			 errhint("Restrict the query to records that have not expired, for example with a business_date clause.")));
}

/*
 * kl_explain_gone
 *		A file of a batch that the statement's snapshot lists is missing.  If
 *		a compaction or an expiry committed since (and removed it at its
 *		commit), say so: a serialization failure to retry (the compacted
 *		batch holds the records), or the expired date.  Otherwise return:
 *		the batch is damaged.  errno is kept for the caller's message.
 */
static void
kl_explain_gone(KlSource *src, const KlBatch *b)
{
	int			save = errno;
	char	   *into = NULL;
	TimestampTz at = 0;

	switch (kl_catalog_batch_fate(src, b->batch_id, &into, &at))
	{
		case KL_FATE_COMPACTED:
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("batch %s of source \"%s\" was compacted while this statement ran",
							b->batch_id, src->source),
					 errdetail("kafka_lake.compact() merged it into batch %s and removed its directory once it committed.",
							   into),
					 errhint("Run the statement again: it reads the compacted batch.")));
			break;
		case KL_FATE_EXPIRED:
			{
				KlBatch    *copy = palloc(sizeof(KlBatch));

				memcpy(copy, b, sizeof(KlBatch));
				copy->expired = true;
				copy->expired_at = at;
				kl_refuse_expired(src, list_make1(copy), "statement");
			}
			break;
		case KL_FATE_UNCHANGED:
			break;
	}
	errno = save;
}

/*
 * kl_reader_start
 *		The first half of kl_reader_open_buffer: open one file of a batch,
 *		check that it is a regular file of its manifest's size, and size
 *		*buffer for it (grown as needed, in the current memory context, and
 *		kept by the caller for the next file).  The bytes are read by
 *		kl_reader_fill, then judged by kl_reader_finish.
 *
 *		owned: the descriptor is one the job closes (kl_open_landed_owned),
 *		for a read-ahead.  quiet: a file that cannot be opened or has
 *		another size is not reported here but returns false, with nothing
 *		open or allocated: the caller opens it again later, when its rows
 *		are wanted, and the error comes then (a scan that stops before
 *		that file never sees it).
 */
static bool
kl_reader_start(KlFileReader *r, KlSource *src, const KlBatch *b, int file,
				char **buffer, size_t *buffer_size, KlReadAhead *ra,
				bool owned, bool quiet)
{
	char	   *dir = kl_batch_partition_dir(src, b);
	const char *name = kl_batch_file(b, file);
	char	   *path = psprintf("%s/%s%s/%s", dir, KL_BATCH_DIR_PREFIX(b), b->batch_id, name);
	const KlFileInfo *expect = &b->files[file];
	int			fd;
	const char *not_regular;
	struct stat st;

	pfree(dir);
	memset(r, 0, sizeof(*r));
	r->source = src->source;
	r->batch = b;
	r->file = file;
	r->path = path;

	fd = owned ? kl_open_landed_owned(path, &not_regular) : kl_open_landed(path, &not_regular);
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size == expect->bytes)
		;						/* the file to read */
	else if (quiet)
	{
		if (fd >= 0)
			owned ? close(fd) : CloseTransientFile(fd);
		pfree(path);
		memset(r, 0, sizeof(*r));
		return false;
	}
	else if (fd >= 0 && owned)
	{
		/* reported below, with the descriptor an abort would close */
		close(fd);
		fd = kl_open_landed(path, &not_regular);
		owned = false;
	}
	if (fd < 0 && not_regular == NULL && errno == ENOENT)
		kl_explain_gone(src, b);
	if (fd < 0 && not_regular != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file %s of batch %s of source \"%s\" is not a regular file",
						name, b->batch_id, src->source),
				 errdetail("\"%s\" is %s.", path, not_regular),
				 kl_corrupt_hint(src->source)));
	if (fd < 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file %s of batch %s of source \"%s\" is missing",
						name, b->batch_id, src->source),
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
						name, b->batch_id, src->source,
						(long long) st.st_size, (long long) expect->bytes),
				 errdetail("The file was %s after it was landed.",
						   st.st_size < expect->bytes ? "truncated" : "extended"),
				 kl_corrupt_hint(src->source)));
	}

	/* room for its lines (a compressed file's, uncompressed) */
	if (*buffer == NULL || *buffer_size < (size_t) expect->raw_bytes + 1)
	{
		if (*buffer)
			pfree(*buffer);
		*buffer = NULL;
		*buffer_size = Max((size_t) expect->raw_bytes + 1, 64 * 1024);
		*buffer = MemoryContextAllocHuge(CurrentMemoryContext, *buffer_size);
	}
	r->data = *buffer;
	r->own_data = false;

	memset(ra, 0, sizeof(*ra));
	ra->fd = fd;
	ra->owned = owned;
	ra->data = r->data;
	ra->want = (size_t) expect->bytes;
	ra->compressed = (b->compression != KL_COMPRESS_NONE);
	if (ra->compressed)
	{
		/* the frame is read here first, and only once it is the landed one, uncompressed */
		ra->frame = MemoryContextAllocHuge(CurrentMemoryContext, (size_t) expect->bytes + 1);
		ra->raw_want = (size_t) expect->raw_bytes;
		ra->expect_crc = expect->crc32c;
	}
	return true;
}

/*
 * kl_reader_fill
 *		The middle of reading a file: its bytes, its lines, its CRC-32C.
 *		Only read(2), memchr and CRC-32C: no palloc, no ereport, so that it
 *		can run on the read-ahead thread (on the backend, it checks for
 *		interrupts between reads).  A read error is a result.
 */
static void
kl_reader_fill(KlReadAhead *ra, bool backend, const volatile bool *cancel)
{
	char	   *into = ra->compressed ? ra->frame : ra->data;

	while (ra->done < ra->want && !*cancel)
	{
		ssize_t		n;

		if (backend)
			CHECK_FOR_INTERRUPTS();
		n = read(ra->fd, into + ra->done, Min(ra->want - ra->done, KL_READ_CHUNK));

		if (n < 0)
		{
			ra->read_errno = errno;
			break;
		}
		if (n == 0)
			break;
		ra->done += n;
	}
	if (ra->owned)
	{
		/* the job's own descriptor: closed however the job ends */
		close(ra->fd);
		ra->fd = -1;
	}
	ra->cancelled = *cancel;
	if (ra->read_errno != 0 || ra->cancelled)
		return;
	ra->crc = kl_crc32c_final(kl_crc32c(KL_CRC32C_INIT, into, ra->done));
	ra->raw_done = ra->done;
	if (ra->compressed)
	{
		/* only the bytes that landed are uncompressed (never an edited frame) */
		ra->raw_done = 0;
		if (ra->done == ra->want && ra->crc == ra->expect_crc)
			ra->zstd_error = kl_unzstd(ra->frame, ra->done, ra->data, ra->raw_want, &ra->raw_done);
	}
	ra->data[ra->raw_done] = '\0';
	for (const char *p = ra->data; (p = memchr(p, '\n', ra->data + ra->raw_done - p)) != NULL; p++)
		ra->lines++;
}

/*
 * kl_reader_finish
 *		The last half of kl_reader_open_buffer: close the file and compare
 *		what was read with the catalog's copy of the manifest.
 */
static void
kl_reader_finish(KlFileReader *r, KlReadAhead *ra)
{
	const KlBatch *b = r->batch;
	int			file = r->file;
	const KlFileInfo *expect = &b->files[file];
	const char *path = r->path;
	size_t		done = ra->done;

	if (ra->fd >= 0)
		CloseTransientFile(ra->fd);
	ra->fd = -1;
	if (ra->read_errno != 0)
	{
		errno = ra->read_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", path),
				 errhint("Check the file system of kafka_lake.landing_dir.")));
	}
	if (ra->frame)
		pfree(ra->frame);
	ra->frame = NULL;
	r->len = ra->raw_done;
	if (done != (size_t) expect->bytes || ra->lines != expect->lines || ra->crc != expect->crc32c ||
		ra->zstd_error != NULL || r->len != (size_t) expect->raw_bytes ||
		(r->len > 0 && r->data[r->len - 1] != '\n'))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file %s of batch %s of source \"%s\" does not match its manifest",
						kl_batch_file(b, file), b->batch_id, r->source),
				 done != (size_t) expect->bytes ?
				 errdetail("Only %zu of its %lld bytes could be read.",
						   done, (long long) expect->bytes) :
				 ra->crc != expect->crc32c ?
				 errdetail("Its CRC-32C differs from its manifest's: its bytes were edited.") :
				 ra->zstd_error != NULL ?
				 errdetail("Its zstd frame cannot be uncompressed: %s.", ra->zstd_error) :
				 r->len != (size_t) expect->raw_bytes ?
				 errdetail("It holds %zu bytes of lines, its manifest says %lld.",
						   r->len, (long long) expect->raw_bytes) :
				 ra->lines != expect->lines ?
				 errdetail("It has %lld lines, its manifest says %lld.",
						   (long long) ra->lines, (long long) expect->lines) :
				 errdetail("Its last line has no line feed."),
				 kl_corrupt_hint(r->source)));

	r->pos = r->data;
	r->errcallback.callback = kl_file_error_callback;
	r->errcallback.arg = r;
}

/*
 * kl_reader_open_buffer
 *		Read one file of a batch into *buffer (grown as needed, in the
 *		current memory context, and kept by the caller for the next file)
 *		and check it against the catalog's copy of its manifest before
 *		anything of it is used.
 */
void
kl_reader_open_buffer(KlFileReader *r, KlSource *src, const KlBatch *b, int file,
					  char **buffer, size_t *buffer_size)
{
	KlReadAhead ra;

	static const volatile bool not_cancelled = false;

	(void) kl_reader_start(r, src, b, file, buffer, buffer_size, &ra, false, false);
	kl_reader_fill(&ra, true, &not_cancelled);
	kl_reader_finish(r, &ra);
}

/*
 * kl_read_ahead_job
 *		The read-ahead job (base/thread_job.c): kl_reader_fill.
 */
static void
kl_read_ahead_job(void *arg, const volatile bool *cancel)
{
	kl_reader_fill((KlReadAhead *) arg, false, cancel);
}

/*
 * kl_reader_open_ahead
 *		kl_reader_open_buffer, with the reading done by a job of its own
 *		while the caller goes on (with the previous file, say): the file is
 *		opened and its size checked here, its bytes read, its lines counted
 *		and its CRC-32C computed by the job, and the verdict given by
 *		kl_reader_wait, before any line is used.  The job closes the file
 *		when it ends, however it ends; the caller stops it with
 *		kl_reader_stop in its PG_CATCH, before the error goes on, and an
 *		abort stops it too (thread_job.c).  Without a thread the file is
 *		read here.
 *
 *		quiet: a file that cannot be opened, or has another size than its
 *		manifest's, starts nothing and returns false (see kl_reader_start).
 */
bool
kl_reader_open_ahead(KlFileReader *r, KlSource *src, const KlBatch *b, int file,
					 char **buffer, size_t *buffer_size, KlReadAhead *ra, bool quiet)
{
	if (!kl_reader_start(r, src, b, file, buffer, buffer_size, ra, true, quiet))
		return false;
	ra->job = kl_job_start(kl_read_ahead_job, ra);
	return true;
}

/*
 * kl_reader_wait
 *		Join the read-ahead of kl_reader_open_ahead and judge the file: from
 *		here on, r hands out its lines as kl_reader_open_buffer's would.
 *		false, with nothing judged, when the job was stopped before it read
 *		everything (the abort of a subtransaction that started it, while a
 *		cursor that reads ahead lives on): the caller reads the file again.
 */
bool
kl_reader_wait(KlFileReader *r, KlReadAhead *ra)
{
	kl_job_wait(&ra->job, false);
	CHECK_FOR_INTERRUPTS();
	if (ra->cancelled)
	{
		kl_reader_discard(r, ra);
		return false;
	}
	kl_reader_finish(r, ra);
	return true;
}

/*
 * kl_reader_stop
 *		Stop and join a read-ahead, if one is out (for a PG_CATCH).
 */
void
kl_reader_stop(KlReadAhead *ra)
{
	if (ra != NULL)
		kl_job_stop(&ra->job);
}

/*
 * kl_reader_discard
 *		Stop and join a read-ahead whose lines nobody will use (a scan that
 *		ends or starts again), and release what it holds but the caller's
 *		buffer.
 */
void
kl_reader_discard(KlFileReader *r, KlReadAhead *ra)
{
	kl_job_stop(&ra->job);
	if (ra->frame)
		pfree(ra->frame);
	ra->frame = NULL;
	kl_reader_close(r);
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
kl_check_manifest(KlSource *src, const KlBatch *b)
{
	char	   *dir = kl_batch_partition_dir(src, b);
	const char *name = kl_batch_file(b, KL_NFILES);
	char	   *path = psprintf("%s/%s%s/%s", dir, KL_BATCH_DIR_PREFIX(b), b->batch_id, name);
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
	if (fd < 0 && not_regular == NULL && errno == ENOENT)
		kl_explain_gone(src, b);
	if (fd < 0 && not_regular != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("%s of batch %s of source \"%s\" is not a regular file",
						name, b->batch_id, src->source),
				 errdetail("\"%s\" is %s.", path, not_regular),
				 kl_corrupt_hint(src->source)));
	if (fd < 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("%s of batch %s of source \"%s\" is missing",
						name, b->batch_id, src->source),
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
				 errmsg("%s of batch %s of source \"%s\" does not match the catalog",
						name, b->batch_id, src->source),
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
				 errmsg("%s of batch %s of source \"%s\" does not match the catalog",
						name, b->batch_id, src->source),
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
kl_reader_open(KlFileReader *r, KlSource *src, const KlBatch *b, int file)
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
 * kl_unzstd
 *		Uncompress a whole zstd frame (or frames) into out, which holds cap
 *		bytes: NULL and *out_len, or zstd's words for what is wrong (more
 *		than cap bytes is wrong: the manifest said how many).  Pure code,
 *		for the read-ahead thread too.
 */
const char *
kl_unzstd(const char *frame, size_t len, char *out, size_t cap, size_t *out_len)
{
	size_t		n;

	*out_len = 0;
	if (len == 0)
		return cap == 0 ? NULL : "the file is empty";
	n = ZSTD_decompress(out, cap, frame, len);
	if (ZSTD_isError(n))
		return ZSTD_getErrorName(n);
	*out_len = n;
	return NULL;
}

/*
 * kl_unzstd_grow
 *		Uncompress a zstd frame of unknown size (a manifest) into memory of
 *		its own, at most MaxAllocSize bytes: NULL and *problem when it
 *		cannot be.
 */
static char *
kl_unzstd_grow(const char *frame, size_t len, size_t *out_len, char **problem)
{
	ZSTD_DStream *ds = ZSTD_createDStream();
	ZSTD_inBuffer in = {frame, len, 0};
	StringInfoData out;
	size_t		ret = 1;

	if (ds == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("zstd could not allocate a decompressor.")));
	initStringInfo(&out);
	while (in.pos < in.size)
	{
		ZSTD_outBuffer ob;

		CHECK_FOR_INTERRUPTS();
		if (out.maxlen - out.len < 64 * 1024)
			enlargeStringInfo(&out, Max(out.len, 64 * 1024));
		ob.dst = out.data + out.len;
		ob.size = out.maxlen - out.len - 1;
		ob.pos = 0;
		ret = ZSTD_decompressStream(ds, &ob, &in);
		out.len += ob.pos;
		if (ZSTD_isError(ret))
			break;
		if (ob.pos == 0 && ret != 0 && in.pos == in.size)
			break;
	}
	if (ZSTD_isError(ret) || ret != 0 || len == 0)
	{
		*problem = pstrdup(ZSTD_isError(ret) ? ZSTD_getErrorName(ret) :
						   "the zstd frame is cut short");
		ZSTD_freeDStream(ds);
		pfree(out.data);
		return NULL;
	}
	ZSTD_freeDStream(ds);
	out.data[out.len] = '\0';
	*out_len = out.len;
	return out.data;
}

/*
 * kl_read_checked_file
 *		Read one record file of a batch (KL_FILE_*) whole and check it
 *		against *b, as verify() does: its size, CRC-32C and, with full, its
 *		SHA-256, over the bytes on disk; then (uncompressed, for a
 *		compressed batch) its lines' bytes and count.  Returns its lines
 *		(palloc'd, NUL-terminated), or NULL and *problem, a verify() result
 *		("<kind>: <detail>").
 */
char *
kl_read_checked_file(const char *batch_dir, const KlBatch *b, int file, bool full,
					 size_t *len, char **problem)
{
	const char *name = kl_batch_file(b, file);
	const KlFileInfo *expect = &b->files[file];
	const char *not_regular;
	size_t		disk_len;
	char	   *data = kl_read_whole_file(psprintf("%s/%s", batch_dir, name), &disk_len, &not_regular);
	int64		lines = 0;

	*problem = NULL;
	if (data == NULL)
	{
		*problem = psprintf("missing_file: %s %s", name, kl_landed_open_problem(not_regular));
		return NULL;
	}
	if ((int64) disk_len != expect->bytes)
		*problem = psprintf("size_mismatch: %s has %lld bytes, its manifest says %lld",
							name, (long long) disk_len, (long long) expect->bytes);
	else if (kl_crc32c_final(kl_crc32c(KL_CRC32C_INIT, data, disk_len)) != expect->crc32c)
		*problem = psprintf("checksum_mismatch: %s has a different CRC-32C than its manifest", name);
	else if (full)
	{
		uint8		digest[KL_SHA256_LEN];
		char		hex[KL_SHA256_HEX_LEN + 1];

		kl_sha256(data, disk_len, digest);
		kl_hex(digest, KL_SHA256_LEN, hex);
		if (strcmp(hex, expect->sha256) != 0)
			*problem = psprintf("checksum_mismatch: %s has SHA-256 %s, its manifest says %s",
								name, hex, expect->sha256);
	}
	if (*problem == NULL && b->compression != KL_COMPRESS_NONE)
	{
		char	   *raw = MemoryContextAllocHuge(CurrentMemoryContext, (size_t) expect->raw_bytes + 1);
		const char *err = kl_unzstd(data, disk_len, raw, (size_t) expect->raw_bytes, len);

		pfree(data);
		data = raw;
		data[*len] = '\0';
		if (err != NULL)
			*problem = psprintf("checksum_mismatch: %s cannot be uncompressed: %s", name, err);
		else if ((int64) *len != expect->raw_bytes)
			*problem = psprintf("size_mismatch: %s holds %zu bytes of lines, its manifest says %lld",
								name, *len, (long long) expect->raw_bytes);
	}
	else
		*len = disk_len;
	if (*problem == NULL)
	{
		for (const char *p = data; (p = memchr(p, '\n', data + *len - p)) != NULL; p++)
			lines++;
		if (lines != expect->lines)
			*problem = psprintf("line_count_mismatch: %s has %lld lines, its manifest says %lld",
								name, (long long) lines, (long long) expect->lines);
		else if (*len > 0 && data[*len - 1] != '\n')
			*problem = psprintf("checksum_mismatch: %s does not end with a line feed", name);
	}
	if (*problem != NULL)
	{
		pfree(data);
		return NULL;
	}
	return data;
}

/*
 * kl_check_batch_files
 *		Compare a batch's files with the checks in *b: always presence and
 *		size; with full, also the line count, CRC-32C and SHA-256.  Returns
 *		NULL when all is well, else the problem (and the file's index).
 */
char *
kl_check_batch_files(const char *batch_dir, const KlBatch *b, bool full, int *bad_file)
{
	for (int i = 0; i < KL_NFILES; i++)
	{
		const char *name = kl_batch_file(b, i);
		char	   *path = psprintf("%s/%s", batch_dir, name);
		struct stat st;

		*bad_file = i;
		if (lstat(path, &st) != 0)
			return psprintf("missing_file: %s: %m", name);
		if (!S_ISREG(st.st_mode))
			return psprintf("missing_file: %s is not a regular file (it is %s)",
							name, kl_file_kind(st.st_mode));
		if (st.st_size != b->files[i].bytes)
			return psprintf("size_mismatch: %s has %lld bytes, its manifest says %lld",
							name, (long long) st.st_size, (long long) b->files[i].bytes);
		if (full)
		{
			size_t		len;
			char	   *problem;
			char	   *data = kl_read_checked_file(batch_dir, b, i, true, &len, &problem);

			if (data == NULL)
				return problem;
			pfree(data);
		}
		pfree(path);
	}
	*bad_file = -1;
	return NULL;
}

/*
 * kl_read_checked_manifest
 *		Read a batch's manifest whole and check it against the catalog's
 *		record of it (*b: its size and CRC-32C when recorded, and its
 *		SHA-256); returns its text (uncompressed, for a compressed batch),
 *		or NULL and *problem.
 */
char *
kl_read_checked_manifest(const char *batch_dir, const KlBatch *b, size_t *len, char **problem)
{
	const char *name = kl_batch_file(b, KL_NFILES);
	const char *not_regular;
	size_t		disk_len;
	char	   *data = kl_read_whole_file(psprintf("%s/%s", batch_dir, name), &disk_len, &not_regular);
	uint8		digest[KL_SHA256_LEN];
	char		hex[KL_SHA256_HEX_LEN + 1];
	char	   *text;

	*problem = NULL;
	if (data == NULL)
	{
		*problem = psprintf("%s %s", name, kl_landed_open_problem(not_regular));
		return NULL;
	}
	kl_sha256(data, disk_len, digest);
	kl_hex(digest, KL_SHA256_LEN, hex);
	if ((b->manifest_bytes >= 0 &&
		 ((int64) disk_len != b->manifest_bytes ||
		  kl_crc32c_final(kl_crc32c(KL_CRC32C_INIT, data, disk_len)) != b->manifest_crc32c)) ||
		strcmp(hex, b->manifest_sha256) != 0)
	{
		*problem = psprintf("its %s differs from the catalog's", name);
		return NULL;
	}
	if (b->compression == KL_COMPRESS_NONE)
	{
		*len = disk_len;
		return data;
	}
	text = kl_unzstd_grow(data, disk_len, len, problem);
	pfree(data);
	if (text == NULL)
		*problem = psprintf("its %s cannot be uncompressed: %s", name, *problem);
	return text;
}

/*
 * kl_read_checked_entries
 *		A batch's manifest read whole, checked against the catalog's record
 *		of it (kl_read_checked_manifest) and parsed: *mb and its entries,
 *		*len the length of its text.  NULL, or what is wrong with it (the
 *		manifest left unread).
 */
char *
kl_read_checked_entries(const char *batch_dir, const KlBatch *b, KlBatch *mb,
						KlRecord **recs, int *n, size_t *len)
{
	char	   *problem;
	char	   *text = kl_read_checked_manifest(batch_dir, b, len, &problem);

	if (text == NULL)
		return problem;
	kl_manifest_parse_text(psprintf("%s/%s", batch_dir, kl_batch_file(b, KL_NFILES)), text, *len,
						   mb, recs, n);
	return NULL;
}

/*
 * kl_batch_load_fingerprints
 *		The fingerprints of a batch of the catalog that no longer keeps them
 *		(an expired batch, 1.9), from its manifest, checked against the
 *		catalog's record of it: into b->fingerprints, in offset order.  A
 *		batch whose fingerprints are there already is left as it is.  Of a
 *		reduced manifest (b->reduced), only the first
 *		KL_FINGERPRINT_PREFIX_LEN bytes of each are known (the rest zeros):
 *		for a caller that compares no more (prefixes_ok), else ERROR 55000.
 *		ERROR (XX001, naming the manifest) when it cannot be read or does
 *		not match.
 */
void
kl_batch_load_fingerprints(KlSource *src, KlBatch *b, bool prefixes_ok)
{
	char	   *dir;
	char	   *problem;
	KlBatch		mb;
	KlRecord   *mrecs;
	int			mn;
	size_t		len;

	if (b->fingerprints != NULL)
		return;
	if (b->reduced && !prefixes_ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("batch %s of source \"%s\" expired, and its manifest was reduced",
						b->batch_id, src->source),
				 errdetail("Once its event_ids were gone (past the dedupe horizon, or it accepted none), expire() kept of it only its offsets, statuses and fingerprint prefixes."),
				 errhint("Its records are gone: nothing can be done to them.")));
	dir = psprintf("%s/%s%s", kl_batch_partition_dir(src, b), KL_BATCH_DIR_PREFIX(b), b->batch_id);
	problem = kl_read_checked_entries(dir, b, &mb, &mrecs, &mn, &len);
	if (problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the fingerprints of expired batch %s of source \"%s\" cannot be read: %s",
						b->batch_id, src->source, problem),
				 errdetail("The catalog keeps an expired batch's fingerprints in its manifest only, in \"%s\".", dir),
				 errhint("Run kafka_lake.verify('%s'): it says what to do.", src->source)));
	if (mn != b->record_count || strcmp(mb.batch_id, b->batch_id) != 0 || mb.reduced != b->reduced)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the manifest of expired batch %s of source \"%s\" does not match the catalog",
						b->batch_id, src->source),
				 errhint("Run kafka_lake.verify('%s'): it says what to do.", src->source)));
	b->fingerprints = palloc(Max(mn, 1) * (Size) KL_SHA256_LEN);
	for (int i = 0; i < mn; i++)
		memcpy(b->fingerprints + (Size) i * KL_SHA256_LEN, mrecs[i].fingerprint, KL_SHA256_LEN);
	b->nfingerprints = mn;
}

/*
 * kl_read_manifest
 *		Read a batch's manifest (manifest.json, or manifest.json.zst for a
 *		compressed batch) into *b and its entries into *recs
 *		(kl_manifest_parse); ERROR (XX001) when it cannot be read.  *b's
 *		manifest checks are those of the file on disk.
 */
void
kl_read_manifest(const char *batch_dir, KlBatch *b, KlRecord **recs, int *n)
{
	char	   *plain = psprintf("%s/manifest.json", batch_dir);
	char	   *zst = psprintf("%s/manifest.json.zst", batch_dir);
	struct stat st;
	bool		compressed = (lstat(zst, &st) == 0);
	char	   *path = compressed ? zst : plain;
	bool		reduced = false;
	size_t		len;
	const char *not_regular;
	char	   *data;
	char	   *text;
	size_t		text_len;
	char	   *problem = NULL;

	if (compressed && lstat(plain, &st) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("batch directory \"%s\" holds both manifest.json and manifest.json.zst",
						batch_dir)));
	if (!compressed && lstat(plain, &st) != 0)
	{
		/* an expired batch whose manifest was reduced (expire.c) */
		char	   *rplain = psprintf("%s/%s", batch_dir, kl_reduced_manifest_name(KL_COMPRESS_NONE));
		char	   *rzst = psprintf("%s/%s", batch_dir, kl_reduced_manifest_name(KL_COMPRESS_ZSTD));

		compressed = (lstat(rzst, &st) == 0);
		if (compressed || lstat(rplain, &st) == 0)
		{
			reduced = true;
			path = compressed ? rzst : rplain;
		}
	}
	data = kl_read_whole_file(path, &len, &not_regular);
	if (data == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest \"%s\" %s", path, kl_landed_open_problem(not_regular))));
	text = compressed ? kl_unzstd_grow(data, len, &text_len, &problem) : data;
	if (text == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest \"%s\" cannot be uncompressed: %s", path, problem)));
	if (!compressed)
		text_len = len;
	kl_manifest_parse_text(path, text, text_len, b, recs, n);
	if (reduced != b->reduced)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest \"%s\" %s", path,
						reduced ? "is not a reduced manifest" : "is a reduced manifest under a manifest's name")));
	if (compressed != (b->compression == KL_COMPRESS_ZSTD))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest \"%s\" says its batch is %s", path,
						b->compression == KL_COMPRESS_NONE ? "not compressed" : "compressed")));
	/* the checks the catalog keeps are of the file on disk */
	kl_manifest_checks(data, len, b);
	if (compressed)
		pfree(text);
	pfree(data);
}
