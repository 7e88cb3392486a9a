/*-------------------------------------------------------------------------
 *
 * bridge_define.c
 *	  What a source's contract and its owners make of the bridge: the
 *	  layout (the canonical CSV's columns, the silver table, the natural key),
 *	  the golds of the source and the owners' own checks, and the functions
 *	  that define them: define_gold() and add_check().
 *
 * THE LAYOUT
 *
 * The canonical CSV has the contract's fields in its "columns" order, with
 * the event_id and schema_version fields (when the contract names them)
 * moved last, then the Kafka provenance (kafka_topic, kafka_partition,
 * kafka_offset, kafka_key, kafka_timestamp_ms, kafka_record_fingerprint).
 * For machine_event_v1 that is the seed's order exactly, so its bytes and
 * source_hash are the seed's.  Silver has run_id, a business_date column
 * when no field is named so, one column per field of its contract type, and
 * the provenance: machine_event_v1 sources share the seed's
 * silver_machine_events, every other source has kafka_lake.<source>_silver,
 * an ordinary table (not a member of the extension, as <source>_events is
 * not), so that pg_dump keeps its definition and its rows.
 *
 * GOLDS
 *
 * A gold is a row of kafka_lake.golds: a grain (fields; business_date is
 * always part of it) and either declared metrics, which the bridge computes
 * in C while it loads silver (bridge_silver.c), or an owner's SQL over the
 * day's silver rows.  The seed's gold_daily_line_metrics is one declared
 * gold, built in for every machine_event_v1 source; its definition is the
 * library's own text (kl_builtin_gold), stored in the catalog for reading,
 * so that a database not yet updated bridges as the updated one does.
 *
 * An owner's SQL is never run with the rights of whoever calls bridge(): it
 * becomes a function kafka_lake.<gold>_compute (a check's:
 * kafka_lake.<source>_check_<check>) that is SECURITY DEFINER, owned by the
 * role that defined it, with search_path pinned, so a superuser's pg_cron
 * job runs it with that role's rights only.  The definer must be able to
 * read the source (SELECT on kafka_lake.<source>_records), and is granted
 * SELECT on its silver table.  PostgreSQL checks the SQL when the function
 * is created; its result columns are read first by running the query as the
 * definer over no rows, so that the grain can be checked by name and type.
 *
 * IDENTIFICATION
 *	  src/bridge/bridge_define.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/comment.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "parser/parse_type.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/snapmgr.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/catcache.h"
#include "utils/varlena.h"
#include "catalog/pg_proc.h"

#include "base/args.h"
#include "base/builtin_types.h"
#include "base/json.h"
#include "bridge/bridge.h"
#include "bridge/csv.h"
#include "contract/contract.h"
#include "contract/contract_define.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/contract_catalog.h"

PG_FUNCTION_INFO_V1(kafka_lake_define_gold);
PG_FUNCTION_INFO_V1(kafka_lake_add_check);
PG_FUNCTION_INFO_V1(kafka_lake_builtin_golds);
PG_FUNCTION_INFO_V1(kafka_lake_replace_gold_functions);
PG_FUNCTION_INFO_V1(kafka_lake_drop_gold);
PG_FUNCTION_INFO_V1(kafka_lake_drop_check);

#define KL_BUILTIN_GOLD		"gold_daily_line_metrics"

static const char *const kl_builtin_grain[] = {
	"business_date", "plant_id", "line_id", "product_code"
};

static const char kl_builtin_metrics[] =
"{\"units_produced\": {\"sum\": \"units_produced\"}, "
"\"defect_count\": {\"sum\": \"defect_count\"}, "
"\"defect_rate\": {\"ratio\": [\"defect_count\", \"units_produced\"], \"round\": 6, \"rounding\": \"python\"}, "
"\"avg_cycle_time_ms\": {\"avg\": \"cycle_time_ms\", \"round\": 2, \"rounding\": \"python\"}}";

static const char *const kl_metric_keys[] = {
	"sum", "count", "min", "max", "avg", "ratio", "round", "rounding", NULL
};

static const char *const kl_roundings[] = {"half_up", "python", NULL};

/* names the bridge's own checks have, which an owner's check may not take */
static const char *const kl_reserved_checks[] = {
	"row_count_source_to_silver", "unit_conservation_silver_to_gold",
	"not_null_required_columns", "unique_natural_key", "numeric_range_within_bounds",
	"freshness_business_date", "schema_drift", NULL
};

static const char *const kl_provenance[KL_NPROVENANCE][2] = {
	{"kafka_topic", "text not null"},
	{"kafka_partition", "integer not null"},
	{"kafka_offset", "bigint not null"},
	{"kafka_key", "text"},
	{"kafka_timestamp_ms", "bigint"},
	{"kafka_record_fingerprint", "text not null"}
};

/*
 * kl_nearest
 *		The word of words (n of them) nearest to a mistyped one, if near.
 */
static const char *
kl_nearest(const char *word, const char *const *words, int n)
{
	const char *best = NULL;
	int			best_distance = INT_MAX;
	int			len = strlen(word);

	for (int i = 0; i < n; i++)
	{
		int			d = varstr_levenshtein(word, len, words[i], strlen(words[i]),
										   1, 1, 1, false);

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
 * kl_words
 *		n words as "a, b, c".
 */
static char *
kl_words(const char *const *words, int n)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < n; i++)
		appendStringInfo(&buf, "%s%s", i ? ", " : "", words[i]);
	return buf.data;
}

/*
 * kl_name_is_identifier
 *		Lower-case letters, digits and underscores, not starting with a
 *		digit, shorter than NAMEDATALEN: a name that needs no quoting.
 */
static bool
kl_name_is_identifier(const char *name)
{
	int			len = strlen(name);

	if (len == 0 || len >= NAMEDATALEN || (name[0] >= '0' && name[0] <= '9'))
		return false;
	for (int i = 0; i < len; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
			  name[i] == '_'))
			return false;
	return true;
}

/*
 * kl_field_kind
 *		How a field of these JSON types is written in the CSV.
 */
static KlFieldKind
kl_field_kind(int types)
{
	int			t = types & ~KL_TYPE_NULL;

	if (t == KL_TYPE_STRING)
		return KL_FIELD_STRING;
	if (t == KL_TYPE_INTEGER)
		return KL_FIELD_INTEGER;
	if (t == KL_TYPE_NUMBER || t == (KL_TYPE_NUMBER | KL_TYPE_INTEGER))
		return KL_FIELD_NUMBER;
	if (t == KL_TYPE_BOOLEAN)
		return KL_FIELD_BOOLEAN;
	return KL_FIELD_JSON;
}

/*
 * kl_csv_header_of
 *		The CSV header line of these column names: each quoted as the CSV
 *		quotes a field (a name may hold a comma, a quote, a line feed), LF
 *		at the end.
 */
char *
kl_csv_header_of(char **names, int *lens, int n)
{
	StringInfoData h;

	initStringInfo(&h);
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoChar(&h, ',');
		kl_csv_append_field(&h, names[i], lens ? lens[i] : strlen(names[i]));
	}
	appendStringInfoChar(&h, '\n');
	return h.data;
}

/*
 * kl_silver_column_name
 *		The silver column of a field: its name, clipped to NAMEDATALEN - 1
 *		bytes at a character boundary, and where that is a column silver
 *		already has (run_id, business_date, the provenance, an earlier
 *		field's), event_<name>, then event_<name>_2, ..., clipped the same
 *		way: as kafka_lake.<source>_events names its columns.  So every
 *		name a contract accepts is a column of its own, whatever its
 *		length, case or characters (SQL quotes it everywhere).
 */
static const char *
kl_silver_column_name(const char *field, const char **taken, int ntaken)
{
	char	   *name = pnstrdup(field, pg_mbcliplen(field, strlen(field), NAMEDATALEN - 1));

	for (int n = 1;; n++)
	{
		bool		clash = false;

		for (int i = 0; i < ntaken && !clash; i++)
			clash = (strcmp(taken[i], name) == 0);
		if (!clash)
			return name;
		name = (n == 1) ? psprintf("event_%s", field) : psprintf("event_%s_%d", field, n);
		name = pnstrdup(name, pg_mbcliplen(name, strlen(name), NAMEDATALEN - 1));
	}
}

/*
 * kl_field_kind_merge
 *		How a field written as kind a by one version and b by another is
 *		written for both: integers and numbers as numbers, anything with a
 *		string as a string (the others as their landed JSON text), any
 *		other mix as JSON text.
 */
static KlFieldKind
kl_field_kind_merge(KlFieldKind a, KlFieldKind b)
{
	if (a == b)
		return a;
	if ((a == KL_FIELD_INTEGER || a == KL_FIELD_NUMBER) &&
		(b == KL_FIELD_INTEGER || b == KL_FIELD_NUMBER))
		return KL_FIELD_NUMBER;
	if (a == KL_FIELD_STRING || b == KL_FIELD_STRING)
		return KL_FIELD_STRING;
	return KL_FIELD_JSON;
}

/*
 * kl_layout_field_type
 *		The silver type of a field that versions (oldest first) give as
 *		schemas s[0..n): the first version's, kept while it reads what each
 *		newer version needs, else the newer one's when that reads both, as
 *		alter_source() changes a column of <source>_events; the source's
 *		versions passed that rule when it moved between them.  Returns the
 *		schema whose sql_type it is.
 */
static const KlSchema *
kl_layout_field_type(const KlSchema *const *s, int n, const char *source)
{
	const KlSchema *t = s[0];
	int			seen = kl_field_kinds(s[0]);

	for (int i = 1; i < n; i++)
	{
		int			need = kl_field_kinds(s[i]);

		if ((kl_type_reads(t->sql_type) & need) != need)
		{
			if ((kl_type_reads(s[i]->sql_type) & (need | seen)) != (need | seen))
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("field \"%s\" of source \"%s\" is %s in one contract version and %s in another, and no column type reads both",
								s[i]->name, source, t->sql_type, s[i]->sql_type),
						 errdetail("Silver has one column per field for every version a business date holds."),
						 errhint("Give the changed field a new name in a new contract version, or a \"sql_type\" that reads both (text or jsonb read any value).")));
			t = s[i];
		}
		seen |= need;
	}
	return t;
}

/*
 * kl_layout_for
 *		The layout of the bridge of a source's records judged by contract
 *		versions cs[0..ncs), the newest first (one for most dates).  The
 *		fields are the newest version's in its "columns" order, then those
 *		only older versions have (the newer versions' first, each in its
 *		order), then the newest's event_id and schema_version fields: a
 *		field a version lacks is an empty CSV field of its records.  A field
 *		whose versions write it differently is written as
 *		kl_field_kind_merge says, and its silver type is
 *		kl_layout_field_type's.  So the layout depends on the set of
 *		versions a date holds only, not on the order its batches landed in,
 *		nor on the version the source lands with now.  A contract without
 *		business date cannot be bridged (0A000), nor one whose sql_type is
 *		not a built-in type (42P17, kl_contract_check_sql_types).
 */
