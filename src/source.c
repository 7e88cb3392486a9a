/*-------------------------------------------------------------------------
 *
 * source.c
 *	  Sources: create_source() and drop_source(), which reach every
 *	  subsystem (the landing, the typed table, the bridge's silver and
 *	  golds), set_compression(), how its new batches are stored, and
 *	  set_partitions(), which of its topics' partitions this server lands.
 *
 * A source is a row of kafka_lake.sources, a directory under the landing
 * directory carrying this database's marker (landing_files.c), and the
 * foreign tables kafka_lake.<source>_records (every landed record) and
 * kafka_lake.<source>_events (its accepted events, typed by the source's
 * contract: contract_catalog.c).  create_source makes them all;
 * drop_source forgets the row and the table at once, and removes the files
 * (drop_landing => true) only once that is committed (fileundo.c: a
 * rollback must find them where the catalog says).
 *
 * A source is not dropped under a writer: land(), replay(), recover() and
 * the bridge lock the source's row FOR KEY SHARE before they touch its
 * files (kl_source_lock, landing/source_lock.c), drop_source takes FOR
 * UPDATE before it deletes anything, and deletes with the newest snapshot,
 * so what a lander committed while the drop waited goes too
 * (accepted_events has no foreign key to cascade).
 *
 * Consumer groups: the default group id is kafka_lake.<database>.<source>,
 * and create_source refuses a group another source of the database uses,
 * under an advisory lock keyed by the group (locks.c) and against the
 * latest snapshot, so that concurrent calls cannot both take one group.
 *
 * Partitions owned: a topic too big for one server is landed by several,
 * each owning a disjoint set of its partitions (create_source(...,
 * partitions => ...), set_partitions).  The set is the same for every topic
 * of the source, kept ascending and without repeats in sources.partitions
 * (NULL: every partition, as before 1.11).  Every server of a topic gives
 * its source the same consumer group: then the group's committed offsets are
 * shared, a new owner of a partition starts where the old one stopped, and
 * two servers that land one partition meet the group-moved check (land.c)
 * instead of landing it twice.  set_partitions locks the source's row FOR
 * UPDATE, so it waits for every call landing the source, and a land() that
 * starts after it reads the new set from the row it locks
 * (kl_catalog_lock_source).
 *
 * IDENTIFICATION
 *	  src/source.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "base/args.h"
#include "base/names.h"
#include "bridge/bridge.h"
#include "contract/contract_define.h"
#include "kafka/options.h"
#include "kafka/registry.h"
#include "kl_catalog/avro_contract.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/catalog_exclusions.h"
#include "kl_catalog/contract_catalog.h"
#include "kl_catalog/locks.h"
#include "landing/fileundo.h"
#include "landing/landing_files.h"
#include "landing/source_lock.h"

PG_FUNCTION_INFO_V1(kafka_lake_create_source);
PG_FUNCTION_INFO_V1(kafka_lake_drop_source);
PG_FUNCTION_INFO_V1(kafka_lake_set_compression);
PG_FUNCTION_INFO_V1(kafka_lake_event_key);
PG_FUNCTION_INFO_V1(kafka_lake_set_partitions);
PG_FUNCTION_INFO_V1(kafka_lake_create_contract_1_3);

/*
 * kl_check_source_names_free
 *		A source's tables are kafka_lake.<source>_records, _events and
 *		_silver (and an entity stream's view _state): refuse (42P07) a
 *		source whose tables would meet an object
 *		of kafka_lake already there (a catalog view such as late_events, a
 *		gold defined under that name by an earlier release), before
 *		anything is made on disk (the catalog's row goes with the error).
 */
static void
kl_check_source_names_free(const char *source)
{
	static const char *const suffixes[] = {"_records", "_events", "_silver", "_state"};
	Oid			nsp = get_namespace_oid("kafka_lake", false);

	for (int i = 0; i < lengthof(suffixes); i++)
	{
		char	   *name = psprintf("%s%s", source, suffixes[i]);

		if (OidIsValid(get_relname_relid(name, nsp)))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_TABLE),
					 errmsg("source \"%s\" cannot be created: kafka_lake.%s exists", source,
							quote_identifier(name)),
					 errdetail("kafka_lake.<source>_records, <source>_events, <source>_silver and <source>_state are a source's own objects."),
					 errhint("Choose another source name.")));
	}
}

/*
 * kl_topic_list
 *		The topics create_source() is given, as sources.topic keeps them: one
 *		topic, or several separated by commas (Kafka Connect's "topics"
 *		setting; spaces around a name are dropped), each a valid Kafka topic
 *		name, none twice, at most KL_MAX_TOPICS.  Several need a 1.6
 *		catalog, where every coordinate the catalog names has its topic.
 */
