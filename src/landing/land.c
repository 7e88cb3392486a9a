/*-------------------------------------------------------------------------
 *
 * land.c
 *	  land() and replay(): the landing protocol, step for step, per
 *	  partition and per batch.
 *
 * THE PROTOCOL
 *
 * For each partition this call owns (a transaction-level lock per source
 * and partition; a busy partition is reported "locked" and skipped):
 *
 *	0. recover: adopt batch directories the catalog lacks, remove abandoned
 *	   staging directories of this partition (recover.c);
 *	1. look at the committed offset and the watermarks (read for every
 *	   partition at the start of the call, and read again for this one when
 *	   they are stale, see below), decide where to start (the group's
 *	   committed offset, else what the catalog remembers, else the low
 *	   watermark), refuse to start below the low watermark (expired records)
 *	   or above the high watermark (topic re-created, data lost), or from a
 *	   group offset that someone else moved (see below);
 *	   then poll a window of at most batch_max_records / batch_max_bytes, up
 *	   to the high watermark read at the start (never waiting for one
 *	   particular offset: transaction markers and compaction leave offsets
 *	   that are never delivered);
 *	2. classify: a coordinate already durable is "reused" if its fingerprint
 *	   matches and an ERROR if not (I2); the others are judged by the
 *	   source's contract (compiled once per backend, contract_catalog.c;
 *	   judged off PostgreSQL's allocator, contract.c: accepted or
 *	   quarantined) and their event_ids are decided against the window and
 *	   the catalog (accepted_events), which also reserves them (I3); a
 *	   contract without event_id accepts every valid record (the coordinate
 *	   is its identity);
 *	3. and 4. write the batch into a staging directory, fsync, rename, fsync
 *	   the parent (landing_files.c; what is written, batch_format.c).  New
 *	   coordinates separated by reused ones go to separate batches, so a
 *	   batch's offset range never overlaps another batch's (the exclusion
 *	   constraint on coordinates enforces it);
 *	5. record the batch and its coordinates in the catalog;
 *	6. commit "last polled offset + 1" to the consumer group and wait for
 *	   the answer (bounded by the call's timeout, kafka.c), and remember the
 *	   commit in offset_commits.
 *
 * Then the next window, until the partition reaches its high watermark,
 * the call reaches max_records or its timeout.  replay() runs the same steps
 * on an explicit range, except step 6: it never commits (I6).  replay() by
 * time finds that range per partition through the broker's offsets for the
 * window's two ends (kl_kafka_offsets_for_times, which also works against a
 * broker without a time index), then replays each range the same way.  Once
 * the partitions are done, land() records in one statement what
 * source_status shows of each partition it owned (catalog_status.c); a
 * land() that fails leaves its error in shared memory instead
 * (source_status.c), since its transaction rolls back.
 *
 * TRANSACTION BOUNDARIES, AND WHY THE DISK IS THE TRUTH
 *
 * land() is a function, so everything it writes to the catalog belongs to
 * the caller's transaction, while its files and its Kafka commits do not:
 * they cannot be rolled back.  The order above makes that safe:
 *	- an offset is committed only after every record below it is renamed
 *	  into place and fsynced (I1); the catalog rows are not needed for that;
 *	- if the transaction then aborts (an ERROR in a later window, a fault,
 *	  a cancel, ROLLBACK, a killed backend), the batch directories stay and
 *	  the catalog forgets them.  The next land(), replay() or recover()
 *	  adopts every complete batch it finds on disk (I5), so the coordinates
 *	  come back as reused, never twice.
 * The catalog is the disk's index; recover() makes them agree again.
 * Batches landed by a transaction that is still open are invisible to other
 * sessions' scans until it commits, which is what "a concurrent land never
 * shows a half batch" needs.
 *
 * OVERLAPPING CALLS
 *
 * Two calls on one source (two pg_cron runs) split its partitions: each
 * owns a partition only once it holds its lock.  What a call read for every
 * partition at its start (the group's offsets, the watermarks) may be stale
 * by the time it gets a partition that the other call landed meanwhile.  So
 * after taking the lock (and under READ COMMITTED, whose every catalog
 * query sees the other call's committed work) the group's offset is read
 * again when it disagrees with the newest commit in offset_commits, and the
 * watermarks when the partition seems to end below what was landed, before
 * that is taken for a re-created topic.  Under REPEATABLE READ the catalog
 * cannot see the other call's work at all: a partition changed after the
 * snapshot is a serialization failure (locks.c).  The two calls also share
 * accepted_events, whose rows each holds uncommitted until it ends: a
 * window that needs an event_id the other is accepting waits only briefly
 * (kl_catalog_try_reserve_identities), then the partition is left for a
 * later call (reported "locked") with what lies below the window committed,
 * since two calls waiting for each other's event_ids would deadlock.
 *
 * LANDING UP TO MARKS
 *
 * close_date() lands through kl_land_to_marks: the same steps, with each
 * partition's high watermark replaced by a mark (the high watermark at the
 * call, or the first offset at or after a cutoff time), so that nothing at
 * or past a mark lands in that call, and with a busy partition waited for,
 * until the call's timeout, instead of skipped: a date is complete only when
 * every partition is.  Partitions are taken in ascending order, so two such
 * calls never wait for each other in a circle (land() never waits).
 *
 * SEVERAL TOPICS
 *
 * A source may land several topics with one contract and one consumer
 * group.  A call lands them one after the other, in the source's order, on
 * one consumer (kl_start_topic): what works per partition works on the
 * source's copy for that topic (kl_source_topic), so each topic's partitions
 * keep their own locks (the topic in the lock key, locks.c), staging names
 * (kl_staging_marker), batch directories, commits and certificates.  What
 * the topics share is accepted_events: an event_id is accepted once across
 * them, and its row names the topic of its coordinate (NULL for the first,
 * so a source of one topic stores what it always did).  Topics one after
 * the other rather than interleaved keeps the decision which copy of an
 * event_id wins the same as for partitions: the first in (topic order,
 * partition, offset) that a call reaches, and a killed call's next run
 * reaches the same.
 *
 * THE CONSUMER GROUP
 *
 * A group offset ahead of the newest commit this source remembers is this
 * source's own only if the record just below it is durable here (a commit
 * whose transaction aborted; its batch was adopted from disk).  Otherwise
 * another consumer moves the group (a consumer of another database given
 * the same group id), and landing from its offset would silently skip what
 * that consumer took: an ERROR that names the group.  A source that has no
 * history of a partition at all starts at the group's offset on purpose (a
 * consumer group migrated to kafka_lake, or the group of an earlier source
 * of the same name), and says so: a NOTICE and a row "adopted".
 *
 * ERRORS
 *
 * An error in the middle of a call never means "nothing happened": batches
 * renamed into place stay durable, and commits made to Kafka stay made.  So
 * every error raised while the call lands its partitions carries, in its
 * detail, what this call committed and what it landed without committing.
 *
 * TWO THREADS
 *
 * Steps 2 to 4 of a window use both cores (the rules: land_worker.c).  The
 * backend polls the window and looks up what is durable; then the
 * fingerprints, judgements and event keys of the window's records are
 * computed half on the helper thread, half on the backend (kl_judge_window);
 * the backend decides event_ids within each run of new coordinates, and
 * while it reserves them in accepted_events the helper writes the run's
 * batch into its staging directory with the statuses the window gave
 * (kl_land_run).  When the reservation changed none of them (the usual
 * case: a new event_id), the backend renames the directory into place;
 * when it did (an event_id accepted earlier, or by a concurrent session),
 * it removes the directory and writes the batch again itself.  Either way
 * nothing is renamed before the statuses are final, so the protocol, its
 * invariants and its fault points (all on the backend) are unchanged.
 * Measured on 1,000,000 events over 100 partitions (bench/land.sh, 2-vCPU
 * machine, perf): single-threaded, the reservation was half of the
 * backend's time, judging a quarter and writing a sixth; now the writing
 * costs the backend only its wait for the last milliseconds of each batch's
 * files (0.15 s in all), and the judging half of what it did.
 *
 * MEMORY
 *
 * A window's records are kept as librdkafka messages (used in place, no
 * copy) plus one KlRecord each, in a memory context reset per window; the
 * prefetch queue is sized from the same settings (kafka.c).  The helper's
 * half of the window's events lives in its own arenas, reset per window
 * like the backend's; what the reservation works on while the helper
 * writes is 40 bytes per record (KlIdentity).  Backend memory is therefore
 * bounded by about twice batch_max_bytes, whatever the size of the topic
 * or of max_records.
 *
 * IDENTIFICATION
 *	  src/landing/land.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "base/args.h"
#include "base/compat.h"
#include "base/digest.h"
#include "base/fault.h"
#include "base/settings.h"
#include "contract/contract.h"
#include "contract/contract_define.h"
#include "format/batch_format.h"
#include "kafka/kafka.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/catalog_status.h"
#include "kl_catalog/contract_catalog.h"
#include "kl_catalog/locks.h"
#include "landing/avro_land.h"
#include "landing/batch_read.h"
#include "landing/land.h"
#include "landing/land_worker.h"
#include "landing/landing_files.h"
#include "landing/recover.h"
#include "landing/source_lock.h"
#include "landing/source_status.h"

PG_FUNCTION_INFO_V1(kafka_lake_land);
PG_FUNCTION_INFO_V1(kafka_lake_replay);
PG_FUNCTION_INFO_V1(kafka_lake_replay_by_time);

/* State of one land() or replay() call */
typedef struct KlLandCall
{
	KlSource   *source;			/* the source, every topic */
	KlSource   *src;			/* the source on the topic being landed */
	KlKafka    *kk;
	bool		is_replay;		/* never commit */
	bool		allow_expired;	/* record expired ranges and go on */
	int64		max_records;	/* budget of records to poll */
	int64		polled;			/* records polled so far */
	int64		bytes_polled;	/* their keys and values */
	bool		stop;			/* budget or timeout reached */
	bool		contended;		/* the partition needs event_ids another
								 * session is accepting: left for later */
	TimestampTz deadline;
	int			timeout_ms;		/* the call's timeout */
	Tuplestorestate *out;		/* result rows */
	TupleDesc	desc;
	MemoryContext window_cxt;	/* reset per window */
	const KlContract *contract; /* what judges the records */
	KlAvroLanding *avro;		/* an Avro contract's writer programs, or NULL */
	KlPool    *events;			/* the window's events and reasons */
	KlPool    *scratch;		/* a record's judgement */
	KlPool    *w_events;		/* the same two for the helper thread's half */
	KlPool    *w_scratch;
	bool		split_judging;	/* the helper judges half of each window */
	KlRecord   *recs;			/* the window */
	int			nrecs;
	size_t		bytes;
	/* per partition */
	int64	   *low;			/* watermarks of every partition, read once */
	int64	   *high;
	int32		partition;
	int64		committed;		/* the group's committed offset, -1 if none */
	int			landed_records; /* replay bookkeeping */
	int			reused_records;
	int			polled_records;
	/* what this call made durable, per partition, for its error messages */
	int			nparts;
	int64	   *call_committed; /* offset this call committed, -1: none */
	int		   *pending_batches;	/* batches landed since this call's last
									 * commit of the partition */
	int64	   *pending_first;	/* their offsets */
	int64	   *pending_last;
	StringInfoData prior_committed; /* the same of the topics landed before */
	int			nprior_committed;
	StringInfoData prior_pending;
	int			nprior_pending;
	int64		rows;			/* result rows so far */
	/* what source_status shows of each partition (partition_state) */
	bool	   *owned;			/* this call held the partition's lock */
	const char **part_status;	/* status of the partition's last row */
	/* a landing up to marks (kl_land_to_marks, for close_date) */
	const int64 *marks;			/* per partition: land below it only; NULL:
								 * up to the high watermark */
	int64	   *reached;		/* per partition: landed below this offset */
	int64	   *last_offset;	/* per partition: the last record polled, -1 */
	int64	   *last_timestamp_ms;	/* its timestamp, -1: none */
} KlLandCall;

