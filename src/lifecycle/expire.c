/*-------------------------------------------------------------------------
 *
 * expire.c
 *	  kafka_lake.expire(source, before | older_than, closed_only): remove
 *	  the record files of old batches, keep everything that says what was
 *	  landed.
 *
 * WHAT RETENTION REMOVES, AND WHAT IT KEEPS
 *
 * A batch expires when every business date of its events is older than the
 * limit (a batch without dates, all of it quarantined, when the day it
 * landed is).  Its three record files (accepted, duplicates, quarantine)
 * are removed.  Kept: its manifest.json (every coordinate with its
 * fingerprint, status and event_id), its catalog rows (batches, with
 * expired_at set; coordinates, without their fingerprints from 1.9: the
 * manifest has them; accepted_events), and the bridge's adapter versions,
 * runs and gold snapshots.  So every coordinate stays known: a redelivered
 * or replayed expired record is reused (its fingerprint read from the
 * manifest, src/landing/land.c), never landed twice, and its event_id stays
 * accepted once.  The foreign table and the bridge
 * refuse a date whose batches expired instead of returning part of it
 * (batch_read.c), and verify() tells an expired batch from a damaged one.
 *
 * THE PROTOCOL
 *
 * For each partition it owns (the partition lock), after recovering it:
 *	1. write the batch directory's EXPIRED marker (fsynced; it goes again
 *	   if the transaction aborts);
 *	2. set the batch's expired_at in the caller's transaction;
 *	3. once that has committed, remove the record files (fileundo.c).
 * A crash before the commit leaves a marker on a batch the catalog does not
 * call expired: recover() removes it.  A crash after the commit leaves
 * record files of an expired batch: recover() removes them.  A batch
 * directory with its marker but without its record files is adopted as an
 * expired batch (recover.c), so the marker is what lets the disk alone say
 * that the files went on purpose.
 *
 * A batch and its readmit units (readmit.c) expire together, when the
 * business dates of all of them are past the limit: a unit holds records
 * of its batch, recover() adopts or forgets it by its batch, and readmit()
 * judges the batch's quarantine lines again, so neither may outlive the
 * other.  Each gets its own marker and expired_at.  readmit() skips an
 * expired batch (its quarantine lines are gone), and compact() leaves
 * expired batches alone.
 *
 * REDUCTION
 *
 * Once an expired batch's event_ids are gone from accepted_events (past
 * the source's dedupe horizon: kl_catalog_prune_event_ids, which each call
 * runs before this; or it accepted none), its manifest's entries are more
 * than anything still needs: nothing reads its records again, and recover()
 * would not reserve its event_ids.  What a redelivery and an adoption
 * still need is its offsets, statuses and fingerprints; so the manifest is
 * replaced by manifest.reduced.json(.zst) (kl_manifest_reduced): the same
 * batch members, the statuses as one letter each, the offsets when the
 * range has gaps, the first KL_FINGERPRINT_PREFIX_LEN bytes of each
 * fingerprint, one SHA-256 over the whole fingerprints (which the batch_id
 * ends with, so an adoption can check it) and the SHA-256 of the manifest
 * it replaces: about 8.4 bytes a record compressed instead of about 40.  A
 * redelivered coordinate of a reduced batch is then reused when its
 * fingerprint begins with the same 8 bytes (a changed record passes with a
 * chance of 2^-64), and refused otherwise, as before.  A batch that a
 * readmit unit, an exclusion or a demotion concerns keeps its manifest:
 * they name its records by their whole fingerprints.
 *
 * The reduction of a batch of a partition the call owns, in the caller's
 * transaction:
 *	1. write the reduced manifest beside the manifest, fsynced (it goes
 *	   again if the transaction aborts);
 *	2. set the batch's reduced_at and its manifest checks to the reduced
 *	   manifest's;
 *	3. once that has committed, remove the manifest (fileundo.c).
 * A crash before the commit leaves a reduced manifest of a batch the
 * catalog does not call reduced; a crash after it leaves the manifest of a
 * reduced batch.  recover() removes the one that is not the batch's
 * (recover.c), and an adoption from disk prefers the whole manifest.
 *
 * closed_only => true expires only batches each of whose business dates
 * has a closing certificate in effect (kafka_lake.date_closings, status
 * 'closed'; a date reopened since is not closed); a batch without dates is
 * then kept.
 *
 * IDENTIFICATION
 *	  src/lifecycle/expire.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "base/args.h"
#include "base/compat.h"
#include "base/fault.h"
#include "format/batch_format.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/catalog_lifecycle.h"
#include "kl_catalog/locks.h"
#include "landing/batch_read.h"
#include "landing/fileundo.h"
#include "landing/landing_files.h"
#include "landing/recover.h"
#include "landing/source_lock.h"
#include "lifecycle/expire.h"

PG_FUNCTION_INFO_V1(kafka_lake_expire);
PG_FUNCTION_INFO_V1(kafka_lake_set_dedupe_horizon);

/*
 * kl_expire_limit
 *		The first business date that stays: before, or the day (in the
 *		session's time zone) that older_than before now falls on.
 */
