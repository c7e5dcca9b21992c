// OpenBLAS' CBLAS interface (Debian's libopenblas-dev, pkg-config `openblas`).
#ifndef COPENBLAS_SHIM_H
#define COPENBLAS_SHIM_H
#include <cblas.h>
#endif
