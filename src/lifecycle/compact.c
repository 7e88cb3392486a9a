/*-------------------------------------------------------------------------
 *
 * compact.c
 *	  kafka_lake.compact(source, ...): merge runs of small batches of a
 *	  partition into one batch each, crash-safely.
 *
 * A source landed every minute makes small batches: four files and a
 * catalog row per partition per minute.  Compaction merges a run of them
 * into one batch that is a batch like any other: its directory is named
 * batch=<first>-<last>-<hash12> (hash12 of its fingerprints, in offset
 * order, as landing names it), its accepted, duplicates and quarantine
 * files hold the old batches' lines byte for byte in offset order (so the
 * foreign table returns the same rows and the bridge hashes the same bytes:
 * the same source_hash), and its manifest keeps every old entry as written
 * (each coordinate with its original fingerprint and status) and names the
 * batches it replaced ("compacted_from").  The catalog keeps each
 * coordinate's status letter, a demotion ('D', recover.c) included.
 *
 * WHICH BATCHES
 *
 * A run is a sequence of consecutive batches of one partition (by offset)
 * that are small (under half of target_bytes of record files and half of
 * target_records records: a batch at least half full is left as it is),
 * not expired, of the one business date asked for if any, and whose offset
 * ranges touch: a run ends at a gap between two batches, because the
 * offsets of a gap may still be landed by replay() (after recover() forgot
 * a batch, or ahead of the commits), and a batch's range may not overlap
 * another's.  A run grows while it stays within target_bytes and
 * target_records (by default kafka_lake.batch_max_bytes and
 * batch_max_records: a compacted batch is read whole, like a landed one).
 * Runs of at least two batches are compacted.
 *
 * A run holds batches of one contract and version only: the new batch
 * records the contract that judged its lines (its manifest names it, as
 * landing writes it), and a source that moved to another contract starts a
 * new run.  Lines that carry their own event_id and business_date are
 * copied as they are, like any other line.  Readmit units (readmit.c) and
 * the batches they re-admitted records of (a coordinate with the letter
 * 'R') are never compacted: a unit names its batch by id, in its manifest
 * too, which never changes (I4), so recovery of the unit needs that batch
 * under that id.  Such a batch ends a run and stays as it is, with its
 * units; the batches around it are compacted as usual.
 *
 * THE PROTOCOL, AND WHY EXACTLY ONE COPY IS EVER VISIBLE
 *
 * For each partition it owns (the partition lock of land(): no land,
 * replay, recover or other compaction of it meanwhile), after recovering it
 * as land() does:
 *	1. read each old batch (its manifest checked against the catalog by
 *	   SHA-256, its files by size, lines, CRC-32C and SHA-256: a damaged
 *	   batch is never compacted), write the new batch into a staging
 *	   directory, fsync every file and the directory (compact_after_write);
 *	2. rename it to its final name, fsync the partition directory
 *	   (compact_after_rename);
 *	3. in the caller's transaction, delete the old batches' rows (their
 *	   coordinates by cascade) and record the new batch
 *	   (compact_after_catalog);
 *	4. once the transaction has committed, remove the old directories
 *	   (fileundo.c at-commit entries; compact_before_remove and
 *	   compact_during_remove leave them as a crash would).
 * Readers go by the catalog, which changes in one commit: before it they
 * read the old batches, after it the new one.  If the transaction aborts,
 * the new directory goes (an at-abort entry); if the backend dies, recovery
 * decides by the disk and the catalog (recover.c): a compacted batch the
 * catalog does not know, while the batches it replaces are all on disk, is
 * a swap that never committed, and is removed; a directory that a
 * compacted batch of the catalog names in compacted_from is a swap that
 * committed, and is removed (never adopted: its coordinates are the new
 * batch's).  A compacted batch the catalog does not know whose sources are
 * not all on disk any more (a catalog restored from an older dump) is the
 * only complete copy, and recovery completes the swap.
 *
 * A reader whose snapshot is older than the commit may still list an old
 * batch whose directory is being removed: it gets a serialization failure
 * naming the compaction (batch_read.c), and a retry reads the new batch.
 * A compaction cannot be prepared for two-phase commit (fileundo.c).
 *
 * IDENTIFICATION
 *	  src/lifecycle/compact.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "base/compat.h"
#include "base/digest.h"
#include "base/fault.h"
#include "base/json.h"
#include "base/settings.h"
#include "format/batch_format.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/catalog_lifecycle.h"
#include "kl_catalog/locks.h"
#include "landing/fileundo.h"
#include "landing/batch_read.h"
#include "landing/landing_files.h"
#include "landing/recover.h"
#include "landing/source_lock.h"
#include "lifecycle/compact.h"

PG_FUNCTION_INFO_V1(kafka_lake_compact);

/* One compact() call */
typedef struct KlCompactCall
{
	KlSource   *src;
	int64		target_bytes;	/* most record-file bytes of a new batch */
	int64		target_records; /* most records of a new batch */
	bool		by_date;		/* only batches of one business date */
	DateADT		date;
	Tuplestorestate *out;		/* result rows */
	TupleDesc	desc;
} KlCompactCall;

