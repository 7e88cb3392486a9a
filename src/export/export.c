/*-------------------------------------------------------------------------
 *
 * export.c
 *	  kafka_lake.export(source, business_date): the date's current snapshot,
 *	  its silver rows and the rows of every gold it published, as Parquet
 *	  files that DuckDB, Spark and Trino read, in the layout they all
 *	  understand:
 *
 *	<export_dir>/<source>/.kafka_lake_export		the tree's marker
 *	<export_dir>/<source>/<relation>/business_date=<date>/
 *		part-00000.parquet							the rows (export_table.c)
 *		.kafka_lake_export							the directory's marker
 *	<export_dir>/<source>/_snapshots/business_date=<date>.json
 *		what the date's export holds: snapshot_id, run_id, source_hash,
 *		closing_status and each file's relation, path, rows, bytes, SHA-256
 *	<export_dir>/<source>/.staging/					a call's work in progress
 *
 * <relation> is the table's name in kafka_lake: <source>_silver (or
 * silver_machine_events) and each gold's.  Files and directories whose names
 * start with "." or "_" are skipped by Spark, Trino and Hive readers, so the
 * markers and the per-date JSON never read as data.
 *
 * REPLACING A DATE (DESIGN NOTE)
 *
 * A later snapshot of a date (a correction, a reopen, a recheck) replaces
 * its files, and a reader must see the old set or the new one, never a mix.
 * Everything is written first into a staging directory (each file fsynced,
 * then its directory); then each relation's date directory is swapped with
 * its staged one by renameat2(RENAME_EXCHANGE), one atomic step per
 * relation, and the parents fsynced; the per-date JSON is written last
 * (temporary file, fsync, rename); the old directories, now in staging, go
 * with it.  A reader that opened the old files keeps reading them (POSIX
 * keeps an open file until it is closed).  A relation of the old export that
 * the new snapshot lacks (a dropped gold) has its date directory moved out
 * the same way.  A kill at any point leaves every relation's date directory
 * whole, old or new, and the staging directory behind; the JSON names the
 * snapshot that was completely exported, and the next export of the source
 * removes what staging holds (under the source's export lock, nothing in
 * staging belongs to a live call).  On a file system without
 * RENAME_EXCHANGE the old directory is renamed away first: a reader may then
 * briefly find no file for the date, never a mix.
 *
 * The alternatives: date directories as symbolic links to snapshot
 * directories (one rename replaces a link atomically, but engines differ in
 * whether they list through links), and snapshot-named files side by side in
 * one directory (a glob during the replacement reads both sets).
 *
 * An export of the snapshot the JSON already names, whose files are all
 * there with their sizes, changes nothing ('unchanged').
 *
 * Exporting as part of publishing.  The files outlive the transaction, and
 * must never show a snapshot that may roll back; yet a bridge and its export
 * belong together (one pg_cron job, one transaction).  So an export of a
 * snapshot that the caller's own transaction published writes everything in
 * staging as usual and puts it in place when the transaction commits
 * ('at_commit'; kl_export_xact_callback): a rollback, or a savepoint rolled
 * back, removes the staging directory instead, and PREPARE TRANSACTION is
 * refused (nothing could carry the work to COMMIT PREPARED).  What goes
 * wrong after the commit cannot undo it: a WARNING, and the next export()
 * of the date finishes (the JSON still names the old snapshot).  The export
 * lock is held until then, so no other export of the source runs between.
 *
 * Where it may write.  kafka_lake.export_dir is superuser-only, absolute and
 * outside the data directory (base/data_dir.c, checked when set and again
 * here).  A source's tree is claimed with a marker naming the database and
 * the source; a tree, or a date directory, that carries no such marker is
 * never written into or removed (55000).  Every directory this file removes
 * carries the marker.
 *
 * Who may export.  EXECUTE is revoked from PUBLIC; a caller also needs
 * SELECT on every table exported, as reading the gold would (42501 naming
 * the table).  The rows are read with the owner's rights and the pinned
 * search_path of the catalog.
 *
 * IDENTIFICATION
 *	  src/export/export.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "common/file_utils.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "base/args.h"
#include "base/compat.h"
#include "base/data_dir.h"
#include "base/fault.h"
#include "base/settings.h"
#include "contract/contract.h"
#include "contract/iso8601.h"
#include "export/export.h"
#include "format/export_manifest.h"
#include "kl_catalog/catalog.h"
#include "kl_catalog/locks.h"

PG_FUNCTION_INFO_V1(kafka_lake_export);

#define KL_EXPORT_MARKER		".kafka_lake_export"
#define KL_EXPORT_MARKER_LINE	"database %u source %s\n"
#define KL_EXPORT_FILE_NAME		"part-00000.parquet"
#define KL_EXPORT_MAX_TABLES	1024

/*
 * A date's export, written in staging, to be put in place (at once, or when
 * the transaction that published its snapshot commits)
 */
