/*-------------------------------------------------------------------------
 *
 * exclude.c
 *	  kafka_lake.exclude(source, event_id | partition and offset, reason)
 *	  and kafka_lake.unexclude(...): an accepted record set aside, and put
 *	  back.
 *
 * WHAT IT DOES
 *
 * A landed record never changes (I4), so a wrong accepted record cannot
 * be corrected in place, and a corrected re-send with the same event_id
 * lands as duplicate_event_id.  exclude() sets the accepted record aside:
 * its status letter in kafka_lake.coordinates becomes 'X' (accepted on
 * disk, excluded for readers), and its event_id's accepted record becomes
 *	- the earliest duplicate with that event_id, by (partition, offset), of
 *	  the record's own topic (a source of several topics: an exclusion unit
 *	  changes the records of one topic), whose batch is not expired and that
 *	  no exclusion in effect names:
 *	  its letter becomes 'P' (a duplicate on disk, accepted for readers:
 *	  its line stays in its batch's duplicates.jsonl);
 *	- or none: accepted_events no longer holds the event_id, so a record
 *	  that lands later with it is accepted as any new one is.
 * accepted_events always names the one record that is accepted (I3): the
 * original, the promoted duplicate, or none.  Excluding a promoted record
 * makes it a duplicate again ('d') and promotes the next one by the same
 * rule; the exclusion in effect keeps it from being promoted again.
 *
 * unexclude() undoes an exclusion in effect (by event_id: the newest one of
 * that event_id; by coordinate: that record's): the record is accepted
 * again ('a', or 'P' for a promoted one), and the duplicate that was
 * promoted in its place (if any) is a duplicate again.  When the event_id
 * is accepted meanwhile by a record that is not a promoted duplicate (one
 * that landed after the exclusion released the event_id), it refuses
 * (55000): that record must be excluded first.
 *
 * HOW IT IS RECORDED
 *
 * Each call writes one exclusion unit (exclusion_files.c: a directory
 * renamed into place after fsync, never changed), then, in the caller's
 * transaction, its row of kafka_lake.exclusions (who, when, why, what
 * changed), the letters and accepted_events.  recover() adopts a unit a
 * killed backend left (I5), so kill -9 at any point leaves either nothing
 * or the whole exclusion.
 *
 * LOCKS
 *
 * The source's row lock (kl_source_lock, like every writer of a source),
 * the source's exclusion lock (one excluder at a time: a second session
 * excluding the same record waits, then answers "already_excluded"), then
 * the partition lock of each partition it changes, as land(), readmit()
 * and compact() take it: it waits (up to a minute) for a landing of the
 * partition to finish, so nothing interleaves.
 *
 * IDENTIFICATION
 *	  src/lifecycle/exclude.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "base/args.h"
#include "base/compat.h"
#include "base/fault.h"
#include "format/batch_format.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/catalog_exclusions.h"
#include "kl_catalog/locks.h"
#include "landing/batch_read.h"
#include "landing/exclusion_files.h"
#include "landing/landing_files.h"
#include "landing/recover.h"
#include "landing/source_lock.h"

PG_FUNCTION_INFO_V1(kafka_lake_exclude);
PG_FUNCTION_INFO_V1(kafka_lake_unexclude);

#define KL_EXCLUDE_NCOLUMNS		8
#define KL_EXCLUDE_LOCK_WAIT_MS	60000

/* A landed record as exclude() finds it */
typedef struct KlFoundRecord
{
	int32		partition;
	int64		offset;
	char		batch_id[KL_BATCH_ID_LEN + 1];
	uint8		fingerprint[KL_SHA256_LEN];
	char		letter;			/* its letter now */
	char	   *event_id;		/* NULL: none */
} KlFoundRecord;

/* One call */
typedef struct KlExcludeCall
{
	KlSource   *source;			/* the source, every topic */
	KlSource   *src;			/* on the topic of the record named */
	bool		undo;
	Tuplestorestate *out;
	TupleDesc	desc;
	List	   *exclusions;		/* the catalog's units, by seq */
	List	   *locked;			/* partitions owned */
	bool		pushed;			/* a snapshot of ours is active */
} KlExcludeCall;

