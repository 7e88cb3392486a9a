/*-------------------------------------------------------------------------
 *
 * fault.c
 *	  The fault injection points of the tests of the recovery contract: the
 *	  setting kafka_lake.fault_injection names one, at which the next call
 *	  raises an ERROR (or, written pause:<point>, waits; a point named
 *	  cancel_... makes a cancel request arrive instead).  Every point is
 *	  named once, in kl_fault_points below: the setting's check, its
 *	  description and its hint are made from that list.
 *
 * Fault injection is armed each time the setting is assigned and fires
 * once: the ERROR it raises rolls back the transaction, and with it any
 * transactional way of clearing the setting, so the "fired" state is kept
 * outside of the GUC machinery.  SHOW still displays the last value.  Two
 * points of compact() sit after its commit, where an ERROR cannot go: they
 * skip the removal of the replaced directories (all of them, or all but
 * the first), leaving the disk as a crash there would (kl_fault_take).
 * pause:<point> makes the backend wait at the point instead (for up to two
 * minutes, in wait event "Extension"), so that a test can kill it there
 * with SIGKILL: the crash tests of compaction (kl_fault_pause, which is
 * also safe in commit processing).
 *
 * IDENTIFICATION
 *	  src/base/fault.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/fault.h"

char	   *kl_fault_injection = NULL;

/* true while the fault injection point named by the setting has not fired */
static bool kl_fault_armed = false;

/* every point, in the order a call meets them */
static const char *const kl_fault_points[] = {
	"after_staging_write",
	"after_rename",
	"while_writing",
	"cancel_while_writing",
	"after_landing_before_commit",
	"after_commit",
	"bridge_while_reading_ahead",
	"cancel_bridge_while_reading_ahead",
	"bridge_while_writing_csv",
	"cancel_bridge_while_writing_csv",
	"silver_while_reading_ahead",
	"cancel_silver_while_reading_ahead",
	"bridge_before_gold",
	"compact_after_write",
	"compact_after_rename",
	"compact_after_catalog",
	"compact_before_remove",
	"compact_during_remove",
	"exclude_after_write",
	"exclude_after_rename",
	"exclude_after_catalog",
	"reduce_after_write",
	"reduce_after_catalog",
	"reduce_before_remove",
	"export_after_write",
	"export_after_swap",
	NULL
};

/* the prefix that makes a point pause instead of raising an ERROR */
#define KL_FAULT_PAUSE_PREFIX	"pause:"
/* how long a pause lasts at most, in milliseconds */
#define KL_FAULT_PAUSE_MS		(120 * 1000)

/*
 * kl_fault_point_names
 *		Every point, as "a, b, c" (for the setting's description and hint).
 */
const char *
kl_fault_point_names(void)
{
	static char *names = NULL;

	if (names == NULL)
	{
		StringInfoData buf;
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&buf);
		for (int i = 0; kl_fault_points[i] != NULL; i++)
			appendStringInfo(&buf, "%s%s", i ? ", " : "", kl_fault_points[i]);
		names = buf.data;
		MemoryContextSwitchTo(old);
	}
	return names;
}

/*
 * kl_check_fault_injection
 *		Accept only the names of real injection points.
 */
bool
kl_check_fault_injection(char **newval, void **extra, GucSource source)
{
	const char *point = *newval;

	if (point == NULL || point[0] == '\0')
		return true;
	if (strncmp(point, KL_FAULT_PAUSE_PREFIX, strlen(KL_FAULT_PAUSE_PREFIX)) == 0)
		point += strlen(KL_FAULT_PAUSE_PREFIX);
	for (int i = 0; kl_fault_points[i] != NULL; i++)
	{
		if (strcmp(point, kl_fault_points[i]) == 0)
			return true;
	}
	GUC_check_errdetail("Unknown fault injection point \"%s\".", *newval);
	GUC_check_errhint("Use one of %s, optionally written pause:<point>.", kl_fault_point_names());
	return false;
}

/*
 * kl_assign_fault_injection
 *		Arm the named point.
 */
void
kl_assign_fault_injection(const char *newval, void *extra)
{
	kl_fault_armed = (newval != NULL && newval[0] != '\0');
}

/*
 * kl_fault_point
 *		Raise the injected ERROR if the setting names this point and it has
 *		not fired since it was set.  A point named cancel_... does not
 *		raise: it makes a cancel request arrive, as pg_cancel_backend()
 *		would, which the next interrupt check raises.
 */
void
kl_fault_point(const char *point)
{
	if (kl_fault_pausing(point))
	{
		kl_fault_pause(point);
		return;
	}
	if (!kl_fault_take(point))
		return;

	if (strncmp(point, "cancel_", 7) == 0)
	{
		QueryCancelPending = true;
		InterruptPending = true;
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("kafka_lake fault injection: %s", point),
			 errdetail("The setting kafka_lake.fault_injection asked for an error at this point."),
			 errhint("Reset kafka_lake.fault_injection; the next call recovers.")));
}

/*
 * kl_fault_take
 *		Does the setting name this point, not yet fired?  It fires now (for
 *		points that do something else than raise an ERROR).
 */
bool
kl_fault_take(const char *point)
{
	if (!kl_fault_armed || kl_fault_injection == NULL ||
		strcmp(kl_fault_injection, point) != 0)
		return false;
	kl_fault_armed = false;
	return true;
}

/*
 * kl_fault_pausing
 *		Does the setting ask to pause at this point (pause:<point>), not yet
 *		fired?
 */
bool
kl_fault_pausing(const char *point)
{
	size_t		plen = strlen(KL_FAULT_PAUSE_PREFIX);

	return kl_fault_armed && kl_fault_injection != NULL &&
		strncmp(kl_fault_injection, KL_FAULT_PAUSE_PREFIX, plen) == 0 &&
		strcmp(kl_fault_injection + plen, point) == 0;
}

/*
 * kl_fault_pause
 *		If the setting asks to pause at this point: wait there, for up to two
 *		minutes, in wait event "Extension", so that a test can kill the
 *		backend at exactly this step (a LOG line says when the wait starts).
 *		Raises no ERROR of its own; a cancel ends the wait with its usual
 *		ERROR, except in commit processing, which holds interrupts, so it is
 *		safe there too.
 */
void
kl_fault_pause(const char *point)
{
	TimestampTz until;

	if (!kl_fault_pausing(point))
		return;
	kl_fault_armed = false;
	ereport(LOG,
			(errmsg("kafka_lake fault injection: pausing at %s", point)));
	until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), KL_FAULT_PAUSE_MS);
	while (GetCurrentTimestamp() < until)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

