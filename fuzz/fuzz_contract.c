/*-------------------------------------------------------------------------
 *
 * fuzz_contract.c
 *	  libFuzzer target: judging a record value against a contract
 *	  (src/contract/contract.c), the code every produced record goes
 *	  through in land().
 *
 * Eight contracts are compiled once (contract_define.c, unchanged): the
 * built-ins machine_event_v1 and json_object; "every_keyword" (bounds,
 * exclusive bounds, lengths, enum, const, date and date-time formats, a
 * business date read in a fixed-offset zone, arrays, a closed nested
 * object, trim and lower, a Kafka header field, rules, additionalProperties
 * false, a value size limit); "nested" (open objects whose extra members
 * are made canonical, objects in arrays in objects, enums of every JSON
 * type, a business date from the Kafka timestamp); a raw contract; and
 * "framed", JSON in Confluent's wire format ("framing": "confluent": an id
 * or a GUID prefix, or none when a __value_schema_id header is offered);
 * "derived", fields taken from paths inside the value (member names, array
 * indexes, alternatives tried in order) and an event_id of two fields;
 * "tombstones", an entity stream whose Kafka tombstones are deletions, for
 * which the rest of the input is a tombstone's Kafka key.  The
 * first byte of the input chooses the contract, the Kafka headers offered
 * (none, or some: one null, one not UTF-8) and the Kafka timestamp; the
 * rest is the record value.
 *
 * Property: a value accepted with a normalised event is judged again as
 * that event (same headers, same timestamp) and is accepted again, to the
 * same bytes, the same event_id and the same business date: normalising is
 * idempotent (an event normalised past the contract's value size limit,
 * which escaping non-ASCII characters can do, is not judged again).  A
 * "derived" event holds its derived fields, which its value may not: it is
 * judged again as the same value instead, which must give the same bytes,
 * and its event_id must be a JSON array.  Every reason of a refusal is valid
 * UTF-8 text.
 *
 * Cannot cover: "pattern" (the backend's regex engine is not available
 * outside a server: pg_shim.c); time zones with DST rules (the shim has
 * UTC and fixed offsets); the SQL around judging (land.c).
 *
 * IDENTIFICATION
 *	  fuzz/fuzz_contract.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "contract/contract.h"
#include "contract/contract_define.h"
#include "pg_shim.h"

static const char every_keyword[] =
"{\"type\": \"object\", \"properties\": {"
"  \"id\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 1000000},"
"  \"code\": {\"type\": \"string\", \"normalize\": [\"trim\", \"lower\"], \"minLength\": 2, \"maxLength\": 8},"
"  \"kind\": {\"type\": \"string\", \"enum\": [\"a\", \"b\", \"\\u00e9\"]},"
"  \"version\": {\"type\": \"integer\", \"const\": 2},"
"  \"price\": {\"type\": \"number\", \"exclusiveMinimum\": 0, \"exclusiveMaximum\": 100.5},"
"  \"cost\": {\"type\": \"number\", \"minimum\": -1e3},"
"  \"weight\": {\"type\": \"number\", \"exclusiveMinimum\": 0.5, \"sql_type\": \"numeric(12,2)\"},"
"  \"day\": {\"type\": \"string\", \"format\": \"date\"},"
"  \"at\": {\"type\": \"string\", \"format\": \"date-time\", \"normalize\": [\"trim\"]},"
"  \"flag\": {\"type\": [\"boolean\", \"null\"]},"
"  \"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\", \"maxLength\": 3, \"normalize\": [\"lower\"]}},"
"  \"who\": {\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", \"normalize\": [\"trim\"]}},"
"           \"required\": [\"name\"], \"additionalProperties\": false},"
"  \"name\": {\"type\": \"string\", \"normalize\": [\"lower\"], \"sql_type\": \"varchar(40)\"},"
"  \"origin\": {\"type\": \"string\", \"header\": \"origin\"}"
"}, \"required\": [\"id\", \"code\", \"day\", \"at\"], \"additionalProperties\": false,"
" \"event_id\": \"id\", \"schema_version\": \"version\","
" \"business_date\": {\"field\": \"at\", \"time_zone\": \"Etc/GMT-9\"},"
" \"rules\": [\"cost <= price\", \"id <> 13\", \"weight > 1\"], \"max_value_bytes\": 2000}";

static const char nested[] =
"{\"type\": \"object\", \"properties\": {"
"  \"order\": {\"type\": \"object\", \"properties\": {"
"     \"lines\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"properties\": {"
"         \"sku\": {\"type\": \"string\", \"normalize\": [\"trim\", \"lower\"], \"minLength\": 1},"
"         \"qty\": {\"type\": \"integer\", \"minimum\": 1}}, \"required\": [\"sku\"]}},"
"     \"ref\": {\"type\": [\"string\", \"integer\"]}},"
"     \"required\": [\"ref\"]},"
"  \"state\": {\"type\": [\"string\", \"number\", \"boolean\", \"null\"], \"enum\": [\"new\", 1, 2.50, true, null]},"
"  \"any\": {\"type\": [\"object\", \"array\", \"string\", \"number\", \"boolean\", \"null\"]},"
"  \"k\": {\"type\": \"string\", \"header\": \"k\", \"normalize\": [\"trim\"]},"
"  \"n\": {\"type\": [\"number\", \"null\"], \"maximum\": 9223372036854775807}"
"}, \"required\": [\"order\", \"k\"], \"event_id\": \"k\","
" \"business_date\": {\"kafka_timestamp\": true, \"time_zone\": \"UTC\"}}";

static const char raw[] = "{\"raw\": true, \"max_value_bytes\": 1000}";
static const char framed[] =
	"{\"type\": \"object\", \"framing\": \"confluent\", \"event_id\": \"id\","
	" \"properties\": {\"id\": {\"type\": \"string\", \"normalize\": [\"trim\"]},"
	" \"n\": {\"type\": \"integer\", \"minimum\": 0}}, \"required\": [\"id\"]}";

static const char derived[] =
	"{\"type\": \"object\", \"properties\": {"
	"  \"a\": {\"type\": [\"object\", \"array\", \"null\"]},"
	"  \"b\": {\"type\": \"object\", \"properties\": {\"c\": {\"type\": \"array\", \"items\": {\"type\": \"object\"}},"
	"           \"s\": {\"type\": \"string\"}}},"
	"  \"id\": {\"type\": \"integer\"},"
	"  \"x\": {\"type\": [\"string\", \"integer\", \"null\"], \"path\": [[\"a\", \"k\"], [\"a\", 1], [\"b\", \"c\", 0, \"k\"]]},"
	"  \"y\": {\"type\": \"string\", \"path\": [\"b\", \"s\"], \"normalize\": [\"trim\", \"lower\"], \"minLength\": 1},"
	"  \"z\": {\"type\": [\"object\", \"array\", \"string\", \"number\", \"boolean\", \"null\"], \"path\": [\"extra\", \"deep\", 2]}"
	"}, \"required\": [\"id\", \"y\"], \"event_id\": [\"id\", \"y\"]}";

static const char tombstones[] =
	"{\"type\": \"object\", \"properties\": {"
	"  \"id\": {\"type\": \"string\", \"normalize\": [\"trim\", \"lower\"], \"minLength\": 1, \"maxLength\": 40},"
	"  \"n\": {\"type\": \"integer\"},"
	"  \"op\": {\"type\": \"string\", \"enum\": [\"c\", \"u\", \"d\"]}"
	"}, \"required\": [\"id\", \"n\", \"op\"],"
	" \"business_date\": {\"kafka_timestamp\": true, \"time_zone\": \"UTC\"},"
	" \"entity\": {\"key\": [\"id\", \"n\"], \"deleted\": {\"field\": \"op\", \"equals\": \"d\", \"tombstones\": true}}}";

#define NCONTRACTS 8
static KlContract *contracts[NCONTRACTS];
static KlPool *out_pool;
static KlPool *scratch_pool;

static const KlHeader headers[] = {
	{"origin", " From-Header ", 13},
	{"k", "\tkey-\xc3\x84 ", 8},
	{"k", "second", 6},
	{"null", NULL, 0},
	{"bad", "\xff\xfe", 2},
	{"__value_schema_id", "\0\0\0\0\1", 5},
};

static KlContract *
compile(const char *name, const char *definition, bool builtin)
{
	KlContract *volatile c = NULL;

	PG_TRY();
	{
		c = kl_contract_compile(name, 1, definition, strlen(definition), builtin,
								TopMemoryContext);
	}
	PG_CATCH();
	{
		fprintf(stderr, "fuzz_contract: %s does not compile: %s\n", name, kl_shim_last_error());
		abort();
	}
	PG_END_TRY();
	return c;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	kl_shim_init();
	contracts[0] = compile("machine_event_v1", kl_builtin_definition("machine_event_v1"), true);
	contracts[1] = compile("json_object", kl_builtin_definition("json_object"), true);
	contracts[2] = compile("every_keyword", every_keyword, false);
	contracts[3] = compile("nested", nested, false);
	contracts[4] = compile("raw", raw, false);
	contracts[5] = compile("framed", framed, false);
	contracts[6] = compile("derived", derived, false);
	contracts[7] = compile("tombstones", tombstones, false);
	out_pool = kl_pool_create(TopMemoryContext, 65536);
	scratch_pool = kl_pool_create(TopMemoryContext, 65536);
	kl_shim_reset();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	KL_FUZZ_RUN({
		const KlContract *c = contracts[(data[0] & 0x0F) % NCONTRACTS];
		KlJudgeInput in;
		KlEvent		ev;
		const char *reason;

		in.value = (data[0] & 0x80) && size == 1 ? NULL : (const char *) data + 1;
		in.value_len = size - 1;
		in.key = NULL;
		in.key_len = 0;
		if (c->tombstones)
		{
			/* a tombstone, its key the rest of the input */
			in.key = in.value;
			in.key_len = in.value_len;
			in.value = NULL;
			in.value_len = 0;
		}
		in.nheaders = (data[0] & 0x10) ? lengthof(headers) : 0;
		in.headers = in.nheaders ? headers : NULL;
		in.timestamp_ms = (data[0] & 0x20) ? -1 :
			(data[0] & 0x40) ? (int64) 1782734400000 : (int64) -86400001;
		kl_pool_reset(out_pool);
		reason = kl_contract_judge(c, &in, out_pool, scratch_pool, &ev);
		if (reason == kl_judge_out_of_memory)
			kl_fuzz_fail("out of memory judging %zu bytes", size);
		if (reason != NULL && !kl_utf8_text_valid(reason, strlen(reason)))
			kl_fuzz_fail("a refusal's reason is not valid UTF-8 text");
		/*
		 * The limit is on record values: an event normalised past it (json.c
		 * escapes every non-ASCII character as \uXXXX) is not judged again.
		 */
		if (reason == NULL && c->tombstones)
		{
			KlJsonReader rd;
			KlJsonValue doc;

			kl_json_init(&rd, ev.json, ev.json_len, KL_JSON_MAX_DEPTH);
			if (!kl_json_parse_document(&rd, &doc) || doc.type != KL_JSON_OBJECT ||
				!ev.has_business_date || ev.event_id != NULL)
				kl_fuzz_fail("a tombstone's event is not an object of its key, with a date and no event_id");
		}
		else if (reason == NULL && c->top.nderived > 0)
		{
			/* the same value again, from a copy of the event (the pools are reused) */
			char	   *json = malloc(ev.json_len);
			KlEvent		ev2;
			const char *reason2;

			memcpy(json, ev.json, ev.json_len);
			if (ev.event_id == NULL || ev.event_id_len < 2 || ev.event_id[0] != '[' ||
				ev.event_id[ev.event_id_len - 1] != ']')
				kl_fuzz_fail("the event_id of several fields is not a JSON array");
			reason2 = kl_contract_judge(c, &in, out_pool, scratch_pool, &ev2);
			if (reason2 != NULL || ev2.json_len != ev.json_len ||
				memcmp(ev2.json, json, ev.json_len) != 0)
			{
				free(json);
				kl_fuzz_fail("a value with derived fields is judged otherwise the second time");
			}
			free(json);
		}
		else if (reason == NULL && ev.json != NULL && ev.json_len <= (size_t) c->max_value_bytes)
		{
			KlJudgeInput in2 = in;
			KlEvent		ev2;
			const char *reason2;
			/* a framed contract's value is framed again (an id, 5 bytes), unless a header names its schema */
			size_t		frame = c->confluent_framing && in.nheaders == 0 ? 5 : 0;
			char	   *framed_json = malloc(ev.json_len + frame);
			char	   *json = framed_json + frame;

			/* the event again, from a copy of its own (the pools are reused) */
			memcpy(framed_json, "\0\0\0\0\1", frame);
			memcpy(json, ev.json, ev.json_len);
			in2.value = framed_json;
			in2.value_len = ev.json_len + frame;
			reason2 = kl_contract_judge(c, &in2, out_pool, scratch_pool, &ev2);
			if (reason2 != NULL)
			{
				fprintf(stderr, "normalised: %.*s\n", (int) ev.json_len, json);
				free(framed_json);
				kl_fuzz_fail("a normalised event is refused when judged again: %s", reason2);
			}
			if (ev2.json_len != ev.json_len || memcmp(ev2.json, json, ev.json_len) != 0)
			{
				fprintf(stderr, "normalised: %.*s\nagain:      %.*s\n", (int) ev.json_len, json,
						(int) ev2.json_len, ev2.json);
				free(framed_json);
				kl_fuzz_fail("normalising a normalised event changes it");
			}
			free(framed_json);
			if ((ev.event_id == NULL) != (ev2.event_id == NULL) ||
				(ev.event_id && (ev.event_id_len != ev2.event_id_len ||
								 memcmp(ev.event_id, ev2.event_id, ev.event_id_len) != 0)))
				kl_fuzz_fail("the event_id of a normalised event changes when judged again");
			if (ev.has_business_date != ev2.has_business_date ||
				ev.business_date != ev2.business_date)
				kl_fuzz_fail("the business date of a normalised event changes when judged again");
		}
	});
	return 0;
}
