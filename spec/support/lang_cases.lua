--[[
Numerical cases of the kernel language's views and loops: the transposed
WGMMA layout through transposed SMEM refs, reshaped SMEM refs, and refs
carried by loops.  Each builds a small kernel, runs it on fresh random
inputs (outputs poisoned first) and compares with a reference computed in
double precision in plain Lua.  spec/lang_spec.lua runs them in the
interpreter, tools/run_cases.lua on the GPU (and under --emit-ptx for
ptxas).  A case is { name, run = function(mgpu) return err, tol end }.
]]
local compare = dofile("spec/support/cases.lua").compare
local cases = {}
local function add(name, run) cases[#cases + 1] = { name = name, run = run } end

-- Round a table of doubles to a dtype through a host array.
local function round(mgpu, t, dtype) return mgpu.host.from_table(t):round(dtype):to_table() end

-- -- Layout.WGMMA_TRANSPOSED -------------------------------------------------------------

-- x (C, R) is stored as it is into SMEM, read back through transpose_ref as an (R, C) array in
-- WGMMA_TRANSPOSED, mapped by 2y + 1 in f32, and written both to GMEM directly (o = 2x^T + 1)
-- and through a transposed view of a second buffer that goes out untransposed (p = 2x + 1).
for _, c in ipairs({ { "bf16", 128, 64, 128 }, { "f16", 64, 128, 64 }, { "bf16", 64, 64, 32 } }) do
  local dt, R, C, swz = c[1], c[2], c[3], c[4]
  add(string.format("wgmma_transposed/%s/%dx%d/swz%d", dt, R, C, swz), function(mgpu)
    local T = mgpu.transforms
    local xf = { T.tiling{ 8, swz / 2 }, T.swizzle(swz) }
    local k = mgpu.kernel{
      name = "wgmma_tr_" .. dt .. R .. "x" .. C .. "_" .. swz, grid = { 1 },
      out_shape = { mgpu.shape({ R, C }, dt), mgpu.shape({ C, R }, dt) },
      scratch_shapes = { mgpu.SMEM({ C, R }, dt, { transforms = xf }), mgpu.SMEM({ C, R }, dt, { transforms = xf }) },
      body = function(x, o, p, s, t)
        s:store(x:load())
        local y = mgpu.transpose_ref(s, { 1, 0 }):load{ layout = mgpu.Layout.WGMMA_TRANSPOSED }
        local z = (y:astype("f32") * 2 + 1):astype(dt)
        o:store(z)
        mgpu.transpose_ref(t, { 1, 0 }):store(z)
        p:store(t:load())
      end,
    }
    local x = mgpu.random.normal({ C, R }, dt)
    local xt, ro, rp = x:to_table(), {}, {}
    for i = 0, R - 1 do for j = 0, C - 1 do ro[i * C + j + 1] = 2 * xt[j * R + i + 1] + 1 end end
    for i = 1, #xt do rp[i] = 2 * xt[i] + 1 end
    local o, p = k(x)
    return math.max(compare(mgpu, o, round(mgpu, ro, dt)), compare(mgpu, p, round(mgpu, rp, dt))), 0
  end)
end

return cases
