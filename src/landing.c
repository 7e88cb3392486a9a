/*-------------------------------------------------------------------------
 *
 * landing.c
 *	  Batch directories on disk: the layout, and steps 3 and 4 of the
 *	  landing protocol (write, fsync, rename, fsync).
 *
 * Layout:
 *
 *	<landing_dir>/<source>/topic=<topic>/partition=<p>/batch=<id>/
 *		accepted.jsonl  duplicates.jsonl  quarantine.jsonl  manifest.json
 *	<landing_dir>/<source>/.staging/batch=<id>-p<p>-<random>/
 *
 * where <id> is <first offset:020d>-<last offset:020d>-<hash12>, hash12 the
 * first 12 hex digits of the SHA-256 of the batch's fingerprints: the same
 * coordinates with the same content always get the same name.
 *
 * A batch becomes visible in one step.  Its files are written into a fresh
 * staging directory, each file and then the directory are fsynced, the
 * directory is renamed to its final name, and the parent is fsynced.  Until
 * the rename nothing under topic=... changes; after the parent's fsync the
 * batch survives a crash.  Only then does the caller record it in the catalog
 * and commit the offset (see land.c).  A staging directory left by a crash
 * belongs to a partition (the p<p> in its name) and is removed by the next
 * caller that owns that partition (recover.c).
 *
 * Files are opened with OpenTransientFile so that an ERROR closes them.
 * Each file is hashed (SHA-256 and CRC-32C) and its lines counted while it
 * is written, so the manifest costs no second read.
 *
 * JSONL lines and manifest.json are written in Python json.dumps layout
 * with sorted keys (see json.c), so the reference implementation's tools
 * read them.
 *
 * IDENTIFICATION
 *	  src/landing.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/file_perm.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "kafka_lake.h"

const char *const kl_file_names[KL_NFILES] = {
	"accepted.jsonl", "duplicates.jsonl", "quarantine.jsonl"
};

const char *const kl_status_names[KL_NFILES] = {
	"accepted", "duplicate_event_id", "quarantined"
};

#define KL_WRITE_CHUNK	(1024 * 1024)

/* One file being written */
typedef struct KlOutFile
{
	char	   *path;
	int			fd;
	StringInfo	buf;			/* pending bytes (a reused buffer) */
	KlSha256   *sha;
	uint32		crc;
	KlFileInfo	info;
} KlOutFile;

/*
 * kl_landing_root
 *		The absolute landing directory.
 */
char *
kl_landing_root(void)
{
	const char *dir = (kl_landing_dir && kl_landing_dir[0]) ? kl_landing_dir : "kafka_lake";

	if (is_absolute_path(dir))
		return pstrdup(dir);
	return psprintf("%s/%s", DataDir, dir);
}

/*
 * kl_partition_dir
 *		The directory of one partition of a source's topic.
 */
char *
kl_partition_dir(KlSource *src, int32 partition)
{
	return psprintf("%s/topic=%s/partition=%d", src->dir, src->topic, partition);
}

/*
 * kl_make_dirs
 *		mkdir -p, fsyncing each parent whose entries changed.
 */
void
kl_make_dirs(const char *path)
{
	char	   *copy = pstrdup(path);

	for (char *p = copy + 1;; p++)
	{
		if (*p == '/' || *p == '\0')
		{
			char		saved = *p;

			*p = '\0';
			if (mkdir(copy, pg_dir_create_mode) == 0)
			{
				char	   *parent = pstrdup(copy);

				get_parent_directory(parent);
				fsync_fname(parent, true);
			}
			else if (errno != EEXIST)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not create directory \"%s\": %m", copy),
						 errhint("Check kafka_lake.landing_dir and the free space of its file system.")));
			*p = saved;
			if (saved == '\0')
				break;
		}
	}
	pfree(copy);
}

