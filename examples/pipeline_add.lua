--[[
Elementwise add through a pipeline: each block streams its rows through
`depth` SMEM slots with TMA (emit_pipeline), so the next blocks are in
flight while the current one is added, and the result leaves through TMA
stores.  The same kernel written with pallas_call is a grid plus
BlockSpecs, with the row axis marked "sequential".  Compared with the
plain GMEM-load version (examples/add.lua) on large inputs.

  mgpu examples/pipeline_add.lua [rows] [cols] [dtype] [rows=16] [depth=4] [per_sm=1]
  (16384x8192 f32 on a GPU; 64x512 interpreted; rows: rows per block, per_sm: blocks per SM)
]]
local mgpu = require "mgpu"
local args, opt = mgpu.script_args(...)
local small = mgpu.interpreting()
local R = tonumber(args[1]) or (small and 64 or 16384)
local C = tonumber(args[2]) or (small and 512 or 8192)
local dtype = args[3] or "f32"
local br, bc = opt.rows or 16, 256   -- one block: 16 rows x 256 columns (16 KiB of f32)
local depth = opt.depth or 4
local sms = mgpu.device().sm_count * (opt.per_sm or 1)

-- emit_pipeline inside a persistent kernel: block p takes row blocks p, p + P, ...
local row_blocks, col_blocks = mgpu.cdiv(R, br), mgpu.cdiv(C, bc)
local workers = math.min(sms, col_blocks * row_blocks)
local add = mgpu.kernel{
  name = "pipeline_add",
  grid = { workers }, grid_names = { "sm" },
  out_shape = mgpu.shape({ R, C }, dtype),
  body = function(x, y, o)
    local p = mgpu.program_id(0)
    local steps = mgpu.cdiv(row_blocks * col_blocks - p, workers) -- traced: this block's share
    local function spec()
      return mgpu.BlockSpec{ { br, bc }, function(s)
        local t = p + s * workers
        return t / col_blocks, t % col_blocks
      end }
    end
    local pipe = mgpu.emit_pipeline(function(_, xs, ys, os)
      os:store(xs:load() + ys:load())
    end, { grid = { steps }, max_concurrent_steps = depth, in_specs = { spec(), spec() }, out_specs = { spec() } })
    pipe(x, y, o)
  end,
}

-- the same as a pallas_call: parallel columns and row groups, sequential rows
-- within a group.  Each parallel grid point is one block: the row groups
-- (a divisor of the row blocks) give the GPU as many blocks as it has SMs.
local groups = 1
while row_blocks % (2 * groups) == 0 and col_blocks * 2 * groups <= sms do groups = 2 * groups end
local per_group = row_blocks / groups
local function call_spec()
  return mgpu.BlockSpec{ { br, bc }, function(j, g, i) return g * per_group + i, j end }
end
local add_call = mgpu.pallas_call{
  name = "pallas_add",
  grid = { col_blocks, groups, per_group },
  in_specs = { call_spec(), call_spec() },
  out_specs = call_spec(),
  out_shape = mgpu.shape({ R, C }, dtype),
  compiler_params = mgpu.CompilerParams{ dimension_semantics = { "parallel", "parallel", "sequential" },
                                         max_concurrent_steps = depth },
  body = function(xs, ys, os) os:store(xs:load() + ys:load()) end,
}

-- the plain version: every block loads its elements from GMEM into registers
local B = 4096
local plain = mgpu.kernel{
  name = "plain_add",
  grid = { mgpu.cdiv(R * C, B) },
  out_shape = mgpu.shape({ R * C }, dtype),
  body = function(x, y, z)
    local blk = mgpu.ds(mgpu.program_id(0) * B, B)
    z:at(blk):store(x:at(blk):load() + y:at(blk):load())
  end,
}

local x = mgpu.random.normal({ R, C }, dtype)
local y = mgpu.random.normal({ R, C }, dtype)
local z = add(x, y)
local z2 = add_call(x, y)
if mgpu.compile_only() then plain(x:reshape({ R * C }), y:reshape({ R * C })); return end

local H = mgpu.host
local ref = H.from(x) + H.from(y)
local err = math.max(H.relerr(H.from(z), ref), H.relerr(H.from(z2), ref))
print(string.format("pipeline_add %s %dx%d (%s): relative error %.2e", dtype, R, C,
                    mgpu.interpreting() and "interpreted" or mgpu.device().name, err))
assert(err <= (dtype == "f32" and 1e-6 or 1e-2), "pipeline_add: result differs from the reference")

if not mgpu.interpreting() then
  local bytes = 3 * R * C * ({ f32 = 4, bf16 = 2, f16 = 2 })[dtype]
  local xf, yf = x:reshape({ R * C }), y:reshape({ R * C })
  local zf = plain(xf, yf)
  for _, v in ipairs({ { "emit_pipeline", function() add:call_into(z, x, y) end },
                       { "pallas_call", function() add_call:call_into(z2, x, y) end },
                       { "plain GMEM loads", function() plain:call_into(zf, xf, yf) end } }) do
    local ms = mgpu.bench(v[2], { reps = 30 })
    print(string.format("%-18s %.4f ms, %.0f GB/s", v[1], ms, bytes / ms / 1e6))
  end
end
