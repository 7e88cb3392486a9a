/*-------------------------------------------------------------------------
 *
 * options.c
 *	  The foreign-data wrapper's validator, and the librdkafka configuration
 *	  of a server built from its options and the caller's user mapping; the
 *	  servers of the wrapper, and who may read a source through a foreign
 *	  table (the rule the validator applies to the option "source", and the
 *	  scan again, fdw.c).
 *
 * A Kafka cluster is a foreign server.  Its options are "brokers" (the
 * bootstrap list) and any librdkafka property; a user mapping carries the
 * properties that belong to one role, secrets above all.  Every option is
 * checked when it is set, by handing it to librdkafka's own rd_kafka_conf_set
 * on a scratch configuration, so a typo or a bad value fails at CREATE or
 * ALTER time with librdkafka's message and not at the first land().
 *
 * Who may set what.  A server's options are set by its owner and a user
 * mapping's by the role it is for (or the server's owner); neither need be a
 * superuser: a role granted USAGE on the wrapper creates servers, one granted
 * USAGE on a server creates its own mapping.  So what a property can do
 * decides who may set it, in one table (kl_property_rules), each entry with
 * its reason:
 *	- OWNED: properties kafka_lake sets itself (group.id, offset handling, the
 *	  prefetch queue that bounds memory, the interval of the kinit command)
 *	  are refused everywhere, with a hint that says what to use instead;
 *	- NEVER: properties that would make the backend load code, run a program
 *	  or give up one of its signal handlers (plugins, OpenSSL engines and
 *	  providers, the kinit command, librdkafka's termination signal, its test
 *	  interfaces) are refused everywhere, for superusers too: superusers have
 *	  better ways to do those things than through a Kafka client;
 *	- SECRET: secrets (sasl.password, ssl.key.password, ...) are refused on a
 *	  server and on the wrapper, because pg_foreign_server is readable by
 *	  everyone; PostgreSQL shows user mapping options only to their owner and
 *	  to superusers.  No error message, log line or EXPLAIN ever prints a
 *	  secret's value: librdkafka text is scrubbed of every secret value
 *	  before it is reported (kl_scrub_secrets), and SQL text in the server log
 *	  of the value of every option named like a secret (kl_scrub_sql_secrets,
 *	  called from the emit_log_hook of kafka_lake.c);
 *	- SUPERUSER: properties that reach the database server's own files,
 *	  network or credentials are set by superusers only, on a server as in a
 *	  user mapping: file paths (the backend reads them as the server's
 *	  operating system user), every Kerberos option (they pick which Kerberos
 *	  credentials of that user the backend authenticates with; the keytab is a
 *	  file), the OAuth token URL (the backend would fetch it), and librdkafka's
 *	  debug output (it shows the configuration and internals of every
 *	  connection, and floods the server log).  The SASL mechanism GSSAPI is a
 *	  superuser's choice too: it authenticates with the Kerberos credentials of
 *	  the server's operating system user.
 * Every other property (timeouts, sizes, client.id, TLS ciphers, inline PEM
 * certificates, SASL PLAIN, SCRAM and OAUTHBEARER settings, ...) names nothing
 * on the database server and concerns only the connections of the role that
 * uses it.
 *
 * The rules are applied again each time a configuration is built
 * (kl_build_conf), whoever set the options, so a catalog written by an earlier
 * release cannot get around them: an OWNED or NEVER property is refused;
 * librdkafka's kinit command is turned off, since librdkafka 2.0.2 runs
 * sasl.kerberos.kinit.cmd (by default a shell command line with the principal
 * pasted into it unquoted) whenever sasl.kerberos.min.time.before.relogin is
 * not 0, and kafka_lake sets that to 0: Kerberos tickets are refreshed outside
 * PostgreSQL; and GSSAPI (librdkafka's default mechanism whenever
 * security.protocol is SASL_*) serves a role that is not a superuser only when
 * a superuser's server alone chose it.
 *
 * Foreign tables take "source" and "status"; a column may take "field" to
 * read an event field of another name.
 *
 * A server may also name a Confluent Schema Registry, with options that are
 * kafka_lake's own and never reach librdkafka (registry.c reads them through
 * kl_registry_settings): "schema.registry.url" on the server (an http:// or
 * https:// URL, a path prefix allowed; any other scheme, a URL with
 * credentials, a query or a fragment is refused), the secret
 * "schema.registry.basic.auth.user.info" ("user:password") in a user mapping
 * only, and "schema.registry.ssl.ca.location" (a file: superusers only).
 *
 * IDENTIFICATION
 *	  src/kafka/options.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdio.h>

#include "access/reloptions.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_foreign_data_wrapper.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "base/compat.h"
#include "base/names.h"
#include "format/batch_format.h"
#include "kafka/options.h"

PG_FUNCTION_INFO_V1(kafka_lake_fdw_validator);

/* Why a property is refused, or where it may appear */
typedef enum KlPropertyRule
{
	KL_PROP_OWNED,				/* kafka_lake sets it itself: refused everywhere */
	KL_PROP_NEVER,				/* loads code, runs programs, takes a signal:
								 * refused everywhere */
	KL_PROP_SECRET,				/* only in a user mapping, never shown */
	KL_PROP_SUPERUSER			/* reaches the server's files, network or
								 * credentials: set by superusers only */
} KlPropertyRule;

