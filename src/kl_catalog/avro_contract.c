/*-------------------------------------------------------------------------
 *
 * avro_contract.c
 *	  Contracts over an Avro schema: {"format": "avro", "schema": <a record
 *	  schema>, "event_id": ..., ...} compiled into a KlContract.
 *
 * An Avro contract is compiled by translating its reader schema's fields
 * into the equivalent JSON contract (kl_avro_schema_properties: each Avro
 * type as the JSON the decoder writes for it and the SQL type it means, every
 * field required) with the definition's own kafka_lake keys (event_id,
 * business_date, rules, columns, natural_key, max_value_bytes, and a
 * "normalize" object {"field": ["trim", ...]}) copied over, and running the
 * JSON contract compiler on that.  The compiled contract keeps the original
 * definition as its text and the compiled reader schema (KlContract.avro),
 * which landing resolves each record's writer schema against.  The form
 * that names a registry subject instead of a schema is resolved before
 * this, by create_contract (source.c: the registry is above this layer),
 * which stores the definition with the fetched schema embedded, so a stored
 * Avro definition always holds its schema.
 *
 * IDENTIFICATION
 *	  src/kl_catalog/avro_contract.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "base/json.h"
#include "contract/contract_define.h"
#include "format/avro.h"
#include "kl_catalog/avro_contract.h"

static const char *const kl_avro_contract_keys[] = {
	"format", "schema", "schema_id", "server", "subject", "version", "normalize", "derived",
	"event_id", "business_date", "schema_version", "rules", "columns", "natural_key",
	"entity", "max_value_bytes", "title", "description", "$comment", NULL
};

/* the keys copied as they are into the JSON contract */
static const char *const kl_avro_copied_keys[] = {
	"event_id", "business_date", "schema_version", "rules", "columns", "natural_key",
	"entity", "max_value_bytes", "title", "description", "$comment", NULL
};

/* The top-level members of a definition, as spans of its text */
typedef struct KlAvroDef
{
	int			n;
	char	   *keys[32];
	KlJsonValue vals[32];
} KlAvroDef;

/*
 * kl_avro_def_read
 *		The definition's top-level members; false when it is no JSON object
 *		(the JSON compiler reports that).
 */
static bool
kl_avro_def_read(const char *definition, KlAvroDef *d)
{
	KlJsonReader r;
	KlJsonReader it;
	KlJsonValue v;
	KlJsonValue k;
	KlJsonValue m;
	size_t		len = strlen(definition);

	d->n = 0;
	kl_json_init(&r, definition, len, KL_JSON_MAX_DEPTH);
	if (!kl_json_parse_document(&r, &v) || v.type != KL_JSON_OBJECT)
		return false;
	kl_json_object_open(&it, v.start, v.start + v.len, KL_JSON_MAX_DEPTH);
	while (kl_json_object_next(&it, &k, &m))
	{
		StringInfoData name;

		if (d->n == lengthof(d->keys))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("invalid contract definition at $: too many keys")));
		initStringInfo(&name);
		kl_json_decode_string(&k, &name);
		d->keys[d->n] = name.data;
		d->vals[d->n] = m;
		d->n++;
	}
	return true;
}

static const KlJsonValue *
kl_avro_def_get(const KlAvroDef *d, const char *key)
{
	for (int i = 0; i < d->n; i++)
	{
		if (strcmp(d->keys[i], key) == 0)
			return &d->vals[i];
	}
	return NULL;
}

/*
 * kl_avro_def_text
 *		A string member's decoded text, or NULL when absent; ERROR 42P17
 *		when it is no string.
 */
static char *
kl_avro_def_text(const KlAvroDef *d, const char *key)
{
	const KlJsonValue *v = kl_avro_def_get(d, key);
	StringInfoData s;

	if (v == NULL)
		return NULL;
	if (v->type != KL_JSON_STRING)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("invalid contract definition at $.%s: %s must be a string", key, key)));
	initStringInfo(&s);
	kl_json_decode_string(v, &s);
	return s.data;
}

/*
 * kl_definition_is_avro
 *		Does the definition say "format": "avro"?  ERROR 42P17 for another
 *		format (a JSON contract has none).
 */
