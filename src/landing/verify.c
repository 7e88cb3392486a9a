/*-------------------------------------------------------------------------
 *
 * verify.c
 *	  kafka_lake.verify(source): re-read every batch of a source and check it
 *	  against its manifest and the catalog; one row per problem, each with
 *	  what to do about it.  It changes nothing on disk.
 *
 * For every batch the catalog lists: its directory is there and a
 * directory, each file is a regular file with the size, line count,
 * CRC-32C and SHA-256 the catalog's copy of the manifest records
 * (kl_check_batch_files, batch_read.c), and manifest.json has the SHA-256
 * the catalog recorded.  For every batch= entry on disk the catalog does not
 * know: a stray entry (it holds no landed data), a batch recover() would
 * adopt (checked exactly as adoption checks it, recover.c), or one it
 * refuses (and why).  Abandoned staging directories are listed too.
 *
 * The action of each row is a procedure that works: restore the batch from
 * a backup (a batch never changes, so any copy of it is good), or move it
 * out of the landing directory, run recover() (which forgets it) and land
 * its offsets again with replay().  A batch landed by 1.0 whose manifest is
 * proven by its SHA-256 gets its size and CRC-32C recorded, so that scans
 * check it as cheaply as the others: the one thing verify() writes, and only
 * to the catalog.
 *
 * Expired batches (expire.c) are checked for what they keep: the manifest
 * (by SHA-256) and the EXPIRED marker; record files still there are an
 * unfinished expiry, which recover() finishes, never damage.  What a
 * compaction left on disk (a replaced batch after a crash, a compacted
 * batch that never committed: recover.c) is reported as
 * compaction_leftover, which recover() removes.  So once recover() has
 * run, verify() is clean after any crash.
 *
 * IDENTIFICATION
 *	  src/landing/verify.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/tuplestore.h"

#include "base/compat.h"
#include "base/digest.h"
#include "format/batch_format.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/catalog_lifecycle.h"
#include "landing/batch_read.h"
#include "landing/exclusion_files.h"
#include "landing/landing_files.h"
#include "landing/recover.h"

PG_FUNCTION_INFO_V1(kafka_lake_verify);
PG_FUNCTION_INFO_V1(kafka_lake_verify_1_1);

/*
 * kl_emit_verify_row
 *		One problem found by verify(), with what to do about it (the 1.0
 *		result type has no action column: tuplestore_putvalues takes as many
 *		values as the result has columns).
 */
