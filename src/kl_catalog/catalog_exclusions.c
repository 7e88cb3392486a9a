/*-------------------------------------------------------------------------
 *
 * catalog_exclusions.c
 *	  The catalog of exclusions (exclude.c, exclusion_files.c): the rows of
 *	  kafka_lake.exclusions, one per exclusion unit, the status letters 'X'
 *	  (accepted on disk, set aside) and 'P' (a duplicate on disk, accepted
 *	  since) in kafka_lake.coordinates, and the row of kafka_lake.
 *	  accepted_events that says which coordinate holds an event_id.
 *
 * Each letter is changed from the letter it must have (the coordinates row
 * locked FOR UPDATE, so a concurrent change is seen), and the holder of an
 * event_id is read with the newest snapshot, as the landing's probes do:
 * what another session committed while this one waited for its locks
 * counts.
 *
 * IDENTIFICATION
 *	  src/kl_catalog/catalog_exclusions.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/uuid.h"

#include "base/digest.h"
#include "format/batch_format.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/catalog_exclusions.h"

/*
 * kl_xspi
 *		Run a parameterised statement; ERROR unless it returns expected.
 *		latest: with the newest snapshot (what other sessions committed
 *		since this statement began counts).
 */
static void
kl_xspi(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls,
		int expected, bool latest)
{
	int			rc;

	if (latest)
	{
		SPIPlanPtr	plan = SPI_prepare(sql, nargs, types);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for: %s", sql);
		CommandCounterIncrement();
		rc = SPI_execute_snapshot(plan, values, nulls, GetLatestSnapshot(), InvalidSnapshot,
								  false, true, 0);
		SPI_freeplan(plan);
	}
	else
		rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);
	if (rc != expected)
		elog(ERROR, "unexpected SPI result %s for: %s", SPI_result_code_string(rc), sql);
}

/*
 * kl_catalog_has_exclusions
 *		Does the catalog have kafka_lake.exclusions (version 1.3 on)?
 */
bool
kl_catalog_has_exclusions(void)
{
	Oid			nsp = get_namespace_oid("kafka_lake", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("exclusions", nsp));
}

/*
 * kl_catalog_exclusions
 *		Every exclusion unit of a source the catalog records, by seq; each
 *		knows whether an unexclude undid it.
 */
List *
kl_catalog_exclusions(KlSource *src)
{
	MemoryContext caller = CurrentMemoryContext;
	KlCatalogSave cs;
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(src->source_id)};
	List	   *result = NIL;

	if (!kl_catalog_has_exclusions())
		return NIL;
	cs = kl_catalog_begin();
	kl_xspi("SELECT e.exclusion_id, e.seq, e.kind = 'unexclude', e.topic, e.event_id,"
			" e.partition, e.\"offset\", e.batch_id, e.letters,"
			" e.promoted_partition, e.promoted_offset, e.promoted_batch_id, e.promoted_letters,"
			" e.undoes, e.reason, e.created_by::text,"
			" pg_catalog.to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
			" e.manifest_sha256, e.manifest_bytes, e.landed_by,"
			" EXISTS (SELECT 1 FROM kafka_lake.exclusions u WHERE u.source_id = e.source_id"
			"         AND u.undoes = e.exclusion_id),"
			" pg_catalog.encode(e.fingerprint, 'hex'), pg_catalog.encode(e.promoted_fingerprint, 'hex')"
			" FROM kafka_lake.exclusions e WHERE e.source_id = $1 ORDER BY e.seq",
			1, types, values, NULL, SPI_OK_SELECT, true);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tup = SPI_tuptable->vals[row];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(caller);
		KlExclusion *x = palloc0(sizeof(KlExclusion));
		bool		isnull;
		char	   *s;

		strlcpy(x->exclusion_id, SPI_getvalue(tup, desc, 1), sizeof(x->exclusion_id));
		x->seq = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
		x->undo = DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull));
		x->topic = SPI_getvalue(tup, desc, 4);
		x->event_id = SPI_getvalue(tup, desc, 5);
		x->nchanges = 1;
		for (int c = 0; c < 2; c++)
		{
			KlExclusionChange *ch = &x->changes[c];
			int			base = 6 + 4 * c;

			(void) SPI_getbinval(tup, desc, base, &isnull);
			if (isnull)
				continue;
			x->nchanges = c + 1;
			ch->partition = DatumGetInt32(SPI_getbinval(tup, desc, base, &isnull));
			ch->offset = DatumGetInt64(SPI_getbinval(tup, desc, base + 1, &isnull));
			strlcpy(ch->batch_id, SPI_getvalue(tup, desc, base + 2), sizeof(ch->batch_id));
			s = SPI_getvalue(tup, desc, base + 3);
			ch->from = s[0];
			ch->to = s[1];
			s = SPI_getvalue(tup, desc, 22 + c);
			if (s)
				kl_unhex(s, KL_SHA256_LEN, ch->fingerprint);
		}
		x->undoes = SPI_getvalue(tup, desc, 14);
		x->reason = SPI_getvalue(tup, desc, 15);
		x->created_by = SPI_getvalue(tup, desc, 16);
		x->created_at = SPI_getvalue(tup, desc, 17);
		strlcpy(x->manifest_sha256, SPI_getvalue(tup, desc, 18), sizeof(x->manifest_sha256));
		x->manifest_bytes = DatumGetInt64(SPI_getbinval(tup, desc, 19, &isnull));
		x->landed_by = SPI_getvalue(tup, desc, 20);
		x->undone = DatumGetBool(SPI_getbinval(tup, desc, 21, &isnull));
		result = lappend(result, x);
		MemoryContextSwitchTo(old);
	}
	kl_catalog_end(cs);
	return result;
}

