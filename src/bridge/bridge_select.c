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
 * An entity stream's contract picks each key's latest event instead, not
 * its first (kl_entity_version: its order_by values as bytes that compare
 * as silver's columns do, the coordinate breaking a tie), so that silver
 * holds each entity's last version of the date, its deletion included.
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
#include "kl_catalog/contract_catalog.h"
#include "landing/batch_read.h"

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
kl_bridge_below_marks(const KlBridge *b, const KlBatch *batch, int32 partition, int64 offset)
{
	int			slot;

	if (b->through == NULL)
		return true;
	if (batch->topic_index < 0)
		return false;
	slot = b->through_base[batch->topic_index] + partition;
	return slot < b->through_base[batch->topic_index + 1] && offset < b->through[slot];
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
 * kl_field_is_kind
 *		Is a value written as kind is, without conversion?
 */
static inline bool
kl_field_is_kind(KlFieldKind kind, const KlJsonValue *v)
{
	switch (kind)
	{
		case KL_FIELD_STRING:
			return v->type == KL_JSON_STRING;
		case KL_FIELD_INTEGER:
			return v->type == KL_JSON_NUMBER && v->is_integer;
		case KL_FIELD_NUMBER:
			return v->type == KL_JSON_NUMBER;
		case KL_FIELD_BOOLEAN:
			return v->type == KL_JSON_TRUE || v->type == KL_JSON_FALSE;
		case KL_FIELD_JSON:
			return true;
	}
	return true;
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
	if (fd->mixed && !kl_field_is_kind(fd->kind, v))
	{
		/* a value of another version's kind: its landed JSON text */
		out->str = v->start;
		out->len = v->len;
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
 * A group of the selection: a landing batch and what reads its coordinates
 * in its place (the readmit units of it), merged by offset.  A unit whose
 * batch holds no event of the date is a group of its own.
 */
typedef struct KlSelGroup
{
	KlBatch    *batch;			/* the landing batch, or an orphan unit */
	List	   *units;			/* KlBatch: readmit units of batch */
	bool		promoted;		/* some duplicate line reads as accepted */
	int32		partition;
	int64		first_offset;
} KlSelGroup;

/* One line of a merged group, waiting for its turn */
typedef struct KlSelLine
{
	int64		offset;
	KlBatch    *batch;
	const char *text;
	size_t		len;
} KlSelLine;

/* An entity's latest version: the selected event, and its order's bytes */
typedef struct KlVersion
{
	int64		event;
	int			off;
	int			len;
} KlVersion;

/* The state of pass 1, shared by its per-line step */
typedef struct KlSel
{
	const KlLayout *lay;
	int			nf;
	int			ncol;
	StringInfoData *scratch;
	StringInfoData out;
	StringInfoData key;
	KlLine		line;
	KlSha256   *sha;
	KlKeySet	keys;
	KlCsvValue *values;
	TimestampTz *instants;
	DateADT    *written;
	bool	   *parsed;
	int			want;
	char		date_json[13];
	char		fingerprint[KL_SHA256_HEX_LEN + 1];
	KlUsedBatch *used;			/* of the batch being read */
	const KlBatch *used_of;
	MemoryContext batch_cxt;
	/* an entity stream: each key's latest version so far */
	StringInfoData order;		/* the version's order, as bytes */
	KlVersion  *latest;			/* by the value the key set keeps */
	int64		nlatest;
	int64		latest_cap;
	StringInfoData orders;		/* where their orders are */
} KlSel;

/*
 * kl_sel_group_compare
 *		Groups by (topic, partition, first offset), topics by their bytes.
 */
static int
kl_sel_group_compare(const ListCell *a, const ListCell *b)
{
	const KlSelGroup *x = lfirst(a);
	const KlSelGroup *y = lfirst(b);
	int			c = strcmp(x->batch->topic, y->batch->topic);

	if (c != 0)
		return c;
	if (x->partition != y->partition)
		return x->partition < y->partition ? -1 : 1;
	if (x->first_offset != y->first_offset)
		return x->first_offset < y->first_offset ? -1 : 1;
	return 0;
}

/*
 * kl_bridge_groups
 *		The batches as groups, in (partition, offset) order; a closing
 *		opens no group wholly past a partition's mark.
 */
static List *
kl_bridge_groups(KlBridge *b, List *batches)
{
	List	   *groups = NIL;
	List	   *result = NIL;
	ListCell   *cell;

	foreach(cell, batches)
	{
		KlBatch    *batch = lfirst(cell);
		KlSelGroup *g;

		if (batch->readmit)
			continue;
		g = palloc0(sizeof(KlSelGroup));
		g->batch = batch;
		g->partition = batch->partition;
		g->first_offset = batch->first_offset;
		g->promoted = batch->has_promoted;
		groups = lappend(groups, g);
	}
	foreach(cell, batches)
	{
		KlBatch    *unit = lfirst(cell);
		KlSelGroup *owner = NULL;
		ListCell   *gc;

		if (!unit->readmit)
			continue;
		foreach(gc, groups)
		{
			KlSelGroup *g = lfirst(gc);

			if (g->batch->partition == unit->partition &&
				strcmp(g->batch->topic, unit->topic) == 0 &&
				strcmp(g->batch->batch_id, unit->readmit_of) == 0)
				owner = g;
		}
		if (owner == NULL)
		{
			owner = palloc0(sizeof(KlSelGroup));
			owner->batch = unit;
			owner->partition = unit->partition;
			owner->first_offset = unit->first_offset;
			groups = lappend(groups, owner);
		}
		else
			owner->units = lappend(owner->units, unit);
		owner->promoted |= unit->has_promoted;
	}
	list_sort(groups, kl_sel_group_compare);
	foreach(cell, groups)
	{
		KlSelGroup *g = lfirst(cell);

		if (kl_bridge_below_marks(b, g->batch, g->partition, g->first_offset))
			result = lappend(result, g);
	}
	return result;
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
	(void) kl_reader_open_ahead(r, b->src, batch, KL_FILE_ACCEPTED, buffer, buffer_size, ra,
								false);
	MemoryContextSwitchTo(old);
}

/*
 * kl_bridge_line_selected
 *		Does the line just parsed, of file (KL_FILE_ACCEPTED or, for the
 *		lines that read as accepted, KL_FILE_DUPLICATES) of batch, belong to
 *		the date's selection?  Its event has the date, lies below the marks
 *		of a closing, and its coordinate reads as accepted: not demoted by
 *		recover(), not set aside by exclude(); a duplicate line only when
 *		exclude() promoted it.  *idx gets the coordinate's index.
 */
static bool
kl_bridge_line_selected(KlBridge *b, KlSel *st, const KlBatch *batch, int file, int *idx)
{
	const KlJsonValue *bd;
	char		letter;

	if (st->line.has_ids)
		bd = &st->line.business_date;
	else if (st->lay->bd_field >= 0)
		bd = &st->line.fields[st->lay->bd_field];
	else
	{
		kl_bad_line("the line has no business_date");
		bd = NULL;				/* keep compiler quiet */
	}
	if (bd->type != KL_JSON_STRING)
		kl_bad_line("event field \"business_date\" is not a string");
	if (!bd->has_escapes)
	{
		if (bd->len != 12 || memcmp(bd->start, st->date_json, 12) != 0)
			return false;
	}
	else
	{
		resetStringInfo(&st->scratch[st->nf]);
		kl_json_decode_string(bd, &st->scratch[st->nf]);
		if (strcmp(st->scratch[st->nf].data, b->date_text) != 0)
			return false;
	}
	if (!kl_bridge_below_marks(b, batch, batch->partition, st->line.offset))
		return false;
	*idx = kl_batch_coordinate_index(batch, st->line.offset);
	if (*idx < 0 || batch->fingerprints == NULL || *idx >= batch->nfingerprints)
		kl_bad_line(psprintf("offset %lld is not a coordinate of its batch",
							 (long long) st->line.offset));
	letter = batch->demoted_statuses ? batch->demoted_statuses[*idx] : 0;
	if (file == KL_FILE_DUPLICATES)
		return letter == KL_STATUS_PROMOTED;
	return letter != KL_STATUS_DEMOTED && letter != KL_STATUS_EXCLUDED;
}

/*
 * kl_order_int
 *		An int64 as 8 bytes that compare (memcmp) as the integers do.
 */
static inline void
kl_order_int(StringInfo o, int64 v)
{
	uint64		u = (uint64) v ^ (UINT64CONST(1) << 63);
	char		bytes[8];

	for (int i = 0; i < 8; i++)
		bytes[i] = (char) (u >> (56 - 8 * i));
	appendBinaryStringInfo(o, bytes, 8);
}

/*
 * kl_entity_version
 *		An entity stream's event (st->key holds its key): it becomes its
 *		key's latest version when its order (the order_by fields, as bytes
 *		that compare as silver's columns do: integers and instants as
 *		numbers, strings and dates by their bytes) is at least the latest's;
 *		a tie goes to it, the later coordinate, since events come in
 *		(partition, offset) order.  Deletions are versions like any other.
 */
static void
kl_entity_version(KlBridge *b, KlSel *st, const KlCsvValue *values)
{
	const KlLayout *lay = st->lay;
	StringInfo	o = &st->order;
	bool		is_new;
	int32	   *slot;
	KlVersion  *v;

	resetStringInfo(o);
	for (int k = 0; k < lay->norder; k++)
	{
		int			c = lay->order[k];
		const KlCsvValue *cv = &values[c];

		if (cv->is_int)
			kl_order_int(o, cv->ival);
		else if (lay->fields[c].date_time && !cv->is_null)
		{
			if (!st->parsed[c])
				kl_field_instant(&lay->fields[c], cv, &st->instants[c], &st->written[c]);
			st->parsed[c] = true;
			kl_order_int(o, st->instants[c]);
		}
		else
		{
			/* a contract's strings hold no NUL: the terminator sorts first */
			if (!cv->is_null)
				appendBinaryStringInfo(o, cv->str, cv->len);
			appendStringInfoChar(o, '\0');
		}
	}
	slot = kl_keyset_add(&st->keys, st->key.data, st->key.len, &is_new);
	if (is_new)
	{
		if (st->nlatest == st->latest_cap)
		{
			st->latest_cap = Max(st->latest_cap * 2, 1024);
			st->latest = st->latest ?
				repalloc_huge(st->latest, sizeof(KlVersion) * st->latest_cap) :
				MemoryContextAllocHuge(b->cxt, sizeof(KlVersion) * st->latest_cap);
		}
		if (st->nlatest >= PG_INT32_MAX)
			elog(ERROR, "too many entities in one date");
		*slot = (int32) st->nlatest;
		v = &st->latest[st->nlatest++];
		v->off = st->orders.len;
		v->len = o->len;
		v->event = b->selected;
		appendBinaryStringInfo(&st->orders, o->data, o->len);
		return;
	}
	v = &st->latest[*slot];
	{
		int			c = memcmp(o->data, st->orders.data + v->off, Min(o->len, v->len));

		if ((c != 0 ? c : o->len - v->len) < 0)
			return;
	}
	v->event = b->selected;
	if (o->len <= v->len)
		memcpy(st->orders.data + v->off, o->data, o->len);
	else
	{
		v->off = st->orders.len;
		appendBinaryStringInfo(&st->orders, o->data, o->len);
	}
	v->len = o->len;
}

/*
 * kl_bridge_take
 *		One selected event (the line parsed in st, coordinate idx of batch)
 *		becomes its canonical CSV line, and is counted for the source-side
 *		checks and the provenance.
 */
static inline void
kl_bridge_take(KlBridge *b, KlSel *st, const KlBatch *batch, int idx)
{
	const KlLayout *lay = st->lay;
	const KlJsonValue *f = st->line.fields;
	KlCsvValue *values = st->values;
	int			nf = st->nf;
	int			c_topic = nf,
				c_partition = nf + 1,
				c_offset = nf + 2,
				c_key = nf + 3,
				c_timestamp = nf + 4;

	/* the CSV line */
	for (int i = 0; i < nf; i++)
	{
		kl_field_value(&lay->fields[i], &f[i], &st->scratch[i], &values[i]);
		st->parsed[i] = false;
	}
	values[c_topic].str = batch->topic;
	values[c_topic].len = strlen(batch->topic);
	values[c_partition].ival = batch->partition;
	values[c_offset].ival = st->line.offset;
	values[c_key].is_null = false;
	if (st->line.key.type == KL_JSON_STRING)
		kl_json_text(&st->line.key, &st->scratch[nf],
					 &values[c_key].str, &values[c_key].len, "key");
	else if (st->line.key_base64.type == KL_JSON_STRING)
		kl_json_text(&st->line.key_base64, &st->scratch[nf],
					 &values[c_key].str, &values[c_key].len,
					 "key_base64");
	else
		values[c_key].is_null = true;
	values[c_timestamp].is_int = (st->line.timestamp_ms >= 0);
	values[c_timestamp].is_null = (st->line.timestamp_ms < 0);
	values[c_timestamp].ival = st->line.timestamp_ms;
	kl_hex(batch->fingerprints + (Size) idx * KL_SHA256_LEN, KL_SHA256_LEN, st->fingerprint);

	if (b->tmp_path == NULL)
	{
		kl_bridge_open_csv(b);
		appendStringInfoString(&st->out, lay->header);
	}
	kl_csv_append_values(&st->out, values, st->ncol);
	if (st->out.len >= KL_BRIDGE_WRITE_CHUNK)
	{
		kl_bridge_write(b, st->sha, &st->out);
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

		kl_field_instant(&lay->fields[ff], &values[ff], &st->instants[ff], &st->written[ff]);
		st->parsed[ff] = true;
		if (st->written[ff] < b->date - 1 || st->written[ff] > b->date + 1)
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
												 batch->partition, (long long) st->line.offset,
												 lay->fields[ff].name,
												 (int) Min(values[ff].len, 64),
												 values[ff].str));
			}
		}
	}
	if (lay->nnk > 0)
	{
		StringInfo	key = &st->key;

		resetStringInfo(key);
		for (int k = 0; k < lay->nnk; k++)
		{
			int			c = lay->nk[k];
			const KlCsvValue *v = &values[c];

			if (v->is_null)
			{
				uint32		l = PG_UINT32_MAX;

				appendBinaryStringInfo(key, (const char *) &l, sizeof(l));
			}
			else if (lay->fields[c].date_time)
			{
				if (!st->parsed[c])
					kl_field_instant(&lay->fields[c], v, &st->instants[c], &st->written[c]);
				st->parsed[c] = true;
				appendBinaryStringInfo(key, (const char *) &st->instants[c],
									   sizeof(TimestampTz));
			}
			else if (v->is_int)
				appendBinaryStringInfo(key, (const char *) &v->ival, sizeof(int64));
			else
				kl_keyset_append_part(key, v->str, v->len);
		}
		if (lay->entity)
			kl_entity_version(b, st, values);
		else
			kl_keyset_push(&st->keys, key->data, key->len, b->selected, kl_mark_first_seen, b);
	}
	else
		kl_mark_first_seen(b, b->selected);

	/* provenance: one entry per batch or unit, as its events go by */
	if (st->used == NULL || st->used_of != batch)
	{
		MemoryContext old = MemoryContextSwitchTo(b->cxt);

		st->used = NULL;
		if (st->used_of != batch)
		{
			ListCell   *uc;

			foreach(uc, b->used_batches)
			{
				KlUsedBatch *u = lfirst(uc);

				if (u->partition == batch->partition && strcmp(u->topic, batch->topic) == 0 &&
					strcmp(u->batch_id, batch->batch_id) == 0)
					st->used = u;
			}
		}
		if (st->used == NULL)
		{
			st->used = palloc0(sizeof(KlUsedBatch));
			strlcpy(st->used->batch_id, batch->batch_id, sizeof(st->used->batch_id));
			st->used->topic = batch->topic;
			st->used->partition = batch->partition;
			st->used->first_offset = st->line.offset;
			b->used_batches = lappend(b->used_batches, st->used);
		}
		st->used_of = batch;
		MemoryContextSwitchTo(old);
	}
	st->used->last_offset = st->line.offset;
	st->used->events++;
	if (b->selected == 0)
	{
		b->first_topic = batch->topic;
		b->first_partition = batch->partition;
		b->first_offset = st->line.offset;
	}
	b->last_topic = batch->topic;
	b->last_partition = batch->partition;
	b->last_offset = st->line.offset;
	b->selected++;
}

