-- Accumulators: mgpu.ACC.init(array) and acc:at(...) slices (wgmma into part of an accumulator,
-- partial loads).  Numerics against a Lua reference are the wgmma/acc-* cases of
-- spec/support/cases.lua (run here in the interpreter, on the GPU by tools/run_cases.lua).
local mgpu = require "mgpu"
local cases = dofile("spec/support/cases.lua")
local err_of = dofile("spec/support/util.lua").err_of

local function acc_kernel(body)
  return mgpu.kernel{ out_shape = mgpu.shape({ 64, 128 }, "f32"), body = body }
end

describe("accumulators", function()
  for _, c in ipairs(cases) do
    if c.name:match("^wgmma/acc%-") then
      it(c.name .. " matches the reference", function()
        local err, tol = c.run(mgpu)
        assert.is_true(err <= tol, string.format("%s: err %g > tol %g", c.name, err, tol))
      end)
    end
  end

  it("ACC.init starts from the array; slices load and store parts", function()
    local k = acc_kernel(function(x, o)
      mgpu.run_scoped(function(acc)
        acc:at(mgpu.all, mgpu.ds(64, 64)):store(acc:at(mgpu.all, mgpu.ds(64, 64)):load() * 2)
        o:store(acc:load())
      end, mgpu.ACC.init(x:load()))
    end)
    local x = mgpu.random.normal({ 64, 128 }, "f32")
    local xt, got = x:to_table(), k(x):to_table()
    for i = 0, 63 do for j = 0, 127 do
      local want = xt[i * 128 + j + 1] * (j >= 64 and 2 or 1)
      assert.are.equal(want, got[i * 128 + j + 1])
    end end
  end)

  it("refuses slices that do not follow the WGMMA register layout, at the spec line", function()
    local function slice(...)
      local idx = { ... }
      return acc_kernel(function(x, o)
        mgpu.run_scoped(function(acc) o:store(acc:at(table.unpack(idx)):load()) end, mgpu.ACC({ 64, 128 }))
      end)
    end
    local x = mgpu.zeros({ 64, 128 }, "f32")
    assert.matches("acc_spec.lua:%d+: accumulator slice ds%(4, 8%) along N %(columns%): the WGMMA layout splits M into "
                   .. "64%-row blocks and N into 8%-column groups, so a slice must start and end at multiples of 8 inside 128",
                   err_of(slice(mgpu.all, mgpu.ds(4, 8)), x))
    assert.matches("acc_spec.lua:%d+: accumulator slice ds%(0, 32%) along M %(rows%).*multiples of 64",
                   err_of(slice(mgpu.ds(0, 32)), x))
    assert.matches("acc_spec.lua:%d+: an accumulator slice keeps both dims", err_of(slice(0), x))
  end)

  it("ACC.init refuses arrays it cannot start from", function()
    local x = mgpu.zeros({ 64, 128 }, "f32")
    assert.matches("acc_spec.lua:%d+: ACC.init: the initial value must be f32 or f16 %(the accumulator's dtype%), got i32",
                   err_of(acc_kernel(function(_, o)
                     mgpu.run_scoped(function(acc) o:store(acc:load()) end, mgpu.ACC.init(mgpu.broadcast(1, { 64, 128 }, "i32")))
                   end), x))
    assert.matches("acc_spec.lua:%d+: ACC.init: the initial value must be a 2%-D register array",
                   err_of(acc_kernel(function(_, o)
                     mgpu.run_scoped(function(acc) o:store(acc:load()) end, mgpu.ACC.init(mgpu.const(1, "f32")))
                   end), x))
    -- an array fixed in another layout: the layout conflict names WGMMA (the accumulator's) and the other one
    local err = err_of(acc_kernel(function(xx, o)
      local v = xx:load{ layout = mgpu.Layout.WG_STRIDED(1) }
      mgpu.run_scoped(function(acc) o:store(acc:load()) end, mgpu.ACC.init(v))
    end), x)
    assert.matches("acc_spec.lua:%d+: .*WGMMA", err)
    assert.matches("WG_STRIDED", err)
  end)
end)
