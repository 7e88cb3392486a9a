/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  The catalog tables of schema kafka_lake: every read and write of them
 *	  (but the bridge's own, catalog_bridge.c), and the section every
 *	  statement runs in.
 *
 * The catalog belongs to the extension's owner.  Its functions are granted
 * by EXECUTE, and the foreign tables by SELECT, so every catalog access here
 * runs as the extension owner (kl_catalog_begin switches the user id the way
 * PostgreSQL's own RI triggers do, with SECURITY_LOCAL_USERID_CHANGE, and
 * marks the section a security-restricted operation), while everything that
 * decides what a role may do (which user mapping, which Kafka credentials)
 * is resolved beforehand as the calling role.
 *
 * Running as the owner on a caller's behalf is only safe if nothing of the
 * caller's choosing runs inside.  The SQL text of a catalog query names its
 * functions, operators and types unqualified as often as not, and the parser
 * resolves those through search_path: a role that put its own "=" or
 * strpos() first on its search_path would have them called with the owner's
 * rights.  So kl_catalog_begin also pins search_path to "pg_catalog,
 * pg_temp" for the section (as PostgreSQL does for an extension script and a
 * function's SET clause), pg_temp explicitly last so that no temporary
 * relation or type shadows a catalog one (functions and operators are never
 * looked up in pg_temp), and kl_catalog_end restores it.  Catalog tables are
 * always named with their schema.  Every SPI statement of kafka_lake runs
 * between kl_catalog_begin and kl_catalog_end.
 *
 * Per-record identity is kept compact: a batch has one row in batches and
 * one in coordinates (its offset range, the offsets present when there are
 * gaps, 32 bytes of fingerprint and one status letter per record).  Only an
 * accepted event_id costs a row, in accepted_events, because its uniqueness
 * (I3) must be enforced by the database across concurrent sessions.
 *
 * EVENT IDENTITY: A UNIQUE BTREE, OFF THE CRITICAL PATH (DESIGN NOTE)
 *
 * accepted_events keeps one row per accepted event_id, keyed by a uuid
 * primary key (event_key, kafka_lake.event_key(): for a source made before
 * 1.13 the first 16 bytes of SHA-256(source_id || event_id); from 1.13 the
 * ordered key of digest.c, the event_id packed after the source_id when it
 * can be), written straight to the heap and the
 * index (bulk_insert.c, unique check on, keys sorted per window).  The
 * index is the arbiter of I3: a concurrent session's uncommitted key makes
 * the insert wait, a committed one raises the unique violation that
 * kl_try_insert_events catches, and nothing serialises sessions whose
 * event_ids differ.  It is WAL-logged (crash, replica and PITR safe, with
 * nothing to rebuild) and can be rebuilt from the landing (the accepted
 * lines carry every event_id).
 *
 * What it costs, and what was measured against it (2-vCPU Intel Xeon KVM
 * machine, PostgreSQL 15, shared_buffers 128 MB; a harness doing exactly
 * what kl_insert_events and kl_mark_known_events do, in microseconds per
 * key, inserting 1 M keys into a table of 0 / 1 M / 10 M keys):
 *	- this design: 1.3-1.5 / 1.5-1.8 / 4.3-4.9 (1.7 at 0 in the landing's
 *	  shape of 10,000-key windows); 40 B of index and 60 B of heap per key;
 *	  a probe costs 50-65 % of an insert; with shared_buffers 4 GB 1.3 /
 *	  1.6 / 2.9;
 *	- int8 key (first 8 bytes) plus the other 8 in the row and a collision
 *	  side table: 10-25 % cheaper (1.2 / 1.4 / 3.9), 29 % smaller, but a
 *	  user-visible key that is no longer a uuid;
 *	- partitioning accepted_events by key (16 or 64 range partitions, or
 *	  hash): 30 % to 2.4 times slower (each window touches every partition);
 *	- sorted key runs (an LSM in a table): 0.44 / 0.54 / 2.2-2.7, but the
 *	  check of a window reads every run (cost linear in the source: about
 *	  20 us per key at 100 M), memory not flat without chunked runs, and I3
 *	  across sessions needs a per-source lock held for the whole land()
 *	  (measured to break I3 under REPEATABLE READ without a latest-snapshot
 *	  rule);
 *	- an unlogged table: 20-25 % cheaper, but empty after every crash and
 *	  unreadable on a replica: rejected; wal_compression, index fillfactor,
 *	  deduplicate_items: no effect; a hash index (exclusion constraint): 30 %
 *	  slower; BRIN bloom: no uniqueness, 96 ms per lookup;
 *	- an order-preserving key (the event_id's own bytes when short, a
 *	  0xFF-prefixed hash otherwise, per source): for time-ordered ids the
 *	  cost stays flat as the source grows (1.6 / 1.9 / 2.3 against 1.7 /
 *	  2.3 / 5.6 hashed, in 10,000-key windows): 2.4 times cheaper at 10 M,
 *	  no gain for a young source or random ids.
 * So the unique btree stays, and the landing takes it off its critical
 * path instead (land.c, land_worker.c): while the backend reserves a
 * batch's event_ids, the helper thread writes the batch's files, and the
 * judging of the window before it is split over both threads.  In
 * bench/land.sh (1,000,000 new events over 100 partitions) the reservation
 * was 49 % of the backend's samples before (perf: 36 % of all, the backend
 * 72 %), and is about 65 % of the backend's after; the writing it now hides
 * cost the backend 16 %.  The per-window sort of the keys uses the inlined
 * sort template (qsort through a comparator was 5 % of the backend).  The
 * order-preserving key came in 1.13, per source (sources.event_keys: a
 * source keeps the scheme its rows are keyed by, so those made before keep
 * hashed keys): in bench/growth.sh the WAL of the sixth landing of 500,000
 * events is 149 MB with hashed keys and 81 MB, as the first's, with ordered
 * ones (see digest.c); the time moved within a 2-vCPU machine's noise.  Random ids (UUIDv4) gain nothing from it; for them the sizing
 * rule stays: about 100 B per accepted event, and the index should fit in
 * shared_buffers (or a dedupe horizon bounds it).
 *
 * Every statement on the catalog is here, or in catalog_bridge.c for the
 * bridge's own tables, catalog_close.c for the certificates of closed dates,
 * catalog_status.c for partition_state and catalog_lifecycle.c for
 * compaction and expiry: callers get C structs (KlSource, KlBatch, ...) and
 * never see SQL.  kafka_lake.batches in particular has one reader of whole
 * batches, kl_catalog_scan_batches, for the foreign table, the bridge,
 * recover(), verify() and compact().  What must go faster than SQL allows
 * (the accepted event_ids of a landing) goes straight to the table
 * (bulk_insert.c), still here.
 *
 * IDENTIFICATION
 *	  src/kl_catalog/catalog.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "base/args.h"
#include "base/bulk_insert.h"
#include "base/digest.h"
#include "format/batch_format.h"
#include "kl_catalog/catalog.h"

static void kl_spi_exec_latest(const char *sql, int nargs, Oid *types, Datum *values,
							   int expected);

/* the extension owner, looked up once per transaction */
static Oid	kl_owner_cache = InvalidOid;
static LocalTransactionId kl_owner_cache_lxid = InvalidLocalTransactionId;

/*
 * kl_extension_owner
 *		The role that owns the extension, and so the catalog.
 */
static Oid
kl_extension_owner(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			extid;

	if (OidIsValid(kl_owner_cache) && kl_owner_cache_lxid == MyProc->lxid)
		return kl_owner_cache;

	extid = get_extension_oid("kafka_lake", false);
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extid));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "could not find extension kafka_lake");
	kl_owner_cache = ((Form_pg_extension) GETSTRUCT(tup))->extowner;
	kl_owner_cache_lxid = MyProc->lxid;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return kl_owner_cache;
}

/*
 * kl_catalog_begin
 *		Connect to SPI, act as the extension's owner in a security-restricted
 *		operation, and pin search_path to pg_catalog (see the file header);
 *		returns what kl_catalog_end restores.  After an ERROR the transaction
 *		(or subtransaction) machinery restores the user id, the setting and
 *		SPI by itself.
 */
KlCatalogSave
kl_catalog_begin(void)
{
	KlCatalogSave save;
	Oid			owner = kl_extension_owner();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	GetUserIdAndSecContext(&save.userid, &save.sec_context);
	SetUserIdAndSecContext(owner, save.sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	save.guc_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	return save;
}

/*
 * kl_catalog_end
 *		Back to the caller's search_path and role; disconnect from SPI.
 */
void
kl_catalog_end(KlCatalogSave save)
{
	AtEOXact_GUC(true, save.guc_nestlevel);
	SetUserIdAndSecContext(save.userid, save.sec_context);
	SPI_finish();
}

/*
 * kl_spi_exec
 *		Run a parameterised statement; ERROR unless it returns expected.
 */
static void
kl_spi_exec(const char *sql, int nargs, Oid *types, Datum *values,
			const char *nulls, int expected)
{
	int			rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);

	if (rc != expected)
		elog(ERROR, "unexpected SPI result %s for: %s", SPI_result_code_string(rc), sql);
}

/*
 * kl_spi_exec_kept
 *		kl_spi_exec for the statements a landing runs once per batch or per
 *		partition: their plans are kept for the session (SPI_keepplan), as
 *		PL/pgSQL keeps its statements', so that a landing of many small
 *		batches does not parse and plan the same text each time: land() of
 *		200,000 events over 1,000 partitions took 3.18 s instead of 3.84 s
 *		(medians of six runs each, alternated, on a file system with no
 *		recent deletes; the process's CPU time 2.67 s instead of 3.38 s;
 *		see bench/partitions.sh for why the wait matters).  A plan is found by
 *		its text and parameter types; PostgreSQL's plan cache revalidates it
 *		when a relation, type or function it depends on changes (ALTER
 *		EXTENSION UPDATE) or search_path differs from the one it was made
 *		under (it is always the pinned one here), and checks permissions at
 *		every execution, as the role the section runs as.  At most
 *		KL_KEPT_PLANS texts are kept; any further one runs unkept.
 */
#define KL_KEPT_PLANS 32

typedef struct KlKeptPlan
{
	char	   *sql;
	int			nargs;
	Oid			types[32];
	SPIPlanPtr	plan;
} KlKeptPlan;

static KlKeptPlan kl_kept_plans[KL_KEPT_PLANS];
static int	kl_nkept_plans = 0;

static void
kl_spi_exec_kept(const char *sql, int nargs, Oid *types, Datum *values,
				 const char *nulls, int expected)
{
	SPIPlanPtr	plan = NULL;
	int			rc;

	for (int i = 0; i < kl_nkept_plans && plan == NULL; i++)
	{
		KlKeptPlan *k = &kl_kept_plans[i];

		if (k->nargs == nargs && strcmp(k->sql, sql) == 0 &&
			memcmp(k->types, types, nargs * sizeof(Oid)) == 0)
			plan = k->plan;
	}
	if (plan == NULL)
	{
		if (kl_nkept_plans == KL_KEPT_PLANS || nargs > lengthof(kl_kept_plans[0].types))
		{
			kl_spi_exec(sql, nargs, types, values, nulls, expected);
			return;
		}
		plan = SPI_prepare(sql, nargs, types);
		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for: %s", sql);
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed for: %s", sql);
		kl_kept_plans[kl_nkept_plans].sql = MemoryContextStrdup(TopMemoryContext, sql);
		kl_kept_plans[kl_nkept_plans].nargs = nargs;
		memcpy(kl_kept_plans[kl_nkept_plans].types, types, nargs * sizeof(Oid));
		kl_kept_plans[kl_nkept_plans].plan = plan;
		kl_nkept_plans++;
	}
	rc = SPI_execute_plan(plan, values, nulls, false, 0);
	if (rc != expected)
		elog(ERROR, "unexpected SPI result %s for: %s", SPI_result_code_string(rc), sql);
}

