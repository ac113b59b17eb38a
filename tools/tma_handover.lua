--[[
tools/tma_handover.lua -- whether a block sees other blocks' TMA reduce-adds
into GMEM within the same kernel, read back with generic loads and with TMA:

  mgpu tools/tma_handover.lua [tiles=264] [splits=4] [launches=40]

Each of tiles x splits blocks adds an integer-valued f32 64x64 part into its
tile's GMEM workspace with a TMA reduce-add (copy_smem_to_gmem{ reduction_op
= "add" }), waits for it in full and counts itself in with an atomic; the
last of a tile's blocks reads the sum, stores it and clears the workspace
(split-K's hand-over in examples/matmul.lua).  Sums of small integers are
exact, so every element is compared exactly, launch after launch.  Prints
the launches and elements each read path got wrong.  Exits 1 when the TMA
read path is ever wrong (examples/matmul.lua depends on it); generic reads
are reported only (docs/reference.md, mgpu.wait_smem_to_gmem: on an H200 they
miss some adds in most launches once several blocks share an SM).
]]
local mgpu = require "mgpu"
local H = mgpu.host
local T = mgpu.transforms
local opt = select(2, mgpu.script_args(...))
local small = mgpu.interpreting()
local NT, NS = opt.tiles or (small and 4 or 264), opt.splits or (small and 3 or 4)
local launches = opt.launches or (small and 2 or 40)
local W = mgpu.Layout.WGMMA

local function handover(read)
  return mgpu.kernel{
    name = "tma_handover_" .. read, grid = { NT * NS },
    out_shape = mgpu.shape({ NT * 64, 64 }, "f32"),
    scratch_shapes = { mgpu.SMEM({ 64, 64 }, "f32", { transforms = { T.tiling{ 8, 32 }, T.swizzle(128) } }),
                       mgpu.GMEM({ NT * 64, 64 }, "f32"), mgpu.GMEM({ NT }, "i32"), mgpu.Barrier{ num_arrivals = 1 } },
    body = function(x, out, slot, ws, count, bar)
      local b = mgpu.program_id(0)
      local t = b % NT                  -- a tile's blocks are NT apart: they run on different SMs
      slot:store(x:at(mgpu.ds(b * 64, 64), mgpu.all):load{ layout = W })
      mgpu.commit_smem()
      local w = ws:at(mgpu.ds(t * 64, 64), mgpu.all)
      mgpu.copy_smem_to_gmem(slot, w, { reduction_op = "add" })
      mgpu.wait_smem_to_gmem(0)
      mgpu.when(mgpu.eq(mgpu.atomic_add(count:at(t), 1), NS - 1), function()
        mgpu.atomic_exchange(count:at(t), 0, { sem = "relaxed" })
        local sum
        if read == "tma" then
          mgpu.copy_gmem_to_smem(w, slot, bar)
          mgpu.barrier_wait(bar)
          sum = slot:load{ layout = W }
        else
          sum = w:load{ layout = W }
        end
        out:at(mgpu.ds(t * 64, 64), mgpu.all):store(sum)
        w:store(mgpu.broadcast(0.0, { 64, 64 }, "f32"))
      end)
    end,
  }
end

-- the parts: integers in [-64, 64]; the sums, exact in f32
local parts, want = {}, {}
for i = 1, NT * 4096 do want[i] = 0 end
for b = 0, NT * NS - 1 do
  local base = (b % NT) * 4096
  for e = 1, 4096 do
    local v = math.random(-64, 64)
    parts[#parts + 1] = v
    want[base + e] = want[base + e] + v
  end
end
local x = H.from_table(parts, { NT * NS * 64, 64 }):to_device("f32")

local tma_wrong = 0
for _, read in ipairs({ "generic", "tma" }) do
  local k = handover(read)
  local bad_launches, bad = 0, 0
  for _ = 1, launches do
    local out = mgpu.full({ NT * 64, 64 }, 0 / 0, "f32")
    k:call_into(out, x)
    if mgpu.compile_only() then break end
    local got, n = H.from(out):to_table(), 0
    for i = 1, #want do if got[i] ~= want[i] then n = n + 1 end end
    if n > 0 then bad_launches = bad_launches + 1 end
    bad = bad + n
  end
  print(string.format("tma_handover: %d tiles x %d splits, %-7s reads: %d of %d launches wrong, %d elements",
                      NT, NS, read, bad_launches, launches, bad))
  if read == "tma" then tma_wrong = bad end
end
os.exit(tma_wrong == 0 and 0 or 1)
