#!/usr/bin/env python3
"""Assay's Python harness: runs one job of kind torch, torch_cuda, triton or kernelbench.

    python3 -I -B assay_harness.py run     --request DIR/request.json --result DIR/result.json
    python3 -I -B assay_harness.py prepare --request DIR/request.json --result DIR/result.json
    python3 -I -B assay_harness.py standby      (then one line on stdin: {"mode","request","result"})
    python3 -I -B assay_harness.py --probe

The contract with the C++ worker (request.json, result.json, exit code) is docs/python-kinds.md.
The harness loads the user's code, makes inputs, runs candidate and reference, compares and times.
It reports what it saw; the worker decides the job's final state.

One process runs one job: nothing a user module patches survives into the next job, so modules
are never unloaded. `standby` only moves the start earlier: the worker starts the next job's
process while the current job runs; it imports torch (and with ASSAY_HARNESS_WARM=cuda creates its
CUDA context), then waits for its one job. Everything the checks and the clocks rely on (torch functions, tensor methods,
CUDA events, synchronize, perf_counter_ns) is captured into harness-private references before any
user code is imported.

Dependencies: the standard library, torch and numpy; triton only through the user's own imports.
Works with torch 1.13 (Debian, CPU) and torch 2.x (CUDA).
"""

import builtins
import ctypes
import hashlib
import importlib.util
import inspect
import json
import math
import os
import platform
import select
import struct
import sys
import time
import traceback

# --- captured before anything else runs ----------------------------------------------------------
_perf_ns = time.perf_counter_ns
_START_NS = _perf_ns()
_os_exit = os._exit
_open = builtins.open
_replace = os.replace
_json_dumps = json.dumps
_CDLL = ctypes.CDLL
_BaseException = BaseException

REQUEST_VERSION = 1
RESULT_VERSION = 1
DETAIL_LIMIT = 64 * 1024       # bytes of traceback / compiler output kept in status.detail
MESSAGE_LIMIT = 2000           # characters of the one-line status.message
MAX_REPORTED_MISMATCHES = 10
COMPARE_CHUNK = 1 << 24        # elements compared per step (bounds the compare's extra memory)
EVENT_RESOLUTION_MS = 0.0005   # cuEventElapsedTime's documented resolution (as measure/stats.h)
MAX_BATCH = 100                # samples queued per batch (as measure/stats.h kMaxBatch)
BATCH_WORK_MS = 10.0           # device work per batch (as measure/stats.h kBatchWorkMs)
BLOCKING_TIMEOUT_NS = 1_000_000_000
QUEUE_ENTRIES = 600            # launch-queue entries one batch may use (the queue holds ~1024)
BATCH_HOST_MS = 200.0          # host time one batch may take to enqueue (well under the timeout)
KERNELBENCH_SEED = 42
STANDBY_IDLE_S = 600.0         # a standby harness with no job after this long exits (ASSAY_HARNESS_IDLE_S)
JOB_LINE_LIMIT = 64 * 1024     # bytes of the standby's job line
EXTENSION_RECORD = "assay_extensions.json"   # in the extension cache: load_inline digest -> built module
# KernelBench's get_tolerance_for_precision (atol = rtol) by the reference output's dtype; other
# float dtypes take the fp32 figure.
KERNELBENCH_TOLERANCE = {"f32": 1e-4, "f16": 1e-2, "bf16": 1e-2, "f64": 1e-4}
M64 = (1 << 64) - 1

# Error classes (src/common/status.h).
OK = "ok"
REJECTED = "rejected"
COMPILE_ERROR = "compile_error"
RUNTIME_ERROR = "runtime_error"
WRONG_RESULT = "wrong_result"
INFRA_ERROR = "infra_error"

# name: (torch dtype attribute, bytes, kind) with kind f(loat) i(nt) u(nsigned) b(ool)
DTYPES = {
    "f64": ("float64", 8, "f"), "f32": ("float32", 4, "f"), "f16": ("float16", 2, "f"),
    "bf16": ("bfloat16", 2, "f"), "i64": ("int64", 8, "i"), "i32": ("int32", 4, "i"),
    "i16": ("int16", 2, "i"), "i8": ("int8", 1, "i"), "u8": ("uint8", 1, "u"), "bool": ("bool", 1, "b"),
}
# Default tolerances per dtype (docs/job-spec.md, "Tolerances").
DEFAULT_TOLERANCE = {"f64": (1e-8, 1e-7), "f32": (1e-5, 1e-4), "f16": (1e-3, 1e-2), "bf16": (1e-2, 2e-2)}
# Poison bit patterns of unwritten outputs (as the kernel engine: docs/correctness.md).
POISON_BITS = {"f64": 0x7FF4A5A5A5A5A5A5, "f32": 0x7FA5A5A5, "f16": 0xFFFF, "bf16": 0xFFFF}
INT_RANGE = {"i64": (-(1 << 53), 1 << 53), "i32": (-(1 << 31), (1 << 31) - 1), "i16": (-32768, 32767),
             "i8": (-128, 127), "u8": (0, 255), "bool": (0, 1)}
NPY_DESCR = {"f8": "f64", "f4": "f32", "f2": "f16", "V2": "bf16", "i8": "i64", "i4": "i32", "i2": "i16",
             "i1": "i8", "u1": "u8", "b1": "bool"}
SAFETENSORS_DTYPE = {"F64": "f64", "F32": "f32", "F16": "f16", "BF16": "bf16", "I64": "i64", "I32": "i32",
                     "I16": "i16", "I8": "i8", "U8": "u8", "BOOL": "bool"}
# Substrings of exception texts that mean the GPU reported an error (the context may be lost).
CUDA_ERROR_NAMES = (
    ("illegal memory access", "CUDA_ERROR_ILLEGAL_ADDRESS"),
    ("unspecified launch failure", "CUDA_ERROR_LAUNCH_FAILED"),
    ("device-side assert", "CUDA_ERROR_ASSERT"),
    ("misaligned address", "CUDA_ERROR_MISALIGNED_ADDRESS"),
    ("illegal instruction", "CUDA_ERROR_ILLEGAL_INSTRUCTION"),
    ("launch timed out", "CUDA_ERROR_LAUNCH_TIMEOUT"),
    ("out of memory", "CUDA_ERROR_OUT_OF_MEMORY"),
    ("too many resources requested", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"),
    ("invalid argument", "CUDA_ERROR_INVALID_VALUE"),
)
CUDA_ERROR_MARKERS = ("CUDA error", "CUDA_ERROR", "Triton Error [CUDA]", "cudaError", "CUBLAS_STATUS",
                      "CUDNN_STATUS", "illegal memory access", "device-side assert")
NO_GPU_MARKERS = ("No CUDA GPUs are available", "Found no NVIDIA driver", "Torch not compiled with CUDA",
                  "CUDA driver initialization failed", "no CUDA-capable device", "CUDA_VISIBLE_DEVICES")

# The helper kernels, as PTX (JIT-compiled by the driver for any GPU from sm_70 on). Loaded through
# libcuda with ctypes so that no compiler is needed on the worker; their names are fixed because the
# worker leaves them out of the CUPTI kernel sums (docs/python-kinds.md, "Measurement").
HELPER_PTX = r"""
.version 7.0
.target sm_70
.address_size 64

// Reads n16 16-byte words of buf (grid-stride loop, cached in L2 only): the cold-mode L2 flush.
// Reading, not writing, leaves L2 holding clean lines only, so the timed call pays no write-back
// of the flush's data (as Nsight Compute's flush + invalidate; a memset-style flush inflated
// memory-bound times by 8-16 % on an H200). The xor of the words is stored only when it equals
// `value`, so the loads cannot be dropped.
.visible .entry assay_l2_flush(.param .u64 buf, .param .u64 n16, .param .u32 value)
{
    .reg .pred p;
    .reg .b32 r<12>;
    .reg .b64 rd<8>;
    ld.param.u64 rd1, [buf];
    ld.param.u64 rd2, [n16];
    ld.param.u32 r1, [value];
    cvta.to.global.u64 rd1, rd1;
    mov.u32 r2, %ctaid.x;
    mov.u32 r3, %ntid.x;
    mov.u32 r4, %tid.x;
    cvt.u64.u32 rd4, r4;
    mad.wide.u32 rd3, r2, r3, rd4;
    mov.u32 r5, %nctaid.x;
    mul.wide.u32 rd5, r5, r3;
    mov.u32 r10, 0;
LOOP:
    setp.ge.u64 p, rd3, rd2;
    @p bra DONE;
    shl.b64 rd6, rd3, 4;
    add.s64 rd7, rd1, rd6;
    ld.global.cg.v4.u32 {r6, r7, r8, r9}, [rd7];
    xor.b32 r10, r10, r6;
    xor.b32 r10, r10, r7;
    xor.b32 r10, r10, r8;
    xor.b32 r10, r10, r9;
    add.s64 rd3, rd3, rd5;
    bra LOOP;
DONE:
    setp.ne.u32 p, r10, r1;
    @p bra END;
    st.global.u32 [rd1], r10;
END:
    ret;
}

// Spins until *flag != 0 (host-mapped memory, re-read every iteration) or timeout_ns of
// %globaltimer have passed; on timeout sets *timed_out = 1. Holds the stream while a batch of
// samples is queued behind it, so host launch latency never lands inside a sample.
.visible .entry assay_blocking_kernel(.param .u64 flag, .param .u64 timed_out, .param .u64 timeout_ns)
{
    .reg .pred p, q;
    .reg .b32 r<3>;
    .reg .b64 rd<8>;
    ld.param.u64 rd1, [flag];
    ld.param.u64 rd2, [timed_out];
    ld.param.u64 rd3, [timeout_ns];
    cvta.to.global.u64 rd1, rd1;
    cvta.to.global.u64 rd2, rd2;
    mov.u64 rd4, %globaltimer;
SPIN:
    ld.volatile.global.u32 r1, [rd1];
    setp.ne.u32 p, r1, 0;
    @p bra OUT;
    mov.u64 rd5, %globaltimer;
    sub.s64 rd6, rd5, rd4;
    setp.lt.u64 q, rd6, rd3;
    @q bra SPIN;
    mov.u32 r2, 1;
    st.volatile.global.u32 [rd2], r2;
OUT:
    ret;
}
"""


# --- errors ---------------------------------------------------------------------------------------

class Failure(Exception):
    """A job-level outcome other than ok: an Assay error class, a one-line message, a detail."""

    def __init__(self, cls, message, detail=None, **extra):
        super().__init__(message)
        self.cls = cls
        self.message = message
        self.detail = detail
        self.extra = extra


def _one_line(text, limit=MESSAGE_LIMIT):
    text = str(text).strip()
    first = text.splitlines()[0] if text else ""
    return first if len(first) <= limit else first[: limit - 3] + "..."


def _tail(text, limit=DETAIL_LIMIT):
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    return "...\n" + data[-limit:].decode("utf-8", "ignore")


def _exception_text(e):
    return "%s: %s" % (type(e).__name__, e) if str(e) else type(e).__name__


def _traceback_text(e):
    return "".join(traceback.format_exception(type(e), e, e.__traceback__))


def _cuda_error_name(text):
    if not any(m in text for m in CUDA_ERROR_MARKERS):
        return None
    low = text.lower()
    for needle, name in CUDA_ERROR_NAMES:
        if needle in low:
            return name
    return "CUDA_ERROR_UNKNOWN"


def _is_triton_compile_error(e):
    mod = type(e).__module__ or ""
    return mod.startswith("triton") and "compil" in (mod + type(e).__name__).lower()


def user_failure(who, e):
    """Turns an exception raised while user code ran into a Failure (who: '' or 'reference: ')."""
    if isinstance(e, Failure):
        return e
    text = _exception_text(e)
    detail = _tail(_traceback_text(e))
    name = type(e).__name__
    if _is_triton_compile_error(e):
        return Failure(COMPILE_ERROR, who + _one_line(text), detail, compiled=(who != ""), exception=name)
    cuda = _cuda_error_name(text)
    if cuda:
        return Failure(RUNTIME_ERROR, who + _one_line(text), detail, cuda_error=cuda, exception=name)
    return Failure(RUNTIME_ERROR, who + _one_line(text), detail, exception=name)


# --- JSON and files -------------------------------------------------------------------------------

def _jsonable(v):
    """NaN/Inf as the strings "nan"/"inf"/"-inf" (docs/correctness.md); strings made valid UTF-8."""
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if isinstance(v, str):
        return v.encode("utf-8", "replace").decode("utf-8")
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if v is None or isinstance(v, (bool, int)):
        return v
    return _jsonable(str(v))


def write_json_atomic(path, doc):
    """Writes path.tmp.<pid> then renames it over path: readers never see half a file."""
    text = _json_dumps(_jsonable(doc), allow_nan=False, indent=1)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with _open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.write("\n")
    _replace(tmp, path)


def _g6(v):
    """A number as the C++ engine prints it in messages (%.6g)."""
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return "%.6g" % v


def _index_str(idx):
    return "[" + ", ".join(str(i) for i in idx) + "]"


def _unravel(flat, shape):
    idx = [0] * len(shape)
    for k in range(len(shape) - 1, -1, -1):
        d = shape[k]
        if d == 0:
            break
        idx[k] = flat % d
        flat //= d
    return idx


def _splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def arg_seed(seed, index):
    """The generator seed of argument `index` in the check with `seed`: independent per argument."""
    return _splitmix64((seed & M64) ^ _splitmix64(index + 1))


def _round3(v):
    """KernelBench rounds its timing statistics to 3 significant digits."""
    return float("%.3g" % v)


# --- statistics (the same estimator as src/measure/stats.cc; docs/measurement.md) ------------------

def sorted_quantile(v, q):
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def _robust_sigma(v):
    iqr = sorted_quantile(v, 0.75) - sorted_quantile(v, 0.25)
    return max(iqr / 1.349, EVENT_RESOLUTION_MS / math.sqrt(12.0))


def relative_noise(samples):
    """Relative standard error of the median: 1.2533 * sigma / (median * sqrt(n)); inf if undefined."""
    v = sorted(samples)
    if len(v) < 2:
        return math.inf
    med = sorted_quantile(v, 0.5)
    if not med > 0:
        return math.inf
    return 1.2533 * _robust_sigma(v) / (med * math.sqrt(len(v)))


def compute_stats(samples):
    v = sorted(samples)
    n = len(v)
    s = {"min_ms": 0.0, "max_ms": 0.0, "mean_ms": 0.0, "median_ms": 0.0, "std_ms": 0.0,
         "p25_ms": 0.0, "p75_ms": 0.0, "noise": None, "spread": None, "samples": n}
    if n == 0:
        return s
    mean = sum(v) / n
    s.update(min_ms=v[0], max_ms=v[-1], mean_ms=mean,
             std_ms=math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1)) if n > 1 else 0.0,
             p25_ms=sorted_quantile(v, 0.25), median_ms=sorted_quantile(v, 0.5), p75_ms=sorted_quantile(v, 0.75))
    noise = relative_noise(v)
    s["noise"] = None if math.isinf(noise) else noise
    if n >= 2:
        s["spread"] = _robust_sigma(v) / s["median_ms"] if s["median_ms"] > 0 else 0.0
    return s