/*
 * kl_batch_bytes
 *		The bytes of a batch's three record files.
 */
static int64
kl_batch_bytes(const KlBatch *b)
{
	return b->files[0].bytes + b->files[1].bytes + b->files[2].bytes;
}

/*
 * kl_compactable
 *		May this batch be part of a run?
 */
static bool
kl_compactable(const KlCompactCall *call, const KlBatch *b)
{
	if (b->expired || b->readmit || b->has_readmitted || b->has_excluded || b->has_promoted)
		return false;
	if (kl_batch_bytes(b) * 2 >= call->target_bytes ||
		(int64) b->record_count * 2 >= call->target_records)
		return false;
	if (call->by_date &&
		!(b->has_dates && b->min_date == call->date && b->max_date == call->date))
		return false;
	return true;
}

/*
 * kl_same_contract
 *		Were two batches judged by the same contract and version?
 */
static bool
kl_same_contract(const KlBatch *a, const KlBatch *b)
{
	if (kl_batch_is_machine_event_v1(a) || kl_batch_is_machine_event_v1(b))
		return kl_batch_is_machine_event_v1(a) && kl_batch_is_machine_event_v1(b);
	return strcmp(a->contract, b->contract) == 0 && a->contract_version == b->contract_version;
}

/*
 * kl_compact_damaged
 *		An old batch disagrees with the catalog: it is not compacted.
 */
static void
kl_compact_damaged(KlSource *src, const KlBatch *b, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("batch %s of source \"%s\" cannot be compacted: %s",
					b->batch_id, src->source, what),
			 errdetail("Nothing was compacted in partition %d.", b->partition),
			 errhint("Run kafka_lake.verify('%s'): it says what to do about the batch. "
					 "Compact the partition once it is clean.", src->source)));
}

/*
 * kl_copy_entries
 *		Append the entries of an old manifest to the new one, each as it was
 *		written, one per line.  *first: no entry was written yet.
 */
static void
kl_copy_entries(KlBatchWriter *w, const KlSource *src, const KlBatch *b, const char *text,
				size_t len, bool *first)
{
	KlJsonReader it;
	KlJsonValue k;
	KlJsonValue v;
	int			copied = 0;

	kl_json_object_open(&it, text, text + len, KL_JSON_MAX_DEPTH);
	while (kl_json_object_next(&it, &k, &v))
	{
		KlJsonReader eit;
		KlJsonValue ev;

		if (!kl_json_key_is(&k, "entries", strlen("entries")))
			continue;
		kl_json_array_open(&eit, v.start, v.start + v.len, KL_JSON_MAX_DEPTH);
		while (kl_json_array_next(&eit, &ev))
		{
			if (!*first)
				kl_batch_writer_append(w, KL_NFILES, ",\n", 2, 0);
			kl_batch_writer_append(w, KL_NFILES, "    ", 4, 0);
			kl_batch_writer_append(w, KL_NFILES, ev.start, ev.len, 1);
			*first = false;
			copied++;
		}
	}
	if (copied != b->record_count)
		kl_compact_damaged((KlSource *) src, b, "its manifest does not list its coordinates");
}

/*
 * kl_compact_read_batch
 *		Step 1 for one old batch: check its manifest against the catalog and
 *		its coordinates against the catalog's, copy its entries and its
 *		lines into the new batch, and fill in its coordinates' statuses.
 */