/*
 * kl_exclude_fresh_snapshot
 *		In READ COMMITTED, read the catalog from here on with a snapshot
 *		taken now, after a lock was granted: what the session that held it
 *		committed is seen (a second exclude() of the same record finds it
 *		excluded).  Under REPEATABLE READ the partition lock refuses a
 *		partition changed since the transaction's snapshot (locks.c).
 */
static void
kl_exclude_fresh_snapshot(KlExcludeCall *xc)
{
	if (IsolationUsesXactSnapshot())
		return;
	if (xc->pushed)
		PopActiveSnapshot();
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	xc->pushed = true;
}

/*
 * kl_emit_exclude_row
 *		One row: what happened to one record (or, with no coordinate, to an
 *		event_id).
 */
static void
kl_emit_exclude_row(KlExcludeCall *xc, const char *exclusion_id, const char *action,
					const KlFoundRecord *r, const char *event_id, const char *status)
{
	Datum		values[KL_EXCLUDE_NCOLUMNS];
	bool		nulls[KL_EXCLUDE_NCOLUMNS] = {0};

	values[0] = CStringGetTextDatum(exclusion_id);
	values[1] = CStringGetTextDatum(action);
	values[2] = CStringGetTextDatum(xc->src->topic);
	if (r)
	{
		values[3] = Int32GetDatum(r->partition);
		values[4] = Int64GetDatum(r->offset);
		values[5] = CStringGetTextDatum(r->batch_id);
	}
	else
		nulls[3] = nulls[4] = nulls[5] = true;
	if (event_id)
		values[6] = CStringGetTextDatum(event_id);
	else
		nulls[6] = true;
	if (status)
		values[7] = CStringGetTextDatum(status);
	else
		nulls[7] = true;
	tuplestore_putvalues(xc->out, xc->desc, values, nulls);
}

/*
 * kl_exclude_own_partition
 *		Own a partition (once per call), waiting for a landing of it to
 *		finish; then recover it, as readmit() does.
 */
static void
kl_exclude_own_partition(KlExcludeCall *xc, int32 partition)
{
	if (list_member_int(xc->locked, partition))
		return;
	if (!kl_lock_partition_wait(xc->src, partition,
								TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
															KL_EXCLUDE_LOCK_WAIT_MS)))
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("partition %d of source \"%s\" is busy", partition, xc->src->source),
				 errdetail("Another session has been landing, compacting or recovering it for a minute."),
				 errhint("Try again when it has finished.")));
	xc->locked = lappend_int(xc->locked, partition);
	kl_exclude_fresh_snapshot(xc);
	kl_recover_partition(xc->src, partition, NULL, NULL);
}

/*
 * kl_manifest_event_id
 *		The event_id that a batch's manifest gives the record at offset, and
 *		its fingerprint (ERROR XX001 unless the catalog's is the same).
 */
static char *
kl_manifest_event_id(KlSource *src, const KlBatch *b, int64 offset, const uint8 *fingerprint)
{
	char	   *dir = psprintf("%s/%s%s", kl_batch_partition_dir(src, b),
							   KL_BATCH_DIR_PREFIX(b), b->batch_id);
	KlBatch		mb;
	KlRecord   *recs;
	int			n;

	kl_read_manifest(dir, &mb, &recs, &n);
	for (int i = 0; i < n; i++)
	{
		if (recs[i].offset != offset)
			continue;
		if (memcmp(recs[i].fingerprint, fingerprint, KL_SHA256_LEN) != 0)
			break;
		return recs[i].event.event_id ?
			pnstrdup(recs[i].event.event_id, recs[i].event.event_id_len) : NULL;
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("the manifest of batch %s of source \"%s\" does not hold offset %lld as the catalog does",
					b->batch_id, src->source, (long long) offset),
			 errhint("Run kafka_lake.verify('%s'), which says what to do.", src->source)));
	return NULL;				/* keep compiler quiet */
}

/*
 * kl_find_record
 *		The record at (partition, offset) whose letter is one of letters
 *		(its batch, or the readmit unit that holds it now); false when no
 *		batch holds such a record there.  *any_letter gets the letter of
 *		the coordinate in any batch ('\0': not landed).
 */
