-- mgpu.sass: instruction classes counted from a cubin, and MGPU_DEBUG=sass's text (ptxas and, when
-- installed, cuobjdump or nvdisasm; the counts otherwise).  Without ptxas the specs that need it
-- are pending.
local mgpu = require "mgpu"
local sass = require "mgpu.sass"
local util = dofile("spec/support/util.lua")

local function has_ptxas()
  local p = io.popen("command -v ptxas 2>/dev/null")
  local found = p:read("*l")
  p:close()
  return found ~= nil and found ~= ""
end

local function wgmma_ptx()
  local T = mgpu.transforms
  local xf = { T.tiling{ 8, 64 }, T.swizzle(128) }
  local k = mgpu.kernel{ name = "sass_wgmma", grid = { 1 }, out_shape = mgpu.shape({ 64, 64 }, "f32"),
    scratch_shapes = { mgpu.SMEM({ 64, 64 }, "bf16", { transforms = xf }), mgpu.SMEM({ 64, 64 }, "bf16", { transforms = xf }),
                       mgpu.Barrier{ num_barriers = 2 } },
    body = function(a, b, o, sa, sb, bar)
      mgpu.copy_gmem_to_smem(a, sa, bar:at(0))
      mgpu.copy_gmem_to_smem(b, sb, bar:at(1))
      mgpu.barrier_wait(bar:at(0))
      mgpu.barrier_wait(bar:at(1))
      mgpu.run_scoped(function(acc) mgpu.wgmma(acc, sa, sb); o:store(acc:load()) end, mgpu.ACC({ 64, 64 }, "f32"))
    end }
  return k:lower(mgpu.abstract({ 64, 64 }, "bf16"), mgpu.abstract({ 64, 64 }, "bf16")).ptx
end

local describe_ptxas = has_ptxas() and describe or pending

describe("mgpu.sass", function()
  it("refuses bytes that are not a 64-bit ELF file", function()
    local counts, why = sass.scan("not a cubin")
    assert.is_nil(counts)
    assert.are.equal("not a 64-bit ELF file", why)
    assert.are.equal("HGMMA 8, SYNCS 4", sass.summary({ SYNCS = 4, HGMMA = 8 }))
  end)
end)

describe_ptxas("mgpu.sass with ptxas", function()
  it("counts wgmma as HGMMA and the copies as UTMALDG in ptxas's cubin", function()
    local base = os.tmpname()
    local f = assert(io.open(base .. ".ptx", "w"))
    f:write(wgmma_ptx())
    f:close()
    assert.is_truthy(os.execute(string.format("ptxas -arch=sm_90a %s.ptx -o %s.cubin", base, base)))
    local c = assert(io.open(base .. ".cubin", "rb"))
    local counts = assert(sass.scan(c:read("*a")))
    c:close()
    for _, p in ipairs({ base, base .. ".ptx", base .. ".cubin" }) do os.remove(p) end
    assert.is_true(counts.HGMMA >= 1 and counts.UTMALDG >= 2, sass.summary(counts))
  end)

  it("gives MGPU_DEBUG=sass the disassembly or the counts", function()
    local text = sass.text(wgmma_ptx())
    assert.is_truthy(text:find("HGMMA", 1, true), text)
    local out = util.output(string.format("MGPU_DEBUG=sass MGPU_INTERPRET=1 %s examples/matmul_basic.lua 2>&1", util.bin))
    assert.is_truthy(out:find("-- sass --", 1, true), out)
    assert.is_truthy(out:find("HGMMA", 1, true), out)
  end)
end)
