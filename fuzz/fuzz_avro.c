/*-------------------------------------------------------------------------
 *
 * fuzz_avro.c
 *	  libFuzzer target: the Avro decoder (src/format/avro.c), its schema
 *	  compiler and Confluent's wire format.
 *
 * The first byte of the input chooses what the rest is:
 *	- below 0xE0: an Avro datum, decoded by one of the (writer, reader)
 *	  pairs of test/fixtures/avro/cases.jsonl (avro_pairs.h: every type and
 *	  logical type, nested and recursive records, unions, maps, arrays,
 *	  resolution with defaults, promotions, aliases and skipped fields),
 *	  the byte modulo their number picks the pair, compiled and resolved
 *	  once;
 *	- 0xE0 to 0xEF: an Avro schema's JSON text up to the first NUL byte,
 *	  compiled (an ERROR is a rejection) and, when it compiles and resolves
 *	  against itself, used to decode the bytes after the NUL (at most 64);
 *	- 0xF0 and above: a Kafka value split by kl_avro_wire_parse and
 *	  kl_avro_wire_parse_header.
 *
 * Properties of every decode:
 *	- a decode that succeeds gives NUL-terminated text of at most the
 *	  output limit (1 MB here) that is one valid JSON document for the
 *	  project's own reader (base/json.c);
 *	- decoding is deterministic: a second decode into another KlAvroOut
 *	  succeeds or fails alike, to the same bytes or the same message;
 *	- the output limit is exact: with a limit of 64 bytes, a datum whose
 *	  text is at most 64 bytes decodes to the same text, a longer one fails;
 *	- reading past the input is AddressSanitizer's to see (libFuzzer's
 *	  input buffer ends where the datum does).
 * Properties of the wire format: a payload lies inside the value and ends
 * where it does; the header parser accepts exactly the frames whose
 * payload is empty, with the same magic byte and id.
 *
 * Cannot cover: the SQL functions around the decoder (avro_decode's
 * program cache in fn_extra, avro_frame's tuple), the landing's use of it.
 *
 * IDENTIFICATION
 *	  fuzz/fuzz_avro.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "base/json.h"
#include "format/avro.h"
#include "pg_shim.h"
#include "avro_pairs.h"

#define NPAIRS			lengthof(avro_pairs)
#define FUZZ_MAX_OUT	((size_t) 1024 * 1024)
#define SMALL_MAX_OUT	64
#define SCHEMA_TAIL_MAX 64

static const KlAvroProgram *programs[NPAIRS];

/*
 * compile_pair
 *		The resolution program of one fixture pair, in TopMemoryContext;
 *		NULL when it does not compile or resolve (it always should).
 */
static const KlAvroProgram *
compile_pair(int i)
{
	const KlAvroProgram *volatile p = NULL;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	KL_FUZZ_RUN({
		KlAvroSchema *w = kl_avro_schema_parse(avro_pairs[i][0], strlen(avro_pairs[i][0]));
		KlAvroSchema *r = avro_pairs[i][1] ?
			kl_avro_schema_parse(avro_pairs[i][1], strlen(avro_pairs[i][1])) : w;
		char	   *why = NULL;

		p = kl_avro_resolve(w, r, &why);
	});
	MemoryContextSwitchTo(old);
	if (p == NULL)
		fprintf(stderr, "fuzz_avro: pair %d does not compile: %s\n", i, kl_shim_last_error());
	return p;
}

/*
 * check_decode
 *		Decode data[0..len) by p and check the properties above.
 */
