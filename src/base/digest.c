/*-------------------------------------------------------------------------
 *
 * digest.c
 *	  SHA-256 through OpenSSL's libcrypto, CRC-32C through PostgreSQL's own
 *	  (hardware-accelerated) implementation, and the identities built on
 *	  them: record fingerprints and event keys.
 *
 * Two checksums per landed file, for two jobs:
 *	- SHA-256 is the file's identity, written in the manifest and checked by
 *	  verify(): it catches any change, deliberate or not.
 *	- CRC-32C is checked by every foreign-table scan and every bridge before
 *	  a file's rows are used.  It catches every accidental edit (all bursts
 *	  up to 32 bits, any single edited byte) at a tenth of SHA-256's cost, so
 *	  that "never read a lie" does not halve the speed of a scan.
 *
 * Event keys.  accepted_events is keyed by a 16-byte key per (source,
 * event_id) whose B-tree is the arbiter of I3.  A source keys its event_ids
 * one of two ways (sources.event_keys):
 *	- hashed (every source made before 1.13): the first 16 bytes of
 *	  SHA-256(source_id as 4 big-endian bytes || event_id);
 *	- ordered (sources made from 1.13 on): when the event_id is made of
 *	  [-0-9A-Z_a-z] only (an alphabet of 64 in ASCII order: '-' is 0, 'z'
 *	  is 63), does not end in '-' and fits, the source_id as a prefix-free
 *	  varint (kl_key_prefix) and the event_id packed 6 bits a character,
 *	  zero bits after it: 20 characters for source_ids below 128, 18 below
 *	  16,512, 17 below 2,113,664, 14 above; else 1111 and the first 124
 *	  bits of the hashed key's SHA-256.
 * Why ordered: most event_ids are made in time order (a counter, a date and
 * a sequence, a Snowflake id), and a hashed key scatters each window's
 * inserts and probes over the whole index, so that once the index outgrows
 * shared_buffers every window reads and dirties (and after each checkpoint
 * writes whole into the WAL) a page per key: in bench/growth.sh, six
 * landings of 500,000 new events into one source, the WAL grows from 79 to
 * 149 MB a landing.  Packed keys of time-ordered ids go to the index's
 * right edge; the same bench stays at 79-81 MB a landing.  The key is injective: the
 * prefix-free head separates sources from each other and from hashed ids,
 * and a packed id is its characters up to the trailing zero groups (no id
 * that packs ends in '-', whose code is 0).  Ids that do not pack (a
 * UUID's 36 characters, anything longer, any other byte) hash as before,
 * at a collision chance per pair of 2^-124 (2^-128 for hashed sources).
 * 20 characters because 20 x 6 bits and a byte of source_id are exactly
 * the key's 128 bits: "evt-20260628-1000001" still packs.
 * Existing sources keep hashed keys: their accepted_events rows are keyed
 * so, and a key scheme cannot change under a source's rows (a trigger on
 * sources refuses it once the source has landed).
 *
 * OpenSSL digest contexts are allocated by OpenSSL, not palloc; each is
 * tied to a memory context with a reset callback so that an ERROR in the
 * middle of a batch cannot leak it.
 *
 * IDENTIFICATION
 *	  src/base/digest.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <openssl/evp.h>

#include "port/pg_crc32c.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/uuid.h"

#include "base/digest.h"

static EVP_MD *kl_sha256_md = NULL;
static EVP_MD_CTX *kl_scratch_ctx = NULL;

/*
 * kl_sha256_algorithm
 *		The SHA-256 implementation, fetched once (an implicit fetch at every
 *		init costs more than hashing a small record).
 */
static const EVP_MD *
kl_sha256_algorithm(void)
{
	if (kl_sha256_md == NULL)
	{
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
		kl_sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
#else
		kl_sha256_md = (EVP_MD *) EVP_sha256();
#endif
		if (kl_sha256_md == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("OpenSSL does not provide SHA-256")));
	}
	return kl_sha256_md;
}

/*
 * kl_sha256_free_callback
 *		Free the OpenSSL context of a KlSha256 when its memory context goes.
 */