def decide_stop(rule, used, taken, noise, elapsed_ms):
    """'continue' | 'converged' | 'max_samples_reached' | 'time_budget_spent' (DecideStop)."""
    if used < rule["min_samples"] and taken < rule["max_samples"]:
        return "continue"
    if used >= rule["min_samples"] and noise <= rule["noise_target"]:
        return "converged"
    if taken >= rule["max_samples"]:
        return "max_samples_reached"
    if elapsed_ms >= rule["time_budget_ms"]:
        return "time_budget_spent"
    return "continue"


def plan_batch(rule, per_sample_ms, taken, elapsed_ms):
    """Samples in the next batch (PlanBatch)."""
    per = max(per_sample_ms, 1e-4)
    n = int(min(BATCH_WORK_MS / per, MAX_BATCH))
    left = rule["time_budget_ms"] - elapsed_ms
    n = min(n, int(max(left, 0.0) / per))
    n = max(n, 1)
    n = max(n, min(rule["min_samples"] - taken, MAX_BATCH))
    n = min(n, rule["max_samples"] - taken)
    return max(n, 1)


# --- torch, captured ------------------------------------------------------------------------------

class K:
    """Harness-private references to torch, taken before user code is imported.

    Methods come from the C tensor base type, which Python code cannot modify; module-level torch
    functions are held by reference, so rebinding `torch.isnan` or patching `torch.Tensor.__sub__`
    later changes nothing here. Checks also run under DisableTorchFunction.
    """
    torch = None


def capture_torch():
    if K.torch is not None:  # a standby harness captured before its job arrived
        return K.torch
    import torch
    K.torch = torch
    K.Tensor = torch.Tensor
    try:
        import torch.autograd.graph as _graph
        K.increment_version = getattr(_graph, "increment_version", None)
    except Exception:  # torch < 2.0 (Debian's 1.13): no such module function
        K.increment_version = None
    TB = getattr(torch._C, "TensorBase", None) or torch._C._TensorBase
    K.TB = TB
    for name in ("clone", "contiguous", "reshape", "view", "to", "cpu", "numpy", "item", "fill_", "copy_",
                 "numel", "size", "stride", "data_ptr", "element_size", "dim", "double", "tolist",
                 "masked_fill_", "narrow", "index_select", "storage_offset", "is_floating_point",
                 "is_complex", "detach", "float"):
        setattr(K, name, getattr(TB, name))
    K.dtype_of = TB.dtype.__get__
    K.device_of = TB.device.__get__
    K.layout_of = TB.layout.__get__
    K.requires_grad_of = TB.requires_grad.__get__
    # torch 2.x: untyped_storage(); torch 1.13: _storage() (an UntypedStorage).
    K.untyped_storage = getattr(TB, "untyped_storage", None) or getattr(TB, "_storage", None)
    K.storage = torch.Tensor.storage
    for name in ("isnan", "isinf", "abs", "sub", "add", "mul", "div", "le", "eq", "ne", "where", "logical_and",
                 "logical_or", "logical_not", "sum", "max", "nonzero", "zeros", "full", "empty", "rand", "randn",
                 "randint", "round", "clamp", "frombuffer", "equal", "all", "zeros_like", "view_as_real", "tensor"):
        setattr(K, name, getattr(torch, name))
    K.Generator = torch.Generator
    K.no_grad = torch.no_grad
    K.manual_seed = torch.manual_seed
    K.cuda_manual_seed = torch.cuda.manual_seed
    K.no_torch_function = getattr(torch._C, "DisableTorchFunction", None)
    K.dispatch_stack_len = getattr(torch._C, "_len_torch_dispatch_stack", lambda: 0)
    K.strided = torch.strided
    K.dtypes = {name: getattr(torch, spec[0]) for name, spec in DTYPES.items()}
    K.dtype_names = {v: k for k, v in K.dtypes.items()}
    K.int_of_width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    K.float64 = torch.float64
    K.float32 = torch.float32
    K.int64 = torch.int64
    K.uint8 = torch.uint8
    K.bool = torch.bool
    # CUDA clocks: the C event type cannot be patched; synchronize is the C function itself.
    # (A CPU-only build has a stub _CudaEventBase without methods: then the Python class's.)
    base = getattr(torch._C, "_CudaEventBase", None)
    K.EventBase = base if base is not None and hasattr(base, "record") else None
    K.Event = torch.cuda.Event
    K.event_record = K.EventBase.record if K.EventBase is not None else torch.cuda.Event.record
    K.event_elapsed = K.EventBase.elapsed_time if K.EventBase is not None else torch.cuda.Event.elapsed_time
    K.cuda_sync = getattr(torch._C, "_cuda_synchronize", None) or torch.cuda.synchronize
    K.current_stream = torch.cuda.current_stream
    K.set_stream = torch.cuda.set_stream
    K.empty_cache = torch.cuda.empty_cache
    K.CUDAGraph = getattr(torch.cuda, "CUDAGraph", None)
    K.graph = getattr(torch.cuda, "graph", None)
    K.cuda_stream_ctx = torch.cuda.stream
    K.Stream = torch.cuda.Stream
    return torch


class _NoTorchFunction:
    def __enter__(self):
        self.inner = K.no_torch_function() if K.no_torch_function is not None else None
        if self.inner is not None:
            self.inner.__enter__()
        return self

    def __exit__(self, *exc):
        if self.inner is not None:
            self.inner.__exit__(*exc)
        return False


def _shape(t):
    return [int(d) for d in K.size(t)]


def _dtype_name(t):
    dt = K.dtype_of(t)
    return K.dtype_names.get(dt, str(dt).replace("torch.", ""))


def _is_float_dtype(t):
    return bool(K.is_floating_point(t))


def _storage_ptr(t):
    """The base address of t's storage (torch 2.x untyped_storage, torch 1.13 storage)."""
    if K.untyped_storage is not None:
        return K.untyped_storage(t).data_ptr()
    return K.storage(t).data_ptr()


def _byte_range(t):
    """[begin, end) of the bytes a strided tensor can touch."""
    if K.numel(t) == 0:
        return (0, 0)
    es = K.element_size(t)
    lo = hi = 0
    for size, stride in zip(K.size(t), K.stride(t)):
        span = (size - 1) * stride
        lo += min(0, span)
        hi += max(0, span)
    base = K.data_ptr(t)
    return (base + lo * es, base + hi * es + es)


def _self_overlapping(t):
    """True when two elements of t share memory (e.g. an expanded tensor, stride 0)."""
    dims = sorted((abs(st), sz) for sz, st in zip(K.size(t), K.stride(t)) if sz > 1)
    reach = 0
    for stride, size in dims:
        if stride <= reach:
            return True
        reach += (size - 1) * stride
    return False


def _shares_memory(a, b):
    if K.numel(a) == 0 or K.numel(b) == 0:
        return False
    if _storage_ptr(a) == _storage_ptr(b):
        return True
    ra, rb = _byte_range(a), _byte_range(b)
    return ra[0] < rb[1] and rb[0] < ra[1]


def _bits_view(t):
    """t flattened and viewed as integers of its own width (NaN payloads compare exactly)."""
    flat = K.reshape(K.contiguous(t), (-1,))
    if K.dtype_of(flat) == K.bool:
        return K.view(flat, K.uint8)
    return K.view(flat, K.int_of_width[K.element_size(flat)])


def _signed(bits, width):
    return bits - (1 << (8 * width)) if bits >= 1 << (8 * width - 1) else bits


def poison_value(dtype_name):
    """The poison pattern of an output, as the signed integer its bits view holds."""
    width = DTYPES[dtype_name][1]
    bits = POISON_BITS.get(dtype_name, int.from_bytes(b"\xa5" * width, "little"))
    if width == 1:
        return bits  # viewed as uint8
    return _signed(bits, width)


def poison_(t, dtype_name):
    """Fills t with the poison pattern (NaN for floats, 0xA5 bytes otherwise)."""
    with _NoTorchFunction():
        K.fill_(_bits_view(t), poison_value(dtype_name))


def nan_fill_(t):
    """Fills a released reference tensor: NaN for floats, 0xA5 bytes otherwise."""
    if K.numel(t) == 0:
        return
    with _NoTorchFunction():
        if _is_float_dtype(t) or K.is_complex(t):
            K.fill_(t, float("nan"))
        else:
            K.fill_(_bits_view(t), int.from_bytes(b"\xa5" * K.element_size(t), "little", signed=K.element_size(t) > 1))


def bits_equal(a, b):
    with _NoTorchFunction():
        if _shape(a) != _shape(b) or K.dtype_of(a) != K.dtype_of(b):
            return False
        if K.numel(a) == 0:
            return True
        return bool(K.equal(_bits_view(a), _bits_view(b)))


# --- comparing one output -------------------------------------------------------------------------

def _element_json(v, kind):
    """An element as the result reports it (floats: nan/inf strings; bool bytes > 1 as numbers)."""
    if kind == "b":
        return v if v > 1 else bool(v)
    if kind == "f":
        return float(v)
    return int(v)


