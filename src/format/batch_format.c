/*-------------------------------------------------------------------------
 *
 * batch_format.c
 *	  The landed batch format, in one place: the JSONL lines and the
 *	  manifest.json of a batch, written and read back.  Bytes and structs
 *	  only; the files themselves are landing_files.c's (writing) and
 *	  batch_read.c's (reading back, checked).
 *
 * THE LAYOUT
 *
 * A batch is a directory batch=<id> holding accepted.jsonl,
 * duplicates.jsonl, quarantine.jsonl and manifest.json.  <id> is
 * <first offset:020d>-<last offset:020d>-<hash12>, hash12 the first 12 hex
 * digits of the SHA-256 of the batch's fingerprints: the same coordinates
 * with the same content always get the same name.
 *
 * Everything is written in Python's json.dumps layout with sorted keys
 * (", " and ": " separators, ensure_ascii: json.c), so the reference
 * implementation's tools read our landing byte for byte.  One JSON object
 * per line, LF-terminated:
 *
 *	accepted	{"event": {...}, "kafka": {...}[, "raw_value"...: Avro]}
 *	duplicates	{"duplicate_of": {"offset", "partition", "topic"},
 *				 "event": ..., "kafka": ...}
 *	quarantine	{"kafka": ..., "raw_value": "..." | "raw_value_base64": "...",
 *				 "validation_error": "..."}
 *
 * where "kafka" is {["headers": [...],] "key": ..., ["key_base64": ...,]
 * "offset": ..., "partition": ..., "timestamp_ms": ..., "topic": ...} (a key
 * that is not UTF-8, or holds a NUL, is null with its bytes in key_base64;
 * "headers", the record's Kafka headers in record order, only when it has
 * some, so that other lines are what they always were) and "event" is the
 * contract's normalised event (contract.c).
 *
 * LINES THAT CARRY THEIR IDS
 *
 * Readers find an event's event_id and business date in the event's fields
 * of those names, which is what machine_event_v1's events hold.  An event of
 * another contract may keep them under other names, or derive the date (a
 * timestamp read in a zone, the Kafka timestamp), or not have them: so the
 * accepted and duplicate lines of such a contract carry them beside the
 * event, null when there are none, "business_date" first (before "event",
 * so a reader knows at once that the line has its own) and "event_id" after
 * it, in the sorted order of the layout.  A line is self-describing: no
 * reader needs the contract to read it, and a landing stays readable when
 * the time zone rules change.  An accepted record of a raw contract has no
 * "event" but the "raw_value" (or "raw_value_base64") a quarantine line has;
 * one of an Avro contract has both, the decoded event and the value as it
 * was received (framing included), so that the landing shows what was
 * received and not only what a reader schema made of it.
 * The manifest of a batch that another contract than machine_event_v1 judged
 * names the contract and its version (machine_event_v1's keeps exactly the
 * reference implementation's keys), and a readmit unit's (readmit.c) says
 * "kind": "readmit" and which batch its records came from.  manifest.json is one
 * object whose keys before "entries" are known before the first line is
 * written (counts, business dates, the batch id), so it is written as a
 * stream alongside the JSONL files; "files" (each JSONL file's bytes, line
 * count, CRC-32C and SHA-256) comes last, once they are closed.  A batch
 * that compact() made of others also names them ("compacted_from"), and
 * keeps their manifest entries as they were written (compact.c).
 *
 * READING A LINE: ONE FAST PATH, ONE STRICT FALLBACK
 *
 * The foreign table parses every landed line it returns and the bridge
 * every accepted line of a date, so reading a line is the hot path of both.
 * kl_line_parse tries the fast path first: a matcher of the layout above,
 * which this file also writes.  It expects exactly json.dumps' separators
 * and keys in strictly ascending order without escapes, walks the members
 * in that order, and merges them with the members the caller asked for
 * (sorted once, in kl_line_set_fields), so a member the line lacks is known
 * to be absent as soon as a greater key goes by.  It stops as soon as it
 * has everything it was asked for.  A value it hands out is validated as
 * the strict reader would (strings: escapes, surrogate pairs, control
 * characters, UTF-8, sixteen bytes at a time; numbers: RFC 8259; objects
 * and arrays: by json.c itself); a value nobody asked for is skipped by a
 * structural scan (strings and brackets, nothing else), which the file's
 * CRC, checked before any line is read (batch_read.c), vouches for.  The
 * matcher knows nothing of any contract: any event fields written in the
 * layout are read fast.
 *
 * Anything else (other whitespace, another member order, escaped keys, a
 * duplicate key, a value that is not valid JSON) sends the line to the
 * strict reader (kl_line_parse_strict) from its first byte: it reads any
 * valid JSON object, finds the members wherever they stand, and is the one
 * place that says what is wrong with a line that is not valid.  The two
 * agree on every line the fast path takes; only their speed differs.  Each
 * KlLine counts the lines that went the strict way, which EXPLAIN (ANALYZE,
 * VERBOSE) of a foreign scan and the bridge's DEBUG1 report show: zero for
 * a landing written by land().
 *
 * IDENTIFICATION
 *	  src/format/batch_format.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common/base64.h"
#include "port/pg_bitutils.h"
#include "utils/datetime.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/digest.h"
#include "base/json.h"
#include "contract/contract.h"
#include "contract/iso8601.h"
#include "format/avro.h"
#include "format/batch_format.h"

const char *const kl_file_names[KL_NFILES] = {
	"accepted.jsonl", "duplicates.jsonl", "quarantine.jsonl"
};

/* the files of a batch by its compression: the record files, then the manifest */
static const char *const kl_batch_file_names[2][KL_NFILES + 1] = {
	{"accepted.jsonl", "duplicates.jsonl", "quarantine.jsonl", "manifest.json"},
	{"accepted.jsonl.zst", "duplicates.jsonl.zst", "quarantine.jsonl.zst", "manifest.json.zst"}
};

/*
 * kl_batch_file
 *		The name of one file of a batch (KL_FILE_*, or KL_NFILES for its
 *		manifest): a compressed batch's names end in .zst.
 */
const char *
kl_batch_file(const KlBatch *b, int file)
{
	if (file == KL_NFILES && b->reduced)
		return kl_reduced_manifest_name(b->compression);
	return kl_file_name(b->compression, file);
}

/*
 * kl_reduced_manifest_name
 *		The name of the reduced manifest of an expired batch (expire.c), for
 *		a compression.
 */
const char *
kl_reduced_manifest_name(int compression)
{
	return compression == KL_COMPRESS_ZSTD ? "manifest.reduced.json.zst" : "manifest.reduced.json";
}

/*
 * kl_file_name
 *		kl_batch_file, for a compression (KL_COMPRESS_*).
 */
const char *
kl_file_name(int compression, int file)
{
	Assert(file >= 0 && file <= KL_NFILES);
	return kl_batch_file_names[compression == KL_COMPRESS_ZSTD ? 1 : 0][file];
}

/*
 * kl_compression_name, kl_compression_of
 *		A compression's name in the catalog and the manifest ('none',
 *		'zstd'), and back (-1: not one).
 */
const char *
kl_compression_name(int compression)
{
	return compression == KL_COMPRESS_ZSTD ? "zstd" : "none";
}

int
kl_compression_of(const char *name)
{
	if (name == NULL || strcmp(name, "none") == 0)
		return KL_COMPRESS_NONE;
	if (strcmp(name, "zstd") == 0)
		return KL_COMPRESS_ZSTD;
	return -1;
}

const char *const kl_status_names[KL_NFILES] = {
	"accepted", "duplicate_event_id", "quarantined"
};

/*
 * kl_status_file_index
 *		The file that holds records of a status, or -1 for an unknown status.
 */
int
kl_status_file_index(const char *status)
{
	for (int i = 0; i < KL_NFILES; i++)
	{
		if (strcmp(status, kl_status_names[i]) == 0)
			return i;
	}
	return -1;
}

/*
 * kl_record_framing
 *		For a JSON contract of Confluent's wire format ("framing":
 *		"confluent"), the schema id its record names, in a __value_schema_id
 *		header or in front of the value (magic byte 0; -1 for a GUID or no
 *		framing), so that the manifest keeps it as it keeps an Avro
 *		record's.  Any thread: nothing allocated.
 */
void
kl_record_framing(const KlContract *c, KlRecord *r)
{
	KlAvroWire	wire;
	bool		in_header;

	if (!c->confluent_framing || r->value == NULL)
		return;
	r->framed = true;
	r->schema_id = -1;
	if (kl_record_wire(r, &wire, &in_header) == NULL && wire.magic == 0)
		r->schema_id = wire.schema_id;
}

/*
 * kl_record_wire
 *		A (non-null) record value split by Confluent's wire format: its
 *		schema id or GUID from the first __value_schema_id header (the datum
 *		then the whole value, *in_header true), else from the value's own
 *		framing.  NULL, or a static message why not (kl_avro_wire_parse).
 *		Any thread.
 */
const char *
kl_record_wire(const KlRecord *r, KlAvroWire *wire, bool *in_header)
{
	const char *why;

	*in_header = false;
	for (int h = 0; h < r->nheaders; h++)
	{
		if (r->headers[h].value != NULL && strcmp(r->headers[h].name, "__value_schema_id") == 0)
		{
			*in_header = true;
			why = kl_avro_wire_parse_header((const uint8 *) r->headers[h].value,
											r->headers[h].value_len, wire);
			wire->payload = (const uint8 *) r->value;
			wire->payload_len = r->value_len;
			return why;
		}
	}
	return kl_avro_wire_parse((const uint8 *) r->value, r->value_len, wire);
}

/*
 * kl_judge_record
 *		Judge a record against a contract (contract.c): NULL and r->event
 *		filled (in events) when it is accepted, else the reason.  The one
 *		thing judging cannot say itself, that memory ran out, is reported
 *		here, on the backend.
 */
const char *
kl_judge_record(const KlContract *c, KlRecord *r, KlPool *events, KlPool *scratch)
{
	KlJudgeInput in;
	const char *reason;

	kl_record_framing(c, r);
	in.value = r->value;
	in.value_len = r->value_len;
	in.timestamp_ms = r->timestamp_ms;
	in.headers = r->headers;
	in.nheaders = r->nheaders;
	in.key = r->key;
	in.key_len = r->key_len;
	reason = kl_contract_judge(c, &in, events, scratch, &r->event);
	if (reason == kl_judge_out_of_memory)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("Judging the record at offset %lld against contract \"%s\" needed more memory than the system gave.",
						   (long long) r->offset, c->name)));
	r->writes_ids = c->writes_ids;
	return reason;
}

/* ----------------------------------------------------------------
 *		The batch id
 * ----------------------------------------------------------------
 */

