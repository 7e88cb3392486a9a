/*-------------------------------------------------------------------------
 *
 * contract_define.c
 *	  The definition language of contracts: a definition checked key by
 *	  key (every bad key gets an error naming where it is and what is
 *	  allowed there), compiled into the KlContract the engine judges with
 *	  (contract.c), and the built-in definitions.
 *
 * THE LANGUAGE
 *
 * A definition speaks JSON Schema's vocabulary where JSON Schema has a
 * word: "type" (string, integer, number, boolean, object, array, null, or a
 * list of them), "properties", "required", "additionalProperties" (true or
 * false; true when left out, as in JSON Schema), "enum", "const",
 * "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
 * "minLength", "maxLength" (characters, after normalisation), "pattern"
 * (PostgreSQL's regular expressions, not ECMA-262's), "format" ("date",
 * "date-time"), "items", and the annotations "title", "description",
 * "$comment" (and "$schema" at the top).  kafka_lake adds keys only for
 * what JSON Schema cannot say: at the top, "event_id" (the field, or the
 * list of fields, that identifies an event; without it a contract dedupes
 * by coordinate only),
 * "business_date" (a date field; a timestamp field read in a named zone;
 * or the Kafka timestamp read in a named zone), "schema_version",
 * "rules" ("a <= b", "a > 0"), "max_value_bytes", "columns" (the order of
 * the fields wherever they are listed: the typed foreign table, the
 * canonical CSV), "natural_key", "entity" (the records are versions of
 * entities: a key, the fields that order versions, a value that marks a
 * deletion; read by the bridge), and "raw" (any bytes, accepted as they
 * are); per property, "normalize" (["trim", "lower"]), "header" (the field
 * comes from that Kafka header when the value lacks it: the value wins),
 * "path" (a top-level field derived from a place inside the value, or the
 * first of several places that has one; checked against the schema once
 * every top-level property is known, kl_resolve_paths),
 * "sql_type" (its column type in kafka_lake.<source>_events).  Every other
 * key is refused, with "Perhaps you meant ..." when one is near, and the
 * JSON Schema keywords kafka_lake does not implement (oneOf, $ref, ...) are
 * named as such.  Every property states its "type", because its column
 * needs one.  Errors are SQLSTATE 42P17 (invalid_object_definition); the
 * message names the place as a JSON path ($.properties.customer.type).
 *
 * WHY json AND NOT jsonb
 *
 * The order of "properties" is the order of the checks (which violation a
 * record with several is refused for) and the default order of the
 * columns; jsonb keeps an object's keys in an order of its own (by length),
 * so a definition is taken, stored and compiled as json text, whose
 * members keep the order they were written in.  Two definitions are the
 * same when their normalised texts (kl_contract_normalize: the same
 * members in the same order, whitespace and escapes aside) are.
 *
 * THE BUILT-INS
 *
 * machine_event_v1 is written in this language below; its "properties"
 * list the fields in the order its checks always ran (the integers, then
 * schema_version, then the strings) and its "columns" the seed's CSV
 * order.  The built-ins are compiled from the text here, also where the
 * catalog predates kafka_lake.contracts (a database not yet updated), and
 * the update to 1.1 stores the same texts in the catalog
 * (kafka_lake_builtin_contracts), so the two cannot differ.
 *
 * IDENTIFICATION
 *	  src/contract/contract_define.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "base/builtin_types.h"
#include "base/compat.h"
#include "base/json.h"
#include "contract/contract.h"
#include "contract/contract_define.h"

PG_FUNCTION_INFO_V1(kafka_lake_builtin_contracts);

/*
 * While create_contract() checks a new definition (kl_contract_check), what
 * a version stored by an earlier release may still hold is refused: an
 * sql_type that is not a built-in type, a pattern whose matching time has
 * no bound.  A stored version is compiled as it is, and those of its parts
 * are refused where they would be used (kl_contract_check_sql_types,
 * kl_contract_judgeable).  kl_compiling is the contract being compiled.
 */
static bool kl_defining = false;
static KlContract *kl_compiling = NULL;

/* ----------------------------------------------------------------
 *		The built-in definitions
 * ----------------------------------------------------------------
 */

static const char kl_machine_event_v1[] =
"{\n"
"  \"type\": \"object\",\n"
"  \"properties\": {\n"
"    \"units_produced\": {\"type\": \"integer\", \"minimum\": 0},\n"
"    \"defect_count\": {\"type\": \"integer\", \"minimum\": 0},\n"
"    \"cycle_time_ms\": {\"type\": \"integer\", \"exclusiveMinimum\": 0},\n"
"    \"schema_version\": {\"type\": \"integer\", \"const\": 1},\n"
"    \"event_id\": {\"type\": \"string\", \"normalize\": [\"trim\"], \"minLength\": 1},\n"
"    \"event_time\": {\"type\": \"string\", \"normalize\": [\"trim\"], \"minLength\": 1, \"format\": \"date-time\"},\n"
"    \"business_date\": {\"type\": \"string\", \"normalize\": [\"trim\"], \"minLength\": 1, \"format\": \"date\"},\n"
"    \"plant_id\": {\"type\": \"string\", \"normalize\": [\"trim\", \"lower\"], \"minLength\": 1},\n"
"    \"line_id\": {\"type\": \"string\", \"normalize\": [\"trim\", \"lower\"], \"minLength\": 1},\n"
"    \"work_order_id\": {\"type\": \"string\", \"normalize\": [\"trim\", \"lower\"], \"minLength\": 1},\n"
"    \"machine_id\": {\"type\": \"string\", \"normalize\": [\"trim\", \"lower\"], \"minLength\": 1},\n"
"    \"product_code\": {\"type\": \"string\", \"normalize\": [\"trim\", \"lower\"], \"minLength\": 1},\n"
"    \"operation\": {\"type\": \"string\", \"normalize\": [\"trim\", \"lower\"], \"minLength\": 1,\n"
"                  \"enum\": [\"assembly\", \"inspection\", \"packaging\", \"welding\", \"machining\", \"calibration\"]}\n"
"  },\n"
"  \"required\": [\"event_id\", \"schema_version\", \"event_time\", \"business_date\", \"plant_id\",\n"
"               \"line_id\", \"work_order_id\", \"machine_id\", \"product_code\", \"operation\",\n"
"               \"units_produced\", \"defect_count\", \"cycle_time_ms\"],\n"
"  \"additionalProperties\": false,\n"
"  \"event_id\": \"event_id\",\n"
"  \"schema_version\": \"schema_version\",\n"
"  \"business_date\": {\"field\": \"business_date\"},\n"
"  \"rules\": [\"defect_count <= units_produced\"],\n"
"  \"max_value_bytes\": 65536,\n"
"  \"columns\": [\"event_time\", \"plant_id\", \"line_id\", \"work_order_id\", \"machine_id\",\n"
"              \"product_code\", \"operation\", \"units_produced\", \"defect_count\",\n"
"              \"cycle_time_ms\", \"business_date\", \"event_id\", \"schema_version\"],\n"
"  \"natural_key\": [\"work_order_id\", \"machine_id\", \"event_time\"]\n"
"}\n";

static const char kl_json_object[] = "{\"type\": \"object\"}\n";

static const char kl_raw[] = "{\"raw\": true, \"max_value_bytes\": 16777216}\n";

static const struct
{
	const char *name;
	const char *definition;
}			kl_builtins[] =
{
	{KL_BUILTIN_MACHINE_EVENT_V1, kl_machine_event_v1},
	{"json_object", kl_json_object},
	{"raw", kl_raw},
	{NULL, NULL}
};

/*
 * kl_builtin_definition
 *		The definition of a built-in contract, or NULL.
 */
const char *
kl_builtin_definition(const char *name)
{
	for (int i = 0; kl_builtins[i].name; i++)
	{
		if (strcmp(kl_builtins[i].name, name) == 0)
			return kl_builtins[i].definition;
	}
	return NULL;
}

/*
 * kafka_lake_builtin_contracts
 *		The built-in contracts (contract, version, definition), for the
 *		update script that stores them in kafka_lake.contracts.
 */
Datum
kafka_lake_builtin_contracts(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	kl_init_materialized_srf(fcinfo);
	for (int i = 0; kl_builtins[i].name; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {0};

		values[0] = CStringGetTextDatum(kl_builtins[i].name);
		values[1] = Int32GetDatum(1);
		values[2] = CStringGetTextDatum(kl_builtins[i].definition);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * kl_contract_is_machine_event_v1
 *		Is this the built-in machine_event_v1 (what the bridge reads)?
 */
bool
kl_contract_is_machine_event_v1(const KlContract *c)
{
	return c->builtin && strcmp(c->name, KL_BUILTIN_MACHINE_EVENT_V1) == 0;
}

/*
 * kl_check_contract_name
 *		A contract's name: [a-z_][a-z0-9_]{0,62}.
 */
void
kl_check_contract_name(const char *name)
{
	size_t		len = strlen(name);
	bool		ok = len >= 1 && len <= 63 && ((name[0] >= 'a' && name[0] <= 'z') || name[0] == '_');

	for (size_t i = 1; ok && i < len; i++)
		ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
			name[i] == '_';
	if (!ok)
		ereport(ERROR,
				(errcode(len > 63 ? ERRCODE_NAME_TOO_LONG : ERRCODE_INVALID_NAME),
				 errmsg("invalid contract name \"%s\"", name),
				 errdetail("A contract name starts with a lower-case letter or an underscore, followed by up to 62 lower-case letters, digits or underscores."),
				 errhint("For example: orders_v1.")));
}

/* ----------------------------------------------------------------
 *		Reading a definition: json text as a tree, members in order
 * ----------------------------------------------------------------
 */

typedef struct KlDef
{
	KlJsonValue v;				/* the value's span */
	char	   *path;			/* where it is: $.properties.a */
	int			n;				/* members or elements */
	char	  **keys;			/* objects: the decoded names */
	struct KlDef **vals;
} KlDef;

static void kl_compile_paths(KlSchema *s, const KlDef *d);

/*
 * kl_def_fail
 *		ERROR 42P17 at a place of the definition.
 */
static void
kl_def_fail(const KlDef *at, const char *hint, const char *fmt,...) pg_attribute_printf(3, 4);

static void
kl_def_fail(const KlDef *at, const char *hint, const char *fmt,...)
{
	StringInfoData msg;

	initStringInfo(&msg);
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&msg, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&msg, needed);
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
			 errmsg("invalid contract definition at %s: %s", at ? at->path : "$", msg.data),
			 hint ? errhint("%s", hint) : 0));
}