typedef struct KlExportPending
{
	char	   *source;
	char	   *tree;			/* <export_dir>/<source> */
	char	   *staging;		/* this call's staging directory */
	char	   *date_text;		/* YYYY-MM-DD */
	char	   *json_path;
	char	   *json;			/* the per-date JSON */
	List	   *relations;		/* of the snapshot (char *) */
	List	   *old_relations;	/* of the export it replaces (char *) */
	SubTransactionId subid;		/* deferred: the subtransaction that staged it */
} KlExportPending;

/* exports staged for a snapshot of this transaction, in kl_export_cxt */
static List *kl_export_pending = NIL;
static MemoryContext kl_export_cxt = NULL;

/* The date's current snapshot */
typedef struct KlExportSnapshot
{
	int64		snapshot_id;
	char	   *run_id;
	char	   *source_hash;
	char	   *closing_status;
	bool		ours;			/* published by this transaction */
} KlExportSnapshot;

/*
 * kl_export_marker_line
 *		The line a marker of this database's export of source holds.
 */
static char *
kl_export_marker_line(const char *source)
{
	return psprintf(KL_EXPORT_MARKER_LINE, MyDatabaseId, source);
}

/*
 * kl_export_is_ours
 *		Does dir carry this database's export marker of source?
 */
static bool
kl_export_is_ours(const char *dir, const char *source)
{
	char	   *path = psprintf("%s/" KL_EXPORT_MARKER, dir);
	char	   *expected = kl_export_marker_line(source);
	char		buf[NAMEDATALEN * 2 + 64];
	int			fd = open(path, O_RDONLY | O_NOFOLLOW | PG_BINARY);
	ssize_t		n;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return strcmp(buf, expected) == 0;
}

/*
 * kl_export_write_file
 *		Write data to path durably: a temporary file, fsync, rename, fsync of
 *		the directory.  Reports failure at elevel and returns false.
 */
static bool
kl_export_write_file(const char *path, const char *data, size_t len, int elevel)
{
	char	   *tmp = psprintf("%s.tmp", path);
	int			fd;

	(void) unlink(tmp);
	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (fd < 0 || write(fd, data, len) != (ssize_t) len || pg_fsync(fd) != 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not write \"%s\": %m", tmp)));
		if (fd >= 0)
			CloseTransientFile(fd);
		return false;
	}
	CloseTransientFile(fd);
	return durable_rename(tmp, path, elevel) == 0;
}

/*
 * kl_export_mkdir
 *		Make a directory (its parent must exist) and fsync the parent, unless
 *		it is there already.  Reports failure at elevel and returns false.
 */
static bool
kl_export_mkdir(const char *dir, int elevel)
{
	char	   *parent = pstrdup(dir);

	if (MakePGDirectory(dir) != 0)
	{
		if (errno == EEXIST)
			return true;
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", dir)));
		return false;
	}
	get_parent_directory(parent);
	return fsync_fname_ext(parent, true, false, elevel) == 0;
}

/*
 * kl_export_mkdir_marked
 *		Make a directory of an export (or find it made) and give it this
 *		database's marker of the source, line.
 */
static void
kl_export_mkdir_marked(const char *dir, const char *line)
{
	(void) kl_export_mkdir(dir, ERROR);
	(void) kl_export_write_file(psprintf("%s/" KL_EXPORT_MARKER, dir), line, strlen(line), ERROR);
}

/*
 * kl_export_claim_tree
 *		Make <root>/<source> this database's export tree of the source, or
 *		check that it is: a directory with our marker, or an empty one (then
 *		marked now).  Anything else is refused (55000).
 */
