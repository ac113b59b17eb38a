--[[
mgpu.pallas_call -- the grid-plus-BlockSpec entry point (Pallas'
pallas_call on Mosaic GPU).  Each point of the parallel grid axes is one
block of one warpgroup; the axes CompilerParams.dimension_semantics marks
"sequential" become an emit_pipeline of depth max_concurrent_steps inside
it.  The body sees the blocks in SMEM and mgpu.program_id(axis) gives its
index along any grid axis.

  local k = mgpu.pallas_call{
    grid = { n_col_blocks, n_row_blocks },
    in_specs = { mgpu.BlockSpec{ {8, 512}, function(j, i) return i, j end } },
    out_specs = mgpu.BlockSpec{ {8, 512}, function(j, i) return i, j end },
    out_shape = mgpu.shape({ R, C }, "f32"),
    compiler_params = mgpu.CompilerParams{ dimension_semantics = { "parallel", "sequential" },
                                           max_concurrent_steps = 3 },
    body = function(x_smem, o_smem) o_smem:store(x_smem:load() * 2) end,
  }
]]
local compat = require "mgpu.compat"
compat.mark_lib()
local trace = require "mgpu.trace"
local kernel = require "mgpu.kernel"
local blockspec = require "mgpu.blockspec"
local pipeline = require "mgpu.pipeline"
local loops = require "mgpu.loops"
local smem = require "mgpu.smem"

local M = {}
local fail = compat.fail

local known = { body = true, grid = true, in_specs = true, out_specs = true, out_shape = true, scratch_shapes = true,
                compiler_params = true, name = true, interpret = true }

-- A copy of spec whose index map takes the sequential indices and passes
-- the whole grid point to the user's map.
local function wrap_spec(spec, full, what)
  local s = setmetatable({}, getmetatable(spec))
  for k, v in pairs(spec) do s[k] = v end
  if spec.index_map then
    blockspec.check_arity(spec.index_map, #full.grid, what, spec.where)
    s.index_map = function(...) return spec.index_map(compat.unpack(full.point({ ... }), 1, #full.grid)) end
  end
  return s
end

-- Specs for operands given none: one whole-array block (in SMEM, as in
-- Pallas) per ref among args[first..last]; a scalar argument is an error.
local function default_specs(args, first, last, what)
  local specs = {}
  for i = first, last do
    if not trace.is_ref(args[i]) then fail("PALLAS_DEFAULT_SPEC_SCALAR", what, i - first + 1) end
    specs[#specs + 1] = blockspec.BlockSpec()
  end
  return blockspec.tree(specs, what)
end

--- mgpu.pallas_call{ body, grid, in_specs, out_specs, out_shape,
--- scratch_shapes, compiler_params, name } -> a kernel called with the
--- input arrays.  body(in_smem..., out_smem..., scratch...).  Specs may
--- nest in tables (Pallas' pytrees): the kernel still takes its arrays one
--- by one, in the specs' order, and the body gets them nested as the specs
--- are.  Without in_specs (out_specs) each input (output) is one block of
--- the whole array in SMEM.
function M.pallas_call(spec)
  if type(spec) ~= "table" then fail("EXPECTS_OPTIONS", "pallas_call") end
  compat.check_keys(spec, known, "pallas_call")
  if type(spec.body) ~= "function" then fail("NOT_FUNCTION", "pallas_call: body") end
  local grid = loops.grid(spec.grid or {}, "pallas_call grid")
  local cp = spec.compiler_params or kernel.CompilerParams()
  if not kernel.is_params(cp) then fail("PALLAS_COMPILER_PARAMS") end
  local sem = cp.dimension_semantics or {}
  if #sem ~= 0 and #sem ~= #grid then
    fail("PALLAS_SEMANTICS_COUNT", #sem, #grid)
  end
  local par, seq = {}, {}
  for i = 1, #grid do
    if (sem[i] or "parallel") == "parallel" then par[#par + 1] = i else seq[#seq + 1] = i end
  end
  if #par > 8 then fail("PALLAS_PARALLEL_AXES", #par) end
  local given_in, given_out
  if spec.in_specs ~= nil then given_in = compat.pack(blockspec.tree(spec.in_specs, "pallas_call in_specs")) end
  if spec.out_specs ~= nil then given_out = compat.pack(blockspec.tree(spec.out_specs, "pallas_call out_specs")) end
  local launch = {}
  for j, i in ipairs(par) do launch[j] = grid[i] end
  if #launch == 0 then launch = { 1 } end
  local seq_grid = {}
  for j, i in ipairs(seq) do seq_grid[j] = grid[i] end
  local scratch = spec.scratch_shapes or {}
  local nscratch = (next(scratch) ~= nil and #scratch == 0) and 1 or #scratch   -- a named table is one
  if smem.is_spec(scratch) then nscratch = 1 end
  local body = spec.body

  return kernel.kernel{
    name = spec.name or "pallas_call", out_shape = spec.out_shape, grid = launch, interpret = spec.interpret,
    compiler_params = cp, scratch_shapes = scratch,
    body = function(...)
      local refs = compat.pack(...)
      local t = trace.tr()
      local nin, nout = t.num_inputs, refs.n - t.num_inputs - nscratch
      local in_specs, in_tree, out_specs, out_tree
      if given_in then in_specs, in_tree = given_in[1], given_in[2]
      else in_specs, in_tree = default_specs(refs, 1, nin, "pallas_call input") end
      if given_out then out_specs, out_tree = given_out[1], given_out[2]
      else out_specs, out_tree = default_specs(refs, nin + 1, nin + nout, "pallas_call output") end
      if #in_specs + #out_specs ~= nin + nout then
        fail("PALLAS_REF_COUNT", nin, nout, #in_specs, #out_specs)
      end
      t.pallas_grid = grid                       -- mgpu.num_programs sees the whole grid
      local pids = {}
      for j, i in ipairs(par) do pids[i] = trace.op("program_id", nil, { j - 1 }) end
      local full = { grid = grid }
      function full.point(seq_idx)
        local pt = {}
        for i = 1, #grid do pt[i] = pids[i] end
        for j, i in ipairs(seq) do pt[i] = seq_idx[j] end
        return pt
      end
      local ins, outs = {}, {}
      for i, s in ipairs(in_specs) do ins[i] = wrap_spec(s, full, "pallas_call input " .. i) end
      for i, s in ipairs(out_specs) do outs[i] = wrap_spec(s, full, "pallas_call output " .. i) end
      local pipe = pipeline.emit_pipeline(function(idx, ...)
        local saved = t.program_ids
        t.program_ids = full.point(idx)
        local flat = { ... }
        local fin, fout = {}, {}
        for i = 1, #ins do fin[i] = flat[i] end
        for o = 1, #outs do fout[o] = flat[#ins + o] end
        local args = blockspec.tree_build(out_tree, fout, blockspec.tree_build(in_tree, fin, {}))
        for i = nin + nout + 1, refs.n do args[#args + 1] = refs[i] end   -- the scratch refs
        body(compat.unpack(args, 1, #args))
        t.program_ids = saved
      end, { grid = seq_grid, in_specs = ins, out_specs = outs, max_concurrent_steps = cp.max_concurrent_steps,
             delay_release = cp.delay_release })
      pipe(compat.unpack(refs, 1, nin + nout))
    end,
  }
end

return M