/*
 * kl_spi_exec_latest
 *		Run a parameterised statement with the newest snapshot rather than
 *		the transaction's: it sees what other sessions committed since a
 *		REPEATABLE READ transaction began, and rows committed by transactions
 *		we waited for (as PostgreSQL's foreign key checks do); ERROR unless
 *		it returns expected.
 */
static void
kl_spi_exec_latest(const char *sql, int nargs, Oid *types, Datum *values, int expected)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, types);
	int			rc;

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for: %s", sql);
	CommandCounterIncrement();
	rc = SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(), InvalidSnapshot,
							  expected == SPI_OK_SELECT, true, 0);
	if (rc != expected)
		elog(ERROR, "unexpected SPI result %s for: %s", SPI_result_code_string(rc), sql);
	SPI_freeplan(plan);
}

/*
 * kl_int32_cmp
 *		qsort's and bsearch's order of int32s.
 *
 * kl_source_read_partitions
 *		src->partitions from a value of sources.partitions (in the current
 *		memory context).  The table's CHECK keeps it a one-dimensional,
 *		non-empty array of partitions >= 0 without NULLs; they are kept in
 *		ascending order here whatever order an edited row has, so that
 *		kl_source_owns can search them.
 */
int
kl_int32_cmp(const void *a, const void *b)
{
	int32		x = *(const int32 *) a;
	int32		y = *(const int32 *) b;

	return (x > y) - (x < y);
}

static void
kl_source_read_partitions(KlSource *src, Datum value, bool isnull)
{
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	src->partitions = NULL;
	src->npartitions = 0;
	if (isnull)
		return;
	arr = DatumGetArrayTypeP(value);
	deconstruct_array(arr, INT4OID, sizeof(int32), true, TYPALIGN_INT, &elems, &nulls, &n);
	if (n == 0)
		return;
	src->partitions = palloc(sizeof(int32) * n);
	for (int i = 0; i < n; i++)
	{
		if (nulls[i] || DatumGetInt32(elems[i]) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("source \"%s\" owns a partition that is not one", src->source),
					 errhint("The catalog was edited: set the source's partitions with kafka_lake.set_partitions().")));
		src->partitions[i] = DatumGetInt32(elems[i]);
	}
	qsort(src->partitions, n, sizeof(int32), kl_int32_cmp);
	src->npartitions = n;
}

/*
 * kl_source_owns
 *		Does this server land partition p of the source's topics?  A source
 *		without partitions (the default) owns every partition.
 */
bool
kl_source_owns(const KlSource *src, int32 partition)
{
	if (src->npartitions == 0)
		return true;
	return bsearch(&partition, src->partitions, src->npartitions, sizeof(int32),
				   kl_int32_cmp) != NULL;
}

/*
 * kl_source_partitions_text
 *		The partitions a source owns as an array literal ({0,2,5}), for
 *		messages; "every partition" when it owns them all.
 */
char *
kl_source_partitions_text(const KlSource *src)
{
	StringInfoData buf;

	if (src->npartitions == 0)
		return pstrdup("every partition");
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int i = 0; i < src->npartitions; i++)
		appendStringInfo(&buf, "%s%d", i ? "," : "", src->partitions[i]);
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

/*
 * kl_source_lookup
 *		The source of that name; ERROR when there is none.
 */
KlSource *
kl_source_lookup(const char *name)
{
	KlCatalogSave cs;
	KlSource   *src = palloc0(sizeof(KlSource));
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};
	MemoryContext caller = CurrentMemoryContext;

	cs = kl_catalog_begin();
	kl_spi_exec(psprintf("SELECT source_id, source, server, topic, group_id, contract, cluster_id,"
						 " landing_dir, %s, %s, %s, %s FROM kafka_lake.sources WHERE source = $1",
						 kl_catalog_has_contracts() ? "contract_version" : "1",
						 kl_catalog_has_compression() ? "compression" : "'none'",
						 kl_catalog_has_partitions() ? "partitions" : "NULL::integer[]",
						 kl_catalog_has_event_keys() ? "event_keys = 'ordered'" : "false"),
				1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		kl_catalog_end(cs);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("source \"%s\" does not exist", name),
				 errhint("Create it with kafka_lake.create_source(); the existing ones are listed in kafka_lake.sources.")));
	}
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(caller);
		bool		isnull;

		src->source_id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		src->source = SPI_getvalue(tup, desc, 2);
		src->server = SPI_getvalue(tup, desc, 3);
		src->ntopics = kl_split_topics(SPI_getvalue(tup, desc, 4), &src->topics);
		src->topic = src->topics[0];
		src->topic_index = 0;
		src->group_id = SPI_getvalue(tup, desc, 5);
		src->contract = SPI_getvalue(tup, desc, 6);
		src->cluster_id = SPI_getvalue(tup, desc, 7);
		src->dir = psprintf("%s/%s", SPI_getvalue(tup, desc, 8), src->source);
		src->contract_version = DatumGetInt32(SPI_getbinval(tup, desc, 9, &isnull));
		src->compression = kl_compression_of(SPI_getvalue(tup, desc, 10));
		if (src->compression < 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("source \"%s\" has a compression kafka_lake does not know", src->source),
					 errhint("The catalog was edited: set it with kafka_lake.set_compression().")));
		{
			Datum		partitions = SPI_getbinval(tup, desc, 11, &isnull);

			kl_source_read_partitions(src, partitions, isnull);
		}
		src->ordered_keys = DatumGetBool(SPI_getbinval(tup, desc, 12, &isnull));
		MemoryContextSwitchTo(old);
	}
	kl_catalog_end(cs);
	return src;
}

/*
 * kl_split_topics
 *		The topics of sources.topic (one, or several separated by commas).
 */
int
kl_split_topics(const char *list, char ***topics)
{
	int			n = 1;
	char	   *copy = pstrdup(list);
	char	   *p = copy;

	for (const char *c = list; *c; c++)
		n += (*c == ',');
	*topics = palloc(sizeof(char *) * n);
	for (int i = 0; i < n; i++)
	{
		char	   *comma = strchr(p, ',');

		if (comma)
			*comma = '\0';
		(*topics)[i] = p;
		p = comma ? comma + 1 : p + strlen(p);
	}
	return n;
}

/*
 * kl_source_topic
 *		The source, on its i-th topic: what works per partition works on
 *		such a copy.
 */
KlSource *
kl_source_topic(const KlSource *src, int i)
{
	KlSource   *copy = palloc(sizeof(KlSource));

	Assert(i >= 0 && i < src->ntopics);
	*copy = *src;
	copy->topic = src->topics[i];
	copy->topic_index = i;
	return copy;
}

/*
 * kl_source_topic_index
 *		Which of the source's topics this is; -1 for none of them.
 */
int
kl_source_topic_index(const KlSource *src, const char *topic)
{
	for (int i = 0; i < src->ntopics; i++)
	{
		if (strcmp(src->topics[i], topic) == 0)
			return i;
	}
	return -1;
}

/*
 * kl_source_topic_arg
 *		The source on the topic a function's argument names (it may be
 *		absent: a function declared by an older catalog).  Left out or NULL,
 *		it is the source's only topic; for a source of several, NULL (every
 *		topic) unless required, when it is an ERROR.  22023 for a topic that
 *		is not the source's.
 */
KlSource *
kl_source_topic_arg(const KlSource *src, FunctionCallInfo fcinfo, int argno, bool required)
{
	const char *topic;
	int			i;

	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
	{
		if (src->ntopics == 1)
			return kl_source_topic(src, 0);
		if (!required)
			return NULL;
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("source \"%s\" lands %d topics: name the topic of the partition",
						src->source, src->ntopics),
				 errhint("Add topic => '%s' (the source's topics are %s).",
						 src->topics[0], kl_source_topics_text(src))));
	}
	topic = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	i = kl_source_topic_index(src, topic);
	if (i < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("topic \"%s\" is not a topic of source \"%s\"", topic, src->source),
				 errhint("The source's topics are %s.", kl_source_topics_text(src))));
	return kl_source_topic(src, i);
}

/*
 * kl_source_topics_text
 *		The source's topics as sources.topic holds them: separated by commas.
 */
char *
kl_source_topics_text(const KlSource *src)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < src->ntopics; i++)
		appendStringInfo(&buf, "%s%s", i ? "," : "", src->topics[i]);
	return buf.data;
}

/*
 * kl_replay_call
 *		The replay() call that lands offsets from..to of a partition of the
 *		source's topic, for a hint (with the topic for a source of several).
 */
char *
kl_replay_call(const KlSource *src, int32 partition, int64 from, int64 to)
{
	if (src->ntopics == 1)
		return psprintf("kafka_lake.replay('%s', %d, %lld, %lld)", src->source, partition,
						(long long) from, (long long) to);
	return psprintf("kafka_lake.replay('%s', %d, %lld, %lld, topic => '%s')", src->source,
					partition, (long long) from, (long long) to, src->topic);
}

/*
 * kl_topic_or_null
 *		What accepted_events.topic holds for the source's current topic:
 *		NULL for its first (so that a source of one topic pays nothing).
 */
const char *
kl_topic_or_null(const KlSource *src)
{
	return src->topic_index == 0 ? NULL : src->topic;
}

/*
 * kl_event_topic_qual
 *		The condition that an accepted_events row (of alias, or unqualified
 *		for NULL) names a coordinate of the topic passed as parameter param
 *		(kl_topic_or_null: NULL for the source's first topic).  A catalog
 *		before 1.6 has no topic column, and a source of one topic only.
 */
char *
kl_event_topic_qual(const char *alias, int param)
{
	if (!kl_catalog_has_topic_lists())
		return psprintf(" AND $%d::text IS NULL", param);
	return psprintf(" AND %s%stopic IS NOT DISTINCT FROM $%d",
					alias ? alias : "", alias ? "." : "", param);
}

/*
 * kl_catalog_has_topic_lists
 *		May a source land several topics (1.6 and later: accepted_events and
 *		date_closing_partitions name the topic)?
 */
bool
kl_catalog_has_topic_lists(void)
{
	return get_attnum(kl_catalog_relid("accepted_events"), "topic") != InvalidAttrNumber;
}

/*
 * kl_source_arg
 *		The source named by a function's argument; 22004 for a NULL, 42704
 *		for an unknown name.
 */
KlSource *
kl_source_arg(FunctionCallInfo fcinfo, int argno)
{
	kl_check_not_null(fcinfo, argno, "source", NULL);
	return kl_source_lookup(text_to_cstring(PG_GETARG_TEXT_PP(argno)));
}

/*
 * kl_catalog_lock_source
 *		Lock the source's row FOR KEY SHARE until the end of the
 *		transaction (kl_source_lock); ERROR if it was dropped meanwhile.
 */
void
kl_catalog_lock_source(KlSource *src)
{
	KlCatalogSave cs;
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(src->source_id)};

	MemoryContext caller = CurrentMemoryContext;
	bool		has_partitions = kl_catalog_has_partitions();

	cs = kl_catalog_begin();
	kl_spi_exec(has_partitions ?
				"SELECT partitions FROM kafka_lake.sources WHERE source_id = $1 FOR KEY SHARE" :
				"SELECT 1 FROM kafka_lake.sources WHERE source_id = $1 FOR KEY SHARE",
				1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		kl_catalog_end(cs);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("source \"%s\" does not exist", src->source),
				 errdetail("It was dropped while this call waited for it."),
				 errhint("The existing sources are listed in kafka_lake.sources.")));
	}
	/*
	 * The locked row is the newest version: a set_partitions() this call
	 * waited for (it locks the row FOR UPDATE) is what the call owns.
	 */
	if (has_partitions)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		MemoryContext old = MemoryContextSwitchTo(caller);

		kl_source_read_partitions(src, d, isnull);
		MemoryContextSwitchTo(old);
	}
	kl_catalog_end(cs);
}

/*
 * kl_catalog_source_exists
 *		Does the catalog (as committed now) hold source source_id of that
 *		name?
 */
