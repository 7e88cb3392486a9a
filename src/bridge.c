/*-------------------------------------------------------------------------
 *
 * bridge.c
 *	  The date bridge, kafka_lake.bridge(source, business_date): the
 *	  accepted events of one business date become a content-addressed
 *	  canonical CSV (the adapter version), silver rows, eight quality checks
 *	  and, when every check passes, a new gold snapshot of that date.
 *
 * THE STEPS
 *
 *	1. lock: one bridge per (source, date) at a time, with a
 *	   transaction-level lock in kafka_lake's advisory lock space (fourth
 *	   field 0x4B4D, "KM"; partitions use 0x4B4C).  A second caller waits,
 *	   then sees the first one's committed run and reports it as skipped;
 *	2. recover every partition on disk that no one else owns (recover.c),
 *	   so that a batch landed by a transaction that did not commit counts.
 *	   A partition whose recovery changed nothing is let go at once, so that
 *	   land() does not wait for the whole bridge;
 *	3. select (pass 1): read the catalog's batches of that date with a fresh
 *	   snapshot, then each accepted.jsonl in (partition, offset) order, the
 *	   batch's manifest and the file checked against the catalog's copy of
 *	   the manifest (batch_read.c: manifest size and CRC-32C; file size, lines,
 *	   CRC-32C; a mismatch is XX001) before its first line is used: a batch
 *	   that disagrees with its manifest is refused; keep the lines
 *	   whose event has that business_date, except coordinates that recover
 *	   demoted.  Each selected event becomes one canonical CSV line (csv.c),
 *	   streamed into a temporary file under <source>/adapter/ and through
 *	   SHA-256 at once: the digest is source_hash.  A hash set of natural
 *	   keys (work_order_id, machine_id, event_time as an instant) marks the
 *	   first event of each key in a bitmap, one bit per event.  No event:
 *	   ERROR P0002, and nothing was written;
 *	4. adapter version: the file is renamed (fsync, rename, fsync) into
 *	   adapter/business_date=<date>/source_hash=<hex>/events.csv next to a
 *	   provenance.json, unless that content address already holds it; its
 *	   row in adapter_versions is created or reused;
 *	5. run: a processed run of the same (source, date, source_hash) makes
 *	   this call report "skipped" with that run, and write nothing more.
 *	   Otherwise a new run_id (a time-ordered UUID) and:
 *	6. silver (pass 2): the CSV that was hashed is read back, the way the
 *	   seed's pipeline reads its input file, and each event the bitmap marks
 *	   first of its natural key goes straight into the table (heap
 *	   multi-insert and index inserts, no SQL per row), while gold is summed
 *	   in C per (plant, line, product);
 *	7. the eight checks (below);
 *	8. when all pass: the run is "processed", the date's current snapshot
 *	   stops being current and a new one (replaces_snapshot_id pointing to
 *	   it) gets the gold rows; otherwise the run is "failed_quality", its
 *	   check results are kept, and gold stays as it was.
 *
 * ONE TRANSACTION, AND THE FILES
 *
 * Everything above runs in the caller's transaction: an ERROR anywhere (a
 * corrupt batch, no event, the fault point bridge_before_gold, a cancel)
 * rolls back every catalog row, silver and gold included.  Files are not
 * transactional, so every file and directory this call creates is
 * registered with fileundo.c before it is created, and removed if the
 * transaction aborts (a subtransaction abort removes those of the
 * subtransaction).  For the same reason a bridge cannot be part of a
 * prepared transaction (PREPARE TRANSACTION is refused).  A content address that already
 * held the file is left alone: its name is its SHA-256.  A temporary file
 * left by a killed backend is removed by the next bridge of that date, which
 * alone may own such a file (the lock of step 1).
 *
 * THE CHECKS, AND WHY THEY ARE INDEPENDENT
 *
 * A check that reuses the numbers of the step it checks proves nothing, so
 * each compares two numbers that different code computed:
 *	row_count_source_to_silver		expected: natural keys among the selected
 *									events (pass 1, from the JSON); observed:
 *									count(*) of the run's silver rows, in SQL;
 *	unit_conservation_silver_to_gold	expected: units and defects summed
 *									over silver in SQL; observed: the same
 *									sums over the gold rows built in C;
 *	not_null_required_columns,
 *	unique_natural_key,
 *	accepted_values_operation,
 *	numeric_range_within_bounds		SQL over the run's silver rows, against
 *									the contract's rules (expected: 0 rows);
 *	freshness_business_date			pass 1: the date written in every
 *									event_time is within one day of the
 *									business date (expected: 0 that are not);
 *	schema_drift					silver's columns, types and NOT NULLs in
 *									pg_attribute equal the installed ones,
 *									and the header read back from the CSV
 *									file is the canonical one.
 * The SQL ones read the rows in one scan; uniqueness is proved by distinct
 * 64-bit hashes of the keys, and only when two hashes meet are the keys
 * themselves grouped, so the count is exact either way.
 *
 * GOLD NUMBERS
 *
 * defect_rate and avg_cycle_time_ms are the seed's to the last digit: the
 * quotient of two integers as a double (Python's int / int, correctly
 * rounded), then Python's round(x, 6) / round(x, 2) of that double, which
 * rounds its exact binary value with exact ties to even.  Decimal
 * arithmetic on the exact quotient differs on exact ties (1 / 128 is
 * 0.0078125: 0.007812 in the seed, not 0.007813) and where the double lies
 * just below a tie (107 / 40 is 2.675, whose double rounds to 2.67).
 *
 * SPEED AND MEMORY
 *
 * The bridge is meant to run at the speed of the disk: one pass over the
 * JSONL, one over the CSV (from the page cache), one SQL scan of silver, no
 * SQL per row.  What it takes:
 *	- accepted lines are read by the fast path of batch_format.c, which
 *	  takes every line land() writes (a DEBUG1 line counts the lines it
 *	  did not take);
 *	- the natural-key set is probed through a short prefetch pipeline, so
 *	  that its cache misses overlap;
 *	- silver is appended (no free-space-map search: silver is append-only,
 *	  and a run's rows stay together), and a BRIN index on run_id is given a
 *	  value once per heap block, not once per row (see KlBrinLast).
 * Memory is bounded by one batch file (at most kafka_lake.batch_max_bytes),
 * the write buffer, the natural-key set (the key bytes in one arena, a
 * 24-byte slot and one bit per event) and the gold groups; events are never
 * held as structs.
 *
 * IDENTIFICATION
 *	  src/bridge.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/genam.h"
#include "access/heapam.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "common/file_perm.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "kafka_lake.h"

PG_FUNCTION_INFO_V1(kafka_lake_bridge);

#define KL_LOCK_SPACE_BRIDGE	0x4B4D	/* "KM": one lock per (source, date) */
#define KL_NCHECKS				8
#define KL_NEVENT_FIELDS		13	/* the first 13 CSV columns */
#define KL_WRITE_CHUNK			(1024 * 1024)
#define KL_SILVER_CHUNK			1000
#define KL_SILVER_NATTS			20
#define KL_RUN_ID_LEN			36

/* silver_machine_events, column by column, as the bridge writes it */
typedef struct KlSilverColumn
{
	const char *name;
	Oid			type;
	const char *sql;			/* as format_type() and NOT NULL show it */
} KlSilverColumn;

static const KlSilverColumn kl_silver_columns[KL_SILVER_NATTS] = {
	{"run_id", TEXTOID, "run_id text not null"},
	{"event_id", TEXTOID, "event_id text not null"},
	{"event_time", TIMESTAMPTZOID, "event_time timestamp with time zone not null"},
	{"business_date", DATEOID, "business_date date not null"},
	{"plant_id", TEXTOID, "plant_id text not null"},
	{"line_id", TEXTOID, "line_id text not null"},
	{"work_order_id", TEXTOID, "work_order_id text not null"},
	{"machine_id", TEXTOID, "machine_id text not null"},
	{"product_code", TEXTOID, "product_code text not null"},
	{"operation", TEXTOID, "operation text not null"},
	{"units_produced", INT8OID, "units_produced bigint not null"},
	{"defect_count", INT8OID, "defect_count bigint not null"},
	{"cycle_time_ms", INT8OID, "cycle_time_ms bigint not null"},
	{"schema_version", INT4OID, "schema_version integer not null"},
	{"kafka_topic", TEXTOID, "kafka_topic text not null"},
	{"kafka_partition", INT4OID, "kafka_partition integer not null"},
	{"kafka_offset", INT8OID, "kafka_offset bigint not null"},
	{"kafka_key", TEXTOID, "kafka_key text"},
	{"kafka_timestamp_ms", INT8OID, "kafka_timestamp_ms bigint"},
	{"kafka_record_fingerprint", TEXTOID, "kafka_record_fingerprint text not null"}
};

static const char *const kl_check_names[KL_NCHECKS] = {
	"row_count_source_to_silver",
	"unit_conservation_silver_to_gold",
	"not_null_required_columns",
	"unique_natural_key",
	"accepted_values_operation",
	"numeric_range_within_bounds",
	"freshness_business_date",
	"schema_drift"
};

/* ----------------------------------------------------------------
 *		Hash sets whose keys live in one arena
 * ----------------------------------------------------------------
 */

/* Bytes appended one key after another; keys are named by offset */
typedef struct KlArena
{
	char	   *data;
	uint64		len;
	uint64		cap;
	MemoryContext cxt;
} KlArena;

/* A key: where its bytes are in the arena, and their hash */
typedef struct KlArenaKey
{
	uint64		off;
	uint32		len;
	uint32		hash;
} KlArenaKey;

/* One slot of a set */
typedef struct KlKeyEntry
{
	KlArenaKey	key;
	int32		group;			/* gold groups: index into the groups */
	char		status;			/* simplehash's */
} KlKeyEntry;

static inline bool
kl_arena_key_equal(const KlArena *arena, const KlArenaKey *a, const KlArenaKey *b)
{
	return a->hash == b->hash && a->len == b->len &&
		memcmp(arena->data + a->off, arena->data + b->off, a->len) == 0;
}

#define SH_PREFIX			klkeys
#define SH_ELEMENT_TYPE		KlKeyEntry
#define SH_KEY_TYPE			KlArenaKey
#define SH_KEY				key
#define SH_HASH_KEY(tb, k)	((k).hash)
#define SH_EQUAL(tb, a, b)	kl_arena_key_equal((KlArena *) (tb)->private_data, &(a), &(b))
#define SH_SCOPE			static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/*
 * Keys on their way into a set.  A million random probes of a table larger
 * than the CPU caches cost a cache miss each; announcing a key's slot some
 * keys ahead of its insertion (a prefetch) lets those misses overlap.
 */
#define KL_KEY_PIPELINE		16

typedef struct KlPendingKey
{
	KlArenaKey	key;
	int64		event;			/* the selected event it belongs to */
} KlPendingKey;

/* A set of keys with its arena */
typedef struct KlKeySet
{
	KlArena		arena;
	klkeys_hash *table;
	int64		count;
	KlPendingKey pending[KL_KEY_PIPELINE];	/* a ring, oldest at head */
	int			head;
	int			npending;
} KlKeySet;

#if defined(__GNUC__) || defined(__clang__)
#define kl_prefetch(addr)	__builtin_prefetch(addr)
#else
#define kl_prefetch(addr)	((void) 0)
#endif

