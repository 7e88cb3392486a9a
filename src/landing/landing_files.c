/*-------------------------------------------------------------------------
 *
 * landing_files.c
 *	  The landing directory on disk: where things go, the source directory
 *	  and its marker, writing a batch (steps 3 and 4 of the landing
 *	  protocol: write, fsync, rename, fsync), and opening what lies there
 *	  without ever following a link or blocking.
 *
 * Layout:
 *
 *	<landing_dir>/<source>/.kafka_lake_source
 *	<landing_dir>/<source>/topic=<topic>/partition=<p>/batch=<id>/
 *		accepted.jsonl  duplicates.jsonl  quarantine.jsonl  manifest.json
 *		(or, compressed, the same names with .zst)
 *	<landing_dir>/<source>/.staging/batch=<id>-p<p>[~<topic index>]-<random>/
 *
 * (what a batch holds, and its id, is batch_format.c's).
 *
 * A batch becomes visible in one step.  Its files are written into a fresh
 * staging directory, each file and then the directory are fsynced, the
 * directory is renamed to its final name, and the parent is fsynced.  Until
 * the rename nothing under topic=... changes; after the parent's fsync the
 * batch survives a crash.  Only then does the caller record it in the catalog
 * and commit the offset (see land.c).  A staging directory left by a crash
 * belongs to a partition of a topic (the p<p> in its name, and ~<i> for a
 * source's i-th topic after its first: kl_staging_marker) and is removed by
 * the next caller that owns that partition (recover.c).
 *
 * Each file is hashed (SHA-256 and CRC-32C) and its lines counted while it
 * is written, so the manifest costs no second read.
 *
 * Compression.  A source whose compression is zstd (sources.compression, the
 * default from 1.7 on) writes each of the four files as one zstd frame, named
 * with .zst added (kl_batch_file): the bytes are compressed where they are
 * written (kl_out_push), on the helper thread too, at level 1 with zstd's
 * content checksum (so that zstd -t and zstdcat check it on their own).
 * Level 1 because it is the fastest and, on the landing's lines, also the
 * smallest of the levels measured (1 and 3); the landing then writes and
 * fsyncs a twentieth of the bytes and is no slower than plain.  The SHA-256,
 * CRC-32C and size a batch records are of the bytes on disk, what a reader
 * checks before it uncompresses anything; its lines and raw_bytes are of the
 * lines.  The compressors are made once per file slot on the backend and
 * reused (zstd allocates with malloc, which the helper thread may call).
 *
 * Writing a unit is three steps: kl_unit_begin (backend: describe it, make
 * the staging directory, size the buffers, the manifest's head),
 * kl_unit_write (the four files: serialise, hash, write, fsync) and
 * kl_unit_finish (backend: report a failure of the writer, fsync the
 * staging directory, the fault point, rename, fsync the parent).  The
 * middle step calls nothing of PostgreSQL's that allocates, reports or
 * looks at interrupts (its buffers are sized beforehand for the unit's
 * longest line, its files are opened with open(2) and its digests are
 * OpenSSL's own), so that land() can run it on its helper thread while the
 * backend reserves the unit's event_ids (land.c).  It closes every file it
 * opened on every path of its own; on the backend, kl_write_unit closes
 * them should an interrupt raise in the middle.
 *
 * The source directory and its marker.  The landing directory belongs to the
 * cluster while sources belong to a database, so every source directory
 * carries a marker file, .kafka_lake_source, naming the database and the
 * source.  A source never claims a directory that holds anything but its
 * own files, and only a directory carrying this database's marker of the
 * source it is named after is ever removed (kl_remove_tree: drop_source
 * with drop_landing, the removal of abandoned staging directories) or
 * cleaned.
 *
 * Opening what lies in the landing.  Nothing in the landing that is not a
 * regular file is ever opened, and open(2) never blocks (kl_open_landed): a
 * FIFO planted where a landed file belongs would otherwise hang the backend
 * in a sleep that PostgreSQL's signals do not interrupt.
 *
 * Two more ways of writing a batch serve the landing's life cycle: a batch
 * made of lines that already exist (KlBatchWriter: compact.c copies the
 * lines of the batches it merges, through the same write, fsync and rename
 * steps), and the EXPIRED marker that expire.c writes into a batch before
 * its record files go.
 *
 * IDENTIFICATION
 *	  src/landing/landing_files.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "commands/dbcommands.h"
#include "common/file_perm.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/digest.h"
#include "base/fault.h"
#include "base/json.h"
#include "base/settings.h"
#include "format/batch_format.h"
#include "kl_catalog/catalog.h"
#include "landing/landing_files.h"

#define KL_WRITE_CHUNK	(1024 * 1024)
#define KL_ZSTD_LEVEL	1		/* see "Compression" in the header */
#define KL_SOURCE_MARKER_LINE	"database %u source %s\n"	/* the marker's content */

/* ----------------------------------------------------------------
 *		Where things go
 * ----------------------------------------------------------------
 */

/*
 * kl_landing_root
 *		The absolute landing directory.
 */
char *
kl_landing_root(void)
{
	const char *dir = (kl_landing_dir && kl_landing_dir[0]) ? kl_landing_dir : "kafka_lake";

	if (is_absolute_path(dir))
		return pstrdup(dir);
	return psprintf("%s/%s", DataDir, dir);
}

/*
 * kl_partition_dir
 *		The directory of one partition of a source's topic.
 */
char *
kl_partition_dir(KlSource *src, int32 partition)
{
	return psprintf("%s/topic=%s/partition=%d", src->dir, src->topic, partition);
}

/*
 * kl_staging_marker
 *		What the name of a staging directory of a partition of the source's
 *		topic carries, between the batch id and a random part: "-p<p>-" on
 *		its first topic, "-p<p>~<i>-" on its i-th (so that recovering
 *		partition 0 of one topic never removes what a session is writing for
 *		partition 0 of another).
 */
char *
kl_staging_marker(const KlSource *src, int32 partition)
{
	if (src->topic_index == 0)
		return psprintf("-p%d-", partition);
	return psprintf("-p%d~%d-", partition, src->topic_index);
}

/*
 * kl_batch_partition_dir
 *		The directory of the partition that holds a batch, of whichever of
 *		the source's topics the batch is (a batch read from the catalog or
 *		a manifest knows its topic).
 */
char *
kl_batch_partition_dir(KlSource *src, const KlBatch *b)
{
	return psprintf("%s/topic=%s/partition=%d", src->dir, b->topic ? b->topic : src->topic,
					b->partition);
}

/*
 * kl_make_dirs
 *		mkdir -p, fsyncing each parent whose entries changed.
 */