/*
 * kl_is_identifier
 *		Can a name stand in a path after a dot?
 */
static bool
kl_is_identifier(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' || *s == '$'))
		return false;
	for (s++; *s; s++)
	{
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
			  *s == '_'))
			return false;
	}
	return true;
}

/*
 * kl_def_parse
 *		The value at v as a tree (objects and arrays down to their scalars).
 */
static KlDef *
kl_def_parse(const KlJsonValue *v, const char *path)
{
	KlDef	   *d = palloc0(sizeof(KlDef));

	check_stack_depth();
	d->v = *v;
	d->path = pstrdup(path);
	if (v->type == KL_JSON_OBJECT)
	{
		KlJsonReader it;
		KlJsonValue k;
		KlJsonValue m;
		int			cap = 8;

		d->keys = palloc(sizeof(char *) * cap);
		d->vals = palloc(sizeof(KlDef *) * cap);
		kl_json_object_open(&it, v->start, v->start + v->len, KL_JSON_MAX_DEPTH);
		while (kl_json_object_next(&it, &k, &m))
		{
			StringInfoData name;
			char	   *child;

			initStringInfo(&name);
			kl_json_decode_string(&k, &name);
			if ((int) strlen(name.data) != name.len)
				kl_def_fail(d, "Name members with text that holds no NUL character.",
							"a member name contains a NUL character");
			for (int i = 0; i < d->n; i++)
			{
				if (strcmp(d->keys[i], name.data) == 0)
					kl_def_fail(d, "Give each key once.", "key \"%s\" appears twice", name.data);
			}
			if (d->n == cap)
			{
				cap *= 2;
				d->keys = repalloc(d->keys, sizeof(char *) * cap);
				d->vals = repalloc(d->vals, sizeof(KlDef *) * cap);
			}
			child = kl_is_identifier(name.data) ? psprintf("%s.%s", path, name.data) :
				psprintf("%s[%s]", path, quote_literal_cstr(name.data));
			d->keys[d->n] = name.data;
			d->vals[d->n] = kl_def_parse(&m, child);
			d->n++;
		}
	}
	else if (v->type == KL_JSON_ARRAY)
	{
		KlJsonReader it;
		KlJsonValue e;
		int			cap = 8;

		d->vals = palloc(sizeof(KlDef *) * cap);
		kl_json_array_open(&it, v->start, v->start + v->len, KL_JSON_MAX_DEPTH);
		while (kl_json_array_next(&it, &e))
		{
			if (d->n == cap)
			{
				cap *= 2;
				d->vals = repalloc(d->vals, sizeof(KlDef *) * cap);
			}
			d->vals[d->n] = kl_def_parse(&e, psprintf("%s[%d]", path, d->n));
			d->n++;
		}
	}
	return d;
}

/*
 * kl_def_read
 *		The definition's text as a tree; 42P17 when it is no JSON object.
 */
static KlDef *
kl_def_read(const char *text, size_t len)
{
	KlJsonReader r;
	KlJsonValue v;

	kl_json_init(&r, text, len, KL_JSON_MAX_DEPTH);
	if (!kl_json_parse_document(&r, &v))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("invalid contract definition: invalid JSON: %s at byte %d",
						r.error, (int) (r.p - text)),
				 errhint("A definition is one JSON object, for example {\"type\": \"object\"}.")));
	if (v.type != KL_JSON_OBJECT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("invalid contract definition at $: a definition is a JSON object"),
				 errhint("For example {\"type\": \"object\", \"properties\": {\"order_id\": {\"type\": \"string\"}}}.")));
	return kl_def_parse(&v, "$");
}

/*
 * kl_def_get
 *		A member of an object, or NULL.
 */
static KlDef *
kl_def_get(const KlDef *obj, const char *key)
{
	for (int i = 0; i < obj->n; i++)
	{
		if (strcmp(obj->keys[i], key) == 0)
			return obj->vals[i];
	}
	return NULL;
}

/*
 * kl_def_string
 *		The decoded text of a string value; 42P17 when it is none.
 */
static char *
kl_def_string(const KlDef *d, const char *what)
{
	StringInfoData buf;

	if (d->v.type != KL_JSON_STRING)
		kl_def_fail(d, "Write it as a JSON string, in double quotes.", "%s must be a string", what);
	initStringInfo(&buf);
	kl_json_decode_string(&d->v, &buf);
	if ((int) strlen(buf.data) != buf.len)
		kl_def_fail(d, "Remove the \\u0000.", "%s must not contain a NUL character", what);
	return buf.data;
}

/*
 * kl_def_int
 *		An integer from min to max; 42P17 otherwise.
 */
static int
kl_def_int(const KlDef *d, const char *what, int64 min, int64 max)
{
	int64		v;

	if (d->v.type != KL_JSON_NUMBER || !d->v.is_integer ||
		!kl_json_parse_int64(d->v.start, d->v.len, &v) || v < min || v > max)
		kl_def_fail(d, "Write a JSON number without a fraction or an exponent.",
					"%s must be an integer from " INT64_FORMAT " to " INT64_FORMAT, what, min, max);
	return (int) v;
}

/*
 * kl_def_bool
 */
static bool
kl_def_bool(const KlDef *d, const char *what, const char *hint)
{
	if (d->v.type != KL_JSON_TRUE && d->v.type != KL_JSON_FALSE)
		kl_def_fail(d, hint ? hint : "Write true or false, without quotes.",
					"%s must be true or false", what);
	return d->v.type == KL_JSON_TRUE;
}

/*
 * kl_def_number
 *		A number as a KlNumber.
 */
static KlNumber
kl_def_number(const KlDef *d, const char *what)
{
	KlNumber	n;

	if (d->v.type != KL_JSON_NUMBER)
		kl_def_fail(d, "Write a JSON number, without quotes.", "%s must be a number", what);
	n.text = pnstrdup(d->v.start, d->v.len);
	n.len = d->v.len;
	n.is_int64 = d->v.is_integer && kl_json_parse_int64(d->v.start, d->v.len, &n.ival);
	if (n.is_int64)
	{
		/* canonical: "-0" is 0 */
		n.text = psprintf(INT64_FORMAT, n.ival);
		n.len = strlen(n.text);
	}
	return n;
}

/* ----------------------------------------------------------------
 *		Keys
 * ----------------------------------------------------------------
 */

static const char *const kl_top_keys[] = {
	"type", "properties", "required", "additionalProperties", "event_id", "business_date",
	"schema_version", "rules", "max_value_bytes", "columns", "natural_key", "entity", "raw",
	"framing", "title", "description", "$comment", "$schema", NULL
};

static const char *const kl_raw_keys[] = {
	"raw", "business_date", "max_value_bytes", "title", "description", "$comment", "$schema", NULL
};

static const char *const kl_property_keys[] = {
	"type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
	"minLength", "maxLength", "pattern", "format", "properties", "required",
	"additionalProperties", "items", "normalize", "header", "path", "sql_type",
	"title", "description", "$comment", NULL
};

static const char *const kl_entity_keys[] = {
	"key", "order_by", "deleted", NULL
};

static const char *const kl_deleted_keys[] = {
	"field", "equals", "tombstones", NULL
};

static const char *const kl_business_date_keys[] = {
	"field", "time_zone", "kafka_timestamp", NULL
};

/* JSON Schema's words that kafka_lake does not implement */
static const char *const kl_unsupported_keywords[] = {
	"$ref", "$id", "$defs", "definitions", "allOf", "anyOf", "oneOf", "not", "if", "then",
	"else", "default", "examples", "multipleOf", "minItems", "maxItems", "uniqueItems",
	"contains", "minContains", "maxContains", "prefixItems", "additionalItems",
	"unevaluatedItems", "unevaluatedProperties", "minProperties", "maxProperties",
	"patternProperties", "propertyNames", "dependencies", "dependentRequired",
	"dependentSchemas", "contentEncoding", "contentMediaType", "readOnly", "writeOnly",
	"deprecated", NULL
};

static const char *const kl_type_names[] = {
	"null", "boolean", "integer", "number", "string", "object", "array", NULL
};
static const int kl_type_bits_of[] = {
	KL_TYPE_NULL, KL_TYPE_BOOLEAN, KL_TYPE_INTEGER, KL_TYPE_INTEGER | KL_TYPE_NUMBER,
	KL_TYPE_STRING, KL_TYPE_OBJECT, KL_TYPE_ARRAY
};

/*
 * kl_closest
 *		The word of words nearest to a mistyped one, if it is near enough.
 */
static const char *
kl_closest(const char *word, const char *const *words)
{
	const char *best = NULL;
	int			best_distance = INT_MAX;
	int			len = strlen(word);

	for (int i = 0; words[i]; i++)
	{
		int			d = varstr_levenshtein(word, len, words[i], strlen(words[i]), 1, 1, 1, false);

		if (d < best_distance)
		{
			best_distance = d;
			best = words[i];
		}
	}
	if (best != NULL && best_distance <= Max(2, len / 4))
		return best;
	return NULL;
}

/*
 * kl_word_list
 *		"a, b, c" of a NULL-terminated list.
 */