static void
kl_export_claim_tree(const char *tree, const char *source)
{
	struct stat st;
	char	   *line = kl_export_marker_line(source);

	if (lstat(tree, &st) != 0)
	{
		if (errno != ENOENT)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not stat \"%s\": %m", tree)));
	}
	else if (!S_ISDIR(st.st_mode))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("\"%s\" is not a directory", tree),
				 errhint("Move it away, or set kafka_lake.export_dir to another directory.")));
	else if (kl_export_is_ours(tree, source))
		return;
	else
	{
		DIR		   *dir = AllocateDir(tree);
		struct dirent *de;
		bool		empty = true;

		while ((de = ReadDir(dir, tree)) != NULL)
			if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
				empty = false;
		FreeDir(dir);
		if (!empty)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("\"%s\" is not an export of source \"%s\" of this database", tree, source),
					 errdetail("It holds files, and no marker \"%s\" that reads \"%s\".",
							   KL_EXPORT_MARKER, pnstrdup(line, strlen(line) - 1)),
					 errhint("Move the directory away (kafka_lake never writes into or removes a directory it did not make), or set kafka_lake.export_dir to another directory.")));
	}
	kl_export_mkdir_marked(tree, line);
}

/*
 * kl_export_remove
 *		rm -rf of a directory that carries our marker; anything else is left,
 *		with a WARNING.
 */
static void
kl_export_remove(const char *dir, const char *source)
{
	if (!kl_export_is_ours(dir, source))
	{
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("not removing \"%s\": it carries no export marker of source \"%s\" of this database",
						dir, source)));
		return;
	}
	if (!rmtree(dir, true))
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove directory \"%s\" completely", dir)));
}

/*
 * kl_export_clean_staging
 *		Remove what killed exports left in <tree>/.staging (the caller holds
 *		the source's export lock: nothing there is a live call's, but what
 *		this transaction staged to publish at its commit).
 */
static void
kl_export_clean_staging(const char *staging_root, const char *source)
{
	DIR		   *dir;
	struct dirent *de;

	dir = AllocateDir(staging_root);
	if (dir == NULL && errno == ENOENT)
		return;
	while ((de = ReadDir(dir, staging_root)) != NULL)
	{
		char	   *path;
		bool		pending = false;
		ListCell   *lc;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
			strcmp(de->d_name, KL_EXPORT_MARKER) == 0)
			continue;
		path = psprintf("%s/%s", staging_root, de->d_name);
		foreach(lc, kl_export_pending)
			pending |= strcmp(((KlExportPending *) lfirst(lc))->staging, path) == 0;
		if (!pending)
			kl_export_remove(path, source);
	}
	FreeDir(dir);
}

/*
 * kl_export_snapshot
 *		The date's current snapshot; P0002 when it has none.
 */
static KlExportSnapshot *
kl_export_snapshot(KlSource *src, DateADT date, const char *date_text)
{
	Oid			types[2] = {INT4OID, DATEOID};
	Datum		values[2] = {Int32GetDatum(src->source_id), DateADTGetDatum(date)};
	KlExportSnapshot *s;
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;

	if (SPI_execute_with_args("SELECT snapshot_id, run_id, source_hash, closing_status, xmin"
							  "  FROM kafka_lake.snapshots"
							  " WHERE source_id = $1 AND business_date = $2 AND is_current",
							  2, types, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the snapshots of source \"%s\"", src->source);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("business date %s of source \"%s\" has no snapshot", date_text, src->source),
				 errhint("Bridge the date first: SELECT * FROM kafka_lake.bridge('%s', '%s');",
						 src->source, date_text)));
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	s = palloc0(sizeof(KlExportSnapshot));
	s->snapshot_id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	s->run_id = SPI_getvalue(tup, desc, 2);
	s->source_hash = SPI_getvalue(tup, desc, 3);
	s->closing_status = SPI_getvalue(tup, desc, 4);
	s->ours = TransactionIdIsCurrentTransactionId(DatumGetTransactionId(SPI_getbinval(tup, desc, 5, &isnull)));
	return s;
}

/*
 * kl_export_tables
 *		The relations of the snapshot: silver, then each gold it published
 *		(by name), checked to exist and to be readable by the caller.
 */