void
kl_make_dirs(const char *path)
{
	char	   *copy = pstrdup(path);

	for (char *p = copy + 1;; p++)
	{
		if (*p == '/' || *p == '\0')
		{
			char		saved = *p;

			*p = '\0';
			if (mkdir(copy, pg_dir_create_mode) == 0)
			{
				char	   *parent = pstrdup(copy);

				get_parent_directory(parent);
				fsync_fname(parent, true);
			}
			else if (errno != EEXIST)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not create directory \"%s\": %m", copy),
						 errhint("Check kafka_lake.landing_dir and the free space of its file system.")));
			*p = saved;
			if (saved == '\0')
				break;
		}
	}
	pfree(copy);
}

/* ----------------------------------------------------------------
 *		The source directory and its marker
 * ----------------------------------------------------------------
 */

/*
 * kl_source_marker_line
 *		What the marker file of this database's source of that name says.
 */
static char *
kl_source_marker_line(const char *source)
{
	return psprintf(KL_SOURCE_MARKER_LINE, MyDatabaseId, source);
}

/*
 * kl_source_dir_is_ours
 *		Does a directory carry the marker of this database's source of the
 *		directory's own name?  Only such a directory is ever removed
 *		(drop_source) or cleaned (recover).  Plain system calls and a buffer
 *		on the stack, and never an ERROR: it also runs while a transaction
 *		commits.
 */
bool
kl_source_dir_is_ours(const char *dir)
{
	const char *source = last_dir_separator(dir);
	char		path[MAXPGPATH];
	char		expected[NAMEDATALEN + 64];
	char		found[NAMEDATALEN + 64];
	struct stat st;
	int			fd;
	ssize_t		n;

	source = source ? source + 1 : dir;
	if (strlen(source) >= NAMEDATALEN)
		return false;
	snprintf(path, sizeof(path), "%s/" KL_SOURCE_MARKER, dir);
	snprintf(expected, sizeof(expected), KL_SOURCE_MARKER_LINE, MyDatabaseId, source);
	/* a regular file only: a FIFO put there must not block the backend */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | PG_BINARY, 0);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
	{
		close(fd);
		return false;
	}
	n = read(fd, found, sizeof(found) - 1);
	close(fd);
	if (n < 0)
		return false;
	found[n] = '\0';
	return strcmp(found, expected) == 0;
}

/*
 * kl_dir_is_empty
 *		Does a directory hold nothing?
 */
static bool
kl_dir_is_empty(const char *dir)
{
	DIR		   *d = AllocateDir(dir);
	struct dirent *de;
	bool		empty = true;

	while ((de = ReadDir(d, dir)) != NULL)
	{
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
		{
			empty = false;
			break;
		}
	}
	FreeDir(d);
	return empty;
}

/*
 * kl_claim_source_dir
 *		Make the source's directory and mark it as this database's.  The
 *		landing directory belongs to the cluster while sources belong to a
 *		database: a directory left by a source of the same name in another
 *		database must not be adopted here.  One left by this database (a
 *		source dropped with drop_landing => false) is adopted on purpose.  An
 *		existing directory without a marker is claimed only when it is empty:
 *		a source never takes over a directory that holds anything else (it
 *		would remove it with drop_landing => true).
 */
void
kl_claim_source_dir(const char *dir, const char *source)
{
	char	   *marker = psprintf("%s/" KL_SOURCE_MARKER, dir);
	char	   *expected = kl_source_marker_line(source);
	size_t		len;
	char	   *found;
	const char *not_regular;

	kl_make_dirs(dir);
	found = kl_read_whole_file(marker, &len, &not_regular);
	if (found == NULL && not_regular != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("source marker \"%s\" is not a regular file", marker),
				 errdetail("It is %s; kafka_lake writes this file itself.", not_regular),
				 errhint("Remove \"%s\"; create_source() then writes it again.", marker)));
	if (found != NULL)
	{
		if (strcmp(found, expected) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("landing directory \"%s\" belongs to another database", dir),
					 errdetail("Its marker says: %s", pnstrdup(found, strcspn(found, "\n"))),
					 errhint("Choose another source name, or give each database its own kafka_lake.landing_dir (ALTER DATABASE ... SET kafka_lake.landing_dir = ...).")));
		return;
	}
	if (!kl_dir_is_empty(dir))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("landing directory \"%s\" exists and is not a kafka_lake source directory", dir),
				 errdetail("It is not empty and has no marker file %s.", KL_SOURCE_MARKER),
				 errhint("Choose another source name or another kafka_lake.landing_dir. If the directory holds batches that this database landed for source \"%s\", restore its marker: a file %s holding the line \"%s\".",
						 source, KL_SOURCE_MARKER, pnstrdup(expected, strlen(expected) - 1))));
	kl_write_source_marker(dir, source);
}

/*
 * kl_read_source_marker
 *		What the marker of a source directory says (without its line feed),
 *		or NULL when it has none.  *state: KL_MARKER_NO_DIR (no directory),
 *		KL_MARKER_ABSENT, KL_MARKER_NOT_REGULAR, KL_MARKER_OURS (this
 *		database's marker of the source the directory is named after) or
 *		KL_MARKER_OTHER; *dbid is the database the marker names, when it
 *		is of the form "database <oid> source <name>".
 */
char *
kl_read_source_marker(const char *dir, const char *source, KlMarkerState *state, Oid *dbid)
{
	char	   *marker = psprintf("%s/" KL_SOURCE_MARKER, dir);
	char	   *expected = kl_source_marker_line(source);
	const char *not_regular;
	struct stat st;
	size_t		len;
	char	   *found;
	unsigned int oid;
	char		name[NAMEDATALEN + 1];

	*dbid = InvalidOid;
	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
	{
		*state = KL_MARKER_NO_DIR;
		return NULL;
	}
	found = kl_read_whole_file(marker, &len, &not_regular);
	if (found == NULL)
	{
		*state = not_regular ? KL_MARKER_NOT_REGULAR : KL_MARKER_ABSENT;
		return NULL;
	}
	*state = strcmp(found, expected) == 0 ? KL_MARKER_OURS : KL_MARKER_OTHER;
	if (sscanf(found, "database %u source %" CppAsString2(NAMEDATALEN) "s", &oid, name) == 2)
		*dbid = (Oid) oid;
	return pnstrdup(found, strcspn(found, "\n"));
}

/*
 * kl_write_source_marker
 *		Mark a source directory as this database's source: the marker is
 *		written to a new file, fsynced, and renamed over the old one, so a
 *		crash leaves the old marker or the new one.
 */
void
kl_write_source_marker(const char *dir, const char *source)
{
	char	   *marker = psprintf("%s/" KL_SOURCE_MARKER, dir);
	char	   *tmp = psprintf("%s.tmp", marker);
	char	   *line = kl_source_marker_line(source);
	int			fd;

	(void) unlink(tmp);
	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t) strlen(line) || pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write \"%s\": %m", tmp)));
	CloseTransientFile(fd);
	(void) durable_rename(tmp, marker, ERROR);
}

