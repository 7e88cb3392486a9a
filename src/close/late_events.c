/*-------------------------------------------------------------------------
 *
 * late_events.c
 *	  The events a closed date's certificate did not count: the function
 *	  behind the view kafka_lake.late_events.
 *
 * A late event is an accepted event of a date with a certificate in effect
 * (date_closings, not superseded: closed, or reopened since) that lies at or
 * past its partition's mark in that certificate, whether it landed before
 * the close (past a cutoff) or after it.  Those are exactly the accepted
 * events of the date that the certified snapshot did not select (the
 * closing's bridge selects below the marks, bridge_select.c).  A partition
 * the certificate does not name (the topic grew partitions since) has a
 * mark of 0: all its events of the date are late.  So are the events of a
 * readmit unit made after the certificate, wherever they lie: the certified
 * snapshot did not count them (they were quarantined then).  Coordinates
 * that recover() demoted are not accepted and are not listed.
 *
 * The business date of an event is in the landed line only (the line's own
 * business_date member, or for machine_event_v1 the event's field), so this
 * reads lines: for each certificate, the accepted.jsonl of the batches whose date
 * range holds the date and whose offsets reach past the partition's mark
 * (the catalog prunes the rest without opening them), each file checked
 * against the catalog's copy of its manifest before use (batch_read.c, as
 * the foreign table does).  A date closed long ago rarely has such a
 * batch: later batches hold later dates.  A batch whose record files
 * expire() removed has no lines left to tell an event's date: its late
 * events are no longer listed (the view lists what the landing still
 * holds, and stays readable once dates expired).
 *
 * The function is executable by everyone and answers only a role that may
 * read the view (source_status.c explains why), with the late events of the
 * sources that role may read (SELECT on kafka_lake.<source>_records).
 *
 * IDENTIFICATION
 *	  src/close/late_events.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/memutils.h"

#include "base/compat.h"
#include "base/json.h"
#include "bridge/catalog_close.h"
#include "contract/iso8601.h"
#include "format/batch_format.h"
#include "kafka/options.h"
#include "kl_catalog/catalog.h"
#include "landing/batch_read.h"
#include "landing/source_status.h"

PG_FUNCTION_INFO_V1(kafka_lake_late_event_list);

#define KL_LATE_NCOLUMNS	12

/* the event fields read, in this order */
static const char *const kl_late_fields[2] = {"business_date", "event_id"};

/*
 * kl_late_string
 *		The text of a string member (decoded when it has escapes).
 */
static char *
kl_late_string(const KlJsonValue *v)
{
	StringInfoData buf;

	if (v->type != KL_JSON_STRING)
		return NULL;
	if (!v->has_escapes)
		return pnstrdup(v->start + 1, v->len - 2);
	initStringInfo(&buf);
	kl_json_decode_string(v, &buf);
	return buf.data;
}

/*
 * kl_late_events_of
 *		The late events of one certificate, into the result.
 */
