--[[
mgpu.sass -- a kernel's machine code (SASS), for MGPU_DEBUG=sass and
tools/sass_scan.lua.

  local sass = require "mgpu.sass"
  sass.scan(cubin_bytes)      --> { HGMMA = 8, UTMALDG = 2, ... }
  sass.text(ptx)              --> disassembly, or the opcode counts and why

No GPU is needed: the PTX goes through ptxas for sm_90a and the cubin
through cuobjdump or nvdisasm when the CUDA toolkit is on PATH.  Without a
disassembler the instruction classes are counted from the cubin itself:
every SM90 instruction is 16 bytes and carries its opcode class in the low
12 bits (matched against nvdisasm on the same cubins; a heuristic, good for
"did wgmma become HGMMA").
]]
local compat = require "mgpu.compat"
compat.mark_lib()

local M = {}

-- (QGMMA, FP8 wgmma: the class that replaces HGMMA one for one in the FP8 matmul's cubin, no
-- disassembler at hand to name it)
M.classes = { HGMMA = 0x9f0, QGMMA = 0x9f3, UTMALDG = 0x5b4, USETMAXREG = 0x9c8, WARPGROUP = 0x9c5, SYNCS = 0x5b2 }

-- Little-endian unsigned integer of n bytes at 1-based position p.
local function le(s, p, n)
  local v = 0
  for i = n - 1, 0, -1 do v = v * 256 + s:byte(p + i) end
  return v
end

--- Counts of the instruction classes in M.classes over the cubin's .text
--- sections, or nil and a reason when the bytes are not a 64-bit ELF file.
function M.scan(elf)
  if type(elf) ~= "string" or elf:sub(1, 4) ~= "\127ELF" or elf:byte(5) ~= 2 then return nil, "not a 64-bit ELF file" end
  local shoff, shentsize, shnum, shstrndx = le(elf, 0x28 + 1, 8), le(elf, 0x3a + 1, 2), le(elf, 0x3c + 1, 2), le(elf, 0x3e + 1, 2)
  local function section(i)
    local base = shoff + i * shentsize + 1
    return le(elf, base, 4), le(elf, base + 24, 8), le(elf, base + 32, 8)   -- name offset, file offset, size
  end
  local _, stroff = section(shstrndx)
  local counts = {}
  for k in pairs(M.classes) do counts[k] = 0 end
  for i = 0, shnum - 1 do
    local nameoff, off, size = section(i)
    if elf:match("^[^%z]*", stroff + nameoff + 1):match("^%.text") then
      for p = off, off + size - 16, 16 do
        local cls = le(elf, p + 1, 2) % 4096
        for k, v in pairs(M.classes) do if v == cls then counts[k] = counts[k] + 1 end end
      end
    end
  end
  return counts
end

--- "HGMMA 8, SYNCS 4, ..." in name order.
function M.summary(counts)
  local parts = {}
  for _, k in ipairs(compat.sorted_keys(counts)) do parts[#parts + 1] = k .. " " .. counts[k] end
  return table.concat(parts, ", ")
end

local function on_path(tool)
  local p = io.popen("command -v " .. tool .. " 2>/dev/null")
  local found = p and p:read("*l")
  if p then p:close() end
  return found ~= nil and found ~= ""
end

local function slurp(path, mode)
  local f = io.open(path, mode or "r")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

--- The SASS of a kernel's PTX: ptxas's cubin disassembled, or its
--- instruction classes counted when no disassembler is installed, or a
--- line saying what is missing.  Files go to a temporary directory.
function M.text(ptx)
  if not on_path("ptxas") then return "(no SASS: ptxas is not on PATH; it comes with the CUDA toolkit)" end
  local base = os.tmpname()
  local ptxf, cubin, log = base .. ".ptx", base .. ".cubin", base .. ".log"
  local f, err = io.open(ptxf, "w")
  if not f then compat.fail("PTX_WRITE", tostring(err)) end
  f:write(ptx)
  f:close()
  local out
  local status = os.execute(string.format("ptxas -arch=sm_90a %q -o %q > %q 2>&1", ptxf, cubin, log))
  if status == true or status == 0 then   -- Lua 5.4 and LuaJIT say success differently
    for _, tool in ipairs({ "cuobjdump -sass", "nvdisasm" }) do
      if not out and on_path(tool:match("^%S+")) then
        local p = io.popen(string.format("%s %q 2>&1", tool, cubin))
        out = p:read("*a")
        p:close()
      end
    end
    if not out then
      local counts, why = M.scan(slurp(cubin, "rb"))
      out = counts and ("(no cuobjdump or nvdisasm on PATH; instruction classes in the cubin: " .. M.summary(counts) .. ")")
            or ("(ptxas wrote no cubin: " .. why .. ")")
    end
  else
    out = "(ptxas failed: " .. (slurp(log) or "") .. ")"
  end
  for _, path in ipairs({ base, ptxf, cubin, log }) do os.remove(path) end
  return out
end

return M
