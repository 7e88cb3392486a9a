/*-------------------------------------------------------------------------
 *
 * contract_catalog.c
 *	  Contracts in the catalog: kafka_lake.contracts and the compiled
 *	  contracts a backend keeps, create_contract(), alter_source(), and the
 *	  typed foreign table kafka_lake.<source>_events.
 *
 * VERSIONS, AND THE CACHE
 *
 * A contract that judged a batch never changes: create_contract() of a
 * new name is version 1, of the very definition the latest version has
 * (normalised: kl_contract_normalize) that version again (so that a script
 * can run twice), of another definition the next version.  A row of
 * kafka_lake.contracts is never updated, so the compiled form of
 * (contract, version) can be kept for the life of the backend; it is
 * still checked against the stored definition at each lookup (one query
 * per land() call), because DROP EXTENSION and CREATE EXTENSION start the
 * versions over.  The built-ins are compiled from their text in
 * contract_define.c, without a query, also in a database whose catalog
 * predates kafka_lake.contracts.  create_contract() takes a lock on the
 * table that serialises it against itself only (SHARE ROW EXCLUSIVE:
 * readers and land() are not blocked), so two sessions cannot give one
 * version twice.
 *
 * THE TYPED TABLE
 *
 * <source>_events is an ordinary kafka_lake foreign table (fdw.c) of the
 * source's accepted events (OPTIONS status 'accepted'): the coordinates
 * topic, partition, "offset", key, timestamp_ms, batch_id, business_date,
 * event_id (when the contract has one), contract, contract_version, then a
 * column per contract field in the contract's "columns" order, of the
 * field's SQL type, reading the field by the column option "field" (so a
 * field called "status" or "key" reads the field).  A field whose name is
 * one of the coordinates' gets the column event_<name>; the event_id and
 * business_date fields of a contract whose event holds them under those
 * names are the coordinate columns themselves.  It belongs to the
 * extension's owner like <source>_records, and SELECT on it is what lets a
 * role read it (options.c).
 *
 * alter_source() moves a source to another contract (or version) for what
 * it lands from then on, and brings the typed table along: columns for new
 * fields are added; a column whose field changes type is kept when its type
 * reads the new values too (text and jsonb read any), changed when the new
 * type reads the old values too (bigint to numeric, anything to text), and
 * otherwise the call fails (42804) before anything changed: the table reads
 * batches of both versions.  Columns of fields the new version lacks stay
 * (they are NULL in its events).
 *
 * IDENTIFICATION
 *	  src/kl_catalog/contract_catalog.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "base/args.h"
#include "contract/contract.h"
#include "contract/contract_define.h"
#include "format/batch_format.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/avro_contract.h"
#include "kl_catalog/contract_catalog.h"

PG_FUNCTION_INFO_V1(kafka_lake_create_contract);
PG_FUNCTION_INFO_V1(kafka_lake_alter_source);
PG_FUNCTION_INFO_V1(kafka_lake_create_events_table);

/* One compiled contract of the backend */
typedef struct KlContractKey
{
	char		name[NAMEDATALEN];
	int32		version;
} KlContractKey;

typedef struct KlContractEntry
{
	KlContractKey key;
	KlContract *contract;
	MemoryContext cxt;
} KlContractEntry;

static HTAB *kl_contract_cache = NULL;

/*
 * kl_spi
 *		Run a statement of this file; ERROR unless it returns expected.
 */
static void
kl_spi(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls,
	   bool read_only, int expected)
{
	int			rc = SPI_execute_with_args(sql, nargs, types, values, nulls, read_only, 0);

	if (rc != expected)
		elog(ERROR, "unexpected SPI result %s for: %s", SPI_result_code_string(rc), sql);
}

/*
 * kl_unknown_contract
 *		ERROR 22023 for a contract (or version) that does not exist.
 */
static void
kl_unknown_contract(const char *name, int32 version)
{
	if (version > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("contract \"%s\" has no version %d", name, version),
				 errhint("kafka_lake.contracts lists the versions of every contract; leave contract_version out for the latest.")));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown contract \"%s\"", name),
			 kl_catalog_has_contracts() ?
			 errhint("Define it with kafka_lake.create_contract(); kafka_lake.contracts lists the contracts (built in: machine_event_v1, json_object, raw).") :
			 errhint("This database knows the built-in contract machine_event_v1 only until ALTER EXTENSION kafka_lake UPDATE.")));
}

