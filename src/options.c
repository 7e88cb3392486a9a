/*-------------------------------------------------------------------------
 *
 * options.c
 *	  The foreign-data wrapper's validator, and the librdkafka configuration
 *	  of a server built from its options and the caller's user mapping.
 *
 * A Kafka cluster is a foreign server.  Its options are "brokers" (the
 * bootstrap list) and any librdkafka property; a user mapping carries the
 * properties that belong to one role, secrets above all.  Every option is
 * checked when it is set, by handing it to librdkafka's own rd_kafka_conf_set
 * on a scratch configuration, so a typo or a bad value fails at CREATE or
 * ALTER time with librdkafka's message and not at the first land().
 *
 * The rules, table-driven below:
 *	- properties that kafka_lake sets itself (group.id, offset handling, the
 *	  prefetch queue that bounds memory) are refused everywhere, with a hint
 *	  that says what to use instead;
 *	- properties that would make the backend run a program or load a library
 *	  (sasl.kerberos.kinit.cmd, plugin.library.paths, OpenSSL engines and
 *	  providers) are refused everywhere;
 *	- secrets (sasl.password, ssl.key.password, ...) are refused on a SERVER
 *	  and on the wrapper, because pg_foreign_server is readable by everyone;
 *	  PostgreSQL shows user mapping options only to their owner and to
 *	  superusers.  No error message, log line or EXPLAIN ever prints a secret's
 *	  value: librdkafka text is scrubbed of every secret value before it is
 *	  reported (kl_scrub_secrets);
 *	- properties naming files on the database server (*.location, keytabs)
 *	  may be set in a user mapping by superusers only, since the backend reads
 *	  them as the server's operating system user.
 *
 * Foreign tables take "source" and "status"; a column may take "field" to
 * read an event field of another name.
 *
 * IDENTIFICATION
 *	  src/options.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdio.h>

#include "access/reloptions.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_foreign_data_wrapper.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/varlena.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "kafka_lake.h"

PG_FUNCTION_INFO_V1(kafka_lake_fdw_validator);

/* Why a property is refused, or where it may appear */
typedef enum KlPropertyRule
{
	KL_PROP_OWNED,				/* kafka_lake sets it itself */
	KL_PROP_UNSAFE,				/* runs programs or loads code */
	KL_PROP_SECRET,				/* only in a user mapping */
	KL_PROP_SERVER_FILE			/* a path on the server: superuser only */
} KlPropertyRule;

typedef struct KlPropertyRuleEntry
{
	const char *name;
	KlPropertyRule rule;
	const char *hint;			/* for OWNED and UNSAFE */
} KlPropertyRuleEntry;

