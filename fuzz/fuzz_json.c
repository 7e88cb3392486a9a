/*-------------------------------------------------------------------------
 *
 * fuzz_json.c
 *	  libFuzzer target: the strict JSON reader (src/base/json.c).
 *
 * Covers: kl_json_parse_document on the input as one document (at the
 * reader's own nesting limit and at a small one), and on a valid document:
 * every object and array walked with the member and element iterators
 * (which must agree with the document reader: no error inside a valid
 * document), every key compared with kl_json_key_is against its own
 * decoded name, every string decoded both ways (kl_json_decode_string and
 * kl_json_decode_to must give the same bytes) and escaped again
 * (kl_json_escape_to and kl_json_append_string must agree, and the escaped
 * string must read back as a string decoding to the same bytes, and escape
 * to the same bytes again: the writer is canonical), every integer number
 * parsed, formatted and parsed back to the same value; kl_utf8_valid and
 * kl_utf8_text_valid on the raw input against a byte-at-a-time check with
 * kl_utf8_sequence_length.
 *
 * Cannot cover: nothing of json.c is out of reach; the callers' use of its
 * spans is the other targets'.
 *
 * IDENTIFICATION
 *	  fuzz/fuzz_json.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "base/json.h"
#include "pg_shim.h"

static void walk(const KlJsonValue *v, int depth);

/*
 * check_string
 *		The decode and escape round trip of one string span.
 */
static void
check_string(const KlJsonValue *v)
{
	StringInfoData dec;
	StringInfoData esc;
	char	   *to = palloc(v->len + 1);
	size_t		tolen = kl_json_decode_to(v, to);
	char	   *esc2;
	size_t		esc2len;
	KlJsonReader r;
	KlJsonValue back;
	StringInfoData dec2;

	initStringInfo(&dec);
	kl_json_decode_string(v, &dec);
	if (tolen != (size_t) dec.len || memcmp(to, dec.data, tolen) != 0)
		kl_fuzz_fail("kl_json_decode_to and kl_json_decode_string differ");
	if (tolen > v->len)
		kl_fuzz_fail("a decoded string is longer than its JSON spelling");
	if (!kl_utf8_valid(dec.data, dec.len))
		kl_fuzz_fail("a decoded string is not valid UTF-8");
	if (!v->has_escapes && (tolen != v->len - 2 || memcmp(to, v->start + 1, tolen) != 0))
		kl_fuzz_fail("a string without escapes decodes to other bytes than its content");

	initStringInfo(&esc);
	kl_json_append_string(&esc, dec.data, dec.len);
	esc2 = palloc(KL_JSON_ESCAPED_MAX(dec.len));
	esc2len = kl_json_escape_to(esc2, dec.data, dec.len);
	if (esc2len != (size_t) esc.len || memcmp(esc2, esc.data, esc2len) != 0)
		kl_fuzz_fail("kl_json_escape_to and kl_json_append_string differ");
	if (esc2len > KL_JSON_ESCAPED_MAX(dec.len))
		kl_fuzz_fail("kl_json_escape_to wrote more than KL_JSON_ESCAPED_MAX");

	kl_json_init(&r, esc.data, esc.len, KL_JSON_MAX_DEPTH);
	if (!kl_json_parse_document(&r, &back) || back.type != KL_JSON_STRING)
		kl_fuzz_fail("an escaped string does not read back: %s", r.error ? r.error : "?");
	initStringInfo(&dec2);
	kl_json_decode_string(&back, &dec2);
	if (dec2.len != dec.len || memcmp(dec2.data, dec.data, dec.len) != 0)
		kl_fuzz_fail("an escaped string decodes to other bytes");
	{
		StringInfoData esc3;

		initStringInfo(&esc3);
		kl_json_append_string(&esc3, dec2.data, dec2.len);
		if (esc3.len != esc.len || memcmp(esc3.data, esc.data, esc.len) != 0)
			kl_fuzz_fail("escaping is not canonical");
	}
}

/*
 * check_number
 *		An integer's value survives formatting.
 */
static void
check_number(const KlJsonValue *v)
{
	int64		n,
				m;
	char		buf[32];
	int			len;

	if (!v->is_integer || !kl_json_parse_int64(v->start, v->len, &n))
		return;
	len = kl_json_format_int64(buf, n);
	if (!kl_json_parse_int64(buf, len, &m) || m != n)
		kl_fuzz_fail("an int64 does not survive kl_json_format_int64");
}

static void
walk(const KlJsonValue *v, int depth)
{
	KlJsonReader it;
	KlJsonValue k;
	KlJsonValue e;

	switch (v->type)
	{
		case KL_JSON_STRING:
			check_string(v);
			break;
		case KL_JSON_NUMBER:
			check_number(v);
			break;
		case KL_JSON_OBJECT:
			kl_json_object_open(&it, v->start, v->start + v->len, KL_JSON_MAX_DEPTH - depth);
			while (kl_json_object_next(&it, &k, &e))
			{
				StringInfoData name;

				if (k.type != KL_JSON_STRING)
					kl_fuzz_fail("a key is not a string");
				initStringInfo(&name);
				kl_json_decode_string(&k, &name);
				if (!kl_json_key_is(&k, name.data, name.len))
					kl_fuzz_fail("kl_json_key_is is false for a key's own name");
				if (name.len > 0 &&
					kl_json_key_is(&k, name.data, name.len - 1))
					kl_fuzz_fail("kl_json_key_is is true for a shorter name");
				check_string(&k);
				walk(&e, depth + 1);
			}
			if (it.error)
				kl_fuzz_fail("the object iterator fails inside a valid document: %s", it.error);
			break;
		case KL_JSON_ARRAY:
			kl_json_array_open(&it, v->start, v->start + v->len, KL_JSON_MAX_DEPTH - depth);
			while (kl_json_array_next(&it, &e))
				walk(&e, depth + 1);
			if (it.error)
				kl_fuzz_fail("the array iterator fails inside a valid document: %s", it.error);
			break;
		default:
			break;
	}
}

/*
 * check_utf8
 *		The buffer verifiers against a byte-at-a-time walk.
 */
static void
check_utf8(const char *s, size_t len)
{
	bool		valid = true;
	bool		has_nul = false;

	for (size_t i = 0; i < len;)
	{
		int			n = kl_utf8_sequence_length((const unsigned char *) s + i, len - i);

		if (n == 0)
		{
			valid = false;
			break;
		}
		if (s[i] == '\0')
			has_nul = true;
		i += n;
	}
	if (kl_utf8_valid(s, len) != valid)
		kl_fuzz_fail("kl_utf8_valid disagrees with kl_utf8_sequence_length");
	if (kl_utf8_text_valid(s, len) != (valid && !has_nul))
		kl_fuzz_fail("kl_utf8_text_valid disagrees with kl_utf8_sequence_length");
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	kl_shim_init();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	KL_FUZZ_RUN({
		KlJsonReader r;
		KlJsonValue v;
		bool		ok;

		check_utf8((const char *) data, size);
		kl_json_init(&r, (const char *) data, size, KL_JSON_MAX_DEPTH);
		ok = kl_json_parse_document(&r, &v);
		if (ok)
			walk(&v, 0);
		else if (r.error == NULL)
			kl_fuzz_fail("a rejected document has no error");
		kl_json_init(&r, (const char *) data, size, 3);
		if (kl_json_parse_document(&r, &v) && !ok)
			kl_fuzz_fail("a document valid at depth 3 is invalid at depth %d", KL_JSON_MAX_DEPTH);
	});
	return 0;
}
