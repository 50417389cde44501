// torch.ops.evo.matmul: exported evo kernels launched from C++ at a library's host overhead.
//
// Built on the user's machine by evo/dispatch/extension.py (torch.utils.cpp_extension.load).
// Two entry points per function: the torch.ops.evo.* operators (for torch.compile and anything that
// goes through the dispatcher) and plain pybind functions of the same C++ code, which eager Python
// calls directly: a torch.ops call from Python converts its arguments through the boxed dispatcher
// (about 2 us of host time, more than the rest of the call), a pybind call does not. evo.linear does
// all of nn.Linear's work in one call (flatten the leading dims, route, launch or at::addmm/at::mm).
// Python fills a Table once (cubins and the launch segments of the manifest's dispatch table);
// each call then only routes (a hash lookup on (N, K), a binary search on M), takes the launch
// precomputed for that M, reuses tensor maps already encoded for the same buffers, and launches
// with cuLaunchKernelEx on PyTorch's current stream, so it is captured by CUDA graphs. Every call
// the table does not cover (any dims, dtype, device or layout) goes to at::matmul. The layout is the kernel ABI (docs/kernel-abi.md):
// row-major A[M,K], B[K,N], C[M,N], fp16, tensor maps passed by value after K.
#include <torch/extension.h>
#include <torch/library.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <ATen/cuda/EmptyTensor.h>
#include <ATen/autocast_mode.h>
#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr int kMaxDevices = 64;
constexpr int kMaxTables = 256;
constexpr int kMaxMaps = 8;
constexpr size_t kMapCacheLimit = 4096;  // tensor maps kept per table before the cache starts over

// The driver functions, looked up in libcuda.so.1 at first use: no link-time dependency on
// libcuda.so, which many machines (containers, runtime-only installs) do not have. Listed once:
// X(fn) expands to the struct's members and to their lookups.
#define EVO_DRIVER_FNS(X) \
  X(cuGetErrorName) \
  X(cuDriverGetVersion) \
  X(cuCtxGetCurrent) \
  X(cuCtxSetCurrent) \
  X(cuDeviceGet) \
  X(cuDevicePrimaryCtxRetain) \
  X(cuModuleLoadData) \
  X(cuModuleGetFunction) \
  X(cuFuncSetAttribute) \
  X(cuTensorMapEncodeTiled) \
  X(cuLaunchKernelEx) \
  X(cuStreamIsCapturing) \
  X(cuEventCreate) \
  X(cuEventRecord) \
  X(cuStreamWaitEvent)

struct Driver {
#define EVO_DRIVER_MEMBER(fn) decltype(&::fn) fn;
  EVO_DRIVER_FNS(EVO_DRIVER_MEMBER)
#undef EVO_DRIVER_MEMBER
};

const Driver& drv() {
  static const Driver d = [] {
    Driver d{};
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    TORCH_CHECK(lib, "evo.dispatch: cannot open the CUDA driver (libcuda.so.1): ", dlerror());
    auto sym = [lib](const char* name) {
      void* p = dlsym(lib, name);
      TORCH_CHECK(p, "evo.dispatch: the CUDA driver has no ", name, ": update the driver (CUDA 12 or newer)");
      return p;
    };
#define EVO_DRIVER_LOOKUP(fn) d.fn = reinterpret_cast<decltype(&::fn)>(sym(#fn));
    EVO_DRIVER_FNS(EVO_DRIVER_LOOKUP)
#undef EVO_DRIVER_LOOKUP
    return d;
  }();
  return d;
}

// Programmatic dependent launch needs a driver of CUDA 12.3 or newer (CUDA graphs gained programmatic
// edges then): with an older one every kernel is launched plainly.
bool driver_has_pdl() {
  static const bool ok = [] {
    int version = 0;
    return drv().cuDriverGetVersion(&version) == CUDA_SUCCESS && version >= 12030;
  }();
  return ok;
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    drv().cuGetErrorName(r, &name);
    TORCH_CHECK(false, "evo.dispatch: ", what, " failed: ", name ? name : "unknown CUDA error");
  }
}

struct MapSpec {
  int operand;  // 0 = A, 1 = B, 2 = C
  uint32_t box_inner, box_outer;
  int swizzle;  // bytes
};

// The tensor maps of a segment's last launch: a loop that calls with the same buffers (a weight, and
// activations the caching allocator hands back at the same addresses) skips even the map-cache lookup.
struct LastLaunch {
  const void* ptr[3] = {nullptr, nullptr, nullptr};
  int64_t m = -1;
  std::vector<CUtensorMap> maps;
};