static char *
kl_word_list(const char *const *words)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; words[i]; i++)
		appendStringInfo(&buf, "%s%s", i ? ", " : "", words[i]);
	return buf.data;
}

/*
 * kl_def_check_keys
 *		Refuse every key of obj that words does not list.
 */
static void
kl_def_check_keys(const KlDef *obj, const char *const *words, const char *where)
{
	for (int i = 0; i < obj->n; i++)
	{
		const char *key = obj->keys[i];
		bool		known = false;
		const char *closest;

		for (int w = 0; words[w]; w++)
			known |= (strcmp(words[w], key) == 0);
		if (known)
			continue;
		for (int w = 0; kl_unsupported_keywords[w]; w++)
		{
			if (strcmp(kl_unsupported_keywords[w], key) == 0)
				kl_def_fail(obj, psprintf("The keys of %s are: %s.", where, kl_word_list(words)),
							"JSON Schema keyword \"%s\" is not supported", key);
		}
		closest = kl_closest(key, words);
		kl_def_fail(obj, closest ?
					psprintf("Perhaps you meant \"%s\". The keys of %s are: %s.", closest, where,
							 kl_word_list(words)) :
					psprintf("The keys of %s are: %s.", where, kl_word_list(words)),
					"unknown key \"%s\"", key);
	}
}

/* ----------------------------------------------------------------
 *		Compiling
 * ----------------------------------------------------------------
 */

/*
 * kl_type_words
 *		How a violation names the types a field may have: "a string or null".
 */
static const char *
kl_type_words(int types)
{
	static const struct
	{
		int			bit;
		const char *word;
	}			words[] =
	{
		{KL_TYPE_STRING, "a string"},
		{KL_TYPE_INTEGER, "an integer"},
		{KL_TYPE_NUMBER, "a number"},
		{KL_TYPE_BOOLEAN, "a boolean"},
		{KL_TYPE_OBJECT, "an object"},
		{KL_TYPE_ARRAY, "an array"},
		{KL_TYPE_NULL, "null"}
	};
	const char *list[8];
	int			n = 0;
	StringInfoData buf;

	for (int i = 0; i < (int) lengthof(words); i++)
	{
		/* "a number" covers integers */
		if (words[i].bit == KL_TYPE_INTEGER && (types & KL_TYPE_NUMBER))
			continue;
		if (types & words[i].bit)
			list[n++] = words[i].word;
	}
	initStringInfo(&buf);
	for (int i = 0; i < n; i++)
		appendStringInfo(&buf, "%s%s", i == 0 ? "" : (i == n - 1 ? " or " : ", "), list[i]);
	return buf.data;
}

/*
 * kl_default_sql_type
 *		The column type of a field that sets no sql_type.
 */
static void
kl_default_sql_type(KlSchema *s)
{
	int			types = s->types & ~KL_TYPE_NULL;

	s->sql_typmod = -1;
	switch (types)
	{
		case KL_TYPE_STRING:
			if (s->format == KL_FORMAT_DATE)
			{
				s->sql_type = "date";
				s->sql_typid = DATEOID;
			}
			else if (s->format == KL_FORMAT_DATE_TIME)
			{
				s->sql_type = "timestamp with time zone";
				s->sql_typid = TIMESTAMPTZOID;
			}
			else
			{
				s->sql_type = "text";
				s->sql_typid = TEXTOID;
			}
			break;
		case KL_TYPE_INTEGER:
			s->sql_type = "bigint";
			s->sql_typid = INT8OID;
			break;
		case KL_TYPE_INTEGER | KL_TYPE_NUMBER:
			s->sql_type = "numeric";
			s->sql_typid = NUMERICOID;
			break;
		case KL_TYPE_BOOLEAN:
			s->sql_type = "boolean";
			s->sql_typid = BOOLOID;
			break;
		default:
			s->sql_type = "jsonb";
			s->sql_typid = JSONBOID;
			break;
	}
}

/*
 * kl_compile_sql_type
 *		A property's "sql_type": a built-in type of PostgreSQL, resolved in
 *		pg_catalog (builtin_types.c says why).  create_contract() refuses
 *		any other; a version stored before 1.2 may have one, which is kept
 *		with its problem for the tables that would use it to refuse
 *		(kl_contract_check_sql_types).
 */
static void
kl_compile_sql_type(KlSchema *s, const KlDef *k)
{
	char	   *t = kl_def_string(k, "sql_type");
	const char *problem;

	kl_resolve_type(t, &s->sql_typid, &s->sql_typmod);
	if (!OidIsValid(s->sql_typid))
	{
		if (kl_defining)
			kl_def_fail(k, "Name a built-in type of PostgreSQL, for example numeric(12,2), varchar(40) or timestamptz. Types are looked up in pg_catalog only, whatever the search_path.",
						"type \"%s\" does not exist", t);
		s->sql_type = pstrdup(t);
		s->sql_type_problem = "a type that pg_catalog does not have";
	}
	else if ((problem = kl_builtin_type_problem(s->sql_typid)) != NULL)
	{
		const char *name = kl_type_name(s->sql_typid, s->sql_typmod);
		const char *base = kl_builtin_base(s->sql_typid);

		if (kl_defining)
			kl_def_fail(k, base ?
						psprintf("Use the built-in type it stands on, \"sql_type\": \"%s\", and cast to %s in the queries that need it: they run with their own role's rights.",
								 base, name) :
						"Use a built-in type of PostgreSQL, for example text, numeric or jsonb.",
						"type \"%s\" is %s: kafka_lake builds columns of PostgreSQL's built-in types only, since another type's functions would run with the rights of whoever reads or bridges the source",
						name, problem);
		s->sql_type = name;
		s->sql_type_problem = problem;
	}
	else
		s->sql_type = kl_type_name(s->sql_typid, s->sql_typmod);
	if (s->sql_type_problem && kl_compiling->bad_sql_type == NULL)
		kl_compiling->bad_sql_type = s;
}

static KlObjectSchema *kl_compile_object(const KlDef *d, const KlDef *props, const char *path,
										 bool top);

/*
 * kl_compile_types
 *		The "type" of a property: a name or a list of names.
 */
static int
kl_compile_types(const KlDef *t)
{
	int			types = 0;
	const KlDef *const *names = &t;
	int			n = 1;

	if (t->v.type == KL_JSON_ARRAY)
	{
		if (t->n == 0)
			kl_def_fail(t, "For example \"type\": [\"string\", \"null\"].", "type must list at least one type");
		names = (const KlDef *const *) t->vals;
		n = t->n;
	}
	for (int i = 0; i < n; i++)
	{
		const KlDef *e = names[i];
		char	   *name;
		int			bit = 0;

		if (e->v.type != KL_JSON_STRING)
			kl_def_fail(e, psprintf("A type is one of: %s.", kl_word_list(kl_type_names)),
						"type must be a type name or a list of type names");
		name = kl_def_string(e, "a type");
		for (int k = 0; kl_type_names[k]; k++)
		{
			if (strcmp(kl_type_names[k], name) == 0)
				bit = kl_type_bits_of[k];
		}
		if (bit == 0)
		{
			const char *closest = kl_closest(name, kl_type_names);

			kl_def_fail(e, closest ?
						psprintf("Perhaps you meant \"%s\". A type is one of: %s.", closest,
								 kl_word_list(kl_type_names)) :
						psprintf("A type is one of: %s.", kl_word_list(kl_type_names)),
						"unknown type \"%s\"", name);
		}
		if ((types & bit) == bit)
			kl_def_fail(e, "Name each type once.", "type \"%s\" is listed twice", name);
		types |= bit;
	}
	return types;
}

/*
 * kl_compile_enum_value
 *		One enum (or const) value, which must be a scalar of the field's
 *		types.
 */
static void
kl_compile_enum_value(const KlDef *d, int types, KlEnumValue *e)
{
	memset(e, 0, sizeof(*e));
	switch (d->v.type)
	{
		case KL_JSON_STRING:
			e->type = KL_TYPE_STRING;
			e->str = kl_def_string(d, "an enum value");
			e->str_len = strlen(e->str);
			break;
		case KL_JSON_NUMBER:
			e->num = kl_def_number(d, "an enum value");
			e->type = d->v.is_integer ? KL_TYPE_INTEGER : KL_TYPE_NUMBER;
			break;
		case KL_JSON_TRUE:
		case KL_JSON_FALSE:
			e->type = KL_TYPE_BOOLEAN;
			e->bval = (d->v.type == KL_JSON_TRUE);
			break;
		case KL_JSON_NULL:
			e->type = KL_TYPE_NULL;
			break;
		default:
			kl_def_fail(d, "Enum values are strings, numbers, booleans or null.",
						"an enum value must not be an object or an array");
	}
	if (!(types & (e->type == KL_TYPE_INTEGER ? (KL_TYPE_INTEGER | KL_TYPE_NUMBER) : e->type)))
		kl_def_fail(d, "Give enum and const values of the field's type.",
					"value %.*s is not %s", (int) Min(d->v.len, 64), d->v.start, kl_type_words(types));
}

/*
 * kl_compile_property
 *		One property's schema (or an array's items), checked key by key.
 */