typedef struct KlPropertyRuleEntry
{
	const char *name;			/* a property, or a prefix ending in "." */
	KlPropertyRule rule;
	const char *why;			/* OWNED: what to do instead (hint); NEVER,
								 * SUPERUSER: the reason (detail) */
} KlPropertyRuleEntry;

#define KL_WHY_FILE "The backend reads that file as the database server's operating system user."
#define KL_WHY_COMMITS "kafka_lake commits offsets itself, and only after the records are durable."

static const KlPropertyRuleEntry kl_property_rules[] = {
	/* kafka_lake sets these itself */
	{"bootstrap.servers", KL_PROP_OWNED, "Use the option \"brokers\"."},
	{"metadata.broker.list", KL_PROP_OWNED, "Use the option \"brokers\"."},
	{"group.id", KL_PROP_OWNED, "Each source has its own group: use the group_id argument of kafka_lake.create_source."},
	{"group.instance.id", KL_PROP_OWNED, "kafka_lake assigns partitions itself and does not join the group."},
	{"enable.auto.commit", KL_PROP_OWNED, KL_WHY_COMMITS},
	{"auto.commit.enable", KL_PROP_OWNED, KL_WHY_COMMITS},
	{"enable.auto.offset.store", KL_PROP_OWNED, KL_WHY_COMMITS},
	{"offset.store.method", KL_PROP_OWNED, KL_WHY_COMMITS},
	{"auto.offset.reset", KL_PROP_OWNED, "kafka_lake never skips records silently: see land(..., allow_expired => true)."},
	{"enable.partition.eof", KL_PROP_OWNED, "kafka_lake reads each partition up to its high watermark itself."},
	{"queued.min.messages", KL_PROP_OWNED, "Set kafka_lake.batch_max_records instead: it also sizes the prefetch queue."},
	{"queued.max.messages.kbytes", KL_PROP_OWNED, "Set kafka_lake.batch_max_bytes instead: it also sizes the prefetch queue."},
	{"log.queue", KL_PROP_OWNED, "kafka_lake forwards librdkafka's log to the server log itself."},
	{"sasl.kerberos.min.time.before.relogin", KL_PROP_OWNED,
	"kafka_lake sets it to 0 so that librdkafka never runs its kinit command; refresh Kerberos tickets outside PostgreSQL."},
	/* code, programs and signals of the backend: for nobody */
	{"plugin.library.paths", KL_PROP_NEVER, "Loading libraries into a database backend is not allowed."},
	{"sasl.kerberos.kinit.cmd", KL_PROP_NEVER,
	"Running programs from a database backend is not allowed; refresh Kerberos tickets outside PostgreSQL."},
	{"ssl.engine.location", KL_PROP_NEVER, "Loading OpenSSL engines into a database backend is not allowed."},
	{"ssl.engine.id", KL_PROP_NEVER, "Loading OpenSSL engines into a database backend is not allowed."},
	{"ssl.providers", KL_PROP_NEVER,
	"Loading OpenSSL providers (which may be named by a path) into a database backend is not allowed."},
	{"internal.termination.signal", KL_PROP_NEVER,
	"librdkafka would install its own handler for that signal, replacing the database backend's."},
	{"test.", KL_PROP_NEVER, "librdkafka's test interfaces (an in-process mock cluster) have no place in a database backend."},
	/* secrets */
	{"sasl.password", KL_PROP_SECRET, NULL},
	{"ssl.key.password", KL_PROP_SECRET, NULL},
	{"ssl.keystore.password", KL_PROP_SECRET, NULL},
	{"ssl.key.pem", KL_PROP_SECRET, NULL},
	{"sasl.oauthbearer.client.secret", KL_PROP_SECRET, NULL},
	{"sasl.oauthbearer.config", KL_PROP_SECRET, NULL},
	{"schema.registry.basic.auth.user.info", KL_PROP_SECRET, NULL},
	/* the database server's own files, network and credentials */
	{"ssl.key.location", KL_PROP_SUPERUSER, KL_WHY_FILE},
	{"ssl.certificate.location", KL_PROP_SUPERUSER, KL_WHY_FILE},
	{"ssl.ca.location", KL_PROP_SUPERUSER, KL_WHY_FILE},
	{"ssl.crl.location", KL_PROP_SUPERUSER, KL_WHY_FILE},
	{"ssl.keystore.location", KL_PROP_SUPERUSER, KL_WHY_FILE},
	{"sasl.kerberos.", KL_PROP_SUPERUSER,
	"Kerberos options choose which Kerberos credentials of the database server's operating system user the backend authenticates with."},
	{"sasl.oauthbearer.token.endpoint.url", KL_PROP_SUPERUSER,
	"The backend would fetch that URL from the database server."},
	{"debug", KL_PROP_SUPERUSER,
	"librdkafka's debug output shows the configuration and internals of every connection, and floods the server log."},
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

/* The Schema Registry's options (kafka_lake's own, see the file header) */
#define KL_REGISTRY_PREFIX		"schema.registry."
#define KL_REGISTRY_URL			"schema.registry.url"
#define KL_REGISTRY_USER_INFO	"schema.registry.basic.auth.user.info"
#define KL_REGISTRY_CA			"schema.registry.ssl.ca.location"

static List *kl_librdkafka_property_names(void);
static void kl_validate_registry_option(DefElem *def, Oid catalog);
static List *kl_user_mapping_options(Oid userid, Oid serverid);
static const KlPropertyRuleEntry *kl_property_rule(const char *name);
static void kl_validate_property(DefElem *def, Oid catalog);
static const char *kl_closest_name(const char *name);
static const char *kl_catalog_word(Oid catalog);

/*
 * kl_property_rule
 *		The rule for a librdkafka property, or NULL when it is a plain one:
 *		an entry of that name, else the longest prefix entry that matches.
 *		Any property whose name speaks of a password or a secret is a secret
 *		even if this release of the table does not know it.
 */
static const KlPropertyRuleEntry *
kl_property_rule(const char *name)
{
	static const KlPropertyRuleEntry secret_by_name = {NULL, KL_PROP_SECRET, NULL};
	const KlPropertyRuleEntry *prefix = NULL;

	for (const KlPropertyRuleEntry *r = kl_property_rules; r->name; r++)
	{
		size_t		len = strlen(r->name);

		if (strcmp(r->name, name) == 0)
			return r;
		if (r->name[len - 1] == '.' && strncmp(r->name, name, len) == 0 &&
			(prefix == NULL || strlen(prefix->name) < len))
			prefix = r;
	}
	if (strstr(name, "password") || strstr(name, "secret"))
		return &secret_by_name;
	return prefix;
}

/*
 * kl_is_gssapi
 *		Does a sasl.mechanism value name GSSAPI (in any case: Cyrus SASL
 *		takes mechanism names in any case)?
 */
static bool
kl_is_gssapi(const char *mechanism)
{
	return pg_strcasecmp(mechanism, "GSSAPI") == 0;
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

		if (strncmp(def->defname, KL_REGISTRY_PREFIX, strlen(KL_REGISTRY_PREFIX)) == 0)
		{
			kl_validate_registry_option(def, catalog);
			continue;
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
				/* USAGE on the server does not open a source */
				kl_check_source_read(value, InvalidOid, GetUserId());
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
 * kl_registry_url_problem
 *		Why url cannot be a Schema Registry's URL, or NULL: http:// or
 *		https://, a host, then an optional path; no credentials, query,
 *		fragment, blank or control character.
 */
static const char *
kl_registry_url_problem(const char *url)
{
	const char *authority;
	const char *end;

	if (pg_strncasecmp(url, "http://", 7) == 0)
		authority = url + 7;
	else if (pg_strncasecmp(url, "https://", 8) == 0)
		authority = url + 8;
	else
		return "Only http:// and https:// URLs are allowed.";
	for (const char *c = url; *c; c++)
	{
		if ((unsigned char) *c <= ' ' || *c == 0x7f)
			return "The URL contains a blank or a control character.";
		if (*c == '?' || *c == '#')
			return "The URL has a query or a fragment; give the registry's base URL (a path prefix is allowed).";
	}
	end = authority + strcspn(authority, "/");
	if (end == authority)
		return "The URL names no host.";
	if (memchr(authority, '@', end - authority) != NULL)
		return "The URL carries credentials; they belong in the user mapping option \"" KL_REGISTRY_USER_INFO "\".";
	return NULL;
}

/*
 * kl_validate_registry_option
 *		Check one of the Schema Registry's options (see the file header).
 *		No message repeats a value: a URL may carry credentials, and the
 *		user info is a secret.
 */
static void
kl_validate_registry_option(DefElem *def, Oid catalog)
{
	const char *name = def->defname;
	char	   *value = defGetString(def);

	if (strcmp(name, KL_REGISTRY_URL) == 0)
	{
		const char *problem;

		if (catalog != ForeignServerRelationId)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("option \"%s\" is not valid on a %s", name, kl_catalog_word(catalog)),
					 errhint("Set \"%s\" on a server.", name)));
		problem = kl_registry_url_problem(value);
		if (problem != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for option \"%s\"", name),
					 errhidestmt(true),
					 errdetail("%s", problem),
					 errhint("For example: OPTIONS (ADD \"%s\" 'https://registry.example.com:8081').", name)));
	}
	else if (strcmp(name, KL_REGISTRY_USER_INFO) == 0)
	{
		if (catalog != UserMappingRelationId)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("secret property \"%s\" is not allowed on a %s",
							name, kl_catalog_word(catalog)),
					 errhidestmt(true),
					 errdetail("Options of a %s are readable by every role.",
							   kl_catalog_word(catalog)),
					 errhint("Put secrets in a user mapping: CREATE USER MAPPING FOR CURRENT_USER SERVER ... OPTIONS (\"%s\" 'user:password').",
							 name)));
		if (strchr(value, ':') == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("invalid value for option \"%s\"", name),
					 errhidestmt(true),
					 errdetail("The value is not of the form user:password."),
					 errhint("Give the registry's user and password separated by a colon.")));
	}
	else if (strcmp(name, KL_REGISTRY_CA) == 0)
	{
		if (catalog != ForeignServerRelationId && catalog != UserMappingRelationId)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("option \"%s\" is not valid on a %s", name, kl_catalog_word(catalog)),
					 errhint("Set \"%s\" on a server or in a user mapping.", name)));
		if (!superuser())
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("only superusers can set \"%s\"", name),
					 errdetail("%s", KL_WHY_FILE),
					 errhint("Ask a superuser to set it on the server, or in your user mapping.")));
		if (!is_absolute_path(value))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("option \"%s\" must be an absolute path", name)));
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("unknown Schema Registry option \"%s\"", name),
				 errhint("The Schema Registry's options are \"%s\" (server), \"%s\" (user mapping) and \"%s\".",
						 KL_REGISTRY_URL, KL_REGISTRY_USER_INFO, KL_REGISTRY_CA)));
}