/*
 * kl_batch_describe
 *		What a batch of the new coordinates recs[0..n) (offsets ascending,
 *		statuses decided) is before anything is written: its offsets, counts
 *		per status, business dates and id.  Fills *out.  A readmit unit's id
 *		also hashes salt (its contract), so that it never is the id of the
 *		batch its records came from.
 */
void
kl_batch_describe(const char *topic, int32 partition, const KlRecord *recs, int n,
				  const char *salt, KlBatch *out)
{
	KlSha256   *h;
	uint8		digest[KL_SHA256_LEN];
	char		hex[KL_SHA256_HEX_LEN + 1];

	Assert(n > 0);
	memset(out, 0, sizeof(*out));
	out->topic = (char *) topic;
	out->partition = partition;
	out->first_offset = recs[0].offset;
	out->last_offset = recs[n - 1].offset;
	out->record_count = n;

	h = kl_sha256_create();
	if (salt != NULL)
		kl_sha256_update(h, (const uint8 *) salt, strlen(salt) + 1);
	for (int i = 0; i < n; i++)
	{
		const KlRecord *r = &recs[i];

		kl_sha256_update(h, r->fingerprint, KL_SHA256_LEN);
		if (r->status == KL_STATUS_ACCEPTED)
			out->counts[KL_FILE_ACCEPTED]++;
		else if (r->status == KL_STATUS_DUPLICATE)
			out->counts[KL_FILE_DUPLICATES]++;
		else if (r->status == KL_STATUS_QUARANTINED)
			out->counts[KL_FILE_QUARANTINE]++;
		else
			elog(ERROR, "unexpected record status '%c' in a batch", r->status);
		if (r->status != KL_STATUS_QUARANTINED && r->event.has_business_date)
		{
			if (!out->has_dates)
			{
				out->min_date = out->max_date = r->event.business_date;
				out->has_dates = true;
			}
			else
			{
				out->min_date = Min(out->min_date, r->event.business_date);
				out->max_date = Max(out->max_date, r->event.business_date);
			}
		}
	}
	kl_sha256_final(h, digest);
	kl_hex(digest, 6, hex);
	snprintf(out->batch_id, sizeof(out->batch_id), "%020lld-%020lld-%s",
			 (long long) out->first_offset, (long long) out->last_offset, hex);
}

/*
 * kl_parse_unit_name
 *		Is name "<prefix><first:020d>-<last:020d>-<hash12>"?  Sets the
 *		offsets.
 */