static void
kl_emit_verify_row(ReturnSetInfo *rsinfo, const char *batch_id, KlSource *src,
				   int32 partition, const char *file, const char *problem, const char *detail,
				   const char *action)
{
	Datum		values[7];
	bool		nulls[7] = {0};

	values[0] = batch_id ? CStringGetTextDatum(batch_id) : (Datum) 0;
	nulls[0] = (batch_id == NULL);
	values[1] = CStringGetTextDatum(src->topic);
	values[2] = Int32GetDatum(partition);
	nulls[2] = (partition < 0); /* the source's, not one partition's */
	values[3] = file ? CStringGetTextDatum(file) : (Datum) 0;
	nulls[3] = (file == NULL);
	values[4] = CStringGetTextDatum(problem);
	values[5] = detail ? CStringGetTextDatum(detail) : (Datum) 0;
	nulls[5] = (detail == NULL);
	values[6] = CStringGetTextDatum(action);
	Assert(rsinfo->setDesc->natts <= 7);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * kl_damaged_action
 *		What to do about a batch whose files disagree with its manifest or
 *		the catalog: the procedure that lands it again.
 */
static char *
kl_damaged_action(KlSource *src, const char *dir, const KlBatch *b)
{
	return psprintf("Restore %s from a backup (a batch never changes: any copy of it is good), "
					"or move %s out of the landing directory, run kafka_lake.recover('%s'), "
					"then %s to land offsets %lld to %lld again from the broker.",
					dir, dir, src->source, kl_replay_call(src, b->partition, b->first_offset, b->last_offset),
					(long long) b->first_offset, (long long) b->last_offset);
}

/*
 * kl_letter_at
 *		Does some batch of the catalog give the coordinate this letter?
 */
static bool
kl_letter_at(KlSource *src, int32 partition, int64 offset, char letter, char *found)
{
	KlBounds	bounds;
	int64		total;
	ListCell   *cell;

	*found = '\0';
	kl_bounds_init(&bounds);
	bounds.partition_lo = bounds.partition_hi = partition;
	bounds.topic = src->topic;
	bounds.offset_lo = bounds.offset_hi = offset;
	foreach(cell, kl_catalog_scan_batches(src, &bounds, 0, &total))
	{
		KlBatch    *b = lfirst(cell);
		char		l;

		if (kl_batch_coordinate_index(b, offset) < 0)
			continue;
		l = kl_catalog_letter(src, b->batch_id, offset, false);
		if (*found == '\0' || l == letter)
			*found = l;
		if (l == letter)
			return true;
	}
	return false;
}

/*
 * kl_verify_exclusions
 *		The exclusion units (exclusion_files.c) against the catalog: each
 *		unit the catalog records is on disk with the SHA-256 it recorded,
 *		each unit on disk is in the catalog, and each coordinate a unit
 *		changed has the letter the last unit that changed it gave it.
 */
static void
kl_verify_exclusions(ReturnSetInfo *rsinfo, KlSource *src)
{
	List	   *known = kl_catalog_exclusions(src);
	ListCell   *cell;
	List	   *last = NIL;		/* KlExclusionChange: the newest per coordinate */

	foreach(cell, known)
	{
		KlExclusion *x = lfirst(cell);
		char	   *dir = kl_exclusion_dir(src, x->exclusion_id);
		char	   *file = psprintf("%s/%s%s/%s", KL_EXCLUSIONS_DIR, KL_EXCLUSION_PREFIX,
									x->exclusion_id, KL_EXCLUSION_FILE);
		KlExclusion disk;
		char	   *problem = NULL;

		CHECK_FOR_INTERRUPTS();
		if (!kl_read_exclusion_unit(dir, &disk, &problem))
		{
			if (disk.manifest_bytes > 0 && strcmp(disk.manifest_sha256, x->manifest_sha256) != 0)
				kl_emit_verify_row(rsinfo, x->changes[0].batch_id, src, x->changes[0].partition, file,
								   "checksum_mismatch",
								   psprintf("%s has SHA-256 %s, the catalog recorded %s",
											KL_EXCLUSION_FILE, disk.manifest_sha256, x->manifest_sha256),
								   "The exclusion unit was changed: restore it from a backup of the landing directory.");
			else
				kl_emit_verify_row(rsinfo, x->changes[0].batch_id, src, x->changes[0].partition, file,
								   "missing_file", problem,
								   "The exclusion unit is gone or damaged: restore it from a backup of the landing directory; the catalog still applies it.");
		}
		else if (strcmp(disk.manifest_sha256, x->manifest_sha256) != 0)
			kl_emit_verify_row(rsinfo, x->changes[0].batch_id, src, x->changes[0].partition, file,
							   "checksum_mismatch",
							   psprintf("%s has SHA-256 %s, the catalog recorded %s",
										KL_EXCLUSION_FILE, disk.manifest_sha256, x->manifest_sha256),
							   "The exclusion unit was changed: restore it from a backup of the landing directory.");
		for (int c = 0; c < x->nchanges; c++)
		{
			ListCell   *lc;
			bool		replaced = false;

			foreach(lc, last)
			{
				KlExclusionChange *ch = lfirst(lc);

				if (ch->partition == x->changes[c].partition && ch->offset == x->changes[c].offset)
				{
					*ch = x->changes[c];
					replaced = true;
				}
			}
			if (!replaced)
			{
				KlExclusionChange *ch = palloc(sizeof(KlExclusionChange));

				*ch = x->changes[c];
				last = lappend(last, ch);
			}
		}
	}
	foreach(cell, last)
	{
		KlExclusionChange *ch = lfirst(cell);
		char		found;

		CHECK_FOR_INTERRUPTS();
		if (!kl_letter_at(src, ch->partition, ch->offset, ch->to, &found))
			kl_emit_verify_row(rsinfo, ch->batch_id, src, ch->partition, NULL, "exclusion_mismatch",
							   psprintf("offset %lld has the status letter '%c' in the catalog; its last exclusion unit gave it '%c'",
										(long long) ch->offset, found ? found : '?', ch->to),
							   psprintf("Run kafka_lake.recover('%s'); if the row stays, the catalog was edited: restore it from a dump.",
										src->source));
	}

	/* units on disk the catalog lacks */
	foreach(cell, kl_list_dir(kl_exclusions_dir(src), KL_EXCLUSION_PREFIX))
	{
		const char *name = lfirst(cell);
		bool		is_known = false;
		ListCell   *kc;

		foreach(kc, known)
			is_known |= (strcmp(((KlExclusion *) lfirst(kc))->exclusion_id,
								name + strlen(KL_EXCLUSION_PREFIX)) == 0);
		if (!is_known)
			kl_emit_verify_row(rsinfo, NULL, src, -1, psprintf("%s/%s", KL_EXCLUSIONS_DIR, name),
							   "unknown_exclusion", "an exclusion unit the catalog does not record",
							   psprintf("Run kafka_lake.recover('%s'): it adopts the unit, or removes it if it does not fit the catalog.",
										src->source));
	}
	foreach(cell, kl_list_dir(psprintf("%s/.staging", src->dir), KL_EXCLUSION_PREFIX))
		kl_emit_verify_row(rsinfo, NULL, src, -1, (char *) lfirst(cell), "abandoned_staging",
						   "an unfinished exclusion unit",
						   psprintf("Run kafka_lake.recover('%s'): it removes it.", src->source));
}

/*
 * kl_verify_unknown
 *		One batch= entry of a partition directory that the catalog does not
 *		know: a stray entry, a batch recover() adopts, or one it refuses.
 *		The check runs in a subtransaction: it reads and checks the batch as
 *		adoption would, and its ERROR becomes the problem row.
 */
static void
kl_verify_unknown(ReturnSetInfo *rsinfo, KlSource *src, int32 partition, const char *part_dir,
				  const char *name, List *replaced)
{
	MemoryContext caller = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	char	   *reason = kl_stray_reason(part_dir, name);
	char	   *dir = psprintf("%s/%s", part_dir, name);
	ErrorData  *edata = NULL;
	char	   *other;
	KlBatch		compacted;

	if (reason != NULL)
	{
		kl_emit_verify_row(rsinfo, NULL, src, partition, name, "stray_entry",
						   psprintf("%s/%s: %s", part_dir, name, reason),
						   psprintf("It is not a batch and holds no landed data: move it out of the partition directory (%s).",
									part_dir));
		return;
	}

	/* what a compaction left (compact.c, recover.c) */
	switch (kl_classify_unknown(part_dir, name, replaced, &other, &compacted))
	{
		case KL_UNKNOWN_PENDING:
			return;
		case KL_UNKNOWN_REPLACED:
			kl_emit_verify_row(rsinfo, name + strlen("batch="), src, partition, NULL,
							   "compaction_leftover",
							   psprintf("a committed compaction replaced it with batch %s, which holds its records", other),
							   psprintf("Run kafka_lake.recover('%s'): it removes the directory.", src->source));
			return;
		case KL_UNKNOWN_ORPHANED:
			kl_emit_verify_row(rsinfo, name + strlen("batch="), src, partition, NULL,
							   "compaction_leftover",
							   psprintf("a committed compaction replaced it with batch %s, whose directory is missing", other),
							   psprintf("Restore batch %s from a backup, or run kafka_lake.recover('%s'): it forgets the missing batch and adopts this one.",
										other, src->source));
			return;
		case KL_UNKNOWN_UNCOMMITTED:
			kl_emit_verify_row(rsinfo, name + strlen("batch="), src, partition, NULL,
							   "compaction_leftover",
							   psprintf("a compacted batch whose compaction did not commit; the %d batches it would replace hold its records",
										compacted.ncompacted_from),
							   psprintf("Run kafka_lake.recover('%s'): it removes the directory.", src->source));
			return;
		case KL_UNKNOWN_COMPLETE:
		case KL_UNKNOWN_ADOPTABLE:
			break;
	}

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller);
	PG_TRY();
	{
		KlBatch b;
		KlRecord   *recs;
		int			n;

		kl_check_adoptable(src, partition, dir, name, &b, &recs, &n);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(caller);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller);
		CurrentResourceOwner = owner;
		if (edata->sqlerrcode != ERRCODE_DATA_CORRUPTED)
			ReThrowError(edata);
	}
	PG_END_TRY();

	if (edata == NULL)
		kl_emit_verify_row(rsinfo, strchr(name, '=') + 1, src, partition, NULL, "not_in_catalog",
						   "a complete batch the catalog does not know",
						   psprintf("Run kafka_lake.recover('%s'): it adopts the batch.", src->source));
	else
		kl_emit_verify_row(rsinfo, strchr(name, '=') + 1, src, partition, NULL, "not_adoptable",
						   edata->detail ? psprintf("%s: %s", edata->message, edata->detail) :
						   edata->message,
						   edata->hint);
}