/* ----------------------------------------------------------------
 *		State of one call
 * ----------------------------------------------------------------
 */

/* A batch that gave events to this date (for provenance.json) */
typedef struct KlUsedBatch
{
	char		batch_id[KL_BATCH_ID_LEN + 1];
	int32		partition;
	int64		first_offset;	/* of its selected events */
	int64		last_offset;
	int64		events;
} KlUsedBatch;

/* One gold row being summed */
typedef struct KlGoldGroup
{
	char	   *plant_id;
	char	   *line_id;
	char	   *product_code;
	int64		units;
	int64		defects;
	int64		cycle_sum;
	int64		events;
} KlGoldGroup;

/* One quality check's outcome */
typedef struct KlCheck
{
	bool		passed;
	char	   *expected;
	char	   *observed;
	char	   *detail;
} KlCheck;

/* Everything one bridge() call knows */
typedef struct KlBridge
{
	KlSource   *src;
	DateADT		date;
	char		date_text[11];	/* YYYY-MM-DD */
	TimestampTz started_at;
	MemoryContext cxt;			/* lives for the call */
	int64		total_batches;	/* of the source, for messages */

	/* pass 1: selection, the adapter file, the source-side checks */
	List	   *used_batches;	/* KlUsedBatch */
	int64		selected;		/* events selected */
	int64		distinct_keys;	/* natural keys among them */
	uint8	   *first_seen;		/* bit i: selected event i is the first of
								 * its natural key */
	int64		first_seen_cap; /* bytes */
	int64		stale_events;	/* freshness violations */
	char	   *stale_example;	/* the first one, described */
	int32		first_partition;
	int64		first_offset;
	int32		last_partition;
	int64		last_offset;
	char	   *tmp_path;		/* the CSV being written, until placed */
	int			tmp_fd;
	int64		csv_bytes;
	char		source_hash[KL_SHA256_HEX_LEN + 1];

	/* the adapter version */
	char	   *adapter_dir;
	char	   *csv_path;
	char	   *csv_relpath;	/* as recorded: relative to landing_dir */
	char	   *transform_path; /* the file pass 2 reads */
	bool		adapter_created;

	/* the run */
	char		run_id[KL_RUN_ID_LEN + 1];
	int64		silver_inserted;
	int64		silver_duplicates;
	KlGoldGroup *groups;
	int			ngroups;
	int			groups_cap;
	char	   *header_seen;	/* the CSV header as read back */

	/* timing of the steps, reported at DEBUG1 */
	TimestampTz step_start;

	/* the checks */
	KlCheck		checks[KL_NCHECKS];
	int			passed;
	int64		silver_rows;	/* observed in SQL */
} KlBridge;

/* ----------------------------------------------------------------
 *		Small helpers
 * ----------------------------------------------------------------
 */

/*
 * kl_date_text
 *		A date as YYYY-MM-DD.
 */
static void
kl_date_text(DateADT date, char *out)
{
	int			y,
				m,
				d;

	j2date(date + POSTGRES_EPOCH_JDATE, &y, &m, &d);
	snprintf(out, 11, "%04d-%02d-%02d", y, m, d);
}

/*
 * kl_bridge_step_done
 *		Report how long a step took (DEBUG1), for whoever tunes a bridge.
 */
static void
kl_bridge_step_done(KlBridge *b, const char *step)
{
	TimestampTz now = GetCurrentTimestamp();

	ereport(DEBUG1,
			(errmsg_internal("kafka_lake bridge of \"%s\" %s: %s took %.3f s",
							 b->src->source, b->date_text, step,
							 (double) (now - b->step_start) / USECS_PER_SEC)));
	b->step_start = now;
}

/*
 * kl_new_run_id
 *		A time-ordered UUID (version 7: 48 bits of Unix milliseconds, then
 *		random bits), so that each run's silver rows go to the right edge of
 *		the run_id index.
 */
static void
kl_new_run_id(char *out)
{
	uint8		b[16];
	TimestampTz now = GetCurrentTimestamp();
	uint64		ms = (uint64) (now / 1000) +
		(uint64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;
	char		hex[33];

	if (!pg_strong_random(b, sizeof(b)))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate a random run_id")));
	for (int i = 0; i < 6; i++)
		b[i] = (uint8) (ms >> (8 * (5 - i)));
	b[6] = (b[6] & 0x0F) | 0x70;
	b[8] = (b[8] & 0x3F) | 0x80;
	kl_hex(b, 16, hex);
	snprintf(out, KL_RUN_ID_LEN + 1, "%.8s-%.4s-%.4s-%.4s-%.12s",
			 hex, hex + 8, hex + 12, hex + 16, hex + 20);
}

/*
 * kl_keyset_create / kl_keyset_add
 *		A set of byte strings.  kl_keyset_add returns the entry and whether
 *		the key is new.
 */
static void
kl_keyset_create(KlKeySet *set, MemoryContext cxt, int64 expected)
{
	set->arena.cxt = cxt;
	set->arena.cap = 1024 * 1024;
	set->arena.len = 0;
	set->arena.data = MemoryContextAllocHuge(cxt, set->arena.cap);
	set->table = klkeys_create(cxt, (uint32) Min(Max(expected, 16), PG_INT32_MAX / 2),
							   &set->arena);
	set->count = 0;
	set->head = 0;
	set->npending = 0;
}

static KlKeyEntry *
kl_keyset_add(KlKeySet *set, const char *key, size_t len, bool *is_new)
{
	KlArena    *arena = &set->arena;
	KlArenaKey	k;
	KlKeyEntry *entry;
	bool		found;

	if (arena->len + len > arena->cap)
	{
		while (arena->len + len > arena->cap)
			arena->cap *= 2;
		arena->data = repalloc_huge(arena->data, arena->cap);
	}
	/* append the key tentatively; take it back if it was known */
	memcpy(arena->data + arena->len, key, len);
	k.off = arena->len;
	k.len = (uint32) len;
	k.hash = (uint32) hash_bytes_extended((const unsigned char *) key, (int) len, 0);
	entry = klkeys_insert(set->table, k, &found);
	if (found)
		*is_new = false;
	else
	{
		arena->len += len;
		set->count++;
		*is_new = true;
	}
	return entry;
}

/*
 * kl_keyset_push / kl_keyset_drain
 *		Add keys to a set through the prefetch pipeline; first(event) is
 *		called, in the order the keys were pushed, for each key that was new.
 *		Keys stay in the arena even when they turn out known: only
 *		duplicates, which are rare, waste room.
 */
typedef void (*KlFirstSeen) (void *arg, int64 event);

static void
kl_keyset_pop(KlKeySet *set, KlFirstSeen first, void *arg)
{
	KlPendingKey *pk = &set->pending[set->head];
	bool		found;

	(void) klkeys_insert(set->table, pk->key, &found);
	if (!found)
	{
		set->count++;
		first(arg, pk->event);
	}
	set->head = (set->head + 1) % KL_KEY_PIPELINE;
	set->npending--;
}

static void
kl_keyset_push(KlKeySet *set, const char *key, size_t len, int64 event,
			   KlFirstSeen first, void *arg)
{
	KlArena    *arena = &set->arena;
	KlPendingKey *pk;

	if (set->npending == KL_KEY_PIPELINE)
		kl_keyset_pop(set, first, arg);
	if (arena->len + len > arena->cap)
	{
		while (arena->len + len > arena->cap)
			arena->cap *= 2;
		arena->data = repalloc_huge(arena->data, arena->cap);
	}
	memcpy(arena->data + arena->len, key, len);
	pk = &set->pending[(set->head + set->npending) % KL_KEY_PIPELINE];
	pk->key.off = arena->len;
	pk->key.len = (uint32) len;
	pk->key.hash = (uint32) hash_bytes_extended((const unsigned char *) key, (int) len, 0);
	pk->event = event;
	arena->len += len;
	set->npending++;
	kl_prefetch(&set->table->data[pk->key.hash & set->table->sizemask]);
}

static void
kl_keyset_drain(KlKeySet *set, KlFirstSeen first, void *arg)
{
	while (set->npending > 0)
		kl_keyset_pop(set, first, arg);
}

/*
 * kl_append_keypart
 *		Append a length-prefixed part of a composite key.
 */
static inline void
kl_append_keypart(StringInfo key, const char *s, size_t len)
{
	uint32		l = (uint32) len;

	appendBinaryStringInfo(key, (const char *) &l, sizeof(l));
	appendBinaryStringInfo(key, s, len);
}

/*
 * kl_natural_key
 *		The natural key (work_order_id, machine_id, event_time as an instant)
 *		as bytes.
 */
static void
kl_natural_key(StringInfo key, const char *wo, size_t wo_len,
			   const char *machine, size_t machine_len, TimestampTz event_time)
{
	resetStringInfo(key);
	kl_append_keypart(key, wo, wo_len);
	kl_append_keypart(key, machine, machine_len);
	appendBinaryStringInfo(key, (const char *) &event_time, sizeof(event_time));
}

/* ----------------------------------------------------------------
 *		Steps 1 and 2: lock, recover
 * ----------------------------------------------------------------
 */

/*
 * kl_bridge_lock
 *		Wait until no other session bridges this (source, date); hold the
 *		lock until the end of the transaction.
 */
static void
kl_bridge_lock(KlBridge *b)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) b->src->source_id, (uint32) b->date,
						 KL_LOCK_SPACE_BRIDGE);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * kl_bridge_recover
 *		Recover every partition on disk that no one else owns.  A busy
 *		partition is being landed: its owner recovers it, and what it lands
 *		becomes visible when it commits.
 */
static void
kl_bridge_recover(KlBridge *b)
{
	ListCell   *cell;

	foreach(cell, kl_disk_partitions(b->src))
	{
		int32		p = lfirst_int(cell);

		if (!kl_try_lock_partition(b->src, p))
			continue;
		if (kl_recover_partition(b->src, p, NULL, NULL) == 0)
			kl_unlock_partition(b->src, p);
	}
}

/* ----------------------------------------------------------------
 *		Step 3: select the events, write and hash the CSV
 * ----------------------------------------------------------------
 */

/*
 * kl_bridge_scan
 *		The batches that may hold accepted events of the date, under a
 *		snapshot taken now: after the lock, so that a bridge that waited for
 *		another sees what that one saw, and after recovery, so that adopted
 *		batches count.
 */
static List *
kl_bridge_scan(KlBridge *b)
{
	KlBounds	bounds;
	List	   *batches;

	kl_bounds_init(&bounds);
	bounds.date_lo = bounds.date_hi = b->date;
	bounds.files[KL_FILE_DUPLICATES] = false;
	bounds.files[KL_FILE_QUARANTINE] = false;

	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
	batches = kl_catalog_scan_batches(b->src, &bounds, true, &b->total_batches);
	PopActiveSnapshot();
	return batches;
}

/*
 * kl_bridge_mkdir
 *		Create one directory if it is missing (removed again if the
 *		transaction aborts), fsyncing its parent.
 */
static void
kl_bridge_mkdir(const char *path)
{
	char	   *parent;

	kl_undo_remove_at_abort(path, true, "bridge()");
	if (mkdir(path, pg_dir_create_mode) != 0)
	{
		kl_undo_forget(path);
		if (errno == EEXIST)
			return;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", path),
				 errhint("Check kafka_lake.landing_dir and the free space of its file system.")));
	}
	parent = pstrdup(path);
	get_parent_directory(parent);
	fsync_fname(parent, true);
}

