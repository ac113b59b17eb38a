--[[
Count instruction classes in a cubin without a disassembler: every SM90
instruction is 16 bytes and carries its opcode class in the low 12 bits.
The classes below were matched against nvdisasm on the same cubins
(a heuristic, good for "did wgmma become HGMMA").

  mgpu tools/sass_scan.lua file.cubin [NAME ...]
Prints the counts; with names, exits non-zero unless each appears.
]]
local classes = { HGMMA = 0x9f0, UTMALDG = 0x5b4, USETMAXREG = 0x9c8, WARPGROUP = 0x9c5, SYNCS = 0x5b2 }
local path = ...
local f = assert(io.open(path or "", "rb"), "usage: mgpu tools/sass_scan.lua file.cubin [NAME ...]")
local elf = f:read("a")
f:close()
assert(elf:sub(1, 4) == "\127ELF" and elf:byte(5) == 2, path .. ": not a 64-bit ELF file")
local shoff = string.unpack("<I8", elf, 0x28 + 1)
local shentsize, shnum, shstrndx = string.unpack("<I2I2I2", elf, 0x3a + 1)
local function section(i)
  local base = shoff + i * shentsize + 1
  local name, _, _, _, off, size = string.unpack("<I4I4I8I8I8I8", elf, base)
  return name, off, size
end
local _, stroff = section(shstrndx)
local counts = {}
for k in pairs(classes) do counts[k] = 0 end
for i = 0, shnum - 1 do
  local nameoff, off, size = section(i)
  local name = elf:match("^[^%z]*", stroff + nameoff + 1)
  if name:match("^%.text") then
    for p = off, off + size - 16, 16 do
      local lo = string.unpack("<I8", elf, p + 1)
      local cls = lo & 0xfff
      for k, v in pairs(classes) do if v == cls then counts[k] = counts[k] + 1 end end
    end
  end
end
local names = {}
for k in pairs(counts) do names[#names + 1] = k end
table.sort(names)
local parts = {}
for _, k in ipairs(names) do parts[#parts + 1] = k .. " " .. counts[k] end
print(table.concat(parts, ", "))
for i = 2, select("#", ...) do
  local want = select(i, ...)
  if not counts[want] or counts[want] == 0 then
    io.stderr:write(path .. ": no " .. want .. " instruction\n")
    os.exit(1)
  end
end
