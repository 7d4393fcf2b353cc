/* dlpack_abi.h — the DLPack structs a framework reads from a "dltensor"
 * capsule (DLPack 0.x ABI, include/dlpack/dlpack.h of dmlc/dlpack: the
 * layout and enumerator values are the interface, declared here as the spec
 * gives them). PyTorch 1.10+ consumes them (torch.utils.dlpack.from_dlpack). */
#ifndef VF_DLPACK_ABI_H
#define VF_DLPACK_ABI_H

#include <stdint.h>

enum { DLPACK_CPU = 1, DLPACK_CUDA = 2 };                                  /* DLDeviceType */
enum { DLPACK_INT = 0, DLPACK_UINT = 1, DLPACK_FLOAT = 2, DLPACK_BFLOAT = 4, DLPACK_BOOL = 6 }; /* DLDataTypeCode */

typedef struct dlpack_device {
    int32_t device_type;
    int32_t device_id;
} dlpack_device;

typedef struct dlpack_dtype {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} dlpack_dtype;

typedef struct dlpack_tensor {
    void *data;
    dlpack_device device;
    int32_t ndim;
    dlpack_dtype dtype;
    int64_t *shape;
    int64_t *strides; /* in elements */
    uint64_t byte_offset;
} dlpack_tensor;

typedef struct dlpack_managed {
    dlpack_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct dlpack_managed *self);
} dlpack_managed;

#endif