KlLayout *
kl_layout_for(const KlSource *src, const KlContract *const *cs, int ncs)
{
	const KlContract *c = cs[0];
	KlLayout   *lay = palloc0(sizeof(KlLayout));
	int			cap = 0;
	const KlSchema **order;
	int			n = 0;
	const char **taken;
	int			ntaken = 0;
	char	  **header;
	const KlSchema **versions = palloc(sizeof(KlSchema *) * ncs);

	if (c->raw || c->bd_kind == KL_BD_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("source \"%s\" lands with contract \"%s\", which gives events no business date",
						src->source, c->name),
				 errdetail("bridge() bridges one business date at a time."),
				 errhint("Create a contract with a \"business_date\" (a date field, a timestamp field in a time zone, or the Kafka timestamp) with create_contract(), then move the source to it with kafka_lake.alter_source('%s', <contract>).",
						src->source)));
	for (int v = 0; v < ncs; v++)
	{
		kl_contract_check_sql_types(cs[v]);
		cap += cs[v]->ncolumns;
	}

	lay->contract = c;
	lay->machine = c->builtin && strcmp(c->name, KL_MACHINE_EVENT_V1) == 0;
	order = palloc(sizeof(KlSchema *) * Max(cap, 1));
	for (int i = 0; i < c->ncolumns; i++)
		if (c->columns[i] != c->event_id_prop && c->columns[i] != c->schema_version_prop)
			order[n++] = &c->top.props[c->columns[i]];
	for (int v = 1; v < ncs; v++)
	{
		for (int i = 0; i < cs[v]->ncolumns; i++)
		{
			const KlSchema *s = &cs[v]->top.props[cs[v]->columns[i]];
			bool		have = false;

			for (int j = 0; j < n && !have; j++)
				have = (strcmp(order[j]->name, s->name) == 0);
			if (c->event_id_prop >= 0)
				have |= (strcmp(c->top.props[c->event_id_prop].name, s->name) == 0);
			if (c->schema_version_prop >= 0)
				have |= (strcmp(c->top.props[c->schema_version_prop].name, s->name) == 0);
			if (!have)
				order[n++] = s;
		}
	}
	if (c->event_id_prop >= 0)
		order[n++] = &c->top.props[c->event_id_prop];
	if (c->schema_version_prop >= 0)
		order[n++] = &c->top.props[c->schema_version_prop];

	lay->nfields = n;
	lay->fields = palloc0(sizeof(KlBridgeField) * Max(n, 1));
	lay->ncolumns = n + KL_NPROVENANCE;
	lay->column_names = palloc(sizeof(char *) * lay->ncolumns);
	lay->bd_field = -1;
	lay->fresh_field = -1;
	lay->id_field = -1;
	lay->silver_date = true;
	for (int i = 0; i < n; i++)
	{
		const KlSchema *s = order[i];
		KlBridgeField *f = &lay->fields[i];
		const KlSchema *typed;
		bool		required = true;
		int			nv = 0;

		f->name = s->name;
		f->date_time = true;
		/* the field in every version, oldest first */
		for (int v = ncs - 1; v >= 0; v--)
		{
			const KlContract *cv = cs[v];
			int			prop = -1;
			bool		req = false;
			KlFieldKind kind;

			for (int p = 0; p < cv->top.nprops && prop < 0; p++)
				if (strcmp(cv->top.props[p].name, s->name) == 0)
					prop = p;
			if (prop < 0)
			{
				required = false;
				continue;
			}
			for (int r = 0; r < cv->top.nrequired; r++)
				req |= (cv->top.required[r] == prop);
			required &= req && (cv->top.props[prop].types & KL_TYPE_NULL) == 0;
			f->date_time &= (cv->top.props[prop].format == KL_FORMAT_DATE_TIME);
			kind = kl_field_kind(cv->top.props[prop].types);
			if (nv > 0 && kind != f->kind)
				f->mixed = true;
			f->kind = nv > 0 ? kl_field_kind_merge(f->kind, kind) : kind;
			f->kinds |= kl_field_kinds(&cv->top.props[prop]);
			versions[nv++] = &cv->top.props[prop];
		}
		typed = kl_layout_field_type(versions, nv, src->source);
		/* a tombstone's row has its key and the deletion's field, nothing else */
		if (c->tombstones && s != &c->top.props[c->deleted_prop])
		{
			bool		key = false;

			for (int k = 0; k < c->nnatural_key; k++)
				key |= (s == &c->top.props[c->natural_key[k]]);
			required &= key;
		}
		f->required = required;
		f->sql_type = typed->sql_type;
		f->sql_typid = typed->sql_typid;
		f->sql_typmod = typed->sql_typmod;
		f->schema = s;
		if (c->bd_kind == KL_BD_DATE_FIELD && s == &c->top.props[c->bd_prop])
			lay->bd_field = i;
		if (f->date_time && lay->fresh_field < 0)
			lay->fresh_field = i;
		if (c->event_id_prop >= 0 && s == &c->top.props[c->event_id_prop])
			lay->id_field = i;
		if (strcmp(s->name, "business_date") == 0)
			lay->silver_date = false;
	}

	/* silver's columns: its own first, then one per field */
	taken = palloc(sizeof(char *) * (n + KL_NPROVENANCE + 2));
	taken[ntaken++] = "run_id";
	if (lay->silver_date)
		taken[ntaken++] = "business_date";
	for (int i = 0; i < KL_NPROVENANCE; i++)
		taken[ntaken++] = kl_provenance[i][0];
	for (int i = 0; i < n; i++)
	{
		lay->fields[i].column = kl_silver_column_name(lay->fields[i].name, taken, ntaken);
		taken[ntaken++] = lay->fields[i].column;
		lay->column_names[i] = lay->fields[i].column;
	}
	for (int i = 0; i < KL_NPROVENANCE; i++)
		lay->column_names[n + i] = kl_provenance[i][0];
	lay->nnk = c->nnatural_key;
	lay->nk = palloc(sizeof(int) * Max(c->nnatural_key, 1));
	for (int k = 0; k < c->nnatural_key; k++)
		for (int i = 0; i < n; i++)
			if (order[i] == &c->top.props[c->natural_key[k]])
				lay->nk[k] = i;
	lay->entity = c->entity;
	lay->norder = c->norder_by;
	lay->order = palloc(sizeof(int) * Max(c->norder_by, 1));
	for (int k = 0; k < c->norder_by; k++)
		for (int i = 0; i < n; i++)
			if (order[i] == &c->top.props[c->order_by[k]])
				lay->order[k] = i;
	lay->deleted_field = -1;
	for (int i = 0; i < n && c->deleted_prop >= 0; i++)
		if (order[i] == &c->top.props[c->deleted_prop])
			lay->deleted_field = i;

	/* the CSV's header: the fields' own names, then the provenance */
	header = palloc(sizeof(char *) * lay->ncolumns);
	for (int i = 0; i < n; i++)
		header[i] = (char *) lay->fields[i].name;
	for (int i = 0; i < KL_NPROVENANCE; i++)
		header[n + i] = (char *) kl_provenance[i][0];
	lay->header = kl_csv_header_of(header, NULL, lay->ncolumns);
	lay->silver = lay->machine ? pstrdup("silver_machine_events") :
		psprintf("%s_silver", src->source);
	lay->state = lay->entity ? psprintf("%s_state", src->source) : NULL;
	return lay;
}

/*
 * kl_layout_prop_field
 *		The layout field of top-level property prop of the contract, or -1.
 */
int
kl_layout_prop_field(const KlLayout *lay, int prop)
{
	for (int i = 0; i < lay->nfields; i++)
		if (lay->fields[i].schema == &lay->contract->top.props[prop])
			return i;
	return -1;
}

/*
 * kl_layout_live_sql
 *		The condition, over silver's columns, of a row that is no entity's
 *		deletion; NULL when the contract marks none.
 */
const char *
kl_layout_live_sql(const KlLayout *lay)
{
	if (lay->deleted_field < 0)
		return NULL;
	return psprintf("%s IS DISTINCT FROM %s", quote_identifier(lay->fields[lay->deleted_field].column),
					quote_literal_cstr(lay->contract->deleted_text));
}

/*
 * kl_layout_field
 *		The CSV column of a field, or -1.
 */
static int
kl_layout_field(const KlLayout *lay, const char *name)
{
	for (int i = 0; i < lay->nfields; i++)
		if (strcmp(lay->fields[i].name, name) == 0)
			return i;
	return -1;
}

/*
 * kl_unknown_field
 *		ERROR 42703: name is no field of the contract (what: "grain field",
 *		or which metric reads it).
 */
static void
kl_unknown_field(const KlLayout *lay, const char *gold, const char *what, const char *name)
{
	const char **names = palloc(sizeof(char *) * Max(lay->nfields + 1, 1));
	const char *near;
	char	   *list;

	for (int i = 0; i < lay->nfields; i++)
		names[i] = lay->fields[i].name;
	near = kl_nearest(name, names, lay->nfields);
	list = kl_words(names, lay->nfields);
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("gold \"%s\": %s \"%s\"%s is not a field of contract \"%s\"",
					gold, what, name, strncmp(what, "metric", 6) == 0 ? ", which" : "",
					lay->contract->name),
			 lay->date_versions ?
			 errdetail("The business date's events were judged by version %s of the contract, which lack it; a gold reads the fields of the versions a date holds.",
					   lay->date_versions) : 0,
			 near ? errhint("Perhaps you meant \"%s\". The fields are: business_date, %s.", near, list) :
			 errhint("The fields are: business_date, %s.", list)));
}

/*
 * kl_bad_gold
 *		ERROR 42P17 about a gold's definition.
 */
static void
kl_bad_gold(const char *gold, const char *hint, const char *fmt,...) pg_attribute_printf(3, 4);

static void
kl_bad_gold(const char *gold, const char *hint, const char *fmt,...)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&buf, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&buf, needed);
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
			 errmsg("invalid definition of gold \"%s\": %s", gold, buf.data),
			 errhint("%s", hint)));
}

/*
 * kl_json_str
 *		A JSON string's content.
 */
static char *
kl_json_str(const KlJsonValue *v)
{
	StringInfoData s;

	initStringInfo(&s);
	kl_json_decode_string(v, &s);
	return s.data;
}

/*
 * kl_gold_grain
 *		The grain of gold g: its fields, business_date apart (it is always
 *		part of the grain).
 */
static void
kl_gold_grain(KlGoldDef *g, const KlLayout *lay, char **grain, int ngrain)
{
	g->grain = palloc(sizeof(char *) * Max(ngrain, 1));
	g->grain_field = palloc(sizeof(int) * Max(ngrain, 1));
	g->ngrain = 0;
	for (int i = 0; i < ngrain; i++)
	{
		int			f;

		if (strcmp(grain[i], "business_date") == 0)
			continue;
		for (int j = 0; j < g->ngrain; j++)
			if (strcmp(g->grain[j], grain[i]) == 0)
				kl_bad_gold(g->gold, "Name each grain field once.",
							"grain field \"%s\" is given twice", grain[i]);
		f = kl_layout_field(lay, grain[i]);
		if (f < 0)
			kl_unknown_field(lay, g->gold, "grain field", grain[i]);
		if (lay->fields[f].kind == KL_FIELD_JSON)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("grain field \"%s\" of gold \"%s\" is not a scalar: its silver column is %s",
							grain[i], g->gold, lay->fields[f].sql_type),
					 errhint("A grain field is a top-level field of a scalar type: a string, number, boolean, date or timestamp. To break a gold down by a member of an object, keep it out of the grain and return the breakdown as one jsonb metric of a SQL gold, for example sql => 'SELECT jsonb_object_agg(country, revenue) AS revenue_by_country FROM (SELECT customer ->> ''country'' AS country, sum(amount) AS revenue FROM silver GROUP BY 1) t'.")));
		g->grain[g->ngrain] = pstrdup(grain[i]);
		g->grain_field[g->ngrain] = f;
		g->ngrain++;
	}
}

/*
 * kl_metric_field
 *		The numeric field a sum, min, max or avg reads.
 */
static int
kl_metric_field(const KlLayout *lay, KlGoldDef *g, const char *metric, const char *op,
				const KlJsonValue *v)
{
	char	   *name;
	int			f;
	KlFieldKind kind;

	if (v->type != KL_JSON_STRING)
		kl_bad_gold(g->gold, psprintf("Write {\"%s\": \"<field>\"}.", op),
					"metric \"%s\": \"%s\" takes the name of a field", metric, op);
	name = kl_json_str(v);
	f = kl_layout_field(lay, name);
	if (f < 0)
		kl_unknown_field(lay, g->gold, psprintf("metric \"%s\" reads", metric), name);
	kind = lay->fields[f].kind;
	if (kind != KL_FIELD_INTEGER && kind != KL_FIELD_NUMBER)
	{
		StringInfoData numeric;

		initStringInfo(&numeric);
		for (int i = 0; i < lay->nfields; i++)
			if (lay->fields[i].kind == KL_FIELD_INTEGER || lay->fields[i].kind == KL_FIELD_NUMBER)
				appendStringInfo(&numeric, "%s%s", numeric.len ? ", " : "", lay->fields[i].name);
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("metric \"%s\" of gold \"%s\": %s needs a numeric field, and \"%s\" is not one (its silver column is %s)",
						metric, g->gold, op, name, lay->fields[f].sql_type),
				 numeric.len ?
				 errhint("sum, min, max and avg take integer or number fields; the numeric fields of contract \"%s\" are: %s. count counts any field.",
						 lay->contract->name, numeric.data) :
				 errhint("sum, min, max and avg take integer or number fields, and contract \"%s\" has none; count counts any field.",
						 lay->contract->name)));
	}
	return f;
}

/*
 * kl_gold_metrics
 *		The declared metrics of gold g, from their json text: each an
 *		object with one of sum, count, min, max, avg or ratio, and the
 *		rounding of an avg or ratio stated ("round" decimals, "rounding"
 *		half_up, the default, or python).
 */