static pg_noinline List *
kl_export_tables(KlSource *src, KlExportSnapshot *snap, Oid caller)
{
	List	   *tables = NIL;
	Oid			nsp = get_namespace_oid("kafka_lake", false);
	Oid			type = INT8OID;
	Datum		value = Int64GetDatum(snap->snapshot_id);
	KlExportTable *silver = palloc0(sizeof(KlExportTable));
	ListCell   *lc;

	silver->relation = strcmp(src->contract, KL_MACHINE_EVENT_V1) == 0 ?
		pstrdup("silver_machine_events") : psprintf("%s_silver", src->source);
	silver->kind = "silver";
	silver->id_column = "run_id";
	silver->id_value = snap->run_id;
	tables = lappend(tables, silver);

	if (SPI_execute_with_args("SELECT name FROM kafka_lake.snapshot_definitions"
							  " WHERE snapshot_id = $1 AND kind = 'gold' ORDER BY name",
							  1, &type, &value, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the golds of snapshot %lld", (long long) snap->snapshot_id);
	for (uint64 i = 0; i < SPI_processed && i < KL_EXPORT_MAX_TABLES; i++)
	{
		KlExportTable *g = palloc0(sizeof(KlExportTable));

		g->relation = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		g->kind = "gold";
		g->id_column = "snapshot_id";
		g->id_value = psprintf("%lld", (long long) snap->snapshot_id);
		tables = lappend(tables, g);
	}

	foreach(lc, tables)
	{
		KlExportTable *t = lfirst(lc);

		t->relid = get_relname_relid(t->relation, nsp);
		if (!OidIsValid(t->relid) || get_rel_relkind(t->relid) != RELKIND_RELATION)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the %s table kafka_lake.%s of snapshot %lld is missing",
							t->kind, t->relation, (long long) snap->snapshot_id),
					 errhint("%s", strcmp(t->kind, "silver") == 0 ?
							 "The next bridge of the source makes its silver table again; bridge the date with recheck => true." :
							 "A gold's table keeps the rows it published; restore the table from a dump.")));
		if (pg_class_aclcheck(t->relid, caller, ACL_SELECT) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to export source \"%s\"", src->source),
					 errdetail("Exporting a date needs SELECT on each table it exports, and role \"%s\" may not read kafka_lake.%s.",
							   GetUserNameFromId(caller, false), t->relation),
					 errhint("Its owner may grant it: GRANT SELECT ON kafka_lake.%s TO %s;",
							 quote_identifier(t->relation), quote_identifier(GetUserNameFromId(caller, false)))));
	}
	return tables;
}

/*
 * kl_export_json
 *		The per-date JSON of an export (format/export_manifest.c).
 */
static char *
kl_export_json(KlSource *src, const char *date_text, KlExportSnapshot *snap, List *tables)
{
	KlExportManifest m = {0};
	ListCell   *lc;

	m.source = src->source;
	m.business_date = (char *) date_text;
	m.snapshot_id = snap->snapshot_id;
	m.run_id = snap->run_id;
	m.source_hash = snap->source_hash;
	m.closing_status = snap->closing_status;
	m.files = palloc0(sizeof(KlExportFile) * Max(list_length(tables), 1));
	foreach(lc, tables)
	{
		KlExportTable *t = lfirst(lc);
		KlExportFile *f = &m.files[m.nfiles++];

		f->relation = t->relation;
		f->kind = (char *) t->kind;
		f->path = t->file;
		f->rows = t->rows;
		f->bytes = t->bytes;
		memcpy(f->sha256, t->sha256, sizeof(f->sha256));
	}
	return kl_export_manifest_text(&m);
}

/*
 * kl_export_previous
 *		What the date's JSON names: its snapshot_id (-1 when there is no
 *		JSON, or one that does not read), and the relations and files it
 *		lists (KlExportTable: relation, file, rows, bytes and sha256).
 */