/* One result row */
typedef struct KlLandRow
{
	const char *batch_id;
	const char *status;
	int			records;
	int			accepted;
	int			duplicates;
	int			quarantined;
	int			reused;
	int64		first_offset;	/* -1: null */
	int64		last_offset;
} KlLandRow;

/* Hash entry for event_ids within a window */
typedef struct KlEventSeen
{
	pg_uuid_t	key;
	int			index;
} KlEventSeen;

/* A judging job: fingerprints, judgements and event keys of some records */
typedef struct KlJudgeJob
{
	const KlContract *contract;
	const char *topic;
	int32		partition;
	int32		source_id;
	bool		ordered_keys;	/* the source's event_keys (digest.c) */
	KlRecord   *recs;
	int			n;
	KlPool	   *events;
	KlPool	   *scratch;
	void	   *sha;			/* a digest context of this job's thread */
	int			failed_at;		/* record whose judgement ran out of memory */
	TimestampTz deadline;		/* on the backend, with patterns: the call's */
	int			judged;			/* records judged (n, or fewer at the deadline) */
	KlAvroOut  *avro_out;		/* an Avro contract: this thread's decoded value */
} KlJudgeJob;

/*
 * kl_remaining_ms
 *		Milliseconds left before the call's deadline (at least 1).
 */
static int
kl_remaining_ms(KlLandCall *call)
{
	long		secs;
	int			usecs;

	TimestampDifference(GetCurrentTimestamp(), call->deadline, &secs, &usecs);
	return (int) Max(Min(secs * 1000 + usecs / 1000, INT_MAX), 1);
}

/*
 * kl_kafka_deadline
 *		The deadline of a Kafka call that the call needs in order to finish
 *		what it has begun (a commit of a landed window, a second look at a
 *		partition): what is left of the call's timeout, but at least
 *		min(timeout, 5 s), so that a window polled up to the end of the
 *		timeout is still committed.  statement_timeout and cancel bound it
 *		as they bound every other wait (kafka.c).
 */
static TimestampTz
kl_kafka_deadline(KlLandCall *call)
{
	TimestampTz grace = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													Min(call->timeout_ms, 5000));

	return Max(call->deadline, grace);
}

/*
 * kl_note_landed
 *		Remember a batch this call made durable, until it is committed.
 */
static void
kl_note_landed(KlLandCall *call, const KlBatch *b)
{
	int32		p = call->partition;

	if (p >= call->nparts)
		return;
	if (call->pending_batches[p]++ == 0)
		call->pending_first[p] = b->first_offset;
	call->pending_last[p] = b->last_offset;
}

/*
 * kl_commit_partition
 *		Step 6: commit the next offset of the current partition, and remember
 *		the commit in the catalog and in the call's progress.
 */
static void
kl_commit_partition(KlLandCall *call, int64 next_offset, const char *batch_id)
{
	int32		p = call->partition;

	kl_kafka_commit(call->kk, call->src->topic, p, next_offset, kl_kafka_deadline(call));
	if (p < call->nparts)
	{
		call->call_committed[p] = next_offset;
		call->pending_batches[p] = 0;
	}
	kl_catalog_record_commit(call->src, p, next_offset, batch_id);
	call->committed = next_offset;
}

/*
 * kl_progress_detail
 *		What this call landed and committed before an error, as a sentence
 *		for the error's detail.  Batches renamed into place stay durable when
 *		the transaction aborts (the next call adopts them), and commits made
 *		to Kafka stay made, so "nothing happened" is rarely true.
 */
/*
 * kl_partition_words
 *		"partition 3", and of which topic for a source of several.
 */
static char *
kl_partition_words(KlLandCall *call, int32 p)
{
	if (call->src->ntopics == 1)
		return psprintf("partition %d", p);
	return psprintf("partition %d of topic \"%s\"", p, call->src->topic);
}

/*
 * kl_progress_parts
 *		What the call committed and landed on the current topic, appended
 *		as list items ("partition 0 to offset 10"; "offsets 10 to 19 of
 *		partition 0 (1 batch)") to the two lists, with their counts.
 */
static void
kl_progress_parts(KlLandCall *call, StringInfo committed, int *ncommitted,
				  StringInfo pending, int *npending)
{
	for (int p = 0; p < call->nparts; p++)
	{
		if (call->call_committed[p] >= 0)
		{
			(*ncommitted)++;
			appendStringInfo(committed, "%s%s to offset %lld", committed->len ? "\x1f" : "",
							 kl_partition_words(call, p), (long long) call->call_committed[p]);
		}
		if (call->pending_batches[p] > 0)
		{
			(*npending)++;
			appendStringInfo(pending, "%soffsets %lld to %lld of %s (%d %s)",
							 pending->len ? "\x1f" : "",
							 (long long) call->pending_first[p], (long long) call->pending_last[p],
							 kl_partition_words(call, p), call->pending_batches[p],
							 call->pending_batches[p] == 1 ? "batch" : "batches");
		}
	}
}

/*
 * kl_append_list
 *		Items separated by \x1f, as "a", "a and b", "a, b and c".
 */
static void
kl_append_list(StringInfo buf, const char *items, int n)
{
	int			done = 0;
	char	   *copy = pstrdup(items);
	char	   *item = copy;

	while (item != NULL)
	{
		char	   *sep = strchr(item, '\x1f');

		if (sep)
			*sep = '\0';
		done++;
		appendStringInfo(buf, "%s %s", done == 1 ? "" : (done == n ? " and" : ","), item);
		item = sep ? sep + 1 : NULL;
	}
}

/*
 * kl_progress_detail
 *		What this call landed and committed before an error, as a sentence
 *		for the error's detail.  Batches renamed into place stay durable when
 *		the transaction aborts (the next call adopts them), and commits made
 *		to Kafka stay made, so "nothing happened" is rarely true.
 */
static char *
kl_progress_detail(KlLandCall *call)
{
	StringInfoData buf;
	StringInfoData committed;
	StringInfoData pending;
	int			ncommitted = call->nprior_committed;
	int			npending = call->nprior_pending;

	initStringInfo(&buf);
	initStringInfo(&committed);
	initStringInfo(&pending);
	if (call->prior_committed.data)
		appendStringInfoString(&committed, call->prior_committed.data);
	if (call->prior_pending.data)
		appendStringInfoString(&pending, call->prior_pending.data);
	kl_progress_parts(call, &committed, &ncommitted, &pending, &npending);

	if (call->is_replay)
		appendStringInfoString(&buf, "Before the error, this replay landed");
	else if (ncommitted == 0)
		appendStringInfoString(&buf, "Before the error, this call committed no offset");
	else
	{
		appendStringInfoString(&buf, "Before the error, this call committed");
		kl_append_list(&buf, committed.data, ncommitted);
	}
	if (npending > 0)
	{
		if (!call->is_replay)
			appendStringInfoChar(&buf, ';');
		kl_append_list(&buf, pending.data, npending);
	}

	if (call->is_replay)
		appendStringInfoString(&buf, npending == 0 ? " nothing." :
							   "; they stay durable and the next call reuses them.");
	else if (npending > 0)
		appendStringInfoString(&buf, " landed but were not committed: the next land() adopts them from disk and commits them.");
	else if (ncommitted > 0)
		appendStringInfoString(&buf, "; what it committed stays landed and the next land() goes on from there.");
	else
		appendStringInfoString(&buf, " and landed nothing.");
	return buf.data;
}

/*
 * kl_rethrow_with_progress
 *		In a PG_CATCH block: add to the error what the call landed and
 *		committed before it, and raise it again.
 */
static void
kl_rethrow_with_progress(KlLandCall *call, MemoryContext cxt)
{
	ErrorData  *edata;
	char	   *progress;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	progress = kl_progress_detail(call);
	edata->detail = edata->detail ? psprintf("%s %s", edata->detail, progress) : progress;
	ReThrowError(edata);
}

/*
 * kl_emit
 *		Add one result row.
 */