static void
kl_gold_metrics(KlGoldDef *g, const KlLayout *lay, const char *json)
{
	KlJsonReader doc;
	KlJsonReader it;
	KlJsonValue top;
	KlJsonValue k;
	KlJsonValue v;
	int			cap = 8;
	char	  **ratio_num;
	char	  **ratio_den;

	kl_json_init(&doc, json, strlen(json), 64);
	if (!kl_json_parse_document(&doc, &top) || top.type != KL_JSON_OBJECT)
		kl_bad_gold(g->gold, "Give the metrics as a json object, for example {\"revenue\": {\"sum\": \"amount\"}, \"orders\": {\"count\": \"*\"}}.",
					"metrics must be a json object");
	g->metrics = palloc0(sizeof(KlMetric) * cap);
	ratio_num = palloc0(sizeof(char *) * cap);
	ratio_den = palloc0(sizeof(char *) * cap);
	g->nmetrics = 0;
	kl_json_object_open(&it, top.start, top.start + top.len, 64);
	while (kl_json_object_next(&it, &k, &v))
	{
		KlMetric   *m;
		KlJsonReader mit;
		KlJsonValue mk;
		KlJsonValue mv;
		int			nops = 0;
		bool		has_round = false;
		char	   *name = kl_json_str(&k);

		if (g->nmetrics == cap)
		{
			cap *= 2;
			g->metrics = repalloc(g->metrics, sizeof(KlMetric) * cap);
			ratio_num = repalloc(ratio_num, sizeof(char *) * cap);
			ratio_den = repalloc(ratio_den, sizeof(char *) * cap);
		}
		m = &g->metrics[g->nmetrics];
		memset(m, 0, sizeof(*m));
		m->name = name;
		m->round = -1;
		m->field = -1;
		ratio_num[g->nmetrics] = ratio_den[g->nmetrics] = NULL;
		if (!kl_name_is_identifier(name))
			kl_bad_gold(g->gold, "A metric's name is its column's: lower-case letters, digits and underscores, starting with a letter or underscore.",
						"metric name \"%s\" is not a valid column name", name);
		if (strcmp(name, "snapshot_id") == 0 || strcmp(name, "business_date") == 0 ||
			strcmp(name, "closing_status") == 0)
			kl_bad_gold(g->gold, "snapshot_id, business_date and closing_status are columns of every gold; name the metric otherwise.",
						"metric name \"%s\" is taken", name);
		for (int j = 0; j < g->ngrain; j++)
			if (strcmp(g->grain[j], name) == 0)
				kl_bad_gold(g->gold, "A metric and a grain field cannot share a column; name the metric otherwise.",
							"metric \"%s\" has the name of a grain field", name);
		for (int j = 0; j < g->nmetrics; j++)
			if (strcmp(g->metrics[j].name, name) == 0)
				kl_bad_gold(g->gold, "Name each metric once.", "metric \"%s\" is given twice", name);
		if (v.type != KL_JSON_OBJECT)
			kl_bad_gold(g->gold, "Write each metric as an object, for example {\"sum\": \"amount\"}.",
						"metric \"%s\" is not an object", name);
		kl_json_object_open(&mit, v.start, v.start + v.len, 64);
		while (kl_json_object_next(&mit, &mk, &mv))
		{
			char	   *key = kl_json_str(&mk);
			int			w;

			for (w = 0; kl_metric_keys[w]; w++)
				if (strcmp(kl_metric_keys[w], key) == 0)
					break;
			if (kl_metric_keys[w] == NULL)
			{
				const char *near = kl_nearest(key, kl_metric_keys, 8);

				kl_bad_gold(g->gold,
							near ? psprintf("Perhaps you meant \"%s\". The keys of a metric are: %s.",
											near, kl_words(kl_metric_keys, 8)) :
							psprintf("The keys of a metric are: %s.", kl_words(kl_metric_keys, 8)),
							"metric \"%s\": unknown key \"%s\"", name, key);
			}
			if (strcmp(key, "round") == 0)
			{
				int64		r;

				if (mv.type != KL_JSON_NUMBER || !mv.is_integer ||
					!kl_json_parse_int64(mv.start, mv.len, &r) || r < 0 || r > 15)
					kl_bad_gold(g->gold, "\"round\" is the number of decimals, 0 to 15.",
								"metric \"%s\": \"round\" must be an integer from 0 to 15", name);
				m->round = (int) r;
				has_round = true;
				continue;
			}
			if (strcmp(key, "rounding") == 0)
			{
				char	   *r = mv.type == KL_JSON_STRING ? kl_json_str(&mv) : "";

				if (strcmp(r, "half_up") == 0)
					m->python = false;
				else if (strcmp(r, "python") == 0)
					m->python = true;
				else
				{
					const char *near = kl_nearest(r, kl_roundings, 2);

					kl_bad_gold(g->gold,
								near ? psprintf("Perhaps you meant \"%s\". A rounding is half_up (PostgreSQL's round() of the exact decimal quotient) or python (Python's round() of the double quotient).", near) :
								"A rounding is half_up (PostgreSQL's round() of the exact decimal quotient) or python (Python's round() of the double quotient).",
								"metric \"%s\": unknown rounding \"%s\"", name, r);
				}
				continue;
			}
			nops++;
			if (strcmp(key, "count") == 0)
			{
				m->op = KL_METRIC_COUNT;
				if (mv.type != KL_JSON_STRING)
					kl_bad_gold(g->gold, "Write {\"count\": \"*\"} to count events, {\"count\": \"<field>\"} to count the events where it is not null.",
								"metric \"%s\": \"count\" takes \"*\" or a field", name);
				else
				{
					char	   *f = kl_json_str(&mv);

					if (strcmp(f, "*") != 0)
					{
						m->field = kl_layout_field(lay, f);
						if (m->field < 0)
							kl_unknown_field(lay, g->gold, psprintf("metric \"%s\" counts", name), f);
					}
				}
			}
			else if (strcmp(key, "ratio") == 0)
			{
				KlJsonReader ait;
				KlJsonValue a;
				int			na = 0;

				m->op = KL_METRIC_RATIO;
				if (mv.type == KL_JSON_ARRAY)
				{
					kl_json_array_open(&ait, mv.start, mv.start + mv.len, 64);
					while (kl_json_array_next(&ait, &a))
					{
						if (a.type == KL_JSON_STRING && na < 2)
						{
							if (na == 0)
								ratio_num[g->nmetrics] = kl_json_str(&a);
							else
								ratio_den[g->nmetrics] = kl_json_str(&a);
						}
						na++;
					}
				}
				if (na != 2 || ratio_num[g->nmetrics] == NULL || ratio_den[g->nmetrics] == NULL)
					kl_bad_gold(g->gold, "Write {\"ratio\": [\"<numerator metric>\", \"<denominator metric>\"], \"round\": 4}.",
								"metric \"%s\": \"ratio\" takes the names of two other metrics", name);
			}
			else
			{
				m->op = strcmp(key, "sum") == 0 ? KL_METRIC_SUM :
					strcmp(key, "min") == 0 ? KL_METRIC_MIN :
					strcmp(key, "max") == 0 ? KL_METRIC_MAX : KL_METRIC_AVG;
				m->field = kl_metric_field(lay, g, name, key, &mv);
			}
		}
		if (nops != 1)
			kl_bad_gold(g->gold, "A metric is one of: {\"sum\": f}, {\"count\": \"*\" or f}, {\"min\": f}, {\"max\": f}, {\"avg\": f, \"round\": n}, {\"ratio\": [m1, m2], \"round\": n}.",
						"metric \"%s\" must have exactly one of sum, count, min, max, avg, ratio", name);
		if ((m->op == KL_METRIC_AVG || m->op == KL_METRIC_RATIO) && !has_round)
			kl_bad_gold(g->gold, "State how the value is rounded: \"round\": <decimals>, and \"rounding\": \"half_up\" (the default) or \"python\".",
						"metric \"%s\": an average or ratio needs \"round\"", name);
		if (m->op != KL_METRIC_AVG && m->op != KL_METRIC_RATIO && has_round)
			kl_bad_gold(g->gold, "Only avg and ratio are rounded; sums, counts, minima and maxima are exact.",
						"metric \"%s\": \"round\" applies to avg and ratio only", name);
		m->integer = m->field >= 0 && lay->fields[m->field].kind == KL_FIELD_INTEGER;
		switch (m->op)
		{
			case KL_METRIC_SUM:
				m->sql_type = m->integer ? "bigint" : "numeric";
				break;
			case KL_METRIC_COUNT:
				m->sql_type = "bigint";
				break;
			case KL_METRIC_MIN:
			case KL_METRIC_MAX:
				m->sql_type = m->integer ? "bigint" : lay->fields[m->field].sql_type;
				break;
			case KL_METRIC_AVG:
			case KL_METRIC_RATIO:
				m->sql_type = psprintf("numeric(38,%d)", m->round);
				break;
		}
		g->nmetrics++;
	}
	if (!kl_json_object_finish(&it))
		kl_bad_gold(g->gold, "Give the metrics as a json object.", "metrics are not valid json");
	if (g->nmetrics == 0)
		kl_bad_gold(g->gold, "Declare at least one metric, for example {\"events\": {\"count\": \"*\"}}, or give the gold as SQL.",
					"a gold needs metrics");

	/* ratios name other metrics, which are not ratios */
	for (int i = 0; i < g->nmetrics; i++)
	{
		KlMetric   *m = &g->metrics[i];

		if (m->op != KL_METRIC_RATIO)
			continue;
		m->num = m->den = -1;
		for (int j = 0; j < g->nmetrics; j++)
		{
			if (strcmp(g->metrics[j].name, ratio_num[i]) == 0)
				m->num = j;
			if (strcmp(g->metrics[j].name, ratio_den[i]) == 0)
				m->den = j;
		}
		if (m->num < 0 || m->den < 0)
			kl_bad_gold(g->gold, "A ratio divides two metrics of the same gold, for example {\"refunds\": {\"count\": \"refund_id\"}, \"orders\": {\"count\": \"*\"}, \"refund_rate\": {\"ratio\": [\"refunds\", \"orders\"], \"round\": 4}}.",
						"metric \"%s\": ratio of \"%s\", which is not a metric of the gold",
						m->name, m->num < 0 ? ratio_num[i] : ratio_den[i]);
		if (g->metrics[m->num].op == KL_METRIC_RATIO || g->metrics[m->den].op == KL_METRIC_RATIO ||
			g->metrics[m->num].op == KL_METRIC_AVG || g->metrics[m->den].op == KL_METRIC_AVG)
			kl_bad_gold(g->gold, "A ratio divides sums, counts, minima or maxima.",
						"metric \"%s\": a ratio of an average or of a ratio", m->name);
	}
}

/*
 * kl_builtin_gold
 *		The seed's gold of every machine_event_v1 source, as a definition.
 */
static KlGoldDef *
kl_builtin_gold(const KlLayout *lay)
{
	KlGoldDef  *g = palloc0(sizeof(KlGoldDef));

	g->gold = KL_BUILTIN_GOLD;
	g->builtin = true;
	g->owner = "kafka_lake";
	g->version = 1;
	kl_gold_grain(g, lay, (char **) kl_builtin_grain, lengthof(kl_builtin_grain));
	kl_gold_metrics(g, lay, kl_builtin_metrics);
	return g;
}

/*
 * kafka_lake_builtin_golds
 *		The built-in gold definitions, for the catalog's rows (the upgrade
 *		script and the install read them from here).
 */
Datum
kafka_lake_builtin_golds(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[3];
	bool		nulls[3] = {0};
	Datum	   *grain = palloc(sizeof(Datum) * lengthof(kl_builtin_grain));

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < lengthof(kl_builtin_grain); i++)
		grain[i] = CStringGetTextDatum(kl_builtin_grain[i]);
	values[0] = CStringGetTextDatum(KL_BUILTIN_GOLD);
	values[1] = PointerGetDatum(construct_array(grain, lengthof(kl_builtin_grain), TEXTOID,
												-1, false, TYPALIGN_INT));
	values[2] = CStringGetTextDatum(kl_builtin_metrics);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/*
 * kl_catalog_has_golds
 *		Does the catalog have kafka_lake.golds (version 1.1)?
 */
static bool
kl_catalog_has_golds(void)
{
	Oid			nsp = get_namespace_oid("kafka_lake", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("golds", nsp));
}

/*
 * kl_catalog_has_definitions
 *		Does the catalog keep the versions of golds and checks (version
 *		1.3: kafka_lake.gold_definitions, check_definitions,
 *		snapshot_definitions)?
 */
bool
kl_catalog_has_definitions(void)
{
	Oid			nsp = get_namespace_oid("kafka_lake", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("gold_definitions", nsp));
}

/*
 * kl_text_array_cstrings
 *		The elements of a text[] datum.
 */
static char **
kl_text_array_cstrings(Datum d, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	char	  **out;

	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, n);
	out = palloc(sizeof(char *) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("a grain field must not be null"),
					 errhint("Name the grain fields, for example ARRAY['customer_country'].")));
		out[i] = TextDatumGetCString(elems[i]);
	}
	return out;
}

/*
 * kl_bridge_define
 *		The layout of the date (kl_bridge_date_layout), and the golds and
 *		owners' checks of b's source; silver made to hold the layout.
 */
void
kl_bridge_define(KlBridge *b, KlLayout *lay)
{
	MemoryContext old = MemoryContextSwitchTo(b->cxt);
	List	   *rows = NIL;
	List	   *checks = NIL;
	ListCell   *cell;

	b->layout = lay;
	if (lay->machine)
		b->golds = lappend(b->golds, kl_builtin_gold(lay));
	else
		kl_silver_follow(b->src, lay);

	if (kl_catalog_has_golds())
	{
		KlCatalogSave cs;
		Oid			types[1] = {INT4OID};
		Datum		values[1] = {Int32GetDatum(b->src->source_id)};
		const char *version = kl_catalog_has_definitions() ? "version" : "1";

		cs = kl_catalog_begin();
		if (SPI_execute_with_args(psprintf("SELECT gold, grain, metrics::text, compute, owner::text, %s"
										   " FROM kafka_lake.golds WHERE source_id = $1 AND NOT builtin"
										   " ORDER BY gold", version),
								  1, types, values, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read kafka_lake.golds");
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	t = SPI_tuptable->vals[i];
			TupleDesc	d = SPI_tuptable->tupdesc;
			char	  **row = MemoryContextAllocZero(b->cxt, sizeof(char *) * 7);
			bool		isnull;
			Datum		grain = SPI_getbinval(t, d, 2, &isnull);
			int			ngrain;
			char	  **g;

			MemoryContextSwitchTo(b->cxt);
			row[0] = SPI_getvalue(t, d, 1);
			g = kl_text_array_cstrings(grain, &ngrain);
			row[1] = (char *) g;
			row[2] = SPI_getvalue(t, d, 3);
			row[3] = SPI_getvalue(t, d, 4);
			row[4] = SPI_getvalue(t, d, 5);
			row[5] = (char *) (intptr_t) ngrain;
			row[6] = SPI_getvalue(t, d, 6);
			rows = lappend(rows, row);
		}
		if (SPI_execute_with_args(psprintf("SELECT check_name, function, owner, %s FROM kafka_lake.quality_checks"
										   " WHERE source_id = $1 ORDER BY check_name", version),
								  1, types, values, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read kafka_lake.quality_checks");
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			KlOwnerCheck *oc;

			MemoryContextSwitchTo(b->cxt);
			oc = palloc0(sizeof(KlOwnerCheck));
			oc->name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
			oc->function = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
			oc->owner = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3);
			oc->version = pg_strtoint32(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 4));
			checks = lappend(checks, oc);
		}
		MemoryContextSwitchTo(b->cxt);
		kl_catalog_end(cs);
	}

	foreach(cell, rows)
	{
		char	  **row = (char **) lfirst(cell);
		KlGoldDef  *g = palloc0(sizeof(KlGoldDef));

		g->gold = row[0];
		g->owner = row[4];
		g->version = pg_strtoint32(row[6]);
		kl_gold_grain(g, lay, (char **) row[1], (int) (intptr_t) row[5]);
		if (row[3] != NULL)
			g->compute = row[3];
		else
			kl_gold_metrics(g, lay, row[2]);
		b->golds = lappend(b->golds, g);
	}
	b->owner_checks = checks;
	MemoryContextSwitchTo(old);
}

/*
 * kl_silver_columns_ddl
 *		The columns of a source's silver table, one entry per column, "name
 *		type[ not null]": as CREATE TABLE lists them (quoted), or as
 *		pg_attribute shows them (not).
 */
static List *
kl_silver_columns_ddl(const KlLayout *lay, bool quoted)
{
	List	   *cols = NIL;

	cols = lappend(cols, "run_id text not null");
	if (lay->silver_date)
		cols = lappend(cols, "business_date date not null");
	for (int i = 0; i < lay->nfields; i++)
		cols = lappend(cols, psprintf("%s %s%s",
									  quoted ? quote_identifier(lay->fields[i].column) :
									  lay->fields[i].column,
									  lay->fields[i].sql_type,
									  lay->fields[i].required ? " not null" : ""));
	for (int i = 0; i < KL_NPROVENANCE; i++)
		cols = lappend(cols, psprintf("%s %s", kl_provenance[i][0], kl_provenance[i][1]));
	return cols;
}

/*
 * kl_silver_expected
 *		The silver table's columns as pg_attribute shows them, for the
 *		schema_drift check: "name type[ not null]", comma-separated.
 */
char *
kl_silver_expected(const KlLayout *lay)
{
	StringInfoData buf;
	List	   *cols = kl_silver_columns_ddl(lay, false);
	ListCell   *cell;

	initStringInfo(&buf);
	foreach(cell, cols)
		appendStringInfo(&buf, "%s%s", buf.len ? ", " : "", (char *) lfirst(cell));
	return buf.data;
}

/*
 * kl_state_view_comment
 *		The comment of an entity stream's state view, which names the key,
 *		the order and the deletion it was made for: kl_silver_follow makes
 *		the view again when a contract version changes them.
 */
