// libzip, for reading Keras 3 `.keras` archives (entries are read into memory by name, never extracted by path).
#ifndef CZIP_SHIM_H
#define CZIP_SHIM_H

#include <zip.h>

static inline int czip_rdonly(void) { return ZIP_RDONLY; }
static inline int czip_checkcons(void) { return ZIP_CHECKCONS; }
static inline zip_flags_t czip_fl_enc_raw(void) { return ZIP_FL_ENC_RAW; }
static inline zip_uint64_t czip_stat_size(void) { return ZIP_STAT_SIZE; }
static inline zip_uint64_t czip_stat_comp_size(void) { return ZIP_STAT_COMP_SIZE; }
static inline zip_uint64_t czip_stat_name(void) { return ZIP_STAT_NAME; }

#endif