/*
 * kl_remove_stale_temp_files
 *		Remove temporary CSV files of this date left by a backend that died
 *		while bridging it.  Only the holder of this date's lock writes such a
 *		file, and that is us.
 */
static void
kl_remove_stale_temp_files(KlBridge *b, const char *adapter_root)
{
	char	   *prefix = psprintf(".tmp-%s-", b->date_text);
	DIR		   *dir = AllocateDir(adapter_root);
	struct dirent *de;

	if (dir == NULL)
		return;
	while ((de = ReadDir(dir, adapter_root)) != NULL)
	{
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
		{
			char	   *path = psprintf("%s/%s", adapter_root, de->d_name);

			if (unlink(path) != 0 && errno != ENOENT)
				ereport(WARNING,
						(errcode_for_file_access(),
						 errmsg("could not remove stale file \"%s\": %m", path)));
		}
	}
	FreeDir(dir);
}

/*
 * kl_bridge_open_csv
 *		Create the temporary CSV file (at the first selected event, so that
 *		a date without events leaves nothing behind).
 */
static void
kl_bridge_open_csv(KlBridge *b)
{
	char	   *adapter_root = psprintf("%s/adapter", b->src->dir);
	uint8		rnd[4];
	char		rnd_hex[9];

	kl_bridge_mkdir(adapter_root);
	kl_remove_stale_temp_files(b, adapter_root);
	if (!pg_strong_random(rnd, sizeof(rnd)))
		memset(rnd, 0, sizeof(rnd));
	kl_hex(rnd, sizeof(rnd), rnd_hex);
	b->tmp_path = MemoryContextStrdup(b->cxt,
									  psprintf("%s/.tmp-%s-%d-%s.csv", adapter_root,
											   b->date_text, MyProcPid, rnd_hex));
	kl_undo_remove_at_abort(b->tmp_path, false, "bridge()");
	b->tmp_fd = OpenTransientFile(b->tmp_path, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (b->tmp_fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", b->tmp_path),
				 errhint("Check kafka_lake.landing_dir and the free space of its file system.")));
}

/*
 * kl_bridge_write
 *		Hash and write the pending CSV bytes.
 */
static void
kl_bridge_write(KlBridge *b, KlSha256 *sha, StringInfo buf)
{
	const char *p = buf->data;
	size_t		left = buf->len;

	kl_sha256_update(sha, p, left);
	b->csv_bytes += left;
	while (left > 0)
	{
		ssize_t		n;

		errno = 0;
		n = write(b->tmp_fd, p, left);
		if (n <= 0)
		{
			if (errno == 0)
				errno = ENOSPC;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write file \"%s\": %m", b->tmp_path),
					 errhint("Nothing was recorded; free some space and call bridge() again.")));
		}
		p += n;
		left -= n;
	}
	resetStringInfo(buf);
}

/*
 * kl_bad_line
 *		An accepted line without the members every accepted line has.
 */
static void
kl_bad_line(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("accepted line is malformed: %s", what),
			 errhint("Run kafka_lake.verify() on the source to list every problem.")));
}

/*
 * kl_json_text
 *		The content of a string member: the raw bytes when it has no
 *		escapes, else decoded into scratch.
 */
static inline void
kl_json_text(const KlJsonValue *v, StringInfo scratch, const char **s, size_t *len,
			 const char *name)
{
	if (v->type != KL_JSON_STRING)
		kl_bad_line(psprintf("event field \"%s\" is not a string", name));
	if (!v->has_escapes)
	{
		*s = v->start + 1;
		*len = v->len - 2;
		return;
	}
	resetStringInfo(scratch);
	kl_json_decode_string(v, scratch);
	*s = scratch->data;
	*len = scratch->len;
}

/*
 * kl_json_int
 *		The value of an integer member.
 */
static inline int64
kl_json_int(const KlJsonValue *v, const char *name)
{
	int64		result;

	if (v->type != KL_JSON_NUMBER || !v->is_integer ||
		!kl_json_parse_int64(v->start, v->len, &result))
		kl_bad_line(psprintf("event field \"%s\" is not an integer", name));
	return result;
}

/*
 * kl_mark_first_seen
 *		Selected event number event is the first of its natural key.
 */
static void
kl_mark_first_seen(void *arg, int64 event)
{
	KlBridge   *b = (KlBridge *) arg;

	b->first_seen[event / 8] |= (uint8) (1 << (event % 8));
}

/*
 * kl_bridge_select
 *		Pass 1.  Every accepted event of the date, in (partition, offset)
 *		order, becomes one canonical CSV line, written to a temporary file
 *		and hashed on the way; the source-side check numbers are counted at
 *		the same time.  ERROR P0002 when there is no event.
 */