/*
 * kl_check_landing_owned
 *		Every call that writes or removes a source's files checks first that
 *		the source's directory is this database's (kl_source_lock): a
 *		database restored from a dump next to the original, or restored and
 *		renamed into its place, has the catalog rows of the original's
 *		sources, which point at the original's directories; landing,
 *		compacting or recovering there would mix two databases' batches and
 *		delete one's files for the other's leftovers.  ERROR 55000 then, with
 *		what to do.  A directory with no marker that holds topics (a landing
 *		made before markers existed) is marked now; one that does not exist,
 *		or holds nothing of a landing (a file system not mounted), is left
 *		to the caller, as before.
 */
void
kl_check_landing_owned(KlSource *src)
{
	KlMarkerState state;
	Oid			dbid;
	char	   *found = kl_read_source_marker(src->dir, src->source, &state, &dbid);
	char	   *root = pstrdup(src->dir);
	char	   *other;

	switch (state)
	{
		case KL_MARKER_OURS:
		case KL_MARKER_NO_DIR:
			return;
		case KL_MARKER_ABSENT:
			/* a landing of 1.0, which wrote no marker; nothing else is taken */
			if (kl_list_dir(src->dir, "topic=") != NIL)
				kl_write_source_marker(src->dir, src->source);
			return;
		case KL_MARKER_NOT_REGULAR:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("source marker \"%s/%s\" is not a regular file", src->dir, KL_SOURCE_MARKER),
					 errhint("Remove it; the next call writes it again.")));
		case KL_MARKER_OTHER:
			break;
	}
	get_parent_directory(root);
	other = OidIsValid(dbid) ? get_database_name(dbid) : NULL;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the landing directory of source \"%s\" is not this database's", src->source),
			 errdetail("\"%s\" carries the marker \"%s\"%s; this database is %u.",
					   src->dir, found,
					   !OidIsValid(dbid) ? "" :
					   other ? psprintf(" (database \"%s\", which still uses it)", other) :
					   " (a database that no longer exists)", MyDatabaseId),
			 OidIsValid(dbid) && other == NULL ?
			 errhint("If this database was restored from that database's dump and took its place, claim the landing: SELECT * FROM kafka_lake.claim_landing('%s');",
					 src->source) :
			 errhint("If this database was restored from a dump of another one, give it a landing of its own: copy \"%s\" to a directory of this database's, say /srv/copy/%s, and run SELECT * FROM kafka_lake.claim_landing('%s', landing_dir => '/srv/copy', group_id => '<a consumer group of its own>'); nothing was written.",
					 src->dir, src->source, src->source)));
}

/*
 * kl_landing_present
 *		Is the source's directory there, with its marker?  Only then does a
 *		batch directory that is missing mean the batch is gone (and not, say,
 *		a landing directory that is not mounted).
 */
bool
kl_landing_present(KlSource *src)
{
	struct stat st;

	return lstat(psprintf("%s/" KL_SOURCE_MARKER, src->dir), &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * kl_remove_tree
 *		rm -rf of a source directory of this database, or of a directory
 *		inside one (no symlinks are followed).  Anything else is left alone,
 *		with a WARNING: nothing outside a source's own directory is ever
 *		removed.  A source directory is one that carries this database's
 *		marker of the source it is named after (kl_source_dir_is_ours), also
 *		when fileundo.c has moved it aside under .kafka_lake_dropped.
 */
void
kl_remove_tree(const char *path)
{
	char	   *ancestor = pstrdup(path);
	bool		inside = kl_source_dir_is_ours(path);

	while (!inside)
	{
		char	   *before = pstrdup(ancestor);
		bool		top;

		get_parent_directory(ancestor);
		top = (ancestor[0] == '\0' || strcmp(ancestor, before) == 0);
		pfree(before);
		if (top)
			break;
		inside = kl_source_dir_is_ours(ancestor);
	}
	pfree(ancestor);
	if (!inside)
	{
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("not removing \"%s\": it is not inside a kafka_lake source directory of this database",
						path)));
		return;
	}
	if (!rmtree(path, true))
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove directory \"%s\" completely", path)));
}

/* ----------------------------------------------------------------
 *		Opening and listing what lies in the landing
 * ----------------------------------------------------------------
 */

/*
 * kl_file_kind
 *		What a file that is not a regular file is, for messages.
 */
const char *
kl_file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISLNK(mode))
		return "a symbolic link";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	return "not a regular file";
}

static int	kl_open_landed_as(const char *path, const char **not_regular, bool transient);

/*
 * kl_open_landed
 *		Open a file of the landing for reading.  Nothing in the landing
 *		that is not a regular file is ever opened, and open(2) never
 *		blocks: opening a FIFO for reading waits for a writer, in a sleep
 *		that PostgreSQL's signals do not interrupt (they restart it), so a
 *		FIFO planted where a landed file belongs would hang the backend for
 *		good.  Hence lstat first, then O_NONBLOCK | O_NOFOLLOW (a FIFO or a
 *		symbolic link swapped in after the lstat is refused at once), then
 *		fstat of what was opened.
 *
 *		Returns the descriptor (OpenTransientFile: an ERROR closes it), or
 *		-1 with errno set when there is no such file, or -1 with
 *		*not_regular set to what the path is instead.
 */
int
kl_open_landed(const char *path, const char **not_regular)
{
	return kl_open_landed_as(path, not_regular, true);
}

/*
 * kl_open_landed_owned
 *		kl_open_landed, for a descriptor that its reader closes with
 *		close(2) and no abort ever does: a file read by a read-ahead job
 *		(batch_read.c), which closes it when it ends however it ends, and
 *		may end after a subtransaction's abort closed that subtransaction's
 *		transient files.
 */
int
kl_open_landed_owned(const char *path, const char **not_regular)
{
	return kl_open_landed_as(path, not_regular, false);
}

