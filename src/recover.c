/*-------------------------------------------------------------------------
 *
 * recover.c
 *	  Making the catalog match the disk: kafka_lake.recover(source), and
 *	  the recovery of each partition that land(), replay() and the bridge
 *	  own before they use it.  (verify.c checks that the disk still matches
 *	  the manifests and the catalog.)
 *
 * The disk is the source of truth (I5).  A batch directory under
 * topic=.../partition=... is complete by construction: it appears by one
 * rename after everything in it was fsynced (landing_files.c).  So recovery
 * needs no journal:
 *	- a batch directory the catalog does not know was landed by a
 *	  transaction that did not commit (an ERROR after the rename, a cancel,
 *	  a killed backend, a ROLLBACK): it is checked in full against its
 *	  manifest and adopted, with landed_by = 'recover';
 *	- a staging directory of a partition we own belongs to nobody (its
 *	  writer's transaction ended, or the lock would still be held): it is
 *	  removed.
 * land(), replay() and the bridge run this for each partition they own
 * before anything else; kafka_lake.recover() runs it for the whole source.
 *
 * The other way round, only kafka_lake.recover() acts: a batch the catalog
 * lists whose directory is gone (a damaged batch moved away, a deleted one)
 * is forgotten, with the event_ids it reserved, so that replay() can land
 * its offsets again from the broker.  That is never done on the way by
 * land(), and not at all while the source's directory or its marker is
 * missing: a landing directory that is not mounted must not empty the
 * catalog.
 *
 * What lies in a partition directory under a batch's name but cannot be a
 * batch (a file, a FIFO, an empty directory, a name that is no batch id)
 * was not made by a rename of a complete staging directory, so it holds no
 * landed data: it never stops a partition; it is reported (a WARNING,
 * "skipped_stray", verify()'s "stray_entry") and left for the operator.  A
 * non-empty directory under a batch id that cannot be adopted may be a
 * damaged batch: that stops the partition with XX001, and the hint (and
 * verify()'s "not_adoptable" row) says what works: move it away, replay its
 * offsets.  verify() says what to do for every problem it reports.
 *
 * Nothing of the landing is opened unless it is a regular file, and open(2)
 * never blocks (kl_open_landed).
 *
 * Readmit units (readmit.c) are recovered the same way: a readmit=
 * directory the catalog lacks is checked in full and adopted, provided its
 * batch is in the catalog with the unit's records still quarantined (same
 * fingerprints); its originals get their 'R' again.  Forgetting a batch
 * forgets its units; forgetting a unit whose directory is gone quarantines
 * its records again (readmit() can re-admit them).
 *
 * An adopted batch may claim as accepted an event_id that another batch
 * accepted meanwhile (possible only when the adopted batch's transaction
 * aborted while a concurrent session waited on its event_id).  The file is
 * immutable, so the catalog records that coordinate as 'D': accepted on
 * disk, a duplicate for every reader (the foreign table and the bridge skip
 * it), and recover() reports it.  An event_id that accepted_events holds at
 * the adopted coordinate itself is that same event (the catalog lost the
 * batch's row but kept its reservation): it stays accepted.
 *
 * IDENTIFICATION
 *	  src/recover.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "batch_format.h"
#include "batch_read.h"
#include "catalog.h"
#include "compat.h"
#include "contract_catalog.h"
#include "digest.h"
#include "landing_files.h"
#include "locks.h"
#include "recover.h"
#include "source.h"

PG_FUNCTION_INFO_V1(kafka_lake_recover);

/*
 * kl_emit_recover_row
 *		One row of recover().
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
	if (batch_id)
		values[3] = CStringGetTextDatum(batch_id);
	else
		nulls[3] = true;
	if (detail)
		values[4] = CStringGetTextDatum(detail);
	else
		nulls[4] = true;
	tuplestore_putvalues(out, desc, values, nulls);
}

/*
 * kl_stray_reason
 *		NULL when the entry name of partition directory part_dir can be a
 *		batch (a directory named after a batch id, not empty); otherwise why
 *		it is not one.  A batch appears by renaming a complete staging
 *		directory (landing_files.c), so anything else under such a name was
 *		put there by something else: it holds no landed data.
 */