/*
 * kl_registry_settings
 *		How a role reaches a server's Schema Registry: the server's URL (NULL
 *		when it names none), the user info and CA file of the role's user
 *		mapping (or the PUBLIC one), the CA file of the server otherwise.
 */
void
kl_registry_settings(ForeignServer *server, Oid userid, KlRegistrySettings *out)
{
	ListCell   *cell;

	memset(out, 0, sizeof(*out));
	foreach(cell, server->options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, KL_REGISTRY_URL) == 0)
			out->url = defGetString(def);
		else if (strcmp(def->defname, KL_REGISTRY_CA) == 0)
			out->ca_location = defGetString(def);
	}
	foreach(cell, kl_user_mapping_options(userid, server->serverid))
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, KL_REGISTRY_USER_INFO) == 0)
			out->user_info = defGetString(def);
		else if (strcmp(def->defname, KL_REGISTRY_CA) == 0)
			out->ca_location = defGetString(def);
	}
	/* a catalog written by hand, or by a release that did not check it */
	if (out->url != NULL && kl_registry_url_problem(out->url) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" of server \"%s\" is not a valid Schema Registry URL",
						KL_REGISTRY_URL, server->servername),
				 errdetail("%s", kl_registry_url_problem(out->url)),
				 errhint("Correct it with ALTER SERVER %s OPTIONS (SET \"%s\" '...').",
						 quote_identifier(server->servername), KL_REGISTRY_URL)));
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

	if (rule != NULL && rule->rule == KL_PROP_OWNED)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("librdkafka property \"%s\" cannot be set on a kafka_lake %s",
						name, kl_catalog_word(catalog)),
				 errhint("%s", rule->why)));

	if (rule != NULL && rule->rule == KL_PROP_NEVER)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("librdkafka property \"%s\" cannot be set on a kafka_lake %s",
						name, kl_catalog_word(catalog)),
				 errdetail("%s", rule->why),
				 errhint("Leave it out; kafka_lake works without it.")));

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

	if (rule != NULL && rule->rule == KL_PROP_SUPERUSER && !superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only superusers can set \"%s\"", name),
				 errdetail("%s", rule->why),
				 errhint("Ask a superuser to set it on the server, or in your user mapping.")));

	if ((strcmp(name, "sasl.mechanism") == 0 || strcmp(name, "sasl.mechanisms") == 0) &&
		kl_is_gssapi(value) && !superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only superusers can choose the SASL mechanism GSSAPI"),
				 errdetail("GSSAPI authenticates with the Kerberos credentials of the database server's operating system user."),
				 errhint("Use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER, or ask a superuser to configure GSSAPI on the server.")));

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
 * kl_conf_option
 *		Apply one option of a server or a user mapping to a configuration,
 *		under the rules of kl_property_rules (see the file header).
 */