static void
kl_compile_property(KlSchema *s, const KlDef *d, const char *name, const char *path, bool top)
{
	KlDef	   *k;
	bool		is_string,
				is_number;
	const char *where = top ? "a property" : "a nested property or items";

	check_stack_depth();
	memset(s, 0, sizeof(*s));
	s->min_length = -1;
	s->max_length = -1;
	s->path = pstrdup(path);
	if (name != NULL)
	{
		char	   *json = palloc(KL_JSON_ESCAPED_MAX(strlen(name)));

		s->name = pstrdup(name);
		s->name_len = strlen(name);
		s->name_json_len = kl_json_escape_to(json, name, s->name_len);
		s->name_json = json;
	}
	if (d->v.type != KL_JSON_OBJECT)
		kl_def_fail(d, "For example {\"type\": \"string\"}.", "a property's schema must be a JSON object");
	kl_def_check_keys(d, kl_property_keys, where);

	if ((k = kl_def_get(d, "type")) == NULL)
		kl_def_fail(d, psprintf("Add \"type\"; a type is one of: %s.", kl_word_list(kl_type_names)),
					"missing key \"type\"");
	s->types = kl_compile_types(k);
	s->type_words = kl_type_words(s->types);
	is_string = (s->types & KL_TYPE_STRING) != 0;
	is_number = (s->types & (KL_TYPE_INTEGER | KL_TYPE_NUMBER)) != 0;

#define ONLY_FOR(ok, key, kind) \
	do { \
		if (!(ok)) \
			kl_def_fail(kl_def_get(d, key), \
						psprintf("Remove \"%s\", or give the field a type that is %s.", key, kind), \
						"\"%s\" applies to %s, and the field is %s", key, kind, s->type_words); \
	} while (0)

	/* strings */
	if ((k = kl_def_get(d, "normalize")) != NULL)
	{
		static const char *const norms[] = {"trim", "lower", NULL};

		ONLY_FOR(is_string, "normalize", "a string");
		if (k->v.type != KL_JSON_ARRAY)
			kl_def_fail(k, "For example \"normalize\": [\"trim\", \"lower\"].", "normalize must be a list");
		for (int i = 0; i < k->n; i++)
		{
			char	   *n = kl_def_string(k->vals[i], "a normalization");

			if (strcmp(n, "trim") == 0 && !s->trim)
				s->trim = true;
			else if (strcmp(n, "lower") == 0 && !s->lower)
				s->lower = true;
			else
			{
				const char *closest = kl_closest(n, norms);

				kl_def_fail(k->vals[i],
							closest && strcmp(closest, n) != 0 ?
							psprintf("Perhaps you meant \"%s\". A normalization is trim or lower, each at most once.", closest) :
							"A normalization is trim or lower, each at most once.",
							"unknown or repeated normalization \"%s\"", n);
			}
		}
	}
	if ((k = kl_def_get(d, "minLength")) != NULL)
	{
		ONLY_FOR(is_string, "minLength", "a string");
		s->min_length = kl_def_int(k, "minLength", 0, PG_INT32_MAX);
	}
	if ((k = kl_def_get(d, "maxLength")) != NULL)
	{
		ONLY_FOR(is_string, "maxLength", "a string");
		s->max_length = kl_def_int(k, "maxLength", 0, PG_INT32_MAX);
		if (s->min_length > s->max_length)
			kl_def_fail(k, "Make maxLength at least minLength.",
						"maxLength %d is below minLength %d: no value could pass", s->max_length, s->min_length);
	}
	if ((k = kl_def_get(d, "pattern")) != NULL)
	{
		char	   *error;

		ONLY_FOR(is_string, "pattern", "a string");
		s->pattern_text = kl_def_string(k, "pattern");
		if (!kl_pattern_compile(s, s->pattern_text, strlen(s->pattern_text), &error))
			kl_def_fail(k, "A pattern is a PostgreSQL regular expression (advanced flavour, as for ~), which is not ECMA-262: write [0-9] rather than \\d inside brackets, and no lookbehind.",
						"pattern \"%s\" does not compile: %s", s->pattern_text, error);
		if (s->pattern_unbounded)
		{
			if (kl_defining)
				kl_def_fail(k, "Write the pattern without back references (\\1 ... \\9) and without lookahead or lookbehind constraints ((?=...), (?!...), (?<=...), (?<!...)). Every value of every record is matched, and only such a pattern is matched in time that grows linearly with the value.",
							"pattern \"%s\" uses a back reference or a lookahead or lookbehind constraint, whose matching time cannot be bounded",
							s->pattern_text);
			if (kl_compiling->unbounded_pattern == NULL)
				kl_compiling->unbounded_pattern = s;
		}
	}
	if ((k = kl_def_get(d, "format")) != NULL)
	{
		static const char *const formats[] = {"date", "date-time", NULL};
		char	   *f;

		ONLY_FOR(is_string, "format", "a string");
		f = kl_def_string(k, "format");
		if (strcmp(f, "date") == 0)
			s->format = KL_FORMAT_DATE;
		else if (strcmp(f, "date-time") == 0)
			s->format = KL_FORMAT_DATE_TIME;
		else
		{
			const char *closest = kl_closest(f, formats);

			kl_def_fail(k, closest ?
						psprintf("Perhaps you meant \"%s\". A format is date (YYYY-MM-DD) or date-time (ISO-8601 with a zone).", closest) :
						"A format is date (YYYY-MM-DD) or date-time (ISO-8601 with a zone); check other forms with \"pattern\".",
						"unknown format \"%s\"", f);
		}
	}

	/* numbers */
	if ((k = kl_def_get(d, "minimum")) != NULL)
	{
		ONLY_FOR(is_number, "minimum", "a number");
		s->has_minimum = true;
		s->minimum = kl_def_number(k, "minimum");
	}
	if ((k = kl_def_get(d, "exclusiveMinimum")) != NULL)
	{
		ONLY_FOR(is_number, "exclusiveMinimum", "a number");
		if (k->v.type == KL_JSON_TRUE || k->v.type == KL_JSON_FALSE)
			kl_def_fail(k, "Write the bound itself, as JSON Schema 2019-09 and later do: \"exclusiveMinimum\": 0.",
						"exclusiveMinimum must be a number");
		s->has_xminimum = true;
		s->xminimum = kl_def_number(k, "exclusiveMinimum");
	}
	if ((k = kl_def_get(d, "maximum")) != NULL)
	{
		ONLY_FOR(is_number, "maximum", "a number");
		s->has_maximum = true;
		s->maximum = kl_def_number(k, "maximum");
	}
	if ((k = kl_def_get(d, "exclusiveMaximum")) != NULL)
	{
		ONLY_FOR(is_number, "exclusiveMaximum", "a number");
		if (k->v.type == KL_JSON_TRUE || k->v.type == KL_JSON_FALSE)
			kl_def_fail(k, "Write the bound itself, as JSON Schema 2019-09 and later do: \"exclusiveMaximum\": 100.",
						"exclusiveMaximum must be a number");
		s->has_xmaximum = true;
		s->xmaximum = kl_def_number(k, "exclusiveMaximum");
	}
	if (s->has_minimum && s->has_maximum &&
		kl_number_cmp(s->minimum.text, s->minimum.len, s->maximum.text, s->maximum.len) > 0)
		kl_def_fail(kl_def_get(d, "maximum"), "Make maximum at least minimum.",
					"maximum %s is below minimum %s: no value could pass", s->maximum.text, s->minimum.text);

	/* enum and const */
	{
		KlDef	   *en = kl_def_get(d, "enum");
		KlDef	   *co = kl_def_get(d, "const");

		if (en && co)
			kl_def_fail(co, "Use \"const\" for one value, \"enum\" for a list.", "give \"enum\" or \"const\", not both");
		if (en)
		{
			if (en->v.type != KL_JSON_ARRAY || en->n == 0)
				kl_def_fail(en, "For example \"enum\": [\"new\", \"paid\", \"shipped\"].",
							"enum must be a list of at least one value");
			s->nenum = en->n;
			s->enums = palloc(sizeof(KlEnumValue) * en->n);
			for (int i = 0; i < en->n; i++)
			{
				kl_compile_enum_value(en->vals[i], s->types, &s->enums[i]);
				for (int j = 0; j < i; j++)
				{
					if (en->vals[j]->v.len == en->vals[i]->v.len &&
						memcmp(en->vals[j]->v.start, en->vals[i]->v.start, en->vals[i]->v.len) == 0)
						kl_def_fail(en->vals[i], "List each value once.", "enum lists %.*s twice",
									(int) Min(en->vals[i]->v.len, 64), en->vals[i]->v.start);
				}
			}
		}
		if (co)
		{
			s->nenum = 1;
			s->enums = palloc(sizeof(KlEnumValue));
			kl_compile_enum_value(co, s->types, &s->enums[0]);
		}
	}

	/* objects and arrays */
	{
		KlDef	   *props = kl_def_get(d, "properties");

		if (props || kl_def_get(d, "required") || kl_def_get(d, "additionalProperties"))
		{
			const char *key = props ? "properties" :
				kl_def_get(d, "required") ? "required" : "additionalProperties";

			ONLY_FOR(s->types & KL_TYPE_OBJECT, key, "an object");
			s->object = kl_compile_object(d, props, path, false);
		}
	}
	if ((k = kl_def_get(d, "items")) != NULL)
	{
		ONLY_FOR(s->types & KL_TYPE_ARRAY, "items", "an array");
		s->items = palloc(sizeof(KlSchema));
		kl_compile_property(s->items, k, NULL, psprintf("%s[]", path), false);
	}

	/* kafka_lake's own */
	if ((k = kl_def_get(d, "header")) != NULL)
	{
		if (!top)
			kl_def_fail(k, "Only a top-level field can come from a Kafka header.",
						"\"header\" is not allowed here");
		if (s->types != KL_TYPE_STRING)
			kl_def_fail(k, "Give the field \"type\": \"string\" (a header's value is text).",
						"a field from a header must be of type string, and this one is %s", s->type_words);
		s->header = kl_def_string(k, "header");
		s->header_len = strlen(s->header);
		if (s->header_len == 0)
			kl_def_fail(k, "Give the name of the Kafka header the field comes from.",
						"header must name a Kafka header");
	}
	if ((k = kl_def_get(d, "path")) != NULL)
	{
		if (!top)
			kl_def_fail(k, "Only a top-level field can be derived from a path.",
						"\"path\" is not allowed here");
		if (s->header)
			kl_def_fail(k, "A field comes from a header or from a path, not both.",
						"give \"header\" or \"path\", not both");
		kl_compile_paths(s, k);
	}
	if ((k = kl_def_get(d, "sql_type")) != NULL)
	{
		if (!top)
			kl_def_fail(k, "Only a top-level field is a column of kafka_lake.<source>_events.",
						"\"sql_type\" is not allowed here");
		kl_compile_sql_type(s, k);
	}
	else
		kl_default_sql_type(s);
#undef ONLY_FOR
}