struct Segment {
  int64_t m_lo, m_hi;
  int kernel;
  unsigned grid[3], block[3], cluster[3];  // cluster[0] == 0: no cluster
  unsigned smem;
  std::vector<MapSpec> maps;
  mutable LastLaunch last;  // guarded by Table::mu
};

struct Kernel {
  std::string cubin;
  unsigned max_smem;
  bool big_cluster;
  bool pdl;  // waits for the previous grid before anything else (the export's PTX check): launched with PDL
  bool reentrant;  // false: it keeps a workspace in module globals (split-K), one per device
  std::array<CUfunction, kMaxDevices> function{};  // loaded per device: a split-K workspace per device
  std::array<CUmodule, kMaxDevices> module{};
  // A kernel that is not reentrant is serialised across streams, per device: two calls on two streams at
  // once would share its workspace (wrong results). Each eager launch is recorded in `done`; a launch on
  // another stream than the last one first waits for it (see launch()).
  std::array<CUevent, kMaxDevices> done{};
  std::array<CUstream, kMaxDevices> last_stream{};
  std::array<bool, kMaxDevices> launched{};
};

struct MapKey {
  uint64_t ptr, rows, cols;
  uint32_t box_inner, box_outer;
  int swizzle;
  bool operator==(const MapKey& o) const {
    return ptr == o.ptr && rows == o.rows && cols == o.cols && box_inner == o.box_inner &&
           box_outer == o.box_outer && swizzle == o.swizzle;
  }
};

struct MapKeyHash {
  size_t operator()(const MapKey& k) const {
    uint64_t h = k.ptr * 0x9E3779B97F4A7C15ull;
    for (uint64_t v : {k.rows, k.cols, (uint64_t)k.box_inner << 32 | k.box_outer, (uint64_t)k.swizzle})
      h = (h ^ v) * 0x100000001B3ull;
    return (size_t)h;
  }
};

struct Table {
  std::vector<Kernel> kernels;
  std::unordered_map<uint64_t, std::vector<Segment>> by_nk;  // (N << 32 | K) -> segments sorted by m_lo
  std::unordered_map<MapKey, CUtensorMap, MapKeyHash> maps;
  std::mutex mu;  // guards module loading and the tensor-map cache
};

std::array<std::unique_ptr<Table>, kMaxTables> g_tables;
std::atomic<int> g_count{0};
std::mutex g_create;

Table& table(int64_t handle) {
  TORCH_CHECK(handle >= 0 && handle < g_count.load(), "evo.dispatch: unknown table handle ", handle,
              " (call evo.dispatch.configure first)");
  return *g_tables[handle];
}

uint64_t nk_key(int64_t n, int64_t k) { return (uint64_t)n << 32 | (uint64_t)k; }

