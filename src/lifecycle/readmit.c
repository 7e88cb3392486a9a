/*-------------------------------------------------------------------------
 *
 * readmit.c
 *	  kafka_lake.readmit(source, ...): quarantined records judged again,
 *	  from the landing, by the source's current contract.
 *
 * WHY FROM THE LANDING
 *
 * A quarantine line keeps the record as it came (its value, base64 where it
 * is not text, its key, timestamp and headers), so a record refused by one
 * contract can be judged by a fixed one without the broker: it works after
 * the topic's retention dropped it.  Each record rebuilt from its line is
 * checked against the fingerprint the catalog holds for its coordinate (a
 * line that does not give back the landed record is XX001), then judged.
 *
 * WHAT IT WRITES
 *
 * Landed files never change (I4).  The records the contract accepts now
 * become a readmit unit: a directory readmit=<first>-<last>-<hash12> next
 * to the batch they came from, written like a batch (accepted.jsonl and
 * duplicates.jsonl in the layout land() writes, an empty quarantine.jsonl,
 * a manifest whose entries name the coordinates and their fingerprints,
 * with "kind": "readmit", "readmit_of": the batch, and the contract and
 * version that judged them), fsynced and renamed into place as a batch is
 * (landing_files.c).  Then, in the caller's transaction, the catalog
 * records the unit (kafka_lake.batches, kind 'readmit'; its coordinates row
 * is outside the exclusion constraint) and gives the original coordinates
 * the status letter 'R': the foreign table skips their quarantine lines and
 * reads the unit's lines instead.  recover() rebuilds all of it from disk
 * (recover.c): a unit directory the catalog lacks is adopted, and marks its
 * originals again.
 *
 * An event_id is still accepted once per source (I3): a re-admitted
 * event whose event_id was accepted anywhere (by a batch, an earlier unit,
 * or an earlier record of this call) lands as duplicate_event_id, and the
 * accepted ones are reserved in accepted_events before the unit is written,
 * as land() does.  Records the contract still refuses stay quarantined, as
 * they are.  Running readmit() again judges only what is still quarantined:
 * with the same contract, nothing changes.
 *
 * A partition another session is landing is skipped ("locked"), as land()
 * skips it; each partition is recovered first.  A batch whose record files
 * expire() removed has no quarantine lines left to judge: it is reported
 * ("expired", with the number of its records still quarantined) and
 * skipped.
 *
 * IDENTIFICATION
 *	  src/lifecycle/readmit.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/base64.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "base/compat.h"
#include "base/digest.h"
#include "contract/contract.h"
#include "contract/contract_define.h"
#include "format/batch_format.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/contract_catalog.h"
#include "kafka/registry.h"
#include "kl_catalog/locks.h"
#include "landing/avro_land.h"
#include "landing/batch_read.h"
#include "landing/landing_files.h"
#include "landing/recover.h"
#include "landing/source_lock.h"

PG_FUNCTION_INFO_V1(kafka_lake_readmit);

/* One call */
typedef struct KlReadmit
{
	KlSource   *src;
	const KlContract *contract;
	KlAvroLanding *avro;		/* an Avro contract's writer programs, or NULL */
	KlPool	   *events;
	KlPool	   *scratch;
	Tuplestorestate *out;
	TupleDesc	desc;
	int64		from;			/* offsets to consider */
	int64		to;
} KlReadmit;

/* Hash entry for event_ids within a batch */
typedef struct KlReadmitSeen
{
	pg_uuid_t	key;
	int			index;
} KlReadmitSeen;

/*
 * kl_emit_readmit_row
 *		One row: a batch whose quarantined records were judged again.
 */
static void
kl_emit_readmit_row(KlReadmit *rc, const KlBatch *b, const char *unit, const char *status,
					int judged, int accepted, int duplicates)
{
	Datum		values[9];
	bool		nulls[9] = {0};

	values[0] = CStringGetTextDatum(rc->src->topic);
	values[1] = Int32GetDatum(b->partition);
	if (unit)
		values[2] = CStringGetTextDatum(unit);
	else
		nulls[2] = true;
	values[3] = CStringGetTextDatum(b->batch_id);
	values[4] = CStringGetTextDatum(status);
	values[5] = Int32GetDatum(judged);
	values[6] = Int32GetDatum(accepted);
	values[7] = Int32GetDatum(duplicates);
	values[8] = Int32GetDatum(judged - accepted - duplicates);
	tuplestore_putvalues(rc->out, rc->desc, values, nulls);
}

/*
 * kl_json_bytes
 *		The bytes a landed line keeps as text (a JSON string) or as base64;
 *		NULL when it has neither (a null key, a tombstone).
 */