char *
kl_stray_reason(const char *part_dir, const char *name)
{
	char	   *path = psprintf("%s/%s", part_dir, name);
	struct stat st;
	int64		first,
				last;
	DIR		   *dir;
	struct dirent *de;
	bool		empty = true;

	if (lstat(path, &st) != 0)
		return psprintf("it cannot be examined: %m");
	if (!S_ISDIR(st.st_mode))
		return psprintf("it is %s, not a directory",
						S_ISREG(st.st_mode) ? "a regular file" : kl_file_kind(st.st_mode));
	if (!kl_parse_batch_name(name, &first, &last) && !kl_parse_readmit_name(name, &first, &last))
		return pstrdup("its name is not a batch id");
	dir = AllocateDir(path);
	if (dir == NULL)
		return psprintf("it cannot be read: %m");
	while ((de = ReadDir(dir, path)) != NULL)
	{
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
		{
			empty = false;
			break;
		}
	}
	FreeDir(dir);
	return empty ? pstrdup("it is an empty directory") : NULL;
}

/*
 * kl_stray_detail
 *		What recover() and verify() say of a stray entry.
 */
static char *
kl_stray_detail(const char *name, const char *reason)
{
	return psprintf("\"%s\" is not a batch (%s); move it out of the partition directory", name, reason);
}

/*
 * kl_adopt_hint
 *		What to do with a directory under a batch's name that cannot be
 *		adopted: the hint of the ERROR, and verify()'s action.  The offsets
 *		come from its name.
 */
static char *
kl_adopt_hint(KlSource *src, int32 partition, const char *dir, const char *name)
{
	int64		first = 0,
				last = 0;

	if (kl_parse_readmit_name(name, &first, &last))
		return psprintf("Move %s out of the landing directory: the partition goes on without it, and its records stay quarantined. "
						"Then run kafka_lake.readmit('%s', %d, %lld, %lld) again.",
						dir, src->source, partition, (long long) first, (long long) last);
	(void) kl_parse_batch_name(name, &first, &last);
	return psprintf("Move %s out of the landing directory: the partition goes on without it. "
					"Then land its offsets again from the broker with kafka_lake.replay('%s', %d, %lld, %lld), "
					"or restore a good copy of the batch from a backup.",
					dir, src->source, partition, (long long) first, (long long) last);
}

/*
 * kl_check_adoptable
 *		Read and check in full a batch directory the catalog does not know.
 *		ERROR (XX001, with a hint that works) when it cannot be adopted.
 */
void
kl_check_adoptable(KlSource *src, int32 partition, const char *dir, const char *name,
				   KlBatch *b, KlRecord **recs, int *n)
{
	MemoryContext caller = CurrentMemoryContext;

	PG_TRY();
	{
		char	   *problem;
		int			bad;

		kl_read_manifest(dir, b, recs, n);
		if (strncmp(name, KL_BATCH_DIR_PREFIX(b), strlen(KL_BATCH_DIR_PREFIX(b))) != 0 ||
			strcmp(name + strlen(KL_BATCH_DIR_PREFIX(b)), b->batch_id) != 0 ||
			b->topic == NULL || strcmp(b->topic, src->topic) != 0 || b->partition != partition)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("batch directory \"%s\" does not match its manifest", dir),
					 errdetail("Its manifest names batch %s of topic \"%s\" partition %d.",
							   b->batch_id, b->topic ? b->topic : "?", b->partition)));
		problem = kl_check_batch_files(dir, b, true, &bad);
		if (problem)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("batch %s of source \"%s\" cannot be adopted: its files disagree with its manifest",
							b->batch_id, src->source),
					 errdetail("%s", problem)));
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(caller);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_DATA_CORRUPTED)
			PG_RE_THROW();
		FlushErrorState();
		edata->hint = kl_adopt_hint(src, partition, dir, name);
		ReThrowError(edata);
	}
	PG_END_TRY();
}

/*
 * kl_adopt_batch
 *		Check a batch directory the catalog does not know and record it.
 */
