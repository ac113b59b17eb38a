--[[
bench/ptx_edit.lua -- hand edits of a kernel's PTX for experiments on the GPU
without changing the engine: write the PTX with `mgpu --emit-ptx DIR`, edit it
with this script, then run the script that calls the kernel with
MGPU_PTX_OVERRIDE=DIR (README, Compile-only and debugging).

  lua5.4 bench/ptx_edit.lua EDIT IN.ptx OUT.ptx

Edits:
  one_warp_producer   every warp-specialized pipeline's memory warpgroup runs
                      its load loop on its first warp only (after its
                      setmaxnreg.dec the other three warps branch to the end of
                      the memory branch), as cuBLAS's producer does
                      (bench/RESULTS.md run 80).  Valid while the memory branch
                      holds only scalar work, barrier waits and TMA loads issued
                      by the warpgroup's first thread, as the pipelines emit it.

Prints what it changed; exits 1 when the PTX does not have the expected shape.
]]
local edit, inp, outp = ...
local function die(msg) io.stderr:write("ptx_edit: " .. msg .. "\n"); os.exit(1) end
if not (edit and inp and outp) then die("usage: lua5.4 bench/ptx_edit.lua EDIT IN.ptx OUT.ptx") end

local known = { one_warp_producer = true }
if not known[edit] then die("unknown edit '" .. edit .. "' (one_warp_producer)") end
local f = io.open(inp) or die("cannot read " .. inp)
local lines = {}
for l in f:lines() do lines[#lines + 1] = l end
f:close()

local edits = {}

function edits.one_warp_producer()
  local out, n = {}, 0
  local declared = false
  for i, l in ipairs(lines) do
    out[#out + 1] = l
    if not declared and l:match("^%s*%.reg ") then
      out[#out + 1] = "\t.reg .pred %pw<2>;"
      out[#out + 1] = "\t.reg .b32 %rw<2>;"
      declared = true
    end
    if l:match("setmaxnreg%.dec") then
      -- the memory branch ends with "bra.uni $Ljoin;" just before the compute branch's label,
      -- which the next setmaxnreg.inc follows
      local j = i + 1
      while lines[j] and not lines[j]:match("setmaxnreg%.inc") do j = j + 1 end
      if not lines[j] then die("a setmaxnreg.dec at line " .. i .. " without a later setmaxnreg.inc") end
      local k = j - 1
      while k > i and not lines[k]:match("^%$L%d+:") do k = k - 1 end
      local join = lines[k - 1] and lines[k - 1]:match("^%s*bra%.uni (%$L%d+);")
      if not join then die("the memory branch before line " .. k .. " does not end with bra.uni") end
      for m = i + 1, k - 1 do   -- nothing the whole warpgroup must do together
        local op = lines[m]:gsub("^%s*@!?%%[%w_]+%s+", ""):match("^%s*([%a_][%w_.:]*)") or ""   -- past a guard
        if op:match("^bar%.") or op:match("^barrier%.") or op:match("^wgmma") or op:match("^setmaxnreg")
           or op:match("^stmatrix") or op:match("^ldmatrix") or op:match("^ld%.") or op:match("^st%.")
           or op:match("^atom") or op:match("^red%.") then
          die(string.format("line %d (%s) in the memory branch needs more than one warp", m, op))
        end
      end
      out[#out + 1] = "\tmov.u32 %rw1, %tid.x;"
      out[#out + 1] = "\tbfe.u32 %rw1, %rw1, 5, 2;   // the warp inside the warpgroup"
      out[#out + 1] = "\tsetp.ne.u32 %pw1, %rw1, 0;"
      out[#out + 1] = "\t@%pw1 bra.uni " .. join .. ";   // ptx_edit one_warp_producer"
      n = n + 1
    end
  end
  if not declared then die("no .reg declarations") end
  if n == 0 then die("no setmaxnreg.dec: not a warp-specialized kernel") end
  return out, string.format("%d memory branch%s now run on one warp", n, n == 1 and "" or "es")
end

local out, what = edits[edit]()
f = io.open(outp, "w") or die("cannot write " .. outp)
f:write("// ptx_edit ", edit, " of ", inp, "\n", table.concat(out, "\n"), "\n")
f:close()
print("ptx_edit: " .. what .. " -> " .. outp)