/*
 * kl_verify_disk
 *		verify() of what is on disk but not in the catalog (known_dirs: the
 *		catalog's batch directories), for one topic of the source.
 */
static void
kl_verify_disk(ReturnSetInfo *rsinfo, KlSource *src, List *known_dirs)
{
	ListCell   *cell;

	foreach(cell, kl_disk_partitions(src))
	{
		int32		p = lfirst_int(cell);
		char	   *part_dir = kl_partition_dir(src, p);
		ListCell   *dc;
		char	   *marker = kl_staging_marker(src, p);
		List	   *replaced = kl_catalog_replaced_batches(src, p);

		/* batches, and readmit units (readmit.c) */
		foreach(dc, list_concat(kl_list_dir(part_dir, "batch="), kl_list_dir(part_dir, "readmit=")))
		{
			char	   *dir = psprintf("%s/%s", part_dir, (char *) lfirst(dc));
			bool		found = false;
			ListCell   *kc;

			CHECK_FOR_INTERRUPTS();
			foreach(kc, known_dirs)
			{
				if (strcmp((char *) lfirst(kc), dir) == 0)
				{
					found = true;
					break;
				}
			}
			if (!found)
				kl_verify_unknown(rsinfo, src, p, part_dir, (char *) lfirst(dc), replaced);
		}
		foreach(dc, kl_list_dir(psprintf("%s/.staging", src->dir), "batch="))
		{
			if (strstr((char *) lfirst(dc), marker))
				kl_emit_verify_row(rsinfo, NULL, src, p, (char *) lfirst(dc), "abandoned_staging",
								   "an unfinished batch",
								   psprintf("Run kafka_lake.recover('%s'): it removes the unfinished batches of partitions no session is landing.",
											src->source));
		}
	}
}