static void
kl_conf_option(rd_kafka_conf_t *conf, ForeignServer *server, DefElem *def,
			   bool in_mapping, List **secrets)
{
	const char *name = def->defname;
	char	   *value = defGetString(def);
	const KlPropertyRuleEntry *rule;
	char		errstr[512];

	/* the Schema Registry's options are kafka_lake's, not librdkafka's */
	if (strncmp(name, KL_REGISTRY_PREFIX, strlen(KL_REGISTRY_PREFIX)) == 0)
		return;
	if (strcmp(name, "brokers") == 0)
		name = "bootstrap.servers";
	else if ((rule = kl_property_rule(name)) != NULL &&
			 (rule->rule == KL_PROP_OWNED || rule->rule == KL_PROP_NEVER))
	{
		/* an earlier release let it in */
		rd_kafka_conf_destroy(conf);
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("librdkafka property \"%s\" of server \"%s\" is not allowed",
						name, server->servername),
				 errdetail("%s", rule->why),
				 errhint("Remove it: ALTER %s OPTIONS (DROP \"%s\").",
						 in_mapping ? "USER MAPPING FOR ... SERVER ..." : "SERVER ...", name)));
	}
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

/*
 * kl_build_conf
 *		A librdkafka configuration for a server as seen by a role: the
 *		server's options, then the role's user mapping, with librdkafka's
 *		kinit command turned off.  The values of secret properties are
 *		appended to *secrets so that text coming back from librdkafka can be
 *		scrubbed.
 */
