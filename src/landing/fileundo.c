/*-------------------------------------------------------------------------
 *
 * fileundo.c
 *	  One registry of the file operations that wait for the end of the
 *	  transaction: what to remove when it commits, and what to remove or
 *	  put back when it aborts.
 *
 * Files are not transactional, yet some of kafka_lake's steps must follow
 * the fate of the caller's transaction:
 *	- drop_source(drop_landing => true) forgets a source in the catalog at
 *	  once but may remove its files only once that is committed (a rollback
 *	  must find them where the catalog says);
 *	- bridge() writes adapter files that belong to catalog rows of the same
 *	  transaction: they go if it aborts;
 *	- compact() writes a batch that replaces others: the new directory goes
 *	  if the catalog swap aborts, the old ones once it has committed; and
 *	  expire() removes the record files of a batch once the catalog says
 *	  it expired (its marker goes if that aborts).
 * Both are entries of this one list, in the spirit of PostgreSQL's pending
 * deletes (catalog/storage.c): each entry says when it runs (at commit, or
 * at abort) and belongs to the subtransaction that made it.  When a
 * subtransaction commits its entries pass to the parent; when it aborts its
 * at-abort entries run, newest first, and its at-commit entries are
 * dropped.  At the top, commit runs the at-commit entries in the order they
 * were made and abort runs the at-abort ones, newest first.  The callbacks
 * never raise an ERROR (after a commit it would be a PANIC): a file that
 * cannot be removed is a WARNING.  Every tree is removed by
 * kl_remove_tree (landing_files.c), the one place that deletes a landed tree.
 * Nothing else in kafka_lake acts on files when a transaction ends: what
 * land() writes is never undone (recovery adopts it, or removes what never
 * became a batch), and what the bridge removes at once (a stale temporary
 * file, its own copy of a CSV already at its address) needs no undo.  A
 * backend that dies after a commit runs none of its at-commit entries:
 * recovery finishes a compaction's or an expiry's removals (recover.c).
 *
 * DISPLACEMENT: A DIRECTORY RE-USED IN THE TRANSACTION THAT DROPS IT
 *
 * drop_source('s', drop_landing => true) followed, in the same
 * transaction, by create_source('s') would give the new source the very
 * directory that is to be removed at commit: the new source's batches, and
 * the Kafka offsets committed for them, would lose their files.  So
 * create_source first asks kl_undo_displace whether its directory is
 * pending removal in this transaction, and if so that directory is renamed
 * out of the way, to
 *
 *	<landing_dir>/.kafka_lake_dropped/<xid>-<source_id>-<random>/<source>
 *
 * (xid: the top transaction's full id; source_id: the dropped source), the
 * pending removal follows it there, and an at-abort entry puts it back.
 * The new source gets a fresh directory.  Putting back (kl_restore_tree)
 * finds the original name taken by what the new source made in the
 * aborted (sub)transaction: batches it landed there may have had their
 * offsets committed to Kafka, and the source that comes back usually reads
 * the same group, so they are kept: whatever is not already in the
 * displaced tree is moved into it, the rest (the new marker, copies) is
 * removed, and the displaced tree takes its name back.  The next land()
 * adopts the moved batches.
 *
 * A backend that dies between the displacement and the end of its
 * transaction runs no callback.  The directory name says which source it
 * was, so kl_settle_displaced, run by every function that writes a
 * source's directory (create_source, drop_source, land, replay, recover,
 * bridge), finishes the job: a source of that id still in the catalog
 * means the drop did not take effect, and the tree is put back; otherwise
 * the drop committed (or a later one took the source), and the tree is
 * removed.  Those callers hold locks that keep any other transaction that
 * displaced the directory from being still open (see there).
 *
 * TWO-PHASE COMMIT
 *
 * An extension cannot carry session state into a prepared transaction:
 * COMMIT PREPARED may run in another session, after a restart.  Rather
 * than let ROLLBACK PREPARED keep files that should go, or let the
 * session's next unrelated COMMIT remove files that should stay, PREPARE
 * TRANSACTION is refused while the list holds an entry, the way PostgreSQL
 * refuses to prepare a transaction that used temporary objects.  Steps
 * that do not depend on the end of the transaction (land(), whose files
 * and Kafka commits are never undone) can be prepared.
 *
 * IDENTIFICATION
 *	  src/landing/fileundo.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "base/digest.h"
#include "base/fault.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/locks.h"
#include "landing/fileundo.h"
#include "landing/landing_files.h"

#define KL_DROPPED_DIR			".kafka_lake_dropped"

typedef enum KlUndoAction
{
	KL_UNDO_UNLINK,				/* a file */
	KL_UNDO_RMDIR,				/* an empty directory */
	KL_UNDO_RMTREE,				/* a directory and everything in it */
	KL_UNDO_RESTORE,			/* a displaced directory: put it back */
	KL_UNDO_PAUSE				/* a fault injection point that pauses (tests) */
} KlUndoAction;

