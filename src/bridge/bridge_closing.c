/*-------------------------------------------------------------------------
 *
 * bridge_closing.c
 *	  The bridge of a date that close_date() closed: refused when its
 *	  accepted events changed since, unless bridge(..., reopen => true) asks
 *	  for a correction, whose snapshot says 'reopened' until the date is
 *	  closed again.
 *
 * A date is closed while its current snapshot's closing_status is 'closed'.
 * After the selection (source_hash known, nothing written yet):
 *	- a date never closed is bridged as always, its gold 'provisional';
 *	- a reopened date is bridged as always, its gold 'reopened';
 *	- a closed date whose source_hash is the closed snapshot's is
 *	  "skipped" as any unchanged input is;
 *	- a closed date whose source_hash differs (late events landed, or
 *	  events past the marks of its certificate) is an ERROR 55000 naming the
 *	  certificate, unless reopen: then the correction is published, as a new
 *	  run or, when a run of that input was processed before (the date was
 *	  bridged with it before it was closed at an earlier cutoff), as a copy
 *	  of that run's gold under the status 'reopened'; the certificate
 *	  becomes 'reopened' and the closed snapshot stays readable through
 *	  gold_as_of().
 * Gold rows never change once written: a new closing status is a new
 * snapshot (catalog_close.c).
 *
 * IDENTIFICATION
 *	  src/bridge/bridge_closing.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "bridge/bridge.h"
#include "bridge/catalog_close.h"

/*
 * kl_refuse_final_date
 *		ERROR 55000: a closed date whose event_ids the dedupe horizon removed
 *		gained events, which may be redeliveries of ones it counted; it is
 *		not reopened or closed again, so its published gold cannot change.
 */
void
kl_refuse_final_date(const char *source, const char *date_text, int64 closing_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("business date %s of source \"%s\" is final: its event_ids are past the source's dedupe horizon",
					date_text, source),
			 errdetail("Certificate %lld closed it, and expire() has removed its accepted event_ids since, so an event accepted for it now may be a redelivery of one it counted. kafka_lake.late_events lists those events. Nothing was published.",
					   (long long) closing_id),
			 errhint("The gold of a date past the horizon stays as it was certified; a longer dedupe_horizon (kafka_lake.set_dedupe_horizon) keeps later dates open to corrections.")));
}

/*
 * kl_bridge_closing_check
 *		After the selection: decide what a closed or reopened date's bridge
 *		publishes (b->closing_status, b->reopening), or refuse.
 */
void
kl_bridge_closing_check(KlBridge *b, bool reopen)
{
	KlDateState st;

	kl_catalog_date_state(b->src->source_id, b->date, &st);
	if (!st.has_current || strcmp(st.closing_status, "provisional") == 0)
		return;
	b->closing_status = "reopened";
	if (strcmp(st.closing_status, "closed") != 0 ||
		strcmp(st.source_hash, b->source_hash) == 0)
		return;
	if (st.final)
		kl_refuse_final_date(b->src->source, b->date_text, st.closing_id);
	if (!reopen)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("business date %s of source \"%s\" is closed, and its accepted events changed since",
						b->date_text, b->src->source),
				 errdetail("Certificate %lld closed it with snapshot %lld (source_hash %s); its accepted events now give source_hash %s. "
						   "kafka_lake.late_events lists the events the certificate did not count. Nothing was published.",
						   (long long) st.closing_id, (long long) st.snapshot_id, st.source_hash,
						   b->source_hash),
				 errhint("To publish a correction, call kafka_lake.bridge('%s', '%s', reopen => true); to certify the date again with them, call kafka_lake.close_date('%s', '%s').",
						 b->src->source, b->date_text, b->src->source, b->date_text)));
	b->reopening = true;
}

/*
 * kl_bridge_republish
 *		Reopening a closed date to an input that a run processed before: the
 *		gold of that run's snapshot, published again as the date's current
 *		snapshot under b->closing_status.  Returns the new snapshot's id.
 */
int64
kl_bridge_republish(KlBridge *b, const char *run_id)
{
	int64		snapshot_id;

	snapshot_id = kl_catalog_republish_snapshot(b->src->source_id, b->date,
												kl_catalog_run_snapshot(run_id),
												b->closing_status);
	kl_bridge_reopened(b, snapshot_id);
	return snapshot_id;
}

/*
 * kl_bridge_reopened
 *		A correction of a closed date was published: its certificate says
 *		so.
 */
void
kl_bridge_reopened(KlBridge *b, int64 snapshot_id)
{
	KlDateState st;

	kl_catalog_date_state(b->src->source_id, b->date, &st);
	if (st.has_closing)
		kl_catalog_mark_reopened(st.closing_id, snapshot_id);
}
