/*-------------------------------------------------------------------------
 *
 * fuzz_batch_line.c
 *	  libFuzzer target: reading one landed line (src/format/batch_format.c),
 *	  the fast path and the strict fallback side by side.
 *
 * The first byte of the input chooses what is asked for (its low four bits:
 * KL_WANT_EVENT, _KAFKA, _QUARANTINE, _IDS) and its high four bits choose
 * event fields among eight names (some that land() writes, one that needs
 * escapes, one outside ASCII); the rest is the line.  The file is included
 * (compiled unchanged) to reach kl_line_parse_fast and kl_line_parse_strict,
 * which are static.
 *
 * Properties:
 *	- every value the fast path hands out is valid JSON on its own (the
 *	  header's promise: values asked for are validated as the strict
 *	  reader would);
 *	- a line the fast path takes and the strict reader also reads is read
 *	  the same by both: the same members asked for, as the same spans of
 *	  the line, with the same offset, partition, timestamp and ids (a
 *	  member not asked for may be noted by one and not the other);
 *	- a line that is a valid JSON object and that the fast path takes, also
 *	  when asked for the "event" and "kafka" members too, is read by the
 *	  strict reader (which checks those two members' shape whether they are
 *	  asked for or not; a line the fast path takes but which
 *	  is not valid JSON in a member nobody asked for may be rejected by the
 *	  strict reader: the fast path skips it structurally, and the file's
 *	  CRC, checked before any line is read, vouches for it);
 *	- kl_line_parse (fast, then strict) never fails otherwise than with an
 *	  ERROR.
 *
 * Cannot cover: the CRC and SHA-256 checks of the files before lines are
 * read (batch_read.c, which needs the landing directory and the catalog).
 *
 * IDENTIFICATION
 *	  fuzz/fuzz_batch_line.c
 *
 *-------------------------------------------------------------------------
 */
#include "../src/format/batch_format.c"

#include "pg_shim.h"

static const char *field_pool[8] = {
	"event_id", "event_time", "machine_id", "units_produced",
	"business_date", "a\"b", "pl\xc3\xa4nt", "z"
};

/* the outputs of one read, to compare */
typedef struct LineResult
{
	KlJsonValue v[10];
	KlJsonValue fields[8];
	int64		offset;
	int32		partition;
	int64		timestamp_ms;
	bool		has_ids;
} LineResult;

static void
capture(const KlLine *l, LineResult *r)
{
	memset(r, 0, sizeof(*r));
	r->v[0] = l->event;
	r->v[1] = l->key;
	r->v[2] = l->key_base64;
	r->v[3] = l->raw_value;
	r->v[4] = l->raw_value_base64;
	r->v[5] = l->validation_error;
	r->v[6] = l->headers;
	r->v[7] = l->business_date;
	r->v[8] = l->event_id;
	for (int i = 0; i < l->nfields; i++)
		r->fields[i] = l->fields[i];
	r->offset = l->offset;
	r->partition = l->partition;
	r->timestamp_ms = l->timestamp_ms;
	r->has_ids = l->has_ids;
}

static const char *const member_names[10] = {
	"event", "key", "key_base64", "raw_value", "raw_value_base64",
	"validation_error", "headers", "business_date", "event_id", "?"
};

/* the want flag that asks for each member */
static const int member_wants[10] = {
	KL_WANT_EVENT, KL_WANT_KAFKA, KL_WANT_KAFKA, KL_WANT_QUARANTINE, KL_WANT_QUARANTINE,
	KL_WANT_QUARANTINE, KL_WANT_KAFKA, KL_WANT_IDS, KL_WANT_IDS, 0
};

static bool
same_value(const KlJsonValue *a, const KlJsonValue *b)
{
	if (a->type != b->type)
		return false;
	if (a->type == KL_JSON_NULL)
		return true;			/* absent, or null: the same to readers */
	return a->start == b->start && a->len == b->len &&
		(a->type != KL_JSON_STRING || a->has_escapes == b->has_escapes) &&
		(a->type != KL_JSON_NUMBER || a->is_integer == b->is_integer);
}