/*
 * kl_sel_line_compare
 *		Lines of a merged group by offset.
 */
static int
kl_sel_line_compare(const void *a, const void *b)
{
	int64		x = ((const KlSelLine *) a)->offset;
	int64		y = ((const KlSelLine *) b)->offset;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * kl_bridge_read_group
 *		The selected lines of a group that is more than one accepted.jsonl
 *		(a batch and its readmit units; a batch with promoted duplicates),
 *		by offset, each file checked and read whole.  With take false, only
 *		whether each member gives the date an event: *versions gets the
 *		members that do (kl_bridge_date_versions).
 */
static int64
kl_bridge_read_group(KlBridge *b, KlSel *st, KlSelGroup *g, bool take, List **members)
{
	List	   *files = NIL;
	KlSelLine  *lines = NULL;
	int			nlines = 0;
	int			cap = 0;
	int64		read = 0;
	ListCell   *cell;
	KlBatch   **batches = palloc(sizeof(KlBatch *) * (list_length(g->units) + 1));
	int			nbatches = 0;

	batches[nbatches++] = g->batch;
	foreach(cell, g->units)
		batches[nbatches++] = lfirst(cell);
	for (int i = 0; i < nbatches; i++)
	{
		KlBatch    *batch = batches[i];
		bool		hit = false;

		kl_check_manifest(b->src, batch);
		for (int file = KL_FILE_ACCEPTED; file <= KL_FILE_DUPLICATES; file++)
		{
			KlFileReader *r;
			const char *text;
			size_t		len;

			if (file == KL_FILE_DUPLICATES && !batch->has_promoted)
				continue;
			if (batch->counts[file] == 0)
				continue;
			r = palloc0(sizeof(KlFileReader));
			kl_reader_open(r, b->src, batch, file);
			r->errcallback.arg = r;
			r->errcallback.previous = error_context_stack;
			error_context_stack = &r->errcallback;
			while (kl_reader_next(r, &text, &len))
			{
				int			idx;

				if ((r->lineno & 1023) == 0)
					CHECK_FOR_INTERRUPTS();
				kl_line_parse(&st->line, text, len, st->want);
				if (!kl_bridge_line_selected(b, st, batch, file, &idx))
					continue;
				if (!take)
				{
					hit = true;
					break;
				}
				if (nlines == cap)
				{
					cap = Max(cap * 2, 256);
					lines = lines ? repalloc_huge(lines, sizeof(KlSelLine) * cap) :
						palloc_extended(sizeof(KlSelLine) * cap, MCXT_ALLOC_HUGE);
				}
				lines[nlines].offset = st->line.offset;
				lines[nlines].batch = batch;
				lines[nlines].text = text;
				lines[nlines].len = len;
				nlines++;
			}
			error_context_stack = r->errcallback.previous;
			read += r->lineno;
			files = lappend(files, r);
			if (hit)
				break;
		}
		if (hit && members)
			*members = lappend(*members, batch);
	}
	if (take && nlines > 0)
	{
		qsort(lines, nlines, sizeof(KlSelLine), kl_sel_line_compare);
		for (int i = 0; i < nlines; i++)
		{
			int			idx;

			if (i > 0 && lines[i].offset == lines[i - 1].offset)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("offset %lld of partition %d reads as accepted in two places",
								(long long) lines[i].offset, lines[i].batch->partition),
						 errdetail("Batch %s and readmit unit %s.", g->batch->batch_id,
								   lines[i].batch->batch_id),
						 errhint("Run kafka_lake.verify() on the source to list every problem.")));
			kl_line_parse(&st->line, lines[i].text, lines[i].len, st->want);
			idx = kl_batch_coordinate_index(lines[i].batch, st->line.offset);
			kl_bridge_take(b, st, lines[i].batch, idx);
		}
	}
	foreach(cell, files)
		kl_reader_close(lfirst(cell));
	return read;
}

