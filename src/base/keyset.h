/*-------------------------------------------------------------------------
 *
 * keyset.h
 *	  Sets of byte strings whose keys live in one arena (keyset.c).
 *
 * IDENTIFICATION
 *	  src/base/keyset.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_KEYSET_H
#define KAFKA_LAKE_KEYSET_H

#include "lib/stringinfo.h"

/* Bytes appended one key after another; keys are named by offset */
typedef struct KlArena
{
	char	   *data;
	uint64		len;
	uint64		cap;
	MemoryContext cxt;
} KlArena;

/* A key: where its bytes are in the arena, and their hash */
typedef struct KlArenaKey
{
	uint64		off;
	uint32		len;
	uint32		hash;
} KlArenaKey;

/* Keys pushed and not yet inserted (kl_keyset_push) */
#define KL_KEY_PIPELINE		16

typedef struct KlPendingKey
{
	KlArenaKey	key;
	int64		event;			/* the caller's number for it */
} KlPendingKey;

/* A set of keys with its arena */
typedef struct KlKeySet
{
	KlArena		arena;
	struct klkeys_hash *table;
	int64		count;			/* distinct keys */
	KlPendingKey pending[KL_KEY_PIPELINE];	/* a ring, oldest at head */
	int			head;
	int			npending;
} KlKeySet;

/* Called for each pushed key that was new, in the order of the pushes */
typedef void (*KlFirstSeen) (void *arg, int64 event);

extern void kl_keyset_create(KlKeySet *set, MemoryContext cxt, int64 expected);
extern int32 *kl_keyset_add(KlKeySet *set, const char *key, size_t len, bool *is_new);
extern void kl_keyset_push(KlKeySet *set, const char *key, size_t len, int64 event,
						   KlFirstSeen first, void *arg);
extern void kl_keyset_drain(KlKeySet *set, KlFirstSeen first, void *arg);

/*
 * kl_keyset_append_part
 *		Append one length-prefixed part of a composite key.
 */
static inline void
kl_keyset_append_part(StringInfo key, const char *s, size_t len)
{
	uint32		l = (uint32) len;

	appendBinaryStringInfo(key, (const char *) &l, sizeof(l));
	appendBinaryStringInfo(key, s, len);
}

#endif							/* KAFKA_LAKE_KEYSET_H */