/*
 * kl_verify
 *		verify(source): re-read every batch and compare it with its manifest
 *		and the catalog; one row per problem, each with what to do.
 */
static Datum
kl_verify(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KlSource   *source = kl_source_arg(fcinfo, 0);
	KlSource   *src = source;
	MemoryContext per_batch;
	KlBounds	bounds;
	int64		total;
	List	   *batches;
	List	   *known_dirs = NIL;
	ListCell   *cell;
	bool		landing_present = kl_landing_present(src);
	bool		has_manifest_checks = kl_catalog_has_manifest_checks();

	kl_init_materialized_srf(fcinfo);

	/* the catalog's view of every batch */
	kl_bounds_init(&bounds);
	batches = kl_catalog_scan_batches(src, &bounds, KL_BATCH_WANT_SHA256, &total);

	per_batch = AllocSetContextCreate(CurrentMemoryContext, "kafka_lake verify",
									  ALLOCSET_DEFAULT_SIZES);
	foreach(cell, batches)
	{
		KlBatch *cat = lfirst(cell);
		KlSource   *src = kl_source_topic(source, Max(cat->topic_index, 0));
		char	   *dir = psprintf("%s/%s%s", kl_batch_partition_dir(src, cat),
								   KL_BATCH_DIR_PREFIX(cat), cat->batch_id);
		MemoryContext old;
		struct stat st;
		int			bad;
		char	   *problem;

		known_dirs = lappend(known_dirs, dir);
		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(per_batch);
		old = MemoryContextSwitchTo(per_batch);

		if (lstat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
		{
			/* something else in its place: it must go before the batch can come back */
			char	   *detail = psprintf("%s is not a directory (it is %s)", dir,
										  S_ISREG(st.st_mode) ? "a regular file" :
										  kl_file_kind(st.st_mode));
			char	   *action = kl_damaged_action(src, dir, cat);

			MemoryContextSwitchTo(old);
			kl_emit_verify_row(rsinfo, cat->batch_id, src, cat->partition, NULL,
							   "missing_batch", detail, action);
			continue;
		}
		if (lstat(dir, &st) != 0)
		{
			char	   *detail = psprintf("%s: %m", dir);
			char	   *action = landing_present ?
				psprintf("Restore %s from a backup, or run kafka_lake.recover('%s'), "
						 "then %s: recover() forgets the batch, "
						 "replay() lands offsets %lld to %lld again from the broker.",
						 dir, src->source,
						 kl_replay_call(src, cat->partition, cat->first_offset, cat->last_offset),
						 (long long) cat->first_offset, (long long) cat->last_offset) :
				psprintf("The landing directory %s of the source, or its marker, is missing: mount or restore it "
						 "(recover() forgets no batch while it is missing).", src->dir);

			MemoryContextSwitchTo(old);
			kl_emit_verify_row(rsinfo, cat->batch_id, src, cat->partition, NULL,
							   "missing_batch", detail, action);
			continue;
		}
		if (cat->expired)
		{
			/* expired: its manifest is left, and the marker that says why */
			for (int f = 0; f < KL_NFILES; f++)
			{
				if (lstat(psprintf("%s/%s", dir, kl_batch_file(cat, f)), &st) == 0)
				{
					MemoryContextSwitchTo(old);
					kl_emit_verify_row(rsinfo, cat->batch_id, src, cat->partition, kl_batch_file(cat, f),
									   "expiry_unfinished",
									   "the batch expired, but this record file is still there",
									   psprintf("Run kafka_lake.recover('%s'): it removes the record files of expired batches.",
												src->source));
					MemoryContextSwitchTo(per_batch);
				}
			}
			/* and one manifest: the reduced one once the catalog says so (expire.c) */
			for (int c = 0; c < 2; c++)
			{
				int			compression = c == 0 ? KL_COMPRESS_NONE : KL_COMPRESS_ZSTD;
				const char *other = cat->reduced ? kl_file_name(compression, KL_NFILES) :
					kl_reduced_manifest_name(compression);

				if (lstat(psprintf("%s/%s", dir, other), &st) == 0)
				{
					MemoryContextSwitchTo(old);
					kl_emit_verify_row(rsinfo, cat->batch_id, src, cat->partition, other,
									   "expiry_unfinished",
									   cat->reduced ?
									   "the batch's manifest was reduced, but the manifest it replaced is still there" :
									   "the batch carries a reduced manifest, but its reduction did not commit",
									   psprintf("Run kafka_lake.recover('%s'): it removes the manifest that is not the batch's.",
												src->source));
					MemoryContextSwitchTo(per_batch);
				}
			}
			if (!kl_has_expired_marker(dir))
			{
				MemoryContextSwitchTo(old);
				kl_emit_verify_row(rsinfo, cat->batch_id, src, cat->partition, KL_EXPIRED_MARKER,
								   "missing_file",
								   psprintf("the batch expired, but %s has no %s marker", dir, KL_EXPIRED_MARKER),
								   psprintf("Run kafka_lake.recover('%s'): it writes the marker again (without it, a catalog that lost the batch could not adopt it).",
											src->source));
				MemoryContextSwitchTo(per_batch);
			}
		}
		else
		{
			/* the files against the catalog's copy of their checks */
			problem = kl_check_batch_files(dir, cat, true, &bad);
			if (problem)
			{
				char	   *colon = strchr(problem, ':');
				char	   *action = kl_damaged_action(src, dir, cat);

				MemoryContextSwitchTo(old);
				kl_emit_verify_row(rsinfo, cat->batch_id, src, cat->partition,
								   bad >= 0 ? kl_batch_file(cat, bad) : NULL,
								   pnstrdup(problem, colon - problem), colon + 2, action);
				continue;
			}
			if (kl_has_expired_marker(dir))
			{
				MemoryContextSwitchTo(old);
				kl_emit_verify_row(rsinfo, cat->batch_id, src, cat->partition, KL_EXPIRED_MARKER,
								   "expiry_unfinished",
								   "the batch carries an EXPIRED marker, but its expiry did not commit: the batch is whole",
								   psprintf("Run kafka_lake.recover('%s'): it removes the marker.", src->source));
				MemoryContextSwitchTo(per_batch);
			}
		}
		/* the manifest against the catalog */
		{
			size_t		len;
			const char *not_regular;
			const char *mname = kl_batch_file(cat, KL_NFILES);
			char	   *text = kl_read_whole_file(psprintf("%s/%s", dir, mname), &len,
												  &not_regular);
			uint8		digest[KL_SHA256_LEN];
			char		hex[KL_SHA256_HEX_LEN + 1];

			if (text == NULL)
			{
				char	   *detail = psprintf("%s %s", mname, kl_landed_open_problem(not_regular));
				char	   *action = kl_damaged_action(src, dir, cat);

				MemoryContextSwitchTo(old);
				kl_emit_verify_row(rsinfo, cat->batch_id, src, cat->partition, mname,
								   "missing_file", detail, action);
				continue;
			}
			kl_sha256(text, len, digest);
			kl_hex(digest, KL_SHA256_LEN, hex);
			if (strcmp(hex, cat->manifest_sha256) != 0)
			{
				char	   *action = kl_damaged_action(src, dir, cat);

				MemoryContextSwitchTo(old);
				kl_emit_verify_row(rsinfo, cat->batch_id, src, cat->partition, mname,
								   "checksum_mismatch",
								   psprintf("%s has SHA-256 %s, the catalog recorded %s",
											mname, hex, cat->manifest_sha256), action);
				continue;
			}

			/*
			 * A manifest landed by 1.0 is now proven by its SHA-256: record
			 * its size and CRC-32C, so that scans check it as cheaply as
			 * the others.
			 */
			if (has_manifest_checks && cat->manifest_bytes < 0)
				kl_catalog_record_manifest_checks(src, cat->batch_id, (int64) len,
												  kl_crc32c_final(kl_crc32c(KL_CRC32C_INIT, text, len)));
		}
		MemoryContextSwitchTo(old);
	}

	/* what is on disk but not in the catalog, topic by topic */
	for (int t = 0; t < source->ntopics; t++)
		kl_verify_disk(rsinfo, kl_source_topic(source, t), known_dirs);
	if (kl_catalog_has_exclusions())
		kl_verify_exclusions(rsinfo, source);
	return (Datum) 0;
}

/*
 * kafka_lake_verify
 *		verify(source) as version 1.0 declares it: the problem rows without
 *		their action.
 */
Datum
kafka_lake_verify(PG_FUNCTION_ARGS)
{
	return kl_verify(fcinfo);
}

/*
 * kafka_lake_verify_1_1
 *		verify(source) from version 1.1 on: each problem row says what to do
 *		(column action); a NULL source is an error, not "no problem".
 */
Datum
kafka_lake_verify_1_1(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("source must not be null"),
				 errhint("Name a source of kafka_lake.sources.")));
	return kl_verify(fcinfo);
}
