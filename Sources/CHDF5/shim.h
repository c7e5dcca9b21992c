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

/// Refuses to follow an external link: a model file must never make the reader open another file
/// (which could be a FIFO, a device, or a file the user did not name).
static inline herr_t chdf5_deny_external_link(const char *parent_file_name, const char *parent_group_name,
    const char *child_file_name, const char *child_object_name, unsigned *acc_flags, hid_t fapl_id, void *op_data) {
  (void)parent_file_name; (void)parent_group_name; (void)child_file_name; (void)child_object_name;
  (void)acc_flags; (void)fapl_id; (void)op_data;
  return -1;
}

/// A link access property list whose external-link traversal always fails.
static inline hid_t chdf5_no_external_links_lapl(void) {
  hid_t lapl = H5Pcreate(H5P_LINK_ACCESS);
  if (lapl >= 0) H5Pset_elink_cb(lapl, chdf5_deny_external_link, NULL);
  return lapl;
}

/// A dataset access property list (a kind of link access list) that refuses external links too.
static inline hid_t chdf5_no_external_links_dapl(void) {
  hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
  if (dapl >= 0) H5Pset_elink_cb(dapl, chdf5_deny_external_link, NULL);
  return dapl;
}

/// The type of the link `name` in `loc` (H5L_TYPE_HARD, _SOFT, _EXTERNAL, ...), or -1 when it cannot be read.
static inline int chdf5_link_type(hid_t loc, const char *name, hid_t lapl) {
  H5L_info_t info;
  if (H5Lget_info(loc, name, &info, lapl) < 0) return -1;
  return (int)info.type;
}
/// The file offset of a dataset's values when libhdf5 stores them as one contiguous little-endian
/// float32 run in this file (no filters, no external storage, allocated), else -1: the converter then
/// reads those bytes itself instead of copying them through libhdf5 (see KerasModelSnapshot).
static inline long long chdf5_contiguous_float32_offset(hid_t dataset, hid_t type) {
  if (H5Tequal(type, H5T_IEEE_F32LE) <= 0) return -1;
  hid_t plist = H5Dget_create_plist(dataset);
  if (plist < 0) return -1;
  int plain = H5Pget_layout(plist) == H5D_CONTIGUOUS && H5Pget_nfilters(plist) == 0 && H5Pget_external_count(plist) == 0;
  H5Pclose(plist);
  if (!plain) return -1;
  haddr_t offset = H5Dget_offset(dataset);
  if (offset == HADDR_UNDEF || offset > (haddr_t)0x7fffffffffffffffLL) return -1;
  return (long long)offset;
}

/// The type of the object at `name` (H5O_TYPE_GROUP, _DATASET, ...), or -1 when it cannot be read. Asks
/// only for the basic fields: the full object info also counts attributes and reads header details.
static inline int chdf5_object_type(hid_t loc, const char *name, hid_t lapl) {
  H5O_info_t info;
  if (H5Oget_info_by_name2(loc, name, &info, H5O_INFO_BASIC, lapl) < 0) return -1;
  return (int)info.type;
}

static inline int chdf5_link_type_hard(void) { return H5L_TYPE_HARD; }
static inline int chdf5_link_type_soft(void) { return H5L_TYPE_SOFT; }

#endif