rd_kafka_conf_t *
kl_build_conf(ForeignServer *server, Oid userid, List **secrets)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	List	   *mapping = kl_user_mapping_options(userid, server->serverid);
	bool		mapping_chooses_sasl = false;
	ListCell   *cell;
	char		protocol[64];
	char		mechanism[64];
	size_t		len;
	char		errstr[512];

	foreach(cell, server->options)
		kl_conf_option(conf, server, (DefElem *) lfirst(cell), false, secrets);
	foreach(cell, mapping)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		kl_conf_option(conf, server, def, true, secrets);
		if (strcmp(def->defname, "security.protocol") == 0 ||
			strcmp(def->defname, "sasl.mechanism") == 0 ||
			strcmp(def->defname, "sasl.mechanisms") == 0)
			mapping_chooses_sasl = true;
	}

	/* librdkafka 2.0.2 runs sasl.kerberos.kinit.cmd unless this is 0 */
	if (rd_kafka_conf_set(conf, "sasl.kerberos.min.time.before.relogin", "0",
						  errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
	{
		rd_kafka_conf_destroy(conf);
		ereport(ERROR,
				(errcode(ERRCODE_FDW_ERROR),
				 errmsg("could not turn off librdkafka's kinit command"),
				 errdetail_internal("%s", errstr),
				 errhint("kafka_lake needs a librdkafka that knows sasl.kerberos.min.time.before.relogin (1.0 or later).")));
	}

	/*
	 * GSSAPI uses the Kerberos credentials of the database server's operating
	 * system user: a role that is not a superuser gets them only when a
	 * superuser's server alone chose them.
	 */
	len = sizeof(protocol);
	if (rd_kafka_conf_get(conf, "security.protocol", protocol, &len) != RD_KAFKA_CONF_OK)
		protocol[0] = '\0';
	len = sizeof(mechanism);
	if (rd_kafka_conf_get(conf, "sasl.mechanisms", mechanism, &len) != RD_KAFKA_CONF_OK)
		mechanism[0] = '\0';
	if (pg_strncasecmp(protocol, "sasl", 4) == 0 && kl_is_gssapi(mechanism) &&
		!superuser_arg(userid) &&
		(mapping_chooses_sasl || !superuser_arg(server->owner)))
	{
		rd_kafka_conf_destroy(conf);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only superusers can use the Kerberos credentials of the database server"),
				 errdetail("Server \"%s\" would authenticate with SASL mechanism GSSAPI (librdkafka's default when security.protocol is SASL_PLAINTEXT or SASL_SSL), that is with the Kerberos credentials of the database server's operating system user; for a role that is not a superuser only a superuser's server may choose that.",
						   server->servername),
				 errhint("Set \"sasl.mechanism\" to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER in the user mapping, or ask a superuser to configure GSSAPI on the server.")));
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
 * kl_get_server
 *		A foreign server of the kafka_lake wrapper, by name.
 */
ForeignServer *
kl_get_server(const char *name)
{
	ForeignServer *server = GetForeignServerByName(name, true);
	ForeignDataWrapper *fdw;

	if (server == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("server \"%s\" does not exist", name),
				 errhint("Create it with CREATE SERVER %s FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers 'host:port').",
						 quote_identifier(name))));
	fdw = GetForeignDataWrapper(server->fdwid);
	if (strcmp(fdw->fdwname, "kafka_lake") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("server \"%s\" does not use the kafka_lake foreign-data wrapper", name)));
	return server;
}

