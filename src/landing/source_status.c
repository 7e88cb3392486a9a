/*-------------------------------------------------------------------------
 *
 * source_status.c
 *	  The state of every source at a glance (the view
 *	  kafka_lake.source_status): the last error of a failed land() per
 *	  partition, and the privilege check shared by the functions behind
 *	  kafka_lake's views.
 *
 * WHERE EACH COLUMN OF source_status COMES FROM
 *
 * The view reads the catalog only; it never asks the broker (lag() does).
 * Landing times, batches, bytes and counts come from kafka_lake.batches,
 * the committed offset from offset_commits, the watermarks and the status
 * of the last call that owned each partition from partition_state (land()
 * and close_date() write it once per call, for the partitions they owned:
 * catalog_status.c), the dates not closed from batches and date_closings.
 * Only the last error cannot come from the catalog: a failed land() rolls
 * its transaction back, and whatever it wrote with it.
 *
 * THE LAST ERROR OF A FAILED CALL
 *
 * So it is kept in shared memory: a small table of slots, one per
 * (database, source, topic, partition) (the topic as its index among the
 * source's topics, which the view names), each holding the error's SQLSTATE, its
 * message (cut to KL_STATUS_MESSAGE_LEN bytes) and when it happened.  A
 * partition of -1 stands for an error that came before the call owned any
 * partition (the broker did not answer, the cluster id changed); the view
 * shows it on every partition of the source.  A new error of a key replaces
 * the old one; when every slot is taken, the oldest error goes.  The table
 * exists only when kafka_lake is in shared_preload_libraries (its size is
 * fixed at server start) and is empty after a restart; without it the view
 * shows no errors.  Errors never carry secrets (kafka.c scrubs librdkafka's
 * text before it reaches one), but they do name brokers, topics and groups:
 * the text of a source's error is shown only to a role that may read the
 * source (SELECT on kafka_lake.<source>_records, kl_role_may_read_source);
 * every reader of the view sees that a call failed, when, and its SQLSTATE,
 * which is what an alert needs.
 *
 * PRIVILEGES OF THE FUNCTIONS BEHIND THE VIEWS
 *
 * A view calls its functions with the rights of the role that reads it, so
 * a role granted SELECT on source_status (or late_events) would also need
 * EXECUTE on the function inside.  As pg_stat_statements does, those
 * functions are executable by everyone and check the privilege themselves:
 * kl_check_view_reader answers 42501 to a role that may not SELECT the view
 * the function backs.  One grant, on the view, is then all a monitoring
 * role needs, and the function gives nobody more than the view does.
 *
 * IDENTIFICATION
 *	  src/landing/source_status.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "kafka/options.h"
#include "kl_catalog/catalog.h"
#include "landing/source_status.h"

PG_FUNCTION_INFO_V1(kafka_lake_source_errors);

#define KL_STATUS_SLOTS			256
#define KL_STATUS_MESSAGE_LEN	400
#define KL_STATUS_TRANCHE		"kafka_lake source status"

/* The last error of one (database, source, partition) */
typedef struct KlErrorSlot
{
	Oid			dbid;			/* InvalidOid: free */
	int32		source_id;
	int32		topic_index;	/* which of the source's topics */
	int32		partition;		/* -1: the call as a whole */
	int			sqlerrcode;
	TimestampTz failed_at;
	char		message[KL_STATUS_MESSAGE_LEN + 1];
} KlErrorSlot;

/* The table in shared memory */
typedef struct KlErrorTable
{
	LWLock	   *lock;			/* protects slots */
	KlErrorSlot slots[KL_STATUS_SLOTS];
} KlErrorTable;

static KlErrorTable *kl_errors = NULL;
static kl_shmem_request_fn kl_prev_shmem_request = NULL;
static shmem_startup_hook_type kl_prev_shmem_startup = NULL;

/*
 * kl_status_shmem_request
 *		Ask for the error table and its lock.
 */
static void
kl_status_shmem_request(void)
{
	if (kl_prev_shmem_request)
		kl_prev_shmem_request();
	RequestAddinShmemSpace(MAXALIGN(sizeof(KlErrorTable)));
	RequestNamedLWLockTranche(KL_STATUS_TRANCHE, 1);
}

/*
 * kl_status_shmem_startup
 *		Create (in the postmaster) or attach to the error table.
 */
