--[[
Count instruction classes in a cubin without a disassembler (mgpu.sass.scan:
every SM90 instruction is 16 bytes and carries its opcode class in the low
12 bits; a heuristic, good for "did wgmma become HGMMA").

  mgpu tools/sass_scan.lua file.cubin [NAME ...]
Prints the counts; with names, exits non-zero unless each appears.
]]
local sass = require "mgpu.sass"
local path = ...
local f = assert(io.open(path or "", "rb"), "usage: mgpu tools/sass_scan.lua file.cubin [NAME ...]")
local elf = f:read("a")
f:close()
local counts = assert(sass.scan(elf))
print(sass.summary(counts))
for i = 2, select("#", ...) do
  local want = select(i, ...)
  if not counts[want] or counts[want] == 0 then
    io.stderr:write(path .. ": no " .. want .. " instruction\n")
    os.exit(1)
  end
end