static bool
kl_find_record(KlExcludeCall *xc, int32 partition, int64 offset, const char *letters,
			   KlFoundRecord *r, char *any_letter)
{
	KlBounds	bounds;
	int64		total;
	ListCell   *cell;

	*any_letter = '\0';
	kl_bounds_init(&bounds);
	bounds.partition_lo = bounds.partition_hi = partition;
	bounds.topic = xc->src->topic;
	bounds.offset_lo = bounds.offset_hi = offset;
	foreach(cell, kl_catalog_scan_batches(xc->src, &bounds, KL_BATCH_WANT_FINGERPRINTS, &total))
	{
		KlBatch    *b = lfirst(cell);
		int			idx;
		char		letter;

		kl_batch_load_fingerprints(xc->src, b, false); /* an expired batch's: its manifest's */
		idx = kl_batch_coordinate_index(b, offset);
		if (idx < 0 || idx >= b->nfingerprints)
			continue;
		letter = kl_catalog_letter(xc->src, b->batch_id, offset, true);
		if (*any_letter == '\0' || strchr(letters, letter) != NULL)
			*any_letter = letter;
		if (strchr(letters, letter) == NULL)
			continue;
		r->partition = partition;
		r->offset = offset;
		strlcpy(r->batch_id, b->batch_id, sizeof(r->batch_id));
		memcpy(r->fingerprint, b->fingerprints + (Size) idx * KL_SHA256_LEN, KL_SHA256_LEN);
		r->letter = letter;
		r->event_id = kl_manifest_event_id(xc->src, b, offset, r->fingerprint);
		return true;
	}
	return false;
}

/*
 * kl_active_exclusion
 *		The exclusion in effect of the record at (partition, offset), or
 *		(partition < 0) the newest one in effect of event_id; NULL: none.
 */
static KlExclusion *
kl_active_exclusion(KlExcludeCall *xc, int32 partition, int64 offset, const char *event_id)
{
	KlExclusion *found = NULL;
	ListCell   *cell;

	foreach(cell, xc->exclusions)
	{
		KlExclusion *x = lfirst(cell);

		if (x->undo || x->undone)
			continue;
		if (partition >= 0 ?
			(x->changes[0].partition == partition && x->changes[0].offset == offset &&
			 strcmp(x->topic, xc->src->topic) == 0) :
			(x->event_id != NULL && strcmp(x->event_id, event_id) == 0))
			found = x;
	}
	return found;
}

/*
 * kl_find_promotion
 *		The duplicate to promote when event_id's accepted record is set
 *		aside: the earliest by (partition, offset) of the records that
 *		landed as duplicate_event_id with it (letter 'd'), in batches that
 *		are not expired, that no exclusion in effect names and that are not
 *		skip.  false: none.  Every batch with duplicates has its manifest
 *		read (exclusions are rare; see docs/limits.md).
 */
