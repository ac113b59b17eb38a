--[[
mgpu.ffi -- the core interface over LuaJIT's FFI: the same functions, with
the same arguments and errors, as the Lua 5.4 C module (src/lua/lmgpu.c),
so the front end runs unchanged under LuaJIT.

The declarations come from mgpu.cdef, generated at build time from the FFI
block of include/mgpu.h.  libmgpu.so is found through $MGPU_LIB, the path
recorded when mgpu.cdef was generated, next to this file, or the system
library path; its ABI version must match the header's.
]]
local ffi = require "ffi"
local compat = require "mgpu.compat"
compat.mark_lib()
local gen = require "mgpu.cdef"

ffi.cdef(gen.cdef)

local M = { impl = "ffi" }

-- Raise message `code` (mgpu.errmsg) without a position, as the C module
-- does: the front end locates core errors at the script's line.
local function raise(code, ...) error(compat.message(code, ...), 0) end

local function here()
  local src = debug.getinfo(1, "S").source
  return src:sub(1, 1) == "@" and src:match("^@(.*)/[^/]*$") or "."
end

-- Load libmgpu: the first candidate that loads wins.
local function load_lib()
  local tried = {}
  local candidates = { os.getenv("MGPU_LIB") or false, gen.lib or false, here() .. "/libmgpu.so", "mgpu" }
  for _, path in ipairs(candidates) do
    if path and path ~= "" then
      local ok, lib = pcall(ffi.load, path)
      if ok then return lib end
      tried[#tried + 1] = path
    end
  end
  raise("CORE_NOT_LOADED", table.concat(tried, ", "))
end

local lib = load_lib()
M.lib = lib

--- Refuse a library built from another header (the OpenResty pattern).
function M.check_abi(have, want)
  if have ~= want then
    raise("CORE_ABI_MISMATCH", have, want)
  end
end
M.check_abi(lib.mgpu_abi_version(), gen.abi)

-- Handles: a table holding the cdata pointer (released by ffi.gc) and the
-- context that reports its errors.
local Handle = {}
Handle.__index = Handle
local function wrap(ptr, ctx, release)
  ffi.gc(ptr, release)
  return setmetatable({ h = ptr, ctx = ctx or ptr, release = release }, Handle)
end

local function check(st, ctx)
  if st ~= 0 then raise("ENGINE_ERROR", ffi.string(lib.mgpu_errmsg(ctx))) end
end

local function live(x, what)
  if type(x) ~= "table" or getmetatable(x) ~= Handle or x.h == nil then
    raise("NOT_HANDLE", what)
  end
  return x.h
end

local function dtype_of(name)
  local d = lib.mgpu_dtype_from_name(name)
  if d < 0 then raise("CORE_UNKNOWN_DTYPE", tostring(name)) end
  return d
end

local function int64s(t)
  local n = t and #t or 0
  local a = ffi.new("int64_t[?]", n > 0 and n or 1)
  for i = 1, n do a[i - 1] = t[i] end
  return a, n
end

-- -- Module-level ------------------------------------------------------------------

function M.version() return ffi.string(lib.mgpu_version()) end
function M.engine_id() return ffi.string(lib.mgpu_engine_id()) end
function M.abi() return lib.mgpu_abi_version() end
function M.kernel_cache_dir()
  local d = lib.mgpu_kernel_cache_dir()
  return d ~= nil and ffi.string(d) or nil
end

function M.dtype_size(name)
  local d = lib.mgpu_dtype_from_name(name)
  if d < 0 then return nil end
  return lib.mgpu_dtype_size(d)
end

local modes = { auto = 0, gpu = 1, interpret = 2, compile = 3 }
local mode_names = { [0] = "auto", "gpu", "interpret", "compile" }

function M.ctx_new(mode, device)
  local m = modes[mode or "auto"]
  if not m then raise("CTX_MODE") end
  local o = ffi.new("mgpu_ctx_options")
  o.mode = m
  o.device = device or 0
  local out = ffi.new("mgpu_ctx*[1]")
  check(lib.mgpu_ctx_create(o, out), nil)   -- no context yet: the thread's last error
  local h = wrap(out[0], nil, lib.mgpu_ctx_release)
  h.ctx = h.h
  return h
end

function M.device(ctx)
  local c = live(ctx, "context")
  local d = ffi.new("mgpu_device_info")
  check(lib.mgpu_device_query(c, d), c)
  return {
    mode = mode_names[d.mode], sm_count = d.sm_count, cc_major = d.cc_major, cc_minor = d.cc_minor,
    smem_per_block = d.smem_per_block, driver_version = d.driver_version, l2_bytes = d.l2_bytes,
    clock_khz = d.clock_khz, global_mem = tonumber(d.global_mem), name = ffi.string(d.name),
    reason = ffi.string(d.reason), device = d.device, target = d.target,
  }
end

function M.sync(ctx) local c = live(ctx, "context"); check(lib.mgpu_synchronize(c), c) end
function M.empty_cache(ctx) local c = live(ctx, "context"); check(lib.mgpu_empty_cache(c), c) end
function M.ctx_set_timeout(ctx, ms) local c = live(ctx, "context"); check(lib.mgpu_ctx_set_timeout(c, ms), c) end
function M.ctx_lost(ctx) return lib.mgpu_ctx_lost(live(ctx, "context")) ~= 0 end
function M.ctx_recover(ctx) local c = live(ctx, "context"); check(lib.mgpu_ctx_recover(c), c) end
function M.timer_start(ctx) local c = live(ctx, "context"); check(lib.mgpu_timer_start(c), c) end
function M.timer_stop(ctx)
  local c = live(ctx, "context")
  local ms = ffi.new("double[1]")
  check(lib.mgpu_timer_stop(c, ms), c)
  return ms[0]
end
function M.blas_matmul(ctx, dtype, m, n, k, a, b, c, stream)
  local cx = live(ctx, "context")
  check(lib.mgpu_blas_matmul(cx, dtype_of(dtype), m, n, k, live(a, "buffer"), live(b, "buffer"), live(c, "buffer"),
                             stream or 0), cx)
end

function M.blas_matmul_f8(ctx, a_dtype, b_dtype, m, n, k, a, b, c, a_scale, b_scale, stream)
  local cx = live(ctx, "context")
  check(lib.mgpu_blas_matmul_f8(cx, dtype_of(a_dtype), dtype_of(b_dtype), m, n, k, live(a, "buffer"), live(b, "buffer"),
                                live(c, "buffer"), live(a_scale, "buffer"), live(b_scale, "buffer"), stream or 0), cx)
end

-- -- Buffers ---------------------------------------------------------------------------

-- core.buffer(ctx, nbytes) and core.symmetric(ctx, nbytes, name): a buffer
-- from alloc(c, nbytes, out) (name says what a symmetric array is).
local function allocator(what, alloc)
  return function(ctx, nbytes, name)
    local c = live(ctx, "context")
    if nbytes < 0 then raise("NEGATIVE_SIZE", what) end
    local out = ffi.new("mgpu_buffer*[1]")
    check(alloc(c, nbytes, name, out), c)
    return wrap(out[0], c, lib.mgpu_buffer_release)
  end
end
M.buffer = allocator("buffer", function(c, nbytes, _, out) return lib.mgpu_buffer_alloc(c, nbytes, out) end)

function M.buffer_size(b) return tonumber(lib.mgpu_buffer_size(live(b, "buffer"))) end
function M.buffer_address(b) return tonumber(lib.mgpu_buffer_address(live(b, "buffer"))) end

-- Several devices (worlds of simulated devices are joined by the mgpu command only)
function M.world_join() raise("WORLD_JOIN") end
function M.world_leave(ctx) local c = live(ctx, "context"); check(lib.mgpu_world_leave(c), c) end
function M.dist_uid()
  local uid = ffi.new("uint8_t[128]")
  if lib.mgpu_dist_uniqueid(uid, 128) ~= 0 then
    raise("NO_NVSHMEM_UID")
  end
  return ffi.string(uid, 128)
end
function M.dist_init(ctx, rank, count, uid)
  local c = live(ctx, "context")
  check(lib.mgpu_dist_init(c, rank, count, uid, #uid), c)
end
function M.dist_rendezvous(ctx, rendezvous, key, rank, count, timeout_ms, uid)
  local c = live(ctx, "context")
  local buf = ffi.new("uint8_t[128]")
  if uid then ffi.copy(buf, uid, math.min(#uid, 128)) end
  check(lib.mgpu_dist_rendezvous(c, rendezvous, key, rank, count, timeout_ms, buf, 128), c)
  return ffi.string(buf, 128)
end
function M.dist_info(ctx)
  local c = live(ctx, "context")
  local r, n = ffi.new("int32_t[1]"), ffi.new("int32_t[1]")
  check(lib.mgpu_dist_info(c, r, n), c)
  return r[0], n[0]
end
function M.dist_barrier(ctx) local c = live(ctx, "context"); check(lib.mgpu_dist_barrier(c), c) end
M.symmetric = allocator("symmetric", lib.mgpu_symmetric_alloc_named)
function M.buffer_symmetric(b) return lib.mgpu_buffer_symmetric(live(b, "buffer")) end
function M.dist_table(ctx)
  local c = live(ctx, "context")
  local out = ffi.new("mgpu_buffer*[1]")
  check(lib.mgpu_dist_table(c, out), c)
  return wrap(out[0], c, lib.mgpu_buffer_release)
end

local fill_kinds = { value = 0, iota = 1, uniform = 2, normal = 3 }
function M.buffer_fill(b, kind, dtype, count, a, bb, seed)
  local h = live(b, "buffer")
  local f = ffi.new("mgpu_fill")
  f.kind = fill_kinds[kind] or raise("FILL_KIND", tostring(kind))
  f.dtype = dtype_of(dtype)
  f.count = count
  f.a = a or 0
  f.b = bb or 0
  f.seed = seed or 0
  check(lib.mgpu_buffer_fill(h, f), b.ctx)
end

-- Integer dtypes (not pred) travel as exact 64-bit integers: numbers when
-- a double holds them exactly (|v| <= 2^53), else int64_t / uint64_t cdata.
local int_dtypes = { i8 = true, i16 = true, i32 = true, i64 = true, u8 = true, u16 = true, u32 = true, u64 = true }
local EXACT = 2 ^ 53
local i64_t, u64_t = ffi.typeof("int64_t"), ffi.typeof("uint64_t")

local function int_value(v, u64)
  if u64 then
    local u = ffi.cast(u64_t, v)
    return u <= EXACT and tonumber(u) or u
  end
  return (v <= EXACT and v >= -EXACT) and tonumber(v) or v
end

function M.buffer_get(b, dtype, first, count)
  local h = live(b, "buffer")
  if first < 0 or count < 0 then raise("BUFFER_GET_RANGE") end
  local out = {}
  if int_dtypes[dtype] then
    local tmp = ffi.new("int64_t[?]", count > 0 and count or 1)
    check(lib.mgpu_buffer_get_i64(h, dtype_of(dtype), first, count, tmp), b.ctx)
    local u64 = dtype == "u64"
    for i = 1, count do out[i] = int_value(tmp[i - 1], u64) end
    return out
  end
  local tmp = ffi.new("double[?]", count > 0 and count or 1)
  check(lib.mgpu_buffer_get_f64(h, dtype_of(dtype), first, count, tmp), b.ctx)
  local pred = dtype == "pred"
  for i = 1, count do
    local v = tmp[i - 1]
    if pred then out[i] = v ~= 0 else out[i] = v end     -- (pred and v ~= 0 or v) gave 0 for false
  end
  return out
end

-- A 64-bit integer cdata element as the int64_t an integer dtype's element
-- takes (u64: its bit pattern), or nil when it goes as a double.
local function exact_of(v, dtype)
  if type(v) ~= "cdata" or not int_dtypes[dtype] then return nil end
  if ffi.istype(i64_t, v) then return (dtype ~= "u64" or v >= 0) and v or nil end
  if ffi.istype(u64_t, v) and (dtype == "u64" or v < ffi.cast(u64_t, 2 ^ 63)) then
    return ffi.cast(i64_t, v)
  end
  return nil
end

function M.buffer_set(b, dtype, first, t)
  local h = live(b, "buffer")
  if first < 0 then raise("BUFFER_SET_OFFSET") end
  local n = #t
  local dbl, int = ffi.new("double[?]", n > 0 and n or 1), ffi.new("int64_t[?]", n > 0 and n or 1)
  local exact = {}
  for i = 1, n do
    local v = t[i]
    local e = exact_of(v, dtype)
    if e then int[i - 1], exact[i] = e, true
    else
      if type(v) == "boolean" then v = v and 1 or 0 end
      if type(v) == "cdata" then v = tonumber(v) end   -- a 64-bit integer out of the dtype's range: said by set_f64
      if type(v) ~= "number" then raise("CORE_ELEMENT_NOT_NUMBER", i) end
      dbl[i - 1], exact[i] = v, false
    end
  end
  local d = dtype_of(dtype)
  local run = 1   -- runs of elements of one kind, one call each
  for i = 2, n + 1 do
    if i == n + 1 or exact[i] ~= exact[run] then
      if exact[run] then check(lib.mgpu_buffer_set_i64(h, d, first + run - 1, i - run, int + (run - 1)), b.ctx)
      else check(lib.mgpu_buffer_set_f64(h, d, first + run - 1, i - run, dbl + (run - 1)), b.ctx) end
      run = i
    end
  end
end

function M.buffer_copy(dst, doff, src, soff, n)
  local d, s = live(dst, "buffer"), live(src, "buffer")
  if doff < 0 or soff < 0 or n < 0 then raise("BUFFER_COPY_RANGE") end
  check(lib.mgpu_buffer_copy(d, doff, s, soff, n), dst.ctx)
end

-- -- Tracing ---------------------------------------------------------------------------

function M.builder(ctx, opts)
  local c = live(ctx, "context")
  local o = ffi.new("mgpu_kernel_options")
  local name = opts.name
  o.name = name
  local g = opts.grid or {}
  if #g > 8 then raise("CORE_GRID_RANK") end
  o.grid_rank = #g
  for i = 1, #g do o.grid[i - 1] = g[i] end
  local cl = opts.cluster or {}
  if #cl > 3 then raise("CORE_CLUSTER_RANK") end
  o.cluster_rank = #cl
  for i = 1, #cl do o.cluster[i - 1] = cl[i] end
  o.num_threads = opts.num_threads or 1
  o.approx_math = opts.approx_math and 1 or 0
  o.interpret = opts.interpret and 1 or 0
  o.lowering_semantics = opts.lowering_semantics or 0
  o.reduction_scratch_bytes = opts.reduction_scratch_bytes or 0
  o.unsafe_no_auto_barriers = opts.unsafe_no_auto_barriers and 1 or 0
  o.disable_bounds_checks = opts.disable_bounds_checks and 1 or 0
  o.target = opts.target or 0
  local out = ffi.new("mgpu_builder*[1]")
  check(lib.mgpu_builder_create(c, o, out), c)
  return wrap(out[0], c, lib.mgpu_builder_release)
end

function M.loc(b, loc) check(lib.mgpu_builder_set_loc(live(b, "builder"), loc or ""), b.ctx) end

local roles = { ["in"] = 0, out = 1, scalar = 2 }
function M.param(b, role, dtype, shape)
  local h = live(b, "builder")
  local s, rank = int64s(shape)
  local v = ffi.new("int32_t[1]")
  check(lib.mgpu_builder_param(h, roles[role] or 0, dtype_of(dtype), s, rank, v), b.ctx)
  return v[0]
end

local res_buf = ffi.new("int32_t[72]")
local nres_buf = ffi.new("int32_t[1]")
local args_buf = ffi.new("mgpu_op_args")
function M.op(b, name, operands, ints, number, text)
  local h = live(b, "builder")
  local n = operands and #operands or 0
  local o = ffi.new("int32_t[?]", n > 0 and n or 1)
  for i = 1, n do o[i - 1] = operands[i] end
  local iv, ni = int64s(ints)
  args_buf.operands, args_buf.noperands = o, n
  args_buf.ints, args_buf.nints = iv, ni
  args_buf.number = number or 0
  args_buf.text = text
  check(lib.mgpu_builder_op(h, name, args_buf, res_buf, 72, nres_buf), b.ctx)
  local r = {}
  for i = 1, nres_buf[0] do r[i] = res_buf[i - 1] end
  return compat.unpack(r, 1, nres_buf[0])
end

local kinds = { [0] = "scalar", "array", "ref" }
local spaces = { [0] = "none", "gmem", "smem", "regs", "barrier", "tmem" }   -- ORDER mgpu_space
function M.value(b, id)
  local h = live(b, "builder")
  local vi = ffi.new("mgpu_value_info")
  check(lib.mgpu_builder_value(h, id, vi), b.ctx)
  local shape = {}
  for i = 1, vi.rank do shape[i] = tonumber(vi.shape[i - 1]) end
  return kinds[vi.kind], ffi.string(lib.mgpu_dtype_name(vi.dtype)), shape, spaces[vi.space] or "none"
end

function M.finish(b)
  local h = live(b, "builder")
  local out = ffi.new("mgpu_kernel*[1]")
  check(lib.mgpu_builder_finish(h, out), b.ctx)
  return wrap(out[0], b.ctx, lib.mgpu_kernel_release)
end

function M.release(x)
  local h = live(x, "handle")
  ffi.gc(h, nil)
  x.release(h)
  x.h = nil
end

-- -- Kernels -----------------------------------------------------------------------------

function M.compile(k) check(lib.mgpu_kernel_compile(live(k, "kernel")), k.ctx) end

function M.text(k, kind)
  local h = live(k, "kernel")
  local out = ffi.new("const char*[1]")
  check(lib.mgpu_kernel_text(h, kind == "ptx" and 1 or 0, out), k.ctx)
  return ffi.string(out[0])
end

local layout_buf = ffi.new("char[512]")
function M.layout(k, value)
  check(lib.mgpu_kernel_layout(live(k, "kernel"), value, layout_buf, 512), k.ctx)
  return ffi.string(layout_buf)
end

function M.resources(k)
  local h = live(k, "kernel")
  local r = ffi.new("mgpu_kernel_resources")
  check(lib.mgpu_kernel_resources_get(h, r), k.ctx)
  return { registers = r.registers, local_bytes = r.local_bytes, smem_bytes = r.smem_bytes, threads = r.threads,
           compile_ms = r.compile_ms, load_ms = r.load_ms }
end

function M.jit_options(k, max_registers, opt_level)
  check(lib.mgpu_kernel_set_jit_options(live(k, "kernel"), max_registers, opt_level), k.ctx)
end

function M.set_ptx(k, text) check(lib.mgpu_kernel_set_ptx(live(k, "kernel"), text), k.ctx) end

function M.launch(k, args, stream)
  local h = live(k, "kernel")
  local n = #args
  local a = ffi.new("mgpu_arg[?]", n > 0 and n or 1)
  for i = 1, n do
    local x = args[i]
    if type(x) == "number" then a[i - 1].scalar = x
    elseif type(x) == "cdata" and (ffi.istype(i64_t, x) or ffi.istype(u64_t, x)) then   -- exact
      a[i - 1].scalar, a[i - 1].integer, a[i - 1].has_integer = tonumber(x), ffi.cast(i64_t, x), 1
    elseif type(x) == "table" and getmetatable(x) == Handle and x.h ~= nil then a[i - 1].buffer = x.h
    else raise("LAUNCH_BAD_ARGUMENT", i) end
  end
  local la = ffi.new("mgpu_launch_args")
  la.args, la.nargs, la.stream = a, n, stream or 0
  check(lib.mgpu_kernel_launch(h, la), k.ctx)
end

-- -- DLPack ----------------------------------------------------------------------------

function M.dlpack_export(b, dtype, shape)
  local h = live(b, "buffer")
  local s, rank = int64s(shape)
  local out = ffi.new("void*[1]")
  check(lib.mgpu_dlpack_export(h, dtype_of(dtype), s, rank, out), b.ctx)
  return out[0]
end

function M.dlpack_import(ctx, tensor)
  local c = live(ctx, "context")
  local out = ffi.new("mgpu_buffer*[1]")
  local vi = ffi.new("mgpu_value_info")
  check(lib.mgpu_dlpack_import(c, tensor, out, vi), c)
  local shape = {}
  for i = 1, vi.rank do shape[i] = tonumber(vi.shape[i - 1]) end
  return wrap(out[0], c, lib.mgpu_buffer_release), ffi.string(lib.mgpu_dtype_name(vi.dtype)), shape
end

function M.dlpack_free(ctx, tensor)
  local c = live(ctx, "context")
  check(lib.mgpu_dlpack_free(c, tensor), c)
end

-- -- Host arrays -------------------------------------------------------------------------

local host_ops = { add = 0, sub = 1, mul = 2, div = 3, max = 4, min = 5, neg = 6, abs = 7, exp = 8, log = 9,
                   sqrt = 10, tanh = 11, round = 12, sum = 13, mean = 14 }
local function host_op(name)
  local o = host_ops[name]
  if not o then raise("HOST_OP", tostring(name)) end
  return o
end

local function new_host(ptr, ctx) return wrap(ptr, ctx, lib.mgpu_host_release) end

function M.host_new(ctx, shape)
  local c = live(ctx, "context")
  local s, rank = int64s(shape)
  local out = ffi.new("mgpu_host*[1]")
  check(lib.mgpu_host_create(c, s, rank, out), c)
  return new_host(out[0], c)
end

function M.host_download(h, b, dtype) check(lib.mgpu_host_download(live(h, "host array"), live(b, "buffer"), dtype_of(dtype)), h.ctx) end
function M.host_upload(h, b, dtype) check(lib.mgpu_host_upload(live(h, "host array"), live(b, "buffer"), dtype_of(dtype)), h.ctx) end

function M.host_map(name, a, b)
  local ha = live(a, "host array")
  local hb, s = nil, 0
  if type(b) == "table" then hb = live(b, "host array") elseif type(b) == "number" then s = b end
  local out = ffi.new("mgpu_host*[1]")
  check(lib.mgpu_host_map(host_op(name), ha, hb, s, out), a.ctx)
  return new_host(out[0], a.ctx)
end

function M.host_reduce(name, a, axis, keepdims)
  local out = ffi.new("mgpu_host*[1]")
  check(lib.mgpu_host_reduce(host_op(name), live(a, "host array"), axis, keepdims and 1 or 0, out), a.ctx)
  return new_host(out[0], a.ctx)
end

function M.host_slice(a, start, size)
  local out = ffi.new("mgpu_host*[1]")
  check(lib.mgpu_host_slice(live(a, "host array"), start, size, out), a.ctx)
  return new_host(out[0], a.ctx)
end

function M.host_transpose(a)
  local out = ffi.new("mgpu_host*[1]")
  check(lib.mgpu_host_transpose(live(a, "host array"), out), a.ctx)
  return new_host(out[0], a.ctx)
end

function M.host_matmul(a, b)
  local out = ffi.new("mgpu_host*[1]")
  check(lib.mgpu_host_matmul(live(a, "host array"), live(b, "host array"), out), a.ctx)
  return new_host(out[0], a.ctx)
end

function M.host_relerr(a, b)
  local e = ffi.new("double[1]")
  check(lib.mgpu_host_relerr(live(a, "host array"), live(b, "host array"), e), a.ctx)
  return e[0]
end

function M.host_shape(a)
  local h = live(a, "host array")
  local s = {}
  for i = 1, lib.mgpu_host_rank(h) do s[i] = tonumber(lib.mgpu_host_dim(h, i - 1)) end
  return s
end

local function host_count(h)
  local n = 1
  for i = 1, lib.mgpu_host_rank(h) do n = n * tonumber(lib.mgpu_host_dim(h, i - 1)) end
  return n
end

function M.host_get(a, first, count)
  local h = live(a, "host array")
  if first < 0 or count < 0 or first + count > host_count(h) then raise("HOST_RANGE", "host_get") end
  local v = lib.mgpu_host_data(h)
  local out = {}
  for i = 1, count do out[i] = v[first + i - 1] end
  return out
end

function M.host_set(a, first, t)
  local h = live(a, "host array")
  if first < 0 or first + #t > host_count(h) then raise("HOST_RANGE", "host_set") end
  local v = lib.mgpu_host_data(h)
  for i = 1, #t do v[first + i - 1] = t[i] end
end

return M