/*
 * kl_cached_contract
 *		The compiled (name, version) of that definition, compiled now if the
 *		backend has not, or had another definition under that key.
 */
static const KlContract *
kl_cached_contract(const char *name, int32 version, const char *definition, bool builtin)
{
	KlContractKey key;
	KlContractEntry *e;
	bool		found;

	if (kl_contract_cache == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(KlContractKey);
		ctl.entrysize = sizeof(KlContractEntry);
		ctl.hcxt = CacheMemoryContext;
		kl_contract_cache = hash_create("kafka_lake contracts", 16, &ctl,
										HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	memset(&key, 0, sizeof(key));
	strlcpy(key.name, name, sizeof(key.name));
	key.version = version;
	e = hash_search(kl_contract_cache, &key, HASH_ENTER, &found);
	if (found && e->contract != NULL && strcmp(e->contract->definition, definition) == 0)
	{
		kl_contract_prepare();
		return e->contract;
	}
	if (found && e->cxt != NULL)
		MemoryContextDelete(e->cxt);
	e->contract = NULL;
	e->cxt = NULL;
	PG_TRY();
	{
		MemoryContext cxt = AllocSetContextCreate(CacheMemoryContext, "kafka_lake contract",
												  ALLOCSET_SMALL_SIZES);

		e->cxt = cxt;
		if (!builtin && kl_definition_is_avro(definition))
			e->contract = kl_avro_contract_compile(name, version, definition, false, cxt);
		else
			e->contract = kl_contract_compile(name, version, definition, strlen(definition),
											  builtin, cxt);
	}
	PG_CATCH();
	{
		if (e->cxt)
			MemoryContextDelete(e->cxt);
		hash_search(kl_contract_cache, &key, HASH_REMOVE, NULL);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return e->contract;
}

/*
 * kl_contract_get
 *		The compiled contract (name, version); version 0: the latest.
 *		ERROR 22023 when there is none.
 */
const KlContract *
kl_contract_get(const char *name, int32 version)
{
	const char *builtin = kl_builtin_definition(name);
	KlCatalogSave cs;
	Oid			types[2] = {TEXTOID, INT4OID};
	Datum		values[2] = {CStringGetTextDatum(name), Int32GetDatum(version)};
	char	   *definition;
	int32		found_version;
	bool		isnull;

	/* a catalog from before contracts knows machine_event_v1 only */
	if (!kl_catalog_has_contracts() && strcmp(name, KL_MACHINE_EVENT_V1) != 0)
		kl_unknown_contract(name, 0);
	if (builtin != NULL)
	{
		if (version > 1)
			kl_unknown_contract(name, version);
		return kl_cached_contract(name, 1, builtin, true);
	}

	cs = kl_catalog_begin();
	kl_spi("SELECT version, definition::text FROM kafka_lake.contracts"
		   " WHERE contract = $1 AND ($2 = 0 OR version = $2)"
		   " ORDER BY version DESC LIMIT 1",
		   2, types, values, NULL, true, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		kl_catalog_end(cs);
		kl_unknown_contract(name, version);
	}
	found_version = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	definition = MemoryContextStrdup(TopTransactionContext,
									 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2));
	kl_catalog_end(cs);
	return kl_cached_contract(name, found_version, definition, false);
}

/*
 * kl_source_contract
 *		The contract a source lands with now.
 */
const KlContract *
kl_source_contract(const KlSource *src)
{
	return kl_contract_get(src->contract, src->contract_version);
}

/*
 * kafka_lake_create_contract
 *		create_contract(contract, definition json) returns the version
 *		(1.1 to 1.2; 1.3's is source.c's, which resolves a registry
 *		subject first).
 */
Datum
kafka_lake_create_contract(PG_FUNCTION_ARGS)
{
	kl_check_not_null(fcinfo, 0, "contract", "Name the contract, for example orders_v1.");
	kl_check_not_null(fcinfo, 1, "definition",
					  "Give the definition as json, for example '{\"type\": \"object\"}'.");
	PG_RETURN_INT32(kl_catalog_create_contract(text_to_cstring(PG_GETARG_TEXT_PP(0)),
											   text_to_cstring(PG_GETARG_TEXT_PP(1))));
}

/*
 * kl_catalog_create_contract
 *		Check a definition and store it; returns its version.
 */
int32
kl_catalog_create_contract(const char *name, const char *definition)
{
	char	   *normalized;
	KlCatalogSave cs;
	Oid			types[3] = {TEXTOID, INT4OID, TEXTOID};
	Datum		values[3];
	int32		version = 1;
	MemoryContext check_cxt;

	kl_check_contract_name(name);
	if (kl_builtin_definition(name) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_RESERVED_NAME),
				 errmsg("contract \"%s\" is built in and cannot be redefined", name),
				 errhint("Create a contract of another name, for example %s_custom.", name)));
	if (!kl_catalog_has_contracts())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this database's kafka_lake catalog has no contracts"),
				 errhint("Run ALTER EXTENSION kafka_lake UPDATE first.")));

	/* check it (every error names the bad key), then forget the compiled form */
	check_cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_lake contract check",
									  ALLOCSET_DEFAULT_SIZES);
	if (kl_definition_is_avro(definition))
		(void) kl_avro_contract_compile(name, 1, definition, true, check_cxt);
	else
		kl_contract_check(name, definition, check_cxt);
	MemoryContextDelete(check_cxt);
	normalized = kl_contract_normalize(definition, strlen(definition));

	cs = kl_catalog_begin();
	kl_spi("LOCK TABLE kafka_lake.contracts IN SHARE ROW EXCLUSIVE MODE",
		   0, NULL, NULL, NULL, false, SPI_OK_UTILITY);
	values[0] = CStringGetTextDatum(name);
	{
		/* the latest version as committed now (the lock waited for others) */
		SPIPlanPtr	plan = SPI_prepare("SELECT version, definition::text FROM kafka_lake.contracts"
									   " WHERE contract = $1 ORDER BY version DESC LIMIT 1",
									   1, types);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed");
		CommandCounterIncrement();
		if (SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(), InvalidSnapshot,
								 true, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read kafka_lake.contracts");
		if (SPI_processed > 0)
		{
			bool		isnull;
			int32		latest = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
															 SPI_tuptable->tupdesc, 1, &isnull));
			char	   *stored = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);

			if (strcmp(kl_contract_normalize(stored, strlen(stored)), normalized) == 0)
			{
				kl_catalog_end(cs);
				return latest;
			}
			version = latest + 1;
		}
	}
	values[1] = Int32GetDatum(version);
	values[2] = CStringGetTextDatum(definition);
	kl_spi("INSERT INTO kafka_lake.contracts (contract, version, definition, builtin)"
		   " VALUES ($1, $2, $3::json, false)",
		   3, types, values, NULL, false, SPI_OK_INSERT);
	kl_catalog_end(cs);
	return version;
}

