/*-------------------------------------------------------------------------
 *
 * bridge_adapter.c
 *	  Step 4 of the bridge: the adapter version, the canonical CSV at its
 *	  content address adapter/business_date=<date>/source_hash=<hex>/
 *	  events.csv, with a provenance.json, and its row in adapter_versions.
 *
 * The CSV is written by pass 1 into a temporary file under <source>/adapter/
 * (kl_bridge_open_csv, kl_bridge_write), fsynced, then renamed (fsync,
 * rename, fsync) to its content address, unless that address already holds
 * it: its name is its SHA-256, so a file of that size there is this content
 * and stays; ours is then dropped once silver is loaded from it.
 *
 * THE WRITING THREAD
 *
 * Pass 1 fills a 1 MB buffer of CSV lines; kl_bridge_write hands it to a
 * thread that feeds it to SHA-256 (OpenSSL), write(2)s it and starts its
 * writeback, while the backend fills a second buffer: the two halves of the
 * work then run on two cores.  The thread is created per buffer (about 260
 * per million events, some 30 microseconds each) and joined before the
 * next one starts, before the digest is finished and the file fsynced, so
 * at most one is out and none outlives pass 1.  It is a job of
 * base/thread_job.c, with its rules: every signal blocked (cancel and
 * timeouts are the backend's), nothing of PostgreSQL called (no palloc, no
 * ereport: a failed write or digest is a result, reported by the backend
 * after the join, with the message a synchronous write gave), only the
 * buffer the backend does not touch until the join read, and the abort
 * callbacks as a backstop.  Pass 1 runs inside a PG_TRY whose PG_CATCH stops and joins it
 * (kl_bridge_write_stop) before an ERROR or a cancel goes on, so the file
 * and buffers it uses are still there for it.  A join can wait for one
 * write(2) of 1 MB, as the synchronous write did.  Should the thread not
 * start, the backend does the job itself.
 *
 * Files are not transactional, while everything else the bridge does is
 * rolled back with the caller's transaction.  So every file and directory
 * this step creates is registered with fileundo.c before it is created,
 * and removed if the transaction aborts (a subtransaction abort removes
 * those of the subtransaction); for the same reason a bridge cannot be part
 * of a prepared transaction (PREPARE TRANSACTION is refused).  A temporary
 * file left by a killed backend is removed by the next bridge of that date,
 * which alone may own such a file (the lock of step 1).
 *
 * IDENTIFICATION
 *	  src/bridge/bridge_adapter.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/file_perm.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/digest.h"
#include "base/json.h"
#include "base/thread_job.h"
#include "bridge/bridge.h"
#include "bridge/catalog_bridge.h"
#include "format/batch_format.h"
#include "landing/fileundo.h"

/*
 * kl_bridge_mkdir
 *		Create one directory if it is missing (removed again if the
 *		transaction aborts), fsyncing its parent.
 */
static void
kl_bridge_mkdir(const char *path)
{
	char	   *parent;

	kl_undo_remove_at_abort(path, true, "bridge()");
	if (mkdir(path, pg_dir_create_mode) != 0)
	{
		kl_undo_forget(path);
		if (errno == EEXIST)
			return;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", path),
				 errhint("Check kafka_lake.landing_dir and the free space of its file system.")));
	}
	parent = pstrdup(path);
	get_parent_directory(parent);
	fsync_fname(parent, true);
}

/*
 * kl_remove_stale_temp_files
 *		Remove temporary CSV files of this date left by a backend that died
 *		while bridging it.  Only the holder of this date's lock writes such a
 *		file, and that is us.
 */
static void
kl_remove_stale_temp_files(KlBridge *b, const char *adapter_root)
{
	char	   *prefix = psprintf(".tmp-%s-", b->date_text);
	DIR		   *dir = AllocateDir(adapter_root);
	struct dirent *de;

	if (dir == NULL)
		return;
	while ((de = ReadDir(dir, adapter_root)) != NULL)
	{
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
		{
			char	   *path = psprintf("%s/%s", adapter_root, de->d_name);

			if (unlink(path) != 0 && errno != ENOENT)
				ereport(WARNING,
						(errcode_for_file_access(),
						 errmsg("could not remove stale file \"%s\": %m", path)));
		}
	}
	FreeDir(dir);
}

/*
 * kl_bridge_open_csv
 *		Create the temporary CSV file (at the first selected event, so that
 *		a date without events leaves nothing behind).
 */