/* One pending operation */
typedef struct KlUndoEntry
{
	KlUndoAction action;
	bool		at_commit;		/* runs at commit; else at abort */
	SubTransactionId subid;		/* the subtransaction that owns it */
	char	   *path;
	char	   *target;			/* RESTORE: where path goes back to */
	char	   *container;		/* RESTORE: the directory path sits in */
	int32		source_id;		/* RMTREE of a source directory, else 0 */
	const char *origin;			/* the function that asked, for messages */
} KlUndoEntry;

static List *kl_undo_list = NIL;	/* in TopMemoryContext, oldest first */
static bool kl_undo_registered = false;

static void kl_undo_xact_callback(XactEvent event, void *arg);
static void kl_undo_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
									 SubTransactionId parentSubid, void *arg);

/*
 * kl_undo_add
 *		Append an entry owned by the current subtransaction.
 */
static KlUndoEntry *
kl_undo_add(KlUndoAction action, bool at_commit, const char *path, const char *origin)
{
	MemoryContext old;
	KlUndoEntry *e;

	if (!kl_undo_registered)
	{
		RegisterXactCallback(kl_undo_xact_callback, NULL);
		RegisterSubXactCallback(kl_undo_subxact_callback, NULL);
		kl_undo_registered = true;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	e = palloc0(sizeof(KlUndoEntry));
	e->action = action;
	e->at_commit = at_commit;
	e->subid = GetCurrentSubTransactionId();
	e->path = pstrdup(path);
	e->origin = origin;
	kl_undo_list = lappend(kl_undo_list, e);
	MemoryContextSwitchTo(old);
	return e;
}

/*
 * kl_undo_free
 *		Release one entry.
 */
static void
kl_undo_free(KlUndoEntry *e)
{
	pfree(e->path);
	if (e->target)
		pfree(e->target);
	if (e->container)
		pfree(e->container);
	pfree(e);
}

/*
 * kl_undo_remove_at_abort
 *		Remove a file (or an empty directory) this transaction is about to
 *		create if the current (sub)transaction aborts.  Call it before the
 *		path is created, so that no ERROR can slip in between.
 */
void
kl_undo_remove_at_abort(const char *path, bool is_dir, const char *origin)
{
	kl_undo_add(is_dir ? KL_UNDO_RMDIR : KL_UNDO_UNLINK, false, path, origin);
}

/*
 * kl_undo_forget
 *		The path is gone, or was there before us: nothing to undo for it
 *		(the newest removal registered for it is forgotten).
 */
void
kl_undo_forget(const char *path)
{
	for (int i = list_length(kl_undo_list) - 1; i >= 0; i--)
	{
		KlUndoEntry *e = list_nth(kl_undo_list, i);

		if (!e->at_commit && e->action != KL_UNDO_RESTORE && strcmp(e->path, path) == 0)
		{
			kl_undo_list = list_delete_nth_cell(kl_undo_list, i);
			kl_undo_free(e);
			return;
		}
	}
}

/*
 * kl_undo_remove_tree_at_commit
 *		Remove the directory of source source_id, and everything in it, once
 *		the transaction has committed (unless the subtransaction that asked
 *		is rolled back).
 */
void
kl_undo_remove_tree_at_commit(const char *path, int32 source_id, const char *origin)
{
	KlUndoEntry *e = kl_undo_add(KL_UNDO_RMTREE, true, path, origin);

	e->source_id = source_id;
}

/*
 * kl_undo_remove_tree_at_abort
 *		Remove a directory this transaction made, and everything in it, if
 *		the current (sub)transaction aborts (a compacted batch whose catalog
 *		swap is rolled back: compact.c).  A path that is not there at the
 *		time is nothing to remove.
 */
void
kl_undo_remove_tree_at_abort(const char *path, const char *origin)
{
	(void) kl_undo_add(KL_UNDO_RMTREE, false, path, origin);
}

/*
 * kl_undo_remove_file_at_commit
 *		Remove a file once the transaction has committed (the record files
 *		of an expired batch: expire.c), unless the subtransaction that asked
 *		is rolled back.
 */
void
kl_undo_remove_file_at_commit(const char *path, const char *origin)
{
	(void) kl_undo_add(KL_UNDO_UNLINK, true, path, origin);
}

/*
 * kl_undo_pause_at_commit
 *		At commit, before the entries registered after this one run, pause
 *		at a fault injection point (kl_fault_pause: for the tests that kill
 *		a backend between the commit and the removals that follow it).
 */
void
kl_undo_pause_at_commit(const char *point)
{
	(void) kl_undo_add(KL_UNDO_PAUSE, true, point, point);
}

/*
 * kl_undo_removal_pending
 *		Is path to be removed when this transaction commits?  Recovery leaves
 *		such a directory alone: this transaction's catalog no longer lists
 *		it, but a rollback would bring its rows back.
 */
bool
kl_undo_removal_pending(const char *path)
{
	ListCell   *cell;

	foreach(cell, kl_undo_list)
	{
		KlUndoEntry *e = lfirst(cell);

		if (e->at_commit && (e->action == KL_UNDO_RMTREE || e->action == KL_UNDO_UNLINK) &&
			strcmp(e->path, path) == 0)
			return true;
	}
	return false;
}

/*
 * kl_fsync_dir_quietly
 *		fsync a directory; trouble is a WARNING (used where an ERROR would
 *		be worse than a directory entry that is not yet durable).
 */
static void
kl_fsync_dir_quietly(const char *path)
{
	(void) fsync_fname_ext(path, true, true, WARNING);
}

/*
 * kl_merge_tree
 *		Move every entry of directory from that directory into lacks into
 *		it; where both have a directory of the same name, merge the two.
 *		Entries both have are left in from.  At the top (skip_marker) the
 *		source marker is left too: into has its own.  Never raises an ERROR.
 */
static void
kl_merge_tree(const char *from, const char *into, bool skip_marker)
{
	DIR		   *dir = opendir(from);
	struct dirent *de;
	bool		moved = false;

	if (dir == NULL)
	{
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not open directory \"%s\": %m", from)));
		return;
	}
	while ((de = readdir(dir)) != NULL)
	{
		char	   *src;
		char	   *dst;
		struct stat sst;
		struct stat dst_st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (skip_marker && strcmp(de->d_name, KL_SOURCE_MARKER) == 0)
			continue;
		src = psprintf("%s/%s", from, de->d_name);
		dst = psprintf("%s/%s", into, de->d_name);
		if (lstat(dst, &dst_st) != 0)
		{
			if (errno == ENOENT && rename(src, dst) == 0)
				moved = true;
			else
				ereport(WARNING,
						(errcode_for_file_access(),
						 errmsg("could not move \"%s\" to \"%s\": %m", src, dst)));
		}
		else if (S_ISDIR(dst_st.st_mode) && lstat(src, &sst) == 0 && S_ISDIR(sst.st_mode))
			kl_merge_tree(src, dst, false);
		pfree(src);
		pfree(dst);
	}
	closedir(dir);
	if (moved)
	{
		kl_fsync_dir_quietly(into);
		kl_fsync_dir_quietly(from);
	}
}