static void
kl_bridge_select(KlBridge *b, List *batches)
{
	MemoryContext batch_cxt = AllocSetContextCreate(b->cxt, "kafka_lake bridge batch",
													ALLOCSET_DEFAULT_SIZES);
	MemoryContext keys_cxt = AllocSetContextCreate(b->cxt, "kafka_lake bridge keys",
												   ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(b->cxt);
	const char *field_names[KL_NEVENT_FIELDS];
	StringInfoData scratch[KL_NEVENT_FIELDS + 1];
	StringInfoData out;
	StringInfoData key;
	KlLine		line;
	KlSha256   *sha = kl_sha256_create();
	KlKeySet	keys;
	KlCsvValue	values[KL_CSV_NCOLUMNS];
	char		date_json[13];
	char		fingerprint[KL_SHA256_HEX_LEN + 1];
	int64		capacity = 0;
	int64		lines_read = 0;
	uint8		digest[KL_SHA256_LEN];
	ListCell   *cell;

	for (int i = 0; i < KL_NEVENT_FIELDS; i++)
		field_names[i] = kl_csv_columns[i];
	memset(&line, 0, sizeof(line));
	kl_line_set_fields(&line, KL_NEVENT_FIELDS, field_names);
	for (int i = 0; i <= KL_NEVENT_FIELDS; i++)
		initStringInfo(&scratch[i]);
	initStringInfo(&out);
	enlargeStringInfo(&out, KL_WRITE_CHUNK + 64 * 1024);
	initStringInfo(&key);
	snprintf(date_json, sizeof(date_json), "\"%s\"", b->date_text);
	foreach(cell, batches)
		capacity += ((KlBatchRef *) lfirst(cell))->counts[KL_FILE_ACCEPTED];
	kl_keyset_create(&keys, keys_cxt, capacity);

	memset(values, 0, sizeof(values));
	values[KL_CSV_KAFKA_TOPIC].str = b->src->topic;
	values[KL_CSV_KAFKA_TOPIC].len = strlen(b->src->topic);
	values[KL_CSV_KAFKA_RECORD_FINGERPRINT].str = fingerprint;
	values[KL_CSV_KAFKA_RECORD_FINGERPRINT].len = KL_SHA256_HEX_LEN;
	for (int i = KL_CSV_UNITS_PRODUCED; i <= KL_CSV_CYCLE_TIME_MS; i++)
		values[i].is_int = true;
	values[KL_CSV_SCHEMA_VERSION].is_int = true;
	values[KL_CSV_KAFKA_PARTITION].is_int = true;
	values[KL_CSV_KAFKA_OFFSET].is_int = true;

	foreach(cell, batches)
	{
		KlBatchRef *batch = lfirst(cell);
		KlUsedBatch *used = NULL;
		KlFileReader reader;
		const char *text;
		size_t		len;

		MemoryContextSwitchTo(batch_cxt);
		kl_check_manifest(b->src, batch);
		kl_reader_open(&reader, b->src, batch, KL_FILE_ACCEPTED);
		reader.errcallback.previous = error_context_stack;
		error_context_stack = &reader.errcallback;

		while (kl_reader_next(&reader, &text, &len))
		{
			const KlJsonValue *f = line.fields;
			TimestampTz instant;
			DateADT		written_day;
			int			idx;

			if ((reader.lineno & 1023) == 0)
				CHECK_FOR_INTERRUPTS();
			kl_line_parse(&line, text, len, KL_WANT_KAFKA);

			/* only events of the date, and not demoted coordinates */
			if (f[KL_CSV_BUSINESS_DATE].type != KL_JSON_STRING)
				kl_bad_line("event field \"business_date\" is not a string");
			if (!f[KL_CSV_BUSINESS_DATE].has_escapes)
			{
				if (f[KL_CSV_BUSINESS_DATE].len != 12 ||
					memcmp(f[KL_CSV_BUSINESS_DATE].start, date_json, 12) != 0)
					continue;
			}
			else
			{
				resetStringInfo(&scratch[KL_CSV_BUSINESS_DATE]);
				kl_json_decode_string(&f[KL_CSV_BUSINESS_DATE], &scratch[KL_CSV_BUSINESS_DATE]);
				if (strcmp(scratch[KL_CSV_BUSINESS_DATE].data, b->date_text) != 0)
					continue;
			}
			idx = kl_batch_coordinate_index(batch, line.offset);
			if (idx < 0 || batch->fingerprints == NULL || idx >= batch->nfingerprints)
				kl_bad_line(psprintf("offset %lld is not a coordinate of its batch",
									 (long long) line.offset));
			if (batch->demoted_statuses && batch->demoted_statuses[idx] == KL_STATUS_DEMOTED)
				continue;

			/* the CSV line */
			for (int i = 0; i < KL_NEVENT_FIELDS; i++)
			{
				if (values[i].is_int)
					values[i].ival = kl_json_int(&f[i], kl_csv_columns[i]);
				else
					kl_json_text(&f[i], &scratch[i], &values[i].str, &values[i].len,
								 kl_csv_columns[i]);
			}
			values[KL_CSV_KAFKA_PARTITION].ival = batch->partition;
			values[KL_CSV_KAFKA_OFFSET].ival = line.offset;
			values[KL_CSV_KAFKA_KEY].is_null = false;
			if (line.key.type == KL_JSON_STRING)
				kl_json_text(&line.key, &scratch[KL_NEVENT_FIELDS],
							 &values[KL_CSV_KAFKA_KEY].str, &values[KL_CSV_KAFKA_KEY].len, "key");
			else if (line.key_base64.type == KL_JSON_STRING)
				kl_json_text(&line.key_base64, &scratch[KL_NEVENT_FIELDS],
							 &values[KL_CSV_KAFKA_KEY].str, &values[KL_CSV_KAFKA_KEY].len,
							 "key_base64");
			else
				values[KL_CSV_KAFKA_KEY].is_null = true;
			values[KL_CSV_KAFKA_TIMESTAMP_MS].is_int = (line.timestamp_ms >= 0);
			values[KL_CSV_KAFKA_TIMESTAMP_MS].is_null = (line.timestamp_ms < 0);
			values[KL_CSV_KAFKA_TIMESTAMP_MS].ival = line.timestamp_ms;
			kl_hex(batch->fingerprints + (Size) idx * KL_SHA256_LEN, KL_SHA256_LEN, fingerprint);

			if (b->tmp_path == NULL)
			{
				kl_bridge_open_csv(b);
				appendStringInfoString(&out, kl_csv_header);
			}
			kl_csv_append_row(&out, values);
			if (out.len >= KL_WRITE_CHUNK)
				kl_bridge_write(b, sha, &out);

			/* source-side check numbers: natural keys, freshness */
			if (kl_parse_iso_timestamp(values[KL_CSV_EVENT_TIME].str,
									   (int) values[KL_CSV_EVENT_TIME].len, true,
									   &instant, &written_day) != KL_ISO_VALID)
				kl_bad_line("event_time is not an ISO-8601 timestamp with a time zone");
			kl_natural_key(&key, values[KL_CSV_WORK_ORDER_ID].str, values[KL_CSV_WORK_ORDER_ID].len,
						   values[KL_CSV_MACHINE_ID].str, values[KL_CSV_MACHINE_ID].len, instant);
			if (b->selected / 8 >= b->first_seen_cap)
			{
				int64		cap = Max(b->first_seen_cap * 2, 8192);

				b->first_seen = b->first_seen ?
					repalloc_huge(b->first_seen, cap) :
					MemoryContextAllocHuge(b->cxt, cap);
				memset(b->first_seen + b->first_seen_cap, 0, cap - b->first_seen_cap);
				b->first_seen_cap = cap;
			}
			kl_keyset_push(&keys, key.data, key.len, b->selected, kl_mark_first_seen, b);
			if (written_day < b->date - 1 || written_day > b->date + 1)
			{
				if (b->stale_events++ == 0)
					b->stale_example =
						MemoryContextStrdup(b->cxt,
											psprintf("event %.*s at partition %d offset %lld has event_time %.*s",
													 (int) Min(values[KL_CSV_EVENT_ID].len, 200),
													 values[KL_CSV_EVENT_ID].str,
													 batch->partition, (long long) line.offset,
													 (int) Min(values[KL_CSV_EVENT_TIME].len, 64),
													 values[KL_CSV_EVENT_TIME].str));
			}

			/* provenance */
			if (used == NULL)
			{
				MemoryContextSwitchTo(b->cxt);
				used = palloc0(sizeof(KlUsedBatch));
				strlcpy(used->batch_id, batch->batch_id, sizeof(used->batch_id));
				used->partition = batch->partition;
				used->first_offset = line.offset;
				b->used_batches = lappend(b->used_batches, used);
				MemoryContextSwitchTo(batch_cxt);
			}
			used->last_offset = line.offset;
			used->events++;
			if (b->selected == 0)
			{
				b->first_partition = batch->partition;
				b->first_offset = line.offset;
			}
			b->last_partition = batch->partition;
			b->last_offset = line.offset;
			b->selected++;
		}

		error_context_stack = reader.errcallback.previous;
		lines_read += reader.lineno;
		kl_reader_close(&reader);
		MemoryContextSwitchTo(b->cxt);
		MemoryContextReset(batch_cxt);
	}
	kl_keyset_drain(&keys, kl_mark_first_seen, b);
	b->distinct_keys = keys.count;
	MemoryContextDelete(keys_cxt);
	ereport(DEBUG1,
			(errmsg_internal("kafka_lake bridge of \"%s\" %s: %lld accepted lines read, %lld of them parsed strictly",
							 b->src->source, b->date_text, (long long) lines_read,
							 (long long) line.parsed_strictly)));

	if (b->selected == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("source \"%s\" has no accepted event with business_date %s",
						b->src->source, b->date_text),
				 errdetail("The source has %lld landed batches; none holds an accepted event of that date.",
						   (long long) b->total_batches),
				 errhint("Land the topic first with kafka_lake.land('%s'), or check the date: the foreign table kafka_lake.%s_records shows the business_date of every landed record.",
						 b->src->source, b->src->source)));

	/* finish the file: the last bytes, the digest, fsync */
	kl_bridge_write(b, sha, &out);
	kl_sha256_final(sha, digest);
	kl_hex(digest, KL_SHA256_LEN, b->source_hash);
	if (pg_fsync(b->tmp_fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", b->tmp_path)));
	if (CloseTransientFile(b->tmp_fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", b->tmp_path)));
	b->tmp_fd = -1;
	MemoryContextSwitchTo(old);
}

/* ----------------------------------------------------------------
 *		Step 4: the adapter version
 * ----------------------------------------------------------------
 */

/*
 * kl_extension_version
 *		The installed version of kafka_lake.
 */
static char *
kl_extension_version(void)
{
	MemoryContext caller = CurrentMemoryContext;
	KlCatalogSave cs = kl_catalog_begin();
	char	   *version = NULL;

	if (SPI_execute("SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'kafka_lake'",
					true, 1) == SPI_OK_SELECT && SPI_processed == 1)
		version = MemoryContextStrdup(caller,
									  SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	kl_catalog_end(cs);
	return version ? version : pstrdup("unknown");
}

/*
 * kl_append_coordinate
 *		{"offset": ..., "partition": ..., "topic": ...}
 */
static void
kl_append_coordinate(StringInfo out, const char *topic, int32 partition, int64 offset)
{
	appendStringInfoString(out, "{\"offset\": ");
	kl_json_append_int64(out, offset);
	appendStringInfoString(out, ", \"partition\": ");
	kl_json_append_int64(out, partition);
	appendStringInfoString(out, ", \"topic\": ");
	kl_json_append_string(out, topic, strlen(topic));
	appendStringInfoChar(out, '}');
}

/*
 * kl_bridge_provenance
 *		provenance.json: what the CSV was made from (keys sorted, in the
 *		json.dumps layout of the landed files).
 */
static char *
kl_bridge_provenance(KlBridge *b)
{
	StringInfoData doc;
	TimestampTz now = GetCurrentTimestamp();
	struct pg_tm tm;
	fsec_t		fsec;
	ListCell   *cell;
	char	   *created;

	if (timestamp2tm(now, NULL, &tm, &fsec, NULL, NULL) != 0)
		elog(ERROR, "timestamp out of range");
	created = psprintf("%04d-%02d-%02dT%02d:%02d:%02d.%06d+00:00",
					   tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
					   (int) fsec);

	initStringInfo(&doc);
	appendStringInfoString(&doc, "{\n  \"batches\": [\n");
	foreach(cell, b->used_batches)
	{
		KlUsedBatch *u = lfirst(cell);

		appendStringInfoString(&doc, "    {\"batch_id\": ");
		kl_json_append_string(&doc, u->batch_id, strlen(u->batch_id));
		appendStringInfo(&doc, ", \"events\": %lld, \"first_offset\": %lld, \"last_offset\": %lld, \"partition\": %d}%s\n",
						 (long long) u->events, (long long) u->first_offset,
						 (long long) u->last_offset, u->partition,
						 lnext(b->used_batches, cell) ? "," : "");
	}
	appendStringInfo(&doc, "  ],\n  \"business_date\": \"%s\",\n", b->date_text);
	appendStringInfo(&doc, "  \"created_at\": \"%s\",\n", created);
	appendStringInfo(&doc, "  \"csv_bytes\": %lld,\n", (long long) b->csv_bytes);
	appendStringInfo(&doc, "  \"event_count\": %lld,\n", (long long) b->selected);
	appendStringInfoString(&doc, "  \"first_coordinate\": ");
	kl_append_coordinate(&doc, b->src->topic, b->first_partition, b->first_offset);
	appendStringInfoString(&doc, ",\n  \"format_version\": 1,\n  \"kafka_lake_version\": ");
	{
		char	   *version = kl_extension_version();

		kl_json_append_string(&doc, version, strlen(version));
	}
	appendStringInfoString(&doc, ",\n  \"last_coordinate\": ");
	kl_append_coordinate(&doc, b->src->topic, b->last_partition, b->last_offset);
	appendStringInfoString(&doc, ",\n  \"source\": ");
	kl_json_append_string(&doc, b->src->source, strlen(b->src->source));
	appendStringInfo(&doc, ",\n  \"source_hash\": \"%s\",\n  \"topic\": ", b->source_hash);
	kl_json_append_string(&doc, b->src->topic, strlen(b->src->topic));
	appendStringInfoString(&doc, "\n}\n");
	return doc.data;
}

/*
 * kl_bridge_write_file
 *		Write a small file durably: a temporary name, fsync, rename, fsync.
 */
static void
kl_bridge_write_file(const char *path, const char *data, size_t len)
{
	char	   *tmp = psprintf("%s.tmp", path);
	int			fd;

	kl_undo_remove_at_abort(tmp, false, "bridge()");
	kl_undo_remove_at_abort(path, false, "bridge()");

	/*
	 * A stale temporary file is replaced, never opened: whatever is there
	 * (a FIFO would block open(2) for good) goes first.
	 */
	if (unlink(tmp) != 0 && errno != ENOENT)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not remove stale file \"%s\": %m", tmp)));
	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", tmp)));
	errno = 0;
	if (write(fd, data, len) != (ssize_t) len)
	{
		if (errno == 0)
			errno = ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", tmp)));
	}
	if (pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", tmp)));
	CloseTransientFile(fd);
	(void) durable_rename(tmp, path, ERROR);
	kl_undo_forget(tmp);
}

/*
 * kl_bridge_place_adapter
 *		Put the CSV at its content address, with provenance.json.  When the
 *		address already holds a file of this size it is this content (its
 *		name is its SHA-256): it stays, and ours is dropped once silver is
 *		loaded from it.
 */
static void
kl_bridge_place_adapter(KlBridge *b)
{
	char	   *date_dir = psprintf("%s/adapter/business_date=%s", b->src->dir, b->date_text);
	char	   *provenance_path;
	struct stat st;
	MemoryContext old = MemoryContextSwitchTo(b->cxt);

	b->adapter_dir = psprintf("%s/source_hash=%s", date_dir, b->source_hash);
	b->csv_path = psprintf("%s/events.csv", b->adapter_dir);
	b->csv_relpath = psprintf("%s/adapter/business_date=%s/source_hash=%s/events.csv",
							  b->src->source, b->date_text, b->source_hash);
	provenance_path = psprintf("%s/provenance.json", b->adapter_dir);
	MemoryContextSwitchTo(old);

	kl_bridge_mkdir(date_dir);
	kl_bridge_mkdir(b->adapter_dir);

	if (lstat(b->csv_path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == b->csv_bytes)
		b->transform_path = b->tmp_path;
	else
	{
		kl_undo_remove_at_abort(b->csv_path, false, "bridge()");
		(void) durable_rename(b->tmp_path, b->csv_path, ERROR);
		kl_undo_forget(b->tmp_path);
		b->tmp_path = NULL;
		b->transform_path = b->csv_path;
	}
	if (lstat(provenance_path, &st) != 0)
	{
		char	   *doc = kl_bridge_provenance(b);

		kl_bridge_write_file(provenance_path, doc, strlen(doc));
	}
}

/*
 * kl_bridge_drop_temp
 *		Remove our copy of a CSV whose content address was already taken.
 */
static void
kl_bridge_drop_temp(KlBridge *b)
{
	if (b->tmp_path == NULL)
		return;
	if (unlink(b->tmp_path) != 0 && errno != ENOENT)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", b->tmp_path)));
	kl_undo_forget(b->tmp_path);
	b->tmp_path = NULL;
}

/*
 * kl_bridge_record_adapter
 *		The adapter_versions row: created, or reused when it exists.
 */
static void
kl_bridge_record_adapter(KlBridge *b)
{
	KlCatalogSave cs;
	Oid			types[6] = {INT4OID, DATEOID, TEXTOID, INT4OID, INT8OID, TEXTOID};
	Datum		values[6];

	values[0] = Int32GetDatum(b->src->source_id);
	values[1] = DateADTGetDatum(b->date);
	values[2] = CStringGetTextDatum(b->source_hash);
	values[3] = Int32GetDatum((int32) Min(b->selected, PG_INT32_MAX));
	values[4] = Int64GetDatum(b->csv_bytes);
	values[5] = CStringGetTextDatum(b->csv_relpath);

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("INSERT INTO kafka_lake.adapter_versions (source_id, business_date,"
							  " source_hash, event_count, csv_bytes, path)"
							  " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
							  6, types, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the adapter version");
	b->adapter_created = (SPI_processed == 1);
	kl_catalog_end(cs);
}

/* ----------------------------------------------------------------
 *		Step 5: an earlier processed run of the same input
 * ----------------------------------------------------------------
 */

/* What a skipped call reports */
typedef struct KlPriorRun
{
	char	   *run_id;
	int32		quality_passed;
	int32		quality_total;
	int32		silver_rows;
	int32		gold_rows;
	bool		has_snapshot;
	int64		snapshot_id;	/* the date's current one */
} KlPriorRun;

/*
 * kl_current_snapshot
 *		The current snapshot of the date, if any (inside a catalog section).
 */
static bool
kl_current_snapshot(KlBridge *b, int64 *snapshot_id)
{
	Oid			types[2] = {INT4OID, DATEOID};
	Datum		values[2] = {Int32GetDatum(b->src->source_id), DateADTGetDatum(b->date)};
	bool		isnull;

	if (SPI_execute_with_args("SELECT snapshot_id FROM kafka_lake.snapshots"
							  " WHERE source_id = $1 AND business_date = $2 AND is_current",
							  2, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.snapshots");
	if (SPI_processed == 0)
		return false;
	*snapshot_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											   1, &isnull));
	return true;
}

/*
 * kl_bridge_find_processed_run
 *		A processed run of this (source, date, source_hash), if any.  Read
 *		with a snapshot taken now, so a bridge that waited for the lock sees
 *		the run of the one it waited for.
 */
static bool
kl_bridge_find_processed_run(KlBridge *b, KlPriorRun *prior)
{
	MemoryContext caller = CurrentMemoryContext;
	KlCatalogSave cs;
	Oid			types[3] = {INT4OID, DATEOID, TEXTOID};
	Datum		values[3];
	bool		found = false;

	values[0] = Int32GetDatum(b->src->source_id);
	values[1] = DateADTGetDatum(b->date);
	values[2] = CStringGetTextDatum(b->source_hash);

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("SELECT run_id, quality_passed, quality_total, silver_rows, gold_rows"
							  " FROM kafka_lake.runs"
							  " WHERE source_id = $1 AND business_date = $2 AND source_hash = $3"
							  " AND status = 'processed'",
							  3, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.runs");
	if (SPI_processed > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		found = true;
		prior->run_id = MemoryContextStrdup(caller, SPI_getvalue(tup, desc, 1));
		prior->quality_passed = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		prior->quality_total = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
		prior->silver_rows = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
		prior->gold_rows = DatumGetInt32(SPI_getbinval(tup, desc, 5, &isnull));
		prior->has_snapshot = kl_current_snapshot(b, &prior->snapshot_id);
	}
	kl_catalog_end(cs);
	return found;
}

/* ----------------------------------------------------------------
 *		Step 6: silver, from the CSV; gold sums in C
 * ----------------------------------------------------------------
 */

/*
 * kl_bridge_check_silver_layout
 *		The direct insert below builds tuples for the installed layout of
 *		silver_machine_events; refuse a table that differs.
 */
static void
kl_bridge_check_silver_layout(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	bool		ok = (desc->natts == KL_SILVER_NATTS);

	for (int i = 0; ok && i < KL_SILVER_NATTS; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || att->atttypid != kl_silver_columns[i].type ||
			strcmp(NameStr(att->attname), kl_silver_columns[i].name) != 0)
			ok = false;
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table kafka_lake.silver_machine_events does not have the columns the bridge writes"),
				 errdetail("Its columns or their types were changed after the extension was installed."),
				 errhint("Restore the table's definition from the kafka_lake install script.")));
}

/*
 * What a BRIN index of silver was last given.  A BRIN summary is the union
 * of the values of its block range, so giving it a value again for a heap
 * block it was given that value for changes nothing: the writer skips such
 * calls, which for the run_id index are all but one per heap block.
 */
typedef struct KlBrinLast
{
	bool		valid;
	BlockNumber block;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	MemoryContext cxt;			/* holds copies of the values */
} KlBrinLast;

/* The open silver table and its indexes, and the rows not yet inserted */
typedef struct KlSilverWriter
{
	Relation	rel;
	int			nindexes;
	Relation   *indexes;
	IndexInfo **index_info;
	ExprState **predicates;
	KlBrinLast **brin_last;		/* NULL for an index that is not BRIN */
	EState	   *estate;
	BulkInsertState bistate;
	CommandId	cid;
	TupleTableSlot *slots[KL_SILVER_CHUNK];
	int			nslots;
	MemoryContext rows_cxt;		/* the datums of pending rows */
} KlSilverWriter;

/*
 * kl_silver_open
 *		Open silver and every index on it.
 */
static void
kl_silver_open(KlSilverWriter *w, MemoryContext cxt)
{
	List	   *index_oids;
	ListCell   *cell;
	int			i = 0;

	memset(w, 0, sizeof(*w));
	w->rel = table_open(kl_catalog_relid("silver_machine_events"), RowExclusiveLock);
	kl_bridge_check_silver_layout(w->rel);
	w->estate = CreateExecutorState();
	index_oids = RelationGetIndexList(w->rel);
	w->nindexes = list_length(index_oids);
	w->indexes = palloc0(sizeof(Relation) * Max(w->nindexes, 1));
	w->index_info = palloc0(sizeof(IndexInfo *) * Max(w->nindexes, 1));
	w->predicates = palloc0(sizeof(ExprState *) * Max(w->nindexes, 1));
	w->brin_last = palloc0(sizeof(KlBrinLast *) * Max(w->nindexes, 1));
	foreach(cell, index_oids)
	{
		Relation	idx = index_open(lfirst_oid(cell), RowExclusiveLock);
		IndexInfo  *ii = BuildIndexInfo(idx);

		if (ii->ii_ExclusionOps != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the bridge cannot maintain exclusion constraint index \"%s\" on kafka_lake.silver_machine_events",
							RelationGetRelationName(idx)),
					 errhint("Drop that constraint; silver rows are deduplicated by the bridge itself.")));
		w->indexes[i] = idx;
		w->index_info[i] = ii;
		if (ii->ii_Predicate != NIL)
			w->predicates[i] = ExecPrepareQual(ii->ii_Predicate, w->estate);
		if (idx->rd_rel->relam == BRIN_AM_OID)
		{
			w->brin_last[i] = palloc0(sizeof(KlBrinLast));
			w->brin_last[i]->cxt = AllocSetContextCreate(cxt, "kafka_lake silver brin",
														 ALLOCSET_SMALL_SIZES);
		}
		i++;
	}
	w->bistate = GetBulkInsertState();
	w->cid = GetCurrentCommandId(true);
	for (i = 0; i < KL_SILVER_CHUNK; i++)
		w->slots[i] = table_slot_create(w->rel, NULL);
	w->rows_cxt = AllocSetContextCreate(cxt, "kafka_lake silver rows", ALLOCSET_DEFAULT_SIZES);
}

/*
 * kl_brin_seen
 *		Was this BRIN index just given these values for this heap block?
 *		If not, remember them as the last ones given.
 */
static bool
kl_brin_seen(KlBrinLast *last, Relation index, BlockNumber block, Datum *values,
			 bool *isnull)
{
	TupleDesc	desc = RelationGetDescr(index);
	int			natts = IndexRelationGetNumberOfKeyAttributes(index);
	MemoryContext old;

	if (last->valid && last->block == block)
	{
		bool		same = true;

		for (int k = 0; same && k < natts; k++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, k);

			if (isnull[k] != last->isnull[k])
				same = false;
			else if (!isnull[k] &&
					 !datumIsEqual(values[k], last->values[k], att->attbyval, att->attlen))
				same = false;
		}
		if (same)
			return true;
	}
	MemoryContextReset(last->cxt);
	old = MemoryContextSwitchTo(last->cxt);
	for (int k = 0; k < natts; k++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, k);

		last->isnull[k] = isnull[k];
		last->values[k] = isnull[k] ? (Datum) 0 :
			datumCopy(values[k], att->attbyval, att->attlen);
	}
	MemoryContextSwitchTo(old);
	last->block = block;
	last->valid = true;
	return false;
}