static void
kl_emit(KlLandCall *call, const KlLandRow *row, int64 committed)
{
	Datum		values[12];
	bool		nulls[12] = {0};

	call->rows++;
	if (call->partition >= 0 && call->partition < call->nparts)
		call->part_status[call->partition] = row->status;
	if (call->out == NULL)
		return;					/* kl_land_to_marks reports no rows */
	values[0] = CStringGetTextDatum(call->src->topic);
	values[1] = Int32GetDatum(call->partition);
	if (row->batch_id)
		values[2] = CStringGetTextDatum(row->batch_id);
	else
		nulls[2] = true;
	values[3] = CStringGetTextDatum(row->status);
	values[4] = Int32GetDatum(row->records);
	values[5] = Int32GetDatum(row->accepted);
	values[6] = Int32GetDatum(row->duplicates);
	values[7] = Int32GetDatum(row->quarantined);
	values[8] = Int32GetDatum(row->reused);
	if (row->first_offset >= 0)
	{
		values[9] = Int64GetDatum(row->first_offset);
		values[10] = Int64GetDatum(row->last_offset);
	}
	else
		nulls[9] = nulls[10] = true;
	if (committed >= 0)
		values[11] = Int64GetDatum(committed);
	else
		nulls[11] = true;
	tuplestore_putvalues(call->out, call->desc, values, nulls);
}

/*
 * kl_emit_simple
 *		A row without a batch: locked, empty.
 */
static void
kl_emit_simple(KlLandCall *call, const char *status, int64 committed)
{
	KlLandRow	row = {0};

	row.status = status;
	row.first_offset = -1;
	kl_emit(call, &row, committed);
}

/*
 * kl_poll_window
 *		Poll the next window of the current partition, up to stop (exclusive).
 *		Returns true when the partition is done (reached stop or its end).
 */
static bool
kl_poll_window(KlLandCall *call, int64 stop)
{
	int32		p = call->partition;

	call->nrecs = 0;
	call->bytes = 0;
	for (;;)
	{
		rd_kafka_message_t *msg;
		KlRecord   *r;

		if (call->polled >= call->max_records || GetCurrentTimestamp() >= call->deadline)
		{
			call->stop = true;
			return false;
		}
		if (call->nrecs >= kl_batch_max_records || call->bytes >= (size_t) kl_batch_max_bytes)
			return false;

		CHECK_FOR_INTERRUPTS();
		msg = kl_kafka_poll(call->kk, Min(100, kl_remaining_ms(call)));
		if (msg == NULL)
			continue;

		if (msg->err)
		{
			rd_kafka_resp_err_t err = msg->err;
			bool		ours = (msg->partition == p);

			rd_kafka_message_destroy(msg);
			if (err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
			{
				if (ours)
					return true;
				continue;
			}
			if (err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ||
				err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE)
			{
				int64		low,
							high;
				int64		next = call->nrecs > 0 ? call->recs[call->nrecs - 1].offset + 1 : -1;

				kl_kafka_watermarks(call->kk, call->src->topic, p, &low, &high,
									kl_kafka_deadline(call));
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("records of partition %d of topic \"%s\" expired on the broker while they were being landed",
								p, call->src->topic),
						 errdetail("The partition now starts at offset %lld%s.", (long long) low,
								   next >= 0 ? psprintf("; the landing had reached offset %lld", (long long) next) : ""),
						 errhint("Call kafka_lake.land('%s', allow_expired => true) to record the loss and go on.",
								 call->src->source)));
			}
			/* librdkafka retries these itself; the deadline bounds the wait */
			if (kl_kafka_error_class(err) == KL_KERR_UNAVAILABLE)
				continue;
			kl_kafka_error(call->kk, "read the partition", err);
		}

		if (msg->partition != p ||
			(call->nrecs > 0 && msg->offset <= call->recs[call->nrecs - 1].offset))
		{
			rd_kafka_message_destroy(msg);
			continue;
		}
		if (msg->offset >= stop)
		{
			rd_kafka_message_destroy(msg);
			return true;
		}

		kl_kafka_hold(call->kk, msg);
		r = &call->recs[call->nrecs++];
		memset(r, 0, sizeof(KlRecord));
		r->offset = msg->offset;
		{
			rd_kafka_timestamp_type_t tstype;
			int64		ts = rd_kafka_message_timestamp(msg, &tstype);

			r->timestamp_ms = (tstype == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE) ? -1 : ts;
		}
		r->key = msg->key;
		r->key_len = msg->key ? msg->key_len : 0;
		r->value = msg->payload;
		r->value_len = msg->payload ? msg->len : 0;
		{
			rd_kafka_headers_t *hdrs;

			if (rd_kafka_message_headers(msg, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
				rd_kafka_header_cnt(hdrs) > 0)
			{
				int			nh = (int) rd_kafka_header_cnt(hdrs);
				KlHeader   *h = palloc(sizeof(KlHeader) * nh);

				for (int i = 0; i < nh; i++)
				{
					const void *val;
					size_t		size;

					if (rd_kafka_header_get_all(hdrs, i, &h[i].name, &val, &size) !=
						RD_KAFKA_RESP_ERR_NO_ERROR)
						elog(ERROR, "could not read header %d of a record", i);
					h[i].value = val;
					h[i].value_len = val ? size : 0;
				}
				r->headers = h;
				r->nheaders = nh;
			}
		}
		call->bytes += r->key_len + r->value_len;
		call->bytes_polled += r->key_len + r->value_len;
		call->polled++;
		call->polled_records++;

		if (msg->offset + 1 >= stop)
			return true;
	}
}

static bool kl_object_has_pattern(const KlObjectSchema *o);

/*
 * kl_schema_has_pattern, kl_object_has_pattern, kl_contract_has_pattern
 *		Does the contract check a "pattern" anywhere (judged on the backend
 *		only, see land_worker.c)?
 */
static bool
kl_schema_has_pattern(const KlSchema *s)
{
	return s->pattern != NULL ||
		(s->object != NULL && kl_object_has_pattern(s->object)) ||
		(s->items != NULL && kl_schema_has_pattern(s->items));
}

static bool
kl_object_has_pattern(const KlObjectSchema *o)
{
	for (int i = 0; i < o->nprops; i++)
	{
		if (kl_schema_has_pattern(&o->props[i]))
			return true;
	}
	return false;
}

static bool
kl_contract_has_pattern(const KlContract *c)
{
	return kl_object_has_pattern(&c->top);
}

/*
 * kl_judge_job
 *		Fingerprint every record of the job, and judge and key those that
 *		are not reused.  Runs on the helper thread (cancel set) or on the
 *		backend (cancel NULL); calls nothing of PostgreSQL's that allocates
 *		or reports (see land_worker.c), and on the backend looks at
 *		interrupts every 1,024 records.
 */
static void
kl_judge_job(void *arg, const volatile bool *cancel)
{
	KlJudgeJob *job = (KlJudgeJob *) arg;

	job->judged = 0;
	for (int i = 0; i < job->n; i++)
	{
		KlRecord   *r = &job->recs[i];
		KlJudgeInput in;
		const char *reason;

		if ((i & 1023) == 0)
		{
			if (cancel == NULL)
				CHECK_FOR_INTERRUPTS();
			else if (*cancel)
				return;
		}

		/*
		 * A pattern's match takes time linear in the value, which can be a
		 * quarter of a second for 16 MiB: the call's timeout bounds the
		 * judging too.  The window then ends at the last record judged, at
		 * least one, so that every call lands something.
		 */
		if (job->deadline != 0 && i > 0)
		{
			CHECK_FOR_INTERRUPTS();
			if (GetCurrentTimestamp() >= job->deadline)
				return;
		}
		job->judged = i + 1;
		kl_fingerprint_with(job->sha, job->topic, job->partition, r->offset, r->key, r->key_len,
							r->value, r->value_len, r->fingerprint);
		if (r->status == KL_STATUS_REUSED)
			continue;
		in.value = r->value;
		in.value_len = r->value_len;
		in.timestamp_ms = r->timestamp_ms;
		in.headers = r->headers;
		in.nheaders = r->nheaders;
		in.key = r->key;
		in.key_len = r->key_len;
		reason = NULL;
		kl_record_framing(job->contract, r);
		if (job->contract->avro != NULL)
			reason = kl_avro_record_value(job->contract, r, job->avro_out, job->events,
										  &in.value, &in.value_len);
		if (reason == NULL)
			reason = kl_contract_judge(job->contract, &in, job->events, job->scratch, &r->event);
		if (reason == kl_judge_out_of_memory)
		{
			job->failed_at = i;
			return;
		}
		r->writes_ids = job->contract->writes_ids;
		r->validation_error = reason;
		if (reason == NULL && r->event.event_id != NULL)
			kl_event_key_with(job->sha, job->source_id, job->ordered_keys, r->event.event_id,
							  r->event.event_id_len, &r->event_key);
	}
}

/*
 * kl_judge_window
 *		Fingerprint the window's records, and judge and key the new ones:
 *		the second half on the helper thread while the backend does the
 *		first (a contract with a pattern: all on the backend, up to the
 *		call's deadline).  Returns how many of the records were judged: n,
 *		or with a pattern fewer (at least one) once the deadline passed.
 */