/*
 * kl_restore_tree
 *		Give a displaced directory its name back.  When the name was taken
 *		meanwhile (by a source created after the drop, in the part of the
 *		transaction that aborted), what that one holds and the displaced
 *		tree lacks (batches it landed, whose offsets may be committed) is
 *		moved into the displaced tree first, and the rest removed.  Then
 *		the empty container goes.  Never raises an ERROR.
 */
static void
kl_restore_tree(const char *displaced, const char *target, const char *container)
{
	char	   *parent = pstrdup(target);

	get_parent_directory(parent);
	if (rename(displaced, target) != 0)
	{
		if (errno != ENOTEMPTY && errno != EEXIST)
		{
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not move \"%s\" back to \"%s\": %m", displaced, target),
					 errhint("Move it back by hand: it holds the landed files of the source.")));
			return;
		}
		kl_merge_tree(target, displaced, true);
		kl_remove_tree(target);
		if (rename(displaced, target) != 0)
		{
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not move \"%s\" back to \"%s\": %m", displaced, target),
					 errhint("Move it back by hand: it holds the landed files of the source.")));
			return;
		}
	}
	kl_fsync_dir_quietly(parent);
	if (container != NULL && rmdir(container) == 0)
	{
		char	   *dropped = pstrdup(container);

		get_parent_directory(dropped);
		kl_fsync_dir_quietly(dropped);
	}
}