// Makes device's primary context current on this thread where none is. The driver calls below need one,
// and a CUDAGuard does not give it: it sets the device only where the runtime's current device differs,
// and on a thread whose first CUDA work is an evo call the runtime's device is already 0 (its default)
// with no context current. Called with device's guard in place.
void make_context_current(int device) {
  CUcontext ctx = nullptr;
  check(drv().cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
  if (ctx) return;
  CUdevice dev;
  check(drv().cuDeviceGet(&dev, device), "cuDeviceGet");
  check(drv().cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(drv().cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

CUfunction function_for(Kernel& k, int device) {
  TORCH_CHECK(device >= 0 && device < kMaxDevices, "evo.dispatch: device ", device, " out of range");
  if (k.function[device]) return k.function[device];
  c10::cuda::CUDAGuard guard((c10::DeviceIndex)device);
  make_context_current(device);
  CUmodule mod;
  CUfunction f;
  check(drv().cuModuleLoadData(&mod, k.cubin.data()), "loading a cubin (cuModuleLoadData)");
  check(drv().cuModuleGetFunction(&f, mod, "hgemm"), "finding hgemm in the cubin");
  if (k.max_smem > 0)
    check(drv().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)k.max_smem),
          "raising the dynamic shared memory limit");
  if (k.big_cluster)
    check(drv().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
          "allowing a non-portable cluster size");
  if (!k.reentrant)  // here, where this device's context is current (launch() records it, see Kernel)
    check(drv().cuEventCreate(&k.done[device], CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  k.module[device] = mod;
  k.function[device] = f;
  return f;
}

// fp16 CUDA on dev, contiguous, 16-byte aligned; dims == 2, or any (>= 1) where dims is 0
bool usable(const at::Tensor& x, const at::Device& dev, int64_t dims = 2) {
  return x.is_cuda() && x.device() == dev && x.scalar_type() == at::kHalf && (dims ? x.dim() == dims : x.dim() >= 1) &&
         x.is_contiguous() && reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0;
}

// The segment of the table for (N, K) that covers m, or nullptr.
const Segment* find(Table& t, int64_t m, int64_t n, int64_t k) {
  auto it = t.by_nk.find(nk_key(n, k));
  if (it == t.by_nk.end()) return nullptr;
  const auto& segs = it->second;
  auto pos = std::upper_bound(segs.begin(), segs.end(), m, [](int64_t v, const Segment& s) { return v < s.m_lo; });
  if (pos == segs.begin()) return nullptr;
  --pos;
  return m <= pos->m_hi ? &*pos : nullptr;
}

// The segment that serves a @ b, or nullptr where torch runs.
const Segment* route(Table& t, const at::Tensor& a, const at::Tensor& b) {
  if (!usable(a, a.device()) || !usable(b, a.device()) || a.size(1) != b.size(0)) return nullptr;
  return find(t, a.size(0), b.size(1), a.size(1));
}

const CUtensorMap& tensor_map(Table& t, const MapSpec& s, const void* ptr, uint64_t rows, uint64_t cols) {
  MapKey key{(uint64_t)(uintptr_t)ptr, rows, cols, s.box_inner, s.box_outer, s.swizzle};
  auto it = t.maps.find(key);
  if (it != t.maps.end()) return it->second;
  if (t.maps.size() >= kMapCacheLimit) t.maps.clear();
  static const CUtensorMapSwizzle swizzles[] = {CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_SWIZZLE_32B,
                                                 CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B};
  int sw = s.swizzle == 32 ? 1 : s.swizzle == 64 ? 2 : s.swizzle == 128 ? 3 : 0;
  cuuint64_t dims[2] = {cols, rows};  // innermost first
  cuuint64_t strides[1] = {cols * 2};
  cuuint32_t box[2] = {s.box_inner, s.box_outer};
  cuuint32_t elem[2] = {1, 1};
  CUtensorMap map;
  check(drv().cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<void*>(ptr), dims, strides, box,
                               elem, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzles[sw], CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "encoding a tensor map (cuTensorMapEncodeTiled)");
  return t.maps.emplace(key, map).first->second;
}

// Whether work queued on `stream` now runs now (not captured into a graph). The legacy stream while another
// stream captures answers CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: that counts as capturing. Any other failure
// (no current context, an earlier launch's error) raises: read as "capturing", it would silently skip a
// kernel's serialisation.
bool eager(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult r = drv().cuStreamIsCapturing(stream, &status);
  if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) return false;
  check(r, "asking whether the stream is being captured (cuStreamIsCapturing; or an earlier CUDA error)");
  return status == CU_STREAM_CAPTURE_STATUS_NONE;
}

// C[M,N] = A[M,K] B[K,N], row-major fp16 buffers on device. False (nothing launched): the caller runs
// torch, where the kernel is not loaded on this device yet and the stream is being captured into a graph
// (a module cannot be loaded during a capture).
bool launch(Table& t, const Segment& s, int device, const void* pa, const void* pb, void* pc, int M, int N, int K) {
  const c10::cuda::CUDAGuard guard((c10::DeviceIndex)device);  // the tensors' device, whatever is current
  make_context_current(device);  // a thread's first CUDA work may be this call (the capture query needs it)
  const CUstream stream = (CUstream)c10::cuda::getCurrentCUDAStream((c10::DeviceIndex)device).stream();
  CUtensorMap maps[kMaxMaps];
  void* params[6 + kMaxMaps] = {&pa, &pb, &pc, &M, &N, &K};
  const size_t n_maps = s.maps.size();
  for (size_t i = 0; i < n_maps; ++i) params[6 + i] = &maps[i];
  std::unique_lock<std::mutex> lock(t.mu);  // kept through the launch for a kernel that is serialised
  Kernel& kernel = t.kernels[s.kernel];
  if (!kernel.function[device] && !eager(stream)) return false;  // no module load during a capture: torch runs
  // Not reentrant: wait for its last launch on another stream, then launch and record, all under the lock
  // so that another thread's call waits for this one. Not inside a graph capture (a captured wait on an
  // event recorded outside it is not allowed): a graph replayed on one stream while eager calls run on
  // another can still race (docs/export.md).
  const bool serial = !kernel.reentrant && eager(stream);  // (reentrant kernels pay no capture query)
  const CUfunction f = function_for(kernel, device);  // loaded already (preload) but on a new device
  const bool pdl = kernel.pdl;
  if (serial && kernel.launched[device] && kernel.last_stream[device] != stream)
    check(drv().cuStreamWaitEvent(stream, kernel.done[device], 0), "waiting for the kernel's last launch");
  LastLaunch& last = s.last;
  if (last.m != M || last.ptr[0] != pa || last.ptr[1] != pb || last.ptr[2] != pc) {
    last.maps.resize(n_maps);
    for (size_t i = 0; i < n_maps; ++i) {
      const MapSpec& m = s.maps[i];
      // A[M,K], B[K,N], C[M,N], all row-major
      const void* ptr = m.operand == 0 ? pa : m.operand == 1 ? pb : pc;
      const uint64_t rows = m.operand == 1 ? K : M, cols = m.operand == 0 ? K : N;
      last.maps[i] = tensor_map(t, m, ptr, rows, cols);
    }
    last.ptr[0] = pa, last.ptr[1] = pb, last.ptr[2] = pc, last.m = M;
  }
  std::copy(last.maps.begin(), last.maps.end(), maps);
  if (!serial) lock.unlock();
  CUlaunchConfig cfg = {};
  cfg.gridDimX = s.grid[0], cfg.gridDimY = s.grid[1], cfg.gridDimZ = s.grid[2];
  cfg.blockDimX = s.block[0], cfg.blockDimY = s.block[1], cfg.blockDimZ = s.block[2];
  cfg.sharedMemBytes = s.smem;
  cfg.hStream = stream;
  CUlaunchAttribute attrs[2] = {};
  cfg.attrs = attrs;
  if (s.cluster[0]) {
    CUlaunchAttribute& a = attrs[cfg.numAttrs++];
    a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a.value.clusterDim.x = s.cluster[0], a.value.clusterDim.y = s.cluster[1], a.value.clusterDim.z = s.cluster[2];
  }
  if (pdl) {  // the launch may be scheduled while the previous kernel on the stream drains (its launch
              // latency overlaps that kernel's tail); the kernel's first statement waits for that kernel
    CUlaunchAttribute& a = attrs[cfg.numAttrs++];
    a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a.value.programmaticStreamSerializationAllowed = 1;
  }
  check(drv().cuLaunchKernelEx(&cfg, f, params, nullptr), "launching hgemm (cuLaunchKernelEx)");
  if (serial) {
    check(drv().cuEventRecord(kernel.done[device], stream), "recording the kernel's launch");
    kernel.last_stream[device] = stream, kernel.launched[device] = true;
  }
  return true;
}

// Under torch.autocast to another dtype than fp16 (bf16), torch returns that dtype: torch runs.
bool autocast_elsewhere() {
  return at::autocast::is_autocast_enabled(at::kCUDA) && at::autocast::get_autocast_dtype(at::kCUDA) != at::kHalf;
}

// Called from Python directly (pybind), a call is not below autograd: one that needs a gradient
// goes to torch's differentiable ops (the kernels have no backward). Below autograd (the operators'
// CUDA/CPU kernels) GradMode may be on but nothing is recorded there either way.
bool wants_grad(const at::Tensor& a, const at::Tensor& b, const at::Tensor* c = nullptr) {
  return at::GradMode::is_enabled() && (a.requires_grad() || b.requires_grad() || (c && c->requires_grad()));
}

// fp16 [rows, cols] on a's device, straight from the CUDA allocator (no dispatcher round trip)
at::Tensor empty_half(at::IntArrayRef sizes, const at::Tensor& like) {
  return at::Tensor(at::detail::empty_cuda(sizes, at::kHalf, like.device(), c10::nullopt));
}

at::Tensor matmul(const at::Tensor& a, const at::Tensor& b, int64_t handle) {
  Table& t = table(handle);
  const Segment* s = wants_grad(a, b) || autocast_elsewhere() ? nullptr : route(t, a, b);
  if (!s) return at::matmul(a, b);
  at::Tensor c = empty_half({a.size(0), b.size(1)}, a);
  if (!launch(t, *s, a.get_device(), a.data_ptr(), b.data_ptr(), c.data_ptr(), (int)a.size(0), (int)b.size(1),
              (int)a.size(1)))
    return at::matmul(a, b);
  return c;
}

void matmul_out(const at::Tensor& a, const at::Tensor& b, int64_t handle, at::Tensor& out) {
  Table& t = table(handle);
  // (torch says why out= cannot have a gradient)
  const Segment* s = wants_grad(a, b) || autocast_elsewhere() ? nullptr : route(t, a, b);
  if (!s || !usable(out, a.device()) || out.size(0) != a.size(0) || out.size(1) != b.size(1) ||
      !launch(t, *s, a.get_device(), a.data_ptr(), b.data_ptr(), out.data_ptr(), (int)a.size(0), (int)b.size(1),
              (int)a.size(1)))
    at::matmul_out(out, a, b);
}

// a @ b, or into out: the pybind entry point of Dispatcher.matmul (returns out when given)
at::Tensor matmul_any(const at::Tensor& a, const at::Tensor& b, const c10::optional<at::Tensor>& out, int64_t handle) {
  if (!out.has_value()) return matmul(a, b, handle);
  at::Tensor o = *out;
  matmul_out(a, b, handle, o);
  return o;
}

// nn.Linear's x @ w_t + bias with w_t = W.T stored [in, out] row-major, x of any leading dims, and w
// (optional) nn.Linear's own W [out, in], kept where the export's re-check found torch slower on w_t.
// Where torch runs it runs what nn.Linear runs (addmm with the bias fused, or mm; on w.t() when w is
// given, so the result is nn.Linear's bit for bit); where a kernel runs, the bias (if any) is one
// in-place add after it.
at::Tensor linear(const at::Tensor& x, const at::Tensor& w_t, const c10::optional<at::Tensor>& bias, int64_t handle,
                  const c10::optional<at::Tensor>& w) {
  const at::Tensor* b = bias.has_value() && bias->defined() ? &*bias : nullptr;
  const at::Tensor* nk = w.has_value() && w->defined() ? &*w : nullptr;
  TORCH_CHECK(w_t.dim() == 2 && x.dim() >= 1 && x.size(-1) == w_t.size(0), "evo.dispatch.Linear: x is ", x.sizes(),
              ", the weight [in, out] is ", w_t.sizes(), ": x's last dimension must be in_features");
  const int64_t k = w_t.size(0), n = w_t.size(1);
  TORCH_CHECK(!nk || (nk->dim() == 2 && nk->size(0) == n && nk->size(1) == k), "evo.dispatch.Linear: the kept weight "
              "is ", nk->sizes(), ", expected [out, in] = [", n, ", ", k, "] (w_t transposed)");
  if (wants_grad(x, w_t, b) || (nk && wants_grad(x, *nk)) || autocast_elsewhere())
    return at::linear(x, nk ? *nk : w_t.t(), bias);
  Table& t = table(handle);
  // a contiguous x is [M, K] whatever its leading dims: the kernel needs only its pointer and M
  const Segment* s = k > 0 && usable(x, x.device(), 0) && usable(w_t, x.device()) ? find(t, x.numel() / k, n, k) : nullptr;
  if (s) {
    at::DimVector sizes(x.sizes());
    sizes.back() = n;
    at::Tensor y = empty_half(sizes, x);
    if (launch(t, *s, x.get_device(), x.data_ptr(), w_t.data_ptr(), y.data_ptr(), (int)(x.numel() / k), (int)n, (int)k)) {
      if (b) y.add_(*b);
      return y;
    }
  }
  // torch: what nn.Linear's at::linear ends in (addmm/mm on the flattened x), with fewer operator calls
  // (no matmul/reshape composites: a view where x is contiguous). Without w, cuBLAS gets the weight as
  // [K, N] row-major (NN) where nn.Linear gives it W [N, K] transposed (TN): within noise on most
  // shapes, slower on some (the export's re-check measures it per (N, K); linear.py says what it found).
  const at::Tensor rhs = nk ? nk->t() : w_t;
  if (x.dim() == 2) return b ? at::addmm(*b, x, rhs) : at::mm(x, rhs);
  const at::Tensor x2 = k > 0 && x.is_contiguous() ? x.view({x.numel() / k, k}) : x.reshape({-1, k});
  at::Tensor y = b ? at::addmm(*b, x2, rhs) : at::mm(x2, rhs);
  at::DimVector sizes(x.sizes());
  sizes.back() = n;
  return y.view(sizes);
}

// ---- building a table (called once, from Python) ----

int64_t new_table() {
  std::lock_guard<std::mutex> lock(g_create);
  int n = g_count.load();
  TORCH_CHECK(n < kMaxTables, "evo.dispatch: more than ", kMaxTables, " configure() calls in one process");
  g_tables[n] = std::make_unique<Table>();
  g_count.store(n + 1);
  return n;
}

int64_t add_kernel(int64_t handle, py::bytes cubin, int64_t max_smem, bool big_cluster, bool pdl, bool reentrant) {
  Table& t = table(handle);
  Kernel k;
  k.cubin = cubin;
  k.max_smem = (unsigned)max_smem;
  k.big_cluster = big_cluster;
  k.pdl = pdl && driver_has_pdl();
  k.reentrant = reentrant;
  t.kernels.push_back(std::move(k));
  return (int64_t)t.kernels.size() - 1;
}

// launch: grid x3, block x3, smem, cluster x3 (0s: none), then per tensor map operand, box x2, swizzle
void add_segment(int64_t handle, int64_t n, int64_t k, int64_t m_lo, int64_t m_hi, int64_t kernel,
                 std::vector<int64_t> launch) {
  Table& t = table(handle);
  TORCH_CHECK(kernel >= 0 && kernel < (int64_t)t.kernels.size(), "evo.dispatch: unknown kernel ", kernel);
  TORCH_CHECK(launch.size() >= 10 && (launch.size() - 10) % 4 == 0 && (launch.size() - 10) / 4 <= kMaxMaps,
              "evo.dispatch: malformed launch of ", launch.size(), " values");
  Segment s;
  s.m_lo = m_lo, s.m_hi = m_hi, s.kernel = (int)kernel;
  for (int i = 0; i < 3; ++i) s.grid[i] = (unsigned)launch[i], s.block[i] = (unsigned)launch[3 + i];
  s.smem = (unsigned)launch[6];
  for (int i = 0; i < 3; ++i) s.cluster[i] = (unsigned)launch[7 + i];
  for (size_t i = 10; i < launch.size(); i += 4)
    s.maps.push_back({(int)launch[i], (uint32_t)launch[i + 1], (uint32_t)launch[i + 2], (int)launch[i + 3]});
  auto& segs = t.by_nk[nk_key(n, k)];
  segs.push_back(std::move(s));
  std::sort(segs.begin(), segs.end(), [](const Segment& x, const Segment& y) { return x.m_lo < y.m_lo; });
}

// Load every kernel of a table on a device now (module loads are not allowed during graph capture).
void preload(int64_t handle, int64_t device) {
  Table& t = table(handle);
  std::lock_guard<std::mutex> lock(t.mu);
  for (auto& k : t.kernels) function_for(k, (int)device);
}

}  // namespace

TORCH_LIBRARY(evo, m) {
  m.def("matmul(Tensor a, Tensor b, int handle) -> Tensor");
  m.def("matmul_out(Tensor a, Tensor b, int handle, Tensor(a!) out) -> ()");
  m.def("linear(Tensor x, Tensor w_t, Tensor? bias, int handle, Tensor? w=None) -> Tensor");
}

TORCH_LIBRARY_IMPL(evo, CUDA, m) {
  m.impl("matmul", &matmul);
  m.impl("matmul_out", &matmul_out);
  m.impl("linear", &linear);
}

TORCH_LIBRARY_IMPL(evo, CPU, m) {  // nothing to launch on the CPU: torch computes it (route() says so)
  m.impl("linear", &linear);
  m.impl("matmul", [](const at::Tensor& a, const at::Tensor& b, int64_t) { return at::matmul(a, b); });
  m.impl("matmul_out", [](const at::Tensor& a, const at::Tensor& b, int64_t, at::Tensor& out) {
    at::matmul_out(out, a, b);
  });
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("new_table", &new_table);
  m.def("add_kernel", &add_kernel);  // reentrant: required (dispatcher.py takes a missing one as false)
  m.def("add_segment", &add_segment);
  m.def("preload", &preload);
  m.def("driver_has_pdl", &driver_has_pdl);  // what add_kernel applies, so that explain() can say it
  // the same code without the dispatcher, for eager calls from Python (extension.py registers
  // torch.compile substitutes that call the operators instead)
  m.def("matmul", &matmul_any);
  m.def("linear", &linear, py::arg("x"), py::arg("w_t"), py::arg("bias"), py::arg("handle"),
        py::arg("w") = py::none());
}
