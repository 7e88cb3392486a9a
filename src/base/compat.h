/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  Differences between the PostgreSQL major versions kafka_lake builds
 *	  against (13 to 17), in one place, so that no function body needs an
 *	  #if PG_VERSION_NUM.
 *
 * IDENTIFICATION
 *	  src/base/compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_COMPAT_H
#define KAFKA_LAKE_COMPAT_H

#include "postgres.h"
#include "funcapi.h"
#include "utils/guc.h"
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * kl_reserve_guc_prefix
 *		Refuse unknown settings under our prefix (PostgreSQL 15 renamed the
 *		call and made it reserve the prefix for good).
 */
#if PG_VERSION_NUM >= 150000
#define kl_reserve_guc_prefix(prefix) MarkGUCPrefixReserved(prefix)
#else
#define kl_reserve_guc_prefix(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

/*
 * kl_init_materialized_srf
 *		Set up a materialize-mode set-returning function (the helper exists
 *		from PostgreSQL 15 on; before, it was called SetSingleFuncCall in 15's
 *		development cycle and did not exist in 13-14).
 */
#if PG_VERSION_NUM >= 150000
#define kl_init_materialized_srf(fcinfo) InitMaterializedSRF((fcinfo), 0)
#else
#include "miscadmin.h"
#include "utils/tuplestore.h"

static inline void
kl_init_materialized_srf(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext old;
	TupleDesc	desc;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = tuplestore_begin_heap(true, false, work_mem);
	rsinfo->setDesc = CreateTupleDescCopy(desc);
	MemoryContextSwitchTo(old);
}
#endif

/*
 * kl_server_aclcheck
 *		Privilege check on a foreign server (PostgreSQL 16 replaced the
 *		per-object-kind functions with object_aclcheck).
 */
#if PG_VERSION_NUM >= 160000
#define kl_server_aclcheck(serverid, roleid, mode) \
	object_aclcheck(ForeignServerRelationId, (serverid), (roleid), (mode))
#else
#define kl_server_aclcheck(serverid, roleid, mode) \
	pg_foreign_server_aclcheck((serverid), (roleid), (mode))
#endif

/*
 * kl_scan_user
 *		The role a foreign scan (a ForeignScanState) reads as: the owner of
 *		the view it is read through, else the current user.  PostgreSQL 16
 *		moved checkAsUser from the range table entry to the plan.
 */
#if PG_VERSION_NUM >= 160000
#define kl_scan_user(node) \
	(OidIsValid(((ForeignScan *) (node)->ss.ps.plan)->checkAsUser) ? \
	 ((ForeignScan *) (node)->ss.ps.plan)->checkAsUser : GetUserId())
#else
#define kl_scan_user(node) \
	(OidIsValid(exec_rt_fetch(((Scan *) (node)->ss.ps.plan)->scanrelid, \
							  (node)->ss.ps.state)->checkAsUser) ? \
	 exec_rt_fetch(((Scan *) (node)->ss.ps.plan)->scanrelid, \
				   (node)->ss.ps.state)->checkAsUser : GetUserId())
#endif

/*
 * kl_hook_shmem_request
 *		Have request() ask for shared memory when the postmaster sizes it.
 *		PostgreSQL 15 added shmem_request_hook and refuses requests made
 *		anywhere else; before, _PG_init made them itself.  *prev gets the
 *		hook to chain to (NULL before 15).
 */
typedef void (*kl_shmem_request_fn) (void);
#if PG_VERSION_NUM >= 150000
#include "storage/ipc.h"
#define kl_hook_shmem_request(prev, request) \
	(*(prev) = shmem_request_hook, shmem_request_hook = (request))
#else
#define kl_hook_shmem_request(prev, request) (*(prev) = NULL, (request) ())
#endif

#endif							/* KAFKA_LAKE_COMPAT_H */
