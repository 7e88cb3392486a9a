/*-------------------------------------------------------------------------
 *
 * options.h
 *	  The foreign-data wrapper's options, a server's librdkafka
 *	  configuration, secrets kept out of text (options.c).
 *
 * IDENTIFICATION
 *	  src/kafka/options.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_OPTIONS_H
#define KAFKA_LAKE_OPTIONS_H

#include <librdkafka/rdkafka.h>

#include "foreign/foreign.h"
#include "nodes/pg_list.h"

/* How a role reaches a server's Schema Registry (kl_registry_settings) */
typedef struct KlRegistrySettings
{
	const char *url;			/* schema.registry.url of the server, or NULL */
	const char *user_info;		/* user:password of the user mapping, or NULL */
	const char *ca_location;	/* a CA file (user mapping, else server), or NULL */
} KlRegistrySettings;

extern bool kl_is_secret_property(const char *name);
extern void kl_registry_settings(ForeignServer *server, Oid userid, KlRegistrySettings *out);
extern rd_kafka_conf_t *kl_build_conf(ForeignServer *server, Oid userid, List **secrets);
extern char *kl_scrub_secrets(const char *text, List *secrets);
extern bool kl_text_may_hold_secret(const char *text);
extern char *kl_scrub_sql_secrets(const char *text, bool statement, List **values);
extern void kl_foreign_table_options(Oid relid, char **source, char **status);
extern ForeignServer *kl_get_server(const char *name);
extern void kl_check_server_usage(ForeignServer *server);
extern bool kl_role_may_read_source(const char *source, Oid userid);
extern void kl_check_source_read(const char *source, Oid relid, Oid userid);

#endif							/* KAFKA_LAKE_OPTIONS_H */