/*
 * kl_silver_flush
 *		Insert the pending rows: one heap multi-insert, then their index
 *		entries.
 */
static void
kl_silver_flush(KlSilverWriter *w)
{
	ExprContext *econtext = GetPerTupleExprContext(w->estate);

	if (w->nslots == 0)
		return;
	table_multi_insert(w->rel, w->slots, w->nslots, w->cid, TABLE_INSERT_SKIP_FSM, w->bistate);
	for (int j = 0; j < w->nslots; j++)
	{
		TupleTableSlot *slot = w->slots[j];

		econtext->ecxt_scantuple = slot;
		for (int i = 0; i < w->nindexes; i++)
		{
			IndexInfo  *ii = w->index_info[i];
			Datum		values[INDEX_MAX_KEYS];
			bool		isnull[INDEX_MAX_KEYS];

			if (w->predicates[i] && !ExecQual(w->predicates[i], econtext))
				continue;
			FormIndexDatum(ii, slot, w->estate, values, isnull);
			if (w->brin_last[i] &&
				kl_brin_seen(w->brin_last[i], w->indexes[i],
							 ItemPointerGetBlockNumber(&slot->tts_tid), values, isnull))
				continue;
			index_insert(w->indexes[i], values, isnull, &slot->tts_tid, w->rel,
						 ii->ii_Unique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO, false, ii);
		}
		ResetPerTupleExprContext(w->estate);
		ExecClearTuple(slot);
	}
	w->nslots = 0;
	MemoryContextReset(w->rows_cxt);
	CHECK_FOR_INTERRUPTS();
}

/*
 * kl_silver_close
 *		Insert what is pending, release everything.
 */
static void
kl_silver_close(KlSilverWriter *w)
{
	kl_silver_flush(w);
	for (int i = 0; i < KL_SILVER_CHUNK; i++)
		ExecDropSingleTupleTableSlot(w->slots[i]);
	FreeBulkInsertState(w->bistate);
	table_finish_bulk_insert(w->rel, TABLE_INSERT_SKIP_FSM);
	for (int i = 0; i < w->nindexes; i++)
		index_close(w->indexes[i], RowExclusiveLock);
	FreeExecutorState(w->estate);
	table_close(w->rel, RowExclusiveLock);
}

/*
 * kl_csv_int
 *		An integer field of the CSV read back.
 */