/*
 * kl_undo_run
 *		Carry out one entry.  Runs in commit or abort processing: never an
 *		ERROR; what goes wrong is reported as a WARNING.
 */
static void
kl_undo_run(KlUndoEntry *e)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "kafka_lake file undo",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);

	PG_TRY();
	{
		switch (e->action)
		{
			case KL_UNDO_UNLINK:
				if (unlink(e->path) != 0 && errno != ENOENT)
					ereport(WARNING,
							(errcode_for_file_access(),
							 errmsg("could not remove file \"%s\" that %s created: %m",
									e->path, e->origin)));
				break;
			case KL_UNDO_RMDIR:
				if (rmdir(e->path) != 0 && errno != ENOENT)
					ereport(WARNING,
							(errcode_for_file_access(),
							 errmsg("could not remove directory \"%s\" that %s created: %m",
									e->path, e->origin)));
				break;
			case KL_UNDO_RMTREE:
				{
					struct stat st;

					if (lstat(e->path, &st) == 0)
						kl_remove_tree(e->path);
				}
				break;
			case KL_UNDO_RESTORE:
				kl_restore_tree(e->path, e->target, e->container);
				break;
			case KL_UNDO_PAUSE:
				kl_fault_pause(e->path);
				break;
		}
	}
	PG_CATCH();
	{
		/* an ERROR here would abort a committed transaction: report it */
		MemoryContextSwitchTo(cxt);
		EmitErrorReport();
		FlushErrorState();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/*
 * kl_undo_repoint
 *		A displaced tree was put back: entries that named it now name its
 *		original place again.
 */
static void
kl_undo_repoint(const char *from, const char *to)
{
	ListCell   *cell;

	foreach(cell, kl_undo_list)
	{
		KlUndoEntry *e = lfirst(cell);

		if (strcmp(e->path, from) == 0)
		{
			char	   *copy = MemoryContextStrdup(TopMemoryContext, to);

			pfree(e->path);
			e->path = copy;
		}
	}
}

/*
 * kl_undo_xact_callback
 *		Commit: the at-commit entries, oldest first.  Abort: the at-abort
 *		entries, newest first.  Before PREPARE: refuse while anything is
 *		pending.
 */
static void
kl_undo_xact_callback(XactEvent event, void *arg)
{
	bool		commit;
	List	   *list;
	ListCell   *cell;

	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (kl_undo_list != NIL)
			{
				KlUndoEntry *e = linitial(kl_undo_list);

				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that has called %s", e->origin),
						 errdetail(e->at_commit ?
								   "%s changes landed files when the transaction commits, and a prepared transaction cannot carry that to COMMIT PREPARED." :
								   "%s removes the files it created if the transaction rolls back, and a prepared transaction cannot carry that to ROLLBACK PREPARED.",
								   e->origin),
						 errhint("Run %s in a transaction that is committed with COMMIT.",
								 e->origin)));
			}
			return;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			commit = true;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			commit = false;
			break;
		default:
			return;
	}
	if (kl_undo_list == NIL)
		return;

	/* detach the list first: whatever happens, it is not run twice */
	list = kl_undo_list;
	kl_undo_list = NIL;
	if (commit && event != XACT_EVENT_PREPARE)
	{
		foreach(cell, list)
		{
			KlUndoEntry *e = lfirst(cell);

			if (e->at_commit)
				kl_undo_run(e);
		}
	}
	else if (!commit)
	{
		for (int i = list_length(list) - 1; i >= 0; i--)
		{
			KlUndoEntry *e = list_nth(list, i);

			if (!e->at_commit)
				kl_undo_run(e);
		}
	}
	foreach(cell, list)
		kl_undo_free(lfirst(cell));
	list_free(list);
}