static const KlPropertyRuleEntry kl_property_rules[] = {
	{"bootstrap.servers", KL_PROP_OWNED, "Use the option \"brokers\"."},
	{"metadata.broker.list", KL_PROP_OWNED, "Use the option \"brokers\"."},
	{"group.id", KL_PROP_OWNED, "Each source has its own group: use the group_id argument of kafka_lake.create_source."},
	{"group.instance.id", KL_PROP_OWNED, "kafka_lake assigns partitions itself and does not join the group."},
	{"enable.auto.commit", KL_PROP_OWNED, "kafka_lake commits offsets itself, and only after the records are durable."},
	{"auto.commit.enable", KL_PROP_OWNED, "kafka_lake commits offsets itself, and only after the records are durable."},
	{"enable.auto.offset.store", KL_PROP_OWNED, "kafka_lake commits offsets itself, and only after the records are durable."},
	{"auto.offset.reset", KL_PROP_OWNED, "kafka_lake never skips records silently: see land(..., allow_expired => true)."},
	{"enable.partition.eof", KL_PROP_OWNED, "kafka_lake reads each partition up to its high watermark itself."},
	{"queued.min.messages", KL_PROP_OWNED, "Set kafka_lake.batch_max_records instead: it also sizes the prefetch queue."},
	{"queued.max.messages.kbytes", KL_PROP_OWNED, "Set kafka_lake.batch_max_bytes instead: it also sizes the prefetch queue."},
	{"log.queue", KL_PROP_OWNED, "kafka_lake forwards librdkafka's log to the server log itself."},
	{"enable.auto.offset.store", KL_PROP_OWNED, NULL},
	{"plugin.library.paths", KL_PROP_UNSAFE, "Loading libraries into a database backend is not allowed."},
	{"sasl.kerberos.kinit.cmd", KL_PROP_UNSAFE, "Running programs from a database backend is not allowed; refresh Kerberos tickets outside PostgreSQL."},
	{"ssl.engine.location", KL_PROP_UNSAFE, "Loading OpenSSL engines into a database backend is not allowed."},
	{"ssl.engine.id", KL_PROP_UNSAFE, "Loading OpenSSL engines into a database backend is not allowed."},
	{"ssl.providers", KL_PROP_UNSAFE, "Loading OpenSSL providers into a database backend is not allowed."},
	{"sasl.password", KL_PROP_SECRET, NULL},
	{"ssl.key.password", KL_PROP_SECRET, NULL},
	{"ssl.keystore.password", KL_PROP_SECRET, NULL},
	{"ssl.key.pem", KL_PROP_SECRET, NULL},
	{"sasl.oauthbearer.client.secret", KL_PROP_SECRET, NULL},
	{"sasl.oauthbearer.config", KL_PROP_SECRET, NULL},
	{"ssl.key.location", KL_PROP_SERVER_FILE, NULL},
	{"ssl.certificate.location", KL_PROP_SERVER_FILE, NULL},
	{"ssl.ca.location", KL_PROP_SERVER_FILE, NULL},
	{"ssl.crl.location", KL_PROP_SERVER_FILE, NULL},
	{"ssl.keystore.location", KL_PROP_SERVER_FILE, NULL},
	{"sasl.kerberos.keytab", KL_PROP_SERVER_FILE, NULL},
	{NULL, 0, NULL}
};

/* Options of kafka_lake itself, and where they are valid */
typedef struct KlOption
{
	const char *name;
	Oid			catalog;
} KlOption;

static const KlOption kl_own_options[] = {
	{"brokers", ForeignServerRelationId},
	{"source", ForeignTableRelationId},
	{"status", ForeignTableRelationId},
	{"field", AttributeRelationId},
	{NULL, InvalidOid}
};

static List *kl_librdkafka_property_names(void);
static const KlPropertyRuleEntry *kl_property_rule(const char *name);
static void kl_validate_property(DefElem *def, Oid catalog);
static const char *kl_closest_name(const char *name);
static const char *kl_catalog_word(Oid catalog);

/*
 * kl_property_rule
 *		The rule for a librdkafka property, or NULL when it is a plain one.
 *		Any property whose name speaks of a password or a secret is a secret
 *		even if this release of the table does not know it.
 */
static const KlPropertyRuleEntry *
kl_property_rule(const char *name)
{
	static const KlPropertyRuleEntry secret_by_name = {NULL, KL_PROP_SECRET, NULL};

	for (const KlPropertyRuleEntry *r = kl_property_rules; r->name; r++)
	{
		if (strcmp(r->name, name) == 0)
			return r;
	}
	if (strstr(name, "password") || strstr(name, "secret"))
		return &secret_by_name;
	return NULL;
}

/*
 * kl_is_secret_property
 *		Is this the name of a property whose value must never be shown?
 */
bool
kl_is_secret_property(const char *name)
{
	const KlPropertyRuleEntry *rule = kl_property_rule(name);

	return rule != NULL && rule->rule == KL_PROP_SECRET;
}

/*
 * kl_catalog_word
 *		How an error message names the object that carries an option.
 */
static const char *
kl_catalog_word(Oid catalog)
{
	switch (catalog)
	{
		case ForeignDataWrapperRelationId:
			return "foreign-data wrapper";
		case ForeignServerRelationId:
			return "server";
		case UserMappingRelationId:
			return "user mapping";
		case ForeignTableRelationId:
			return "foreign table";
		case AttributeRelationId:
			return "column";
	}
	return "object";
}

