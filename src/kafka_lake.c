/*-------------------------------------------------------------------------
 *
 * kafka_lake.c
 *	  Module entry point: module magic, the registration of the settings
 *	  (GUCs), the check of the landing directory, and the server log hook
 *	  that keeps secrets out of the log.
 *
 * Settings (all superuser-only, the prefix "kafka_lake" is reserved):
 *
 *	kafka_lake.landing_dir		root of every landed file; relative paths are
 *								taken from the data directory
 *	kafka_lake.batch_max_records
 *	kafka_lake.batch_max_bytes	where land() and replay() cut a batch
 *	kafka_lake.fault_injection	one named point at which the next land,
 *								replay, bridge or compact raises an ERROR
 *								(or, written pause:<point>, waits there:
 *								base/fault.c)
 *
 * The variables of the settings are base/settings.c's, the fault points
 * base/fault.c's; this file registers them when the library loads.
 *
 * The landing directory must never be PostgreSQL's own: a source named
 * "base" under a landing_dir of "." would claim every database's files, and
 * drop_source(..., drop_landing => true) would remove them.  Its check hook
 * refuses the data directory, a directory that contains it, anything inside
 * PostgreSQL's own subdirectories (base, global, pg_*, the log directory) and
 * inside the targets of pg_wal and of the tablespace links, after resolving
 * relative paths, "..", and the symbolic links of the part of the path that
 * exists.  (Sources also never claim a directory that holds anything but
 * their own files, and only a directory carrying a source's marker is ever
 * removed: landing_files.c.)
 *
 * Secrets in the server log.  PostgreSQL writes statements to the log as
 * they were typed (log_statement, log_min_duration_statement, the STATEMENT
 * line of an error), and CREATE or ALTER USER MAPPING carries kafka_lake's
 * secrets in them.  An emit_log_hook sees every log line before it is
 * written: it replaces the value of every secret-named option in the
 * message, detail, hint, context and internal query, and in the statement
 * text (debug_query_string is pointed at a scrubbed copy), see
 * kl_scrub_sql_secrets in options.c.  The hook exists in a process only once
 * the library is loaded there, so it protects every statement only when
 * kafka_lake is in shared_preload_libraries; _PG_init therefore does nothing
 * that needs a database (it runs in the postmaster then).
 *
 * With shared_preload_libraries, _PG_init also asks for the small shared
 * memory table that keeps the last error of a failed land() for
 * source_status (source_status.c).
 *
 * IDENTIFICATION
 *	  src/kafka_lake.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include <dirent.h>
#include <stdlib.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/syslogger.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/elog.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/fault.h"
#include "base/settings.h"
#include "kafka/options.h"
#include "kafka_lake.h"
#include "landing/source_status.h"

PG_MODULE_MAGIC;

/* the log hook: the previous one, and the scrubbed statement we point to */
static emit_log_hook_type kl_prev_emit_log_hook = NULL;
static char *kl_scrubbed_query = NULL;
static List *kl_scrubbed_values = NIL;
static bool kl_in_emit_log_hook = false;

static bool kl_check_landing_dir(char **newval, void **extra, GucSource source);
static void kl_emit_log_hook(ErrorData *edata);

void		_PG_init(void);

/*
 * _PG_init
 *		Define the settings and install the log hook.  Nothing here needs a
 *		database: with shared_preload_libraries this runs in the postmaster.
 */