/*
 * kl_check_server_usage
 *		Creating a source on a server, or sending records through it, needs
 *		USAGE on the server, as declaring a foreign table there does: the
 *		server's options may carry what a superuser set up for the roles it
 *		grants (a client certificate, Kerberos).  (land(), replay() and lag()
 *		of an existing source are granted by EXECUTE alone: the source's
 *		creator chose its server.)
 */
void
kl_check_server_usage(ForeignServer *server)
{
	if (kl_server_aclcheck(server->serverid, GetUserId(), ACL_USAGE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for foreign server %s", server->servername),
				 errhint("GRANT USAGE ON FOREIGN SERVER %s TO %s;",
						 quote_identifier(server->servername),
						 quote_identifier(GetUserNameFromId(GetUserId(), false)))));
}

/*
 * kl_role_may_read_source
 *		May userid read source, that is, SELECT its own table
 *		kafka_lake.<source>_records (the whole table, or every column)?  What
 *		kafka_lake shows of a source beyond its counts (its last error in
 *		source_status, its late events) is shown to such roles only.
 */
bool
kl_role_may_read_source(const char *source, Oid userid)
{
	Oid			nsp = get_namespace_oid("kafka_lake", true);
	Oid			relid = OidIsValid(nsp) ?
		get_relname_relid(psprintf("%s_records", source), nsp) : InvalidOid;

	if (superuser_arg(userid))
		return true;
	return OidIsValid(relid) &&
		(pg_class_aclcheck(relid, userid, ACL_SELECT) == ACLCHECK_OK ||
		 pg_attribute_aclcheck_all(relid, userid, ACL_SELECT, ACLMASK_ALL) == ACLCHECK_OK);
}

/*
 * kl_check_source_read
 *		May userid read source through the foreign table relid (InvalidOid:
 *		one being declared)?  Through the source's own table, PostgreSQL's
 *		own check on that table decides; through any other, userid needs
 *		SELECT on the source's own table (see the file header).  A source
 *		whose table is missing is then readable by superusers only; a table
 *		declared before its source exists is checked when it is read.
 */
void
kl_check_source_read(const char *source, Oid relid, Oid userid)
{
	char	   *relname = psprintf("%s_records", source);
	Oid			nsp = get_namespace_oid("kafka_lake", true);
	Oid			source_rel = OidIsValid(nsp) ? get_relname_relid(relname, nsp) : InvalidOid;

	if (OidIsValid(source_rel) && source_rel == relid)
		return;
	/* the source's own typed table is governed by its own privileges too */
	if (OidIsValid(nsp) && OidIsValid(relid) &&
		get_relname_relid(psprintf("%s_events", source), nsp) == relid)
		return;
	if (!OidIsValid(source_rel) && (!OidIsValid(relid) || superuser_arg(userid)))
		return;
	if (OidIsValid(source_rel) &&
		(pg_class_aclcheck(source_rel, userid, ACL_SELECT) == ACLCHECK_OK ||
		 pg_attribute_aclcheck_all(source_rel, userid, ACL_SELECT, ACLMASK_ALL) == ACLCHECK_OK))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to read source \"%s\"", source),
			 errdetail("Reading a source through a foreign table other than kafka_lake.%s needs SELECT on kafka_lake.%s (on the whole table), which role \"%s\" does not have.",
					   quote_identifier(relname), quote_identifier(relname),
					   GetUserNameFromId(userid, false)),
			 errhint("GRANT SELECT ON kafka_lake.%s TO %s, or read the source through a view owned by a role that may read it.",
					 quote_identifier(relname),
					 quote_identifier(GetUserNameFromId(userid, false)))));
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