static int
kl_judge_window(KlLandCall *call, KlRecord *recs, int n)
{
	static void *sha[2];
	static KlAvroOut avro_out[2];	/* malloc'd, kept across windows */
	KlJudgeJob	jobs[2];
	int			half = (call->split_judging && n >= 256) ? n / 2 : n;

	for (int t = 0; t < 2; t++)
	{
		if (sha[t] == NULL && (sha[t] = kl_sha256_thread_ctx()) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		jobs[t].contract = call->contract;
		jobs[t].topic = call->src->topic;
		jobs[t].partition = call->partition;
		jobs[t].source_id = call->src->source_id;
		jobs[t].ordered_keys = call->src->ordered_keys;
		jobs[t].recs = t == 0 ? recs : recs + half;
		jobs[t].n = t == 0 ? half : n - half;
		jobs[t].events = t == 0 ? call->events : call->w_events;
		jobs[t].scratch = t == 0 ? call->scratch : call->w_scratch;
		jobs[t].sha = sha[t];
		jobs[t].failed_at = -1;
		jobs[t].deadline = call->split_judging ? 0 : call->deadline;
		jobs[t].judged = 0;
		jobs[t].avro_out = &avro_out[t];
	}

	if (jobs[1].n > 0)
	{
		kl_worker_start(kl_judge_job, &jobs[1]);
		PG_TRY();
		{
			kl_judge_job(&jobs[0], NULL);
			kl_worker_wait();
		}
		PG_CATCH();
		{
			kl_worker_stop();
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
	else
		kl_judge_job(&jobs[0], NULL);

	for (int t = 0; t < 2; t++)
	{
		if (jobs[t].failed_at >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory"),
					 errdetail("Judging the record at offset %lld against contract \"%s\" needed more memory than the system gave.",
							   (long long) jobs[t].recs[jobs[t].failed_at].offset,
							   call->contract->name)));
	}
	/* the helper's half is judged whole; the backend's may end at the deadline */
	return jobs[1].n > 0 ? jobs[0].n + jobs[1].n : jobs[0].judged;
}

/*
 * kl_point_at_winners
 *		After the catalog's decision: a candidate demoted by the catalog may
 *		have been the first of its event_id in this window; its later copies
 *		point at it, but the accepted coordinate is the catalog's.
 */
static void
kl_point_at_winners(KlLandCall *call, KlIdentity *ids, int n)
{
	for (int i = 0; i < n; i++)
	{
		KlIdentity *r = &ids[i];

		if (r->status == KL_STATUS_DUPLICATE && r->dup_partition == call->partition &&
			r->dup_topic == NULL)
		{
			for (int j = 0; j < i; j++)
			{
				if (ids[j].offset == r->dup_offset && ids[j].status == KL_STATUS_DUPLICATE)
				{
					r->dup_partition = ids[j].dup_partition;
					r->dup_offset = ids[j].dup_offset;
					r->dup_topic = ids[j].dup_topic;
					break;
				}
			}
		}
	}
}

/*
 * kl_write_job
 *		The writing job of the helper thread (landing_files.c).
 */
static void
kl_write_job(void *arg, const volatile bool *cancel)
{
	kl_unit_write((KlUnitWrite *) arg, cancel);
}

/*
 * kl_land_run
 *		Steps 2 to 4 for a run of new coordinates, judged already
 *		(kl_judge_window): event_ids within the run, then against the
 *		catalog, which also reserves them (I3); then the batch.
 *
 *		The files are written on the helper thread while the backend
 *		reserves the event_ids, with the statuses the window alone gives
 *		(every candidate accepted).  The reservation works on the records'
 *		identities (KlIdentity, 40 bytes each), so the writer reads records
 *		nobody changes meanwhile.  If the catalog
 *		demoted a candidate (its event_id was accepted before, or by a
 *		concurrent session), the files written say something else than the
 *		batch must: their staging directory is removed and the batch is
 *		written again on the backend.  Nothing is renamed into place before
 *		the statuses are final.
 */
static bool
kl_land_run(KlLandCall *call, KlRecord *recs, int n, KlBatch *b)
{
	HASHCTL		ctl;
	HTAB	   *seen;
	int			candidates = 0;
	const char *contract = kl_contract_is_machine_event_v1(call->contract) ? NULL :
		call->contract->name;
	KlUnitWrite *u;
	KlIdentity *ids;
	bool		changed = false;
	volatile bool reserved = false;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(pg_uuid_t);
	ctl.entrysize = sizeof(KlEventSeen);
	ctl.hcxt = CurrentMemoryContext;
	seen = hash_create("kafka_lake window event_ids", Max(n, 16), &ctl,
					   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	for (int i = 0; i < n; i++)
	{
		KlRecord   *r = &recs[i];
		KlEventSeen *entry;
		bool		found;

		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (r->validation_error != NULL)
		{
			r->status = KL_STATUS_QUARANTINED;
			continue;
		}
		if (r->event.event_id == NULL)
		{
			/* a contract without event_id: the coordinate is the identity */
			r->status = KL_STATUS_ACCEPTED;
			continue;
		}
		entry = hash_search(seen, &r->event_key, HASH_ENTER, &found);
		if (found)
		{
			r->status = KL_STATUS_DUPLICATE;
			r->dup_partition = call->partition;
			r->dup_offset = recs[entry->index].offset;
			r->dup_topic = NULL;
		}
		else
		{
			entry->index = i;
			r->status = KL_STATUS_ACCEPTED;
			candidates++;
		}
	}
	hash_destroy(seen);

	if (candidates == 0)
	{
		kl_write_unit(call->src, call->partition, recs, n, contract,
					  call->contract->version, NULL, b);
		return true;
	}

	u = kl_unit_begin(call->src, call->partition, recs, n, contract,
					  call->contract->version, NULL, b);
	ids = palloc(sizeof(KlIdentity) * n);
	kl_identities_of(recs, n, ids);
	kl_worker_start(kl_write_job, u);
	PG_TRY();
	{
		kl_fault_point("while_writing");
		kl_fault_point("cancel_while_writing");
		/* land() leaves a contended partition; replay() and close_date() wait */
		reserved = kl_catalog_try_reserve_identities(call->src, call->partition, ids, n,
													 !call->is_replay && call->marks == NULL);
		if (reserved)
			kl_point_at_winners(call, ids, n);
		kl_worker_wait();
	}
	PG_CATCH();
	{
		kl_worker_stop();
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (!reserved)
	{
		/* nothing was renamed or reserved: the run lands in a later call */
		kl_unit_abandon(u);
		pfree(ids);
		return false;
	}

	for (int i = 0; i < n && !changed; i++)
	{
		changed = ids[i].status != recs[i].status ||
			(ids[i].status == KL_STATUS_DUPLICATE &&
			 (ids[i].dup_partition != recs[i].dup_partition ||
			  ids[i].dup_offset != recs[i].dup_offset ||
			  ids[i].dup_topic != recs[i].dup_topic));
	}
	kl_identities_apply(ids, n, recs);
	pfree(ids);
	if (!changed)
	{
		kl_unit_finish(u);
		return true;
	}
	kl_unit_abandon(u);
	memset(b, 0, sizeof(KlBatch));
	kl_write_unit(call->src, call->partition, recs, n, contract,
				  call->contract->version, NULL, b);
	return true;
}

/*
 * kl_durable_from_disk
 *		The fingerprints of durable coordinates that the catalog does not
 *		keep (an expired batch's, 1.9), from their batches' manifests.  A
 *		manifest that cannot be read, or does not list a coordinate the
 *		catalog gives its batch, stops the window (XX001): the redelivered
 *		record cannot be told from a changed one.
 */
static void
kl_durable_from_disk(KlSource *src, int32 p, KlDurable *durable)
{
	ListCell   *cell;

	foreach(cell, durable->disk_batches)
	{
		KlBounds	bounds;
		int64		total;
		List	   *found;
		KlBatch    *b;
		int			d = 0;

		kl_bounds_init(&bounds);
		bounds.partition_lo = bounds.partition_hi = p;
		bounds.topic = src->topic;
		bounds.batch_id = lfirst(cell);
		found = kl_catalog_scan_batches(src, &bounds, KL_BATCH_WANT_FINGERPRINTS, &total);
		if (found == NIL)
			continue;			/* reported below */
		b = linitial(found);
		kl_batch_load_fingerprints(src, b, true);
		/* a batch's coordinates in offset order, the durable ones too: one merge */
		for (int i = 0; i < b->nfingerprints && d < durable->count; i++)
		{
			int64		off = b->offset_list ? b->offset_list[i] : b->first_offset + i;

			while (d < durable->count && durable->offsets[d] < off)
				d++;
			if (d < durable->count && durable->offsets[d] == off && durable->on_disk[d])
			{
				memcpy(durable->fingerprints + d * KL_SHA256_LEN,
					   b->fingerprints + (Size) i * KL_SHA256_LEN, KL_SHA256_LEN);
				durable->on_disk[d] = false;
				if (b->reduced)
				{
					if (durable->prefix_only == NULL)
						durable->prefix_only = palloc0(sizeof(bool) * durable->count);
					durable->prefix_only[d] = true;
				}
			}
		}
	}
	for (int d = 0; d < durable->count; d++)
		if (durable->on_disk[d])
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("coordinate (%s, %d, %lld) is landed, but its expired batch's manifest does not list it",
							src->topic, p, (long long) durable->offsets[d]),
					 errhint("Run kafka_lake.verify('%s'): it says what to do.", src->source)));
}

/*
 * kl_process_window
 *		Steps 2 to 6 for the polled window.  Returns the committed offset
 *		after it (or the unchanged one for replay).
 */
static void
kl_process_window(KlLandCall *call)
{
	KlSource   *src = call->src;
	KlRecord   *recs = call->recs;
	int			n = call->nrecs;
	int32		p = call->partition;
	KlDurable  *durable;
	int			reused = 0;
	List	   *rows = NIL;
	ListCell   *cell;
	int64		next_offset;
	int			judged;

	/* what is already durable, then fingerprints and judgements */
	durable = kl_catalog_durable(src, p, recs[0].offset, recs[n - 1].offset);
	if (durable != NULL && durable->disk_batches != NIL)
		kl_durable_from_disk(src, p, durable);
	if (durable != NULL)
	{
		int			d = 0;

		for (int i = 0; i < n && d < durable->count; i++)
		{
			while (d < durable->count && durable->offsets[d] < recs[i].offset)
				d++;
			if (d < durable->count && durable->offsets[d] == recs[i].offset)
				recs[i].status = KL_STATUS_REUSED;
		}
	}
	if (call->avro != NULL)
		kl_avro_landing_prepare(call->avro, recs, n, call->deadline);
	judged = kl_judge_window(call, recs, n);
	if (judged < n)
	{
		/* the deadline passed while judging: the window ends there, the call too */
		n = call->nrecs = judged;
		call->stop = true;
	}
	next_offset = recs[n - 1].offset + 1;
	if (call->last_offset != NULL)
	{
		call->last_offset[p] = recs[n - 1].offset;
		call->last_timestamp_ms[p] = recs[n - 1].timestamp_ms;
	}
	if (durable != NULL)
	{
		int			d = 0;

		for (int i = 0; i < n && d < durable->count; i++)
		{
			while (d < durable->count && durable->offsets[d] < recs[i].offset)
				d++;
			if (d < durable->count && durable->offsets[d] == recs[i].offset)
			{
				/* a reduced manifest's: the first bytes (a 2^-64 chance that a changed record passes) */
				if (memcmp(durable->fingerprints + d * KL_SHA256_LEN, recs[i].fingerprint,
						   durable->prefix_only && durable->prefix_only[d] ?
						   KL_FINGERPRINT_PREFIX_LEN : KL_SHA256_LEN) != 0)
					ereport(ERROR,
							(errcode(ERRCODE_DATA_CORRUPTED),
							 errmsg("coordinate (%s, %d, %lld) was delivered again with a different fingerprint",
									src->topic, p, (long long) recs[i].offset),
							 errdetail("The landed record and the broker's record at this offset differ; "
									   "a coordinate is landed once, so the window that holds it was not landed."),
							 errhint("The topic was probably deleted and re-created. Land the new topic under a new source.")));
				reused++;
			}
		}
	}

	/* runs of new coordinates, each its own batch */
	for (int i = 0; i < n;)
	{
		int			j = i;
		KlBatch *b;
		KlLandRow  *row;

		if (recs[i].status == KL_STATUS_REUSED)
		{
			i++;
			continue;
		}
		while (j < n && recs[j].status != KL_STATUS_REUSED)
			j++;

		b = palloc0(sizeof(KlBatch));
		if (!kl_land_run(call, recs + i, j - i, b))
		{
			/* what lies below this run is durable; the rest waits */
			call->contended = true;
			next_offset = recs[i].offset;
			break;
		}
		kl_note_landed(call, b);
		b->landed_by = call->is_replay ? "replay" : "land";
		kl_catalog_insert_batch(src, b, recs + i, j - i);

		row = palloc0(sizeof(KlLandRow));
		row->batch_id = pstrdup(b->batch_id);
		row->status = "landed";
		row->records = j - i;
		row->accepted = b->counts[KL_FILE_ACCEPTED];
		row->duplicates = b->counts[KL_FILE_DUPLICATES];
		row->quarantined = b->counts[KL_FILE_QUARANTINE];
		row->first_offset = b->first_offset;
		row->last_offset = b->last_offset;
		rows = lappend(rows, row);
		call->landed_records += j - i;
		i = j;
	}
	call->reused_records += reused;

	if (rows == NIL && call->contended)
	{
		/* the window's first new run waits: commit what is below it */
		if (!call->is_replay && next_offset > Max(call->committed, 0) &&
			next_offset > recs[0].offset)
			kl_commit_partition(call, next_offset, NULL);
		kl_kafka_release_held(call->kk);
		return;
	}
	if (rows == NIL)
	{
		KlLandRow  *row = palloc0(sizeof(KlLandRow));

		row->status = "reused";
		row->first_offset = recs[0].offset;
		row->last_offset = recs[n - 1].offset;
		rows = lappend(rows, row);
	}
	/* the window's reused coordinates are reported on its last row */
	{
		KlLandRow  *last = llast(rows);

		last->reused += reused;
		last->records += reused;
	}

	/* step 6: everything below next_offset is durable */
	if (!call->is_replay)
	{
		kl_fault_point("after_landing_before_commit");
		kl_commit_partition(call, next_offset, ((KlLandRow *) llast(rows))->batch_id);
		kl_fault_point("after_commit");
	}

	foreach(cell, rows)
		kl_emit(call, (KlLandRow *) lfirst(cell), call->committed);

	kl_kafka_release_held(call->kk);
}

/*
 * kl_land_range
 *		Read the current partition from start up to stop (exclusive), window
 *		by window.
 */
static void
kl_land_range(KlLandCall *call, int64 start, int64 stop)
{
	bool		done = false;
	MemoryContext old;

	kl_kafka_assign(call->kk, call->src->topic, call->partition, start);
	while (!done && !call->stop && !call->contended)
	{
		MemoryContextReset(call->window_cxt);
		kl_pool_reset(call->events);
		kl_pool_reset(call->w_events);
		old = MemoryContextSwitchTo(call->window_cxt);
		done = kl_poll_window(call, stop);
		if (call->nrecs > 0)
			kl_process_window(call);
		MemoryContextSwitchTo(old);
	}
	kl_kafka_unassign(call->kk);
}

static int	kl_start_topic(KlLandCall *call, int t);

/*
 * kl_start_call
 *		Common set-up of land(), replay() and kl_land_to_marks: the source,
 *		the result set (none without fcinfo), the consumer, its first topic
 *		(kl_start_topic) and the cluster id check.  Returns that topic's
 *		partition count.
 */
static int
kl_start_call(KlLandCall *call, FunctionCallInfo fcinfo, const char *source, int timeout_ms)
{
	ReturnSetInfo *rsinfo = fcinfo ? (ReturnSetInfo *) fcinfo->resultinfo : NULL;
	char	   *cluster_id;
	int			nparts;

	call->source = call->src = kl_source_lookup(source);
	call->timeout_ms = timeout_ms;
	kl_source_lock(call->src);
	call->deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
	if (fcinfo != NULL)
	{
		kl_init_materialized_srf(fcinfo);
		call->out = rsinfo->setResult;
		call->desc = rsinfo->setDesc;
	}
	/*
	 * The window context keeps a 16 MB block across resets: a window's
	 * normalised events take about that much, and fresh memory every window
	 * costs page faults.  The records array is reused the same way.
	 */
	call->window_cxt = AllocSetContextCreate(CurrentMemoryContext,
											 "kafka_lake window",
											 16 * 1024 * 1024, 16 * 1024 * 1024,
											 ALLOCSET_DEFAULT_MAXSIZE);
	call->recs = MemoryContextAllocHuge(CurrentMemoryContext,
										sizeof(KlRecord) * kl_batch_max_records);
	call->committed = -1;
	call->contract = kl_source_contract(call->src);
	kl_contract_judgeable(call->contract);
	if (call->contract->avro != NULL)
		call->avro = kl_avro_landing_begin(call->contract, call->src->server,
										   CurrentMemoryContext);
	call->events = kl_pool_create(CurrentMemoryContext, 4 * 1024 * 1024);
	call->scratch = kl_pool_create(CurrentMemoryContext, 256 * 1024);
	call->w_events = kl_pool_create(CurrentMemoryContext, 4 * 1024 * 1024);
	call->w_scratch = kl_pool_create(CurrentMemoryContext, 256 * 1024);
	call->split_judging = !kl_contract_has_pattern(call->contract);
	kl_sha256_prepare();

	call->kk = kl_kafka_open(call->src->server, KL_CONSUMER, call->src->group_id);
	/*
	 * The first topic's partitions first: its metadata request is what
	 * brings the cluster id (asked alone, librdkafka waits for a metadata
	 * refresh of its own, longer than a short timeout).
	 */
	nparts = kl_start_topic(call, 0);

	cluster_id = kl_kafka_cluster_id(call->kk, call->deadline);
	if (call->src->cluster_id == NULL)
		kl_catalog_set_cluster_id(call->src, cluster_id);
	else if (strcmp(call->src->cluster_id, cluster_id) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the Kafka cluster behind server \"%s\" changed", call->src->server),
				 errdetail("Source \"%s\" landed from cluster \"%s\"; the server now answers as cluster \"%s\". "
						   "Its offsets do not describe the landed records: nothing was landed or committed.",
						   call->src->source, call->src->cluster_id, cluster_id),
				 errhint("Point server \"%s\" back at the original cluster, or land the new cluster under a new source.",
						 call->src->server)));
	return nparts;
}