void
_PG_init(void)
{
	DefineCustomStringVariable("kafka_lake.landing_dir",
							   "Directory that holds every landed batch.",
							   "A relative path is taken from the data directory.",
							   &kl_landing_dir,
							   "kafka_lake",
							   PGC_SUSET,
							   0,
							   kl_check_landing_dir, NULL, NULL);

	DefineCustomIntVariable("kafka_lake.batch_max_records",
							"Largest number of records in one landed batch.",
							"A land() or replay() call is cut into batches, each "
							"landed and committed in turn.",
							&kl_batch_max_records,
							KL_BATCH_MAX_RECORDS_DEFAULT, 1, 10000000,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("kafka_lake.batch_max_bytes",
							"Largest sum of key and value bytes in one landed batch.",
							"Backend memory during land() is bounded by about twice this.",
							&kl_batch_max_bytes,
							KL_BATCH_MAX_BYTES_DEFAULT, 1024, INT_MAX,
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomStringVariable("kafka_lake.fault_injection",
							   "Point at which the next land, replay, bridge or compact raises an error (for tests).",
							   MemoryContextStrdup(TopMemoryContext,
												   psprintf("One of %s; pause:<point> waits there instead; empty disables it.",
															kl_fault_point_names())),
							   &kl_fault_injection,
							   "",
							   PGC_SUSET,
							   0,
							   kl_check_fault_injection,
							   kl_assign_fault_injection,
							   NULL);

	kl_reserve_guc_prefix("kafka_lake");

	kl_prev_emit_log_hook = emit_log_hook;
	emit_log_hook = kl_emit_log_hook;

	/* the last errors source_status shows (shared memory, when preloaded) */
	kl_status_shmem_init();
}

/*
 * kl_resolve_path
 *		An absolute, canonical form of path (relative to the data directory)
 *		with the symbolic links of its longest existing part resolved.
 */
static void
kl_resolve_path(const char *path, char *out)
{
	char		head[MAXPGPATH];
	char		rest[MAXPGPATH] = "";

	if (is_absolute_path(path))
		strlcpy(head, path, sizeof(head));
	else
		snprintf(head, sizeof(head), "%s/%s", DataDir, path);
	canonicalize_path(head);
	for (;;)
	{
		char	   *real = realpath(head, NULL);
		char	   *slash;
		char		tmp[MAXPGPATH];

		if (real != NULL)
		{
			snprintf(out, MAXPGPATH, "%s%s%s", real, rest[0] ? "/" : "", rest);
			free(real);
			canonicalize_path(out);
			return;
		}
		slash = last_dir_separator(head);
		if (slash == NULL || slash == head)
		{
			snprintf(out, MAXPGPATH, "%s%s%s", head, rest[0] ? "/" : "", rest);
			canonicalize_path(out);
			return;
		}
		snprintf(tmp, sizeof(tmp), "%s%s%s", slash + 1, rest[0] ? "/" : "", rest);
		strlcpy(rest, tmp, sizeof(rest));
		*slash = '\0';
	}
}

/*
 * kl_is_own_dir_name
 *		Is this entry of the data directory one of PostgreSQL's own?
 */
static bool
kl_is_own_dir_name(const char *name)
{
	char		log_dir[MAXPGPATH];

	if (strcmp(name, "base") == 0 || strcmp(name, "global") == 0 ||
		strncmp(name, "pg_", 3) == 0 || strncmp(name, "PG_", 3) == 0 ||
		strncmp(name, "postgresql.", 11) == 0 || strncmp(name, "postmaster.", 11) == 0)
		return true;
	if (Log_directory != NULL && !is_absolute_path(Log_directory))
	{
		strlcpy(log_dir, Log_directory, sizeof(log_dir));
		canonicalize_path(log_dir);
		log_dir[strcspn(log_dir, "/")] = '\0';
		if (strcmp(name, log_dir) == 0)
			return true;
	}
	return false;
}

/*
 * kl_landing_dir_problem
 *		Why a resolved landing directory would mix with PostgreSQL's own files
 *		(data is the resolved data directory), or NULL.
 */
static char *
kl_landing_dir_problem(const char *landing, const char *data)
{
	char		link[MAXPGPATH];
	char		target[MAXPGPATH];
	DIR		   *dir;
	struct dirent *de;
	char	   *problem = NULL;

	if (strcmp(landing, "/") == 0 || path_is_prefix_of_path(landing, data))
		return psprintf(strcmp(landing, data) == 0 ? "\"%s\" is the data directory." :
						"\"%s\" contains the data directory.", landing);
	if (path_is_prefix_of_path(data, landing))
	{
		char		first[MAXPGPATH];

		strlcpy(first, landing + strlen(data) + 1, sizeof(first));
		first[strcspn(first, "/")] = '\0';
		if (kl_is_own_dir_name(first))
			return psprintf("\"%s\" is in \"%s\" of the data directory, which belongs to PostgreSQL.",
							landing, first);
	}

	/* the places the data directory links to: WAL, tablespaces, the log */
	snprintf(link, sizeof(link), "%s/pg_wal", DataDir);
	kl_resolve_path(link, target);
	if (path_is_prefix_of_path(target, landing) || path_is_prefix_of_path(landing, target))
		return psprintf("\"%s\" overlaps the write-ahead log directory \"%s\".", landing, target);
	if (Log_directory != NULL && is_absolute_path(Log_directory))
	{
		kl_resolve_path(Log_directory, target);
		if (path_is_prefix_of_path(target, landing) || path_is_prefix_of_path(landing, target))
			return psprintf("\"%s\" overlaps the log directory \"%s\".", landing, target);
	}
	snprintf(link, sizeof(link), "%s/pg_tblspc", DataDir);
	dir = opendir(link);
	while (dir != NULL && problem == NULL && (de = readdir(dir)) != NULL)
	{
		char		entry[MAXPGPATH];

		if (de->d_name[0] == '.')
			continue;
		snprintf(entry, sizeof(entry), "%s/%s", link, de->d_name);
		kl_resolve_path(entry, target);
		if (path_is_prefix_of_path(target, landing) || path_is_prefix_of_path(landing, target))
			problem = psprintf("\"%s\" overlaps the tablespace directory \"%s\".", landing, target);
	}
	if (dir != NULL)
		closedir(dir);
	return problem;
}

/*
 * kl_check_landing_dir
 *		Refuse a landing directory among PostgreSQL's own files (see the file
 *		header).  Before the data directory is known there is nothing to
 *		compare with.
 */
static bool
kl_check_landing_dir(char **newval, void **extra, GucSource source)
{
	char		landing[MAXPGPATH];
	char		data[MAXPGPATH];
	char	   *problem;

	if (*newval == NULL || (*newval)[0] == '\0' || DataDir == NULL)
		return true;
	kl_resolve_path(*newval, landing);
	kl_resolve_path(DataDir, data);
	problem = kl_landing_dir_problem(landing, data);
	if (problem == NULL)
		return true;
	GUC_check_errmsg("kafka_lake.landing_dir \"%s\" would mix landed files with PostgreSQL's own", *newval);
	GUC_check_errdetail("%s", problem);
	GUC_check_errhint("Use a directory of its own: a new directory under the data directory (the default is \"kafka_lake\") or outside it.");
	return false;
}

/*
 * kl_landing_dir_refusal
 *		The landing directory path would be (resolved into resolved, of
 *		MAXPGPATH bytes), and why it may not be one (the rule of the
 *		setting, kl_check_landing_dir), or NULL.  claim_landing() checks a
 *		directory it is given with it.
 */
char *
kl_landing_dir_refusal(const char *path, char *resolved)
{
	char		data[MAXPGPATH];

	kl_resolve_path(path, resolved);
	kl_resolve_path(DataDir, data);
	return kl_landing_dir_problem(resolved, data);
}

/*
 * kl_scrub_field
 *		Scrub one text field of a log line in place: secret-named options,
 *		then the values found in the statement (those of four bytes or more:
 *		shorter ones would blot out ordinary words).
 */
static void
kl_scrub_field(char **field)
{
	char	   *scrubbed;
	List	   *values = NIL;
	ListCell   *cell;

	if (*field == NULL)
		return;
	scrubbed = kl_scrub_sql_secrets(*field, false, NULL);
	if (scrubbed != NULL)
	{
		pfree(*field);
		*field = scrubbed;
	}
	foreach(cell, kl_scrubbed_values)
	{
		if (strlen((const char *) lfirst(cell)) >= 4)
			values = lappend(values, lfirst(cell));
	}
	if (values != NIL)
	{
		scrubbed = kl_scrub_secrets(*field, values);
		pfree(*field);
		*field = scrubbed;
		list_free(values);
	}
}

/*
 * kl_prints_statement
 *		Will the server log show the statement with this line?  As
 *		PostgreSQL decides it (elog.c, is_log_level_output), so that the
 *		statement is scanned only for lines that show it.
 */
static bool
kl_prints_statement(const ErrorData *edata)
{
	if (edata->hide_stmt || debug_query_string == NULL)
		return false;
	if (edata->elevel == LOG || edata->elevel == LOG_SERVER_ONLY)
		return log_min_error_statement == LOG || log_min_error_statement <= ERROR;
	if (log_min_error_statement == LOG)
		return edata->elevel >= FATAL;
	return edata->elevel >= log_min_error_statement;
}

/*
 * kl_emit_log_hook
 *		Keep the secrets of kafka_lake's options out of a log line (and out
 *		of what the client is sent of it).
 */
static void
kl_emit_log_hook(ErrorData *edata)
{
	if (!kl_in_emit_log_hook)
	{
		kl_in_emit_log_hook = true;
		PG_TRY();
		{
			/* the statement, once per statement that is printed */
			if (kl_prints_statement(edata) && debug_query_string != kl_scrubbed_query &&
				CritSectionCount == 0)
			{
				List	   *values = NIL;
				char	   *scrubbed = kl_scrub_sql_secrets(debug_query_string, true, &values);
				MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

				if (kl_scrubbed_query != NULL)
					pfree(kl_scrubbed_query);
				list_free_deep(kl_scrubbed_values);
				kl_scrubbed_query = NULL;
				kl_scrubbed_values = NIL;
				if (scrubbed != NULL)
				{
					ListCell   *cell;

					kl_scrubbed_query = pstrdup(scrubbed);
					foreach(cell, values)
						kl_scrubbed_values = lappend(kl_scrubbed_values,
													 pstrdup((const char *) lfirst(cell)));
					debug_query_string = kl_scrubbed_query;
					pfree(scrubbed);
				}
				MemoryContextSwitchTo(old);
				list_free_deep(values);
			}
			if (debug_query_string == NULL || debug_query_string != kl_scrubbed_query)
			{
				list_free_deep(kl_scrubbed_values);
				kl_scrubbed_values = NIL;
			}
			kl_scrub_field(&edata->message);
			kl_scrub_field(&edata->detail);
			kl_scrub_field(&edata->detail_log);
			kl_scrub_field(&edata->hint);
			kl_scrub_field(&edata->context);
			kl_scrub_field(&edata->internalquery);
		}
		PG_FINALLY();
		{
			kl_in_emit_log_hook = false;
		}
		PG_END_TRY();
	}
	if (kl_prev_emit_log_hook)
		kl_prev_emit_log_hook(edata);
}