static bool
kl_parse_unit_name(const char *name, const char *prefix, int64 *first, int64 *last)
{
	const char *id = name + strlen(prefix);

	if (strncmp(name, prefix, strlen(prefix)) != 0 || strlen(id) != KL_BATCH_ID_LEN)
		return false;
	for (int i = 0; i < KL_BATCH_ID_LEN; i++)
	{
		char		c = id[i];

		if (i == 20 || i == 41)
		{
			if (c != '-')
				return false;
		}
		else if (i < 41 ? !(c >= '0' && c <= '9') :
				 !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	*first = strtoi64(id, NULL, 10);
	*last = strtoi64(id + 21, NULL, 10);
	return *first <= *last;
}

/*
 * kl_parse_batch_name
 *		Is name "batch=<first:020d>-<last:020d>-<hash12>"?  Sets the offsets.
 */
bool
kl_parse_batch_name(const char *name, int64 *first, int64 *last)
{
	return kl_parse_unit_name(name, "batch=", first, last);
}

/*
 * kl_parse_readmit_name
 *		Is name "readmit=<first:020d>-<last:020d>-<hash12>"?
 */
bool
kl_parse_readmit_name(const char *name, int64 *first, int64 *last)
{
	return kl_parse_unit_name(name, "readmit=", first, last);
}

/*
 * kl_batch_coordinate_index
 *		Index of an offset among a batch's coordinates, or -1.
 */
int
kl_batch_coordinate_index(const KlBatch *b, int64 offset)
{
	if (offset < b->first_offset || offset > b->last_offset)
		return -1;
	if (b->offset_list == NULL)
		return (int) (offset - b->first_offset);
	{
		int			lo = 0;
		int			hi = b->record_count - 1;

		while (lo <= hi)
		{
			int			mid = (lo + hi) / 2;

			if (b->offset_list[mid] == offset)
				return mid;
			if (b->offset_list[mid] < offset)
				lo = mid + 1;
			else
				hi = mid - 1;
		}
	}
	return -1;
}

/* ----------------------------------------------------------------
 *		Writing the lines
 * ----------------------------------------------------------------
 */

static void kl_append_date(StringInfo out, bool valid, DateADT date);

/*
 * kl_append_base64
 *		Bytes as a JSON string of their base64, encoded in place (base64
 *		needs no escapes).  Like every appender below it allocates nothing
 *		when the buffer has room (kl_line_bound): the landing's helper
 *		thread writes lines with them (landing_files.c).
 */
static void
kl_append_base64(StringInfo out, const char *bytes, size_t len)
{
	int			blen = pg_b64_enc_len(len);
	int			n;

	enlargeStringInfo(out, blen + 2);
	out->data[out->len++] = '"';
	n = pg_b64_encode(bytes, len, out->data + out->len, blen);
	out->len += Max(n, 0);
	out->data[out->len++] = '"';
	out->data[out->len] = '\0';
}

/*
 * kl_line_bound
 *		An upper bound on the bytes that kl_batch_append_line and
 *		kl_manifest_append_entry append for a record (each of them), the
 *		room each appender reserves included: JSON escapes take at most six
 *		bytes per input byte, base64 less.  topic_json_len is the length of
 *		the topic as a JSON string.
 */
size_t
kl_line_bound(const KlRecord *r, size_t topic_json_len)
{
	size_t		b = 1024 + 3 * topic_json_len;

	b += 6 * (r->key_len + r->value_len) + 64;
	b += r->event.json_len + 6 * (size_t) Max(r->event.event_id_len, 0) + 16;
	if (r->validation_error)
		b += 6 * strlen(r->validation_error) + 16;
	if (r->dup_topic)
		b += 6 * strlen(r->dup_topic) + 2;
	for (int i = 0; i < r->nheaders; i++)
		b += 6 * (strlen(r->headers[i].name) + r->headers[i].value_len) + 64;
	return b;
}

/*
 * kl_append_key
 *		The "key" member of a kafka envelope (and key_base64 for a key that
 *		is not UTF-8).
 */
static void
kl_append_key(StringInfo out, const KlRecord *r)
{
	appendStringInfoString(out, "\"key\": ");
	if (r->key == NULL)
		appendStringInfoString(out, "null");
	else if (kl_utf8_text_valid(r->key, r->key_len))
		kl_json_append_string(out, r->key, r->key_len);
	else
	{
		appendStringInfoString(out, "null, \"key_base64\": ");
		kl_append_base64(out, r->key, r->key_len);
	}
}

/*
 * kl_append_bytes_member
 *		"name": "<text>" for bytes that are UTF-8 text, else
 *		"name_base64": "<base64>"; "name": null for NULL.
 */
static void
kl_append_bytes_member(StringInfo out, const char *name, const char *bytes, size_t len)
{
	appendStringInfo(out, "\"%s", name);
	if (bytes == NULL)
		appendStringInfoString(out, "\": null");
	else if (kl_utf8_text_valid(bytes, len))
	{
		appendStringInfoString(out, "\": ");
		kl_json_append_string(out, bytes, len);
	}
	else
	{
		appendStringInfoString(out, "_base64\": ");
		kl_append_base64(out, bytes, len);
	}
}

/*
 * kl_append_headers
 *		"headers": [{"key": ..., "value": ...}, ...], in record order (the
 *		kafka envelope has it only when the record has headers).
 */
static void
kl_append_headers(StringInfo out, const KlRecord *r)
{
	appendStringInfoString(out, "\"headers\": [");
	for (int i = 0; i < r->nheaders; i++)
	{
		const KlHeader *h = &r->headers[i];

		appendStringInfoString(out, i ? ", {" : "{");
		kl_append_bytes_member(out, "key", h->name, strlen(h->name));
		appendStringInfoString(out, ", ");
		kl_append_bytes_member(out, "value", h->value, h->value_len);
		appendStringInfoChar(out, '}');
	}
	appendStringInfoString(out, "], ");
}

/*
 * kl_append_kafka
 *		The "kafka" envelope of a record.
 */
static void
kl_append_kafka(StringInfo out, const KlRecord *r, const char *topic_json, int32 partition)
{
	appendStringInfoString(out, "\"kafka\": {");
	if (r->nheaders > 0)
		kl_append_headers(out, r);
	kl_append_key(out, r);
	appendStringInfoString(out, ", \"offset\": ");
	kl_json_append_int64(out, r->offset);
	appendStringInfoString(out, ", \"partition\": ");
	kl_json_append_int64(out, partition);
	appendStringInfoString(out, ", \"timestamp_ms\": ");
	if (r->timestamp_ms >= 0)
		kl_json_append_int64(out, r->timestamp_ms);
	else
		appendStringInfoString(out, "null");
	appendStringInfoString(out, ", \"topic\": ");
	appendStringInfoString(out, topic_json);
	appendStringInfoChar(out, '}');
}

/*
 * kl_append_duplicate_of
 *		{"offset": ..., "partition": ..., "topic": ...}
 */
static void
kl_append_duplicate_of(StringInfo out, const KlRecord *r, const char *topic_json)
{
	appendStringInfoString(out, "\"duplicate_of\": {\"offset\": ");
	kl_json_append_int64(out, r->dup_offset);
	appendStringInfoString(out, ", \"partition\": ");
	kl_json_append_int64(out, r->dup_partition);
	appendStringInfoString(out, ", \"topic\": ");
	if (r->dup_topic)
		kl_json_append_string(out, r->dup_topic, strlen(r->dup_topic));
	else
		appendStringInfoString(out, topic_json);
	appendStringInfoChar(out, '}');
}

/*
 * kl_append_raw_value
 *		The raw value of a quarantined record: as a JSON string when it is
 *		UTF-8 without NUL bytes, base64 otherwise; null for a tombstone.
 */
static void
kl_append_raw_value(StringInfo out, const KlRecord *r)
{
	if (r->value == NULL)
		appendStringInfoString(out, "\"raw_value\": null");
	else if (kl_utf8_text_valid(r->value, r->value_len))
	{
		appendStringInfoString(out, "\"raw_value\": ");
		kl_json_append_string(out, r->value, r->value_len);
	}
	else
	{
		appendStringInfoString(out, "\"raw_value_base64\": ");
		kl_append_base64(out, r->value, r->value_len);
	}
}

/*
 * kl_record_file
 *		The file (KL_FILE_*) that holds the line of a record of this status.
 */
int
kl_record_file(char status)
{
	switch (status)
	{
		case KL_STATUS_ACCEPTED:
			return KL_FILE_ACCEPTED;
		case KL_STATUS_DUPLICATE:
			return KL_FILE_DUPLICATES;
		default:
			return KL_FILE_QUARANTINE;
	}
}

/*
 * kl_batch_append_line
 *		The line of one record (LF included), as the file of its status
 *		(kl_record_file) holds it.  topic_json is the topic as a JSON string.
 */
void
kl_batch_append_line(StringInfo buf, const KlRecord *r, const char *topic_json, int32 partition)
{
	switch (r->status)
	{
		case KL_STATUS_ACCEPTED:
		case KL_STATUS_DUPLICATE:
			appendStringInfoChar(buf, '{');
			if (r->writes_ids)
			{
				appendStringInfoString(buf, "\"business_date\": ");
				kl_append_date(buf, r->event.has_business_date, r->event.business_date);
				appendStringInfoString(buf, ", ");
			}
			if (r->status == KL_STATUS_DUPLICATE)
			{
				kl_append_duplicate_of(buf, r, topic_json);
				appendStringInfoString(buf, ", ");
			}
			if (r->event.json != NULL)
			{
				appendStringInfoString(buf, "\"event\": ");
				appendBinaryStringInfo(buf, r->event.json, r->event.json_len);
				appendStringInfoString(buf, ", ");
			}
			if (r->writes_ids)
			{
				appendStringInfoString(buf, "\"event_id\": ");
				if (r->event.event_id)
					kl_json_append_string(buf, r->event.event_id, r->event.event_id_len);
				else
					appendStringInfoString(buf, "null");
				appendStringInfoString(buf, ", ");
			}
			kl_append_kafka(buf, r, topic_json, partition);
			if (r->event.json == NULL || r->avro_payload != NULL)
			{
				/*
				 * Accepted as it is (a raw contract), or decoded from Avro:
				 * the value as received is kept next to its decoding, which
				 * a reader schema and normalisation made and which cannot
				 * give the bytes back.
				 */
				appendStringInfoString(buf, ", ");
				kl_append_raw_value(buf, r);
			}
			appendStringInfoString(buf, "}\n");
			break;
		default:
			appendStringInfoChar(buf, '{');
			kl_append_kafka(buf, r, topic_json, partition);
			appendStringInfoString(buf, ", ");
			kl_append_raw_value(buf, r);
			appendStringInfoString(buf, ", \"validation_error\": ");
			kl_json_append_string(buf, r->validation_error, strlen(r->validation_error));
			appendStringInfoString(buf, "}\n");
			break;
	}
}

/* ----------------------------------------------------------------
 *		Writing the manifest
 * ----------------------------------------------------------------
 */

/*
 * kl_append_date
 *		A date as a JSON string "YYYY-MM-DD", or null.
 */
static void
kl_append_date(StringInfo out, bool valid, DateADT date)
{
	char		text[KL_DATE_TEXT_LEN];

	if (!valid)
	{
		appendStringInfoString(out, "null");
		return;
	}
	kl_date_text(date, text);
	appendStringInfoChar(out, '"');
	appendStringInfoString(out, text);
	appendStringInfoChar(out, '"');
}

/*
 * kl_iso_now
 *		The current time in ISO-8601 with microseconds and an explicit UTC
 *		offset, as Python's datetime.isoformat() writes it.
 */
char *
kl_iso_now(void)
{
	TimestampTz now = GetCurrentTimestamp();
	struct pg_tm tm;
	fsec_t		fsec;

	if (timestamp2tm(now, NULL, &tm, &fsec, NULL, NULL) != 0)
		elog(ERROR, "timestamp out of range");
	return psprintf("%04d-%02d-%02dT%02d:%02d:%02d.%06d+00:00",
					tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
					(int) fsec);
}

/*
 * kl_manifest_append_head
 *		The members of manifest.json before its entries (keys sorted), up to
 *		the opening bracket of "entries".
 */
void
kl_manifest_append_head(StringInfo doc, const KlBatch *b)
{
	char	   *created = kl_iso_now();

	appendStringInfo(doc, "{\n  \"accepted_count\": %d,\n", b->counts[KL_FILE_ACCEPTED]);
	appendStringInfoString(doc, "  \"batch_id\": ");
	kl_json_append_string(doc, b->batch_id, strlen(b->batch_id));
	appendStringInfoString(doc, ",\n  \"business_date_max\": ");
	kl_append_date(doc, b->has_dates, b->max_date);
	appendStringInfoString(doc, ",\n  \"business_date_min\": ");
	kl_append_date(doc, b->has_dates, b->min_date);
	if (b->ncompacted_from > 0)
	{
		/* a compacted batch names the batches it replaced (compact.c) */
		appendStringInfoString(doc, ",\n  \"compacted_from\": [\n");
		for (int i = 0; i < b->ncompacted_from; i++)
		{
			appendStringInfoString(doc, "    ");
			kl_json_append_string(doc, b->compacted_from[i], strlen(b->compacted_from[i]));
			appendStringInfoString(doc, i + 1 < b->ncompacted_from ? ",\n" : "\n");
		}
		appendStringInfoString(doc, "  ]");
	}
	if (b->compression != KL_COMPRESS_NONE)
		appendStringInfo(doc, ",\n  \"compression\": \"%s\"", kl_compression_name(b->compression));
	if (!kl_batch_is_machine_event_v1(b))
	{
		/* other contracts than the seed's say which (the seed's tools skip it) */
		appendStringInfoString(doc, ",\n  \"contract\": ");
		kl_json_append_string(doc, b->contract, strlen(b->contract));
		appendStringInfo(doc, ",\n  \"contract_version\": %d", b->contract_version);
	}
	appendStringInfoString(doc, ",\n  \"created_at\": ");
	kl_json_append_string(doc, created, strlen(created));
	appendStringInfo(doc, ",\n  \"duplicate_event_count\": %d,\n", b->counts[KL_FILE_DUPLICATES]);
	appendStringInfoString(doc, "  \"entries\": [\n");
	pfree(created);
}

/*
 * kl_manifest_append_entry
 *		One element of the manifest's "entries", one per line (last: the
 *		final one, without a comma).
 */
void
kl_manifest_append_entry(StringInfo out, const KlRecord *r, const char *topic_json,
						 int32 partition, bool last)
{
	char		fp[KL_SHA256_HEX_LEN + 1];

	kl_hex(r->fingerprint, KL_SHA256_LEN, fp);
	appendStringInfoString(out, "    {");
	if (r->status == KL_STATUS_DUPLICATE)
	{
		kl_append_duplicate_of(out, r, topic_json);
		appendStringInfoString(out, ", ");
	}
	appendStringInfoString(out, "\"event_id\": ");
	if (r->status == KL_STATUS_QUARANTINED || r->event.event_id == NULL)
		appendStringInfoString(out, "null");
	else
		kl_json_append_string(out, r->event.event_id, r->event.event_id_len);
	appendStringInfoString(out, ", \"fingerprint\": \"");
	appendStringInfoString(out, fp);
	appendStringInfoString(out, "\", ");
	kl_append_key(out, r);
	appendStringInfoString(out, ", \"offset\": ");
	kl_json_append_int64(out, r->offset);
	appendStringInfoString(out, ", \"partition\": ");
	kl_json_append_int64(out, partition);
	if ((r->avro_payload != NULL || r->framed) && r->schema_id >= 0)
	{
		/* an Avro record: the writer schema id it was framed with (or its GUID's); a framed JSON one's */
		appendStringInfoString(out, ", \"schema_id\": ");
		kl_json_append_int64(out, r->schema_id);
	}
	appendStringInfoString(out, ", \"status\": \"");
	appendStringInfoString(out, r->status == KL_STATUS_ACCEPTED ? "accepted" :
						   r->status == KL_STATUS_DUPLICATE ? "duplicate_event_id" : "quarantined");
	appendStringInfoString(out, "\", \"timestamp_ms\": ");
	if (r->timestamp_ms >= 0)
		kl_json_append_int64(out, r->timestamp_ms);
	else
		appendStringInfoString(out, "null");
	appendStringInfoString(out, ", \"topic\": ");
	appendStringInfoString(out, topic_json);
	if (r->status == KL_STATUS_QUARANTINED)
	{
		appendStringInfoString(out, ", \"validation_error\": ");
		kl_json_append_string(out, r->validation_error, strlen(r->validation_error));
	}
	appendStringInfoChar(out, '}');
	appendStringInfoString(out, last ? "\n" : ",\n");
}

/*
 * kl_manifest_append_tail
 *		The rest of manifest.json after its entries, once the JSONL files are
 *		closed (b->files holds their checks).
 */
void
kl_manifest_append_tail(StringInfo doc, const KlBatch *b, const char *topic_json)
{
	appendStringInfoString(doc, "  ],\n  \"files\": {\n");
	for (int i = 0; i < KL_NFILES; i++)
	{
		appendStringInfo(doc, "    \"%s\": {\"bytes\": %lld, \"crc32c\": %u, \"lines\": %lld, ",
						 kl_batch_file(b, i), (long long) b->files[i].bytes,
						 b->files[i].crc32c, (long long) b->files[i].lines);
		/* a compressed file: the bytes of its lines, which a reader makes room for */
		if (b->compression != KL_COMPRESS_NONE)
			appendStringInfo(doc, "\"raw_bytes\": %lld, ", (long long) b->files[i].raw_bytes);
		appendStringInfo(doc, "\"sha256\": \"%s\"}%s\n",
						 b->files[i].sha256, i + 1 < KL_NFILES ? "," : "");
	}
	appendStringInfoString(doc, "  },\n  \"format_version\": 1,\n");
	appendStringInfo(doc, "  \"input_offset_end\": %lld,\n", (long long) b->last_offset);
	appendStringInfo(doc, "  \"input_offset_start\": %lld,\n", (long long) b->first_offset);
	appendStringInfo(doc, "  \"input_record_count\": %d,\n", b->record_count);
	if (b->readmit)
		appendStringInfoString(doc, "  \"kind\": \"readmit\",\n");
	appendStringInfo(doc, "  \"new_coordinate_count\": %d,\n", b->record_count);
	appendStringInfo(doc, "  \"partition\": %d,\n", b->partition);
	appendStringInfo(doc, "  \"quarantine_count\": %d,\n", b->counts[KL_FILE_QUARANTINE]);
	if (b->readmit)
	{
		appendStringInfoString(doc, "  \"readmit_of\": ");
		kl_json_append_string(doc, b->readmit_of, strlen(b->readmit_of));
		appendStringInfoString(doc, ",\n");
	}
	appendStringInfoString(doc, "  \"topic\": ");
	appendStringInfoString(doc, topic_json);
	appendStringInfoString(doc, "\n}\n");
}

/*
 * kl_manifest_reduced
 *		The reduced manifest of an expired batch (expire.c), from its
 *		manifest's batch and entries: the same members but "entries" and
 *		"created_at" (when it was reduced), and instead of the entries:
 *		"statuses" (one letter a record, in offset order: a(ccepted),
 *		d(uplicate_event_id), q(uarantined)), "offsets" (only when the range
 *		has gaps), "fingerprint_prefixes" (the first
 *		KL_FINGERPRINT_PREFIX_LEN bytes of each fingerprint, in hex),
 *		"fingerprints_sha256" (the SHA-256 over the whole fingerprints, whose
 *		first 12 hex digits end the batch_id) and "reduced_from" (the SHA-256
 *		of the manifest it replaces).  Keys sorted, as in manifest.json.
 */
char *
kl_manifest_reduced(const KlBatch *b, const KlRecord *recs, int n, const char *reduced_from)
{
	StringInfoData doc;
	StringInfoData tail;
	StringInfoData topic_json;
	KlSha256   *h = kl_sha256_create();
	uint8		digest[KL_SHA256_LEN];
	char		hex[KL_SHA256_HEX_LEN + 1];
	bool		gaps = (b->last_offset - b->first_offset + 1 != n);
	char	   *at;
	const char *p;

	initStringInfo(&doc);
	initStringInfo(&tail);
	initStringInfo(&topic_json);
	kl_json_append_string(&topic_json, b->topic, strlen(b->topic));
	kl_manifest_append_head(&doc, b);
	/* the head ends with the opening of "entries", the tail begins with its end */
	at = strstr(doc.data, "  \"entries\": [\n");
	Assert(at != NULL);
	doc.len = at - doc.data;
	doc.data[doc.len] = '\0';
	kl_manifest_append_tail(&tail, b, topic_json.data);
	p = tail.data + strlen("  ],\n");

	/* "files": what the record files were, up to "format_version" */
	at = strstr(p, "  \"format_version\"");
	appendBinaryStringInfo(&doc, p, at - p);
	appendStringInfoString(&doc, "  \"fingerprint_prefixes\": \"");
	for (int i = 0; i < n; i++)
	{
		char		pre[2 * KL_FINGERPRINT_PREFIX_LEN + 1];

		kl_sha256_update(h, recs[i].fingerprint, KL_SHA256_LEN);
		kl_hex(recs[i].fingerprint, KL_FINGERPRINT_PREFIX_LEN, pre);
		appendBinaryStringInfo(&doc, pre, 2 * KL_FINGERPRINT_PREFIX_LEN);
	}
	kl_sha256_final(h, digest);
	kl_hex(digest, KL_SHA256_LEN, hex);
	appendStringInfo(&doc, "\",\n  \"fingerprints_sha256\": \"%s\",\n", hex);
	p = at;

	/* "format_version" to "new_coordinate_count", then "offsets" */
	at = strstr(p, "  \"partition\"");
	appendBinaryStringInfo(&doc, p, at - p);
	if (gaps)
	{
		appendStringInfoString(&doc, "  \"offsets\": [");
		for (int i = 0; i < n; i++)
		{
			if (i > 0)
				appendStringInfoString(&doc, ", ");
			kl_json_append_int64(&doc, recs[i].offset);
		}
		appendStringInfoString(&doc, "],\n");
	}
	p = at;

	/* "partition", "quarantine_count", then "reduced_from" and "statuses" */
	at = strstr(p, "  \"topic\"");
	appendBinaryStringInfo(&doc, p, at - p);
	appendStringInfo(&doc, "  \"reduced_from\": \"%s\",\n  \"statuses\": \"", reduced_from);
	for (int i = 0; i < n; i++)
		appendStringInfoChar(&doc, recs[i].status == KL_STATUS_ACCEPTED ? 'a' :
							 recs[i].status == KL_STATUS_DUPLICATE ? 'd' : 'q');
	appendStringInfoString(&doc, "\",\n");
	appendStringInfoString(&doc, at);
	pfree(tail.data);
	pfree(topic_json.data);
	return doc.data;
}

/* ----------------------------------------------------------------
 *		Reading the manifest
 * ----------------------------------------------------------------
 */

/*
 * kl_manifest_int
 *		An integer member of the manifest, or ERROR.
 */
static int64
kl_manifest_int(const KlJsonValue *v, const char *path, const char *key)
{
	int64		result;

	if (v->type != KL_JSON_NUMBER || !v->is_integer ||
		!kl_json_parse_int64(v->start, v->len, &result))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest \"%s\" has an invalid \"%s\"", path, key)));
	return result;
}

