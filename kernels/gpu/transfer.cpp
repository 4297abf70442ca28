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

GpuTransfer::GpuTransfer(int device, unsigned char *host, unsigned char *host_return, std::size_t max_bytes,
                         bool pinned)
    : device_(device), host_(host), pinned_(pinned), host_return_(host_return)
{
    std::string on = " on GPU " + std::to_string(device);
    gpu_check(gpuSetDevice(device), NS_GPU_PREFIX "SetDevice" + on);
    std::string too_big = " bytes" + on + " (use smaller --sizes/--benchmark_bytes)";
    gpu_check(gpuMalloc(reinterpret_cast<void **>(&device_buffer_), max_bytes),
               NS_GPU_PREFIX "Malloc of " + std::to_string(max_bytes) + too_big);
    gpu_check(gpuStreamCreateWithFlags(&stream_, gpuStreamNonBlocking), NS_GPU_PREFIX "StreamCreate" + on);
    gpu_check(gpuEventCreate(&start_), NS_GPU_PREFIX "EventCreate" + on);
    gpu_check(gpuEventCreate(&stop_), NS_GPU_PREFIX "EventCreate" + on);
    if (host_return_) {
        gpu_check(gpuMalloc(reinterpret_cast<void **>(&device_return_), max_bytes),
                   NS_GPU_PREFIX "Malloc of a second " + std::to_string(max_bytes) + too_big + " or no B in --operation_type");
        gpu_check(gpuStreamCreateWithFlags(&stream_return_, gpuStreamNonBlocking), NS_GPU_PREFIX "StreamCreate" + on);
        gpu_check(gpuEventCreate(&stop_return_), NS_GPU_PREFIX "EventCreate" + on);
    }
}

GpuTransfer::~GpuTransfer()
{
    // Cleanup failures are not reported (a destructor must not throw); HIP marks these
    // calls nodiscard, hence the casts.
    (void)gpuSetDevice(device_);
    if (stop_return_) (void)gpuEventDestroy(stop_return_);
    if (stream_return_) (void)gpuStreamDestroy(stream_return_);
    if (device_return_) (void)gpuFree(device_return_);
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

std::pair<double, double> GpuTransfer::time_both(const TransferPlan &plan)
{
    std::string what = "bidirectional gpuMemcpyAsync, " + where(device_, plan.bytes);
    auto enqueue = [&] {
        for (int i = 0; i < plan.iterations; ++i) {
            gpu_check(gpuMemcpyAsync(device_buffer_, host_, plan.bytes, gpuMemcpyHostToDevice, stream_), what);
            gpu_check(gpuMemcpyAsync(host_return_, device_return_, plan.bytes, gpuMemcpyDeviceToHost, stream_return_),
                      what);
        }
    };
    if (pinned_) {
        // Both streams start from one event, so each direction's time runs from the same instant
        // to its own last copy.
        gpu_check(gpuEventRecord(start_, stream_), NS_GPU_PREFIX "EventRecord");
        gpu_check(gpuStreamWaitEvent(stream_return_, start_, 0), NS_GPU_PREFIX "StreamWaitEvent");
        enqueue();
        gpu_check(gpuEventRecord(stop_, stream_), NS_GPU_PREFIX "EventRecord");
        gpu_check(gpuEventRecord(stop_return_, stream_return_), NS_GPU_PREFIX "EventRecord");
        gpu_check(gpuEventSynchronize(stop_), what);
        gpu_check(gpuEventSynchronize(stop_return_), what);
        float read_ms = 0, write_ms = 0;
        gpu_check(gpuEventElapsedTime(&read_ms, start_, stop_), NS_GPU_PREFIX "EventElapsedTime");
        gpu_check(gpuEventElapsedTime(&write_ms, start_, stop_return_), NS_GPU_PREFIX "EventElapsedTime");
        return {read_ms / 1e3 / plan.iterations, write_ms / 1e3 / plan.iterations};
    }
    // Pageable: the runtime stages both directions on this thread, so only the whole batch can
    // be timed; each direction is given that time.
    double begin = ns_seconds();
    enqueue();
    gpu_check(gpuStreamSynchronize(stream_), what);
    gpu_check(gpuStreamSynchronize(stream_return_), what);
    double seconds = (ns_seconds() - begin) / plan.iterations;
    return {seconds, seconds};
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

namespace {

TransferTiming summarise(std::vector<double> samples)
{
    std::sort(samples.begin(), samples.end());
    std::size_t n = samples.size();
    double median = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
    return TransferTiming{median, samples.front(), samples.back()};
}

}  // namespace

void GpuTransfer::seed_device(unsigned char *device_buffer, gpuStream_t stream, std::size_t bytes)
{
    // The device holds whatever an earlier size left; give it the pattern to send back.
    // On this GPU's own stream: it does not synchronise with the legacy default stream, and
    // a pageable cudaMemcpy may return before its DMA is done.
    gpu_check(gpuMemcpyAsync(device_buffer, host_, bytes, gpuMemcpyHostToDevice, stream),
               "seeding device buffer, " + where(device_, bytes));
    gpu_check(gpuStreamSynchronize(stream), "seeding device buffer, " + where(device_, bytes));
}

TransferTiming GpuTransfer::measure(Direction direction, const TransferPlan &plan, SampleBarrier &barrier)
{
    gpu_check(gpuSetDevice(device_), NS_GPU_PREFIX "SetDevice on GPU " + std::to_string(device_));
    const std::size_t bytes = plan.bytes;
    if (direction == Direction::write)
        seed_device(device_buffer_, stream_, bytes);
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
        verify_host_matches_pattern(host_, bytes);
    return summarise(samples);
}

BidirectionalTiming GpuTransfer::measure_both(const TransferPlan &plan, SampleBarrier &barrier)
{
    gpu_check(gpuSetDevice(device_), NS_GPU_PREFIX "SetDevice on GPU " + std::to_string(device_));
    const std::size_t bytes = plan.bytes;
    seed_device(device_return_, stream_return_, bytes);
    time_both(TransferPlan{bytes, 1, 1});
    clear_destination(Direction::read, bytes);
    std::memset(host_return_, 0, bytes);

    std::vector<double> reads, writes;
    for (int s = 0; s < plan.samples; ++s) {
        barrier.wait();
        std::pair<double, double> times = time_both(plan);
        reads.push_back(times.first);
        writes.push_back(times.second);
    }
    verify_device_matches_pattern(bytes);
    verify_host_matches_pattern(host_return_, bytes);
    return BidirectionalTiming{summarise(reads), summarise(writes)};
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

void GpuTransfer::verify_host_matches_pattern(const unsigned char *host, std::size_t bytes) const
{
    std::vector<unsigned char> want(std::min(bytes, verify_chunk));
    for (std::size_t offset = 0; offset < bytes; offset += want.size()) {
        std::size_t n = std::min(want.size(), bytes - offset);
        fill_pattern(want.data(), offset, n);
        if (std::memcmp(host + offset, want.data(), n) != 0)
            throw VerificationError("device-to-host data differ after the copy, " + where(device_, bytes) +
                                    ", near byte " + std::to_string(offset));
    }
}