static void
kl_adopt_batch(KlSource *src, int32 partition, const char *dir, const char *name,
			   Tuplestorestate *out, TupleDesc desc)
{
	KlBatch b;
	KlRecord   *recs;
	int			n;
	int			demoted = 0;

	kl_check_adoptable(src, partition, dir, name, &b, &recs, &n);

	/*
	 * Accepted on disk but accepted elsewhere meanwhile: demote.  An
	 * event_id the catalog holds at this very coordinate is this event (the
	 * catalog lost the batch's row but not its reservations): it stays
	 * accepted.
	 */
	{
		char	   *was = palloc(n);

		for (int i = 0; i < n; i++)
		{
			was[i] = recs[i].status;
			if (recs[i].status == KL_STATUS_ACCEPTED && recs[i].event.event_id != NULL)
				kl_event_key(src->source_id, recs[i].event.event_id,
							 recs[i].event.event_id_len, &recs[i].event_key);
		}
		kl_catalog_reserve_events(src, partition, recs, n);
		for (int i = 0; i < n; i++)
		{
			if (was[i] == KL_STATUS_ACCEPTED && recs[i].status == KL_STATUS_DUPLICATE)
			{
				recs[i].status = KL_STATUS_DEMOTED;
				demoted++;
			}
		}
	}

	b.path = pstrdup(dir);
	b.landed_by = "recover";
	kl_catalog_insert_batch(src, &b, recs, n);
	kl_emit_recover_row(out, desc, "adopted", src, partition, b.batch_id,
						demoted ? psprintf("%d records; %d accepted on disk were accepted elsewhere first and count as duplicates",
										   n, demoted) :
						psprintf("%d records", n));
	if (demoted)
		ereport(WARNING,
				(errmsg("batch %s of source \"%s\" accepts %d event_ids that another batch accepted first",
						b.batch_id, src->source, demoted),
				 errdetail("They count as duplicate_event_id in the foreign table and the bridge.")));
}

/*
 * kl_adopt_readmits
 *		The readmit units (readmit.c) of a partition the catalog does not
 *		know: each one checked in full like a batch, and adopted when its
 *		batch is in the catalog with the unit's records still quarantined
 *		(same fingerprints); its originals get their 'R' again.  A unit
 *		whose batch is not (yet) in the catalog, or whose records another
 *		unit holds, is left where it is, with a WARNING.  Returns the
 *		number of units adopted.
 */
static int
kl_adopt_readmits(KlSource *src, int32 partition, const char *part_dir, Tuplestorestate *out,
				  TupleDesc desc)
{
	List	   *on_disk = kl_list_dir(part_dir, "readmit=");
	List	   *known;
	ListCell   *cell;
	int			adopted = 0;

	if (on_disk == NIL || !kl_catalog_has_contracts())
		return 0;
	known = kl_catalog_batch_ids(src, partition);
	foreach(cell, on_disk)
	{
		const char *name = lfirst(cell);
		const char *id = name + strlen("readmit=");
		char	   *dir = psprintf("%s/%s", part_dir, name);
		char	   *reason;
		char	   *problem = NULL;
		bool		is_known = false;
		ListCell   *kc;
		KlBatch		u;
		KlRecord   *recs;
		int			n;
		KlBounds	bounds;
		int64		total;
		List	   *orig;
		KlBatch    *b = NULL;
		int64	   *offsets;
		char	   *was;
		int			demoted = 0;

		CHECK_FOR_INTERRUPTS();
		foreach(kc, known)
			is_known |= (strcmp((const char *) lfirst(kc), id) == 0);
		if (is_known)
			continue;
		if ((reason = kl_stray_reason(part_dir, name)) != NULL)
		{
			ereport(WARNING,
					(errmsg("\"%s\" is not a readmit unit: %s", dir, reason),
					 errdetail("Source \"%s\" ignores it.", src->source),
					 errhint("Move it out of the partition directory.")));
			kl_emit_recover_row(out, desc, "skipped_stray", src, partition, NULL,
								kl_stray_detail(name, reason));
			continue;
		}
		kl_check_adoptable(src, partition, dir, name, &u, &recs, &n);

		/* its batch, with these records still quarantined */
		kl_bounds_init(&bounds);
		bounds.partition_lo = bounds.partition_hi = partition;
		bounds.batch_id = u.readmit_of;
		orig = kl_catalog_scan_batches(src, &bounds, KL_BATCH_WANT_FINGERPRINTS, &total);
		if (orig != NIL)
			b = linitial(orig);
		if (b == NULL || b->readmit)
			problem = psprintf("its batch %s is not in the catalog", u.readmit_of);
		for (int i = 0; problem == NULL && i < n; i++)
		{
			int			idx = kl_batch_coordinate_index(b, recs[i].offset);

			if (idx < 0 || idx >= b->nfingerprints ||
				memcmp(b->fingerprints + (Size) idx * KL_SHA256_LEN, recs[i].fingerprint,
					   KL_SHA256_LEN) != 0)
				problem = psprintf("offset %lld is not a record of batch %s",
								   (long long) recs[i].offset, u.readmit_of);
			else if (!b->demoted_statuses ? false :
					 b->demoted_statuses[idx] != KL_STATUS_QUARANTINED)
				problem = psprintf("offset %lld of batch %s is not quarantined any more",
								   (long long) recs[i].offset, u.readmit_of);
		}
		if (problem)
		{
			ereport(WARNING,
					(errmsg("readmit unit \"%s\" of source \"%s\" is not adopted: %s", dir, src->source, problem),
					 errhint("Move it out of the landing directory; kafka_lake.readmit('%s') judges the quarantined records again.",
							 src->source)));
			kl_emit_recover_row(out, desc, "skipped_readmit", src, partition, u.batch_id, problem);
			continue;
		}

		/* accepted on disk but accepted elsewhere meanwhile: demoted, as in batches */
		was = palloc(n);
		offsets = palloc(sizeof(int64) * n);
		for (int i = 0; i < n; i++)
		{
			was[i] = recs[i].status;
			offsets[i] = recs[i].offset;
			if (recs[i].status == KL_STATUS_ACCEPTED && recs[i].event.event_id != NULL)
				kl_event_key(src->source_id, recs[i].event.event_id,
							 recs[i].event.event_id_len, &recs[i].event_key);
		}
		kl_catalog_reserve_events(src, partition, recs, n);
		for (int i = 0; i < n; i++)
		{
			if (was[i] == KL_STATUS_ACCEPTED && recs[i].status == KL_STATUS_DUPLICATE)
			{
				recs[i].status = KL_STATUS_DEMOTED;
				demoted++;
			}
		}
		u.path = dir;
		u.landed_by = "recover";
		kl_catalog_insert_batch(src, &u, recs, n);
		kl_catalog_mark_readmitted(src, u.readmit_of, offsets, n, true);
		kl_emit_recover_row(out, desc, "adopted", src, partition, u.batch_id,
							psprintf("readmit unit of batch %s: %d records%s", u.readmit_of, n,
									 demoted ? psprintf("; %d accepted on disk were accepted elsewhere first and count as duplicates", demoted) : ""));
		adopted++;
	}
	return adopted;
}

