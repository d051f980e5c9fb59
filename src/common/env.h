/* The one reader of the environment. Every ZGPU_* variable (and CUFILE_FORCE_COMPAT_MODE) is read here, once
 * per process, and only as an override for experiments from the shell: the API (zgpu_tuning in
 * include/zgpu_experimental.h) is how programs and tests choose. docs/tuning.md lists the variables. */
#ifndef ZG_ENV_H
#define ZG_ENV_H
#include "zgpu_experimental.h"

/** Applies the environment's overrides to *t (fields whose variable is unset stay as they are). */
void zg_env_apply_tuning(zgpu_tuning *t);
/** ZGPU_NVCOMP_LIB: a file or directory to load libnvcomp.so.6 from; NULL when unset or empty. */
const char *zg_env_nvcomp_lib(void);
/** zgpu's on-disk cache directory (JIT kernels, route calibration): ZGPU_CACHE_DIR, else $XDG_CACHE_HOME/zgpu,
 *  else $HOME/.cache/zgpu; NULL when none can be formed (the caches then live in memory only). Not created here. */
const char *zg_env_cache_dir(void);
/** CUFILE_FORCE_COMPAT_MODE=true (cuFile's own variable, which zgpu also honours): 1, else 0. */
int zg_env_cufile_force_compat(void);

/** A variable of the remote stores, read each time a store opens (the AWS SDKs also see credentials that change
 *  while a process runs): the AWS_* variables of store/s3/credentials.h and HOME (for ~/.aws). Any other name
 *  returns NULL; so does an unset or empty one. (libcurl reads the proxy variables itself.) */
const char *zg_env_remote(const char *name);
/** Whether one of those variables is set to "true" in any case, as the AWS SDKs read their switches
 *  (AWS_EC2_METADATA_DISABLED, AWS_NO_SIGN_REQUEST): anything else, "1" included, is false. */
int zg_env_remote_true(const char *name);

#endif