/*
 * kl_sel_init
 *		The state of pass 1 for the layout of the date.
 */
static void
kl_sel_init(KlBridge *b, KlSel *st)
{
	const KlLayout *lay = b->layout;
	int			nf = lay->nfields;
	const char **field_names = palloc(sizeof(char *) * Max(nf, 1));

	memset(st, 0, sizeof(KlSel));
	st->lay = lay;
	st->nf = nf;
	st->ncol = lay->ncolumns;
	for (int i = 0; i < nf; i++)
		field_names[i] = lay->fields[i].name;
	kl_line_set_fields(&st->line, nf, field_names);
	st->scratch = palloc(sizeof(StringInfoData) * (nf + 1));
	for (int i = 0; i <= nf; i++)
		initStringInfo(&st->scratch[i]);
	st->want = lay->machine ? KL_WANT_KAFKA : (KL_WANT_KAFKA | KL_WANT_IDS);
	snprintf(st->date_json, sizeof(st->date_json), "\"%s\"", b->date_text);
}

/*
 * kl_bridge_date_versions
 *		The batches and units that give the date at least one event, when
 *		its candidate batches were judged by more than one contract version
 *		(NIL otherwise: then every candidate is judged by the one version).
 *		The layout of the date is made from the versions of these only, so
 *		that a batch whose business-date range spans the date without an
 *		event of it (a compacted one, say) does not change the date's CSV.
 */
