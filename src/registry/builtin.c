/* builtin.c — the registry of this build: the only file that knows which
 * optional parts (oneDNN, CUDA, cuDNN) were built. Adding a device or a backend:
 * one line below (and its row in src/core/vocab.h). */
#include "builtin.h"

extern const fc_device fc_device_cpu;
extern const fc_backend fc_backend_openblas;
#ifdef FUSECAL_WITH_ONEDNN
extern const fc_backend fc_backend_onednn;
#endif
#ifdef FUSECAL_WITH_CUDA
extern const fc_device fc_device_cuda;
extern const fc_backend fc_backend_cublas, fc_backend_custom;
#endif
#ifdef FUSECAL_WITH_CUDNN
extern const fc_backend fc_backend_cudnn;
#endif

#define NO_CUDA "built without CUDA (no CUDA compiler found, or FUSECAL_CUDA=OFF)"

const fc_registry fc_builtin = {
    .device =
        {
            [FC_DEV_cpu] = &fc_device_cpu,
#ifdef FUSECAL_WITH_CUDA
            [FC_DEV_cuda] = &fc_device_cuda,
#endif
        },
    .device_why_not =
        {
            [FC_DEV_cuda] = NO_CUDA,
        },
    .backend =
        {
            [FC_BK_cpu_openblas] = &fc_backend_openblas,
#ifdef FUSECAL_WITH_ONEDNN
            [FC_BK_cpu_onednn] = &fc_backend_onednn,
#endif
#ifdef FUSECAL_WITH_CUDA
            [FC_BK_cuda_cublas] = &fc_backend_cublas,
            [FC_BK_cuda_custom] = &fc_backend_custom,
#endif
#ifdef FUSECAL_WITH_CUDNN
            [FC_BK_cuda_cudnn] = &fc_backend_cudnn,
#endif
        },
    .backend_why_not =
        {
            [FC_BK_cpu_onednn] = "built without oneDNN (FUSECAL_ONEDNN=OFF, or no oneDNN 2.x/3.x found)",
            [FC_BK_cuda_cublas] = NO_CUDA,
            [FC_BK_cuda_cudnn] = "built without cuDNN (FUSECAL_CUDNN=OFF, cuDNN not found, or no CUDA)",
            [FC_BK_cuda_custom] = NO_CUDA,
        },
};