/* ----------------------------------------------------------------
 *		The typed table
 * ----------------------------------------------------------------
 */

/* One column of <source>_events */
typedef struct KlEventsColumn
{
	char	   *name;
	const char *type;
	const char *field;			/* NULL: a coordinate column */
	const KlSchema *schema;		/* fields */
} KlEventsColumn;

/*
 * kl_field_kinds
 *		The KL_READS_* values of a field can need.
 */
int
kl_field_kinds(const KlSchema *s)
{
	int			k = 0;

	if (s->types & KL_TYPE_STRING)
		k |= s->format == KL_FORMAT_DATE ? KL_READS_DATE :
			s->format == KL_FORMAT_DATE_TIME ? KL_READS_DATE_TIME : KL_READS_STRING;
	if (s->types & KL_TYPE_NUMBER)
		k |= KL_READS_NUMBER;
	else if (s->types & KL_TYPE_INTEGER)
		k |= KL_READS_INTEGER;
	if (s->types & KL_TYPE_BOOLEAN)
		k |= KL_READS_BOOLEAN;
	if (s->types & (KL_TYPE_OBJECT | KL_TYPE_ARRAY))
		k |= KL_READS_JSON;
	return k;
}

/*
 * kl_type_reads
 *		The KL_READS_* a column type reads (0: only what it was made for).
 */
int
kl_type_reads(const char *type)
{
	if (strcmp(type, "text") == 0 || strcmp(type, "jsonb") == 0 || strcmp(type, "json") == 0)
		return KL_READS_ALL;
	if (strncmp(type, "numeric", 7) == 0)
		return KL_READS_INTEGER | KL_READS_NUMBER;
	if (strcmp(type, "bigint") == 0)
		return KL_READS_INTEGER;
	if (strcmp(type, "boolean") == 0)
		return KL_READS_BOOLEAN;
	if (strcmp(type, "date") == 0)
		return KL_READS_DATE;
	if (strcmp(type, "timestamp with time zone") == 0)
		return KL_READS_DATE_TIME;
	return 0;
}