static int
kl_open_landed_as(const char *path, const char **not_regular, bool transient)
{
	struct stat st;
	int			fd;
	int			flags;
	const int	how = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | PG_BINARY;

	*not_regular = NULL;
	if (lstat(path, &st) != 0)
		return -1;
	if (!S_ISREG(st.st_mode))
	{
		*not_regular = kl_file_kind(st.st_mode);
		return -1;
	}
	fd = transient ? OpenTransientFile(path, how) : BasicOpenFile(path, how);
	if (fd < 0)
	{
		if (errno == ELOOP)
			*not_regular = "a symbolic link";
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
	{
		int			save = errno;
		bool		regular = S_ISREG(st.st_mode);

		if (transient)
			CloseTransientFile(fd);
		else
			close(fd);
		if (!regular)
			*not_regular = kl_file_kind(st.st_mode);
		errno = save;
		return -1;
	}
	/* reads of a regular file never block; clear the flag all the same */
	flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		(void) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
}

/*
 * kl_landed_open_problem
 *		Why kl_open_landed returned -1, as the end of a sentence: "is
 *		missing", "is not a regular file (it is a FIFO)", ...
 */
char *
kl_landed_open_problem(const char *not_regular)
{
	if (not_regular != NULL)
		return psprintf("is not a regular file (it is %s)", not_regular);
	if (errno == ENOENT)
		return pstrdup("is missing");
	return psprintf("cannot be opened: %m");
}

/*
 * kl_read_whole_file
 *		Read a file of the landing into memory (see kl_open_landed).  NULL
 *		when it cannot be opened (errno set) or is not a regular file
 *		(*not_regular set).
 */
char *
kl_read_whole_file(const char *path, size_t *len, const char **not_regular)
{
	int			fd = kl_open_landed(path, not_regular);
	struct stat st;
	char	   *buf;
	size_t		done = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0)
	{
		int			save = errno;

		CloseTransientFile(fd);
		errno = save;
		return NULL;
	}
	buf = MemoryContextAllocHuge(CurrentMemoryContext, st.st_size + 1);
	while (done < (size_t) st.st_size)
	{
		ssize_t		n = read(fd, buf + done, Min(st.st_size - done, 64 * 1024 * 1024));

		if (n < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read file \"%s\": %m", path)));
		if (n == 0)
			break;
		done += n;
		CHECK_FOR_INTERRUPTS();
	}
	CloseTransientFile(fd);
	buf[done] = '\0';
	*len = done;
	return buf;
}

/*
 * kl_name_cmp
 *		list_sort comparator of C strings (byte order, as directory names
 *		and batch ids compare).
 */
int
kl_name_cmp(const ListCell *a, const ListCell *b)
{
	return strcmp((const char *) lfirst(a), (const char *) lfirst(b));
}

/*
 * kl_list_dir
 *		The entries of a directory whose names start with prefix, sorted;
 *		NIL when the directory does not exist.
 */
List *
kl_list_dir(const char *path, const char *prefix)
{
	DIR		   *dir = AllocateDir(path);
	struct dirent *de;
	List	   *result = NIL;
	size_t		plen = strlen(prefix);

	if (dir == NULL && errno == ENOENT)
		return NIL;
	while ((de = ReadDir(dir, path)) != NULL)
	{
		if (strncmp(de->d_name, prefix, plen) == 0)
			result = lappend(result, pstrdup(de->d_name));
	}
	FreeDir(dir);
	list_sort(result, kl_name_cmp);
	return result;
}

/*
 * kl_disk_partitions
 *		The partitions of a source that have a directory on disk, plus those
 *		named by staging directories.
 */
List *
kl_disk_partitions(KlSource *src)
{
	char	   *topic_dir = psprintf("%s/topic=%s", src->dir, src->topic);
	List	   *result = NIL;
	ListCell   *cell;

	foreach(cell, kl_list_dir(topic_dir, "partition="))
	{
		int			p = atoi((const char *) lfirst(cell) + strlen("partition="));

		result = list_append_unique_int(result, p);
	}
	foreach(cell, kl_list_dir(psprintf("%s/.staging", src->dir), "batch="))
	{
		const char *name = lfirst(cell);
		const char *mark = strstr(name + KL_BATCH_ID_LEN, "-p");

		/* of this topic */
		if (mark && strstr(name, kl_staging_marker(src, atoi(mark + 2))) != NULL)
			result = list_append_unique_int(result, atoi(mark + 2));
	}
	return result;
}

/* ----------------------------------------------------------------
 *		Writing a batch
 * ----------------------------------------------------------------
 */

/*
 * kl_out_buffer
 *		Give a file its write buffer.  The buffers live as long as the
 *		backend and are reused by every batch (a fresh megabyte per file per
 *		batch costs page faults on every batch).  They are grown here, on
 *		the backend, to hold a whole chunk plus the longest line of the unit
 *		(kl_line_bound), so that writing the lines never grows them: the
 *		writer may run on the helper thread, where nothing may palloc.
 */
static void
kl_out_buffer(KlOutFile *f, int slot, size_t room, int compression)
{
	static StringInfoData buffers[KL_NFILES + 1];
	static ZSTD_CCtx *cctx[KL_NFILES + 1];
	static char *zout[KL_NFILES + 1];

	if (buffers[slot].data == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&buffers[slot]);
		MemoryContextSwitchTo(old);
	}
	f->buf = &buffers[slot];
	resetStringInfo(f->buf);
	if ((size_t) f->buf->maxlen < KL_WRITE_CHUNK + room + 1)
		enlargeStringInfo(f->buf, KL_WRITE_CHUNK + room);
	f->room = room;
	f->fd = -1;
	f->crc = KL_CRC32C_INIT;
	memset(&f->info, 0, sizeof(f->info));
	f->zstd = NULL;
	if (compression == KL_COMPRESS_ZSTD)
	{
		/* a compressor and its output buffer per slot, made once (malloc'd by zstd) */
		if (cctx[slot] == NULL)
			cctx[slot] = ZSTD_createCCtx();
		if (cctx[slot] != NULL && zout[slot] == NULL)
			zout[slot] = MemoryContextAlloc(TopMemoryContext, ZSTD_CStreamOutSize());
		if (cctx[slot] == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory"),
					 errdetail("zstd could not allocate a compressor for a batch file.")));
		ZSTD_CCtx_reset(cctx[slot], ZSTD_reset_session_only);
		ZSTD_CCtx_setParameter(cctx[slot], ZSTD_c_compressionLevel, KL_ZSTD_LEVEL);
		ZSTD_CCtx_setParameter(cctx[slot], ZSTD_c_checksumFlag, 1);
		f->zstd = cctx[slot];
		f->zout = zout[slot];
		f->zout_size = ZSTD_CStreamOutSize();
	}
}

/*
 * kl_out_fail
 *		Remember the first failure of the writer (reported by
 *		kl_unit_report, on the backend).
 */
static void
kl_out_fail(KlUnitWrite *u, KlOutFile *f, KlWriteOp op, int err)
{
	if (u->failed_op == KL_WOP_NONE)
	{
		u->failed_op = op;
		u->failed_errno = err;
		u->failed_path = f ? f->path : NULL;
	}
}

/*
 * kl_out_open
 *		Create a new file for writing (plain open(2): the writer closes what
 *		it opened on every path, kl_unit_close_all).
 */
static bool
kl_out_open(KlUnitWrite *u, KlOutFile *f)
{
	f->fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY, pg_file_create_mode);
	if (f->fd < 0)
	{
		kl_out_fail(u, f, KL_WOP_CREATE, errno);
		return false;
	}
	f->sha = kl_sha256_thread_ctx();
	if (f->sha == NULL)
	{
		kl_out_fail(u, f, KL_WOP_NOMEM, ENOMEM);
		return false;
	}
	kl_sha256_thread_init(f->sha);
	return true;
}