/*
 * kl_manifest_text
 *		A string member of the manifest (palloc'd), NULL for null.
 */
static char *
kl_manifest_text(const KlJsonValue *v, const char *path, const char *key)
{
	StringInfoData buf;

	if (v->type == KL_JSON_NULL)
		return NULL;
	if (v->type != KL_JSON_STRING)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest \"%s\" has an invalid \"%s\"", path, key)));
	initStringInfo(&buf);
	kl_json_decode_string(v, &buf);
	return buf.data;
}

#define KEY_IS(k, name) kl_json_key_is(&(k), (name), sizeof(name) - 1)

/*
 * kl_manifest_parse_entry
 *		One element of "entries" into a KlRecord.
 */
static void
kl_manifest_parse_entry(const KlJsonValue *obj, KlRecord *r, const char *path)
{
	KlJsonReader it;
	KlJsonValue k;
	KlJsonValue v;

	memset(r, 0, sizeof(KlRecord));
	r->timestamp_ms = -1;
	kl_json_object_open(&it, obj->start, obj->start + obj->len, KL_JSON_MAX_DEPTH);
	while (kl_json_object_next(&it, &k, &v))
	{
		if (KEY_IS(k, "offset"))
			r->offset = kl_manifest_int(&v, path, "offset");
		else if (KEY_IS(k, "fingerprint"))
		{
			char	   *hex = kl_manifest_text(&v, path, "fingerprint");

			if (hex == NULL || strlen(hex) != KL_SHA256_HEX_LEN ||
				!kl_unhex(hex, KL_SHA256_LEN, r->fingerprint))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("manifest \"%s\" has an invalid fingerprint", path)));
		}
		else if (KEY_IS(k, "status"))
		{
			char	   *status = kl_manifest_text(&v, path, "status");

			if (status && strcmp(status, "accepted") == 0)
				r->status = KL_STATUS_ACCEPTED;
			else if (status && strcmp(status, "duplicate_event_id") == 0)
				r->status = KL_STATUS_DUPLICATE;
			else if (status && strcmp(status, "quarantined") == 0)
				r->status = KL_STATUS_QUARANTINED;
			else
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("manifest \"%s\" has an invalid status", path)));
		}
		else if (KEY_IS(k, "event_id"))
		{
			r->event.event_id = kl_manifest_text(&v, path, "event_id");
			if (r->event.event_id)
				r->event.event_id_len = strlen(r->event.event_id);
		}
		else if (KEY_IS(k, "timestamp_ms") && v.type != KL_JSON_NULL)
			r->timestamp_ms = kl_manifest_int(&v, path, "timestamp_ms");
		else if (KEY_IS(k, "schema_id"))
			r->schema_id = kl_manifest_int(&v, path, "schema_id");
	}
	if (it.error)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest \"%s\" is not valid JSON: %s", path, it.error)));
	if (r->status == 0 || (r->status == KL_STATUS_DUPLICATE && r->event.event_id == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest \"%s\" has an incomplete entry at offset %lld",
						path, (long long) r->offset)));
}

/*
 * kl_manifest_checks
 *		Record in *b the size, CRC-32C and SHA-256 of a manifest file's bytes
 *		(as they lie on disk: of a compressed manifest, its frame).
 */
void
kl_manifest_checks(const char *bytes, size_t len, KlBatch *b)
{
	uint8		digest[KL_SHA256_LEN];

	kl_sha256(bytes, len, digest);
	kl_hex(digest, KL_SHA256_LEN, b->manifest_sha256);
	b->manifest_bytes = len;
	b->manifest_crc32c = kl_crc32c_final(kl_crc32c(KL_CRC32C_INIT, bytes, len));
}

/*
 * kl_manifest_parse
 *		The text of a batch's manifest.json (read from path, named in
 *		errors) into *b, its entries into *recs; ERROR (XX001) when it is not
 *		a manifest this format writes, or does not add up.  Also records the
 *		manifest's own size, CRC-32C and SHA-256 in *b (kl_manifest_checks).
 */
void
kl_manifest_parse(const char *path, const char *text, size_t len, KlBatch *b,
				  KlRecord **recs, int *n)
{
	kl_manifest_parse_text(path, text, len, b, recs, n);
	kl_manifest_checks(text, len, b);
}

/*
 * kl_manifest_reduced_entries
 *		The entries of a reduced manifest (kl_manifest_reduced), made from its
 *		members: each coordinate's offset, status and fingerprint prefix (the
 *		rest of the fingerprint zeros), without event_id, key or timestamp.
 *		ERROR (XX001) when a member is missing or they do not agree, or the
 *		fingerprints' SHA-256 is not the one the batch_id ends with.
 */
static void
kl_manifest_reduced_entries(const char *path, KlBatch *b, const char *statuses,
							const char *prefixes, const char *fingerprints_sha256,
							bool reduced_from, const int64 *offsets, int noffsets,
							KlRecord **recs, int *n)
{
	int			count = statuses ? (int) strlen(statuses) : 0;

	if (*n != 0 || statuses == NULL || prefixes == NULL || fingerprints_sha256 == NULL ||
		!reduced_from || count == 0 ||
		strlen(prefixes) != (size_t) count * 2 * KL_FINGERPRINT_PREFIX_LEN ||
		strlen(fingerprints_sha256) != KL_SHA256_HEX_LEN ||
		(noffsets >= 0 && noffsets != count) ||
		(noffsets < 0 && b->last_offset - b->first_offset + 1 != count) ||
		b->readmit ||
		strlen(b->batch_id) != KL_BATCH_ID_LEN ||
		strncmp(b->batch_id + KL_BATCH_ID_LEN - 12, fingerprints_sha256, 12) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest \"%s\" is not a reduced manifest this format writes", path),
				 errdetail("Its statuses, offsets, fingerprint_prefixes and fingerprints_sha256 do not agree with each other or with its batch_id.")));
	*recs = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(KlRecord) * count);
	memset(*recs, 0, sizeof(KlRecord) * count);
	for (int i = 0; i < count; i++)
	{
		KlRecord   *r = &(*recs)[i];

		r->offset = noffsets >= 0 ? offsets[i] : b->first_offset + i;
		r->timestamp_ms = -1;
		r->schema_id = -1;
		r->status = statuses[i] == 'a' ? KL_STATUS_ACCEPTED :
			statuses[i] == 'd' ? KL_STATUS_DUPLICATE :
			statuses[i] == 'q' ? KL_STATUS_QUARANTINED : '\0';
		if (r->status == '\0' ||
			!kl_unhex(prefixes + (Size) i * 2 * KL_FINGERPRINT_PREFIX_LEN, KL_FINGERPRINT_PREFIX_LEN,
					  r->fingerprint))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("manifest \"%s\" has an invalid status or fingerprint prefix", path)));
	}
	*n = count;
	b->reduced = true;
}