/*
 * kl_compile_path
 *		One path: a list of member names and array indexes, the first a
 *		name (a top-level member).  Its text is how messages name it.
 */
static void
kl_compile_path(KlPath *path, const KlDef *d)
{
	StringInfoData text;

	if (d->v.type != KL_JSON_ARRAY || d->n == 0)
		kl_def_fail(d, "For example \"path\": [\"customer\", \"country\"] (member names, and array indexes from 0).",
					"a path must be a non-empty list");
	if (d->n > 32)
		kl_def_fail(d, "Derive the field from a path of at most 32 steps.", "a path may have at most 32 steps");
	path->nsteps = d->n;
	path->steps = palloc0(sizeof(KlPathStep) * d->n);
	initStringInfo(&text);
	for (int i = 0; i < d->n; i++)
	{
		const KlDef *e = d->vals[i];
		KlPathStep *step = &path->steps[i];

		if (e->v.type == KL_JSON_STRING)
		{
			step->name = kl_def_string(e, "a step of a path");
			step->name_len = strlen(step->name);
			if (step->name_len == 0)
				kl_def_fail(e, "Name the member of each step.", "a step of a path must not be empty");
			appendStringInfo(&text, i > 0 ? ".%s" : "%s", step->name);
		}
		else if (e->v.type == KL_JSON_NUMBER && i > 0)
		{
			step->index = kl_def_int(e, "an array index", 0, 1000000);
			appendStringInfo(&text, "[%d]", step->index);
		}
		else
			kl_def_fail(e, i == 0 ? "A path starts at a top-level member of the value: its name." :
						"A step is a member's name (a string) or an array index (an integer from 0).",
						"a step of a path must be %s", i == 0 ? "a member name" : "a name or an index");
	}
	path->text = text.data;
}

/*
 * kl_compile_paths
 *		"path": one path, or a list of paths tried in order (the first that
 *		leads to a value gives it: [["after", "id"], ["before", "id"]]).
 *		What each step is in the schema is checked later, by
 *		kl_resolve_paths, once every top-level property is known.
 */
static void
kl_compile_paths(KlSchema *s, const KlDef *d)
{
	bool		several = d->v.type == KL_JSON_ARRAY && d->n > 0 &&
		d->vals[0]->v.type == KL_JSON_ARRAY;
	StringInfoData text;

	if (d->v.type != KL_JSON_ARRAY)
		kl_def_fail(d, "For example \"path\": [\"customer\", \"country\"], or several paths tried in order: [[\"after\", \"id\"], [\"before\", \"id\"]].",
					"path must be a list");
	if (several && d->n > 8)
		kl_def_fail(d, "Try at most 8 paths.", "a field may be derived from at most 8 paths");
	s->npaths = several ? d->n : 1;
	s->paths = palloc0(sizeof(KlPath) * s->npaths);
	initStringInfo(&text);
	for (int i = 0; i < s->npaths; i++)
	{
		kl_compile_path(&s->paths[i], several ? d->vals[i] : d);
		appendStringInfo(&text, i > 0 ? " or %s" : "%s", s->paths[i].text);
	}
	s->paths_text = text.data;
}

/*
 * kl_compile_object
 *		The properties, required and additionalProperties of an object
 *		schema (d: the schema object holding them).
 */
static KlObjectSchema *
kl_compile_object(const KlDef *d, const KlDef *props, const char *path, bool top)
{
	KlObjectSchema *o = palloc0(sizeof(KlObjectSchema));
	KlDef	   *req = kl_def_get(d, "required");
	KlDef	   *add = kl_def_get(d, "additionalProperties");

	o->additional = true;
	if (add)
		o->additional = kl_def_bool(add, "additionalProperties",
									"A schema for the other members is not supported: true lets any member in, false refuses every member not in properties.");
	if (props)
	{
		if (props->v.type != KL_JSON_OBJECT)
			kl_def_fail(props, "For example \"properties\": {\"order_id\": {\"type\": \"string\"}}.",
						"properties must be a JSON object");
		if (props->n > 1000)
			kl_def_fail(props, "Put the rest under an object field, or let additionalProperties keep them.",
						"an object may have at most 1000 properties");
		o->nprops = props->n;
		o->props = palloc0(sizeof(KlSchema) * Max(props->n, 1));
		for (int i = 0; i < props->n; i++)
		{
			const char *name = props->keys[i];
			char	   *ppath = top ? pstrdup(name) : psprintf("%s.%s", path, name);

			if (name[0] == '\0')
				kl_def_fail(props, "Give every property a name.", "a property name must not be empty");
			kl_compile_property(&o->props[i], props->vals[i], name, ppath, top);
			if (o->props[i].header)
				o->nheaders++;
			if (o->props[i].npaths > 0)
				o->nderived++;
		}
	}
	if (req)
	{
		if (req->v.type != KL_JSON_ARRAY)
			kl_def_fail(req, "For example \"required\": [\"order_id\"].", "required must be a list of property names");
		o->required = palloc(sizeof(int) * Max(req->n, 1));
		for (int i = 0; i < req->n; i++)
		{
			char	   *name = kl_def_string(req->vals[i], "a required name");
			int			p = -1;

			for (int j = 0; j < o->nprops; j++)
			{
				if (strcmp(o->props[j].name, name) == 0)
					p = j;
			}
			if (p < 0)
				kl_def_fail(req->vals[i], "Every required field must be one of properties.",
							"required field \"%s\" is not in properties", name);
			for (int j = 0; j < o->nrequired; j++)
			{
				if (o->required[j] == p)
					kl_def_fail(req->vals[i], "Name each required field once.",
								"\"%s\" is required twice", name);
			}
			o->required[o->nrequired++] = p;
		}
	}

	/* the event's order: names by their bytes */
	o->sorted = palloc(sizeof(int) * Max(o->nprops, 1));
	for (int i = 0; i < o->nprops; i++)
	{
		int			j = i;

		while (j > 0)
		{
			const KlSchema *a = &o->props[o->sorted[j - 1]];
			const KlSchema *b = &o->props[i];
			int			c = memcmp(a->name, b->name, Min(a->name_len, b->name_len));

			if ((c != 0 ? c : a->name_len - b->name_len) <= 0)
				break;
			o->sorted[j] = o->sorted[j - 1];
			j--;
		}
		o->sorted[j] = i;
	}

	/* the lookup of member names */
	o->hash_size = 16;
	while (o->hash_size < o->nprops * 2)
		o->hash_size *= 2;
	o->hash = palloc(sizeof(int16) * o->hash_size);
	memset(o->hash, 0xFF, sizeof(int16) * o->hash_size);
	for (int i = 0; i < o->nprops; i++)
	{
		uint32		h = kl_contract_name_hash(o->props[i].name, o->props[i].name_len) & (o->hash_size - 1);

		while (o->hash[h] >= 0)
			h = (h + 1) & (o->hash_size - 1);
		o->hash[h] = (int16) i;
	}
	return o;
}

/*
 * kl_top_prop
 *		The top-level property a kafka_lake key names; 42P17 when none.
 */
static int
kl_top_prop(const KlContract *c, const KlDef *d, const char *name, const char *key)
{
	for (int i = 0; i < c->top.nprops; i++)
	{
		if (strcmp(c->top.props[i].name, name) == 0)
			return i;
	}
	kl_def_fail(d, psprintf("%s names fields of the top-level properties.", key),
				"\"%s\" is not a property", name);
	return -1;
}

/*
 * kl_is_required
 */
static bool
kl_is_required(const KlContract *c, int p)
{
	for (int i = 0; i < c->top.nrequired; i++)
	{
		if (c->top.required[i] == p)
			return true;
	}
	return false;
}

/*
 * kl_compile_business_date
 *		"business_date": {"field": f} | {"field": f, "time_zone": z} |
 *		{"kafka_timestamp": true, "time_zone": z}
 */
static void
kl_compile_business_date(KlContract *c, const KlDef *d)
{
	KlDef	   *field;
	KlDef	   *zone;
	KlDef	   *kts;

	if (d->v.type != KL_JSON_OBJECT)
		kl_def_fail(d, "For example \"business_date\": {\"field\": \"business_date\"} or {\"field\": \"ordered_at\", \"time_zone\": \"Europe/Berlin\"}.",
					"business_date must be a JSON object");
	kl_def_check_keys(d, kl_business_date_keys, "business_date");
	field = kl_def_get(d, "field");
	zone = kl_def_get(d, "time_zone");
	kts = kl_def_get(d, "kafka_timestamp");
	if (zone)
	{
		char	   *name = kl_def_string(zone, "time_zone");
		pg_tz	   *tz = pg_tzset(name);
		DateADT		probe;

		if (tz == NULL || !kl_date_in_zone(GetCurrentTimestamp(), tz, &probe))
			kl_def_fail(zone, "Name a zone of pg_timezone_names, for example UTC or Europe/Berlin.",
						"unknown time zone \"%s\"", name);
		c->bd_tz = tz;
		c->bd_zone = name;
	}
	if (kts)
	{
		if (!kl_def_bool(kts, "kafka_timestamp", NULL))
			kl_def_fail(kts, "Leave kafka_timestamp out, or set it to true.", "kafka_timestamp must be true");
		if (field)
			kl_def_fail(d, "Give either \"field\" or \"kafka_timestamp\".", "business_date takes one source");
		if (!zone)
			kl_def_fail(d, "Add \"time_zone\", for example \"UTC\".",
						"the Kafka timestamp needs a time_zone to become a date");
		c->bd_kind = KL_BD_KAFKA_TIMESTAMP;
		return;
	}
	if (!field)
		kl_def_fail(d, "Give \"field\" (a date or date-time field) or \"kafka_timestamp\": true.",
					"business_date needs a source");
	if (c->raw)
		kl_def_fail(field, "A raw contract has no fields: use \"kafka_timestamp\": true.",
					"a raw contract cannot take business_date from a field");
	c->bd_prop = kl_top_prop(c, field, kl_def_string(field, "field"), "\"business_date\"");
	{
		const KlSchema *s = &c->top.props[c->bd_prop];

		if (!kl_is_required(c, c->bd_prop) || s->types != KL_TYPE_STRING ||
			s->format == KL_FORMAT_NONE)
			kl_def_fail(field, "The business_date field is required, of type string (not null), with \"format\": \"date\" or \"date-time\".",
						"field \"%s\" cannot give the business date", s->name);
		if (s->format == KL_FORMAT_DATE)
		{
			if (zone)
				kl_def_fail(zone, "A date field is already a date: leave time_zone out.",
							"a date field takes no time_zone");
			c->bd_kind = KL_BD_DATE_FIELD;
		}
		else
		{
			if (!zone)
				kl_def_fail(d, "Add \"time_zone\" to say which day a timestamp falls on, for example \"Europe/Berlin\".",
							"a date-time field needs a time_zone to become a date");
			c->bd_kind = KL_BD_TIMESTAMP_FIELD;
		}
	}
}