static void
kl_late_events_of(ReturnSetInfo *rsinfo, const KlClosing *c, KlLine *line,
				  MemoryContext batch_cxt)
{
	KlSource   *src = kl_source_lookup(c->source);
	KlBounds	bounds;
	List	   *batches;
	int64		total;
	char		date_text[KL_DATE_TEXT_LEN];
	ListCell   *cell;

	kl_date_text(c->business_date, date_text);

	kl_bounds_init(&bounds);
	bounds.date_lo = bounds.date_hi = c->business_date;
	bounds.files[KL_FILE_DUPLICATES] = false;
	bounds.files[KL_FILE_QUARANTINE] = false;
	batches = kl_catalog_scan_batches(src, &bounds, 0, &total);

	foreach(cell, batches)
	{
		KlBatch    *batch = lfirst(cell);
		int			slot = kl_closing_slot(c, batch->topic, batch->partition);
		int64		through = (slot >= 0 && c->through_offset[slot] >= 0) ?
			c->through_offset[slot] : 0;
		KlFileReader reader;
		const char *text;
		size_t		len;
		MemoryContext old;

		/* a unit made after the certificate re-admitted below the marks */
		bool		unit_after = batch->readmit && batch->landed_at > c->closed_at;

		if ((batch->last_offset < through && !unit_after) ||
			batch->counts[KL_FILE_ACCEPTED] == 0 || batch->expired)
			continue;
		old = MemoryContextSwitchTo(batch_cxt);
		kl_check_manifest(src, batch);
		kl_reader_open(&reader, src, batch, KL_FILE_ACCEPTED);
		reader.errcallback.previous = error_context_stack;
		error_context_stack = &reader.errcallback;
		while (kl_reader_next(&reader, &text, &len))
		{
			Datum		values[KL_LATE_NCOLUMNS];
			bool		nulls[KL_LATE_NCOLUMNS] = {0};
			char	   *date;
			char	   *event_id;
			int			idx;

			if ((reader.lineno & 1023) == 0)
				CHECK_FOR_INTERRUPTS();
			kl_line_parse(line, text, len, KL_WANT_KAFKA | KL_WANT_IDS);
			if (line->offset < through && !unit_after)
				continue;
			/* the line's own ids, or (machine_event_v1) the event's */
			date = kl_late_string(line->has_ids ? &line->business_date : &line->fields[0]);
			if (date == NULL || strcmp(date, date_text) != 0)
				continue;
			idx = kl_batch_coordinate_index(batch, line->offset);
			if (idx >= 0 && batch->demoted_statuses &&
				(batch->demoted_statuses[idx] == KL_STATUS_DEMOTED ||
				 batch->demoted_statuses[idx] == KL_STATUS_EXCLUDED))
				continue;
			event_id = kl_late_string(line->has_ids ? &line->event_id : &line->fields[1]);

			values[0] = CStringGetTextDatum(c->source);
			values[1] = DateADTGetDatum(c->business_date);
			values[2] = Int64GetDatum(c->closing_id);
			values[3] = TimestampTzGetDatum(c->closed_at);
			values[4] = CStringGetTextDatum(c->status);
			values[5] = CStringGetTextDatum(batch->topic);
			values[6] = Int32GetDatum(batch->partition);
			values[7] = Int64GetDatum(line->offset);
			values[8] = Int64GetDatum(through);
			if (event_id)
				values[9] = CStringGetTextDatum(event_id);
			else
				nulls[9] = true;
			values[10] = Int64GetDatum(line->timestamp_ms);
			nulls[10] = (line->timestamp_ms < 0);
			values[11] = CStringGetTextDatum(batch->batch_id);
			MemoryContextSwitchTo(old);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			MemoryContextSwitchTo(batch_cxt);
		}
		error_context_stack = reader.errcallback.previous;
		kl_reader_close(&reader);
		MemoryContextSwitchTo(old);
		MemoryContextReset(batch_cxt);
	}
}

/*
 * kafka_lake_late_event_list
 *		late_event_list(): every late event of every certificate in effect
 *		(source, business_date, closing_id, closed_at, closing_status,
 *		topic, partition, offset, through_offset, event_id, timestamp_ms,
 *		batch_id).  Behind kafka_lake.late_events.
 */
Datum
kafka_lake_late_event_list(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext batch_cxt;
	KlLine		line;
	List	   *closings;
	ListCell   *cell;

	kl_check_view_reader("late_events");
	kl_init_materialized_srf(fcinfo);
	closings = kl_catalog_closings_in_effect();
	if (closings == NIL)
		return (Datum) 0;

	memset(&line, 0, sizeof(line));
	kl_line_set_fields(&line, 2, (const char **) kl_late_fields);
	batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_lake late events batch",
									  ALLOCSET_DEFAULT_SIZES);
	foreach(cell, closings)
	{
		const KlClosing *c = lfirst(cell);

		/* event_ids and coordinates are the source's data: its readers only */
		if (kl_role_may_read_source(c->source, GetUserId()))
			kl_late_events_of(rsinfo, c, &line, batch_cxt);
	}
	MemoryContextDelete(batch_cxt);
	return (Datum) 0;
}