static char *
kl_state_view_comment(const KlSource *src, const KlLayout *lay)
{
	StringInfoData c;

	initStringInfo(&c);
	appendStringInfo(&c, "State of kafka_lake source %s: the latest version of each key across the current snapshots of every date, deletions left out (key", src->source);
	for (int k = 0; k < lay->nnk; k++)
		appendStringInfo(&c, " %s", quote_identifier(lay->fields[lay->nk[k]].column));
	appendStringInfoString(&c, "; order_by");
	for (int k = 0; k < lay->norder; k++)
		appendStringInfo(&c, " %s", quote_identifier(lay->fields[lay->order[k]].column));
	if (lay->deleted_field >= 0)
		appendStringInfo(&c, "; deleted where %s", kl_layout_live_sql(lay));
	appendStringInfoChar(&c, ')');
	return c.data;
}

/*
 * kl_state_view
 *		An entity stream's kafka_lake.<source>_state (made again: silver's
 *		columns may have grown): of the current snapshot of every date,
 *		each key's latest silver row by order_by, then the coordinate (as
 *		the bridge picks a date's: strings by their bytes), unless that
 *		row is a deletion.  Owned by the extension's owner, as silver.
 */
static void
kl_state_view(const KlSource *src, const KlLayout *lay)
{
	const char *view = quote_identifier(lay->state);
	const char *live = kl_layout_live_sql(lay);
	Oid			existing = get_relname_relid(lay->state, get_namespace_oid("kafka_lake", false));
	StringInfoData key;
	StringInfoData order;

	if (OidIsValid(existing) && get_rel_relkind(existing) != RELKIND_VIEW)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("the state view of source \"%s\" cannot be created: kafka_lake.%s exists",
						src->source, view),
				 errdetail("An entity stream's source has the view kafka_lake.<source>_state."),
				 errhint("Rename that object, or choose another source name.")));
	initStringInfo(&key);
	initStringInfo(&order);
	for (int k = 0; k < lay->nnk; k++)
		appendStringInfo(&key, "%ss.%s", k ? ", " : "", quote_identifier(lay->fields[lay->nk[k]].column));
	for (int k = 0; k < lay->norder; k++)
	{
		const KlBridgeField *f = &lay->fields[lay->order[k]];

		appendStringInfo(&order, "s.%s%s DESC, ", quote_identifier(f->column),
						 (f->sql_typid == TEXTOID || f->sql_typid == VARCHAROID) ? " COLLATE \"C\"" : "");
	}
	/* silver's columns only grow at the end, so the view is replaced in place, grants kept */
	if (SPI_execute(psprintf("CREATE OR REPLACE VIEW kafka_lake.%s AS SELECT v.* FROM"
							 " (SELECT DISTINCT ON (%s) s.* FROM kafka_lake.%s s"
							 "  JOIN kafka_lake.snapshots sn ON sn.run_id = s.run_id AND sn.is_current"
							 "  ORDER BY %s, %ss.kafka_partition DESC, s.kafka_offset DESC) v%s%s",
							 view, key.data, quote_identifier(lay->silver), key.data, order.data,
							 live ? " WHERE " : "", live ? live : ""), false, 0) != SPI_OK_UTILITY ||
		SPI_execute(psprintf("COMMENT ON VIEW kafka_lake.%s IS %s", view,
							 quote_literal_cstr(kl_state_view_comment(src, lay))),
					false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create kafka_lake.%s", view);
}

/*
 * kl_silver_create
 *		Create kafka_lake.<source>_silver with the columns of a layout.
 */
static void
kl_silver_create(const KlSource *src, const KlLayout *lay)
{
	const char *rel = quote_identifier(lay->silver);
	List	   *cols = kl_silver_columns_ddl(lay, true);
	StringInfoData sql;
	KlCatalogSave cs;
	ListCell   *cell;

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE kafka_lake.%s (", rel);
	foreach(cell, cols)
	{
		if (foreach_current_index(cell) == 0)
			appendStringInfoString(&sql, "run_id text not null REFERENCES kafka_lake.runs ON DELETE CASCADE");
		else
			appendStringInfo(&sql, ", %s", (char *) lfirst(cell));
	}
	appendStringInfoString(&sql, ")");
	cs = kl_catalog_begin();
	if (SPI_execute(sql.data, false, 0) != SPI_OK_UTILITY ||
		SPI_execute(psprintf("CREATE INDEX ON kafka_lake.%s USING brin (run_id) WITH (autosummarize = off)",
							 rel), false, 0) != SPI_OK_UTILITY ||
		SPI_execute(psprintf("COMMENT ON TABLE kafka_lake.%s IS %s", rel,
							 quote_literal_cstr(psprintf("Silver of kafka_lake source %s: the accepted events of each bridge run, one column per field of contract %s, deduplicated on its natural key",
														 src->source, lay->contract->name))),
					false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create kafka_lake.%s", rel);
	if (lay->entity)
		kl_state_view(src, lay);
	kl_catalog_end(cs);
}

/*
 * kl_silver_ensure
 *		Create kafka_lake.<source>_silver for a source whose contract is
 *		not machine_event_v1 and has a business date, if it does not exist.
 */
void
kl_silver_ensure(const KlSource *src, const KlContract *c)
{
	KlLayout   *lay;

	if (c->raw || c->bd_kind == KL_BD_NONE ||
		(c->builtin && strcmp(c->name, KL_MACHINE_EVENT_V1) == 0))
		return;
	lay = kl_layout_for(src, &c, 1);
	if (!OidIsValid(get_relname_relid(lay->silver, get_namespace_oid("kafka_lake", false))))
		kl_silver_create(src, lay);
}

/*
 * kl_silver_follow
 *		Make kafka_lake.<source>_silver hold what the date's layout writes,
 *		in the bridge's transaction: created from the contract when it does
 *		not exist; else a column added (nullable: earlier rows lack it) for
 *		each new field, a column's type changed when it does not read what
 *		the field's versions give and the field's type reads the column's
 *		values too (as alter_source() changes <source>_events: bigint to
 *		numeric, anything to text), NOT NULL dropped from a column whose
 *		field may now be absent or null.  Columns of fields the date's
 *		versions lack stay (null in its rows).  A column that cannot follow
 *		is ERROR 42804, nothing changed: the hint gives the one way on
 *		(rename the table: the next bridge() creates it again, the gold of
 *		earlier snapshots stays readable).
 */
void
kl_silver_follow(const KlSource *src, KlLayout *lay)
{
	Oid			relid = get_relname_relid(lay->silver, get_namespace_oid("kafka_lake", false));
	const char *rel = quote_identifier(lay->silver);
	List	   *changes = NIL;
	KlCatalogSave cs;
	ListCell   *cell;
	int			nexisting;
	char	  **names;
	char	  **types;
	bool	   *notnull;
	bool	   *used;
	bool		type_change = false;
	List	   *state_grants = NIL;
	MemoryContext caller = CurrentMemoryContext;

	if (!OidIsValid(relid))
	{
		kl_silver_create(src, lay);
		/* the rest of the bridge reads the new table */
		CommandCounterIncrement();
		if (ActiveSnapshotSet())
			UpdateActiveSnapshotCommandId();
		return;
	}

	cs = kl_catalog_begin();
	{
		Oid			argtypes[1] = {OIDOID};
		Datum		values[1] = {ObjectIdGetDatum(relid)};

		if (SPI_execute_with_args("SELECT attname::text, pg_catalog.format_type(atttypid, atttypmod), attnotnull"
								  " FROM pg_catalog.pg_attribute WHERE attrelid = $1 AND attnum > 0"
								  " AND NOT attisdropped ORDER BY attnum",
								  1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read the columns of kafka_lake.%s", rel);
	}
	nexisting = (int) SPI_processed;
	names = palloc(sizeof(char *) * Max(nexisting, 1));
	types = palloc(sizeof(char *) * Max(nexisting, 1));
	notnull = palloc(sizeof(bool) * Max(nexisting, 1));
	used = palloc0(sizeof(bool) * Max(nexisting, 1));
	for (int i = 0; i < nexisting; i++)
	{
		bool		isnull;
		MemoryContext spi = MemoryContextSwitchTo(caller);

		names[i] = pstrdup(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
		types[i] = pstrdup(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
		notnull[i] = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3, &isnull));
		MemoryContextSwitchTo(spi);
		if (strcmp(names[i], "run_id") == 0 ||
			(lay->silver_date && strcmp(names[i], "business_date") == 0))
			used[i] = true;
		for (int p = 0; p < KL_NPROVENANCE; p++)
			used[i] |= (strcmp(names[i], kl_provenance[p][0]) == 0);
	}

	for (int f = 0; f < lay->nfields; f++)
	{
		KlBridgeField *fd = &lay->fields[f];
		int			have = -1;

		for (int i = 0; i < nexisting && have < 0; i++)
			if (strcmp(names[i], fd->column) == 0)
				have = i;
		if (have < 0)
		{
			changes = lappend(changes, psprintf("ADD COLUMN %s %s",
												quote_identifier(fd->column), fd->sql_type));
			continue;
		}
		used[have] = true;
		if (notnull[have] && !fd->required)
			changes = lappend(changes, psprintf("ALTER COLUMN %s DROP NOT NULL",
												quote_identifier(fd->column)));
		if (strcmp(types[have], fd->sql_type) == 0)
			continue;
		if ((kl_type_reads(types[have]) & fd->kinds) == fd->kinds)
		{
			/* the column reads the field's values: SQL over it casts */
			fd->silver_cast = true;
			continue;
		}
		if ((kl_type_reads(fd->sql_type) & kl_type_reads(types[have])) == kl_type_reads(types[have]))
		{
			changes = lappend(changes, psprintf("ALTER COLUMN %s TYPE %s USING %s::%s",
												quote_identifier(fd->column), fd->sql_type,
												quote_identifier(fd->column), fd->sql_type));
			type_change = true;
			continue;
		}
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of kafka_lake.%s (%s) cannot hold field \"%s\" of contract \"%s\" version %d (%s)",
						fd->column, rel, types[have], fd->name, lay->contract->name,
						lay->contract->version, fd->sql_type),
				 errdetail("Silver keeps one column per field for every business date; neither type reads the other's values."),
				 errhint("Rename the table (ALTER TABLE kafka_lake.%s RENAME TO %s): the next bridge() creates it again from the contract, and the gold of earlier snapshots stays readable.",
						 rel, quote_identifier(psprintf("%s_v%d", lay->silver, lay->contract->version - 1)))));
	}
	for (int i = 0; i < nexisting; i++)
		if (!used[i] && notnull[i])
			changes = lappend(changes, psprintf("ALTER COLUMN %s DROP NOT NULL",
												quote_identifier(names[i])));
	if (changes != NIL)
	{
		StringInfoData sql;

		/*
		 * An entity's state view stops a column's type change: dropped, and
		 * made again below with the grants it had
		 */
		if (lay->entity && type_change &&
			OidIsValid(get_relname_relid(lay->state, get_namespace_oid("kafka_lake", false))))
		{
			Oid			argtypes[1] = {TEXTOID};
			Datum		values[1] = {CStringGetTextDatum(lay->state)};

			if (SPI_execute_with_args("SELECT pg_catalog.format('GRANT %s ON kafka_lake.%I TO %s', a.privilege_type, c.relname,"
									  "   CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(r.rolname) END)"
									  " FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a"
									  " LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee"
									  " WHERE c.relnamespace = 'kafka_lake'::pg_catalog.regnamespace AND c.relname = $1"
									  "   AND a.grantee <> c.relowner",
									  1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
				elog(ERROR, "could not read the grants of kafka_lake.%s", lay->state);
			for (uint64 i = 0; i < SPI_processed; i++)
			{
				MemoryContext spi = MemoryContextSwitchTo(caller);

				state_grants = lappend(state_grants,
									   pstrdup(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1)));
				MemoryContextSwitchTo(spi);
			}
			if (SPI_execute(psprintf("DROP VIEW kafka_lake.%s", quote_identifier(lay->state)),
							false, 0) != SPI_OK_UTILITY)
				elog(ERROR, "could not drop kafka_lake.%s", lay->state);
		}
		initStringInfo(&sql);
		appendStringInfo(&sql, "ALTER TABLE kafka_lake.%s ", rel);
		foreach(cell, changes)
			appendStringInfo(&sql, "%s%s", foreach_current_index(cell) > 0 ? ", " : "",
							 (char *) lfirst(cell));
		if (SPI_execute(sql.data, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not alter kafka_lake.%s", rel);
	}
	if (lay->entity)
	{
		/*
		 * The view follows the source's contract version: made again from a
		 * date of that version when silver's columns or the entity changed
		 * (its comment says which it was made for), and from any date when
		 * it is missing
		 */
		Oid			state = get_relname_relid(lay->state, get_namespace_oid("kafka_lake", false));
		const KlContract *cur = kl_source_contract(src);
		bool		current = strcmp(cur->name, lay->contract->name) == 0 &&
			cur->version == lay->contract->version;
		char	   *comment = OidIsValid(state) ? GetComment(state, RelationRelationId, 0) : NULL;

		if (!OidIsValid(state) ||
			(current && (changes != NIL || comment == NULL ||
						 strcmp(comment, kl_state_view_comment(src, lay)) != 0)))
			kl_state_view(src, lay);
		foreach(cell, state_grants)
			if (SPI_execute(lfirst(cell), false, 0) != SPI_OK_UTILITY)
				elog(ERROR, "could not run: %s", (char *) lfirst(cell));
	}
	kl_catalog_end(cs);
	if (changes != NIL)
	{
		/* the rest of the bridge reads the altered table */
		CommandCounterIncrement();
		if (ActiveSnapshotSet())
			UpdateActiveSnapshotCommandId();
	}
}

/*
 * kl_silver_holds
 *		Does a source's silver table hold what the date's layout writes, as
 *		kl_silver_follow() leaves it: run_id, business_date and the
 *		provenance of their types, a column of each field whose type reads
 *		the field's values, every other column nullable?  For the
 *		schema_drift check of a silver that followed its contract.
 */
bool
kl_silver_holds(const KlLayout *lay)
{
	Oid			relid = kl_catalog_relid(lay->silver);
	KlCatalogSave cs;
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	bool		ok = true;
	int			matched = 0;

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("SELECT attname::text, pg_catalog.format_type(atttypid, atttypmod), attnotnull"
							  " FROM pg_catalog.pg_attribute WHERE attrelid = $1 AND attnum > 0"
							  " AND NOT attisdropped ORDER BY attnum",
							  1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the columns of kafka_lake.%s", lay->silver);
	for (uint64 i = 0; i < SPI_processed && ok; i++)
	{
		char	   *name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		char	   *type = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		bool		isnull;
		bool		notnull = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i],
														 SPI_tuptable->tupdesc, 3, &isnull));
		bool		known = false;

		if (strcmp(name, "run_id") == 0)
			known = true, ok = strcmp(type, "text") == 0;
		else if (lay->silver_date && strcmp(name, "business_date") == 0)
			known = true, ok = strcmp(type, "date") == 0;
		for (int p = 0; p < KL_NPROVENANCE && !known; p++)
			if (strcmp(name, kl_provenance[p][0]) == 0)
				known = true, ok = strncmp(kl_provenance[p][1], type, strlen(type)) == 0;
		for (int f = 0; f < lay->nfields && !known; f++)
		{
			const KlBridgeField *fd = &lay->fields[f];

			if (strcmp(name, fd->column) != 0)
				continue;
			known = true;
			ok = strcmp(type, fd->sql_type) == 0 ||
				(kl_type_reads(type) & fd->kinds) == fd->kinds;
		}
		if (known)
			matched++;
		else if (notnull)
			ok = false;
	}
	kl_catalog_end(cs);
	return ok && matched == 1 + (lay->silver_date ? 1 : 0) + lay->ncolumns;
}

/*
 * kl_caller_may_define
 *		May the calling role define a gold or a check of the source (what:
 *		"gold \"x\""), which every later bridge() of it publishes or runs,
 *		so that it can stop the source's publication for everyone?  It must
 *		read the source (SELECT on kafka_lake.<source>_records) and be
 *		allowed to gate it by the table's owner: TRIGGER on that table, the
 *		privilege PostgreSQL asks of a role that adds code which runs on
 *		every change of a table and can stop it.  ERROR 42501 otherwise.
 */
static void
kl_caller_may_define(const KlSource *src, const char *what)
{
	char	   *relname = psprintf("%s_records", src->source);
	Oid			records = get_relname_relid(relname, get_namespace_oid("kafka_lake", false));
	char	   *role = GetUserNameFromId(GetUserId(), false);

	if (superuser())
		return;
	if (!OidIsValid(records) ||
		pg_class_aclcheck(records, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not read source \"%s\", so it may not define %s over it",
						role, src->source, what),
				 errhint("The source's owner grants SELECT on kafka_lake.%s first.",
						 quote_identifier(relname))));
	if (pg_class_aclcheck(records, GetUserId(), ACL_TRIGGER) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not define %s of source \"%s\"", role, what, src->source),
				 errdetail("A gold or a check of a source runs with every bridge() of it and can stop its publication for every reader: it needs TRIGGER on kafka_lake.%s, as a trigger on a table does, besides SELECT.",
						   quote_identifier(relname)),
				 errhint("The source's owner allows it: GRANT TRIGGER ON kafka_lake.%s TO %s;",
						 quote_identifier(relname), quote_identifier(role))));
}

/*
 * kl_name_arg
 *		A name argument: lower-case letters, digits and underscores, at most
 *		maxlen bytes (so that the objects named after it fit NAMEDATALEN).
 */
static char *
kl_name_arg(FunctionCallInfo fcinfo, int argno, const char *what, int maxlen,
			const char *example)
{
	char	   *name;

	kl_check_not_null(fcinfo, argno, what, psprintf("Name it, for example %s.", example));
	name = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (!kl_name_is_identifier(name) || (int) strlen(name) > maxlen)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("%s \"%s\" is not a valid name", what, name),
				 errhint("Use lower-case letters, digits and underscores, starting with a letter or underscore, at most %d characters, for example %s.",
						 maxlen, example)));
	return name;
}