static List *
kl_bridge_date_versions(KlBridge *b, List *batches, const KlLayout *probe)
{
	KlSel		st;
	List	   *members = NIL;
	ListCell   *cell;
	KlBatch    *first = NULL;
	bool		several = false;

	foreach(cell, batches)
	{
		KlBatch    *batch = lfirst(cell);

		if (first == NULL)
			first = batch;
		else if ((first->contract == NULL) != (batch->contract == NULL) ||
				 (first->contract && strcmp(first->contract, batch->contract) != 0) ||
				 first->contract_version != batch->contract_version)
			several = true;
	}
	if (!several)
		return NIL;
	b->layout = (KlLayout *) probe;
	kl_sel_init(b, &st);
	foreach(cell, kl_bridge_groups(b, batches))
		kl_bridge_read_group(b, &st, lfirst(cell), false, &members);
	b->layout = NULL;
	return members;
}

/*
 * kl_version_compare
 *		Contract versions, the newest first.
 */
static int
kl_version_compare(const ListCell *a, const ListCell *b)
{
	int32		x = lfirst_int(a);
	int32		y = lfirst_int(b);

	return x > y ? -1 : x < y ? 1 : 0;
}

/*
 * kl_bridge_date_layout
 *		The layout of the date: of the versions of the source's contract
 *		that judged its events (kl_layout_for).  Every batch that may hold
 *		an event of the date must have been judged by the source's contract,
 *		some version of it (0A000 otherwise, nothing written); when the
 *		candidates were judged by more than one version, the batches and
 *		readmit units that give the date an event are found first
 *		(kl_bridge_date_versions), so that the layout follows the events.
 */