/*
 * kl_compile_rules
 *		"rules": ["left op right", ...], right a field or a number.  Compiled
 *		in the order of the checks: by left side in properties order, then
 *		as written.
 */
static void
kl_compile_rules(KlContract *c, const KlDef *d)
{
	static const char *const ops[] = {"<", "<=", "=", "<>", ">=", ">", "!=", NULL};
	static const KlRuleOp opcodes[] = {KL_OP_LT, KL_OP_LE, KL_OP_EQ, KL_OP_NE, KL_OP_GE, KL_OP_GT, KL_OP_NE};
	static const char *const texts[] = {
		"must be less than", "must not exceed", "must equal", "must not equal",
		"must be at least", "must be greater than"
	};
	KlRule	   *rules;
	int			n = 0;

	if (d->v.type != KL_JSON_ARRAY)
		kl_def_fail(d, "For example \"rules\": [\"defect_count <= units_produced\"].", "rules must be a list");
	rules = palloc0(sizeof(KlRule) * Max(d->n, 1));
	for (int i = 0; i < d->n; i++)
	{
		const KlDef *e = d->vals[i];
		char	   *text = kl_def_string(e, "a rule");
		char	   *p = text;
		char	   *left;
		char	   *right;
		char	   *op;
		int			o = -1;
		KlRule	   *r = &rules[n++];
		const char *hint = "A rule is \"field op field\" or \"field op number\", op one of < <= = <> >= >, for example \"defect_count <= units_produced\".";

		/* left: a field name */
		while (*p == ' ')
			p++;
		left = p;
		while (*p && *p != ' ' && *p != '<' && *p != '>' && *p != '=' && *p != '!')
			p++;
		left = pnstrdup(left, p - left);
		while (*p == ' ')
			p++;
		op = p;
		while (*p == '<' || *p == '>' || *p == '=' || *p == '!')
			p++;
		op = pnstrdup(op, p - op);
		while (*p == ' ')
			p++;
		right = p;
		while (*p && *p != ' ')
			p++;
		right = pnstrdup(right, p - right);
		while (*p == ' ')
			p++;
		for (int k = 0; ops[k]; k++)
		{
			if (strcmp(ops[k], op) == 0)
				o = k;
		}
		if (*left == '\0' || o < 0 || *right == '\0' || *p != '\0')
			kl_def_fail(e, hint, "cannot read rule \"%s\"", text);
		r->op = opcodes[o];
		r->left = kl_top_prop(c, e, left, "A rule");
		r->right = -1;
		if ((right[0] >= '0' && right[0] <= '9') || right[0] == '-')
		{
			KlJsonReader rd;
			KlJsonValue v;

			kl_json_init(&rd, right, strlen(right), 1);
			if (!kl_json_parse_document(&rd, &v) || v.type != KL_JSON_NUMBER)
				kl_def_fail(e, hint, "cannot read the number in rule \"%s\"", text);
			r->right_num.text = right;
			r->right_num.len = strlen(right);
			r->right_num.is_int64 = v.is_integer && kl_json_parse_int64(right, strlen(right), &r->right_num.ival);
		}
		else
			r->right = kl_top_prop(c, e, right, "A rule");

		/* both sides numbers, or both dates, or both timestamps */
		{
			const KlSchema *ls = &c->top.props[r->left];
			const KlSchema *rs = r->right >= 0 ? &c->top.props[r->right] : NULL;
			int			lt = ls->types & ~KL_TYPE_NULL;
			bool		lnum = lt && !(lt & ~(KL_TYPE_INTEGER | KL_TYPE_NUMBER));
			bool		ltime = lt == KL_TYPE_STRING && ls->format != KL_FORMAT_NONE;

			if (!lnum && !ltime)
				kl_def_fail(e, "A rule compares numbers (integer or number fields), dates or date-times.",
							"field \"%s\" of rule \"%s\" is neither a number nor a date", ls->name, text);
			if (rs == NULL && !lnum)
				kl_def_fail(e, "Compare a date with another date field.",
							"rule \"%s\" compares a date with a number", text);
			if (rs != NULL)
			{
				int			rt = rs->types & ~KL_TYPE_NULL;
				bool		rnum = rt && !(rt & ~(KL_TYPE_INTEGER | KL_TYPE_NUMBER));

				if (lnum ? !rnum : (rt != KL_TYPE_STRING || rs->format != ls->format))
					kl_def_fail(e, "A rule compares numbers with numbers, dates with dates, date-times with date-times.",
								"the two sides of rule \"%s\" cannot be compared", text);
			}
			r->message = psprintf("field \"%s\" %s %s", ls->name, texts[r->op],
								  rs ? rs->name : r->right_num.text);
		}
	}

	/* in the order of the checks */
	c->rules = palloc0(sizeof(KlRule) * Max(n, 1));
	c->nrules = 0;
	for (int p = 0; p < c->top.nprops; p++)
	{
		c->top.props[p].first_rule = c->nrules;
		for (int i = 0; i < n; i++)
		{
			if (rules[i].left == p)
				c->rules[c->nrules++] = rules[i];
		}
		c->top.props[p].nrules = c->nrules - c->top.props[p].first_rule;
	}
}

/*
 * kl_compile_name_list
 *		"columns" or "natural_key": top-level property names, each once.
 */
static int *
kl_compile_name_list(KlContract *c, const KlDef *d, const char *key, int *n)
{
	int		   *list;

	if (d->v.type != KL_JSON_ARRAY)
		kl_def_fail(d, psprintf("For example \"%s\": [\"order_id\", \"ordered_at\"].", key),
					"%s must be a list of property names", key);
	list = palloc(sizeof(int) * Max(d->n, 1));
	for (int i = 0; i < d->n; i++)
	{
		char	   *name = kl_def_string(d->vals[i], "a property name");

		list[i] = kl_top_prop(c, d->vals[i], name, psprintf("\"%s\"", key));
		for (int j = 0; j < i; j++)
		{
			if (list[j] == list[i])
				kl_def_fail(d->vals[i], "Name each field once.", "%s names \"%s\" twice", key, name);
		}
	}
	*n = d->n;
	return list;
}

/*
 * kl_compile_entity
 *		"entity": {"key": [fields], "order_by": [fields], "deleted": {"field":
 *		f, "equals": v, "tombstones": true}}.  The key is the natural key (a
 *		"natural_key" given too must be the same list); the order fields are
 *		required integers, dates, date-times or strings, compared as their
 *		columns compare them (strings by their bytes); without them, and
 *		always with tombstones, the coordinate orders versions.
 */