/* ----------------------------------------------------------------
 *		Secrets in SQL text (for the server log)
 *
 * PostgreSQL writes statements to the server log as they were typed
 * (log_statement, log_min_duration_statement, the STATEMENT line of an
 * error), and a CREATE or ALTER USER MAPPING holds kafka_lake's secrets as
 * string constants.  kl_scrub_sql_secrets finds them without parsing the
 * statement, which may not even parse: wherever a name that kafka_lake
 * treats as a secret (kl_is_secret_property, in any case, quoted or not,
 * which also covers CREATE ROLE ... PASSWORD) is followed, after blanks and
 * comments, by a string constant ('...', E'...', U&'...', $tag$...$tag$, or
 * ''...'' in SQL held inside a string) the constant's content is replaced
 * by ******** (and so is a "schema.registry.url" that carries credentials,
 * which the validator refuses); in the text of a statement, also a bare word after a
 * property name (a statement that does not parse is logged all the same).  The scan does not track quoting, so it
 * also finds secrets in SQL held in a string or a dollar-quoted body; a name
 * directly after a quote is the content of a string, not a name, and is
 * skipped.  A secret-named option whose value is not there (DROP, or a
 * misspelt statement) leaves the text as it is.
 * ----------------------------------------------------------------
 */

#define KL_MASK "********"

static bool
kl_sql_ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		c == '_' || c == '$' || IS_HIGHBIT_SET(c);
}

/*
 * kl_contains_ci
 *		Does text contain word (lower-case ASCII), in any case?
 */
static bool
kl_contains_ci(const char *text, const char *word)
{
	size_t		n = strlen(word);

	for (const char *p = text; *p; p++)
	{
		if (pg_strncasecmp(p, word, n) == 0)
			return true;
	}
	return false;
}

/*
 * kl_text_may_hold_secret
 *		A quick test that lets most log lines through untouched: can text
 *		hold the name of a secret property at all?
 */
bool
kl_text_may_hold_secret(const char *text)
{
	return text != NULL &&
		(kl_contains_ci(text, "password") || kl_contains_ci(text, "secret") ||
		 kl_contains_ci(text, "key.pem") || kl_contains_ci(text, "oauthbearer.config") ||
		 kl_contains_ci(text, "auth.user.info") || kl_contains_ci(text, "registry.url"));
}

/*
 * kl_sql_skip_blanks
 *		Past white space and comments.
 */
static const char *
kl_sql_skip_blanks(const char *p)
{
	for (;;)
	{
		if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v')
			p++;
		else if (p[0] == '-' && p[1] == '-')
		{
			while (*p && *p != '\n')
				p++;
		}
		else if (p[0] == '/' && p[1] == '*')
		{
			const char *end = strstr(p + 2, "*/");

			p = end ? end + 2 : p + strlen(p);
		}
		else
			return p;
	}
}

/*
 * kl_sql_value
 *		If a value (a string constant, or with bare_words a bare word or
 *		number) starts at p, set *start and *end to its content and return
 *		the end of the value; else NULL.  An unterminated constant runs to
 *		the end of the text.
 */
static const char *
kl_sql_value(const char *p, bool bare_words, const char **start, const char **end)
{
	const char *q;

	if ((p[0] == 'E' || p[0] == 'e') && p[1] == '\'')
	{
		/* E'...': backslash escapes and doubled quotes */
		*start = q = p + 2;
		while (*q && !(*q == '\'' && q[1] != '\''))
			q += (*q == '\\' || *q == '\'') && q[1] ? 2 : 1;
		*end = q;
		return *q ? q + 1 : q;
	}
	if ((p[0] == 'U' || p[0] == 'u') && p[1] == '&' && p[2] == '\'')
		p += 2;
	if (p[0] == '\'' && p[1] == '\'' && p[2] != '\0' && p[2] != '\'' && p[2] != ',' &&
		p[2] != ')' && p[2] != ' ' && p[2] != '\n' && p[2] != ';')
	{
		/* ''...'': a constant in SQL that is itself held in a string */
		const char *close = strstr(p + 2, "''");

		*start = p + 2;
		*end = close ? close : p + strlen(p);
		return close ? close + 2 : *end;
	}
	if (p[0] == '\'')
	{
		*start = q = p + 1;
		while (*q && !(*q == '\'' && q[1] != '\''))
			q += (*q == '\'') ? 2 : 1;
		*end = q;
		return *q ? q + 1 : q;
	}
	if (p[0] == '$')
	{
		/* $tag$...$tag$ */
		const char *tag_end = p + 1;
		char	   *tag;
		const char *close;

		while (kl_sql_ident_char(*tag_end) && *tag_end != '$')
			tag_end++;
		if (*tag_end != '$' || (tag_end > p + 1 && p[1] >= '0' && p[1] <= '9'))
			return NULL;
		tag = pnstrdup(p, tag_end - p + 1);
		*start = tag_end + 1;
		close = strstr(*start, tag);
		*end = close ? close : *start + strlen(*start);
		q = close ? close + strlen(tag) : *end;
		pfree(tag);
		return q;
	}
	if (bare_words && (kl_sql_ident_char(p[0]) || p[0] == '-' || p[0] == '.'))
	{
		/* a bare word or number: not valid SQL, but it is logged all the same */
		*start = q = p;
		while (kl_sql_ident_char(*q) || *q == '.' || *q == '-')
			q++;
		*end = q;
		return q;
	}
	return NULL;
}