KlLayout *
kl_bridge_date_layout(KlBridge *b, List *batches)
{
	MemoryContext old = MemoryContextSwitchTo(b->cxt);
	KlLayout   *lay;
	const KlContract *c = kl_source_contract(b->src);
	bool		machine = c->builtin && strcmp(c->name, KL_MACHINE_EVENT_V1) == 0;
	List	   *versions = NIL;
	List	   *members;
	ListCell   *cell;
	const KlContract **cs;
	const KlContract *probe;
	int			n = 0;
	int32		newest = 0;

	foreach(cell, batches)
	{
		KlBatch    *batch = lfirst(cell);
		bool		same;

		if (machine)
			same = kl_batch_is_machine_event_v1(batch);
		else
			same = batch->contract != NULL && strcmp(batch->contract, c->name) == 0;
		if (!same)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("business date %s of source \"%s\" has a batch judged by contract \"%s\" version %d",
							b->date_text, b->src->source,
							batch->contract ? batch->contract : KL_MACHINE_EVENT_V1,
							batch->contract ? batch->contract_version : 1),
					 errdetail("%s %s of partition %d; the source lands with contract \"%s\".",
							   batch->readmit ? "Readmit unit" : "Batch",
							   batch->batch_id, batch->partition, c->name),
					 errhint("bridge() reads the batches that some version of the source's contract judged; query the others through kafka_lake.%s_events.",
							 b->src->source)));
		if (!machine && batch->contract_version > newest)
			newest = batch->contract_version;
	}
	if (machine || batches == NIL)
	{
		lay = kl_layout_for(b->src, &c, 1);
		MemoryContextSwitchTo(old);
		return lay;
	}

	/* the versions that judged events of the date */
	probe = kl_contract_get(c->name, newest);
	members = kl_bridge_date_versions(b, batches, kl_layout_for(b->src, &probe, 1));
	if (members == NIL)
		members = batches;
	foreach(cell, members)
	{
		KlBatch    *batch = lfirst(cell);

		if (!list_member_int(versions, batch->contract_version))
			versions = lappend_int(versions, batch->contract_version);
	}
	list_sort(versions, kl_version_compare);
	cs = palloc(sizeof(KlContract *) * list_length(versions));
	foreach(cell, versions)
		cs[n++] = kl_contract_get(c->name, lfirst_int(cell));
	lay = kl_layout_for(b->src, cs, n);
	{
		StringInfoData v;

		initStringInfo(&v);
		for (int i = n - 1; i >= 0; i--)
			appendStringInfo(&v, "%s%d", v.len ? ", " : "", cs[i]->version);
		lay->date_versions = v.data;
	}
	MemoryContextSwitchTo(old);
	return lay;
}