#define KL_MAX_TOPICS 64

static char *
kl_topic_list(const char *given)
{
	StringInfoData list;
	char	  **names;
	int			n = kl_split_topics(given, &names);

	initStringInfo(&list);
	for (int t = 0; t < n; t++)
	{
		char	   *p = names[t];
		char	   *end;

		while (*p == ' ' || *p == '\t')
			p++;
		end = p + strlen(p);
		while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		kl_check_topic_name(p);
		for (int i = 0; i < t; i++)
		{
			if (strcmp(names[i], p) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("topic \"%s\" is named twice", p),
						 errhint("Name each topic of the source once, separated by commas.")));
		}
		names[t] = p;
		appendStringInfo(&list, "%s%s", t ? "," : "", p);
	}
	if (n > KL_MAX_TOPICS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a source lands at most %d topics, not %d", KL_MAX_TOPICS, n),
				 errhint("Split the topics among several sources.")));
	if (n > 1 && !kl_catalog_has_topic_lists())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this database's kafka_lake catalog lands one topic per source"),
				 errhint("Run ALTER EXTENSION kafka_lake UPDATE first.")));
	return list.data;
}

/*
 * kl_partitions_arg
 *		The partitions a function's int[] argument names, ascending, in *n;
 *		NULL (and *n = 0) for a NULL argument: every partition.  Refused: an
 *		empty or multi-dimensional array and a negative partition (22023), a
 *		NULL element (22004), a partition named twice (22023).
 */
static int32 *
kl_partitions_arg(FunctionCallInfo fcinfo, int argno, int *n)
{
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *nulls;
	int32	   *parts;
	int			count;

	*n = 0;
	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return NULL;
	arr = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partitions must be a one-dimensional array"),
				 errhint("Name the partitions as '{0,1,2}', or give NULL for every partition.")));
	deconstruct_array(arr, INT4OID, sizeof(int32), true, TYPALIGN_INT, &elems, &nulls, &count);
	if (count == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a source owns at least one partition"),
				 errhint("Give NULL for every partition of the topic.")));
	parts = palloc(sizeof(int32) * count);
	for (int i = 0; i < count; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("partitions must not contain NULL"),
					 errhint("Name each partition by its number, from 0.")));
		parts[i] = DatumGetInt32(elems[i]);
		if (parts[i] < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partition %d is not a partition", parts[i]),
					 errhint("Kafka numbers a topic's partitions from 0.")));
	}
	qsort(parts, count, sizeof(int32), kl_int32_cmp);
	for (int i = 1; i < count; i++)
	{
		if (parts[i] == parts[i - 1])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partition %d is named twice", parts[i]),
					 errhint("Name each partition the source owns once.")));
	}
	*n = count;
	return parts;
}

/*
 * kl_check_catalog_has_partitions
 *		Owning some partitions needs a 1.11 catalog (sources.partitions).
 */
static void
kl_check_catalog_has_partitions(void)
{
	if (!kl_catalog_has_partitions())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the kafka_lake catalog of this database is older than its library"),
				 errhint("Run ALTER EXTENSION kafka_lake UPDATE.")));
}

/*
 * kafka_lake_create_source
 *		create_source(source, server, topic, group_id, contract, partitions): record a
 *		source and create its foreign table kafka_lake.<source>_records.
 *
 *		The default group id names the database and the source
 *		(kafka_lake.<database>.<source>), so that sources of two databases
 *		never share a group by accident; it is stored, so a later rename of
 *		the database changes nothing.  A group another source of this
 *		database uses is refused: sources that share a group overwrite each
 *		other's offsets and skip records.
 */
