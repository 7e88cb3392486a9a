/*-------------------------------------------------------------------------
 *
 * exclusion_files.c
 *	  Exclusion units on disk (exclude.c makes them): one directory per
 *	  exclude() or unexclude(), written, fsynced and renamed into place as
 *	  a batch is, never changed; and their recovery.
 *
 * WHERE THEY LIVE, AND WHY THERE
 *
 *	<landing_dir>/<source>/exclusions/exclusion=<seq:020d>-<hash12>/exclusion.json
 *
 * A unit holds no record bytes: the records it names stay in their batches
 * (I4), and a unit only says which status letters of kafka_lake.
 * coordinates change, from what to what, and where accepted_events holds
 * the event_id before and after.  One unit may touch two partitions (the
 * record set aside, and the duplicate of another partition promoted in its
 * place), and the units of a source must be applied in one order (seq),
 * so they live in one directory per source rather than beside one batch.
 * The unit is written in <source>/.staging, fsynced, renamed into
 * exclusions/ and the parent fsynced; its catalog row (kafka_lake.
 * exclusions, with the SHA-256 and size of exclusion.json) and its letters
 * are written in the caller's transaction.  An ERROR or ROLLBACK removes
 * the directory again (fileundo.c), so a refused exclude() leaves nothing.
 *
 * RECOVERY (I5)
 *
 * A backend killed after the rename leaves a unit the catalog lacks.  The
 * disk is the source of truth: kl_recover_exclusions (recover(), and
 * exclude() and unexclude() before they act) adopts such units in seq
 * order, each one if the catalog is as it says it found it (every letter
 * it changes is its "from", with the same fingerprint; accepted_events
 * holds its event_id where it says), which is always so after a crash,
 * since the lock that exclude() held kept everyone else out.  A unit that
 * does not fit (its records were changed since, by hand or by a catalog
 * restored from elsewhere) is removed with a WARNING: it never took
 * effect.  A unit whose batches the catalog does not list yet is left for
 * a later recover().  Abandoned staging directories of units are removed.
 *
 * IDENTIFICATION
 *	  src/landing/exclusion_files.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"

#include "base/digest.h"
#include "base/fault.h"
#include "base/json.h"
#include "format/batch_format.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/catalog_exclusions.h"
#include "kl_catalog/locks.h"
#include "landing/batch_read.h"
#include "landing/exclusion_files.h"
#include "landing/fileundo.h"
#include "landing/landing_files.h"

/*
 * kl_exclusions_dir
 *		The directory of a source's exclusion units.
 */
char *
kl_exclusions_dir(KlSource *src)
{
	return psprintf("%s/%s", src->dir, KL_EXCLUSIONS_DIR);
}

/*
 * kl_exclusion_dir
 *		The directory of one exclusion unit.
 */
char *
kl_exclusion_dir(KlSource *src, const char *exclusion_id)
{
	return psprintf("%s/%s/%s%s", src->dir, KL_EXCLUSIONS_DIR, KL_EXCLUSION_PREFIX, exclusion_id);
}

/*
 * kl_append_coordinate
 *		{"partition": p, "offset": o}, or null.
 */
static void
kl_append_coordinate(StringInfo buf, bool has, int32 partition, int64 offset)
{
	if (!has)
		appendStringInfoString(buf, "null");
	else
		appendStringInfo(buf, "{\"partition\": %d, \"offset\": " INT64_FORMAT "}",
						 partition, offset);
}

/*
 * kl_append_nullable
 *		A JSON string, or null.
 */
static void
kl_append_nullable(StringInfo buf, const char *s)
{
	if (s == NULL)
		appendStringInfoString(buf, "null");
	else
		kl_json_append_string(buf, s, strlen(s));
}

/*
 * kl_exclusion_json
 *		The text of a unit's exclusion.json.
 */