static bool
kl_find_promotion(KlExcludeCall *xc, const char *event_id, const KlFoundRecord *skip,
				  KlFoundRecord *best)
{
	KlBounds	bounds;
	int64		total;
	ListCell   *cell;
	bool		found = false;
	size_t		idlen = strlen(event_id);

	kl_bounds_init(&bounds);
	bounds.topic = xc->src->topic;
	bounds.files[KL_FILE_ACCEPTED] = false;
	bounds.files[KL_FILE_QUARANTINE] = false;
	bounds.excluded = false;
	foreach(cell, kl_catalog_scan_batches(xc->src, &bounds, KL_BATCH_WANT_FINGERPRINTS, &total))
	{
		KlBatch    *b = lfirst(cell);
		char	   *dir;
		KlBatch		mb;
		KlRecord   *recs;
		int			n;

		CHECK_FOR_INTERRUPTS();
		if (b->expired || b->counts[KL_FILE_DUPLICATES] == 0)
			continue;
		dir = psprintf("%s/%s%s", kl_batch_partition_dir(xc->src, b),
					   KL_BATCH_DIR_PREFIX(b), b->batch_id);
		kl_read_manifest(dir, &mb, &recs, &n);
		for (int i = 0; i < n; i++)
		{
			KlRecord   *rec = &recs[i];
			int			idx;
			char		letter;

			if (rec->status != KL_STATUS_DUPLICATE || rec->event.event_id == NULL ||
				rec->event.event_id_len != idlen ||
				memcmp(rec->event.event_id, event_id, idlen) != 0)
				continue;
			idx = kl_batch_coordinate_index(b, rec->offset);
			if (idx < 0 || idx >= b->nfingerprints ||
				memcmp(b->fingerprints + (Size) idx * KL_SHA256_LEN, rec->fingerprint,
					   KL_SHA256_LEN) != 0)
				continue;
			letter = b->demoted_statuses ? b->demoted_statuses[idx] : KL_STATUS_DUPLICATE;
			if (letter != KL_STATUS_DUPLICATE)
				continue;
			if (skip && skip->partition == b->partition && skip->offset == rec->offset)
				continue;
			if (kl_active_exclusion(xc, b->partition, rec->offset, NULL) != NULL)
				continue;
			if (found && (b->partition > best->partition ||
						  (b->partition == best->partition && rec->offset >= best->offset)))
				continue;
			found = true;
			best->partition = b->partition;
			best->offset = rec->offset;
			strlcpy(best->batch_id, b->batch_id, sizeof(best->batch_id));
			memcpy(best->fingerprint, rec->fingerprint, KL_SHA256_LEN);
			best->letter = letter;
			best->event_id = pstrdup(event_id);
		}
	}
	return found;
}

/*
 * kl_set_change
 *		A change of the unit: record r from its letter to to.
 */
static void
kl_set_change(KlExclusionChange *ch, const KlFoundRecord *r, char to)
{
	ch->partition = r->partition;
	ch->offset = r->offset;
	strlcpy(ch->batch_id, r->batch_id, sizeof(ch->batch_id));
	memcpy(ch->fingerprint, r->fingerprint, KL_SHA256_LEN);
	ch->from = r->letter;
	ch->to = to;
}

/*
 * kl_status_of_letter
 *		What the foreign table says of a record with this letter.
 */
static const char *
kl_status_of_letter(char letter)
{
	switch (letter)
	{
		case KL_STATUS_ACCEPTED:
		case KL_STATUS_PROMOTED:
			return "accepted";
		case KL_STATUS_EXCLUDED:
			return "excluded";
		case KL_STATUS_QUARANTINED:
			return "quarantined";
		default:
			return "duplicate_event_id";
	}
}

/*
 * kl_exclude_args
 *		The record the call names: by event_id, or by (partition, offset).
 *		Exactly one way; a reason that says something.
 */
static void
kl_exclude_args(FunctionCallInfo fcinfo, const char *fn)
{
	bool		by_event = !PG_ARGISNULL(1);
	bool		by_coordinate = !PG_ARGISNULL(2) || !PG_ARGISNULL(3);
	char	   *reason;

	kl_check_not_null(fcinfo, 0, "source", NULL);
	if (PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("reason must not be null"),
				 errhint("Say why, in reason => '...': kafka_lake.exclusions keeps it with who and when.")));
	reason = text_to_cstring(PG_GETARG_TEXT_PP(4));
	while (*reason == ' ' || *reason == '\t' || *reason == '\n')
		reason++;
	if (*reason == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("reason must not be empty"),
				 errhint("Say why, in reason => '...': kafka_lake.exclusions keeps it with who and when.")));
	if (by_event && by_coordinate)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s() names a record by event_id or by partition and offset, not both", fn)));
	if (!by_event && !by_coordinate)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("event_id must not be null unless partition and offset are given"),
				 errhint("Name the record: event_id => '...', or partition => ..., \"offset\" => ....")));
	if (by_coordinate && (PG_ARGISNULL(2) || PG_ARGISNULL(3)))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", PG_ARGISNULL(2) ? "partition" : "offset"),
				 errhint("A record is named by its partition and its offset together.")));
	if (by_coordinate && (PG_GETARG_INT32(2) < 0 || PG_GETARG_INT64(3) < 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition and offset must not be negative")));
}

/*
 * kl_not_landed
 *		ERROR: no record of the source is at that coordinate.
 */
static void
kl_not_landed(KlSource *src, int32 partition, int64 offset)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("source \"%s\" has no landed record at partition %d offset %lld",
					src->source, partition, (long long) offset),
			 errhint("kafka_lake.%s lists the landed records with their partition and offset.",
					 quote_identifier(psprintf("%s_records", src->source)))));
}

