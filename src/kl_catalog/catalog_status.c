/*-------------------------------------------------------------------------
 *
 * catalog_status.c
 *	  What land() records for kafka_lake.source_status:
 *	  kafka_lake.partition_state, one row per source and partition with the
 *	  watermarks the last call read and the status of its last row.
 *
 * One statement per call, for every partition the call owned, written once
 * the partitions are done: the rows of a partition are written only by the
 * transaction that holds its lock, so a call never waits for another one's
 * row (a partition reported "locked" is not written).  A database still at
 * 1.0, before ALTER EXTENSION UPDATE, has no such table: nothing is
 * written.  The cost, one statement per call, is measured by bench/land.sh
 * (docs/performance.md).
 *
 * IDENTIFICATION
 *	  src/kl_catalog/catalog_status.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "kl_catalog/catalog.h"
#include "kl_catalog/catalog_status.h"

/*
 * kl_catalog_record_partition_states
 *		Record, for every partition owned[p], the watermarks low[p] and
 *		high[p] read by the call and status[p], the status of its last row
 *		(empty when it had none).
 */
void
kl_catalog_record_partition_states(KlSource *src, int nparts, const bool *owned,
								   const char *const *status, const int64 *low,
								   const int64 *high)
{
	Oid			types[6] = {INT4OID, TEXTOID, INT4ARRAYOID, INT8ARRAYOID, INT8ARRAYOID,
	TEXTARRAYOID};
	Datum		values[6];
	Datum	   *parts;
	Datum	   *lows;
	Datum	   *highs;
	Datum	   *statuses;
	int			n = 0;
	KlCatalogSave cs;

	if (!OidIsValid(get_relname_relid("partition_state", get_namespace_oid("kafka_lake", false))))
		return;

	parts = palloc(sizeof(Datum) * Max(nparts, 1));
	lows = palloc(sizeof(Datum) * Max(nparts, 1));
	highs = palloc(sizeof(Datum) * Max(nparts, 1));
	statuses = palloc(sizeof(Datum) * Max(nparts, 1));
	for (int p = 0; p < nparts; p++)
	{
		if (!owned[p])
			continue;
		parts[n] = Int32GetDatum(p);
		lows[n] = Int64GetDatum(low[p]);
		highs[n] = Int64GetDatum(high[p]);
		statuses[n] = CStringGetTextDatum(status[p] ? status[p] : "empty");
		n++;
	}
	if (n == 0)
		return;

	values[0] = Int32GetDatum(src->source_id);
	values[1] = CStringGetTextDatum(src->topic);
	values[2] = PointerGetDatum(construct_array(parts, n, INT4OID, 4, true, TYPALIGN_INT));
	values[3] = PointerGetDatum(construct_array(lows, n, INT8OID, 8, FLOAT8PASSBYVAL,
												TYPALIGN_DOUBLE));
	values[4] = PointerGetDatum(construct_array(highs, n, INT8OID, 8, FLOAT8PASSBYVAL,
												TYPALIGN_DOUBLE));
	values[5] = PointerGetDatum(construct_array(statuses, n, TEXTOID, -1, false, TYPALIGN_INT));

	cs = kl_catalog_begin();
	if (SPI_execute_with_args("INSERT INTO kafka_lake.partition_state AS ps (source_id, topic,"
							  " partition, low_watermark, high_watermark, last_status, checked_at)"
							  " SELECT $1, $2, u.p, u.low, u.high, u.status, pg_catalog.clock_timestamp()"
							  " FROM ROWS FROM (pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5),"
							  "   pg_catalog.unnest($6)) AS u(p, low, high, status)"
							  " ON CONFLICT (source_id, topic, partition) DO UPDATE"
							  " SET low_watermark = excluded.low_watermark,"
							  "     high_watermark = excluded.high_watermark,"
							  "     last_status = excluded.last_status,"
							  "     checked_at = excluded.checked_at",
							  6, types, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record kafka_lake.partition_state");
	kl_catalog_end(cs);
}
