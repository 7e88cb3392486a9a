/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The variables of kafka_lake's settings, where every part of the
 *	  landing reads them.  kafka_lake.c registers them (and checks
 *	  kafka_lake.landing_dir) when the library loads; all are
 *	  superuser-only.
 *
 *	kafka_lake.landing_dir		root of every landed file; relative paths are
 *								taken from the data directory
 *	kafka_lake.batch_max_records
 *	kafka_lake.batch_max_bytes	where land() and replay() cut a batch
 *	kafka_lake.export_dir		root of every exported file (export/export.c)
 *	kafka_lake.fault_injection	see fault.c
 *
 * IDENTIFICATION
 *	  src/base/settings.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/settings.h"

char	   *kl_landing_dir = NULL;
char	   *kl_export_dir = NULL;
int			kl_batch_max_records = KL_BATCH_MAX_RECORDS_DEFAULT;
int			kl_batch_max_bytes = KL_BATCH_MAX_BYTES_DEFAULT;