/*
 * kl_out_emit
 *		Write bytes of the file as it lies on disk, hashing them on the way.
 */
static bool
kl_out_emit(KlUnitWrite *u, KlOutFile *f, const char *p, size_t left)
{
	kl_sha256_thread_update(f->sha, p, left);
	f->crc = kl_crc32c(f->crc, p, left);
	f->info.bytes += left;
	while (left > 0)
	{
		ssize_t		n;

		errno = 0;
		n = write(f->fd, p, left);
		if (n <= 0)
		{
			/* a short write without errno is a full disk */
			kl_out_fail(u, f, KL_WOP_WRITE, errno == 0 ? ENOSPC : errno);
			return false;
		}
		p += n;
		left -= n;
	}
	return true;
}

/*
 * kl_out_push
 *		Write the pending bytes (compressed, for a compressed file); with
 *		last, end the file's zstd frame too.
 */
static bool
kl_out_push(KlUnitWrite *u, KlOutFile *f, bool last)
{
	const char *p = f->buf->data;
	size_t		left = f->buf->len;

	f->info.raw_bytes += left;
	if (f->zstd == NULL)
	{
		if (left > 0 && !kl_out_emit(u, f, p, left))
			return false;
	}
	else if (left > 0 || last)
	{
		ZSTD_inBuffer in = {p, left, 0};
		size_t		pending;

		do
		{
			ZSTD_outBuffer out = {f->zout, f->zout_size, 0};

			pending = ZSTD_compressStream2(f->zstd, &out, &in,
										   last ? ZSTD_e_end : ZSTD_e_continue);
			if (ZSTD_isError(pending))
			{
				kl_out_fail(u, f, KL_WOP_COMPRESS, 0);
				u->failed_detail = ZSTD_getErrorName(pending);
				return false;
			}
			if (out.pos > 0 && !kl_out_emit(u, f, f->zout, out.pos))
				return false;
		} while (last ? pending != 0 : in.pos < in.size);
	}
	f->buf->len = 0;
	f->buf->data[0] = '\0';
	return true;
}

/*
 * kl_out_flush
 *		Write the pending bytes, hashing them on the way.
 */
static bool
kl_out_flush(KlUnitWrite *u, KlOutFile *f)
{
	return kl_out_push(u, f, false);
}

/*
 * kl_out_close
 *		Flush, fsync and close; fill in the file's checks.
 */
static bool
kl_out_close(KlUnitWrite *u, KlOutFile *f)
{
	uint8		digest[KL_SHA256_LEN];
	int			fd = f->fd;

	if (!kl_out_push(u, f, true))
		return false;
	if (enableFsync && fsync(fd) != 0)
	{
		kl_out_fail(u, f, KL_WOP_FSYNC, errno);
		return false;
	}
	f->fd = -1;
	if (close(fd) != 0)
	{
		kl_out_fail(u, f, KL_WOP_CLOSE, errno);
		return false;
	}
	kl_sha256_thread_final(f->sha, digest);
	kl_hex(digest, KL_SHA256_LEN, f->info.sha256);
	f->info.crc32c = kl_crc32c_final(f->crc);
	return true;
}

/*
 * kl_unit_close_all
 *		Close whatever the writer left open and free its digest contexts.
 */
static void
kl_unit_close_all(KlUnitWrite *u)
{
	for (int i = 0; i <= KL_NFILES; i++)
	{
		KlOutFile  *f = &u->files[i];

		if (f->fd >= 0)
			close(f->fd);
		f->fd = -1;
		if (f->sha)
			kl_sha256_thread_free(f->sha);
		f->sha = NULL;
	}
}

/*
 * kl_random_hex
 *		8 random hex digits for a staging directory name.
 */
static void
kl_random_hex(char *out)
{
	uint8		bytes[4];

	if (!pg_strong_random(bytes, sizeof(bytes)))
	{
		uint32		v = (uint32) MyProcPid ^ (uint32) GetCurrentTimestamp();

		memcpy(bytes, &v, sizeof(v));
	}
	kl_hex(bytes, sizeof(bytes), out);
}

/*
 * kl_write_batch
 *		kl_write_unit of a batch judged by machine_event_v1.
 */
void
kl_write_batch(KlSource *src, int32 partition, KlRecord *recs, int n, KlBatch *out)
{
	kl_write_unit(src, partition, recs, n, NULL, 1, NULL, out);
}

/*
 * kl_write_unit
 *		Steps 3 and 4 of the landing protocol for the new coordinates
 *		recs[0..n) of one partition (offsets ascending, statuses decided):
 *		write the three JSONL files and the manifest into a staging
 *		directory, fsync them and the directory, rename it to its final name
 *		and fsync the parent.  Fills *out.  contract (NULL: machine_event_v1
 *		version 1) is what judged them; readmit_of, when not NULL, makes it
 *		a readmit unit of that batch (readmit.c), in a directory
 *		readmit=<id>.  All on the backend: kl_unit_begin, kl_unit_write,
 *		kl_unit_finish (land.c runs the middle step on its helper thread).
 */
void
kl_write_unit(KlSource *src, int32 partition, KlRecord *recs, int n, const char *contract,
			  int32 contract_version, const char *readmit_of, KlBatch *out)
{
	KlUnitWrite *u = kl_unit_begin(src, partition, recs, n, contract, contract_version,
								   readmit_of, out);

	/* an interrupt raised while writing must not leave the files open */
	PG_TRY();
	{
		kl_unit_write(u, NULL);
	}
	PG_CATCH();
	{
		kl_unit_close_all(u);
		PG_RE_THROW();
	}
	PG_END_TRY();
	kl_unit_finish(u);
}

/*
 * kl_unit_begin
 *		The backend's part before the files are written: describe the unit
 *		(counts, business dates, id), make the directories and the staging
 *		directory, size the write buffers for the unit's longest line and
 *		write the manifest's head into its buffer.
 */