/*
 * kl_url_has_user_info
 *		Does the URL in [start, end) carry credentials (an '@' before the end
 *		of its authority)?
 */
static bool
kl_url_has_user_info(const char *start, const char *end)
{
	const char *scheme_end = NULL;

	for (const char *c = start; c + 2 < end; c++)
	{
		if (c[0] == ':' && c[1] == '/' && c[2] == '/')
		{
			scheme_end = c + 3;
			break;
		}
	}
	if (scheme_end == NULL)
		return memchr(start, '@', end - start) != NULL;
	for (const char *c = scheme_end; c < end && *c != '/'; c++)
	{
		if (*c == '@')
			return true;
	}
	return false;
}

/*
 * kl_sql_name_is_secret
 *		Is the name in [start, end) one that kafka_lake treats as a secret?
 */
static bool
kl_sql_name_is_secret(const char *start, const char *end)
{
	char	   *name = pnstrdup(start, end - start);
	bool		secret;

	for (char *c = name; *c; c++)
		*c = pg_ascii_tolower((unsigned char) *c);
	secret = kl_is_secret_property(name);
	pfree(name);
	return secret;
}

/*
 * kl_scrub_sql_secrets
 *		A copy of text (a statement, or with !statement a log message that
 *		may quote SQL) with the value of every secret-named option replaced
 *		by ********, or NULL when there is none.  The values found are
 *		appended to *values (when values is not NULL), for scrubbing the same
 *		values from the other parts of a log line.
 */
char *
kl_scrub_sql_secrets(const char *text, bool statement, List **values)
{
	StringInfoData out;
	const char *copied = text;
	const char *p = text;

	if (!kl_text_may_hold_secret(text))
		return NULL;
	initStringInfo(&out);
	while (*p)
	{
		const char *name_start;
		const char *name_end;
		const char *after;
		const char *value_start;
		const char *value_end;
		const char *next;
		bool		is_url;

		if (*p == '"')
		{
			const char *q = p + 1;

			while (*q && !(*q == '"' && q[1] != '"'))
				q += (*q == '"') ? 2 : 1;
			if (*q == '\0')
				break;
			name_start = p + 1;
			name_end = q;
			after = q + 1;
		}
		else if (kl_sql_ident_char(*p) && *p != '$' &&
				 (p == text || (!kl_sql_ident_char(p[-1]) && p[-1] != '\'' && p[-1] != '.')))
		{
			const char *q = p;

			while (kl_sql_ident_char(*q) || (*q == '.' && kl_sql_ident_char(q[1])))
				q++;
			name_start = p;
			name_end = q;
			after = q;
		}
		else
		{
			p++;
			continue;
		}

		p = after;
		is_url = false;
		if (!kl_sql_name_is_secret(name_start, name_end))
		{
			/* a registry URL with credentials in it is refused, and masked */
			if (name_end - name_start != strlen(KL_REGISTRY_URL) ||
				pg_strncasecmp(name_start, KL_REGISTRY_URL, name_end - name_start) != 0)
				continue;
			is_url = true;
		}
		/* a bare word only after a property name (with a dot), not after a column */
		next = kl_sql_value(kl_sql_skip_blanks(after),
							statement && memchr(name_start, '.', name_end - name_start) != NULL,
							&value_start, &value_end);
		if (next == NULL || value_end == value_start)
			continue;
		if (is_url && !kl_url_has_user_info(value_start, value_end))
			continue;
		appendBinaryStringInfo(&out, copied, value_start - copied);
		appendStringInfoString(&out, KL_MASK);
		if (values != NULL)
			*values = lappend(*values, pnstrdup(value_start, value_end - value_start));
		copied = value_end;
		p = next;
	}
	if (copied == text)
	{
		pfree(out.data);
		return NULL;
	}
	appendStringInfoString(&out, copied);
	return out.data;
}
