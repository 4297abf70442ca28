// The GPU runtime gpu_xfer is built against, behind one API: CUDA (nvcc) or HIP (hipcc, for AMD
// GPUs). Every runtime call in gpu_xfer goes through the gpu* names below, so one source builds
// for both; hipcc defines __HIP_PLATFORM_AMD__ and the HIP build adds -DNS_GPU_HIP.
#pragma once

#if defined(NS_GPU_HIP)
#include <hip/hip_runtime_api.h>
#define NS_GPU_RUNTIME "HIP"
#define NS_GPU_PREFIX "hip"  // names the failed call in error lines
#define NS_GPU_VENDOR "AMD"
#define NS_GPU_VISIBLE_ENV "HIP_VISIBLE_DEVICES"
#define GPU_API(name) hip##name
typedef hipDeviceProp_t gpuDeviceProp;
#else
#include <cuda_runtime.h>
#define NS_GPU_RUNTIME "CUDA"
#define NS_GPU_PREFIX "cuda"
#define NS_GPU_VENDOR "NVIDIA"
#define NS_GPU_VISIBLE_ENV "CUDA_VISIBLE_DEVICES"
#define GPU_API(name) cuda##name
typedef cudaDeviceProp gpuDeviceProp;
#endif

// Types and constants.
typedef GPU_API(Error_t) gpuError_t;
typedef GPU_API(Event_t) gpuEvent_t;
typedef GPU_API(Stream_t) gpuStream_t;
typedef GPU_API(MemcpyKind) gpuMemcpyKind;
#define gpuSuccess GPU_API(Success)
#define gpuMemcpyHostToDevice GPU_API(MemcpyHostToDevice)
#define gpuMemcpyDeviceToHost GPU_API(MemcpyDeviceToHost)
#define gpuHostRegisterPortable GPU_API(HostRegisterPortable)
#define gpuStreamNonBlocking GPU_API(StreamNonBlocking)

// Calls.
#define gpuGetErrorString GPU_API(GetErrorString)
#define gpuGetDeviceCount GPU_API(GetDeviceCount)
#define gpuGetDeviceProperties GPU_API(GetDeviceProperties)
#define gpuDeviceGetPCIBusId GPU_API(DeviceGetPCIBusId)
#define gpuSetDevice GPU_API(SetDevice)
#define gpuMalloc GPU_API(Malloc)
#define gpuFree GPU_API(Free)
#define gpuHostRegister GPU_API(HostRegister)
#define gpuHostUnregister GPU_API(HostUnregister)
#define gpuMemcpy GPU_API(Memcpy)
#define gpuMemcpyAsync GPU_API(MemcpyAsync)
#define gpuMemsetAsync GPU_API(MemsetAsync)
#define gpuEventCreate GPU_API(EventCreate)
#define gpuEventDestroy GPU_API(EventDestroy)
#define gpuEventRecord GPU_API(EventRecord)
#define gpuEventSynchronize GPU_API(EventSynchronize)
#define gpuEventElapsedTime GPU_API(EventElapsedTime)
#define gpuStreamCreate GPU_API(StreamCreate)
#define gpuStreamCreateWithFlags GPU_API(StreamCreateWithFlags)
#define gpuStreamDestroy GPU_API(StreamDestroy)
#define gpuStreamSynchronize GPU_API(StreamSynchronize)
#define gpuStreamWaitEvent GPU_API(StreamWaitEvent)