/*
 * kl_manifest_parse_text
 *		kl_manifest_parse without the manifest's checks: for a reader that
 *		has the file's bytes apart from its text (a compressed manifest).
 */
void
kl_manifest_parse_text(const char *path, const char *text, size_t len, KlBatch *b,
					   KlRecord **recs, int *n)
{
	KlJsonReader it;
	KlJsonValue k;
	KlJsonValue v;
	int			cap = 0;
	bool		named_zst = false;
	/* a reduced manifest's members (kl_manifest_reduced) */
	char	   *statuses = NULL;
	char	   *prefixes = NULL;
	char	   *fingerprints_sha256 = NULL;
	int64	   *offsets = NULL;
	int			noffsets = -1;
	bool		reduced_from = false;

	memset(b, 0, sizeof(*b));
	b->contract = KL_MACHINE_EVENT_V1;
	b->contract_version = 1;
	*recs = NULL;
	*n = 0;

	kl_json_object_open(&it, text, text + len, KL_JSON_MAX_DEPTH);
	while (kl_json_object_next(&it, &k, &v))
	{
		if (KEY_IS(k, "batch_id"))
		{
			char	   *id = kl_manifest_text(&v, path, "batch_id");

			if (id == NULL || strlen(id) != KL_BATCH_ID_LEN)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("manifest \"%s\" has an invalid batch_id", path)));
			strlcpy(b->batch_id, id, sizeof(b->batch_id));
		}
		else if (KEY_IS(k, "topic"))
			b->topic = kl_manifest_text(&v, path, "topic");
		else if (KEY_IS(k, "contract"))
		{
			b->contract = kl_manifest_text(&v, path, "contract");
			if (b->contract == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("manifest \"%s\" has an invalid \"contract\"", path)));
		}
		else if (KEY_IS(k, "contract_version"))
			b->contract_version = (int32) kl_manifest_int(&v, path, "contract_version");
		else if (KEY_IS(k, "compression"))
		{
			char	   *name = kl_manifest_text(&v, path, "compression");

			b->compression = name ? kl_compression_of(name) : -1;
			if (b->compression < 0)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("manifest \"%s\" has an invalid \"compression\"", path)));
		}
		else if (KEY_IS(k, "kind"))
		{
			char	   *kind = kl_manifest_text(&v, path, "kind");

			if (kind == NULL || strcmp(kind, "readmit") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("manifest \"%s\" has an invalid \"kind\"", path)));
			b->readmit = true;
		}
		else if (KEY_IS(k, "readmit_of"))
		{
			char	   *id = kl_manifest_text(&v, path, "readmit_of");

			if (id == NULL || strlen(id) != KL_BATCH_ID_LEN)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("manifest \"%s\" has an invalid \"readmit_of\"", path)));
			strlcpy(b->readmit_of, id, sizeof(b->readmit_of));
		}
		else if (KEY_IS(k, "partition"))
			b->partition = (int32) kl_manifest_int(&v, path, "partition");
		else if (KEY_IS(k, "input_offset_start"))
			b->first_offset = kl_manifest_int(&v, path, "input_offset_start");
		else if (KEY_IS(k, "input_offset_end"))
			b->last_offset = kl_manifest_int(&v, path, "input_offset_end");
		else if (KEY_IS(k, "accepted_count"))
			b->counts[KL_FILE_ACCEPTED] = (int) kl_manifest_int(&v, path, "accepted_count");
		else if (KEY_IS(k, "duplicate_event_count"))
			b->counts[KL_FILE_DUPLICATES] = (int) kl_manifest_int(&v, path, "duplicate_event_count");
		else if (KEY_IS(k, "quarantine_count"))
			b->counts[KL_FILE_QUARANTINE] = (int) kl_manifest_int(&v, path, "quarantine_count");
		else if (KEY_IS(k, "new_coordinate_count"))
			b->record_count = (int) kl_manifest_int(&v, path, "new_coordinate_count");
		else if (KEY_IS(k, "business_date_min") || KEY_IS(k, "business_date_max"))
		{
			char	   *d = kl_manifest_text(&v, path, "business_date");
			DateADT		date;

			if (d == NULL)
				continue;
			if (!kl_parse_iso_date(d, strlen(d), &date))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("manifest \"%s\" has an invalid business date", path)));
			b->has_dates = true;
			if (KEY_IS(k, "business_date_min"))
				b->min_date = date;
			else
				b->max_date = date;
		}
		else if (KEY_IS(k, "compacted_from"))
		{
			KlJsonReader cit;
			KlJsonValue cv;
			int			ccap = 0;

			if (v.type != KL_JSON_ARRAY)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("manifest \"%s\" has an invalid \"compacted_from\"", path)));
			kl_json_array_open(&cit, v.start, v.start + v.len, KL_JSON_MAX_DEPTH);
			while (kl_json_array_next(&cit, &cv))
			{
				char	   *id = kl_manifest_text(&cv, path, "compacted_from");

				if (id == NULL || strlen(id) != KL_BATCH_ID_LEN)
					ereport(ERROR,
							(errcode(ERRCODE_DATA_CORRUPTED),
							 errmsg("manifest \"%s\" has an invalid \"compacted_from\"", path)));
				if (b->ncompacted_from == ccap)
				{
					ccap = Max(ccap * 2, 16);
					b->compacted_from = b->compacted_from ?
						repalloc(b->compacted_from, sizeof(char *) * ccap) :
						palloc(sizeof(char *) * ccap);
				}
				b->compacted_from[b->ncompacted_from++] = id;
			}
			if (cit.error)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("manifest \"%s\" is not valid JSON: %s", path, cit.error)));
		}
		else if (KEY_IS(k, "files"))
		{
			KlJsonReader fit;
			KlJsonValue fk;
			KlJsonValue fv;

			kl_json_object_open(&fit, v.start, v.start + v.len, KL_JSON_MAX_DEPTH);
			while (kl_json_object_next(&fit, &fk, &fv))
			{
				int			idx = -1;
				KlJsonReader ait;
				KlJsonValue ak;
				KlJsonValue av;

				for (int i = 0; i < KL_NFILES; i++)
				{
					for (int c = 0; c < 2; c++)
					{
						const char *name = kl_batch_file_names[c][i];

						if (kl_json_key_is(&fk, name, strlen(name)))
						{
							idx = i;
							named_zst |= (c == 1);
						}
					}
				}
				if (idx < 0)
					continue;
				kl_json_object_open(&ait, fv.start, fv.start + fv.len, KL_JSON_MAX_DEPTH);
				while (kl_json_object_next(&ait, &ak, &av))
				{
					if (KEY_IS(ak, "bytes"))
						b->files[idx].bytes = kl_manifest_int(&av, path, "bytes");
					else if (KEY_IS(ak, "raw_bytes"))
						b->files[idx].raw_bytes = kl_manifest_int(&av, path, "raw_bytes");
					else if (KEY_IS(ak, "lines"))
						b->files[idx].lines = kl_manifest_int(&av, path, "lines");
					else if (KEY_IS(ak, "crc32c"))
						b->files[idx].crc32c = (uint32) kl_manifest_int(&av, path, "crc32c");
					else if (KEY_IS(ak, "sha256"))
					{
						char	   *hex = kl_manifest_text(&av, path, "sha256");

						if (hex == NULL || strlen(hex) != KL_SHA256_HEX_LEN)
							ereport(ERROR,
									(errcode(ERRCODE_DATA_CORRUPTED),
									 errmsg("manifest \"%s\" has an invalid sha256", path)));
						strlcpy(b->files[idx].sha256, hex, sizeof(b->files[idx].sha256));
					}
				}
			}
		}
		else if (KEY_IS(k, "statuses"))
			statuses = kl_manifest_text(&v, path, "statuses");
		else if (KEY_IS(k, "fingerprint_prefixes"))
			prefixes = kl_manifest_text(&v, path, "fingerprint_prefixes");
		else if (KEY_IS(k, "fingerprints_sha256"))
			fingerprints_sha256 = kl_manifest_text(&v, path, "fingerprints_sha256");
		else if (KEY_IS(k, "reduced_from"))
			reduced_from = (kl_manifest_text(&v, path, "reduced_from") != NULL);
		else if (KEY_IS(k, "offsets"))
		{
			KlJsonReader oit;
			KlJsonValue ov;
			int			ocap = 0;

			if (v.type != KL_JSON_ARRAY)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("manifest \"%s\" has an invalid \"offsets\"", path)));
			noffsets = 0;
			kl_json_array_open(&oit, v.start, v.start + v.len, KL_JSON_MAX_DEPTH);
			while (kl_json_array_next(&oit, &ov))
			{
				if (noffsets == ocap)
				{
					ocap = Max(ocap * 2, 256);
					offsets = offsets ? repalloc_huge(offsets, sizeof(int64) * ocap) :
						MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * ocap);
				}
				offsets[noffsets++] = kl_manifest_int(&ov, path, "offsets");
			}
			if (oit.error)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("manifest \"%s\" is not valid JSON: %s", path, oit.error)));
		}
		else if (KEY_IS(k, "entries"))
		{
			KlJsonReader eit;
			KlJsonValue ev;

			kl_json_array_open(&eit, v.start, v.start + v.len, KL_JSON_MAX_DEPTH);
			while (kl_json_array_next(&eit, &ev))
			{
				if (ev.type != KL_JSON_OBJECT)
					ereport(ERROR,
							(errcode(ERRCODE_DATA_CORRUPTED),
							 errmsg("manifest \"%s\" has an invalid entry", path)));
				if (*n == cap)
				{
					cap = Max(cap * 2, 256);
					*recs = *recs ? repalloc_huge(*recs, sizeof(KlRecord) * cap) :
						MemoryContextAllocHuge(CurrentMemoryContext, sizeof(KlRecord) * cap);
				}
				kl_manifest_parse_entry(&ev, &(*recs)[*n], path);
				(*n)++;
			}
			if (eit.error)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("manifest \"%s\" is not valid JSON: %s", path, eit.error)));
		}
	}
	if (!kl_json_object_finish(&it))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest \"%s\" is not valid JSON: %s", path, it.error)));
	if (statuses != NULL || prefixes != NULL || fingerprints_sha256 != NULL || reduced_from)
		kl_manifest_reduced_entries(path, b, statuses, prefixes, fingerprints_sha256,
									reduced_from, offsets, noffsets, recs, n);
	if (*n == 0 || *n != b->record_count ||
		b->counts[KL_FILE_ACCEPTED] + b->counts[KL_FILE_DUPLICATES] +
		b->counts[KL_FILE_QUARANTINE] != *n)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest \"%s\" does not add up", path),
				 errdetail("It lists %d entries for %d new coordinates.", *n, b->record_count)));
	for (int i = 1; i < *n; i++)
	{
		if ((*recs)[i].offset <= (*recs)[i - 1].offset)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("manifest \"%s\" lists offsets out of order", path)));
	}
	if ((*recs)[0].offset != b->first_offset || (*recs)[*n - 1].offset != b->last_offset)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest \"%s\" has entries outside its offset range", path)));
	/* a compressed batch's files are named *.zst, and only its */
	if (named_zst != (b->compression == KL_COMPRESS_ZSTD))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("manifest \"%s\" names its files against its \"compression\"", path)));
	for (int i = 0; i < KL_NFILES; i++)
	{
		if (b->compression == KL_COMPRESS_NONE)
			b->files[i].raw_bytes = b->files[i].bytes;
		else if (b->files[i].raw_bytes < 0 || b->files[i].raw_bytes > MaxAllocHugeSize)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("manifest \"%s\" has an invalid \"raw_bytes\"", path)));
	}
}