static char *
kl_exclusion_json(const KlExclusion *x)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\n  \"format_version\": 1,\n  \"kind\": ");
	appendStringInfoString(&buf, x->undo ? "\"unexclude\"" : "\"exclude\"");
	appendStringInfoString(&buf, ",\n  \"exclusion_id\": ");
	kl_json_append_string(&buf, x->exclusion_id, strlen(x->exclusion_id));
	appendStringInfo(&buf, ",\n  \"seq\": " INT64_FORMAT ",\n  \"topic\": ", x->seq);
	kl_json_append_string(&buf, x->topic, strlen(x->topic));
	appendStringInfoString(&buf, ",\n  \"event_id\": ");
	kl_append_nullable(&buf, x->event_id);
	appendStringInfoString(&buf, ",\n  \"changes\": [");
	for (int c = 0; c < x->nchanges; c++)
	{
		const KlExclusionChange *ch = &x->changes[c];
		char		hex[KL_SHA256_HEX_LEN + 1];

		kl_hex(ch->fingerprint, KL_SHA256_LEN, hex);
		appendStringInfo(&buf, "%s\n    {\"partition\": %d, \"offset\": " INT64_FORMAT
						 ", \"batch_id\": \"%s\", \"fingerprint\": \"%s\", \"from\": \"%c\", \"to\": \"%c\"}",
						 c ? "," : "", ch->partition, ch->offset, ch->batch_id, hex, ch->from, ch->to);
	}
	appendStringInfoString(&buf, "\n  ],\n  \"accepted_before\": ");
	kl_append_coordinate(&buf, x->has_before, x->before_partition, x->before_offset);
	appendStringInfoString(&buf, ",\n  \"accepted_after\": ");
	kl_append_coordinate(&buf, x->has_after, x->after_partition, x->after_offset);
	appendStringInfoString(&buf, ",\n  \"undoes\": ");
	kl_append_nullable(&buf, x->undoes);
	appendStringInfoString(&buf, ",\n  \"reason\": ");
	kl_json_append_string(&buf, x->reason, strlen(x->reason));
	appendStringInfoString(&buf, ",\n  \"created_by\": ");
	kl_json_append_string(&buf, x->created_by, strlen(x->created_by));
	appendStringInfoString(&buf, ",\n  \"created_at\": ");
	kl_json_append_string(&buf, x->created_at, strlen(x->created_at));
	appendStringInfoString(&buf, "\n}\n");
	return buf.data;
}

/*
 * kl_fsync_dir
 *		fsync a directory; ERROR on failure.
 */
static void
kl_fsync_dir(const char *path)
{
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);

	if (fd < 0 || pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync directory \"%s\": %m", path)));
	CloseTransientFile(fd);
}

/*
 * kl_write_exclusion_unit
 *		Name the unit (x->seq set: its id is the seq and a hash of its
 *		content), write its exclusion.json into a staging directory, fsync
 *		it, rename it into the source's exclusions directory and fsync that
 *		(x->manifest_sha256 and manifest_bytes get set).  An abort of the
 *		transaction removes it again.
 */