bool
kl_definition_is_avro(const char *definition)
{
	KlAvroDef	d;
	char	   *format;

	if (!kl_avro_def_read(definition, &d))
		return false;
	format = kl_avro_def_text(&d, "format");
	if (format == NULL)
		return false;
	if (strcmp(format, "avro") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("invalid contract definition at $.format: unknown format \"%s\"", format),
				 errhint("A contract judges JSON (leave \"format\" out) or Avro (\"format\": \"avro\"); for JSON in Confluent's wire format say \"framing\": \"confluent\".")));
	return true;
}

/*
 * kl_avro_definition_subject
 *		The registry subject an Avro definition names instead of a schema:
 *		true and *server, *subject, *version (0: the latest) when it names
 *		one and has no "schema"; false when it has its schema.
 */
bool
kl_avro_definition_subject(const char *definition, char **server, char **subject,
						   int32 *version)
{
	KlAvroDef	d;
	const KlJsonValue *v;

	if (!kl_avro_def_read(definition, &d) || kl_avro_def_get(&d, "schema") != NULL)
		return false;
	*server = kl_avro_def_text(&d, "server");
	*subject = kl_avro_def_text(&d, "subject");
	*version = 0;
	if (*server == NULL || *subject == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("invalid contract definition at $: an Avro contract needs \"schema\", or \"server\" and \"subject\""),
				 errhint("Give the reader schema, {\"format\": \"avro\", \"schema\": {\"type\": \"record\", ...}}, or name a subject of a server's schema registry, {\"format\": \"avro\", \"server\": \"kafka\", \"subject\": \"orders-value\"}.")));
	if ((v = kl_avro_def_get(&d, "version")) != NULL)
	{
		int64		n;

		if (v->type != KL_JSON_NUMBER || !kl_json_parse_int64(v->start, v->len, &n) ||
			n < 1 || n > PG_INT32_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("invalid contract definition at $.version: version must be a positive integer"),
					 errhint("Leave \"version\" out for the subject's latest version.")));
		*version = (int32) n;
	}
	return true;
}

/*
 * kl_avro_check_server
 *		A source of an Avro contract must land from a server that names a
 *		schema registry: its records carry writer schema ids of that
 *		registry.  ERROR (HV00J, with the ALTER SERVER to fix it) otherwise;
 *		said at create_source and alter_source rather than at every land().
 */
void
kl_avro_check_server(const KlContract *c, const char *server_name)
{
	ForeignServer *server;
	ListCell   *lc;

	if (c->avro == NULL)
		return;
	server = GetForeignServerByName(server_name, false);
	foreach(lc, server->options)
	{
		if (strcmp(((DefElem *) lfirst(lc))->defname, "schema.registry.url") == 0)
			return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
			 errmsg("contract \"%s\" reads Avro, and server \"%s\" names no schema registry",
					c->name, server->servername),
			 errdetail("Each Avro record names its writer schema by an id of the registry of the server it is landed from."),
			 errhint("ALTER SERVER %s OPTIONS (ADD \"schema.registry.url\" 'https://registry.example.com:8081');",
					 quote_identifier(server->servername))));
}

/*
 * kl_avro_definition_subject_name
 *		The registry subject a stored Avro definition was made from, or
 *		NULL (an inline schema, or not an object).
 */
char *
kl_avro_definition_subject_name(const char *definition)
{
	KlAvroDef	d;
	const KlJsonValue *v;
	StringInfoData s;

	if (definition == NULL || !kl_avro_def_read(definition, &d))
		return NULL;
	v = kl_avro_def_get(&d, "subject");
	if (v == NULL || v->type != KL_JSON_STRING)
		return NULL;
	initStringInfo(&s);
	kl_json_decode_string(v, &s);
	return s.data;
}

/*
 * kl_avro_definition_embed
 *		The definition with the fetched schema embedded: "schema" and
 *		"schema_id" in place of "version" (the other members as they are).
 */
char *
kl_avro_definition_embed(const char *definition, const char *schema, int32 schema_id,
						 int32 version)
{
	KlAvroDef	d;
	StringInfoData out;

	if (!kl_avro_def_read(definition, &d))
		elog(ERROR, "not a JSON object");
	initStringInfo(&out);
	appendStringInfoChar(&out, '{');
	for (int i = 0; i < d.n; i++)
	{
		if (strcmp(d.keys[i], "version") == 0 || strcmp(d.keys[i], "schema_id") == 0)
			continue;
		kl_json_append_string(&out, d.keys[i], strlen(d.keys[i]));
		appendStringInfoString(&out, ": ");
		appendBinaryStringInfo(&out, d.vals[i].start, d.vals[i].len);
		appendStringInfoString(&out, ", ");
	}
	appendStringInfo(&out, "\"version\": %d, \"schema_id\": %d, \"schema\": %s}",
					 version, schema_id, schema);
	return out.data;
}