Datum
kafka_lake_create_source(PG_FUNCTION_ARGS)
{
	char	   *source;
	char	   *server;
	char	   *topic;
	char	   *group_id;
	char	   *contract;
	char	   *default_group;
	ForeignServer *fs;
	char	   *root;
	const KlContract *c;
	int32	   *partitions;
	int			npartitions;

	kl_check_not_null(fcinfo, 0, "source", "Name the new source, for example machine_events.");
	kl_check_not_null(fcinfo, 1, "server", "Name a foreign server of the kafka_lake wrapper.");
	kl_check_not_null(fcinfo, 2, "topic", "Name the Kafka topic the source lands.");
	source = text_to_cstring(PG_GETARG_TEXT_PP(0));
	server = text_to_cstring(PG_GETARG_TEXT_PP(1));
	topic = text_to_cstring(PG_GETARG_TEXT_PP(2));
	kl_check_source_name(source);
	default_group = psprintf("kafka_lake.%s.%s", get_database_name(MyDatabaseId), source);
	group_id = PG_ARGISNULL(3) ? default_group : text_to_cstring(PG_GETARG_TEXT_PP(3));
	contract = PG_ARGISNULL(4) ? "machine_event_v1" : text_to_cstring(PG_GETARG_TEXT_PP(4));
	/* partitions: an argument of 1.11's create_source */
	partitions = kl_partitions_arg(fcinfo, 5, &npartitions);

	topic = kl_topic_list(topic);
	fs = kl_get_server(server);
	kl_check_server_usage(fs);
	if (group_id[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("group_id must not be empty"),
				 errhint("Leave it out to use %s.", default_group)));
	kl_check_group_id(group_id);
	/* the contract's latest version (an unknown one is 22023) */
	c = kl_contract_get(contract, 0);
	kl_avro_check_server(c, fs->servername);

	root = kl_landing_root();

	/* one group, one source: checked under a lock, against what is committed now */
	kl_lock_group_id(group_id);
	kl_catalog_insert_source(source, fs->servername, topic, group_id, c->name, c->version,
							 root, default_group);
	if (npartitions > 0)
		kl_catalog_set_partitions(kl_source_lookup(source), partitions, npartitions);
	/* a source of that name is 42710 above, as one this database coordinates */
	if (kl_catalog_is_coordinated(source))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("source \"%s\" already exists in this database", source),
				 errdetail("This database reads it from its shards (kafka_lake.shards)."),
				 errhint("Choose another source name, or detach the shards first with kafka_lake.detach_shards().")));
	/* its tables must be free too */
	kl_check_source_names_free(source);

	/*
	 * A directory this transaction is to remove at commit (the same name
	 * dropped with drop_landing => true) is moved out of the way first, so
	 * that the removal takes only what the dropped source owned.
	 */
	kl_settle_displaced(root, source);
	(void) kl_undo_displace(psprintf("%s/%s", root, source), root, source);
	kl_claim_source_dir(psprintf("%s/%s", root, source), source);

	kl_catalog_create_records_table(source, fs->servername, topic);
	kl_create_events_table(source, fs->servername, c);
	if (kl_catalog_has_contracts())
		kl_silver_ensure(kl_source_lookup(source), c);

	PG_RETURN_VOID();
}

/*
 * kafka_lake_drop_source
 *		drop_source(source, drop_landing): forget a source and its foreign
 *		table; with drop_landing, also remove its landed files.
 */
Datum
kafka_lake_drop_source(PG_FUNCTION_ARGS)
{
	KlSource   *src;
	bool		drop_landing = PG_ARGISNULL(1) ? false : PG_GETARG_BOOL(1);

	kl_check_not_null(fcinfo, 0, "source", NULL);
	src = kl_source_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)));

	/* only a directory that is this database's source's is ever removed */
	if (drop_landing)
	{
		struct stat st;

		if (stat(src->dir, &st) == 0 && !kl_source_dir_is_ours(src->dir))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("landing directory \"%s\" is not removed: it does not carry this database's marker of source \"%s\"",
							src->dir, src->source),
					 errdetail("kafka_lake removes only directories whose %s file names this database and the source.",
							   KL_SOURCE_MARKER),
					 errhint("Drop the source with drop_landing => false and remove the directory by hand if it is no longer needed.")));
	}

	/*
	 * First wait for every transaction that lands, replays, recovers or
	 * bridges this source (they hold FOR KEY SHARE on its row: see
	 * kl_source_lock), and keep new ones out.  Only then delete, with the
	 * newest snapshot, so that what such a transaction committed while we
	 * waited goes too: accepted_events has no foreign key that would
	 * cascade.
	 */
	kl_catalog_lock_source_for_drop(src);
	/* what an interrupted drop left of the directory comes back first */
	{
		char	   *root = pstrdup(src->dir);

		get_parent_directory(root);
		kl_settle_displaced(root, src->source);
	}
	kl_bridge_drop_definitions(src->source_id, src->source);
	kl_catalog_delete_source(src);

	/*
	 * Files go last, once the catalog is gone: if the transaction aborts
	 * after this point the catalog comes back and recover() would find the
	 * files missing, so removal is deferred to commit (fileundo.c; a
	 * create_source of the same name later in this transaction moves the
	 * doomed directory out of its way).
	 */
	if (drop_landing)
		kl_undo_remove_tree_at_commit(src->dir, src->source_id,
									  "drop_source(drop_landing => true)");

	PG_RETURN_VOID();
}

