/*-------------------------------------------------------------------------
 *
 * fileundo.h
 *	  File work that waits for the end of the transaction (fileundo.c).
 *
 * IDENTIFICATION
 *	  src/landing/fileundo.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_FILEUNDO_H
#define KAFKA_LAKE_FILEUNDO_H

extern void kl_undo_remove_at_abort(const char *path, bool is_dir, const char *origin);
extern void kl_undo_forget(const char *path);
extern void kl_undo_remove_tree_at_commit(const char *path, int32 source_id, const char *origin);
extern void kl_undo_remove_tree_at_abort(const char *path, const char *origin);
extern void kl_undo_remove_file_at_commit(const char *path, const char *origin);
extern void kl_undo_pause_at_commit(const char *point);
extern bool kl_undo_removal_pending(const char *path);
extern bool kl_undo_displace(const char *dir, const char *root, const char *source);
extern void kl_settle_displaced(const char *root, const char *source);

#endif							/* KAFKA_LAKE_FILEUNDO_H */
