/*-------------------------------------------------------------------------
 *
 * bridge_select.c
 *	  Step 3 of the bridge, pass 1: the batches of the date, every accepted
 *	  event of the date in (partition, offset) order, each one canonical CSV
 *	  line streamed to the adapter's temporary file and through SHA-256
 *	  (source_hash), and the numbers of the source-side checks.
 *
 * The batches are those of the catalog under a snapshot taken after the
 * lock and after recovery (so that a bridge that waited for another sees
 * what that one saw, and adopted batches count).  Each batch's manifest and
 * accepted.jsonl are checked against the catalog's copy of the manifest
 * before its first line is used (batch_read.c: manifest size and CRC-32C;
 * file size, lines, CRC-32C; a mismatch is XX001; the next batch's file is
 * read and checked on a read-ahead thread while this one is parsed, so a
 * damaged batch can be reported before the lines of the one before it are
 * all read: the call fails either way), and the lines are read
 * by the fast path of batch_format.c, which takes every line land() writes
 * (a DEBUG1 line counts the lines it did not take).  Kept: the lines whose
 * event has the date, except coordinates that recover() demoted, and, when
 * close_date() bridges, except what lies at or past a partition's mark (a
 * batch wholly past it is not opened).  No event
 * is ERROR P0002, and nothing was written (the temporary file is created at
 * the first selected event).  A date with a batch whose record files
 * expire() removed is refused (55000) before anything is read.
 *
 * The columns are the contract's (its layout, bridge_define.c): its fields
 * in its "columns" order, the event_id and schema_version fields last, then
 * the Kafka provenance; for machine_event_v1 exactly the seed's.  A field is
 * written by its kind: strings decoded, integers in decimal, other numbers
 * and booleans as landed, objects, arrays and fields of several types as
 * their landed JSON text, null or absent as an empty field.
 *
 * The natural keys.  A set of the contract's natural key (machine_event_v1:
 * work_order_id, machine_id, event_time; a date-time part as an instant)
 * (keyset.c, through its prefetch pipeline) marks the first event of each
 * key in a bitmap, one bit per selected event: pass 2 loads only those into
 * silver, and their count is what row_count_source_to_silver expects.  A
 * contract without natural key dedupes by coordinate: every event is first.
 * freshness_business_date counts here the events whose first date-time
 * field (machine_event_v1: event_time) is not written within one day of
 * the date.
 *
 * IDENTIFICATION
 *	  src/bridge/bridge_select.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "base/digest.h"
#include "base/fault.h"
#include "base/json.h"
#include "base/keyset.h"
#include "bridge/bridge.h"
#include "bridge/csv.h"
#include "contract/contract.h"
#include "format/batch_format.h"
#include "kl_catalog/catalog.h"
#include "landing/batch_read.h"

/*
 * kl_bridge_check_contracts
 *		The CSV's columns are those of the source's contract: a date with
 *		batches that another contract judged (a source moved from one
 *		contract to another by alter_source), or with records readmit()
 *		re-admitted, is refused (0A000) before anything is written.  Versions
 *		of the source's contract mix: a field an older version lacks is an
 *		empty field.
 */
static void
kl_bridge_check_contracts(KlBridge *b, List *batches)
{
	ListCell   *cell;
	bool		machine = b->layout->machine;

	foreach(cell, batches)
	{
		KlBatch    *batch = lfirst(cell);
		bool		same;

		if (machine)
			same = kl_batch_is_machine_event_v1(batch);
		else
			same = batch->contract != NULL &&
				strcmp(batch->contract, b->layout->contract->name) == 0;
		if (batch->readmit || !same)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("business date %s of source \"%s\" has %s",
							b->date_text, b->src->source,
							batch->readmit ? "records that readmit() re-admitted" :
							psprintf("a batch judged by contract \"%s\" version %d",
									 batch->contract ? batch->contract : KL_MACHINE_EVENT_V1,
									 batch->contract ? batch->contract_version : 1)),
					 errdetail("Batch %s of partition %d; the source lands with contract \"%s\".",
							   batch->batch_id, batch->partition, b->layout->contract->name),
					 errhint("bridge() reads batches that the source's contract judged as they landed; query the others through kafka_lake.%s_events.",
							 b->src->source)));
	}
}