bool
kl_catalog_source_exists(int32 source_id, const char *source)
{
	KlCatalogSave cs;
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2] = {Int32GetDatum(source_id), CStringGetTextDatum(source)};
	bool		exists;

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("SELECT 1 FROM kafka_lake.sources WHERE source_id = $1 AND source = $2",
							  2, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.sources");
	exists = SPI_processed > 0;
	kl_catalog_end(cs);
	return exists;
}

/*
 * kl_catalog_partition_changed
 *		Did another session land or commit this partition after the
 *		transaction's snapshot was taken?  What that snapshot sees of it is
 *		compared with what the latest one sees (kl_check_partition_snapshot,
 *		locks.c).
 */
bool
kl_catalog_partition_changed(KlSource *src, int32 partition)
{
	static const char *sql =
		"SELECT (SELECT count(*) FROM kafka_lake.batches"
		"        WHERE source_id = $1 AND topic = $2 AND partition = $3),"
		"       (SELECT count(*) FROM kafka_lake.offset_commits"
		"        WHERE source_id = $1 AND topic = $2 AND partition = $3)";
	KlCatalogSave cs;
	Oid			types[3] = {INT4OID, TEXTOID, INT4OID};
	Datum		values[3] = {Int32GetDatum(src->source_id), CStringGetTextDatum(src->topic),
	Int32GetDatum(partition)};
	int64		mine[2];
	int64		latest[2];
	bool		isnull;

	cs = kl_catalog_begin();
	kl_spi_exec_kept(sql, 3, types, values, NULL, SPI_OK_SELECT);
	for (int i = 0; i < 2; i++)
		mine[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											  i + 1, &isnull));
	kl_spi_exec_latest(sql, 3, types, values, SPI_OK_SELECT);
	for (int i = 0; i < 2; i++)
		latest[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
												i + 1, &isnull));
	kl_catalog_end(cs);
	return mine[0] != latest[0] || mine[1] != latest[1];
}

/*
 * kl_check_group_free
 *		Inside a catalog section: ERROR 42710 when a source other than
 *		source_id (0: any) uses the consumer group, as committed now (the
 *		caller holds the group id's lock, locks.c).
 */
static void
kl_check_group_free(const char *group_id, int32 source_id, const char *hint)
{
	Oid			types[2] = {TEXTOID, INT4OID};
	Datum		values[2] = {CStringGetTextDatum(group_id), Int32GetDatum(source_id)};

	kl_spi_exec_latest("SELECT source FROM kafka_lake.sources WHERE group_id = $1"
					   " AND source_id <> $2 ORDER BY source LIMIT 1",
					   2, types, values, SPI_OK_SELECT);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("consumer group \"%s\" is already used by source \"%s\"",
						group_id, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)),
				 errdetail("Sources that share a consumer group overwrite each other's committed offsets and skip records."),
				 errhint("%s", hint)));
}

/*
 * kl_catalog_source_names
 *		Every source's id and name, in *ids and *names; how many.
 */
int
kl_catalog_source_names(int32 **ids, char ***names)
{
	MemoryContext caller = CurrentMemoryContext;
	KlCatalogSave cs;
	int			n;

	cs = kl_catalog_begin();
	kl_spi_exec("SELECT source_id, source FROM kafka_lake.sources", 0, NULL, NULL, NULL, SPI_OK_SELECT);
	n = (int) SPI_processed;
	*ids = MemoryContextAlloc(caller, sizeof(int32) * Max(n, 1));
	*names = MemoryContextAlloc(caller, sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		bool		isnull;

		(*ids)[i] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		(*names)[i] = MemoryContextStrdup(caller, SPI_getvalue(SPI_tuptable->vals[i],
															   SPI_tuptable->tupdesc, 2));
	}
	kl_catalog_end(cs);
	return n;
}

/*
 * kl_catalog_batch_dirs
 *		The directory of every batch (and readmit unit) the catalog lists of
 *		a source, relative to the source's directory, in batch order.
 */
List *
kl_catalog_batch_dirs(KlSource *src)
{
	MemoryContext caller = CurrentMemoryContext;
	KlCatalogSave cs;
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(src->source_id)};
	List	   *dirs = NIL;

	cs = kl_catalog_begin();
	kl_spi_exec(kl_catalog_has_contracts() ?
				"SELECT pg_catalog.format('topic=%s/partition=%s/%s=%s', topic, partition,"
				" CASE kind WHEN 'readmit' THEN 'readmit' ELSE 'batch' END, batch_id)"
				" FROM kafka_lake.batches WHERE source_id = $1 ORDER BY topic, partition, batch_id" :
				"SELECT pg_catalog.format('topic=%s/partition=%s/batch=%s', topic, partition, batch_id)"
				" FROM kafka_lake.batches WHERE source_id = $1 ORDER BY topic, partition, batch_id",
				1, types, values, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
		dirs = lappend(dirs, MemoryContextStrdup(caller, SPI_getvalue(SPI_tuptable->vals[i],
																	  SPI_tuptable->tupdesc, 1)));
	kl_catalog_end(cs);
	return dirs;
}

/*
 * kl_catalog_move_source
 *		claim_landing(): the source's files are under root now, and (when
 *		group_id is not NULL) its offsets go to that consumer group.  ERROR
 *		(42710) when another source of the database uses the group (the
 *		caller holds the group id's lock, locks.c).
 */
void
kl_catalog_move_source(KlSource *src, const char *root, const char *group_id)
{
	KlCatalogSave cs;
	Oid			types[3] = {INT4OID, TEXTOID, TEXTOID};
	Datum		values[3];
	char		nulls[3] = "   ";

	values[0] = Int32GetDatum(src->source_id);
	values[1] = CStringGetTextDatum(root);
	if (group_id)
		values[2] = CStringGetTextDatum(group_id);
	else
		nulls[2] = 'n';
	cs = kl_catalog_begin();
	if (group_id)
		kl_check_group_free(group_id, src->source_id, "Give group_id another value.");
	kl_spi_exec("UPDATE kafka_lake.sources SET landing_dir = $2,"
				" group_id = coalesce($3, group_id) WHERE source_id = $1",
				3, types, values, nulls, SPI_OK_UPDATE);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_insert_source
 *		Record a new source; ERROR (42710) when the name is taken, or the
 *		consumer group is another source's (checked against what is
 *		committed now: the caller holds the group id's lock, locks.c).
 */
void
kl_catalog_insert_source(const char *source, const char *server, const char *topic,
						 const char *group_id, const char *contract, int32 contract_version,
						 const char *root, const char *default_group)
{
	KlCatalogSave cs;
	Oid			types[7] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID};
	Datum		values[7];

	values[0] = CStringGetTextDatum(source);
	values[1] = CStringGetTextDatum(server);
	values[2] = CStringGetTextDatum(topic);
	values[3] = CStringGetTextDatum(group_id);
	values[4] = CStringGetTextDatum(contract);
	values[5] = CStringGetTextDatum(root);
	values[6] = Int32GetDatum(contract_version);

	cs = kl_catalog_begin();
	kl_spi_exec("SELECT 1 FROM kafka_lake.sources WHERE source = $1",
				1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("source \"%s\" already exists", source),
				 errhint("Drop it first with kafka_lake.drop_source('%s').", source)));

	/* one group, one source (the caller holds the group's lock) */
	kl_check_group_free(group_id, 0,
						psprintf("Give group_id another value, or leave it out for the default %s.",
								 default_group));

	/*
	 * A concurrent create_source of the same name: 42710, not a unique
	 * violation.  A new source keys its event_ids ordered (digest.c); the
	 * column's default is 'hashed', so that a source restored from a dump
	 * of an older catalog, whose rows are keyed hashed, stays hashed.
	 */
	if (kl_catalog_has_event_keys())
		kl_spi_exec("INSERT INTO kafka_lake.sources (source, server, topic, group_id, contract,"
					" landing_dir, contract_version, event_keys) VALUES ($1, $2, $3, $4, $5, $6, $7, 'ordered')"
					" ON CONFLICT (source) DO NOTHING",
					7, types, values, NULL, SPI_OK_INSERT);
	else if (kl_catalog_has_contracts())
		kl_spi_exec("INSERT INTO kafka_lake.sources (source, server, topic, group_id, contract,"
					" landing_dir, contract_version) VALUES ($1, $2, $3, $4, $5, $6, $7)"
					" ON CONFLICT (source) DO NOTHING",
					7, types, values, NULL, SPI_OK_INSERT);
	else
		kl_spi_exec("INSERT INTO kafka_lake.sources (source, server, topic, group_id, contract,"
					" landing_dir) VALUES ($1, $2, $3, $4, $5, $6)"
					" ON CONFLICT (source) DO NOTHING",
					6, types, values, NULL, SPI_OK_INSERT);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("source \"%s\" already exists", source),
				 errhint("Drop it first with kafka_lake.drop_source('%s').", source)));
	kl_catalog_end(cs);
}

/*
 * kl_catalog_create_records_table
 *		The foreign table kafka_lake.<source>_records of a new source, owned
 *		like the rest of the catalog by the extension's owner.
 */
void
kl_catalog_create_records_table(const char *source, const char *server, const char *topic)
{
	KlCatalogSave cs;
	StringInfoData sql;

	cs = kl_catalog_begin();
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "CREATE FOREIGN TABLE kafka_lake.%s ("
					 " topic text, partition integer, \"offset\" bigint, key text,"
					 " timestamp_ms bigint, fingerprint text, status text, event_id text,"
					 " business_date date, event jsonb, raw_value text,"
					 " validation_error text, batch_id text,"
					 " headers jsonb, contract text, contract_version integer)"
					 " SERVER %s OPTIONS (source %s)",
					 quote_identifier(psprintf("%s_records", source)),
					 quote_identifier(server),
					 quote_literal_cstr(source));
	kl_spi_exec(sql.data, 0, NULL, NULL, NULL, SPI_OK_UTILITY);
	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "COMMENT ON FOREIGN TABLE kafka_lake.%s IS %s",
					 quote_identifier(psprintf("%s_records", source)),
					 quote_literal_cstr(psprintf("Records landed by kafka_lake source %s (topic %s)",
												 source, topic)));
	kl_spi_exec(sql.data, 0, NULL, NULL, NULL, SPI_OK_UTILITY);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_lock_source_for_drop
 *		drop_source's (and set_partitions') lock on the source's row (FOR
 *		UPDATE): wait for every
 *		transaction that holds it FOR KEY SHARE (kl_catalog_lock_source),
 *		keep new ones out.  ERROR if another session dropped it meanwhile.
 */
void
kl_catalog_lock_source_for_drop(KlSource *src)
{
	KlCatalogSave cs;
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(src->source_id)};

	cs = kl_catalog_begin();
	kl_spi_exec("SELECT 1 FROM kafka_lake.sources WHERE source_id = $1 FOR UPDATE",
				1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		kl_catalog_end(cs);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("source \"%s\" does not exist", src->source),
				 errdetail("Another session dropped it while this call waited for it.")));
	}
	kl_catalog_end(cs);
}

/*
 * kl_catalog_delete_source
 *		Forget a source (its row lock held, kl_catalog_lock_source_for_drop):
 *		its foreign table, its accepted event_ids and coordinates (with the
 *		newest snapshot, so that what a transaction committed while the drop
 *		waited goes too), its row and, by cascade, the rest.
 */
void
kl_catalog_delete_source(KlSource *src)
{
	KlCatalogSave cs;
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(src->source_id)};

	cs = kl_catalog_begin();
	kl_spi_exec(psprintf("DROP FOREIGN TABLE IF EXISTS kafka_lake.%s",
						 quote_identifier(psprintf("%s_records", src->source))),
				0, NULL, NULL, NULL, SPI_OK_UTILITY);
	kl_spi_exec(psprintf("DROP FOREIGN TABLE IF EXISTS kafka_lake.%s",
						 quote_identifier(psprintf("%s_events", src->source))),
				0, NULL, NULL, NULL, SPI_OK_UTILITY);
	kl_spi_exec_latest("DELETE FROM kafka_lake.accepted_events WHERE source_id = $1",
					   1, types, values, SPI_OK_DELETE);
	kl_spi_exec_latest("DELETE FROM kafka_lake.coordinates WHERE source_id = $1",
					   1, types, values, SPI_OK_DELETE);
	kl_spi_exec("DELETE FROM kafka_lake.sources WHERE source_id = $1",
				1, types, values, NULL, SPI_OK_DELETE);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_set_cluster_id
 *		Remember the cluster a source lands from.
 */
