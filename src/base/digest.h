/*-------------------------------------------------------------------------
 *
 * digest.h
 *	  SHA-256, CRC-32C, fingerprints and event keys, hex (digest.c).
 *
 * IDENTIFICATION
 *	  src/base/digest.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_DIGEST_H
#define KAFKA_LAKE_DIGEST_H

#include "utils/uuid.h"

#define KL_SHA256_LEN			32
#define KL_SHA256_HEX_LEN		64

typedef struct KlSha256
{
	void	   *ctx;			/* EVP_MD_CTX */
	MemoryContextCallback callback;
} KlSha256;

#define KL_CRC32C_INIT	0xFFFFFFFF

extern KlSha256 *kl_sha256_create(void);
extern void kl_sha256_reset(KlSha256 *h);
extern void kl_sha256_update(KlSha256 *h, const void *data, size_t len);
extern void kl_sha256_final(KlSha256 *h, uint8 out[KL_SHA256_LEN]);
extern void kl_sha256(const void *data, size_t len, uint8 out[KL_SHA256_LEN]);
extern void kl_fingerprint(const char *topic, int32 partition, int64 offset,
						   const char *key, size_t key_len,
						   const char *value, size_t value_len,
						   uint8 out[KL_SHA256_LEN]);
extern void kl_event_key(int32 source_id, bool ordered, const char *event_id, size_t len,
						 pg_uuid_t *key);

/* the same without PostgreSQL's allocator: for the landing's helper thread */
extern void kl_sha256_prepare(void);
extern void *kl_sha256_thread_ctx(void);
extern void kl_sha256_thread_free(void *evp_ctx);
extern void kl_sha256_thread_init(void *evp_ctx);
extern void kl_sha256_thread_update(void *evp_ctx, const void *data, size_t len);
extern void kl_sha256_thread_final(void *evp_ctx, uint8 out[KL_SHA256_LEN]);
extern void kl_fingerprint_with(void *evp_ctx, const char *topic, int32 partition, int64 offset,
								const char *key, size_t key_len,
								const char *value, size_t value_len,
								uint8 out[KL_SHA256_LEN]);
extern void kl_event_key_with(void *evp_ctx, int32 source_id, bool ordered,
							  const char *event_id, size_t len, pg_uuid_t *key);
extern void kl_hex(const uint8 *in, int n, char *out);
extern bool kl_unhex(const char *in, int n, uint8 *out);
extern uint32 kl_crc32c(uint32 crc, const void *data, size_t len);
extern uint32 kl_crc32c_final(uint32 crc);

/*
 * kl_hex_digit
 *		The value of one hex digit (either case), or -1: the one hex decoder
 *		(kl_unhex, JSON \u escapes).
 */
static inline int
kl_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif							/* KAFKA_LAKE_DIGEST_H */