static void
kl_compile_entity(KlContract *c, const KlDef *d)
{
	KlDef	   *key;
	KlDef	   *order;
	KlDef	   *del;
	KlDef	   *k;
	int			nkey;
	int		   *keys;

	if (d->v.type != KL_JSON_OBJECT)
		kl_def_fail(d, "For example \"entity\": {\"key\": [\"order_id\"], \"order_by\": [\"updated_at\"]}.",
					"entity must be a JSON object");
	kl_def_check_keys(d, kl_entity_keys, "entity");
	if (c->bd_kind == KL_BD_NONE)
		kl_def_fail(d, "Give the contract a \"business_date\": silver holds each key's latest version per date.",
					"an entity stream needs a business_date");
	if ((key = kl_def_get(d, "key")) == NULL)
		kl_def_fail(d, "Name the fields that identify an entity: \"key\": [\"order_id\"].",
					"entity needs a key");
	order = kl_def_get(d, "order_by");
	keys = kl_compile_name_list(c, key, "key", &nkey);
	if (nkey == 0)
		kl_def_fail(key, "Name at least one field.", "key must name a field");
	for (int i = 0; i < nkey; i++)
	{
		const KlSchema *s = &c->top.props[keys[i]];

		if (!kl_is_required(c, keys[i]) || (s->types & KL_TYPE_NULL) ||
			(s->types & (KL_TYPE_OBJECT | KL_TYPE_ARRAY)))
			kl_def_fail(key->vals[i], "A key field is required and a string, number or boolean (not null).",
						"field \"%s\" cannot be part of the key", s->name);
	}
	if (c->nnatural_key > 0)
	{
		bool		same = (c->nnatural_key == nkey);

		for (int i = 0; same && i < nkey; i++)
			same = (c->natural_key[i] == keys[i]);
		if (!same)
			kl_def_fail(key, "Leave natural_key out: an entity's key is its natural key.",
							"the entity key and natural_key differ");
	}
	c->natural_key = keys;
	c->nnatural_key = nkey;

	/* without order_by, versions are ordered by their coordinate alone */
	c->order_by = order ? kl_compile_name_list(c, order, "order_by", &c->norder_by) : NULL;
	for (int i = 0; i < c->norder_by; i++)
	{
		const KlSchema *s = &c->top.props[c->order_by[i]];
		Oid			t = s->sql_typid;
		bool		ok;

		if (s->types == KL_TYPE_INTEGER)
			ok = (t == INT8OID || t == INT4OID || t == INT2OID || t == NUMERICOID);
		else if (s->types == KL_TYPE_STRING && s->format == KL_FORMAT_DATE_TIME)
			ok = (t == TIMESTAMPTZOID);
		else if (s->types == KL_TYPE_STRING && s->format == KL_FORMAT_DATE)
			ok = (t == DATEOID || t == TEXTOID || t == VARCHAROID);
		else if (s->types == KL_TYPE_STRING)
			ok = (t == TEXTOID || t == VARCHAROID);
		else
			ok = false;
		if (!kl_is_required(c, c->order_by[i]) || !ok)
			kl_def_fail(order->vals[i], "An order_by field is required, not null, and an integer, a date, a date-time or a string, of its default SQL type (a string compares by its bytes).",
						"field \"%s\" cannot order versions", s->name);
	}

	if ((del = kl_def_get(d, "deleted")) != NULL)
	{
		KlDef	   *field;
		KlDef	   *equals;
		const KlSchema *s;

		if (del->v.type != KL_JSON_OBJECT)
			kl_def_fail(del, "For example \"deleted\": {\"field\": \"op\", \"equals\": \"d\"}.",
						"deleted must be a JSON object");
		kl_def_check_keys(del, kl_deleted_keys, "deleted");
		if ((field = kl_def_get(del, "field")) == NULL || (equals = kl_def_get(del, "equals")) == NULL)
			kl_def_fail(del, "For example \"deleted\": {\"field\": \"op\", \"equals\": \"d\"}.",
						"deleted needs a field and the value that marks a deletion");
		c->deleted_prop = kl_top_prop(c, field, kl_def_string(field, "field"), "\"deleted\"");
		s = &c->top.props[c->deleted_prop];
		if ((s->types & ~KL_TYPE_NULL) & ~(KL_TYPE_STRING | KL_TYPE_INTEGER | KL_TYPE_BOOLEAN) ||
			(s->types & ~KL_TYPE_NULL) == 0)
			kl_def_fail(field, "A deletion is marked by a string, integer or boolean field.",
						"field \"%s\" cannot mark a deletion", s->name);
		kl_compile_enum_value(equals, s->types & ~KL_TYPE_NULL, &c->deleted_value);
		if (c->deleted_value.type == KL_TYPE_STRING)
			c->deleted_text = c->deleted_value.str;
		else if (c->deleted_value.type == KL_TYPE_INTEGER && c->deleted_value.num.is_int64)
			c->deleted_text = c->deleted_value.num.text;
		else if (c->deleted_value.type == KL_TYPE_BOOLEAN)
			c->deleted_text = c->deleted_value.bval ? "true" : "false";
		else
			kl_def_fail(equals, "Give a string, an integer or a boolean of the field's type.",
						"a deletion cannot be marked by %.*s", (int) Min(equals->v.len, 64), equals->v.start);
		if (c->deleted_text[0] == '\0')
			kl_def_fail(equals, "Mark a deletion by a value that is not empty: an empty field is an absent one.",
						"a deletion cannot be marked by an empty string");
		c->deleted_json = equals->v.type == KL_JSON_NUMBER ? c->deleted_value.num.text :
			pnstrdup(equals->v.start, equals->v.len);
		if ((k = kl_def_get(del, "tombstones")) != NULL && kl_def_bool(k, "tombstones", NULL))
		{
			if (c->norder_by > 0)
				kl_def_fail(k, "Leave order_by out: a tombstone has no fields to order it by, so versions are ordered by their Kafka coordinate (as log compaction orders them).",
							"tombstones and order_by exclude each other");
			for (int i = 0; i < nkey; i++)
				if (c->top.props[keys[i]].types != KL_TYPE_STRING &&
					c->top.props[keys[i]].types != KL_TYPE_INTEGER)
					kl_def_fail(k, "A tombstone's key fields are read from its Kafka key: strings or integers.",
								"field \"%s\" cannot be read from a Kafka key", c->top.props[keys[i]].name);
			c->tombstones = true;
			c->tombstone_tz = c->bd_tz ? c->bd_tz : pg_tzset("UTC");
		}
	}
	c->entity = true;
}

/*
 * kl_path_hint
 *		"Perhaps you meant" among the properties of an object schema.
 */
static const char *
kl_path_hint(const KlObjectSchema *o, const char *name, const char *where)
{
	const char **words = palloc(sizeof(char *) * (o->nprops + 1));
	const char *closest;

	for (int i = 0; i < o->nprops; i++)
		words[i] = o->props[i].name;
	words[o->nprops] = NULL;
	closest = kl_closest(name, words);
	if (closest)
		return psprintf("Perhaps you meant \"%s\". A path names members of %s.", closest, where);
	return psprintf("A path names members of %s, which does not let others in (additionalProperties is false).",
					where);
}

/*
 * kl_resolve_paths
 *		Each derived field's paths against the schema: each step a member
 *		the object there has (or may have: additionalProperties), or an
 *		element of an array; the first a top-level member that is not
 *		itself derived.  Where the schema says what is at the end, its
 *		type must be one the field may have.
 */
static void
kl_resolve_paths(KlContract *c, const KlDef *props)
{
	for (int p = 0; p < c->top.nprops; p++)
	{
		const KlSchema *s = &c->top.props[p];
		const KlDef *pd;

		if (s->npaths == 0)
			continue;
		pd = kl_def_get(kl_def_get(props, s->name), "path");
		for (int a = 0; a < s->npaths; a++)
		{
			const KlPath *path = &s->paths[a];
			const KlDef *steps = s->npaths > 1 ? pd->vals[a] : pd;
			const KlSchema *at = NULL;	/* the schema at the step, if known */
			const char *where = "the value";

			for (int i = 0; i < path->nsteps; i++)
			{
				const KlPathStep *step = &path->steps[i];
				const KlDef *e = steps->vals[i];

				if (i == 0)
				{
					int			q = -1;

					for (int j = 0; j < c->top.nprops && q < 0; j++)
						if (strcmp(c->top.props[j].name, step->name) == 0)
							q = j;
					if (q == p)
						kl_def_fail(e, "Derive the field from another member of the value.",
									"field \"%s\" cannot be derived from itself", s->name);
					if (q >= 0 && c->top.props[q].npaths > 0)
						kl_def_fail(e, "Give the whole path from a member of the value.",
									"field \"%s\" is itself derived", step->name);
					if (q < 0 && !c->top.additional)
						kl_def_fail(e, kl_path_hint(&c->top, step->name, "the value"),
									"\"%s\" is not a property", step->name);
					at = q >= 0 ? &c->top.props[q] : NULL;
					where = step->name;
					continue;
				}
				if (at == NULL)
					break;		/* a member of no schema: anything may be there */
				if (step->name != NULL)
				{
					const KlSchema *next = NULL;

					if (!(at->types & KL_TYPE_OBJECT))
						kl_def_fail(e, "A name steps into an object; an index into an array.",
									"%s is %s, not an object", where, at->type_words);
					if (at->object != NULL)
					{
						for (int j = 0; j < at->object->nprops && next == NULL; j++)
							if (strcmp(at->object->props[j].name, step->name) == 0)
								next = &at->object->props[j];
						if (next == NULL && !at->object->additional)
							kl_def_fail(e, kl_path_hint(at->object, step->name, where),
										"\"%s\" is not a property of %s", step->name, where);
					}
					at = next;
				}
				else
				{
					if (!(at->types & KL_TYPE_ARRAY))
						kl_def_fail(e, "An index steps into an array; a name into an object.",
									"%s is %s, not an array", where, at->type_words);
					at = at->items;
				}
				where = step->name ? psprintf("%s.%s", where, step->name) :
					psprintf("%s[%d]", where, step->index);
			}
			if (at != NULL && (at->types & s->types) == 0)
				kl_def_fail(steps, "Give the derived field the type of what the path leads to.",
							"%s is %s, which field \"%s\" (%s) can never be",
							path->text, at->type_words, s->name, s->type_words);
		}
	}
}

/*
 * kl_contract_compile
 *		Check a definition and compile it, in cxt.  ERROR 42P17 at the first
 *		thing that is wrong with it.
 */