/*
 * kl_bridge_select_events
 *		Pass 1.  Every accepted event of the date, in (partition, offset)
 *		order, becomes one canonical CSV line, written to a temporary file
 *		and hashed on the way (by the writing thread, bridge_adapter.c, one
 *		buffer while this fills the next); the source-side check numbers are
 *		counted at the same time.  A batch alone is read ahead on a thread
 *		while the one before is parsed; a group of a batch and its readmit
 *		units is read and merged by offset (kl_bridge_read_group).  ERROR
 *		P0002 when there is no event.
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
	KlSel		st;
	int			nf = lay->nfields;
	int			c_partition = nf + 1,
				c_offset = nf + 2,
				c_fingerprint = nf + 5;
	int64		capacity = 0;
	int64		lines_read = 0;
	uint8		digest[KL_SHA256_LEN];
	ListCell   *cell;
	List	   *groups;
	KlFileReader readers[2];
	char	   *buffers[2] = {NULL, NULL};
	size_t		buffer_sizes[2] = {0, 0};
	bool		ahead = false;	/* readers[cur] holds the group's batch */
	int			cur = 0;

	kl_sel_init(b, &st);
	st.batch_cxt = batch_cxt;
	st.sha = kl_sha256_create();
	st.values = palloc0(sizeof(KlCsvValue) * st.ncol);
	st.instants = palloc(sizeof(TimestampTz) * Max(nf, 1));
	st.written = palloc(sizeof(DateADT) * Max(nf, 1));
	st.parsed = palloc(sizeof(bool) * Max(nf, 1));
	initStringInfo(&st.out);
	enlargeStringInfo(&st.out, KL_BRIDGE_WRITE_CHUNK + 64 * 1024);
	initStringInfo(&st.key);
	if (lay->entity)
	{
		initStringInfo(&st.order);
		initStringInfo(&st.orders);
	}
	foreach(cell, batches)
		capacity += ((KlBatch *) lfirst(cell))->counts[KL_FILE_ACCEPTED];
	if (lay->nnk > 0)
		kl_keyset_create(&st.keys, keys_cxt, capacity);

	st.values[c_fingerprint].str = st.fingerprint;
	st.values[c_fingerprint].len = KL_SHA256_HEX_LEN;
	st.values[c_partition].is_int = true;
	st.values[c_offset].is_int = true;

	/* a batch alone is read ahead, then each next while one is used */
	groups = kl_bridge_groups(b, batches);