static void
kl_status_shmem_startup(void)
{
	bool		found;

	if (kl_prev_shmem_startup)
		kl_prev_shmem_startup();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	kl_errors = ShmemInitStruct("kafka_lake source status", sizeof(KlErrorTable), &found);
	if (!found)
	{
		memset(kl_errors->slots, 0, sizeof(kl_errors->slots));
		kl_errors->lock = &(GetNamedLWLockTranche(KL_STATUS_TRANCHE))->lock;
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * kl_status_shmem_init
 *		From _PG_init: install the hooks that create the error table, when
 *		the library is being preloaded (otherwise there is none).
 */
void
kl_status_shmem_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	kl_hook_shmem_request(&kl_prev_shmem_request, kl_status_shmem_request);
	kl_prev_shmem_startup = shmem_startup_hook;
	shmem_startup_hook = kl_status_shmem_startup;
}

/*
 * kl_status_record_error
 *		In a PG_CATCH block of land() or close_date(): keep the error being
 *		handled as the last one of (this database, source_id, partition).
 *		cxt is a memory context other than ErrorContext.  The error stays
 *		the current one, to be raised again.
 */
void
kl_status_record_error(int32 source_id, int32 topic_index, int32 partition, MemoryContext cxt)
{
	MemoryContext old;
	ErrorData  *edata;
	KlErrorSlot *slot = NULL;
	int			len;

	if (kl_errors == NULL)
		return;
	old = MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	MemoryContextSwitchTo(old);

	LWLockAcquire(kl_errors->lock, LW_EXCLUSIVE);
	for (int i = 0; i < KL_STATUS_SLOTS; i++)
	{
		KlErrorSlot *s = &kl_errors->slots[i];

		if (s->dbid == MyDatabaseId && s->source_id == source_id && s->partition == partition &&
			(partition < 0 || s->topic_index == topic_index))
		{
			slot = s;
			break;
		}
		if (slot == NULL || (slot->dbid != InvalidOid &&
							 (s->dbid == InvalidOid || s->failed_at < slot->failed_at)))
			slot = s;			/* a free slot, else the oldest */
	}
	slot->dbid = MyDatabaseId;
	slot->source_id = source_id;
	slot->topic_index = partition < 0 ? 0 : topic_index;
	slot->partition = partition;
	slot->sqlerrcode = edata->sqlerrcode;
	slot->failed_at = GetCurrentTimestamp();
	len = edata->message ? pg_mbcliplen(edata->message, strlen(edata->message),
										KL_STATUS_MESSAGE_LEN) : 0;
	memcpy(slot->message, edata->message ? edata->message : "", len);
	slot->message[len] = '\0';
	LWLockRelease(kl_errors->lock);
	FreeErrorData(edata);
}

/*
 * kl_check_view_reader
 *		The function behind kafka_lake.<view> answers only a role that may
 *		read the view (see the file header): 42501 otherwise.
 */
void
kl_check_view_reader(const char *view)
{
	Oid			relid = get_relname_relid(view, get_namespace_oid("kafka_lake", false));

	if (!OidIsValid(relid) || pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for view %s", view),
				 errhint("Read the view kafka_lake.%s; its owner grants SELECT on it.", view)));
}

/*
 * kafka_lake_source_errors
 *		source_errors(): the last error kept of each (source, partition) of
 *		this database: source_id, partition (NULL: the call as a whole),
 *		sqlstate, message, failed_at, and (1.6) topic_index, the index of
 *		the partition's topic among the source's (from 0; NULL with the
 *		partition).  Behind kafka_lake.source_status.
 */
Datum
kafka_lake_source_errors(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KlErrorSlot *copy;
	int			n = 0;
	int32	   *ids;
	char	  **names;
	bool	   *readable;
	int			nsources;

	kl_check_view_reader("source_status");
	kl_init_materialized_srf(fcinfo);
	if (kl_errors == NULL)
		return (Datum) 0;

	copy = palloc(sizeof(KlErrorSlot) * KL_STATUS_SLOTS);
	LWLockAcquire(kl_errors->lock, LW_SHARED);
	for (int i = 0; i < KL_STATUS_SLOTS; i++)
	{
		if (kl_errors->slots[i].dbid == MyDatabaseId)
			copy[n++] = kl_errors->slots[i];
	}
	LWLockRelease(kl_errors->lock);
	if (n == 0)
		return (Datum) 0;

	/* which sources the caller may read: their errors' text is shown */
	nsources = kl_catalog_source_names(&ids, &names);
	readable = palloc(sizeof(bool) * Max(nsources, 1));
	for (int s = 0; s < nsources; s++)
		readable[s] = kl_role_may_read_source(names[s], GetUserId());

	for (int i = 0; i < n; i++)
	{
		Datum		values[6];
		bool		nulls[6] = {0};
		int			s = 0;

		while (s < nsources && ids[s] != copy[i].source_id)
			s++;
		if (s == nsources)
			continue;			/* a source dropped since */
		values[0] = Int32GetDatum(copy[i].source_id);
		values[1] = Int32GetDatum(copy[i].partition);
		nulls[1] = (copy[i].partition < 0);
		values[2] = CStringGetTextDatum(unpack_sql_state(copy[i].sqlerrcode));
		/* the text may name the broker, the topic, the group: readers only */
		if (readable[s])
			values[3] = CStringGetTextDatum(copy[i].message);
		else
			nulls[3] = true;
		values[4] = TimestampTzGetDatum(copy[i].failed_at);
		/* a catalog before 1.6 declares five columns */
		values[5] = Int32GetDatum(copy[i].topic_index);
		nulls[5] = (copy[i].partition < 0);
		Assert(rsinfo->setDesc->natts <= 6);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