void
kl_write_exclusion_unit(KlSource *src, KlExclusion *x)
{
	char	   *text;
	uint8		digest[KL_SHA256_LEN];
	char		hex[KL_SHA256_HEX_LEN + 1];
	char	   *staging_root = psprintf("%s/.staging", src->dir);
	char	   *staging;
	char	   *final;
	char	   *path;
	char	   *parent = kl_exclusions_dir(src);
	int			fd;
	size_t		len;

	/* the id: seq, and a hash of what the unit says */
	x->exclusion_id[0] = '\0';
	text = kl_exclusion_json(x);
	kl_sha256(text, strlen(text), digest);
	kl_hex(digest, KL_SHA256_LEN, hex);
	snprintf(x->exclusion_id, sizeof(x->exclusion_id), "%020lld-%.12s", (long long) x->seq, hex);
	text = kl_exclusion_json(x);
	len = strlen(text);
	kl_sha256(text, len, digest);
	kl_hex(digest, KL_SHA256_LEN, x->manifest_sha256);
	x->manifest_bytes = (int64) len;

	kl_make_dirs(staging_root);
	kl_make_dirs(parent);
	staging = psprintf("%s/%s%s", staging_root, KL_EXCLUSION_PREFIX, x->exclusion_id);
	final = kl_exclusion_dir(src, x->exclusion_id);
	kl_undo_remove_tree_at_abort(staging, "exclude()");
	kl_undo_remove_tree_at_abort(final, "exclude()");
	if (mkdir(staging, S_IRWXU) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", staging)));
	path = psprintf("%s/%s", staging, KL_EXCLUSION_FILE);
	fd = OpenTransientFile(path, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", path)));
	errno = 0;
	if (write(fd, text, len) != (ssize_t) len)
	{
		if (errno == 0)
			errno = ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", path)));
	}
	if (pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", path)));
	if (CloseTransientFile(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", path)));
	kl_fsync_dir(staging);

	kl_fault_point("exclude_after_write");

	if (rename(staging, final) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rename \"%s\" to \"%s\": %m", staging, final)));
	kl_fsync_dir(parent);
	kl_fsync_dir(staging_root);

	kl_fault_point("exclude_after_rename");
}

/* ----------------------------------------------------------------
 *		Reading a unit
 * ----------------------------------------------------------------
 */

/*
 * kl_json_text_of
 *		A JSON string's text; NULL for anything else.
 */
static char *
kl_json_text_of(const KlJsonValue *v)
{
	StringInfoData buf;

	if (v->type != KL_JSON_STRING)
		return NULL;
	initStringInfo(&buf);
	kl_json_decode_string(v, &buf);
	return buf.data;
}

/*
 * kl_json_int_of
 *		A JSON integer; false for anything else.
 */
static bool
kl_json_int_of(const KlJsonValue *v, int64 *out)
{
	return v->type == KL_JSON_NUMBER && kl_json_parse_int64(v->start, v->len, out);
}

/*
 * kl_parse_coordinate
 *		{"partition": p, "offset": o} or null.
 */
static bool
kl_parse_coordinate(const KlJsonValue *v, bool *has, int32 *partition, int64 *offset)
{
	KlJsonReader it;
	KlJsonValue k;
	KlJsonValue m;
	int64		p = -1;

	*has = false;
	if (v->type == KL_JSON_NULL)
		return true;
	if (v->type != KL_JSON_OBJECT)
		return false;
	*offset = -1;
	kl_json_object_open(&it, v->start, v->start + v->len, KL_JSON_MAX_DEPTH);
	while (kl_json_object_next(&it, &k, &m))
	{
		if (kl_json_key_is(&k, "partition", 9) && !kl_json_int_of(&m, &p))
			return false;
		if (kl_json_key_is(&k, "offset", 6) && !kl_json_int_of(&m, offset))
			return false;
	}
	if (p < 0 || p > PG_INT32_MAX || *offset < 0)
		return false;
	*partition = (int32) p;
	*has = true;
	return true;
}

/*
 * kl_parse_change
 *		One element of "changes".
 */
static bool
kl_parse_change(const KlJsonValue *v, KlExclusionChange *ch)
{
	KlJsonReader it;
	KlJsonValue k;
	KlJsonValue m;
	int64		p = -1;
	char	   *s;

	if (v->type != KL_JSON_OBJECT)
		return false;
	memset(ch, 0, sizeof(*ch));
	ch->offset = -1;
	kl_json_object_open(&it, v->start, v->start + v->len, KL_JSON_MAX_DEPTH);
	while (kl_json_object_next(&it, &k, &m))
	{
		if (kl_json_key_is(&k, "partition", 9))
		{
			if (!kl_json_int_of(&m, &p))
				return false;
		}
		else if (kl_json_key_is(&k, "offset", 6))
		{
			if (!kl_json_int_of(&m, &ch->offset))
				return false;
		}
		else if (kl_json_key_is(&k, "batch_id", 8))
		{
			if ((s = kl_json_text_of(&m)) == NULL || strlen(s) != KL_BATCH_ID_LEN)
				return false;
			strlcpy(ch->batch_id, s, sizeof(ch->batch_id));
		}
		else if (kl_json_key_is(&k, "fingerprint", 11))
		{
			if ((s = kl_json_text_of(&m)) == NULL || strlen(s) != KL_SHA256_HEX_LEN ||
				!kl_unhex(s, KL_SHA256_LEN, ch->fingerprint))
				return false;
		}
		else if (kl_json_key_is(&k, "from", 4) || kl_json_key_is(&k, "to", 2))
		{
			if ((s = kl_json_text_of(&m)) == NULL || strlen(s) != 1 ||
				strchr("adDXP", s[0]) == NULL)
				return false;
			if (kl_json_key_is(&k, "from", 4))
				ch->from = s[0];
			else
				ch->to = s[0];
		}
	}
	if (p < 0 || p > PG_INT32_MAX || ch->offset < 0 || ch->batch_id[0] == '\0' ||
		ch->from == '\0' || ch->to == '\0')
		return false;
	ch->partition = (int32) p;
	return true;
}

/*
 * kl_read_exclusion_unit
 *		Read and parse the unit in dir into *x; false (and *problem says
 *		why) when it cannot be read or is not a unit kafka_lake wrote.
 */
bool
kl_read_exclusion_unit(const char *dir, KlExclusion *x, char **problem)
{
	char	   *path = psprintf("%s/%s", dir, KL_EXCLUSION_FILE);
	const char *not_regular;
	size_t		len;
	char	   *text = kl_read_whole_file(path, &len, &not_regular);
	KlJsonReader r;
	KlJsonReader it;
	KlJsonValue doc;
	KlJsonValue k;
	KlJsonValue v;
	uint8		digest[KL_SHA256_LEN];
	bool		ok = true;
	bool		seen_kind = false;

	memset(x, 0, sizeof(*x));
	x->seq = -1;
	if (text == NULL)
	{
		*problem = psprintf("%s %s", KL_EXCLUSION_FILE, kl_landed_open_problem(not_regular));
		return false;
	}
	kl_sha256(text, len, digest);
	kl_hex(digest, KL_SHA256_LEN, x->manifest_sha256);
	x->manifest_bytes = (int64) len;
	kl_json_init(&r, text, len, KL_JSON_MAX_DEPTH);
	if (!kl_json_parse_document(&r, &doc) || doc.type != KL_JSON_OBJECT)
	{
		*problem = psprintf("%s is not a JSON object", KL_EXCLUSION_FILE);
		return false;
	}
	kl_json_object_open(&it, doc.start, doc.start + doc.len, KL_JSON_MAX_DEPTH);
	while (ok && kl_json_object_next(&it, &k, &v))
	{
		char	   *s;

		if (kl_json_key_is(&k, "kind", 4))
		{
			s = kl_json_text_of(&v);
			ok = s && (strcmp(s, "exclude") == 0 || strcmp(s, "unexclude") == 0);
			x->undo = ok && strcmp(s, "unexclude") == 0;
			seen_kind = true;
		}
		else if (kl_json_key_is(&k, "exclusion_id", 12))
		{
			s = kl_json_text_of(&v);
			ok = s && strlen(s) == KL_EXCLUSION_ID_LEN;
			if (ok)
				strlcpy(x->exclusion_id, s, sizeof(x->exclusion_id));
		}
		else if (kl_json_key_is(&k, "seq", 3))
			ok = kl_json_int_of(&v, &x->seq) && x->seq > 0;
		else if (kl_json_key_is(&k, "topic", 5))
			ok = (x->topic = kl_json_text_of(&v)) != NULL;
		else if (kl_json_key_is(&k, "event_id", 8))
		{
			x->event_id = kl_json_text_of(&v);
			ok = x->event_id != NULL || v.type == KL_JSON_NULL;
		}
		else if (kl_json_key_is(&k, "changes", 7))
		{
			KlJsonReader ai;
			KlJsonValue e;

			ok = v.type == KL_JSON_ARRAY;
			if (ok)
			{
				kl_json_array_open(&ai, v.start, v.start + v.len, KL_JSON_MAX_DEPTH);
				while (ok && kl_json_array_next(&ai, &e))
				{
					ok = x->nchanges < 2 && kl_parse_change(&e, &x->changes[x->nchanges]);
					x->nchanges++;
				}
			}
		}
		else if (kl_json_key_is(&k, "accepted_before", 15))
			ok = kl_parse_coordinate(&v, &x->has_before, &x->before_partition, &x->before_offset);
		else if (kl_json_key_is(&k, "accepted_after", 14))
			ok = kl_parse_coordinate(&v, &x->has_after, &x->after_partition, &x->after_offset);
		else if (kl_json_key_is(&k, "undoes", 6))
		{
			x->undoes = kl_json_text_of(&v);
			ok = x->undoes != NULL || v.type == KL_JSON_NULL;
		}
		else if (kl_json_key_is(&k, "reason", 6))
			ok = (x->reason = kl_json_text_of(&v)) != NULL;
		else if (kl_json_key_is(&k, "created_by", 10))
			ok = (x->created_by = kl_json_text_of(&v)) != NULL;
		else if (kl_json_key_is(&k, "created_at", 10))
			ok = (x->created_at = kl_json_text_of(&v)) != NULL;
	}
	if (!ok || !seen_kind || x->exclusion_id[0] == '\0' || x->seq < 0 || x->topic == NULL ||
		x->nchanges < 1 || x->reason == NULL || x->created_by == NULL || x->created_at == NULL ||
		x->undo != (x->undoes != NULL))
	{
		*problem = psprintf("%s is not an exclusion unit kafka_lake wrote", KL_EXCLUSION_FILE);
		return false;
	}
	return true;
}

/* ----------------------------------------------------------------
 *		Applying a unit to the catalog
 * ----------------------------------------------------------------
 */

/*
 * kl_exclusion_conflict
 *		NULL when the catalog is as the unit found it: each letter it
 *		changes is its "from" (the fingerprint the catalog holds for the
 *		coordinate is the unit's), and accepted_events holds its event_id
 *		where it says; otherwise what differs.
 */
char *
kl_exclusion_conflict(KlSource *src, const KlExclusion *x)
{
	for (int c = 0; c < x->nchanges; c++)
	{
		const KlExclusionChange *ch = &x->changes[c];
		KlBounds	bounds;
		int64		total;
		List	   *found;
		KlBatch    *b;
		int			idx;
		char		letter;

		kl_bounds_init(&bounds);
		bounds.partition_lo = bounds.partition_hi = ch->partition;
		bounds.topic = src->topic;
		bounds.batch_id = (char *) ch->batch_id;
		found = kl_catalog_scan_batches(src, &bounds, KL_BATCH_WANT_FINGERPRINTS, &total);
		if (found == NIL)
			return psprintf("batch %s is not in the catalog", ch->batch_id);
		b = linitial(found);
		kl_batch_load_fingerprints(src, b, false); /* an expired batch's: its manifest's */
		idx = kl_batch_coordinate_index(b, ch->offset);
		if (idx < 0 || idx >= b->nfingerprints ||
			memcmp(b->fingerprints + (Size) idx * KL_SHA256_LEN, ch->fingerprint, KL_SHA256_LEN) != 0)
			return psprintf("offset %lld is not a record of batch %s with the unit's fingerprint",
							(long long) ch->offset, ch->batch_id);
		letter = kl_catalog_letter(src, ch->batch_id, ch->offset, false);
		if (letter != ch->from)
			return psprintf("the status letter of offset %lld of batch %s is '%c', not '%c'",
							(long long) ch->offset, ch->batch_id, letter ? letter : '?', ch->from);
	}
	if (x->event_id)
	{
		int			t;
		int32		p;
		int64		o;
		bool		has = kl_catalog_event_holder(src, x->event_id, &t, &p, &o);

		if (has != x->has_before ||
			(has && (t != src->topic_index || p != x->before_partition || o != x->before_offset)))
			return psprintf("event_id \"%s\" is %s", x->event_id,
							has ? psprintf("accepted at partition %d offset %lld of topic \"%s\"", p,
										   (long long) o, t >= 0 ? src->topics[t] : "?") :
							"not accepted by any record");
	}
	return NULL;
}

/*
 * kl_apply_exclusion
 *		Record a unit in the catalog: its letters, where accepted_events
 *		holds its event_id, its row of kafka_lake.exclusions.
 */
void
kl_apply_exclusion(KlSource *src, const KlExclusion *x)
{
	for (int c = 0; c < x->nchanges; c++)
		kl_catalog_set_letter(src, x->changes[c].batch_id, x->changes[c].offset,
							  x->changes[c].from, x->changes[c].to);
	if (x->event_id)
		kl_catalog_move_event(src, x->event_id, x->has_after, x->after_partition, x->after_offset);
	kl_catalog_insert_exclusion(src, x);
}

/*
 * kl_emit_recover_row
 *		One row of recover() (its columns: action, topic, partition,
 *		batch_id, detail), for a unit; partition < 0: the source's.
 */
static void
kl_emit_recover_row(Tuplestorestate *out, TupleDesc desc, const char *action,
					KlSource *src, int32 partition, const char *batch_id, const char *detail)
{
	Datum		values[5];
	bool		nulls[5] = {0};

	if (out == NULL)
		return;
	values[0] = CStringGetTextDatum(action);
	values[1] = CStringGetTextDatum(src->topic);
	values[2] = Int32GetDatum(partition);
	nulls[2] = (partition < 0);
	if (batch_id)
		values[3] = CStringGetTextDatum(batch_id);
	else
		nulls[3] = true;
	values[4] = CStringGetTextDatum(detail);
	tuplestore_putvalues(out, desc, values, nulls);
}

/*
 * kl_recover_exclusions
 *		Make the catalog's exclusions match the units on disk: abandoned
 *		staging directories of units go; units the catalog lacks are
 *		adopted in seq order when the catalog is as they found it, removed
 *		when it is not, left when a partition they touch is busy or a batch
 *		they name is not in the catalog yet.  The caller holds the source's
 *		lock; the exclusion lock is taken here.  Returns the number of
 *		changes (and reports them when out is given).
 */
int
kl_recover_exclusions(KlSource *source, Tuplestorestate *out, TupleDesc desc)
{
	KlSource   *src = source;
	char	   *root = kl_exclusions_dir(src);
	List	   *known;
	ListCell   *cell;
	int			changes = 0;

	if (!kl_catalog_has_exclusions())
		return 0;
	kl_lock_exclusions(src);

	/* no other session writes a unit now: a staging one is abandoned */
	foreach(cell, kl_list_dir(psprintf("%s/.staging", src->dir), KL_EXCLUSION_PREFIX))
	{
		kl_remove_tree(psprintf("%s/.staging/%s", src->dir, (char *) lfirst(cell)));
		kl_emit_recover_row(out, desc, "removed_staging", src, -1, NULL, (char *) lfirst(cell));
		changes++;
	}

	known = kl_catalog_exclusions(src);
	foreach(cell, kl_list_dir(root, KL_EXCLUSION_PREFIX))
	{
		const char *name = lfirst(cell);
		const char *id = name + strlen(KL_EXCLUSION_PREFIX);
		char	   *dir = psprintf("%s/%s", root, name);
		bool		is_known = false;
		bool		locked = true;
		ListCell   *kc;
		KlExclusion x;
		char	   *problem = NULL;
		bool		readable;

		CHECK_FOR_INTERRUPTS();
		foreach(kc, known)
			is_known |= (strcmp(((KlExclusion *) lfirst(kc))->exclusion_id, id) == 0);
		if (is_known)
			continue;
		readable = kl_read_exclusion_unit(dir, &x, &problem);
		src = source;
		if (readable && (strcmp(x.exclusion_id, id) != 0 ||
						 kl_source_topic_index(source, x.topic) < 0))
		{
			readable = false;
			problem = pstrdup("its exclusion.json names another unit or topic");
		}
		/* a unit changes records of one topic, and works on it */
		if (readable)
			src = kl_source_topic(source, kl_source_topic_index(source, x.topic));
		if (!readable)
		{
			ereport(WARNING,
					(errmsg("\"%s\" is not an exclusion unit: %s", dir, problem),
					 errdetail("Source \"%s\" ignores it.", src->source),
					 errhint("Move it out of the exclusions directory.")));
			kl_emit_recover_row(out, desc, "skipped_stray", src, -1, NULL,
								psprintf("%s: %s", name, problem));
			continue;
		}
		for (int c = 0; c < x.nchanges; c++)
			locked &= kl_try_lock_partition(src, x.changes[c].partition);
		if (!locked)
		{
			kl_emit_recover_row(out, desc, "skipped_locked", src, x.changes[0].partition, NULL,
								psprintf("exclusion %s: another session is landing a partition it touches", id));
			continue;
		}
		problem = kl_exclusion_conflict(src, &x);
		if (problem && strstr(problem, "is not in the catalog") != NULL)
		{
			ereport(WARNING,
					(errmsg("exclusion unit \"%s\" of source \"%s\" is not adopted yet: %s",
							dir, src->source, problem),
					 errhint("Run kafka_lake.recover('%s') once its batches are adopted.", src->source)));
			kl_emit_recover_row(out, desc, "skipped_exclusion", src, x.changes[0].partition,
								x.changes[0].batch_id, psprintf("exclusion %s: %s", id, problem));
			continue;
		}
		if (problem)
		{
			/* it never took effect: the catalog moved on without it */
			ereport(WARNING,
					(errmsg("exclusion unit \"%s\" of source \"%s\" does not fit the catalog and is removed: %s",
							dir, src->source, problem)));
			kl_undo_remove_tree_at_commit(dir, src->source_id, "recover()");
			kl_emit_recover_row(out, desc, "removed_exclusion", src, x.changes[0].partition,
								x.changes[0].batch_id, psprintf("exclusion %s: %s", id, problem));
			changes++;
			continue;
		}
		x.landed_by = "recover";
		kl_apply_exclusion(src, &x);
		kl_emit_recover_row(out, desc, "adopted_exclusion", src, x.changes[0].partition,
							x.changes[0].batch_id,
							psprintf("%s %s: offset %lld%s", x.undo ? "unexclude" : "exclude", id,
									 (long long) x.changes[0].offset,
									 x.nchanges > 1 ? psprintf(", and partition %d offset %lld",
															   x.changes[1].partition,
															   (long long) x.changes[1].offset) : ""));
		changes++;
	}
	return changes;
}
