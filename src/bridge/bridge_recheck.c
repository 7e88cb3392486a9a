/*-------------------------------------------------------------------------
 *
 * bridge_recheck.c
 *	  bridge(..., recheck => true): a date whose accepted events did not
 *	  change since a run processed them (the same source_hash, which a
 *	  plain bridge reports as "skipped") is run again with the golds and
 *	  checks the source has now, and published only when that changes its
 *	  result.
 *
 * The run goes through the ordinary steps 6 to 8 (silver, golds, checks,
 * snapshot) inside an internal subtransaction, the earlier run of the input
 * 'superseded' meanwhile (an input has one processed run).  Then:
 *	- a check failed: the run is kept as "failed_quality", nothing is
 *	  published, the date's current snapshot stays current (as any bridge
 *	  whose checks fail) and the earlier run stays the processed one;
 *	- it published, and the new snapshot says the same as the date's
 *	  current one (source_hash, each check's name, outcome, expected and
 *	  observed, the set of golds, each gold's rows but for snapshot_id and
 *	  closing_status; kl_catalog_snapshots_differ): the subtransaction is
 *	  rolled back, so that nothing was written (a snapshot_id of the
 *	  sequence is lost), and the call reports "skipped" as a plain bridge
 *	  does;
 *	- it published something else: the subtransaction is kept.  A date
 *	  that close_date() closed changes so only with reopen => true (55000
 *	  otherwise, and nothing is published); its certificate then says
 *	  'reopened', as for any correction (bridge_closing.c).
 * A redefined gold or check takes effect from the next snapshot: on a date
 * whose events did not change, that is the next recheck.
 *
 * IDENTIFICATION
 *	  src/bridge/bridge_recheck.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "bridge/bridge.h"
#include "bridge/catalog_bridge.h"
#include "bridge/catalog_close.h"

/*
 * kl_bridge_recheck
 *		Run an already processed input again with the current golds and
 *		checks.  Returns whether the result was kept (published, or a
 *		failed_quality run); false: it said what the current snapshot says,
 *		and nothing was written.  *published, *snapshot_id and
 *		*has_snapshot as kl_bridge_process gives them.
 */
bool
kl_bridge_recheck(KlBridge *b, const char *prior_run, bool reopen, int64 *snapshot_id,
				  bool *has_snapshot, bool *published)
{
	MemoryContext caller = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	KlDateState st;
	volatile bool changed = true;

	kl_catalog_date_state(b->src->source_id, b->date, &st);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller);
	PG_TRY();
	{
		kl_catalog_supersede_run(prior_run, false);
		*published = kl_bridge_process(b, snapshot_id, has_snapshot);
		if (!*published)
			kl_catalog_supersede_run(prior_run, true);
		else if (st.has_current)
			changed = kl_catalog_snapshots_differ(b, st.snapshot_id, *snapshot_id);
	}
	PG_CATCH();
	{
		ErrorData  *e;

		MemoryContextSwitchTo(caller);
		e = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller);
		CurrentResourceOwner = owner;
		ReThrowError(e);
	}
	PG_END_TRY();

	if (!changed)
	{
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller);
		CurrentResourceOwner = owner;
		*published = false;
		return false;
	}
	ReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(caller);
	CurrentResourceOwner = owner;

	if (*published && st.has_current && strcmp(st.closing_status, "closed") == 0)
	{
		if (!reopen)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("business date %s of source \"%s\" is closed, and its golds and checks now give another result",
							b->date_text, b->src->source),
					 errdetail("Certificate %lld closed it with snapshot %lld; its accepted events are the same, but the golds or checks defined since change what it publishes. Nothing was published.",
							   (long long) st.closing_id, (long long) st.snapshot_id),
					 errhint("To publish the correction, call kafka_lake.bridge('%s', '%s', reopen => true, recheck => true); to certify the date again, call kafka_lake.close_date('%s', '%s') after it.",
							 b->src->source, b->date_text, b->src->source, b->date_text)));
		kl_bridge_reopened(b, *snapshot_id);
	}
	else if (*published && b->reopening)
		kl_bridge_reopened(b, *snapshot_id);
	return true;
}
