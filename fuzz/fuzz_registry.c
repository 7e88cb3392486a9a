/*-------------------------------------------------------------------------
 *
 * fuzz_registry.c
 *	  libFuzzer target: reading the schema registry's answers
 *	  (src/kafka/registry.c): a 200 answer's schema (kl_registry_parse) and
 *	  an error answer's message and code (kl_registry_error_text).
 *
 * registry.c is included (compiled unchanged) to reach those two, which
 * are static; the rest of it (libcurl, SPI on kafka_lake.schemas, the SQL
 * functions) is linked against libcurl and against stubs below that abort
 * if called (none is: the target never opens a registry).  One stand-in
 * runs: kl_scrub_secrets (options.c, with the whole option machinery) is a
 * copy here, as it is for a registry without credentials (no secrets).
 *
 * The first byte of the input chooses the reading (bit 0: the answer of a
 * subject version, with "subject", "version" and "id", else of an id; bit
 * 1: also read it as an error answer of HTTP 404); the rest is the body.
 *
 * Properties: an answer that reads (no ERROR) has a schema without a NUL
 * byte, a schemaType of AVRO, JSON or PROTOBUF, an AVRO or JSON schema that
 * is one JSON document, the SHA-256 of the schema's bytes, an id and a
 * version in 0..2^31-1 (a subject version's version positive, with a
 * subject); an error answer's message, when there is one, is valid UTF-8;
 * a rejection is an ERROR, never a crash.
 *
 * Cannot cover: the transport (libcurl, timeouts, the answer size limit
 * in kl_http_write), kafka_lake.schemas (SPI).
 *
 * IDENTIFICATION
 *	  fuzz/fuzz_registry.c
 *
 *-------------------------------------------------------------------------
 */
#include "../src/kafka/registry.c"

#include "pg_shim.h"

/*
 * quote_identifier (ruleutils.c) names the server in the hints of a
 * malformed answer; the fuzzed server's name is a plain lower-case
 * identifier, which it gives back unquoted.
 */
const char *
quote_identifier(const char *ident)
{
	return ident;
}

/* ----------------------------------------------------------------
 *		What registry.c calls outside the two readers: never called here
 * ----------------------------------------------------------------
 */

#define FUZZ_UNREACHABLE(name) \
	do { fprintf(stderr, "fuzz_registry: %s is not shimmed\n", name); abort(); } while (0)

uint64		SPI_processed = 0;
SPITupleTable *SPI_tuptable = NULL;

Oid
GetUserId(void)
{
	FUZZ_UNREACHABLE("GetUserId");
}

char *
GetUserNameFromId(Oid roleid, bool noerr)
{
	FUZZ_UNREACHABLE("GetUserNameFromId");
}

int
SPI_execute_with_args(const char *src, int nargs, Oid *argtypes, Datum *Values,
					  const char *Nulls, bool read_only, long tcount)
{
	FUZZ_UNREACHABLE("SPI_execute_with_args");
}

Datum
SPI_getbinval(HeapTuple tuple, TupleDesc tupdesc, int fnumber, bool *isnull)
{
	FUZZ_UNREACHABLE("SPI_getbinval");
}

const char *
SPI_result_code_string(int code)
{
	FUZZ_UNREACHABLE("SPI_result_code_string");
}

KlCatalogSave
kl_catalog_begin(void)
{
	FUZZ_UNREACHABLE("kl_catalog_begin");
}

void
kl_catalog_end(KlCatalogSave save)
{
	FUZZ_UNREACHABLE("kl_catalog_end");
}

void
kl_check_not_null(FunctionCallInfo fcinfo, int argno, const char *argname, const char *funcname)
{
	FUZZ_UNREACHABLE("kl_check_not_null");
}

void
kl_check_server_usage(ForeignServer *server)
{
	FUZZ_UNREACHABLE("kl_check_server_usage");
}