/*
 * kl_events_columns
 *		The columns of <source>_events for a contract.
 */
static List *
kl_events_columns(const KlContract *c)
{
	static const char *const coords[][2] = {
		{"topic", "text"}, {"partition", "integer"}, {"offset", "bigint"}, {"key", "text"},
		{"timestamp_ms", "bigint"}, {"batch_id", "text"}, {"business_date", "date"},
		{"event_id", "text"}, {"contract", "text"}, {"contract_version", "integer"},
		{"raw_value", "text"}
	};
	List	   *cols = NIL;
	ListCell   *cell;

	kl_contract_check_sql_types(c);
	for (int i = 0; i < (int) lengthof(coords); i++)
	{
		KlEventsColumn *col;

		if (strcmp(coords[i][0], "event_id") == 0 && c->nevent_id == 0)
			continue;
		if (strcmp(coords[i][0], "raw_value") == 0 && !c->raw)
			continue;
		col = palloc0(sizeof(KlEventsColumn));
		col->name = pstrdup(coords[i][0]);
		col->type = coords[i][1];
		cols = lappend(cols, col);
	}
	for (int i = 0; i < c->ncolumns; i++)
	{
		const KlSchema *s = &c->top.props[c->columns[i]];
		KlEventsColumn *col;
		char	   *name;
		bool		taken;
		int			n = 1;

		/* an event that holds its event_id and business_date under those names */
		if (!c->writes_ids &&
			(c->columns[i] == c->event_id_prop || c->columns[i] == c->bd_prop))
			continue;
		name = pnstrdup(s->name, pg_mbcliplen(s->name, s->name_len, NAMEDATALEN - 1));
		for (;;)
		{
			taken = false;
			foreach(cell, cols)
				taken |= (strcmp(((KlEventsColumn *) lfirst(cell))->name, name) == 0);
			if (!taken)
				break;
			name = (n == 1) ? psprintf("event_%s", s->name) : psprintf("event_%s_%d", s->name, n);
			name = pnstrdup(name, pg_mbcliplen(name, strlen(name), NAMEDATALEN - 1));
			n++;
		}
		col = palloc0(sizeof(KlEventsColumn));
		col->name = name;
		col->type = s->sql_type;
		col->field = s->name;
		col->schema = s;
		cols = lappend(cols, col);
	}
	return cols;
}

/*
 * kl_column_ddl
 *		name type [OPTIONS (field '...')]
 */
static char *
kl_column_ddl(const KlEventsColumn *col)
{
	if (col->field == NULL)
		return psprintf("%s %s", quote_identifier(col->name), col->type);
	return psprintf("%s %s OPTIONS (field %s)", quote_identifier(col->name), col->type,
					quote_literal_cstr(col->field));
}

/*
 * kl_create_events_table
 *		CREATE FOREIGN TABLE kafka_lake.<source>_events for the contract,
 *		owned by the extension's owner (inside a catalog section).
 */