void
kl_bridge_open_csv(KlBridge *b)
{
	char	   *adapter_root = psprintf("%s/adapter", b->src->dir);
	uint8		rnd[4];
	char		rnd_hex[9];

	kl_bridge_mkdir(adapter_root);
	kl_remove_stale_temp_files(b, adapter_root);
	if (!pg_strong_random(rnd, sizeof(rnd)))
		memset(rnd, 0, sizeof(rnd));
	kl_hex(rnd, sizeof(rnd), rnd_hex);
	b->tmp_path = MemoryContextStrdup(b->cxt,
									  psprintf("%s/.tmp-%s-%d-%s.csv", adapter_root,
											   b->date_text, MyProcPid, rnd_hex));
	kl_undo_remove_at_abort(b->tmp_path, false, "bridge()");
	b->tmp_fd = OpenTransientFile(b->tmp_path, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (b->tmp_fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", b->tmp_path),
				 errhint("Check kafka_lake.landing_dir and the free space of its file system.")));
}

/*
 * KlCsvWriter
 *		The CSV's writing thread: it hashes and writes one filled buffer
 *		while the backend fills the other (see the file header).
 */
typedef struct KlCsvWriter
{
	KlJob		job_out;		/* a job is out: join before anything else */
	int			fd;				/* the temporary CSV */
	EVP_MD_CTX *sha;			/* the digest of the bytes so far */
	bool		flush;			/* start the writeback (fsync is on) */
	StringInfoData job;			/* the bytes of the job out, then the spare
								 * buffer */
	off_t		start;			/* where they go in the file */
	bool		sha_failed;		/* results, read after the join */
	int			write_errno;
} KlCsvWriter;

/*
 * kl_csv_writer_main
 *		The job: SHA-256, write(2), the writeback's start.  Only OpenSSL and
 *		libc: no palloc, no ereport, no PostgreSQL state.
 */
static void
kl_csv_writer_main(void *arg, const volatile bool *cancel)
{
	KlCsvWriter *w = (KlCsvWriter *) arg;
	const char *p = w->job.data;
	size_t		left = w->job.len;

	if (EVP_DigestUpdate(w->sha, p, left) != 1)
	{
		w->sha_failed = true;
		return;
	}
	while (left > 0 && !*cancel)
	{
		ssize_t		n;

		errno = 0;
		n = write(w->fd, p, Min(left, (size_t) 256 * 1024));
		if (n <= 0)
		{
			w->write_errno = errno ? errno : ENOSPC;
			return;
		}
		p += n;
		left -= n;
	}

	/*
	 * Start writing these bytes back now, without waiting: the fsync at the
	 * end then finds little left to write, instead of the whole file.  A
	 * failure here is only a missed hint; the fsync reports real trouble.
	 */
#if defined(HAVE_SYNC_FILE_RANGE)
	if (w->flush && w->job.len > 0 && !*cancel)
		(void) sync_file_range(w->fd, w->start, (off_t) w->job.len,
							   SYNC_FILE_RANGE_WRITE);
#endif
}

/*
 * kl_csv_writer_report
 *		On the backend, once the writer's job is done: raise what it failed
 *		at, if anything.
 */
static void
kl_csv_writer_report(KlBridge *b, KlCsvWriter *w)
{
	if (w->sha_failed)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not compute SHA-256")));
	if (w->write_errno != 0)
	{
		errno = w->write_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", b->tmp_path),
				 errhint("Nothing was recorded; free some space and call bridge() again.")));
	}
}

/*
 * kl_bridge_write_wait
 *		Join the job out, if any, and report what it met.
 */
void
kl_bridge_write_wait(KlBridge *b)
{
	KlCsvWriter *w = b->writer;

	if (w == NULL || !kl_job_out(&w->job_out))
		return;
	kl_job_wait(&w->job_out, true);
	kl_csv_writer_report(b, w);
}

/*
 * kl_bridge_write_stop
 *		Stop and join the job out, if any, reporting nothing: for the
 *		PG_CATCH of whoever writes, before the error goes on.
 */
void
kl_bridge_write_stop(KlBridge *b)
{
	KlCsvWriter *w = b->writer;

	if (w != NULL)
		kl_job_stop(&w->job_out);
}

