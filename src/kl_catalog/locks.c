/*-------------------------------------------------------------------------
 *
 * locks.c
 *	  kafka_lake's advisory locks, in one place: who owns a partition, who
 *	  bridges a date, who creates a source over a consumer group, who
 *	  settles a source's displaced directory.
 *
 * Every lock is a transaction-level advisory lock in a lock space of our own
 * (the fourth field of the lock tag), so it cannot collide with a user's
 * pg_advisory_lock keys; pg_locks shows them as advisory locks with that
 * objsubid:
 *
 *	0x4B4C "KL" (19276)	(source, partition): land() and replay() own a
 *						partition one caller at a time; a busy partition is
 *						skipped and reported "locked".  The bridge and
 *						recover() take it too, to recover a partition;
 *						close_date() waits for it (in partition order).  The
 *						objid is the partition on the source's first topic,
 *						and partition + i * 2^24 on its i-th
 *						(kl_partition_lock_key).
 *	0x4B4D "KM"			(source, business date): one bridge of a date at a
 *						time; a second caller waits, then reports the first
 *						one's run as skipped.
 *	0x4B47 "KG"			a hash of a consumer group id: create_source
 *						refuses a group another source uses, and two
 *						concurrent calls must not both take one.
 *	0x4B4E "KN"			a hash of a source name: one session at a time
 *						settles what a dead backend left of a displaced
 *						source directory (fileundo.c).
 *	0x4B58 "KX"			(source): one exclude(), unexclude() or recovery of
 *						a source's exclusion units at a time (exclude.c);
 *						taken before any partition lock.
 *	0x4B45 "KE"			(source): one export() of a source at a time
 *						(export.c): what its staging directory holds is
 *						then a dead call's.
 *
 * Under REPEATABLE READ or SERIALIZABLE a partition that another session
 * changed after the transaction's snapshot is refused with a serialization
 * failure once its lock is held: the transaction cannot see what the other
 * one landed (kl_check_partition_snapshot).
 *
 * IDENTIFICATION
 *	  src/kl_catalog/locks.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/timestamp.h"

#include "kl_catalog/catalog.h"
#include "kl_catalog/locks.h"

#define KL_LOCK_SPACE_PARTITION		0x4B4C	/* "KL" */
#define KL_LOCK_SPACE_BRIDGE		0x4B4D	/* "KM" */
#define KL_LOCK_SPACE_GROUP			0x4B47	/* "KG" */
#define KL_LOCK_SPACE_SOURCE_DIR	0x4B4E	/* "KN" */
#define KL_LOCK_SPACE_EXCLUSIONS	0x4B58	/* "KX" */
#define KL_LOCK_SPACE_EXPORT		0x4B45	/* "KE" */

static void kl_check_partition_snapshot(KlSource *src, int32 partition);

/*
 * kl_partition_lock_key
 *		The objid of a partition's lock: the partition, and which of the
 *		source's topics it is of in the top byte (a topic has fewer than
 *		2^24 partitions: Kafka's own limits are far below).
 */
static uint32
kl_partition_lock_key(const KlSource *src, int32 partition)
{
	return (uint32) partition + ((uint32) src->topic_index << 24);
}

/*
 * kl_try_lock_partition
 *		Own a partition of a source until the end of the transaction, if no
 *		other session does.
 */
bool
kl_try_lock_partition(KlSource *src, int32 partition)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) src->source_id,
						 kl_partition_lock_key(src, partition), KL_LOCK_SPACE_PARTITION);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	if (IsolationUsesXactSnapshot())
		kl_check_partition_snapshot(src, partition);
	return true;
}

/*
 * kl_lock_partition_wait
 *		Own a partition of a source until the end of the transaction,
 *		waiting for its owner to finish, but not beyond the deadline (false
 *		then).  close_date() needs every partition, so it waits where land()
 *		skips.  The wait polls (10 ms doubling to 200 ms), so that cancel and
 *		statement_timeout end it at once; pg_stat_activity shows it as
 *		wait_event_type "Extension".
 */
