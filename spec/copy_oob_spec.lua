-- copy_gmem_to_smem's oob option: "zeros" (default), "undefined", "promise_in_bounds" (checked
-- by the interpreter).  The GPU runs the copy/oob-* cases of spec/support/cases.lua.
local mgpu = require "mgpu"
local cases = dofile("spec/support/cases.lua")
local err_of = dofile("spec/support/util.lua").err_of

local function kern(oob)
  return mgpu.kernel{
    grid = { 3 }, out_shape = mgpu.shape({ 3, 64, 32 }, "f32"),
    scratch_shapes = { mgpu.SMEM({ 64, 32 }, "f32"), mgpu.Barrier{} },
    body = function(x, o, s, bar)
      local i = mgpu.program_id(0)
      mgpu.copy_gmem_to_smem(x:at(mgpu.ds(i * 64, 64), mgpu.all), s, bar, { oob = oob })
      mgpu.barrier_wait(bar)
      o:at(i):store(s:load())
    end,
  }
end

describe("copy_gmem_to_smem oob", function()
  for _, c in ipairs(cases) do
    if c.name:match("^copy/oob%-") then
      it(c.name .. " matches the reference", function()
        local err, tol = c.run(mgpu)
        assert.is_true(err <= tol)
      end)
    end
  end

  it("promise_in_bounds faults when the copy is not in bounds; zeros fills", function()
    local x = mgpu.random.normal({ 160, 32 }, "f32")   -- block 2 reads rows [128, 192) of 160
    assert.matches("copy_oob_spec.lua:%d+: copy_gmem_to_smem: oob = \"promise_in_bounds\" but the copy reads %[128, 192%) "
                   .. "along dim 0 of the source, whose size is 160", err_of(kern("promise_in_bounds"), x))
    local got = kern("zeros")(x)
    assert.are.equal(0, got:get(3, 64, 1))
    assert.are.equal(x:get(160, 32), got:get(3, 32, 32))
  end)

  it("undefined and promise_in_bounds take the plain bulk copy where the copy is contiguous, zeros the tensor copy", function()
    local ptx = {}
    for _, oob in ipairs({ "undefined", "promise_in_bounds", "zeros" }) do
      ptx[oob] = kern(oob):lower(mgpu.abstract({ 160, 32 }, "f32")).ptx
    end
    local bulk = "cp%.async%.bulk%.shared::cluster%.global%.mbarrier::complete_tx::bytes %[%%r%d+%], %[%%rd%d+%], "
    assert.matches(bulk .. "%%r%d+, %[", ptx.undefined)             -- a clamped byte count
    assert.matches("min%.s64 %%rd%d+, %%rd%d+, 64;", ptx.undefined)   -- at most the box's 64 rows
    assert.matches(bulk .. "8192, %[", ptx.promise_in_bounds)        -- the whole box
    assert.is_nil(ptx.undefined:find("cp.async.bulk.tensor", 1, true))
    assert.matches("cp%.async%.bulk%.tensor%.2d", ptx.zeros)
    -- a copy that is not one contiguous range keeps the tensor copy
    local cols = mgpu.kernel{
      grid = { 1 }, out_shape = mgpu.shape({ 64, 16 }, "f32"),
      scratch_shapes = { mgpu.SMEM({ 64, 16 }, "f32"), mgpu.Barrier{} },
      body = function(x, o, s, bar)
        mgpu.copy_gmem_to_smem(x:at(mgpu.ds(0, 64), mgpu.ds(16, 16)), s, bar, { oob = "undefined" })
        mgpu.barrier_wait(bar)
        o:store(s:load())
      end,
    }:lower(mgpu.abstract({ 160, 32 }, "f32")).ptx
    assert.matches("cp%.async%.bulk%.tensor", cols)
  end)

  it("refuses unknown modes at the spec line", function()
    assert.matches("copy_oob_spec.lua:%d+: copy_gmem_to_smem: oob must be \"zeros\", \"undefined\" or \"promise_in_bounds\", got clip",
                   err_of(kern("clip"), mgpu.zeros({ 192, 32 }, "f32")))
  end)
end)

describe("GMEM views wider than their array", function()
  it("mask every element when a traced offset can never fit them (stores on a GPU wrote past the array)", function()
    -- ds(pid * 256, 256) along a dim of 3: no offset keeps the view inside, so the fast unmasked
    -- path must not be taken; the interpreter drops the stores outside, and so must the PTX
    local k = mgpu.kernel{ name = "wide", grid = { 3 }, out_shape = mgpu.shape({ 3, 256 }, "f16"),
      body = function(x, o)
        local b = mgpu.ds(mgpu.program_id(0) * 256, 256)
        o:at(b):store(x:at(b):load())
      end }
    local p = k:lower(mgpu.abstract({ 3, 256 }, "f16")).ptx
    local masked, plain = 0, 0
    for _ in p:gmatch("@%%p%d+ st%.global") do masked = masked + 1 end
    for _ in p:gmatch("\n%s*st%.global") do plain = plain + 1 end
    assert.are.equal(0, plain)
    assert.is_true(masked > 0)
    local x = mgpu.random.normal({ 3, 256 }, "f16")
    assert.are.same(x:to_table(), k(x):to_table())
  end)
end)