/* kl_avro_normalize_of: a field's "normalize" list (a kl_avro_schema_properties callback) */
static const char *
kl_avro_normalize_of(const char *field, void *arg)
{
	const KlJsonValue *norm = arg;
	KlJsonReader it;
	KlJsonValue k;
	KlJsonValue m;

	if (norm == NULL)
		return NULL;
	kl_json_object_open(&it, norm->start, norm->start + norm->len, KL_JSON_MAX_DEPTH);
	while (kl_json_object_next(&it, &k, &m))
	{
		if (kl_json_key_is(&k, field, strlen(field)))
			return pnstrdup(m.start, m.len);
	}
	return NULL;
}

/*
 * kl_avro_derived
 *		An Avro definition's "derived": {"name": {property with "path", and
 *		"required": true or false}, ...}: fields taken from paths inside the
 *		decoded datum, as a JSON contract's.  Appends each property (without
 *		"required") to props, and the required ones' names to required.
 */
static void
kl_avro_derived(const KlJsonValue *derived, StringInfo props, StringInfo required)
{
	KlJsonReader it;
	KlJsonValue k;
	KlJsonValue m;

	if (derived->type != KL_JSON_OBJECT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("invalid contract definition at $.derived: derived must be an object"),
				 errhint("For example \"derived\": {\"country\": {\"type\": \"string\", \"path\": [\"customer\", \"country\"], \"required\": true}}.")));
	kl_json_object_open(&it, derived->start, derived->start + derived->len, KL_JSON_MAX_DEPTH);
	while (kl_json_object_next(&it, &k, &m))
	{
		StringInfoData name;
		KlJsonReader pit;
		KlJsonValue pk;
		KlJsonValue pv;
		bool		has_path = false;
		bool		first = true;

		initStringInfo(&name);
		kl_json_decode_string(&k, &name);
		if (m.type != KL_JSON_OBJECT)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("invalid contract definition at $.derived.%s: a derived field must be an object", name.data)));
		appendStringInfo(props, "%s", props->len > 0 ? ", " : "");
		appendBinaryStringInfo(props, k.start, k.len);
		appendStringInfoString(props, ": {");
		kl_json_object_open(&pit, m.start, m.start + m.len, KL_JSON_MAX_DEPTH);
		while (kl_json_object_next(&pit, &pk, &pv))
		{
			if (kl_json_key_is(&pk, "required", 8))
			{
				if (pv.type != KL_JSON_TRUE && pv.type != KL_JSON_FALSE)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
							 errmsg("invalid contract definition at $.derived.%s.required: required must be true or false", name.data)));
				if (pv.type == KL_JSON_TRUE)
				{
					appendStringInfo(required, "%s", required->len > 0 ? ", " : "");
					appendBinaryStringInfo(required, k.start, k.len);
				}
				continue;
			}
			has_path |= kl_json_key_is(&pk, "path", 4);
			appendStringInfoString(props, first ? "" : ", ");
			appendBinaryStringInfo(props, pk.start, pk.len);
			appendStringInfoString(props, ": ");
			appendBinaryStringInfo(props, pv.start, pv.len);
			first = false;
		}
		appendStringInfoChar(props, '}');
		if (!has_path)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("invalid contract definition at $.derived.%s: a derived field needs a \"path\"", name.data),
					 errhint("The fields of the schema are the contract's; \"derived\" adds fields taken from paths inside them, for example \"path\": [\"customer\", \"country\"].")));
	}
}

/*
 * kl_avro_contract_translate
 *		The JSON contract equivalent to an Avro definition, and its compiled
 *		reader schema (in the current memory context).  ERROR 42P17 for a
 *		bad definition or schema.
 */