/*
 * kafka_lake_fdw_validator
 *		Check the options of the wrapper, a server, a user mapping, a foreign
 *		table or a column.
 */
Datum
kafka_lake_fdw_validator(PG_FUNCTION_ARGS)
{
	List	   *options = untransformRelOptions(PG_GETARG_DATUM(0));
	Oid			catalog = PG_GETARG_OID(1);
	List	   *seen = NIL;
	bool		have_brokers = false;
	bool		have_source = false;
	ListCell   *cell;

	foreach(cell, options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);
		const KlOption *own = NULL;

		/* duplicates are refused, as in every core wrapper */
		if (list_member(seen, makeString(def->defname)))
			ereport(ERROR,
					(errcode(ERRCODE_SYNTAX_ERROR),
					 errmsg("conflicting or redundant options"),
					 errdetail("Option \"%s\" is given more than once.", def->defname)));
		seen = lappend(seen, makeString(def->defname));

		for (const KlOption *o = kl_own_options; o->name; o++)
		{
			if (strcmp(o->name, def->defname) == 0)
			{
				own = o;
				break;
			}
		}

		if (own != NULL)
		{
			char	   *value = defGetString(def);

			if (own->catalog != catalog)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
						 errmsg("option \"%s\" is not valid on a %s",
								def->defname, kl_catalog_word(catalog)),
						 errhint("Set \"%s\" on a %s.", def->defname,
								 kl_catalog_word(own->catalog))));

			if (strcmp(def->defname, "brokers") == 0)
			{
				rd_kafka_conf_t *conf = rd_kafka_conf_new();
				char		errstr[512];

				if (value[0] == '\0' ||
					rd_kafka_conf_set(conf, "bootstrap.servers", value,
									  errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
				{
					rd_kafka_conf_destroy(conf);
					ereport(ERROR,
							(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
							 errmsg("invalid value for option \"brokers\""),
							 errhint("Give a comma-separated list of host:port.")));
				}
				rd_kafka_conf_destroy(conf);
				have_brokers = true;
			}
			else if (strcmp(def->defname, "source") == 0)
			{
				kl_check_source_name(value);
				have_source = true;
			}
			else if (strcmp(def->defname, "status") == 0)
			{
				if (kl_status_file_index(value) < 0)
					ereport(ERROR,
							(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
							 errmsg("invalid value for option \"status\": \"%s\"", value),
							 errhint("Use accepted, duplicate_event_id or quarantined.")));
			}
			else if (strcmp(def->defname, "field") == 0)
			{
				if (value[0] == '\0')
					ereport(ERROR,
							(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
							 errmsg("option \"field\" must not be empty")));
			}
			continue;
		}

		/* anything else is a librdkafka property */
		if (catalog == ForeignTableRelationId || catalog == AttributeRelationId)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("invalid option \"%s\" for a %s", def->defname,
							kl_catalog_word(catalog)),
					 catalog == ForeignTableRelationId ?
					 errhint("Valid options for a foreign table are \"source\" and \"status\".") :
					 errhint("The only option of a column is \"field\".")));

		kl_validate_property(def, catalog);
	}

	if (catalog == ForeignServerRelationId && !have_brokers)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("a kafka_lake server needs the option \"brokers\""),
				 errhint("For example: OPTIONS (brokers '127.0.0.1:9092').")));

	if (catalog == ForeignTableRelationId && !have_source)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("a kafka_lake foreign table needs the option \"source\""),
				 errhint("For example: OPTIONS (source 'machine_events', status 'accepted').")));

	PG_RETURN_VOID();
}

/*
 * kl_validate_property
 *		Check one librdkafka property for the catalog it is set in.
 */