/* ----------------------------------------------------------------
 *		Reading a line: the strict reader
 * ----------------------------------------------------------------
 */

/*
 * kl_line_error
 *		A landed line does not have the shape we wrote: the file was altered
 *		in a way its CRC could not see, or written by something else.
 */
static void
kl_line_error(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("landed line is malformed: %s", what),
			 errdetail("Every line of a landed file is a JSON object written by land(); this one is not."),
			 errhint("Run kafka_lake.verify() on the source to check its files against their SHA-256.")));
}

/*
 * kl_line_reset
 *		Forget what the previous line found.
 */
static inline void
kl_line_reset(KlLine *line)
{
	line->event.type = KL_JSON_NULL;
	line->raw_value.type = KL_JSON_NULL;
	line->raw_value_base64.type = KL_JSON_NULL;
	line->validation_error.type = KL_JSON_NULL;
	line->key.type = KL_JSON_NULL;
	line->key_base64.type = KL_JSON_NULL;
	line->headers.type = KL_JSON_NULL;
	line->has_ids = false;
	line->business_date.type = KL_JSON_NULL;
	line->event_id.type = KL_JSON_NULL;
	line->offset = -1;
	line->partition = -1;
	line->timestamp_ms = -1;
	for (int i = 0; i < line->nfields; i++)
		line->fields[i].type = KL_JSON_NULL;
}

/*
 * kl_escaped_key_is
 *		Does a key written with escapes (the span of its string, quotes
 *		included) decode to name?  1 yes, 0 no, -1 when its escapes are not
 *		valid JSON.  Land() never escapes a field name, but a JSON writer
 *		may.
 */
static int
kl_escaped_key_is(const char *start, size_t len, const char *name, int namelen)
{
	KlJsonReader r;
	KlJsonValue key;
	StringInfoData buf;
	int			result;

	kl_json_init(&r, start, len, 1);
	if (!kl_json_parse_document(&r, &key) || key.type != KL_JSON_STRING)
		return -1;
	initStringInfo(&buf);
	kl_json_decode_string(&key, &buf);
	result = (buf.len == namelen && memcmp(buf.data, name, namelen) == 0) ? 1 : 0;
	pfree(buf.data);
	return result;
}

static pg_attribute_always_inline int kl_key_cmp(const char *a, int alen, const char *b, int blen);

/*
 * kl_line_parse_strict
 *		kl_line_parse with the strict reader from the first byte: the line
 *		must be valid JSON, and every member asked for is validated (the
 *		first "event" and "kafka" when they are asked for; one not asked
 *		for, or a second one, is JSON and nothing more, as for the fast
 *		path, so that the two read every line alike).  The fallback of the
 *		fast path, and the one place that reports what is wrong with a line.
 */
static void
kl_line_parse_strict(KlLine *line, const char *text, size_t len, int want)
{
	KlJsonReader it;
	KlJsonValue k;
	KlJsonValue v;
	int			found_fields = 0;
	bool		need_event = (want & KL_WANT_EVENT) || line->nfields > 0;
	bool		need_kafka = (want & KL_WANT_KAFKA) != 0;
	bool		need_quarantine = (want & KL_WANT_QUARANTINE) != 0;
	bool		need_ids = (want & KL_WANT_IDS) != 0;

	bool		ids_ahead = true;	/* no member yet at or past "business_date" */

	kl_line_reset(line);
	kl_json_object_open(&it, text, text + len, KL_JSON_MAX_DEPTH);
	while ((need_event || need_kafka || need_quarantine || need_ids) &&
		   kl_json_object_next(&it, &k, &v))
	{
		bool		in_place = ids_ahead;

		/*
		 * The line's own ids are a "business_date" where land() writes it,
		 * keys sorted: before every member whose key sorts after it.  As in
		 * the fast path, which stops once it has what it needs and never
		 * sees a "business_date" out of that place.
		 */
		if (k.has_escapes || kl_key_cmp(k.start + 1, (int) k.len - 2, "business_date", 13) >= 0)
			ids_ahead = false;
		if (KEY_IS(k, "business_date"))
		{
			if (in_place)
			{
				line->has_ids = true;
				line->business_date = v;
			}
		}
		else if (KEY_IS(k, "event_id"))
			line->event_id = v;	/* the line's own only beside business_date */
		else if (KEY_IS(k, "event") && need_event)
		{
			KlJsonReader eit;
			KlJsonValue ek;
			KlJsonValue evv;

			if (v.type != KL_JSON_OBJECT)
				kl_line_error("\"event\" is not an object");
			line->event = v;
			if (line->nfields > 0)
			{
				kl_json_object_open(&eit, v.start, v.start + v.len, KL_JSON_MAX_DEPTH);
				while (found_fields < line->nfields && kl_json_object_next(&eit, &ek, &evv))
				{
					for (int i = 0; i < line->nfields; i++)
					{
						if (line->fields[i].type == KL_JSON_NULL &&
							(ek.has_escapes ?
							 kl_escaped_key_is(ek.start, ek.len, line->field_names[i],
											   line->field_name_lens[i]) == 1 :
							 kl_json_key_is(&ek, line->field_names[i], line->field_name_lens[i])))
						{
							line->fields[i] = evv;
							if (evv.type != KL_JSON_NULL)
								found_fields++;
						}
					}
				}
				if (eit.error)
					kl_line_error(eit.error);
			}
			need_event = false;
		}
		else if (KEY_IS(k, "kafka") && need_kafka)
		{
			KlJsonReader kit;
			KlJsonValue kk;
			KlJsonValue kv;

			if (v.type != KL_JSON_OBJECT)
				kl_line_error("\"kafka\" is not an object");
			kl_json_object_open(&kit, v.start, v.start + v.len, KL_JSON_MAX_DEPTH);
			while (kl_json_object_next(&kit, &kk, &kv))
			{
				if (KEY_IS(kk, "offset"))
				{
					if (kv.type != KL_JSON_NUMBER || !kl_json_parse_int64(kv.start, kv.len, &line->offset))
						kl_line_error("invalid offset");
				}
				else if (KEY_IS(kk, "partition"))
				{
					int64		p;

					if (kv.type != KL_JSON_NUMBER || !kl_json_parse_int64(kv.start, kv.len, &p))
						kl_line_error("invalid partition");
					line->partition = (int32) p;
				}
				else if (KEY_IS(kk, "timestamp_ms"))
				{
					if (kv.type == KL_JSON_NUMBER &&
						!kl_json_parse_int64(kv.start, kv.len, &line->timestamp_ms))
						kl_line_error("invalid timestamp_ms");
				}
				else if (KEY_IS(kk, "key"))
					line->key = kv;
				else if (KEY_IS(kk, "key_base64"))
					line->key_base64 = kv;
				else if (KEY_IS(kk, "headers"))
					line->headers = kv;
			}
			if (kit.error)
				kl_line_error(kit.error);
			if (line->offset < 0)
				kl_line_error("no offset");
			need_kafka = false;
		}
		else if (KEY_IS(k, "raw_value"))
			line->raw_value = v;
		else if (KEY_IS(k, "raw_value_base64"))
			line->raw_value_base64 = v;
		else if (KEY_IS(k, "validation_error"))
		{
			line->validation_error = v;
			need_quarantine = false;
		}
	}
	if (it.error)
		kl_line_error(it.error);
	/*
	 * "business_date" is what says that a line carries its ids, as in the
	 * fast path: a top-level "event_id" without it is not the line's own
	 * (readers then take the event's field).
	 */
	if (!line->has_ids)
		line->event_id.type = KL_JSON_NULL;
}

/* ----------------------------------------------------------------
 *		Reading a line: the fast path
 *
 * Each function takes the position of a token and the end of the line and
 * returns the position after it, or NULL when the bytes are not what the
 * layout (or, for a value handed out, valid JSON) has there; none reads at
 * or past the end.
 * ----------------------------------------------------------------
 */

/*
 * kl_skip_string
 *		Skip a string; p is at its opening quote.  Structure only: the bytes
 *		between the quotes are not checked.
 */
static inline const char *
kl_skip_string(const char *p, const char *end)
{
	p++;
	for (;;)
	{
#ifdef __SSE2__
		/* 16 bytes at a time while a whole block lies within the line */
		const __m128i quote = _mm_set1_epi8('"');
		const __m128i backslash = _mm_set1_epi8('\\');

		while (end - p >= 16)
		{
			__m128i		block = _mm_loadu_si128((const __m128i *) p);
			int			mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(block, quote),
															  _mm_cmpeq_epi8(block, backslash)));

			if (mask != 0)
			{
				p += pg_rightmost_one_pos32(mask);
				break;
			}
			p += 16;
		}
#endif
		while (p < end && *p != '"' && *p != '\\')
			p++;
		if (p >= end)
			return NULL;
		if (*p == '"')
			return p + 1;
		if (end - p < 2)
			return NULL;
		p += 2;
	}
}

/*
 * kl_skip_value
 *		Skip any value.  Containers are skipped by counting brackets outside
 *		strings, without checking what lies between them.
 */
static pg_attribute_always_inline const char *
kl_skip_value(const char *p, const char *end)
{
	const char *start = p;

	if (p >= end)
		return NULL;
	switch (*p)
	{
		case '"':
			return kl_skip_string(p, end);
		case '{':
		case '[':
			{
				int			depth = 0;

				while (p < end)
				{
					char		c = *p;

					if (c == '"')
					{
						p = kl_skip_string(p, end);
						if (p == NULL)
							return NULL;
						continue;
					}
					if (c == '{' || c == '[')
						depth++;
					else if ((c == '}' || c == ']') && --depth == 0)
						return p + 1;
					p++;
				}
				return NULL;
			}
		default:
			while (p < end && *p != ',' && *p != '}' && *p != ']' &&
				   *p != ' ' && *p != '\n' && *p != '\r' && *p != '\t')
				p++;
			return p > start ? p : NULL;
	}
}