/*
 * kl_probe_sql
 *		Run the owner's SQL over no silver rows, as the calling role and
 *		with the search_path its function will have, and return its result's
 *		columns.  An error in it is the owner's, with
 *		its own SQLSTATE.
 */
static TupleDesc
kl_probe_sql(const KlLayout *lay, const char *sql, bool as_text, const char *what)
{
	TupleDesc	desc;
	MemoryContext caller = CurrentMemoryContext;
	int			gucs;
	char	   *probe = psprintf("WITH silver AS (SELECT * FROM kafka_lake.%s WHERE false)"
								 " SELECT %s FROM (%s\n) q LIMIT 0",
								 quote_identifier(lay->silver), as_text ? "q::text" : "*", sql);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* the search_path the function will have */
	gucs = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	PG_TRY();
	{
		if (SPI_execute(probe, true, 0) != SPI_OK_SELECT)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("the SQL must be one query")));
	}
	PG_CATCH();
	{
		ErrorData  *e;

		/* the owner's own error, with what its SQL is run over; nothing continues */
		MemoryContextSwitchTo(caller);
		e = CopyErrorData();
		FlushErrorState();
		ereport(ERROR,
				(errcode(e->sqlerrcode),
				 errmsg("the SQL of %s: %s", what, e->message),
				 e->detail ? errdetail_internal("%s", e->detail) : 0,
				 errhint("%s%sWrite one query over silver, the day's rows of kafka_lake.%s (its columns are the contract's fields, business_date and the Kafka provenance), for example %s.",
						 e->hint ? e->hint : "", e->hint ? " " : "", lay->silver,
						 as_text ? "SELECT order_id FROM silver WHERE amount = 0" :
						 "SELECT customer_country, sum(amount) AS revenue FROM silver GROUP BY 1")));
	}
	PG_END_TRY();
	MemoryContextSwitchTo(caller);
	desc = CreateTupleDescCopy(SPI_tuptable->tupdesc);
	AtEOXact_GUC(true, gucs);
	SPI_finish();
	return desc;
}

/*
 * kl_create_definer_function
 *		CREATE FUNCTION kafka_lake.<name>(run_id text) RETURNS <returns>,
 *		SECURITY DEFINER, search_path pinned, over the run's silver rows,
 *		owned by the calling role (who defined it) and executable by no one
 *		else.
 */
static void
kl_create_definer_function(const KlLayout *lay, const char *name, const char *returns,
						   const char *select, const char *sql, const char *comment)
{
	char	   *owner = GetUserNameFromId(GetUserId(), false);
	const char *fn = quote_identifier(name);
	char	   *body = psprintf("WITH silver AS (SELECT * FROM kafka_lake.%s WHERE run_id = $1)"
								" SELECT %s FROM (%s\n) q",
								quote_identifier(lay->silver), select, sql);
	KlCatalogSave cs;

	cs = kl_catalog_begin();
	if (SPI_execute(psprintf("CREATE FUNCTION kafka_lake.%s(text) RETURNS %s"
							 " LANGUAGE sql VOLATILE SECURITY DEFINER"
							 " SET search_path = pg_catalog, pg_temp AS %s",
							 fn, returns, quote_literal_cstr(body)), false, 0) != SPI_OK_UTILITY ||
		SPI_execute(psprintf("REVOKE ALL ON FUNCTION kafka_lake.%s(text) FROM PUBLIC", fn),
					false, 0) != SPI_OK_UTILITY ||
		SPI_execute(psprintf("COMMENT ON FUNCTION kafka_lake.%s(text) IS %s", fn,
							 quote_literal_cstr(comment)), false, 0) != SPI_OK_UTILITY ||
		SPI_execute(psprintf("ALTER FUNCTION kafka_lake.%s(text) OWNER TO %s", fn,
							 quote_identifier(owner)), false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create function kafka_lake.%s", fn);
	kl_catalog_end(cs);
}

/*
 * kl_grant_silver
 *		The definer reads the source's silver through its SQL: SELECT on
 *		<source>_silver, and on an entity stream's state view (the current
 *		versions of what silver holds).  silver_machine_events holds every
 *		machine_event_v1 source's rows, so there the definer must have been
 *		granted it.
 */
static void
kl_grant_silver(const KlLayout *lay, const char *what)
{
	Oid			nsp = get_namespace_oid("kafka_lake", false);
	const char *rels[2] = {lay->silver, lay->state};

	if (superuser())
		return;
	for (int i = 0; i < 2; i++)
	{
		Oid			relid = rels[i] ? get_relname_relid(rels[i], nsp) : InvalidOid;
		KlCatalogSave cs;

		if (!OidIsValid(relid) || pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK)
			continue;
		if (lay->machine)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("role \"%s\" may not read kafka_lake.silver_machine_events, which %s would read",
							GetUserNameFromId(GetUserId(), false), what),
					 errdetail("silver_machine_events holds the silver rows of every machine_event_v1 source."),
					 errhint("Declare the metrics instead of SQL, or have the extension's owner grant SELECT on kafka_lake.silver_machine_events.")));
		cs = kl_catalog_begin();
		if (SPI_execute(psprintf("GRANT SELECT ON kafka_lake.%s TO %s", quote_identifier(rels[i]),
								 quote_identifier(GetUserNameFromId(cs.userid, false))),
						false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not grant SELECT on kafka_lake.%s", rels[i]);
		kl_catalog_end(cs);
	}
}

/*
 * kl_relation_exists
 *		Is there a relation or function of this name in kafka_lake?
 */
static bool
kl_name_taken(const char *name)
{
	Oid			nsp = get_namespace_oid("kafka_lake", false);
	CatCList   *procs;
	bool		taken;

	if (OidIsValid(get_relname_relid(name, nsp)))
		return true;
	procs = SearchSysCacheList1(PROCNAMEARGSNSP, CStringGetDatum(name));
	taken = false;
	for (int i = 0; i < procs->n_members; i++)
		taken |= ((Form_pg_proc) GETSTRUCT(&procs->members[i]->tuple))->pronamespace == nsp;
	ReleaseSysCacheList(procs);
	return taken;
}

/*
 * kl_catalog_has_snapshot_gold_functions
 *		Does the catalog have kafka_lake.snapshot_gold_functions(bigint)
 *		(version 1.2)?
 */
static bool
kl_catalog_has_snapshot_gold_functions(void)
{
	Oid			argtypes[1] = {INT8OID};

	return OidIsValid(LookupFuncName(list_make2(makeString("kafka_lake"),
												makeString("snapshot_gold_functions")),
									 1, argtypes, true));
}

/*
 * kl_gold_as_of_sql
 *		CREATE [OR REPLACE] FUNCTION kafka_lake.<gold>_as_of(snapshot_id):
 *		the gold's rows under any retained snapshot of its source.  A
 *		snapshot of another source is refused (22023) with the functions
 *		that read that snapshot's golds, rather than answered with no rows;
 *		the update to 1.2 replaces the functions of the golds defined before
 *		(kafka_lake_replace_gold_functions).  From 1.3 the gold's source is
 *		read from its history (gold_definitions), so that the function of a
 *		dropped gold still reads the rows it published; the update to 1.3
 *		replaces the functions again.
 */
static char *
kl_gold_as_of_sql(const char *gold, bool replace)
{
	const char *grel = quote_identifier(gold);
	bool		history = kl_catalog_has_definitions();

	return psprintf("CREATE %sFUNCTION kafka_lake.%s(snapshot_id bigint)"
					" RETURNS SETOF kafka_lake.%s"
					" LANGUAGE plpgsql STABLE SECURITY DEFINER"
					" SET search_path = pg_catalog, pg_temp AS $kl$"
					" DECLARE"
					"  snapshot_source integer;"
					"  gold_source integer;"
					" BEGIN"
					"  IF $1 IS NULL THEN RAISE EXCEPTION 'snapshot_id must not be null'"
					"   USING ERRCODE = 'null_value_not_allowed',"
					"   HINT = 'kafka_lake.snapshots lists every snapshot; bridge() reports the one it publishes.';"
					"  END IF;"
					"  SELECT s.source_id INTO snapshot_source FROM kafka_lake.snapshots s WHERE s.snapshot_id = $1;"
					"  IF NOT FOUND THEN"
					"   RAISE EXCEPTION 'snapshot %% does not exist', $1 USING ERRCODE = 'no_data_found',"
					"   HINT = 'kafka_lake.snapshots lists every snapshot; bridge() reports the one it publishes.';"
					"  END IF;"
					"  SELECT g.source_id INTO gold_source FROM kafka_lake.%s g WHERE g.gold = %s%s;"
					"  IF gold_source IS DISTINCT FROM snapshot_source THEN"
					"   RAISE EXCEPTION 'snapshot %% is of source \"%%\", and gold %s is not of that source',"
					"    $1, (SELECT src.source FROM kafka_lake.sources src WHERE src.source_id = snapshot_source)"
					"    USING ERRCODE = 'invalid_parameter_value',"
					"    HINT = %s;"
					"  END IF;"
					"  RETURN QUERY SELECT * FROM kafka_lake.%s g WHERE g.snapshot_id = $1;"
					" END $kl$",
					replace ? "OR REPLACE " : "", quote_identifier(psprintf("%s_as_of", gold)),
					grel, history ? "gold_definitions" : "golds", quote_literal_cstr(gold),
					history ? " ORDER BY g.version DESC LIMIT 1" : "", gold,
					kl_catalog_has_snapshot_gold_functions() ? "kafka_lake.snapshot_gold_functions($1)" :
					"'kafka_lake.snapshots lists the snapshots of every source.'",
					grel);
}

/*
 * kafka_lake_replace_gold_functions
 *		The update scripts' helper: the <gold>_as_of function of every gold
 *		defined before 1.2 (and before 1.3), replaced by today's.
 */
Datum
kafka_lake_replace_gold_functions(PG_FUNCTION_ARGS)
{
	KlCatalogSave cs;
	List	   *golds = NIL;
	ListCell   *cell;
	MemoryContext caller = CurrentMemoryContext;

	cs = kl_catalog_begin();
	if (SPI_execute("SELECT gold FROM kafka_lake.golds WHERE NOT builtin ORDER BY gold",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.golds");
	for (uint64 i = 0; i < SPI_processed; i++)
		golds = lappend(golds, MemoryContextStrdup(caller, SPI_getvalue(SPI_tuptable->vals[i],
																		SPI_tuptable->tupdesc, 1)));
	foreach(cell, golds)
	{
		const char *fn = quote_identifier(psprintf("%s_as_of", (char *) lfirst(cell)));

		/*
		 * An extension's script replaces only its own objects: the function
		 * becomes a member for the replacement (which keeps its owner and
		 * grants) and is none again after it, so that pg_dump keeps it.
		 */
		if (SPI_execute(psprintf("ALTER EXTENSION kafka_lake ADD FUNCTION kafka_lake.%s(bigint)", fn),
						false, 0) != SPI_OK_UTILITY ||
			SPI_execute(kl_gold_as_of_sql(lfirst(cell), true), false, 0) != SPI_OK_UTILITY ||
			SPI_execute(psprintf("ALTER EXTENSION kafka_lake DROP FUNCTION kafka_lake.%s(bigint)", fn),
						false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not replace kafka_lake.%s_as_of", (char *) lfirst(cell));
	}
	kl_catalog_end(cs);
	PG_RETURN_VOID();
}

/*
 * kl_check_gold_name
 *		A gold's name must leave every other object its name.  A source s
 *		has kafka_lake.s_records, s_events and s_silver, a gold g has g,
 *		g_current, g_as_of(bigint) and g_compute(text), a check c of source
 *		s has s_check_c(text): so a gold may not end in one of those
 *		suffixes, nor hold "_check" where a check's function could meet it
 *		(g || '_' holding "_check_"), and a check's name may not hold
 *		"check_" (kafka_lake_add_check).  Then no gold takes a name that a
 *		source created later needs, and the objects of two golds, or of two
 *		checks, never meet.  ERROR 42939 otherwise.
 */
static void
kl_check_gold_name(const char *gold)
{
	static const char *const suffixes[] = {
		"_records", "_events", "_silver", "_state", "_current", "_as_of", "_compute", "_check", NULL
	};
	int			len = strlen(gold);
	bool		bad = strstr(gold, "_check_") != NULL;

	for (int i = 0; !bad && suffixes[i]; i++)
	{
		int			n = strlen(suffixes[i]);

		bad = len >= n && strcmp(gold + len - n, suffixes[i]) == 0;
	}
	if (bad)
		ereport(ERROR,
				(errcode(ERRCODE_RESERVED_NAME),
				 errmsg("gold name \"%s\" is reserved", gold),
				 errdetail("Names ending in _records, _events, _silver or _state are a source's tables, _current, _as_of and _compute a gold's own objects, and names holding _check_ (or ending in _check) a check's functions."),
				 errhint("Choose another name, for example daily_revenue.")));
}

/*
 * kl_shape_add
 *		One column (name, type as SQL spells it) of a gold's grain and
 *		metrics, in table order: what a new definition of a gold must give
 *		its existing table (kl_check_gold_shape).
 */
static void
kl_shape_add(List **shape, const char *name, const char *type)
{
	char	  **col = palloc(sizeof(char *) * 2);

	col[0] = pstrdup(name);
	col[1] = pstrdup(type);
	*shape = lappend(*shape, col);
}

/*
 * kl_sql_gold_columns
 *		A SQL gold's columns, read by running its query over no rows as the
 *		caller: its grain first (under silver's names and types), then its
 *		metrics (named, of built-in types); appended to the table's columns
 *		and to the compute function's result.  Creates that function and
 *		returns its name.
 */
static char *
kl_sql_gold_columns(const KlLayout *lay, KlGoldDef *g, const char *sql, const char *owner,
					StringInfo cols, StringInfo returns, List **shape)
{
	const char *gold = g->gold;
	char	   *compute;
	TupleDesc	desc;

	kl_grant_silver(lay, psprintf("the SQL of gold \"%s\"", gold));
	desc = kl_probe_sql(lay, sql, false, psprintf("gold \"%s\"", gold));
	if (desc->natts <= g->ngrain)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 desc->natts < g->ngrain ?
				 errmsg("the SQL of gold \"%s\" does not return its grain: it returns %d columns, and the grain has %d fields",
						gold, desc->natts, g->ngrain) :
				 errmsg("the SQL of gold \"%s\" returns no metric after its grain", gold),
				 errhint("Return the grain fields first, in grain order, then the metrics, for example SELECT %s%scount(*) AS events FROM silver%s%s.",
						 g->ngrain ? kl_words((const char *const *) g->grain, g->ngrain) : "",
						 g->ngrain ? ", " : "", g->ngrain ? " GROUP BY " : "",
						 g->ngrain ? kl_words((const char *const *) g->grain, g->ngrain) : "")));
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);
		char	   *name = NameStr(a->attname);
		char	   *type = kl_type_name(a->atttypid, a->atttypmod);

		if (i < g->ngrain)
		{
			const KlBridgeField *f = &lay->fields[g->grain_field[i]];

			if (strcmp(name, f->column) != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
						 errmsg("the SQL of gold \"%s\" does not return its grain: column %d is \"%s\", not grain field \"%s\"",
								gold, i + 1, name, g->grain[i]),
						 strcmp(f->column, f->name) != 0 ?
						 errdetail("Silver holds field \"%s\" in column \"%s\".", f->name, f->column) : 0,
						 errhint("Return the grain fields first, in grain order (%s), under their silver column names, then the metrics.",
								 kl_words((const char *const *) g->grain, g->ngrain))));
			if (a->atttypid != f->sql_typid)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("the SQL of gold \"%s\" returns grain field \"%s\" as %s, and its silver column is %s",
								gold, name, type, f->sql_type),
						 errhint("Return the field as silver has it (no cast).")));
			continue;
		}
		if (!kl_name_is_identifier(name) || strcmp(name, "snapshot_id") == 0 ||
			strcmp(name, "business_date") == 0 || strcmp(name, "closing_status") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("the SQL of gold \"%s\" returns a metric named \"%s\", which cannot be a column of the gold",
							gold, name),
					 errhint("Name each metric with AS: lower-case letters, digits and underscores, other than snapshot_id, business_date and closing_status.")));
		for (int j = 0; j < i; j++)
			if (strcmp(NameStr(TupleDescAttr(desc, j)->attname), name) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("the SQL of gold \"%s\" returns two columns named \"%s\"", gold, name),
						 errhint("Name each metric once.")));
		if (!kl_type_is_builtin(a->atttypid))
		{
			const char *base = kl_builtin_base(a->atttypid);

			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("the SQL of gold \"%s\" returns metric \"%s\" as %s, which is %s: a gold's columns are of PostgreSQL's built-in types only",
							gold, name, type, kl_builtin_type_problem(a->atttypid)),
					 errdetail("Another type's functions (a domain's CHECK, say) would run with the rights of whoever publishes or reads the gold."),
					 base ?
					 errhint("Return it as %s (for example ... ::%s AS %s), and cast to %s where you read the gold.",
							 base, base, quote_identifier(name), type) :
					 errhint("Return it as a built-in type, for example text, numeric or jsonb.")));
		}
		appendStringInfo(cols, ", %s %s", quote_identifier(name), type);
		appendStringInfo(returns, "%s%s %s", returns->len ? ", " : "", quote_identifier(name), type);
		kl_shape_add(shape, name, type);
	}
	compute = psprintf("%s_compute", gold);
	kl_create_definer_function(lay, compute, psprintf("TABLE (%s)", returns->data), "*", sql,
							   psprintf("The SQL of gold %s, run by bridge() with the rights of role %s",
										gold, owner));
	return compute;
}