/*
 * kl_bridge_write
 *		Hash and write the pending CSV bytes: they become the writing
 *		thread's job (after the previous one is joined), and buf the spare
 *		buffer, empty.
 */
void
kl_bridge_write(KlBridge *b, KlSha256 *sha, StringInfo buf)
{
	KlCsvWriter *w = b->writer;
	StringInfoData spare;

	if (w == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(b->cxt);

		/* the spare buffer lives as long as the bridge, as buf does */
		w = palloc0(sizeof(KlCsvWriter));
		initStringInfo(&w->job);
		enlargeStringInfo(&w->job, buf->maxlen - 1);
		b->writer = w;
		MemoryContextSwitchTo(old);
	}
	kl_bridge_write_wait(b);
	if (buf->len == 0)
		return;

	spare = w->job;
	w->job = *buf;
	*buf = spare;
	resetStringInfo(buf);
	w->fd = b->tmp_fd;
	w->sha = (EVP_MD_CTX *) sha->ctx;
	w->flush = enableFsync;
	w->start = (off_t) b->csv_bytes;
	w->sha_failed = false;
	w->write_errno = 0;
	b->csv_bytes += w->job.len;

	/* on a thread (base/thread_job.c), or here when there is none */
	w->job_out = kl_job_start(kl_csv_writer_main, w);
	if (!kl_job_out(&w->job_out))
		kl_csv_writer_report(b, w);
}

/*
 * kl_bridge_close_csv
 *		The temporary CSV is complete: fsync and close it.
 */