/*
 * kl_fast_string
 *		Read a string as json.c's strict reader would (the same checks, the
 *		same KlJsonValue), sixteen bytes at a time over plain ASCII; p is at
 *		its opening quote.
 */
static pg_attribute_always_inline const char *
kl_fast_string(const char *p, const char *end, KlJsonValue *v)
{
	const char *start = p++;
	bool		escapes = false;

	for (;;)
	{
		unsigned char c;

#ifdef __SSE2__
		{
			const __m128i quote = _mm_set1_epi8('"');
			const __m128i backslash = _mm_set1_epi8('\\');
			const __m128i space = _mm_set1_epi8(0x20);

			while (end - p >= 16)
			{
				__m128i		block = _mm_loadu_si128((const __m128i *) p);

				/* signed: below 0x20 are the control and the non-ASCII bytes */
				__m128i		special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(block, quote),
																_mm_cmpeq_epi8(block, backslash)),
												   _mm_cmplt_epi8(block, space));
				int			mask = _mm_movemask_epi8(special);

				if (mask != 0)
				{
					p += pg_rightmost_one_pos32(mask);
					break;
				}
				p += 16;
			}
		}
#endif
		while (p < end && (unsigned char) *p >= 0x20 && (unsigned char) *p < 0x80 &&
			   *p != '"' && *p != '\\')
			p++;
		if (p >= end)
			return NULL;
		c = (unsigned char) *p;
		if (c == '"')
			break;
		if (c == '\\')
		{
			escapes = true;
			if (end - p < 2)
				return NULL;
			switch (p[1])
			{
				case '"':
				case '\\':
				case '/':
				case 'b':
				case 'f':
				case 'n':
				case 'r':
				case 't':
					p += 2;
					break;
				case 'u':
					{
						int			cp;

						if (end - p < 6 || (cp = kl_json_hex4(p + 2)) < 0)
							return NULL;
						p += 6;
						if (cp >= 0xD800 && cp <= 0xDBFF)
						{
							int			lo;

							if (end - p < 6 || p[0] != '\\' || p[1] != 'u' ||
								(lo = kl_json_hex4(p + 2)) < 0xDC00 || lo > 0xDFFF)
								return NULL;
							p += 6;
						}
						else if (cp >= 0xDC00 && cp <= 0xDFFF)
							return NULL;
						break;
					}
				default:
					return NULL;
			}
			continue;
		}
		if (c < 0x20)
			return NULL;
		{
			int			n = kl_utf8_sequence_length((const unsigned char *) p, end - p);

			if (n == 0)
				return NULL;
			p += n;
		}
	}
	v->type = KL_JSON_STRING;
	v->start = start;
	v->len = p + 1 - start;
	v->has_escapes = escapes;
	v->is_integer = false;
	return p + 1;
}

/*
 * kl_fast_number
 *		Read a number per RFC 8259 as json.c does (is_integer: no fraction,
 *		no exponent).
 */
static pg_attribute_always_inline const char *
kl_fast_number(const char *p, const char *end, KlJsonValue *v)
{
	const char *start = p;
	bool		integer = true;

	if (p < end && *p == '-')
		p++;
	if (p >= end)
		return NULL;
	if (*p == '0')
	{
		p++;
		if (p < end && *p >= '0' && *p <= '9')
			return NULL;
	}
	else if (*p >= '1' && *p <= '9')
	{
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	else
		return NULL;
	if (p < end && *p == '.')
	{
		integer = false;
		p++;
		if (p >= end || *p < '0' || *p > '9')
			return NULL;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E'))
	{
		integer = false;
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || *p < '0' || *p > '9')
			return NULL;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	v->type = KL_JSON_NUMBER;
	v->start = start;
	v->len = p - start;
	v->has_escapes = false;
	v->is_integer = integer;
	return p;
}

/*
 * kl_fast_literal
 *		true, false or null.
 */
static inline const char *
kl_fast_literal(const char *p, const char *end, const char *word, size_t n,
				KlJsonType type, KlJsonValue *v)
{
	if ((size_t) (end - p) < n || memcmp(p, word, n) != 0)
		return NULL;
	v->type = type;
	v->start = p;
	v->len = n;
	v->has_escapes = false;
	v->is_integer = false;
	return p + n;
}

/*
 * kl_fast_value
 *		Read a member's value into *v, validated: scalars here, objects and
 *		arrays by json.c's reader (as a member value, at its depth).
 */
static pg_attribute_always_inline const char *
kl_fast_value(const char *p, const char *end, KlJsonValue *v)
{
	if (p >= end)
		return NULL;
	switch (*p)
	{
		case '"':
			return kl_fast_string(p, end, v);
		case '{':
		case '[':
			{
				KlJsonReader r;

				kl_json_init(&r, p, end - p, KL_JSON_MAX_DEPTH);
				if (!kl_json_read_member_value(&r, v))
					return NULL;
				return r.p;
			}
		case 't':
			return kl_fast_literal(p, end, "true", 4, KL_JSON_TRUE, v);
		case 'f':
			return kl_fast_literal(p, end, "false", 5, KL_JSON_FALSE, v);
		case 'n':
			return kl_fast_literal(p, end, "null", 4, KL_JSON_NULL, v);
		default:
			return kl_fast_number(p, end, v);
	}
}

/* An object of the layout being read member by member */
typedef struct KlLayoutObject
{
	const char *p;				/* next byte */
	const char *end;			/* end of the line */
	bool		first;			/* no member read yet */
	const char *prev;			/* the previous member's key */
	int			prevlen;
} KlLayoutObject;

/*
 * kl_layout_open
 *		Start on the '{' at p.
 */
static inline bool
kl_layout_open(KlLayoutObject *o, const char *p, const char *end)
{
	if (p >= end || *p != '{')
		return false;
	o->p = p + 1;
	o->end = end;
	o->first = true;
	o->prev = NULL;
	o->prevlen = 0;
	return true;
}

/*
 * kl_key_cmp
 *		Order of two keys (bytes, then length): json.dumps' sort_keys order
 *		(code points; UTF-8 keeps their order in its bytes).
 */
static pg_attribute_always_inline int
kl_key_cmp(const char *a, int alen, const char *b, int blen)
{
	int			c;

	if (alen > 0 && blen > 0 && a[0] != b[0])
		return (unsigned char) a[0] - (unsigned char) b[0];
	c = memcmp(a, b, Min(alen, blen));
	return c != 0 ? c : alen - blen;
}

/*
 * kl_layout_key
 *		The next member's key, as the layout writes it: '"' right after the
 *		'{', else ', "', then the key without escapes, '"', ': '.  (A key's
 *		bytes are compared, never handed out; like a skipped value, they are
 *		vouched for by the file's CRC.)  Leaves
 *		o->p at the member's value, which the caller reads or skips.  1 for a
 *		member, 0 at the closing brace (o->p past it), -1 on anything else.
 *		With ordered, a key must also follow the previous one.
 */
static pg_attribute_always_inline int
kl_layout_key(KlLayoutObject *o, const char **key, int *keylen, bool ordered)
{
	const char *p = o->p;
	const char *end = o->end;
	const char *k;

	if (p >= end)
		return -1;
	if (*p == '}')
	{
		o->p = p + 1;
		return 0;
	}
	if (o->first)
	{
		if (*p != '"')
			return -1;
		p++;
	}
	else
	{
		if (end - p < 3 || p[0] != ',' || p[1] != ' ' || p[2] != '"')
			return -1;
		p += 3;
	}
	k = p;
#ifdef __SSE2__
	if (end - p >= 16)
	{
		/* a key of the layout fits in one block, mostly */
		__m128i		block = _mm_loadu_si128((const __m128i *) p);
		int			mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(block, _mm_set1_epi8('"')),
														  _mm_cmpeq_epi8(block, _mm_set1_epi8('\\'))));

		p += mask != 0 ? pg_rightmost_one_pos32(mask) : 16;
	}
#endif
	while (p < end && *p != '"' && *p != '\\')
		p++;
	if (p >= end || *p != '"' || end - p < 3 || p[1] != ':' || p[2] != ' ')
		return -1;
	*key = k;
	*keylen = (int) (p - k);
	if (ordered && o->prev != NULL && kl_key_cmp(o->prev, o->prevlen, k, *keylen) >= 0)
		return -1;
	o->prev = k;
	o->prevlen = *keylen;
	o->p = p + 3;
	o->first = false;
	return 1;
}

#define LAYOUT_KEY_IS(k, len, name) \
	((len) == sizeof(name) - 1 && memcmp((k), (name), sizeof(name) - 1) == 0)

/*
 * kl_layout_expect
 *		Is the next member's head exactly head ('"<key>": ', headlen bytes,
 *		0: never), after ', ' unless it is the first?  Then it is taken as
 *		kl_layout_key would take it; else nothing moves.  The common case
 *		of a line of the layout, where the member asked for next is the very
 *		next one, costs one comparison.
 */
static pg_attribute_always_inline bool
kl_layout_expect(KlLayoutObject *o, const char *head, int headlen, bool ordered)
{
	const char *q = o->first ? o->p : o->p + 2;

	if (headlen == 0 || o->end - q < headlen ||
		(!o->first && (o->p[0] != ',' || o->p[1] != ' ')) ||
		q[1] != head[1] || memcmp(q, head, headlen) != 0)
		return false;
	if (ordered && o->prev != NULL && kl_key_cmp(o->prev, o->prevlen, q + 1, headlen - 4) >= 0)
		return false;
	o->prev = q + 1;
	o->prevlen = headlen - 4;
	o->p = q + headlen;
	o->first = false;
	return true;
}

/*
 * kl_fast_event
 *		The event fields asked for, from the event object at o->p: its keys
 *		merged with the sorted names asked for.  A name passed by a greater
 *		key is absent, which holds only if every later key is greater still,
 *		so from then on (or once a field was null, which a later duplicate
 *		could fill, as the strict reader would) the keys are checked to
 *		ascend up to the end of the object.  Unless more of the line is
 *		needed (more), stops once every field was found, not null; else
 *		leaves o->p past the object.
 */
