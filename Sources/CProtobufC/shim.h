#ifndef C_PROTOBUF_C_SHIM_H
#define C_PROTOBUF_C_SHIM_H

/* System protobuf-c runtime (Debian: libprotobuf-c-dev, pkg-config libprotobuf-c). */
#include <protobuf-c/protobuf-c.h>

#endif /* C_PROTOBUF_C_SHIM_H */