/*
 * kl_catalog_next_exclusion_seq
 *		The seq of the source's next exclusion unit (the caller holds the
 *		source's exclusion lock).
 */
int64
kl_catalog_next_exclusion_seq(KlSource *src)
{
	KlCatalogSave cs;
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(src->source_id)};
	bool		isnull;
	int64		seq;

	cs = kl_catalog_begin();
	kl_xspi("SELECT COALESCE(pg_catalog.max(seq), 0) + 1 FROM kafka_lake.exclusions"
			" WHERE source_id = $1", 1, types, values, NULL, SPI_OK_SELECT, true);
	seq = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	kl_catalog_end(cs);
	return seq;
}

/*
 * kl_catalog_insert_exclusion
 *		Record an exclusion unit (its letters and its event_id are changed
 *		by the caller).
 */
void
kl_catalog_insert_exclusion(KlSource *src, const KlExclusion *x)
{
	KlCatalogSave cs;
	Oid			types[23] = {INT4OID, TEXTOID, INT8OID, TEXTOID, TEXTOID, TEXTOID,
		INT4OID, INT8OID, TEXTOID, TEXTOID, BYTEAOID,
		INT4OID, INT8OID, TEXTOID, TEXTOID, BYTEAOID,
	TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID};
	Datum		values[23];
	char		nulls[24];

	memset(nulls, ' ', 23);
	nulls[23] = '\0';
	values[0] = Int32GetDatum(src->source_id);
	values[1] = CStringGetTextDatum(x->exclusion_id);
	values[2] = Int64GetDatum(x->seq);
	values[3] = CStringGetTextDatum(x->undo ? "unexclude" : "exclude");
	values[4] = CStringGetTextDatum(x->topic);
	if (x->event_id)
		values[5] = CStringGetTextDatum(x->event_id);
	else
		nulls[5] = 'n';
	for (int c = 0; c < 2; c++)
	{
		int			base = 6 + 5 * c;
		const KlExclusionChange *ch = &x->changes[c];

		if (c >= x->nchanges)
		{
			for (int k = 0; k < 5; k++)
				nulls[base + k] = 'n';
			continue;
		}
		{
			char		letters[3] = {ch->from, ch->to, '\0'};
			bytea	   *fp = palloc(VARHDRSZ + KL_SHA256_LEN);

			SET_VARSIZE(fp, VARHDRSZ + KL_SHA256_LEN);
			memcpy(VARDATA(fp), ch->fingerprint, KL_SHA256_LEN);
			values[base] = Int32GetDatum(ch->partition);
			values[base + 1] = Int64GetDatum(ch->offset);
			values[base + 2] = CStringGetTextDatum(ch->batch_id);
			values[base + 3] = CStringGetTextDatum(letters);
			values[base + 4] = PointerGetDatum(fp);
		}
	}
	if (x->undoes)
		values[16] = CStringGetTextDatum(x->undoes);
	else
		nulls[16] = 'n';
	values[17] = CStringGetTextDatum(x->reason);
	values[18] = CStringGetTextDatum(x->created_by);
	values[19] = CStringGetTextDatum(x->created_at);
	values[20] = CStringGetTextDatum(x->manifest_sha256);
	values[21] = Int64GetDatum(x->manifest_bytes);
	values[22] = CStringGetTextDatum(x->landed_by);
	cs = kl_catalog_begin();
	kl_xspi("INSERT INTO kafka_lake.exclusions (source_id, exclusion_id, seq, kind, topic, event_id,"
			" partition, \"offset\", batch_id, letters, fingerprint,"
			" promoted_partition, promoted_offset, promoted_batch_id, promoted_letters, promoted_fingerprint,"
			" undoes, reason, created_by, created_at, manifest_sha256, manifest_bytes, landed_by)"
			" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,"
			" $17, $18, $19::name, $20::timestamptz, $21, $22, $23)",
			23, types, values, nulls, SPI_OK_INSERT, false);
	kl_catalog_end(cs);
}

