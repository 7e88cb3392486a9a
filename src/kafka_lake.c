/*-------------------------------------------------------------------------
 *
 * kafka_lake.c
 *	  Module entry point: module magic, settings (GUCs) and the fault
 *	  injection points used by the tests of the recovery contract.
 *
 * Settings (all superuser-only, the prefix "kafka_lake" is reserved):
 *
 *	kafka_lake.landing_dir		root of every landed file; relative paths are
 *								taken from the data directory
 *	kafka_lake.batch_max_records
 *	kafka_lake.batch_max_bytes	where land() and replay() cut a batch
 *	kafka_lake.fault_injection	one named point at which the next land,
 *								replay or bridge raises an ERROR
 *
 * Fault injection is armed each time the setting is assigned and fires
 * once: the ERROR it raises rolls back the transaction, and with it any
 * transactional way of clearing the setting, so the "fired" state is kept
 * outside of the GUC machinery.  SHOW still displays the last value.
 *
 * IDENTIFICATION
 *	  src/kafka_lake.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "kafka_lake.h"

PG_MODULE_MAGIC;

/* GUC variables */
char	   *kl_landing_dir = NULL;
int			kl_batch_max_records = 50000;
int			kl_batch_max_bytes = 64 * 1024 * 1024;
char	   *kl_fault_injection = NULL;

/* true while the fault injection point named by the setting has not fired */
static bool kl_fault_armed = false;

static const char *const kl_fault_points[] = {
	"after_staging_write",
	"after_rename",
	"after_landing_before_commit",
	"after_commit",
	"bridge_before_gold",
	NULL
};

static bool kl_check_fault_injection(char **newval, void **extra, GucSource source);
static void kl_assign_fault_injection(const char *newval, void *extra);

void		_PG_init(void);

/*
 * _PG_init
 *		Define the settings.  Nothing here needs shared_preload_libraries.
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
							   NULL, NULL, NULL);

	DefineCustomIntVariable("kafka_lake.batch_max_records",
							"Largest number of records in one landed batch.",
							"A land() or replay() call is cut into batches, each "
							"landed and committed in turn.",
							&kl_batch_max_records,
							50000, 1, 10000000,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("kafka_lake.batch_max_bytes",
							"Largest sum of key and value bytes in one landed batch.",
							"Backend memory during land() is bounded by about twice this.",
							&kl_batch_max_bytes,
							64 * 1024 * 1024, 1024, INT_MAX,
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomStringVariable("kafka_lake.fault_injection",
							   "Point at which the next land, replay or bridge raises an error (for tests).",
							   "One of after_staging_write, after_rename, "
							   "after_landing_before_commit, after_commit, "
							   "bridge_before_gold; empty disables it.",
							   &kl_fault_injection,
							   "",
							   PGC_SUSET,
							   0,
							   kl_check_fault_injection,
							   kl_assign_fault_injection,
							   NULL);

	kl_reserve_guc_prefix("kafka_lake");
}

/*
 * kl_check_fault_injection
 *		Accept only the names of real injection points.
 */
static bool
kl_check_fault_injection(char **newval, void **extra, GucSource source)
{
	if (*newval == NULL || (*newval)[0] == '\0')
		return true;
	for (int i = 0; kl_fault_points[i] != NULL; i++)
	{
		if (strcmp(*newval, kl_fault_points[i]) == 0)
			return true;
	}
	GUC_check_errdetail("Unknown fault injection point \"%s\".", *newval);
	GUC_check_errhint("Use one of after_staging_write, after_rename, "
					  "after_landing_before_commit, after_commit, "
					  "bridge_before_gold.");
	return false;
}

/*
 * kl_assign_fault_injection
 *		Arm the named point.
 */
static void
kl_assign_fault_injection(const char *newval, void *extra)
{
	kl_fault_armed = (newval != NULL && newval[0] != '\0');
}

/*
 * kl_fault_point
 *		Raise the injected ERROR if the setting names this point and it has
 *		not fired since it was set.
 */
void
kl_fault_point(const char *point)
{
	if (!kl_fault_armed || kl_fault_injection == NULL ||
		strcmp(kl_fault_injection, point) != 0)
		return;

	kl_fault_armed = false;
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("kafka_lake fault injection: %s", point),
			 errdetail("The setting kafka_lake.fault_injection asked for an error at this point."),
			 errhint("Reset kafka_lake.fault_injection; the next call recovers.")));
}
