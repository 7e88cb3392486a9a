/*-------------------------------------------------------------------------
 *
 * fuzz_csv.c
 *	  libFuzzer target: the canonical CSV reader (src/bridge/csv.c).
 *
 * The input is written to a file (one per process, in $TMPDIR) and read
 * back as the bridge reads its CSV: kl_csv_next for every record, and
 * (for inputs whose length is a multiple of 8: it is slow) again with the first record through kl_csv_next and the rest through
 * the read-ahead thread (kl_csv_ahead_start, kl_csv_ahead_next; the
 * thread is base/thread_job.c's, compiled unchanged).
 *
 * Properties: both readers return the same records, field by field, or
 * both reject the file; a file that reads is written again with
 * kl_csv_append_field (the writer the bridge uses) and that file reads as
 * the same records and is written again to the same bytes (the writer is
 * canonical).
 *
 * Cannot cover: kl_open_landed's checks of the file (landing_files.c: the
 * shim opens it with open(2)); files larger than the fuzzer's -max_len,
 * so a record larger than a read-ahead block (1 MB) is not reached.
 *
 * IDENTIFICATION
 *	  fuzz/fuzz_csv.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "lib/stringinfo.h"

#include "bridge/csv.h"
#include "pg_shim.h"

#define MAXFIELDS	24

static char path[256];

/* every record of a file, as one string of length-prefixed fields */
typedef struct Records
{
	StringInfoData s;
	int			n;
} Records;

static void
put_record(Records *out, char **fields, int *lens, int n)
{
	appendStringInfo(&out->s, "#%d", n);
	for (int i = 0; i < n; i++)
	{
		appendStringInfo(&out->s, ":%d:", lens[i]);
		appendBinaryStringInfo(&out->s, fields[i], lens[i]);
		if ((int) strlen(fields[i]) != lens[i] && memchr(fields[i], '\0', lens[i]) == NULL)
			kl_fuzz_fail("a field is not NUL-terminated at its length");
	}
	out->n++;
}

static void
write_file(const char *data, size_t size)
{
	int			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, data, size) != (ssize_t) size || close(fd) != 0)
	{
		perror(path);
		abort();
	}
}

/*
 * read_plain
 *		Every record with kl_csv_next; false when the file is rejected.
 */
static bool
read_plain(Records *out)
{
	KlCsvReader r;
	volatile bool ok = false;

	initStringInfo(&out->s);
	out->n = 0;
	r.fd = -1;
	r.buf = NULL;
	PG_TRY();
	{
		char	   *fields[MAXFIELDS];
		int			lens[MAXFIELDS];
		int			n;

		kl_csv_open(&r, path);
		while ((n = kl_csv_next(&r, fields, lens, MAXFIELDS)) >= 0)
			put_record(out, fields, lens, n);
		ok = true;
	}
	PG_CATCH();
	{
	}
	PG_END_TRY();
	if (r.fd >= 0)
		close(r.fd);
	return ok;
}

/*
 * read_ahead
 *		The first record with kl_csv_next, the rest with the read-ahead
 *		thread.
 */
static bool
read_ahead(Records *out)
{
	KlCsvReader r;
	KlCsvAhead	a;
	volatile bool started = false;
	volatile bool ok = false;

	initStringInfo(&out->s);
	out->n = 0;
	r.fd = -1;
	PG_TRY();
	{
		char	   *first[MAXFIELDS];
		int			flens[MAXFIELDS];
		char	  **fields;
		int		   *lens;
		int			n;

		kl_csv_open(&r, path);
		n = kl_csv_next(&r, first, flens, MAXFIELDS);
		if (n >= 0)
		{
			put_record(out, first, flens, n);
			kl_csv_ahead_start(&a, &r, MAXFIELDS);
			started = true;
			while ((n = kl_csv_ahead_next(&a, &fields, &lens)) >= 0)
				put_record(out, fields, lens, n);
			kl_csv_ahead_stop(&a);
			started = false;
		}
		ok = true;
	}
	PG_CATCH();
	{
		if (started)
			kl_csv_ahead_stop(&a);
	}
	PG_END_TRY();
	if (r.fd >= 0)
		close(r.fd);
	return ok;
}

/*
 * rewrite
 *		The records written again by csv.c's writer.
 */
static void
rewrite(const Records *recs, StringInfo out)
{
	const char *p = recs->s.data;

	initStringInfo(out);
	for (int k = 0; k < recs->n; k++)
	{
		int			n = (int) strtol(p + 1, (char **) &p, 10);

		for (int i = 0; i < n; i++)
		{
			int			len = (int) strtol(p + 1, (char **) &p, 10);

			p++;				/* the ':' after the length */
			if (i > 0)
				appendStringInfoChar(out, ',');
			kl_csv_append_field(out, p, len);
			p += len;
		}
		appendStringInfoChar(out, '\n');
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	kl_shim_init();
	snprintf(path, sizeof(path), "%s/kl_fuzz_csv.%d", tmp ? tmp : "/tmp", (int) getpid());
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	KL_FUZZ_RUN({
		Records		plain;
		Records		ahead;
		bool		plain_ok;
		bool		ahead_ok;

		write_file((const char *) data, size);
		plain_ok = read_plain(&plain);
		/* the read-ahead (two 1 MB blocks and a thread) for one input in 8 */
		ahead_ok = (size % 8 == 0) ? read_ahead(&ahead) : plain_ok;
		if (size % 8 != 0)
			ahead = plain;
		if (plain_ok != ahead_ok)
			kl_fuzz_fail("kl_csv_next %s the file, the read-ahead %s it",
						 plain_ok ? "reads" : "rejects", ahead_ok ? "reads" : "rejects");
		if (plain_ok &&
			(plain.n != ahead.n || plain.s.len != ahead.s.len ||
			 memcmp(plain.s.data, ahead.s.data, plain.s.len) != 0))
			kl_fuzz_fail("kl_csv_next and the read-ahead read different records");
		if (plain_ok)
		{
			StringInfoData again;
			StringInfoData again2;
			Records		back;

			rewrite(&plain, &again);
			write_file(again.data, again.len);
			if (!read_plain(&back))
				kl_fuzz_fail("the CSV written again does not read: %s", kl_shim_last_error());
			if (back.n != plain.n || back.s.len != plain.s.len ||
				memcmp(back.s.data, plain.s.data, plain.s.len) != 0)
				kl_fuzz_fail("the CSV written again reads as other records");
			rewrite(&back, &again2);
			if (again2.len != again.len || memcmp(again2.data, again.data, again.len) != 0)
				kl_fuzz_fail("the CSV writer is not canonical");
		}
	});
	return 0;
}