/*
 * kl_coordinate_index_in
 *		The index of offset in a coordinates row (its lower bound, its
 *		offset_list or NULL, its number of letters); -1 when it is none.
 */
static int
kl_coordinate_index_in(int64 offset, int64 lo, const int64 *list, int nlist)
{
	if (list == NULL)
		return (offset >= lo && offset < lo + nlist) ? (int) (offset - lo) : -1;
	for (int k = 0; k < nlist; k++)
	{
		if (list[k] == offset)
			return k;
	}
	return -1;
}

/*
 * kl_read_letters
 *		The letters of a batch's coordinates row (NULL when it has none),
 *		and the index of offset in them (-1: not one of its coordinates).
 *		Runs inside a catalog section.
 */
static char *
kl_read_letters(KlSource *src, const char *batch_id, int64 offset, bool for_update, int *idx)
{
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2];
	char	   *statuses;
	int64		lo;
	int64	   *list = NULL;
	bool		isnull;
	Datum		d;

	values[0] = Int32GetDatum(src->source_id);
	values[1] = CStringGetTextDatum(batch_id);
	kl_xspi(for_update ?
			"SELECT statuses, pg_catalog.lower(offsets), offset_list FROM kafka_lake.coordinates"
			" WHERE source_id = $1 AND batch_id = $2 FOR UPDATE" :
			"SELECT statuses, pg_catalog.lower(offsets), offset_list FROM kafka_lake.coordinates"
			" WHERE source_id = $1 AND batch_id = $2",
			2, types, values, NULL, SPI_OK_SELECT, !for_update);
	*idx = -1;
	if (SPI_processed != 1)
		return NULL;
	statuses = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	lo = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull);
	if (!isnull)
	{
		Datum	   *elems;
		int			nelems;

		deconstruct_array(DatumGetArrayTypeP(d), INT8OID, 8, true, TYPALIGN_DOUBLE,
						  &elems, NULL, &nelems);
		list = palloc(sizeof(int64) * nelems);
		for (int i = 0; i < nelems; i++)
			list[i] = DatumGetInt64(elems[i]);
	}
	*idx = kl_coordinate_index_in(offset, lo, list, strlen(statuses));
	return statuses;
}

/*
 * kl_catalog_letter
 *		The letter of a coordinate in a batch's coordinates row; '\0' when
 *		the catalog has no such coordinate.  for_update locks the row.
 */
char
kl_catalog_letter(KlSource *src, const char *batch_id, int64 offset, bool for_update)
{
	KlCatalogSave cs;
	int			idx;
	char	   *statuses;
	char		letter;

	cs = kl_catalog_begin();
	statuses = kl_read_letters(src, batch_id, offset, for_update, &idx);
	letter = (statuses == NULL || idx < 0) ? '\0' : statuses[idx];
	kl_catalog_end(cs);
	return letter;
}

/*
 * kl_catalog_set_letter
 *		Give a coordinate the letter to; ERROR (55000) when its letter is
 *		not from (another session changed it, or the catalog lost it).
 */
void
kl_catalog_set_letter(KlSource *src, const char *batch_id, int64 offset, char from, char to)
{
	KlCatalogSave cs;
	Oid			types[3] = {INT4OID, TEXTOID, TEXTOID};
	Datum		values[3];
	int			idx;
	char	   *statuses;

	cs = kl_catalog_begin();
	statuses = kl_read_letters(src, batch_id, offset, true, &idx);
	if (statuses == NULL || idx < 0 || statuses[idx] != from)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("offset %lld of batch %s of source \"%s\" changed while it was being excluded",
						(long long) offset, batch_id, src->source),
				 errdetail("Its status letter is %s, not '%c'.",
						   statuses == NULL || idx < 0 ? "missing" :
						   psprintf("'%c'", statuses[idx]), from),
				 errhint("Run kafka_lake.verify('%s').", src->source)));
	statuses[idx] = to;
	values[0] = Int32GetDatum(src->source_id);
	values[1] = CStringGetTextDatum(batch_id);
	values[2] = CStringGetTextDatum(statuses);
	kl_xspi("UPDATE kafka_lake.coordinates SET statuses = $3 WHERE source_id = $1 AND batch_id = $2",
			3, types, values, NULL, SPI_OK_UPDATE, false);
	kl_catalog_end(cs);
}