static void
kl_validate_property(DefElem *def, Oid catalog)
{
	const char *name = def->defname;
	char	   *value = defGetString(def);
	const KlPropertyRuleEntry *rule = kl_property_rule(name);
	rd_kafka_conf_t *conf;
	rd_kafka_conf_res_t res;
	char		errstr[512];

	if (rule != NULL && (rule->rule == KL_PROP_OWNED || rule->rule == KL_PROP_UNSAFE))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("librdkafka property \"%s\" cannot be set on a kafka_lake %s",
						name, kl_catalog_word(catalog)),
				 rule->hint ? errhint("%s", rule->hint) : 0));

	if (rule != NULL && rule->rule == KL_PROP_SECRET &&
		catalog != UserMappingRelationId)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("secret property \"%s\" is not allowed on a %s",
						name, kl_catalog_word(catalog)),
				 errhidestmt(true),
				 errdetail("Options of a %s are readable by every role.",
						   kl_catalog_word(catalog)),
				 errhint("Put secrets in a user mapping: CREATE USER MAPPING FOR CURRENT_USER SERVER ... OPTIONS (\"%s\" '...').",
						 name)));

	if (rule != NULL && rule->rule == KL_PROP_SERVER_FILE &&
		catalog == UserMappingRelationId && !superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only superusers can set \"%s\" in a user mapping", name),
				 errdetail("The backend reads that file as the database server's operating system user."),
				 errhint("Ask a superuser to set it on the server.")));

	if (catalog == ForeignDataWrapperRelationId)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("the kafka_lake foreign-data wrapper takes no options"),
				 errhint("Set librdkafka properties on a server or a user mapping.")));

	conf = rd_kafka_conf_new();
	res = rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr));
	rd_kafka_conf_destroy(conf);

	if (res == RD_KAFKA_CONF_UNKNOWN)
	{
		const char *closest = kl_closest_name(name);

		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("unknown librdkafka property \"%s\"", name),
				 errdetail_internal("librdkafka: %s", errstr),
				 closest ? errhint("Perhaps you meant the property \"%s\".", closest) :
				 errhint("See librdkafka's CONFIGURATION.md for the valid properties.")));
	}
	if (res != RD_KAFKA_CONF_OK)
	{
		/* librdkafka echoes the value; a secret's value must not be shown */
		if (rule != NULL && rule->rule == KL_PROP_SECRET)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("invalid value for librdkafka property \"%s\"", name),
					 errhidestmt(true)));
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("invalid value for librdkafka property \"%s\"", name),
				 errdetail_internal("librdkafka: %s", errstr)));
	}
}

/*
 * kl_librdkafka_property_names
 *		Every property name this librdkafka knows, read once from its own
 *		property table (used for "Perhaps you meant" hints).
 */
static List *
kl_librdkafka_property_names(void)
{
	static List *names = NIL;
	char	   *text = NULL;
	size_t		len = 0;
	FILE	   *fp;
	MemoryContext old;

	if (names != NIL)
		return names;

	fp = open_memstream(&text, &len);
	if (fp == NULL)
		return NIL;
	rd_kafka_conf_properties_show(fp);
	fclose(fp);

	old = MemoryContextSwitchTo(TopMemoryContext);
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
	{
		char	   *bar = strchr(line, '|');
		char	   *end;

		if (bar == NULL || line[0] == '-' || strncmp(line, "Property", 8) == 0)
			continue;
		end = bar;
		while (end > line && end[-1] == ' ')
			end--;
		if (end > line)
			names = lappend(names, pnstrdup(line, end - line));
	}
	MemoryContextSwitchTo(old);
	free(text);
	return names;
}

/*
 * kl_closest_name
 *		The known property nearest to a mistyped one, if it is near enough.
 */
static const char *
kl_closest_name(const char *name)
{
	const char *best = NULL;
	int			best_distance = INT_MAX;
	int			len = strlen(name);
	ListCell   *cell;

	foreach(cell, kl_librdkafka_property_names())
	{
		const char *candidate = lfirst(cell);
		int			d = varstr_levenshtein(name, len, candidate, strlen(candidate),
										   1, 1, 1, false);

		if (d < best_distance)
		{
			best_distance = d;
			best = candidate;
		}
	}
	/* as in PostgreSQL's own option hints: only suggest a close name */
	if (best != NULL && best_distance <= Max(2, len / 4))
		return best;
	return NULL;
}