void
kl_bridge_close_csv(KlBridge *b)
{
	if (pg_fsync(b->tmp_fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", b->tmp_path)));
	if (CloseTransientFile(b->tmp_fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", b->tmp_path)));
	b->tmp_fd = -1;
}

/*
 * kl_append_coordinate
 *		{"offset": ..., "partition": ..., "topic": ...}, or null when the
 *		run selected no event.
 */
static void
kl_append_coordinate(StringInfo out, const char *topic, int32 partition, int64 offset)
{
	if (topic == NULL)
	{
		/* an empty share of a date (close_date of a shard): no coordinate */
		appendStringInfoString(out, "null");
		return;
	}
	appendStringInfoString(out, "{\"offset\": ");
	kl_json_append_int64(out, offset);
	appendStringInfoString(out, ", \"partition\": ");
	kl_json_append_int64(out, partition);
	appendStringInfoString(out, ", \"topic\": ");
	kl_json_append_string(out, topic, strlen(topic));
	appendStringInfoChar(out, '}');
}

/*
 * kl_bridge_provenance
 *		provenance.json: what the CSV was made from (keys sorted, in the
 *		json.dumps layout of the landed files).
 */
static char *
kl_bridge_provenance(KlBridge *b)
{
	StringInfoData doc;
	ListCell   *cell;
	char	   *created = kl_iso_now();

	initStringInfo(&doc);
	appendStringInfoString(&doc, "{\n  \"batches\": [\n");
	foreach(cell, b->used_batches)
	{
		KlUsedBatch *u = lfirst(cell);

		appendStringInfoString(&doc, "    {\"batch_id\": ");
		kl_json_append_string(&doc, u->batch_id, strlen(u->batch_id));
		appendStringInfo(&doc, ", \"events\": %lld, \"first_offset\": %lld, \"last_offset\": %lld, \"partition\": %d",
						 (long long) u->events, (long long) u->first_offset,
						 (long long) u->last_offset, u->partition);
		/* a source of several topics says which (one of one topic is as before) */
		if (b->src->ntopics > 1)
		{
			appendStringInfoString(&doc, ", \"topic\": ");
			kl_json_append_string(&doc, u->topic, strlen(u->topic));
		}
		appendStringInfo(&doc, "}%s\n", lnext(b->used_batches, cell) ? "," : "");
	}
	appendStringInfo(&doc, "  ],\n  \"business_date\": \"%s\",\n", b->date_text);
	appendStringInfo(&doc, "  \"created_at\": \"%s\",\n", created);
	appendStringInfo(&doc, "  \"csv_bytes\": %lld,\n", (long long) b->csv_bytes);
	appendStringInfo(&doc, "  \"event_count\": %lld,\n", (long long) b->selected);
	appendStringInfoString(&doc, "  \"first_coordinate\": ");
	kl_append_coordinate(&doc, b->first_topic, b->first_partition, b->first_offset);
	appendStringInfoString(&doc, ",\n  \"format_version\": 1,\n  \"kafka_lake_version\": ");
	{
		char	   *version = kl_catalog_extension_version();

		kl_json_append_string(&doc, version, strlen(version));
	}
	appendStringInfoString(&doc, ",\n  \"last_coordinate\": ");
	kl_append_coordinate(&doc, b->last_topic, b->last_partition, b->last_offset);
	appendStringInfoString(&doc, ",\n  \"source\": ");
	kl_json_append_string(&doc, b->src->source, strlen(b->src->source));
	appendStringInfo(&doc, ",\n  \"source_hash\": \"%s\",\n  \"topic\": ", b->source_hash);
	{
		/* the source's topic, or its topics separated by commas */
		char	   *topics = kl_source_topics_text(b->src);

		kl_json_append_string(&doc, topics, strlen(topics));
	}
	appendStringInfoString(&doc, "\n}\n");
	return doc.data;
}

/*
 * kl_bridge_write_file
 *		Write a small file durably: a temporary name, fsync, rename, fsync.
 */
static void
kl_bridge_write_file(const char *path, const char *data, size_t len)
{
	char	   *tmp = psprintf("%s.tmp", path);
	int			fd;

	kl_undo_remove_at_abort(tmp, false, "bridge()");
	kl_undo_remove_at_abort(path, false, "bridge()");

	/*
	 * A stale temporary file is replaced, never opened: whatever is there
	 * (a FIFO would block open(2) for good) goes first.
	 */
	if (unlink(tmp) != 0 && errno != ENOENT)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not remove stale file \"%s\": %m", tmp)));
	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", tmp)));
	errno = 0;
	if (write(fd, data, len) != (ssize_t) len)
	{
		if (errno == 0)
			errno = ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", tmp)));
	}
	if (pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", tmp)));
	CloseTransientFile(fd);
	(void) durable_rename(tmp, path, ERROR);
	kl_undo_forget(tmp);
}

/*
 * kl_bridge_place_adapter
 *		Put the CSV at its content address, with provenance.json.  When the
 *		address already holds a file of this size it is this content (its
 *		name is its SHA-256): it stays, and ours is dropped once silver is
 *		loaded from it.
 */
void
kl_bridge_place_adapter(KlBridge *b)
{
	char	   *date_dir = psprintf("%s/adapter/business_date=%s", b->src->dir, b->date_text);
	char	   *provenance_path;
	struct stat st;
	MemoryContext old = MemoryContextSwitchTo(b->cxt);

	b->adapter_dir = psprintf("%s/source_hash=%s", date_dir, b->source_hash);
	b->csv_path = psprintf("%s/events.csv", b->adapter_dir);
	b->csv_relpath = psprintf("%s/adapter/business_date=%s/source_hash=%s/events.csv",
							  b->src->source, b->date_text, b->source_hash);
	provenance_path = psprintf("%s/provenance.json", b->adapter_dir);
	MemoryContextSwitchTo(old);

	kl_bridge_mkdir(date_dir);
	kl_bridge_mkdir(b->adapter_dir);

	if (lstat(b->csv_path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == b->csv_bytes)
		b->transform_path = b->tmp_path;
	else
	{
		kl_undo_remove_at_abort(b->csv_path, false, "bridge()");
		(void) durable_rename(b->tmp_path, b->csv_path, ERROR);
		kl_undo_forget(b->tmp_path);
		b->tmp_path = NULL;
		b->transform_path = b->csv_path;
	}
	if (lstat(provenance_path, &st) != 0)
	{
		char	   *doc = kl_bridge_provenance(b);

		kl_bridge_write_file(provenance_path, doc, strlen(doc));
	}
}

/*
 * kl_bridge_drop_temp
 *		Remove our copy of a CSV whose content address was already taken.
 */
void
kl_bridge_drop_temp(KlBridge *b)
{
	if (b->tmp_path == NULL)
		return;
	if (unlink(b->tmp_path) != 0 && errno != ENOENT)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", b->tmp_path)));
	kl_undo_forget(b->tmp_path);
	b->tmp_path = NULL;
}

/*
 * kl_bridge_record_adapter
 *		The adapter_versions row: created, or reused when it exists.
 */
void
kl_bridge_record_adapter(KlBridge *b)
{
	b->adapter_created = kl_catalog_record_adapter(b);
}