-- The LuaJIT FFI core: the generated cdef matches the C library it loads.
-- (Under Lua 5.4 there is no FFI; these specs are pending there.)
if not jit then
  describe("LuaJIT FFI core", function() pending("runs under luajit only") end)
  return
end

local ffi = require "ffi"
local core = require "mgpu.ffi"
local gen = require "mgpu.cdef"

describe("LuaJIT FFI core", function()
  it("resolves every function the header declares", function()
    local names = {}
    local code = gen.cdef:gsub("/%*.-%*/", "")   -- declarations only, not comments
    for name in code:gmatch("[%w_%*]+%s+%**(mgpu_[%w_]+)%s*%(") do names[#names + 1] = name end
    assert.is_true(#names > 40, "found only " .. #names .. " declarations")
    for _, name in ipairs(names) do
      local ok, f = pcall(function() return core.lib[name] end)
      assert(ok and f ~= nil, "libmgpu does not export " .. name)
    end
  end)

  it("lays out every public struct as the C compiler does", function()
    local tool = assert(os.getenv("MGPU_ABI_SIZES"), "MGPU_ABI_SIZES must name the abi_sizes program")
    local p = assert(io.popen(tool))
    local n = 0
    for line in p:lines() do
      local s, f, size, off = line:match("^(%S+) (%S+) (%d+) (%d+)$")
      assert.are.equal(tonumber(size), ffi.sizeof(s), "sizeof " .. s)
      assert.are.equal(tonumber(off), ffi.offsetof(s, f), "offsetof " .. s .. "." .. f)
      n = n + 1
    end
    p:close()
    assert.is_true(n > 30)
  end)

  it("refuses a library with another ABI version", function()
    local ok, err = pcall(core.check_abi, gen.abi + 1, gen.abi)
    assert.is_false(ok)
    assert.matches("libmgpu has ABI version %d+ but mgpu.cdef expects %d+", err)
    assert.are.equal(gen.abi, core.lib.mgpu_abi_version())
  end)

  it("returns statuses and messages, never aborting, on bad handles and arguments", function()
    assert.are.equal(-1, core.lib.mgpu_buffer_alloc(nil, 16, nil))
    assert.are.equal(-1, core.lib.mgpu_kernel_launch(nil, nil))
    local ctx = core.ctx_new("interpret")
    local ok, err = pcall(core.buffer_get, core.buffer(ctx, 8), "f32", 1, 4)
    assert.is_false(ok)
    assert.matches("range %[4, 20%) is outside the buffer of 8 bytes", err)
    ok, err = pcall(core.ctx_new, "nonsense")
    assert.matches("mode must be auto, gpu, interpret or compile", err)
  end)

  it("reports a missing driver when a GPU is required", function()
    -- MGPU_LIBCUDA points at nothing in this spec's environment
    local ok, err = pcall(core.ctx_new, "gpu")
    assert.is_false(ok)
    assert.matches("no GPU", err)
  end)
end)