static int64
kl_csv_int(KlCsvReader *r, const char *s, int len, int column)
{
	int64		v;

	if (!kl_json_parse_int64(s, len, &v))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("CSV file \"%s\" has an invalid %s at record %lld",
						r->path, kl_csv_columns[column], (long long) r->records)));
	return v;
}

/*
 * kl_text_datum
 *		A text datum of a CSV field.
 */
static inline Datum
kl_text_datum(const char *s, int len)
{
	return PointerGetDatum(cstring_to_text_with_len(s, len));
}

/*
 * kl_gold_add
 *		Add one silver row to its gold group.
 */
static void
kl_gold_add(KlBridge *b, KlKeySet *groups, StringInfo key, char **f, int *lens,
			int64 units, int64 defects, int64 cycle_ms)
{
	KlKeyEntry *entry;
	KlGoldGroup *g;
	bool		is_new;

	resetStringInfo(key);
	kl_append_keypart(key, f[KL_CSV_PLANT_ID], lens[KL_CSV_PLANT_ID]);
	kl_append_keypart(key, f[KL_CSV_LINE_ID], lens[KL_CSV_LINE_ID]);
	kl_append_keypart(key, f[KL_CSV_PRODUCT_CODE], lens[KL_CSV_PRODUCT_CODE]);
	entry = kl_keyset_add(groups, key->data, key->len, &is_new);
	if (is_new)
	{
		MemoryContext old = MemoryContextSwitchTo(b->cxt);

		if (b->ngroups == b->groups_cap)
		{
			b->groups_cap = Max(b->groups_cap * 2, 16);
			b->groups = b->groups ? repalloc_huge(b->groups, sizeof(KlGoldGroup) * b->groups_cap) :
				palloc_extended(sizeof(KlGoldGroup) * b->groups_cap, MCXT_ALLOC_HUGE);
		}
		g = &b->groups[b->ngroups];
		memset(g, 0, sizeof(*g));
		g->plant_id = pnstrdup(f[KL_CSV_PLANT_ID], lens[KL_CSV_PLANT_ID]);
		g->line_id = pnstrdup(f[KL_CSV_LINE_ID], lens[KL_CSV_LINE_ID]);
		g->product_code = pnstrdup(f[KL_CSV_PRODUCT_CODE], lens[KL_CSV_PRODUCT_CODE]);
		entry->group = b->ngroups++;
		MemoryContextSwitchTo(old);
	}
	g = &b->groups[entry->group];
	if (pg_add_s64_overflow(g->units, units, &g->units) ||
		pg_add_s64_overflow(g->defects, defects, &g->defects) ||
		pg_add_s64_overflow(g->cycle_sum, cycle_ms, &g->cycle_sum))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("gold sums of plant \"%s\", line \"%s\", product \"%s\" on %s are out of range for bigint",
						g->plant_id, g->line_id, g->product_code, b->date_text),
				 errhint("Check the units_produced, defect_count and cycle_time_ms of that day's events.")));
	g->events++;
}

/*
 * kl_bridge_load_silver
 *		Pass 2: read the CSV back; insert each event that pass 1 found first
 *		of its natural key into silver, and add it to its gold group (plant,
 *		line, product).
 */
static void
kl_bridge_load_silver(KlBridge *b)
{
	MemoryContext groups_cxt = AllocSetContextCreate(b->cxt, "kafka_lake bridge gold groups",
													 ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(b->cxt);
	KlSilverWriter w;
	KlCsvReader r;
	KlKeySet	groups;
	StringInfoData key;
	char	   *f[KL_CSV_NCOLUMNS];
	int			lens[KL_CSV_NCOLUMNS];
	int			n;
	int64		event = 0;
	Datum		run_id = CStringGetTextDatum(b->run_id);

	initStringInfo(&key);
	kl_keyset_create(&groups, groups_cxt, 64);
	kl_silver_open(&w, b->cxt);
	kl_csv_open(&r, b->transform_path);

	/* the header, kept for the schema_drift check */
	n = kl_csv_next(&r, f, lens, KL_CSV_NCOLUMNS);
	if (n < 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("CSV file \"%s\" is empty", r.path)));
	{
		StringInfoData h;

		initStringInfo(&h);
		for (int i = 0; i < n; i++)
		{
			if (i > 0)
				appendStringInfoChar(&h, ',');
			appendBinaryStringInfo(&h, f[i], lens[i]);
		}
		appendStringInfoChar(&h, '\n');
		b->header_seen = h.data;
	}

	while ((n = kl_csv_next(&r, f, lens, KL_CSV_NCOLUMNS)) >= 0)
	{
		TupleTableSlot *slot;
		Datum	   *v;
		bool	   *isnull;
		TimestampTz event_time;
		DateADT		business_date;
		int64		units,
					defects,
					cycle_ms;

		if (n != KL_CSV_NCOLUMNS)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("CSV file \"%s\" has %d fields at record %lld, not %d",
							r.path, n, (long long) r.records, KL_CSV_NCOLUMNS)));
		/* the first occurrence of a natural key wins (decided in pass 1) */
		if (event >= b->selected)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("CSV file \"%s\" has more records than the %lld events selected",
							r.path, (long long) b->selected)));
		if ((b->first_seen[event / 8] & (1 << (event % 8))) == 0)
		{
			event++;
			b->silver_duplicates++;
			continue;
		}
		event++;

		if (!kl_parse_event_time(f[KL_CSV_EVENT_TIME], lens[KL_CSV_EVENT_TIME], &event_time) ||
			!kl_parse_iso_date(f[KL_CSV_BUSINESS_DATE], lens[KL_CSV_BUSINESS_DATE], &business_date))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("CSV file \"%s\" has an invalid event_time or business_date at record %lld",
							r.path, (long long) r.records)));

		units = kl_csv_int(&r, f[KL_CSV_UNITS_PRODUCED], lens[KL_CSV_UNITS_PRODUCED],
						   KL_CSV_UNITS_PRODUCED);
		defects = kl_csv_int(&r, f[KL_CSV_DEFECT_COUNT], lens[KL_CSV_DEFECT_COUNT],
							 KL_CSV_DEFECT_COUNT);
		cycle_ms = kl_csv_int(&r, f[KL_CSV_CYCLE_TIME_MS], lens[KL_CSV_CYCLE_TIME_MS],
							  KL_CSV_CYCLE_TIME_MS);
		kl_gold_add(b, &groups, &key, f, lens, units, defects, cycle_ms);

		/* the silver row */
		MemoryContextSwitchTo(w.rows_cxt);
		slot = w.slots[w.nslots];
		ExecClearTuple(slot);
		v = slot->tts_values;
		isnull = slot->tts_isnull;
		memset(isnull, false, sizeof(bool) * KL_SILVER_NATTS);
		v[0] = run_id;
		v[1] = kl_text_datum(f[KL_CSV_EVENT_ID], lens[KL_CSV_EVENT_ID]);
		v[2] = TimestampTzGetDatum(event_time);
		v[3] = DateADTGetDatum(business_date);
		v[4] = kl_text_datum(f[KL_CSV_PLANT_ID], lens[KL_CSV_PLANT_ID]);
		v[5] = kl_text_datum(f[KL_CSV_LINE_ID], lens[KL_CSV_LINE_ID]);
		v[6] = kl_text_datum(f[KL_CSV_WORK_ORDER_ID], lens[KL_CSV_WORK_ORDER_ID]);
		v[7] = kl_text_datum(f[KL_CSV_MACHINE_ID], lens[KL_CSV_MACHINE_ID]);
		v[8] = kl_text_datum(f[KL_CSV_PRODUCT_CODE], lens[KL_CSV_PRODUCT_CODE]);
		v[9] = kl_text_datum(f[KL_CSV_OPERATION], lens[KL_CSV_OPERATION]);
		v[10] = Int64GetDatum(units);
		v[11] = Int64GetDatum(defects);
		v[12] = Int64GetDatum(cycle_ms);
		v[13] = Int32GetDatum((int32) kl_csv_int(&r, f[KL_CSV_SCHEMA_VERSION],
												 lens[KL_CSV_SCHEMA_VERSION],
												 KL_CSV_SCHEMA_VERSION));
		v[14] = kl_text_datum(f[KL_CSV_KAFKA_TOPIC], lens[KL_CSV_KAFKA_TOPIC]);
		v[15] = Int32GetDatum((int32) kl_csv_int(&r, f[KL_CSV_KAFKA_PARTITION],
												 lens[KL_CSV_KAFKA_PARTITION],
												 KL_CSV_KAFKA_PARTITION));
		v[16] = Int64GetDatum(kl_csv_int(&r, f[KL_CSV_KAFKA_OFFSET], lens[KL_CSV_KAFKA_OFFSET],
										 KL_CSV_KAFKA_OFFSET));
		if (lens[KL_CSV_KAFKA_KEY] == 0)
			isnull[17] = true;
		else
			v[17] = kl_text_datum(f[KL_CSV_KAFKA_KEY], lens[KL_CSV_KAFKA_KEY]);
		if (lens[KL_CSV_KAFKA_TIMESTAMP_MS] == 0)
			isnull[18] = true;
		else
			v[18] = Int64GetDatum(kl_csv_int(&r, f[KL_CSV_KAFKA_TIMESTAMP_MS],
											 lens[KL_CSV_KAFKA_TIMESTAMP_MS],
											 KL_CSV_KAFKA_TIMESTAMP_MS));
		v[19] = kl_text_datum(f[KL_CSV_KAFKA_RECORD_FINGERPRINT],
							  lens[KL_CSV_KAFKA_RECORD_FINGERPRINT]);
		ExecStoreVirtualTuple(slot);
		MemoryContextSwitchTo(b->cxt);
		b->silver_inserted++;
		if (++w.nslots == KL_SILVER_CHUNK)
			kl_silver_flush(&w);
	}
	if (event != b->selected)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("CSV file \"%s\" has %lld records, not the %lld events selected",
						r.path, (long long) event, (long long) b->selected)));
	kl_silver_close(&w);
	kl_csv_close(&r);
	MemoryContextDelete(groups_cxt);
	ereport(DEBUG1,
			(errmsg_internal("kafka_lake bridge of \"%s\" %s: %lld silver rows, %lld events skipped as repeated natural keys, %d gold groups",
							 b->src->source, b->date_text, (long long) b->silver_inserted,
							 (long long) b->silver_duplicates, b->ngroups)));
	MemoryContextSwitchTo(old);
}

/* ----------------------------------------------------------------
 *		Step 7: the quality checks
 * ----------------------------------------------------------------
 */

/*
 * kl_set_check
 *		Record one check's outcome.
 */
static void
kl_set_check(KlBridge *b, int i, bool passed, char *expected, char *observed, char *detail)
{
	KlCheck    *c = &b->checks[i];

	c->passed = passed;
	c->expected = MemoryContextStrdup(b->cxt, expected);
	c->observed = MemoryContextStrdup(b->cxt, observed);
	c->detail = MemoryContextStrdup(b->cxt, detail);
	if (passed)
		b->passed++;
}

/*
 * kl_spi_int8 / kl_spi_text
 *		A column of the first row of the last SPI result.
 */
static int64
kl_spi_int8(int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

static char *
kl_spi_text(int col)
{
	char	   *s = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col);

	return s ? s : "";
}

/*
 * kl_bridge_check
 *		The eight quality checks, each comparing numbers that two
 *		different paths computed (see the file header).
 */