/*
 * kl_event_key_datum
 *		The accepted_events key of an event_id of a source, by its scheme
 *		(also kafka_lake.event_key()'s).
 */
Datum
kl_event_key_datum(KlSource *src, const char *event_id)
{
	pg_uuid_t  *key = palloc(sizeof(pg_uuid_t));

	kl_event_key(src->source_id, src->ordered_keys, event_id, strlen(event_id), key);
	return UUIDPGetDatum(key);
}

/*
 * kl_catalog_event_holder
 *		The coordinate at which accepted_events holds an event_id (newest
 *		snapshot): which of the source's topics (*topic_index), partition
 *		and offset; false when no record holds it.
 */
bool
kl_catalog_event_holder(KlSource *src, const char *event_id, int *topic_index,
						int32 *partition, int64 *offset)
{
	KlCatalogSave cs;
	Oid			types[1] = {UUIDOID};
	Datum		values[1];
	bool		found;
	bool		isnull;

	values[0] = kl_event_key_datum(src, event_id);
	cs = kl_catalog_begin();
	kl_xspi(kl_catalog_has_topic_lists() ?
			"SELECT partition, \"offset\", topic FROM kafka_lake.accepted_events WHERE event_key = $1" :
			"SELECT partition, \"offset\", NULL::text FROM kafka_lake.accepted_events WHERE event_key = $1",
			1, types, values, NULL, SPI_OK_SELECT, true);
	found = SPI_processed == 1;
	if (found)
	{
		Datum		d;

		*partition = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		*offset = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull);
		/* NULL: the first topic; a topic the source no longer names: -1 */
		*topic_index = isnull ? 0 : kl_source_topic_index(src, TextDatumGetCString(d));
	}
	kl_catalog_end(cs);
	return found;
}

/*
 * kl_catalog_move_event
 *		Make accepted_events hold an event_id at (partition, offset), or
 *		(has_at false) not at all, so that a record landing later with it
 *		is accepted.
 */
void
kl_catalog_move_event(KlSource *src, const char *event_id, bool has_at, int32 partition,
					  int64 offset)
{
	KlCatalogSave cs;
	Oid			types[5] = {UUIDOID, INT4OID, INT4OID, INT8OID, TEXTOID};
	Datum		values[5];
	const char *topic = kl_topic_or_null(src);
	char		nulls[5] = {' ', ' ', ' ', ' ', topic ? ' ' : 'n'};

	values[0] = kl_event_key_datum(src, event_id);
	values[1] = Int32GetDatum(src->source_id);
	values[2] = Int32GetDatum(partition);
	values[3] = Int64GetDatum(offset);
	values[4] = topic ? CStringGetTextDatum(topic) : (Datum) 0;
	cs = kl_catalog_begin();
	if (has_at && kl_catalog_has_topic_lists())
		kl_xspi("INSERT INTO kafka_lake.accepted_events (event_key, source_id, partition, \"offset\", topic)"
				" VALUES ($1, $2, $3, $4, $5) ON CONFLICT (event_key) DO UPDATE"
				" SET partition = EXCLUDED.partition, \"offset\" = EXCLUDED.\"offset\","
				"     topic = EXCLUDED.topic",
				5, types, values, nulls, SPI_OK_INSERT, false);
	else if (has_at)
		kl_xspi("INSERT INTO kafka_lake.accepted_events (event_key, source_id, partition, \"offset\")"
				" VALUES ($1, $2, $3, $4) ON CONFLICT (event_key) DO UPDATE"
				" SET partition = EXCLUDED.partition, \"offset\" = EXCLUDED.\"offset\"",
				4, types, values, NULL, SPI_OK_INSERT, false);
	else
		kl_xspi("DELETE FROM kafka_lake.accepted_events WHERE event_key = $1 AND source_id = $2",
				2, types, values, NULL, SPI_OK_DELETE, false);
	kl_catalog_end(cs);
}
