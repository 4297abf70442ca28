#include "transfer.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gpu_devices.h"
#include "ns_timing.h"

namespace {

// Verification reads back through a bounded scratch buffer, not a second full-size copy, so a
// 2 GiB run does not need another 2 GiB per GPU.
constexpr std::size_t verify_chunk = std::size_t(16) << 20;

std::uint64_t pattern_word(std::size_t word_index)
{
    std::uint64_t x = word_index + 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

std::string where(int device, std::size_t bytes)
{
    return "GPU " + std::to_string(device) + ", " + std::to_string(bytes) + " bytes";
}

}  // namespace

void fill_pattern(unsigned char *dst, std::size_t offset, std::size_t bytes)
{
    std::size_t i = 0;
    for (; i < bytes && (offset + i) % 8 != 0; ++i)
        dst[i] = static_cast<unsigned char>(pattern_word((offset + i) / 8) >> (8 * ((offset + i) % 8)));
    for (; i + 8 <= bytes; i += 8) {
        std::uint64_t word = pattern_word((offset + i) / 8);
        std::memcpy(dst + i, &word, 8);  // same bytes as the shifts above on little-endian hosts (all CUDA hosts)
    }
    for (; i < bytes; ++i)
        dst[i] = static_cast<unsigned char>(pattern_word((offset + i) / 8) >> (8 * ((offset + i) % 8)));
}

GpuTransfer::GpuTransfer(int device, unsigned char *host, std::size_t max_bytes, bool pinned)
    : device_(device), host_(host), pinned_(pinned)
{
    std::string on = " on GPU " + std::to_string(device);
    gpu_check(gpuSetDevice(device), NS_GPU_PREFIX "SetDevice" + on);
    gpu_check(gpuMalloc(reinterpret_cast<void **>(&device_buffer_), max_bytes),
               NS_GPU_PREFIX "Malloc of " + std::to_string(max_bytes) + " bytes" + on +
                   " (use smaller --sizes/--benchmark_bytes)");
    gpu_check(gpuStreamCreateWithFlags(&stream_, gpuStreamNonBlocking), NS_GPU_PREFIX "StreamCreate" + on);
    gpu_check(gpuEventCreate(&start_), NS_GPU_PREFIX "EventCreate" + on);
    gpu_check(gpuEventCreate(&stop_), NS_GPU_PREFIX "EventCreate" + on);
}

GpuTransfer::~GpuTransfer()
{
    // Cleanup failures are not reported (a destructor must not throw); HIP marks these
    // calls nodiscard, hence the casts.
    (void)gpuSetDevice(device_);
    if (stop_) (void)gpuEventDestroy(stop_);
    if (start_) (void)gpuEventDestroy(start_);
    if (stream_) (void)gpuStreamDestroy(stream_);
    if (device_buffer_) (void)gpuFree(device_buffer_);
}

double GpuTransfer::time_batch(Direction direction, const TransferPlan &plan)
{
    void *dst = direction == Direction::read ? static_cast<void *>(device_buffer_) : host_;
    const void *src = direction == Direction::read ? static_cast<const void *>(host_) : device_buffer_;
    gpuMemcpyKind kind = direction == Direction::read ? gpuMemcpyHostToDevice : gpuMemcpyDeviceToHost;
    std::string what = std::string(direction == Direction::read ? "host-to-device" : "device-to-host") +
                       " gpuMemcpyAsync, " + where(device_, plan.bytes);

    if (pinned_) {
        // Events are timestamped by the GPU itself, so host scheduling noise between the calls
        // does not enter the measurement.
        gpu_check(gpuEventRecord(start_, stream_), NS_GPU_PREFIX "EventRecord");
        for (int i = 0; i < plan.iterations; ++i)
            gpu_check(gpuMemcpyAsync(dst, src, plan.bytes, kind, stream_), what);
        gpu_check(gpuEventRecord(stop_, stream_), NS_GPU_PREFIX "EventRecord");
        gpu_check(gpuEventSynchronize(stop_), what);
        float ms = 0;
        gpu_check(gpuEventElapsedTime(&ms, start_, stop_), NS_GPU_PREFIX "EventElapsedTime");
        return ms / 1e3 / plan.iterations;
    }
    // Pageable: the runtime copies through a staging buffer on the calling thread, partly
    // before the call returns, so events on the stream would miss that part; a host clock
    // around the whole batch (until the stream drains) sees all of it.
    double begin = ns_seconds();
    for (int i = 0; i < plan.iterations; ++i)
        gpu_check(gpuMemcpyAsync(dst, src, plan.bytes, kind, stream_), what);
    gpu_check(gpuStreamSynchronize(stream_), what);
    return (ns_seconds() - begin) / plan.iterations;
}

void GpuTransfer::clear_destination(Direction direction, std::size_t bytes)
{
    // The destination must differ from the pattern before the timed copies, so that
    // verification can only pass if those copies delivered the data.
    if (direction == Direction::read) {
        gpu_check(gpuMemsetAsync(device_buffer_, 0, bytes, stream_), NS_GPU_PREFIX "MemsetAsync, " + where(device_, bytes));
        gpu_check(gpuStreamSynchronize(stream_), NS_GPU_PREFIX "MemsetAsync, " + where(device_, bytes));
    } else {
        std::memset(host_, 0, bytes);
    }
}

TransferTiming GpuTransfer::measure(Direction direction, const TransferPlan &plan, SampleBarrier &barrier)
{
    gpu_check(gpuSetDevice(device_), NS_GPU_PREFIX "SetDevice on GPU " + std::to_string(device_));
    const std::size_t bytes = plan.bytes;
    if (direction == Direction::write) {
        // The device holds whatever an earlier size left; give it the pattern to send back.
        // On this GPU's own stream: it does not synchronise with the legacy default stream, and
        // a pageable cudaMemcpy may return before its DMA is done.
        gpu_check(gpuMemcpyAsync(device_buffer_, host_, bytes, gpuMemcpyHostToDevice, stream_),
                   "seeding device buffer, " + where(device_, bytes));
        gpu_check(gpuStreamSynchronize(stream_), "seeding device buffer, " + where(device_, bytes));
    }
    // One untimed copy pays for lazy initialisation (context, page tables, staging buffers).
    time_batch(direction, TransferPlan{bytes, 1, 1});
    clear_destination(direction, bytes);

    std::vector<double> samples;
    for (int s = 0; s < plan.samples; ++s) {
        barrier.wait();
        samples.push_back(time_batch(direction, plan));
    }
    if (direction == Direction::read)
        verify_device_matches_pattern(bytes);
    else
        verify_host_matches_pattern(bytes);

    std::sort(samples.begin(), samples.end());
    std::size_t n = samples.size();
    double median = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
    return TransferTiming{median, samples.front(), samples.back()};
}

void GpuTransfer::verify_device_matches_pattern(std::size_t bytes)
{
    std::vector<unsigned char> got(std::min(bytes, verify_chunk)), want(got.size());
    for (std::size_t offset = 0; offset < bytes; offset += got.size()) {
        std::size_t n = std::min(got.size(), bytes - offset);
        gpu_check(gpuMemcpyAsync(got.data(), device_buffer_ + offset, n, gpuMemcpyDeviceToHost, stream_),
                   "reading back for verification, " + where(device_, bytes));
        gpu_check(gpuStreamSynchronize(stream_), "reading back for verification, " + where(device_, bytes));
        fill_pattern(want.data(), offset, n);
        if (std::memcmp(got.data(), want.data(), n) != 0)
            throw VerificationError("host-to-device data differ after the copy, " + where(device_, bytes) +
                                    ", near byte " + std::to_string(offset));
    }
}

void GpuTransfer::verify_host_matches_pattern(std::size_t bytes) const
{
    std::vector<unsigned char> want(std::min(bytes, verify_chunk));
    for (std::size_t offset = 0; offset < bytes; offset += want.size()) {
        std::size_t n = std::min(want.size(), bytes - offset);
        fill_pattern(want.data(), offset, n);
        if (std::memcmp(host_ + offset, want.data(), n) != 0)
            throw VerificationError("device-to-host data differ after the copy, " + where(device_, bytes) +
                                    ", near byte " + std::to_string(offset));
    }
}