static void
check_decode(const KlAvroProgram *p, const uint8 *data, size_t len)
{
	KlAvroOut	out1 = {0};
	KlAvroOut	out2 = {0};
	KlAvroOut	small = {0};
	KlAvroError err1;
	KlAvroError err2;
	KlAvroError err3;
	bool		ok1;
	bool		ok2;
	bool		ok3;

	out1.limit = FUZZ_MAX_OUT;
	out2.limit = FUZZ_MAX_OUT;
	small.limit = SMALL_MAX_OUT;
	ok1 = kl_avro_decode(p, data, len, &out1, &err1);
	ok2 = kl_avro_decode(p, data, len, &out2, &err2);
	ok3 = kl_avro_decode(p, data, len, &small, &err3);

	if (ok1 != ok2)
		kl_fuzz_fail("decoding twice: one succeeds, the other does not");
	if (ok1)
	{
		KlJsonReader r;
		KlJsonValue v;

		if (out1.len > FUZZ_MAX_OUT)
			kl_fuzz_fail("a decode of %zu bytes exceeds the limit of %zu", out1.len, FUZZ_MAX_OUT);
		if (out1.data == NULL || out1.data[out1.len] != '\0')
			kl_fuzz_fail("a decoded text is not NUL-terminated");
		if (out2.len != out1.len || memcmp(out1.data, out2.data, out1.len) != 0)
			kl_fuzz_fail("decoding twice gives other bytes");
		kl_json_init(&r, out1.data, out1.len, KL_JSON_MAX_DEPTH);
		if (!kl_json_parse_document(&r, &v))
		{
			fprintf(stderr, "decoded: %.*s\n", (int) Min(out1.len, 2000), out1.data);
			kl_fuzz_fail("a decoded datum is not valid JSON: %s", r.error ? r.error : "?");
		}
		if (out1.len <= SMALL_MAX_OUT &&
			(!ok3 || small.len != out1.len || memcmp(small.data, out1.data, out1.len) != 0))
			kl_fuzz_fail("a datum of %zu bytes of text decodes otherwise under a limit of %d: %s",
						 out1.len, SMALL_MAX_OUT, ok3 ? "other bytes" : kl_avro_error_message(&err3));
		if (out1.len > SMALL_MAX_OUT && ok3)
			kl_fuzz_fail("a datum of %zu bytes of text decodes under a limit of %d",
						 out1.len, SMALL_MAX_OUT);
	}
	else
	{
		const char *m1 = kl_avro_error_message(&err1);
		const char *m2 = kl_avro_error_message(&err2);

		if (strcmp(m1, m2) != 0)
			kl_fuzz_fail("decoding twice fails otherwise: \"%s\" and \"%s\"", m1, m2);
		if (!kl_utf8_text_valid(m1, strlen(m1)))
			kl_fuzz_fail("a decode error is not valid UTF-8 text");
		if (ok3)
			kl_fuzz_fail("a datum that fails under a limit of 1 MB decodes under one of %d",
						 SMALL_MAX_OUT);
	}
	if (ok3 && small.len > SMALL_MAX_OUT)
		kl_fuzz_fail("a decode of %zu bytes exceeds the limit of %d", small.len, SMALL_MAX_OUT);
	kl_avro_out_free(&out1);
	kl_avro_out_free(&out2);
	kl_avro_out_free(&small);
}

/*
 * check_schema
 *		Compile the schema text (ERROR: rejected), resolve it against
 *		itself and decode the tail by it.
 */
static void
check_schema(const uint8 *data, size_t size)
{
	const uint8 *nul = memchr(data, '\0', size);
	size_t		textlen = nul ? (size_t) (nul - data) : size;
	size_t		taillen = nul ? Min(size - textlen - 1, SCHEMA_TAIL_MAX) : 0;
	uint8	   *tail = malloc(taillen + 1);

	/* the tail in a buffer of its own, so that ASan sees reads past it */
	memcpy(tail, data + textlen + (nul ? 1 : 0), taillen);
	KL_FUZZ_RUN({
		KlAvroSchema *s = kl_avro_schema_parse((const char *) data, textlen);
		char	   *why = NULL;
		KlAvroProgram *p;

		if (kl_avro_schema_type_name(s) == NULL)
			kl_fuzz_fail("a compiled schema has no type name");
		p = kl_avro_resolve(s, s, &why);
		if (p == NULL)
			kl_fuzz_fail("a schema does not resolve against itself: %s", why ? why : "?");
		check_decode(p, tail, taillen);
	});
	free(tail);
}

/*
 * check_wire
 *		Both wire-format parsers on v[0..len).
 */
static void
check_wire(const uint8 *v, size_t len)
{
	KlAvroWire	w;
	KlAvroWire	h;
	const char *why = kl_avro_wire_parse(v, len, &w);
	const char *hwhy = kl_avro_wire_parse_header(v, len, &h);

	if (why == NULL)
	{
		if (w.payload < v || w.payload > v + len || w.payload + w.payload_len != v + len)
			kl_fuzz_fail("a wire payload is not the end of the value");
		if (w.magic != 0 && w.magic != 1)
			kl_fuzz_fail("a wire value parses with magic byte %d", w.magic);
		if ((w.magic == 0) != (w.schema_id >= 0))
			kl_fuzz_fail("a wire value's schema id does not match its magic byte");
		if ((hwhy == NULL) != (w.payload_len == 0))
			kl_fuzz_fail("the header parser %s a frame with %zu payload bytes",
						 hwhy ? "rejects" : "accepts", w.payload_len);
		if (hwhy == NULL && (h.magic != w.magic || h.schema_id != w.schema_id ||
							 (w.magic == 1 && memcmp(h.guid, w.guid, 16) != 0)))
			kl_fuzz_fail("the header parser reads another id");
	}
	else if (hwhy == NULL)
		kl_fuzz_fail("the header parser accepts what the value parser rejects: %s", why);
	if (why && !kl_utf8_text_valid(why, strlen(why)))
		kl_fuzz_fail("a wire error is not valid UTF-8 text");
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	kl_shim_init();
	for (int i = 0; i < (int) NPAIRS; i++)
		programs[i] = compile_pair(i);
	kl_shim_reset();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] < 0xE0)
	{
		const KlAvroProgram *p = programs[data[0] % NPAIRS];

		if (p != NULL)
			check_decode(p, data + 1, size - 1);
	}
	else if (data[0] < 0xF0)
		check_schema(data + 1, size - 1);
	else
		check_wire(data + 1, size - 1);
	return 0;
}