static void
kl_sha256_free_callback(void *arg)
{
	KlSha256   *h = (KlSha256 *) arg;

	if (h->ctx)
		EVP_MD_CTX_free(h->ctx);
	h->ctx = NULL;
}

/*
 * kl_sha256_create
 *		A streaming SHA-256 whose OpenSSL context lives as long as the
 *		current memory context.
 */
KlSha256 *
kl_sha256_create(void)
{
	KlSha256   *h = palloc0(sizeof(KlSha256));

	h->ctx = EVP_MD_CTX_new();
	if (h->ctx == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	h->callback.func = kl_sha256_free_callback;
	h->callback.arg = h;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &h->callback);
	kl_sha256_reset(h);
	return h;
}

/*
 * kl_sha256_reset
 *		Start a new digest.
 */
void
kl_sha256_reset(KlSha256 *h)
{
	if (EVP_DigestInit_ex(h->ctx, kl_sha256_algorithm(), NULL) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not initialize SHA-256")));
}

void
kl_sha256_update(KlSha256 *h, const void *data, size_t len)
{
	if (len > 0 && EVP_DigestUpdate(h->ctx, data, len) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not compute SHA-256")));
}

void
kl_sha256_final(KlSha256 *h, uint8 out[KL_SHA256_LEN])
{
	unsigned int n = 0;

	if (EVP_DigestFinal_ex(h->ctx, out, &n) != 1 || n != KL_SHA256_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not compute SHA-256")));
}

/*
 * kl_scratch
 *		The backend's scratch context for one-shot digests (never freed, so
 *		an ERROR between init and final leaks nothing).
 */
static EVP_MD_CTX *
kl_scratch(void)
{
	if (kl_scratch_ctx == NULL)
	{
		kl_scratch_ctx = EVP_MD_CTX_new();
		if (kl_scratch_ctx == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
	}
	if (EVP_DigestInit_ex(kl_scratch_ctx, kl_sha256_algorithm(), NULL) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not initialize SHA-256")));
	return kl_scratch_ctx;
}

/*
 * kl_sha256
 *		One-shot SHA-256 of a buffer.
 */
void
kl_sha256(const void *data, size_t len, uint8 out[KL_SHA256_LEN])
{
	EVP_MD_CTX *ctx = kl_scratch();
	unsigned int n;

	EVP_DigestUpdate(ctx, data, len);
	EVP_DigestFinal_ex(ctx, out, &n);
}

/*
 * kl_fingerprint
 *		A record's fingerprint, compatible with the reference implementation:
 *		SHA-256 of topic \0 partition \0 offset \0 key \0 value, partition and
 *		offset in decimal ASCII, a null key as the empty string.
 */
void
kl_fingerprint(const char *topic, int32 partition, int64 offset,
			   const char *key, size_t key_len,
			   const char *value, size_t value_len,
			   uint8 out[KL_SHA256_LEN])
{
	kl_fingerprint_with(kl_scratch(), topic, partition, offset, key, key_len,
						value, value_len, out);
}

/*
 * kl_fingerprint_with
 *		kl_fingerprint with a digest context of the caller's (an EVP_MD_CTX
 *		from kl_sha256_thread_ctx).  Calls nothing of PostgreSQL's but its
 *		integer formatting: safe on the landing's helper thread.
 */
void
kl_fingerprint_with(void *evp_ctx, const char *topic, int32 partition, int64 offset,
					const char *key, size_t key_len,
					const char *value, size_t value_len,
					uint8 out[KL_SHA256_LEN])
{
	EVP_MD_CTX *ctx = (EVP_MD_CTX *) evp_ctx;
	char		head[300];
	int			topic_len = strlen(topic);
	int			n;
	unsigned int outlen;

	/* topic \0 partition \0 offset \0 in one update */
	Assert(topic_len < 250);
	EVP_DigestInit_ex(ctx, kl_sha256_md, NULL);
	memcpy(head, topic, topic_len);
	n = topic_len;
	head[n++] = '\0';
	n += pg_ltoa(partition, head + n);
	head[n++] = '\0';
	n += pg_lltoa(offset, head + n);
	head[n++] = '\0';
	EVP_DigestUpdate(ctx, head, n);
	if (key_len > 0)
		EVP_DigestUpdate(ctx, key, key_len);
	EVP_DigestUpdate(ctx, "", 1);
	if (value_len > 0)
		EVP_DigestUpdate(ctx, value, value_len);
	EVP_DigestFinal_ex(ctx, out, &outlen);
}

/*
 * kl_event_key
 *		The catalog key of an event_id of a source (see "Event keys" above):
 *		hashed, or ordered when the source's sources.event_keys says so.
 */
void
kl_event_key(int32 source_id, bool ordered, const char *event_id, size_t len,
			 pg_uuid_t *key)
{
	kl_event_key_with(kl_scratch(), source_id, ordered, event_id, len, key);
}

/* The 64 characters an ordered key packs, in ASCII order: '-' is 0 */
static const int8 kl_key_code[256] = {
	['-'] = 1,
	['0'] = 2, ['1'] = 3, ['2'] = 4, ['3'] = 5, ['4'] = 6, ['5'] = 7, ['6'] = 8,
	['7'] = 9, ['8'] = 10, ['9'] = 11,
	['A'] = 12, ['B'] = 13, ['C'] = 14, ['D'] = 15, ['E'] = 16, ['F'] = 17,
	['G'] = 18, ['H'] = 19, ['I'] = 20, ['J'] = 21, ['K'] = 22, ['L'] = 23,
	['M'] = 24, ['N'] = 25, ['O'] = 26, ['P'] = 27, ['Q'] = 28, ['R'] = 29,
	['S'] = 30, ['T'] = 31, ['U'] = 32, ['V'] = 33, ['W'] = 34, ['X'] = 35,
	['Y'] = 36, ['Z'] = 37, ['_'] = 38,
	['a'] = 39, ['b'] = 40, ['c'] = 41, ['d'] = 42, ['e'] = 43, ['f'] = 44,
	['g'] = 45, ['h'] = 46, ['i'] = 47, ['j'] = 48, ['k'] = 49, ['l'] = 50,
	['m'] = 51, ['n'] = 52, ['o'] = 53, ['p'] = 54, ['q'] = 55, ['r'] = 56,
	['s'] = 57, ['t'] = 58, ['u'] = 59, ['v'] = 60, ['w'] = 61, ['x'] = 62,
	['y'] = 63, ['z'] = 64,
};								/* code + 1; 0: not packed */

/* Append the low nbits of v to key at bit *pos (most significant first) */
static inline void
kl_key_put(pg_uuid_t *key, int *pos, uint64 v, int nbits)
{
	for (int b = nbits - 1; b >= 0; b--, (*pos)++)
		if ((v >> b) & 1)
			key->data[*pos / 8] |= 0x80 >> (*pos % 8);
}

/*
 * kl_key_prefix
 *		The head of an ordered key of a packed event_id: the source_id as a
 *		prefix-free varint, 0 + 7 bits (below 128), 10 + 14 bits (the next
 *		16,384), 110 + 21 bits (the next 2,097,152), 1110 + 36 bits (any
 *		other); returns its length in bits.  A hashed id's key begins 1111.
 */
static int
kl_key_prefix(int32 source_id, uint64 *prefix)
{
	uint64		id = (uint32) source_id;

	if (id < 128)
	{
		*prefix = id;
		return 8;
	}
	if (id < 128 + 16384)
	{
		*prefix = (UINT64CONST(0x2) << 14) | (id - 128);
		return 16;
	}
	if (id < 128 + 16384 + 2097152)
	{
		*prefix = (UINT64CONST(0x6) << 21) | (id - 128 - 16384);
		return 24;
	}
	*prefix = (UINT64CONST(0xE) << 36) | id;
	return 40;
}

/*
 * kl_event_key_with
 *		kl_event_key with a digest context of the caller's (safe on the
 *		landing's helper thread).
 */
void
kl_event_key_with(void *evp_ctx, int32 source_id, bool ordered, const char *event_id,
				  size_t len, pg_uuid_t *key)
{
	EVP_MD_CTX *ctx = (EVP_MD_CTX *) evp_ctx;
	uint8		digest[KL_SHA256_LEN];
	uint8		id[4];
	unsigned int outlen;

	if (ordered)
	{
		uint64		prefix;
		int			nbits = kl_key_prefix(source_id, &prefix);

		if (len > 0 && len <= (size_t) ((UUID_LEN * 8 - nbits) / 6) &&
			event_id[len - 1] != '-')
		{
			int			pos = 0;
			size_t		i;

			memset(key->data, 0, UUID_LEN);
			kl_key_put(key, &pos, prefix, nbits);
			for (i = 0; i < len; i++)
			{
				int			code = kl_key_code[(unsigned char) event_id[i]];

				if (code == 0)
					break;
				kl_key_put(key, &pos, code - 1, 6);
			}
			if (i == len)
				return;
		}
	}

	EVP_DigestInit_ex(ctx, kl_sha256_md, NULL);
	id[0] = (uint32) source_id >> 24;
	id[1] = (uint32) source_id >> 16;
	id[2] = (uint32) source_id >> 8;
	id[3] = (uint32) source_id;
	EVP_DigestUpdate(ctx, id, 4);
	EVP_DigestUpdate(ctx, event_id, len);
	EVP_DigestFinal_ex(ctx, digest, &outlen);
	memcpy(key->data, digest, UUID_LEN);
	if (ordered)
	{
		/* 1111, then the digest's first 124 bits */
		for (int i = UUID_LEN - 1; i > 0; i--)
			key->data[i] = (digest[i] >> 4) | (digest[i - 1] << 4);
		key->data[0] = 0xF0 | (digest[0] >> 4);
	}
}

/*
 * kl_sha256_prepare
 *		Fetch the SHA-256 implementation (on the backend, before a helper
 *		thread uses any of the functions below).
 */
void
kl_sha256_prepare(void)
{
	(void) kl_sha256_algorithm();
}

/*
 * kl_sha256_thread_ctx, kl_sha256_thread_free
 *		A digest context owned by whoever asked for it, not by a memory
 *		context: what the landing's helper thread uses (NULL when OpenSSL
 *		has no memory).  kl_sha256_prepare must have run.
 */
void *
kl_sha256_thread_ctx(void)
{
	return EVP_MD_CTX_new();
}

void
kl_sha256_thread_free(void *evp_ctx)
{
	EVP_MD_CTX_free((EVP_MD_CTX *) evp_ctx);
}

/*
 * kl_sha256_thread_init, kl_sha256_thread_update, kl_sha256_thread_final
 *		Streaming SHA-256 in such a context.
 */
void
kl_sha256_thread_init(void *evp_ctx)
{
	EVP_DigestInit_ex((EVP_MD_CTX *) evp_ctx, kl_sha256_md, NULL);
}

void
kl_sha256_thread_update(void *evp_ctx, const void *data, size_t len)
{
	EVP_DigestUpdate((EVP_MD_CTX *) evp_ctx, data, len);
}

void
kl_sha256_thread_final(void *evp_ctx, uint8 out[KL_SHA256_LEN])
{
	unsigned int n;

	EVP_DigestFinal_ex((EVP_MD_CTX *) evp_ctx, out, &n);
}

/*
 * kl_hex
 *		Lower-case hex of n bytes into out (2n + 1 bytes, NUL-terminated).
 */
void
kl_hex(const uint8 *in, int n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < n; i++)
	{
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0xF];
	}
	out[2 * n] = '\0';
}

/*
 * kl_unhex
 *		Parse 2n hex digits into n bytes; false when they are not hex.
 */
bool
kl_unhex(const char *in, int n, uint8 *out)
{
	for (int i = 0; i < n; i++)
	{
		int			v = 0;

		for (int j = 0; j < 2; j++)
		{
			int			d = kl_hex_digit(in[2 * i + j]);

			if (d < 0)
				return false;
			v = (v << 4) | d;
		}
		out[i] = v;
	}
	return true;
}

/*
 * kl_crc32c
 *		Extend a running CRC-32C (start with KL_CRC32C_INIT, finish with
 *		kl_crc32c_final).
 */
uint32
kl_crc32c(uint32 crc, const void *data, size_t len)
{
	COMP_CRC32C(crc, data, len);
	return crc;
}

uint32
kl_crc32c_final(uint32 crc)
{
	FIN_CRC32C(crc);
	return crc;
}