static DateADT
kl_expire_limit(FunctionCallInfo fcinfo)
{
	bool		has_before = !PG_ARGISNULL(1);
	bool		has_older = !PG_ARGISNULL(2);

	if (!has_before && !has_older)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("before or older_than must not be null"),
				 errhint("Say what expires, for example kafka_lake.expire('machine_events', older_than => '90 days') or kafka_lake.expire('machine_events', before => '2026-01-01').")));
	if (has_before && has_older)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("before and older_than cannot both be given"),
				 errhint("Give one limit: a date (before) or an age (older_than).")));
	if (has_before)
	{
		DateADT		before = PG_GETARG_DATEADT(1);

		if (DATE_NOT_FINITE(before))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("before must be a finite date"),
					 errhint("Business dates older than this date expire.")));
		return before;
	}
	{
		Interval   *age = PG_GETARG_INTERVAL_P(2);
		Interval	zero = {0};
		Datum		when;

		if (DatumGetBool(DirectFunctionCall2(interval_lt, IntervalPGetDatum(age),
											 IntervalPGetDatum(&zero))))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("older_than must not be negative"),
					 errhint("Business dates older than now minus this interval expire, for example '90 days'.")));
		when = DirectFunctionCall2(timestamptz_mi_interval,
								   TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
								   IntervalPGetDatum(age));
		return DatumGetDateADT(DirectFunctionCall1(timestamptz_date, when));
	}
}

/*
 * kl_expire_batch
 *		Steps 1 to 3 of the file header for one batch of a partition the
 *		caller owns.  false when its directory is gone (verify() reports it).
 */
static bool
kl_expire_batch(KlSource *src, const KlBatch *b, TimestampTz now)
{
	char	   *dir = psprintf("%s/%s%s", kl_batch_partition_dir(src, b),
							   KL_BATCH_DIR_PREFIX(b), b->batch_id);
	struct stat st;

	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
	{
		ereport(WARNING,
				(errmsg("%s %s of source \"%s\" is not expired: its directory is missing",
						b->readmit ? "readmit unit" : "batch", b->batch_id, src->source),
				 errhint("Run kafka_lake.verify('%s'): it says what to do.", src->source)));
		return false;
	}
	/* what lies there and is not a marker is refused, never removed at abort */
	kl_check_expired_marker_slot(dir);
	kl_undo_remove_at_abort(kl_expired_marker_path(dir), false, "expire()");
	kl_write_expired_marker(dir, b->batch_id, now);
	kl_catalog_mark_expired(src, b->batch_id, now);
	for (int f = 0; f < KL_NFILES; f++)
		kl_undo_remove_file_at_commit(psprintf("%s/%s", dir, kl_batch_file(b, f)), "expire()");
	return true;
}

/*
 * kl_reduce_batch
 *		The reduction of an expired batch's manifest (REDUCTION in the file
 *		header), for a batch of a partition the caller owns.  *saved gets
 *		the bytes it gives back.  false, with a WARNING, when its manifest
 *		cannot be read as the catalog recorded it (verify() says why).
 */