/*
 * kl_start_topic
 *		Land the source's topic t from here on: its partitions, and what the
 *		call keeps per partition.  What it committed and landed on the topic
 *		before stays in its error messages' progress.  Returns the partition
 *		count.
 */
static int
kl_start_topic(KlLandCall *call, int t)
{
	int			nparts;

	if (call->call_committed != NULL)
	{
		if (call->prior_committed.data == NULL)
		{
			initStringInfo(&call->prior_committed);
			initStringInfo(&call->prior_pending);
		}
		kl_progress_parts(call, &call->prior_committed, &call->nprior_committed,
						  &call->prior_pending, &call->nprior_pending);
	}
	call->src = kl_source_topic(call->source, t);
	call->partition = -1;		/* an error now is of no partition yet */
	nparts = kl_kafka_partition_count(call->kk, call->src->topic, call->deadline);
	call->nparts = nparts;
	call->call_committed = palloc(sizeof(int64) * nparts);
	call->pending_batches = palloc0(sizeof(int) * nparts);
	call->pending_first = palloc0(sizeof(int64) * nparts);
	call->pending_last = palloc0(sizeof(int64) * nparts);
	call->owned = palloc0(sizeof(bool) * nparts);
	call->part_status = palloc0(sizeof(char *) * nparts);
	for (int p = 0; p < nparts; p++)
		call->call_committed[p] = -1;
	return nparts;
}

/*
 * kl_check_high_watermark
 *		A partition must not end below what this source landed or committed
 *		there (a re-created topic, data lost on the broker): ERROR if it does.
 */
static void
kl_check_high_watermark(KlLandCall *call, int64 high, int64 remembered)
{
	int64		expected = Max(remembered, call->committed);

	if (high < expected)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("partition %d of topic \"%s\" ends at offset %lld, below offset %lld that source \"%s\" already landed or committed",
						call->partition, call->src->topic, (long long) high,
						(long long) expected, call->src->source),
				 errdetail("The topic was deleted and re-created, or the broker lost data; this partition was left as it was."),
				 errhint("Land a re-created topic under a new source; the landed batches of \"%s\" stay as they are.",
						 call->src->source)));
}

/*
 * kl_group_moved_error
 *		The consumer group's offset is ahead of what this source landed: some
 *		other consumer commits to the group.  Landing from there would skip
 *		the records in between, so refuse, and say who else may be using the
 *		group.
 */
