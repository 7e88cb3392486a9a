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
 * Compaction and expiry leave the disk and the catalog apart only between
 * a commit and the file work that follows it, or when a backend dies in
 * between (compact.c, expire.c).  Recovery decides by the catalog and the
 * disk, never by a journal:
 *	- a directory that a compacted batch of the catalog names in its
 *	  compacted_from is a replaced batch that a crash left: it is removed,
 *	  never adopted (its coordinates are the compacted batch's) -- unless
 *	  the compacted batch's own directory is missing, in which case it is
 *	  left for recover() (which forgets the missing batch, then adopts it);
 *	- a compacted batch the catalog does not know, while every batch it
 *	  replaces is on disk, is a compaction that never committed: it is
 *	  removed (the replaced batches are the copy the catalog lists, or
 *	  adopted);
 *	- a compacted batch the catalog does not know while some batch it
 *	  replaces is gone (a catalog restored from before the compaction) is
 *	  the only complete copy: the swap is completed (the replaced batches
 *	  the catalog lists are forgotten, their directories go at commit) and
 *	  it is adopted;
 *	- a directory this transaction removes at commit (its own compaction)
 *	  is left alone;
 *	- a batch directory with an EXPIRED marker and not all of its record
 *	  files is an expired batch: adopted with its manifest alone, and
 *	  marked expired.  With every record file, the marker is an expiry that
 *	  did not commit: the batch is adopted whole, and the marker removed.
 * recover() also settles the batches the catalog lists: an expired batch
 * loses the record files a crash left, a batch that is not expired loses
 * a marker an uncommitted expiry left (kl_check_known_batches).  So after
 * any crash exactly one copy of every coordinate is visible, and verify()
 * is clean once recover() has run.
 *
 * Readmit units (readmit.c) are recovered the same way: a readmit=
 * directory the catalog lacks is checked in full and adopted, provided its
 * batch is in the catalog with the unit's records still quarantined (same
 * fingerprints); its originals get their 'R' again.  Forgetting a batch
 * forgets its units; forgetting a unit whose directory is gone quarantines
 * its records again (readmit() can re-admit them).  A unit expires with its
 * batch (expire.c): its EXPIRED marker and record files are settled as a
 * batch's are, in its own directory, and a unit the catalog lacks that has
 * its marker and not its record files is adopted as an expired unit.
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
 *	  src/landing/recover.c
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
#include "utils/resowner.h"
#include "utils/tuplestore.h"

#include "base/compat.h"
#include "base/digest.h"
#include "format/batch_format.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/catalog_lifecycle.h"
#include "kl_catalog/contract_catalog.h"
#include "kl_catalog/locks.h"
#include "landing/batch_read.h"
#include "landing/exclusion_files.h"
#include "landing/fileundo.h"
#include "landing/landing_files.h"
#include "landing/recover.h"
#include "landing/source_lock.h"

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
					"Then land its offsets again from the broker with %s, "
					"or restore a good copy of the batch from a backup.",
					dir, kl_replay_call(src, partition, first, last));
}

/*
 * kl_expired_on_disk
 *		Does a batch directory hold an expired batch: its expiry marker, and
 *		not all of its record files (expire.c removes them once the catalog
 *		says so)?  A marker beside every record file is an expiry that did
 *		not commit: the batch is whole.  (Only from version 1.1 of the
 *		catalog on, which can record an expiry.)
 */
static bool
kl_expired_on_disk(const char *dir)
{
	int			present = 0;

	if (!kl_has_expired_marker(dir) || !kl_catalog_has_lifecycle())
		return false;
	for (int f = 0; f < KL_NFILES; f++)
	{
		struct stat st;

		/* a plain batch's record file, or a compressed one's */
		for (int c = KL_COMPRESS_NONE; c <= KL_COMPRESS_ZSTD; c++)
		{
			if (lstat(psprintf("%s/%s", dir, kl_file_name(c, f)), &st) == 0)
				present++;
		}
	}
	return present < KL_NFILES;
}

static int kl_remove_batch_files(const char *dir, const char *const *names, int n);

