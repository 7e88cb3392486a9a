/*-------------------------------------------------------------------------
 *
 * claim.c
 *	  kafka_lake.claim_landing(source, landing_dir, group_id): make a
 *	  source's landing this database's, after the database was restored
 *	  from a dump.
 *
 * WHY A DATABASE MUST CLAIM ITS LANDING
 *
 * The catalog says where a source's files are (sources.landing_dir) and
 * pg_dump keeps the catalog, but not the files, which belong to the
 * cluster's landing directory.  A database restored from a dump therefore
 * starts out pointing at the original database's directories, whose marker
 * (.kafka_lake_source, landing_files.c) names the original.  Every call that
 * writes or removes a source's files refuses such a directory
 * (kl_check_landing_owned); before this check, a restored database landed
 * and compacted in the original's directory, and each database's recover()
 * took the other's batches for its own leftovers and deleted them.  Two
 * cases, one function:
 *
 *	- the restored database took the original's place (the original was
 *	  dropped, the copy renamed): the directory is right, only its marker
 *	  names a database that no longer exists.  claim_landing(source) marks
 *	  it as this database's.
 *	- the restored database lives beside the original (a copy for tests, a
 *	  fork): it needs a landing of its own and a consumer group of its own,
 *	  or both databases would land into one directory and commit one group's
 *	  offsets.  The operator copies the source's directory to a directory of
 *	  the copy's (cp -a, with both databases' calls of the source stopped),
 *	  and claim_landing(source, landing_dir => ..., group_id => ...) marks
 *	  the copy, points the source at it and at the new group.  A group with
 *	  no committed offsets starts where the catalog says the source is
 *	  (land.c), so nothing is landed twice or skipped.
 *
 * What is claimed must be the source's landing: every batch and readmit unit
 * the catalog lists must be there with its manifest, or nothing is changed.
 * A directory still marked by a database that exists is never taken where it
 * is: only a copy of it, with a group of the copy's own.  The marker is
 * replaced atomically (a new file renamed over it), and the catalog's change
 * belongs to the caller's transaction: a claim rolled back leaves a marker of
 * this database on a directory the catalog does not point at, which the next
 * claim takes again.  Superusers only: it names a directory of the server.
 *
 * IDENTIFICATION
 *	  src/claim.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "commands/dbcommands.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "base/args.h"
#include "base/compat.h"
#include "base/names.h"
#include "base/data_dir.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/locks.h"
#include "landing/landing_files.h"

PG_FUNCTION_INFO_V1(kafka_lake_claim_landing);

/*
 * kl_claim_check_batches
 *		Is every batch the catalog lists of src under dir, with its
 *		manifest?  ERROR 55000 naming the first that is not; returns how
 *		many there are.
 */
static int
kl_claim_check_batches(KlSource *src, const char *dir)
{
	List	   *batches = kl_catalog_batch_dirs(src);
	ListCell   *cell;
	int			missing = 0;
	const char *first = NULL;

	foreach(cell, batches)
	{
		struct stat st;
		const char *batch = lfirst(cell);
		bool		found = false;

		CHECK_FOR_INTERRUPTS();
		/* a plain batch's manifest, or a compressed one's, or their reduced ones (expire.c) */
		for (int c = 0; c < 4 && !found; c++)
		{
			int			compression = (c % 2) ? KL_COMPRESS_ZSTD : KL_COMPRESS_NONE;
			char	   *manifest = psprintf("%s/%s/%s", dir, batch,
											c < 2 ? kl_file_name(compression, KL_NFILES) :
											kl_reduced_manifest_name(compression));

			found = (lstat(manifest, &st) == 0 && S_ISREG(st.st_mode));
		}
		if (!found)
		{
			if (first == NULL)
				first = lfirst(cell);
			missing++;
		}
	}
	if (missing > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("\"%s\" is not the landing of source \"%s\": %d of its %d batches are not there",
						dir, src->source, missing, list_length(batches)),
				 errdetail("The first missing is %s (its manifest.json, or manifest.json.zst).", first),
				 errhint("Copy the source's whole directory (cp -a) and claim the copy; nothing was changed.")));
	return list_length(batches);
}

/*
 * kafka_lake_claim_landing
 *		claim_landing(source, landing_dir, group_id): one row (source,
 *		directory, previous_marker, status, batches, group_id); status is
 *		"claimed", or "already_ours" when nothing had to change.
 */