void
kl_catalog_set_cluster_id(KlSource *src, const char *cluster_id)
{
	KlCatalogSave cs;
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2] = {Int32GetDatum(src->source_id), CStringGetTextDatum(cluster_id)};

	/*
	 * Concurrent first landings of a source would queue on this row until
	 * the first one's transaction ends; the one that gets the row sets it,
	 * the others go on without waiting (they read the same cluster).  The
	 * lock is FOR NO KEY UPDATE, which the foreign keys' KEY SHARE checks of
	 * other sessions' batches do not wait for.
	 */
	cs = kl_catalog_begin();
	kl_spi_exec("UPDATE kafka_lake.sources SET cluster_id = $2"
				" WHERE source_id = (SELECT source_id FROM kafka_lake.sources"
				"                    WHERE source_id = $1 AND cluster_id IS NULL"
				"                    FOR NO KEY UPDATE SKIP LOCKED)",
				2, types, values, NULL, SPI_OK_UPDATE);
	kl_catalog_end(cs);
	src->cluster_id = pstrdup(cluster_id);
}

/*
 * kl_catalog_remembered_offset
 *		The offset below which the catalog knows the partition had records:
 *		the newest committed offset, or the end of the newest landed batch if
 *		that is further (replay may land ahead of the commits).  0 if none.
 */
int64
kl_catalog_remembered_offset(KlSource *src, int32 partition)
{
	KlCatalogSave cs;
	Oid			types[3] = {INT4OID, TEXTOID, INT4OID};
	Datum		values[3] = {Int32GetDatum(src->source_id), CStringGetTextDatum(src->topic),
	Int32GetDatum(partition)};
	int64		result = 0;
	bool		isnull;
	Datum		d;

	cs = kl_catalog_begin();
	kl_spi_exec_kept("SELECT greatest("
				" (SELECT pg_catalog.max(committed_offset) FROM kafka_lake.offset_commits"
				"   WHERE source_id = $1 AND topic = $2 AND partition = $3),"
				" (SELECT pg_catalog.max(last_offset) + 1 FROM kafka_lake.batches"
				"   WHERE source_id = $1 AND topic = $2 AND partition = $3))",
				3, types, values, NULL, SPI_OK_SELECT);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
		result = DatumGetInt64(d);
	kl_catalog_end(cs);
	return result;
}

/*
 * kl_catalog_durable
 *		The coordinates of [first, last] already durable in some batch, with
 *		their fingerprints; NULL when there is none (the common case).  The
 *		fingerprints of an expired batch's coordinates are not in the catalog
 *		(1.9): those are marked on_disk, and their batches are listed in
 *		disk_batches, for the caller to read from the batches' manifests.
 */
KlDurable *
kl_catalog_durable(KlSource *src, int32 partition, int64 first, int64 last)
{
	KlCatalogSave cs;
	Oid			types[5] = {INT4OID, TEXTOID, INT4OID, INT8OID, INT8OID};
	Datum		values[5] = {Int32GetDatum(src->source_id), CStringGetTextDatum(src->topic),
		Int32GetDatum(partition), Int64GetDatum(first), Int64GetDatum(last)};
	MemoryContext caller = CurrentMemoryContext;
	KlDurable  *result = NULL;

	cs = kl_catalog_begin();
	/* the landed coordinates: a readmit unit's are those of its batch again */
	kl_spi_exec_kept(kl_catalog_has_contracts() ?
				"SELECT pg_catalog.lower(offsets), pg_catalog.upper(offsets) - 1, offset_list, fingerprints,"
				"       batch_id, pg_catalog.length(statuses)"
				" FROM kafka_lake.coordinates"
				" WHERE source_id = $1 AND topic = $2 AND partition = $3"
				"   AND offsets && pg_catalog.int8range($4, $5, '[]') AND NOT readmit"
				" ORDER BY pg_catalog.lower(offsets)" :
				"SELECT pg_catalog.lower(offsets), pg_catalog.upper(offsets) - 1, offset_list, fingerprints,"
				"       batch_id, pg_catalog.length(statuses)"
				" FROM kafka_lake.coordinates"
				" WHERE source_id = $1 AND topic = $2 AND partition = $3"
				"   AND offsets && pg_catalog.int8range($4, $5, '[]')"
				" ORDER BY pg_catalog.lower(offsets)",
				5, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		MemoryContext old = MemoryContextSwitchTo(caller);
		int			cap = 0;

		result = palloc0(sizeof(KlDurable));
		for (uint64 row = 0; row < SPI_processed; row++)
		{
			HeapTuple	tup = SPI_tuptable->vals[row];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			bool		isnull;
			int64		lo = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
			int64		hi = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
			Datum		list = SPI_getbinval(tup, desc, 3, &isnull);
			bool		contiguous = isnull;
			Datum		fpd = SPI_getbinval(tup, desc, 4, &isnull);
			/* an expired batch's are in its manifest (1.9): the caller reads them */
			bool		on_disk = isnull;
			bytea	   *fps = on_disk ? NULL : DatumGetByteaPP(fpd);
			const uint8 *fp = on_disk ? NULL : (const uint8 *) VARDATA_ANY(fps);
			int			nfp = on_disk ?
				DatumGetInt32(SPI_getbinval(tup, desc, 6, &isnull)) :
				VARSIZE_ANY_EXHDR(fps) / KL_SHA256_LEN;
			Datum	   *elems = NULL;
			int			nelems = nfp;
			bool		listed = false;

			if (!contiguous)
				deconstruct_array(DatumGetArrayTypeP(list), INT8OID, 8, true, TYPALIGN_DOUBLE,
								  &elems, NULL, &nelems);
			for (int i = 0; i < nfp; i++)
			{
				int64		off = contiguous ? lo + i : DatumGetInt64(elems[i]);

				if (off < first || off > last)
					continue;
				if (result->count == cap)
				{
					cap = Max(cap * 2, 64);
					result->offsets = result->offsets ?
						repalloc(result->offsets, cap * sizeof(int64)) :
						palloc(cap * sizeof(int64));
					result->fingerprints = result->fingerprints ?
						repalloc(result->fingerprints, cap * KL_SHA256_LEN) :
						palloc(cap * KL_SHA256_LEN);
					result->on_disk = result->on_disk ?
						repalloc(result->on_disk, cap * sizeof(bool)) :
						palloc(cap * sizeof(bool));
				}
				result->offsets[result->count] = off;
				result->on_disk[result->count] = on_disk;
				if (on_disk)
				{
					memset(result->fingerprints + result->count * KL_SHA256_LEN, 0, KL_SHA256_LEN);
					if (!listed)
						result->disk_batches =
							lappend(result->disk_batches,
									TextDatumGetCString(SPI_getbinval(tup, desc, 5, &isnull)));
					listed = true;
				}
				else
					memcpy(result->fingerprints + result->count * KL_SHA256_LEN,
						   fp + i * KL_SHA256_LEN, KL_SHA256_LEN);
				result->count++;
			}
			(void) hi;
		}
		MemoryContextSwitchTo(old);
		if (result->count == 0)
			result = NULL;
	}
	kl_catalog_end(cs);
	return result;
}

/*
 * kl_int32_array
 *		An integer[] datum of n int32s (sources.partitions, and the
 *		parameters that compare with it).
 */
Datum
kl_int32_array(const int32 *values, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		elems[i] = Int32GetDatum(values[i]);
	return PointerGetDatum(construct_array(elems, n, INT4OID, sizeof(int32), true, TYPALIGN_INT));
}

/*
 * kl_array_of
 *		A one-dimensional array datum of n elements of a type.
 */
static Datum
kl_array_of(Datum *elems, int n, Oid type)
{
	int16		typlen;
	bool		typbyval;
	char		typalign;

	get_typlenbyvalalign(type, &typlen, &typbyval, &typalign);
	return PointerGetDatum(construct_array(elems, n, type, typlen, typbyval, typalign));
}

/*
 * kl_catalog_relid
 *		A relation of schema kafka_lake, by name.
 */
Oid
kl_catalog_relid(const char *relname)
{
	Oid			relid = get_relname_relid(relname, get_namespace_oid("kafka_lake", false));

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("kafka_lake catalog relation \"kafka_lake.%s\" is missing", relname),
				 errhint("The extension's catalog was altered; restore it (DROP EXTENSION and CREATE EXTENSION rebuild it, and recover() adopts the landed files).")));
	return relid;
}

/*
 * kl_catalog_has_contracts
 *		Does the catalog have kafka_lake.contracts, and with it the contract
 *		columns of sources and batches and the readmit units (version 1.1
 *		on)?  A database still at 1.0 knows machine_event_v1 only.
 */
bool
kl_catalog_has_contracts(void)
{
	Oid			nsp = get_namespace_oid("kafka_lake", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("contracts", nsp));
}

/*
 * kl_event_topic
 *		The topic of the coordinate an accepted_events row names, as a
 *		duplicate's dup_topic: NULL when it is the source's current topic,
 *		else one of src->topics (or a copy, for a topic the source no longer
 *		names).
 */
static const char *
kl_event_topic(const KlSource *src, TupleTableSlot *slot)
{
	bool		isnull = true;
	Datum		d = (Datum) 0;
	int			i = 0;

	if (slot->tts_tupleDescriptor->natts > 4)
		d = slot_getattr(slot, 5, &isnull);
	if (!isnull)
	{
		char	   *topic = TextDatumGetCString(d);

		i = kl_source_topic_index(src, topic);
		if (i < 0)
			return topic;
	}
	return i == src->topic_index ? NULL : src->topics[i];
}

/*
 * kl_mark_known_events
 *		Mark as duplicates the candidates whose event_id is already accepted
 *		in the catalog at another coordinate; a candidate whose event_id the
 *		catalog holds at its own coordinate is that same event (a batch
 *		adopted again after the catalog lost its row, a coordinate landed
 *		again after its batch was forgotten): it stays accepted, already
 *		reserved.  Returns how many candidates remain to be inserted.
 *
 *		One probe of the primary key per candidate, straight through the
 *		index: a query with "= ANY (array)" lets the planner scan every
 *		accepted event of the source instead, which grows with the source.
 *		The probe uses the latest snapshot, so it sees what concurrent
 *		sessions committed and what this transaction inserted.
 */
static int
kl_mark_known_events(KlSource *src, int32 partition, KlIdentity *recs, int n)
{
	Relation	rel;
	Relation	idx;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	Snapshot	snapshot;
	ScanKeyData skey[1];
	int			remaining = 0;

	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	rel = table_open(kl_catalog_relid("accepted_events"), AccessShareLock);
	idx = index_open(kl_catalog_relid("accepted_events_pkey"), AccessShareLock);
	slot = table_slot_create(rel, NULL);
	scan = index_beginscan(rel, idx, snapshot, 1, 0);

	for (int i = 0; i < n; i++)
	{
		KlIdentity *r = &recs[i];

		if (r->status != KL_STATUS_ACCEPTED || r->reserved || !r->has_event_id)
			continue;
		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		ScanKeyInit(&skey[0], 1, BTEqualStrategyNumber, F_UUID_EQ,
					UUIDPGetDatum(&r->event_key));
		index_rescan(scan, skey, 1, NULL, 0);
		if (index_getnext_slot(scan, ForwardScanDirection, slot))
		{
			bool		isnull;
			int32		p = DatumGetInt32(slot_getattr(slot, 3, &isnull));
			int64		offset = DatumGetInt64(slot_getattr(slot, 4, &isnull));
			const char *topic = kl_event_topic(src, slot);

			if (p == partition && offset == r->offset && topic == NULL)
				r->reserved = true;
			else
			{
				r->status = KL_STATUS_DUPLICATE;
				r->dup_partition = p;
				r->dup_offset = offset;
				r->dup_topic = topic;
			}
		}
		else
			remaining++;
	}

	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(idx, AccessShareLock);
	table_close(rel, AccessShareLock);
	UnregisterSnapshot(snapshot);
	return remaining;
}

