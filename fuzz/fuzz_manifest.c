/*-------------------------------------------------------------------------
 *
 * fuzz_manifest.c
 *	  libFuzzer target: the manifest reader, kl_manifest_parse
 *	  (src/format/batch_format.c), which every read of a batch goes
 *	  through before its lines.
 *
 * Properties: a manifest that reads adds up as the reader promises
 * (entries in strictly ascending offsets, from input_offset_start to
 * input_offset_end, as many as new_coordinate_count and as the three
 * counts); its size, CRC-32C and SHA-256 are the input's; every batch id
 * it hands out has the batch id's length.  And a manifest that reads, of a
 * batch (not a readmit unit, not reduced already), reduces
 * (kl_manifest_reduced, expire.c's) to a reduced manifest that reads back
 * as the same batch: the same offsets (with their gaps), statuses, counts
 * and first 8 bytes of each fingerprint (its batch id's last 12 hex
 * digits made those of the fingerprints' SHA-256 first, as land() names a
 * batch).
 *
 * Cannot cover: batch_read.c's checks of a manifest against the catalog
 * and the files (they need a server).
 *
 * IDENTIFICATION
 *	  fuzz/fuzz_manifest.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/digest.h"
#include "format/batch_format.h"
#include "pg_shim.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	kl_shim_init();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	KL_FUZZ_RUN({
		KlBatch		b;
		KlRecord   *recs;
		int			n;

		kl_manifest_parse("fuzz/manifest.json", (const char *) data, size, &b, &recs, &n);
		if (n < 1 || n != b.record_count ||
			b.counts[0] + b.counts[1] + b.counts[2] != n)
			kl_fuzz_fail("a manifest that reads does not add up");
		if (recs[0].offset != b.first_offset || recs[n - 1].offset != b.last_offset)
			kl_fuzz_fail("a manifest's entries are outside its range");
		for (int i = 1; i < n; i++)
			if (recs[i].offset <= recs[i - 1].offset)
				kl_fuzz_fail("a manifest's offsets do not ascend");
		for (int i = 0; i < n; i++)
			if (recs[i].status != KL_STATUS_ACCEPTED && recs[i].status != KL_STATUS_DUPLICATE &&
				recs[i].status != KL_STATUS_QUARANTINED)
				kl_fuzz_fail("an entry has no status");
		if (b.manifest_bytes != (int64) size)
			kl_fuzz_fail("manifest_bytes is not the input's size");
		if (b.batch_id[0] && strlen(b.batch_id) != KL_BATCH_ID_LEN)
			kl_fuzz_fail("a batch id of another length");
		for (int i = 0; i < b.ncompacted_from; i++)
			if (strlen(b.compacted_from[i]) != KL_BATCH_ID_LEN)
				kl_fuzz_fail("a compacted_from id of another length");

		/* the reduction and back */
		if (!b.reduced && !b.readmit && b.topic != NULL && strlen(b.batch_id) == KL_BATCH_ID_LEN)
		{
			KlSha256   *h = kl_sha256_create();
			uint8		digest[KL_SHA256_LEN];
			char		hex[KL_SHA256_HEX_LEN + 1];
			char	   *doc;
			KlBatch		rb;
			KlRecord   *rrecs;
			int			rn;

			for (int i = 0; i < n; i++)
				kl_sha256_update(h, recs[i].fingerprint, KL_SHA256_LEN);
			kl_sha256_final(h, digest);
			kl_hex(digest, 6, hex);
			memcpy(b.batch_id + KL_BATCH_ID_LEN - 12, hex, 12);
			doc = kl_manifest_reduced(&b, recs, n, b.manifest_sha256);
			kl_manifest_parse("fuzz/manifest.reduced.json", doc, strlen(doc), &rb, &rrecs, &rn);
			if (!rb.reduced || rn != n || strcmp(rb.batch_id, b.batch_id) != 0 ||
				rb.first_offset != b.first_offset || rb.last_offset != b.last_offset ||
				rb.partition != b.partition || strcmp(rb.topic, b.topic) != 0 ||
				rb.compression != b.compression || rb.has_dates != b.has_dates ||
				memcmp(rb.counts, b.counts, sizeof(b.counts)) != 0)
				kl_fuzz_fail("a reduced manifest reads back as another batch");
			for (int i = 0; i < n; i++)
			{
				static const uint8 zeros[KL_SHA256_LEN];

				if (rrecs[i].offset != recs[i].offset || rrecs[i].status != recs[i].status ||
					memcmp(rrecs[i].fingerprint, recs[i].fingerprint, KL_FINGERPRINT_PREFIX_LEN) != 0 ||
					memcmp(rrecs[i].fingerprint + KL_FINGERPRINT_PREFIX_LEN, zeros,
						   KL_SHA256_LEN - KL_FINGERPRINT_PREFIX_LEN) != 0)
					kl_fuzz_fail("a reduced manifest reads back another coordinate");
			}
		}
	});
	return 0;
}