/*
 * kl_bridge_scan
 *		The batches that may hold accepted events of the date, under a
 *		snapshot taken now: after the lock, so that a bridge that waited for
 *		another sees what that one saw, and after recovery, so that adopted
 *		batches count.
 */
List *
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
	batches = kl_catalog_scan_batches(b->src, &bounds, KL_BATCH_WANT_FINGERPRINTS,
									  &b->total_batches);
	PopActiveSnapshot();

	/* a date whose records expired is refused, not bridged from what is left */
	{
		List	   *expired = NIL;
		ListCell   *cell;

		foreach(cell, batches)
		{
			KlBatch    *batch = lfirst(cell);

			if (batch->expired && batch->counts[KL_FILE_ACCEPTED] > 0)
				expired = lappend(expired, batch);
		}
		kl_refuse_expired(b->src, expired, "bridge");
	}
	kl_bridge_check_contracts(b, batches);
	return batches;
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
 * kl_bridge_below_marks
 *		Does a closing of the date select this coordinate?  A closing
 *		(close.c) selects only what lies below each partition's mark; a
 *		plain bridge selects everything.
 */
static inline bool
kl_bridge_below_marks(const KlBridge *b, int32 partition, int64 offset)
{
	if (b->through == NULL)
		return true;
	return partition < b->nthrough && offset < b->through[partition];
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
 * kl_field_value
 *		One event field as the CSV writes it (see the file header).
 */
static inline void
kl_field_value(const KlBridgeField *fd, const KlJsonValue *v, StringInfo scratch,
			   KlCsvValue *out)
{
	out->is_null = false;
	out->is_int = false;
	if (v->type == KL_JSON_NULL)
	{
		out->is_null = true;
		out->len = 0;
		return;
	}
	switch (fd->kind)
	{
		case KL_FIELD_STRING:
			kl_json_text(v, scratch, &out->str, &out->len, fd->name);
			break;
		case KL_FIELD_INTEGER:
			out->is_int = true;
			out->ival = kl_json_int(v, fd->name);
			break;
		case KL_FIELD_NUMBER:
			if (v->type != KL_JSON_NUMBER)
				kl_bad_line(psprintf("event field \"%s\" is not a number", fd->name));
			out->str = v->start;
			out->len = v->len;
			break;
		case KL_FIELD_BOOLEAN:
			if (v->type != KL_JSON_TRUE && v->type != KL_JSON_FALSE)
				kl_bad_line(psprintf("event field \"%s\" is not a boolean", fd->name));
			out->str = v->start;
			out->len = v->len;
			break;
		case KL_FIELD_JSON:
			out->str = v->start;
			out->len = v->len;
			break;
	}
}

/*
 * kl_field_instant
 *		A date-time field as an instant, and the day it is written in.
 */
static void
kl_field_instant(const KlBridgeField *fd, const KlCsvValue *v, TimestampTz *instant,
				 DateADT *written_day)
{
	if (kl_parse_iso_timestamp(v->str, (int) v->len, true, instant,
							   written_day) != KL_ISO_VALID)
		kl_bad_line(psprintf("%s is not an ISO-8601 timestamp with a time zone", fd->name));
}

/*
 * kl_bridge_next_batch
 *		The first batch from cell on that the selection opens (a closing
 *		opens no batch wholly past a partition's mark).
 */
static ListCell *
kl_bridge_next_batch(KlBridge *b, List *batches, ListCell *cell)
{
	for (; cell != NULL; cell = lnext(batches, cell))
	{
		KlBatch    *batch = lfirst(cell);

		if (kl_bridge_below_marks(b, batch->partition, batch->first_offset))
			return cell;
	}
	return NULL;
}

/*
 * kl_bridge_read_ahead
 *		Check a batch's manifest, then start reading its accepted.jsonl on
 *		the read-ahead thread (batch_read.c), into a buffer of the call's
 *		(the reader and its path live as long as the call, not the batch).
 */
static void
kl_bridge_read_ahead(KlBridge *b, KlBatch *batch, KlFileReader *r, char **buffer,
					 size_t *buffer_size, KlReadAhead *ra)
{
	MemoryContext old = MemoryContextSwitchTo(b->cxt);

	kl_check_manifest(b->src, batch);
	kl_reader_open_ahead(r, b->src, batch, KL_FILE_ACCEPTED, buffer, buffer_size, ra);
	MemoryContextSwitchTo(old);
}

/*
 * kl_bridge_select_events
 *		Pass 1.  Every accepted event of the date, in (partition, offset)
 *		order, becomes one canonical CSV line, written to a temporary file
 *		and hashed on the way (by the writing thread, bridge_adapter.c, one
 *		buffer while this fills the next); the source-side check numbers are
 *		counted at the same time.  ERROR P0002 when there is no event.
 */
static void
kl_bridge_select_events(KlBridge *b, List *batches, KlReadAhead *ra)
{
	MemoryContext batch_cxt = AllocSetContextCreate(b->cxt, "kafka_lake bridge batch",
													ALLOCSET_DEFAULT_SIZES);
	MemoryContext keys_cxt = AllocSetContextCreate(b->cxt, "kafka_lake bridge keys",
												   ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(b->cxt);
	const KlLayout *lay = b->layout;
	int			nf = lay->nfields;
	int			ncol = lay->ncolumns;
	int			c_topic = nf,
				c_partition = nf + 1,
				c_offset = nf + 2,
				c_key = nf + 3,
				c_timestamp = nf + 4,
				c_fingerprint = nf + 5;
	const char **field_names = palloc(sizeof(char *) * Max(nf, 1));
	StringInfoData *scratch = palloc(sizeof(StringInfoData) * (nf + 1));
	StringInfoData out;
	StringInfoData key;
	KlLine		line;
	KlSha256   *sha = kl_sha256_create();
	KlKeySet	keys;
	KlCsvValue *values = palloc0(sizeof(KlCsvValue) * ncol);
	TimestampTz *instants = palloc(sizeof(TimestampTz) * Max(nf, 1));
	DateADT    *written = palloc(sizeof(DateADT) * Max(nf, 1));
	bool	   *parsed = palloc(sizeof(bool) * Max(nf, 1));
	int			want = lay->machine ? KL_WANT_KAFKA : (KL_WANT_KAFKA | KL_WANT_IDS);
	char		date_json[13];
	char		fingerprint[KL_SHA256_HEX_LEN + 1];
	int64		capacity = 0;
	int64		lines_read = 0;
	uint8		digest[KL_SHA256_LEN];
	ListCell   *cell;
	KlFileReader readers[2];
	char	   *buffers[2] = {NULL, NULL};
	size_t		buffer_sizes[2] = {0, 0};

	for (int i = 0; i < nf; i++)
		field_names[i] = lay->fields[i].name;
	memset(&line, 0, sizeof(line));
	kl_line_set_fields(&line, nf, field_names);
	for (int i = 0; i <= nf; i++)
		initStringInfo(&scratch[i]);
	initStringInfo(&out);
	enlargeStringInfo(&out, KL_BRIDGE_WRITE_CHUNK + 64 * 1024);
	initStringInfo(&key);
	snprintf(date_json, sizeof(date_json), "\"%s\"", b->date_text);
	foreach(cell, batches)
		capacity += ((KlBatch *) lfirst(cell))->counts[KL_FILE_ACCEPTED];
	if (lay->nnk > 0)
		kl_keyset_create(&keys, keys_cxt, capacity);

	values[c_topic].str = b->src->topic;
	values[c_topic].len = strlen(b->src->topic);
	values[c_fingerprint].str = fingerprint;
	values[c_fingerprint].len = KL_SHA256_HEX_LEN;
	values[c_partition].is_int = true;
	values[c_offset].is_int = true;

	/* the first batch's file is read ahead, then each next while one is used */
	cell = kl_bridge_next_batch(b, batches, list_head(batches));
	if (cell)
		kl_bridge_read_ahead(b, lfirst(cell), &readers[0], &buffers[0], &buffer_sizes[0], ra);
	for (int cur = 0; cell != NULL; cur = 1 - cur)
	{
		KlBatch *batch = lfirst(cell);
		KlUsedBatch *used = NULL;
		KlFileReader reader;
		const char *text;
		size_t		len;

		MemoryContextSwitchTo(batch_cxt);
		kl_reader_wait(&readers[cur], ra);
		reader = readers[cur];
		reader.errcallback.arg = &reader;
		cell = kl_bridge_next_batch(b, batches, lnext(batches, cell));
		if (cell)
		{
			kl_bridge_read_ahead(b, lfirst(cell), &readers[1 - cur], &buffers[1 - cur],
								 &buffer_sizes[1 - cur], ra);
			/* the tests stop the bridge here, the read-ahead out */
			kl_fault_point("bridge_while_reading_ahead");
			kl_fault_point("cancel_bridge_while_reading_ahead");
		}
		reader.errcallback.previous = error_context_stack;
		error_context_stack = &reader.errcallback;

		while (kl_reader_next(&reader, &text, &len))
		{
			const KlJsonValue *f = line.fields;
			const KlJsonValue *bd;
			int			idx;

			if ((reader.lineno & 1023) == 0)
				CHECK_FOR_INTERRUPTS();
			kl_line_parse(&line, text, len, want);

			/* only events of the date, and not demoted coordinates */
			if (line.has_ids)
				bd = &line.business_date;
			else if (lay->bd_field >= 0)
				bd = &f[lay->bd_field];
			else
			{
				kl_bad_line("the line has no business_date");
				bd = NULL;		/* keep compiler quiet */
			}
			if (bd->type != KL_JSON_STRING)
				kl_bad_line("event field \"business_date\" is not a string");
			if (!bd->has_escapes)
			{
				if (bd->len != 12 || memcmp(bd->start, date_json, 12) != 0)
					continue;
			}
			else
			{
				resetStringInfo(&scratch[nf]);
				kl_json_decode_string(bd, &scratch[nf]);
				if (strcmp(scratch[nf].data, b->date_text) != 0)
					continue;
			}
			if (!kl_bridge_below_marks(b, batch->partition, line.offset))
				continue;
			idx = kl_batch_coordinate_index(batch, line.offset);
			if (idx < 0 || batch->fingerprints == NULL || idx >= batch->nfingerprints)
				kl_bad_line(psprintf("offset %lld is not a coordinate of its batch",
									 (long long) line.offset));
			if (batch->demoted_statuses && batch->demoted_statuses[idx] == KL_STATUS_DEMOTED)
				continue;

			/* the CSV line */
			for (int i = 0; i < nf; i++)
			{
				kl_field_value(&lay->fields[i], &f[i], &scratch[i], &values[i]);
				parsed[i] = false;
			}
			values[c_partition].ival = batch->partition;
			values[c_offset].ival = line.offset;
			values[c_key].is_null = false;
			if (line.key.type == KL_JSON_STRING)
				kl_json_text(&line.key, &scratch[nf],
							 &values[c_key].str, &values[c_key].len, "key");
			else if (line.key_base64.type == KL_JSON_STRING)
				kl_json_text(&line.key_base64, &scratch[nf],
							 &values[c_key].str, &values[c_key].len,
							 "key_base64");
			else
				values[c_key].is_null = true;
			values[c_timestamp].is_int = (line.timestamp_ms >= 0);
			values[c_timestamp].is_null = (line.timestamp_ms < 0);
			values[c_timestamp].ival = line.timestamp_ms;
			kl_hex(batch->fingerprints + (Size) idx * KL_SHA256_LEN, KL_SHA256_LEN, fingerprint);

			if (b->tmp_path == NULL)
			{
				kl_bridge_open_csv(b);
				appendStringInfoString(&out, lay->header);
			}
			kl_csv_append_values(&out, values, ncol);
			if (out.len >= KL_BRIDGE_WRITE_CHUNK)
			{
				kl_bridge_write(b, sha, &out);
				/* the tests stop the bridge here, a buffer out to the writer */
				kl_fault_point("bridge_while_writing_csv");
				kl_fault_point("cancel_bridge_while_writing_csv");
			}

			if (b->selected / 8 >= b->first_seen_cap)
			{
				int64		cap = Max(b->first_seen_cap * 2, 8192);

				b->first_seen = b->first_seen ?
					repalloc_huge(b->first_seen, cap) :
					MemoryContextAllocHuge(b->cxt, cap);
				memset(b->first_seen + b->first_seen_cap, 0, cap - b->first_seen_cap);
				b->first_seen_cap = cap;
			}

			/* source-side check numbers: natural keys, freshness */
			if (lay->fresh_field >= 0 && !values[lay->fresh_field].is_null)
			{
				int			ff = lay->fresh_field;

				kl_field_instant(&lay->fields[ff], &values[ff], &instants[ff], &written[ff]);
				parsed[ff] = true;
				if (written[ff] < b->date - 1 || written[ff] > b->date + 1)
				{
					if (b->stale_events++ == 0)
					{
						const KlCsvValue *id = lay->id_field >= 0 ? &values[lay->id_field] : NULL;
						char		idbuf[24];
						const char *id_text = "";
						int			id_len = 0;

						if (id && id->is_int)
						{
							snprintf(idbuf, sizeof(idbuf), INT64_FORMAT, id->ival);
							id_text = idbuf;
							id_len = strlen(idbuf);
						}
						else if (id && !id->is_null)
						{
							id_text = id->str;
							id_len = (int) Min(id->len, 200);
						}
						b->stale_example =
							MemoryContextStrdup(b->cxt,
												psprintf("event %.*s at partition %d offset %lld has %s %.*s",
														 id_len, id_text,
														 batch->partition, (long long) line.offset,
														 lay->fields[ff].name,
														 (int) Min(values[ff].len, 64),
														 values[ff].str));
					}
				}
			}
			if (lay->nnk > 0)
			{
				resetStringInfo(&key);
				for (int k = 0; k < lay->nnk; k++)
				{
					int			c = lay->nk[k];
					const KlCsvValue *v = &values[c];

					if (v->is_null)
					{
						uint32		l = PG_UINT32_MAX;

						appendBinaryStringInfo(&key, (const char *) &l, sizeof(l));
					}
					else if (lay->fields[c].date_time)
					{
						if (!parsed[c])
							kl_field_instant(&lay->fields[c], v, &instants[c], &written[c]);
						parsed[c] = true;
						appendBinaryStringInfo(&key, (const char *) &instants[c],
											   sizeof(TimestampTz));
					}
					else if (v->is_int)
						appendBinaryStringInfo(&key, (const char *) &v->ival, sizeof(int64));
					else
						kl_keyset_append_part(&key, v->str, v->len);
				}
				kl_keyset_push(&keys, key.data, key.len, b->selected, kl_mark_first_seen, b);
			}
			else
				kl_mark_first_seen(b, b->selected);

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
	for (int i = 0; i < 2; i++)
		if (buffers[i])
			pfree(buffers[i]);
	if (lay->nnk > 0)
	{
		kl_keyset_drain(&keys, kl_mark_first_seen, b);
		b->distinct_keys = keys.count;
	}
	else
		b->distinct_keys = b->selected;
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
	kl_bridge_write_wait(b);
	kl_sha256_final(sha, digest);
	kl_hex(digest, KL_SHA256_LEN, b->source_hash);
	kl_bridge_close_csv(b);
	MemoryContextSwitchTo(old);
}

/*
 * kl_bridge_select
 *		Pass 1 (kl_bridge_select_events), with the writing thread stopped and
 *		joined before any error goes on: no thread outlives the call or
 *		touches the buffers and the file after an ERROR or a cancel.
 */
void
kl_bridge_select(KlBridge *b, List *batches)
{
	KlReadAhead *ra = MemoryContextAllocZero(b->cxt, sizeof(KlReadAhead));

	PG_TRY();
	{
		kl_bridge_select_events(b, batches, ra);
	}
	PG_CATCH();
	{
		kl_reader_stop(ra);
		kl_bridge_write_stop(b);
		PG_RE_THROW();
	}
	PG_END_TRY();
}
