/*-------------------------------------------------------------------------
 *
 * data_dir.h
 *	  Where kafka_lake may write files of its own (data_dir.c).
 *
 * IDENTIFICATION
 *	  src/base/data_dir.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KL_DATA_DIR_H
#define KL_DATA_DIR_H

extern void kl_resolve_path(const char *path, char *out);
extern char *kl_landing_dir_problem(const char *landing, const char *data);
extern char *kl_landing_dir_refusal(const char *path, char *resolved);
extern char *kl_export_dir_problem(const char *path, char *resolved);

#endif							/* KL_DATA_DIR_H */
