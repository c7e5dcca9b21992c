// Swift cannot import HDF5's function-like macros (H5F_ACC_RDONLY, H5T_NATIVE_FLOAT, ...),
// and the global type ids behind them are mutable C globals; these inline functions expose them.
#ifndef CHDF5_SHIM_H
#define CHDF5_SHIM_H

#include <hdf5.h>

static inline unsigned chdf5_acc_rdonly(void) { return H5F_ACC_RDONLY; }
static inline hid_t chdf5_native_float(void) { return H5T_NATIVE_FLOAT; }
static inline hid_t chdf5_native_double(void) { return H5T_NATIVE_DOUBLE; }
static inline hid_t chdf5_c_s1(void) { return H5T_C_S1; }
static inline size_t chdf5_variable(void) { return H5T_VARIABLE; }
static inline hid_t chdf5_p_default(void) { return H5P_DEFAULT; }
static inline hid_t chdf5_s_all(void) { return H5S_ALL; }

/// Silences HDF5's own error printing: the Swift side reports errors with file and field names.
static inline void chdf5_silence_errors(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

#endif