/*
 * kl_remove_record_files
 *		Remove what is left of the record files of an expired batch (but
 *		those this transaction's own expiry removes when it commits), and
 *		fsync its directory.  Returns how many it removed.
 */
static int
kl_remove_record_files(const char *dir)
{
	const char *names[KL_NFILES * 2];

	for (int f = 0; f < KL_NFILES * 2; f++)
		names[f] = kl_file_name(f / KL_NFILES, f % KL_NFILES);
	return kl_remove_batch_files(dir, names, KL_NFILES * 2);
}

/*
 * kl_remove_batch_files
 *		Remove those of the named files of a batch directory that are there
 *		(but those this transaction removes at commit: an expiry or a
 *		reduction of its own, which a rollback would keep), and fsync the
 *		directory if any went.  Returns how many it removed.
 */
static int
kl_remove_batch_files(const char *dir, const char *const *names, int n)
{
	int			removed = 0;

	for (int f = 0; f < n; f++)
	{
		char	   *path = psprintf("%s/%s", dir, names[f]);

		if (kl_undo_removal_pending(path))
			continue;
		if (unlink(path) == 0)
			removed++;
		else if (errno != ENOENT)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not remove file \"%s\": %m", path)));
	}
	if (removed > 0)
		fsync_fname(dir, true);
	return removed;
}

/*
 * kl_remove_stale_manifests
 *		Remove the manifest of an expired batch that is not the one b says
 *		is its own (expire.c, REDUCTION): the full one of a reduced batch
 *		(the reduction committed, the backend died before it removed it),
 *		the reduced one of a batch that is not (a reduction that did not
 *		commit); but what this transaction removes at commit or abort.
 *		Returns how many it removed.
 */
static int
kl_remove_stale_manifests(const char *dir, const KlBatch *b)
{
	const char *names[2];

	for (int c = 0; c < 2; c++)
	{
		int			compression = c == 0 ? KL_COMPRESS_NONE : KL_COMPRESS_ZSTD;

		names[c] = b->reduced ? kl_file_name(compression, KL_NFILES) :
			kl_reduced_manifest_name(compression);
	}
	return kl_remove_batch_files(dir, names, 2);
}

/*
 * kl_check_adoptable
 *		Read and check in full a batch directory the catalog does not know
 *		(an expired one: its manifest).  ERROR (XX001, with a hint that
 *		works) when it cannot be adopted.  b->expired says whether it is an
 *		expired batch.
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

		bool		expired = kl_expired_on_disk(dir);

		kl_read_manifest(dir, b, recs, n);
		if (strncmp(name, KL_BATCH_DIR_PREFIX(b), strlen(KL_BATCH_DIR_PREFIX(b))) != 0 ||
			strcmp(name + strlen(KL_BATCH_DIR_PREFIX(b)), b->batch_id) != 0 ||
			b->topic == NULL || strcmp(b->topic, src->topic) != 0 || b->partition != partition)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("batch directory \"%s\" does not match its manifest", dir),
					 errdetail("Its manifest names batch %s of topic \"%s\" partition %d.",
							   b->batch_id, b->topic ? b->topic : "?", b->partition)));
		/* an expired batch has its manifest only (expire.c) */
		b->expired = expired;
		problem = expired ? NULL : kl_check_batch_files(dir, b, true, &bad);
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
				kl_event_key(src->source_id, src->ordered_keys, recs[i].event.event_id,
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
	if (b.expired)
	{
		/* the expiry committed once: finish it, and the catalog says so */
		kl_catalog_mark_expired(src, b.batch_id, GetCurrentTransactionStartTimestamp());
		if (b.reduced && kl_catalog_has_reduction())
			kl_catalog_mark_reduced(src, b.batch_id, GetCurrentTransactionStartTimestamp(), &b);
		kl_remove_record_files(dir);
		kl_remove_stale_manifests(dir, &b);
	}
	else if (kl_has_expired_marker(dir) && unlink(kl_expired_marker_path(dir)) != 0 &&
			 errno != ENOENT)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", kl_expired_marker_path(dir))));
	kl_emit_recover_row(out, desc, "adopted", src, partition, b.batch_id,
						psprintf("%d records%s%s%s", n,
								 demoted ? psprintf("; %d accepted on disk were accepted elsewhere first and count as duplicates",
													demoted) : "",
								 b.expired ? (b.reduced ? "; an expired batch past the dedupe horizon: its reduced manifest's coordinates only" :
											  "; an expired batch: its manifest and coordinates only") : "",
								 b.ncompacted_from > 0 ?
								 psprintf("; a compacted batch, which replaces %d batches", b.ncompacted_from) : ""));
	if (demoted)
		ereport(WARNING,
				(errmsg("batch %s of source \"%s\" accepts %d event_ids that another batch accepted first",
						b.batch_id, src->source, demoted),
				 errdetail("They count as duplicate_event_id in the foreign table and the bridge.")));
}