/*
 * kl_create_gold_table
 *		The gold's table (cols), owned by the extension's owner (inside a
 *		catalog section).
 */
static void
kl_create_gold_table(const KlSource *src, const char *gold, const char *cols, bool all_required)
{
	const char *grel = quote_identifier(gold);

	if (SPI_execute(psprintf("CREATE TABLE kafka_lake.%s (%s)", grel, cols), false, 0) != SPI_OK_UTILITY ||
		(!all_required &&
		 SPI_execute(psprintf("CREATE INDEX ON kafka_lake.%s (snapshot_id)", grel), false, 0) != SPI_OK_UTILITY) ||
		SPI_execute(psprintf("COMMENT ON TABLE kafka_lake.%s IS %s", grel,
							 quote_literal_cstr(psprintf("Gold %s of kafka_lake source %s: the rows of every snapshot; kafka_lake.%s_current shows the current ones",
														 gold, src->source, gold))), false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create gold kafka_lake.%s", grel);
}

/*
 * kl_create_gold_readers
 *		The gold's view of the current rows and its as-of function (replace:
 *		the function exists, a dropped gold's), owned by the extension's
 *		owner; the defining role may read them and the table (inside a
 *		catalog section).
 */
static void
kl_create_gold_readers(const char *gold, const char *owner, bool replace)
{
	const char *grel = quote_identifier(gold);

	if (SPI_execute(psprintf("CREATE VIEW kafka_lake.%s AS"
							 " SELECT src.source, g.*, s.run_id, s.created_at AS published_at"
							 " FROM kafka_lake.snapshots s"
							 " JOIN kafka_lake.%s g ON g.snapshot_id = s.snapshot_id"
							 " JOIN kafka_lake.sources src ON src.source_id = s.source_id"
							 " WHERE s.is_current",
							 quote_identifier(psprintf("%s_current", gold)), grel), false, 0) != SPI_OK_UTILITY ||
		SPI_execute(kl_gold_as_of_sql(gold, replace), false, 0) != SPI_OK_UTILITY ||
		SPI_execute(psprintf("REVOKE ALL ON FUNCTION kafka_lake.%s(bigint) FROM PUBLIC",
							 quote_identifier(psprintf("%s_as_of", gold))), false, 0) != SPI_OK_UTILITY ||
		SPI_execute(psprintf("GRANT SELECT ON kafka_lake.%s, kafka_lake.%s TO %s", grel,
							 quote_identifier(psprintf("%s_current", gold)), quote_identifier(owner)),
					false, 0) != SPI_OK_UTILITY ||
		SPI_execute(psprintf("GRANT EXECUTE ON FUNCTION kafka_lake.%s(bigint) TO %s",
							 quote_identifier(psprintf("%s_as_of", gold)), quote_identifier(owner)),
					false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create gold kafka_lake.%s", grel);
}

/* What the catalog knows of a name before define_gold or add_check */
typedef struct KlPriorDef
{
	bool		current;		/* defined now (golds, quality_checks) */
	bool		retired;		/* only in the history: dropped */
	bool		builtin;
	int32		source_id;		/* of the newest definition */
	int32		version;		/* the newest version */
	char	   *function;		/* its compute or check function (current) */
	char	   *owner;			/* the role that defined it (current) */
} KlPriorDef;

/*
 * kl_prior_row
 *		Fill prior from the first row of the last SPI result, if any.
 */
static bool
kl_prior_row(KlPriorDef *prior, MemoryContext caller)
{
	HeapTuple	t;
	TupleDesc	d = SPI_tuptable->tupdesc;
	bool		isnull;
	char	   *fn;

	if (SPI_processed == 0)
		return false;
	t = SPI_tuptable->vals[0];
	fn = SPI_getvalue(t, d, 4);
	prior->builtin = DatumGetBool(SPI_getbinval(t, d, 1, &isnull));
	prior->source_id = DatumGetInt32(SPI_getbinval(t, d, 2, &isnull));
	prior->version = DatumGetInt32(SPI_getbinval(t, d, 3, &isnull));
	prior->function = fn ? MemoryContextStrdup(caller, fn) : NULL;
	prior->owner = MemoryContextStrdup(caller, SPI_getvalue(t, d, 5));
	return true;
}

/*
 * kl_prior_gold
 *		The current definition of gold (golds), or else the newest of its
 *		history (gold_definitions: a dropped gold).
 */
static void
kl_prior_gold(const char *gold, KlPriorDef *prior)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(gold)};
	KlCatalogSave cs;
	bool		history = kl_catalog_has_definitions();

	memset(prior, 0, sizeof(*prior));
	cs = kl_catalog_begin();
	if (SPI_execute_with_args(psprintf("SELECT g.builtin, coalesce(g.source_id, 0), %s, g.compute, g.owner::text"
									   " FROM kafka_lake.golds g WHERE g.gold = $1",
									   history ? "g.version" : "1"),
							  1, types, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.golds");
	prior->current = kl_prior_row(prior, caller);
	if (!prior->current && history)
	{
		if (SPI_execute_with_args("SELECT d.builtin, coalesce(d.source_id, 0), d.version, NULL::text, d.owner::text"
								  " FROM kafka_lake.gold_definitions d WHERE d.gold = $1"
								  " ORDER BY d.version DESC LIMIT 1",
								  1, types, values, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read kafka_lake.gold_definitions");
		prior->retired = kl_prior_row(prior, caller);
	}
	kl_catalog_end(cs);
}

/*
 * kl_prior_check
 *		The current definition of a check of the source (quality_checks), or
 *		else the newest of its history (check_definitions: dropped).
 */
static void
kl_prior_check(int32 source_id, const char *check, KlPriorDef *prior)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2] = {Int32GetDatum(source_id), CStringGetTextDatum(check)};
	KlCatalogSave cs;
	bool		history = kl_catalog_has_definitions();

	memset(prior, 0, sizeof(*prior));
	cs = kl_catalog_begin();
	if (SPI_execute_with_args(psprintf("SELECT false, c.source_id, %s, c.function, c.owner::text"
									   " FROM kafka_lake.quality_checks c"
									   " WHERE c.source_id = $1 AND c.check_name = $2",
									   history ? "c.version" : "1"),
							  2, types, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.quality_checks");
	prior->current = kl_prior_row(prior, caller);
	if (!prior->current && history)
	{
		if (SPI_execute_with_args("SELECT false, d.source_id, d.version, NULL::text, d.owner::text"
								  " FROM kafka_lake.check_definitions d"
								  " WHERE d.source_id = $1 AND d.check_name = $2"
								  " ORDER BY d.version DESC LIMIT 1",
								  2, types, values, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read kafka_lake.check_definitions");
		prior->retired = kl_prior_row(prior, caller);
	}
	kl_catalog_end(cs);
}

/*
 * kl_shape_words
 *		A gold's columns as "name type, ...".
 */
static char *
kl_shape_words(List *shape)
{
	StringInfoData buf;
	ListCell   *cell;

	initStringInfo(&buf);
	foreach(cell, shape)
	{
		char	  **col = lfirst(cell);

		appendStringInfo(&buf, "%s%s %s", buf.len ? ", " : "", quote_identifier(col[0]), col[1]);
	}
	return buf.len ? buf.data : "no column";
}

/*
 * kl_check_gold_shape
 *		A gold defined again keeps its table, which holds the rows of every
 *		snapshot it published: the new definition must give the same grain
 *		and metric columns (names and types, in order), as CREATE OR REPLACE
 *		FUNCTION keeps its result type.  ERROR 42P17 otherwise.  dropped:
 *		the gold was dropped (the table is what its earlier versions left).
 */
static void
kl_check_gold_shape(const char *gold, List *shape, bool dropped)
{
	Relation	rel = table_open(kl_catalog_relid(gold), AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *have = NIL;
	List	   *attnums = NIL;
	bool		same;

	/* snapshot_id, business_date, the grain and metrics, closing_status */
	for (int i = 2; i < desc->natts - 1; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		if (a->attisdropped)
			continue;
		kl_shape_add(&have, NameStr(a->attname), kl_type_name(a->atttypid, a->atttypmod));
		attnums = lappend_int(attnums, i);
	}
	same = list_length(have) == list_length(shape);
	for (int i = 0; same && i < list_length(shape); i++)
	{
		char	  **want = list_nth(shape, i);
		char	  **col = list_nth(have, i);
		Form_pg_attribute a = TupleDescAttr(desc, list_nth_int(attnums, i));
		Oid			typid;
		int32		typmod;

		kl_resolve_type(want[1], &typid, &typmod);
		same = strcmp(want[0], col[0]) == 0 && typid == a->atttypid && typmod == a->atttypmod;
	}
	table_close(rel, AccessShareLock);
	if (same)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
			 errmsg("gold \"%s\" cannot be defined with other columns than its table kafka_lake.%s has",
					gold, gold),
			 errdetail("The table holds the rows of every snapshot the gold published: after business_date, %s; the new definition gives %s.",
					   kl_shape_words(have), kl_shape_words(shape)),
			 dropped ?
			 errhint("Give the gold its former grain and metric columns, or define the new ones under another name: kafka_lake.%s_as_of() goes on reading the rows the dropped gold published.",
					 gold) :
			 errhint("A new version may compute its columns differently but keeps their names and types. To change them, define the new columns as a gold of another name and drop this one with kafka_lake.drop_gold(): kafka_lake.%s_as_of() goes on reading the rows it published.",
					 gold)));
}

/*
 * kl_record_gold_definition
 *		The history of a gold: the version that ends (redefined) says so,
 *		and the new one is recorded (inside a catalog section).
 */
static void
kl_record_gold_definition(const char *gold, int32 source_id, int32 version, Datum grain,
						  const char *metrics, const char *sql, const char *owner)
{
	Oid			types[7] = {TEXTOID, INT4OID, INT4OID, TEXTARRAYOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[7];
	char		nulls[7] = "       ";

	if (!kl_catalog_has_definitions())
		return;
	values[0] = CStringGetTextDatum(gold);
	values[1] = Int32GetDatum(version);
	values[2] = Int32GetDatum(source_id);
	values[3] = grain;
	values[4] = metrics ? CStringGetTextDatum(metrics) : (Datum) 0;
	nulls[4] = metrics ? ' ' : 'n';
	values[5] = sql ? CStringGetTextDatum(sql) : (Datum) 0;
	nulls[5] = sql ? ' ' : 'n';
	values[6] = CStringGetTextDatum(owner);
	if (SPI_execute_with_args("UPDATE kafka_lake.gold_definitions SET ended_at = pg_catalog.now(), ended_by = 'redefined'"
							  " WHERE gold = $1 AND ended_at IS NULL",
							  1, types, values, nulls, false, 0) != SPI_OK_UPDATE ||
		SPI_execute_with_args("INSERT INTO kafka_lake.gold_definitions (gold, version, source_id, grain, metrics, sql, owner)"
							  " VALUES ($1, $2, $3, $4, $5::pg_catalog.json, $6, $7)",
							  7, types, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the definition of gold %s", gold);
}

/*
 * kafka_lake_define_gold
 *		define_gold(source, gold, grain, metrics, sql): a gold of the
 *		source, published by every bridge of it from now on.  A gold of that
 *		name of the source is defined again: a new version, from the next
 *		snapshot on, with the columns of its table (kl_check_gold_shape);
 *		so is a gold dropped before, whose table kept its rows.
 */
Datum
kafka_lake_define_gold(PG_FUNCTION_ARGS)
{
	KlSource   *src;
	const KlContract *c;
	KlLayout   *lay;
	KlGoldDef  *g = palloc0(sizeof(KlGoldDef));
	char	   *gold;
	char	  **grain;
	int			ngrain;
	char	   *metrics = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	char	   *sql = PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4));
	char	   *compute = NULL;
	StringInfoData cols;
	StringInfoData returns;
	StringInfoData pk;
	List	   *shape = NIL;
	bool		all_required = true;
	bool		known;
	bool		has_table;
	bool		history = kl_catalog_has_definitions();
	char	   *owner = GetUserNameFromId(GetUserId(), false);
	KlPriorDef	prior;
	int32		version;
	KlCatalogSave cs;
	Oid			types[7] = {TEXTOID, INT4OID, TEXTARRAYOID, TEXTOID, TEXTOID, TEXTOID, INT4OID};
	Datum		values[7];
	char		nulls[7] = "       ";

	kl_check_not_null(fcinfo, 0, "source", "Name the source, for example 'orders'.");
	gold = kl_name_arg(fcinfo, 1, "gold", 48, "'daily_revenue'");
	kl_check_not_null(fcinfo, 2, "grain",
					  "Give the grain fields, for example ARRAY['customer_country'] (business_date is always part of it), or ARRAY[]::text[].");
	grain = kl_text_array_cstrings(PG_GETARG_DATUM(2), &ngrain);
	if ((metrics == NULL) == (sql == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("define_gold needs metrics or sql, not %s", metrics ? "both" : "neither"),
				 errhint("Declare the metrics, for example metrics => '{\"revenue\": {\"sum\": \"amount\"}}', or write the gold as a query over silver with sql => '...'.")));
	src = kl_source_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	kl_catalog_lock_source(src);
	c = kl_source_contract(src);
	lay = kl_layout_for(src, &c, 1);
	kl_caller_may_define(src, psprintf("gold \"%s\"", gold));
	kl_check_gold_name(gold);
	kl_prior_gold(gold, &prior);

	/*
	 * A gold of this source (defined, or dropped) is defined again; any
	 * other object of the name, or a gold of another source, keeps it.  A
	 * catalog before 1.3 keeps no versions: a gold is defined once there.
	 */
	known = (prior.current || prior.retired) && !prior.builtin &&
		prior.source_id == src->source_id && history;
	if (strcmp(gold, KL_BUILTIN_GOLD) == 0 || prior.builtin ||
		((prior.current || prior.retired) && !known) ||
		(!known && (kl_name_taken(gold) || kl_name_taken(psprintf("%s_as_of", gold)))) ||
		(!prior.current &&
		 (kl_name_taken(psprintf("%s_current", gold)) || kl_name_taken(psprintf("%s_compute", gold)))))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("gold \"%s\" cannot be defined: kafka_lake already has an object of that name (or of its _current, _as_of or _compute)",
						gold),
				 (prior.current || prior.retired) && !prior.builtin && prior.source_id != src->source_id ?
				 errdetail("It is a gold of another source%s.", prior.retired ? ", dropped: its table keeps the rows it published" : "") : 0,
				 errhint("kafka_lake.golds lists the golds; choose another name.")));
	has_table = known && kl_name_taken(gold);
	version = known ? prior.version + 1 : 1;
	kl_silver_ensure(src, c);

	/* a new version's SQL becomes the compute function: the old one goes */
	if (prior.current && prior.function != NULL)
	{
		cs = kl_catalog_begin();
		if (SPI_execute(psprintf("DROP FUNCTION kafka_lake.%s(text)", quote_identifier(prior.function)),
						false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not drop function kafka_lake.%s", prior.function);
		kl_catalog_end(cs);
	}

	g->gold = gold;
	kl_gold_grain(g, lay, grain, ngrain);
	for (int i = 0; i < g->ngrain; i++)
		all_required &= lay->fields[g->grain_field[i]].required;

	initStringInfo(&cols);
	initStringInfo(&returns);
	initStringInfo(&pk);
	appendStringInfoString(&cols, "snapshot_id bigint NOT NULL REFERENCES kafka_lake.snapshots ON DELETE CASCADE, business_date date NOT NULL");
	appendStringInfoString(&pk, "snapshot_id, business_date");
	for (int i = 0; i < g->ngrain; i++)
	{
		const KlBridgeField *f = &lay->fields[g->grain_field[i]];

		appendStringInfo(&cols, ", %s %s%s", quote_identifier(f->column), f->sql_type,
						 f->required ? " NOT NULL" : "");
		appendStringInfo(&returns, "%s%s %s", i ? ", " : "", quote_identifier(f->column), f->sql_type);
		appendStringInfo(&pk, ", %s", quote_identifier(f->column));
		kl_shape_add(&shape, f->column, f->sql_type);
	}

	if (sql != NULL)
		compute = kl_sql_gold_columns(lay, g, sql, owner, &cols, &returns, &shape);
	else
	{
		kl_gold_metrics(g, lay, metrics);
		for (int i = 0; i < g->nmetrics; i++)
		{
			appendStringInfo(&cols, ", %s %s", quote_identifier(g->metrics[i].name),
							 g->metrics[i].sql_type);
			kl_shape_add(&shape, g->metrics[i].name, g->metrics[i].sql_type);
		}
	}
	appendStringInfoString(&cols, ", closing_status text NOT NULL CHECK (closing_status IN ('provisional', 'closed', 'reopened'))");
	if (all_required)
		appendStringInfo(&cols, ", PRIMARY KEY (%s)", pk.data);
	if (has_table)
		kl_check_gold_shape(gold, shape, prior.retired);

	/* the table, its view of the current rows, its as-of function, as the owner */
	cs = kl_catalog_begin();
	if (!has_table)
		kl_create_gold_table(src, gold, cols.data, all_required);
	if (prior.current)
	{
		/* the view and the as-of function stay; the new owner may read them */
		if (SPI_execute(psprintf("GRANT SELECT ON kafka_lake.%s, kafka_lake.%s TO %s", quote_identifier(gold),
								 quote_identifier(psprintf("%s_current", gold)), quote_identifier(owner)),
						false, 0) != SPI_OK_UTILITY ||
			SPI_execute(psprintf("GRANT EXECUTE ON FUNCTION kafka_lake.%s(bigint) TO %s",
								 quote_identifier(psprintf("%s_as_of", gold)), quote_identifier(owner)),
						false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not grant gold kafka_lake.%s", gold);
	}
	else
		kl_create_gold_readers(gold, owner, kl_name_taken(psprintf("%s_as_of", gold)));

	values[0] = CStringGetTextDatum(gold);
	values[1] = Int32GetDatum(src->source_id);
	values[2] = PG_GETARG_DATUM(2);
	if (metrics)
		values[3] = CStringGetTextDatum(metrics);
	else
		nulls[3] = 'n';
	if (sql)
		values[4] = CStringGetTextDatum(sql);
	else
		nulls[4] = 'n';
	if (compute)
		values[5] = CStringGetTextDatum(compute);
	else
		nulls[5] = 'n';
	values[6] = Int32GetDatum(version);
	if (prior.current)
	{
		if (SPI_execute_with_args(psprintf("UPDATE kafka_lake.golds SET grain = $3, metrics = $4::pg_catalog.json,"
										   " sql = $5, compute = $6, owner = %s, version = $7, created_at = pg_catalog.now()"
										   " WHERE gold = $1 AND source_id = $2",
										   quote_literal_cstr(owner)),
								  7, types, values, nulls, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not record gold %s", gold);
	}
	else if (SPI_execute_with_args(psprintf("INSERT INTO kafka_lake.golds (gold, source_id, grain, metrics, sql, compute, owner%s)"
											" VALUES ($1, $2, $3, $4::pg_catalog.json, $5, $6, %s%s)",
											history ? ", version" : "", quote_literal_cstr(owner),
											history ? ", $7" : ""),
								   history ? 7 : 6, types, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record gold %s", gold);
	kl_record_gold_definition(gold, src->source_id, version, PG_GETARG_DATUM(2), metrics, sql, owner);
	kl_catalog_end(cs);
	PG_RETURN_VOID();
}

/*
 * kl_record_check_definition
 *		The history of a check: the version that ends (redefined) says so,
 *		and the new one is recorded (inside a catalog section).
 */
static void
kl_record_check_definition(int32 source_id, const char *check, int32 version, const char *sql,
						   const char *owner)
{
	Oid			types[5] = {INT4OID, TEXTOID, INT4OID, TEXTOID, TEXTOID};
	Datum		values[5];

	if (!kl_catalog_has_definitions())
		return;
	values[0] = Int32GetDatum(source_id);
	values[1] = CStringGetTextDatum(check);
	values[2] = Int32GetDatum(version);
	values[3] = CStringGetTextDatum(sql);
	values[4] = CStringGetTextDatum(owner);
	if (SPI_execute_with_args("UPDATE kafka_lake.check_definitions SET ended_at = pg_catalog.now(), ended_by = 'redefined'"
							  " WHERE source_id = $1 AND check_name = $2 AND ended_at IS NULL",
							  2, types, values, NULL, false, 0) != SPI_OK_UPDATE ||
		SPI_execute_with_args("INSERT INTO kafka_lake.check_definitions (source_id, check_name, version, sql, owner)"
							  " VALUES ($1, $2, $3, $4, $5)",
							  5, types, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the definition of check %s", check);
}

/*
 * kl_builtin_check_name
 *		Is check one of the bridge's own checks, or named like them?
 */
static bool
kl_builtin_check_name(const char *check)
{
	for (int i = 0; kl_reserved_checks[i]; i++)
		if (strcmp(kl_reserved_checks[i], check) == 0)
			return true;
	return strncmp(check, "accepted_values_", 16) == 0 || strncmp(check, "conservation_", 13) == 0;
}

/*
 * kafka_lake_add_check
 *		add_check(source, check_name, sql): a check of every bridge of the
 *		source from now on; the rows sql returns are its violations.  A
 *		check of that name of the source is defined again: a new version,
 *		from the next run on.
 */
Datum
kafka_lake_add_check(PG_FUNCTION_ARGS)
{
	KlSource   *src;
	const KlContract *c;
	KlLayout   *lay;
	char	   *check;
	char	   *sql;
	char	   *fn;
	char	   *owner = GetUserNameFromId(GetUserId(), false);
	KlPriorDef	prior;
	int32		version;
	KlCatalogSave cs;
	Oid			types[6] = {INT4OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID};
	Datum		values[6];
	bool		history = kl_catalog_has_definitions();

	kl_check_not_null(fcinfo, 0, "source", "Name the source, for example 'orders'.");
	check = kl_name_arg(fcinfo, 1, "check_name", 48, "'no_free_orders'");
	kl_check_not_null(fcinfo, 2, "sql",
					  "Write a query over silver whose rows are the violations, for example SELECT order_id FROM silver WHERE amount = 0.");
	sql = text_to_cstring(PG_GETARG_TEXT_PP(2));
	src = kl_source_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	kl_catalog_lock_source(src);
	c = kl_source_contract(src);
	lay = kl_layout_for(src, &c, 1);
	kl_caller_may_define(src, psprintf("check \"%s\"", check));
	for (int i = 0; kl_reserved_checks[i]; i++)
		if (strcmp(kl_reserved_checks[i], check) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("check \"%s\" is one of the bridge's own checks", check),
					 errhint("Choose another name.")));
	if (strstr(check, "check_") != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_RESERVED_NAME),
				 errmsg("check name \"%s\" is reserved", check),
				 errdetail("A check's function is kafka_lake.<source>_check_<check>: a check name holding check_ could give two sources' checks one function."),
				 errhint("Choose a name without check_, for example no_free_orders.")));
	if (strncmp(check, "accepted_values_", 16) == 0 || strncmp(check, "conservation_", 13) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("check name \"%s\" begins like the bridge's own checks", check),
				 errhint("Names beginning with accepted_values_ or conservation_ are the bridge's; choose another name.")));
	fn = psprintf("%s_check_%s", src->source, check);
	if (strlen(fn) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("check name \"%s\" is too long for source \"%s\"", check, src->source),
				 errhint("The function kafka_lake.<source>_check_<check> must fit %d bytes.",
						 NAMEDATALEN - 1)));
	kl_prior_check(src->source_id, check, &prior);
	if ((!prior.current && kl_name_taken(fn)) || (prior.current && !history))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("source \"%s\" already has a check \"%s\"", src->source, check),
				 errhint("kafka_lake.quality_checks lists the checks; choose another name.")));
	version = (prior.current || prior.retired) ? prior.version + 1 : 1;
	kl_silver_ensure(src, c);
	kl_grant_silver(lay, psprintf("check \"%s\"", check));
	(void) kl_probe_sql(lay, sql, true, psprintf("check \"%s\"", check));

	/* a new version's SQL becomes the check's function: the old one goes */
	if (prior.current)
	{
		cs = kl_catalog_begin();
		if (SPI_execute(psprintf("DROP FUNCTION kafka_lake.%s(text)", quote_identifier(prior.function)),
						false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not drop function kafka_lake.%s", prior.function);
		kl_catalog_end(cs);
	}
	kl_create_definer_function(lay, fn, "SETOF text", "q::text", sql,
							   psprintf("Check %s of kafka_lake source %s: the rows are its violations; run by bridge() with the rights of role %s",
										check, src->source, owner));

	values[0] = Int32GetDatum(src->source_id);
	values[1] = CStringGetTextDatum(check);
	values[2] = CStringGetTextDatum(sql);
	values[3] = CStringGetTextDatum(fn);
	values[4] = CStringGetTextDatum(owner);
	values[5] = Int32GetDatum(version);
	cs = kl_catalog_begin();
	if (prior.current)
	{
		if (SPI_execute_with_args("UPDATE kafka_lake.quality_checks SET sql = $3, function = $4, owner = $5,"
								  " version = $6, created_at = pg_catalog.now()"
								  " WHERE source_id = $1 AND check_name = $2",
								  6, types, values, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not record check %s", check);
	}
	else if (SPI_execute_with_args(history ?
								   "INSERT INTO kafka_lake.quality_checks (source_id, check_name, sql, function, owner, version)"
								   " VALUES ($1, $2, $3, $4, $5, $6)" :
								   "INSERT INTO kafka_lake.quality_checks (source_id, check_name, sql, function, owner)"
								   " VALUES ($1, $2, $3, $4, $5)",
								   history ? 6 : 5, types, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record check %s", check);
	kl_record_check_definition(src->source_id, check, version, sql, owner);
	kl_catalog_end(cs);
	PG_RETURN_VOID();
}

/*
 * kl_caller_may_drop
 *		May the calling role drop a gold or check (what) that owner defined?
 *		The role that defined it (or a member of it), a role that may define
 *		golds and checks of the source now (as kl_caller_may_define: SELECT
 *		and TRIGGER on kafka_lake.<source>_records) and a superuser may;
 *		ERROR 42501 otherwise.
 */
static void
kl_caller_may_drop(const KlSource *src, const char *what, const char *owner)
{
	Oid			role = get_role_oid(owner, true);
	char	   *relname = psprintf("%s_records", src->source);
	Oid			records = get_relname_relid(relname, get_namespace_oid("kafka_lake", false));

	if (superuser() || (OidIsValid(role) && has_privs_of_role(GetUserId(), role)))
		return;
	if (OidIsValid(records) &&
		pg_class_aclcheck(records, GetUserId(), ACL_SELECT) == ACLCHECK_OK &&
		pg_class_aclcheck(records, GetUserId(), ACL_TRIGGER) == ACLCHECK_OK)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("role \"%s\" may not drop %s of source \"%s\"",
					GetUserNameFromId(GetUserId(), false), what, src->source),
			 errdetail("Role \"%s\" defined it. The role that defined it, a role that may define golds and checks of the source (SELECT and TRIGGER on kafka_lake.%s) and a superuser may drop it.",
					   owner, quote_identifier(relname)),
			 errhint("Have role \"%s\" drop it, or have the source's owner grant SELECT, TRIGGER ON kafka_lake.%s.",
					 owner, quote_identifier(relname))));
}

/*
 * kafka_lake_drop_gold
 *		drop_gold(source, gold): the gold's definition goes (its history
 *		says 'dropped'), with its view <gold>_current and, for a SQL gold,
 *		its compute function; later bridges of the source publish it no
 *		more.  Its table keeps the rows of every snapshot it published, and
 *		<gold>_as_of() goes on reading them: gold rows never change once
 *		written.  A later define_gold() of the name, for the same source,
 *		takes the table back if its columns are the same.
 */
Datum
kafka_lake_drop_gold(PG_FUNCTION_ARGS)
{
	KlSource   *src;
	char	   *gold;
	KlPriorDef	prior;
	KlCatalogSave cs;
	Oid			types[1] = {TEXTOID};
	Datum		values[1];

	kl_check_not_null(fcinfo, 0, "source", "Name the source, for example 'orders'.");
	kl_check_not_null(fcinfo, 1, "gold", "Name the gold, for example 'daily_revenue'; kafka_lake.golds lists them.");
	src = kl_source_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	gold = text_to_cstring(PG_GETARG_TEXT_PP(1));
	kl_catalog_lock_source(src);
	if (strcmp(gold, KL_BUILTIN_GOLD) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("gold \"%s\" is built in and cannot be dropped", gold),
				 errdetail("It is the seed's gold of every machine_event_v1 source, computed from the library's own definition."),
				 errhint("Only the golds define_gold() defined can be dropped; kafka_lake.golds lists them (builtin is false).")));
	kl_prior_gold(gold, &prior);
	if (!prior.current || prior.source_id != src->source_id)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("source \"%s\" has no gold \"%s\"", src->source, gold),
				 prior.retired && prior.source_id == src->source_id ?
				 errdetail("It was dropped; its table kafka_lake.%s keeps the rows it published.", gold) : 0,
				 errhint("kafka_lake.golds lists the golds of every source.")));
	kl_caller_may_drop(src, psprintf("gold \"%s\"", gold), prior.owner);

	values[0] = CStringGetTextDatum(gold);
	cs = kl_catalog_begin();
	if (SPI_execute(psprintf("DROP VIEW IF EXISTS kafka_lake.%s", quote_identifier(psprintf("%s_current", gold))),
					false, 0) != SPI_OK_UTILITY ||
		(prior.function != NULL &&
		 SPI_execute(psprintf("DROP FUNCTION IF EXISTS kafka_lake.%s(text)", quote_identifier(prior.function)),
					 false, 0) != SPI_OK_UTILITY))
		elog(ERROR, "could not drop the objects of gold %s", gold);
	if (SPI_execute_with_args("DELETE FROM kafka_lake.golds WHERE gold = $1",
							  1, types, values, NULL, false, 0) != SPI_OK_DELETE ||
		SPI_execute_with_args("UPDATE kafka_lake.gold_definitions SET ended_at = pg_catalog.now(), ended_by = 'dropped'"
							  " WHERE gold = $1 AND ended_at IS NULL",
							  1, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not forget gold %s", gold);
	kl_catalog_end(cs);
	PG_RETURN_VOID();
}

/*
 * kafka_lake_drop_check
 *		drop_check(source, check_name): the check's definition goes (its
 *		history says 'dropped') with its function; later bridges of the
 *		source run it no more.  The results it gave stay in
 *		kafka_lake.quality_results.
 */
Datum
kafka_lake_drop_check(PG_FUNCTION_ARGS)
{
	KlSource   *src;
	char	   *check;
	KlPriorDef	prior;
	KlCatalogSave cs;
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2];

	kl_check_not_null(fcinfo, 0, "source", "Name the source, for example 'orders'.");
	kl_check_not_null(fcinfo, 1, "check_name", "Name the check, for example 'no_free_orders'; kafka_lake.quality_checks lists them.");
	src = kl_source_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	check = text_to_cstring(PG_GETARG_TEXT_PP(1));
	kl_catalog_lock_source(src);
	if (kl_builtin_check_name(check))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("check \"%s\" is one of the bridge's own checks and cannot be dropped", check),
				 errdetail("The bridge's own checks come from the source's contract and its golds."),
				 errhint("Only the checks add_check() added can be dropped; kafka_lake.quality_checks lists them.")));
	kl_prior_check(src->source_id, check, &prior);
	if (!prior.current)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("source \"%s\" has no check \"%s\"", src->source, check),
				 prior.retired ? errdetail("It was dropped before.") : 0,
				 errhint("kafka_lake.quality_checks lists the checks of every source.")));
	kl_caller_may_drop(src, psprintf("check \"%s\"", check), prior.owner);

	values[0] = Int32GetDatum(src->source_id);
	values[1] = CStringGetTextDatum(check);
	cs = kl_catalog_begin();
	if (SPI_execute(psprintf("DROP FUNCTION IF EXISTS kafka_lake.%s(text)", quote_identifier(prior.function)),
					false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not drop the function of check %s", check);
	if (SPI_execute_with_args("DELETE FROM kafka_lake.quality_checks WHERE source_id = $1 AND check_name = $2",
							  2, types, values, NULL, false, 0) != SPI_OK_DELETE ||
		SPI_execute_with_args("UPDATE kafka_lake.check_definitions SET ended_at = pg_catalog.now(), ended_by = 'dropped'"
							  " WHERE source_id = $1 AND check_name = $2 AND ended_at IS NULL",
							  2, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not forget check %s", check);
	kl_catalog_end(cs);
	PG_RETURN_VOID();
}

/*
 * kl_bridge_drop_definitions
 *		drop_source(): the source's golds (tables, views, functions; those
 *		of the golds dropped before too), its checks' functions and its
 *		silver table go with it.
 */
void
kl_bridge_drop_definitions(int32 source_id, const char *source)
{
	KlCatalogSave cs;
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(source_id)};
	List	   *stmts = NIL;
	ListCell   *cell;
	Oid			nsp;

	if (!kl_catalog_has_golds())
		return;
	cs = kl_catalog_begin();
	if (SPI_execute_with_args(psprintf("SELECT pg_catalog.format('DROP VIEW IF EXISTS kafka_lake.%%I', gold || '_current'),"
									   " pg_catalog.format('DROP FUNCTION IF EXISTS kafka_lake.%%I(bigint)', gold || '_as_of'),"
									   " pg_catalog.format('DROP TABLE IF EXISTS kafka_lake.%%I', gold),"
									   " CASE WHEN compute IS NOT NULL THEN"
									   "   pg_catalog.format('DROP FUNCTION IF EXISTS kafka_lake.%%I(text)', compute) END"
									   " FROM kafka_lake.golds WHERE source_id = $1"
									   " UNION ALL"
									   " SELECT pg_catalog.format('DROP FUNCTION IF EXISTS kafka_lake.%%I(text)', function),"
									   "   NULL, NULL, NULL FROM kafka_lake.quality_checks WHERE source_id = $1"
									   "%s",
									   kl_catalog_has_definitions() ?
									   " UNION ALL"
									   " SELECT NULL, pg_catalog.format('DROP FUNCTION IF EXISTS kafka_lake.%I(bigint)', d.gold || '_as_of'),"
									   "   pg_catalog.format('DROP TABLE IF EXISTS kafka_lake.%I', d.gold), NULL"
									   " FROM (SELECT DISTINCT h.gold FROM kafka_lake.gold_definitions h"
									   "        WHERE h.source_id = $1 AND h.gold NOT IN"
									   "              (SELECT g.gold FROM kafka_lake.golds g WHERE g.source_id = $1)) d" : ""),
							  1, types, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.golds");
	for (uint64 i = 0; i < SPI_processed; i++)
		for (int col = 1; col <= 4; col++)
		{
			char	   *s = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, col);

			if (s)
				stmts = lappend(stmts, s);
		}
	nsp = get_namespace_oid("kafka_lake", false);
	{
		char	   *name = psprintf("%s_state", source);
		Oid			state = get_relname_relid(name, nsp);

		/* an entity stream's state view, which reads silver */
		if (OidIsValid(state) && get_rel_relkind(state) == RELKIND_VIEW)
			stmts = lappend(stmts, psprintf("DROP VIEW kafka_lake.%s", quote_identifier(name)));
	}
	if (OidIsValid(get_relname_relid(psprintf("%s_silver", source), nsp)))
		stmts = lappend(stmts, psprintf("DROP TABLE kafka_lake.%s",
										quote_identifier(psprintf("%s_silver", source))));
	foreach(cell, stmts)
		if (SPI_execute(lfirst(cell), false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not run: %s", (char *) lfirst(cell));
	if (SPI_execute_with_args("DELETE FROM kafka_lake.golds WHERE source_id = $1",
							  1, types, values, NULL, false, 0) != SPI_OK_DELETE ||
		SPI_execute_with_args("DELETE FROM kafka_lake.quality_checks WHERE source_id = $1",
							  1, types, values, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not forget the golds of source %s", source);
	kl_catalog_end(cs);
}