void
kl_create_events_table(const char *source, const char *server, const KlContract *c)
{
	KlCatalogSave cs;
	StringInfoData sql;
	ListCell   *cell;
	const char *table = quote_identifier(psprintf("%s_events", source));
	List	   *cols = kl_events_columns(c);

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE FOREIGN TABLE kafka_lake.%s (", table);
	foreach(cell, cols)
		appendStringInfo(&sql, "%s%s", cell == list_head(cols) ? "" : ", ",
						 kl_column_ddl(lfirst(cell)));
	appendStringInfo(&sql, ") SERVER %s OPTIONS (source %s, status 'accepted')",
					 quote_identifier(server), quote_literal_cstr(source));
	cs = kl_catalog_begin();
	kl_spi(sql.data, 0, NULL, NULL, NULL, false, SPI_OK_UTILITY);
	kl_spi(psprintf("COMMENT ON FOREIGN TABLE kafka_lake.%s IS %s", table,
					quote_literal_cstr(psprintf("Accepted events of kafka_lake source %s, one column per field of contract %s",
												source, c->name))),
		   0, NULL, NULL, NULL, false, SPI_OK_UTILITY);
	kl_catalog_end(cs);
}

/*
 * kl_sync_events_table
 *		Bring <source>_events to the columns of contract c, which replaces
 *		old for the source (see the file header); create it if it is gone.
 */
static void
kl_sync_events_table(KlSource *src, const KlContract *old, const KlContract *c)
{
	char	   *relname = psprintf("%s_events", src->source);
	Oid			relid = get_relname_relid(relname, get_namespace_oid("kafka_lake", false));
	List	   *want = kl_events_columns(c);
	List	   *changes = NIL;
	KlCatalogSave cs;
	Oid			types[1] = {OIDOID};
	Datum		values[1];
	ListCell   *cell;
	int			nexisting;
	char	  **names;
	char	  **coltypes;
	char	  **fields;
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext spi_cxt;

	if (!OidIsValid(relid))
	{
		kl_create_events_table(src->source, src->server, c);
		return;
	}
	values[0] = ObjectIdGetDatum(relid);
	cs = kl_catalog_begin();
	kl_spi("SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod),"
		   " (SELECT pg_catalog.substr(o, 7) FROM pg_catalog.unnest(a.attfdwoptions) o"
		   "   WHERE o LIKE 'field=%' LIMIT 1)"
		   " FROM pg_catalog.pg_attribute a"
		   " WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
		   1, types, values, NULL, true, SPI_OK_SELECT);
	nexisting = SPI_processed;
	spi_cxt = MemoryContextSwitchTo(caller);
	names = palloc(sizeof(char *) * Max(nexisting, 1));
	coltypes = palloc(sizeof(char *) * Max(nexisting, 1));
	fields = palloc(sizeof(char *) * Max(nexisting, 1));
	for (int i = 0; i < nexisting; i++)
	{
		names[i] = pstrdup(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
		coltypes[i] = pstrdup(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
		fields[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3);
		if (fields[i])
			fields[i] = pstrdup(fields[i]);
	}
	MemoryContextSwitchTo(spi_cxt);
	kl_catalog_end(cs);

	foreach(cell, want)
	{
		KlEventsColumn *col = (KlEventsColumn *) lfirst(cell);
		int			have = -1;

		for (int i = 0; i < nexisting; i++)
		{
			if (col->field ? (fields[i] && strcmp(fields[i], col->field) == 0) :
				(fields[i] == NULL && strcmp(names[i], col->name) == 0))
				have = i;
		}
		if (have < 0)
		{
			/* a new column, under a name no column has */
			char	   *name = col->name;
			int			n = 2;
			bool		taken;

			for (;;)
			{
				taken = false;
				for (int i = 0; i < nexisting; i++)
					taken |= (strcmp(names[i], name) == 0);
				if (!taken)
					break;
				name = psprintf("event_%s_%d", col->field ? col->field : col->name, n++);
				name = pnstrdup(name, pg_mbcliplen(name, strlen(name), NAMEDATALEN - 1));
			}
			col->name = name;
			changes = lappend(changes, psprintf("ADD COLUMN %s", kl_column_ddl(col)));
			continue;
		}
		if (strcmp(coltypes[have], col->type) == 0 || col->schema == NULL)
			continue;
		{
			int			need = kl_field_kinds(col->schema);
			int			before = 0;

			if (old != NULL)
			{
				for (int p = 0; p < old->top.nprops; p++)
				{
					if (strcmp(old->top.props[p].name, col->field) == 0)
						before = kl_field_kinds(&old->top.props[p]);
				}
			}
			if ((kl_type_reads(coltypes[have]) & need) == need)
				continue;		/* the column reads the new values as they are */
			if ((kl_type_reads(col->type) & (need | before)) == (need | before))
			{
				changes = lappend(changes, psprintf("ALTER COLUMN %s TYPE %s",
													quote_identifier(names[have]), col->type));
				continue;
			}
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("field \"%s\" of contract \"%s\" version %d is %s, which column \"%s\" of kafka_lake.%s (%s) cannot read",
							col->field, c->name, c->version, col->schema->type_words,
							names[have], quote_identifier(relname), coltypes[have]),
					 errdetail("The typed table reads the batches of every contract the source landed with, so one column must hold the field's values of both versions."),
					 errhint("Give the changed field a new name in the new version, or set its \"sql_type\" to a type that reads both (text or jsonb read any value).")));
		}
	}
	if (changes == NIL)
		return;
	cs = kl_catalog_begin();
	foreach(cell, changes)
		kl_spi(psprintf("ALTER FOREIGN TABLE kafka_lake.%s %s", quote_identifier(relname),
						(char *) lfirst(cell)),
			   0, NULL, NULL, NULL, false, SPI_OK_UTILITY);
	kl_catalog_end(cs);
}

/*
 * kafka_lake_alter_source
 *		alter_source(source, contract, contract_version DEFAULT NULL): land
 *		with another contract, or another version, from now on.
 */
Datum
kafka_lake_alter_source(PG_FUNCTION_ARGS)
{
	KlSource   *src;
	char	   *name;
	int32		version = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT32(2);
	const KlContract *old = NULL;
	const KlContract *c;
	KlCatalogSave cs;
	Oid			types[3] = {INT4OID, TEXTOID, INT4OID};
	Datum		values[3];

	kl_check_not_null(fcinfo, 0, "source", NULL);
	kl_check_not_null(fcinfo, 1, "contract",
					  "Name the contract to land with, for example kafka_lake.alter_source('orders', contract => 'orders_v1').");
	src = kl_source_arg(fcinfo, 0);
	name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (!PG_ARGISNULL(2) && version < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("contract_version must be at least 1"),
				 errhint("Leave it out for the latest version.")));
	if (!kl_catalog_has_contracts())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this database's kafka_lake catalog has no contracts"),
				 errhint("Run ALTER EXTENSION kafka_lake UPDATE first.")));
	c = kl_contract_get(name, version);
	kl_avro_check_server(c, src->server);
	old = kl_source_contract(src);

	values[0] = Int32GetDatum(src->source_id);
	values[1] = CStringGetTextDatum(c->name);
	values[2] = Int32GetDatum(c->version);
	cs = kl_catalog_begin();
	kl_spi("UPDATE kafka_lake.sources SET contract = $2, contract_version = $3 WHERE source_id = $1",
		   3, types, values, NULL, false, SPI_OK_UPDATE);
	kl_catalog_end(cs);
	kl_sync_events_table(src, old, c);
	PG_RETURN_VOID();
}