KlUnitWrite *
kl_unit_begin(KlSource *src, int32 partition, KlRecord *recs, int n, const char *contract,
			  int32 contract_version, const char *readmit_of, KlBatch *out)
{
	KlUnitWrite *u = palloc0(sizeof(KlUnitWrite));
	StringInfoData topic_json;
	char		rnd[9];
	size_t		room = 0;

	/*
	 * Everything the manifest says before its entries is known before the
	 * first line is written: the counts, the business dates, and the batch
	 * id (offsets and the hash of the fingerprints).  So the manifest is
	 * written as a stream, like the JSONL files.
	 */
	kl_batch_describe(src->topic, partition, recs, n,
					  readmit_of ? psprintf("readmit %s %d", contract, contract_version) : NULL,
					  out);
	out->contract = contract ? contract : KL_MACHINE_EVENT_V1;
	out->contract_version = contract ? contract_version : 1;
	out->compression = src->compression;
	if (readmit_of)
	{
		out->readmit = true;
		strlcpy(out->readmit_of, readmit_of, sizeof(out->readmit_of));
	}
	u->src = src;
	u->partition = partition;
	u->recs = recs;
	u->n = n;
	u->out = out;

	u->staging_root = psprintf("%s/.staging", src->dir);
	u->part_dir = kl_partition_dir(src, partition);
	kl_make_dirs(u->staging_root);
	kl_make_dirs(u->part_dir);
	u->final = psprintf("%s/%s%s", u->part_dir, KL_BATCH_DIR_PREFIX(out), out->batch_id);
	kl_random_hex(rnd);
	/* staging names start with batch= whatever the kind (recover.c removes them) */
	u->staging = psprintf("%s/batch=%s%s%s%s", u->staging_root, out->batch_id,
						  kl_staging_marker(src, partition), rnd, out->readmit ? "-readmit" : "");
	if (mkdir(u->staging, pg_dir_create_mode) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", u->staging)));

	initStringInfo(&topic_json);
	kl_json_append_string(&topic_json, src->topic, strlen(src->topic));
	u->topic_json = topic_json.data;
	u->topic_json_len = topic_json.len;
	for (int i = 0; i < n; i++)
		room = Max(room, kl_line_bound(&recs[i], topic_json.len));
	/* the manifest's tail */
	room = Max(room, 4096 + 3 * (size_t) topic_json.len);

	for (int i = 0; i <= KL_NFILES; i++)
	{
		u->files[i].path = psprintf("%s/%s", u->staging, kl_batch_file(out, i));
		kl_out_buffer(&u->files[i], i, room, out->compression);
	}
	kl_manifest_append_head(u->files[KL_NFILES].buf, out);
	return u;
}

/*
 * kl_unit_write
 *		Write, hash and fsync the unit's four files into its staging
 *		directory.  Calls nothing of PostgreSQL's that allocates, reports,
 *		or looks at interrupts, so that it can run on the landing's helper
 *		thread (land.c); on the backend (cancel NULL, only through
 *		kl_write_unit, which closes the files should an interrupt raise) it
 *		checks for interrupts.  A failure is remembered in u and reported by
 *		kl_unit_finish; a set *cancel stops it within 1,024 lines.  It
 *		closes every file it opened on every path of its own.
 */
void
kl_unit_write(KlUnitWrite *u, const volatile bool *cancel)
{
	KlOutFile  *mf = &u->files[KL_NFILES];
	bool		ok = true;

	for (int i = 0; i <= KL_NFILES && ok; i++)
		ok = kl_out_open(u, &u->files[i]);

	for (int i = 0; i < u->n && ok; i++)
	{
		KlRecord   *r = &u->recs[i];
		KlOutFile  *f = &u->files[kl_record_file(r->status)];
		size_t		bound;

		if ((i & 1023) == 0)
		{
			if (cancel == NULL)
				CHECK_FOR_INTERRUPTS();
			else if (*cancel)
			{
				kl_out_fail(u, NULL, KL_WOP_CANCELLED, 0);
				ok = false;
				break;
			}
		}
		bound = kl_line_bound(r, u->topic_json_len);
		if (f->buf->len + bound >= (size_t) f->buf->maxlen && !kl_out_flush(u, f))
			ok = false;
		else if (mf->buf->len + bound >= (size_t) mf->buf->maxlen && !kl_out_flush(u, mf))
			ok = false;
		if (!ok)
			break;
		kl_batch_append_line(f->buf, r, u->topic_json, u->partition);
		f->info.lines++;
		kl_manifest_append_entry(mf->buf, r, u->topic_json, u->partition, i + 1 == u->n);
		mf->info.lines++;
		if (f->buf->len >= KL_WRITE_CHUNK)
			ok = kl_out_flush(u, f);
		if (ok && mf->buf->len >= KL_WRITE_CHUNK)
			ok = kl_out_flush(u, mf);
	}

	for (int i = 0; i < KL_NFILES && ok; i++)
	{
		ok = kl_out_close(u, &u->files[i]);
		u->out->files[i] = u->files[i].info;
	}
	if (ok && mf->buf->len + mf->room / 2 >= (size_t) mf->buf->maxlen)
		ok = kl_out_flush(u, mf);
	if (ok)
	{
		kl_manifest_append_tail(mf->buf, u->out, u->topic_json);
		ok = kl_out_close(u, mf);
	}
	kl_unit_close_all(u);
	u->written = ok;
}

/*
 * kl_unit_report
 *		On the backend: raise the writer's failure, if it had one.
 */
static void
kl_out_report(KlUnitWrite *u)
{
	errno = u->failed_errno;
	switch (u->failed_op)
	{
		case KL_WOP_NONE:
			break;
		case KL_WOP_CREATE:
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not create file \"%s\": %m", u->failed_path)));
			break;
		case KL_WOP_WRITE:
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write file \"%s\": %m", u->failed_path),
					 errhint("Free space under the landing directory; the next land() goes on from the committed offset.")));
			break;
		case KL_WOP_FSYNC:
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not fsync file \"%s\": %m", u->failed_path)));
			break;
		case KL_WOP_CLOSE:
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not close file \"%s\": %m", u->failed_path)));
			break;
		case KL_WOP_NOMEM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory"),
					 errdetail("OpenSSL could not allocate a digest context for a batch file.")));
			break;
		case KL_WOP_COMPRESS:
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not compress file \"%s\": %s", u->failed_path,
							u->failed_detail ? u->failed_detail : "unknown error"),
					 errhint("The next land() goes on from the committed offset.")));
			break;
		case KL_WOP_CANCELLED:
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("the writing of batch %s was stopped", u->out->batch_id),
					 errdetail("Nothing of the batch was renamed into place."),
					 errhint("The next land() goes on from the committed offset.")));
			break;
	}
}

/*
 * kl_unit_report
 *		On the backend: raise the writer's failure, if it had one, or that
 *		it did not finish.
 */
static void
kl_unit_report(KlUnitWrite *u)
{
	kl_out_report(u);
	if (!u->written)
		elog(ERROR, "batch %s was not written", u->out->batch_id);
}

/*
 * kl_unit_abandon
 *		On the backend, after kl_unit_write: forget a unit whose statuses
 *		changed while it was written (land.c writes it again): remove its
 *		staging directory.
 */
void
kl_unit_abandon(KlUnitWrite *u)
{
	kl_remove_tree(u->staging);
}

/*
 * kl_unit_finish
 *		On the backend, after kl_unit_write: report its failure, or fsync
 *		the staging directory, rename it to its final name (step 4: one
 *		rename makes the batch visible) and fsync the parent.
 */