static bool
kl_reduce_batch(KlSource *src, KlBatch *b, TimestampTz now, int64 *saved)
{
	char	   *dir = psprintf("%s/%s%s", kl_batch_partition_dir(src, b),
							   KL_BATCH_DIR_PREFIX(b), b->batch_id);
	KlBatch		mb;
	KlBatch		reduced;
	KlRecord   *recs;
	int			n;
	size_t		len;
	char	   *problem = kl_read_checked_entries(dir, b, &mb, &recs, &n, &len);
	char	   *doc;
	const char *bytes;
	size_t		nbytes;

	if (problem != NULL)
	{
		ereport(WARNING,
				(errmsg("the manifest of expired batch %s of source \"%s\" is not reduced: %s",
						b->batch_id, src->source, problem),
				 errhint("Run kafka_lake.verify('%s'): it says what to do.", src->source)));
		return false;
	}
	doc = kl_manifest_reduced(&mb, recs, n, b->manifest_sha256);
	nbytes = strlen(doc);
	bytes = b->compression == KL_COMPRESS_ZSTD ? kl_zstd_frame(doc, nbytes, &nbytes) : doc;

	/* 1. the reduced manifest, durable, and gone again if this aborts */
	reduced = *b;
	reduced.reduced = true;
	kl_manifest_checks(bytes, nbytes, &reduced);
	kl_undo_remove_at_abort(psprintf("%s/%s", dir, kl_batch_file(&reduced, KL_NFILES)), false, "expire()");
	kl_write_batch_dir_file(dir, kl_batch_file(&reduced, KL_NFILES), bytes, nbytes);
	kl_fault_point("reduce_after_write");
	/* 2. the catalog: reduced, with the reduced manifest's checks */
	kl_catalog_mark_reduced(src, b->batch_id, now, &reduced);
	kl_fault_point("reduce_after_catalog");
	/* 3. the manifest it replaces goes at commit */
	if (kl_fault_take("reduce_before_remove"))
		ereport(WARNING,
				(errmsg("kafka_lake fault injection: reduce_before_remove"),
				 errdetail("The manifest of batch %s stays beside its reduced one, as a crash after the commit would leave it; recovery removes it.",
						   b->batch_id)));
	else
	{
		if (kl_fault_pausing("reduce_before_remove"))
			kl_undo_pause_at_commit("reduce_before_remove");
		kl_undo_remove_file_at_commit(psprintf("%s/%s", dir, kl_batch_file(b, KL_NFILES)), "expire()");
	}
	*saved = (b->manifest_bytes >= 0 ? b->manifest_bytes : (int64) len) - (int64) nbytes;
	return true;
}

/*
 * kafka_lake_expire
 *		expire(source, before, older_than, closed_only): one row per batch
 *		expired, and per partition another session owns ("locked").
 */