/*
 * kafka_lake_set_compression
 *		set_compression(source, compression): how the source's batches are
 *		stored from its next landing on ('zstd' or 'none').  What landed
 *		stays as it is (compact() writes the batches it merges the new way).
 */
Datum
kafka_lake_set_compression(PG_FUNCTION_ARGS)
{
	KlSource   *src;
	char	   *name;
	int			compression;

	kl_check_not_null(fcinfo, 0, "source", NULL);
	kl_check_not_null(fcinfo, 1, "compression", "'zstd' or 'none'.");
	name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	compression = kl_compression_of(name);
	if (compression < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown compression \"%s\"", name),
				 errhint("'zstd' (each file one zstd frame) or 'none' (plain JSONL).")));
	if (!kl_catalog_has_compression())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the kafka_lake catalog of this database is older than its library"),
				 errhint("Run ALTER EXTENSION kafka_lake UPDATE.")));
	src = kl_source_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	kl_source_lock(src);
	kl_catalog_set_compression(src, compression);
	PG_RETURN_VOID();
}

/*
 * kafka_lake_event_key
 *		event_key(source, event_id): the key under which accepted_events
 *		holds an event_id of the source, by the source's own key scheme
 *		(sources.event_keys; digest.c).  1.1 to 1.12 computed the hashed key
 *		in SQL; from 1.13 sources key ordered too, so the library computes it.
 */
Datum
kafka_lake_event_key(PG_FUNCTION_ARGS)
{
	const char *hint = "For example: kafka_lake.event_key('machine_events', 'evt-20260629-000001').";
	KlSource   *src;
	char	   *id;

	kl_check_not_null(fcinfo, 0, "source", hint);
	kl_check_not_null(fcinfo, 1, "event_id", hint);
	src = kl_source_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	/* the landing keys the event_id's UTF-8 bytes, as 1.1's SQL did */
	id = text_to_cstring(PG_GETARG_TEXT_PP(1));
	id = pg_server_to_any(id, strlen(id), PG_UTF8);
	PG_RETURN_DATUM(kl_event_key_datum(src, id));
}

/*
 * kafka_lake_set_partitions
 *		set_partitions(source, partitions): the partitions of the source's
 *		topics this server lands from now on (NULL: every partition).  It
 *		waits for every call that lands or bridges the source; what landed
 *		of a partition given up stays landed and is read, bridged and
 *		verified as before.
 */
Datum
kafka_lake_set_partitions(PG_FUNCTION_ARGS)
{
	KlSource   *src;
	int32	   *partitions;
	int			n;

	kl_check_not_null(fcinfo, 0, "source", NULL);
	partitions = kl_partitions_arg(fcinfo, 1, &n);
	kl_check_catalog_has_partitions();
	src = kl_source_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	kl_source_lock(src);
	kl_catalog_lock_source_for_drop(src);
	kl_catalog_set_partitions(src, partitions, n);
	PG_RETURN_VOID();
}

/*
 * kafka_lake_create_contract_1_3
 *		create_contract(contract, definition json) returns the version.  An
 *		Avro definition that names a registry subject ("server", "subject",
 *		"version") instead of its schema gets the subject's schema fetched
 *		(the caller needs USAGE on the server) and is stored with it
 *		embedded ("schema", "schema_id", "version"), so that the version is
 *		fixed and the contract needs no registry to be used.  Here, not in
 *		contract_catalog.c, because the registry client is above the catalog.
 */
Datum
kafka_lake_create_contract_1_3(PG_FUNCTION_ARGS)
{
	char	   *name;
	char	   *definition;
	char	   *server_name;
	char	   *subject;
	int32		version;

	kl_check_not_null(fcinfo, 0, "contract", "Name the contract, for example orders_v1.");
	kl_check_not_null(fcinfo, 1, "definition",
					  "Give the definition as json, for example '{\"type\": \"object\"}'.");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	definition = text_to_cstring(PG_GETARG_TEXT_PP(1));
	kl_check_contract_name(name);
	if (kl_definition_is_avro(definition) &&
		kl_avro_definition_subject(definition, &server_name, &subject, &version))
	{
		ForeignServer *server = kl_get_server(server_name);
		KlRegistrySchema *rs;

		kl_check_server_usage(server);
		rs = kl_registry_subject_version(server, subject, version,
										 TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
																	 KL_REGISTRY_DEFAULT_TIMEOUT_MS));
		if (strcmp(rs->schema_type, "AVRO") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("subject \"%s\" version %d holds a %s schema, not an Avro one",
							subject, rs->version, rs->schema_type)));
		definition = kl_avro_definition_embed(definition, rs->schema, rs->id, rs->version);
	}
	PG_RETURN_INT32(kl_catalog_create_contract(name, definition));
}