#define KL_GROUP_ALONE(g) ((g)->units == NIL && !(g)->promoted)
	cell = list_head(groups);
	if (cell && KL_GROUP_ALONE((KlSelGroup *) lfirst(cell)))
	{
		kl_bridge_read_ahead(b, ((KlSelGroup *) lfirst(cell))->batch, &readers[0],
							 &buffers[0], &buffer_sizes[0], ra);
		ahead = true;
	}
	for (; cell != NULL; cur = 1 - cur)
	{
		KlSelGroup *g = lfirst(cell);
		KlBatch    *batch = g->batch;
		KlFileReader reader;
		ListCell   *next = lnext(groups, cell);
		bool		was_ahead = ahead;
		const char *text;
		size_t		len;

		MemoryContextSwitchTo(batch_cxt);
		if (was_ahead)
		{
			if (!kl_reader_wait(&readers[cur], ra))
				kl_reader_open_buffer(&readers[cur], b->src, batch, KL_FILE_ACCEPTED,
									  &buffers[cur], &buffer_sizes[cur]);
			reader = readers[cur];
			reader.errcallback.arg = &reader;
		}
		ahead = false;
		if (next && KL_GROUP_ALONE((KlSelGroup *) lfirst(next)))
		{
			kl_bridge_read_ahead(b, ((KlSelGroup *) lfirst(next))->batch, &readers[1 - cur],
								 &buffers[1 - cur], &buffer_sizes[1 - cur], ra);
			ahead = true;
			/* the tests stop the bridge here, the read-ahead out */
			kl_fault_point("bridge_while_reading_ahead");
			kl_fault_point("cancel_bridge_while_reading_ahead");
		}
		cell = next;
		if (!was_ahead)
		{
			lines_read += kl_bridge_read_group(b, &st, g, true, NULL);
			MemoryContextSwitchTo(b->cxt);
			MemoryContextReset(batch_cxt);
			st.used = NULL;
			st.used_of = NULL;
			continue;
		}
		reader.errcallback.previous = error_context_stack;
		error_context_stack = &reader.errcallback;

		while (kl_reader_next(&reader, &text, &len))
		{
			int			idx;

			if ((reader.lineno & 1023) == 0)
				CHECK_FOR_INTERRUPTS();
			kl_line_parse(&st.line, text, len, st.want);
			if (kl_bridge_line_selected(b, &st, batch, KL_FILE_ACCEPTED, &idx))
				kl_bridge_take(b, &st, batch, idx);
		}

		error_context_stack = reader.errcallback.previous;
		lines_read += reader.lineno;
		kl_reader_close(&reader);
		MemoryContextSwitchTo(b->cxt);
		MemoryContextReset(batch_cxt);
		st.used = NULL;
		st.used_of = NULL;
	}