/*
 * kl_recover_partition
 *		Make the catalog match the disk for one partition the caller owns.
 *		Returns the number of changes (and reports them when out is given).
 *
 *		An entry under a batch's name that cannot be a batch (a file, a
 *		FIFO, an empty directory, a name that is no batch id) holds no
 *		landed data: it is left where it is, with a WARNING, and never stops
 *		the partition.  A directory that looks like a batch but disagrees
 *		with its manifest may be a damaged batch: that is an ERROR (XX001)
 *		whose hint says what to do.
 */
int
kl_recover_partition(KlSource *src, int32 partition, Tuplestorestate *out, TupleDesc desc)
{
	char	   *part_dir = kl_partition_dir(src, partition);
	char	   *staging_root = psprintf("%s/.staging", src->dir);
	char	   *marker = psprintf("-p%d-", partition);
	List	   *on_disk;
	List	   *known;
	ListCell   *cell;
	ListCell   *kc;
	int			changes = 0;

	/* abandoned staging directories of this partition */
	foreach(cell, kl_list_dir(staging_root, "batch="))
	{
		const char *name = lfirst(cell);

		if (strstr(name, marker) != NULL)
		{
			kl_remove_tree(psprintf("%s/%s", staging_root, name));
			kl_emit_recover_row(out, desc, "removed_staging", src, partition, NULL, name);
			changes++;
		}
	}

	/* batch directories the catalog does not know */
	on_disk = kl_list_dir(part_dir, "batch=");
	if (on_disk == NIL)
		return changes + kl_adopt_readmits(src, partition, part_dir, out, desc);
	known = kl_catalog_batch_ids(src, partition);
	list_sort(known, kl_name_cmp);
	kc = list_head(known);
	foreach(cell, on_disk)
	{
		const char *name = lfirst(cell);
		const char *id = name + strlen("batch=");
		int			cmp = 1;
		char	   *reason;

		CHECK_FOR_INTERRUPTS();
		while (kc != NULL && (cmp = strcmp((const char *) lfirst(kc), id)) < 0)
			kc = lnext(known, kc);
		if (kc != NULL && cmp == 0)
			continue;
		reason = kl_stray_reason(part_dir, name);
		if (reason != NULL)
		{
			ereport(WARNING,
					(errmsg("\"%s/%s\" is not a batch: %s", part_dir, name, reason),
					 errdetail("Source \"%s\" ignores it.", src->source),
					 errhint("Move it out of the partition directory.")));
			kl_emit_recover_row(out, desc, "skipped_stray", src, partition, NULL,
								kl_stray_detail(name, reason));
			continue;
		}
		kl_adopt_batch(src, partition, psprintf("%s/%s", part_dir, name), name, out, desc);
		changes++;
	}
	return changes + kl_adopt_readmits(src, partition, part_dir, out, desc);
}

