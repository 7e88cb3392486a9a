/*-------------------------------------------------------------------------
 *
 * kafka_lake.c
 *	  Module entry point: module magic, the registration of the settings
 *	  (GUCs) with the checks of the landing and export directories, and the
 *	  server log hook that keeps secrets out of the log.
 *
 * Settings (all superuser-only, the prefix "kafka_lake" is reserved):
 *
 *	kafka_lake.landing_dir		root of every landed file; relative paths are
 *								taken from the data directory
 *	kafka_lake.batch_max_records
 *	kafka_lake.batch_max_bytes	where land() and replay() cut a batch
 *	kafka_lake.export_dir		root of every exported Parquet file (absolute,
 *								outside the data directory; empty: no export)
 *	kafka_lake.fault_injection	one named point at which the next land,
 *								replay, bridge or compact raises an ERROR
 *								(or, written pause:<point>, waits there:
 *								base/fault.c)
 *
 * The variables of the settings are base/settings.c's, the fault points
 * base/fault.c's; this file registers them when the library loads.
 *
 * The landing directory must never be PostgreSQL's own, nor the export
 * directory: the rules are base/data_dir.c's, this file's check hooks apply
 * them when a value is set.  (Sources also never claim a directory that
 * holds anything but their own files, and only a directory carrying a
 * source's marker is ever removed: landing_files.c.)
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
#include "base/data_dir.h"
#include "base/settings.h"
#include "kafka/options.h"
#include "landing/source_status.h"

PG_MODULE_MAGIC;

/* the log hook: the previous one, and the scrubbed statement we point to */
static emit_log_hook_type kl_prev_emit_log_hook = NULL;
static char *kl_scrubbed_query = NULL;
static List *kl_scrubbed_values = NIL;
static bool kl_in_emit_log_hook = false;

static bool kl_check_landing_dir(char **newval, void **extra, GucSource source);
static bool kl_check_export_dir(char **newval, void **extra, GucSource source);
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

	DefineCustomStringVariable("kafka_lake.export_dir",
							   "Directory that export() writes Parquet files under.",
							   "An absolute path outside the data directory; empty: export() is refused.",
							   &kl_export_dir,
							   "",
							   PGC_SUSET,
							   0,
							   kl_check_export_dir, NULL, NULL);

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
 * kl_check_export_dir
 *		Refuse an export directory that is relative, inside the data
 *		directory or among PostgreSQL's own places (base/data_dir.c).  export()
 *		checks the value again when it writes.
 */
static bool
kl_check_export_dir(char **newval, void **extra, GucSource source)
{
	char		resolved[MAXPGPATH];
	char	   *problem;

	if (*newval == NULL || (*newval)[0] == '\0' || DataDir == NULL)
		return true;
	problem = kl_export_dir_problem(*newval, resolved);
	if (problem == NULL)
		return true;
	GUC_check_errmsg("kafka_lake.export_dir \"%s\" would mix exported files with PostgreSQL's own", *newval);
	GUC_check_errdetail("%s", problem);
	GUC_check_errhint("Use an absolute path of its own, outside the data directory.");
	return false;
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