static void
check_valid(const KlJsonValue *v, const char *what)
{
	KlJsonReader r;
	KlJsonValue back;

	if (v->type == KL_JSON_NULL)
		return;
	kl_json_init(&r, v->start, v->len, KL_JSON_MAX_DEPTH);
	if (!kl_json_parse_document(&r, &back) || back.type != v->type || back.len != v->len)
		kl_fuzz_fail("the fast path hands out %s, which is not valid JSON: %s", what,
					 r.error ? r.error : "another type or length");
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
	if (size < 1)
		return 0;
	KL_FUZZ_RUN({
		int			want = data[0] & 0x0F;
		const char *names[8];
		int			nfields = 0;
		const char *text = (const char *) data + 1;
		size_t		len = size - 1;
		KlLine		line;
		LineResult	fast;
		LineResult	strict;
		bool		fast_ok;
		volatile bool strict_ok = false;
		bool		valid_object;
		KlJsonReader r;
		KlJsonValue doc;

		/* high bits: a window of four consecutive names of the pool */
		for (int i = 0; i < 4; i++)
			if (data[0] & (0x10 << i))
				names[nfields++] = field_pool[(i * 2 + (data[0] & 1)) % 8];
		memset(&line, 0, sizeof(line));
		kl_line_set_fields(&line, nfields, names);

		kl_json_init(&r, text, len, KL_JSON_MAX_DEPTH);
		valid_object = kl_json_parse_document(&r, &doc) && doc.type == KL_JSON_OBJECT;

		fast_ok = kl_line_parse_fast(&line, text, len, want);
		capture(&line, &fast);
		if (fast_ok)
		{
			for (int i = 0; i < 9; i++)
				check_valid(&fast.v[i], member_names[i]);
			for (int i = 0; i < nfields; i++)
				check_valid(&fast.fields[i], names[i]);
		}

		PG_TRY();
		{
			kl_line_parse_strict(&line, text, len, want);
			strict_ok = true;
		}
		PG_CATCH();
		{
		}
		PG_END_TRY();
		capture(&line, &strict);

		/*
		 * The strict reader checks the "event" and "kafka" members' shape
		 * even when they are not asked for, the fast path only when they
		 * are: so a valid JSON line is compared with the fast path asked
		 * for both too.
		 */
		if (fast_ok && valid_object && !strict_ok &&
			kl_line_parse_fast(&line, text, len, want | KL_WANT_EVENT | KL_WANT_KAFKA))
			kl_fuzz_fail("a valid JSON line the fast path reads is rejected by the strict reader: %s",
						 kl_shim_last_error());
		if (fast_ok && strict_ok)
		{
			for (int i = 0; i < 9; i++)
				if ((want & member_wants[i]) && !same_value(&fast.v[i], &strict.v[i]))
					kl_fuzz_fail("the fast path and the strict reader read \"%s\" differently",
								 member_names[i]);
			for (int i = 0; i < nfields; i++)
				if (!same_value(&fast.fields[i], &strict.fields[i]))
					kl_fuzz_fail("the fast path and the strict reader read the field \"%s\" differently",
								 names[i]);
			if ((want & KL_WANT_KAFKA) &&
				(fast.offset != strict.offset || fast.partition != strict.partition ||
				 fast.timestamp_ms != strict.timestamp_ms))
				kl_fuzz_fail("the fast path and the strict reader read the envelope differently");
			if ((want & KL_WANT_IDS) && fast.has_ids != strict.has_ids)
				kl_fuzz_fail("the fast path and the strict reader read the envelope differently");
		}

		/* the public entry: fast, then strict; an ERROR is a rejection */
		kl_line_parse(&line, text, len, want);
	});
	return 0;
}