static void
kl_compact_read_batch(KlCompactCall *call, KlBatchWriter *w, const KlBatch *b,
					  KlRecord *recs, bool *first_entry)
{
	KlSource   *src = call->src;
	char	   *dir = psprintf("%s/batch=%s", kl_batch_partition_dir(src, b), b->batch_id);
	char	   *path = psprintf("%s/%s", dir, kl_batch_file(b, KL_NFILES));
	size_t		len;
	char	   *problem;
	char	   *text = kl_read_checked_manifest(dir, b, &len, &problem);
	KlBatch		mb;
	KlRecord   *mrecs;
	int			mn;

	if (text == NULL)
		kl_compact_damaged(src, b, problem);
	kl_manifest_parse_text(path, text, len, &mb, &mrecs, &mn);
	if (mn != b->record_count || strcmp(mb.batch_id, b->batch_id) != 0 ||
		b->nfingerprints != b->record_count)
		kl_compact_damaged(src, b, "its manifest differs from the catalog's coordinates");
	for (int i = 0; i < mn; i++)
	{
		KlRecord   *r = &recs[i];

		if (mrecs[i].offset != r->offset ||
			memcmp(mrecs[i].fingerprint, r->fingerprint, KL_SHA256_LEN) != 0)
			kl_compact_damaged(src, b, psprintf("its manifest differs from the catalog at offset %lld",
												(long long) r->offset));
		/* the catalog's letter wins: it may be a demotion ('D') */
		r->status = b->demoted_statuses ? b->demoted_statuses[i] : mrecs[i].status;
	}
	kl_copy_entries(w, src, b, text, len, first_entry);
	pfree(text);

	/* the record files, whole, checked as verify() checks them */
	for (int f = 0; f < KL_NFILES; f++)
	{
		char	   *data;

		CHECK_FOR_INTERRUPTS();
		data = kl_read_checked_file(dir, b, f, true, &len, &problem);
		if (data == NULL)
			kl_compact_damaged(src, b, problem);
		if (len > 0)
			kl_batch_writer_append(w, f, data, len, b->files[f].lines);
		pfree(data);
	}
	pfree(path);
	pfree(dir);
}

/*
 * kl_compact_run
 *		Compact one run of batches of a partition (steps 1 to 4 of the file
 *		header) and report it.
 */