/*
 * kl_read_compacted_from
 *		The batches a batch directory's manifest says it replaced (a batch
 *		compact() made), into *b; false when it replaced none, or when its
 *		manifest cannot be read (adoption then says why).  The manifest is
 *		read in a subtransaction, whose error is the answer "no".
 */
static bool
kl_read_compacted_from(const char *dir, KlBatch *b)
{
	MemoryContext caller = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	bool		ok = false;

	memset(b, 0, sizeof(*b));
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller);
	PG_TRY();
	{
		KlRecord   *recs;
		int			n;

		kl_read_manifest(dir, b, &recs, &n);
		ok = (b->ncompacted_from > 0);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(caller);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller);
		CurrentResourceOwner = owner;
		if (edata->sqlerrcode != ERRCODE_DATA_CORRUPTED)
			ReThrowError(edata);
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/*
 * kl_list_has_name
 *		Does a list of C strings hold this one?
 */
static bool
kl_list_has_name(List *names, const char *name)
{
	ListCell   *cell;

	foreach(cell, names)
	{
		if (strcmp((const char *) lfirst(cell), name) == 0)
			return true;
	}
	return false;
}

/*
 * kl_is_batch_dir
 *		Is there a directory under that name?
 */
static bool
kl_is_batch_dir(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * kl_find_replaced
 *		The entry of a sorted list of KlReplaced for a batch id, or NULL.
 */
static KlReplaced *
kl_find_replaced(List *replaced, const char *id)
{
	ListCell   *cell;

	foreach(cell, replaced)
	{
		KlReplaced *r = lfirst(cell);
		int			cmp = strcmp(r->old_id, id);

		if (cmp == 0)
			return r;
		if (cmp > 0)
			break;
	}
	return NULL;
}

/*
 * kl_classify_unknown
 *		What a batch directory of a partition that the catalog does not know
 *		is, in the light of compaction (see compact.c):
 *		- KL_UNKNOWN_PENDING: a compaction of this transaction replaced it
 *		  (it goes at commit; a rollback would bring its rows back): leave
 *		  it alone;
 *		- KL_UNKNOWN_REPLACED: a committed compaction replaced it and the
 *		  batch that holds its records now (*other) is on disk: remove it;
 *		- KL_UNKNOWN_ORPHANED: the same, but that batch's directory is
 *		  missing: this is the only copy left; leave it (recover() forgets
 *		  the missing batch first, and then adopts this one);
 *		- KL_UNKNOWN_UNCOMMITTED: a compacted batch whose compaction never
 *		  committed, every batch it replaces still on disk: remove it;
 *		- KL_UNKNOWN_COMPLETE: a compacted batch, and some batch it replaces
 *		  is gone from the disk (a catalog older than the compaction): it is
 *		  the only complete copy, and its swap is completed;
 *		- KL_UNKNOWN_ADOPTABLE: anything else, adopted (or refused) as any
 *		  batch.
 *		replaced is kl_catalog_replaced_batches of the partition; *compacted
 *		gets the manifest of a compacted batch.
 */
KlUnknownBatch
kl_classify_unknown(const char *part_dir, const char *name, List *replaced, char **other,
					KlBatch *compacted)
{
	char	   *dir = psprintf("%s/%s", part_dir, name);
	KlReplaced *r;

	*other = NULL;
	if (kl_undo_removal_pending(dir))
		return KL_UNKNOWN_PENDING;
	r = kl_find_replaced(replaced, name + strlen("batch="));
	if (r != NULL && r->mine)
		return KL_UNKNOWN_PENDING;
	if (r != NULL)
	{
		*other = r->new_id;
		return kl_is_batch_dir(psprintf("%s/batch=%s", part_dir, r->new_id)) ?
			KL_UNKNOWN_REPLACED : KL_UNKNOWN_ORPHANED;
	}
	if (!kl_catalog_has_lifecycle() || !kl_read_compacted_from(dir, compacted))
		return KL_UNKNOWN_ADOPTABLE;
	for (int i = 0; i < compacted->ncompacted_from; i++)
	{
		if (!kl_is_batch_dir(psprintf("%s/batch=%s", part_dir, compacted->compacted_from[i])))
			return KL_UNKNOWN_COMPLETE;
	}
	return KL_UNKNOWN_UNCOMMITTED;
}

/*
 * kl_complete_compaction
 *		A compacted batch the catalog does not know is the only complete
 *		copy of its records (KL_UNKNOWN_COMPLETE): forget the batches it
 *		replaced that the catalog still lists, remove at commit those still
 *		on disk, and adopt it.  Names of on_disk that it replaced are added
 *		to *handled, so that they are not adopted.
 */
static void
kl_complete_compaction(KlSource *src, int32 partition, const char *part_dir, const char *name,
					   const KlBatch *compacted, List *known, List **handled,
					   Tuplestorestate *out, TupleDesc desc)
{
	for (int i = 0; i < compacted->ncompacted_from; i++)
	{
		const char *id = compacted->compacted_from[i];
		char	   *old_name = psprintf("batch=%s", id);
		char	   *old_dir = psprintf("%s/%s", part_dir, old_name);
		KlBatch		old;

		if (kl_list_has_name(known, id))
		{
			memset(&old, 0, sizeof(old));
			strlcpy(old.batch_id, id, sizeof(old.batch_id));
			old.partition = partition;
			(void) kl_parse_batch_name(old_name, &old.first_offset, &old.last_offset);
			kl_catalog_forget_batch(src, &old);
		}
		if (kl_is_batch_dir(old_dir))
			kl_undo_remove_tree_at_commit(old_dir, src->source_id, "recover()");
		*handled = lappend(*handled, old_name);
	}
	kl_adopt_batch(src, partition, psprintf("%s/%s", part_dir, name), name, out, desc);
}

/*
 * kl_recover_unknown
 *		The batch directories of a partition that the catalog does not know
 *		(not strays): leftovers of compactions first, then adoption.
 *		Returns the number of changes.
 */
static int
kl_recover_unknown(KlSource *src, int32 partition, const char *part_dir, List *unknown,
				   List *known, Tuplestorestate *out, TupleDesc desc)
{
	List	   *replaced = kl_catalog_replaced_batches(src, partition);
	List	   *handled = NIL;
	List	   *complete = NIL;
	ListCell   *cell;
	int			changes = 0;

	foreach(cell, unknown)
	{
		const char *name = lfirst(cell);
		char	   *dir = psprintf("%s/%s", part_dir, name);
		char	   *other;
		KlBatch    *compacted = palloc0(sizeof(KlBatch));

		CHECK_FOR_INTERRUPTS();
		switch (kl_classify_unknown(part_dir, name, replaced, &other, compacted))
		{
			case KL_UNKNOWN_PENDING:
				handled = lappend(handled, (char *) name);
				break;
			case KL_UNKNOWN_REPLACED:
				kl_remove_tree(dir);
				kl_emit_recover_row(out, desc, "removed_replaced", src, partition,
									name + strlen("batch="),
									psprintf("a committed compaction replaced it with batch %s, which holds its records; a crash had left its directory",
											 other));
				handled = lappend(handled, (char *) name);
				changes++;
				break;
			case KL_UNKNOWN_ORPHANED:
				ereport(WARNING,
						(errmsg("batch directory \"%s\" was replaced by batch %s, whose directory is missing",
								dir, other),
						 errdetail("It is left where it is: it holds records the catalog lists under batch %s.", other),
						 errhint("Restore batch %s from a backup, or run kafka_lake.recover('%s'): it forgets the missing batch and adopts this one.",
								 other, src->source)));
				handled = lappend(handled, (char *) name);
				break;
			case KL_UNKNOWN_UNCOMMITTED:
				kl_remove_tree(dir);
				kl_emit_recover_row(out, desc, "removed_uncommitted", src, partition,
									name + strlen("batch="),
									psprintf("its compaction did not commit: the %d batches it would replace hold its records",
											 compacted->ncompacted_from));
				handled = lappend(handled, (char *) name);
				changes++;
				break;
			case KL_UNKNOWN_COMPLETE:
				complete = lappend(complete, list_make2((char *) name, compacted));
				break;
			case KL_UNKNOWN_ADOPTABLE:
				break;
		}
	}
	foreach(cell, complete)
	{
		List	   *pair = lfirst(cell);
		const char *name = linitial(pair);

		if (kl_list_has_name(handled, name))
			continue;
		kl_complete_compaction(src, partition, part_dir, name, lsecond(pair), known,
							   &handled, out, desc);
		handled = lappend(handled, (char *) name);
		changes++;
	}
	foreach(cell, unknown)
	{
		const char *name = lfirst(cell);

		if (kl_list_has_name(handled, name))
			continue;
		CHECK_FOR_INTERRUPTS();
		kl_adopt_batch(src, partition, psprintf("%s/%s", part_dir, name), name, out, desc);
		changes++;
	}
	return changes;
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
		bounds.topic = src->topic;
		bounds.batch_id = u.readmit_of;
		orig = kl_catalog_scan_batches(src, &bounds, KL_BATCH_WANT_FINGERPRINTS, &total);
		if (orig != NIL)
			b = linitial(orig);
		if (b == NULL || b->readmit)
			problem = psprintf("its batch %s is not in the catalog", u.readmit_of);
		else
			kl_batch_load_fingerprints(src, b, false); /* an expired batch's: its manifest's */
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
				kl_event_key(src->source_id, src->ordered_keys, recs[i].event.event_id,
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
		if (u.expired)
		{
			/* a unit expires with its batch (expire.c): finish it */
			kl_catalog_mark_expired(src, u.batch_id, GetCurrentTransactionStartTimestamp());
			kl_remove_record_files(dir);
		}
		else if (kl_has_expired_marker(dir) && unlink(kl_expired_marker_path(dir)) != 0 &&
				 errno != ENOENT)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not remove file \"%s\": %m", kl_expired_marker_path(dir))));
		kl_emit_recover_row(out, desc, "adopted", src, partition, u.batch_id,
							psprintf("readmit unit of batch %s: %d records%s%s", u.readmit_of, n,
									 demoted ? psprintf("; %d accepted on disk were accepted elsewhere first and count as duplicates", demoted) : "",
									 u.expired ? "; an expired unit: its manifest and coordinates only" : ""));
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
 *		whose hint says what to do.  What a compaction left (compact.c) is
 *		removed, or its swap completed, before anything is adopted.
 */