Datum
kafka_lake_claim_landing(PG_FUNCTION_ARGS)
{
	KlSource   *src;
	char	   *root;
	char	   *dir;
	char	   *group_id = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	char		resolved[MAXPGPATH];
	char	   *current_root;
	KlMarkerState state;
	Oid			dbid;
	char	   *found;
	char	   *other = NULL;
	bool		moves;
	int			batches;
	TupleDesc	desc;
	Datum		values[6];
	bool		nulls[6] = {0};
	const char *status = "claimed";

	kl_check_not_null(fcinfo, 0, "source", "Name the source, for example 'machine_events'.");
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only a superuser may claim a landing"),
				 errdetail("claim_landing() names a directory of the database server and marks it as this database's.")));
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	src = kl_source_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	kl_catalog_lock_source_for_drop(src);

	current_root = pstrdup(src->dir);
	get_parent_directory(current_root);
	if (PG_ARGISNULL(1))
		root = current_root;
	else
	{
		char	   *problem = kl_landing_dir_refusal(text_to_cstring(PG_GETARG_TEXT_PP(1)), resolved);

		if (problem)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("landing_dir \"%s\" would mix landed files with PostgreSQL's own",
							text_to_cstring(PG_GETARG_TEXT_PP(1))),
					 errdetail("%s", problem),
					 errhint("Use a directory of its own, outside the data directory or in a new directory under it.")));
		root = pstrdup(resolved);
	}
	moves = strcmp(root, current_root) != 0;
	if (group_id)
	{
		if (group_id[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("group_id must not be empty"),
					 errhint("Leave it out to keep the source's group \"%s\".", src->group_id)));
		kl_check_group_id(group_id);
		if (strcmp(group_id, src->group_id) == 0)
			group_id = NULL;
	}
	dir = psprintf("%s/%s", root, src->source);

	found = kl_read_source_marker(dir, src->source, &state, &dbid);
	if (OidIsValid(dbid) && dbid != MyDatabaseId)
		other = get_database_name(dbid);
	switch (state)
	{
		case KL_MARKER_NO_DIR:
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FILE),
					 errmsg("\"%s\" is not a directory", dir),
					 errhint("Copy the source's directory there first, or leave landing_dir out to claim \"%s/%s\".",
							 current_root, src->source)));
			break;
		case KL_MARKER_NOT_REGULAR:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("source marker \"%s/%s\" is not a regular file", dir, KL_SOURCE_MARKER),
					 errhint("Remove it, then claim the landing again.")));
			break;
		case KL_MARKER_OTHER:
			if (!OidIsValid(dbid) ||
				strcmp(found, psprintf("database %u source %s", dbid, src->source)) != 0)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("\"%s\" is not a landing of source \"%s\"", dir, src->source),
						 errdetail("Its marker says: %s", found),
						 errhint("Claim the directory the source's files were copied to.")));
			/* a directory another database still uses is never taken */
			if (other != NULL && !moves)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("the landing of source \"%s\" belongs to database \"%s\", which still uses it",
								src->source, other),
						 errdetail("Two databases landing into one directory delete each other's batches."),
						 errhint("Copy \"%s\" to a directory of this database's (cp -a) and claim the copy: SELECT * FROM kafka_lake.claim_landing('%s', landing_dir => '<that directory''s parent>', group_id => '<a consumer group of its own>');",
								 dir, src->source)));
			if (other != NULL && group_id == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("a copy of the landing of database \"%s\" needs a consumer group of its own", other),
						 errdetail("Source \"%s\" commits to group \"%s\", as the source of database \"%s\" does: one would skip what the other landed.",
								   src->source, src->group_id, other),
						 errhint("Give group_id, for example kafka_lake.%s.%s.",
								 get_database_name(MyDatabaseId), src->source)));
			break;
		case KL_MARKER_ABSENT:
		case KL_MARKER_OURS:
			break;
	}
	if (state == KL_MARKER_OURS && !moves && group_id == NULL)
		status = "already_ours";

	batches = kl_claim_check_batches(src, dir);
	if (strcmp(status, "claimed") == 0)
	{
		if (group_id)
			kl_lock_group_id(group_id);
		if (state != KL_MARKER_OURS)
			kl_write_source_marker(dir, src->source);
		if (moves || group_id)
			kl_catalog_move_source(src, root, group_id);
	}

	values[0] = CStringGetTextDatum(src->source);
	values[1] = CStringGetTextDatum(dir);
	if (found)
		values[2] = CStringGetTextDatum(found);
	else
		nulls[2] = true;
	values[3] = CStringGetTextDatum(status);
	values[4] = Int32GetDatum(batches);
	values[5] = CStringGetTextDatum(group_id ? group_id : src->group_id);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
