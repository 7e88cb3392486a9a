/*-------------------------------------------------------------------------
 *
 * args.c
 *	  What every SQL function of kafka_lake does with its arguments first.
 *
 * IDENTIFICATION
 *	  src/base/args.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "base/args.h"

/*
 * kl_check_not_null
 *		A NULL where a function needs a value is an ERROR (22004), never an
 *		empty result: an empty verify() would read as "no problem found".
 */
void
kl_check_not_null(FunctionCallInfo fcinfo, int argno, const char *argname, const char *hint)
{
	if (!PG_ARGISNULL(argno))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 errmsg("%s must not be null", argname),
			 hint ? errhint("%s", hint) :
			 errhint("Name a source; kafka_lake.sources lists them.")));
}