/*
 * kl_sort_identities
 *		Sort identities by event key: PostgreSQL's sort template with the
 *		16-byte comparison inlined (qsort() through a comparator function
 *		cost 5 % of the backend's time in a landing).
 */
typedef KlIdentity *KlIdentityRef;

static inline int
kl_identity_key_cmp(const KlIdentityRef *a, const KlIdentityRef *b)
{
	return memcmp((*a)->event_key.data, (*b)->event_key.data, UUID_LEN);
}

#define ST_SORT kl_sort_identities
#define ST_ELEMENT_TYPE KlIdentityRef
#define ST_COMPARE(a, b) kl_identity_key_cmp(a, b)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/*
 * kl_insert_events
 *		Insert the candidates (status 'a') into accepted_events.
 *
 *		This is the one per-record catalog write of a landing, so it goes
 *		straight to the table and its primary key (bulk_insert.c) instead of
 *		through an INSERT statement, which costs several times more per row.
 *		The unique check is the index's own, so a concurrent session's
 *		uncommitted key makes us wait, and a committed one raises the unique
 *		violation that kl_try_insert_events catches.
 */
static void
kl_insert_events(KlSource *src, int32 partition, KlIdentity *recs, int n)
{
	Relation	rel = table_open(kl_catalog_relid("accepted_events"), RowExclusiveLock);
	List	   *indexes = RelationGetIndexList(rel);
	KlBulkInsert w;
	KlIdentity **order;
	int			ncand = 0;
	int			natts = RelationGetDescr(rel)->natts;	/* 5 with a topic (1.6) */
	const char *topic = kl_topic_or_null(src);
	Datum		topic_datum = topic ? CStringGetTextDatum(topic) : (Datum) 0;

	Assert(natts == 4 || natts == 5);
	if (list_length(indexes) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("kafka_lake.accepted_events must have its primary key as its only index"),
				 errdetail("Landing maintains that index itself."),
				 errhint("Drop the other indexes of kafka_lake.accepted_events.")));
	kl_bulk_open(&w, rel, 1000, 0, CurrentMemoryContext);

	/*
	 * Insert in key order: consecutive keys land on neighbouring leaf pages,
	 * so each descent of the index walks pages the previous one just warmed.
	 */
	order = palloc(sizeof(KlIdentity *) * n);
	for (int i = 0; i < n; i++)
	{
		if (recs[i].status == KL_STATUS_ACCEPTED && !recs[i].reserved &&
			recs[i].has_event_id)
			order[ncand++] = &recs[i];
	}
	kl_sort_identities(order, ncand);

	for (int i = 0; i < ncand; i++)
	{
		TupleTableSlot *slot = kl_bulk_next_slot(&w);

		slot->tts_values[0] = UUIDPGetDatum(&order[i]->event_key);
		slot->tts_values[1] = Int32GetDatum(src->source_id);
		slot->tts_values[2] = Int32GetDatum(partition);
		slot->tts_values[3] = Int64GetDatum(order[i]->offset);
		memset(slot->tts_isnull, false, sizeof(bool) * natts);
		if (natts > 4)
		{
			slot->tts_values[4] = topic_datum;
			slot->tts_isnull[4] = topic == NULL;
		}
		kl_bulk_add(&w);
	}
	kl_bulk_close(&w);
	table_close(rel, RowExclusiveLock);
}

/*
 * kl_try_insert_events
 *		Insert the candidates in a subtransaction; false when a concurrent
 *		session accepted one of them first (unique violation).
 */
static bool
kl_try_insert_events(KlSource *src, int32 partition, KlIdentity *recs, int n, bool *contended)
{
	MemoryContext caller = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool done = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller);
	PG_TRY();
	{
		int			nest = NewGUCNestLevel();

		/*
		 * A bounded wait for another session's uncommitted event_id: below
		 * deadlock_timeout, so that two calls that each hold what the other
		 * needs give up before the deadlock detector aborts one of them (the
		 * caller's own lock_timeout, if shorter, stays).
		 */
		if (contended != NULL)
		{
			int			ms = Max(DeadlockTimeout / 2, 10);

			if (LockTimeout == 0 || LockTimeout > ms)
				(void) set_config_option("lock_timeout", psprintf("%d", ms), PGC_USERSET,
										 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
		}
		kl_insert_events(src, partition, recs, n);
		AtEOXact_GUC(true, nest);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller);
		CurrentResourceOwner = owner;
		done = true;
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
		if (contended != NULL && edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
			*contended = true;
		else if (edata->sqlerrcode != ERRCODE_UNIQUE_VIOLATION)
			ReThrowError(edata);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return done;
}

/*
 * kl_catalog_reserve_events
 *		Decide accepted versus duplicate_event_id for the candidates of a
 *		window (records with status 'a', already unique within the window),
 *		and reserve the accepted event_ids in the catalog before any file is
 *		written.
 *
 *		A concurrent session may be accepting the same event_id from another
 *		partition right now.  The insert then waits for that session's
 *		transaction; if it committed, the insert fails with a unique
 *		violation, which we catch in a subtransaction, and the lookup that
 *		follows sees the winner: our record becomes its duplicate.
 */
void
kl_catalog_reserve_events(KlSource *src, int32 partition, KlRecord *recs, int n)
{
	KlIdentity *ids = palloc(sizeof(KlIdentity) * n);

	kl_identities_of(recs, n, ids);
	kl_catalog_reserve_identities(src, partition, ids, n);
	kl_identities_apply(ids, n, recs);
	pfree(ids);
}

/*
 * kl_catalog_reserve_identities
 *		kl_catalog_reserve_events on the identities of the records alone
 *		(what land() reserves while its helper thread writes the records'
 *		files: the records themselves are not touched).
 */
void
kl_catalog_reserve_identities(KlSource *src, int32 partition, KlIdentity *ids, int n)
{
	(void) kl_catalog_try_reserve_identities(src, partition, ids, n, false);
}

/*
 * kl_catalog_try_reserve_identities
 *		kl_catalog_reserve_identities, which with may_skip waits only briefly
 *		for an event_id that another session's open transaction is accepting:
 *		false then, and nothing of the window is reserved (the caller leaves
 *		the partition to a later call).  Two land() calls of one source hold
 *		their event_ids until they commit, so each waiting for the other's
 *		would be a deadlock.
 */
bool
kl_catalog_try_reserve_identities(KlSource *src, int32 partition, KlIdentity *ids, int n,
								  bool may_skip)
{
	KlCatalogSave cs;
	bool		contended = false;
	bool	   *c = may_skip ? &contended : NULL;

	cs = kl_catalog_begin();
	/* usually every candidate is new: insert first, look up only on conflict */
	if (!kl_try_insert_events(src, partition, ids, n, c) && !contended)
	{
		while (kl_mark_known_events(src, partition, ids, n) > 0 &&
			   !kl_try_insert_events(src, partition, ids, n, c) && !contended)
			CHECK_FOR_INTERRUPTS();
	}
	kl_catalog_end(cs);
	return !contended;
}

/*
 * kl_identities_of, kl_identities_apply
 *		The identities of records, and the decisions taken on them back
 *		into the records.
 */
void
kl_identities_of(const KlRecord *recs, int n, KlIdentity *ids)
{
	for (int i = 0; i < n; i++)
	{
		ids[i].event_key = recs[i].event_key;
		ids[i].offset = recs[i].offset;
		ids[i].dup_partition = recs[i].dup_partition;
		ids[i].dup_offset = recs[i].dup_offset;
		ids[i].dup_topic = recs[i].dup_topic;
		ids[i].status = recs[i].status;
		ids[i].reserved = recs[i].reserved;
		ids[i].has_event_id = recs[i].event.event_id != NULL;
	}
}

void
kl_identities_apply(const KlIdentity *ids, int n, KlRecord *recs)
{
	for (int i = 0; i < n; i++)
	{
		recs[i].status = ids[i].status;
		recs[i].reserved = ids[i].reserved;
		recs[i].dup_partition = ids[i].dup_partition;
		recs[i].dup_offset = ids[i].dup_offset;
		recs[i].dup_topic = ids[i].dup_topic;
	}
}

/*
 * kl_catalog_has_manifest_checks
 *		Does kafka_lake.batches record the manifest's size and CRC-32C
 *		(version 1.1 on)?  A database still at 1.0, before ALTER EXTENSION
 *		UPDATE, does not; its readers check the manifest by its SHA-256.
 */
bool
kl_catalog_has_manifest_checks(void)
{
	return get_attnum(kl_catalog_relid("batches"), "manifest_crc32c") != InvalidAttrNumber;
}

/*
 * kl_catalog_has_event_keys
 *		Does the catalog record how each source keys its event_ids (1.13 and
 *		later: sources.event_keys; before, every source is hashed)?
 */
bool
kl_catalog_has_event_keys(void)
{
	return get_attnum(kl_catalog_relid("sources"), "event_keys") != InvalidAttrNumber;
}

/*
 * kl_catalog_has_compression
 *		Does the catalog record how batches are stored (version 1.7 on:
 *		sources.compression, batches.compression and file_raw_bytes)?
 *		Without it every batch is plain JSONL.
 */
bool
kl_catalog_has_compression(void)
{
	return get_attnum(kl_catalog_relid("sources"), "compression") != InvalidAttrNumber;
}

/*
 * kl_catalog_has_partitions
 *		Does the catalog record the partitions a source owns (1.11 on)?
 *		Without it every source owns every partition.
 */
bool
kl_catalog_has_partitions(void)
{
	return get_attnum(kl_catalog_relid("sources"), "partitions") != InvalidAttrNumber;
}

/*
 * kl_catalog_is_coordinated
 *		Is source one this database coordinates (attach_shards, 1.11), and
 *		lands none of?  Read with the extension owner's rights: the catalog
 *		is not the caller's to read.
 */
bool
kl_catalog_is_coordinated(const char *source)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(source)};
	KlCatalogSave cs;
	bool		found;

	if (!OidIsValid(get_relname_relid("shards", get_namespace_oid("kafka_lake", false))))
		return false;
	cs = kl_catalog_begin();
	kl_spi_exec("SELECT 1 FROM kafka_lake.shards WHERE source = $1 LIMIT 1",
				1, types, values, NULL, SPI_OK_SELECT);
	found = SPI_processed > 0;
	kl_catalog_end(cs);
	return found;
}

/*
 * kl_catalog_set_partitions
 *		Store the partitions a source owns (n of them, ascending; n = 0:
 *		every partition, NULL).
 */
