--[[
mgpu.kernel -- defining kernels and calling them.  A kernel is traced once
per argument signature (shapes and dtypes), compiled, cached, and launched
on every call; outputs are new arrays.
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local context = require "mgpu.context"
local array = require "mgpu.array"
local trace = require "mgpu.trace"
local smem = require "mgpu.smem"
local profile = require "mgpu.profile"
local distributed = require "mgpu.distributed"

local M = {}
local fail = compat.fail

-- -- Shapes and parameters ----------------------------------------------------

local Shape = {}
Shape.__index = Shape
Shape.__tostring = function(s) return string.format("mgpu.shape(%s, %s)", compat.shape_str(s.shape), s.dtype) end

--- The most dimensions a kernel's arrays may have (the engine's IR_MAXRANK).
M.MAX_RANK = 8

--- The shape and dtype of a kernel output (Pallas' ShapeDtypeStruct).
function M.shape(shape, dtype)
  dtype = context.memory_dtype(dtype, "shape")
  shape = compat.shape(shape, "shape")
  if #shape > M.MAX_RANK then fail("SHAPE_RANK", M.MAX_RANK, #shape) end
  return setmetatable({ shape = shape, dtype = dtype }, Shape)
end

-- Scalar kernel arguments: mgpu.scalar(x, dtype), or a plain number (i32
-- when integer-valued, else f32; under LuaJIT an int64_t/uint64_t cdata is
-- i64).  They reach the body as traced scalars; integers exactly.
local Scalar = {}
Scalar.__index = Scalar
Scalar.__tostring = function(s) return string.format("mgpu.scalar(%s, %s)", tostring(s.value), s.dtype) end

function M.scalar(value, dtype)
  local int64 = compat.is_int64(value)   -- LuaJIT: exact, i64 unless told
  if type(value) ~= "number" and not int64 then fail("SCALAR_NOT_NUMBER", type(value)) end
  dtype = dtype or (int64 and "i64" or compat.is_int(value) and "i32" or "f32")
  if type(dtype) ~= "string" or not context.core.dtype_size(dtype) or dtype == "pred" or dtype:match("^f8") then
    fail("SCALAR_DTYPE", tostring(dtype))
  end
  return setmetatable({ value = value, dtype = dtype }, Scalar)
end
local function as_scalar(x)
  if getmetatable(x) == Scalar then return x end
  if type(x) == "number" or compat.is_int64(x) then return M.scalar(x) end
  return nil
end

local CompilerParams = {}
CompilerParams.__index = CompilerParams
-- Mosaic GPU's fields, Pallas TPU fields with a meaning on Hopper, and mgpu's own.
local known_params = { approx_math = true, lowering_semantics = true, unsafe_no_auto_barriers = true,
                       reduction_scratch_bytes = true, dimension_semantics = true, max_concurrent_steps = true,
                       delay_release = true, profile_space = true, profile_dir = true, profile_trace_scope = true,
                       profile_bounds_check = true,   -- (always so: events past profile_space are dropped)
                       vmem_limit_bytes = true, has_side_effects = true, disable_bounds_checks = true, flags = true }
-- Pallas TPU fields without a meaning on Hopper, and what to use instead.
local tpu_only = {
  allow_input_fusion = "mgpu does not fuse producers into kernel inputs; compute inputs with a kernel first",
  internal_scratch_in_bytes = "use reduction_scratch_bytes (SMEM for cross-warp reductions) or scratch_shapes = { mgpu.SMEM(...) }",
  serialization_format = "kernels are traced to mgpu IR in process; use k:lower(...) for its text and PTX",
  kernel_type = "every mgpu kernel runs on the SMs; use num_threads (warpgroups) and cluster",
  skip_device_barrier = "launches are ordered on one stream; there is no device barrier to skip",
  collective_id = "semaphores need no id: declare them with mgpu.SemaphoreType.REGULAR in scratch_shapes",
  allow_collective_id_without_custom_barrier = "semaphores need no id: declare them with mgpu.SemaphoreType.REGULAR in scratch_shapes",
  disable_semaphore_checks = "semaphores are checked only by the interpreter (back at zero after a launch); there is nothing to turn off",
  shape_invariant_numerics = "mgpu's numerics do not depend on the block shape; leave it out",
  use_tc_tiling_on_sc = "there are no SparseCores; SMEM tiling is chosen with mgpu.SMEM transforms",
  needs_layout_passes = "layouts are inferred with lowering_semantics = \"Warpgroup\" (or chosen with \"Lane\")",
  fuse_transposed_lhs_in_matmul = "transpose an SMEM operand with mgpu.transpose_ref before mgpu.wgmma",
  mosaic_params = "pass mgpu.CompilerParams{...} fields directly",
  device_type = "mgpu targets NVIDIA GPUs: choose sm_90a or sm_100a with mgpu.configure{ target }",
}
local semantics = { Warpgroup = 0, warpgroup = 0, Lane = 1, lane = 1 }
M.LoweringSemantics = { Warpgroup = "Warpgroup", Lane = "Lane" }

-- flags: extra driver JIT (ptxas) options, applied when the PTX is loaded
-- on a GPU.  A list of strings ("--maxrregcount=128", "-O2") or a table
-- { maxrregcount = 128, opt_level = 2 }.  maxrregcount also goes into the
-- PTX as .maxnreg (kernels without setmaxnreg): beside .maxntid, ptxas and
-- the JIT ignore it as an option.
local function parse_flags(f)
  if type(f) ~= "table" then fail("FLAGS_NOT_TABLE") end
  local out = {}
  local function set(name, v, shown)
    local n = tonumber(v)
    if not n or n ~= math.floor(n) then fail("FLAG_NOT_INTEGER", shown, tostring(v)) end
    if name == "maxrregcount" then
      if n < 16 or n > 255 then fail("FLAG_MAXRREGCOUNT", n) end
      out.max_registers = math.floor(n)
    else
      if n < 0 or n > 4 then fail("FLAG_OPT_LEVEL", n) end
      out.opt_level = math.floor(n)
    end
  end
  local supported = "supported: --maxrregcount=N and -O0..-O4 (maxrregcount, opt_level)"
  for k, v in pairs(f) do
    if type(k) == "number" then
      if type(v) ~= "string" then fail("FLAG_NOT_STRING", k, type(v)) end
      local r = v:match("^%-%-?maxrregcount[= ](.+)$")
      local o = v:match("^%-O(%d)$") or v:match("^%-%-opt%-level[= ](.+)$")
      if r then set("maxrregcount", r, v) elseif o then set("opt_level", o, v)
      else fail("UNKNOWN_JIT_OPTION", v, supported) end
    elseif k == "maxrregcount" or k == "max_registers" then set("maxrregcount", v, k)
    elseif k == "opt_level" or k == "optimization_level" then set("opt_level", v, k)
    else fail("UNKNOWN_JIT_OPTION", tostring(k), supported) end
  end
  return out
end

--- Compiler options; unknown names are errors.  lowering_semantics is
--- "Warpgroup" (layouts inferred, the default) or "Lane" (chosen eagerly).
function M.CompilerParams(opts)
  opts = opts or {}
  if type(opts) ~= "table" then fail("PARAMS_NOT_TABLE", type(opts)) end
  for k in pairs(opts) do
    if tpu_only[k] then fail("PARAMS_TPU_ONLY", k, tpu_only[k]) end
    if not known_params[k] then fail("PARAMS_UNKNOWN_FIELD", tostring(k)) end
  end
  local ps, pd = opts.profile_space, opts.profile_dir
  if (ps ~= nil and ps ~= 0) ~= (pd ~= nil and pd ~= "") then
    fail("PROFILE_HALF", (ps ~= nil and ps ~= 0) and "profile_space" or "profile_dir")
  end
  if ps ~= nil and ps ~= 0 then
    ps = compat.int(ps, "CompilerParams: profile_space")
    if ps < 1 then fail("PROFILE_SPACE", ps) end
    if type(pd) ~= "string" then fail("PROFILE_DIR") end
  else
    ps, pd = nil, nil
  end
  local scope = opts.profile_trace_scope
  if scope ~= nil and scope ~= "warpgroup" and scope ~= "warp" then
    fail("PROFILE_SCOPE", compat.describe(scope))
  end
  if scope ~= nil and not ps then fail("PROFILE_SCOPE_ALONE") end
  local vl = opts.vmem_limit_bytes
  if vl ~= nil then
    vl = compat.int(vl, "CompilerParams: vmem_limit_bytes")
    if vl < 0 then fail("NEGATIVE", "CompilerParams: vmem_limit_bytes (the SMEM budget)", vl) end
  end
  local flags = opts.flags ~= nil and parse_flags(opts.flags) or {}
  local ls = opts.lowering_semantics or "Warpgroup"
  if semantics[ls] == nil then fail("LOWERING_SEMANTICS", tostring(ls)) end
  local rs = opts.reduction_scratch_bytes and compat.int(opts.reduction_scratch_bytes, "reduction_scratch_bytes") or 0
  if rs < 0 then fail("NEGATIVE", "CompilerParams: reduction_scratch_bytes", rs) end
  local ds = opts.dimension_semantics
  if ds ~= nil then
    if type(ds) ~= "table" then fail("DIMENSION_SEMANTICS_NOT_TABLE") end
    local norm = {}
    for i = 1, #ds do
      local v = ds[i]
      if v == "arbitrary" then v = "sequential" end
      if v ~= "parallel" and v ~= "sequential" then
        fail("DIMENSION_SEMANTICS_BAD", i, tostring(ds[i]))
      end
      norm[i] = v
    end
    ds = norm
  end
  local mcs = compat.int(opts.max_concurrent_steps or 1, "CompilerParams: max_concurrent_steps")
  if mcs < 1 then fail("LESS_THAN_ONE", "CompilerParams: max_concurrent_steps", mcs) end
  local dr = compat.int(opts.delay_release or 0, "CompilerParams: delay_release")
  if dr < 0 then fail("NEGATIVE", "CompilerParams: delay_release", dr) end
  if dr >= mcs then
    fail("DELAY_NOT_BELOW_DEPTH", "CompilerParams", dr, mcs)
  end
  return setmetatable({ approx_math = opts.approx_math and true or false, lowering_semantics = semantics[ls],
                        unsafe_no_auto_barriers = opts.unsafe_no_auto_barriers and true or false,
                        reduction_scratch_bytes = rs, dimension_semantics = ds, max_concurrent_steps = mcs,
                        delay_release = dr, vmem_limit_bytes = vl, has_side_effects = opts.has_side_effects and true or false,
                        disable_bounds_checks = opts.disable_bounds_checks and true or false, max_registers = flags.max_registers, opt_level = flags.opt_level,
                        profile_space = ps, profile_dir = pd,
                        profile_warps = scope == "warp" and 4 or 1 },
                      CompilerParams)
end

function M.is_params(x) return getmetatable(x) == CompilerParams end

-- -- Defining -----------------------------------------------------------------

local Kernel = {}
Kernel.__index = Kernel

local function check_names(names, n, what)
  if names == nil then return nil end
  if type(names) == "string" then names = { names } end
  if type(names) ~= "table" or #names ~= n then fail("NAMES_PER_AXIS", what, n) end
  for i = 1, n do
    if type(names[i]) ~= "string" then fail("NAME_NOT_STRING", what, i) end
  end
  return names
end

local known_spec = { body = true, out_shape = true, out_type = true, scratch_shapes = true, scratch_types = true, grid = true,
                     grid_names = true, num_threads = true, thread_name = true, interpret = true,
                     name = true, compiler_params = true, cluster = true, cluster_names = true, debug = true }

-- Debug dumps: MGPU_DEBUG=ir,layout,smem,ptx,sass,time (other words, such
-- as "cache", are the engine's) or mgpu.kernel{ debug = true | "ir,ptx" }
-- print each stage to stderr when a kernel is compiled.
local dump_kinds = { ir = true, layout = true, smem = true, ptx = true, sass = true, time = true }
local function parse_debug(v)
  if v == nil or v == false then return nil end
  if v == true then return { ir = true, layout = true, smem = true, ptx = true, sass = true, time = true } end
  if type(v) ~= "string" then fail("KERNEL_DEBUG") end
  local set
  for w in v:gmatch("[^,%s]+") do
    if w == "all" or w == "1" then return parse_debug(true) end
    if dump_kinds[w] then set = set or {}; set[w] = true end
  end
  return set
end
local env_debug = parse_debug(os.getenv("MGPU_DEBUG") or false)

--- mgpu.kernel{ body = fn(in_refs..., out_refs..., scratch_refs...),
--- out_shape = shape or {shapes}, scratch_shapes = {mgpu.SMEM(...), ...}
--- (or { name = spec, ... }: the body then gets one table of refs last),
--- grid = {..}, grid_names, cluster = {..}, cluster_names, num_threads,
--- thread_name, interpret, name, compiler_params }.  out_shape and grid may
--- be functions of the input arrays.  A cluster groups blocks: cluster axis
--- i runs along the same hardware axis as the last-but-i grid axis, and
--- mgpu.axis_index(cluster_names[i]) is the block's index in its cluster.
function M.kernel(spec)
  if type(spec) ~= "table" then fail("EXPECTS_OPTIONS", "mgpu.kernel") end
  for k in pairs(spec) do
    if not known_spec[k] then fail("UNKNOWN_OPTION", "mgpu.kernel", tostring(k)) end
  end
  if type(spec.body) ~= "function" then fail("NOT_FUNCTION", "mgpu.kernel: body") end
  local out = spec.out_shape or spec.out_type
  if out == nil then fail("REQUIRED", "mgpu.kernel: out_shape") end
  local scratch = spec.scratch_shapes or spec.scratch_types or {}
  if smem.is_spec(scratch) then scratch = { scratch } end
  if type(scratch) ~= "table" then fail("SCRATCH_NOT_TABLE") end
  local named = next(scratch) ~= nil and #scratch == 0      -- { name = spec, ... }: one table for the body
  if named then
    for key, v in pairs(scratch) do
      if type(key) ~= "string" then
        fail("SCRATCH_BAD_KEY", tostring(key))
      end
      if not smem.is_spec(v) and not (type(v) == "table" and getmetatable(v) == nil) then
        fail("SCRATCH_BAD_NAMED", key)
      end
    end
  else
    for i = 1, #scratch do
      if not smem.is_spec(scratch[i]) then
        fail("SCRATCH_BAD_ITEM", i)
      end
    end
    for key in pairs(scratch) do
      if type(key) ~= "number" then
        fail("SCRATCH_MIXED", tostring(key))
      end
    end
  end
  local name = spec.name or "kernel"
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
    fail("KERNEL_BAD_NAME", tostring(name))
  end
  local nt = spec.num_threads == nil and 1 or compat.int(spec.num_threads, "num_threads")
  if nt < 1 or nt > 8 then
    fail("NUM_THREADS", nt, nt * 128)
  end
  if spec.thread_name ~= nil and type(spec.thread_name) ~= "string" then fail("THREAD_NAME_NOT_STRING") end
  local cluster = spec.cluster or {}
  if type(cluster) == "number" then cluster = { cluster } end
  if type(cluster) ~= "table" or #cluster > 3 then fail("CLUSTER_NOT_TABLE") end
  local csize = 1
  for i = 1, #cluster do
    cluster[i] = compat.int(cluster[i], "cluster[" .. i .. "]")
    if cluster[i] < 1 then fail("ITEM_LESS_THAN_ONE", "cluster", i, cluster[i]) end
    csize = csize * cluster[i]
  end
  if csize > 8 then fail("CLUSTER_TOO_LARGE", csize) end
  local cluster_names = check_names(spec.cluster_names, #cluster, "cluster_names")
  local cp = spec.compiler_params
  if cp ~= nil and not M.is_params(cp) then
    fail("COMPILER_PARAMS_NOT_PARAMS")
  end
  local k = setmetatable({
    name = name, body = spec.body, out = out, scratch = scratch, scratch_named = named, grid = spec.grid or {}, grid_names = spec.grid_names,
    num_threads = nt, thread_name = spec.thread_name, interpret = spec.interpret and true or false,
    cluster = cluster, cluster_names = cluster_names,
    params = cp or M.CompilerParams(), cache = {}, where = compat.where(),
    debug = parse_debug(spec.debug),
  }, Kernel)
  return k
end

-- -- Tracing ------------------------------------------------------------------

-- fn(args...) for a grid or out_shape function, its errors located at a
-- script line (non-string ones described) like a body's.
local function call_user(fn, args, what, k)
  local r = compat.pack(xpcall(function() return fn(compat.unpack(args)) end,
                               compat.user_error_handler(what, k.where)))
  if not r[1] then error(r[2], 0) end
  return r[2]
end

local function resolve_grid(k, args)
  local g = k.grid
  if type(g) == "function" then g = call_user(g, args, "grid function", k) end
  if type(g) == "number" then g = { g } end
  if type(g) ~= "table" then fail("GRID_NOT_TABLE") end
  if #g > 8 then fail("GRID_RANK", #g) end
  local out = {}
  for i = 1, #g do
    out[i] = compat.int(g[i], "grid[" .. i .. "]")
    if out[i] < 1 then fail("ITEM_LESS_THAN_ONE", "grid", i, out[i]) end
    if out[i] > 2147483647 then fail("GRID_TOO_LARGE", i, out[i]) end
  end
  return out
end

local function resolve_out(k, args)
  local o = k.out
  if type(o) == "function" then o = call_user(o, args, "out_shape function", k) end
  local single = getmetatable(o) == Shape
  local list = single and { o } or o
  if type(list) ~= "table" then fail("OUT_SHAPE_NOT_SHAPES") end
  for i = 1, #list do
    if getmetatable(list[i]) ~= Shape then fail("OUT_SHAPE_ITEM", i) end
  end
  return list, single
end

local function signature(args, grid, outs)
  local parts = {}
  for i = 1, #args do
    local s = as_scalar(args[i])
    parts[#parts + 1] = s and ("scalar " .. s.dtype) or (args[i].dtype .. compat.shape_str(args[i].shape))
  end
  parts[#parts + 1] = "grid" .. compat.shape_str(grid)
  for i = 1, #outs do parts[#parts + 1] = "out" .. outs[i].dtype .. compat.shape_str(outs[i].shape) end
  return table.concat(parts, ";")
end

local function trace_kernel(k, args, grid, outs)
  local t0 = os.clock()
  local core = context.core
  local ctx = context.get()
  local okb, b = pcall(core.builder, ctx, { name = k.name, grid = grid, num_threads = k.num_threads, cluster = k.cluster,
                               approx_math = k.params.approx_math, interpret = k.interpret,
                               lowering_semantics = k.params.lowering_semantics,
                               unsafe_no_auto_barriers = k.params.unsafe_no_auto_barriers,
                               disable_bounds_checks = k.params.disable_bounds_checks,
                               reduction_scratch_bytes = k.params.reduction_scratch_bytes,
                               target = context.targets[context.target()] })
  if not okb then fail("KERNEL_FAILED", k.name, tostring(b)) end
  local t = { core = core, b = b, spec = k, grid = grid, num_inputs = #args, target = context.target(),
              max_ops = context.max_trace_ops() }
  local refs = {}
  core.loc(b, k.where)
  for i = 1, #args do
    local s = as_scalar(args[i])
    if s then
      refs[#refs + 1] = trace.wrap(t, core.param(b, "scalar", s.dtype, {}))
      refs[#refs].param = { kernel = k.name, index = i }
    else refs[#refs + 1] = trace.wrap(t, core.param(b, "in", args[i].dtype, args[i].shape)) end
    refs[#refs].slot = i   -- its place among the launch's arguments
  end
  for i = 1, #outs do
    refs[#refs + 1] = trace.wrap(t, core.param(b, "out", outs[i].dtype, outs[i].shape))
    refs[#refs].slot = #args + i
  end
  local prof
  if k.params.profile_space then   -- the profiler's hidden output, after the kernel's own
    local per_block = k.num_threads * k.params.profile_warps
    for _, n in ipairs(k.cluster or {}) do per_block = per_block * n end   -- a trace per block of each cluster
    prof = { shape = profile.buffer_shape(grid, per_block, k.params.profile_space),
             names = {}, ids = {}, dir = k.params.profile_dir, nwg = k.num_threads, warps = k.params.profile_warps }
    prof.ref = trace.wrap(t, core.param(b, "out", "u32", prof.shape))
    t.profile = prof
  end
  local ndev = distributed.job_count()
  if ndev then t.peers = trace.wrap(t, core.param(b, "in", "i64", { 3 + ndev })) end   -- the peer table (hidden)
  local hidden = {}    -- semaphores (symmetric i32, kept zero) and GMEM scratch: hidden arrays kept per kernel
  t.hidden_queue = {}
  for i, s in ipairs(distributed.hidden_specs(k.scratch, k.scratch_named)) do
    local dt = s.dtype or "i32"
    t.hidden_queue[i] = { spec = s, ref = trace.wrap(t, core.param(b, "out", dt, s.shape)) }
    hidden[i] = { shape = s.shape, dtype = dt, sem = distributed.is_sem_spec(s) }
  end
  local saved = trace.current
  trace.current = t
  local ok, err = xpcall(function()
    -- the device's index, read once at the kernel's entry: a read where device_id() is called
    -- would repeat in every loop step that calls it
    if t.peers then t.device_id = t.peers:at(0):load():astype("i32") end
    if k.scratch_named then refs[#refs + 1] = smem.alloc_tree(k.scratch, "scratch_shapes")
    else for i = 1, #k.scratch do refs[#refs + 1] = smem.alloc(k.scratch[i]) end end
    k.body(compat.unpack(refs))
  end, compat.user_error_handler("kernel body", k.where))   -- error({ code = 7 }): the line that raised it
  trace.current = saved
  if not ok then
    core.release(b)
    error(err, 0)
  end
  core.loc(b, k.where)
  local kern = core.finish(b)
  core.release(b)
  if k.params.max_registers or k.params.opt_level then    -- CompilerParams flags: driver JIT options
    core.jit_options(kern, k.params.max_registers or 0, k.params.opt_level or -1)
  end
  local vl = k.params.vmem_limit_bytes
  if vl then     -- the SMEM budget (Pallas TPU's vmem_limit_bytes)
    local need = core.resources(kern).smem_bytes
    if need > vl then
      fail("SMEM_OVER_BUDGET", k.name, need, vl)
    end
  end
  for _, p in ipairs(t.print_layouts or {}) do
    print(string.format(p.fmt, core.layout(kern, p.id)))
  end
  if prof then prof.ref = nil end
  local counters = {}   -- dynamic_scheduling_loop counters the interpreter checks at launch
  for _, c in ipairs(t.dyn_counters or {}) do
    if c.slot and c.off then counters[#counters + 1] = { slot = c.slot, off = c.off } end
  end
  return { kernel = kern, trace_ms = (os.clock() - t0) * 1000 - core.resources(kern).compile_ms,
           passes_ms = core.resources(kern).compile_ms, profile = prof, peers = ndev ~= nil, hidden = hidden,
           counters = counters }
end

-- -- Calling ------------------------------------------------------------------

-- Print the stages that `set` names for a freshly traced kernel to stderr.
local function dump(k, entry, set, key)
  local core = context.core
  local kern = entry.kernel
  local w = function(...) io.stderr:write(string.format(...)) end
  local ok, err = pcall(core.compile, kern)
  if not ok then w("mgpu debug: kernel '%s': %s\n", k.name, tostring(err)) end
  local r = core.resources(kern)
  w("mgpu debug: kernel '%s' (%s)\n", k.name, key)
  if set.ir then w("-- ir --\n%s\n", core.text(kern, "ir")) end
  if set.layout then
    w("-- layout --\n")
    for id = 1, 1e6 do
      local okl, l = pcall(core.layout, kern, id)
      if not okl then break end
      if l and l ~= "" then w("%%%d: %s\n", id, l) end
    end
  end
  if set.smem then w("-- smem --\n%d bytes of SMEM per block, %d threads\n", r.smem_bytes, r.threads) end
  if set.ptx and ok then w("-- ptx --\n%s\n", core.text(kern, "ptx")) end
  if set.sass and ok then w("-- sass --\n%s\n", require("mgpu.sass").text(core.text(kern, "ptx"))) end
  if set.time then
    w("-- time --\ntrace %.2f ms, passes %.2f ms, PTX %.2f ms, JIT/load %s\n", entry.trace_ms, entry.passes_ms,
      r.compile_ms - entry.passes_ms, r.load_ms > 0 and string.format("%.2f ms", r.load_ms) or "none (no GPU load)")
  end
end

-- DIR/<name>.ptx for a process's first kernel called `name`, then
-- DIR/<name>.2.ptx, ... (counts: the names seen so far).
local function ptx_path(dir, name, counts)
  local n = (counts[name] or 0) + 1
  counts[name] = n
  return dir .. "/" .. (n == 1 and name or (name .. "." .. n)) .. ".ptx"
end

local function write_ptx(k, entry)
  local dir = context.config.emit_ptx
  if not dir then return end
  local f, err = io.open(ptx_path(dir, k.name, M.emitted), "w")
  if not f then fail("PTX_WRITE", err) end
  f:write(context.core.text(entry.kernel, "ptx"))
  f:close()
end
M.emitted = {}

-- MGPU_PTX_OVERRIDE=DIR: a kernel loads DIR/<name>.ptx (named as --emit-ptx
-- names them) instead of the PTX mgpu writes, when that file exists.
local function override_ptx(k, entry)
  local dir = context.config.ptx_override
  if not dir then return end
  local path = ptx_path(dir, k.name, M.overridden)
  local f = io.open(path, "r")
  if not f then return end
  local text = f:read("a")
  f:close()
  context.core.set_ptx(entry.kernel, text)
  if not context.config.quiet then
    io.stderr:write(string.format("mgpu: kernel '%s' loads its PTX from %s (MGPU_PTX_OVERRIDE)\n", k.name, path))
  end
end
M.overridden = {}

-- mgpu.shape(...) values stand for abstract arrays of that shape and dtype.
local function abstract_args(args)
  for i = 1, #args do
    if getmetatable(args[i]) == Shape then args[i] = array.spec(args[i].shape, args[i].dtype) end
  end
  return args
end

-- How many inputs (arrays and scalars) the body takes: its parameters less
-- the outputs and the scratch refs; nil when the body is variadic.
local function input_count(self, nouts)
  local info = debug.getinfo(self.body, "u")
  if not info or info.isvararg or not info.nparams then return nil end
  local nscratch = self.scratch_named and 1 or #self.scratch
  return info.nparams - nouts - nscratch, info.nparams, nscratch
end

local function plural(n, word) return string.format("%d %s%s", n, word, n == 1 and "" or "s") end

-- An error naming the inputs the body expects and the number given.  A body
-- may leave trailing refs (outputs, scratch) unnamed, so fewer parameters
-- than refs is an error only where the inputs alone leave no doubt: some
-- argument would reach no parameter, or the body names inputs and more
-- arguments were given than it names.  A body without parameters takes
-- anything.
local function check_arity(self, nargs, nouts)
  local want, nparams, nscratch = input_count(self, nouts)
  if not want or want == nargs or nparams == 0 then return end
  local total = nargs + nouts + nscratch
  if nparams < total and nargs <= nparams and want < 1 then return end
  local parts = { plural(math.max(want, 0), "input"), plural(nouts, "output") }
  if nscratch > 0 then parts[3] = plural(nscratch, "scratch ref") end
  fail("KERNEL_ARG_COUNT", self.name, plural(math.max(want, 0), "input"),
       plural(nargs, "argument"), plural(nparams, "parameter"), table.concat(parts, ", "))
end

-- What a value passed where an input goes is, for errors.
local function describe_arg(x)
  if trace.is_value(x) or trace.is_ref(x) then return "a traced value (kernels are called outside kernel bodies)" end
  if getmetatable(x) == require("mgpu.host").Host then
    return "a host array (mgpu.host); make a device array with h:to_device(dtype)"
  end
  if M.is_kernel(x) then return "a kernel" end
  return type(x)
end

-- True when args match those of the last call that found or made an entry
-- (m), in the same context: the same numbers and scalars, and arrays of the
-- same dtypes and shapes (the signature's parts; grid and out_shape
-- functions see arrays only through them).  A loop that launches a kernel on
-- the same arrays, or rotates through sets of like arrays as a benchmark
-- does, skips the grid and out_shape functions and the signature (the engine
-- still checks each buffer's size), which are most of a launch's host time.
local function same_call(m, args, nargs)
  if not m or m.epoch ~= context.epoch or m.target ~= context.target() or m.n ~= nargs then return false end
  for i = 1, nargs do
    local x, d = args[i], m.dtypes[i]
    if d then   -- an array last time
      if not (array.is_array(x) and x.dtype == d and compat.same_shape(x.shape, m.shapes[i])) then return false end
    elseif not rawequal(x, m.args[i]) then
      return false
    end
  end
  return true
end

-- A kernel keeps its most recently used specializations (an entry per
-- argument signature); past MAX_ENTRIES the least recently used one goes,
-- so that calls with ever new shapes (a REPL session) hold steady memory.
M.MAX_ENTRIES = 256

local function evict_oldest(self)
  local oldest, at
  for key, e in pairs(self.cache) do
    if not at or e.used < at then oldest, at = key, e.used end
  end
  self.cache[oldest] = nil
  self.nentries = self.nentries - 1
end

-- The cached entry for these arguments, traced when there is none yet,
-- and its cache key.
local function entry_for(self, args, nargs)
  local m = self.last
  self.tick = (self.tick or 0) + 1
  if same_call(m, args, nargs) then
    m.entry.used = self.tick
    return m.entry, m.outs, m.single, m.key
  end
  local ok, outs, single = pcall(resolve_out, self, args)
  if not ok then     -- an out_shape function given too few inputs fails inside: say so
    local f = type(self.out) == "function" and debug.getinfo(self.out, "u")
    if f and f.nparams and not f.isvararg and f.nparams > #args then
      fail("OUT_SHAPE_ARITY", self.name, plural(f.nparams, "input"), plural(#args, "argument"))
    end
    error(outs, 0)
  end
  check_arity(self, #args, #outs)
  local grid = resolve_grid(self, args)
  -- entries belong to one default context and one target
  local key = signature(args, grid, outs) .. "@" .. context.epoch .. "@" .. context.target()
  local entry = self.cache[key]
  if not entry then
    entry = trace_kernel(self, args, grid, outs)
    self.nentries = (self.nentries or 0) + 1
    if self.nentries > M.MAX_ENTRIES then evict_oldest(self) end
    self.cache[key] = entry
  end
  entry.used = self.tick
  -- arrays remembered by dtype and shape: remembering the call must not keep them alive
  m = { n = nargs, epoch = context.epoch, target = context.target(), entry = entry, outs = outs, single = single, key = key,
        args = {}, dtypes = {}, shapes = {} }
  for i = 1, nargs do
    local x = args[i]
    if array.is_array(x) then m.dtypes[i], m.shapes[i] = x.dtype, x.shape else m.args[i] = x end
  end
  self.last = m
  return entry, outs, single, key
end

-- Every argument an array (mgpu.shape values become abstract ones) of at
-- most MAX_RANK dims or a number, else an error naming it; trailing nils
-- are no arguments.  Returns the argument count.
local function check_args(self, args, nargs)
  nargs = nargs or args.n or #args
  while nargs > 0 and args[nargs] == nil do nargs = nargs - 1 end
  for i = 1, nargs do
    if args[i] == nil then
      local want = type(self.out) ~= "function" and input_count(self, getmetatable(self.out) == Shape and 1 or #self.out)
      fail("KERNEL_ARG_NIL", self.name, i, nargs,
           want and string.format(" (the kernel takes %s)", plural(want, "input")) or "")
    end
  end
  for i = 1, nargs do
    if getmetatable(args[i]) == Shape then args[i] = array.spec(args[i].shape, args[i].dtype) end
    if not array.is_array(args[i]) and not as_scalar(args[i]) then
      fail("KERNEL_ARG_TYPE", self.name, i, describe_arg(args[i]))
    end
    if array.is_array(args[i]) and #args[i].shape > M.MAX_RANK then
      fail("KERNEL_ARG_RANK", self.name, i, #args[i].shape, M.MAX_RANK)
    end
  end
  return nargs
end

local function prepare(self, args, running, nargs)
  nargs = check_args(self, args, nargs)
  for i = 1, nargs do
    if running and array.is_abstract(args[i]) and not array.compile_only() then
      fail("KERNEL_ARG_ABSTRACT", self.name, i, args[i].dtype, compat.shape_str(args[i].shape))
    end
  end
  local entry, outs, single, key = entry_for(self, args, nargs)
  if not entry.prepared then   -- its first call (k:lower and mgpu.show make entries without one)
    entry.prepared = true
    local set = self.debug or env_debug
    if set then dump(self, entry, set, key) end
    if context.info().mode == "compile" then
      context.core.compile(entry.kernel)
      write_ptx(self, entry)
    else
      override_ptx(self, entry)
    end
  end
  return entry, outs, single
end

-- Interpreted: every dynamic_scheduling_loop counter read from an argument
-- is zero at launch (a GPU launch takes that on trust: the contract).
local function check_counters(self, entry, args, results)
  if #entry.counters == 0 or not (self.interpret or context.info().mode == "interpret") then return end
  for _, c in ipairs(entry.counters) do
    local a = args[c.slot] or results[c.slot - #args]
    local v = context.core.buffer_get(a.buf, "i32", c.off, 2)
    if v[1] ~= 0 or v[2] ~= 0 then fail("COUNTER_NOT_ZERO", self.name, c.slot, c.off, v[1], v[2]) end
  end
end

-- A launch's error.  One that names an op's line in the body (the
-- interpreter's races, deadlocks, out-of-bounds accesses) starts with that
-- line and names the call after it; any other is raised at the call.
local function launch_failed(self, err)
  local pos = compat.position(err)
  if pos and not compat.in_lib(pos) then error(compat.message("KERNEL_CALLED_AT", err, self.name, compat.where()), 0) end
  fail("ENGINE_ERROR", err)
end

local function launch(self, entry, args, results)
  check_counters(self, entry, args, results)
  local bufs = {}
  for i = 1, #args do
    local s = as_scalar(args[i])
    bufs[i] = s and s.value or args[i].buf
  end
  for i = 1, #results do bufs[#bufs + 1] = results[i].buf end
  local pbuf
  if entry.profile then      -- profiling: a zeroed hidden output, decoded into a trace JSON after the launch
    pbuf = array.zeros(entry.profile.shape, "u32")
    bufs[#bufs + 1] = pbuf.buf
  end
  if entry.peers then bufs[#bufs + 1] = distributed.table_buffer() end
  if #entry.hidden > 0 and not entry.hidden_arrays then   -- made at the first launch (collective), then kept
    entry.hidden_arrays = {}
    for i, h in ipairs(entry.hidden) do
      entry.hidden_arrays[i] = h.sem and array.symmetric(h.shape, "i32") or array.zeros(h.shape, h.dtype)
    end
  end
  for _, a in ipairs(entry.hidden_arrays or {}) do bufs[#bufs + 1] = a.buf end
  -- compile errors name the op's line; run-time errors (the interpreter's
  -- races, deadlocks) are raised at the call, naming the ops' lines inside
  if not entry.compiled then
    local okc, cerr = pcall(context.core.compile, entry.kernel)
    if not okc then compat.rethrow(cerr) end
    entry.compiled = true
  end
  local ok, err = pcall(context.core.launch, entry.kernel, bufs)
  if not ok then launch_failed(self, err) end
  if entry.hidden_arrays and context.info().mode == "interpret" then   -- the semaphores are back at zero
    local sems = {}
    for i, h in ipairs(entry.hidden) do if h.sem then sems[#sems + 1] = entry.hidden_arrays[i] end end
    distributed.check_sems(self.name, sems)
  end
  if pbuf then   -- in a job of several devices each writes a file of its own
    local dev = distributed.process_count() > 1 and distributed.process_index() or nil
    profile.write(entry.profile, pbuf:to_table(), self.name, self.interpret or context.info().mode == "interpret", dev)
  end
end

--- k(inputs...) -> new output array(s).
function Kernel:__call(...)
  local args = { ... }
  local entry, outs, single = prepare(self, args, true, select("#", ...))
  local results = {}
  for i = 1, #outs do
    local o = array.empty_for(string.format("kernel '%s' output %d", self.name, i), outs[i].shape, outs[i].dtype)
    if context.config.poison_outputs and not o.abstract then context.core.buffer_fill(o.buf, "value", "u8", o.nbytes, 255) end
    results[i] = o
  end
  if not array.compile_only() then launch(self, entry, args, results) end     -- compile-only: abstract outputs
  if single then return results[1] end
  return compat.unpack(results)
end

--- k:call_into(outs, inputs...): write into existing output arrays (one
--- array, or a table of them matching out_shape) and return them.
-- Methods called with . instead of : get something else as self.
local function check_self(self, what)
  if getmetatable(self) ~= Kernel then fail("KERNEL_NO_COLON", what, what, type(self)) end
end

function Kernel:call_into(outs, ...)
  check_self(self, "call_into")
  local args = { ... }
  local entry, shapes = prepare(self, args, true, select("#", ...))
  if getmetatable(outs) == Shape then outs = array.spec(outs.shape, outs.dtype) end
  local list = array.is_array(outs) and { outs } or outs
  if type(list) ~= "table" or #list ~= #shapes then
    fail("CALL_INTO_COUNT", self.name, #shapes)
  end
  for i = 1, #shapes do
    local o = list[i]
    if not array.is_array(o) or o.dtype ~= shapes[i].dtype or not compat.same_shape(o.shape, shapes[i].shape) then
      fail("CALL_INTO_OUTPUT", self.name, i, shapes[i].dtype, compat.shape_str(shapes[i].shape))
    end
  end
  for i = 1, #list do
    if list[i].abstract and not array.compile_only() then
      fail("CALL_INTO_ABSTRACT", self.name, i)
    end
  end
  if not array.compile_only() then launch(self, entry, args, list) end
  return outs
end

--- The core kernel handle for arguments described by `specs` (arrays from
--- mgpu.array spec or numbers/mgpu.scalar), traced and compiled if needed,
--- for callers that launch it themselves (mgpu_script_kernel): its
--- parameters are the arguments, then the outputs.  A kernel whose
--- launches need arrays only a Lua call provides (a profile buffer, the
--- peer table, GMEM scratch and semaphores) is refused.
function Kernel:trace_for(specs)
  check_self(self, "trace_for")
  local ok, entry = pcall(prepare, self, specs)
  if not ok then    -- no script line called it (C did): a mistake in the call is placed at the kernel
    if type(entry) == "string" and entry:sub(1, 3) == "?: " then entry = self.where .. entry:sub(2) end
    error(entry, 0)
  end
  local needs = entry.profile and "a profile buffer (CompilerParams profile_space)"
                or entry.peers and "the peer table of a multi-device job"
                or #entry.hidden > 0 and "arrays kept between launches (mgpu.GMEM scratch or semaphores)"
  if needs then compat.fail_at(self.where, "TRACE_FOR_HIDDEN", self.name, needs) end
  context.core.compile(entry.kernel)
  return entry.kernel
end

function M.is_kernel(x) return getmetatable(x) == Kernel end

--- The kernel's canonical IR text and PTX for the given arguments: arrays,
--- abstract arrays (mgpu.abstract) or mgpu.shape(...) values, and numbers.
function Kernel:lower(...)
  check_self(self, "lower")
  local args = abstract_args(compat.pack(...))
  local entry = entry_for(self, args, check_args(self, args))
  local core = context.core
  return { ir = core.text(entry.kernel, "ir"), ptx = core.text(entry.kernel, "ptx"),
           resources = core.resources(entry.kernel) }
end

--- mgpu.show(k, args...): print the kernel's IR, PTX and resources (SMEM
--- bytes; registers once loaded on a GPU) for these arguments (arrays,
--- abstract arrays, mgpu.shape values or numbers).
function M.show(k, ...)
  if not M.is_kernel(k) then fail("SHOW_NOT_KERNEL", type(k)) end
  local args = abstract_args(compat.pack(...))
  local kern = entry_for(k, args, check_args(k, args)).kernel
  pcall(context.core.compile, kern)
  local r = context.core.resources(kern)
  print(string.format("-- kernel '%s' --", k.name))
  print("-- ir --"); print(context.core.text(kern, "ir"))
  print("-- ptx --"); print(context.core.text(kern, "ptx"))
  print(string.format("-- resources --\nSMEM %d bytes per block, %d threads, registers %s, local %d bytes", r.smem_bytes,
                      r.threads, r.registers > 0 and tostring(r.registers) or "unknown (not loaded on a GPU)", r.local_bytes))
end

Kernel.__tostring = function(k) return "mgpu.kernel(" .. k.name .. ")" end

return M