static int64
kl_export_previous(const char *json_path, List **files)
{
	ssize_t		len;
	char	   *json;
	int			fd;
	struct stat st;
	KlExportManifest m;

	*files = NIL;
	fd = open(json_path, O_RDONLY | O_NOFOLLOW | PG_BINARY);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 64 * 1024 * 1024)
	{
		close(fd);
		return -1;
	}
	json = palloc(st.st_size + 1);
	len = read(fd, json, st.st_size);
	close(fd);
	if (len != st.st_size || !kl_export_manifest_parse(json, len, &m))
		return -1;
	for (int i = 0; i < m.nfiles; i++)
	{
		KlExportTable *t = palloc0(sizeof(KlExportTable));

		t->relation = m.files[i].relation;
		t->kind = m.files[i].kind;
		t->file = m.files[i].path;
		t->rows = m.files[i].rows;
		t->bytes = m.files[i].bytes;
		memcpy(t->sha256, m.files[i].sha256, sizeof(t->sha256));
		*files = lappend(*files, t);
	}
	return m.snapshot_id;
}

/*
 * kl_export_unchanged
 *		Does the previous export hold exactly this snapshot's relations, each
 *		file there with its size?
 */
static bool
kl_export_unchanged(const char *tree, int64 previous, List *old, KlExportSnapshot *snap,
					List *tables)
{
	ListCell   *lc;

	if (previous != snap->snapshot_id || list_length(old) != list_length(tables))
		return false;
	foreach(lc, tables)
	{
		KlExportTable *t = lfirst(lc);
		KlExportTable *o = list_nth(old, foreach_current_index(lc));
		struct stat st;

		if (strcmp(o->relation, t->relation) != 0 ||
			lstat(psprintf("%s/%s", tree, o->file), &st) != 0 ||
			!S_ISREG(st.st_mode) || st.st_size != o->bytes)
			return false;
	}
	return true;
}

/*
 * kl_export_swap
 *		Put the staged directory in place of target, atomically; what was at
 *		target ends up at staged.  Reports failure at elevel and returns
 *		false.
 */
static bool
kl_export_swap(const char *staged, const char *target, int elevel)
{
	struct stat st;

	if (lstat(target, &st) != 0)
	{
		if (rename(staged, target) == 0)
			return true;
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not rename \"%s\" to \"%s\": %m", staged, target)));
		return false;
	}
	if (renameat2(AT_FDCWD, staged, AT_FDCWD, target, RENAME_EXCHANGE) == 0)
		return true;
	if (errno == EINVAL || errno == ENOSYS)
	{
		/* no RENAME_EXCHANGE here: move the old one away first */
		char	   *aside = psprintf("%s.old", staged);

		if (rename(target, aside) == 0 && rename(staged, target) == 0 &&
			rename(aside, staged) == 0)
			return true;
	}
	ereport(elevel,
			(errcode_for_file_access(),
			 errmsg("could not exchange \"%s\" with \"%s\": %m", staged, target)));
	return false;
}

/*
 * kl_export_publish
 *		The staged export of a date put in place: each relation's date
 *		directory swapped in, those of the old export's relations that the
 *		snapshot lacks moved out, the JSON written, staging removed.  At
 *		elevel ERROR from export() itself; at WARNING when the transaction
 *		that published the snapshot commits (an error then cannot undo the
 *		commit: the next export() of the date finishes the work).
 */
static bool
kl_export_publish(KlExportPending *p, int elevel)
{
	ListCell   *lc;

	foreach(lc, p->relations)
	{
		const char *rel = lfirst(lc);
		char	   *parent = psprintf("%s/%s", p->tree, rel);
		char	   *staged = psprintf("%s/%s/business_date=%s", p->staging, rel, p->date_text);

		if (!kl_export_mkdir(parent, elevel) ||
			!kl_export_swap(staged, psprintf("%s/business_date=%s", parent, p->date_text), elevel) ||
			fsync_fname_ext(parent, true, false, elevel) != 0 ||
			fsync_fname_ext(psprintf("%s/%s", p->staging, rel), true, false, elevel) != 0)
			return false;
		/* (never at commit, where an ERROR could not undo the commit) */
		if (foreach_current_index(lc) == 0 && elevel >= ERROR)
			kl_fault_point("export_after_swap");
	}

	/* the relations of the old export that this snapshot lacks */
	foreach(lc, p->old_relations)
	{
		const char *rel = lfirst(lc);
		char	   *target = psprintf("%s/%s/business_date=%s", p->tree, rel, p->date_text);
		char	   *aside = psprintf("%s/%s.dropped", p->staging, rel);

		bool		kept = false;
		ListCell   *nc;

		foreach(nc, p->relations)
			kept |= strcmp(lfirst(nc), rel) == 0;
		if (kept || !kl_export_is_ours(target, p->source))
			continue;
		if (rename(target, aside) != 0)
		{
			ereport(elevel,
					(errcode_for_file_access(),
					 errmsg("could not rename \"%s\" to \"%s\": %m", target, aside)));
			return false;
		}
		if (fsync_fname_ext(psprintf("%s/%s", p->tree, rel), true, false, elevel) != 0)
			return false;
	}

	/* the JSON last: it names what is now completely there */
	if (!kl_export_mkdir(psprintf("%s/_snapshots", p->tree), elevel) ||
		!kl_export_write_file(p->json_path, p->json, strlen(p->json), elevel))
		return false;
	kl_export_remove(p->staging, p->source);
	return true;
}