static const char *
kl_json_bytes(const KlJsonValue *text, const KlJsonValue *b64, size_t *len, const char *what)
{
	StringInfoData buf;

	if (b64->type == KL_JSON_STRING)
	{
		char	   *dst;
		int			n;

		initStringInfo(&buf);
		kl_json_decode_string(b64, &buf);
		dst = palloc(pg_b64_dec_len(buf.len) + 1);
		n = pg_b64_decode(buf.data, buf.len, dst, pg_b64_dec_len(buf.len));
		if (n < 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("landed line holds invalid base64 in its %s", what),
					 errhint("Run kafka_lake.verify() on the source to check its files against their SHA-256.")));
		*len = n;
		return dst;
	}
	if (text->type == KL_JSON_STRING)
	{
		initStringInfo(&buf);
		kl_json_decode_string(text, &buf);
		*len = buf.len;
		return buf.data;
	}
	*len = 0;
	return NULL;
}

/*
 * kl_line_headers
 *		The Kafka headers of a landed line's envelope.
 */
static void
kl_line_headers(const KlJsonValue *headers, KlRecord *r)
{
	KlJsonReader it;
	KlJsonValue h;
	int			cap = 4;

	r->nheaders = 0;
	r->headers = NULL;
	if (headers->type != KL_JSON_ARRAY)
		return;
	r->headers = palloc(sizeof(KlHeader) * cap);
	kl_json_array_open(&it, headers->start, headers->start + headers->len, KL_JSON_MAX_DEPTH);
	while (kl_json_array_next(&it, &h))
	{
		KlJsonReader m;
		KlJsonValue k;
		KlJsonValue v;
		KlJsonValue key = {KL_JSON_NULL},
					key64 = {KL_JSON_NULL},
					val = {KL_JSON_NULL},
					val64 = {KL_JSON_NULL};
		KlHeader   *hd;
		size_t		len;

		if (h.type != KL_JSON_OBJECT)
			continue;
		kl_json_object_open(&m, h.start, h.start + h.len, KL_JSON_MAX_DEPTH);
		while (kl_json_object_next(&m, &k, &v))
		{
			if (kl_json_key_is(&k, "key", 3))
				key = v;
			else if (kl_json_key_is(&k, "key_base64", 10))
				key64 = v;
			else if (kl_json_key_is(&k, "value", 5))
				val = v;
			else if (kl_json_key_is(&k, "value_base64", 12))
				val64 = v;
		}
		if (r->nheaders == cap)
		{
			cap *= 2;
			r->headers = repalloc((KlHeader *) r->headers, sizeof(KlHeader) * cap);
		}
		hd = (KlHeader *) &r->headers[r->nheaders++];
		hd->name = kl_json_bytes(&key, &key64, &len, "header name");
		if (hd->name == NULL)
			hd->name = "";
		else
			hd->name = pnstrdup(hd->name, len);
		hd->value = kl_json_bytes(&val, &val64, &hd->value_len, "header value");
	}
}

/*
 * kl_readmit_batch
 *		Judge again the quarantined records of one batch (within the call's
 *		offsets) that no unit re-admitted yet; write a readmit unit of those
 *		the contract accepts, and record it.
 */