/*
 * kl_remove_tree
 *		rm -rf of a source directory of this database, or of a directory
 *		inside one (no symlinks are followed).  Anything else is left alone,
 *		with a WARNING: nothing outside a source's own directory is ever
 *		removed.  A source directory is one that carries this database's
 *		marker of the source it is named after (kl_source_dir_is_ours), also
 *		when fileundo.c has moved it aside under .kafka_lake_dropped.
 */
void
kl_remove_tree(const char *path)
{
	char	   *ancestor = pstrdup(path);
	bool		inside = kl_source_dir_is_ours(path);

	while (!inside)
	{
		char	   *before = pstrdup(ancestor);
		bool		top;

		get_parent_directory(ancestor);
		top = (ancestor[0] == '\0' || strcmp(ancestor, before) == 0);
		pfree(before);
		if (top)
			break;
		inside = kl_source_dir_is_ours(ancestor);
	}
	pfree(ancestor);
	if (!inside)
	{
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("not removing \"%s\": it is not inside a kafka_lake source directory of this database",
						path)));
		return;
	}
	if (!rmtree(path, true))
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove directory \"%s\" completely", path)));
}

/*
 * kl_out_buffer
 *		Give a file its write buffer.  The buffers live as long as the
 *		backend and are reused by every batch (a fresh megabyte per file per
 *		batch costs page faults on every batch); a line longer than a buffer
 *		grows it in place.
 */
static void
kl_out_buffer(KlOutFile *f, int slot)
{
	static StringInfoData buffers[KL_NFILES + 1];

	if (buffers[slot].data == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&buffers[slot]);
		enlargeStringInfo(&buffers[slot], KL_WRITE_CHUNK + 1024);
		MemoryContextSwitchTo(old);
	}
	f->buf = &buffers[slot];
	resetStringInfo(f->buf);
}

/*
 * kl_out_open
 *		Create a new file for writing.
 */
static void
kl_out_open(KlOutFile *f, const char *path, int slot)
{
	f->path = pstrdup(path);
	f->fd = OpenTransientFile(path, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (f->fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", path)));
	kl_out_buffer(f, slot);
	f->sha = kl_sha256_create();
	f->crc = KL_CRC32C_INIT;
	memset(&f->info, 0, sizeof(f->info));
}

/*
 * kl_out_flush
 *		Write the pending bytes, hashing them on the way.
 */
static void
kl_out_flush(KlOutFile *f)
{
	const char *p = f->buf->data;
	size_t		left = f->buf->len;

	if (left == 0)
		return;
	kl_sha256_update(f->sha, p, left);
	f->crc = kl_crc32c(f->crc, p, left);
	f->info.bytes += left;
	while (left > 0)
	{
		ssize_t		n;

		errno = 0;
		n = write(f->fd, p, left);
		if (n <= 0)
		{
			/* a short write without errno is a full disk */
			if (errno == 0)
				errno = ENOSPC;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write file \"%s\": %m", f->path),
					 errhint("Free space under the landing directory; the next land() goes on from the committed offset.")));
		}
		p += n;
		left -= n;
	}
	resetStringInfo(f->buf);
}

/*
 * kl_out_line_done
 *		A line was appended to the buffer: count it, flush when full.
 */
static inline void
kl_out_line_done(KlOutFile *f)
{
	f->info.lines++;
	if (f->buf->len >= KL_WRITE_CHUNK)
		kl_out_flush(f);
}

/*
 * kl_out_close
 *		Flush, fsync and close; fill in the file's checks.
 */