/*
 * kl_export_discard
 *		A staged export that will not be published: its staging directory
 *		goes (never an ERROR: it runs while a transaction aborts).
 */
static void
kl_export_discard(KlExportPending *p)
{
	kl_export_remove(p->staging, p->source);
}

/*
 * kl_export_xact_callback
 *		Commit: publish what export() staged for a snapshot of this
 *		transaction.  Abort: discard it.  Before PREPARE: refuse, a prepared
 *		transaction cannot carry it to COMMIT PREPARED.
 */
static void
kl_export_xact_callback(XactEvent event, void *arg)
{
	List	   *list = kl_export_pending;
	ListCell   *lc;

	if (list == NIL)
		return;
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot PREPARE a transaction that has called export()"),
					 errdetail("export() puts a snapshot this transaction published in place when the transaction commits, and a prepared transaction cannot carry that to COMMIT PREPARED."),
					 errhint("Run export() in a transaction that is committed with COMMIT.")));
			return;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			break;
		default:
			return;
	}
	/* detach the list first: whatever happens, it is not run twice */
	kl_export_pending = NIL;
	foreach(lc, list)
	{
		KlExportPending *p = lfirst(lc);

		if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT)
		{
			if (!kl_export_publish(p, WARNING))
				ereport(WARNING,
						(errmsg("business date %s of source \"%s\" was not exported", p->date_text, p->source),
						 errhint("Its snapshot is committed; export it again: SELECT * FROM kafka_lake.export('%s', '%s');",
								 p->source, p->date_text)));
		}
		else
			kl_export_discard(p);
	}
	MemoryContextReset(kl_export_cxt);
}

/*
 * kl_export_subxact_callback
 *		A subtransaction that commits hands its staged exports to its parent;
 *		one that aborts discards them.
 */
static void
kl_export_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						   SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	foreach(lc, kl_export_pending)
	{
		KlExportPending *p = lfirst(lc);

		if (p->subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_COMMIT_SUB)
			p->subid = parentSubid;
		else if (event == SUBXACT_EVENT_ABORT_SUB)
		{
			kl_export_discard(p);
			kl_export_pending = foreach_delete_current(kl_export_pending, lc);
		}
	}
}

/*
 * kl_export_defer
 *		Publish p when the transaction commits (a copy in kl_export_cxt, which
 *		the transaction's end empties).
 */
static void
kl_export_defer(KlExportPending *p)
{
	MemoryContext old;
	KlExportPending *c;
	ListCell   *lc;

	if (kl_export_cxt == NULL)
	{
		kl_export_cxt = AllocSetContextCreate(TopMemoryContext, "kafka_lake exports at commit",
											  ALLOCSET_SMALL_SIZES);
		RegisterXactCallback(kl_export_xact_callback, NULL);
		RegisterSubXactCallback(kl_export_subxact_callback, NULL);
	}
	old = MemoryContextSwitchTo(kl_export_cxt);
	c = palloc0(sizeof(KlExportPending));
	c->source = pstrdup(p->source);
	c->tree = pstrdup(p->tree);
	c->staging = pstrdup(p->staging);
	c->date_text = pstrdup(p->date_text);
	c->json_path = pstrdup(p->json_path);
	c->json = pstrdup(p->json);
	foreach(lc, p->relations)
		c->relations = lappend(c->relations, pstrdup(lfirst(lc)));
	foreach(lc, p->old_relations)
		c->old_relations = lappend(c->old_relations, pstrdup(lfirst(lc)));
	c->subid = GetCurrentSubTransactionId();
	kl_export_pending = lappend(kl_export_pending, c);
	MemoryContextSwitchTo(old);
}