static void
kl_readmit_batch(KlReadmit *rc, const KlBatch *b)
{
	KlSource   *src = rc->src;
	KlFileReader reader;
	KlLine		line;
	const char *text;
	size_t		len;
	int			cap = 64;
	int			n = 0;
	int			judged = 0;
	int			candidates = 0;
	KlRecord   *recs = palloc0(sizeof(KlRecord) * cap);
	HASHCTL		ctl;
	HTAB	   *seen;
	KlBatch		unit;
	int64	   *offsets;
	int			accepted = 0;
	int			duplicates = 0;

	kl_check_manifest(src, b);
	memset(&line, 0, sizeof(line));
	kl_line_set_fields(&line, 0, NULL);
	kl_reader_open(&reader, src, b, KL_FILE_QUARANTINE);
	reader.errcallback.previous = error_context_stack;
	error_context_stack = &reader.errcallback;
	kl_pool_reset(rc->events);
	while (kl_reader_next(&reader, &text, &len))
	{
		KlRecord   *r;
		int			idx;

		if ((reader.lineno & 255) == 0)
			CHECK_FOR_INTERRUPTS();
		kl_line_parse(&line, text, len, KL_WANT_KAFKA | KL_WANT_QUARANTINE);
		if (line.offset < rc->from || line.offset > rc->to)
			continue;
		idx = kl_batch_coordinate_index(b, line.offset);
		if (idx < 0 || b->fingerprints == NULL || idx >= b->nfingerprints)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("landed line at offset %lld is not a coordinate of batch %s",
							(long long) line.offset, b->batch_id),
					 errhint("Run kafka_lake.verify('%s').", src->source)));
		if (b->demoted_statuses && b->demoted_statuses[idx] == KL_STATUS_READMITTED)
			continue;			/* a unit re-admitted it already */

		if (n == cap)
		{
			cap *= 2;
			recs = repalloc(recs, sizeof(KlRecord) * cap);
			memset(recs + n, 0, sizeof(KlRecord) * (cap - n));
		}
		r = &recs[n];
		memset(r, 0, sizeof(KlRecord));
		r->offset = line.offset;
		r->timestamp_ms = line.timestamp_ms;
		r->key = kl_json_bytes(&line.key, &line.key_base64, &r->key_len, "key");
		r->value = kl_json_bytes(&line.raw_value, &line.raw_value_base64, &r->value_len, "value");
		kl_line_headers(&line.headers, r);

		/* the line must give back the very record that landed */
		kl_fingerprint(src->topic, b->partition, r->offset, r->key, r->key_len,
					   r->value, r->value_len, r->fingerprint);
		if (memcmp(r->fingerprint, b->fingerprints + (Size) idx * KL_SHA256_LEN, KL_SHA256_LEN) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the quarantine line at offset %lld of batch %s of source \"%s\" does not give back the landed record",
							(long long) r->offset, b->batch_id, src->source),
					 errdetail("Its key and value do not have the fingerprint the catalog recorded for the coordinate."),
					 errhint("Run kafka_lake.verify('%s'), which says what to do.", src->source)));
		judged++;
		if (rc->avro != NULL ?
			kl_avro_judge_record(rc->avro, r, rc->events, rc->scratch,
								 TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
															 KL_REGISTRY_DEFAULT_TIMEOUT_MS)) != NULL :
			kl_judge_record(rc->contract, r, rc->events, rc->scratch) != NULL)
			continue;			/* still refused: it stays as it is */
		r->status = KL_STATUS_ACCEPTED;
		n++;
	}
	error_context_stack = reader.errcallback.previous;
	kl_reader_close(&reader);
	if (judged == 0)
		return;
	if (n == 0)
	{
		kl_emit_readmit_row(rc, b, NULL, "unchanged", judged, 0, 0);
		return;
	}

	/* event_ids: once within the unit, then against the catalog (I3) */
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(pg_uuid_t);
	ctl.entrysize = sizeof(KlReadmitSeen);
	ctl.hcxt = CurrentMemoryContext;
	seen = hash_create("kafka_lake readmit event_ids", Max(n, 16), &ctl,
					   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	for (int i = 0; i < n; i++)
	{
		KlRecord   *r = &recs[i];
		KlReadmitSeen *e;
		bool		found;

		if (r->event.event_id == NULL)
			continue;
		kl_event_key(src->source_id, src->ordered_keys, r->event.event_id, r->event.event_id_len, &r->event_key);
		e = hash_search(seen, &r->event_key, HASH_ENTER, &found);
		if (found)
		{
			r->status = KL_STATUS_DUPLICATE;
			r->dup_partition = b->partition;
			r->dup_offset = recs[e->index].offset;
			r->dup_topic = NULL;
		}
		else
		{
			e->index = i;
			candidates++;
		}
	}
	if (candidates > 0)
	{
		kl_catalog_reserve_events(src, b->partition, recs, n);
		/* a later copy of a demoted first points where the catalog points */
		for (int i = 0; i < n; i++)
		{
			if (recs[i].status != KL_STATUS_DUPLICATE || recs[i].dup_partition != b->partition ||
				recs[i].dup_topic != NULL)
				continue;
			for (int j = 0; j < i; j++)
			{
				if (recs[j].offset == recs[i].dup_offset && recs[j].status == KL_STATUS_DUPLICATE)
				{
					recs[i].dup_partition = recs[j].dup_partition;
					recs[i].dup_offset = recs[j].dup_offset;
					recs[i].dup_topic = recs[j].dup_topic;
					break;
				}
			}
		}
	}
	for (int i = 0; i < n; i++)
	{
		if (recs[i].status == KL_STATUS_ACCEPTED)
			accepted++;
		else
			duplicates++;
	}

	/* the unit: durable on disk, then in the catalog, originals marked R */
	kl_write_unit(src, b->partition, recs, n, rc->contract->name, rc->contract->version,
				  b->batch_id, &unit);
	unit.landed_by = "readmit";
	kl_catalog_insert_batch(src, &unit, recs, n);
	offsets = palloc(sizeof(int64) * n);
	for (int i = 0; i < n; i++)
		offsets[i] = recs[i].offset;
	kl_catalog_mark_readmitted(src, b->batch_id, offsets, n, true);
	kl_emit_readmit_row(rc, b, unit.batch_id, "readmitted", judged, accepted, duplicates);
}

/*
 * kl_readmit_partition
 *		Every batch of a partition (of the call's offsets) that has
 *		quarantined records.
 */