Datum
kafka_lake_expire(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KlSource   *source;
	DateADT		limit;
	bool		closed_only = PG_ARGISNULL(3) ? false : PG_GETARG_BOOL(3);
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	List	   *owned;			/* (topic index, partition) of the partitions locked */
	ListCell   *oc;

	/* the arguments first, then the source */
	kl_check_not_null(fcinfo, 0, "source", NULL);
	limit = kl_expire_limit(fcinfo);
	source = kl_source_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)));

	kl_source_lock(source);
	kl_init_materialized_srf(fcinfo);
	owned = NIL;
	for (int t = 0; t < source->ntopics; t++)
	{
		KlSource   *src = kl_source_topic(source, t);
		List	   *partitions = kl_catalog_partitions(src);
		ListCell   *cell;

		list_sort(partitions, list_int_cmp);
		foreach(cell, partitions)
		{
			int32		p = lfirst_int(cell);
			ListCell   *bc;
			Datum		values[8] = {0};
			bool		nulls[8] = {0};
			char		kept[KL_BATCH_ID_LEN + 1] = "";

			values[0] = CStringGetTextDatum(src->topic);
			values[1] = Int32GetDatum(p);
			if (!kl_try_lock_partition(src, p))
			{
				values[3] = CStringGetTextDatum("locked");
				nulls[2] = nulls[4] = nulls[5] = nulls[6] = nulls[7] = true;
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
				continue;
			}
			kl_recover_partition(src, p, NULL, NULL);
			owned = lappend(owned, list_make2_int(t, p));
			foreach(bc, kl_catalog_expirable(src, p, limit, closed_only))
			{
				KlBatch    *b = lfirst(bc);

				CHECK_FOR_INTERRUPTS();
				/* the units of a batch that did not expire stay with it */
				if (b->readmit && strcmp(b->readmit_of, kept) == 0)
					continue;
				if (!kl_expire_batch(src, b, now))
				{
					if (!b->readmit)
						strlcpy(kept, b->batch_id, sizeof(kept));
					continue;
				}
				memset(nulls, 0, sizeof(nulls));
				values[2] = CStringGetTextDatum(b->batch_id);
				values[3] = CStringGetTextDatum("expired");
				values[4] = Int32GetDatum(b->record_count);
				values[5] = DateADTGetDatum(b->min_date);
				values[6] = DateADTGetDatum(b->max_date);
				nulls[5] = nulls[6] = !b->has_dates;
				values[7] = Int64GetDatum(b->files[0].bytes + b->files[1].bytes + b->files[2].bytes);
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			}
		}
	}

	/* the dedupe horizon: event_ids of closed dates past it */
	if (kl_catalog_has_horizon())
	{
		DateADT		lo,
					hi;
		int64		pruned = kl_catalog_prune_event_ids(source, now, &lo, &hi);

		if (pruned > 0)
		{
			Datum		values[8] = {0};
			/* of the source: of its topic, or of none of its several */
			bool		nulls[8] = {source->ntopics > 1, true, true, false, false, false, false, true};

			values[0] = CStringGetTextDatum(source->topic);
			values[3] = CStringGetTextDatum("event_ids_pruned");
			values[4] = Int32GetDatum((int32) Min(pruned, PG_INT32_MAX));
			values[5] = DateADTGetDatum(lo);
			values[6] = DateADTGetDatum(hi);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}

	/* the manifests of expired batches whose event_ids are gone: reduced */
	foreach(oc, owned)
	{
		KlSource   *src = kl_source_topic(source, linitial_int(lfirst(oc)));
		int32		p = lsecond_int(lfirst(oc));
		ListCell   *bc;

		foreach(bc, kl_catalog_reducible(src, p, now))
		{
			KlBounds	bounds;
			int64		total;
			List	   *found;
			KlBatch    *b;
			int64		saved;
			Datum		values[8] = {0};
			bool		nulls[8] = {0};

			CHECK_FOR_INTERRUPTS();
			kl_bounds_init(&bounds);
			bounds.partition_lo = bounds.partition_hi = p;
			bounds.topic = src->topic;
			bounds.batch_id = lfirst(bc);
			found = kl_catalog_scan_batches(src, &bounds, 0, &total);
			if (found == NIL)
				continue;
			b = linitial(found);
			if (!kl_reduce_batch(src, b, now, &saved))
				continue;
			values[0] = CStringGetTextDatum(src->topic);
			values[1] = Int32GetDatum(p);
			values[2] = CStringGetTextDatum(b->batch_id);
			values[3] = CStringGetTextDatum("reduced");
			values[4] = Int32GetDatum(b->record_count);
			values[5] = DateADTGetDatum(b->min_date);
			values[6] = DateADTGetDatum(b->max_date);
			nulls[5] = nulls[6] = !b->has_dates;
			values[7] = Int64GetDatum(saved);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}

/*
 * kafka_lake_set_dedupe_horizon
 *		set_dedupe_horizon(source, horizon): keep the source's accepted
 *		event_ids for that long, by business date (NULL: for good).  The
 *		event_ids go at the next expire(), of closed dates only.
 */
Datum
kafka_lake_set_dedupe_horizon(PG_FUNCTION_ARGS)
{
	KlSource   *src;
	Interval   *horizon = PG_ARGISNULL(1) ? NULL : PG_GETARG_INTERVAL_P(1);

	kl_check_not_null(fcinfo, 0, "source", NULL);
	if (horizon != NULL &&
		(horizon->month < 0 || horizon->day < 0 || horizon->time < 0 ||
		 (horizon->month == 0 && horizon->day == 0 && horizon->time == 0)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dedupe_horizon must be positive"),
				 errhint("For example '90 days'; NULL keeps every event_id for good.")));
	src = kl_source_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	kl_source_lock(src);
	kl_catalog_set_dedupe_horizon(src, horizon);
	PG_RETURN_VOID();
}