static void
kl_group_moved_error(KlLandCall *call, int64 group_offset, int64 ours)
{
	KlSource   *src = call->src;
	char	   *others = kl_catalog_group_users(src);

	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("consumer group \"%s\" is at offset %lld of partition %d of topic \"%s\", but source \"%s\" did not land offsets %lld to %lld",
					src->group_id, (long long) group_offset, call->partition, src->topic,
					src->source, (long long) ours, (long long) (group_offset - 1)),
			 errdetail("Someone else commits to this group: another consumer, or a kafka_lake source of another database%s. "
					   "Landing from the group's offset would skip those records, so this partition was left as it was.",
					   others ? psprintf(" (in this database: source %s)", others) : ""),
			 src->npartitions > 0 ?
			 errhint("Source \"%s\" owns partitions %s: another server that lands this topic with the same group may own partition %d too. "
					 "Give each partition one owner (kafka_lake.set_partitions() on each server); "
					 "if the partition moved here, the other server landed offsets %lld to %lld.",
					 src->source, kl_source_partitions_text(src), call->partition,
					 (long long) ours, (long long) (group_offset - 1)) :
			 errhint("Give each consumer its own group: drop the source (keeping its landing) and create it again with another group_id; "
					 "the new source adopts the landed batches. To land the offsets the group skipped, call %s.",
					 kl_replay_call(src, call->partition, ours, group_offset - 1))));
}

/*
 * kl_land_partition
 *		One partition of land(): recover, look again at what the call read
 *		before it owned the partition, check the group's offset against what
 *		this source committed, decide the start, land up to the high
 *		watermark.
 */
static void
kl_land_partition(KlLandCall *call)
{
	KlSource   *src = call->src;
	int32		p = call->partition;
	KlPartitionState st;
	int64		low,
				high;
	int64		stop;
	int64		group;
	int64		start;
	int64		continue_from;
	bool		adopt = false;
	bool		got_there = true;
	int64		rows_before;

	kl_recover_partition(src, p, NULL, NULL);
	kl_catalog_partition_state(src, p, &st);

	/*
	 * The group's offsets and the watermarks were read for every partition
	 * at the start of the call, before it owned this one: another call (an
	 * overlapping pg_cron run) may have landed and committed it since.  The
	 * group's offset is read again when it disagrees with the newest commit
	 * the catalog remembers, the watermarks when the partition seems to end
	 * below what was landed, before that is called a re-created topic.
	 */
	if (call->committed != st.last_commit)
		call->committed = kl_kafka_committed_one(call->kk, src->topic, p, kl_kafka_deadline(call));
	low = call->low[p];
	high = call->high[p];
	if (high < Max(st.remembered, call->committed))
	{
		kl_kafka_watermarks(call->kk, src->topic, p, &low, &high, kl_kafka_deadline(call));
		call->low[p] = low;
		call->high[p] = high;
	}
	kl_check_high_watermark(call, high, st.remembered);
	stop = call->marks ? Min(high, call->marks[p]) : high;

	/*
	 * Start where the consumer group says (a group without an offset, e.g.
	 * after a failed first commit, starts at the low watermark and finds the
	 * durable records reused).  Landing must continue from the group's
	 * offset, or from what the catalog remembers when the group forgot:
	 * anything below the low watermark from there on expired unlanded.
	 */
	group = call->committed;
	start = (group >= 0) ? group : low;
	if (group >= 0)
		continue_from = group;
	else
		continue_from = (st.remembered > 0) ? st.remembered : low;

	/*
	 * A group offset beyond the newest commit of this source.  Ours, if the
	 * record just below it is durable here (a commit whose transaction
	 * aborted: its batch was adopted from disk).  Harmless, if everything
	 * it skipped has expired on the broker anyway: the expiry check below
	 * judges the range from what this source committed.  Otherwise another
	 * consumer moved it.  A source with no history of the partition at all
	 * starts at the group's offset on purpose (a consumer group migrated to
	 * kafka_lake, or the group of an earlier source of this name), and says
	 * so.
	 */
	if (group >= 0 && group > st.last_commit)
	{
		if (!st.has_history)
			adopt = (group > low);
		else if (group <= low)
			continue_from = (st.last_commit >= 0) ? st.last_commit :
				(st.remembered > 0 ? st.remembered : low);
		else if (kl_catalog_durable(src, p, group - 1, group - 1) == NULL)
			kl_group_moved_error(call, group,
								 st.last_commit >= 0 ? st.last_commit : st.remembered);
	}

	/*
	 * (A landing up to a mark that lies below where the partition goes on
	 * needs nothing of what expired above it: the next land() judges that.)
	 */
	if (continue_from < low && !(call->marks && continue_from >= stop))
	{
		KlDurable  *durable = kl_catalog_durable(src, p, continue_from, low - 1);
		int64		first_lost = continue_from;

		/* records landed ahead of the commits (by replay) are not lost */
		if (durable)
		{
			for (int i = 0; i < durable->count && durable->offsets[i] == first_lost; i++)
				first_lost++;
		}
		if (first_lost < low)
		{
			if (!call->allow_expired)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("offsets %lld to %lld of partition %d of topic \"%s\" expired on the broker before they landed",
								(long long) first_lost, (long long) (low - 1), p, src->topic),
						 errdetail("The partition now starts at offset %lld; %lld records are lost to source \"%s\".",
								   (long long) low, (long long) (low - first_lost), src->source),
						 errhint("To record the loss in kafka_lake.expired_ranges and go on from offset %lld, call kafka_lake.land('%s', allow_expired => true).",
								 (long long) low, src->source)));
			kl_catalog_record_expired(src, p, first_lost, low - 1);
			ereport(NOTICE,
					(errmsg("offsets %lld to %lld of partition %d of topic \"%s\" expired before they landed; recorded in kafka_lake.expired_ranges",
							(long long) first_lost, (long long) (low - 1), p, src->topic)));
		}
	}
	start = Max(start, low);

	rows_before = call->rows;
	if (adopt)
	{
		ereport(NOTICE,
				(errmsg("source \"%s\" starts partition %d of topic \"%s\" at offset %lld, where consumer group \"%s\" had committed",
						src->source, p, src->topic, (long long) group, src->group_id),
				 errdetail("Offsets %lld to %lld, below the group's offset, are not landed by this source.",
						   (long long) low, (long long) (group - 1)),
				 errhint("If they are needed, %s lands them.", kl_replay_call(src, p, low, group - 1))));
		/* the group's offset becomes this source's own first commit */
		kl_commit_partition(call, group, NULL);
		kl_emit_simple(call, "adopted", group);
	}
	if (start < stop)
	{
		kl_land_range(call, start, stop);
		got_there = !call->stop && !call->contended;
	}
	if (call->contended)
	{
		call->contended = false;
		ereport(NOTICE,
				(errmsg("%s of source \"%s\" was left for the next call at offset %lld",
						kl_partition_words(call, p), src->source, (long long) call->committed),
				 errdetail("Its next records carry event_ids that another session's land() is accepting; "
						   "this call landed and committed what lies below them.")));
		kl_emit_simple(call, "locked", call->committed);
		return;
	}

	if (call->rows == rows_before)
	{
		/* nothing new; make the group's offset say where we stand */
		if (start != call->committed && !call->stop)
			kl_commit_partition(call, start, NULL);
		kl_emit_simple(call, "empty", call->committed);
	}

	/*
	 * Up to a mark: everything below it is durable once the landing got
	 * there, or had nothing to land (the call's time or budget may have run
	 * out on an earlier partition: this one needed none of it).
	 */
	if (call->reached && got_there)
		call->reached[p] = stop;
}

/*
 * kl_own_marked_partition
 *		kl_land_to_marks: own a partition, waiting for another session that
 *		is landing it, unless this source already committed it up to its
 *		mark (then it is complete without us: true, and nothing to land).
 *		False, and behind, when the wait reached the deadline.
 */
static bool
kl_own_marked_partition(KlLandCall *call, int32 p, KlBehindReason *behind, bool *complete)
{
	KlPartitionState st;

	*complete = false;
	if (kl_try_lock_partition(call->src, p))
		return true;
	kl_catalog_partition_state(call->src, p, &st);
	if (st.last_commit >= call->marks[p])
	{
		*complete = true;
		return false;
	}
	if (kl_lock_partition_wait(call->src, p, call->deadline))
		return true;
	behind[p] = KL_BEHIND_LOCKED;
	return false;
}

/*
 * kl_read_ahead
 *		Before landing partition p: have the consumer fetch the next
 *		partitions meanwhile (see READING A PARTITION, AND THE NEXT ONES
 *		AHEAD in kafka.c), each from where it will probably start (the
 *		group's offset, or the low watermark), up to KL_KAFKA_AHEAD of
 *		them: small partitions only, each of at most an eighth of
 *		kafka_lake.batch_max_records, and all together of at most an eighth
 *		of kafka_lake.batch_max_bytes (records counted at the call's average
 *		size so far, 1 kB before any).  So a topic of many small partitions
 *		waits for one fetch at a time no more, and one of big partitions,
 *		whose first fetch weighs little against its records, is read as
 *		before, with the memory it took (reading 3 MB partitions ahead cost
 *		the bench's landing 28 MiB more for 4 % less time: librdkafka keeps
 *		a fetch's whole buffer while one of its records is held).  A
 *		partition read ahead at another offset than it starts from is
 *		assigned again; one the call skips is unassigned once passed.
 */
static void
kl_read_ahead(KlLandCall *call, const int64 *committed, int32 p)
{
	double		avg = call->polled > 0 ? (double) call->bytes_polled / call->polled : 1024.0;
	double		budget = (double) kl_batch_max_bytes / 8;

	kl_kafka_forget_ahead(call->kk, call->src->topic, p);
	for (int q = p + 1; q < call->nparts && q <= p + KL_KAFKA_AHEAD; q++)
	{
		int64		start = committed[q] >= 0 ? Max(committed[q], call->low[q]) : call->low[q];
		double		bytes = (double) (call->high[q] - start) * avg;

		if (call->high[q] <= start || !kl_source_owns(call->src, q))
			continue;
		/* a small partition, whose first fetch weighs more than its records */
		if (call->high[q] - start > kl_batch_max_records / 8 || bytes > budget)
			break;
		budget -= bytes;
		(void) kl_kafka_read_ahead(call->kk, call->src->topic, q, start);
	}
}

/*
 * kl_mark_not_owned
 *		A partition the source does not own (set_partitions) is not landed up
 *		to a mark: its mark is what this server landed of it (and the
 *		partition loop takes it as reached), so that a closing certifies and
 *		bridges exactly that (all of it, or nothing for a partition it never
 *		landed).  One catalog query for every partition of the topic, at
 *		close_date only, and only on a source that owns some partitions.
 */