/*
 * kl_exclude_record
 *		exclude(): set the accepted record r aside.
 */
static void
kl_exclude_record(KlExcludeCall *xc, KlFoundRecord *r, KlExclusion *x)
{
	KlFoundRecord promoted;
	int			holder_topic;

	kl_set_change(&x->changes[0], r,
				  r->letter == KL_STATUS_PROMOTED ? KL_STATUS_DUPLICATE : KL_STATUS_EXCLUDED);
	x->nchanges = 1;
	if (r->event_id == NULL)
		return;
	x->has_before = kl_catalog_event_holder(xc->src, r->event_id, &holder_topic,
											&x->before_partition, &x->before_offset);
	if (!x->has_before || holder_topic != xc->src->topic_index ||
		x->before_partition != r->partition || x->before_offset != r->offset)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("kafka_lake.accepted_events does not hold event_id \"%s\" of source \"%s\" at its accepted record",
						r->event_id, xc->src->source),
				 errhint("Run kafka_lake.verify('%s').", xc->src->source)));
	if (kl_find_promotion(xc, r->event_id, r, &promoted))
	{
		kl_exclude_own_partition(xc, promoted.partition);
		kl_set_change(&x->changes[1], &promoted, KL_STATUS_PROMOTED);
		x->nchanges = 2;
		x->has_after = true;
		x->after_partition = promoted.partition;
		x->after_offset = promoted.offset;
	}
}

/*
 * kl_unexclude_record
 *		unexclude(): put the record of exclusion u back.
 */
static void
kl_unexclude_record(KlExcludeCall *xc, KlFoundRecord *r, const KlExclusion *u, KlExclusion *x)
{
	int			holder_topic;

	/* the letter it had before u */
	kl_set_change(&x->changes[0], r, u->changes[0].from);
	x->nchanges = 1;
	x->undoes = pstrdup(u->exclusion_id);
	if (r->event_id == NULL)
		return;
	x->has_before = kl_catalog_event_holder(xc->src, r->event_id, &holder_topic,
											&x->before_partition, &x->before_offset);
	if (x->has_before)
	{
		KlFoundRecord holder;
		char		letter;

		/* held on another topic: by a record that landed after the release */
		if (holder_topic != xc->src->topic_index)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("event_id \"%s\" of source \"%s\" is accepted by another record since it was excluded",
							r->event_id, xc->src->source),
					 errdetail("The record at partition %d offset %lld of topic \"%s\" holds it; it landed after the exclusion released the event_id.",
							   x->before_partition, (long long) x->before_offset,
							   holder_topic >= 0 ? xc->src->topics[holder_topic] : "?"),
					 errhint("Exclude that record first: kafka_lake.exclude('%s', \"partition\" => %d, \"offset\" => %lld, topic => '%s', reason => '...').",
							 xc->src->source, x->before_partition, (long long) x->before_offset,
							 holder_topic >= 0 ? xc->src->topics[holder_topic] : "?")));
		kl_exclude_own_partition(xc, x->before_partition);
		if (!kl_find_record(xc, x->before_partition, x->before_offset, "P", &holder, &letter))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("event_id \"%s\" of source \"%s\" is accepted by another record since it was excluded",
							r->event_id, xc->src->source),
					 errdetail("The record at partition %d offset %lld holds it; it landed after the exclusion released the event_id.",
							   x->before_partition, (long long) x->before_offset),
					 errhint("Exclude that record first: kafka_lake.exclude('%s', \"partition\" => %d, \"offset\" => %lld, reason => '...').",
							 xc->src->source, x->before_partition, (long long) x->before_offset)));
		kl_set_change(&x->changes[1], &holder, KL_STATUS_DUPLICATE);
		x->nchanges = 2;
	}
	x->has_after = true;
	x->after_partition = r->partition;
	x->after_offset = r->offset;
}