void
kl_catalog_set_partitions(KlSource *src, const int32 *partitions, int n)
{
	Oid			types[2] = {INT4OID, INT4ARRAYOID};
	Datum		values[2] = {Int32GetDatum(src->source_id), (Datum) 0};
	char		nulls[2] = {' ', n == 0 ? 'n' : ' '};
	KlCatalogSave cs;

	if (n > 0)
		values[1] = kl_int32_array(partitions, n);
	cs = kl_catalog_begin();
	kl_spi_exec("UPDATE kafka_lake.sources SET partitions = $2 WHERE source_id = $1",
				2, types, values, nulls, SPI_OK_UPDATE);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_has_reduction
 *		Does the catalog record reduced manifests (1.9 and later)?
 */
bool
kl_catalog_has_reduction(void)
{
	return get_attnum(kl_catalog_relid("batches"), "reduced_at") != InvalidAttrNumber;
}

/*
 * kl_catalog_set_compression
 *		Store how a source's new batches are written (KL_COMPRESS_*).
 */
void
kl_catalog_set_compression(KlSource *src, int compression)
{
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2] = {Int32GetDatum(src->source_id),
	CStringGetTextDatum(kl_compression_name(compression))};
	KlCatalogSave cs;

	cs = kl_catalog_begin();
	kl_spi_exec("UPDATE kafka_lake.sources SET compression = $2 WHERE source_id = $1",
				2, types, values, NULL, SPI_OK_UPDATE);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_has_lifecycle
 *		Does kafka_lake.batches record compactions and expiries (version 1.1
 *		on)?  A database still at 1.0 has neither: nothing in it is
 *		compacted or expired.
 */
bool
kl_catalog_has_lifecycle(void)
{
	return get_attnum(kl_catalog_relid("batches"), "expired_at") != InvalidAttrNumber;
}

/*
 * kl_catalog_insert_batch
 *		Record a landed batch: its row in batches and its coordinates.
 */
void
kl_catalog_insert_batch(KlSource *src, const KlBatch *b, const KlRecord *recs, int n)
{
	KlCatalogSave cs;
	Oid			btypes[26] = {INT4OID, TEXTOID, TEXTOID, INT4OID, INT8OID, INT8OID,
		INT4OID, INT4OID, INT4OID, INT4OID, DATEOID, DATEOID,
		INT8ARRAYOID, INT8ARRAYOID, INT8ARRAYOID, TEXTARRAYOID, TEXTOID, TEXTOID,
	INT8OID, INT8OID, TEXTOID, INT4OID, TEXTOID, TEXTOID, TEXTOID, INT8ARRAYOID};
	Datum		bvalues[26];
	char		bnulls[26];
	Datum		fb[KL_NFILES],
				fr[KL_NFILES],
				fl[KL_NFILES],
				fc[KL_NFILES],
				fs[KL_NFILES];
	Oid			ctypes[10] = {INT4OID, TEXTOID, INT4OID, INT8OID, INT8OID, INT8ARRAYOID, BYTEAOID,
	TEXTOID, TEXTOID, BOOLOID};
	Datum		cvalues[10];
	char		cnulls[10];
	bytea	   *fps;
	char	   *statuses;
	bool		contiguous = (b->last_offset - b->first_offset + 1 == n);

	memset(bnulls, ' ', sizeof(bnulls));
	for (int i = 0; i < KL_NFILES; i++)
	{
		fb[i] = Int64GetDatum(b->files[i].bytes);
		fr[i] = Int64GetDatum(b->files[i].raw_bytes);
		fl[i] = Int64GetDatum(b->files[i].lines);
		fc[i] = Int64GetDatum((int64) b->files[i].crc32c);
		fs[i] = CStringGetTextDatum(b->files[i].sha256);
	}
	bvalues[0] = Int32GetDatum(src->source_id);
	bvalues[1] = CStringGetTextDatum(b->batch_id);
	bvalues[2] = CStringGetTextDatum(src->topic);
	bvalues[3] = Int32GetDatum(b->partition);
	bvalues[4] = Int64GetDatum(b->first_offset);
	bvalues[5] = Int64GetDatum(b->last_offset);
	bvalues[6] = Int32GetDatum(b->record_count);
	bvalues[7] = Int32GetDatum(b->counts[KL_FILE_ACCEPTED]);
	bvalues[8] = Int32GetDatum(b->counts[KL_FILE_DUPLICATES]);
	bvalues[9] = Int32GetDatum(b->counts[KL_FILE_QUARANTINE]);
	bvalues[10] = DateADTGetDatum(b->min_date);
	bvalues[11] = DateADTGetDatum(b->max_date);
	if (!b->has_dates)
		bnulls[10] = bnulls[11] = 'n';
	bvalues[12] = kl_array_of(fb, KL_NFILES, INT8OID);
	bvalues[13] = kl_array_of(fl, KL_NFILES, INT8OID);
	bvalues[14] = kl_array_of(fc, KL_NFILES, INT8OID);
	bvalues[15] = kl_array_of(fs, KL_NFILES, TEXTOID);
	bvalues[16] = CStringGetTextDatum(b->manifest_sha256);
	bvalues[17] = CStringGetTextDatum(b->landed_by);

	fps = palloc(VARHDRSZ + (Size) n * KL_SHA256_LEN);
	SET_VARSIZE(fps, VARHDRSZ + (Size) n * KL_SHA256_LEN);
	statuses = palloc(n + 1);
	for (int i = 0; i < n; i++)
	{
		memcpy(VARDATA(fps) + (Size) i * KL_SHA256_LEN, recs[i].fingerprint, KL_SHA256_LEN);
		statuses[i] = recs[i].status;
	}
	statuses[n] = '\0';

	memset(cnulls, ' ', sizeof(cnulls));
	cvalues[0] = Int32GetDatum(src->source_id);
	cvalues[1] = CStringGetTextDatum(src->topic);
	cvalues[2] = Int32GetDatum(b->partition);
	cvalues[3] = Int64GetDatum(b->first_offset);
	cvalues[4] = Int64GetDatum(b->last_offset);
	if (contiguous)
	{
		cvalues[5] = (Datum) 0;
		cnulls[5] = 'n';
	}
	else
	{
		Datum	   *offs = palloc(sizeof(Datum) * n);

		for (int i = 0; i < n; i++)
			offs[i] = Int64GetDatum(recs[i].offset);
		cvalues[5] = kl_array_of(offs, n, INT8OID);
	}
	cvalues[6] = PointerGetDatum(fps);
	cvalues[8] = CStringGetTextDatum(b->batch_id);

	bvalues[18] = Int64GetDatum(b->manifest_bytes);
	bvalues[19] = Int64GetDatum((int64) b->manifest_crc32c);
	bvalues[20] = CStringGetTextDatum(b->contract ? b->contract : KL_MACHINE_EVENT_V1);
	bvalues[21] = Int32GetDatum(b->contract ? b->contract_version : 1);
	bvalues[22] = CStringGetTextDatum(b->readmit ? "readmit" : "landing");
	if (b->readmit)
		bvalues[23] = CStringGetTextDatum(b->readmit_of);
	else
	{
		bvalues[23] = (Datum) 0;
		bnulls[23] = 'n';
	}
	cvalues[9] = BoolGetDatum(b->readmit);
	/* a plain batch has no compression and no raw sizes (they are its sizes) */
	if (b->compression != KL_COMPRESS_NONE)
	{
		bvalues[24] = CStringGetTextDatum(kl_compression_name(b->compression));
		bvalues[25] = kl_array_of(fr, KL_NFILES, INT8OID);
	}
	else
	{
		bvalues[24] = bvalues[25] = (Datum) 0;
		bnulls[24] = bnulls[25] = 'n';
	}

	cs = kl_catalog_begin();
	if (kl_catalog_has_compression())
		kl_spi_exec_kept("INSERT INTO kafka_lake.batches (source_id, batch_id, topic, partition,"
					" first_offset, last_offset, record_count, accepted_count, duplicate_count,"
					" quarantine_count, min_business_date, max_business_date, file_bytes,"
					" file_lines, file_crc32c, file_sha256, manifest_sha256, landed_by,"
					" manifest_bytes, manifest_crc32c, contract, contract_version, kind, readmit_of,"
					" compression, file_raw_bytes)"
					" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,"
					" $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26)",
					26, btypes, bvalues, bnulls, SPI_OK_INSERT);
	else if (b->compression != KL_COMPRESS_NONE)
		elog(ERROR, "a compressed batch needs kafka_lake 1.7");
	else if (kl_catalog_has_contracts())
		kl_spi_exec_kept("INSERT INTO kafka_lake.batches (source_id, batch_id, topic, partition,"
					" first_offset, last_offset, record_count, accepted_count, duplicate_count,"
					" quarantine_count, min_business_date, max_business_date, file_bytes,"
					" file_lines, file_crc32c, file_sha256, manifest_sha256, landed_by,"
					" manifest_bytes, manifest_crc32c, contract, contract_version, kind, readmit_of)"
					" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,"
					" $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)",
					24, btypes, bvalues, bnulls, SPI_OK_INSERT);
	else if (kl_catalog_has_manifest_checks())
		kl_spi_exec_kept("INSERT INTO kafka_lake.batches (source_id, batch_id, topic, partition,"
					" first_offset, last_offset, record_count, accepted_count, duplicate_count,"
					" quarantine_count, min_business_date, max_business_date, file_bytes,"
					" file_lines, file_crc32c, file_sha256, manifest_sha256, landed_by,"
					" manifest_bytes, manifest_crc32c)"
					" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,"
					" $15, $16, $17, $18, $19, $20)",
					20, btypes, bvalues, bnulls, SPI_OK_INSERT);
	else
		kl_spi_exec_kept("INSERT INTO kafka_lake.batches (source_id, batch_id, topic, partition,"
					" first_offset, last_offset, record_count, accepted_count, duplicate_count,"
					" quarantine_count, min_business_date, max_business_date, file_bytes,"
					" file_lines, file_crc32c, file_sha256, manifest_sha256, landed_by)"
					" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,"
					" $15, $16, $17, $18)",
					18, btypes, bvalues, bnulls, SPI_OK_INSERT);
	cvalues[7] = CStringGetTextDatum(statuses);
	if (kl_catalog_has_contracts())
		kl_spi_exec_kept("INSERT INTO kafka_lake.coordinates (source_id, topic, partition, offsets,"
					" batch_id, offset_list, fingerprints, statuses, readmit)"
					" VALUES ($1, $2, $3, pg_catalog.int8range($4, $5, '[]'), $9, $6, $7, $8, $10)",
					10, ctypes, cvalues, cnulls, SPI_OK_INSERT);
	else
		kl_spi_exec_kept("INSERT INTO kafka_lake.coordinates (source_id, topic, partition, offsets,"
					" batch_id, offset_list, fingerprints, statuses)"
					" VALUES ($1, $2, $3, pg_catalog.int8range($4, $5, '[]'), $9, $6, $7, $8)",
					9, ctypes, cvalues, cnulls, SPI_OK_INSERT);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_record_commit
 *		Remember a commit made to the consumer group.
 */
void
kl_catalog_record_commit(KlSource *src, int32 partition, int64 offset, const char *batch_id)
{
	KlCatalogSave cs;
	Oid			types[5] = {INT4OID, TEXTOID, INT4OID, INT8OID, TEXTOID};
	Datum		values[5] = {Int32GetDatum(src->source_id), CStringGetTextDatum(src->topic),
		Int32GetDatum(partition), Int64GetDatum(offset),
	batch_id ? CStringGetTextDatum(batch_id) : (Datum) 0};
	char		nulls[5] = {' ', ' ', ' ', ' ', batch_id ? ' ' : 'n'};

	cs = kl_catalog_begin();
	kl_spi_exec_kept("INSERT INTO kafka_lake.offset_commits (source_id, topic, partition,"
				" committed_offset, batch_id) VALUES ($1, $2, $3, $4, $5)",
				5, types, values, nulls, SPI_OK_INSERT);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_record_expired
 *		Remember a range that expired before it landed (allow_expired).
 */
void
kl_catalog_record_expired(KlSource *src, int32 partition, int64 first, int64 last)
{
	KlCatalogSave cs;
	Oid			types[5] = {INT4OID, TEXTOID, INT4OID, INT8OID, INT8OID};
	Datum		values[5] = {Int32GetDatum(src->source_id), CStringGetTextDatum(src->topic),
	Int32GetDatum(partition), Int64GetDatum(first), Int64GetDatum(last)};

	cs = kl_catalog_begin();
	kl_spi_exec("INSERT INTO kafka_lake.expired_ranges (source_id, topic, partition,"
				" first_offset, last_offset) VALUES ($1, $2, $3, $4, $5)"
				" ON CONFLICT DO NOTHING",
				5, types, values, NULL, SPI_OK_INSERT);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_record_replay
 *		One row per replay() of a partition.
 */
void
kl_catalog_record_replay(KlSource *src, int32 partition, int64 from, int64 to,
						 int records, int landed, int reused)
{
	KlCatalogSave cs;
	Oid			types[8] = {INT4OID, TEXTOID, INT4OID, INT8OID, INT8OID, INT4OID, INT4OID, INT4OID};
	Datum		values[8] = {Int32GetDatum(src->source_id), CStringGetTextDatum(src->topic),
		Int32GetDatum(partition), Int64GetDatum(from), Int64GetDatum(to),
	Int32GetDatum(records), Int32GetDatum(landed), Int32GetDatum(reused)};

	cs = kl_catalog_begin();
	kl_spi_exec("INSERT INTO kafka_lake.replays (source_id, topic, partition, from_offset,"
				" to_offset, records, landed, reused) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
				8, types, values, NULL, SPI_OK_INSERT);
	kl_catalog_end(cs);
}

/* ----------------------------------------------------------------
 *		The batches of a source, as readers see them
 * ----------------------------------------------------------------
 */

/*
 * kl_bounds_init
 *		No bounds: every batch of the source.
 */
void
kl_bounds_init(KlBounds *bounds)
{
	memset(bounds, 0, sizeof(*bounds));
	bounds->partition_lo = 0;
	bounds->partition_hi = PG_INT32_MAX;
	bounds->offset_lo = 0;
	bounds->offset_hi = PG_INT64_MAX;
	bounds->date_lo = DATEVAL_NOBEGIN;
	bounds->date_hi = DATEVAL_NOEND;
	for (int i = 0; i < KL_NFILES; i++)
		bounds->files[i] = true;
	bounds->excluded = true;
}

/*
 * kl_bounds_empty
 *		Do the bounds exclude everything?
 */
bool
kl_bounds_empty(const KlBounds *bounds)
{
	bool		any_file = false;

	for (int i = 0; i < KL_NFILES; i++)
		any_file |= bounds->files[i];
	any_file |= bounds->excluded;
	return bounds->contradiction || !any_file ||
		bounds->partition_lo > bounds->partition_hi ||
		bounds->offset_lo > bounds->offset_hi ||
		bounds->date_lo > bounds->date_hi;
}

/*
 * kl_int8_array3
 *		The three elements of a bigint[3] datum (one per file).
 */
static void
kl_int8_array3(Datum d, int64 *out)
{
	ArrayType  *a = DatumGetArrayTypeP(d);
	int64	   *v = (int64 *) ARR_DATA_PTR(a);

	if (ARR_NDIM(a) != 1 || ARR_DIMS(a)[0] != KL_NFILES || ARR_HASNULL(a))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("a row of kafka_lake.batches holds file checks kafka_lake did not write"),
				 errdetail("Each batch row holds one size, line count and CRC-32C per landed file, %d in all.", KL_NFILES),
				 errhint("The catalog was edited: restore the row, or run kafka_lake.recover() after removing it so that the batch is adopted again from its manifest.")));
	for (int i = 0; i < KL_NFILES; i++)
		out[i] = v[i];
}

/*
 * kl_catalog_scan_batches
 *		The batches of a source within bounds, ascending by partition and
 *		offset, as seen by the current snapshot: the one reader of
 *		kafka_lake.batches.  *total gets the number of batches of the source
 *		(to report how many were pruned).  want adds what not every caller
 *		needs: the coordinates' fingerprints (KL_BATCH_WANT_FINGERPRINTS),
 *		the files' SHA-256 (KL_BATCH_WANT_SHA256).
 */
List *
kl_catalog_scan_batches(KlSource *src, const KlBounds *bounds, int want, int64 *total)
{
	MemoryContext caller = CurrentMemoryContext;
	List	   *result = NIL;
	StringInfoData sql;
	StringInfoData files;
	Oid			types[9] = {INT4OID, INT4OID, INT4OID, INT8OID, INT8OID, DATEOID, DATEOID, TEXTOID,
	TEXTOID};
	Datum		values[9];
	char		nulls[9] = "         ";
	KlCatalogSave cs;

	values[0] = Int32GetDatum(src->source_id);
	values[1] = Int32GetDatum(bounds->partition_lo);
	values[2] = Int32GetDatum(bounds->partition_hi);
	values[3] = Int64GetDatum(bounds->offset_lo);
	values[4] = Int64GetDatum(bounds->offset_hi);
	values[5] = DateADTGetDatum(bounds->date_lo);
	values[6] = DateADTGetDatum(bounds->date_hi);
	if (bounds->batch_id)
		values[7] = CStringGetTextDatum(bounds->batch_id);
	else
	{
		values[7] = (Datum) 0;
		nulls[7] = 'n';
	}
	if (bounds->topic)
		values[8] = CStringGetTextDatum(bounds->topic);
	else
	{
		values[8] = (Datum) 0;
		nulls[8] = 'n';
	}

	/* with every file, every batch (verify() lists them all) */
	initStringInfo(&files);
	if (bounds->files[KL_FILE_ACCEPTED] && bounds->files[KL_FILE_DUPLICATES] &&
		bounds->files[KL_FILE_QUARANTINE])
		appendStringInfoString(&files, "true");
	else
		appendStringInfo(&files, "%s OR %s OR %s OR %s",
						 bounds->files[KL_FILE_ACCEPTED] ?
						 "b.accepted_count > 0 OR pg_catalog.strpos(c.statuses, 'P') > 0" : "false",
						 bounds->files[KL_FILE_DUPLICATES] ?
						 "b.duplicate_count > 0 OR pg_catalog.strpos(c.statuses, 'D') > 0" : "false",
						 bounds->files[KL_FILE_QUARANTINE] ? "b.quarantine_count > 0" : "false",
						 bounds->excluded ? "pg_catalog.strpos(c.statuses, 'X') > 0" : "false");

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT b.batch_id, b.partition, b.first_offset, b.last_offset,"
					 " b.file_bytes, b.file_lines, b.file_crc32c,"
					 " b.accepted_count, b.duplicate_count, b.quarantine_count,"
					 " CASE WHEN c.statuses ~ '[DRXP]' THEN c.statuses END,"
					 " CASE WHEN c.statuses ~ '[DRXP]' OR %s THEN c.offset_list END,"
					 " %s,"
					 " (SELECT pg_catalog.count(*) FROM kafka_lake.batches t WHERE t.source_id = $1),"
					 " b.min_business_date, b.max_business_date, b.manifest_sha256, %s,"
					 " b.record_count, %s, %s, %s, b.created_at, b.topic, %s, %s"
					 " FROM kafka_lake.batches b"
					 " LEFT JOIN kafka_lake.coordinates c USING (source_id, batch_id)"
					 " WHERE b.source_id = $1"
					 " AND b.partition BETWEEN $2 AND $3"
					 " AND b.last_offset >= $4 AND b.first_offset <= $5"
					 " AND ($6 = '-infinity'::date OR b.max_business_date >= $6)"
					 " AND ($7 = 'infinity'::date OR b.min_business_date <= $7)"
					 " AND ($8 IS NULL OR b.batch_id = $8)"
					 " AND ($9 IS NULL OR b.topic = $9)"
					 " AND (%s)"
					 " ORDER BY b.topic COLLATE \"C\", b.partition, b.first_offset",
					 (want & KL_BATCH_WANT_FINGERPRINTS) ? "true" : "false",
					 (want & KL_BATCH_WANT_FINGERPRINTS) ? "c.fingerprints" : "NULL::bytea",
					 kl_catalog_has_manifest_checks() ?
					 "b.manifest_bytes, b.manifest_crc32c" : "NULL::bigint, NULL::bigint",
					 (want & KL_BATCH_WANT_SHA256) ? "b.file_sha256" : "NULL::text[]",
					 kl_catalog_has_contracts() ?
					 "b.contract, b.contract_version, b.kind = 'readmit', b.readmit_of" :
					 "NULL::text, NULL::integer, false, NULL::text",
					 kl_catalog_has_lifecycle() ? "b.expired_at" : "NULL::timestamptz",
					 kl_catalog_has_compression() ?
					 "b.compression, b.file_raw_bytes" : "NULL::text, NULL::bigint[]",
					 kl_catalog_has_reduction() ? "b.reduced_at IS NOT NULL" : "false",
					 files.data);

	cs = kl_catalog_begin();
	if (SPI_execute_with_args(sql.data, 9, types, values, nulls, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.batches");
	*total = 0;
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tup = SPI_tuptable->vals[row];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(caller);
		KlBatch *b = palloc0(sizeof(KlBatch));
		bool		isnull;
		int64		v[KL_NFILES];
		Datum		d;

		strlcpy(b->batch_id, TextDatumGetCString(SPI_getbinval(tup, desc, 1, &isnull)),
				sizeof(b->batch_id));
		b->partition = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		b->first_offset = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		b->last_offset = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
		kl_int8_array3(SPI_getbinval(tup, desc, 5, &isnull), v);
		for (int i = 0; i < KL_NFILES; i++)
			b->files[i].bytes = v[i];
		kl_int8_array3(SPI_getbinval(tup, desc, 6, &isnull), v);
		for (int i = 0; i < KL_NFILES; i++)
			b->files[i].lines = v[i];
		kl_int8_array3(SPI_getbinval(tup, desc, 7, &isnull), v);
		for (int i = 0; i < KL_NFILES; i++)
			b->files[i].crc32c = (uint32) v[i];
		b->counts[0] = DatumGetInt32(SPI_getbinval(tup, desc, 8, &isnull));
		b->counts[1] = DatumGetInt32(SPI_getbinval(tup, desc, 9, &isnull));
		b->counts[2] = DatumGetInt32(SPI_getbinval(tup, desc, 10, &isnull));

		d = SPI_getbinval(tup, desc, 11, &isnull);
		if (!isnull)
		{
			b->demoted_statuses = TextDatumGetCString(d);
			b->has_demoted = strchr(b->demoted_statuses, KL_STATUS_DEMOTED) != NULL;
			b->has_readmitted = strchr(b->demoted_statuses, KL_STATUS_READMITTED) != NULL;
			b->has_excluded = strchr(b->demoted_statuses, KL_STATUS_EXCLUDED) != NULL;
			b->has_promoted = strchr(b->demoted_statuses, KL_STATUS_PROMOTED) != NULL;
		}
		d = SPI_getbinval(tup, desc, 12, &isnull);
		if (!isnull)
		{
			Datum	   *elems;
			int			nelems;

			deconstruct_array(DatumGetArrayTypeP(d), INT8OID, 8, true, TYPALIGN_DOUBLE,
							  &elems, NULL, &nelems);
			b->offset_list = palloc(sizeof(int64) * nelems);
			for (int i = 0; i < nelems; i++)
				b->offset_list[i] = DatumGetInt64(elems[i]);
		}
		d = SPI_getbinval(tup, desc, 13, &isnull);
		if (!isnull)
		{
			bytea	   *fp = DatumGetByteaPCopy(d);

			b->fingerprints = (uint8 *) VARDATA(fp);
			b->nfingerprints = VARSIZE(fp) / KL_SHA256_LEN;
		}
		*total = DatumGetInt64(SPI_getbinval(tup, desc, 14, &isnull));
		d = SPI_getbinval(tup, desc, 15, &isnull);
		if (!isnull)
		{
			b->has_dates = true;
			b->min_date = DatumGetDateADT(d);
			d = SPI_getbinval(tup, desc, 16, &isnull);
			b->max_date = isnull ? b->min_date : DatumGetDateADT(d);
		}
		strlcpy(b->manifest_sha256, TextDatumGetCString(SPI_getbinval(tup, desc, 17, &isnull)),
				sizeof(b->manifest_sha256));
		d = SPI_getbinval(tup, desc, 18, &isnull);
		b->manifest_bytes = isnull ? -1 : DatumGetInt64(d);
		d = SPI_getbinval(tup, desc, 19, &isnull);
		if (isnull)
			b->manifest_bytes = -1;
		else
			b->manifest_crc32c = (uint32) DatumGetInt64(d);
		b->record_count = DatumGetInt32(SPI_getbinval(tup, desc, 20, &isnull));
		d = SPI_getbinval(tup, desc, 21, &isnull);
		if (!isnull)
		{
			Datum	   *elems;
			int			nelems;

			deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
							  &elems, NULL, &nelems);
			if (nelems != KL_NFILES)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("the row of batch %s in kafka_lake.batches holds file checks kafka_lake did not write",
								b->batch_id),
						 errdetail("Each batch row holds one SHA-256 per landed file, %d in all.", KL_NFILES),
						 errhint("The catalog was edited: restore the row, or run kafka_lake.recover() after removing it so that the batch is adopted again from its manifest.")));
			for (int i = 0; i < KL_NFILES; i++)
				text_to_cstring_buffer(DatumGetTextPP(elems[i]), b->files[i].sha256,
									   sizeof(b->files[i].sha256));
		}
		d = SPI_getbinval(tup, desc, 22, &isnull);
		b->contract = isnull ? KL_MACHINE_EVENT_V1 : TextDatumGetCString(d);
		d = SPI_getbinval(tup, desc, 23, &isnull);
		b->contract_version = isnull ? 1 : DatumGetInt32(d);
		d = SPI_getbinval(tup, desc, 24, &isnull);
		b->readmit = !isnull && DatumGetBool(d);
		d = SPI_getbinval(tup, desc, 25, &isnull);
		if (!isnull)
			text_to_cstring_buffer(DatumGetTextPP(d), b->readmit_of, sizeof(b->readmit_of));
		d = SPI_getbinval(tup, desc, 26, &isnull);
		if (!isnull)
		{
			b->expired = true;
			b->expired_at = DatumGetTimestampTz(d);
		}
		b->landed_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 27, &isnull));
		b->topic = TextDatumGetCString(SPI_getbinval(tup, desc, 28, &isnull));
		b->topic_index = kl_source_topic_index(src, b->topic);
		d = SPI_getbinval(tup, desc, 29, &isnull);
		b->compression = isnull ? KL_COMPRESS_NONE : kl_compression_of(TextDatumGetCString(d));
		d = SPI_getbinval(tup, desc, 30, &isnull);
		if (b->compression < 0 || (b->compression != KL_COMPRESS_NONE && isnull))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the row of batch %s in kafka_lake.batches has a compression kafka_lake did not write",
							b->batch_id),
					 errhint("The catalog was edited: restore the row, or run kafka_lake.recover() after removing it so that the batch is adopted again from its manifest.")));
		if (!isnull)
			kl_int8_array3(d, v);
		for (int i = 0; i < KL_NFILES; i++)
			b->files[i].raw_bytes = isnull ? b->files[i].bytes : v[i];
		b->reduced = DatumGetBool(SPI_getbinval(tup, desc, 31, &isnull));
		result = lappend(result, b);
		MemoryContextSwitchTo(old);
	}
	if (SPI_processed == 0)
	{
		/* still say how many there are */
		Oid			t1[1] = {INT4OID};

		if (SPI_execute_with_args("SELECT pg_catalog.count(*) FROM kafka_lake.batches WHERE source_id = $1",
								  1, t1, values, NULL, true, 0) == SPI_OK_SELECT)
		{
			bool		isnull;

			*total = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
												 SPI_tuptable->tupdesc, 1, &isnull));
		}
	}
	kl_catalog_end(cs);
	return result;
}

