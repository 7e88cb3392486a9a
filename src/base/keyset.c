/*-------------------------------------------------------------------------
 *
 * keyset.c
 *	  Sets of byte strings whose keys live in one arena: the bridge's set of
 *	  natural keys (one probe per selected event) and its gold groups.
 *
 * A million keys as separately allocated strings would cost a chunk header
 * and a pointer chase each; here the bytes of every key are appended to one
 * arena, and a slot of the hash table (simplehash) holds the key's offset,
 * length and hash: 24 bytes, plus the caller's value.  A key that turns out
 * known is taken back from the arena at once (kl_keyset_add), or left there
 * (kl_keyset_push: only duplicates, which are rare, waste room).
 *
 * The prefetch pipeline.  A million random probes of a table larger than
 * the CPU caches cost a cache miss each.  kl_keyset_push announces a key's
 * slot (a prefetch) and inserts it only KL_KEY_PIPELINE keys later, so that
 * those misses overlap; the caller learns which keys were new through a
 * callback, in the order it pushed them.
 *
 * IDENTIFICATION
 *	  src/base/keyset.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "utils/memutils.h"

#include "base/keyset.h"

/* One slot of a set */
typedef struct KlKeyEntry
{
	KlArenaKey	key;
	int32		value;			/* the caller's (kl_keyset_add) */
	char		status;			/* simplehash's */
} KlKeyEntry;

static inline bool
kl_arena_key_equal(const KlArena *arena, const KlArenaKey *a, const KlArenaKey *b)
{
	return a->hash == b->hash && a->len == b->len &&
		memcmp(arena->data + a->off, arena->data + b->off, a->len) == 0;
}

#define SH_PREFIX			klkeys
#define SH_ELEMENT_TYPE		KlKeyEntry
#define SH_KEY_TYPE			KlArenaKey
#define SH_KEY				key
#define SH_HASH_KEY(tb, k)	((k).hash)
#define SH_EQUAL(tb, a, b)	kl_arena_key_equal((KlArena *) (tb)->private_data, &(a), &(b))
#define SH_SCOPE			static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

#if defined(__GNUC__) || defined(__clang__)
#define kl_prefetch(addr)	__builtin_prefetch(addr)
#else
#define kl_prefetch(addr)	((void) 0)
#endif

/*
 * kl_keyset_create
 *		An empty set in cxt, sized for about expected keys.
 */
void
kl_keyset_create(KlKeySet *set, MemoryContext cxt, int64 expected)
{
	set->arena.cxt = cxt;
	set->arena.cap = 1024 * 1024;
	set->arena.len = 0;
	set->arena.data = MemoryContextAllocHuge(cxt, set->arena.cap);
	set->table = klkeys_create(cxt, (uint32) Min(Max(expected, 16), PG_INT32_MAX / 2),
							   &set->arena);
	set->count = 0;
	set->head = 0;
	set->npending = 0;
}

/*
 * kl_keyset_add
 *		Add a key; returns where the caller keeps a value of the key's entry
 *		(valid until the next addition), and whether the key is new.
 */
int32 *
kl_keyset_add(KlKeySet *set, const char *key, size_t len, bool *is_new)
{
	KlArena    *arena = &set->arena;
	KlArenaKey	k;
	KlKeyEntry *entry;
	bool		found;

	if (arena->len + len > arena->cap)
	{
		while (arena->len + len > arena->cap)
			arena->cap *= 2;
		arena->data = repalloc_huge(arena->data, arena->cap);
	}
	/* append the key tentatively; take it back if it was known */
	memcpy(arena->data + arena->len, key, len);
	k.off = arena->len;
	k.len = (uint32) len;
	k.hash = (uint32) hash_bytes_extended((const unsigned char *) key, (int) len, 0);
	entry = klkeys_insert(set->table, k, &found);
	if (found)
		*is_new = false;
	else
	{
		arena->len += len;
		set->count++;
		*is_new = true;
	}
	return &entry->value;
}

/*
 * kl_keyset_pop
 *		Insert the oldest pushed key, and say so if it was new.
 */
static void
kl_keyset_pop(KlKeySet *set, KlFirstSeen first, void *arg)
{
	KlPendingKey *pk = &set->pending[set->head];
	bool		found;

	(void) klkeys_insert(set->table, pk->key, &found);
	if (!found)
	{
		set->count++;
		first(arg, pk->event);
	}
	set->head = (set->head + 1) % KL_KEY_PIPELINE;
	set->npending--;
}

/*
 * kl_keyset_push
 *		Add a key through the prefetch pipeline; first(arg, event) is called,
 *		in the order the keys were pushed, for each key that was new (some
 *		pushes later, or at kl_keyset_drain).
 */
void
kl_keyset_push(KlKeySet *set, const char *key, size_t len, int64 event,
			   KlFirstSeen first, void *arg)
{
	KlArena    *arena = &set->arena;
	KlPendingKey *pk;

	if (set->npending == KL_KEY_PIPELINE)
		kl_keyset_pop(set, first, arg);
	if (arena->len + len > arena->cap)
	{
		while (arena->len + len > arena->cap)
			arena->cap *= 2;
		arena->data = repalloc_huge(arena->data, arena->cap);
	}
	memcpy(arena->data + arena->len, key, len);
	pk = &set->pending[(set->head + set->npending) % KL_KEY_PIPELINE];
	pk->key.off = arena->len;
	pk->key.len = (uint32) len;
	pk->key.hash = (uint32) hash_bytes_extended((const unsigned char *) key, (int) len, 0);
	pk->event = event;
	arena->len += len;
	set->npending++;
	kl_prefetch(&set->table->data[pk->key.hash & set->table->sizemask]);
}

/*
 * kl_keyset_drain
 *		Insert every key still in the pipeline.
 */
void
kl_keyset_drain(KlKeySet *set, KlFirstSeen first, void *arg)
{
	while (set->npending > 0)
		kl_keyset_pop(set, first, arg);
}