/*
 * kafka_lake_create_events_table
 *		The update script's helper: create <source>_events of a source that
 *		lacks it (sources created before the typed tables existed).
 */
Datum
kafka_lake_create_events_table(PG_FUNCTION_ARGS)
{
	KlSource   *src = kl_source_arg(fcinfo, 0);
	Oid			nsp = get_namespace_oid("kafka_lake", false);

	if (!OidIsValid(get_relname_relid(psprintf("%s_events", src->source), nsp)))
		kl_create_events_table(src->source, src->server, kl_source_contract(src));
	PG_RETURN_VOID();
}

/* ----------------------------------------------------------------
 *		Readmit units (readmit.c writes them, recover.c adopts them)
 * ----------------------------------------------------------------
 */

/*
 * kl_catalog_mark_readmitted
 *		Give the coordinates offsets[0..n) of batch batch_id the letter 'R'
 *		(mark), or their 'q' back (unmark).  ERROR when one of them is not
 *		what it must be: mark needs 'q', unmark 'R'.
 */
void
kl_catalog_mark_readmitted(KlSource *src, const char *batch_id, const int64 *offsets, int n,
						   bool mark)
{
	KlCatalogSave cs;
	Oid			types[3] = {INT4OID, TEXTOID, TEXTOID};
	Datum		values[3];
	char	   *statuses;
	int64		lo;
	int64	   *list = NULL;
	int			nlist;
	bool		isnull;
	Datum		d;
	char		from = mark ? KL_STATUS_QUARANTINED : KL_STATUS_READMITTED;
	char		to = mark ? KL_STATUS_READMITTED : KL_STATUS_QUARANTINED;

	values[0] = Int32GetDatum(src->source_id);
	values[1] = CStringGetTextDatum(batch_id);
	cs = kl_catalog_begin();
	kl_spi("SELECT statuses, pg_catalog.lower(offsets), offset_list FROM kafka_lake.coordinates"
		   " WHERE source_id = $1 AND batch_id = $2 FOR UPDATE",
		   2, types, values, NULL, false, SPI_OK_SELECT);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("batch %s of source \"%s\" has no row in kafka_lake.coordinates", batch_id, src->source),
				 errhint("The catalog was edited: run kafka_lake.verify('%s'), which says what to do.", src->source)));
	statuses = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	nlist = strlen(statuses);
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
	for (int i = 0; i < n; i++)
	{
		int			idx = -1;

		if (list == NULL)
			idx = (offsets[i] >= lo && offsets[i] < lo + nlist) ? (int) (offsets[i] - lo) : -1;
		else
		{
			for (int k = 0; k < nlist; k++)
			{
				if (list[k] == offsets[i])
					idx = k;
			}
		}
		if (idx < 0 || statuses[idx] != from)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("offset %lld of batch %s of source \"%s\" is not %s",
							(long long) offsets[i], batch_id, src->source,
							mark ? "a quarantined record" : "a re-admitted record"),
					 errhint("Run kafka_lake.verify('%s').", src->source)));
		statuses[idx] = to;
	}
	values[2] = CStringGetTextDatum(statuses);
	kl_spi("UPDATE kafka_lake.coordinates SET statuses = $3 WHERE source_id = $1 AND batch_id = $2",
		   3, types, values, NULL, false, SPI_OK_UPDATE);
	kl_catalog_end(cs);
}