/*
 * kl_export_run
 *		Export the date's current snapshot of source: fills in each table's
 *		file, rows, bytes and SHA-256; returns the tables, with *status
 *		'exported', 'unchanged' or 'at_commit' and *snapshot_id, *tree.
 */
static List *
kl_export_run(const char *source, DateADT date, int64 row_group_rows, const char **status,
			  int64 *snapshot_id, char **tree_out)
{
	KlSource   *src;
	char		root[MAXPGPATH];
	char	   *problem;
	char	   *date_text;
	char	   *tree;
	char	   *staging_root;
	char	   *staging;
	char	   *json_path;
	char	   *line;
	KlCatalogSave cs;
	KlExportSnapshot *snap;
	List	   *tables;
	List	   *old;
	int64		previous;
	bool		unchanged;
	ListCell   *lc;

	if (kl_export_dir == NULL || kl_export_dir[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("kafka_lake.export_dir is not set"),
				 errhint("A superuser sets it to a directory of its own, outside the data directory: ALTER SYSTEM SET kafka_lake.export_dir = '/srv/lake'; SELECT pg_reload_conf();")));
	problem = kl_export_dir_problem(kl_export_dir, root);
	if (problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kafka_lake.export_dir \"%s\" would mix exported files with PostgreSQL's own",
						kl_export_dir),
				 errdetail("%s", problem),
				 errhint("Use an absolute path of its own, outside the data directory.")));
	src = kl_source_lookup(source);
	date_text = palloc(KL_DATE_TEXT_LEN);
	kl_date_text(date, date_text);

	kl_lock_export(src->source_id);
	cs = kl_catalog_begin();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	snap = kl_export_snapshot(src, date, date_text);
	tables = kl_export_tables(src, snap, cs.userid);

	tree = psprintf("%s/%s", root, src->source);
	staging_root = psprintf("%s/.staging", tree);
	json_path = psprintf("%s/_snapshots/business_date=%s.json", tree, date_text);
	line = kl_export_marker_line(src->source);
	{
		struct stat st;

		if (lstat(root, &st) != 0 || !S_ISDIR(st.st_mode))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("kafka_lake.export_dir \"%s\" is not a directory", root),
					 errhint("Create it, owned by the server's operating system user.")));
	}
	kl_export_claim_tree(tree, src->source);

	foreach(lc, tables)
	{
		KlExportTable *t = lfirst(lc);

		t->file = psprintf("%s/business_date=%s/" KL_EXPORT_FILE_NAME, t->relation, date_text);
	}
	previous = kl_export_previous(json_path, &old);
	unchanged = kl_export_unchanged(tree, previous, old, snap, tables);
	if (unchanged)
	{
		foreach(lc, tables)
		{
			KlExportTable *t = lfirst(lc);
			KlExportTable *o = list_nth(old, foreach_current_index(lc));

			t->rows = o->rows;
			t->bytes = o->bytes;
			memcpy(t->sha256, o->sha256, sizeof(t->sha256));
		}
	}
	else
	{
		KlExportPending pending = {0};

		/* a date directory we did not make is never replaced: refused first */
		foreach(lc, tables)
		{
			KlExportTable *t = lfirst(lc);
			char	   *target = psprintf("%s/%s/business_date=%s", tree, t->relation, date_text);
			struct stat st;

			if (lstat(target, &st) == 0 && !kl_export_is_ours(target, src->source))
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("\"%s\" is not an export of source \"%s\" of this database", target, src->source),
						 errdetail("It carries no marker \"%s\" that reads \"%s\".",
								   KL_EXPORT_MARKER, pnstrdup(line, strlen(line) - 1)),
						 errhint("Move it away; nothing was replaced.")));
		}

		/* what killed exports left, then this call's staging directory */
		if (!kl_export_is_ours(staging_root, src->source))
			kl_export_mkdir_marked(staging_root, line);
		kl_export_clean_staging(staging_root, src->source);
		staging = psprintf("%s/%lld.%d.%d", staging_root, (long long) snap->snapshot_id, MyProcPid,
						   list_length(kl_export_pending));
		kl_export_mkdir_marked(staging, line);

		/* every file, durable in staging; an ERROR takes staging with it */
		PG_TRY();
		{
			foreach(lc, tables)
			{
				KlExportTable *t = lfirst(lc);
				char	   *dir = psprintf("%s/%s", staging, t->relation);

				(void) kl_export_mkdir(dir, ERROR);
				dir = psprintf("%s/business_date=%s", dir, date_text);
				kl_export_mkdir_marked(dir, line);
				kl_export_table_file(t, psprintf("%s/%s", staging, t->file), row_group_rows,
									 psprintf("%lld", (long long) snap->snapshot_id));
				fsync_fname(dir, true);
			}
		}
		PG_CATCH();
		{
			kl_export_remove(staging, src->source);
			PG_RE_THROW();
		}
		PG_END_TRY();
		kl_fault_point("export_after_write");

		foreach(lc, tables)
			pending.relations = lappend(pending.relations, ((KlExportTable *) lfirst(lc))->relation);
		foreach(lc, old)
			pending.old_relations = lappend(pending.old_relations, ((KlExportTable *) lfirst(lc))->relation);
		pending.source = src->source;
		pending.tree = tree;
		pending.staging = staging;
		pending.date_text = date_text;
		pending.json_path = json_path;
		pending.json = kl_export_json(src, date_text, snap, tables);

		/* in place now, or when the transaction that published it commits */
		if (snap->ours)
			kl_export_defer(&pending);
		else
			(void) kl_export_publish(&pending, ERROR);
	}
	SPI_finish();
	kl_catalog_end(cs);
	*status = unchanged ? "unchanged" : snap->ours ? "at_commit" : "exported";
	*snapshot_id = snap->snapshot_id;
	*tree_out = tree;
	return tables;
}