KlContract *
kl_contract_compile(const char *name, int32 version, const char *definition, size_t len,
					bool builtin, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	KlContract *c = palloc0(sizeof(KlContract));
	KlDef	   *d = kl_def_read(definition, len);
	KlDef	   *k;

	kl_contract_prepare();
	kl_compiling = c;
	c->name = pstrdup(name);
	c->version = version;
	c->builtin = builtin;
	c->definition = pnstrdup(definition, len);
	c->event_id_prop = -1;
	c->schema_version_prop = -1;
	c->bd_prop = -1;
	c->max_value_bytes = KL_CONTRACT_MAX_VALUE_BYTES;

	if ((k = kl_def_get(d, "raw")) != NULL)
	{
		kl_def_check_keys(d, kl_raw_keys, "a raw contract");
		if (!kl_def_bool(k, "raw", NULL))
			kl_def_fail(k, "Leave \"raw\" out for a JSON contract, or set it to true for any bytes.",
						"raw must be true");
		c->raw = true;
		c->accept_tombstones = true;
	}
	else
	{
		kl_def_check_keys(d, kl_top_keys, "a contract");
		if ((k = kl_def_get(d, "type")) == NULL)
			kl_def_fail(d, "Add \"type\": \"object\": a contract judges JSON objects (or set \"raw\": true for any bytes).",
						"missing key \"type\"");
		if (k->v.type != KL_JSON_STRING || strcmp(kl_def_string(k, "type"), "object") != 0)
			kl_def_fail(k, "A contract judges JSON objects: \"type\": \"object\" (or set \"raw\": true for any bytes).",
						"the top-level type must be \"object\"");
		{
			KlObjectSchema *top = kl_compile_object(d, kl_def_get(d, "properties"), NULL, true);

			c->top = *top;
		}
	}
	if ((k = kl_def_get(d, "framing")) != NULL)
	{
		char	   *f = kl_def_string(k, "framing");

		if (strcmp(f, "confluent") == 0)
			c->confluent_framing = true;
		else if (strcmp(f, "none") != 0)
			kl_def_fail(k, "Say \"framing\": \"confluent\" for values in Confluent's wire format (a JSON Schema through the registry), or leave it out.",
						"unknown framing \"%s\"", f);
	}
	if ((k = kl_def_get(d, "max_value_bytes")) != NULL)
	{
		c->max_value_bytes = kl_def_int(k, "max_value_bytes", 1, KL_CONTRACT_LIMIT_MAX);
	}
	if (c->top.nderived > 0)
		kl_resolve_paths(c, kl_def_get(d, "properties"));
	if ((k = kl_def_get(d, "event_id")) != NULL)
	{
		/* one field, or the list of fields whose values together are it */
		bool		list = (k->v.type == KL_JSON_ARRAY);

		if (list && (k->n == 0 || k->n > 8))
			kl_def_fail(k, "Name the one to eight fields whose values together identify an event, for example [\"order_id\", \"version\"].",
						"event_id must name from 1 to 8 fields");
		if (list)
			c->event_id_props = kl_compile_name_list(c, k, "event_id", &c->nevent_id);
		else
		{
			c->nevent_id = 1;
			c->event_id_props = palloc(sizeof(int));
			c->event_id_props[0] = kl_top_prop(c, k, kl_def_string(k, "event_id"), "\"event_id\"");
		}
		for (int i = 0; i < c->nevent_id; i++)
		{
			const KlSchema *s = &c->top.props[c->event_id_props[i]];

			if (!kl_is_required(c, c->event_id_props[i]) ||
				(s->types != KL_TYPE_STRING && s->types != KL_TYPE_INTEGER))
				kl_def_fail(list ? k->vals[i] : k,
							"An event_id field is required, of type string or integer (not null).",
							"field \"%s\" cannot identify events", s->name);
		}
		if (c->nevent_id == 1)
			c->event_id_prop = c->event_id_props[0];
	}
	if ((k = kl_def_get(d, "schema_version")) != NULL)
	{
		c->schema_version_prop = kl_top_prop(c, k, kl_def_string(k, "schema_version"), "\"schema_version\"");
		c->top.props[c->schema_version_prop].is_schema_version = true;
	}
	if ((k = kl_def_get(d, "business_date")) != NULL)
		kl_compile_business_date(c, k);
	if ((k = kl_def_get(d, "rules")) != NULL)
		kl_compile_rules(c, k);
	if ((k = kl_def_get(d, "columns")) != NULL)
	{
		c->columns = kl_compile_name_list(c, k, "columns", &c->ncolumns);
		if (c->ncolumns != c->top.nprops)
			kl_def_fail(k, "List every property once: columns sets their order.",
						"columns names %d of the %d properties", c->ncolumns, c->top.nprops);
	}
	else
	{
		c->ncolumns = c->top.nprops;
		c->columns = palloc(sizeof(int) * Max(c->ncolumns, 1));
		for (int i = 0; i < c->ncolumns; i++)
			c->columns[i] = i;
	}
	if ((k = kl_def_get(d, "natural_key")) != NULL)
	{
		c->natural_key = kl_compile_name_list(c, k, "natural_key", &c->nnatural_key);
		for (int i = 0; i < c->nnatural_key; i++)
		{
			const KlSchema *s = &c->top.props[c->natural_key[i]];

			if (!kl_is_required(c, c->natural_key[i]) || (s->types & KL_TYPE_NULL) ||
				(s->types & (KL_TYPE_OBJECT | KL_TYPE_ARRAY)))
				kl_def_fail(k->vals[i], "A natural key field is required and a string, number or boolean (not null).",
							"field \"%s\" cannot be part of the natural key", s->name);
		}
	}

	c->deleted_prop = -1;
	if ((k = kl_def_get(d, "entity")) != NULL)
		kl_compile_entity(c, k);

	/*
	 * Lines carry the event_id and business date of their own, unless the
	 * event holds them under those very names, as machine_event_v1's does
	 * (so its lines stay what they always were).
	 */
	c->writes_ids = !(c->event_id_prop >= 0 && c->bd_kind == KL_BD_DATE_FIELD &&
					  strcmp(c->top.props[c->event_id_prop].name, "event_id") == 0 &&
					  strcmp(c->top.props[c->bd_prop].name, "business_date") == 0);
	MemoryContextSwitchTo(old);
	return c;
}

/*
 * kl_contract_check
 *		create_contract()'s check of a new definition: compiled as any
 *		definition is, and refused (42P17) for what only a stored version
 *		may still have.  The compiled form is thrown away with cxt.
 */
void
kl_contract_check(const char *name, const char *definition, MemoryContext cxt)
{
	kl_defining = true;
	PG_TRY();
	{
		(void) kl_contract_compile(name, 1, definition, strlen(definition), false, cxt);
	}
	PG_FINALLY();
	{
		kl_defining = false;
	}
	PG_END_TRY();
}

/*
 * kl_contract_check_sql_types
 *		Before a table is made or read with columns of c's types (a
 *		source's typed table, its silver, the bridge): ERROR 42P17 when a
 *		field's sql_type is not a built-in type (a version stored before
 *		1.2), so that no other type's code runs on anyone's behalf.
 */
void
kl_contract_check_sql_types(const KlContract *c)
{
	const KlSchema *s = c->bad_sql_type;

	if (s == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
			 errmsg("contract \"%s\" version %d gives field \"%s\" the sql_type \"%s\", which is %s",
					c->name, c->version, s->name, s->sql_type, s->sql_type_problem),
			 errdetail("kafka_lake builds and reads columns of PostgreSQL's built-in types only: another type's functions (a domain's CHECK, say) would run with the rights of whoever reads or bridges the source."),
			 errhint("Create a version of the contract whose \"sql_type\" is a built-in type (create_contract), and move the source to it (alter_source).")));
}

/*
 * kl_contract_judgeable
 *		Before records are judged by c: ERROR 42P17 when one of its patterns
 *		has no bound on its matching time (a version stored before 1.2),
 *		which one record could keep busy for hours and so block its
 *		partition.  Nothing is polled before this is known.
 */
void
kl_contract_judgeable(const KlContract *c)
{
	const KlSchema *s = c->unbounded_pattern;

	if (s == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
			 errmsg("contract \"%s\" version %d matches field \"%s\" against pattern \"%s\", whose matching time cannot be bounded",
					c->name, c->version, s->path, s->pattern_text),
			 errdetail("The pattern uses a back reference or a lookahead or lookbehind constraint: one record could keep the match running for hours, and every later call would stop at it again."),
			 errhint("Create a version of the contract without back references and lookaround (create_contract), and move the source to it (alter_source); nothing landed is lost.")));
}

/* ----------------------------------------------------------------
 *		Normalised text: is it the same definition?
 * ----------------------------------------------------------------
 */

/*
 * kl_normalize_value
 *		The value without whitespace, strings escaped as json.dumps does,
 *		members in their order.
 */
static void
kl_normalize_value(StringInfo out, const KlJsonValue *v)
{
	check_stack_depth();
	switch (v->type)
	{
		case KL_JSON_STRING:
			{
				StringInfoData buf;

				initStringInfo(&buf);
				kl_json_decode_string(v, &buf);
				kl_json_append_string(out, buf.data, buf.len);
				break;
			}
		case KL_JSON_OBJECT:
			{
				KlJsonReader it;
				KlJsonValue k;
				KlJsonValue m;
				bool		first = true;

				appendStringInfoChar(out, '{');
				kl_json_object_open(&it, v->start, v->start + v->len, KL_JSON_MAX_DEPTH);
				while (kl_json_object_next(&it, &k, &m))
				{
					if (!first)
						appendStringInfoChar(out, ',');
					first = false;
					kl_normalize_value(out, &k);
					appendStringInfoChar(out, ':');
					kl_normalize_value(out, &m);
				}
				appendStringInfoChar(out, '}');
				break;
			}
		case KL_JSON_ARRAY:
			{
				KlJsonReader it;
				KlJsonValue e;
				bool		first = true;

				appendStringInfoChar(out, '[');
				kl_json_array_open(&it, v->start, v->start + v->len, KL_JSON_MAX_DEPTH);
				while (kl_json_array_next(&it, &e))
				{
					if (!first)
						appendStringInfoChar(out, ',');
					first = false;
					kl_normalize_value(out, &e);
				}
				appendStringInfoChar(out, ']');
				break;
			}
		default:
			appendBinaryStringInfo(out, v->start, v->len);
			break;
	}
}

/*
 * kl_contract_normalize
 *		A definition's normalised text (the definition must be valid JSON).
 */
char *
kl_contract_normalize(const char *definition, size_t len)
{
	KlJsonReader r;
	KlJsonValue v;
	StringInfoData out;

	kl_json_init(&r, definition, len, KL_JSON_MAX_DEPTH);
	if (!kl_json_parse_document(&r, &v))
		return pnstrdup(definition, len);
	initStringInfo(&out);
	kl_normalize_value(&out, &v);
	return out.data;
}