static pg_attribute_always_inline bool
kl_fast_event(KlLine *line, KlLayoutObject *o, bool more)
{
	KlLayoutObject ev;
	const char *k;
	int			klen;
	int			rc = 0;
	int			next = 0;		/* next name asked for, in sorted order */
	int			n = line->nfields;
	bool		verify = false;

	if (!kl_layout_open(&ev, o->p, o->end))
		return false;
	for (;;)
	{
		int			cmp = 1;

		if (next < n && kl_layout_expect(&ev, line->sorted_heads[next],
										 line->sorted_head_lens[next], verify))
			cmp = 0;
		else
		{
			rc = kl_layout_key(&ev, &k, &klen, verify);
			if (rc <= 0)
				break;
			while (next < n &&
				   (cmp = kl_key_cmp(line->field_names[line->field_order[next]],
									 line->field_name_lens[line->field_order[next]],
									 k, klen)) < 0)
			{
				/* absent: nothing of that name came before, and nothing will */
				next++;
				verify = true;
			}
		}
		if (next < n && cmp == 0)
		{
			KlJsonValue *f = &line->fields[line->field_order[next]];

			ev.p = kl_fast_value(ev.p, ev.end, f);
			if (ev.p == NULL)
				return false;
			if (f->type == KL_JSON_NULL)
				verify = true;
			/* the same name asked for twice gets the same value */
			while (++next < n &&
				   kl_key_cmp(line->field_names[line->field_order[next]],
							  line->field_name_lens[line->field_order[next]],
							  line->field_names[line->field_order[next - 1]],
							  line->field_name_lens[line->field_order[next - 1]]) == 0)
				line->fields[line->field_order[next]] = *f;
			if (next == n && !verify && !more)
				return true;
		}
		else
		{
			ev.p = kl_skip_value(ev.p, ev.end);
			if (ev.p == NULL)
				return false;
		}
	}
	if (rc < 0)
		return false;
	o->p = ev.p;
	return true;
}

/* The members of the kafka envelope, in the layout's order */
typedef enum KlKafkaMember
{
	KL_KAFKA_HEADERS,
	KL_KAFKA_KEY,
	KL_KAFKA_KEY_BASE64,
	KL_KAFKA_OFFSET,
	KL_KAFKA_PARTITION,
	KL_KAFKA_TIMESTAMP_MS,
	KL_KAFKA_TOPIC,
	KL_KAFKA_NMEMBERS,
	KL_KAFKA_OTHER = KL_KAFKA_NMEMBERS
} KlKafkaMember;

static const char *const kl_kafka_heads[KL_KAFKA_NMEMBERS] = {
	"\"headers\": ", "\"key\": ", "\"key_base64\": ", "\"offset\": ", "\"partition\": ",
	"\"timestamp_ms\": ", "\"topic\": "
};
static const int kl_kafka_head_lens[KL_KAFKA_NMEMBERS] = {11, 7, 14, 10, 13, 16, 9};

/*
 * kl_fast_kafka
 *		The members of the kafka envelope at o->p, keys ascending; o->p ends
 *		past it.  Each member is first expected where the layout puts it.
 */
static bool
kl_fast_kafka(KlLine *line, KlLayoutObject *o)
{
	KlLayoutObject ko;
	int			expect = 0;		/* the member the layout has next */
	KlJsonValue n;

	if (!kl_layout_open(&ko, o->p, o->end))
		return false;
	for (;;)
	{
		KlKafkaMember m = KL_KAFKA_OTHER;

		for (int i = expect; i < KL_KAFKA_NMEMBERS; i++)
		{
			if (kl_layout_expect(&ko, kl_kafka_heads[i], kl_kafka_head_lens[i], true))
			{
				m = (KlKafkaMember) i;
				expect = i + 1;
				break;
			}
		}
		if (m == KL_KAFKA_OTHER)
		{
			const char *k;
			int			klen;
			int			rc = kl_layout_key(&ko, &k, &klen, true);

			if (rc < 0)
				return false;
			if (rc == 0)
				break;
			for (int i = 0; i < KL_KAFKA_NMEMBERS; i++)
			{
				if (klen == kl_kafka_head_lens[i] - 4 &&
					memcmp(k, kl_kafka_heads[i] + 1, klen) == 0)
					m = (KlKafkaMember) i;
			}
		}
		switch (m)
		{
			case KL_KAFKA_HEADERS:
				ko.p = kl_fast_value(ko.p, ko.end, &line->headers);
				break;
			case KL_KAFKA_KEY:
				ko.p = kl_fast_value(ko.p, ko.end, &line->key);
				break;
			case KL_KAFKA_KEY_BASE64:
				ko.p = kl_fast_value(ko.p, ko.end, &line->key_base64);
				break;
			case KL_KAFKA_OFFSET:
				ko.p = kl_fast_value(ko.p, ko.end, &n);
				if (ko.p == NULL || n.type != KL_JSON_NUMBER ||
					!kl_json_parse_int64(n.start, n.len, &line->offset))
					return false;
				break;
			case KL_KAFKA_PARTITION:
				{
					int64		p;

					ko.p = kl_fast_value(ko.p, ko.end, &n);
					if (ko.p == NULL || n.type != KL_JSON_NUMBER ||
						!kl_json_parse_int64(n.start, n.len, &p))
						return false;
					line->partition = (int32) p;
				}
				break;
			case KL_KAFKA_TIMESTAMP_MS:
				ko.p = kl_fast_value(ko.p, ko.end, &n);
				if (ko.p == NULL ||
					(n.type == KL_JSON_NUMBER &&
					 !kl_json_parse_int64(n.start, n.len, &line->timestamp_ms)))
					return false;
				break;
			default:
				ko.p = kl_skip_value(ko.p, ko.end);
				break;
		}
		if (ko.p == NULL)
			return false;
	}
	if (line->offset < 0)
		return false;
	o->p = ko.p;
	return true;
}

/*
 * kl_line_parse_fast
 *		kl_line_parse over the layout land() writes (see the file header);
 *		false at the first byte that is not that layout (the caller then
 *		reads the line strictly).
 */
static bool
kl_line_parse_fast(KlLine *line, const char *text, size_t len, int want)
{
	KlLayoutObject top;
	const char *k;
	int			klen;
	int			rc;
	bool		need_event = (want & KL_WANT_EVENT) || line->nfields > 0;
	bool		need_kafka = (want & KL_WANT_KAFKA) != 0;
	bool		need_quarantine = (want & KL_WANT_QUARANTINE) != 0;
	bool		need_ids = (want & KL_WANT_IDS) != 0;
	bool		need_event_id = false;	/* a line with ids, after its event */
	bool		ids_ahead = need_ids;	/* business_date may still come */

	kl_line_reset(line);
	if (!kl_layout_open(&top, text, text + len))
		return false;
	while (need_event || need_kafka || need_quarantine || need_event_id || ids_ahead)
	{
		rc = kl_layout_key(&top, &k, &klen, true);
		if (rc < 0)
			return false;
		if (rc == 0)
			break;
		/* keys ascend: past "business_date", the line has no ids */
		if (ids_ahead && kl_key_cmp(k, klen, "business_date", 13) >= 0)
			ids_ahead = false;
		if (LAYOUT_KEY_IS(k, klen, "business_date"))
		{
			/* the first member of a line that carries its ids */
			line->has_ids = true;
			need_event_id = need_ids;
			if (need_ids)
				top.p = kl_fast_value(top.p, top.end, &line->business_date);
			else
				top.p = kl_skip_value(top.p, top.end);
		}
		else if (need_event_id && LAYOUT_KEY_IS(k, klen, "event_id"))
		{
			top.p = kl_fast_value(top.p, top.end, &line->event_id);
			need_event_id = false;
		}
		else if (LAYOUT_KEY_IS(k, klen, "event"))
		{
			const char *start = top.p;

			if (start >= top.end || *start != '{')
				return false;
			if (want & KL_WANT_EVENT)
			{
				top.p = kl_fast_value(start, top.end, &line->event);
				if (top.p == NULL)
					return false;
			}
			if (line->nfields > 0)
			{
				top.p = start;
				if (!kl_fast_event(line, &top, need_kafka || need_quarantine || need_event_id))
					return false;
				if (!need_kafka && !need_quarantine && !need_event_id)
					return true;	/* stopped at the last field */
			}
			else if (!(want & KL_WANT_EVENT) &&
					 (top.p = kl_skip_value(top.p, top.end)) == NULL)
				return false;
			need_event = false;
		}
		else if (need_kafka && LAYOUT_KEY_IS(k, klen, "kafka"))
		{
			if (!kl_fast_kafka(line, &top))
				return false;
			need_kafka = false;
		}
		else if (need_quarantine && LAYOUT_KEY_IS(k, klen, "raw_value"))
			top.p = kl_fast_value(top.p, top.end, &line->raw_value);
		else if (need_quarantine && LAYOUT_KEY_IS(k, klen, "raw_value_base64"))
			top.p = kl_fast_value(top.p, top.end, &line->raw_value_base64);
		else if (need_quarantine && LAYOUT_KEY_IS(k, klen, "validation_error"))
		{
			top.p = kl_fast_value(top.p, top.end, &line->validation_error);
			need_quarantine = false;
		}
		else
			top.p = kl_skip_value(top.p, top.end);
		if (top.p == NULL)
			return false;
	}
	return true;
}

/*
 * kl_line_parse
 *		Find the members of one landed line that the caller asks for (flags
 *		in want, event field names in line->field_names).  Stops as soon as
 *		everything asked for was found.  Every value handed out is valid
 *		JSON; a line that is not what land() writes is an ERROR (XX001).
 *
 *		line->event is the event object, validated, when KL_WANT_EVENT
 *		asks for it (KL_JSON_NULL for a line without one).
 */
void
kl_line_parse(KlLine *line, const char *text, size_t len, int want)
{
	if (likely(kl_line_parse_fast(line, text, len, want)))
		return;
	line->parsed_strictly++;
	kl_line_parse_strict(line, text, len, want);
}

/*
 * kl_line_set_fields
 *		Name the event fields kl_line_parse should find (and start its count
 *		of lines read strictly afresh).
 */
void
kl_line_set_fields(KlLine *line, int nfields, const char **names)
{
	line->nfields = nfields;
	line->field_names = names;
	line->field_name_lens = palloc(sizeof(int) * Max(nfields, 1));
	line->field_order = palloc(sizeof(int) * Max(nfields, 1));
	line->fields = palloc0(sizeof(KlJsonValue) * Max(nfields, 1));
	line->parsed_strictly = 0;
	line->sorted_heads = palloc(sizeof(char *) * Max(nfields, 1));
	line->sorted_head_lens = palloc0(sizeof(int) * Max(nfields, 1));
	for (int i = 0; i < nfields; i++)
	{
		int			j = i;

		line->field_name_lens[i] = strlen(names[i]);
		/* insertion sort by name: a handful of fields */
		while (j > 0 &&
			   kl_key_cmp(names[line->field_order[j - 1]],
						  line->field_name_lens[line->field_order[j - 1]],
						  names[i], line->field_name_lens[i]) > 0)
		{
			line->field_order[j] = line->field_order[j - 1];
			j--;
		}
		line->field_order[j] = i;
	}
	/* the head of each member asked for, as the layout writes it */
	for (int j = 0; j < nfields; j++)
	{
		const char *name = names[line->field_order[j]];
		bool		plain = true;

		for (const char *c = name; *c; c++)
			plain &= (*c != '"' && *c != '\\' && (unsigned char) *c >= 0x20);
		line->sorted_heads[j] = psprintf("\"%s\": ", name);
		line->sorted_head_lens[j] = plain ? strlen(line->sorted_heads[j]) : 0;
	}
}