/*
 * kl_exclude_topic
 *		The source on the topic an exclusion unit names (its records are of
 *		that topic).
 */
static KlSource *
kl_exclude_topic(KlExcludeCall *xc, const char *topic)
{
	int			t = kl_source_topic_index(xc->source, topic);

	if (t < 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("an exclusion of source \"%s\" names topic \"%s\", which the source does not land",
						xc->source->source, topic),
				 errhint("Run kafka_lake.verify('%s').", xc->source->source)));
	return kl_source_topic(xc->source, t);
}

/*
 * kl_exclude_done
 *		The end of a call: our snapshot goes.
 */
static Datum
kl_exclude_done(KlExcludeCall *xc)
{
	if (xc->pushed)
		PopActiveSnapshot();
	xc->pushed = false;
	return (Datum) 0;
}

/*
 * kl_exclude_call
 *		exclude() and unexclude().
 */
static Datum
kl_exclude_call(FunctionCallInfo fcinfo, bool undo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const char *fn = undo ? "unexclude" : "exclude";
	KlExcludeCall xc = {0};
	KlExclusion x;
	KlFoundRecord r;
	KlExclusion *active = NULL;
	int			topic;
	int32		partition;
	int64		offset;
	char		letter;
	bool		found;

	kl_exclude_args(fcinfo, fn);
	if (!kl_catalog_has_exclusions())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this database's kafka_lake catalog has no exclusions"),
				 errhint("Run ALTER EXTENSION kafka_lake UPDATE first.")));
	xc.source = xc.src = kl_source_arg(fcinfo, 0);
	xc.undo = undo;
	kl_source_lock(xc.src);
	kl_init_materialized_srf(fcinfo);
	xc.out = rsinfo->setResult;
	xc.desc = rsinfo->setDesc;

	/* one excluder of the source at a time; what a crash left first */
	kl_recover_exclusions(xc.source, NULL, NULL);
	kl_exclude_fresh_snapshot(&xc);
	xc.exclusions = kl_catalog_exclusions(xc.source);

	/* the coordinate of the record named */
	if (!PG_ARGISNULL(1))
	{
		char	   *event_id = text_to_cstring(PG_GETARG_TEXT_PP(1));

		if (undo)
		{
			active = kl_active_exclusion(&xc, -1, 0, event_id);
			if (active == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("no exclusion of event_id \"%s\" of source \"%s\" is in effect",
								event_id, xc.src->source),
						 errhint("kafka_lake.exclusions lists the exclusions and what undid them.")));
			xc.src = kl_exclude_topic(&xc, active->topic);
			partition = active->changes[0].partition;
			offset = active->changes[0].offset;
		}
		else if (kl_catalog_event_holder(xc.source, event_id, &topic, &partition, &offset))
			xc.src = kl_source_topic(xc.source, Max(topic, 0));
		else
		{
			active = kl_active_exclusion(&xc, -1, 0, event_id);
			if (active == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("source \"%s\" has no accepted record with event_id \"%s\"",
								xc.src->source, event_id),
						 errhint("kafka_lake.%s lists the accepted records.",
								 quote_identifier(psprintf("%s_records", xc.src->source)))));
			xc.src = kl_exclude_topic(&xc, active->topic);
			memset(&r, 0, sizeof(r));
			r.partition = active->changes[0].partition;
			r.offset = active->changes[0].offset;
			strlcpy(r.batch_id, active->changes[0].batch_id, sizeof(r.batch_id));
			kl_emit_exclude_row(&xc, active->exclusion_id, "already_excluded", &r, event_id,
								kl_status_of_letter(active->changes[0].to));
			return kl_exclude_done(&xc);
		}
	}
	else
	{
		partition = PG_GETARG_INT32(2);
		offset = PG_GETARG_INT64(3);
		xc.src = kl_source_topic_arg(xc.source, fcinfo, 5, true);
	}

	kl_exclude_own_partition(&xc, partition);
	if (!undo)
	{
		found = kl_find_record(&xc, partition, offset, "aP", &r, &letter);
		if (!found && letter == '\0')
			kl_not_landed(xc.src, partition, offset);
		if (!found)
		{
			active = kl_active_exclusion(&xc, partition, offset, NULL);
			if (active)
			{
				(void) kl_find_record(&xc, partition, offset, "Xd", &r, &letter);
				kl_emit_exclude_row(&xc, active->exclusion_id, "already_excluded", &r, r.event_id,
									kl_status_of_letter(letter));
				return kl_exclude_done(&xc);
			}
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the record at partition %d offset %lld of source \"%s\" is not accepted",
							partition, (long long) offset, xc.src->source),
					 errdetail("Its status is %s.", kl_status_of_letter(letter)),
					 errhint("Only an accepted record can be excluded; exclude its event_id's accepted record instead.")));
		}
	}
	else
	{
		if (active == NULL)
			active = kl_active_exclusion(&xc, partition, offset, NULL);
		if (active == NULL)
		{
			found = kl_find_record(&xc, partition, offset, "aP", &r, &letter);
			if (!found && letter == '\0')
				kl_not_landed(xc.src, partition, offset);
			if (found)
			{
				kl_emit_exclude_row(&xc, "", "not_excluded", &r, r.event_id, "accepted");
				return kl_exclude_done(&xc);
			}
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("no exclusion of the record at partition %d offset %lld of source \"%s\" is in effect",
							partition, (long long) offset, xc.src->source),
					 errhint("kafka_lake.exclusions lists the exclusions and what undid them.")));
		}
		if (!kl_find_record(&xc, partition, offset, psprintf("%c", active->changes[0].to), &r, &letter))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("exclusion %s of source \"%s\" does not match the catalog's status letters",
							active->exclusion_id, xc.src->source),
					 errhint("Run kafka_lake.verify('%s').", xc.src->source)));
	}

	/* the unit */
	memset(&x, 0, sizeof(x));
	x.undo = undo;
	x.topic = xc.src->topic;
	x.event_id = r.event_id;
	x.reason = text_to_cstring(PG_GETARG_TEXT_PP(4));
	x.created_by = GetUserNameFromId(GetUserId(), false);
	x.created_at = kl_iso_now();
	x.landed_by = fn;
	if (undo)
		kl_unexclude_record(&xc, &r, active, &x);
	else
		kl_exclude_record(&xc, &r, &x);
	x.seq = kl_catalog_next_exclusion_seq(xc.src);
	kl_write_exclusion_unit(xc.src, &x);
	kl_apply_exclusion(xc.src, &x);
	kl_fault_point("exclude_after_catalog");

	/* what happened */
	for (int c = 0; c < x.nchanges; c++)
	{
		KlFoundRecord rr;
		const KlExclusionChange *ch = &x.changes[c];
		const char *action;

		memset(&rr, 0, sizeof(rr));
		rr.partition = ch->partition;
		rr.offset = ch->offset;
		strlcpy(rr.batch_id, ch->batch_id, sizeof(rr.batch_id));
		if (c == 0)
			action = undo ? "restored" : "excluded";
		else
			action = undo ? "unpromoted" : "promoted";
		kl_emit_exclude_row(&xc, x.exclusion_id, action, &rr, x.event_id,
							kl_status_of_letter(ch->to));
	}
	if (!undo && x.event_id && !x.has_after)
		kl_emit_exclude_row(&xc, x.exclusion_id, "released", NULL, x.event_id, NULL);
	return kl_exclude_done(&xc);
}

/*
 * kafka_lake_exclude
 *		exclude(source, event_id, partition, offset, reason): set an
 *		accepted record aside.
 */
Datum
kafka_lake_exclude(PG_FUNCTION_ARGS)
{
	return kl_exclude_call(fcinfo, false);
}

/*
 * kafka_lake_unexclude
 *		unexclude(source, event_id, partition, offset, reason): put an
 *		excluded record back.
 */
Datum
kafka_lake_unexclude(PG_FUNCTION_ARGS)
{
	return kl_exclude_call(fcinfo, true);
}