static void
kl_mark_not_owned(KlSource *src, int n, int64 *marks)
{
	int64	   *remembered;

	if (src->npartitions == 0)
		return;
	remembered = palloc(sizeof(int64) * Max(n, 1));
	kl_catalog_remembered_offsets(src, n, remembered);
	for (int p = 0; p < n; p++)
		if (!kl_source_owns(src, p))
			marks[p] = remembered[p];
	pfree(remembered);
}

/*
 * kl_land_partitions
 *		The partition loop of land(), and of kl_land_to_marks (behind set:
 *		every partition is visited, and one another session is landing is
 *		waited for, until the deadline, rather than skipped).  Partitions
 *		the source does not own are passed over.  Afterwards, what
 *		source_status shows of every partition this call owned is recorded.
 */
static void
kl_land_partitions(KlLandCall *call, const int64 *committed, KlBehindReason *behind)
{
	MemoryContext cxt = CurrentMemoryContext;

	/* from here on an error says what the call landed and committed */
	PG_TRY();
	{
		for (int p = 0; p < call->nparts; p++)
		{
			bool		complete;

			if (behind == NULL && (call->stop || GetCurrentTimestamp() >= call->deadline))
				break;
			if (!kl_source_owns(call->src, p))
			{
				if (behind != NULL)
					call->reached[p] = call->marks[p];
				continue;
			}
			call->partition = p;
			call->committed = committed[p];
			if (behind != NULL)
			{
				if (!kl_own_marked_partition(call, p, behind, &complete))
				{
					if (complete)
						call->reached[p] = call->marks[p];
					continue;
				}
			}
			else if (!kl_try_lock_partition(call->src, p))
			{
				kl_emit_simple(call, "locked", committed[p]);
				continue;
			}
			call->owned[p] = true;
			if (behind == NULL)
				kl_read_ahead(call, committed, p);
			kl_land_partition(call);
		}
		kl_kafka_unassign_all(call->kk);
	}
	PG_CATCH();
	{
		kl_rethrow_with_progress(call, cxt);
	}
	PG_END_TRY();
	kl_catalog_record_partition_states(call->src, call->nparts, call->owned,
									   call->part_status, call->low, call->high);
}

/*
 * kl_land_source
 *		land() of one source, once its arguments are checked.
 */
static void
kl_land_source(KlLandCall *call, FunctionCallInfo fcinfo, const char *source, int timeout_ms)
{
	int			nparts;
	int64	   *committed;

	nparts = kl_start_call(call, fcinfo, source, timeout_ms);
	for (int t = 0; t < call->source->ntopics; t++)
	{
		if (t > 0)
		{
			if (call->stop || GetCurrentTimestamp() >= call->deadline)
				break;
			nparts = kl_start_topic(call, t);
		}
		committed = palloc(sizeof(int64) * nparts);
		kl_kafka_committed(call->kk, call->src->topic, nparts, committed, call->deadline);
		call->low = palloc(sizeof(int64) * nparts);
		call->high = palloc(sizeof(int64) * nparts);
		kl_kafka_all_watermarks(call->kk, call->src->topic, nparts, call->low, call->high,
								call->deadline);
		kl_land_partitions(call, committed, NULL);
	}
	kl_kafka_close(call->kk);
}

/*
 * kafka_lake_land
 *		land(source, max_records, timeout, allow_expired).  A failed call
 *		leaves its error where source_status shows it (its transaction
 *		rolls back, so the catalog cannot keep it).
 */
Datum
kafka_lake_land(PG_FUNCTION_ARGS)
{
	KlLandCall	call = {0};
	volatile int timeout_ms = 30000;
	MemoryContext cxt = CurrentMemoryContext;

	kl_check_not_null(fcinfo, 0, "source", NULL);
	call.max_records = PG_ARGISNULL(1) ? 1000000 : PG_GETARG_INT32(1);
	if (call.max_records < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_records must be at least 1"),
				 errhint("Leave it out to land up to 1000000 records.")));
	if (!PG_ARGISNULL(2))
		timeout_ms = kl_timeout_ms(PG_GETARG_INTERVAL_P(2), "timeout");
	call.allow_expired = PG_ARGISNULL(3) ? false : PG_GETARG_BOOL(3);
	call.partition = -1;

	PG_TRY();
	{
		kl_land_source(&call, fcinfo, text_to_cstring(PG_GETARG_TEXT_PP(0)), timeout_ms);
	}
	PG_CATCH();
	{
		if (call.src != NULL)
			kl_status_record_error(call.src->source_id, call.src->topic_index, call.partition, cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return (Datum) 0;
}

/*
 * kl_grow_marks
 *		Room in m's arrays for n more slots after base, as a landing up to
 *		marks starts a topic: nothing landed, nothing reached yet.
 */
static void
kl_grow_marks(KlLandMarks *m, int base, int n)
{
	int			total = base + n;

#define KL_GROW(field, type) \
	m->field = (base == 0) ? palloc(sizeof(type) * Max(total, 1)) : \
		repalloc(m->field, sizeof(type) * Max(total, 1))
	KL_GROW(slot_topic, int);
	KL_GROW(slot_partition, int32);
	KL_GROW(marks, int64);
	KL_GROW(low, int64);
	KL_GROW(high, int64);
	KL_GROW(committed, int64);
	KL_GROW(call_committed, int64);
	KL_GROW(reached, int64);
	KL_GROW(last_offset, int64);
	KL_GROW(last_timestamp_ms, int64);
	KL_GROW(behind, KlBehindReason);
#undef KL_GROW
	for (int i = base; i < total; i++)
	{
		m->committed[i] = m->call_committed[i] = m->reached[i] = -1;
		m->last_offset[i] = m->last_timestamp_ms[i] = -1;
		m->behind[i] = KL_BEHIND_NONE;
	}
}

/*
 * kl_land_to_marks
 *		Land a source up to marks, for close_date(): per partition the high
 *		watermark at the call, or (m->by_time) the first offset whose record
 *		is timestamped at or after m->cutoff_ms, read with one round trip for
 *		all partitions.  The same protocol as land() (recovery, the group's
 *		offset, expiry, commits), except that nothing at or past a mark is
 *		landed (the next land() takes it) and that a partition another
 *		session is landing is waited for until the timeout.  m gets the
 *		marks and how far each partition got; an error is raised as land()
 *		raises it, with m->partition naming the partition it came from.
 */
void
kl_land_to_marks(const char *source, int timeout_ms, KlLandMarks *m)
{
	KlLandCall	call = {0};
	MemoryContext cxt = CurrentMemoryContext;
	int			n;
	volatile int base = 0;
	volatile bool landing = false;
	int			ntopics;

	call.max_records = PG_INT64_MAX;
	call.partition = -1;
	m->partition = -1;
	m->nparts = 0;
	PG_TRY();
	{
		n = kl_start_call(&call, NULL, source, timeout_ms);
		m->src = call.source;
		ntopics = call.source->ntopics;
		m->topic_base = palloc0(sizeof(int) * (ntopics + 1));
		for (int t = 0; t < ntopics; t++)
		{
			int64	   *committed;

			if (t > 0)
				n = kl_start_topic(&call, t);
			m->topic_base[t] = base;
			m->nparts = base + n;
			kl_grow_marks(m, base, n);
			for (int p = 0; p < n; p++)
			{
				m->slot_topic[base + p] = t;
				m->slot_partition[base + p] = p;
			}
			committed = m->committed + base;
			kl_kafka_committed(call.kk, call.src->topic, n, committed, call.deadline);
			call.low = m->low + base;
			call.high = m->high + base;
			kl_kafka_all_watermarks(call.kk, call.src->topic, n, call.low, call.high,
									call.deadline);
			if (m->by_time)
				kl_kafka_offsets_for_times(call.kk, call.src->topic, n, m->cutoff_ms, call.low,
										   call.high, m->marks + base, call.deadline);
			else
				memcpy(m->marks + base, call.high, sizeof(int64) * n);
			kl_mark_not_owned(call.src, n, m->marks + base);
			call.reached = m->reached + base;
			call.last_offset = m->last_offset + base;
			call.last_timestamp_ms = m->last_timestamp_ms + base;
			call.marks = m->marks + base;
			/* the progress of this topic is the certificate's (close.c) */
			memcpy(m->call_committed + base, call.call_committed, sizeof(int64) * n);
			call.call_committed = m->call_committed + base;

			landing = true;
			kl_land_partitions(&call, committed, m->behind + base);
			landing = false;
			call.partition = -1;
			for (int p = 0; p < n; p++)
			{
				if (call.reached[p] < 0 && m->behind[base + p] == KL_BEHIND_NONE)
					m->behind[base + p] = KL_BEHIND_TIMEOUT;
			}
			base += n;
		}
		m->topic_base[ntopics] = base;
		kl_kafka_close(call.kk);
	}
	PG_CATCH();
	{
		m->partition = (landing && call.partition >= 0) ? base + call.partition : -1;
		if (call.src != NULL)
			kl_status_record_error(call.src->source_id, call.src->topic_index, call.partition, cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/*
 * kl_check_owned
 *		replay() of a partition this server does not land (set_partitions)
 *		would land, a second time, records another server owns: refused.
 */
static void
kl_check_owned(const KlSource *src, int32 p)
{
	if (!kl_source_owns(src, p))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("source \"%s\" does not own partition %d", src->source, p),
				 errdetail("It lands partitions %s of its topics; another server lands the others.",
						   kl_source_partitions_text(src)),
				 errhint("Replay the partition on the server that owns it, or take it over first with kafka_lake.set_partitions().")));
}

/*
 * kafka_lake_replay
 *		replay(source, partition, from_offset, to_offset, timeout)
 */
Datum
kafka_lake_replay(PG_FUNCTION_ARGS)
{
	KlLandCall	call = {0};
	int			timeout_ms = 30000;
	int			nparts;
	int32		p;
	int64		from,
				to,
				low,
				high;
	int64	   *committed;
	MemoryContext cxt = CurrentMemoryContext;
	static const char *const argnames[4] = {"source", "partition", "from_offset", "to_offset"};

	for (int i = 0; i < 4; i++)
		kl_check_not_null(fcinfo, i, argnames[i],
						  "replay() needs a source, a partition and an inclusive offset range, for example kafka_lake.replay('machine_events', 0, 0, 99).");
	p = PG_GETARG_INT32(1);
	from = PG_GETARG_INT64(2);
	to = PG_GETARG_INT64(3);
	if (p < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition must not be negative")));
	if (from < 0 || to < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("offsets must not be negative"),
				 errhint("Kafka offsets start at 0.")));
	if (to < from)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("to_offset %lld is before from_offset %lld", (long long) to, (long long) from),
				 errhint("The range is inclusive: from_offset <= to_offset.")));
	if (!PG_ARGISNULL(4))
		timeout_ms = kl_timeout_ms(PG_GETARG_INTERVAL_P(4), "timeout");

	call.is_replay = true;
	call.max_records = PG_INT64_MAX;
	nparts = kl_start_call(&call, fcinfo, text_to_cstring(PG_GETARG_TEXT_PP(0)), timeout_ms);
	{
		/* the topic of the partition (one of several: named) */
		int			t = kl_source_topic_arg(call.source, fcinfo, 5, true)->topic_index;

		if (t != 0)
			nparts = kl_start_topic(&call, t);
	}
	if (p >= nparts)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition %d does not exist: topic \"%s\" has %d partitions",
						p, call.src->topic, nparts)));
	kl_check_owned(call.src, p);
	call.partition = p;
	committed = palloc(sizeof(int64) * nparts);
	kl_kafka_committed(call.kk, call.src->topic, nparts, committed, call.deadline);
	call.committed = committed[p];

	if (!kl_try_lock_partition(call.src, p))
	{
		kl_emit_simple(&call, "locked", call.committed);
		kl_kafka_close(call.kk);
		return (Datum) 0;
	}
	kl_recover_partition(call.src, p, NULL, NULL);

	kl_kafka_watermarks(call.kk, call.src->topic, p, &low, &high, call.deadline);
	if (from < low)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("offsets %lld to %lld of partition %d of topic \"%s\" expired on the broker",
						(long long) from, (long long) Min(to, low - 1), p, call.src->topic),
				 errdetail("The partition now starts at offset %lld.", (long long) low),
				 errhint("Replay from offset %lld or later; what landed before is in the landed batches.",
						 (long long) low)));
	if (to >= high)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("offset %lld is beyond the end of partition %d of topic \"%s\"",
						(long long) to, p, call.src->topic),
				 errdetail("The partition's high watermark is %lld.", (long long) high),
				 high > from ?
				 errhint("Replay up to offset %lld.", (long long) (high - 1)) :
				 errhint("Nothing has been written at these offsets yet.")));

	PG_TRY();
	{
		kl_land_range(&call, from, to + 1);
	}
	PG_CATCH();
	{
		kl_rethrow_with_progress(&call, cxt);
	}
	PG_END_TRY();
	if (call.stop)
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("replay of offsets %lld to %lld did not finish within the timeout",
						(long long) from, (long long) to),
				 errdetail("%s", kl_progress_detail(&call)),
				 errhint("Call it again with a longer timeout.")));
	if (call.polled_records == 0)
		kl_emit_simple(&call, "empty", call.committed);
	kl_catalog_record_replay(call.src, p, from, to, call.polled_records,
							 call.landed_records, call.reused_records);

	kl_kafka_close(call.kk);
	return (Datum) 0;
}

