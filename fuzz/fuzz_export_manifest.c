/*-------------------------------------------------------------------------
 *
 * fuzz_export_manifest.c
 *	  libFuzzer target: the reader of an export's per-date JSON,
 *	  kl_export_manifest_parse (src/format/export_manifest.c), which every
 *	  export() of a date runs over the file it finds on disk.
 *
 * Properties: a document that reads is written back by
 * kl_export_manifest_text to a document that reads the same (every member,
 * every file), and that writes back to the very same bytes; a relation
 * read is a non-empty name of [a-z0-9_], a SHA-256 64 lower-case hex
 * digits, counts and sizes not negative.
 *
 * Cannot cover: what export() does with what it read (the files' sizes on
 * disk, the directories it swaps: test/t/57_export.sh).
 *
 * IDENTIFICATION
 *	  fuzz/fuzz_export_manifest.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "format/export_manifest.h"
#include "pg_shim.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	kl_shim_init();
	return 0;
}

/* the same manifest, member by member */
static bool
kl_fuzz_same(const KlExportManifest *a, const KlExportManifest *b)
{
	if (strcmp(a->source, b->source) != 0 || strcmp(a->business_date, b->business_date) != 0 ||
		a->snapshot_id != b->snapshot_id || strcmp(a->run_id, b->run_id) != 0 ||
		strcmp(a->source_hash, b->source_hash) != 0 ||
		strcmp(a->closing_status, b->closing_status) != 0 || a->nfiles != b->nfiles)
		return false;
	for (int i = 0; i < a->nfiles; i++)
	{
		const KlExportFile *f = &a->files[i],
				   *g = &b->files[i];

		if (strcmp(f->relation, g->relation) != 0 || strcmp(f->kind, g->kind) != 0 ||
			strcmp(f->path, g->path) != 0 || f->rows != g->rows || f->bytes != g->bytes ||
			strcmp(f->sha256, g->sha256) != 0)
			return false;
	}
	return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	KL_FUZZ_RUN({
		KlExportManifest m;
		KlExportManifest back;
		char	   *text;
		char	   *again;

		if (kl_export_manifest_parse((const char *) data, size, &m))
		{
			for (int i = 0; i < m.nfiles; i++)
			{
				const KlExportFile *f = &m.files[i];

				if (f->relation[0] == '\0' ||
					strspn(f->relation, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(f->relation) ||
					strlen(f->sha256) != 64 || strspn(f->sha256, "0123456789abcdef") != 64 ||
					f->rows < 0 || f->bytes < 0)
					kl_fuzz_fail("a file read is not what the reader promises");
			}
			if (m.snapshot_id < 0)
				kl_fuzz_fail("a negative snapshot_id was read");
			text = kl_export_manifest_text(&m);
			if (!kl_export_manifest_parse(text, strlen(text), &back))
				kl_fuzz_fail("what was read, written back, does not read");
			if (!kl_fuzz_same(&m, &back))
				kl_fuzz_fail("what was read, written back, reads otherwise");
			again = kl_export_manifest_text(&back);
			if (strcmp(text, again) != 0)
				kl_fuzz_fail("what was read back writes other bytes");
		}
	});
	return 0;
}