static void
kl_readmit_partition(KlReadmit *rc, int32 partition)
{
	KlBounds	bounds;
	int64		total;
	ListCell   *cell;
	MemoryContext batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_lake readmit batch",
													ALLOCSET_DEFAULT_SIZES);

	kl_recover_partition(rc->src, partition, NULL, NULL);
	kl_bounds_init(&bounds);
	bounds.partition_lo = bounds.partition_hi = partition;
	bounds.topic = rc->src->topic;
	bounds.offset_lo = rc->from;
	bounds.offset_hi = rc->to;
	bounds.files[KL_FILE_ACCEPTED] = false;
	bounds.files[KL_FILE_DUPLICATES] = false;
	foreach(cell, kl_catalog_scan_batches(rc->src, &bounds, KL_BATCH_WANT_FINGERPRINTS, &total))
	{
		KlBatch    *b = lfirst(cell);
		MemoryContext old;

		if (b->readmit || b->counts[KL_FILE_QUARANTINE] == 0)
			continue;
		if (b->expired)
		{
			/* its quarantine lines went with expire(): nothing can be judged */
			int			still = b->counts[KL_FILE_QUARANTINE];

			if (b->demoted_statuses)
			{
				still = 0;
				for (int i = 0; i < b->record_count; i++)
					still += (b->demoted_statuses[i] == KL_STATUS_QUARANTINED);
			}
			if (still > 0)
				kl_emit_readmit_row(rc, b, NULL, "expired", still, 0, 0);
			continue;
		}
		old = MemoryContextSwitchTo(batch_cxt);
		kl_readmit_batch(rc, b);
		MemoryContextSwitchTo(old);
		MemoryContextReset(batch_cxt);
	}
	MemoryContextDelete(batch_cxt);
}

/*
 * kafka_lake_readmit
 *		readmit(source, partition, from_offset, to_offset): judge the
 *		source's quarantined records again with its current contract.
 */
Datum
kafka_lake_readmit(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KlReadmit	rc = {0};
	KlSource   *source;
	List	   *partitions;
	ListCell   *cell;

	rc.src = kl_source_arg(fcinfo, 0);
	rc.from = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT64(2);
	rc.to = PG_ARGISNULL(3) ? PG_INT64_MAX : PG_GETARG_INT64(3);
	if (rc.from < 0 || rc.to < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("offsets must not be negative"),
				 errhint("Kafka offsets start at 0; leave the offsets out for every quarantined record.")));
	if (rc.to < rc.from)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("to_offset %lld is before from_offset %lld", (long long) rc.to, (long long) rc.from),
				 errhint("The range is inclusive: from_offset <= to_offset.")));
	if (!PG_ARGISNULL(1) && PG_GETARG_INT32(1) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition must not be negative")));
	if (!kl_catalog_has_contracts())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this database's kafka_lake catalog has no readmit units"),
				 errhint("Run ALTER EXTENSION kafka_lake UPDATE first.")));

	kl_source_lock(rc.src);
	rc.contract = kl_source_contract(rc.src);
	kl_contract_judgeable(rc.contract);
	if (rc.contract->avro != NULL)
		rc.avro = kl_avro_landing_begin(rc.contract, rc.src->server, CurrentMemoryContext);
	rc.events = kl_pool_create(CurrentMemoryContext, 1024 * 1024);
	rc.scratch = kl_pool_create(CurrentMemoryContext, 256 * 1024);
	kl_init_materialized_srf(fcinfo);
	rc.out = rsinfo->setResult;
	rc.desc = rsinfo->setDesc;

	/* topic by topic: the partition given, of each, or every partition */
	source = rc.src;
	for (int t = 0; t < source->ntopics; t++)
	{
		rc.src = kl_source_topic(source, t);
		if (!PG_ARGISNULL(1))
			partitions = list_make1_int(PG_GETARG_INT32(1));
		else
		{
			partitions = kl_disk_partitions(rc.src);
			foreach(cell, kl_catalog_partitions(rc.src))
				partitions = list_append_unique_int(partitions, lfirst_int(cell));
			list_sort(partitions, list_int_cmp);
		}
		foreach(cell, partitions)
		{
			int32		p = lfirst_int(cell);

			if (!kl_try_lock_partition(rc.src, p))
			{
				Datum		values[9];
				bool		nulls[9] = {false, false, true, true, false, false, false, false, false};

				values[0] = CStringGetTextDatum(rc.src->topic);
				values[1] = Int32GetDatum(p);
				values[4] = CStringGetTextDatum("locked");
				values[5] = values[6] = values[7] = values[8] = Int32GetDatum(0);
				tuplestore_putvalues(rc.out, rc.desc, values, nulls);
				continue;
			}
			kl_readmit_partition(&rc, p);
		}
	}
	return (Datum) 0;
}
