/*-------------------------------------------------------------------------
 *
 * names.c
 *	  The names users give kafka_lake, checked before anything is stored:
 *	  a source's name, a topic, a consumer group id.
 *
 * A source name becomes a directory under the landing directory and the
 * name of a foreign table, kafka_lake.<source>_records, so it is an
 * identifier-like name short enough for that table name to fit NAMEDATALEN.
 * A topic becomes a directory name too (topic=<topic>): Kafka's own rule is
 * what keeps it inside the landing directory.  A group id is sent in every
 * Kafka request of the source, so it must fit a Kafka string.
 *
 * IDENTIFICATION
 *	  src/base/names.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"

#include "base/names.h"

#define KL_MAX_SOURCE_NAME			55	/* so that "<source>_records" fits NAMEDATALEN */
#define KL_MAX_KAFKA_STRING			32767	/* bytes of a Kafka protocol string */

/*
 * kl_check_source_name
 *		A source name is an identifier-like name: [a-z_][a-z0-9_]*, short
 *		enough that its foreign table name fits.
 */
void
kl_check_source_name(const char *name)
{
	int			len = strlen(name);
	bool		ok = (len >= 1 && len <= 63 &&
					  ((name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'));

	for (int i = 1; ok && i < len; i++)
	{
		char		c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
			ok = false;
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid source name \"%s\"", name),
				 errdetail("A source name starts with a lower-case letter or an underscore, followed by lower-case letters, digits or underscores."),
				 errhint("For example: machine_events.")));
	if (len > KL_MAX_SOURCE_NAME)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("source name \"%s\" is too long", name),
				 errdetail("The foreign table \"%s_records\" must fit in %d bytes.",
						   name, NAMEDATALEN - 1),
				 errhint("Use at most %d characters.", KL_MAX_SOURCE_NAME)));
}

/*
 * kl_check_topic_name
 *		Kafka's own rule: [A-Za-z0-9._-]{1,249}, and not "." or "..".  The
 *		topic becomes a directory name, so the rule is also what keeps it
 *		inside the landing directory.
 */
void
kl_check_topic_name(const char *topic)
{
	int			len = strlen(topic);
	bool		ok = (len >= 1 && len <= 249 &&
					  strcmp(topic, ".") != 0 && strcmp(topic, "..") != 0);

	for (int i = 0; ok && i < len; i++)
	{
		char		c = topic[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			ok = false;
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid topic name \"%s\"", topic),
				 errdetail("A Kafka topic name has 1 to 249 characters from [A-Za-z0-9._-] and is not \".\" or \"..\".")));
}

/*
 * kl_check_group_id
 *		What Kafka cannot carry as a consumer group id is refused before it
 *		is stored: a Kafka string holds at most 32767 bytes (UTF-8), and a
 *		longer group id makes every request of the source malformed, which
 *		the broker answers by closing the connection (every land() would
 *		time out blaming the broker).  Control characters are refused too:
 *		Kafka takes them, but no tool shows such a group truthfully.
 */
void
kl_check_group_id(const char *group_id)
{
	size_t		len = strlen(group_id);
	char	   *utf8;

	for (size_t i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) group_id[i];

		if (c < 0x20 || c == 0x7F)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_NAME),
					 errmsg("invalid consumer group id"),
					 errdetail("The group id contains the control character U+%04X at byte %d.",
							   c, (int) i + 1),
					 errhint("Use printable characters only, for example kafka-lake-machine-events.")));
	}
	utf8 = pg_server_to_any(group_id, len, PG_UTF8);
	if (strlen(utf8) > KL_MAX_KAFKA_STRING)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("consumer group id is too long"),
				 errdetail("Kafka strings hold at most %d bytes; this group id has %zu bytes in UTF-8.",
						   KL_MAX_KAFKA_STRING, strlen(utf8)),
				 errhint("Use a shorter group id, or leave group_id out for the default kafka_lake.<database>.<source>.")));
}