#undef KL_GROUP_ALONE
	for (int i = 0; i < 2; i++)
		if (buffers[i])
			pfree(buffers[i]);
	if (lay->nnk > 0 && lay->entity)
	{
		for (int64 i = 0; i < st.nlatest; i++)
			kl_mark_first_seen(b, st.latest[i].event);
		b->distinct_keys = st.nlatest;
	}
	else if (lay->nnk > 0)
	{
		kl_keyset_drain(&st.keys, kl_mark_first_seen, b);
		b->distinct_keys = st.keys.count;
	}
	else
		b->distinct_keys = b->selected;
	MemoryContextDelete(keys_cxt);
	ereport(DEBUG1,
			(errmsg_internal("kafka_lake bridge of \"%s\" %s: %lld accepted lines read, %lld of them parsed strictly",
							 b->src->source, b->date_text, (long long) lines_read,
							 (long long) st.line.parsed_strictly)));

	if (b->selected == 0 && !b->allow_empty)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("source \"%s\" has no accepted event with business_date %s",
						b->src->source, b->date_text),
				 errdetail("The source has %lld landed batches; none holds an accepted event of that date.",
						   (long long) b->total_batches),
				 errhint("Land the topic first with kafka_lake.land('%s'), or check the date: the foreign table kafka_lake.%s_records shows the business_date of every landed record.",
						 b->src->source, b->src->source)));

	/* an empty share of a date (allow_empty): a CSV of its header alone */
	if (b->tmp_path == NULL)
	{
		kl_bridge_open_csv(b);
		appendStringInfoString(&st.out, lay->header);
	}

	/* finish the file: the last bytes, the digest, fsync */
	kl_bridge_write(b, st.sha, &st.out);
	kl_bridge_write_wait(b);
	kl_sha256_final(st.sha, digest);
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