void
kl_unit_finish(KlUnitWrite *u)
{
	KlBatch    *out = u->out;
	int			fd;

	kl_unit_report(u);
	strlcpy(out->manifest_sha256, u->files[KL_NFILES].info.sha256, sizeof(out->manifest_sha256));
	out->manifest_bytes = u->files[KL_NFILES].info.bytes;
	out->manifest_crc32c = u->files[KL_NFILES].info.crc32c;

	/* the staging directory's entries are durable */
	fsync_fname(u->staging, true);

	kl_fault_point("after_staging_write");

	if (rename(u->staging, u->final) != 0)
	{
		if (errno == ENOTEMPTY || errno == EEXIST)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("batch directory \"%s\" already exists", u->final),
					 errdetail("The catalog does not know it, yet it holds these coordinates."),
					 errhint("Run kafka_lake.recover('%s') and then kafka_lake.verify('%s').",
							 u->src->source, u->src->source)));
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rename \"%s\" to \"%s\": %m", u->staging, u->final)));
	}
	fd = OpenTransientFile(u->part_dir, O_RDONLY | PG_BINARY);
	if (fd < 0 || pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync directory \"%s\": %m", u->part_dir)));
	CloseTransientFile(fd);
	/* the staging root lost an entry; not needed for durability, but tidy */
	fsync_fname(u->staging_root, true);

	out->path = u->final;
	kl_fault_point("after_rename");
}

/* ----------------------------------------------------------------
 *		Writing a batch from lines already made (compaction)
 * ----------------------------------------------------------------
 */

/* A batch being written from bytes the caller has (compact.c) */
struct KlBatchWriter
{
	KlSource   *src;
	int32		partition;
	char	   *staging_root;
	char	   *staging;		/* .staging/batch=<id>-p<p>-<random> */
	char	   *part_dir;
	char	   *final;			/* <partition dir>/batch=<id> */
	KlOutFile	files[KL_NFILES + 1];	/* the JSONL files, then manifest.json */
	KlUnitWrite failure;		/* where kl_out_flush records a failure */
	KlBatch		named;			/* names the batch in a report */
	MemoryContextCallback free_digests;
};

/*
 * kl_batch_writer_free_digests
 *		The digest contexts are OpenSSL's: freed with the writer's memory
 *		context, on every path (the files are transient files, closed by
 *		PostgreSQL at abort).
 */
static void
kl_batch_writer_free_digests(void *arg)
{
	KlBatchWriter *w = arg;

	for (int i = 0; i <= KL_NFILES; i++)
	{
		if (w->files[i].sha)
			kl_sha256_thread_free(w->files[i].sha);
		w->files[i].sha = NULL;
	}
}

/*
 * kl_batch_writer_flush
 *		kl_out_flush, on the backend: a failure is raised at once.
 */
static void
kl_batch_writer_flush(KlBatchWriter *w, KlOutFile *f)
{
	if (!kl_out_flush(&w->failure, f))
		kl_out_report(&w->failure);
}

/*
 * kl_batch_writer_open_file
 *		Create one file of the batch (a transient file: closed at abort).
 */
static void
kl_batch_writer_open_file(KlBatchWriter *w, int slot, const char *name)
{
	KlOutFile  *f = &w->files[slot];

	kl_out_buffer(f, slot, 0, w->named.compression);
	f->path = psprintf("%s/%s", w->staging, name);
	f->fd = OpenTransientFile(f->path, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (f->fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", f->path)));
	f->sha = kl_sha256_thread_ctx();
	if (f->sha == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("OpenSSL could not allocate a digest context for a batch file.")));
	kl_sha256_thread_init(f->sha);
}

/*
 * kl_batch_writer_close_file
 *		Flush, fsync and close one file; fill in its checks.
 */
static void
kl_batch_writer_close_file(KlBatchWriter *w, KlOutFile *f)
{
	uint8		digest[KL_SHA256_LEN];

	if (!kl_out_push(&w->failure, f, true))
		kl_out_report(&w->failure);
	if (pg_fsync(f->fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", f->path)));
	if (CloseTransientFile(f->fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", f->path)));
	f->fd = -1;
	kl_sha256_thread_final(f->sha, digest);
	kl_hex(digest, KL_SHA256_LEN, f->info.sha256);
	f->info.crc32c = kl_crc32c_final(f->crc);
}

/*
 * kl_out_write
 *		Append bytes to a file being written: into its buffer, or straight
 *		to the file when they would overflow it.  lines is how many lines
 *		they hold.
 */
static void
kl_out_write(KlBatchWriter *w, KlOutFile *f, const char *data, size_t len, int64 lines)
{
	f->info.lines += lines;
	if (f->buf->len + len < KL_WRITE_CHUNK)
	{
		appendBinaryStringInfo(f->buf, data, len);
		return;
	}
	kl_batch_writer_flush(w, f);
	while (len > 0)
	{
		size_t		n = Min(len, (size_t) KL_WRITE_CHUNK);

		appendBinaryStringInfo(f->buf, data, n);
		kl_batch_writer_flush(w, f);
		data += n;
		len -= n;
	}
}

/*
 * kl_batch_writer_new
 *		Where a new batch of a partition will be written, and under which
 *		name it will appear; nothing is created yet, so that the caller can
 *		register the removal of the staging directory before it exists
 *		(kl_batch_writer_staging).
 */
KlBatchWriter *
kl_batch_writer_new(KlSource *src, int32 partition, const char *batch_id)
{
	KlBatchWriter *w = palloc0(sizeof(KlBatchWriter));
	char		rnd[9];

	w->src = src;
	w->partition = partition;
	w->staging_root = psprintf("%s/.staging", src->dir);
	w->part_dir = kl_partition_dir(src, partition);
	w->final = psprintf("%s/batch=%s", w->part_dir, batch_id);
	kl_random_hex(rnd);
	w->staging = psprintf("%s/batch=%s%s%s", w->staging_root, batch_id,
						  kl_staging_marker(src, partition), rnd);
	for (int i = 0; i <= KL_NFILES; i++)
		w->files[i].fd = -1;
	strlcpy(w->named.batch_id, batch_id, sizeof(w->named.batch_id));
	w->named.compression = src->compression;
	w->failure.out = &w->named;
	w->free_digests.func = kl_batch_writer_free_digests;
	w->free_digests.arg = w;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &w->free_digests);
	return w;
}

/*
 * kl_batch_writer_staging, kl_batch_writer_final
 *		The staging directory and the final directory of a batch writer.
 */
const char *
kl_batch_writer_staging(KlBatchWriter *w)
{
	return w->staging;
}

const char *
kl_batch_writer_final(KlBatchWriter *w)
{
	return w->final;
}

/*
 * kl_batch_writer_open
 *		Create the staging directory and the four files (step 3 begins).
 */
void
kl_batch_writer_open(KlBatchWriter *w)
{
	kl_make_dirs(w->staging_root);
	kl_make_dirs(w->part_dir);
	if (mkdir(w->staging, pg_dir_create_mode) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", w->staging)));
	for (int i = 0; i <= KL_NFILES; i++)
		kl_batch_writer_open_file(w, i, kl_batch_file(&w->named, i));
}

/*
 * kl_batch_writer_append
 *		Append bytes holding lines whole lines to one of the JSONL files
 *		(KL_FILE_*), or to manifest.json (KL_NFILES).
 */
void
kl_batch_writer_append(KlBatchWriter *w, int file, const char *data, size_t len, int64 lines)
{
	Assert(file >= 0 && file <= KL_NFILES);
	kl_out_write(w, &w->files[file], data, len, lines);
}

/*
 * kl_batch_writer_close_records
 *		Flush, fsync and close the three JSONL files; their checks go into
 *		b->files (the manifest's tail needs them).
 */
void
kl_batch_writer_close_records(KlBatchWriter *w, KlBatch *b)
{
	for (int i = 0; i < KL_NFILES; i++)
	{
		kl_batch_writer_close_file(w, &w->files[i]);
		b->files[i] = w->files[i].info;
	}
}

/*
 * kl_batch_writer_close
 *		Flush, fsync and close manifest.json, record its checks in *b, and
 *		fsync the staging directory: the end of step 3.
 */
void
kl_batch_writer_close(KlBatchWriter *w, KlBatch *b)
{
	KlOutFile  *mf = &w->files[KL_NFILES];

	kl_batch_writer_close_file(w, mf);
	strlcpy(b->manifest_sha256, mf->info.sha256, sizeof(b->manifest_sha256));
	b->manifest_bytes = mf->info.bytes;
	b->manifest_crc32c = mf->info.crc32c;
	fsync_fname(w->staging, true);
}

/*
 * kl_batch_writer_publish
 *		Step 4: rename the staging directory to the batch's final name and
 *		fsync the partition directory; the batch is then on disk for good.
 */
void
kl_batch_writer_publish(KlBatchWriter *w, KlBatch *b)
{
	int			fd;

	if (rename(w->staging, w->final) != 0)
	{
		if (errno == ENOTEMPTY || errno == EEXIST)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("batch directory \"%s\" already exists", w->final),
					 errdetail("The catalog does not know it, yet it holds these coordinates."),
					 errhint("Run kafka_lake.recover('%s') and then kafka_lake.verify('%s').",
							 w->src->source, w->src->source)));
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rename \"%s\" to \"%s\": %m", w->staging, w->final)));
	}
	fd = OpenTransientFile(w->part_dir, O_RDONLY | PG_BINARY);
	if (fd < 0 || pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync directory \"%s\": %m", w->part_dir)));
	CloseTransientFile(fd);
	fsync_fname(w->staging_root, true);
	b->path = w->final;
}