bool
kl_lock_partition_wait(KlSource *src, int32 partition, TimestampTz deadline)
{
	long		delay_ms = 10;

	for (;;)
	{
		TimestampTz now;
		long		secs;
		int			usecs;

		if (kl_try_lock_partition(src, partition))
			return true;
		now = GetCurrentTimestamp();
		if (now >= deadline)
			return false;
		TimestampDifference(now, deadline, &secs, &usecs);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(Min(delay_ms, secs * 1000 + usecs / 1000), 1),
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		delay_ms = Min(delay_ms * 2, 200);
	}
}

/*
 * kl_unlock_partition
 *		Give up one hold of a partition taken by kl_try_lock_partition, before
 *		the end of the transaction (the bridge, once it has recovered a
 *		partition without changing the catalog, so that land() need not wait
 *		for the whole bridge).
 */
void
kl_unlock_partition(KlSource *src, int32 partition)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) src->source_id,
						 kl_partition_lock_key(src, partition), KL_LOCK_SPACE_PARTITION);
	LockRelease(&tag, ExclusiveLock, false);
}

/*
 * kl_check_partition_snapshot
 *		Under REPEATABLE READ or SERIALIZABLE, refuse a partition that another
 *		session landed or committed after this transaction's snapshot was
 *		taken.  Such a transaction cannot see the other session's batches:
 *		it would take them for batches the catalog lacks and adopt them again
 *		(a unique violation on batches), or land from a stale position.
 *		Landing correctly needs the latest catalog, so the answer is a
 *		serialization failure: retry, or run in READ COMMITTED.  The test
 *		compares what the transaction's snapshot and the latest one see of
 *		the partition (kl_catalog_partition_changed).
 */
static void
kl_check_partition_snapshot(KlSource *src, int32 partition)
{
	if (kl_catalog_partition_changed(src, partition))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access to partition %d of source \"%s\" due to a concurrent landing",
						partition, src->source),
				 errdetail("Another session landed or committed this partition after this transaction's snapshot was taken; "
						   "under %s this transaction cannot see it. Nothing was changed for this partition.",
						   XactIsoLevel == XACT_SERIALIZABLE ? "SERIALIZABLE" : "REPEATABLE READ"),
				 errhint("Call land(), replay(), recover() and bridge() in READ COMMITTED (the default), or retry the transaction.")));
}

/*
 * kl_lock_bridge_date
 *		Wait until no other session bridges this (source, date); hold the
 *		lock until the end of the transaction.
 */
void
kl_lock_bridge_date(int32 source_id, DateADT date)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) source_id, (uint32) date,
						 KL_LOCK_SPACE_BRIDGE);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * kl_lock_group_id
 *		Serialise the creation of sources that name the same consumer group
 *		(a transaction-level advisory lock in kafka_lake's own lock space,
 *		keyed by a hash of the group id), so that two concurrent
 *		create_source calls cannot both take one group.
 */
void
kl_lock_group_id(const char *group_id)
{
	LOCKTAG		tag;
	uint64		h = hash_bytes_extended((const unsigned char *) group_id,
										strlen(group_id), 0);

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (h >> 32), (uint32) h,
						 KL_LOCK_SPACE_GROUP);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * kl_lock_source_dir
 *		One settler of a source name's displaced directories at a time
 *		(fileundo.c).
 */
void
kl_lock_source_dir(const char *source)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, hash_bytes((const unsigned char *) source,
													   strlen(source)),
						 0, KL_LOCK_SPACE_SOURCE_DIR);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * kl_lock_exclusions
 *		Wait until no other session excludes, unexcludes or recovers the
 *		exclusion units of this source; hold the lock until the end of the
 *		transaction.  Taken before any partition lock, so that two callers
 *		never wait for each other's partitions.
 */
void
kl_lock_exclusions(KlSource *src)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) src->source_id, 0,
						 KL_LOCK_SPACE_EXCLUSIONS);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * kl_lock_export
 *		Wait until no other session exports a date of this source; hold the
 *		lock until the end of the transaction.
 */
void
kl_lock_export(int32 source_id)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) source_id, 0, KL_LOCK_SPACE_EXPORT);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}
