/*-------------------------------------------------------------------------
 *
 * data_dir.c
 *	  Where kafka_lake may write files of its own: never among PostgreSQL's.
 *
 * A source named "base" under a landing_dir of "." would claim every
 * database's files, and drop_source(..., drop_landing => true) would remove
 * them; an export directory inside the data directory would be copied by
 * every base backup and could meet a tablespace created later.  The rules,
 * shared by kafka_lake.landing_dir (its check hook in kafka_lake.c, and
 * claim_landing's landing_dir) and kafka_lake.export_dir (export/export.c,
 * checked again at each export):
 *
 *	- never the data directory, a directory that contains it, anything inside
 *	  PostgreSQL's own subdirectories (base, global, pg_*, the log directory)
 *	  or inside the targets of pg_wal and of the tablespace links, after
 *	  resolving relative paths, "..", and the symbolic links of the part of
 *	  the path that exists (kl_landing_dir_problem);
 *	- an export directory, moreover, is absolute and outside the data
 *	  directory altogether (kl_export_dir_problem): what other engines read
 *	  has no business in PostgreSQL's files.
 *
 * IDENTIFICATION
 *	  src/base/data_dir.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <stdlib.h>

#include "miscadmin.h"
#include "postmaster/syslogger.h"

#include "base/data_dir.h"

/*
 * kl_resolve_path
 *		An absolute, canonical form of path (relative to the data directory)
 *		with the symbolic links of its longest existing part resolved.
 */
void
kl_resolve_path(const char *path, char *out)
{
	char		head[MAXPGPATH];
	char		rest[MAXPGPATH] = "";

	if (is_absolute_path(path))
		strlcpy(head, path, sizeof(head));
	else
		snprintf(head, sizeof(head), "%s/%s", DataDir, path);
	canonicalize_path(head);
	for (;;)
	{
		char	   *real = realpath(head, NULL);
		char	   *slash;
		char		tmp[MAXPGPATH];

		if (real != NULL)
		{
			snprintf(out, MAXPGPATH, "%s%s%s", real, rest[0] ? "/" : "", rest);
			free(real);
			canonicalize_path(out);
			return;
		}
		slash = last_dir_separator(head);
		if (slash == NULL || slash == head)
		{
			snprintf(out, MAXPGPATH, "%s%s%s", head, rest[0] ? "/" : "", rest);
			canonicalize_path(out);
			return;
		}
		snprintf(tmp, sizeof(tmp), "%s%s%s", slash + 1, rest[0] ? "/" : "", rest);
		strlcpy(rest, tmp, sizeof(rest));
		*slash = '\0';
	}
}

/*
 * kl_is_own_dir_name
 *		Is this entry of the data directory one of PostgreSQL's own?
 */
static bool
kl_is_own_dir_name(const char *name)
{
	char		log_dir[MAXPGPATH];

	if (strcmp(name, "base") == 0 || strcmp(name, "global") == 0 ||
		strncmp(name, "pg_", 3) == 0 || strncmp(name, "PG_", 3) == 0 ||
		strncmp(name, "postgresql.", 11) == 0 || strncmp(name, "postmaster.", 11) == 0)
		return true;
	if (Log_directory != NULL && !is_absolute_path(Log_directory))
	{
		strlcpy(log_dir, Log_directory, sizeof(log_dir));
		canonicalize_path(log_dir);
		log_dir[strcspn(log_dir, "/")] = '\0';
		if (strcmp(name, log_dir) == 0)
			return true;
	}
	return false;
}

/*
 * kl_landing_dir_problem
 *		Why a resolved landing directory would mix with PostgreSQL's own files
 *		(data is the resolved data directory), or NULL.
 */
char *
kl_landing_dir_problem(const char *landing, const char *data)
{
	char		link[MAXPGPATH];
	char		target[MAXPGPATH];
	DIR		   *dir;
	struct dirent *de;
	char	   *problem = NULL;

	if (strcmp(landing, "/") == 0 || path_is_prefix_of_path(landing, data))
		return psprintf(strcmp(landing, data) == 0 ? "\"%s\" is the data directory." :
						"\"%s\" contains the data directory.", landing);
	if (path_is_prefix_of_path(data, landing))
	{
		char		first[MAXPGPATH];

		strlcpy(first, landing + strlen(data) + 1, sizeof(first));
		first[strcspn(first, "/")] = '\0';
		if (kl_is_own_dir_name(first))
			return psprintf("\"%s\" is in \"%s\" of the data directory, which belongs to PostgreSQL.",
							landing, first);
	}

	/* the places the data directory links to: WAL, tablespaces, the log */
	snprintf(link, sizeof(link), "%s/pg_wal", DataDir);
	kl_resolve_path(link, target);
	if (path_is_prefix_of_path(target, landing) || path_is_prefix_of_path(landing, target))
		return psprintf("\"%s\" overlaps the write-ahead log directory \"%s\".", landing, target);
	if (Log_directory != NULL && is_absolute_path(Log_directory))
	{
		kl_resolve_path(Log_directory, target);
		if (path_is_prefix_of_path(target, landing) || path_is_prefix_of_path(landing, target))
			return psprintf("\"%s\" overlaps the log directory \"%s\".", landing, target);
	}
	snprintf(link, sizeof(link), "%s/pg_tblspc", DataDir);
	dir = opendir(link);
	while (dir != NULL && problem == NULL && (de = readdir(dir)) != NULL)
	{
		char		entry[MAXPGPATH];

		if (de->d_name[0] == '.')
			continue;
		snprintf(entry, sizeof(entry), "%s/%s", link, de->d_name);
		kl_resolve_path(entry, target);
		if (path_is_prefix_of_path(target, landing) || path_is_prefix_of_path(landing, target))
			problem = psprintf("\"%s\" overlaps the tablespace directory \"%s\".", landing, target);
	}
	if (dir != NULL)
		closedir(dir);
	return problem;
}

/*
 * kl_landing_dir_refusal
 *		The landing directory path would be (resolved into resolved, of
 *		MAXPGPATH bytes), and why it may not be one (the rule of the
 *		setting, kl_check_landing_dir), or NULL.  claim_landing() checks a
 *		directory it is given with it.
 */
char *
kl_landing_dir_refusal(const char *path, char *resolved)
{
	char		data[MAXPGPATH];

	kl_resolve_path(path, resolved);
	kl_resolve_path(DataDir, data);
	return kl_landing_dir_problem(resolved, data);
}


/*
 * kl_export_dir_problem
 *		Why path may not be kafka_lake.export_dir (resolved into resolved, of
 *		MAXPGPATH bytes), or NULL: it must be absolute, outside the data
 *		directory, and meet none of PostgreSQL's own places.
 */
char *
kl_export_dir_problem(const char *path, char *resolved)
{
	char		data[MAXPGPATH];

	if (!is_absolute_path(path))
	{
		strlcpy(resolved, path, MAXPGPATH);
		return psprintf("\"%s\" is not an absolute path.", path);
	}
	kl_resolve_path(path, resolved);
	kl_resolve_path(DataDir, data);
	if (path_is_prefix_of_path(data, resolved))
		return psprintf("\"%s\" is inside the data directory \"%s\".", resolved, data);
	return kl_landing_dir_problem(resolved, data);
}