/* ----------------------------------------------------------------
 *		The expiry marker of a batch (expire.c)
 * ----------------------------------------------------------------
 */

/*
 * kl_expired_marker_path
 *		Where the expiry marker of a batch directory lies.
 */
char *
kl_expired_marker_path(const char *batch_dir)
{
	return psprintf("%s/" KL_EXPIRED_MARKER, batch_dir);
}

static void kl_check_file_slot(const char *path);

/*
 * kl_check_expired_marker_slot
 *		ERROR (XX001) when something that is not a regular file lies where a
 *		batch directory's expiry marker belongs: it is never opened, written
 *		through or removed.
 */
void
kl_check_expired_marker_slot(const char *batch_dir)
{
	char	   *path = kl_expired_marker_path(batch_dir);

	kl_check_file_slot(path);
	pfree(path);
}

/*
 * kl_check_file_slot
 *		ERROR (XX001) when something that is not a regular file lies at the
 *		path of a file of kafka_lake's own in a batch directory.
 */
static void
kl_check_file_slot(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("\"%s\" is not a regular file", path),
				 errdetail("It is %s; kafka_lake writes this file itself.", kl_file_kind(st.st_mode)),
				 errhint("Move it out of the batch directory, then call the function again.")));
}

/*
 * kl_write_expired_marker
 *		Write a batch directory's expiry marker (one JSON line: the batch and
 *		when it expired), fsync it and the directory.  It is written before
 *		the catalog says the batch expired and before any record file goes,
 *		so a batch directory whose record files are gone says why.
 */
void
kl_write_expired_marker(const char *batch_dir, const char *batch_id, TimestampTz expired_at)
{
	StringInfoData line;

	initStringInfo(&line);
	appendStringInfoString(&line, "{\"batch_id\": ");
	kl_json_append_string(&line, batch_id, strlen(batch_id));
	appendStringInfo(&line, ", \"expired_at\": \"%s\"}\n", timestamptz_to_str(expired_at));
	kl_write_batch_dir_file(batch_dir, KL_EXPIRED_MARKER, line.data, line.len);
	pfree(line.data);
}

/*
 * kl_write_batch_dir_file
 *		Write a small file of kafka_lake's own into a batch directory (the
 *		EXPIRED marker, a reduced manifest: expire.c), fsync it and the
 *		directory.  What lies at its name and is not a regular file is
 *		refused (XX001), never written through: a link is not followed, a
 *		FIFO does not block (see kl_open_landed).
 */
void
kl_write_batch_dir_file(const char *batch_dir, const char *name, const char *data, size_t len)
{
	char	   *path = psprintf("%s/%s", batch_dir, name);
	int			fd;

	kl_check_file_slot(path);
	fd = OpenTransientFile(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", path)));
	errno = 0;
	if (write(fd, data, len) != (ssize_t) len)
	{
		if (errno == 0)
			errno = ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", path)));
	}
	if (pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", path)));
	CloseTransientFile(fd);
	fsync_fname(batch_dir, true);
	pfree(path);
}

/*
 * kl_zstd_frame
 *		data as one zstd frame with its checksum, at the landing's level: a
 *		small file written whole (a reduced manifest), as the landing's own
 *		files are.
 */
char *
kl_zstd_frame(const char *data, size_t len, size_t *frame_len)
{
	ZSTD_CCtx  *cctx = ZSTD_createCCtx();
	size_t		cap = ZSTD_compressBound(len);
	char	   *frame = palloc(cap);
	size_t		n;

	if (cctx == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, KL_ZSTD_LEVEL);
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	n = ZSTD_compress2(cctx, frame, cap, data, len);
	ZSTD_freeCCtx(cctx);
	if (ZSTD_isError(n))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not compress: %s", ZSTD_getErrorName(n))));
	*frame_len = n;
	return frame;
}

/*
 * kl_has_expired_marker
 *		Does a batch directory carry an expiry marker (a regular file)?
 */
bool
kl_has_expired_marker(const char *batch_dir)
{
	struct stat st;

	return lstat(kl_expired_marker_path(batch_dir), &st) == 0 && S_ISREG(st.st_mode);
}