/*
 * kl_export_published
 *		Export the date the caller has just bridged or closed (bridge() and
 *		close_date() with export => true): its current snapshot, published by
 *		the caller's transaction or not, with the default row groups.
 */
void
kl_export_published(const char *source, DateADT date)
{
	const char *status;
	int64		snapshot_id;
	char	   *tree;

	(void) kl_export_run(source, date, KL_EXPORT_ROW_GROUP_ROWS, &status, &snapshot_id, &tree);
}

/*
 * kafka_lake_export
 *		export(source, business_date, row_group_rows): one row per file of
 *		the date's export, 'exported', 'unchanged' or 'at_commit'.
 */
Datum
kafka_lake_export(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	DateADT		date;
	int64		row_group_rows;
	const char *status;
	int64		snapshot_id;
	char	   *tree;
	List	   *tables;
	ListCell   *lc;

	kl_check_not_null(fcinfo, 0, "source", NULL);
	kl_check_not_null(fcinfo, 1, "business_date", "Name the business date to export.");
	kl_check_not_null(fcinfo, 2, "row_group_rows", "Leave it out for the default, 122880.");
	date = PG_GETARG_DATEADT(1);
	row_group_rows = PG_GETARG_INT32(2);
	if (DATE_NOT_FINITE(date))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("business_date must be a finite date")));
	if (row_group_rows < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("row_group_rows must be at least 1")));
	tables = kl_export_run(text_to_cstring(PG_GETARG_TEXT_PP(0)), date, row_group_rows,
						   &status, &snapshot_id, &tree);

	kl_init_materialized_srf(fcinfo);
	foreach(lc, tables)
	{
		KlExportTable *t = lfirst(lc);
		Datum		values[7];
		bool		nulls[7] = {0};

		values[0] = Int64GetDatum(snapshot_id);
		values[1] = CStringGetTextDatum(t->relation);
		values[2] = CStringGetTextDatum(psprintf("%s/%s", tree, t->file));
		values[3] = Int64GetDatum(t->rows);
		values[4] = Int64GetDatum(t->bytes);
		values[5] = CStringGetTextDatum(t->sha256);
		values[6] = CStringGetTextDatum(status);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_VOID();
}