static char *
kl_avro_contract_translate(const char *definition, KlAvroSchema **reader)
{
	KlAvroDef	d;
	const KlJsonValue *schema;
	const KlJsonValue *norm;
	const KlJsonValue *derived;
	StringInfoData out;

	if (!kl_avro_def_read(definition, &d))
		elog(ERROR, "not a JSON object");
	for (int i = 0; i < d.n; i++)
	{
		bool		known = false;

		for (int w = 0; kl_avro_contract_keys[w]; w++)
			known |= strcmp(d.keys[i], kl_avro_contract_keys[w]) == 0;
		if (!known)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("invalid contract definition at $: unknown key \"%s\" in an Avro contract", d.keys[i]),
					 errhint("An Avro contract has the keys format, schema (or server, subject, version), normalize, derived, event_id, business_date, schema_version, rules, columns, natural_key, entity, max_value_bytes: the fields and their types are the schema's.")));
	}
	if ((schema = kl_avro_def_get(&d, "schema")) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("invalid contract definition at $: an Avro contract needs \"schema\", or \"server\" and \"subject\"")));
	if ((norm = kl_avro_def_get(&d, "normalize")) != NULL && norm->type != KL_JSON_OBJECT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("invalid contract definition at $.normalize: normalize must be an object"),
				 errhint("For example \"normalize\": {\"order_id\": [\"trim\"]}.")));
	if (schema->type == KL_JSON_STRING)
	{
		/* the schema's text as a string, as a registry gives it */
		StringInfoData text;

		initStringInfo(&text);
		kl_json_decode_string(schema, &text);
		*reader = kl_avro_schema_parse(text.data, text.len);
	}
	else
		*reader = kl_avro_schema_parse(schema->start, schema->len);

	initStringInfo(&out);
	appendStringInfoString(&out, "{\"type\": \"object\", ");
	if ((derived = kl_avro_def_get(&d, "derived")) == NULL)
		kl_avro_schema_properties(*reader, &out, kl_avro_normalize_of, (void *) norm);
	else
	{
		/*
		 * "properties": {fields}, "required": [names] with the derived
		 * fields added to both (the names are Avro names: no quote or
		 * brace, so the last "}, \"required\": [" is the boundary)
		 */
		StringInfoData fields;
		StringInfoData props;
		StringInfoData required;
		const char *marker = "}, \"required\": [";
		char	   *cut;
		char	   *p;

		initStringInfo(&fields);
		initStringInfo(&props);
		initStringInfo(&required);
		kl_avro_schema_properties(*reader, &fields, kl_avro_normalize_of, (void *) norm);
		kl_avro_derived(derived, &props, &required);
		for (cut = NULL, p = fields.data; (p = strstr(p, marker)) != NULL; p++)
			cut = p;
		Assert(cut != NULL && fields.data[fields.len - 1] == ']');
		appendBinaryStringInfo(&out, fields.data, cut - fields.data);
		if (props.len > 0)
			appendStringInfo(&out, "%s%s", cut[-1] == '{' ? "" : ", ", props.data);
		appendBinaryStringInfo(&out, cut, fields.len - 1 - (cut - fields.data));
		if (required.len > 0)
			appendStringInfo(&out, "%s%s", fields.data[fields.len - 2] == '[' ? "" : ", ", required.data);
		appendStringInfoChar(&out, ']');
	}
	for (int w = 0; kl_avro_copied_keys[w]; w++)
	{
		const KlJsonValue *v = kl_avro_def_get(&d, kl_avro_copied_keys[w]);

		if (v == NULL)
			continue;
		appendStringInfoString(&out, ", ");
		kl_json_append_string(&out, kl_avro_copied_keys[w], strlen(kl_avro_copied_keys[w]));
		appendStringInfoString(&out, ": ");
		appendBinaryStringInfo(&out, v->start, v->len);
	}
	appendStringInfoChar(&out, '}');
	return out.data;
}

/*
 * kl_avro_contract_compile
 *		Compile an Avro definition in cxt (check: create_contract's check,
 *		which refuses what only a stored version may have).
 */
KlContract *
kl_avro_contract_compile(const char *name, int32 version, const char *definition,
						 bool check, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	KlAvroSchema *reader;
	char	   *json = kl_avro_contract_translate(definition, &reader);
	KlContract *c = NULL;

	MemoryContextSwitchTo(old);
	if (check)
		kl_contract_check(name, json, cxt);
	else
	{
		c = kl_contract_compile(name, version, json, strlen(json), false, cxt);
		c->definition = MemoryContextStrdup(cxt, definition);
		c->avro = reader;
	}
	return c;
}