/*
 * kl_forget_missing_batches
 *		recover() only: the batches of a partition the caller owns whose
 *		directories are gone (a damaged batch moved away, a deleted one) are
 *		forgotten, with the event_ids they reserved, so that replay() can
 *		land their offsets again.  Their files cannot come back by
 *		themselves; a copy put back later is adopted like any other batch.
 *		Nothing is forgotten while the source's directory or its marker is
 *		missing (an unmounted landing directory loses no batch).
 */
static void
kl_forget_missing_batches(KlSource *src, int32 partition, Tuplestorestate *out, TupleDesc desc)
{
	KlBounds	bounds;
	int64		total;
	List	   *gone = NIL;
	char	   *part_dir = kl_partition_dir(src, partition);
	ListCell   *cell;

	kl_bounds_init(&bounds);
	bounds.partition_lo = bounds.partition_hi = partition;
	foreach(cell, kl_catalog_scan_batches(src, &bounds, 0, &total))
	{
		KlBatch    *b = lfirst(cell);
		struct stat st;

		if (lstat(psprintf("%s/%s%s", part_dir, KL_BATCH_DIR_PREFIX(b), b->batch_id), &st) != 0 &&
			errno == ENOENT)
			gone = lappend(gone, b);
	}
	if (gone == NIL)
		return;
	if (!kl_landing_present(src))
	{
		ereport(WARNING,
				(errmsg("the landing directory \"%s\" of source \"%s\" or its marker is missing; no batch is forgotten",
						src->dir, src->source),
				 errhint("Mount or restore the landing directory, then run kafka_lake.recover('%s') again.",
						 src->source)));
		return;
	}

	foreach(cell, gone)
	{
		KlBatch    *b = lfirst(cell);

		if (b->readmit)
		{
			kl_catalog_forget_readmit(src, b);
			kl_emit_recover_row(out, desc, "forgotten", src, partition, b->batch_id,
								psprintf("its directory is gone: its records of batch %s are quarantined again; kafka_lake.readmit('%s', %d, %lld, %lld) re-admits them",
										 b->readmit_of, src->source, partition,
										 (long long) b->first_offset, (long long) b->last_offset));
			continue;
		}
		kl_catalog_forget_batch(src, b);
		kl_emit_recover_row(out, desc, "forgotten", src, partition, b->batch_id,
							psprintf("its directory is gone: land offsets %lld to %lld again with kafka_lake.replay('%s', %d, %lld, %lld)",
									 (long long) b->first_offset, (long long) b->last_offset,
									 src->source, partition,
									 (long long) b->first_offset, (long long) b->last_offset));
	}
}

/*
 * kafka_lake_recover
 *		recover(source): forget batches whose directories are gone, adopt
 *		complete batches the catalog lacks, remove abandoned staging
 *		directories; one row per change.
 */
Datum
kafka_lake_recover(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KlSource   *src = kl_source_arg(fcinfo, 0);
	List	   *partitions;
	ListCell   *cell;

	kl_source_lock(src);
	kl_init_materialized_srf(fcinfo);
	partitions = kl_disk_partitions(src);
	foreach(cell, kl_catalog_partitions(src))
		partitions = list_append_unique_int(partitions, lfirst_int(cell));
	list_sort(partitions, list_int_cmp);
	foreach(cell, partitions)
	{
		int32		p = lfirst_int(cell);

		if (!kl_try_lock_partition(src, p))
		{
			kl_emit_recover_row(rsinfo->setResult, rsinfo->setDesc, "skipped_locked",
								src, p, NULL, "another session is landing this partition");
			continue;
		}
		kl_forget_missing_batches(src, p, rsinfo->setResult, rsinfo->setDesc);
		kl_recover_partition(src, p, rsinfo->setResult, rsinfo->setDesc);
	}
	return (Datum) 0;
}

