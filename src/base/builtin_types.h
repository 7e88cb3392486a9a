/*-------------------------------------------------------------------------
 *
 * builtin_types.h
 *	  The SQL types kafka_lake reads values into and builds tables of: the
 *	  built-in types of pg_catalog only (builtin_types.c).
 *
 * IDENTIFICATION
 *	  src/base/builtin_types.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_BUILTIN_TYPES_H
#define KAFKA_LAKE_BUILTIN_TYPES_H

extern bool kl_type_is_builtin(Oid typid);
extern const char *kl_builtin_type_problem(Oid typid);
extern const char *kl_builtin_base(Oid typid);
extern char *kl_type_name(Oid typid, int32 typmod);
extern void kl_resolve_type(const char *text, Oid *typid, int32 *typmod);

#endif							/* KAFKA_LAKE_BUILTIN_TYPES_H */