/*
 * kl_user_mapping_options
 *		Options of the user mapping for (userid, server), falling back to the
 *		PUBLIC mapping; NIL when there is none (a mapping is optional).
 */
static List *
kl_user_mapping_options(Oid userid, Oid serverid)
{
	Oid			ids[2] = {userid, InvalidOid};

	for (int i = 0; i < 2; i++)
	{
		HeapTuple	tp;
		Datum		datum;
		bool		isnull;
		List	   *options = NIL;

		tp = SearchSysCache2(USERMAPPINGUSERSERVER,
							 ObjectIdGetDatum(ids[i]),
							 ObjectIdGetDatum(serverid));
		if (!HeapTupleIsValid(tp))
			continue;
		datum = SysCacheGetAttr(USERMAPPINGUSERSERVER, tp,
								Anum_pg_user_mapping_umoptions, &isnull);
		if (!isnull)
			options = untransformRelOptions(datum);
		ReleaseSysCache(tp);
		return options;
	}
	return NIL;
}

/*
 * kl_build_conf
 *		A librdkafka configuration for a server as seen by a role: the
 *		server's options, then the role's user mapping.  The values of secret
 *		properties are appended to *secrets so that text coming back from
 *		librdkafka can be scrubbed.
 */
rd_kafka_conf_t *
kl_build_conf(ForeignServer *server, Oid userid, List **secrets)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	List	   *options;
	ListCell   *cell;
	char		errstr[512];

	options = list_concat(list_copy(server->options),
						  kl_user_mapping_options(userid, server->serverid));

	foreach(cell, options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);
		const char *name = def->defname;
		char	   *value = defGetString(def);

		if (strcmp(name, "brokers") == 0)
			name = "bootstrap.servers";
		if (kl_is_secret_property(name))
			*secrets = lappend(*secrets, pstrdup(value));

		if (rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
		{
			/* the validator let it in; a different librdkafka may not */
			rd_kafka_conf_destroy(conf);
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("librdkafka refuses property \"%s\" of server \"%s\"",
							def->defname, server->servername),
					 kl_is_secret_property(name) ? 0 :
					 errdetail_internal("librdkafka: %s", errstr),
					 errhint("Correct it with ALTER SERVER or ALTER USER MAPPING.")));
		}
	}
	return conf;
}

/*
 * kl_scrub_secrets
 *		Return text with every secret value replaced by "********".
 */
char *
kl_scrub_secrets(const char *text, List *secrets)
{
	char	   *result = pstrdup(text);
	ListCell   *cell;

	foreach(cell, secrets)
	{
		const char *secret = lfirst(cell);
		size_t		slen = strlen(secret);
		StringInfoData out;
		const char *p;
		const char *hit;

		if (slen == 0 || strstr(result, secret) == NULL)
			continue;
		initStringInfo(&out);
		p = result;
		while ((hit = strstr(p, secret)) != NULL)
		{
			appendBinaryStringInfo(&out, p, hit - p);
			appendStringInfoString(&out, "********");
			p = hit + slen;
		}
		appendStringInfoString(&out, p);
		pfree(result);
		result = out.data;
	}
	return result;
}

/*
 * kl_foreign_table_options
 *		The "source" and "status" options of a kafka_lake foreign table.
 */
void
kl_foreign_table_options(Oid relid, char **source, char **status)
{
	ForeignTable *table = GetForeignTable(relid);
	ListCell   *cell;

	*source = NULL;
	*status = NULL;
	foreach(cell, table->options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, "source") == 0)
			*source = defGetString(def);
		else if (strcmp(def->defname, "status") == 0)
			*status = defGetString(def);
	}
}