ForeignServer *
kl_get_server(const char *name)
{
	FUZZ_UNREACHABLE("kl_get_server");
}

void
kl_registry_settings(ForeignServer *server, Oid userid, KlRegistrySettings *out)
{
	FUZZ_UNREACHABLE("kl_registry_settings");
}

int
kl_timeout_ms(Interval *iv, const char *argname)
{
	FUZZ_UNREACHABLE("kl_timeout_ms");
}

char *
text_to_cstring(const text *t)
{
	FUZZ_UNREACHABLE("text_to_cstring");
}

static KlRegistry fuzz_reg;
static ForeignServer fuzz_server;

char *
kl_scrub_secrets(const char *text, List *secrets)
{
	if (secrets != NIL)
		kl_fuzz_fail("kl_scrub_secrets has no secrets to scrub here");
	return pstrdup(text);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	kl_shim_init();
	fuzz_server.servername = "registry_fuzz";
	fuzz_reg.server = &fuzz_server;
	fuzz_reg.url = "http://registry.invalid:8081";
	fuzz_reg.secrets = NIL;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *body;
	bool		with_subject;
	bool		as_error;

	if (size < 1)
		return 0;
	with_subject = (data[0] & 1) != 0;
	as_error = (data[0] & 2) != 0;
	/* the body in a buffer of its own, NUL-terminated as kl_http_write leaves it */
	body = malloc(size);
	memcpy(body, data + 1, size - 1);
	body[size - 1] = '\0';

	KL_FUZZ_RUN({
		KlHttpAnswer a;
		KlRegistrySchema *s;
		uint8		sha[KL_SHA256_LEN];
		KlJsonReader r;
		KlJsonValue v;

		a.method = "GET";
		a.status = 200;
		a.body = body;
		a.len = size - 1;
		if (as_error)
		{
			int64		code;
			char	   *message;

			a.status = 404;
			message = kl_registry_error_text(&fuzz_reg, &a, &code);
			if (message != NULL && !kl_utf8_valid(message, strlen(message)))
				kl_fuzz_fail("an error answer's message is not valid UTF-8");
			a.status = 200;
		}
		s = kl_registry_parse(&fuzz_reg, &a, "/schemas/ids/1", with_subject);
		if (s == NULL || s->schema == NULL || s->schema_type == NULL)
			kl_fuzz_fail("an answer reads without a schema");
		if (strcmp(s->schema_type, "AVRO") != 0 && strcmp(s->schema_type, "JSON") != 0 &&
			strcmp(s->schema_type, "PROTOBUF") != 0)
			kl_fuzz_fail("an answer reads with schemaType \"%s\"", s->schema_type);
		if (!kl_utf8_valid(s->schema, strlen(s->schema)))
			kl_fuzz_fail("an answer's schema is not valid UTF-8");
		if (strcmp(s->schema_type, "PROTOBUF") != 0)
		{
			kl_json_init(&r, s->schema, strlen(s->schema), KL_JSON_MAX_DEPTH);
			if (!kl_json_parse_document(&r, &v))
				kl_fuzz_fail("an %s schema that is not JSON reads", s->schema_type);
		}
		kl_sha256(s->schema, strlen(s->schema), sha);
		if (memcmp(sha, s->sha256, KL_SHA256_LEN) != 0)
			kl_fuzz_fail("an answer's SHA-256 is not its schema's");
		if (s->id < 0 || s->version < 0)
			kl_fuzz_fail("an answer reads with a negative id or version");
		if (with_subject && (s->subject == NULL || s->version <= 0))
			kl_fuzz_fail("a subject version reads without a subject or a version");
	});
	if (kl_shim_last_error() != NULL && kl_shim_last_error()[0] != '\0' &&
		!kl_utf8_valid(kl_shim_last_error(), strlen(kl_shim_last_error())))
		kl_fuzz_fail("a rejection's message is not valid UTF-8");
	free(body);
	return 0;
}