/*
 * kl_timestamptz_to_ms
 *		A timestamptz as Kafka's milliseconds since the Unix epoch, rounded
 *		up: the first millisecond at or after it (a record's timestamp is in
 *		whole milliseconds).
 */
static int64
kl_timestamptz_to_ms(TimestampTz t)
{
	int64		us = t + (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;

	return us >= 0 ? (us + 999) / 1000 : -((-us) / 1000);
}

/*
 * kl_replay_topic_by_time
 *		replay() by time of the current topic: each partition (or only the
 *		one given, -1: all) from from[p] up to stop[p].
 */
static void
kl_replay_topic_by_time(KlLandCall *vcall, int32 only, const int64 *committed,
						const int64 *from, const int64 *stop, TimestampTz from_time,
						TimestampTz to_time, MemoryContext cxt)
{
	PG_TRY();
	{
		for (int p = 0; p < vcall->nparts; p++)
		{
			if ((only >= 0 && p != only) || !kl_source_owns(vcall->src, p))
				continue;
			vcall->partition = p;
			vcall->committed = committed[p] >= 0 ? committed[p] : -1;
			if (!kl_try_lock_partition(vcall->src, p))
			{
				kl_emit_simple(vcall, "locked", vcall->committed);
				continue;
			}
			kl_recover_partition(vcall->src, p, NULL, NULL);
			vcall->polled_records = vcall->landed_records = vcall->reused_records = 0;
			if (from[p] < stop[p])
				kl_land_range(vcall, from[p], stop[p]);
			if (vcall->stop)
				ereport(ERROR,
						(errcode(ERRCODE_QUERY_CANCELED),
						 errmsg("replay of partition %d from %s to %s did not finish within the timeout",
								p, timestamptz_to_str(from_time), timestamptz_to_str(to_time)),
						 errdetail("It was to read offsets %lld to %lld.",
								   (long long) from[p], (long long) (stop[p] - 1)),
						 errhint("Call it again with a longer timeout; what it landed stays durable and is reused.")));
			if (vcall->polled_records == 0)
				kl_emit_simple(vcall, "empty", vcall->committed);
			else
				kl_catalog_record_replay(vcall->src, p, from[p], stop[p] - 1, vcall->polled_records,
										 vcall->landed_records, vcall->reused_records);
		}
	}
	PG_CATCH();
	{
		kl_rethrow_with_progress(vcall, cxt);
	}
	PG_END_TRY();
}

/*
 * kafka_lake_replay_by_time
 *		replay(source, from_time, to_time, partition, timeout): per
 *		partition (all, or the one given), the records whose timestamps lie
 *		in [from_time, to_time), found through the broker's offsets for
 *		those times (kl_kafka_offsets_for_times), replayed as replay() by
 *		offsets does it: what is not durable lands, the rest is reused, and
 *		nothing is committed (I6).  The range of a partition runs from the
 *		first offset whose timestamp is at or after from_time up to the
 *		first offset whose timestamp is at or after to_time, which is
 *		exactly the window when timestamps do not decrease along the
 *		partition (Kafka's own offsets-for-times assumes the same).  One
 *		timeout bounds the whole call.
 */
Datum
kafka_lake_replay_by_time(PG_FUNCTION_ARGS)
{
	KlLandCall	call = {0};
	int			timeout_ms = 30000;
	int			nparts;
	TimestampTz from_time;
	TimestampTz to_time;
	int64		from_ms;
	int64		to_ms;
	volatile int32 only = -1;
	int64	   *committed;
	int64	   *from;
	int64	   *stop;
	MemoryContext cxt = CurrentMemoryContext;
	static const char *const argnames[3] = {"source", "from_time", "to_time"};

	for (int i = 0; i < 3; i++)
		kl_check_not_null(fcinfo, i, argnames[i],
						  "replay() by time needs a source and a window, for example kafka_lake.replay('machine_events', from_time => '2026-06-29 00:00+00', to_time => '2026-06-30 00:00+00').");
	from_time = PG_GETARG_TIMESTAMPTZ(1);
	to_time = PG_GETARG_TIMESTAMPTZ(2);
	if (TIMESTAMP_NOT_FINITE(from_time) || TIMESTAMP_NOT_FINITE(to_time))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("from_time and to_time must be finite"),
				 errhint("Give the window as two points in time.")));
	if (to_time <= from_time)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("to_time must be later than from_time"),
				 errhint("The window is [from_time, to_time): records at from_time are in it, records at to_time are not.")));
	if (!PG_ARGISNULL(3))
	{
		only = PG_GETARG_INT32(3);
		if (only < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partition must not be negative")));
	}
	if (!PG_ARGISNULL(4))
		timeout_ms = kl_timeout_ms(PG_GETARG_INTERVAL_P(4), "timeout");
	from_ms = kl_timestamptz_to_ms(from_time);
	to_ms = kl_timestamptz_to_ms(to_time);

	call.is_replay = true;
	call.max_records = PG_INT64_MAX;
	nparts = kl_start_call(&call, fcinfo, text_to_cstring(PG_GETARG_TEXT_PP(0)), timeout_ms);
	if (only >= 0)
	{
		/* a partition that none of the source's topics has */
		bool		exists = only < nparts;

		for (int t = 1; t < call.source->ntopics && !exists; t++)
			exists = only < kl_kafka_partition_count(call.kk, call.source->topics[t],
													 call.deadline);
		if (!exists)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partition %d does not exist: topic \"%s\" has %d partitions",
							only, call.src->topic, nparts)));
		kl_check_owned(call.src, only);
	}
	for (int t = 0; t < call.source->ntopics; t++)
	{
		if (t > 0)
			nparts = kl_start_topic(&call, t);
		if (only >= nparts)
			continue;
		committed = palloc(sizeof(int64) * nparts);
		kl_kafka_committed(call.kk, call.src->topic, nparts, committed, call.deadline);
		call.low = palloc(sizeof(int64) * nparts);
		call.high = palloc(sizeof(int64) * nparts);
		kl_kafka_all_watermarks(call.kk, call.src->topic, nparts, call.low, call.high,
								call.deadline);
		from = palloc(sizeof(int64) * nparts);
		stop = palloc(sizeof(int64) * nparts);
		kl_kafka_offsets_for_times(call.kk, call.src->topic, nparts, from_ms, call.low, call.high,
								   from, call.deadline);
		kl_kafka_offsets_for_times(call.kk, call.src->topic, nparts, to_ms, call.low, call.high,
								   stop, call.deadline);
		kl_replay_topic_by_time(&call, only, committed, from, stop, from_time, to_time, cxt);
	}

	kl_kafka_close(call.kk);
	return (Datum) 0;
}