int
kl_recover_partition(KlSource *src, int32 partition, Tuplestorestate *out, TupleDesc desc)
{
	char	   *part_dir = kl_partition_dir(src, partition);
	char	   *staging_root = psprintf("%s/.staging", src->dir);
	char	   *marker = kl_staging_marker(src, partition);
	List	   *on_disk;
	List	   *known;
	List	   *unknown = NIL;
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
		unknown = lappend(unknown, (char *) name);
	}
	if (unknown != NIL)
		changes += kl_recover_unknown(src, partition, part_dir, unknown, known, out, desc);
	return changes + kl_adopt_readmits(src, partition, part_dir, out, desc);
}

/*
 * kl_check_known_batches
 *		recover() only, for the batches of a partition the caller owns that
 *		the catalog lists:
 *		- those whose directories are gone (a damaged batch moved away, a
 *		  deleted one) are forgotten, with the event_ids they reserved, so
 *		  that replay() can land their offsets again.  Their files cannot
 *		  come back by themselves; a copy put back later is adopted like any
 *		  other batch.  Nothing is forgotten while the source's directory or
 *		  its marker is missing (an unmounted landing directory loses no
 *		  batch);
 *		- an expired batch whose record files are still there (its expiry
 *		  committed, and the backend died before it removed them) loses
 *		  them, and gets its marker back if it lost it; a batch that is not
 *		  expired but carries a marker (an expiry that did not commit) loses
 *		  the marker (expire.c).
 */
