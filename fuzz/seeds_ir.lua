--[[
Writes the seed corpus of fuzz_ir (fuzz/corpus/fuzz_ir/*) from the programs
below, encoded in the byte format fuzz_ir.c decodes:

  options  flags (grid rank = flags % 4), name, grid dims, num_threads
  params   count, then per parameter: role | rank << 2, dtype, dims
  ops      op code, count byte (operands % 8 | ints % 12 << 3), operands
           (n = the n-th most recent value), ints, extra (1: number, 2: text)

  lua5.4 fuzz/seeds_ir.lua      (from the repository root)
]]
local ops = {}
for line in io.lines("src/ir/ir.h") do
  for name in line:gmatch("_%(([%w_]+),%s*%u+,%s*%u%)") do ops[#ops + 1] = name end
end
local code = {}
for i, n in ipairs(ops) do code[n] = i - 1 end

local DIM = { [1] = 0, [2] = 1, [4] = 2, [8] = 3, [16] = 4, [32] = 5, [64] = 6, [128] = 7, [256] = 8, [3] = 9, [5] = 10 }
local SPECIAL = { [128] = 0x80, [192] = 0x81, [256] = 0x82, [512] = 0x83, [1024] = 0x84, [4096] = 0x85,
                  [math.mininteger] = 0x8d }
local NUMBER = { [0] = 0, [1] = 1, [-1] = 2, [2] = 3, [0.5] = 4, [3.5] = 11, [7] = 20, [100] = 21 }
local TEXT = { wgmma = 2, splat = 3, ["strided(8)"] = 4, ["wgmma.reduce(1)"] = 7, ["tiling(8,64);swizzle(128)"] = 9,
               ["{}"] = 15, ["{} {}"] = 16 }
local DT = { pred = 0, i8 = 1, i16 = 2, i32 = 3, i64 = 4, u8 = 5, u16 = 6, u32 = 7, u64 = 8, f16 = 9, bf16 = 10,
             f32 = 11, f64 = 12 }
local IN, OUT, SCALAR = 0, 1, 2

local function int_byte(v)
  if v >= -8 and v < 120 then return v + 8 end
  return assert(SPECIAL[v], "no byte for int " .. v)
end

-- prog = { grid = {...}, threads = n, params = { {role, dtype, shape} }, ops = { {name, {values}, {ints}, nres, num, text} } }
-- values are names; each op's results are named by `out` (a list), parameters p1, p2, ...
local function encode(prog)
  local b = {}
  local function put(x) b[#b + 1] = string.char(x) end
  put(#prog.grid % 4); put(0)
  for _, d in ipairs(prog.grid) do put(({ [1] = 0, [2] = 2, [3] = 3, [4] = 4 })[d]) end
  put((prog.threads or 1) - 1)
  put(#prog.params)
  local vals = {}
  for i, p in ipairs(prog.params) do
    put(p[1] | #p[3] << 2); put(DT[p[2]])
    for _, d in ipairs(p[3]) do put(assert(DIM[d], "dim " .. d)) end
    vals[#vals + 1] = "p" .. i
  end
  for _, op in ipairs(prog.ops) do
    local name, opds, ints = op[1], op[2] or {}, op[3] or {}
    put(name == "else" and #ops or assert(code[name], name)); put(#opds | #ints << 3)
    for _, v in ipairs(opds) do
      local at
      for j = #vals, 1, -1 do if vals[j] == v then at = #vals - j; break end end
      put(assert(at, "value " .. v))
    end
    for _, v in ipairs(ints) do put(int_byte(v)) end
    local extra = (op.num and 1 or 0) | (op.text and 2 or 0)
    put(extra)
    if op.num then put(assert(NUMBER[op.num], "number " .. op.num)) end
    if op.text then put(assert(TEXT[op.text], op.text)) end
    for _, v in ipairs(op.out or {}) do vals[#vals + 1] = v end
  end
  return table.concat(b)
end

local f32, i32 = DT.f32, DT.i32
local progs = {
  add = { grid = { 1 }, params = { { IN, "f32", { 256 } }, { IN, "f32", { 256 } }, { OUT, "f32", { 256 } } }, ops = {
    { "load", { "p1" }, out = { "x" } }, { "load", { "p2" }, out = { "y" } },
    { "add", { "x", "y" }, out = { "s" } }, { "store", { "p3", "s" } } } },
  view_exp = { grid = { 2 }, params = { { IN, "f32", { 256 } }, { OUT, "f32", { 256 } } }, ops = {
    { "program_id", {}, { 0 }, out = { "pid" } }, { "const", {}, { i32 }, num = 100, out = { "c" } },
    { "mul", { "pid", "c" }, out = { "st" } },
    { "view", { "p1", "st" }, { 1, math.mininteger, 128 }, out = { "v" } },
    { "load", { "v" }, out = { "x" } }, { "exp", { "x" }, out = { "e" } },
    { "view", { "p2", "st" }, { 1, math.mininteger, 128 }, out = { "w" } }, { "store", { "w", "e" } } } },
  loop = { grid = { 1 }, params = { { OUT, "f32", { 128 } } }, ops = {
    { "const", {}, { i32 }, num = 0, out = { "lo" } }, { "const", {}, { i32 }, num = 7, out = { "hi" } },
    { "const", {}, { i32 }, num = 1, out = { "one" } }, { "const", {}, { f32 }, num = 0.5, out = { "h" } },
    { "broadcast", { "h" }, { 128 }, out = { "acc" } },
    { "for", { "lo", "hi", "one", "acc" }, out = { "iv", "a" } },
    { "add", { "a", "a" }, out = { "a2" } }, { "yield", { "a2" }, out = { "r" } },
    { "store", { "p1", "r" } } } },
  reduce = { grid = { 1 }, params = { { IN, "f32", { 64, 64 } }, { OUT, "f32", { 64 } } }, ops = {
    { "load", { "p1" }, out = { "l" } }, { "layout_cast", { "l" }, text = "wgmma", out = { "x" } },
    { "reduce_max", { "x" }, { 1 }, out = { "m" } },
    { "store", { "p2", "m" } } } },
  smem = { grid = { 1 }, params = { { IN, "bf16", { 64, 64 } }, { OUT, "bf16", { 64, 64 } } }, ops = {
    { "smem_alloc", {}, { DT.bf16, 64, 64 }, text = "tiling(8,64);swizzle(128)", out = { "s" } },
    { "load", { "p1" }, out = { "x" } }, { "store", { "s", "x" } }, { "commit_smem" },
    { "load", { "s" }, out = { "y" } }, { "store", { "p2", "y" } } } },
  branch = { grid = { 2 }, params = { { IN, "i32", { 128 } }, { OUT, "i32", { 128 } } }, ops = {
    { "program_id", {}, { 0 }, out = { "pid" } }, { "const", {}, { i32 }, num = 1, out = { "one" } },
    { "lt", { "pid", "one" }, out = { "c" } }, { "load", { "p1" }, out = { "x" } },
    { "if", { "c" } }, { "neg", { "x" }, out = { "nx" } }, { "else", { "nx" } },
    { "abs", { "x" }, out = { "ax" } }, { "yield", { "ax" }, out = { "r" } }, { "store", { "p2", "r" } } } },
  iota_layout = { grid = { 1 }, params = { { OUT, "f32", { 64, 64 } } }, ops = {
    { "iota", {}, { f32, 1, 64, 64 }, out = { "x" } },
    { "layout_cast", { "x" }, text = "wgmma", out = { "y" } }, { "store", { "p1", "y" } } } },
  tma = { grid = { 1 }, params = { { IN, "f32", { 64, 64 } }, { OUT, "f32", { 64, 64 } } }, ops = {
    { "smem_alloc", {}, { f32, 64, 64 }, out = { "s" } }, { "barrier_alloc", {}, { 1, 1, 0 }, out = { "bar" } },
    { "tma_load", { "p1", "s", "bar" }, { 0, 0 } }, { "barrier_wait", { "bar" } },
    { "tma_store", { "s", "p2" }, { 1, 0, 0 } }, { "commit_group" }, { "wait_group", {}, { 0, 0 } } } },
  wgmma = { grid = { 1 }, params = { { IN, "bf16", { 64, 64 } }, { IN, "bf16", { 64, 64 } }, { OUT, "f32", { 64, 64 } } }, ops = {
    { "smem_alloc", {}, { DT.bf16, 64, 64 }, text = "tiling(8,64);swizzle(128)", out = { "a" } },
    { "smem_alloc", {}, { DT.bf16, 64, 64 }, text = "tiling(8,64);swizzle(128)", out = { "b" } },
    { "barrier_alloc", {}, { 1, 2, 0 }, out = { "bar" } },
    { "tma_load", { "p1", "a", "bar" }, { 0, 0 } }, { "tma_load", { "p2", "b", "bar" }, { 0, 0 } },
    { "barrier_wait", { "bar" } }, { "acc_alloc", {}, { f32, 64, 64 }, out = { "acc" } },
    { "wgmma", { "acc", "a", "b" } }, { "wgmma_wait", {}, { 0 } },
    { "load", { "acc" }, out = { "r" } }, { "store", { "p3", "r" } } } },
  atomic = { grid = { 4 }, params = { { OUT, "i32", { 4 } } }, ops = {
    { "view", { "p1" }, { 0, 0, 0 }, out = { "cell" } }, { "const", {}, { i32 }, num = 1, out = { "one" } },
    { "atomic", { "cell", "one" }, { 0, 0, 2 }, out = { "old" } },
    { "debug_print", { "old" }, text = "{}" } } },
  while_loop = { grid = { 1 }, params = { { SCALAR, "i32", {} }, { OUT, "i32", { 1 } } }, ops = {
    { "const", {}, { i32 }, num = 0, out = { "z" } },
    { "while", { "z" }, out = { "c" } }, { "lt", { "c", "p1" }, out = { "go" } }, { "yield", { "go" } },
    { "const", {}, { i32 }, num = 1, out = { "one" } }, { "add", { "c", "one" }, out = { "c2" } },
    { "yield", { "c2" }, out = { "r" } },
    { "view", { "p2" }, { 0, 0, 0 }, out = { "cell" } }, { "store", { "cell", "r" } } } },
  two_warpgroups = { grid = { 1 }, threads = 2, params = { { OUT, "f32", { 2, 128 } } }, ops = {
    { "thread_id", {}, out = { "wg" } }, { "astype", { "wg" }, { f32 }, out = { "f" } },
    { "broadcast", { "f" }, { 128 }, out = { "row" } },
    { "view", { "p1", "wg" }, { 0, math.mininteger, 0 }, out = { "dst" } }, { "store", { "dst", "row" } } } },
}

for name, prog in pairs(progs) do
  local f = assert(io.open("fuzz/corpus/fuzz_ir/" .. name, "wb"))
  f:write(encode(prog))
  f:close()
end