static void
kl_out_close(KlOutFile *f)
{
	uint8		digest[KL_SHA256_LEN];

	kl_out_flush(f);
	if (pg_fsync(f->fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", f->path)));
	if (CloseTransientFile(f->fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", f->path)));
	f->fd = -1;
	kl_sha256_final(f->sha, digest);
	kl_hex(digest, KL_SHA256_LEN, f->info.sha256);
	f->info.crc32c = kl_crc32c_final(f->crc);
}

/*
 * kl_append_key
 *		The "key" member of a kafka envelope (and key_base64 for a key that
 *		is not UTF-8).
 */
static void
kl_append_key(StringInfo out, const KlRecord *r)
{
	appendStringInfoString(out, "\"key\": ");
	if (r->key == NULL)
		appendStringInfoString(out, "null");
	else if (kl_utf8_valid(r->key, r->key_len) && memchr(r->key, '\0', r->key_len) == NULL)
		kl_json_append_string(out, r->key, r->key_len);
	else
	{
		int			len = pg_b64_enc_len(r->key_len);
		char	   *b64 = palloc(len + 1);

		len = pg_b64_encode(r->key, r->key_len, b64, len);
		appendStringInfoString(out, "null, \"key_base64\": ");
		kl_json_append_string(out, b64, len);
		pfree(b64);
	}
}

/*
 * kl_append_kafka
 *		The "kafka" envelope of a record.
 */
static void
kl_append_kafka(StringInfo out, const KlRecord *r, const char *topic_json, int32 partition)
{
	appendStringInfoString(out, "\"kafka\": {");
	kl_append_key(out, r);
	appendStringInfoString(out, ", \"offset\": ");
	kl_json_append_int64(out, r->offset);
	appendStringInfoString(out, ", \"partition\": ");
	kl_json_append_int64(out, partition);
	appendStringInfoString(out, ", \"timestamp_ms\": ");
	if (r->timestamp_ms >= 0)
		kl_json_append_int64(out, r->timestamp_ms);
	else
		appendStringInfoString(out, "null");
	appendStringInfoString(out, ", \"topic\": ");
	appendStringInfoString(out, topic_json);
	appendStringInfoChar(out, '}');
}

/*
 * kl_append_duplicate_of
 *		{"offset": ..., "partition": ..., "topic": ...}
 */
static void
kl_append_duplicate_of(StringInfo out, const KlRecord *r, const char *topic_json)
{
	appendStringInfoString(out, "\"duplicate_of\": {\"offset\": ");
	kl_json_append_int64(out, r->dup_offset);
	appendStringInfoString(out, ", \"partition\": ");
	kl_json_append_int64(out, r->dup_partition);
	appendStringInfoString(out, ", \"topic\": ");
	appendStringInfoString(out, topic_json);
	appendStringInfoChar(out, '}');
}

/*
 * kl_append_raw_value
 *		The raw value of a quarantined record: as a JSON string when it is
 *		UTF-8 without NUL bytes, base64 otherwise; null for a tombstone.
 */
static void
kl_append_raw_value(StringInfo out, const KlRecord *r)
{
	if (r->value == NULL)
		appendStringInfoString(out, "\"raw_value\": null");
	else if (kl_utf8_valid(r->value, r->value_len) &&
			 memchr(r->value, '\0', r->value_len) == NULL)
	{
		appendStringInfoString(out, "\"raw_value\": ");
		kl_json_append_string(out, r->value, r->value_len);
	}
	else
	{
		int			len = pg_b64_enc_len(r->value_len);
		char	   *b64 = palloc(len + 1);

		len = pg_b64_encode(r->value, r->value_len, b64, len);
		appendStringInfoString(out, "\"raw_value_base64\": ");
		kl_json_append_string(out, b64, len);
		pfree(b64);
	}
}

/*
 * kl_append_manifest_entry
 *		One element of the manifest's "entries".
 */
static void
kl_append_manifest_entry(StringInfo out, const KlRecord *r, const char *topic_json, int32 partition)
{
	char		fp[KL_SHA256_HEX_LEN + 1];

	kl_hex(r->fingerprint, KL_SHA256_LEN, fp);
	appendStringInfoString(out, "    {");
	if (r->status == KL_STATUS_DUPLICATE)
	{
		kl_append_duplicate_of(out, r, topic_json);
		appendStringInfoString(out, ", ");
	}
	appendStringInfoString(out, "\"event_id\": ");
	if (r->status == KL_STATUS_QUARANTINED)
		appendStringInfoString(out, "null");
	else
		kl_json_append_string(out, r->event.event_id, r->event.event_id_len);
	appendStringInfoString(out, ", \"fingerprint\": \"");
	appendStringInfoString(out, fp);
	appendStringInfoString(out, "\", ");
	kl_append_key(out, r);
	appendStringInfoString(out, ", \"offset\": ");
	kl_json_append_int64(out, r->offset);
	appendStringInfoString(out, ", \"partition\": ");
	kl_json_append_int64(out, partition);
	appendStringInfoString(out, ", \"status\": \"");
	appendStringInfoString(out, r->status == KL_STATUS_ACCEPTED ? "accepted" :
						   r->status == KL_STATUS_DUPLICATE ? "duplicate_event_id" : "quarantined");
	appendStringInfoString(out, "\", \"timestamp_ms\": ");
	if (r->timestamp_ms >= 0)
		kl_json_append_int64(out, r->timestamp_ms);
	else
		appendStringInfoString(out, "null");
	appendStringInfoString(out, ", \"topic\": ");
	appendStringInfoString(out, topic_json);
	if (r->status == KL_STATUS_QUARANTINED)
	{
		appendStringInfoString(out, ", \"validation_error\": ");
		kl_json_append_string(out, r->validation_error, strlen(r->validation_error));
	}
	appendStringInfoChar(out, '}');
}

/*
 * kl_append_date
 *		A date as a JSON string "YYYY-MM-DD", or null.
 */
static void
kl_append_date(StringInfo out, bool valid, DateADT date)
{
	int			y,
				m,
				d;

	if (!valid)
	{
		appendStringInfoString(out, "null");
		return;
	}
	j2date(date + POSTGRES_EPOCH_JDATE, &y, &m, &d);
	appendStringInfo(out, "\"%04d-%02d-%02d\"", y, m, d);
}

/*
 * kl_iso_now
 *		The current time in ISO-8601 with microseconds and an explicit UTC
 *		offset, as Python's datetime.isoformat() writes it.
 */
static char *
kl_iso_now(void)
{
	TimestampTz now = GetCurrentTimestamp();
	struct pg_tm tm;
	fsec_t		fsec;

	if (timestamp2tm(now, NULL, &tm, &fsec, NULL, NULL) != 0)
		elog(ERROR, "timestamp out of range");
	return psprintf("%04d-%02d-%02dT%02d:%02d:%02d.%06d+00:00",
					tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
					(int) fsec);
}

/*
 * kl_random_hex
 *		8 random hex digits for a staging directory name.
 */
static void
kl_random_hex(char *out)
{
	uint8		bytes[4];

	if (!pg_strong_random(bytes, sizeof(bytes)))
	{
		uint32		v = (uint32) MyProcPid ^ (uint32) GetCurrentTimestamp();

		memcpy(bytes, &v, sizeof(v));
	}
	kl_hex(bytes, sizeof(bytes), out);
}

/*
 * kl_land_batch
 *		Steps 3 and 4 of the landing protocol for the new coordinates
 *		recs[0..n) of one partition (offsets ascending, statuses decided):
 *		write the three JSONL files and the manifest into a staging
 *		directory, fsync them and the directory, rename it to its final name
 *		and fsync the parent.  Fills *out.
 */
void
kl_land_batch(KlSource *src, int32 partition, KlRecord *recs, int n, KlLandedBatch *out)
{
	KlOutFile	files[KL_NFILES];
	KlOutFile	mf;
	StringInfoData topic_json;
	StringInfo	doc;
	char	   *staging_root;
	char	   *staging;
	char	   *part_dir;
	char	   *final;
	char		rnd[9];
	uint8		digest[KL_SHA256_LEN];
	char		hex[KL_SHA256_HEX_LEN + 1];
	KlSha256   *h;
	int			fd;

	Assert(n > 0);
	memset(out, 0, sizeof(*out));
	out->topic = src->topic;
	out->partition = partition;
	out->first_offset = recs[0].offset;
	out->last_offset = recs[n - 1].offset;
	out->record_count = n;

	/*
	 * Everything the manifest says before its entries is known before the
	 * first line is written: the counts, the business dates, and the batch
	 * id (offsets and the hash of the fingerprints).  So the manifest is
	 * written as a stream, like the JSONL files.
	 */
	h = kl_sha256_create();
	for (int i = 0; i < n; i++)
	{
		KlRecord   *r = &recs[i];

		kl_sha256_update(h, r->fingerprint, KL_SHA256_LEN);
		if (r->status == KL_STATUS_ACCEPTED)
			out->accepted++;
		else if (r->status == KL_STATUS_DUPLICATE)
			out->duplicates++;
		else if (r->status == KL_STATUS_QUARANTINED)
			out->quarantined++;
		else
			elog(ERROR, "unexpected record status '%c' in a batch", r->status);
		if (r->status != KL_STATUS_QUARANTINED)
		{
			if (!out->has_dates)
			{
				out->min_date = out->max_date = r->event.business_date;
				out->has_dates = true;
			}
			else
			{
				out->min_date = Min(out->min_date, r->event.business_date);
				out->max_date = Max(out->max_date, r->event.business_date);
			}
		}
	}
	kl_sha256_final(h, digest);
	kl_hex(digest, 6, hex);
	snprintf(out->batch_id, sizeof(out->batch_id), "%020lld-%020lld-%s",
			 (long long) out->first_offset, (long long) out->last_offset, hex);

	staging_root = psprintf("%s/.staging", src->dir);
	part_dir = kl_partition_dir(src, partition);
	kl_make_dirs(staging_root);
	kl_make_dirs(part_dir);
	final = psprintf("%s/batch=%s", part_dir, out->batch_id);
	kl_random_hex(rnd);
	staging = psprintf("%s/batch=%s-p%d-%s", staging_root, out->batch_id, partition, rnd);
	if (mkdir(staging, pg_dir_create_mode) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", staging)));

	initStringInfo(&topic_json);
	kl_json_append_string(&topic_json, src->topic, strlen(src->topic));

	for (int i = 0; i < KL_NFILES; i++)
		kl_out_open(&files[i], psprintf("%s/%s", staging, kl_file_names[i]), i);
	kl_out_open(&mf, psprintf("%s/manifest.json", staging), KL_NFILES);

	/* manifest.json: keys sorted, entries one per line */
	doc = mf.buf;
	appendStringInfo(doc, "{\n  \"accepted_count\": %d,\n", out->accepted);
	appendStringInfoString(doc, "  \"batch_id\": ");
	kl_json_append_string(doc, out->batch_id, strlen(out->batch_id));
	appendStringInfoString(doc, ",\n  \"business_date_max\": ");
	kl_append_date(doc, out->has_dates, out->max_date);
	appendStringInfoString(doc, ",\n  \"business_date_min\": ");
	kl_append_date(doc, out->has_dates, out->min_date);
	appendStringInfoString(doc, ",\n  \"created_at\": ");
	{
		char	   *created = kl_iso_now();

		kl_json_append_string(doc, created, strlen(created));
	}
	appendStringInfo(doc, ",\n  \"duplicate_event_count\": %d,\n", out->duplicates);
	appendStringInfoString(doc, "  \"entries\": [\n");

	for (int i = 0; i < n; i++)
	{
		KlRecord   *r = &recs[i];
		KlOutFile  *f;
		StringInfo	buf;

		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();

		switch (r->status)
		{
			case KL_STATUS_ACCEPTED:
				f = &files[KL_FILE_ACCEPTED];
				buf = f->buf;
				appendStringInfoString(buf, "{\"event\": ");
				kl_event_append_json(buf, &r->event);
				appendStringInfoString(buf, ", ");
				kl_append_kafka(buf, r, topic_json.data, partition);
				appendStringInfoString(buf, "}\n");
				break;
			case KL_STATUS_DUPLICATE:
				f = &files[KL_FILE_DUPLICATES];
				buf = f->buf;
				appendStringInfoChar(buf, '{');
				kl_append_duplicate_of(buf, r, topic_json.data);
				appendStringInfoString(buf, ", \"event\": ");
				kl_event_append_json(buf, &r->event);
				appendStringInfoString(buf, ", ");
				kl_append_kafka(buf, r, topic_json.data, partition);
				appendStringInfoString(buf, "}\n");
				break;
			default:
				f = &files[KL_FILE_QUARANTINE];
				buf = f->buf;
				appendStringInfoChar(buf, '{');
				kl_append_kafka(buf, r, topic_json.data, partition);
				appendStringInfoString(buf, ", ");
				kl_append_raw_value(buf, r);
				appendStringInfoString(buf, ", \"validation_error\": ");
				kl_json_append_string(buf, r->validation_error, strlen(r->validation_error));
				appendStringInfoString(buf, "}\n");
				break;
		}
		kl_out_line_done(f);

		kl_append_manifest_entry(doc, r, topic_json.data, partition);
		appendStringInfoString(doc, i + 1 < n ? ",\n" : "\n");
		mf.info.lines++;
		if (doc->len >= KL_WRITE_CHUNK)
			kl_out_flush(&mf);
	}

	for (int i = 0; i < KL_NFILES; i++)
	{
		kl_out_close(&files[i]);
		out->files[i] = files[i].info;
	}

	appendStringInfoString(doc, "  ],\n  \"files\": {\n");
	for (int i = 0; i < KL_NFILES; i++)
		appendStringInfo(doc,
						 "    \"%s\": {\"bytes\": %lld, \"crc32c\": %u, \"lines\": %lld, \"sha256\": \"%s\"}%s\n",
						 kl_file_names[i], (long long) out->files[i].bytes,
						 out->files[i].crc32c, (long long) out->files[i].lines,
						 out->files[i].sha256, i + 1 < KL_NFILES ? "," : "");
	appendStringInfoString(doc, "  },\n  \"format_version\": 1,\n");
	appendStringInfo(doc, "  \"input_offset_end\": %lld,\n", (long long) out->last_offset);
	appendStringInfo(doc, "  \"input_offset_start\": %lld,\n", (long long) out->first_offset);
	appendStringInfo(doc, "  \"input_record_count\": %d,\n", n);
	appendStringInfo(doc, "  \"new_coordinate_count\": %d,\n", n);
	appendStringInfo(doc, "  \"partition\": %d,\n", partition);
	appendStringInfo(doc, "  \"quarantine_count\": %d,\n", out->quarantined);
	appendStringInfoString(doc, "  \"topic\": ");
	appendStringInfoString(doc, topic_json.data);
	appendStringInfoString(doc, "\n}\n");
	kl_out_close(&mf);
	strlcpy(out->manifest_sha256, mf.info.sha256, sizeof(out->manifest_sha256));
	out->manifest_bytes = mf.info.bytes;
	out->manifest_crc32c = mf.info.crc32c;

	/* the staging directory's entries are durable */
	fsync_fname(staging, true);

	kl_fault_point("after_staging_write");

	/* step 4: one rename makes the batch visible; fsync its parent */
	if (rename(staging, final) != 0)
	{
		if (errno == ENOTEMPTY || errno == EEXIST)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("batch directory \"%s\" already exists", final),
					 errdetail("The catalog does not know it, yet it holds these coordinates."),
					 errhint("Run kafka_lake.recover('%s') and then kafka_lake.verify('%s').",
							 src->source, src->source)));
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rename \"%s\" to \"%s\": %m", staging, final)));
	}
	fd = OpenTransientFile(part_dir, O_RDONLY | PG_BINARY);
	if (fd < 0 || pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync directory \"%s\": %m", part_dir)));
	CloseTransientFile(fd);
	/* the staging root lost an entry; not needed for durability, but tidy */
	fsync_fname(staging_root, true);

	out->path = final;
	kl_fault_point("after_rename");
}