static void
kl_compact_run(KlCompactCall *call, int32 partition, List *run)
{
	KlSource   *src = call->src;
	KlBatch		nb;
	KlRecord   *recs;
	int			n = 0;
	int			k = 0;
	KlSha256   *h = kl_sha256_create();
	uint8		digest[KL_SHA256_LEN];
	char		hash12[13];
	KlBatchWriter *w;
	StringInfoData doc;
	StringInfoData topic_json;
	bool		first_entry = true;
	List	   *old_ids = NIL;
	ListCell   *cell;
	Datum		values[9];
	bool		nulls[9] = {0};

	/* what the new batch is, from the catalog: offsets, counts, dates, id */
	memset(&nb, 0, sizeof(nb));
	nb.topic = src->topic;
	nb.partition = partition;
	nb.first_offset = ((KlBatch *) linitial(run))->first_offset;
	nb.last_offset = ((KlBatch *) llast(run))->last_offset;
	nb.ncompacted_from = list_length(run);
	nb.compacted_from = palloc(sizeof(char *) * nb.ncompacted_from);
	nb.landed_by = "compact";
	/* written as the source writes its batches now: compact() can compress old ones */
	nb.compression = src->compression;
	/* the contract of the run (kl_compact_partition keeps runs to one) */
	nb.contract = ((KlBatch *) linitial(run))->contract;
	nb.contract_version = ((KlBatch *) linitial(run))->contract_version;
	foreach(cell, run)
	{
		KlBatch    *b = lfirst(cell);

		n += b->record_count;
		for (int f = 0; f < KL_NFILES; f++)
			nb.counts[f] += b->counts[f];
		if (b->has_dates)
		{
			nb.min_date = nb.has_dates ? Min(nb.min_date, b->min_date) : b->min_date;
			nb.max_date = nb.has_dates ? Max(nb.max_date, b->max_date) : b->max_date;
			nb.has_dates = true;
		}
		nb.compacted_from[k++] = b->batch_id;
		old_ids = lappend(old_ids, b->batch_id);
	}
	nb.record_count = n;

	recs = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(KlRecord) * n);
	k = 0;
	foreach(cell, run)
	{
		KlBatch    *b = lfirst(cell);

		for (int i = 0; i < b->record_count; i++, k++)
		{
			memset(&recs[k], 0, sizeof(KlRecord));
			recs[k].offset = b->offset_list ? b->offset_list[i] : b->first_offset + i;
			memcpy(recs[k].fingerprint, b->fingerprints + (Size) i * KL_SHA256_LEN, KL_SHA256_LEN);
			kl_sha256_update(h, recs[k].fingerprint, KL_SHA256_LEN);
		}
	}
	kl_sha256_final(h, digest);
	kl_hex(digest, 6, hash12);
	snprintf(nb.batch_id, sizeof(nb.batch_id), "%020lld-%020lld-%s",
			 (long long) nb.first_offset, (long long) nb.last_offset, hash12);

	/* step 1: write into a staging directory, which goes if we abort */
	w = kl_batch_writer_new(src, partition, nb.batch_id);
	kl_undo_remove_tree_at_abort(kl_batch_writer_staging(w), "compact()");
	kl_batch_writer_open(w);
	initStringInfo(&doc);
	kl_manifest_append_head(&doc, &nb);
	kl_batch_writer_append(w, KL_NFILES, doc.data, doc.len, 0);
	k = 0;
	foreach(cell, run)
	{
		KlBatch    *b = lfirst(cell);

		kl_compact_read_batch(call, w, b, recs + k, &first_entry);
		k += b->record_count;
	}
	kl_batch_writer_append(w, KL_NFILES, "\n", 1, 0);
	kl_batch_writer_close_records(w, &nb);
	initStringInfo(&topic_json);
	kl_json_append_string(&topic_json, src->topic, strlen(src->topic));
	resetStringInfo(&doc);
	kl_manifest_append_tail(&doc, &nb, topic_json.data);
	kl_batch_writer_append(w, KL_NFILES, doc.data, doc.len, 0);
	kl_batch_writer_close(w, &nb);
	kl_fault_point("compact_after_write");

	/* step 2: visible on disk; the catalog still lists the old batches */
	kl_batch_writer_publish(w, &nb);
	kl_undo_remove_tree_at_abort(kl_batch_writer_final(w), "compact()");
	kl_fault_point("compact_after_rename");

	/* step 3: the swap, in the caller's transaction */
	kl_catalog_swap_batches(src, old_ids, &nb, recs, n);
	kl_fault_point("compact_after_catalog");

	/* step 4: the old directories go once that has committed */
	if (kl_fault_take("compact_before_remove"))
		ereport(WARNING,
				(errmsg("kafka_lake fault injection: compact_before_remove"),
				 errdetail("The replaced batches of partition %d stay on disk, as a crash after the commit would leave them; recovery removes them.",
						   partition)));
	else
	{
		if (kl_fault_pausing("compact_before_remove"))
			kl_undo_pause_at_commit("compact_before_remove");
		k = 0;
		foreach(cell, run)
		{
			KlBatch    *b = lfirst(cell);

			kl_undo_remove_tree_at_commit(psprintf("%s/batch=%s", kl_partition_dir(src, partition),
												   b->batch_id),
										  src->source_id, "compact()");
			if (k++ > 0)
				continue;
			if (kl_fault_take("compact_during_remove"))
			{
				ereport(WARNING,
						(errmsg("kafka_lake fault injection: compact_during_remove"),
						 errdetail("Only the first replaced batch of partition %d is removed, as a crash in the middle of the removals would leave them; recovery removes the others.",
								   partition)));
				break;
			}
			if (kl_fault_pausing("compact_during_remove"))
				kl_undo_pause_at_commit("compact_during_remove");
		}
	}

	values[0] = CStringGetTextDatum(src->topic);
	values[1] = Int32GetDatum(partition);
	values[2] = CStringGetTextDatum(nb.batch_id);
	values[3] = CStringGetTextDatum("compacted");
	values[4] = Int32GetDatum(list_length(run));
	values[5] = Int32GetDatum(n);
	values[6] = Int64GetDatum(nb.first_offset);
	values[7] = Int64GetDatum(nb.last_offset);
	values[8] = Int64GetDatum(kl_batch_bytes(&nb));
	tuplestore_putvalues(call->out, call->desc, values, nulls);
}

/*
 * kl_compact_partition
 *		Find the runs of one partition the caller owns and compact each.
 */