def compare_output(name, cand, ref, atol, rtol, nan_equal, poisoned_dtype=None):
    """Compares cand with ref (same shape and dtype). Returns (report, message); message is '' if equal.

    Rules (docs/correctness.md): floats fail on NaN unless both NaN and nan_equal; infinities must be
    equal; else pass iff |a - b| <= atol + rtol * |b| (b = reference). Integers exact; bool by truth
    value, the byte 0xA5 always failing. `poisoned_dtype`: the output was poisoned before the call, so
    failing elements still holding the poison bits are reported as never written.
    """
    with _NoTorchFunction():
        shape = _shape(cand)
        c = K.reshape(K.contiguous(cand), (-1,))
        r = K.reshape(K.contiguous(ref), (-1,))
        if K.is_complex(c):
            c = K.reshape(K.view_as_real(c), (-1,))
            r = K.reshape(K.view_as_real(r), (-1,))
        n = K.numel(c)
        kind = "f" if _is_float_dtype(c) else ("b" if K.dtype_of(c) == K.bool else "i")
        poison = poison_value(poisoned_dtype) if poisoned_dtype else None
        mismatches = unwritten = 0
        max_abs = max_rel = 0.0
        first = []           # flat indices of the first failing elements
        ref_constant = n > 1
        ref_first_bits = None
        for start in range(0, n, COMPARE_CHUNK):
            m = min(COMPARE_CHUNK, n - start)
            cc = K.narrow(c, 0, start, m)
            rc = K.narrow(r, 0, start, m)
            if kind == "f":
                a = K.to(cc, K.float64)
                b = K.to(rc, K.float64)
                an, bn = K.isnan(a), K.isnan(b)
                nan_any = K.logical_or(an, bn)
                inf_any = K.logical_and(K.logical_or(K.isinf(a), K.isinf(b)), K.logical_not(nan_any))
                finite = K.logical_not(K.logical_or(nan_any, inf_any))
                diff = K.abs(K.sub(a, b))
                ok = K.le(diff, K.add(K.mul(K.abs(b), rtol), atol))
                ok = K.where(inf_any, K.eq(a, b), ok)
                ok_nan = K.logical_and(an, bn) if nan_equal else K.zeros_like(an)
                ok = K.where(nan_any, ok_nan, ok)
                zero = K.zeros_like(diff)
                fdiff = K.where(finite, diff, zero)
                if K.numel(fdiff):
                    max_abs = max(max_abs, float(K.item(K.max(fdiff))))
                    rel_ok = K.logical_and(finite, K.ne(b, zero))
                    babs = K.where(rel_ok, K.abs(b), K.add(zero, 1.0))
                    max_rel = max(max_rel, float(K.item(K.max(K.where(rel_ok, K.div(diff, babs), zero)))))
            elif kind == "b":
                cb, rb = K.view(cc, K.uint8), K.view(rc, K.uint8)
                ok = K.logical_and(K.ne(cb, 0xA5), K.eq(K.ne(cb, 0), K.ne(rb, 0)))
                max_abs = max(max_abs, 0.0 if bool(K.all(ok)) else 1.0)
            else:
                ok = K.eq(cc, rc)
                if not bool(K.all(ok)):
                    diff = K.abs(K.sub(K.to(cc, K.float64), K.to(rc, K.float64)))
                    max_abs = max(max_abs, float(K.item(K.max(diff))))
            bad = K.logical_not(ok)
            nbad = int(K.item(K.sum(bad)))
            mismatches += nbad
            if poison is not None and nbad:
                held = K.eq(_bits_view(cc), poison)
                unwritten += int(K.item(K.sum(K.logical_and(held, bad))))
            if nbad and len(first) < MAX_REPORTED_MISMATCHES:
                idx = K.nonzero(bad)
                take = min(MAX_REPORTED_MISMATCHES - len(first), int(K.size(idx)[0]))
                first.extend(start + int(i) for i in K.tolist(K.narrow(K.reshape(idx, (-1,)), 0, 0, take)))
            if ref_constant:
                rbits = _bits_view(rc)
                if ref_first_bits is None:
                    ref_first_bits = int(K.item(K.narrow(rbits, 0, 0, 1)))
                ref_constant = bool(K.all(K.eq(rbits, ref_first_bits)))
        report = {"total": n, "mismatches": mismatches, "max_abs_error": max_abs, "max_rel_error": max_rel,
                  "atol": atol, "rtol": rtol}
        if poison is not None:
            report["unwritten"] = unwritten
        listed = []
        if first:
            cvals = _values_at(c, first, kind)
            rvals = _values_at(r, first, kind)
            cbits = K.tolist(K.index_select(_bits_view(c), 0, _index_tensor(first, c))) if poison is not None else None
            for j, flat in enumerate(first):
                entry = {"index": _unravel(flat, shape) if not K.is_complex(cand) else _unravel(flat // 2, shape),
                         "flat_index": flat, "candidate": cvals[j], "reference": rvals[j]}
                if cbits is not None and cbits[j] == poison:
                    entry["never_written"] = True
                listed.append(entry)
        report["first_mismatches"] = listed
        ref_const_value = None
        if ref_constant and n > 1:
            ref_const_value = _values_at(r, [0], kind)[0]
        message = ""
        if mismatches:
            head = listed[0] if listed else None
            if head is not None and head.get("never_written"):
                message = ("output '%s' element %s was never written (it still holds the poison pattern; "
                           "%d of %d elements unwritten, %d mismatches)"
                           % (name, _index_str(head["index"]), unwritten, n, mismatches))
            else:
                message = ("output '%s': %d of %d elements differ from the reference (max abs error %s, atol %s, "
                           "rtol %s)" % (name, mismatches, n, _g6(max_abs), _g6(atol), _g6(rtol)))
                if head is not None:
                    message += "; first at %s: candidate %s, reference %s" % (
                        _index_str(head["index"]), _json_dumps(_jsonable(head["candidate"])),
                        _json_dumps(_jsonable(head["reference"])))
        return report, message, ref_const_value


def _index_tensor(indices, like):
    t = K.tensor(indices, dtype=K.int64)
    return K.to(t, K.device_of(like))


def _values_at(flat, indices, kind):
    sel = K.index_select(flat, 0, _index_tensor(indices, flat))
    if kind == "b":
        return [_element_json(v, "b") for v in K.tolist(K.view(sel, K.uint8))]
    if kind == "f":
        return [_element_json(v, "f") for v in K.tolist(K.to(sel, K.float64))]
    return [int(v) for v in K.tolist(sel)]


def self_check_unwritten(name, cand, dtype_name):
    """Without a reference: only poisoned float/bool outputs that were never written can be found."""
    with _NoTorchFunction():
        flat = _bits_view(cand)
        held = K.eq(flat, poison_value(dtype_name))
        count = int(K.item(K.sum(held)))
        report = {"total": K.numel(flat), "unwritten": count}
        if not count:
            return report, ""
        i = int(K.item(K.narrow(K.reshape(K.nonzero(held), (-1,)), 0, 0, 1)))
        return report, ("output '%s' element %s was never written (it still holds the poison pattern; %d of %d "
                        "elements unwritten)" % (name, _index_str(_unravel(i, _shape(cand))), count,
                                                 K.numel(flat)))


# --- blobs ----------------------------------------------------------------------------------------

def parse_npy(data):
    """(dtype name, shape, payload bytes) of an .npy file: v1-3, little-endian, C order."""
    if data[:6] != b"\x93NUMPY":
        raise ValueError("not an npy file (bad magic)")
    if len(data) < 10:
        raise ValueError("npy file is truncated")
    major = data[6]
    if major == 1:
        hlen, start = struct.unpack("<H", data[8:10])[0], 10
    elif major in (2, 3):
        if len(data) < 12:
            raise ValueError("npy file is truncated")
        hlen, start = struct.unpack("<I", data[8:12])[0], 12
    else:
        raise ValueError("npy format version %d is not supported" % major)
    if start + hlen > len(data):
        raise ValueError("npy header is truncated")
    import ast
    try:
        header = ast.literal_eval(data[start:start + hlen].decode("latin-1"))
    except (ValueError, SyntaxError) as e:
        raise ValueError("npy header is malformed: %s" % e)
    if not isinstance(header, dict) or not {"descr", "fortran_order", "shape"} <= set(header):
        raise ValueError("npy header needs descr, fortran_order and shape")
    descr = header["descr"]
    if not isinstance(descr, str):
        raise ValueError("npy descr %r is not supported (f8 f4 f2 V2(bf16) i8 i4 i2 i1 u1 b1)" % (descr,))
    if descr[:1] == ">" and descr[1:] not in ("i1", "u1", "b1"):
        raise ValueError("npy dtype '%s' is big-endian; only little-endian data is accepted" % descr)
    if len(descr) != 3 or descr[0] not in "<|=>" or descr[1:] not in NPY_DESCR:
        raise ValueError("npy dtype '%s' is not supported (f8 f4 f2 V2(bf16) i8 i4 i2 i1 u1 b1)" % descr)
    if header["fortran_order"]:
        raise ValueError("npy array is in Fortran order; only C order is accepted")
    shape = header["shape"]
    if not isinstance(shape, tuple) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise ValueError("npy shape is malformed")
    dtype = NPY_DESCR[descr[1:]]
    payload = data[start + hlen:]
    need = DTYPES[dtype][1] * math.prod(shape)
    if len(payload) != need:
        raise ValueError("npy data is %d bytes; shape and dtype need %d" % (len(payload), need))
    return dtype, list(shape), payload


def parse_safetensors(data, name, fallback_name):
    """(dtype name, shape, payload) of one tensor of a safetensors file (header parsed here).

    `name`: the tensor asked for; else `fallback_name` (the argument's name) if the file has it,
    else the only tensor.
    """
    if len(data) < 8:
        raise ValueError("not a safetensors file (shorter than 8 bytes)")
    n = struct.unpack("<Q", data[:8])[0]
    if n > len(data) - 8:
        raise ValueError("safetensors header length %d is larger than the file" % n)
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise ValueError("safetensors header is not a JSON object")
    if not isinstance(header, dict):
        raise ValueError("safetensors header is not a JSON object")
    names = [k for k in header if k != "__metadata__"]
    chosen = name
    if not chosen:
        if fallback_name in names:
            chosen = fallback_name
        elif len(names) == 1:
            chosen = names[0]
        else:
            raise ValueError("safetensors file holds %d tensors (%s); name one with 'tensor'"
                             % (len(names), ", ".join(names)))
    if chosen not in names:
        raise ValueError("safetensors file has no tensor '%s'" % chosen)
    e = header[chosen]
    if not isinstance(e, dict) or not {"dtype", "shape", "data_offsets"} <= set(e):
        raise ValueError("safetensors entry '%s' needs dtype, shape and data_offsets" % chosen)
    if e["dtype"] not in SAFETENSORS_DTYPE:
        raise ValueError("safetensors dtype '%s' is not supported" % e["dtype"])
    dtype = SAFETENSORS_DTYPE[e["dtype"]]
    shape, off = e["shape"], e["data_offsets"]
    if (not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape)
            or not isinstance(off, list) or len(off) != 2 or not all(isinstance(o, int) and o >= 0 for o in off)):
        raise ValueError("safetensors entry '%s' is malformed" % chosen)
    payload = data[8 + n:]
    begin, end = off
    if begin > end or end > len(payload):
        raise ValueError("safetensors offsets of '%s' lie outside the file" % chosen)
    need = DTYPES[dtype][1] * math.prod(shape)
    if end - begin != need:
        raise ValueError("safetensors tensor '%s' has %d bytes; its shape and dtype need %d"
                         % (chosen, end - begin, need))
    return dtype, list(shape), payload[begin:end]


def tensor_from_bytes(payload, dtype, shape):
    """A CPU tensor holding a copy of little-endian C-order bytes."""
    if len(payload) == 0:
        return K.empty(shape, dtype=K.dtypes[dtype])
    t = K.frombuffer(bytearray(payload), dtype=K.dtypes[dtype])
    return K.clone(K.reshape(t, shape))


# --- probe ----------------------------------------------------------------------------------------

def probe():
    """One JSON line: interpreter, torch, CUDA, triton and numpy versions (null when missing)."""
    out = {"python": platform.python_version(), "torch": None, "cuda": False, "triton": None, "numpy": None,
           "harness": RESULT_VERSION}
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # imports must not print into the one line the worker parses
    try:
        try:
            import numpy
            out["numpy"] = numpy.__version__
        except Exception as e:  # noqa: BLE001 - report, never crash the probe
            out["numpy_error"] = _one_line(_exception_text(e), 300)
        try:
            import torch
            out["torch"] = torch.__version__
            out["torch_cuda"] = torch.version.cuda
            out["cuda"] = bool(torch.cuda.is_available())
            if out["cuda"]:
                out["device_count"] = torch.cuda.device_count()
        except Exception as e:  # noqa: BLE001
            out["torch_error"] = _one_line(_exception_text(e), 300)
        try:
            import triton
            out["triton"] = triton.__version__
        except Exception:  # noqa: BLE001 - triton is optional
            pass
    finally:
        sys.stdout = real_stdout
    print(_json_dumps(out), flush=True)
    return 0


# --- the CUDA driver helpers (ctypes) --------------------------------------------------------------