/*
 * kl_catalog_partitions
 *		The partitions of the source's topic the catalog has batches of.
 */
List *
kl_catalog_partitions(KlSource *src)
{
	KlCatalogSave cs;
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2] = {Int32GetDatum(src->source_id), CStringGetTextDatum(src->topic)};
	MemoryContext caller = CurrentMemoryContext;
	List	   *result = NIL;

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("SELECT DISTINCT partition FROM kafka_lake.batches"
							  " WHERE source_id = $1 AND topic = $2",
							  2, types, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.batches");
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		bool		isnull;
		int32		p = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[row],
												   SPI_tuptable->tupdesc, 1, &isnull));
		MemoryContext old = MemoryContextSwitchTo(caller);

		result = lappend_int(result, p);
		MemoryContextSwitchTo(old);
	}
	kl_catalog_end(cs);
	return result;
}

/*
 * kl_catalog_forget_batch
 *		Forget a batch whose directory is gone (recover()): its row (and its
 *		coordinates, by cascade), its readmit units' rows, and the event_ids
 *		they accepted, which have no foreign key to batches.  (A readmit
 *		unit itself is forgotten by kl_catalog_forget_readmit.)
 */
void
kl_catalog_forget_batch(KlSource *src, const KlBatch *b)
{
	KlCatalogSave cs;
	Oid			types[6] = {INT4OID, TEXTOID, INT4OID, INT8OID, INT8OID, TEXTOID};
	Datum		values[6];
	const char *topic = kl_topic_or_null(src);
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', topic ? ' ' : 'n'};

	values[0] = Int32GetDatum(src->source_id);
	values[1] = CStringGetTextDatum(b->batch_id);
	values[2] = Int32GetDatum(b->partition);
	values[3] = Int64GetDatum(b->first_offset);
	values[4] = Int64GetDatum(b->last_offset);
	values[5] = topic ? CStringGetTextDatum(topic) : (Datum) 0;
	cs = kl_catalog_begin();
	/* its readmit units go with it (their event_ids lie in its range too) */
	if (kl_catalog_has_contracts() &&
		SPI_execute_with_args("DELETE FROM kafka_lake.batches WHERE source_id = $1 AND readmit_of = $2",
							  2, types, values, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not forget the readmit units of batch %s", b->batch_id);
	if (SPI_execute_with_args(psprintf("DELETE FROM kafka_lake.accepted_events"
									   " WHERE source_id = $1 AND partition = $3"
									   "   AND \"offset\" BETWEEN $4 AND $5%s",
									   kl_event_topic_qual(NULL, 6)),
							  6, types, values, nulls, false, 0) != SPI_OK_DELETE ||
		SPI_execute_with_args("DELETE FROM kafka_lake.batches WHERE source_id = $1 AND batch_id = $2",
							  2, types, values, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not forget batch %s", b->batch_id);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_record_manifest_checks
 *		Record the size and CRC-32C of a batch's manifest for a batch landed
 *		by 1.0 (verify(), once its SHA-256 proved it), so that scans check
 *		it as cheaply as the others.
 */
void
kl_catalog_record_manifest_checks(KlSource *src, const char *batch_id, int64 bytes, uint32 crc32c)
{
	KlCatalogSave cs;
	Oid			types[4] = {INT4OID, TEXTOID, INT8OID, INT8OID};
	Datum		values[4];

	values[0] = Int32GetDatum(src->source_id);
	values[1] = CStringGetTextDatum(batch_id);
	values[2] = Int64GetDatum(bytes);
	values[3] = Int64GetDatum((int64) crc32c);
	cs = kl_catalog_begin();
	if (SPI_execute_with_args("UPDATE kafka_lake.batches SET manifest_bytes = $3,"
							  " manifest_crc32c = $4"
							  " WHERE source_id = $1 AND batch_id = $2"
							  "   AND manifest_bytes IS NULL",
							  4, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update kafka_lake.batches");
	kl_catalog_end(cs);
}

/*
 * kl_catalog_batch_ids
 *		The batch ids the catalog knows for a partition, ascending.
 */
List *
kl_catalog_batch_ids(KlSource *src, int32 partition)
{
	KlCatalogSave cs;
	Oid			types[3] = {INT4OID, TEXTOID, INT4OID};
	Datum		values[3] = {Int32GetDatum(src->source_id), CStringGetTextDatum(src->topic),
	Int32GetDatum(partition)};
	MemoryContext caller = CurrentMemoryContext;
	List	   *result = NIL;

	cs = kl_catalog_begin();
	kl_spi_exec("SELECT batch_id FROM kafka_lake.batches"
				" WHERE source_id = $1 AND topic = $2 AND partition = $3 ORDER BY batch_id",
				3, types, values, NULL, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		char	   *id = SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, 1);
		MemoryContext old = MemoryContextSwitchTo(caller);

		result = lappend(result, pstrdup(id));
		MemoryContextSwitchTo(old);
	}
	kl_catalog_end(cs);
	return result;
}

/*
 * kl_catalog_partition_state
 *		What the catalog remembers of a partition (see KlPartitionState).
 */
void
kl_catalog_partition_state(KlSource *src, int32 partition, KlPartitionState *state)
{
	KlCatalogSave cs;
	Oid			types[3] = {INT4OID, TEXTOID, INT4OID};
	Datum		values[3] = {Int32GetDatum(src->source_id), CStringGetTextDatum(src->topic),
	Int32GetDatum(partition)};
	bool		commit_null;
	bool		batch_null;
	Datum		commit;
	Datum		batch_end;

	cs = kl_catalog_begin();
	kl_spi_exec_kept("SELECT (SELECT max(committed_offset) FROM kafka_lake.offset_commits"
				"        WHERE source_id = $1 AND topic = $2 AND partition = $3),"
				"       (SELECT max(last_offset) + 1 FROM kafka_lake.batches"
				"        WHERE source_id = $1 AND topic = $2 AND partition = $3)",
				3, types, values, NULL, SPI_OK_SELECT);
	commit = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &commit_null);
	batch_end = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &batch_null);
	state->has_history = !commit_null || !batch_null;
	state->last_commit = commit_null ? -1 : DatumGetInt64(commit);
	state->remembered = Max(Max(state->last_commit, batch_null ? 0 : DatumGetInt64(batch_end)), 0);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_remembered_offsets
 *		KlPartitionState's remembered offset of partitions 0 to n - 1 of the
 *		source's current topic, in one query: what close_date() certifies of
 *		the partitions a shard does not own (they may be many).
 */
void
kl_catalog_remembered_offsets(KlSource *src, int n, int64 *remembered)
{
	KlCatalogSave cs;
	Oid			types[3] = {INT4OID, TEXTOID, INT4OID};
	Datum		values[3] = {Int32GetDatum(src->source_id), CStringGetTextDatum(src->topic),
	Int32GetDatum(n)};

	for (int p = 0; p < n; p++)
		remembered[p] = 0;
	cs = kl_catalog_begin();
	kl_spi_exec("SELECT partition, max(o) FROM ("
				"  SELECT partition, max(committed_offset) AS o FROM kafka_lake.offset_commits"
				"   WHERE source_id = $1 AND topic = $2 AND partition < $3 GROUP BY partition"
				"  UNION ALL"
				"  SELECT partition, max(last_offset) + 1 FROM kafka_lake.batches"
				"   WHERE source_id = $1 AND topic = $2 AND partition < $3 GROUP BY partition) r"
				" GROUP BY partition",
				3, types, values, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		int32		p = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		Datum		o = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);

		if (p >= 0 && p < n && !isnull)
			remembered[p] = Max(DatumGetInt64(o), 0);
	}
	kl_catalog_end(cs);
}

/*
 * kl_catalog_group_users
 *		The other sources of this database that use the source's consumer
 *		group, as a comma-separated list of quoted names, or NULL.  (Only a
 *		database upgraded from 1.0 can have them; create_source refuses a
 *		shared group.)
 */
char *
kl_catalog_group_users(KlSource *src)
{
	KlCatalogSave cs;
	Oid			types[2] = {TEXTOID, INT4OID};
	Datum		values[2] = {CStringGetTextDatum(src->group_id), Int32GetDatum(src->source_id)};
	MemoryContext caller = CurrentMemoryContext;
	char	   *result = NULL;

	cs = kl_catalog_begin();
	kl_spi_exec("SELECT string_agg(pg_catalog.quote_ident(source), ', ' ORDER BY source)"
				" FROM kafka_lake.sources WHERE group_id = $1 AND source_id <> $2",
				2, types, values, NULL, SPI_OK_SELECT);
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (v != NULL)
			result = MemoryContextStrdup(caller, v);
	}
	kl_catalog_end(cs);
	return result;
}