static void
kl_compact_partition(KlCompactCall *call, int32 partition)
{
	KlBounds	bounds;
	int64		total;
	List	   *batches;
	List	   *run = NIL;
	int64		run_bytes = 0;
	int64		run_records = 0;
	KlBatch    *prev = NULL;
	ListCell   *cell;
	MemoryContext run_cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_lake compact run",
												  ALLOCSET_DEFAULT_SIZES);

	kl_recover_partition(call->src, partition, NULL, NULL);
	kl_bounds_init(&bounds);
	bounds.partition_lo = bounds.partition_hi = partition;
	bounds.topic = call->src->topic;
	if (call->by_date)
		bounds.date_lo = bounds.date_hi = call->date;
	batches = kl_catalog_scan_batches(call->src, &bounds,
									  KL_BATCH_WANT_FINGERPRINTS | KL_BATCH_WANT_SHA256, &total);

	/* a NULL after the last batch closes the last run */
	batches = lappend(batches, NULL);
	foreach(cell, batches)
	{
		KlBatch    *b = lfirst(cell);
		bool		ok = (b != NULL && kl_compactable(call, b));

		CHECK_FOR_INTERRUPTS();
		if (ok && run != NIL && prev->last_offset + 1 == b->first_offset &&
			kl_same_contract(prev, b) &&
			run_bytes + kl_batch_bytes(b) <= call->target_bytes &&
			run_records + b->record_count <= call->target_records)
		{
			run = lappend(run, b);
			run_bytes += kl_batch_bytes(b);
			run_records += b->record_count;
		}
		else
		{
			if (list_length(run) >= 2)
			{
				MemoryContext old = MemoryContextSwitchTo(run_cxt);

				kl_compact_run(call, partition, run);
				MemoryContextSwitchTo(old);
				MemoryContextReset(run_cxt);
			}
			run = ok ? list_make1(b) : NIL;
			run_bytes = ok ? kl_batch_bytes(b) : 0;
			run_records = ok ? b->record_count : 0;
		}
		prev = b;
	}
	MemoryContextDelete(run_cxt);
}

/*
 * kafka_lake_compact
 *		compact(source, partition, business_date, target_bytes,
 *		target_records): one row per batch made ("compacted"), and per
 *		partition another session owns ("locked").
 */
Datum
kafka_lake_compact(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KlCompactCall call = {0};
	KlSource   *source;
	List	   *partitions;
	ListCell   *cell;

	call.src = kl_source_arg(fcinfo, 0);
	call.by_date = !PG_ARGISNULL(2);
	if (call.by_date)
	{
		call.date = PG_GETARG_DATEADT(2);
		if (DATE_NOT_FINITE(call.date))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("business_date must be a finite date"),
					 errhint("Pass the business date whose batches to compact, or leave it out for every date.")));
	}
	call.target_bytes = PG_ARGISNULL(3) ? kl_batch_max_bytes : PG_GETARG_INT64(3);
	call.target_records = PG_ARGISNULL(4) ? kl_batch_max_records : PG_GETARG_INT32(4);
	if (call.target_bytes < 1024 || call.target_bytes > (int64) MaxAllocHugeSize / 4)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target_bytes must be between 1024 and %lld", (long long) (MaxAllocHugeSize / 4)),
				 errhint("Leave it out to use kafka_lake.batch_max_bytes: a compacted batch is read whole, like a landed one.")));
	if (call.target_records < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target_records must be at least 2"),
				 errhint("Leave it out to use kafka_lake.batch_max_records.")));

	kl_source_lock(call.src);
	kl_init_materialized_srf(fcinfo);
	call.out = rsinfo->setResult;
	call.desc = rsinfo->setDesc;

	if (!PG_ARGISNULL(1) && PG_GETARG_INT32(1) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition must not be negative")));

	/* topic by topic: the partition given, of each, or every partition */
	source = call.src;
	for (int t = 0; t < source->ntopics; t++)
	{
		call.src = kl_source_topic(source, t);
		if (!PG_ARGISNULL(1))
			partitions = list_make1_int(PG_GETARG_INT32(1));
		else
		{
			partitions = kl_catalog_partitions(call.src);
			list_sort(partitions, list_int_cmp);
		}

		foreach(cell, partitions)
		{
			int32		p = lfirst_int(cell);

			if (!kl_try_lock_partition(call.src, p))
			{
				Datum		values[9] = {0};
				bool		nulls[9] = {0};

				values[0] = CStringGetTextDatum(call.src->topic);
				values[1] = Int32GetDatum(p);
				values[3] = CStringGetTextDatum("locked");
				nulls[2] = nulls[4] = nulls[5] = nulls[6] = nulls[7] = nulls[8] = true;
				tuplestore_putvalues(call.out, call.desc, values, nulls);
				continue;
			}
			kl_compact_partition(&call, p);
		}
	}
	return (Datum) 0;
}