/*
 * kl_undo_subxact_callback
 *		A subtransaction that commits hands its entries to its parent; one
 *		that aborts runs its at-abort entries, newest first, and drops the
 *		rest.
 */
static void
kl_undo_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	ListCell   *cell;

	if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		foreach(cell, kl_undo_list)
		{
			KlUndoEntry *e = lfirst(cell);

			if (e->subid == mySubid)
				e->subid = parentSubid;
		}
	}
	else if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		for (int i = list_length(kl_undo_list) - 1; i >= 0; i--)
		{
			KlUndoEntry *e = list_nth(kl_undo_list, i);

			if (e->subid != mySubid || e->at_commit)
				continue;
			kl_undo_run(e);
			if (e->action == KL_UNDO_RESTORE)
				kl_undo_repoint(e->path, e->target);
		}
		foreach(cell, kl_undo_list)
		{
			KlUndoEntry *e = lfirst(cell);

			if (e->subid == mySubid)
			{
				kl_undo_list = foreach_delete_current(kl_undo_list, cell);
				kl_undo_free(e);
			}
		}
	}
}

/*
 * kl_dropped_root
 *		Where displaced source directories of a landing root go.
 */
static char *
kl_dropped_root(const char *root)
{
	return psprintf("%s/%s", root, KL_DROPPED_DIR);
}

/*
 * kl_undo_displace
 *		Before create_source claims dir (<root>/<source>): if this
 *		transaction is to remove dir at commit (drop_source of the same name
 *		with drop_landing => true), move it out of the way now, let the
 *		removal follow it, and put it back if the (sub)transaction aborts.
 *		Returns whether it moved anything.
 */
bool
kl_undo_displace(const char *dir, const char *root, const char *source)
{
	ListCell   *cell;
	KlUndoEntry *pending = NULL;
	KlUndoEntry *restore;
	char	   *dropped;
	char	   *container;
	char	   *displaced;
	char		rnd_hex[9];
	uint8		rnd[4];
	struct stat st;

	foreach(cell, kl_undo_list)
	{
		KlUndoEntry *e = lfirst(cell);

		if (e->action == KL_UNDO_RMTREE && e->at_commit && strcmp(e->path, dir) == 0)
			pending = e;
	}
	if (pending == NULL)
		return false;
	if (lstat(dir, &st) != 0)
	{
		/*
		 * The dropped source left nothing there: nothing is to be removed,
		 * and the removal must not take what the new source creates.
		 */
		kl_undo_list = list_delete_ptr(kl_undo_list, pending);
		kl_undo_free(pending);
		return false;
	}

	if (!pg_strong_random(rnd, sizeof(rnd)))
		memset(rnd, 0, sizeof(rnd));
	kl_hex(rnd, sizeof(rnd), rnd_hex);
	dropped = kl_dropped_root(root);
	container = psprintf("%s/" UINT64_FORMAT "-%d-%s", dropped,
						 U64FromFullTransactionId(GetTopFullTransactionId()),
						 pending->source_id, rnd_hex);
	displaced = psprintf("%s/%s", container, source);
	kl_make_dirs(container);

	/* the entry that puts it back exists before the move */
	restore = kl_undo_add(KL_UNDO_RESTORE, false, displaced, "create_source()");
	restore->target = MemoryContextStrdup(TopMemoryContext, dir);
	restore->container = MemoryContextStrdup(TopMemoryContext, container);
	if (rename(dir, displaced) != 0)
	{
		int			save = errno;

		kl_undo_list = list_delete_ptr(kl_undo_list, restore);
		kl_undo_free(restore);
		errno = save;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not move the landing directory \"%s\" of the dropped source out of the way: %m",
						dir),
				 errhint("Commit the drop_source() before creating source \"%s\" again.", source)));
	}
	fsync_fname(root, true);
	fsync_fname(container, true);

	/* the removal at commit follows the directory */
	pfree(pending->path);
	pending->path = MemoryContextStrdup(TopMemoryContext, displaced);
	kl_undo_add(KL_UNDO_RMDIR, true, container, "drop_source()");
	return true;
}