static void
kl_bridge_check(KlBridge *b)
{
	KlCatalogSave cs;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(b->run_id)};
	int64		silver_rows,
				bad_nulls,
				bad_operations,
				bad_ranges,
				duplicate_rows;
	char	   *silver_units;
	char	   *silver_defects;
	char	   *silver_columns;
	int64		gold_units = 0;
	int64		gold_defects = 0;
	StringInfoData expected_columns;
	int			gucs;

	for (int i = 0; i < b->ngroups; i++)
	{
		gold_units += b->groups[i].units;
		gold_defects += b->groups[i].defects;
	}

	/*
	 * One scan of the run's silver rows gives every number but the exact
	 * count of duplicate natural keys.  For that one, distinct 64-bit hashes
	 * of the keys prove that the keys are distinct (sorting a million
	 * integers is cheap); only when two hashes meet, which duplicates or a
	 * rare collision cause, are the keys themselves grouped.  The planner
	 * cannot know that the new run has a million rows (the statistics
	 * predate them) and would sort them to group: hash them instead, in
	 * memory.
	 */
	gucs = NewGUCNestLevel();
	(void) set_config_option("work_mem", "262144", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("enable_sort", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("SELECT count(*),"
							  " coalesce(sum(units_produced), 0)::text,"
							  " coalesce(sum(defect_count), 0)::text,"
							  " count(*) FILTER (WHERE num_nulls(event_id, event_time, business_date,"
							  "   plant_id, line_id, work_order_id, machine_id, product_code, operation,"
							  "   units_produced, defect_count, cycle_time_ms, schema_version, kafka_topic,"
							  "   kafka_partition, kafka_offset, kafka_record_fingerprint) > 0),"
							  " count(*) FILTER (WHERE operation IS NULL OR operation NOT IN"
							  "   ('assembly', 'inspection', 'packaging', 'welding', 'machining', 'calibration')),"
							  " count(*) FILTER (WHERE NOT (units_produced >= 0 AND defect_count >= 0"
							  "   AND defect_count <= units_produced AND cycle_time_ms > 0"
							  "   AND schema_version = 1)),"
							  " count(DISTINCT pg_catalog.hash_record_extended("
							  "   ROW(work_order_id, machine_id, event_time), 0))"
							  " FROM kafka_lake.silver_machine_events WHERE run_id = $1",
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not check kafka_lake.silver_machine_events");
	silver_rows = kl_spi_int8(1);
	silver_units = pstrdup(kl_spi_text(2));
	silver_defects = pstrdup(kl_spi_text(3));
	bad_nulls = kl_spi_int8(4);
	bad_operations = kl_spi_int8(5);
	bad_ranges = kl_spi_int8(6);
	duplicate_rows = 0;
	if (kl_spi_int8(7) != silver_rows)
	{
		if (SPI_execute_with_args("SELECT coalesce(sum(n - 1), 0)::bigint FROM"
								  " (SELECT count(*) AS n FROM kafka_lake.silver_machine_events"
								  "   WHERE run_id = $1"
								  "   GROUP BY work_order_id, machine_id, event_time"
								  "   HAVING count(*) > 1) d",
								  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not check kafka_lake.silver_machine_events");
		duplicate_rows = kl_spi_int8(1);
	}

	if (SPI_execute("SELECT string_agg(format('%s %s%s', a.attname,"
					"   pg_catalog.format_type(a.atttypid, a.atttypmod),"
					"   CASE WHEN a.attnotnull THEN ' not null' ELSE '' END), ', ' ORDER BY a.attnum)"
					" FROM pg_catalog.pg_attribute a"
					" WHERE a.attrelid = 'kafka_lake.silver_machine_events'::pg_catalog.regclass"
					" AND a.attnum > 0 AND NOT a.attisdropped",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the columns of kafka_lake.silver_machine_events");
	silver_columns = pstrdup(kl_spi_text(1));
	kl_catalog_end(cs);
	AtEOXact_GUC(true, gucs);

	b->silver_rows = silver_rows;
	b->passed = 0;

	kl_set_check(b, 0, silver_rows == b->distinct_keys,
				 psprintf("%lld", (long long) b->distinct_keys),
				 psprintf("%lld", (long long) silver_rows),
				 psprintf("%lld accepted events selected; %lld of them repeat the natural key (work_order_id, machine_id, event_time) of an earlier one and are not silver rows",
						  (long long) b->selected, (long long) (b->selected - b->distinct_keys)));
	{
		char	   *expected = psprintf("units_produced=%s defect_count=%s",
										silver_units, silver_defects);
		char	   *observed = psprintf("units_produced=%lld defect_count=%lld",
										(long long) gold_units, (long long) gold_defects);

		kl_set_check(b, 1, strcmp(expected, observed) == 0, expected, observed,
					 psprintf("sums over %lld silver rows (expected) and %d gold rows (observed)",
							  (long long) silver_rows, b->ngroups));
	}
	kl_set_check(b, 2, bad_nulls == 0, "0", psprintf("%lld", (long long) bad_nulls),
				 "silver rows with a null in a required column (every column but kafka_key and kafka_timestamp_ms)");
	kl_set_check(b, 3, duplicate_rows == 0, "0", psprintf("%lld", (long long) duplicate_rows),
				 "silver rows beyond the first of their natural key (work_order_id, machine_id, event_time)");
	kl_set_check(b, 4, bad_operations == 0, "0", psprintf("%lld", (long long) bad_operations),
				 "silver rows whose operation is not one of assembly, inspection, packaging, welding, machining, calibration");
	kl_set_check(b, 5, bad_ranges == 0, "0", psprintf("%lld", (long long) bad_ranges),
				 "silver rows outside units_produced >= 0, 0 <= defect_count <= units_produced, cycle_time_ms > 0, schema_version = 1");
	kl_set_check(b, 6, b->stale_events == 0, "0", psprintf("%lld", (long long) b->stale_events),
				 b->stale_events == 0 ?
				 psprintf("selected events whose event_time is not written within one day of %s",
						  b->date_text) :
				 psprintf("selected events whose event_time is not written within one day of %s; the first: %s",
						  b->date_text, b->stale_example));

	initStringInfo(&expected_columns);
	for (int i = 0; i < KL_SILVER_NATTS; i++)
		appendStringInfo(&expected_columns, "%s%s", i > 0 ? ", " : "", kl_silver_columns[i].sql);
	{
		bool		columns_ok = strcmp(expected_columns.data, silver_columns) == 0;
		bool		header_ok = b->header_seen && strcmp(b->header_seen, kl_csv_header) == 0;
		char	   *canonical = pnstrdup(kl_csv_header, strlen(kl_csv_header) - 1);
		char	   *seen = b->header_seen ? pnstrdup(b->header_seen, strlen(b->header_seen) - 1) : "";

		kl_set_check(b, 7, columns_ok && header_ok,
					 psprintf("silver (%s); csv header %s", expected_columns.data, canonical),
					 psprintf("silver (%s); csv header %s", silver_columns, seen),
					 psprintf("silver columns %s; CSV header %s",
							  columns_ok ? "match" : "differ", header_ok ? "matches" : "differs"));
	}
}

/* ----------------------------------------------------------------
 *		Step 8: record the run; publish gold
 * ----------------------------------------------------------------
 */

/*
 * kl_text_array
 *		A text[] of C strings.
 */
static Datum
kl_text_array(char **items, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		d[i] = CStringGetTextDatum(items[i]);
	return PointerGetDatum(construct_array(d, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * kl_int8_array
 *		An int8[] of a member of the gold groups.
 */
static Datum
kl_int8_array(KlBridge *b, size_t member_offset)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(b->ngroups, 1));

	for (int i = 0; i < b->ngroups; i++)
		d[i] = Int64GetDatum(*(int64 *) ((char *) &b->groups[i] + member_offset));
	return PointerGetDatum(construct_array(d, b->ngroups, INT8OID, 8, FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

/*
 * kl_bridge_record_run
 *		The run row and its check results (inside a catalog section).
 */
static void
kl_bridge_record_run(KlBridge *b, const char *status, int gold_rows, bool has_snapshot,
					 int64 snapshot_id)
{
	Oid			rtypes[12] = {TEXTOID, INT4OID, DATEOID, TEXTOID, TEXTOID, INT4OID, INT4OID,
	INT4OID, INT4OID, INT4OID, INT8OID, TIMESTAMPTZOID};
	Datum		rvalues[12];
	char		rnulls[12];
	Oid			qtypes[6] = {TEXTOID, TEXTARRAYOID, BOOLARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
	TEXTARRAYOID};
	Datum		qvalues[6];
	char	   *names[KL_NCHECKS];
	char	   *expected[KL_NCHECKS];
	char	   *observed[KL_NCHECKS];
	char	   *detail[KL_NCHECKS];
	Datum		passed[KL_NCHECKS];

	memset(rnulls, ' ', sizeof(rnulls));
	rvalues[0] = CStringGetTextDatum(b->run_id);
	rvalues[1] = Int32GetDatum(b->src->source_id);
	rvalues[2] = DateADTGetDatum(b->date);
	rvalues[3] = CStringGetTextDatum(b->source_hash);
	rvalues[4] = CStringGetTextDatum(status);
	rvalues[5] = Int32GetDatum((int32) Min(b->selected, PG_INT32_MAX));
	rvalues[6] = Int32GetDatum(b->passed);
	rvalues[7] = Int32GetDatum(KL_NCHECKS);
	rvalues[8] = Int32GetDatum((int32) Min(b->silver_rows, PG_INT32_MAX));
	rvalues[9] = Int32GetDatum(gold_rows);
	rvalues[10] = Int64GetDatum(snapshot_id);
	if (!has_snapshot)
		rnulls[10] = 'n';
	rvalues[11] = TimestampTzGetDatum(b->started_at);
	if (SPI_execute_with_args("INSERT INTO kafka_lake.runs (run_id, source_id, business_date,"
							  " source_hash, status, selected_events, quality_passed, quality_total,"
							  " silver_rows, gold_rows, snapshot_id, started_at)"
							  " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
							  12, rtypes, rvalues, rnulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the run");

	for (int i = 0; i < KL_NCHECKS; i++)
	{
		names[i] = (char *) kl_check_names[i];
		expected[i] = b->checks[i].expected;
		observed[i] = b->checks[i].observed;
		detail[i] = b->checks[i].detail;
		passed[i] = BoolGetDatum(b->checks[i].passed);
	}
	qvalues[0] = CStringGetTextDatum(b->run_id);
	qvalues[1] = kl_text_array(names, KL_NCHECKS);
	qvalues[2] = PointerGetDatum(construct_array(passed, KL_NCHECKS, BOOLOID, 1, true,
												 TYPALIGN_CHAR));
	qvalues[3] = kl_text_array(expected, KL_NCHECKS);
	qvalues[4] = kl_text_array(observed, KL_NCHECKS);
	qvalues[5] = kl_text_array(detail, KL_NCHECKS);
	if (SPI_execute_with_args("INSERT INTO kafka_lake.quality_results (run_id, check_name, passed,"
							  " expected, observed, detail)"
							  " SELECT $1, q.check_name, q.passed, q.expected, q.observed, q.detail"
							  " FROM unnest($2, $3, $4, $5, $6)"
							  "   AS q(check_name, passed, expected, observed, detail)",
							  6, qtypes, qvalues, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the quality results");
}

/*
 * kl_true_divide
 *		num / den as Python's int / int computes it: the double nearest the
 *		exact quotient, ties to even (den > 0).  Converting both to double
 *		first would round twice once they pass 2^53.
 */
static double
kl_true_divide(int64 num, int64 den)
{
	uint64		n = (num < 0) ? -(uint64) num : (uint64) num;
	uint64		q = n / (uint64) den;
	uint64		r = n % (uint64) den;
	int			exp = 0;
	double		x;

	Assert(den > 0);
	if (n == 0)
		return 0.0;

	/*
	 * Long division to at least 56 significant bits: bit 0 then lies below
	 * the bit that decides the rounding to 53, and one set bit there stands
	 * for any nonzero remainder.  The conversion of the result rounds to
	 * nearest, ties to even, as IEEE arithmetic does.
	 */
	while (q < (UINT64CONST(1) << 55))
	{
		r <<= 1;
		q <<= 1;
		if (r >= (uint64) den)
		{
			r -= den;
			q |= 1;
		}
		exp--;
	}
	if (r != 0)
		q |= 1;
	x = ldexp((double) (int64) q, exp);
	return (num < 0) ? -x : x;
}

/*
 * kl_py_round
 *		Python's round(x, ndigits), as decimal text: the exact binary value
 *		of x rounded to ndigits decimals, exact ties to even (round(0.0078125,
 *		6) is 0.007812, round(2.675, 2) is 2.67 because the double is a little
 *		below 2.675).  printf's %f converts the exact binary value and rounds
 *		in the current rounding mode, to nearest with ties to even (glibc;
 *		the test suite compares the results with Python's own round()).
 */
static char *
kl_py_round(double x, int ndigits)
{
	return psprintf("%.*f", ndigits, x);
}

/*
 * kl_bridge_publish
 *		All checks passed: the run is processed, the date gets a new current
 *		snapshot holding the gold rows.  Returns the new snapshot's id.
 */
static int64
kl_bridge_publish(KlBridge *b)
{
	KlCatalogSave cs;
	int64		snapshot_id;
	int64		previous = 0;
	bool		has_previous = false;
	Oid			stypes[7] = {INT8OID, INT4OID, DATEOID, TEXTOID, TEXTOID, INT4OID, INT8OID};
	Datum		svalues[7];
	char		snulls[7] = "       ";
	Oid			gtypes[9] = {INT8OID, DATEOID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
	INT8ARRAYOID, INT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID};
	Datum		gvalues[9];
	char	  **plants = palloc(sizeof(char *) * Max(b->ngroups, 1));
	char	  **lines = palloc(sizeof(char *) * Max(b->ngroups, 1));
	char	  **products = palloc(sizeof(char *) * Max(b->ngroups, 1));
	char	  **rates = palloc(sizeof(char *) * Max(b->ngroups, 1));
	char	  **averages = palloc(sizeof(char *) * Max(b->ngroups, 1));

	cs = kl_catalog_begin();
	if (SPI_execute("SELECT nextval(pg_catalog.pg_get_serial_sequence('kafka_lake.snapshots', 'snapshot_id'))",
					false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not allocate a snapshot_id");
	snapshot_id = kl_spi_int8(1);

	kl_bridge_record_run(b, "processed", b->ngroups, true, snapshot_id);

	kl_fault_point("bridge_before_gold");

	/* the date's current snapshot stops being current ... */
	svalues[0] = Int64GetDatum(snapshot_id);
	svalues[1] = Int32GetDatum(b->src->source_id);
	svalues[2] = DateADTGetDatum(b->date);
	svalues[3] = CStringGetTextDatum(b->run_id);
	svalues[4] = CStringGetTextDatum(b->source_hash);
	svalues[5] = Int32GetDatum(b->ngroups);
	if (SPI_execute_with_args("UPDATE kafka_lake.snapshots SET is_current = false"
							  " WHERE source_id = $2 AND business_date = $3 AND is_current"
							  " RETURNING snapshot_id",
							  3, stypes, svalues, NULL, false, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not update kafka_lake.snapshots");
	if (SPI_processed > 0)
	{
		has_previous = true;
		previous = kl_spi_int8(1);
	}
	svalues[6] = Int64GetDatum(previous);
	if (!has_previous)
		snulls[6] = 'n';

	/* ... and the new one replaces it */
	if (SPI_execute_with_args("INSERT INTO kafka_lake.snapshots (snapshot_id, source_id,"
							  " business_date, run_id, source_hash, gold_rows, replaces_snapshot_id)"
							  " VALUES ($1, $2, $3, $4, $5, $6, $7)",
							  7, stypes, svalues, snulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the snapshot");

	for (int i = 0; i < b->ngroups; i++)
	{
		KlGoldGroup *g = &b->groups[i];

		plants[i] = g->plant_id;
		lines[i] = g->line_id;
		products[i] = g->product_code;
		/* the seed: round(defects / units, 6) if units else 0, round(cycle_sum / events, 2) */
		rates[i] = (g->units == 0) ? "0" : kl_py_round(kl_true_divide(g->defects, g->units), 6);
		averages[i] = kl_py_round(kl_true_divide(g->cycle_sum, g->events), 2);
	}
	gvalues[0] = Int64GetDatum(snapshot_id);
	gvalues[1] = DateADTGetDatum(b->date);
	gvalues[2] = kl_text_array(plants, b->ngroups);
	gvalues[3] = kl_text_array(lines, b->ngroups);
	gvalues[4] = kl_text_array(products, b->ngroups);
	gvalues[5] = kl_int8_array(b, offsetof(KlGoldGroup, units));
	gvalues[6] = kl_int8_array(b, offsetof(KlGoldGroup, defects));
	gvalues[7] = kl_text_array(rates, b->ngroups);
	gvalues[8] = kl_text_array(averages, b->ngroups);
	if (SPI_execute_with_args("INSERT INTO kafka_lake.gold_daily_line_metrics (snapshot_id,"
							  " business_date, plant_id, line_id, product_code, units_produced,"
							  " defect_count, defect_rate, avg_cycle_time_ms, closing_status)"
							  " SELECT $1, $2, g.plant_id, g.line_id, g.product_code, g.units, g.defects,"
							  "   g.defect_rate::pg_catalog.numeric, g.average::pg_catalog.numeric, 'provisional'"
							  " FROM unnest($3, $4, $5, $6, $7, $8, $9)"
							  "   AS g(plant_id, line_id, product_code, units, defects, defect_rate, average)",
							  9, gtypes, gvalues, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the gold rows");
	kl_catalog_end(cs);
	return snapshot_id;
}

/*
 * kl_bridge_reject
 *		A check failed: the run is failed_quality, its results are kept, gold
 *		and the current snapshot stay as they were.  Returns whether the date
 *		has a current snapshot (and which).
 */
static bool
kl_bridge_reject(KlBridge *b, int64 *snapshot_id)
{
	KlCatalogSave cs = kl_catalog_begin();
	bool		has_snapshot;

	kl_bridge_record_run(b, "failed_quality", 0, false, 0);
	has_snapshot = kl_current_snapshot(b, snapshot_id);
	kl_catalog_end(cs);
	return has_snapshot;
}

/* ----------------------------------------------------------------
 *		The SQL function
 * ----------------------------------------------------------------
 */

/*
 * kafka_lake_bridge
 *		bridge(source, business_date): one row (business_date, source_hash,
 *		the adapter version, the run, the checks, silver, gold, the snapshot).
 */
Datum
kafka_lake_bridge(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	KlBridge   *b;
	Datum		values[12];
	bool		nulls[12] = {0};
	List	   *batches;
	KlPriorRun	prior;
	MemoryContext old;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("source and business_date must not be null"),
				 errhint("Name a source and the business date to bridge, for example kafka_lake.bridge('machine_events', '2026-06-29').")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (DATE_NOT_FINITE(PG_GETARG_DATEADT(1)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("business_date must be a finite date"),
				 errhint("Pass the calendar day to bridge, for example '2026-06-29'.")));

	b = palloc0(sizeof(KlBridge));
	b->cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_lake bridge",
								   ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(b->cxt);
	b->src = kl_source_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	b->date = PG_GETARG_DATEADT(1);
	kl_date_text(b->date, b->date_text);
	b->started_at = GetCurrentTimestamp();
	b->step_start = b->started_at;
	b->tmp_fd = -1;
	MemoryContextSwitchTo(old);

	/* steps 1 to 4 (the source is not dropped under us) */
	kl_source_lock(b->src);
	kl_bridge_lock(b);
	kl_bridge_step_done(b, "lock");
	kl_bridge_recover(b);
	batches = kl_bridge_scan(b);
	kl_bridge_step_done(b, "recovery and batch list");
	kl_bridge_select(b, batches);
	kl_bridge_step_done(b, "selection and CSV");
	kl_bridge_place_adapter(b);
	kl_bridge_record_adapter(b);
	kl_bridge_step_done(b, "adapter version");

	values[0] = DateADTGetDatum(b->date);
	values[1] = CStringGetTextDatum(b->source_hash);
	values[2] = Int32GetDatum((int32) Min(b->selected, PG_INT32_MAX));
	values[3] = CStringGetTextDatum(b->adapter_created ? "created" : "reused");

	if (kl_bridge_find_processed_run(b, &prior))
	{
		/* step 5: this input was processed already */
		kl_bridge_drop_temp(b);
		values[4] = CStringGetTextDatum(prior.run_id);
		values[5] = CStringGetTextDatum("skipped");
		values[6] = Int32GetDatum(prior.quality_passed);
		values[7] = Int32GetDatum(prior.quality_total);
		values[8] = Int32GetDatum(prior.silver_rows);
		values[9] = Int32GetDatum(prior.gold_rows);
		values[10] = Int64GetDatum(prior.snapshot_id);
		nulls[10] = !prior.has_snapshot;
		values[11] = CStringGetTextDatum("skipped");
	}
	else
	{
		int64		snapshot_id = 0;
		bool		has_snapshot;
		bool		published;

		/* steps 6 to 8 */
		kl_new_run_id(b->run_id);
		kl_bridge_load_silver(b);
		kl_bridge_drop_temp(b);
		kl_bridge_step_done(b, "silver");
		kl_bridge_check(b);
		kl_bridge_step_done(b, "quality checks");
		published = (b->passed == KL_NCHECKS);
		if (published)
		{
			snapshot_id = kl_bridge_publish(b);
			has_snapshot = true;
		}
		else
			has_snapshot = kl_bridge_reject(b, &snapshot_id);
		kl_bridge_step_done(b, published ? "run and gold snapshot" : "run");

		values[4] = CStringGetTextDatum(b->run_id);
		values[5] = CStringGetTextDatum(published ? "processed" : "failed_quality");
		values[6] = Int32GetDatum(b->passed);
		values[7] = Int32GetDatum(KL_NCHECKS);
		values[8] = Int32GetDatum((int32) Min(b->silver_rows, PG_INT32_MAX));
		values[9] = Int32GetDatum(published ? b->ngroups : 0);
		values[10] = Int64GetDatum(snapshot_id);
		nulls[10] = !has_snapshot;
		values[11] = CStringGetTextDatum(published ? "published" : "not_published");
	}

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
