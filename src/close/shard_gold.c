/*-------------------------------------------------------------------------
 *
 * shard_gold.c
 *	  kafka_lake.shard_gold(source, gold, business_date): on a coordinator,
 *	  the rows of an owner's SQL gold over every shard's silver of the date.
 *
 * WHOSE RIGHTS
 *
 * A SQL gold is user code.  On a shard it runs with the rights of the role
 * that defined it (define_gold), never of whoever bridges; on the
 * coordinator it must too, never with the rights of the superuser who
 * attached the shards or of whoever reads the combined gold.  So
 * attach_shards() makes, for a SQL gold whose owner is a role of the
 * coordinator too (the same name) and no superuser there (its SQL comes
 * from the shards' catalogs, which the coordinator does not control), a
 * function
 * kafka_lake.<source>_<gold>_combine(business_date text): SECURITY DEFINER,
 * owned by that role, search_path pinned, the gold's SQL over the union of
 * the shards' silver of the date.  The combined gold's view reads it through
 * this function, which runs it exactly as the bridge runs a SQL gold
 * (kl_catalog_definer_begin): only while the function is still what
 * attach_shards() made of it, as that role, security-restricted.  The
 * function's owner could otherwise make it SECURITY INVOKER, and its SQL
 * would run with a superuser's rights the next time one read the view.
 *
 * Whoever calls it must be allowed to read the combined gold's view
 * (SELECT on kafka_lake.<source>_<gold>): PUBLIC may execute it, and the
 * view is what is granted.
 *
 * IDENTIFICATION
 *	  src/close/shard_gold.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "bridge/catalog_bridge.h"
#include "contract/iso8601.h"
#include "kl_catalog/catalog.h"

PG_FUNCTION_INFO_V1(kafka_lake_shard_gold);

/*
 * kl_shard_gold_owner
 *		The role that owns the SQL gold on the shards, as attach_shards()
 *		recorded it (kafka_lake.shards.sql_golds), or NULL.
 */
static char *
kl_shard_gold_owner(const char *source, const char *gold)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2] = {CStringGetTextDatum(source), CStringGetTextDatum(gold)};
	KlCatalogSave cs = kl_catalog_begin();
	char	   *owner = NULL;

	if (SPI_execute_with_args("SELECT s.sql_golds OPERATOR(pg_catalog.->>) $2 FROM kafka_lake.shards s"
							  " WHERE s.source OPERATOR(pg_catalog.=) $1 AND s.shard_number = 1",
							  2, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read kafka_lake.shards");
	if (SPI_processed == 1)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (v)
			owner = MemoryContextStrdup(caller, v);
	}
	kl_catalog_end(cs);
	return owner;
}

/*
 * kafka_lake_shard_gold
 *		shard_gold(source, gold, business_date) RETURNS SETOF record: the
 *		combined SQL gold's rows of the date, its columns given by the
 *		caller's column list (the view attach_shards() made gives them).
 */
Datum
kafka_lake_shard_gold(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext caller;
	char	   *source;
	char	   *gold;
	char	   *view;
	char	   *function;
	char	   *owner;
	char		date_text[KL_DATE_TEXT_LEN];
	Oid			relid;
	Oid			types[1] = {TEXTOID};
	Datum		values[1];
	KlCatalogSave cs;
	TupleDesc	want;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("source, gold and business_date must not be null"),
				 errhint("Read the combined gold through its view, kafka_lake.<source>_<gold>.")));
	source = text_to_cstring(PG_GETARG_TEXT_PP(0));
	gold = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (DATE_NOT_FINITE(PG_GETARG_DATEADT(2)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("business_date must be a finite date"),
				 errhint("Read the combined gold through its view, kafka_lake.<source>_<gold>, WHERE business_date = a calendar day.")));
	kl_date_text(PG_GETARG_DATEADT(2), date_text);
	view = psprintf("%s_%s", source, gold);
	function = psprintf("%s_combine", view);
	owner = kl_shard_gold_owner(source, gold);
	relid = get_relname_relid(view, get_namespace_oid("kafka_lake", false));
	if (owner == NULL || !OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("source \"%s\" has no combined SQL gold \"%s\" here", source, gold),
				 errhint("attach_shards() combines a SQL gold whose owner is a role of this database too; kafka_lake.shards.sql_golds lists them.")));
	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for view kafka_lake.%s", quote_identifier(view)),
				 errhint("Reading a combined gold needs SELECT on its view: GRANT SELECT ON kafka_lake.%s TO %s.",
						 quote_identifier(view), quote_identifier(GetUserNameFromId(GetUserId(), false)))));

	InitMaterializedSRF(fcinfo, 0);
	want = rsinfo->setDesc;
	caller = CurrentMemoryContext;
	values[0] = CStringGetTextDatum(date_text);
	cs = kl_catalog_definer_begin(function, owner);
	if (SPI_execute_with_args(psprintf("SELECT * FROM kafka_lake.%s($1)", quote_identifier(function)),
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not run function kafka_lake.%s", function);
	{
		TupleDesc	got = SPI_tuptable->tupdesc;

		if (got->natts != want->natts)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("function kafka_lake.%s returns %d columns, the view reads %d",
							function, got->natts, want->natts),
					 errhint("Attach the shards again: kafka_lake.detach_shards(), then kafka_lake.attach_shards().")));
		for (int i = 0; i < got->natts; i++)
			if (TupleDescAttr(got, i)->atttypid != TupleDescAttr(want, i)->atttypid)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("column %d of function kafka_lake.%s is of type %s, the view reads %s", i + 1,
								function, format_type_be(TupleDescAttr(got, i)->atttypid),
								format_type_be(TupleDescAttr(want, i)->atttypid)),
						 errhint("Attach the shards again: kafka_lake.detach_shards(), then kafka_lake.attach_shards().")));
		for (uint64 r = 0; r < SPI_processed; r++)
		{
			MemoryContext old;
			Datum	   *vals = palloc(sizeof(Datum) * Max(got->natts, 1));
			bool	   *nulls = palloc(sizeof(bool) * Max(got->natts, 1));

			CHECK_FOR_INTERRUPTS();
			heap_deform_tuple(SPI_tuptable->vals[r], got, vals, nulls);
			old = MemoryContextSwitchTo(caller);
			tuplestore_putvalues(rsinfo->setResult, want, vals, nulls);
			MemoryContextSwitchTo(old);
		}
	}
	kl_catalog_end(cs);
	return (Datum) 0;
}
