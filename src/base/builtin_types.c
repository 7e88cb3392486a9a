/*-------------------------------------------------------------------------
 *
 * builtin_types.c
 *	  The SQL types kafka_lake reads values into and builds tables of: the
 *	  built-in types of pg_catalog only.
 *
 * WHY BUILT-IN TYPES ONLY
 *
 * A type is code: its input and output functions run whenever a value is
 * converted, a domain's CHECK constraints whenever a value is cast to it,
 * and a type or function of some schema may belong to any role that can
 * create objects there.  kafka_lake converts values on others' behalf all
 * the time: the scan of a foreign table (as whoever reads it, a superuser
 * included), silver's load and a gold's rows in bridge() (as whoever
 * bridges, or as the extension's owner), the typed table of a source whose
 * contract another role wrote.  Had a contract's "sql_type", a SQL gold's
 * metric or a foreign table's column been allowed to name a domain whose
 * CHECK calls its owner's function, that function would run with the
 * rights of the reader or of the extension's owner: a role could make
 * itself superuser by waiting for a superuser's pg_cron job.
 *
 * So the one rule, applied wherever a definition names a type: a type is
 * allowed when it is built into PostgreSQL (its OID is below
 * FirstNormalObjectId, the types initdb made) and lives in pg_catalog, and
 * is a base, range or multirange type (or an array of one: an array type is
 * a base type).  Domains, enums, composite types, pseudo-types and the
 * types of extensions are refused when they are named (a contract, a SQL
 * gold: 42P17) and when they are met (a foreign table's column: 0A000),
 * with the built-in type to use instead; a role that wants its domain casts
 * to it in its own query, with its own rights.  Casts between built-in
 * types and their operators are built in too (CREATE CAST needs to own one
 * of the types), and the SQL kafka_lake builds resolves names with
 * search_path = pg_catalog, pg_temp, where operators and functions are
 * never looked up in pg_temp.
 *
 * A type's name is resolved with that same search_path wherever it is read
 * (a contract's definition is compiled in many sessions, each with a
 * search_path of its own), and spelt canonically under it (format_type),
 * so that the name stored, printed, compared and used are one.
 *
 * IDENTIFICATION
 *	  src/base/builtin_types.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "parser/parse_type.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "base/builtin_types.h"

/*
 * kl_type_is_builtin
 *		Is typid a built-in base, range or multirange type of pg_catalog
 *		(or an array of one)?
 */
bool
kl_type_is_builtin(Oid typid)
{
	HeapTuple	tup;
	Form_pg_type t;
	bool		ok;

	if (!OidIsValid(typid) || typid >= FirstNormalObjectId)
		return false;
	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	if (!HeapTupleIsValid(tup))
		return false;
	t = (Form_pg_type) GETSTRUCT(tup);
	ok = t->typnamespace == PG_CATALOG_NAMESPACE && t->typisdefined &&
		(t->typtype == TYPTYPE_BASE || t->typtype == TYPTYPE_RANGE ||
		 t->typtype == TYPTYPE_MULTIRANGE);
	ReleaseSysCache(tup);
	if (ok && OidIsValid(get_element_type(typid)))
		ok = kl_type_is_builtin(get_element_type(typid));
	return ok;
}

/*
 * kl_builtin_base
 *		The built-in type a user's type stands on, for hints: a domain's
 *		base type, an enum's or composite's text; NULL when there is none
 *		worth naming.
 */
const char *
kl_builtin_base(Oid typid)
{
	int32		typmod = -1;
	Oid			base = getBaseTypeAndTypmod(typid, &typmod);

	if (kl_type_is_builtin(base))
		return kl_type_name(base, typmod);
	switch (get_typtype(base))
	{
		case TYPTYPE_ENUM:
			return "text";
		case TYPTYPE_COMPOSITE:
			return "jsonb";
		default:
			return NULL;
	}
}

/*
 * kl_pin_search_path
 *		search_path = pg_catalog, pg_temp until AtEOXact_GUC(true, the
 *		returned nest level).
 */
static int
kl_pin_search_path(void)
{
	int			gucs = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return gucs;
}

/*
 * kl_type_name
 *		How kafka_lake spells a type: format_type under search_path =
 *		pg_catalog, pg_temp (a built-in type then needs no schema).
 */
char *
kl_type_name(Oid typid, int32 typmod)
{
	int			gucs = kl_pin_search_path();
	char	   *name = format_type_with_typemod(typid, typmod);

	AtEOXact_GUC(true, gucs);
	return name;
}

/*
 * kl_resolve_type
 *		Resolve a type name as kafka_lake does everywhere: with search_path
 *		= pg_catalog, pg_temp, whatever the session's.  *typid is
 *		InvalidOid when there is no such type.  A name that is no type name
 *		at all raises the parser's error.
 */
void
kl_resolve_type(const char *text, Oid *typid, int32 *typmod)
{
	int			gucs = kl_pin_search_path();

	parseTypeString(text, typid, typmod, true);
	AtEOXact_GUC(true, gucs);
}

/*
 * kl_builtin_type_problem
 *		Why typid may not be used (NULL: it may), for an error message.
 */
const char *
kl_builtin_type_problem(Oid typid)
{
	if (kl_type_is_builtin(typid))
		return NULL;
	switch (get_typtype(typid))
	{
		case TYPTYPE_DOMAIN:
			return "a domain";
		case TYPTYPE_ENUM:
			return "an enum type";
		case TYPTYPE_COMPOSITE:
			return "a composite type";
		case TYPTYPE_PSEUDO:
			return "a pseudo-type";
		default:
			return typid >= FirstNormalObjectId ? "not built into PostgreSQL" :
				"not a type of pg_catalog";
	}
}