/*
 * kl_catalog_forget_readmit
 *		Forget a readmit unit whose directory is gone (recover()): its rows,
 *		the event_ids it accepted, and the 'R' of its originals, which are
 *		quarantined again (readmit() can re-admit them).
 */
void
kl_catalog_forget_readmit(KlSource *src, const KlBatch *u)
{
	KlCatalogSave cs;
	Oid			types[5] = {INT4OID, TEXTOID, INT4OID, INT8ARRAYOID, TEXTOID};
	Datum		values[5];
	const char *topic = kl_topic_or_null(src);
	char		nulls[5] = {' ', ' ', ' ', ' ', topic ? ' ' : 'n'};
	char	   *statuses;
	int64		lo;
	int64	   *offsets;
	int			n;
	Datum	   *accepted;
	int			naccepted = 0;
	bool		isnull;
	Datum		d;
	MemoryContext caller = CurrentMemoryContext;

	values[0] = Int32GetDatum(src->source_id);
	values[1] = CStringGetTextDatum(u->batch_id);
	values[2] = Int32GetDatum(u->partition);
	values[4] = topic ? CStringGetTextDatum(topic) : (Datum) 0;
	cs = kl_catalog_begin();
	kl_spi("SELECT statuses, pg_catalog.lower(offsets), offset_list FROM kafka_lake.coordinates"
		   " WHERE source_id = $1 AND batch_id = $2",
		   2, types, values, NULL, true, SPI_OK_SELECT);
	if (SPI_processed != 1)
	{
		kl_spi("DELETE FROM kafka_lake.batches WHERE source_id = $1 AND batch_id = $2",
			   2, types, values, NULL, false, SPI_OK_DELETE);
		kl_catalog_end(cs);
		return;
	}
	statuses = MemoryContextStrdup(caller, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	n = strlen(statuses);
	lo = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull);
	offsets = MemoryContextAlloc(caller, sizeof(int64) * n);
	accepted = MemoryContextAlloc(caller, sizeof(Datum) * n);
	if (!isnull)
	{
		Datum	   *elems;
		int			nelems;

		deconstruct_array(DatumGetArrayTypeP(d), INT8OID, 8, true, TYPALIGN_DOUBLE,
						  &elems, NULL, &nelems);
		for (int i = 0; i < n && i < nelems; i++)
			offsets[i] = DatumGetInt64(elems[i]);
	}
	else
	{
		for (int i = 0; i < n; i++)
			offsets[i] = lo + i;
	}
	for (int i = 0; i < n; i++)
	{
		if (statuses[i] == KL_STATUS_ACCEPTED)
			accepted[naccepted++] = Int64GetDatum(offsets[i]);
	}
	values[3] = PointerGetDatum(construct_array(accepted, naccepted, INT8OID, 8, true, TYPALIGN_DOUBLE));
	/* the unit's own coordinates: no batch holds them accepted */
	kl_spi(psprintf("DELETE FROM kafka_lake.accepted_events WHERE source_id = $1 AND partition = $3"
					" AND \"offset\" = ANY ($4)%s", kl_event_topic_qual(NULL, 5)),
		   5, types, values, nulls, false, SPI_OK_DELETE);
	kl_spi("DELETE FROM kafka_lake.batches WHERE source_id = $1 AND batch_id = $2",
		   2, types, values, NULL, false, SPI_OK_DELETE);
	kl_catalog_end(cs);
	kl_catalog_mark_readmitted(src, u->readmit_of, offsets, n, false);
}