class DriverHelpers:
    """The harness's own kernels, loaded from PTX through libcuda: L2 flush and blocking kernel.

    Everything here degrades: a failure leaves `error` set, and the caller falls back (torch fill_
    flush, no blocking kernel) with a warning.
    """

    def __init__(self, torch, device, stream, l2_bytes):
        self.error = None
        self.flush_fn = self.block_fn = None
        self.stream_handle = ctypes.c_void_p(stream.cuda_stream)
        try:
            cu = _CDLL("libcuda.so.1")
            self.cu = cu
            cu.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
            cu.cuCtxGetCurrent.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
            cu.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
            cu.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
            cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
                ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
            cu.cuMemHostAlloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_uint]
            cu.cuMemHostGetDevicePointer_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p,
                                                        ctypes.c_uint]
            ctx = ctypes.c_void_p()
            self._check(cu.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
            if not ctx.value:
                raise RuntimeError("no current CUDA context after torch initialised the device")
            mod = ctypes.c_void_p()
            self._check(cu.cuModuleLoadData(ctypes.byref(mod), HELPER_PTX.encode()), "cuModuleLoadData")
            self.module = mod
            self.flush_fn = self._function(b"assay_l2_flush")
            self.block_fn = self._function(b"assay_blocking_kernel")
            # Flush buffer: 2 x L2, whole 16-byte words.
            self.flush_bytes = ((2 * l2_bytes + 15) // 16) * 16
            self.flush_buf = K.empty((self.flush_bytes,), dtype=K.uint8, device=device)
            sms = torch.cuda.get_device_properties(device).multi_processor_count
            self.flush_grid = max(1, sms * 4)
            # Flag and timeout word in pinned, device-mapped host memory, read by the blocking kernel.
            # (Never freed: the process ends with the job.)
            hostp = ctypes.c_void_p()
            self._check(cu.cuMemHostAlloc(ctypes.byref(hostp), 64, 0x01 | 0x02), "cuMemHostAlloc")  # PORTABLE|DEVICEMAP
            host = hostp.value
            ctypes.memset(host, 0, 64)
            dev = ctypes.c_uint64()
            self._check(cu.cuMemHostGetDevicePointer_v2(ctypes.byref(dev), ctypes.c_void_p(host), 0),
                        "cuMemHostGetDevicePointer")
            self.flag_host = ctypes.c_int32.from_address(host)
            self.timed_out_host = ctypes.c_int32.from_address(host + 4)
            self.flag_dev = dev.value
        except Exception as e:  # noqa: BLE001 - any failure here means "use the fallbacks"
            self.error = _one_line(_exception_text(e), 500)
            self.flush_fn = self.block_fn = None

    def _check(self, rc, call):
        if rc != 0:
            name = ctypes.c_char_p()
            self.cu.cuGetErrorName(rc, ctypes.byref(name))
            raise RuntimeError("%s: %s" % (call, (name.value or b"CUDA error %d" % rc).decode()))

    def _function(self, name):
        f = ctypes.c_void_p()
        self._check(self.cu.cuModuleGetFunction(ctypes.byref(f), self.module, name), "cuModuleGetFunction")
        return f

    def _launch(self, fn, grid, block, params):
        ptrs = (ctypes.c_void_p * len(params))(*[ctypes.addressof(p) for p in params])
        self._check(self.cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, self.stream_handle, ptrs, None),
                    "cuLaunchKernel")

    def flush(self, value):
        self._launch(self.flush_fn, self.flush_grid, 512,
                     [ctypes.c_uint64(K.data_ptr(self.flush_buf)), ctypes.c_uint64(self.flush_bytes // 16),
                      ctypes.c_uint32(value)])

    def block(self):
        self.flag_host.value = 0
        self.timed_out_host.value = 0
        self._launch(self.block_fn, 1, 1, [ctypes.c_uint64(self.flag_dev), ctypes.c_uint64(self.flag_dev + 4),
                                           ctypes.c_uint64(BLOCKING_TIMEOUT_NS)])

    def release(self):
        self.flag_host.value = 1

    def timed_out(self):
        return self.timed_out_host.value != 0


class CuptiMarker:
    """Calls AssayCuptiMark(label) of the CUPTI injection library (docs/python-kinds.md)."""

    def __init__(self, enabled, warnings):
        self.fn = None
        self.warnings = warnings
        if not enabled:
            return
        path = os.environ.get("CUDA_INJECTION64_PATH", "")
        if not path:
            warnings.append("cupti_marks requested but CUDA_INJECTION64_PATH is not set: no CUPTI marks")
            return
        try:
            fn = _CDLL(path).AssayCuptiMark
            fn.argtypes = [ctypes.c_char_p]
            fn.restype = None
            self.fn = fn
        except (OSError, AttributeError) as e:
            warnings.append("CUPTI marks unavailable (%s): the worker cannot cut the CUPTI record by phase"
                            % _one_line(str(e), 300))

    def mark(self, label):
        if self.fn is None:
            return False
        self.fn(label.encode())
        return True


# --- the clock ------------------------------------------------------------------------------------

class Clock:
    """Times one callable: warm-up by time, batches, adaptive stop (docs/measurement.md)."""

    def __init__(self, job):
        self.job = job
        self.cuda = job.cuda
        self.helpers = job.helpers
        self.marker = job.marker
        self.events = []

    def _event_pair(self, i):
        while len(self.events) <= i:
            if K.EventBase is not None:
                try:
                    s, e = K.EventBase(enable_timing=True), K.EventBase(enable_timing=True)
                except TypeError:
                    s, e = K.Event(enable_timing=True), K.Event(enable_timing=True)
            else:
                s, e = K.Event(enable_timing=True), K.Event(enable_timing=True)
            self.events.append((s, e))
        return self.events[i]

    def measure(self, fn, opts, phase, who):
        """fn: one call of the code under test. phase: 'cand' | 'ref'. who: message prefix."""
        rule = {k: opts[k] for k in ("min_samples", "max_samples", "noise_target", "time_budget_ms")}
        notes = []
        mode = opts["mode"]
        out = {"clock": "cuda_event" if self.cuda else "host", "mode": mode}
        if not self.cuda:
            if mode == "graph":
                self.job.warn("graph mode needs CUDA; %s timed in hot mode" % ("the candidate" if phase == "cand"
                                                                             else "the reference"))
                mode = out["mode"] = "hot"
            if mode == "cold":
                notes.append("device cpu: no L2 flush")
        if self.cuda and mode == "graph":
            fn, mode = self._capture(fn, phase, who, notes)
            out["mode"] = "graph" if mode == "graph" else "hot"
            if mode != "graph":
                out["requested_mode"] = "graph"
        # Cold: an L2 flush before every sample (graph mode too, unless graph_cold is off).
        cold = self.cuda and (mode == "cold" or (mode == "graph" and opts.get("graph_cold", True)))
        flush = self._flush_fn(cold, notes, out)
        samples, hosts, warm = self._warmup(fn, flush, opts["warmup_ms"], who)
        per_sample = self._estimate(samples) + (self._flush_ms(flush) if cold else 0.0)
        host_per_call = self._estimate(hosts)
        out["warmup"] = {"runs": len(samples), "ms": warm}
        marks = []
        self._sync(who)
        if self.marker.mark(phase + ".begin"):
            marks.append(phase + ".begin")
        taken, host_samples, batches, timeouts = [], [], 0, 0
        use_block = self.cuda and self.helpers is not None and self.helpers.block_fn is not None
        t0 = _perf_ns()
        decision = "continue"
        while decision == "continue":
            elapsed = (_perf_ns() - t0) / 1e6
            n = plan_batch(rule, per_sample, len(taken), elapsed)
            if self.cuda:
                if use_block:
                    entries = host_per_call * 1000.0 / 2.0 + (4 if cold else 3)
                    n = max(1, min(n, int(QUEUE_ENTRIES / entries),
                                   int(BATCH_HOST_MS / max(host_per_call, 1e-3))))
                batch, hb, timed_out = self._cuda_batch(fn, flush, n, use_block, len(taken), who)
                batches += 1
                if timed_out:
                    timeouts += 1
                    use_block = False
                    notes.append("the blocking kernel timed out (the call waited on the GPU while the batch was "
                                 "queued, or the launch queue filled): batch dropped, later batches queued without it")
                    if timeouts > 3:
                        raise Failure(INFRA_ERROR, "timing: the blocking kernel timed out repeatedly")
                    continue
            else:
                batch, hb = self._host_batch(fn, n, who)
                batches += 1
            taken.extend(batch)
            host_samples.extend(hb)
            decision = decide_stop(rule, len(taken), len(taken), relative_noise(taken), (_perf_ns() - t0) / 1e6)
        sampling_ms = (_perf_ns() - t0) / 1e6
        self._sync(who)
        if self.marker.mark(phase + ".end"):
            marks.append(phase + ".end")
        out.update(compute_stats(taken))
        out["converged"] = decision == "converged"
        out["stop_reason"] = decision
        if decision != "converged":
            notes.append("noise target %g not met" % rule["noise_target"])
        out["samples_ms"] = taken
        out["samples_taken"] = len(taken)
        out["batches"] = batches
        out["blocking_timeouts"] = timeouts
        out["sampling_ms"] = sampling_ms
        out["queue"] = ("blocked" if use_block else "direct") if self.cuda else "host"
        out["host_ms_per_call"] = sorted_quantile(sorted(host_samples), 0.5) if host_samples else None
        if self.cuda and out["host_ms_per_call"] is not None and out["samples"] and \
                out["host_ms_per_call"] > 3 * out["median_ms"] + 0.05:
            notes.append("issuing one call takes %.4g ms on the host, the timed stream runs %.4g ms: the module is "
                         "launch-bound, or its work runs where the events do not see it (the CUPTI record decides)"
                         % (out["host_ms_per_call"], out["median_ms"]))
        out["l2_flush_bytes"] = (self.helpers.flush_bytes if flush == "kernel" else 2 * self.job.l2_bytes) \
            if cold and flush else 0
        if self.cuda:
            out["l2_flush"] = {"kernel": "assay_l2_flush", "torch": "torch.fill_"}.get(flush) if cold else None
        out["marks"] = marks
        out["notes"] = "; ".join(notes)
        return out

    # -- pieces --

    def _sync(self, who):
        if self.cuda:
            try:
                K.cuda_sync()
            except _BaseException as e:  # an asynchronous error of the code just run
                raise user_failure(who, e)

    def _flush_fn(self, cold, notes, out):
        if not cold:
            return None
        if self.helpers is not None and self.helpers.flush_fn is not None:
            return "kernel"
        if not getattr(self.job, "_flush_warned", False):
            self.job.warn("L2 flush kernel unavailable (%s): flushing with torch fill_ on a %d-byte buffer; its "
                          "kernel shows in the CUPTI record" % (self.helpers.error if self.helpers else "no driver",
                                                                 2 * self.job.l2_bytes))
            self.job._flush_warned = True
        if getattr(self.job, "_torch_flush_buf", None) is None:
            self.job._torch_flush_buf = K.empty((2 * self.job.l2_bytes,), dtype=K.uint8, device=self.job.device)
        return "torch"

    def _do_flush(self, flush, i):
        if flush == "kernel":
            self.helpers.flush(i & 1)
        elif flush == "torch":
            K.fill_(self.job._torch_flush_buf, i & 1)

    def _flush_ms(self, flush):
        if flush is None:
            return 0.0
        s, e = self._event_pair(0)
        K.cuda_sync()
        K.event_record(s, self.job.stream)
        self._do_flush(flush, 0)
        K.event_record(e, self.job.stream)
        K.cuda_sync()
        return float(K.event_elapsed(s, e))

    @staticmethod
    def _estimate(samples):
        later = sorted(samples[len(samples) // 2:])
        return sorted_quantile(later, 0.5) if later else 0.0

    def _warmup(self, fn, flush, warmup_ms, who):
        """Runs one sample at a time until warmup_ms have passed (at least once)."""
        samples, hosts = [], []
        t0 = _perf_ns()
        i = 0
        while True:
            try:
                if self.cuda:
                    s, e = self._event_pair(0)
                    self._do_flush(flush, i)
                    K.event_record(s, self.job.stream)
                    h0 = _perf_ns()
                    with K.no_grad():
                        fn()
                    h1 = _perf_ns()
                    K.event_record(e, self.job.stream)
                    K.cuda_sync()
                    samples.append(float(K.event_elapsed(s, e)))
                else:
                    h0 = _perf_ns()
                    with K.no_grad():
                        fn()
                    h1 = _perf_ns()
                    samples.append((h1 - h0) / 1e6)
            except Failure:
                raise
            except _BaseException as e:
                raise user_failure(who, e)
            hosts.append((h1 - h0) / 1e6)
            i += 1
            elapsed = (_perf_ns() - t0) / 1e6
            if elapsed >= warmup_ms:
                return samples, hosts, elapsed

    def _host_batch(self, fn, n, who):
        out, hosts = [], []
        try:
            for _ in range(n):
                h0 = _perf_ns()
                with K.no_grad():
                    fn()
                h1 = _perf_ns()
                out.append((h1 - h0) / 1e6)
                hosts.append((h1 - h0) / 1e6)
        except _BaseException as e:
            raise user_failure(who, e)
        return out, hosts

    def _cuda_batch(self, fn, flush, n, use_block, base, who):
        """Queues n samples ([flush,] start, call, stop), behind the blocking kernel if available."""
        hosts = []
        stream = self.job.stream
        try:
            if use_block:
                self.helpers.block()
            try:
                for i in range(n):
                    s, e = self._event_pair(i)
                    self._do_flush(flush, base + i)
                    K.event_record(s, stream)
                    h0 = _perf_ns()
                    with K.no_grad():
                        fn()
                    hosts.append((_perf_ns() - h0) / 1e6)
                    K.event_record(e, stream)
            finally:
                if use_block:
                    self.helpers.release()
            K.cuda_sync()
        except Failure:
            raise
        except _BaseException as e:
            raise user_failure(who, e)
        if use_block and self.helpers.timed_out():
            return [], [], True
        return [float(K.event_elapsed(*self._event_pair(i))) for i in range(n)], hosts, False

    def _capture(self, fn, phase, who, notes):
        """Captures one call into a CUDA graph; returns (replay, 'graph') or (fn, 'hot') on failure."""
        what = "the candidate" if phase == "cand" else "the reference"
        if K.CUDAGraph is None or K.graph is None:
            self.job.warn("CUDA graphs are not available in this torch; %s timed in hot mode" % what)
            return fn, "hot"
        try:
            side = K.Stream()
            side.wait_stream(self.job.stream)
            with K.cuda_stream_ctx(side), K.no_grad():
                fn()  # warm-up off the capture, as torch recommends (lazy init, workspaces)
            self.job.stream.wait_stream(side)
            K.cuda_sync()
            g = K.CUDAGraph()
            with K.no_grad():
                with K.graph(g):
                    keep = fn()
            self._graph_keep = (g, keep)
            K.cuda_sync()
            return g.replay, "graph"
        except _BaseException as e:
            text = _exception_text(e)
            if _cuda_error_name(text) in ("CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED",
                                          "CUDA_ERROR_ASSERT", "CUDA_ERROR_MISALIGNED_ADDRESS",
                                          "CUDA_ERROR_ILLEGAL_INSTRUCTION"):
                raise user_failure(who, e)
            try:
                K.cuda_sync()
            except _BaseException as e2:
                raise user_failure(who, e2)
            self.job.warn("CUDA graph capture of %s failed (%s); timed in hot mode" % (what, _one_line(text, 300)))
            return fn, "hot"


# --- user modules ---------------------------------------------------------------------------------

def import_user_module(name, path, who):
    """Imports the file at `path` as module `name`. Any failure is a compile_error naming `who`."""
    if not isinstance(path, str) or not os.path.isfile(path):
        raise Failure(INFRA_ERROR, "%s source file %r does not exist" % (who, path))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError("cannot load %s as a Python module" % path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod
    except _BaseException as e:
        sys.modules.pop(name, None)
        prefix = "" if who == "candidate" else who + ": "
        text = _exception_text(e)
        return_detail = _tail(_traceback_text(e))
        raise Failure(COMPILE_ERROR, prefix + _one_line(text), return_detail, compiled=(who != "candidate"),
                      exception=type(e).__name__)


# --- load_inline through the prepare step's cache --------------------------------------------------

class ExtensionCache:
    """Routes torch.utils.cpp_extension.load_inline through the extension cache (docs/python-kinds.md,
    "Extension builds").

    prepare: builds as torch does, into TORCH_EXTENSIONS_DIR (the cache), and records each build in
        <cache>/assay_extensions.json: digest of load_inline's arguments -> module name and file.
    run: a call whose digest is recorded loads that module file directly: no lock file, no ninja, no
        write to the cache, so the cache can stay read-only for the job. Anything else (not recorded,
        a build_directory of its own, a non-module build) goes to torch unchanged and builds into
        TORCH_EXTENSIONS_DIR, which the worker points at the job's own directory, with a warning.
    Every call is listed in result["extensions"].
    """

    IGNORED = ("verbose", "keep_intermediates", "build_directory")

    def __init__(self, mode, cache_dir, result):
        self.mode = mode
        self.cache_dir = os.path.realpath(cache_dir) if cache_dir else ""
        self.result = result
        self.calls = result.setdefault("extensions", [])

    def install(self):
        try:
            import torch.utils.cpp_extension as cpp
        except Exception as e:  # noqa: BLE001 - without it user code cannot call load_inline either
            self.result["warnings"].append("torch.utils.cpp_extension does not import (%s): load_inline is "
                                           "not cached" % _one_line(_exception_text(e), 300))
            return
        original = cpp.load_inline
        try:
            sig = inspect.signature(original)
        except (TypeError, ValueError):
            return
        cache = self

        def load_inline(*args, **kwargs):
            return cache.load(original, sig, args, kwargs)

        load_inline.__doc__ = original.__doc__
        load_inline.__wrapped__ = original
        cpp.load_inline = load_inline

    @staticmethod
    def digest(arguments):
        key = {k: v for k, v in arguments.items() if k not in ExtensionCache.IGNORED}
        text = _json_dumps(_jsonable(key), sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def load(self, original, sig, args, kwargs):
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError:
            return original(*args, **kwargs)  # torch says what is wrong with the call
        bound.apply_defaults()
        a = bound.arguments
        name = str(a.get("name"))
        cacheable = (self.cache_dir and not a.get("build_directory") and a.get("is_python_module", True) is True
                     and not a.get("is_standalone", False))
        digest = self.digest(a) if cacheable else None
        if digest and self.mode == "run":
            mod = self._from_cache(digest, name)
            if mod is not None:
                return mod
        t0 = _perf_ns()
        mod = original(*args, **kwargs)
        ms = round((_perf_ns() - t0) / 1e6, 1)
        self.calls.append({"name": name, "source": "built", "ms": ms})
        if self.mode == "prepare" and digest:
            self._record(digest, mod)
        elif self.mode == "run":
            why = ("its arguments are not among the prepare step's builds (they differ between runs, or the "
                   "module needs a GPU at import)" if cacheable else
                   "it has its own build_directory or is not a Python module")
            self.result["warnings"].append(
                "load_inline(%r) was built during the run, on the GPU worker, in %.1f s: %s" % (name, ms / 1000, why))
        return mod

    def _records(self):
        try:
            with _open(os.path.join(self.cache_dir, EXTENSION_RECORD), "r", encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            return {}
        ext = doc.get("extensions") if isinstance(doc, dict) else None
        return ext if isinstance(ext, dict) else {}

    def _record(self, digest, mod):
        path = getattr(mod, "__file__", None)
        modname = getattr(mod, "__name__", None)
        if not isinstance(path, str) or not isinstance(modname, str):
            return
        path = os.path.realpath(path)
        if not path.startswith(self.cache_dir + os.sep):
            return
        records = self._records()
        records[digest] = {"module": modname, "file": os.path.relpath(path, self.cache_dir)}
        try:
            write_json_atomic(os.path.join(self.cache_dir, EXTENSION_RECORD), {"v": 1, "extensions": records})
        except OSError as e:
            self.result["warnings"].append("cannot record the build of %s: %s" % (modname, e))

    def _from_cache(self, digest, name):
        rec = self._records().get(digest)
        if not isinstance(rec, dict) or not isinstance(rec.get("module"), str) or not isinstance(rec.get("file"), str):
            return None
        path = os.path.realpath(os.path.join(self.cache_dir, rec["file"]))
        if not path.startswith(self.cache_dir + os.sep) or not os.path.isfile(path):
            return None
        t0 = _perf_ns()
        try:
            spec = importlib.util.spec_from_file_location(rec["module"], path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        except Exception as e:  # noqa: BLE001 - a stale or broken file: build it as torch would
            self.result["warnings"].append("the cached build of load_inline(%r) does not load (%s); building it"
                                           % (name, _one_line(_exception_text(e), 300)))
            return None
        self.calls.append({"name": name, "source": "cache", "ms": round((_perf_ns() - t0) / 1e6, 1)})
        return mod


def _bind_check(fn, args, what):
    """Rejects a call whose arity does not fit fn's signature (skipped when it has none)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        sig.bind(*args)
    except TypeError as e:
        raise Failure(REJECTED, "%s%s: %s (the contract passes %d argument%s)"
                      % (what, str(sig), e, len(args), "" if len(args) == 1 else "s"))


def _entry(mod, entry, who, file_label):
    prefix = "" if who == "candidate" else who + ": "
    if not hasattr(mod, entry):
        names = sorted(n for n in vars(mod) if not n.startswith("_"))[:20]
        raise Failure(REJECTED, "%s%s has no '%s' (the entry); it defines: %s"
                      % (prefix, file_label, entry, ", ".join(names) or "nothing"))
    obj = getattr(mod, entry)
    if not callable(obj):
        raise Failure(REJECTED, "%s'%s' in %s is not callable" % (prefix, entry, file_label))
    return obj


# --- requests -------------------------------------------------------------------------------------

class Arg:
    def __init__(self, d, index):
        if not isinstance(d, dict):
            raise Failure(INFRA_ERROR, "bad request: args[%d] is not an object" % index)
        self.index = index
        self.name = str(d.get("name", "arg%d" % index))
        self.role = d.get("role")
        self.dtype = d.get("dtype")
        if self.role not in ("in", "out", "inout", "scalar"):
            raise Failure(INFRA_ERROR, "bad request: args[%d].role %r" % (index, self.role))
        if self.dtype not in DTYPES:
            raise Failure(INFRA_ERROR, "bad request: args[%d].dtype %r" % (index, self.dtype))
        self.kind = DTYPES[self.dtype][2]
        if self.role == "scalar":
            v = d.get("value", 0)
            self.value = float(v) if self.kind == "f" else (bool(v) if self.kind == "b" else int(v))
            return
        shape = d.get("shape")
        if not isinstance(shape, list) or not all(isinstance(x, int) and x >= 0 for x in shape):
            raise Failure(INFRA_ERROR, "bad request: args[%d].shape must be a resolved list of integers" % index)
        self.shape = shape
        tol = d.get("tolerance") or {}
        da, dr = DEFAULT_TOLERANCE.get(self.dtype, (0.0, 0.0))
        self.atol = float(d.get("atol", tol.get("atol", da)))
        self.rtol = float(d.get("rtol", tol.get("rtol", dr)))
        self.init = d.get("init") if self.role in ("in", "inout") else None

    @property
    def tensor(self):
        return self.role != "scalar"


def _num(init, *keys, default=None):
    for k in keys:
        if k in init and init[k] is not None:
            return init[k]
    return default


def _timing_options(req):
    t = req.get("timing") or {}
    opts = {"enabled": bool(t.get("enabled", True)), "mode": t.get("mode", "cold"),
            "min_samples": int(t.get("min_samples", 10)), "max_samples": int(t.get("max_samples", 1000)),
            "noise_target": float(t.get("noise_target", 0.005)),
            "time_budget_ms": float(t.get("time_budget_ms", 2000)), "warmup_ms": float(t.get("warmup_ms", 100)),
            "graph_cold": bool(t.get("graph_cold", True))}
    if opts["mode"] not in ("cold", "hot", "graph"):
        raise Failure(INFRA_ERROR, "bad request: timing.mode %r" % opts["mode"])
    opts["min_samples"] = max(1, opts["min_samples"])
    opts["max_samples"] = max(opts["min_samples"], opts["max_samples"])
    return opts


# --- the job --------------------------------------------------------------------------------------

class Job:
    """State shared by the job kinds: device, stream, clocks, the result being built."""

    def __init__(self, req, result):
        self.req = req
        self.result = result
        self.warnings = result["warnings"]
        self.kind = req.get("kind")
        self.device_name = req.get("device", "cuda")
        self.cuda = self.device_name == "cuda"
        self.helpers = None
        self.stream = None
        self.l2_bytes = int(req.get("l2_bytes") or 0)
        c = req.get("correctness") or {}
        self.trials = max(1, int(c.get("trials", 3)))
        self.check_after_timing = bool(c.get("check_after_timing", True))
        self.nan_equal = bool(c.get("nan_equal", False))
        self.timing = _timing_options(req)
        self.checks = []
        self.guards = []
        self.phase = "load"
        self.inputs = None   # the candidate's input tensors, reused by every check (see _check)

    def warn(self, text):
        if text not in self.warnings:
            self.warnings.append(text)

    def set_phase(self, phase):
        self.phase = phase
        self.result["status"]["phase"] = phase
        enter_phase(self.result, phase)

    def setup_device(self):
        """Initialises CUDA and the harness's helpers before any user code is imported."""
        torch = K.torch
        if not self.cuda:
            if self.device_name != "cpu":
                raise Failure(INFRA_ERROR, "bad request: device %r (cuda or cpu)" % self.device_name)
            self.device = torch.device("cpu")
            self.marker = CuptiMarker(False, self.warnings)
            self.hardware = platform.processor() or platform.machine() or "cpu"
            return
        if not torch.cuda.is_available():
            raise Failure(INFRA_ERROR, "the harness sees no CUDA device (CUDA_VISIBLE_DEVICES=%r)"
                          % os.environ.get("CUDA_VISIBLE_DEVICES"))
        idx = torch.cuda.current_device()
        self.device = torch.device("cuda", idx)
        K.empty((1,), device=self.device)  # makes the primary context current on this thread
        self.stream = K.current_stream(self.device)
        props = torch.cuda.get_device_properties(self.device)
        self.hardware = props.name
        if self.l2_bytes <= 0:
            self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or 64 << 20)
        if self.timing["enabled"]:
            warm = _WARM.pop("helpers", None)  # a standby's, made before the job (same device and stream)
            if warm is not None and warm[0] == (self.device.index, self.stream.cuda_stream, self.l2_bytes):
                self.helpers = warm[1]
            else:
                self.helpers = DriverHelpers(torch, self.device, self.stream, self.l2_bytes)
            if self.helpers.error:
                self.warn("helper kernels unavailable (%s): no blocking kernel (host launch latency may land in "
                          "samples)" % self.helpers.error)
        self.marker = CuptiMarker(bool(self.req.get("cupti_marks")) and self.timing["enabled"], self.warnings)

    def sync(self, who=""):
        if self.cuda:
            try:
                K.cuda_sync()
            except _BaseException as e:
                raise user_failure(who, e)

    def reassert_stream(self):
        """User code may have changed the current stream; the harness's clocks run on its own."""
        if self.cuda and K.current_stream(self.device) != self.stream:
            self.warn("user code changed the current CUDA stream; the harness set its own back")
            K.set_stream(self.stream)

    def check_modes(self, who):
        """A dispatch mode left active would intercept the harness's own checks. (Torch function modes,
        e.g. torch.set_default_device, are harmless: the harness's code runs with them disabled.)"""
        if K.dispatch_stack_len():
            raise Failure(WRONG_RESULT, "%sleft a torch dispatch mode active: the harness's checks would run "
                          "through it" % (who or "the candidate "))

    def call_user(self, who, fn, *args):
        """Runs user code under no_grad and synchronizes; errors become Failures naming `who`."""
        try:
            with K.no_grad():
                out = fn(*args)
            if self.cuda:
                K.cuda_sync()
            return out
        except Failure:
            raise
        except _BaseException as e:
            raise user_failure(who, e)

    def release_cuda_memory(self):
        if self.cuda:
            K.empty_cache()

    def validate_output(self, t, name, want_dtype, want_shape, inputs, others, who=""):
        """Anti-cheat checks of one returned tensor (docs/python-kinds.md, "Anti-cheat")."""
        pre = who
        if type(t) is not K.Tensor:
            if isinstance(t, K.Tensor):
                raise Failure(WRONG_RESULT, "%soutput '%s' is a %s, a subclass of torch.Tensor; outputs must be "
                              "plain torch.Tensor" % (pre, name, type(t).__name__))
            raise Failure(WRONG_RESULT, "%soutput '%s' is a %s, not a torch.Tensor" % (pre, name, type(t).__name__))
        if K.layout_of(t) != K.strided:
            raise Failure(WRONG_RESULT, "%soutput '%s' has layout %s; outputs must be strided"
                          % (pre, name, K.layout_of(t)))
        dev = K.device_of(t)
        if dev != self.device:
            raise Failure(WRONG_RESULT, "%soutput '%s' is on %s; the job runs on %s" % (pre, name, dev, self.device))
        source = "the reference's is" if isinstance(want_shape, _RefShape) else "the contract says"
        got = _dtype_name(t)
        if got != want_dtype:
            raise Failure(WRONG_RESULT, "%soutput '%s' has dtype %s; %s %s" % (pre, name, got, source, want_dtype))
        shape = _shape(t)
        if shape != list(want_shape):
            raise Failure(WRONG_RESULT, "%soutput '%s' has shape %s; %s %s"
                          % (pre, name, _index_str(shape), source, _index_str(want_shape)))
        if K.requires_grad_of(t):
            raise Failure(WRONG_RESULT, "%soutput '%s' requires grad; outputs must be plain data" % (pre, name))
        if _self_overlapping(t):
            raise Failure(WRONG_RESULT, "%soutput '%s' has overlapping elements (strides %s): outputs must be "
                          "dense" % (pre, name, list(K.stride(t))))
        for iname, it in inputs:
            if isinstance(it, K.Tensor) and _shares_memory(t, it):
                raise Failure(WRONG_RESULT, "%soutput '%s' shares memory with input '%s'" % (pre, name, iname))
        for oname, ot in others:
            if _shares_memory(t, ot):
                raise Failure(WRONG_RESULT, "%soutput '%s' shares memory with output '%s'" % (pre, name, oname))


class _RefShape(list):
    """A shape taken from the reference's output (kernelbench), for the wording of messages."""


def _clone_value(v):
    return K.clone(v) if isinstance(v, K.Tensor) else v


def _version_bumper(values):
    """A function that marks every tensor in `values` as modified (its `_version` counter moves on), with
    no GPU work: each timed call then sees inputs that "changed" since the last call, so a cache keyed on
    the input object and its version (the cheapest way to skip work on a repeated call) never hits.
    torch >= 2.0 has torch.autograd.graph.increment_version; on older torch it does nothing (CPU tests)."""
    tensors = [v for v in values if isinstance(v, K.Tensor)]
    inc = getattr(K, "increment_version", None)
    if inc is None or not tensors:
        return lambda: None
    try:  # some tensors (inference-mode ones) have no version counter: then do nothing
        for t in tensors:
            inc(t)
    except Exception:
        return lambda: None

    def bump():
        for t in tensors:
            inc(t)
    return bump


# --- kinds torch, torch_cuda, triton --------------------------------------------------------------

class Callee:
    """A module under the per-kind call contract: torch(_cuda) `Entry()(*ins)`, triton `launch(*all)`."""

    def __init__(self, job, spec, who, module_name, args):
        self.job = job
        self.kind = spec.get("kind") or job.kind
        if self.kind not in ("torch", "torch_cuda", "triton"):
            raise Failure(REJECTED, "%sa %s kernel cannot be run by the Python harness"
                          % ("" if who == "candidate" else who + ": ", self.kind))
        self.who = who
        self.prefix = "" if who == "candidate" else who + ": "
        self.entry = spec.get("entry") or ("launch" if self.kind == "triton" else "Model")
        self.path = spec.get("path")
        self.file_label = os.path.basename(str(self.path))
        self.module = import_user_module(module_name, self.path, who)
        self.args = args
        self.obj = None
        self.out_buffers = {}

    def construct(self):
        entry = _entry(self.module, self.entry, self.who, self.file_label)
        if self.kind == "triton":
            if hasattr(entry, "fn") and hasattr(entry, "run") and type(entry).__name__ in ("JITFunction", "Autotuner",
                                                                                         "Heuristics"):
                raise Failure(REJECTED, "%s'%s' is a @triton.jit kernel; the entry must be a launcher function that "
                              "picks the grid and launches it" % (self.prefix, self.entry))
            _bind_check(entry, [a.name for a in self.args], "%s%s" % (self.prefix, self.entry))
            self.obj = entry
            return
        if inspect.isclass(entry):
            _bind_check(entry, [], "%s%s" % (self.prefix, self.entry))
        m = self.job.call_user(self.prefix, entry)
        if hasattr(m, "to") and callable(m.to):
            m = self.job.call_user(self.prefix, m.to, self.job.device) or m
        if hasattr(m, "eval") and callable(m.eval):
            self.job.call_user(self.prefix, m.eval)
        fwd = getattr(m, "forward", None)
        ins = [a.name for a in self.args if a.role != "out"]
        if fwd is not None:
            _bind_check(fwd, ins, "%s%s.forward" % (self.prefix, self.entry))
        elif callable(m):
            _bind_check(m, ins, "%s%s instance" % (self.prefix, self.entry))
        if not callable(m):
            raise Failure(REJECTED, "%s%s() returned a %s, which cannot be called"
                          % (self.prefix, self.entry, type(m).__name__))
        self.obj = m

    def positional(self, values):
        """The call's arguments from {arg name: tensor or scalar} (out tensors included for triton)."""
        if self.kind == "triton":
            return [values[a.name] for a in self.args]
        return [values[a.name] for a in self.args if a.role != "out"]

    def prepare_outputs(self, values, persistent=True):
        """Triton: poisons the out tensors and puts them into values (the launcher writes them). The
        candidate's are allocated once and re-poisoned before every check, like its inputs."""
        if self.kind != "triton":
            return
        for a in self.args:
            if a.role == "out":
                t = self.out_buffers.get(a.name) if persistent else None
                if t is None:
                    t = K.empty(a.shape, dtype=K.dtypes[a.dtype], device=self.job.device)
                    if persistent:
                        self.out_buffers[a.name] = t
                poison_(t, a.dtype)
                values[a.name] = t

    def call(self, values):
        """Runs once; returns {out/inout name: tensor}, validated against the contract."""
        pos = self.positional(values)
        ret = self.job.call_user(self.prefix, self.obj, *pos)
        outs = {}
        outs_args = [a for a in self.args if a.role == "out"]
        inputs = [(a.name, values[a.name]) for a in self.args if a.role in ("in", "inout")]
        if self.kind == "triton":
            for a in outs_args:
                outs[a.name] = values[a.name]
        else:
            if ret is None:
                got = []
            elif isinstance(ret, (tuple, list)):
                got = list(ret)
            else:
                got = [ret]
            # Without out args (only inout) the return value is ignored.
            if outs_args and len(got) != len(outs_args):
                raise Failure(WRONG_RESULT, "%s%s returned %s; the contract has %d out argument%s (%s)"
                              % (self.prefix, self.entry, _describe_return(ret), len(outs_args),
                                 "" if len(outs_args) == 1 else "s", ", ".join(a.name for a in outs_args)))
            for a, t in zip(outs_args, got):
                self.job.validate_output(t, a.name, a.dtype, a.shape, inputs, list(outs.items()), self.prefix)
                outs[a.name] = t
        for a in self.args:
            if a.role == "inout":
                outs[a.name] = values[a.name]
        return outs


def _describe_return(ret):
    if isinstance(ret, (tuple, list)):
        return "a %s of %d" % (type(ret).__name__, len(ret))
    if ret is None:
        return "None"
    return "one %s" % type(ret).__name__


class TensorJob(Job):
    """Kinds torch, torch_cuda and triton: the argument contract of docs/job-spec.md."""

    def run(self):
        req = self.req
        self.args = [Arg(d, i) for i, d in enumerate(req.get("args") or [])]
        self.blob_files = req.get("blob_files") or {}
        self.uploads = {}
        for a in self.args:
            if a.tensor and a.init and a.init.get("kind") == "blob":
                self.uploads[a.name] = self.load_blob(a.init, a, "input")
        self.expected = {}
        for name, ref in (req.get("expected") or {}).items():
            arg = next((a for a in self.args if a.name == name and a.role in ("out", "inout")), None)
            if arg is None:
                raise Failure(REJECTED, "expected output '%s' is not an out or inout argument" % name)
            self.expected[name] = self.load_blob(ref if isinstance(ref, dict) else {"path": ref}, arg,
                                                 "expected output")
        c = req.get("correctness") or {}
        seed = c.get("seed")
        self.seed_secret = bool(c.get("seed_secret", False)) or seed is None
        self.seed = int(seed) & M64 if seed is not None else int.from_bytes(os.urandom(8), "little")
        self.setup_device()

        t0 = _perf_ns()
        self.candidate = Callee(self, req.get("candidate") or {}, "candidate", "candidate", self.args)
        ref_spec = req.get("reference")
        self.reference = None
        if ref_spec:
            self.reference = Callee(self, ref_spec, "reference", "reference", self.args)
        self.result["load_ms"] = (_perf_ns() - t0) / 1e6
        self.result["compiled"] = True
        self.result["versions"].update(_loaded_versions())
        self.set_phase("init")
        self.reassert_stream()
        self.candidate.construct()
        self.check_modes("the candidate module ")
        if self.reference is not None:
            self.reference.construct()
        self.reassert_stream()

        ref_kind = "kernel" if self.reference else ("expected" if self.expected else "none")
        corr = {"passed": False, "trials": self.trials, "reference": ref_kind, "seed_secret": self.seed_secret,
                "checks": self.checks, "guards": self.guards}
        self.result["correctness"] = corr
        if ref_kind == "none":
            self.warn("no reference: only unwritten outputs and writes to inputs are checked")
        if self.expected and any(a.tensor and a.role in ("in", "inout") and a.name not in self.uploads
                                 for a in self.args):
            self.warn("expected outputs with generated inputs: the inputs change with the seed, the expected "
                      "data does not")
        self.set_phase("correctness")
        if not self.seed_secret:
            corr["seeds"] = [(self.seed + k) & M64 for k in range(self.trials)]
        self.guards.extend(self.guard_names())
        last = None
        try:
            for k in range(self.trials):
                last = self.check((self.seed + k) & M64, "trial %d" % k)
        finally:
            corr["outputs"] = self.checks[-1].get("outputs", {}) if self.checks else {}

        if self.timing["enabled"]:
            self.set_phase("timing")
            self.time_phases(last)
            if self.check_after_timing:
                self.set_phase("after_timing")
                s = (self.seed + self.trials) & M64
                try:
                    last = self.check(s, "after timing")
                except Failure as f:
                    corr["after_timing"] = {"passed": False}
                    if not self.seed_secret:
                        corr["after_timing"]["seed"] = s
                    corr["outputs"] = self.checks[-1].get("outputs", {})
                    f.message = "after timing: " + f.message
                    raise
                corr["after_timing"] = {"passed": True}
                if not self.seed_secret:
                    corr["after_timing"]["seed"] = s
                corr["outputs"] = self.checks[-1]["outputs"]
                self.guards.append("re-checked after timing on new inputs")
        corr["passed"] = True
        self.save_outputs(self.saved, set(a.name for a in self.args if a.role in ("out", "inout")))
        self.result["status"]["phase"] = "timing" if self.timing["enabled"] else "correctness"

    def guard_names(self):
        g = ["candidate ran first on fresh inputs"]
        if any(a.tensor and a.role in ("in", "inout") and a.name not in self.uploads for a in self.args):
            g.append("fresh inputs every trial")
        if any(a.role == "in" for a in self.args):
            g.append("inputs unchanged")
        if self.candidate.kind == "triton":
            g.append("outputs poisoned before every call")
        else:
            g.append("outputs are plain dense tensors sharing no memory")
        if self.reference is not None:
            g.append("reference outputs poisoned before release")
        return g

    # -- inputs --

    def load_blob(self, ref, arg, what):
        """A CPU tensor from an uploaded blob (npy, safetensors, raw); rejected if it does not fit."""
        who = "%s '%s'" % (what, arg.name)
        path = ref.get("path")
        h = ref.get("blob") or ref.get("hash")
        if path is None:
            if not h or h not in self.blob_files:
                raise Failure(REJECTED, "%s: blob %s was not provided" % (who, h))
            path = self.blob_files[h]
        fmt = ref.get("format") or "npy"
        try:
            with _open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise Failure(INFRA_ERROR, "%s: cannot read %s: %s" % (who, path, e))
        try:
            if fmt == "npy":
                dtype, shape, payload = parse_npy(data)
            elif fmt == "safetensors":
                dtype, shape, payload = parse_safetensors(data, ref.get("tensor") or "", arg.name)
            elif fmt == "raw":
                need = DTYPES[arg.dtype][1] * math.prod(arg.shape)
                if len(data) != need:
                    raise ValueError("raw data is %d bytes; %s %s needs %d"
                                     % (len(data), _index_str(arg.shape), arg.dtype, need))
                dtype, shape, payload = arg.dtype, list(arg.shape), data
            else:
                raise ValueError("unknown blob format '%s'" % fmt)
        except ValueError as e:
            raise Failure(REJECTED, "%s: %s" % (who, e))
        if dtype != arg.dtype:
            raise Failure(REJECTED, "%s has dtype %s; the contract says %s" % (who, dtype, arg.dtype))
        if shape != list(arg.shape):
            raise Failure(REJECTED, "%s has shape %s; the contract says %s"
                          % (who, _index_str(shape), _index_str(arg.shape)))
        return tensor_from_bytes(payload, dtype, shape)

    def generate(self, a, seed):
        """Input `a` for the check with `seed`, generated on the device (docs/job-spec.md, "init")."""
        dev = self.device
        if a.name in self.uploads:
            return K.to(K.clone(self.uploads[a.name]), dev)
        init = a.init or {}
        kind = init.get("kind") or ("uniform" if a.kind == "f" else "int")
        td = K.dtypes[a.dtype]
        g = K.Generator(device=dev)
        g.manual_seed(arg_seed(seed, a.index))
        shape = a.shape
        lo_r, hi_r = INT_RANGE.get(a.dtype, (None, None))
        if kind == "const":
            v = _num(init, "value", "a", default=0)
            v = float(v) if a.kind == "f" else (bool(v) if a.kind == "b" else int(v))
            return K.full(shape, v, dtype=td, device=dev)
        if kind == "uniform":
            lo = float(_num(init, "low", "a", default=-1.0))
            hi = float(_num(init, "high", "b", default=1.0))
            if a.kind == "f":
                work = K.float64 if a.dtype == "f64" else K.float32
                u = K.rand(shape, generator=g, dtype=work, device=dev)
                t = K.to(K.add(K.mul(u, hi - lo), lo), td)
                # Rounding to the dtype may reach `high`: keep the interval half-open.
                return K.masked_fill_(t, K.le(K.full(shape, hi, dtype=td, device=dev), t), lo)
            if a.kind == "b":
                return K.to(K.randint(0, 2, shape, generator=g, device=dev, dtype=K.int64), td)
            ilo = max(int(math.ceil(lo)), lo_r)
            ihi = min(max(int(math.ceil(hi)), ilo + 1), hi_r + 1)
            return K.to(K.randint(ilo, ihi, shape, generator=g, device=dev, dtype=K.int64), td)
        if kind == "normal":
            mean = float(_num(init, "mean", "a", default=0.0))
            std = float(_num(init, "std", "b", default=1.0))
            if a.kind == "b":
                return K.to(K.randint(0, 2, shape, generator=g, device=dev, dtype=K.int64), td)
            work = K.float64 if a.dtype == "f64" else K.float32
            x = K.add(K.mul(K.randn(shape, generator=g, dtype=work, device=dev), std), mean)
            if a.kind == "f":
                return K.to(x, td)
            return K.to(K.clamp(K.round(x), lo_r, hi_r), td)
        if kind == "int":
            lo = _num(init, "low", "a")
            hi = _num(init, "high", "b")
            if lo is None or hi is None:
                lo, hi = (0, 1) if a.kind == "b" else ((0, 100) if a.dtype == "u8" else (-100, 100))
            lo, hi = int(lo), int(hi)
            if lo_r is not None:
                lo, hi = max(lo, lo_r), min(hi, hi_r)
            if hi < lo:
                hi = lo
            return K.to(K.randint(lo, hi + 1, shape, generator=g, device=dev, dtype=K.int64), td)
        raise Failure(INFRA_ERROR, "bad request: args[%d].init.kind %r" % (a.index, kind))

    def make_values(self, seed):
        values = {}
        with _NoTorchFunction():
            for a in self.args:
                if a.role == "scalar":
                    values[a.name] = a.value
                elif a.role in ("in", "inout"):
                    values[a.name] = self.generate(a, seed)
        return values

    # -- one check --

    def check(self, seed, label):
        """One correctness check on fresh inputs; returns (candidate outputs, candidate values)."""
        report = {"label": label, "passed": False}
        if not self.seed_secret:
            report["seed"] = seed
        self.checks.append(report)
        try:
            return self._check(seed, report)
        except Failure as f:
            report["error"] = f.message
            raise

    def _check(self, seed, report):
        # The candidate's input tensors are the same objects in every check and in timing; each check
        # writes its fresh data into them. A cache keyed by address or object identity therefore
        # returns the previous check's answer and fails (as the kernel engine's fixed buffers do).
        fresh = self.make_values(seed)
        if self.inputs is None:
            self.inputs = fresh
        else:
            with _NoTorchFunction():
                for a in self.args:
                    if a.role in ("in", "inout"):
                        K.copy_(self.inputs[a.name], fresh[a.name])
        del fresh
        values = dict(self.inputs)
        ref_values = None
        if self.reference is not None:
            ref_values = {k: _clone_value(v) for k, v in values.items()}
        pristine = {a.name: K.clone(values[a.name]) for a in self.args if a.role == "in"}
        self.candidate.prepare_outputs(values)
        self.reassert_stream()
        outs = self.candidate.call(values)
        self.check_modes("the candidate ")
        for a in self.args:
            if a.role == "in" and not bits_equal(values[a.name], pristine[a.name]):
                raise Failure(WRONG_RESULT, "kernel wrote to input '%s' (declared in)" % a.name)
        del pristine
        if self.reference is not None:
            self.reference.prepare_outputs(ref_values, persistent=False)
            try:
                refs = self.reference.call(ref_values)
            except Failure as f:
                if f.cls == WRONG_RESULT:  # the reference broke the contract, not the candidate
                    f.cls = REJECTED
                raise
        elif self.expected:
            refs = {n: K.to(t, self.device) for n, t in self.expected.items()}
        else:
            refs = None
        reports = {}
        problem = ""
        for a in self.args:
            if a.role not in ("out", "inout"):
                continue
            poisoned = a.dtype if (self.candidate.kind == "triton" and a.role == "out") else None
            if refs is None:
                if poisoned is None or a.kind not in ("f", "b"):
                    continue
                rep, msg = self_check_unwritten(a.name, outs[a.name], a.dtype)
            elif a.name not in refs:
                continue
            else:
                rep, msg, const = compare_output(a.name, outs[a.name], refs[a.name], a.atol, a.rtol, self.nan_equal,
                                                 poisoned)
                if const is not None:
                    self.warn("reference output '%s' is constant (every element is %s): the check cannot tell right "
                              "from wrong" % (a.name, _json_dumps(_jsonable(const))))
            reports[a.name] = rep
            if msg and not problem:
                problem = msg
        report["outputs"] = reports
        if self.reference is not None:
            for t in list(refs.values()) + [v for v in ref_values.values() if isinstance(v, K.Tensor)]:
                nan_fill_(t)
            del refs, ref_values
            self.release_cuda_memory()
        if problem:
            raise Failure(WRONG_RESULT, problem, first_mismatches=_first_of(reports))
        report["passed"] = True
        # What `outputs` asks for, as this check left it (timing may overwrite the buffers later).
        self.saved = {n: K.clone(outs[n]) for n in (self.req.get("outputs") or []) if n in outs}
        return outs, values

    # -- timing --

    def time_phases(self, last):
        clock = Clock(self)
        cand_values = last[1]
        timing = {}
        self.result["timing"] = timing
        # The reference's own copies, taken before the candidate is timed (inout data keeps changing).
        ref_values = None
        if self.reference is not None:
            ref_values = {k: _clone_value(v) for k, v in cand_values.items()}
            self.reference.prepare_outputs(ref_values, persistent=False)
        pos = self.candidate.positional(cand_values)
        obj = self.candidate.obj
        bump = _version_bumper(pos)
        self.reassert_stream()
        timing["candidate"] = clock.measure(lambda: (bump(), obj(*pos))[1], self.timing, "cand", "")
        if self.reference is not None:
            rpos = self.reference.positional(ref_values)
            robj = self.reference.obj
            rbump = _version_bumper(rpos)
            self.reassert_stream()
            timing["reference"] = clock.measure(lambda: (rbump(), robj(*rpos))[1], self.timing, "ref", "reference: ")
            cm, rm = timing["candidate"]["median_ms"], timing["reference"]["median_ms"]
            timing["speedup"] = rm / cm if cm > 0 else None
            for v in ref_values.values():
                if isinstance(v, K.Tensor):
                    nan_fill_(v)
            del ref_values
        clock = None
        self.release_cuda_memory()

    def save_outputs(self, outs, known):
        names = self.req.get("outputs") or []
        if not names:
            return
        out_dir = self.req.get("output_dir")
        if not out_dir:
            raise Failure(INFRA_ERROR, "bad request: outputs without output_dir")
        os.makedirs(out_dir, exist_ok=True)
        saved = {}
        for name in names:
            if name not in known:
                self.warn("output '%s' is not an out or inout argument; not saved" % name)
                continue
            saved[name] = save_npy(self, out_dir, name, outs[name])
        self.result["outputs"] = saved


def _first_of(reports):
    for name, r in reports.items():
        if r.get("mismatches") or r.get("unwritten"):
            return {"output": name, "first_mismatches": r.get("first_mismatches", [])}
    return None


def save_npy(job, out_dir, name, t):
    import numpy
    with _NoTorchFunction():
        host = K.cpu(K.detach(t))
        if K.dtype_of(host) == K.torch.bfloat16:
            job.warn("output '%s' is bf16, saved as float32 (numpy has no bf16)" % name)
            host = K.float(host)
        arr = K.numpy(K.contiguous(host))
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)
    path = os.path.join(out_dir, safe + ".npy")
    numpy.save(path, arr, allow_pickle=False)
    return path


def _loaded_versions():
    v = {}
    tr = sys.modules.get("triton")
    if tr is not None:
        v["triton"] = getattr(tr, "__version__", None)
    return v


# --- kind kernelbench -----------------------------------------------------------------------------

class KernelBenchJob(Job):
    """KernelBench's eval_kernel_against_ref, with Assay's anti-cheat and clocks.

    Seeding as KernelBench: torch.manual_seed(seed) (+ cuda) before get_init_inputs() and before each
    model's construction; correctness trial seeds drawn with torch.randint(0, 2**32 - 1) after
    torch.manual_seed(seed); each trial seeds with its trial seed before get_inputs(). Differences
    (docs/python-kinds.md): the candidate runs first; each model's forward is preceded by the trial
    seed (so random ops see the same state); models are not cast to a precision.
    """

    def run(self):
        req = self.req
        c = req.get("correctness") or {}
        seed = c.get("seed")
        self.seed = KERNELBENCH_SEED if seed is None else int(seed)
        tol = c.get("tolerance") or {}
        # None: KernelBench's per-precision default, chosen per output by its dtype.
        self.atol = c.get("atol", tol.get("atol"))
        self.rtol = c.get("rtol", tol.get("rtol"))
        self.atol = None if self.atol is None else float(self.atol)
        self.rtol = None if self.rtol is None else float(self.rtol)
        self.num_trials = int(req.get("num_trials") or 100)
        self.timing["min_samples"] = max(1, self.num_trials)
        self.timing["max_samples"] = max(self.timing["max_samples"], self.timing["min_samples"])
        self.metadata = {}
        self.kb = {"compiled": False, "correctness": False, "runtime": -1.0, "runtime_stats": {},
                   "ref_runtime": -1.0, "speedup": None, "metadata": self.metadata}
        self.result["kernelbench"] = self.kb
        self.setup_device()
        self.metadata["hardware"] = self.hardware
        self.metadata["device"] = str(self.device)
        try:
            self._run()
        except Failure as f:
            self._note_failure(f)
            raise

    def _note_failure(self, f):
        md = self.metadata
        if f.cls == COMPILE_ERROR and f.extra.get("compiled") is False:
            self.kb["compiled"] = False  # the import failed, or Triton failed to compile at the first call
        if f.cls == COMPILE_ERROR and not self.kb["compiled"]:
            md["compilation_error_name"] = f.extra.get("exception", "")
            md["compilation_error"] = f.message
        elif f.cls == RUNTIME_ERROR:
            md["runtime_error"] = f.message
            md["runtime_error_name"] = f.extra.get("exception", "")
            if f.detail:
                md["runtime_error_traceback"] = f.detail
        elif f.cls in (WRONG_RESULT, REJECTED):
            md.setdefault("correctness_issue", f.message)

    def _run(self):
        req = self.req
        cand_spec = req.get("candidate") or {}
        prob_spec = req.get("problem") or {}
        t0 = _perf_ns()
        cand_mod = import_user_module("candidate", cand_spec.get("path"), "candidate")
        self.kb["compiled"] = True
        prob_mod = import_user_module("problem", prob_spec.get("path"), "problem")
        self.result["load_ms"] = (_perf_ns() - t0) / 1e6
        self.result["compiled"] = True
        self.result["versions"].update(_loaded_versions())
        cand_label = os.path.basename(str(cand_spec.get("path")))
        prob_label = os.path.basename(str(prob_spec.get("path")))
        ModelNew = _entry(cand_mod, cand_spec.get("entry") or "ModelNew", "candidate", cand_label)
        Model = _entry(prob_mod, prob_spec.get("entry") or "Model", "problem", prob_label)
        get_inputs = _entry(prob_mod, "get_inputs", "problem", prob_label)
        get_init_inputs = _entry(prob_mod, "get_init_inputs", "problem", prob_label)
        self.check_modes("the candidate module ")

        self.set_phase("init")
        self.reassert_stream()
        self.set_seed(self.seed)
        init_inputs = self.call_user("problem: ", get_init_inputs)
        init_inputs = self._to_device(self._as_list(init_inputs, "get_init_inputs()"))
        _bind_check(ModelNew, init_inputs, "ModelNew")
        _bind_check(Model, init_inputs, "problem: Model")
        # The candidate is built first: no reference object exists while its code runs.
        self.set_seed(self.seed)
        cand = self.call_user("", ModelNew, *init_inputs)
        cand = self._to_dev_model(cand, "")
        self.set_seed(self.seed)
        ref = self.call_user("problem: ", Model, *init_inputs)
        ref = self._to_dev_model(ref, "problem: ")
        self.reassert_stream()

        # KernelBench's trial seeds; one more draw for the re-check after timing.
        K.manual_seed(self.seed)
        seeds = [int(K.item(K.randint(0, 2 ** 32 - 1, (1,)))) for _ in range(self.trials + 1)]
        corr = {"passed": False, "trials": self.trials, "reference": "kernel", "seed_secret": False,
                "seeds": seeds[:self.trials], "checks": self.checks, "guards": self.guards}
        self.result["correctness"] = corr
        self.set_phase("correctness")
        passes = 0
        first_problem = None
        self.guards.extend(["candidate ran first on fresh inputs", "fresh inputs every trial", "inputs unchanged",
                            "outputs are plain dense tensors sharing no memory",
                            "reference outputs poisoned before release"])
        try:
            for k in range(self.trials):
                ok, problem, _ = self.check(cand, ref, get_inputs, seeds[k], "trial %d" % k)
                if ok:
                    passes += 1
                elif first_problem is None:
                    first_problem = problem
        finally:
            corr["outputs"] = self.checks[-1].get("outputs", {}) if self.checks else {}
        self.metadata["correctness_trials"] = "(%d / %d)" % (passes, self.trials)
        if first_problem is not None:
            self.metadata["correctness_issue"] = "Output mismatch"
            raise first_problem
        self.kb["correctness"] = True

        if self.timing["enabled"]:
            self.set_phase("timing")
            self.time_models(cand, ref, get_inputs)
            if self.check_after_timing:
                self.set_phase("after_timing")
                ok, problem, _ = self.check(cand, ref, get_inputs, seeds[self.trials], "after timing")
                corr["after_timing"] = {"passed": ok, "seed": seeds[self.trials]}
                corr["outputs"] = self.checks[-1].get("outputs", {})
                if not ok:
                    self.kb["correctness"] = False
                    problem.message = "after timing: " + problem.message
                    self.metadata["correctness_issue"] = problem.message
                    raise problem
                self.guards.append("re-checked after timing on new inputs")
        corr["passed"] = True
        self.result["status"]["phase"] = "timing" if self.timing["enabled"] else "correctness"

    def set_seed(self, seed):
        K.manual_seed(seed)
        if self.cuda:
            K.cuda_manual_seed(seed)

    def _as_list(self, v, what):
        if isinstance(v, (list, tuple)):
            return list(v)
        raise Failure(REJECTED, "problem: %s returned %s; it must return a list" % (what, type(v).__name__))

    def _to_device(self, values):
        return [K.to(v, self.device) if isinstance(v, K.Tensor) else v for v in values]

    def _to_dev_model(self, m, who):
        if hasattr(m, "to") and callable(m.to):
            m = self.call_user(who, m.to, self.device) or m
        if not callable(m):
            raise Failure(REJECTED, "%sthe model is a %s, which cannot be called" % (who, type(m).__name__))
        return m

    def make_inputs(self, get_inputs, seed):
        """get_inputs() after set_seed(seed), on the device, written into the tensors of the previous
        call when they match (same objects every trial: see TensorJob._check)."""
        self.set_seed(seed)
        vals = self._to_device(self._as_list(self.call_user("problem: ", get_inputs), "get_inputs()"))
        old = self.inputs
        same = old is not None and len(old) == len(vals) and all(
            (isinstance(o, K.Tensor) and isinstance(v, K.Tensor) and type(o) is type(v) and _shape(o) == _shape(v)
             and K.dtype_of(o) == K.dtype_of(v) and K.device_of(o) == K.device_of(v))
            or (not isinstance(o, K.Tensor) and not isinstance(v, K.Tensor)) for o, v in zip(old, vals))
        if not same:
            self.inputs = vals
            return list(vals)
        with _NoTorchFunction():
            for i, (o, v) in enumerate(zip(old, vals)):
                if isinstance(o, K.Tensor):
                    K.copy_(o, v)
                else:
                    old[i] = v
        return list(old)

    @staticmethod
    def _outputs(ret):
        if isinstance(ret, (tuple, list)):
            return [("output[%d]" % i, t) for i, t in enumerate(ret)]
        return [("output", ret)]

    def check(self, cand, ref, get_inputs, seed, label):
        """One trial: returns (passed, Failure or None, candidate outputs). Errors other than a value
        mismatch (exceptions, anti-cheat, shapes) raise, as KernelBench stops on them."""
        report = {"label": label, "passed": False, "seed": seed}
        self.checks.append(report)
        try:
            return self._check(cand, ref, get_inputs, seed, report)
        except Failure as f:
            report["error"] = f.message
            raise

    def _check(self, cand, ref, get_inputs, seed, report):
        inputs = self.make_inputs(get_inputs, seed)
        ref_inputs = [_clone_value(v) for v in inputs]
        pristine = [_clone_value(v) for v in inputs]
        names = ["inputs[%d]" % i for i in range(len(inputs))]
        self.reassert_stream()
        self.set_seed(seed)
        ret = self.call_user("", cand, *inputs)
        self.check_modes("the candidate ")
        cand_outs = self._outputs(ret)
        written = [n for n, v, p in zip(names, inputs, pristine) if isinstance(v, K.Tensor) and not bits_equal(v, p)]
        self.set_seed(seed)
        ref_ret = self.call_user("problem: ", ref, *ref_inputs)
        ref_outs = self._outputs(ref_ret)
        ref_written = [n for n, v, p in zip(names, ref_inputs, pristine)
                       if isinstance(v, K.Tensor) and not bits_equal(v, p)]
        if written:
            if not ref_written:
                raise Failure(WRONG_RESULT, "kernel wrote to input '%s' (the reference Model does not)" % written[0])
            self.warn("the reference Model writes to its inputs too (%s): writes to inputs are not checked"
                      % ", ".join(ref_written))
        for name, t in ref_outs:
            if not isinstance(t, K.Tensor):
                raise Failure(REJECTED, "problem: Model returned a %s as %s; Assay compares tensors"
                              % (type(t).__name__, name))
        if len(cand_outs) != len(ref_outs) or isinstance(ret, (tuple, list)) != isinstance(ref_ret, (tuple, list)):
            raise Failure(WRONG_RESULT, "ModelNew returned %s; the reference Model returned %s"
                          % (_describe_return(ret), _describe_return(ref_ret)))
        inputs_named = list(zip(names, inputs))
        # A problem whose Model returns a view of its input (a reshape, say) allows the same of ModelNew.
        ref_alias = [n for _, r in ref_outs for n, ri in zip(names, ref_inputs)
                     if isinstance(ri, K.Tensor) and _shares_memory(r, ri)]
        if ref_alias:
            self.warn("the reference Model returns memory of its input %s: outputs sharing memory with inputs are "
                      "not checked" % ref_alias[0])
            inputs_named = []
        done = []
        for (name, t), (_, r) in zip(cand_outs, ref_outs):
            self.validate_output(t, name, _dtype_name(r), _RefShape(_shape(r)), inputs_named, done)
            done.append((name, t))
        reports = {}
        problem = None
        for (name, t), (_, r) in zip(cand_outs, ref_outs):
            kb_tol = KERNELBENCH_TOLERANCE.get(_dtype_name(r), 0.0)
            atol = kb_tol if self.atol is None else self.atol
            rtol = kb_tol if self.rtol is None else self.rtol
            rep, msg, const = compare_output(name, t, r, atol, rtol, self.nan_equal)
            if const is not None:
                self.warn("reference output '%s' is constant (every element is %s): the check cannot tell right "
                          "from wrong" % (name, _json_dumps(_jsonable(const))))
            reports[name] = rep
            if msg and problem is None:
                problem = Failure(WRONG_RESULT, msg, first_mismatches=_first_of({name: rep}))
                with _NoTorchFunction():
                    diff = K.abs(K.sub(K.to(t, K.float64), K.to(r, K.float64)))
                    self.metadata.setdefault("max_difference", []).append("%.6f" % float(K.item(K.max(diff))))
                    self.metadata.setdefault("avg_difference", []).append(
                        "%.6f" % float(K.item(K.div(K.sum(diff), max(1, K.numel(diff))))))
        report["outputs"] = reports
        for _, r in ref_outs:
            nan_fill_(r)
        for v in ref_inputs:
            if isinstance(v, K.Tensor):
                nan_fill_(v)
        del ref_outs, ref_ret, ref_inputs, pristine
        self.release_cuda_memory()
        if problem is not None:
            report["error"] = problem.message
            return False, problem, cand_outs
        report["passed"] = True
        return True, None, cand_outs

    def time_models(self, cand, ref, get_inputs):
        # As KernelBench: the timed inputs come from get_inputs() after set_seed(seed).
        inputs = self.make_inputs(get_inputs, self.seed)
        ref_inputs = [_clone_value(v) for v in inputs]
        clock = Clock(self)
        timing = {}
        self.result["timing"] = timing
        seed = self.seed

        bump, rbump = _version_bumper(inputs), _version_bumper(ref_inputs)

        def run_cand():
            bump()
            return cand(*inputs)

        def run_ref():
            rbump()
            return ref(*ref_inputs)

        self.reassert_stream()
        self.set_seed(seed)
        timing["candidate"] = clock.measure(run_cand, self.timing, "cand", "")
        self.reassert_stream()
        self.set_seed(seed)
        timing["reference"] = clock.measure(run_ref, self.timing, "ref", "problem: ")
        c, r = timing["candidate"], timing["reference"]
        timing["speedup"] = r["median_ms"] / c["median_ms"] if c["median_ms"] > 0 else None
        self.kb["runtime"] = _round3(c["mean_ms"])
        self.kb["runtime_stats"] = self._kb_stats(c)
        self.kb["ref_runtime"] = _round3(r["mean_ms"])
        self.kb["ref_runtime_stats"] = self._kb_stats(r)
        self.kb["speedup"] = _round3(r["mean_ms"] / c["mean_ms"]) if c["mean_ms"] > 0 else None
        for v in ref_inputs:
            if isinstance(v, K.Tensor):
                nan_fill_(v)
        self.release_cuda_memory()

    def _kb_stats(self, t):
        """KernelBench's get_timing_stats: mean, population std, min, max (3 significant digits)."""
        v = t["samples_ms"]
        mean = sum(v) / len(v)
        std = math.sqrt(sum((x - mean) ** 2 for x in v) / len(v))
        return {"mean": _round3(mean), "std": _round3(std), "min": _round3(min(v)), "max": _round3(max(v)),
                "num_trials": len(v), "hardware": self.hardware, "device": str(self.device)}


# --- prepare --------------------------------------------------------------------------------------

def run_prepare(req, result):
    """Imports the user modules with no GPU visible, so top-level load_inline builds run (on the CPU
    compile pool). Models are never constructed here."""
    ext_dir = os.environ.get("TORCH_EXTENSIONS_DIR", "")
    t0 = _perf_ns()
    prep = {"duration_ms": 0.0, "extensions": []}
    result["prepare"] = prep
    result["status"]["phase"] = "prepare"
    kind = req.get("kind")
    modules = [("candidate", req.get("candidate"), "candidate")]
    if kind == "kernelbench":
        modules.append(("problem", req.get("problem"), "problem"))
    elif req.get("reference") and (req["reference"].get("kind") or kind) in ("torch", "torch_cuda", "triton"):
        modules.append(("reference", req.get("reference"), "reference"))
    try:
        for name, spec, who in modules:
            if not spec:
                continue
            try:
                import_user_module(name, spec.get("path"), who)
            except Failure as f:
                text = (f.message or "") + (f.detail or "")
                if any(m in text for m in NO_GPU_MARKERS):
                    # Code that needs a GPU at import cannot be prepared here; the worker imports it
                    # (and builds what it builds) on the GPU.
                    prep["deferred"] = True
                    result["warnings"].append("%s needs a GPU at import; its build (if any) runs on the worker: %s"
                                              % (who, f.message))
                    continue
                raise
        result["compiled"] = True
    finally:
        prep["duration_ms"] = (_perf_ns() - t0) / 1e6
        prep["extensions"] = _built_extensions(ext_dir)
        result["versions"].update(_loaded_versions())


def _built_extensions(root):
    if not root or not os.path.isdir(root):
        return []
    names = []
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        if os.path.isdir(d) and any(f.endswith(".so") for f in os.listdir(d)):
            names.append(name)
    return names


# --- main -----------------------------------------------------------------------------------------

def _usage():
    sys.stderr.write("usage: assay_harness.py run|prepare --request REQUEST.json --result RESULT.json\n"
                     "       assay_harness.py standby   (then {\"mode\",\"request\",\"result\"} on stdin)\n"
                     "       assay_harness.py --probe\n")
    return 2


def parse_argv(argv):
    if len(argv) != 5 or argv[0] not in ("run", "prepare"):
        return None
    opts = {}
    for i in (1, 3):
        if argv[i] not in ("--request", "--result"):
            return None
        opts[argv[i]] = argv[i + 1]
    if set(opts) != {"--request", "--result"}:
        return None
    return argv[0], opts["--request"], opts["--result"]


def run_job(mode, request_path, result):
    try:
        with _open(request_path, "r", encoding="utf-8") as f:
            req = json.load(f)
    except (OSError, ValueError) as e:
        raise Failure(INFRA_ERROR, "cannot read the request %s: %s" % (request_path, e))
    if not isinstance(req, dict) or req.get("v", REQUEST_VERSION) != REQUEST_VERSION:
        raise Failure(INFRA_ERROR, "bad request: not a version %d request object" % REQUEST_VERSION)
    result["kind"] = req.get("kind")
    if mode == "prepare":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before torch initialises CUDA (docs/python-kinds.md)
    torch = capture_torch()
    result["versions"].update({"torch": torch.__version__, "cuda": torch.version.cuda})
    try:
        import numpy
        result["versions"]["numpy"] = numpy.__version__
    except ImportError:
        pass
    cache = req.get("extension_cache")
    ExtensionCache(mode, cache if isinstance(cache, str) else "", result).install()
    if mode == "prepare":
        run_prepare(req, result)
        return
    kind = req.get("kind")
    if kind in ("torch", "torch_cuda", "triton"):
        job = TensorJob(req, result)
    elif kind == "kernelbench":
        job = KernelBenchJob(req, result)
    else:
        raise Failure(REJECTED, "kind %r is not run by the Python harness" % kind)
    job.run()


_PHASE = []  # [name, start ns] of the phase enter_phase is timing
_WARM = {}   # what a standby made before its job: "helpers" -> ((device, stream, l2_bytes), DriverHelpers)


def enter_phase(result, phase):
    """Adds the time since the last call to result.process.phases_ms[<last phase>]; phase None stops."""
    now = _perf_ns()
    times = result["process"].setdefault("phases_ms", {})
    if _PHASE:
        name, start = _PHASE
        times[name] = round(times.get(name, 0.0) + (now - start) / 1e6, 1)
    _PHASE[:] = [phase, now] if phase else []


def execute(mode, request_path, result_path, process):
    """Runs one job and writes its result.json. Returns the exit code (docs/python-kinds.md)."""
    result = {"v": RESULT_VERSION, "status": {"class": OK, "message": "", "phase": "load"},
              "versions": {"python": platform.python_version()}, "compiled": False, "warnings": [],
              "process": process}
    t0 = _perf_ns()
    enter_phase(result, "load")
    try:
        run_job(mode, request_path, result)
    except Failure as f:
        result["status"]["class"] = f.cls
        result["status"]["message"] = f.message
        if f.detail:
            result["status"]["detail"] = f.detail
        for k, v in f.extra.items():
            if k == "compiled":
                result["compiled"] = v
            elif k != "exception":
                result["status"][k] = v
    except _BaseException as e:  # the harness's own fault, unless the GPU reports a user kernel's error
        text = _exception_text(e)
        cuda = _cuda_error_name(text)
        result["status"]["class"] = RUNTIME_ERROR if cuda else INFRA_ERROR
        result["status"]["message"] = _one_line(text) if cuda else "harness: " + _one_line(text)
        result["status"]["detail"] = _tail(_traceback_text(e))
        if cuda:
            result["status"]["cuda_error"] = cuda
    enter_phase(result, None)
    result["duration_ms"] = (_perf_ns() - t0) / 1e6
    try:
        write_json_atomic(result_path, result)
    except _BaseException as e:
        sys.stderr.write("assay_harness: cannot write %s: %s\n" % (result_path, _exception_text(e)))
        return 3
    return 0


def leave(code):
    """Ends the process without the interpreter's teardown, which takes about 0.4 s once torch is loaded
    and the worker would wait for it. The CUPTI record, otherwise written at exit, is written first
    (AssayCuptiFlush); with an older injection library that lacks it, the normal exit writes it."""
    for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            f.flush()
        except Exception:  # noqa: BLE001 - a user's replacement stream; nothing to save
            pass
    path = os.environ.get("CUDA_INJECTION64_PATH", "")
    if path and os.environ.get("ASSAY_CUPTI_OUT"):
        try:
            flush = _CDLL(path).AssayCuptiFlush
        except (OSError, AttributeError):
            return code
        flush.argtypes = []
        flush.restype = None
        flush()
    _os_exit(code)


def _read_job_line(timeout_s):
    """The standby's job: one line on stdin. None at EOF, after timeout_s, or past JOB_LINE_LIMIT."""
    buf = b""
    deadline = time.monotonic() + timeout_s
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        try:
            ready, _, _ = select.select([0], [], [], left)
        except InterruptedError:
            continue
        if not ready:
            return None
        chunk = os.read(0, 4096)
        if not chunk or len(buf) + len(chunk) > JOB_LINE_LIMIT:
            return None
        buf += chunk
    return buf.split(b"\n", 1)[0].decode("utf-8", "replace")


def standby():
    """Prepares for a job that does not exist yet, then runs it (docs/python-kinds.md, "Standby").

    Imports torch, numpy and torch.utils.cpp_extension and captures torch's functions (as run does
    first); with ASSAY_HARNESS_WARM=cuda also creates the CUDA context, loads the helper kernels for an
    L2 of ASSAY_HARNESS_L2_BYTES (the job reuses them when its request names the same size) and imports
    triton when it is installed. Then waits for one line on stdin,
    {"mode": "run", "request": PATH, "result": PATH}, writes `accepted` next to the request, and runs
    that job exactly as `run` would. A
    failure while warming is not reported here: the job meets it again and reports it. With no job
    after ASSAY_HARNESS_IDLE_S seconds (default 600), or at EOF, it exits 0 having run nothing."""
    process = {"standby": True, "pid": os.getpid()}
    try:
        torch = capture_torch()
        try:
            import numpy  # noqa: F401 - imported ahead of the job, as run_job will
        except ImportError:
            pass
        import torch.utils.cpp_extension  # noqa: F401 - the extension cache installs into it (~0.2 s)
        if os.environ.get("ASSAY_HARNESS_WARM") == "cuda":
            torch.cuda.init()
            device = torch.device("cuda", torch.cuda.current_device())
            K.empty((1,), device=device)  # the primary context and torch's allocator
            stream = K.current_stream(device)
            l2 = int(os.environ.get("ASSAY_HARNESS_L2_BYTES") or 0)
            if l2 > 0:  # the helper kernels' PTX is JIT-compiled by the driver when loaded (~0.1-0.3 s)
                _WARM["helpers"] = ((device.index, stream.cuda_stream, l2), DriverHelpers(torch, device, stream, l2))
            K.cuda_sync()
            try:
                import triton  # noqa: F401 - most GPU jobs import it (directly or through torch); ~0.5 s
            except Exception:  # noqa: BLE001 - optional
                pass
    except _BaseException as e:
        process["warm_error"] = _one_line(_exception_text(e), 300)
    ready = _perf_ns()
    process["ready_ms"] = round((ready - _START_NS) / 1e6, 1)
    try:
        idle_s = float(os.environ.get("ASSAY_HARNESS_IDLE_S", STANDBY_IDLE_S))
    except ValueError:
        idle_s = STANDBY_IDLE_S
    line = _read_job_line(idle_s)
    if line is None:
        _os_exit(0)
    process["waited_ms"] = round((_perf_ns() - ready) / 1e6, 1)
    try:
        job = json.loads(line)
    except ValueError:
        job = None
    if (not isinstance(job, dict) or job.get("mode") != "run" or not isinstance(job.get("request"), str)
            or not isinstance(job.get("result"), str)):
        sys.stderr.write("assay_harness: bad job line for standby: %r\n" % line[:300])
        return 2
    # Tells the worker the job reached a live process: a standby that dies before this line (killed
    # while it waited) is replaced and the job run again; after it, the death is the job's.
    try:
        with _open(os.path.join(os.path.dirname(job["request"]), "accepted"), "w") as f:
            f.write("%d\n" % os.getpid())
    except OSError:
        pass
    return leave(execute("run", job["request"], job["result"], process))


def main(argv):
    if argv == ["--probe"]:
        return probe()
    if argv == ["standby"]:
        return standby()
    parsed = parse_argv(argv)
    if parsed is None:
        return _usage()
    mode, request_path, result_path = parsed
    return leave(execute(mode, request_path, result_path, {"standby": False, "pid": os.getpid()}))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