/*
 * kl_displaced_by_us
 *		Is container one this transaction displaced (still pending)?
 */
static bool
kl_displaced_by_us(const char *container)
{
	ListCell   *cell;

	foreach(cell, kl_undo_list)
	{
		KlUndoEntry *e = lfirst(cell);

		if (e->action == KL_UNDO_RESTORE && strcmp(e->container, container) == 0)
			return true;
	}
	return false;
}

/*
 * kl_settle_displaced
 *		Finish what a backend that died left of a displacement of source's
 *		directory under root (see the file header).  Cheap when there is
 *		nothing to do: one stat of the directory of displaced trees.
 *
 *		No other transaction that displaced this source's directory can
 *		still be open here: every caller holds a lock that such a
 *		transaction holds too (the source row's FOR KEY SHARE against the
 *		drop's FOR UPDATE; create_source's new row against the unique
 *		index entry of the name).  So what is found is this transaction's
 *		own (left alone) or a dead one's: put back when the source it
 *		belonged to is still in the catalog (the drop did not commit),
 *		removed otherwise (it did, or a later drop took the source).  The
 *		transaction id in the name is for a human reading the directory: it
 *		is not trusted, since after a crash an id whose WAL never reached
 *		the disk is handed out again.
 */
void
kl_settle_displaced(const char *root, const char *source)
{
	char	   *dropped = kl_dropped_root(root);
	struct stat st;
	DIR		   *dir;
	struct dirent *de;
	List	   *candidates = NIL;
	ListCell   *cell;
	bool		locked = false;

	if (stat(dropped, &st) != 0 || !S_ISDIR(st.st_mode))
		return;
	dir = AllocateDir(dropped);
	while ((de = ReadDir(dir, dropped)) != NULL)
	{
		char	   *container;
		char	   *tree;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		container = psprintf("%s/%s", dropped, de->d_name);
		tree = psprintf("%s/%s", container, source);
		if (lstat(tree, &st) == 0 && S_ISDIR(st.st_mode) && !kl_displaced_by_us(container))
			candidates = lappend(candidates, pstrdup(de->d_name));
		pfree(container);
		pfree(tree);
	}
	FreeDir(dir);

	foreach(cell, candidates)
	{
		const char *name = lfirst(cell);
		char	   *container = psprintf("%s/%s", dropped, name);
		char	   *tree = psprintf("%s/%s", container, source);
		char	   *target = psprintf("%s/%s", root, source);
		const char *dash = strchr(name, '-');
		int32		source_id = dash ? (int32) strtol(dash + 1, NULL, 10) : 0;

		if (!locked)
		{
			/* one settler per source name at a time */
			kl_lock_source_dir(source);
			locked = true;
		}
		if (lstat(tree, &st) != 0)
			continue;			/* another session settled it meanwhile */
		if (source_id > 0 && kl_catalog_source_exists(source_id, source))
		{
			ereport(LOG,
					(errmsg("kafka_lake: putting back the landing directory of source \"%s\" that an interrupted transaction had moved to \"%s\"",
							source, tree)));
			kl_restore_tree(tree, target, container);
		}
		else
		{
			kl_remove_tree(tree);
			(void) rmdir(container);
		}
	}
}