static void
kl_check_known_batches(KlSource *src, int32 partition, Tuplestorestate *out, TupleDesc desc)
{
	KlBounds	bounds;
	int64		total;
	List	   *gone = NIL;
	char	   *part_dir = kl_partition_dir(src, partition);
	ListCell   *cell;

	kl_bounds_init(&bounds);
	bounds.partition_lo = bounds.partition_hi = partition;
	bounds.topic = src->topic;
	foreach(cell, kl_catalog_scan_batches(src, &bounds, 0, &total))
	{
		KlBatch    *b = lfirst(cell);
		char	   *dir = psprintf("%s/%s%s", part_dir, KL_BATCH_DIR_PREFIX(b), b->batch_id);
		struct stat st;

		CHECK_FOR_INTERRUPTS();
		if (lstat(dir, &st) != 0)
		{
			if (errno == ENOENT)
				gone = lappend(gone, b);
			continue;
		}
		if (!S_ISDIR(st.st_mode))
			continue;
		if (b->expired)
		{
			bool		rewrote = false;
			int			removed;
			int			stale;

			if (!kl_has_expired_marker(dir))
			{
				kl_write_expired_marker(dir, b->batch_id, b->expired_at);
				rewrote = true;
			}
			removed = kl_remove_record_files(dir);
			stale = kl_remove_stale_manifests(dir, b);
			if (rewrote || removed > 0 || stale > 0)
				kl_emit_recover_row(out, desc, "finished_expiry", src, partition, b->batch_id,
									psprintf("the batch expired%s%s%s",
											 removed > 0 ? psprintf("; %d record files were still there and were removed", removed) : "",
											 stale > 0 ? (b->reduced ? "; the manifest its reduced one replaced was still there and was removed" :
														  "; a reduced manifest whose reduction did not commit was removed") : "",
											 rewrote ? "; its EXPIRED marker was written again" : ""));
		}
		else if (kl_has_expired_marker(dir))
		{
			/*
			 * Not this transaction's own expiry: its catalog would say
			 * expired.  Another session's cannot be open either: it would
			 * own the partition.
			 */
			char	   *marker = kl_expired_marker_path(dir);

			if (unlink(marker) != 0 && errno != ENOENT)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not remove file \"%s\": %m", marker)));
			fsync_fname(dir, true);
			(void) kl_remove_stale_manifests(dir, b);	/* and a reduction with it */
			kl_emit_recover_row(out, desc, "undid_expiry", src, partition, b->batch_id,
								"an expiry of this batch did not commit: its EXPIRED marker was removed, the batch is whole");
		}
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
							psprintf("its directory is gone: land offsets %lld to %lld again with %s",
									 (long long) b->first_offset, (long long) b->last_offset,
									 kl_replay_call(src, partition, b->first_offset, b->last_offset)));
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
	KlSource   *source = kl_source_arg(fcinfo, 0);

	kl_source_lock(source);
	kl_init_materialized_srf(fcinfo);
	for (int t = 0; t < source->ntopics; t++)
	{
		KlSource   *src = kl_source_topic(source, t);
		List	   *partitions;
		ListCell   *cell;

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
			kl_check_known_batches(src, p, rsinfo->setResult, rsinfo->setDesc);
			kl_recover_partition(src, p, rsinfo->setResult, rsinfo->setDesc);
		}
	}
	/* the exclusion units a killed exclude() left (exclusion_files.c) */
	kl_recover_exclusions(source, rsinfo->setResult, rsinfo->setDesc);
	return (Datum) 0;
}

