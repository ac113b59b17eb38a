--[[
Kernels for the Python package's tests (test_numpy.py, test_torch.py).  The
block size comes from the script's arguments: as_numpy_kernel(path, block=128).
]]
local mgpu = require "mgpu"
local _, opt = mgpu.script_args(...)
local B = opt.block or 256

local function blocks(x) return { mgpu.cdiv(x.size, B) } end
local function like(x) return mgpu.shape(x.shape, x.dtype) end
local function flat_block() return mgpu.ds(mgpu.program_id(0) * B, B) end
local function check_blocks(x)
  if x.size % B ~= 0 then error(string.format("%d elements: a multiple of %d is needed", x.size, B)) end
end

add = mgpu.kernel{
  name = "add", grid = blocks,
  out_shape = function(x, y) check_blocks(x); return like(x) end,
  body = function(x, y, out)
    local b = flat_block()
    out:at(b):store(x:at(b):load() + y:at(b):load())
  end,
}

-- a * x + y with a scalar
scale_add = mgpu.kernel{
  name = "scale_add", grid = function(a, x) return blocks(x) end,
  out_shape = function(a, x) check_blocks(x); return like(x) end,
  body = function(a, x, y, out)
    local b = flat_block()
    out:at(b):store(a * x:at(b):load() + y:at(b):load())
  end,
}

-- two outputs of other dtypes: (x + y as f32, x < y as i32)
sum_less = mgpu.kernel{
  name = "sum_less", grid = blocks,
  out_shape = function(x) check_blocks(x); return { mgpu.shape(x.shape, "f32"), mgpu.shape(x.shape, "i32") } end,
  body = function(x, y, s, l)
    local b = flat_block()
    local xv, yv = x:at(b):load(), y:at(b):load()
    s:at(b):store((xv + yv):astype("f32"))
    l:at(b):store(mgpu.select(mgpu.lt(xv, yv), 1, 0):astype("i32"))
  end,
}

-- 2 * x for small arrays, one kernel built per shape and dtype (a factory): the whole array in one block
built = 0
function twice(x)
  built = built + 1
  return mgpu.kernel{
    name = "twice_" .. x.dtype .. "_" .. table.concat(x.shape, "x"), grid = { 1 }, out_shape = like(x),
    body = function(xr, out) out:store(xr:load() * 2) end,
  }
end

lib = { neg = mgpu.kernel{
  name = "neg", grid = blocks, out_shape = function(x) check_blocks(x); return like(x) end,
  body = function(x, out) local b = flat_block(); out:at(b):store(-x:at(b):load()) end,
} }

-- GMEM scratch lives in Lua's calls: refused to Python
keeps = mgpu.kernel{
  name = "keeps", grid = { 1 }, out_shape = mgpu.shape({ B }, "f32"),
  scratch_shapes = { mgpu.GMEM({ B }, "f32") },
  body = function(out, w) out:store(w:load()) end,
}

not_a_kernel = 42
